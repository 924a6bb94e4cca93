//! The control channel of an attached profiler: a Unix socket in a private directory
//! (0700, owned by the target's user; the socket itself 0600). `clrprof record --pid`
//! connects to it to confirm the attach worked (the runtime's own answer can time out
//! although the attach goes on to succeed) and to ask for the detach; `clrprof detach
//! --pid` does the same from another shell.
//!
//! Protocol: one line per request, one line per answer.
//! - `status` → `ok <json>` (pid, mode, output path, samples so far)
//! - `heap` → `ok <json>` once a heap snapshot is in the trace (docs/heap.md)
//! - `detach` → `ok detaching`, then the profiler stops its threads, flushes the trace
//!   and calls RequestProfilerDetach; the runtime unloads the library afterwards.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::watch::Watch;

/// What the control thread needs from the profiler.
pub trait Controlled: Send + Sync + 'static {
    fn status_json(&self) -> String;
    /// Stops sampling and writing and asks the runtime to detach; returns a message.
    fn detach(&self) -> Result<String, String>;
    /// Takes a heap snapshot into the trace; returns its summary as JSON.
    fn heap(&self) -> Result<String, String>;
}

/// Checks (or creates) the private directory the socket lives in. `lstat`, not `stat`: a
/// symbolic link to a directory of ours is refused like any other squatter.
pub fn prepare_dir(dir: &Path) -> Result<(), String> {
    match std::fs::symlink_metadata(dir) {
        Ok(m) => {
            let uid = crate::os::process::uid();
            if !m.is_dir() || m.uid() != uid || m.mode() & 0o077 != 0 {
                return Err(format!(
                    "control directory {} must be a directory owned by uid {uid} with mode 0700 \
                     (it is {}, uid {}, mode {:o}); remove it and try again",
                    dir.display(),
                    if m.file_type().is_symlink() {
                        "a symbolic link"
                    } else if m.is_dir() {
                        "a directory"
                    } else {
                        "not a directory"
                    },
                    m.uid(),
                    m.mode() & 0o777
                ));
            }
            Ok(())
        }
        Err(_) => std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| format!("cannot create control directory {}: {e}", dir.display())),
    }
}

/// Where an attach that failed leaves its reason for the CLI: `<dir>/<pid>.error` beside
/// the socket (the runtime only passes an HRESULT back).
pub fn error_note_path(socket: &Path) -> PathBuf {
    socket.with_extension("error")
}

/// Writes the reason an attach failed next to the control socket (best effort).
pub fn write_error_note(socket: &Path, reason: &str) {
    let Some(dir) = socket.parent() else { return };
    if prepare_dir(dir).is_err() {
        return;
    }
    let path = error_note_path(socket);
    let _ = std::fs::remove_file(&path);
    if let Ok((mut f, _)) = crate::output::outfile::create_new(&path, false, 0) {
        let _ = f.write_all(reason.as_bytes());
    }
}

pub struct ControlServer {
    stop: Arc<AtomicBool>,
    path: PathBuf,
    handle: Option<crate::os::thread::NativeThread>,
}

impl ControlServer {
    /// Listens on `path` and serves requests on a thread of its own.
    pub fn start(
        path: PathBuf,
        target: Arc<dyn Controlled>,
        watch: Watch,
    ) -> Result<ControlServer, String> {
        if let Some(dir) = path.parent() {
            prepare_dir(dir)?;
        }
        let _ = std::fs::remove_file(&path);
        let _ = std::fs::remove_file(error_note_path(&path));
        let listener = UnixListener::bind(&path)
            .map_err(|e| format!("cannot listen on {}: {e}", path.display()))?;
        let _ = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600));
        listener
            .set_nonblocking(true)
            .map_err(|e| format!("cannot configure {}: {e}", path.display()))?;
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let p = path.clone();
        let handle = crate::os::thread::spawn("clrprof-control", move || {
            serve(listener, &s, target, &p, &watch)
        })
        .map_err(|e| format!("cannot start the control thread: {e}"))?;
        Ok(ControlServer {
            stop,
            path,
            handle: Some(handle),
        })
    }

    /// Stops serving (from any thread but the control thread itself).
    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(h) = self.handle.take() {
            if h.is_current() {
                h.detach();
            } else {
                h.join();
            }
        }
        let _ = std::fs::remove_file(&self.path);
    }
}

fn serve(
    listener: UnixListener,
    stop: &AtomicBool,
    target: Arc<dyn Controlled>,
    path: &Path,
    watch: &Watch,
) {
    let mut last_owner_check = Instant::now();
    while !stop.load(Ordering::Acquire) {
        let why = if watch.deadline.is_some_and(|d| Instant::now() >= d) {
            Some("the recording's duration is over".to_string())
        } else if let Some(o) = &watch.owner
            && last_owner_check.elapsed() >= Duration::from_millis(200)
        {
            last_owner_check = Instant::now();
            (!o.alive()).then(|| format!("the clrprof that attached (pid {}) is gone", o.pid))
        } else {
            None
        };
        if let Some(why) = why {
            crate::log!("{why}: detaching");
            match target.detach() {
                Ok(_) => {
                    let _ = std::fs::remove_file(path);
                    return;
                }
                // Someone else's detach is under way; keep serving until stopped.
                Err(e) => crate::log!("{e}"),
            }
        }
        match listener.accept() {
            Ok((stream, _)) => {
                if handle(stream, &*target) {
                    // Detach requested: this thread leaves right away; the runtime's
                    // ProfilerDetachSucceeded joins it before unloading the library.
                    let _ = std::fs::remove_file(path);
                    return;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(100)),
        }
    }
    let _ = std::fs::remove_file(path);
}

/// Serves one connection; true when the profiler detached.
fn handle(stream: UnixStream, target: &dyn Controlled) -> bool {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let mut w = match stream.try_clone() {
        Ok(w) => w,
        Err(_) => return false,
    };
    let mut line = String::new();
    if BufReader::new(stream).read_line(&mut line).is_err() {
        return false;
    }
    match line.trim() {
        "status" => {
            let _ = writeln!(w, "ok {}", target.status_json());
            false
        }
        "heap" => {
            match target.heap() {
                Ok(json) => {
                    let _ = writeln!(w, "ok {json}");
                }
                Err(e) => {
                    let _ = writeln!(w, "error {e}");
                }
            }
            false
        }
        "detach" => match target.detach() {
            Ok(msg) => {
                let _ = writeln!(w, "ok {msg}");
                true
            }
            Err(e) => {
                let _ = writeln!(w, "error {e}");
                false
            }
        },
        other => {
            let _ = writeln!(
                w,
                "error unknown request {other:?} (expected status, heap or detach)"
            );
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_symlinked_control_dir_is_refused() {
        let d = std::env::temp_dir().join(format!("clrprof-ctl-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("real")).unwrap();
        std::fs::set_permissions(d.join("real"), std::fs::Permissions::from_mode(0o700)).unwrap();
        std::os::unix::fs::symlink(d.join("real"), d.join("link")).unwrap();
        assert!(prepare_dir(&d.join("real")).is_ok());
        let e = prepare_dir(&d.join("link")).unwrap_err();
        assert!(e.contains("symbolic link"), "{e}");
        let _ = std::fs::remove_dir_all(&d);
    }
}
