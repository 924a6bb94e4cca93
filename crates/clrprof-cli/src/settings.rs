//! `record`'s options as the agent's typed settings: the options that are settings are
//! made from the settings table (one per variable with a [`Flag`]), and one function turns
//! them into the settings for starting a command and for attaching, so that every option
//! means the same in both. How the settings travel (environment variables, attach client
//! data) is `clrprof_settings`'s business.

use std::path::Path;

use anyhow::{Result, anyhow, bail};
use clrprof_settings::{EventGroup, LogTarget, Mode, Settings, var};

use crate::cli::RecordArgs;
use crate::setting_args::DEFAULT_ALLOC_INTERVAL;

/// The settings `args` ask for, writing to `output` (a path, or a `{pid}` template), and
/// the variables the command line decides: those of the options given, and of the
/// options that have a default of their own (mode, rate, and the `--args` limits with
/// `--args`). A setting the command line leaves alone is the agent's default, unless
/// clrprof's own environment sets its `CLRPROF_*` variable (see [`child_env`]).
pub fn from_args(args: &RecordArgs, output: &Path) -> Result<(Settings, Vec<&'static str>)> {
    let given = &args.settings;
    let mut s = given.settings.clone();
    let mode = s.mode;
    let mut decided = vec![var::OUTPUT, var::MODE, var::RATE_HZ];
    for k in &given.given {
        if !decided.contains(k) {
            decided.push(k);
        }
    }
    s.output = output.to_path_buf();
    if !s.heap_at.is_empty() {
        // Timed snapshots imply snapshots.
        s.heap = true;
        decided.push(var::HEAP);
    }
    if args.waits {
        s.events.insert(EventGroup::Waits);
        s.events.insert(EventGroup::Suspends);
        if !decided.contains(&var::EVENTS) {
            decided.push(var::EVENTS);
        }
    }
    if args.alloc || s.alloc_interval.is_some() {
        s.alloc_interval = Some(s.alloc_interval.unwrap_or(DEFAULT_ALLOC_INTERVAL));
        if !decided.contains(&var::ALLOC_INTERVAL) {
            decided.push(var::ALLOC_INTERVAL);
        }
    }
    if s.counts {
        if mode == Mode::Events {
            bail!(
                "--counts needs --mode trace or --mode sample: calls are counted by the ELT hooks"
            );
        }
        if !s.args.is_empty() {
            bail!("--counts and --args cannot be combined: counting records no values");
        }
    }
    if s.probes {
        if mode != Mode::Trace {
            bail!("--probes needs --mode trace: the probes record calls");
        }
        if s.include.is_empty() {
            bail!("--probes needs --include: the probes go on the methods it selects");
        }
        if s.counts || !s.args.is_empty() {
            bail!("--probes cannot be combined with --counts or --args (ELT hooks only)");
        }
        // After attach trace mode always uses the probes: the setting is for startup.
        if args.pid.is_some() {
            s.probes = false;
            decided.retain(|k| *k != var::PROBES);
        }
    }
    if !s.args.is_empty() {
        if mode != Mode::Trace {
            bail!("--args needs --mode trace: arguments are read by the ELT enter/leave hooks");
        }
        // The limits are read with `--args` only; attaching passes them too (they are
        // part of the settings the trace header records).
        for k in [var::ARG_MAX_LEN, var::ARG_DEPTH, var::ARG_ITEMS] {
            if !decided.contains(&k) {
                decided.push(k);
            }
        }
    }
    // `--agent-log FILE` names a file from here: an attached app's working directory is
    // its own.
    if let LogTarget::File(p) = &s.log {
        let p = std::env::current_dir()?.join(p);
        // The agent falls back to the app's stderr when it cannot open the file, where an
        // attaching user would not see why: a missing directory is said here, before
        // anything starts.
        if let Some(dir) = p.parent()
            && !dir.is_dir()
        {
            bail!(
                "--agent-log {}: {} is not a directory; give a file in one that exists",
                p.display(),
                dir.display()
            );
        }
        s.log = LogTarget::File(p);
    }
    // The options are checked as they are parsed; this catches a rule they missed, with
    // the agent's own message, before anything starts.
    s.check().map_err(|e| anyhow!("{e}"))?;
    Ok((s, decided))
}

/// The `CLRPROF_*` variables to set for a command started under the profiler: every
/// setting, except one the command line does not decide and clrprof's own environment
/// already sets, which the command inherits as it is (the agent checks it, and declines
/// with its message if it is bad).
pub fn child_env(settings: &Settings, decided: &[&str]) -> Vec<(&'static str, String)> {
    settings
        .to_env()
        .into_iter()
        .filter(|(k, _)| decided.contains(k) || std::env::var_os(k).is_none())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;
    use clrprof_settings::{ArgLimits, EventGroups, Patterns};

    fn parse(line: &[&str]) -> RecordArgs {
        let mut argv = vec!["clrprof", "record"];
        argv.extend_from_slice(line);
        match Cli::try_parse_from(argv).unwrap().command {
            Command::Record(r) => r,
            _ => unreachable!(),
        }
    }

    /// `record`'s options are the settings table's: each row with a flag is an option,
    /// an option with a default of its own defaults to what the table gives sample mode
    /// (`record`'s mode), and an option whose variable the table bounds (`lo..=hi` in its
    /// doc) accepts at and around the bounds exactly what the agent accepts. True by
    /// construction since the options are made from the table; it keeps the conversion
    /// from an option's text to its variable's honest.
    #[test]
    fn records_options_are_the_settings_tables() {
        use clap::CommandFactory;
        let cli = Cli::command();
        let record = cli.find_subcommand("record").unwrap();
        let sample = Settings::for_mode(Mode::Sample).to_env();
        let (mut defaults, mut bounded) = (0, 0);
        for v in clrprof_settings::TABLE {
            let Some(flag) = v.flag.map(|f| format!("--{}", f.long)) else {
                continue;
            };
            let arg = record
                .get_arguments()
                .find(|a| a.get_long().is_some_and(|l| flag == format!("--{l}")))
                .unwrap_or_else(|| panic!("{}: no {flag}", v.name));
            let given: Vec<String> = arg
                .get_default_values()
                .iter()
                .map(|d| d.to_string_lossy().into_owned())
                .collect();
            if !given.is_empty() {
                let table = sample.iter().find(|(k, _)| *k == v.name).map(|(_, d)| d);
                assert_eq!(Some(&given.join(",")), table, "{flag}'s default");
                defaults += 1;
            }
            let Some((lo, hi)) = doc_bounds(v.doc) else {
                continue;
            };
            bounded += 1;
            let mut values = vec![lo, hi, hi + 1];
            values.extend(lo.checked_sub(1));
            for n in values {
                let value = n.to_string();
                let line = ["clrprof", "record", &flag, &value, "--", "dotnet", "a.dll"];
                let cli = Cli::try_parse_from(line).is_ok();
                let env = [(var::MODE, "trace"), (v.name, value.as_str())];
                let agent = Settings::from_env(
                    |k| {
                        env.iter()
                            .find(|(e, _)| *e == k)
                            .map(|(_, v)| v.to_string())
                    },
                    1,
                )
                .is_ok();
                assert_eq!(
                    cli, agent,
                    "{flag} {value}: clrprof {cli}, the agent {agent}"
                );
            }
        }
        // mode, rate and the three --args limits; buffer-kb, rate, max-depth, the --args
        // limits, alloc-interval and max-size.
        assert_eq!((defaults, bounded), (5, 8));
    }

    /// A value that is not UTF-8 is refused naming its option (the settings, and the
    /// trace header, hold UTF-8 only).
    #[test]
    fn a_value_that_is_not_utf8_names_its_option() {
        use std::ffi::OsString;
        use std::os::unix::ffi::OsStringExt;
        for option in ["-o", "--include"] {
            let argv: Vec<OsString> = vec![
                "clrprof".into(),
                "record".into(),
                option.into(),
                OsString::from_vec(b"/tmp/a\xff".to_vec()),
                "--".into(),
                "x".into(),
            ];
            let e = Cli::try_parse_from(argv).unwrap_err().to_string();
            let long = if option == "-o" { "--output" } else { option };
            assert!(
                e.contains(&format!("for '{long}': not valid UTF-8")),
                "{option}: {e}"
            );
        }
    }

    /// `top` and `dump` take the table's sampling options, and refuse what the agent
    /// refuses, in its words.
    #[test]
    fn top_and_dump_take_the_tables_sampling_options() {
        let top = |line: &[&str]| {
            let mut argv = vec!["clrprof", "top", "--pid", "1"];
            argv.extend_from_slice(line);
            Cli::try_parse_from(argv).map(|c| match c.command {
                Command::Top(t) => t,
                _ => unreachable!(),
            })
        };
        let t = top(&[]).unwrap();
        assert_eq!(
            (t.sampling.settings.rate_hz, t.sampling.sampler()),
            (99, None)
        );
        let t = top(&["--rate", "250", "--sampler", "suspend"]).unwrap();
        assert_eq!(t.sampling.settings.rate_hz, 250);
        assert_eq!(
            t.sampling.sampler(),
            Some(clrprof_settings::SamplerKind::Suspend)
        );
        let e = top(&["--rate", "1001"]).unwrap_err().to_string();
        assert!(e.contains("expected a whole number from 1 to 1000"), "{e}");
        // Only those: `top` has no `--mode`.
        assert!(top(&["--mode", "trace"]).is_err());
        let dump = |line: &[&str]| {
            let mut argv = vec!["clrprof", "dump", "--pid", "1"];
            argv.extend_from_slice(line);
            Cli::try_parse_from(argv).map(|c| match c.command {
                Command::Dump(d) => d,
                _ => unreachable!(),
            })
        };
        let d = dump(&["--sampler", "signal"]).unwrap();
        assert_eq!(
            d.sampling.sampler(),
            Some(clrprof_settings::SamplerKind::Signal)
        );
        assert!(dump(&["--rate", "10"]).is_err());
    }

    /// `lo..=hi` in a variable's doc.
    fn doc_bounds(doc: &str) -> Option<(u64, u64)> {
        let (before, after) = doc.split_once("..=")?;
        let lo = before.rsplit(|c: char| !c.is_ascii_digit()).next()?;
        let hi = after.split(|c: char| !c.is_ascii_digit()).next()?;
        Some((lo.parse().ok()?, hi.parse().ok()?))
    }

    #[test]
    fn waits_adds_its_groups_to_the_modes_or_the_given_ones() {
        let out = Path::new("/tmp/t.clrprof");
        let with = |flags: &[&str]| {
            let mut line = flags.to_vec();
            line.extend_from_slice(&["--", "dotnet", "app.dll"]);
            from_args(&parse(&line), out).unwrap()
        };
        let (s, decided) = with(&[]);
        assert!(!s.events.contains(EventGroup::Waits));
        assert!(!decided.contains(&var::EVENTS));
        let (s, decided) = with(&["--waits"]);
        assert!(s.events.contains(EventGroup::Waits) && s.events.contains(EventGroup::Suspends));
        assert!(
            s.events.contains(EventGroup::Threads),
            "the mode's groups stay"
        );
        assert!(decided.contains(&var::EVENTS));
        let (s, _) = with(&["--events", "gc", "--waits"]);
        assert_eq!(s.events.list(), "suspends,gc,waits");
    }

    #[test]
    fn alloc_takes_the_runtime_interval_unless_told() {
        let out = Path::new("/tmp/t.clrprof");
        let cmd = ["--", "dotnet", "app.dll"];
        let with = |flags: &[&str]| {
            let mut line = flags.to_vec();
            line.extend_from_slice(&cmd);
            from_args(&parse(&line), out).unwrap()
        };
        assert_eq!(with(&[]).0.alloc_interval, None);
        assert!(!with(&[]).1.contains(&var::ALLOC_INTERVAL));
        let (s, decided) = with(&["--alloc"]);
        assert_eq!(s.alloc_interval, Some(102_400));
        assert!(decided.contains(&var::ALLOC_INTERVAL));
        // An interval implies --alloc.
        assert_eq!(
            with(&["--alloc-interval", "204800"]).0.alloc_interval,
            Some(204_800)
        );
        let mut line = vec!["--alloc-interval", "100"];
        line.extend_from_slice(&cmd);
        let mut argv = vec!["clrprof", "record"];
        argv.extend_from_slice(&line);
        let err = Cli::try_parse_from(argv).err().unwrap().to_string();
        assert!(
            err.contains("expected a whole number from 1024 to 1073741824"),
            "{err}"
        );
    }

    #[test]
    fn options_become_typed_settings() {
        let args = parse(&[
            "--mode",
            "sample",
            "--events",
            "threads,gc",
            "--buffer-kb",
            "64",
            "--on-full",
            "drop",
            "--rate",
            "250",
            "--sampler",
            "suspend",
            "--max-depth",
            "64",
            "--duration",
            "2.5",
            "--include",
            "A.*",
            "--include",
            "B.*",
            "--exclude",
            "C.*",
            "--allow-inlining",
            "--arg-max-len",
            "10",
            "--heap",
            "2",
            "--heap",
            "0.5",
            "--pid",
            "1",
        ]);
        let (s, decided) = from_args(&args, Path::new("/tmp/t.clrprof")).unwrap();
        use clrprof_settings::{EventGroup, OnFull, SamplerKind};
        assert_eq!(
            s,
            Settings {
                mode: Mode::Sample,
                output: "/tmp/t.clrprof".into(),
                events: EventGroups::of(&[EventGroup::Threads, EventGroup::Gc]),
                buffer_bytes: 64 * 1024,
                on_full: OnFull::Drop,
                rate_hz: 250,
                sampler: SamplerKind::Suspend,
                max_depth: 64,
                duration_s: Some(2.5),
                include: Patterns::of(["A.*", "B.*"]),
                exclude: Patterns::of(["C.*"]),
                allow_inlining: true,
                arg_limits: ArgLimits {
                    max_len: 10,
                    ..ArgLimits::DEFAULT
                },
                heap_at: vec![0.5, 2.0],
                heap: true,
                ..Settings::for_mode(Mode::Sample)
            }
        );
        // Each option given decides its variable (none is left to the environment).
        let defaults = Settings::for_mode(Mode::Sample).to_env();
        for (k, v) in s.to_env() {
            let default = defaults.iter().find(|(d, _)| *d == k).map(|(_, v)| v);
            if default != Some(&v) && k != var::ARG_MAX_LEN {
                assert!(
                    decided.contains(&k),
                    "{k}={v} is not decided by the options"
                );
            }
        }
    }

    #[test]
    fn bad_options_are_refused_up_front() {
        // A value the agent refuses is refused as the command line is parsed, in the
        // agent's words.
        let e = Cli::try_parse_from(["clrprof", "record", "--events", "bogus", "--", "x"])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("'--events <EVENTS>': expected default, all, none"),
            "{e}"
        );
        let e = from_args(&parse(&["--args", "A.*", "--", "x"]), Path::new("/t"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("--mode trace"), "{e}");
        assert!(Cli::try_parse_from(["clrprof", "record", "--buffer-kb", "1", "--", "x"]).is_err());
        let (s, _) = from_args(&parse(&["--mode", "trace", "--", "x"]), Path::new("/t")).unwrap();
        assert_eq!(s.buffer_bytes, 4096 * 1024);
        // --probes: trace mode, with --include, without the ELT-only options.
        let refused = |a: &[&str]| {
            from_args(&parse(a), Path::new("/t"))
                .unwrap_err()
                .to_string()
        };
        assert!(refused(&["--probes", "--include", "A.*", "--", "x"]).contains("--mode trace"));
        assert!(refused(&["--mode", "trace", "--probes", "--", "x"]).contains("--include"));
        let e = refused(&[
            "--mode",
            "trace",
            "--probes",
            "--include",
            "A.*",
            "--counts",
            "--",
            "x",
        ]);
        assert!(e.contains("--counts"), "{e}");
        let args = parse(&["--mode", "trace", "--probes", "--include", "A.*", "--", "x"]);
        let (s, decided) = from_args(&args, Path::new("/t")).unwrap();
        assert!(s.probes && decided.contains(&var::PROBES));
    }
}
