//! `record`'s options as the agent's typed settings: one function for starting a command
//! and for attaching, so that every option means the same in both. How the settings
//! travel (environment variables, attach client data) is `clrprof_settings`'s business.

use std::path::Path;

use anyhow::{Result, anyhow, bail};
use clrprof_settings::{ArgLimits, EventGroup, EventGroups, Mode, Patterns, Settings, var};

use crate::cli::RecordArgs;

/// `--alloc` without `--alloc-interval`: the runtime's own mean (100 KiB).
pub const DEFAULT_ALLOC_INTERVAL: u64 = 100 * 1024;

/// The settings `args` ask for, writing to `output` (a path, or a `{pid}` template), and
/// the variables the command line decides: those of the options given, and of the
/// options that have a default of their own (mode, rate, and the `--args` limits with
/// `--args`). A setting the command line leaves alone is the agent's default, unless
/// clrprof's own environment sets its `CLRPROF_*` variable (see [`child_env`]).
pub fn from_args(args: &RecordArgs, output: &Path) -> Result<(Settings, Vec<&'static str>)> {
    let mode = args.mode;
    let mut s = Settings::for_mode(mode);
    let mut decided = vec![var::OUTPUT, var::MODE, var::RATE_HZ];
    s.output = output.to_path_buf();
    s.rate_hz = args.rate;
    if let Some(e) = &args.events {
        s.events =
            EventGroups::parse(e, mode).map_err(|exp| anyhow!("--events {e:?}: expected {exp}"))?;
        decided.push(var::EVENTS);
    }
    if let Some(kb) = args.buffer_kb {
        s.buffer_bytes = kb as usize * 1024;
        decided.push(var::BUFFER_KB);
    }
    if let Some(f) = args.on_full {
        s.on_full = f;
        decided.push(var::ON_FULL);
    }
    if let Some(k) = args.sampler {
        s.sampler = k;
        decided.push(var::SAMPLER);
    }
    if let Some(n) = args.max_depth {
        s.max_depth = n as usize;
        decided.push(var::MAX_DEPTH);
    }
    if let Some(d) = args.duration {
        s.duration_s = Some(d);
        decided.push(var::DURATION_S);
    }
    if !args.include.is_empty() {
        s.include = Patterns::of(&args.include);
        decided.push(var::INCLUDE);
    }
    if !args.exclude.is_empty() {
        s.exclude = Patterns::of(&args.exclude);
        decided.push(var::EXCLUDE);
    }
    if args.allow_inlining {
        s.allow_inlining = true;
        decided.push(var::INLINING);
    }
    if !args.heap.is_empty() {
        if let Some(bad) = args.heap.iter().find(|t| !(t.is_finite() && **t >= 0.0)) {
            bail!("--heap {bad}: expected a number of seconds, 0 or more");
        }
        s.heap_at = args.heap.clone();
        s.heap_at.sort_by(f64::total_cmp);
        s.heap = true;
        decided.extend([var::HEAP_AT, var::HEAP]);
    }
    if args.waits {
        s.events.insert(EventGroup::Waits);
        s.events.insert(EventGroup::Suspends);
        if !decided.contains(&var::EVENTS) {
            decided.push(var::EVENTS);
        }
    }
    if let Some(b) = args.max_size {
        s.max_size = Some(b);
        decided.push(var::MAX_SIZE);
    }
    if args.alloc || args.alloc_interval.is_some() {
        s.alloc_interval = Some(args.alloc_interval.unwrap_or(DEFAULT_ALLOC_INTERVAL));
        decided.push(var::ALLOC_INTERVAL);
    }
    if args.counts {
        if mode == Mode::Events {
            bail!(
                "--counts needs --mode trace or --mode sample: calls are counted by the ELT hooks"
            );
        }
        if !args.args.is_empty() {
            bail!("--counts and --args cannot be combined: counting records no values");
        }
        s.counts = true;
        decided.push(var::COUNTS);
    }
    if args.probes {
        if mode != Mode::Trace {
            bail!("--probes needs --mode trace: the probes record calls");
        }
        if args.include.is_empty() {
            bail!("--probes needs --include: the probes go on the methods it selects");
        }
        if args.counts || !args.args.is_empty() {
            bail!("--probes cannot be combined with --counts or --args (ELT hooks only)");
        }
        // After attach trace mode always uses the probes: the setting is for startup.
        if args.pid.is_none() {
            s.probes = true;
            decided.push(var::PROBES);
        }
    }
    if !args.args.is_empty() {
        if mode != Mode::Trace {
            bail!("--args needs --mode trace: arguments are read by the ELT enter/leave hooks");
        }
        s.args = Patterns::of(&args.args);
        decided.push(var::ARGS);
    }
    // The limits are read with `--args` only; attaching passes them too (they are part of
    // the settings the trace header records).
    s.arg_limits = ArgLimits {
        max_len: args.arg_max_len,
        depth: args.arg_depth,
        items: args.arg_items,
        ..ArgLimits::DEFAULT
    };
    if !args.args.is_empty() {
        decided.extend([var::ARG_MAX_LEN, var::ARG_DEPTH, var::ARG_ITEMS]);
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

    fn parse(line: &[&str]) -> RecordArgs {
        let mut argv = vec!["clrprof", "record"];
        argv.extend_from_slice(line);
        match Cli::try_parse_from(argv).unwrap().command {
            Command::Record(r) => r,
            _ => unreachable!(),
        }
    }

    /// `record`'s options agree with the settings table: an option with a default of its
    /// own defaults to what the table gives sample mode (`record`'s mode; the mode itself
    /// is the exception: the agent alone records events), and an option whose variable
    /// the table bounds (`lo..=hi` in its doc) accepts at and around the bounds exactly
    /// what the agent accepts.
    #[test]
    fn records_options_agree_with_the_settings_table() {
        use clap::CommandFactory;
        let cli = Cli::command();
        let record = cli.find_subcommand("record").unwrap();
        let sample = Settings::for_mode(Mode::Sample).to_env();
        let (mut defaults, mut bounded) = (0, 0);
        for v in clrprof_settings::TABLE {
            let Some(flag) = v.flag else { continue };
            let arg = record
                .get_arguments()
                .find(|a| a.get_long().is_some_and(|l| flag == format!("--{l}")))
                .unwrap_or_else(|| panic!("{}: no {flag}", v.name));
            let given: Vec<String> = arg
                .get_default_values()
                .iter()
                .map(|d| d.to_string_lossy().into_owned())
                .collect();
            if !given.is_empty() && v.name != var::MODE {
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
                let line = ["clrprof", "record", flag, &value, "--", "dotnet", "a.dll"];
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
        // rate and the three --args limits; buffer-kb, rate, max-depth, the --args limits,
        // alloc-interval and max-size.
        assert_eq!((defaults, bounded), (4, 8));
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
        assert!(err.contains("1024..=1073741824"), "{err}");
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
        let e = from_args(&parse(&["--events", "bogus", "--", "x"]), Path::new("/t"))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("--events \"bogus\": expected default, all, none"),
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
