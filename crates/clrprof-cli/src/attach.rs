//! `clrprof record --pid`, `clrprof detach --pid`: attaching through the runtime's
//! diagnostics IPC (AttachProfiler with our settings as client data), confirming through
//! the profiler's own control socket, and detaching through it.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clrprof_ipc::{DiagnosticsClient, IpcError, Uuid};

use crate::cli::{Mode, RecordArgs};
use crate::locate;
use crate::record::CLSID;

/// `CORPROF_E_PROFILER_ALREADY_ACTIVE`
const ALREADY_ACTIVE: i32 = 0x8013_136A_u32 as i32;

/// The private directory holding control sockets: `$TMPDIR/clrprof-<uid>` (0700).
pub fn control_dir() -> PathBuf {
    let base = std::env::var_os("TMPDIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp"));
    // SAFETY: getuid has no preconditions.
    base.join(format!("clrprof-{}", unsafe { libc::getuid() }))
}

pub fn control_socket(pid: u32) -> PathBuf {
    control_dir().join(format!("{pid}.sock"))
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
    unsafe { libc::kill(pid as i32, 0) == 0 }
}

/// Waits until the runtime has unloaded the library (after a detach).
fn wait_unloaded(pid: u32, library: &Path, timeout: Duration) -> bool {
    let end = Instant::now() + timeout;
    while Instant::now() < end {
        if !alive(pid) || !library_mapped(pid, library) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

pub fn record(args: RecordArgs, pid: u32) -> Result<i32> {
    if args.mode == Mode::Trace {
        bail!(
            "--mode trace cannot attach to a running process: the runtime allows ELT enter/leave hooks only \
             for profilers loaded at startup (COR_PRF_MONITOR_ENTERLEAVE is not in COR_PRF_ALLOWABLE_AFTER_ATTACH). \
             Start the program under the profiler instead: clrprof record --mode trace -- <command>"
        );
    }
    let started = Instant::now();
    let library = locate::profiler_library(args.profiler.as_deref())?;
    let client = DiagnosticsClient::connect(pid).map_err(explain)?;
    let cwd = std::env::current_dir()?;
    let output = match &args.output {
        Some(p) if p.is_absolute() => p.clone(),
        Some(p) => cwd.join(p),
        None => cwd.join(format!("clrprof-{pid}.clrprof")),
    };
    let mut env: Vec<(&str, String)> = vec![
        ("CLRPROF_MODE", args.mode.as_str().to_string()),
        ("CLRPROF_OUTPUT", output.display().to_string()),
        ("CLRPROF_RATE_HZ", args.rate.to_string()),
    ];
    if let Some(s) = args.sampler {
        env.push(("CLRPROF_SAMPLER", s.as_str().to_string()));
    }
    if let Some(e) = &args.events {
        env.push(("CLRPROF_EVENTS", e.clone()));
    }
    if let Some(kb) = args.buffer_kb {
        env.push(("CLRPROF_BUFFER_KB", kb.to_string()));
    }
    if !args.heap.is_empty() {
        let times: Vec<String> = args.heap.iter().map(f64::to_string).collect();
        env.push(("CLRPROF_HEAP_AT", times.join(",")));
        env.push(("CLRPROF_HEAP", "1".to_string()));
    }
    start(&client, pid, &library, &env)?;
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
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let _ = ctrlc::set_handler(move || s.store(true, Ordering::SeqCst));
    let end = args
        .duration
        .map(|d| Instant::now() + Duration::from_secs_f64(d));
    let mut exited = false;
    while !stop.load(Ordering::SeqCst) && end.is_none_or(|e| Instant::now() < e) {
        if !alive(pid) {
            exited = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    if exited {
        eprintln!(
            "clrprof: pid {pid} exited during the recording; the trace up to its end is in {}",
            output.display()
        );
        return Ok(0);
    }
    detach_and_wait(pid, &library, args.quiet)?;
    if !args.quiet {
        eprintln!(
            "clrprof: trace written to {}; see it with `clrprof report {}`",
            output.display(),
            output.display()
        );
    }
    Ok(0)
}

/// Sends AttachProfiler with `env` as the agent's settings and waits until the agent
/// answers on its control socket.
pub fn start(
    client: &DiagnosticsClient,
    pid: u32,
    library: &Path,
    env: &[(&str, String)],
) -> Result<()> {
    let control = control_socket(pid);
    if control.exists() && control_request(pid, "status", Duration::from_secs(2)).is_ok() {
        bail!(
            "clrprof is already attached to pid {pid} (CORPROF_E_PROFILER_ALREADY_ACTIVE); \
             detach it first with `clrprof detach --pid {pid}`"
        );
    }
    let data = clrprof_format::encode_attach(&clrprof_format::AttachRequest {
        env: env
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect(),
        control: Some(control.display().to_string()),
    });
    let clsid = Uuid::parse_str(CLSID.trim_matches(|c| c == '{' || c == '}')).expect("valid CLSID");
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
        Err(e) => return Err(explain(e)),
    }
    // Confirm through our own channel: the agent listens once it is initialised.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match control_request(pid, "status", Duration::from_secs(2)) {
            Ok(_) => break,
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

pub fn detach_and_wait(pid: u32, library: &Path, quiet: bool) -> Result<()> {
    let answer = control_request(pid, "detach", Duration::from_secs(30))?;
    if !quiet {
        eprintln!("clrprof: {answer}");
    }
    if wait_unloaded(pid, library, Duration::from_secs(15)) {
        if !quiet {
            eprintln!("clrprof: detached from pid {pid}; the profiler library is unloaded");
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
    let library = locate::profiler_library(profiler)?;
    detach_and_wait(pid, &library, false)?;
    Ok(0)
}

pub fn explain(e: IpcError) -> anyhow::Error {
    anyhow::anyhow!("{e}")
}
