//! `clrprof record --pid`, `clrprof detach --pid`: attaching through the runtime's
//! diagnostics IPC (AttachProfiler with our settings as client data), confirming through
//! the profiler's own control socket, and detaching through it.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clrprof_ipc::control::{self, AnswerError, HeapTaken, Request, Response, Status};
use clrprof_ipc::{DiagnosticsClient, IpcError, Uuid};

use clrprof_settings::{Mode, Settings};

use crate::cli::RecordArgs;
use crate::locate;

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

/// The most of a `PID.error` note that is read: the agent's reasons are one line.
pub const NOTE_MAX: u64 = 4096;

/// Reads and removes the reason the agent left when it refused the attach, as the line to
/// print: `said: <reason>`, or why the note was not read. `None` when there is none.
///
/// The note lies in the target user's directory, so that user (not necessarily the one
/// running clrprof, which may be root) decides what is there: it is opened without
/// following a link and without blocking (a FIFO), and read only if it is a regular file
/// of `owner` that nobody else may write, and only its first [`NOTE_MAX`] bytes.
fn take_error_note(control: &Path, owner: u32) -> Option<String> {
    let path = control.with_extension("error");
    let note = read_error_note(&path, owner);
    let _ = std::fs::remove_file(&path);
    match note {
        Ok(None) => None,
        Ok(Some(text)) => Some(format!(
            "said: {}",
            clrprof_analysis::text::escape_controls(&text)
        )),
        Err(why) => Some(format!(
            "left a note at {} that clrprof did not read: {why}",
            path.display()
        )),
    }
}

/// The text of the note at `path` (`Ok(None)`: no note, or an empty one), or why it is
/// not read.
pub fn read_error_note(path: &Path, owner: u32) -> std::result::Result<Option<String>, String> {
    use std::io::Read;
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
        .open(path);
    let f = match f {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err("it is a symbolic link (a regular file is expected)".into());
        }
        Err(e) => return Err(format!("cannot open it: {e}")),
    };
    let m = f.metadata().map_err(|e| format!("cannot stat it: {e}"))?;
    let t = m.file_type();
    if !t.is_file() {
        let what = if t.is_fifo() {
            "a FIFO"
        } else if t.is_char_device() {
            "a character device"
        } else if t.is_block_device() {
            "a block device"
        } else if t.is_socket() {
            "a socket"
        } else if t.is_dir() {
            "a directory"
        } else {
            "not a regular file"
        };
        return Err(format!("it is {what} (a regular file is expected)"));
    }
    if m.uid() != owner {
        return Err(format!(
            "it belongs to uid {}, not to uid {owner} (the target's user)",
            m.uid()
        ));
    }
    if m.mode() & 0o022 != 0 {
        return Err(format!(
            "others may write it (mode {:o})",
            m.mode() & 0o7777
        ));
    }
    let mut bytes = Vec::new();
    f.take(NOTE_MAX + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read it: {e}"))?;
    let cut = bytes.len() as u64 > NOTE_MAX;
    bytes.truncate(NOTE_MAX as usize);
    let text = String::from_utf8_lossy(&bytes);
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    Ok(Some(if cut {
        format!("{text}… (cut at {NOTE_MAX} bytes)")
    } else {
        text.to_string()
    }))
}

/// Sends one request to the control socket (`clrprof_ipc::control`) and reads the answer.
/// An error answer, an older agent's plain-text answer or an unreadable line is an error
/// that says which.
pub fn control_request(pid: u32, request: Request, timeout: Duration) -> Result<Response> {
    let path = control_socket(pid);
    let stream = UnixStream::connect(&path).with_context(|| {
        format!(
            "no clrprof profiler is attached to pid {pid} (no control socket at {})",
            path.display()
        )
    })?;
    check_peer(&stream, pid, &path)?;
    stream.set_read_timeout(Some(timeout))?;
    let mut w = stream.try_clone()?;
    let asked = format!("{request:?}");
    let asked = asked
        .split([' ', '(', '{'])
        .next()
        .unwrap_or_default()
        .to_string();
    w.write_all(request.to_line().as_bytes())?;
    let mut line = String::new();
    if let Err(e) = BufReader::new(stream).read_line(&mut line) {
        // The read timeout ends as EAGAIN (WouldBlock) or ETIMEDOUT: name the wait.
        if matches!(
            e.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        ) {
            bail!(
                "the profiler in pid {pid} did not answer `{asked}` within {:.1} s ({e}): its \
                 control thread had no core to run on, or it is busy (a heap snapshot, a detach \
                 waiting for the runtime); try again, and look for `clrprof[{pid}]:` lines in the \
                 target's stderr",
                timeout.as_secs_f64()
            );
        }
        return Err(anyhow::Error::new(e).context("reading the profiler's answer"));
    }
    let escape = clrprof_analysis::text::escape_controls;
    if line.trim().is_empty() {
        bail!("the profiler in pid {pid} closed the connection without answering");
    }
    match control::parse_answer(&line) {
        Ok(Response::Error(e)) => bail!(
            "the profiler in pid {pid} answered: {}",
            escape(&e.to_string())
        ),
        Ok(answer) => Ok(answer),
        Err(AnswerError::OlderAgent { said }) => bail!(
            "the profiler in pid {pid} is an older clrprof that does not speak control protocol {} \
             (it answered: {}); use the clrprof that attached it, or restart the target",
            control::CONTROL_VERSION,
            escape(&said)
        ),
        Err(AnswerError::Unreadable { said }) => bail!(
            "the profiler in pid {pid} answered something that is no control answer: {}",
            escape(&said)
        ),
    }
}

/// The answer of a kind the request does not get.
fn unexpected(pid: u32, request: Request, answer: &Response) -> anyhow::Error {
    anyhow::anyhow!("the profiler in pid {pid} answered {request:?} with {answer:?}")
}

/// `status` of the profiler attached to `pid`.
pub fn control_status(pid: u32, timeout: Duration) -> Result<Status> {
    match control_request(pid, Request::Status, timeout)? {
        Response::Status(s) => Ok(s),
        other => Err(unexpected(pid, Request::Status, &other)),
    }
}

/// A heap snapshot taken by the profiler attached to `pid`, into its trace.
pub fn control_heap(pid: u32, timeout: Duration) -> Result<HeapTaken> {
    match control_request(pid, Request::Heap, timeout)? {
        Response::Heap(h) => Ok(h),
        other => Err(unexpected(pid, Request::Heap, &other)),
    }
}

/// `SO_PEERCRED` of a connected Unix socket: the pid and uid of the process at the other
/// end, as the kernel recorded them (the listener's, for a socket we connected).
pub fn peer_credentials(stream: &UnixStream) -> std::io::Result<(u32, u32)> {
    use std::os::fd::AsRawFd;
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: the descriptor is the open socket `stream` holds; `cred` is a live local of
    // the type SO_PEERCRED writes and `len` its true size.
    let r = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&raw mut cred).cast(),
            &mut len,
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok((cred.pid as u32, cred.uid))
}

/// Whether the process serving a control socket may be the profiler in `target_pid`: the
/// pid must be the target's and the uid the target's user, this user, or root.
pub fn peer_is_the_target(
    peer: (u32, u32),
    target_pid: u32,
    target_uid: u32,
    own_uid: u32,
) -> bool {
    let (pid, uid) = peer;
    pid == target_pid && (uid == target_uid || uid == own_uid || uid == 0)
}

/// Refuses to talk to a control socket that another process or user serves (a directory
/// swapped in a world-writable `TMPDIR`): the profiler listens in the target itself.
fn check_peer(stream: &UnixStream, pid: u32, path: &Path) -> Result<()> {
    let peer = peer_credentials(stream)
        .with_context(|| format!("cannot read the credentials of {}", path.display()))?;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    let target_uid = process_uid(pid).unwrap_or(me);
    if !peer_is_the_target(peer, pid, target_uid, me) {
        bail!(
            "the control socket {} is served by pid {} (uid {}), not by pid {pid} (uid {target_uid}): \
             someone else put it there; clrprof does not talk to it (remove it, and check who can \
             write to {})",
            path.display(),
            peer.0,
            peer.1,
            path.parent().unwrap_or(path).display()
        );
    }
    Ok(())
}

/// The copies of the profiler library `pid` maps (`/proc/PID/maps`, deleted or not).
/// Whether pid holds the dormant agent of a trace-mode recording: the agent left its
/// note beside the control socket, and a clrprof library is still mapped.
pub fn dormant(pid: u32) -> bool {
    let control = control_socket(pid);
    control.with_extension("dormant").exists()
        && !mapped_libraries(pid).is_empty()
        && (!control.exists()
            || control_status(pid, Duration::from_secs(2)).is_ok_and(|s| s.dormant))
}

fn mapped_libraries(pid: u32) -> Vec<PathBuf> {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
    let mut found: Vec<PathBuf> = maps
        .lines()
        .filter_map(|l| l.find('/').map(|i| &l[i..]))
        .map(|p| p.trim_end_matches(" (deleted)"))
        .filter(|p| {
            Path::new(p)
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(locate::LIBRARY_STEM))
        })
        .map(PathBuf::from)
        .collect();
    found.sort();
    found.dedup();
    found
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

/// Whether `pid` is gone without the agent having detached: the runtime's shutdown closes
/// the control socket too, a moment before the process is gone, and a loaded machine can
/// show the CLI that moment; a detach leaves its note, an exit does not.
fn exited_undetached(pid: u32) -> bool {
    !alive(pid) && !detached_note(pid).exists()
}

/// Where a detached agent that stays mapped says it has finished (the agent's
/// `control::socket::detached_note_path`): the agent keeps its library loaded
/// (`RTLD_NODELETE`) for the next attach to the process (docs/attach.md).
fn detached_note(pid: u32) -> PathBuf {
    control_socket(pid).with_extension("detached")
}

/// Waits until the runtime has unloaded the library after a detach, or the agent said
/// it finished and stays mapped, inert. The note stays: another `clrprof` may be waiting
/// for the same detach (`detach` during `heap`); the next agent in the process removes it
/// when it starts, and `libcopy` those of processes that are gone.
pub fn wait_unloaded(pid: u32, library: &Path, timeout: Duration) -> bool {
    let end = Instant::now() + timeout;
    let note = detached_note(pid);
    while Instant::now() < end {
        if !alive(pid) || !library_mapped(pid, library) {
            return true;
        }
        if note.exists() {
            // The runtime finishes its side of the detach right after the agent's last
            // callback returns.
            std::thread::sleep(Duration::from_millis(20));
            return true;
        }
        // Reading the maps is cheap; a short period keeps the reported detach time close
        // to the real unload.
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

/// Prints what the agent's `status` says of its probes (trace mode after attach), once it
/// says anything: `probes installed in N methods` and each method it could not probe.
/// Returns whether it did.
fn say_probes(pid: u32, quiet: bool) -> bool {
    let Ok(status) = control_status(pid, Duration::from_secs(2)) else {
        return false;
    };
    let Some(p) = status.probes else {
        return false;
    };
    let esc = clrprof_analysis::text::escape_controls;
    if let Some(e) = &p.error {
        eprintln!("clrprof: no probes: {}", esc(e));
    } else if !quiet {
        eprintln!("clrprof: probes installed in {} methods", p.installed);
    }
    for (name, why) in &p.not_probed {
        eprintln!("clrprof: not probed: {}: {}", esc(name), esc(why));
    }
    true
}

/// What runs once the agent is recording, for as long as `record` waits (the `--push`
/// uploads, which the caller starts: `push` follows traces through `live`, which
/// attaches through this module); its value is dropped after the detach.
pub type WhileAttached<'a> =
    &'a dyn Fn(&RecordArgs, u32, &Path, u32) -> Result<Box<dyn std::any::Any>>;

pub fn record(args: RecordArgs, pid: u32, while_attached: WhileAttached<'_>) -> Result<i32> {
    let asked = &args.settings.settings;
    if !asked.args.is_empty() {
        bail!(
            "--args cannot attach to a running process (pid {pid} is left untouched): arguments are read in \
             the ELT hooks (COR_PRF_MONITOR_ENTERLEAVE; with CLRPROF_ARGS_FAST=0 also COR_PRF_ENABLE_FUNCTION_ARGS, \
             _RETVAL and _FRAME_INFO), which the runtime allows only for profilers loaded at startup; an attaching \
             profiler gets CORPROF_E_UNSUPPORTED_FOR_ATTACHING_PROFILER (0x8013136F). \
             Start the program under the profiler instead: clrprof record --mode trace --args PATTERN -- <command>"
        );
    }
    if asked.counts {
        bail!(
            "--counts cannot attach to a running process (pid {pid} is left untouched): calls are counted by \
             ELT enter/leave hooks, which the runtime allows only for profilers loaded at startup \
             (COR_PRF_MONITOR_ENTERLEAVE is not in COR_PRF_ALLOWABLE_AFTER_ATTACH). \
             Start the program under the profiler instead: clrprof record --mode trace --counts -- <command>"
        );
    }
    if asked.mode == Mode::Trace {
        if asked.include.is_empty() {
            bail!(
                "--mode trace on a running process needs --include: the runtime allows ELT enter/leave hooks \
                 (what trace mode uses at startup) only for profilers loaded at startup, so after attach clrprof \
                 probes the methods --include selects instead, rewriting their IL through ReJIT. \
                 Give --include 'MyApp.Orders.*' (pid {pid} is left untouched), or start the program under the \
                 profiler: clrprof record --mode trace -- <command>"
            );
        }
        eprintln!(
            "clrprof: tracing pid {pid} with IL probes (ReJIT): once they are enabled the runtime refuses to \
             detach the profiler (CORPROF_E_IRREVERSIBLE_INSTRUMENTATION_PRESENT), so the library stays loaded, \
             dormant, until the process exits; the probes are removed when the recording ends"
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
    let output = match args.settings.output() {
        Some(p) if p.is_absolute() => p.to_path_buf(),
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
    // Before the attach: a Ctrl-C from now on detaches cleanly instead of killing this
    // process and leaving the agent to notice that its owner is gone.
    crate::signals::catch();
    if let Some(sig) = crate::signals::received() {
        bail!("stopped by signal {sig} before attaching; pid {pid} is untouched");
    }
    let library = start(&client, pid, &library, &settings)?;
    let control = control_socket(pid);
    let latency = started.elapsed();
    // `--push`: its last cut and uploads when this function returns, after the detach.
    let _pushing = while_attached(&args, pid, &output, settings.rate_hz)?;
    if !args.quiet {
        eprintln!(
            "clrprof: attached to pid {pid} in {:.1} ms; recording {} to {} ({})",
            latency.as_secs_f64() * 1e3,
            asked.mode.as_str(),
            output.display(),
            match asked.duration_s {
                Some(d) => format!("{d} s, or Ctrl-C"),
                None => "Ctrl-C to stop".into(),
            }
        );
    }
    let end = asked
        .duration_s
        .map(|d| Instant::now() + Duration::from_secs_f64(d));
    let mut last_socket_check = Instant::now();
    // Trace mode: the agent installs the probes once the attach is complete; say how many.
    let mut probes_said = asked.mode != Mode::Trace;
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
            // A dormant agent keeps its control socket: it says it is dormant again.
            let ended_dormant = control.with_extension("dormant").exists()
                && control_status(pid, Duration::from_secs(2)).is_ok_and(|s| s.dormant);
            if ended_dormant {
                eprintln!(
                    "clrprof: the recording in pid {pid} was ended by another request; the trace is complete in {}",
                    output.display()
                );
                return Ok(0);
            }
            if !control.exists() {
                // Another `clrprof detach`, or the agent's own stop: the trace is whole.
                wait_unloaded(pid, &library, Duration::from_secs(15));
                if exited_undetached(pid) {
                    eprintln!(
                        "clrprof: pid {pid} exited during the recording; the trace up to its end is in {}",
                        output.display()
                    );
                    return Ok(0);
                }
                eprintln!(
                    "clrprof: the profiler in pid {pid} was detached by another request; the trace is complete in {}",
                    output.display()
                );
                return Ok(0);
            }
            if !probes_said {
                probes_said = say_probes(pid, args.quiet);
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    if control.exists() {
        // A recording shorter than one status check still says what it probed.
        if !probes_said {
            say_probes(pid, args.quiet);
        }
        detach_and_wait(pid, &library, args.quiet)?;
    } else {
        // The agent stopped on its own meanwhile (its --duration backstop when this
        // process could not act in time, or another `clrprof detach`).
        wait_unloaded(pid, &library, Duration::from_secs(15));
        if !args.quiet {
            if exited_undetached(pid) {
                eprintln!("clrprof: pid {pid} exited at the end of the recording");
            } else {
                eprintln!("clrprof: the profiler in pid {pid} had already detached");
            }
        }
    }
    // A disk full at the end: the trace could not record its loss; the note beside it did.
    let lost = crate::output::lost_note_warnings_of(&output);
    crate::input::print_warnings(&output, &lost);
    // The sampled methods' source lines, read from their PDBs while the process that
    // loaded them still runs, so the trace shows its lines elsewhere too (as `record --
    // COMMAND` does). Not after a loss: a trace that did not end well is left alone.
    if !args.no_lines
        && lost.is_empty()
        && let Err(e) = crate::travel::append_lines(&output)
    {
        eprintln!(
            "clrprof: {} {}: source lines not added: {e:#}",
            crate::style::warning("warning:"),
            output.display()
        );
    }
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
/// socket; a refusal comes back with the agent's reason. The runtime is given the
/// process's resident copy of `library` (`libcopy`: made by the first attach), whose path
/// this returns: the target's maps name it while the process lives.
pub fn start(
    client: &DiagnosticsClient,
    pid: u32,
    library: &Path,
    settings: &Settings,
) -> Result<PathBuf> {
    crate::namespaces::check_same(pid)?;
    let control = control_socket(pid);
    let uid = process_uid(pid);
    if let (Some(dir), Some(uid)) = (control.parent(), uid) {
        check_control_dir(dir, uid)?;
    }
    // SAFETY: geteuid has no preconditions.
    let owner = process_uid(pid).unwrap_or_else(|| unsafe { libc::geteuid() });
    let _ = std::fs::remove_file(control.with_extension("error"));
    let data = clrprof_settings::attach::encode(&clrprof_settings::attach::AttachRequest {
        settings: settings.clone(),
        control: Some(control.clone()),
    });
    if control.exists()
        && let Ok(status) = control_status(pid, Duration::from_secs(2))
    {
        if status.dormant {
            return start_in_dormant(pid, &data, status);
        }
        bail!(
            "clrprof is already attached to pid {pid} (CORPROF_E_PROFILER_ALREADY_ACTIVE); \
             detach it first with `clrprof detach --pid {pid}`"
        );
    }
    let clsid = Uuid::from_u128(clrprof_settings::CLSID);
    let target_uid = uid.unwrap_or_else(crate::libcopy::own_uid);
    // The copy this process loaded at its first attach, named again: `dlopen` returns the
    // loaded object, so no attach after the first loads a library (docs/attach.md).
    let resident = crate::libcopy::resident(pid, target_uid, library);
    let copy = match &resident {
        Some(_) => None,
        None => crate::libcopy::LibraryCopy::create(
            library,
            control.parent().unwrap_or(Path::new("/tmp")),
            target_uid,
            pid,
        )?,
    };
    // Kept on disk when this returns if the target mapped it (its resident copy), else
    // removed.
    let mapped = resident.unwrap_or_else(|| {
        copy.as_ref()
            .map_or_else(|| library.to_path_buf(), |c| c.path().to_path_buf())
    });
    match client.attach_profiler(Duration::from_secs(10), clsid, &mapped, &data) {
        Ok(_) => {}
        // A trace-mode recording's agent, which the runtime keeps after its IL probes.
        Err(IpcError::RuntimeError { hresult, .. })
            if hresult == clrprof_ipc::hresult::CORPROF_E_PROFILER_ALREADY_ACTIVE
                && dormant(pid) =>
        {
            bail!(
                "pid {pid} still holds the dormant clrprof agent of an earlier `record --mode trace` \
                 (IL probes through ReJIT): the runtime keeps a profiler that used ReJIT loaded until the \
                 process exits (CORPROF_E_IRREVERSIBLE_INSTRUMENTATION_PRESENT) and allows one at a time \
                 (CORPROF_E_PROFILER_ALREADY_ACTIVE); restart the process to profile it again"
            )
        }
        Err(IpcError::RuntimeError { hresult, .. })
            if hresult == clrprof_ipc::hresult::CORPROF_E_PROFILER_ALREADY_ACTIVE =>
        {
            bail!(
                "another profiler is already attached to pid {pid} (CORPROF_E_PROFILER_ALREADY_ACTIVE): \
             .NET allows one at a time"
            )
        }
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
            return Err(match take_error_note(&control, owner) {
                Some(note) => anyhow::anyhow!("{e}\nthe profiler in pid {pid} {note}"),
                None => explain(e),
            });
        }
    }
    // Confirm through our own channel: the agent listens once it is initialised.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match control_status(pid, Duration::from_secs(2)) {
            Ok(_) => break,
            Err(_) if let Some(note) = take_error_note(&control, owner) => {
                bail!("the profiler in pid {pid} refused the attach; it {note}");
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
    Ok(mapped)
}

/// The dormant agent of an earlier `record --mode trace` (the runtime keeps a profiler
/// that used ReJIT, and allows no second one): its control socket starts the recording
/// instead of an attach, with the same settings (`data`, the client data). What it cannot
/// do comes back with its reason. Returns the library the target maps.
fn start_in_dormant(pid: u32, data: &[u8], status: Status) -> Result<PathBuf> {
    let json = String::from_utf8_lossy(data.get(12..).unwrap_or_default()).into_owned();
    let request = Request::Start { settings: json };
    let length = request.clone().to_line().len();
    if length > CONTROL_LINE_MAX {
        bail!(
            "the settings for pid {pid}'s dormant clrprof agent take {length} bytes, more than the \
             {CONTROL_LINE_MAX} its control socket reads; shorten the -o path or the --include/--exclude \
             patterns"
        );
    }
    match control_request(pid, request, Duration::from_secs(60)) {
        Ok(Response::Status(_)) => {}
        Ok(other) => {
            return Err(unexpected(
                pid,
                Request::Start {
                    settings: String::new(),
                },
                &other,
            ));
        }
        Err(e) => {
            return Err(e.context(format!(
                "pid {pid} holds the dormant clrprof agent of an earlier `record --mode trace` (the \
                 runtime keeps a profiler that used ReJIT until the process exits), and it did not \
                 start this recording"
            )));
        }
    }
    Ok(status
        .library
        .unwrap_or_else(|| mapped_libraries(pid).into_iter().next().unwrap_or_default()))
}

/// The longest request line the agent's control socket reads (`control/socket.rs`).
const CONTROL_LINE_MAX: usize = 4096;

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
    let answer = control_request(pid, Request::Detach, Duration::from_secs(30))?;
    let answered = started.elapsed();
    match answer {
        Response::Detaching { trace } => {
            if !quiet {
                eprintln!("clrprof: detaching; trace written to {}", trace.display());
            }
        }
        // After IL probes the runtime keeps the library (the agent said so): nothing unloads.
        Response::Dormant { trace, reason } => {
            eprintln!(
                "clrprof: trace written to {}; the runtime refuses to unload a profiler that used \
                 ReJIT ({reason}), so the library stays loaded, dormant, until the process exits",
                trace.display()
            );
            return Ok(());
        }
        other => return Err(unexpected(pid, Request::Detach, &other)),
    }
    if wait_unloaded(pid, library, Duration::from_secs(15)) {
        if !quiet {
            let library_state = if alive(pid) && library_mapped(pid, library) {
                "the profiler library stays mapped, inert, for the next attach (see docs/attach.md)"
            } else {
                "the profiler library is unloaded"
            };
            eprintln!(
                "clrprof: detached from pid {pid} in {:.1} ms ({:.1} ms until the profiler \
                 stopped and answered); {library_state}",
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

/// `_profiler` (`detach --profiler`) is still accepted, and no longer needed: the target
/// maps a copy of the library, which the agent names.
pub fn detach(pid: u32, _profiler: Option<&Path>) -> Result<i32> {
    if !alive(pid) {
        bail!("no process with pid {pid}");
    }
    // SAFETY: signal 0 only checks for existence and permission.
    if unsafe { libc::kill(pid as i32, 0) } != 0 {
        bail!(
            "pid {pid} belongs to another user (EPERM): only its user or root can detach clrprof from it"
        );
    }
    // The copy of the library the target maps. Only when a refused attach left another
    // copy mapped (docs/attach.md) is the agent asked which is its own; a control thread
    // busy with a heap snapshot answers nothing meanwhile, and then any copy will do.
    let mapped = mapped_libraries(pid);
    let library = match mapped.as_slice() {
        [one] => one.clone(),
        _ => control_status(pid, Duration::from_millis(300))
            .ok()
            .and_then(|s| s.library)
            .or_else(|| mapped.first().cloned())
            .unwrap_or_else(|| PathBuf::from(format!("{}.", locate::LIBRARY_STEM))),
    };
    let was_attached = control_socket(pid).exists();
    if let Err(e) = detach_and_wait(pid, &library, false) {
        // Another request detached it while ours waited (the control thread serves one
        // request at a time, a heap snapshot for seconds): the agent closed our connection
        // on its way out. That is the outcome asked for. Nothing attached is an error.
        if !was_attached
            || control_socket(pid).exists()
            || !wait_unloaded(pid, &library, Duration::from_secs(15))
        {
            return Err(e);
        }
        eprintln!(
            "clrprof: the profiler in pid {pid} was detached by another request meanwhile ({e:#}); \
             the profiler has detached"
        );
    }
    Ok(0)
}

pub fn explain(e: IpcError) -> anyhow::Error {
    anyhow::anyhow!("{e}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("clrprof-note-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn me() -> u32 {
        // SAFETY: geteuid has no preconditions.
        unsafe { libc::geteuid() }
    }

    #[test]
    fn an_agent_that_does_not_answer_in_time_is_named_with_the_request_and_the_wait() {
        // A control socket served by this process (the peer check passes) that reads the
        // request and never answers.
        let pid = std::process::id();
        let path = control_socket(pid);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let _ = std::fs::remove_file(&path);
        let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        let server = std::thread::spawn(move || {
            let (conn, _) = listener.accept().unwrap();
            std::thread::sleep(Duration::from_millis(1500));
            drop(conn);
        });
        let e = control_request(pid, Request::Status, Duration::from_millis(200)).unwrap_err();
        let _ = std::fs::remove_file(&path);
        server.join().unwrap();
        let e = format!("{e:#}");
        assert!(
            e.contains(&format!(
                "the profiler in pid {pid} did not answer `Status` within 0.2 s"
            )),
            "{e}"
        );
    }

    #[test]
    fn the_peer_must_be_the_target() {
        // The pid is the target's, the uid its user's, ours or root's.
        assert!(peer_is_the_target((42, 1000), 42, 1000, 0));
        assert!(peer_is_the_target((42, 0), 42, 1000, 1000));
        assert!(peer_is_the_target((42, 1000), 42, 1001, 1000));
        assert!(!peer_is_the_target((43, 1000), 42, 1000, 1000));
        assert!(!peer_is_the_target((42, 1002), 42, 1000, 1001));
        // The kernel's answer for a socket pair is this process.
        let (a, _b) = UnixStream::pair().unwrap();
        assert_eq!(peer_credentials(&a).unwrap(), (std::process::id(), me()));
    }

    #[test]
    fn a_note_of_the_targets_user_is_read() {
        let d = scratch("ok");
        let note = d.join("1.error");
        std::fs::write(&note, "cannot listen on x\n").unwrap();
        std::fs::set_permissions(&note, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(
            read_error_note(&note, me()).unwrap().as_deref(),
            Some("cannot listen on x")
        );
        assert_eq!(read_error_note(&d.join("none.error"), me()), Ok(None));
        // Another user's note, or one others may write, is not.
        let e = read_error_note(&note, me() + 1).unwrap_err();
        assert!(e.contains("belongs to uid"), "{e}");
        std::fs::set_permissions(&note, std::fs::Permissions::from_mode(0o622)).unwrap();
        let e = read_error_note(&note, me()).unwrap_err();
        assert!(e.contains("others may write it"), "{e}");
    }

    #[test]
    fn links_fifos_and_devices_are_not_read_and_nothing_blocks() {
        let d = scratch("hostile");
        let secret = d.join("secret");
        std::fs::write(&secret, "TOP-SECRET").unwrap();
        let note = d.join("1.error");
        std::os::unix::fs::symlink(&secret, &note).unwrap();
        let e = read_error_note(&note, me()).unwrap_err();
        assert!(
            e.contains("symbolic link") && !e.contains("TOP-SECRET"),
            "{e}"
        );
        std::fs::remove_file(&note).unwrap();
        std::os::unix::fs::symlink("/dev/zero", &note).unwrap();
        assert!(
            read_error_note(&note, me())
                .unwrap_err()
                .contains("symbolic link")
        );
        std::fs::remove_file(&note).unwrap();
        let c = std::ffi::CString::new(note.as_os_str().to_str().unwrap()).unwrap();
        // SAFETY: `c` is a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let t = Instant::now();
        let e = read_error_note(&note, me()).unwrap_err();
        assert!(e.contains("a FIFO"), "{e}");
        assert!(t.elapsed() < Duration::from_secs(1));
        // A long note is cut at the bound.
        std::fs::remove_file(&note).unwrap();
        std::fs::write(&note, "x".repeat(1 << 20)).unwrap();
        let text = read_error_note(&note, me()).unwrap().unwrap();
        assert!(text.len() < NOTE_MAX as usize + 64, "{}", text.len());
        assert!(text.ends_with("(cut at 4096 bytes)"));
        let _ = std::fs::remove_dir_all(&d);
    }
}
