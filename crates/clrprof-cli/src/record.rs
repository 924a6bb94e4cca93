//! `clrprof record -- <command…>`: starts the command with the profiler enabled through
//! the CORECLR_* variables and its settings in CLRPROF_* variables, forwards Ctrl-C,
//! SIGTERM and SIGHUP, waits, lists the traces the run wrote (one per .NET process) and
//! returns the command's exit code.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};

use crate::cli::{OnFull, RecordArgs};
use crate::locate;

/// The agent's CLSID (`CLSID_CLRPROF` in the agent crate).
pub const CLSID: &str = "{27C113DB-28AB-4298-B83A-625E7E26E45D}";

pub fn run(args: RecordArgs) -> Result<i32> {
    let library = locate::profiler_library(args.profiler.as_deref())?;
    let cwd = std::env::current_dir()?;
    let output_template = match &args.output {
        Some(p) => absolute(&cwd, p),
        None => cwd.join("clrprof-{pid}.clrprof"),
    };
    crate::output::prepare(&output_template, args.force)?;
    let (program, rest) = args.command.split_first().context("no command given")?;
    let mut cmd = Command::new(program);
    cmd.args(rest)
        .env("CORECLR_ENABLE_PROFILING", "1")
        .env("CORECLR_PROFILER", CLSID)
        .env("CORECLR_PROFILER_PATH", &library)
        .env("CLRPROF_OUTPUT", &output_template)
        // Every .NET process of the launched tree loads the agent: each writes its own
        // trace (`<stem>.<pid>.<ext>` when the name is taken).
        .env("CLRPROF_SIBLINGS", "1")
        .env("CLRPROF_MODE", args.mode.as_str());
    // `dotnet run` / `dotnet build`: no long-lived build node or compiler server may keep
    // running with the profiler after the command ends (the agent also declines to
    // profile the SDK's processes; CLRPROF_PROFILE_SDK=1 overrides that).
    cmd.env("MSBUILDDISABLENODEREUSE", "1")
        .env("DOTNET_CLI_USE_MSBUILD_SERVER", "0")
        .env("UseSharedCompilation", "false");
    cmd.env("CLRPROF_RATE_HZ", args.rate.to_string());
    if !args.heap.is_empty() {
        if let Some(bad) = args.heap.iter().find(|t| !(t.is_finite() && **t >= 0.0)) {
            anyhow::bail!("--heap {bad}: expected a number of seconds, 0 or more");
        }
        let times: Vec<String> = args.heap.iter().map(f64::to_string).collect();
        cmd.env("CLRPROF_HEAP_AT", times.join(","));
    }
    if let Some(s) = args.sampler {
        cmd.env("CLRPROF_SAMPLER", s.as_str());
    }
    if let Some(d) = args.duration {
        cmd.env("CLRPROF_DURATION_S", d.to_string());
    }
    if let Some(n) = args.max_depth {
        cmd.env("CLRPROF_MAX_DEPTH", n.to_string());
    }
    if !args.include.is_empty() {
        cmd.env("CLRPROF_INCLUDE", args.include.join(";"));
    }
    if !args.exclude.is_empty() {
        cmd.env("CLRPROF_EXCLUDE", args.exclude.join(";"));
    }
    if args.allow_inlining {
        cmd.env("CLRPROF_INLINING", "1");
    }
    if !args.args.is_empty() {
        if args.mode != crate::cli::Mode::Trace {
            anyhow::bail!(
                "--args needs --mode trace: arguments are read by the ELT enter/leave hooks"
            );
        }
        cmd.env("CLRPROF_ARGS", args.args.join(";"))
            .env("CLRPROF_ARG_MAX_LEN", args.arg_max_len.to_string())
            .env("CLRPROF_ARG_DEPTH", args.arg_depth.to_string())
            .env("CLRPROF_ARG_ITEMS", args.arg_items.to_string());
    }
    if let Some(e) = &args.events {
        cmd.env("CLRPROF_EVENTS", e);
    }
    if let Some(kb) = args.buffer_kb {
        cmd.env("CLRPROF_BUFFER_KB", kb.to_string());
    }
    if let Some(f) = args.on_full {
        cmd.env(
            "CLRPROF_ON_FULL",
            if f == OnFull::Drop { "drop" } else { "wait" },
        );
    }
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
             Lines starting with `clrprof[pid]:` above say why it declined, if it did.",
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
