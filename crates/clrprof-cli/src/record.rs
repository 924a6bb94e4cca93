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
    let cwd = std::env::current_dir()?;
    let output_template = match &args.output {
        Some(p) => absolute(&cwd, p),
        None => cwd.join("clrprof-{pid}.clrprof"),
    };
    let (mut settings, mut decided) = crate::settings::from_args(&args, &output_template)?;
    // Every .NET process of the launched tree loads the agent: each writes its own trace
    // (`<stem>.<pid>.<ext>` when the name is taken).
    settings.siblings = true;
    decided.push(clrprof_settings::var::SIBLINGS);
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
    let started = std::time::SystemTime::now();
    let mut child = cmd
        .spawn()
        .with_context(|| format!("cannot start `{program}`"))?;
    // The terminal sends Ctrl-C to the whole foreground group; when we alone get a stop
    // signal (a script, `timeout`, a closed terminal), pass it on. Either way we stay
    // alive to report the trace.
    crate::signals::forward_to(child.id());
    let status = child.wait().context("waiting for the command")?;
    let code = exit_code(status);
    if let Some(sig) = killed_by(status).filter(|&s| s != libc::SIGINT) {
        eprintln!(
            "clrprof: `{program}` was killed by signal {sig} ({}); the trace holds what was written before",
            signal_name(sig)
        );
    }
    // Only files this run wrote: a file that was there before is never reported as new.
    let traces = crate::output::written(&output_template, started);
    if traces.is_empty() {
        eprintln!(
            "clrprof: no trace was written to {}: the profiler did not load. Is `{program}` a .NET (CoreCLR) program? \
             clrprof profiles .NET processes: run the app through the host (`clrprof record -- dotnet app.dll`) \
             or its own executable (`clrprof record -- ./app`); a native program, Mono or a NativeAOT app never \
             loads it. Lines starting with `clrprof[pid]:` above say why it declined, if it did.",
            output_template.display()
        );
        return Ok(if code == 0 { 1 } else { code });
    }
    if !args.quiet {
        if let [(path, len)] = traces.as_slice() {
            eprintln!(
                "clrprof: trace written to {} ({}); see it with `clrprof report {}`",
                path.display(),
                clrprof_analysis::text::bytes(*len),
                path.display()
            );
        } else {
            eprintln!(
                "clrprof: {} .NET processes wrote a trace each:",
                traces.len()
            );
            for (path, len) in &traces {
                eprintln!(
                    "  {} ({}) — {}",
                    path.display(),
                    clrprof_analysis::text::bytes(*len),
                    crate::output::describe(path).unwrap_or_else(|| "unreadable header".into())
                );
            }
            eprintln!("clrprof: see each with `clrprof report FILE`");
        }
    }
    Ok(code)
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
