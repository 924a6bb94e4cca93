//! `clrprof record -- <command…>`: starts the command with the profiler enabled through
//! the CORECLR_* variables and its settings in CLRPROF_* variables, forwards Ctrl-C,
//! waits, and returns the command's exit code.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicI32, Ordering};

use anyhow::{Context, Result};

use crate::cli::{OnFull, RecordArgs};
use crate::locate;

/// The agent's CLSID (`CLSID_CLRPROF` in the agent crate).
pub const CLSID: &str = "{27C113DB-28AB-4298-B83A-625E7E26E45D}";

static CHILD: AtomicI32 = AtomicI32::new(0);

pub fn run(args: RecordArgs) -> Result<i32> {
    let library = locate::profiler_library(args.profiler.as_deref())?;
    let cwd = std::env::current_dir()?;
    let output_template = match &args.output {
        Some(p) => absolute(&cwd, p),
        None => cwd.join("clrprof-{pid}.clrprof"),
    };
    let (program, rest) = args.command.split_first().context("no command given")?;
    let mut cmd = Command::new(program);
    cmd.args(rest)
        .env("CORECLR_ENABLE_PROFILING", "1")
        .env("CORECLR_PROFILER", CLSID)
        .env("CORECLR_PROFILER_PATH", &library)
        .env("CLRPROF_OUTPUT", &output_template)
        .env("CLRPROF_MODE", args.mode.as_str());
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
    if !args.include.is_empty() {
        cmd.env("CLRPROF_INCLUDE", args.include.join(";"));
    }
    if !args.exclude.is_empty() {
        cmd.env("CLRPROF_EXCLUDE", args.exclude.join(";"));
    }
    if args.allow_inlining {
        cmd.env("CLRPROF_INLINING", "1");
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
    let mut child = cmd
        .spawn()
        .with_context(|| format!("cannot start `{program}`"))?;
    CHILD.store(child.id() as i32, Ordering::SeqCst);
    // The terminal sends Ctrl-C to the whole foreground group; when we alone get it
    // (e.g. from a script), pass it on. Either way we stay alive to report the trace.
    let _ = ctrlc::set_handler(|| {
        let pid = CHILD.load(Ordering::SeqCst);
        if pid > 0 {
            // SAFETY: kill has no memory-safety preconditions.
            unsafe { libc::kill(pid, libc::SIGINT) };
        }
    });
    let status = child.wait().context("waiting for the command")?;
    let code = exit_code(status);
    if let Some(sig) = killed_by(status).filter(|&s| s != libc::SIGINT) {
        eprintln!(
            "clrprof: `{program}` was killed by signal {sig} ({}); the trace holds what was written before",
            signal_name(sig)
        );
    }
    let output = PathBuf::from(
        output_template
            .to_string_lossy()
            .replace("{pid}", &child.id().to_string()),
    );
    match std::fs::metadata(&output) {
        Ok(m) if m.len() > 0 => {
            if !args.quiet {
                eprintln!(
                    "clrprof: trace written to {} ({}); see it with `clrprof report {}`",
                    output.display(),
                    clrprof_analysis::text::bytes(m.len()),
                    output.display()
                );
            }
            Ok(code)
        }
        _ => {
            eprintln!(
                "clrprof: no trace was written to {}: the profiler did not load. Is `{program}` a .NET (CoreCLR) program? \
                 Lines starting with `clrprof[pid]:` above say why it declined, if it did.",
                output.display()
            );
            Ok(if code == 0 { 1 } else { code })
        }
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
