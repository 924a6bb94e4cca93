//! `clrprof record -- <command…>`: starts the command with the profiler enabled through
//! the CORECLR_* variables and its settings in CLRPROF_* variables, forwards Ctrl-C,
//! SIGTERM and SIGHUP, waits, lists the traces the run wrote (one per .NET process) and
//! returns the command's exit code.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};

use crate::cli::RecordArgs;
use crate::locate;

pub fn run(args: RecordArgs) -> Result<i32> {
    let library = locate::profiler_library(args.profiler.as_deref())?;
    // `--push`: a server that cannot be reached is refused before anything starts.
    if let Some(e) = &args.push {
        crate::push::probe(e)?;
    }
    let cwd = std::env::current_dir()?;
    let output_template = match args.settings.output() {
        Some(p) => absolute(&cwd, p),
        // Push only: a file the pusher unlinks as soon as it has it open.
        None if args.no_trace => std::env::temp_dir().join(format!(
            "clrprof-push-{}-{{pid}}.clrprof",
            std::process::id()
        )),
        None => cwd.join("clrprof-{pid}.clrprof"),
    };
    let (mut settings, mut decided) = crate::settings::from_args(&args, &output_template)?;
    // Every .NET process of the launched tree loads the agent: each writes its own trace
    // (`<stem>.<pid>.<ext>` when the name is taken).
    settings.siblings = true;
    decided.push(clrprof_settings::var::SIBLINGS);
    // Each process that records names its trace here, and says at its end what it lost.
    let run = crate::output::RunDir::create()?;
    settings.run = Some(run.path().to_path_buf());
    decided.push(clrprof_settings::var::RUN);
    crate::output::prepare(&output_template, args.force)?;
    let (program, rest) = args.command.split_first().context("no command given")?;
    let mut cmd = Command::new(program);
    cmd.args(rest)
        .envs(clrprof_settings::startup_env(&library))
        .envs(crate::settings::child_env(&settings, &decided));
    // `dotnet run` / `dotnet build`: no long-lived build node or compiler server may keep
    // running with the profiler after the command ends (the agent also declines to
    // profile the SDK's processes; CLRPROF_PROFILE_SDK=1 overrides that).
    cmd.env("MSBUILDDISABLENODEREUSE", "1")
        .env("DOTNET_CLI_USE_MSBUILD_SERVER", "0")
        .env("UseSharedCompilation", "false");
    let mut child = cmd
        .spawn()
        .with_context(|| format!("cannot start `{program}`"))?;
    // The terminal sends Ctrl-C to the whole foreground group; when we alone get a stop
    // signal (a script, `timeout`, a closed terminal), pass it on. Either way we stay
    // alive to report the trace.
    crate::signals::forward_to(child.id());
    let pushing = match &args.push {
        Some(endpoint) => Some(crate::push::Session::start(
            crate::push::PushConfig {
                endpoint: (**endpoint).clone(),
                every_s: args.push_every,
                app: args
                    .app_name
                    .clone()
                    .unwrap_or_else(|| crate::push::PushConfig::default_app_name(&args.command)),
                labels: args.labels.clone().unwrap_or_default(),
                no_trace: args.no_trace,
                waits: args.waits,
            },
            run.path().to_path_buf(),
            settings.rate_hz,
        )?),
        None => None,
    };
    // A broad trace: said after its first second, while it runs.
    let rate = (settings.mode == clrprof_settings::Mode::Trace && !settings.counts)
        .then(|| crate::record_rate::Watch::start(run.path().to_path_buf()));
    let status = child.wait().context("waiting for the command")?;
    if let Some(w) = rate {
        w.finish();
    }
    let pushed = pushing.and_then(crate::push::Session::finish);
    if let Some(summary) = &pushed {
        summary.say();
    }
    let code = exit_code(status);
    // `--no-trace`: no file stays behind (one the pusher never opened is removed now).
    if args.no_trace && crate::push::forget_traces(run.path()) > 0 {
        return Ok(code);
    }
    if let Some(sig) = killed_by(status).filter(|&s| s != libc::SIGINT) {
        eprintln!(
            "clrprof: `{program}` was killed by signal {sig} ({}); the trace holds what was written before",
            signal_name(sig)
        );
    }
    // Only the traces this run's processes named: a file that was there before, or
    // another run's, is never reported as this one's.
    let mut traces = run.traces();
    if traces.is_empty() {
        let declined = run.declined();
        if !declined.is_empty() {
            // The .NET SDK (`dotnet build`, `dotnet test`…) declines by design: the
            // command's own outcome stands, and the SDK's line said why and how to opt in.
            if !declined.iter().any(|(_, said)| *said) {
                eprintln!(
                    "clrprof: no trace: {} is not profiled (CLRPROF_PROFILE_SDK=1 profiles the SDK's processes too)",
                    declined[0].0
                );
            }
            return Ok(code);
        }
        eprintln!(
            "clrprof: no trace was written to {}: the profiler did not load. Is `{program}` a .NET (CoreCLR) program? \
             clrprof profiles .NET processes: run the app through the host (`clrprof record -- dotnet app.dll`) \
             or its own executable (`clrprof record -- ./app`); a native program, Mono or a NativeAOT app never \
             loads it. Lines starting with `clrprof[pid]:` above say why it declined, if it did.",
            output_template.display()
        );
        return Ok(if code == 0 { 1 } else { code });
    }
    // What a trace could not record about itself (a full disk at the end): said here,
    // whether or not --quiet, and beside the trace for `clrprof report`.
    for t in &traces {
        if let Some(why) = t.end.as_ref().and_then(|e| e.incomplete()) {
            let note = crate::output::lost_note_path(&t.path);
            eprintln!(
                "clrprof: {} the trace {} of pid {} is {why}{}",
                crate::style::warning("warning:"),
                t.path.display(),
                t.pid,
                if note.exists() {
                    format!("; {} beside it says so to `clrprof report`", note.display())
                } else {
                    String::new()
                }
            );
        }
    }
    // The sampled methods' source lines, read from their PDBs while they are at hand, so
    // the trace shows its lines elsewhere too. A trace whose recording did not end (its
    // process still runs) or did not end well is left alone.
    if !args.no_lines {
        for t in traces
            .iter_mut()
            .filter(|t| t.end.as_ref().is_some_and(|e| e.incomplete().is_none()))
        {
            match crate::travel::append_lines(&t.path) {
                Ok(0) => {}
                Ok(_) => {
                    if let Ok(m) = std::fs::metadata(&t.path) {
                        t.len = m.len();
                    }
                }
                Err(e) => eprintln!(
                    "clrprof: {} {}: source lines not added: {e:#}",
                    crate::style::warning("warning:"),
                    t.path.display()
                ),
            }
        }
    }
    // `--push`: what was sent and dropped, in each trace too (for `clrprof report`).
    if let Some(summary) = &pushed {
        let ended_well = |p: &std::path::Path| {
            traces
                .iter()
                .any(|t| t.path == p && t.end.as_ref().is_some_and(|e| e.incomplete().is_none()))
        };
        summary.add_notes(ended_well);
        for t in &mut traces {
            if let Ok(m) = std::fs::metadata(&t.path) {
                t.len = m.len();
            }
        }
    }
    if !args.quiet {
        if let [t] = traces.as_slice() {
            eprintln!(
                "clrprof: trace written to {} ({}{}); see it with `clrprof report {}`",
                t.path.display(),
                clrprof_analysis::text::bytes(t.len),
                ending(t),
                t.path.display()
            );
        } else {
            eprintln!(
                "clrprof: {} .NET processes wrote a trace each:",
                traces.len()
            );
            for t in &traces {
                eprintln!(
                    "  {} ({}{}) — {}",
                    t.path.display(),
                    clrprof_analysis::text::bytes(t.len),
                    ending(t),
                    crate::output::describe(&t.path)
                        .unwrap_or_else(|| format!("pid {}: unreadable header", t.pid))
                );
            }
            eprintln!("clrprof: see each with `clrprof report FILE`");
        }
    }
    Ok(code)
}

/// ", incomplete" or ", recording never ended" after a trace's size.
fn ending(t: &crate::output::RunTrace) -> &'static str {
    match &t.end {
        None => ", its recording never ended",
        Some(e) if e.write_errors > 0 => ", incomplete",
        Some(_) => "",
    }
}

fn absolute(cwd: &Path, p: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        cwd.join(p)
    }
}

fn killed_by(status: std::process::ExitStatus) -> Option<i32> {
    use std::os::unix::process::ExitStatusExt;
    status.signal()
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGILL => "SIGILL",
        libc::SIGKILL => "SIGKILL",
        libc::SIGTERM => "SIGTERM",
        libc::SIGINT => "SIGINT",
        libc::SIGHUP => "SIGHUP",
        libc::SIGPROF => "SIGPROF",
        _ => "see `kill -l`",
    }
}

fn exit_code(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => c,
        (None, Some(sig)) => 128 + sig,
        _ => 1,
    }
}
