//! `clrprof record --pid`, `clrprof detach --pid`: attaching through the runtime's
//! diagnostics IPC (AttachProfiler with our settings as client data), confirming through
//! the profiler's own control socket, and detaching through it.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clrprof_ipc::{DiagnosticsClient, IpcError, Uuid};

use clrprof_settings::{Mode, Settings};

use crate::cli::RecordArgs;
use crate::locate;

/// `CORPROF_E_PROFILER_ALREADY_ACTIVE`
const ALREADY_ACTIVE: i32 = 0x8013_136A_u32 as i32;

/// The private directory holding control sockets: `$TMPDIR/clrprof-<uid>` (0700), where
/// `uid` is the *target's* user (the agent creates and checks it as that user; root
/// attaching to someone's process uses theirs).
pub fn control_dir(uid: u32) -> PathBuf {
    let base = std::env::var_os("TMPDIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp"));
    base.join(format!("clrprof-{uid}"))
}

/// The uid a process runs as (the owner of `/proc/PID`).
fn process_uid(pid: u32) -> Option<u32> {
    std::fs::metadata(format!("/proc/{pid}"))
        .ok()
        .map(|m| m.uid())
}

pub fn control_socket(pid: u32) -> PathBuf {
    // SAFETY: getuid has no preconditions.
    let uid = process_uid(pid).unwrap_or_else(|| unsafe { libc::getuid() });
    control_dir(uid).join(format!("{pid}.sock"))
}

/// Refuses a control directory the agent would refuse (lstat: a link is not followed),
/// before asking the runtime for anything.
fn check_control_dir(dir: &Path, uid: u32) -> Result<()> {
    let Ok(m) = std::fs::symlink_metadata(dir) else {
        return Ok(());
    };
    if m.file_type().is_symlink() || !m.is_dir() || m.uid() != uid || m.mode() & 0o077 != 0 {
        bail!(
            "the control directory {} must be a directory owned by uid {uid} (the target's user) \
             with mode 0700, and it is {} owned by uid {} with mode {:o}: someone else may have \
             created it; remove it and try again",
            dir.display(),
            if m.file_type().is_symlink() {
                "a symbolic link"
            } else if m.is_dir() {
                "a directory"
            } else {
                "a file"
            },
            m.uid(),
            m.mode() & 0o777
        );
    }
    Ok(())
}

/// The one-letter state in `/proc/PID/stat` (R, S, D, T, t, Z…).
pub fn process_state(pid: u32) -> Option<char> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    text[text.rfind(')')? + 1..]
        .split_whitespace()
        .next()?
        .chars()
        .next()
}

/// This process's start time (field 22 of /proc/self/stat), which names it together with
/// its pid.
pub fn own_start_time() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/stat").ok()?;
    text[text.rfind(')')? + 1..]
        .split_whitespace()
        .nth(19)?
        .parse()
        .ok()
}

/// Reads and removes the reason the agent left when it refused the attach.
fn take_error_note(control: &Path) -> Option<String> {
    let path = control.with_extension("error");
    let text = std::fs::read_to_string(&path).ok()?;
    let _ = std::fs::remove_file(&path);
    Some(text.trim().to_string()).filter(|t| !t.is_empty())
}

/// Sends one request line to the control socket; returns the answer without `ok `.
pub fn control_request(pid: u32, request: &str, timeout: Duration) -> Result<String> {
    let path = control_socket(pid);
    let stream = UnixStream::connect(&path).with_context(|| {
        format!(
            "no clrprof profiler is attached to pid {pid} (no control socket at {})",
            path.display()
        )
    })?;
    stream.set_read_timeout(Some(timeout))?;
    let mut w = stream.try_clone()?;
    writeln!(w, "{request}")?;
    let mut line = String::new();
    BufReader::new(stream)
        .read_line(&mut line)
        .context("reading the profiler's answer")?;
    let line = line.trim_end();
    match line.strip_prefix("ok ") {
        Some(rest) => Ok(rest.to_string()),
        None => bail!("the profiler in pid {pid} answered: {line}"),
    }
}

fn library_mapped(pid: u32, library: &Path) -> bool {
    let name = library
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    std::fs::read_to_string(format!("/proc/{pid}/maps"))
        .map(|m| m.contains(&name))
        .unwrap_or(false)
}

pub fn alive(pid: u32) -> bool {
    // SAFETY: signal 0 only checks for existence and permission.
    let r = unsafe { libc::kill(pid as i32, 0) };
    // EPERM: it exists, it is another user's.
    (r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM))
        && process_state(pid).is_none_or(|s| s != 'Z' && s != 'X')
}

/// Waits until the runtime has unloaded the library (after a detach).
pub fn wait_unloaded(pid: u32, library: &Path, timeout: Duration) -> bool {
    let end = Instant::now() + timeout;
    while Instant::now() < end {
        if !alive(pid) || !library_mapped(pid, library) {
            return true;
        }
        // Reading the maps is cheap; a short period keeps the reported detach time close
        // to the real unload.
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

pub fn record(args: RecordArgs, pid: u32) -> Result<i32> {
    if !args.args.is_empty() {
        bail!(
            "--args cannot attach to a running process (pid {pid} is left untouched): reading arguments needs \
             COR_PRF_ENABLE_FUNCTION_ARGS, _RETVAL and _FRAME_INFO and the ELT slow-path hooks, which the runtime \
             allows only for profilers loaded at startup; an attaching profiler gets \
             CORPROF_E_UNSUPPORTED_FOR_ATTACHING_PROFILER (0x8013136F). \
             Start the program under the profiler instead: clrprof record --mode trace --args PATTERN -- <command>"
        );
    }
    if args.counts {
        bail!(
            "--counts cannot attach to a running process (pid {pid} is left untouched): calls are counted by \
             ELT enter/leave hooks, which the runtime allows only for profilers loaded at startup \
             (COR_PRF_MONITOR_ENTERLEAVE is not in COR_PRF_ALLOWABLE_AFTER_ATTACH). \
             Start the program under the profiler instead: clrprof record --mode trace --counts -- <command>"
        );
    }
    if args.mode == Mode::Trace {
        bail!(
            "--mode trace cannot attach to a running process: the runtime allows ELT enter/leave hooks only \
             for profilers loaded at startup (COR_PRF_MONITOR_ENTERLEAVE is not in COR_PRF_ALLOWABLE_AFTER_ATTACH). \
             Start the program under the profiler instead: clrprof record --mode trace -- <command>"
        );
    }
    let started = Instant::now();
    let library = locate::profiler_library(args.profiler.as_deref())?;
    if let Some(state @ ('T' | 't')) = process_state(pid) {
        bail!(
            "pid {pid} is stopped (state {state}: SIGSTOP, Ctrl-Z or a debugger) and cannot answer an attach; \
             resume it (`kill -CONT {pid}`) and try again"
        );
    }
    let cwd = std::env::current_dir()?;
    let output = match &args.output {
        Some(p) if p.is_absolute() => p.clone(),
        Some(p) => cwd.join(p),
        None => cwd.join(format!("clrprof-{pid}.clrprof")),
    };
    let output = PathBuf::from(output.to_string_lossy().replace("{pid}", &pid.to_string()));
    // The same settings as starting a command with these options; all of them travel in
    // the client data (clrprof's own CLRPROF_* environment is not the target's).
    let (mut settings, _) = crate::settings::from_args(&args, &output)?;
    // The agent detaches itself when this process is gone (killed, terminal closed).
    settings.owner_pid = Some(std::process::id());
    settings.owner_start = own_start_time();
    let client = DiagnosticsClient::connect(pid).map_err(explain)?;
    crate::output::prepare(&output, args.force)?;
    start(&client, pid, &library, &settings)?;
    let control = control_socket(pid);
    let latency = started.elapsed();
    if !args.quiet {
        eprintln!(
            "clrprof: attached to pid {pid} in {:.1} ms; recording {} to {} ({})",
            latency.as_secs_f64() * 1e3,
            args.mode.as_str(),
            output.display(),
            match args.duration {
                Some(d) => format!("{d} s, or Ctrl-C"),
                None => "Ctrl-C to stop".into(),
            }
        );
    }
    crate::signals::catch();
    let end = args
        .duration
        .map(|d| Instant::now() + Duration::from_secs_f64(d));
    let mut last_socket_check = Instant::now();
    while crate::signals::received().is_none() && end.is_none_or(|e| Instant::now() < e) {
        if !alive(pid) {
            eprintln!(
                "clrprof: pid {pid} exited during the recording; the trace up to its end is in {}",
                output.display()
            );
            return Ok(0);
        }
        if last_socket_check.elapsed() >= Duration::from_millis(200) {
            last_socket_check = Instant::now();
            if !control.exists() {
                // Another `clrprof detach`, or the agent's own stop: the trace is whole.
                wait_unloaded(pid, &library, Duration::from_secs(15));
                eprintln!(
                    "clrprof: the profiler in pid {pid} was detached by another request; the trace is complete in {}",
                    output.display()
                );
                return Ok(0);
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    if control.exists() {
        detach_and_wait(pid, &library, args.quiet)?;
    } else {
        // The agent stopped on its own meanwhile (its --duration backstop when this
        // process could not act in time, or another `clrprof detach`).
        wait_unloaded(pid, &library, Duration::from_secs(15));
        if !args.quiet {
            eprintln!("clrprof: the profiler in pid {pid} had already detached");
        }
    }
    // A disk full at the end: the trace could not record its loss; the note beside it did.
    crate::input::print_warnings(&output, &crate::output::lost_note_warnings_of(&output));
    if !args.quiet {
        eprintln!(
            "clrprof: trace written to {}; see it with `clrprof report {}`",
            output.display(),
            output.display()
        );
    }
    Ok(0)
}

/// Sends AttachProfiler with `settings` and waits until the agent answers on its control
/// socket; a refusal comes back with the agent's reason.
pub fn start(
    client: &DiagnosticsClient,
    pid: u32,
    library: &Path,
    settings: &Settings,
) -> Result<()> {
    crate::namespaces::check_same(pid)?;
    let control = control_socket(pid);
    if let (Some(dir), Some(uid)) = (control.parent(), process_uid(pid)) {
        check_control_dir(dir, uid)?;
    }
    let _ = std::fs::remove_file(control.with_extension("error"));
    if control.exists() && control_request(pid, "status", Duration::from_secs(2)).is_ok() {
        bail!(
            "clrprof is already attached to pid {pid} (CORPROF_E_PROFILER_ALREADY_ACTIVE); \
             detach it first with `clrprof detach --pid {pid}`"
        );
    }
    let data = clrprof_settings::attach::encode(&clrprof_settings::attach::AttachRequest {
        settings: settings.clone(),
        control: Some(control.clone()),
    });
    let clsid = Uuid::from_u128(clrprof_settings::CLSID);
    match client.attach_profiler(Duration::from_secs(10), clsid, library, &data) {
        Ok(_) => {}
        Err(IpcError::RuntimeError { hresult, .. }) if hresult == ALREADY_ACTIVE => bail!(
            "another profiler is already attached to pid {pid} (CORPROF_E_PROFILER_ALREADY_ACTIVE): \
             .NET allows one at a time"
        ),
        // The runtime's answer can time out although the attach goes on: confirm below.
        Err(IpcError::Timeout { .. }) => {
            eprintln!(
                "clrprof: the runtime did not answer in time; checking whether the attach succeeded…"
            )
        }
        // A killed target closes its sockets a moment before it is gone from /proc.
        Err(_) if gone_within(pid, Duration::from_secs(1)) => {
            return Err(exited_during_attach(pid, settings));
        }
        Err(e) => {
            return Err(match take_error_note(&control) {
                Some(reason) => anyhow::anyhow!("{e}\nthe profiler in pid {pid} said: {reason}"),
                None => explain(e),
            });
        }
    }
    // Confirm through our own channel: the agent listens once it is initialised.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match control_request(pid, "status", Duration::from_secs(2)) {
            Ok(_) => break,
            Err(_) if let Some(reason) = take_error_note(&control) => {
                bail!("the profiler in pid {pid} refused the attach: {reason}");
            }
            Err(_) if !alive(pid) => return Err(exited_during_attach(pid, settings)),
            Err(_) if let Some(state @ ('T' | 't')) = process_state(pid) => {
                bail!(
                    "pid {pid} was stopped (state {state}: SIGSTOP, Ctrl-Z or a debugger) during the attach; \
                     the runtime finishes it when the process resumes (`kill -CONT {pid}`), and the profiler \
                     then detaches itself because this clrprof is gone"
                );
            }
            Err(e) if Instant::now() > deadline => {
                return Err(e.context(format!(
                    "the profiler did not confirm the attach to pid {pid}; look for `clrprof[{pid}]:` lines in the target's stderr"
                )));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(5)),
        }
    }
    Ok(())
}

/// Whether `pid` is gone, or goes within `limit`.
fn gone_within(pid: u32, limit: Duration) -> bool {
    let end = Instant::now() + limit;
    loop {
        if !alive(pid) {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The target exited while it was being attached to: said as such (not as an IPC error or
/// an unconfirmed attach), with what became of the trace.
fn exited_during_attach(pid: u32, settings: &Settings) -> anyhow::Error {
    let trace = match std::fs::symlink_metadata(&settings.output) {
        Ok(m) if m.is_file() && m.len() > 0 => format!(
            "; the profiler had begun {} ({}), which holds what it recorded before the exit",
            settings.output.display(),
            clrprof_analysis::text::bytes(m.len())
        ),
        // Created by this attach's profiler (the path was free before), not yet written:
        // no stub is left behind.
        Ok(m) if m.is_file() && std::fs::remove_file(&settings.output).is_ok() => {
            "; no trace was written".into()
        }
        _ => "; no trace was written".into(),
    };
    anyhow::anyhow!("pid {pid} exited during the attach, before the profiler confirmed it{trace}")
}

pub fn detach_and_wait(pid: u32, library: &Path, quiet: bool) -> Result<()> {
    let started = Instant::now();
    let answer = control_request(pid, "detach", Duration::from_secs(30))?;
    let answered = started.elapsed();
    if !quiet {
        eprintln!("clrprof: {answer}");
    }
    if wait_unloaded(pid, library, Duration::from_secs(15)) {
        if !quiet {
            eprintln!(
                "clrprof: detached from pid {pid} in {:.1} ms ({:.1} ms until the profiler \
                 stopped and answered); the profiler library is unloaded",
                started.elapsed().as_secs_f64() * 1e3,
                answered.as_secs_f64() * 1e3
            );
        }
    } else {
        eprintln!(
            "clrprof: warning: pid {pid} still maps {} 15 s after the detach request",
            library.display()
        );
    }
    Ok(())
}

pub fn detach(pid: u32, profiler: Option<&Path>) -> Result<i32> {
    if !alive(pid) {
        bail!("no process with pid {pid}");
    }
    // SAFETY: signal 0 only checks for existence and permission.
    if unsafe { libc::kill(pid as i32, 0) } != 0 {
        bail!(
            "pid {pid} belongs to another user (EPERM): only its user or root can detach clrprof from it"
        );
    }
    let library = locate::profiler_library(profiler)?;
    detach_and_wait(pid, &library, false)?;
    Ok(0)
}

pub fn explain(e: IpcError) -> anyhow::Error {
    anyhow::anyhow!("{e}")
}
