//! The control channel of an attached profiler: a Unix socket in a private directory
//! (0700, owned by the target's user; the socket itself 0600). `clrprof record --pid`
//! connects to it to confirm the attach worked (the runtime's own answer can time out
//! although the attach goes on to succeed) and to ask for the detach; `clrprof detach
//! --pid` does the same from another shell.
//!
//! Only a peer of the target's own user or root is served (`SO_PEERCRED`, checked on every
//! connection); one thread serves every client without waiting on any (see [`serve`]).
//!
//! Protocol: `clrprof_ipc::control` (docs/ipc.md), one JSON request line (at most
//! [`LINE_MAX`] bytes, sent within [`CLIENT_TIMEOUT`]) and one JSON answer line; a refused
//! or unknown request is answered with a typed `ControlError`.
//! - `status` → `Status` (pid, mode, output path, whether it records, the library the
//!   target maps, samples so far)
//! - `heap` → `HeapTaken` once a heap snapshot is in the trace (docs/heap.md)
//! - `detach` → `Detaching`, then the profiler stops its threads, flushes the trace
//!   and calls RequestProfilerDetach; the runtime unloads the library afterwards.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use clrprof_ipc::control::{ControlError, HeapTaken, Request, Response, Status};

use super::watch::Watch;

/// What the control thread needs from the profiler.
pub trait Controlled: Send + Sync + 'static {
    fn status(&self) -> Status;
    /// Stops sampling and writing and asks the runtime to detach; returns the trace.
    /// `Response::Detaching`, or `Response::Dormant` when the runtime keeps the profiler.
    fn detach(&self) -> Result<Response, String>;
    /// Takes a heap snapshot into the trace; returns its summary.
    fn heap(&self) -> Result<HeapTaken, String>;
    /// A dormant agent's next recording (`settings`: the client data's JSON); what the
    /// control thread serves from then on.
    fn start(&self, settings: &str) -> Result<Restarted, String>;
}

/// A recording started in a dormant agent: the control thread serves it, and watches its
/// duration and its `clrprof`.
pub struct Restarted {
    pub target: Arc<dyn Controlled>,
    pub watch: Watch,
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

/// Where a detached agent that stays mapped (`os::process::kept_loaded`) says so: the CLI
/// cannot wait for the library to leave the target's maps then, so it waits for this.
pub fn detached_note_path(socket: &Path) -> PathBuf {
    socket.with_extension("detached")
}

/// Writes the detached note (best effort): the last thing the agent does.
pub fn write_detached_note(socket: &Path) {
    let path = detached_note_path(socket);
    let _ = std::fs::remove_file(&path);
    if let Ok((mut f, _)) = crate::output::outfile::create_new(&path, false, 0) {
        let _ = f.write_all(b"detached; the library stays mapped, inert\n");
    }
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

/// Marks the control socket's pid as holding a dormant agent (trace mode after attach:
/// the runtime keeps the library), for `clrprof ps` and a later attach (best effort).
pub fn write_dormant_note(socket: &Path) {
    let path = socket.with_extension("dormant");
    let _ = std::fs::remove_file(&path);
    let _ = crate::output::outfile::create_new(&path, false, 0);
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
        let _ = std::fs::remove_file(detached_note_path(&path));
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
            serve(listener, &s, target, &p, watch)
        })
        .map_err(|e| format!("cannot start the control thread: {e}"))?;
        Ok(ControlServer {
            stop,
            path,
            handle: Some(handle),
        })
    }

    /// The socket's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Stops serving (from any thread but the control thread itself).
    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(h) = self.handle.take() {
            h.finish();
        }
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The longest request line read; a longer one is answered `ControlError::TooLong`.
pub const LINE_MAX: usize = 4096;
/// How long a client has to send its whole request line after connecting.
pub const CLIENT_TIMEOUT: Duration = Duration::from_secs(2);
/// Connections served at once; more are answered `ControlError::Busy` and closed.
pub const CLIENTS_MAX: usize = 16;
/// The control thread's turn when it has nothing to watch and no client (a dormant
/// agent): a new connection waits at most this long to be read.
const IDLE_TURN_MS: u64 = 100;
/// How long writing an answer may take (answers are small: the socket's buffer takes them).
const WRITE_TIMEOUT: Duration = Duration::from_secs(1);

/// A connection whose request line is still arriving.
struct Client {
    stream: UnixStream,
    line: Vec<u8>,
    deadline: Instant,
}

/// What reading a client gave.
enum Read {
    /// Nothing more yet.
    Waiting,
    /// A whole request line.
    Line(String),
    /// Gone, answered with an error, or out of time: dropped.
    Done,
}

/// The control thread: one loop that checks the watch (owner gone, duration over), takes
/// new connections and reads what each has sent so far, without ever waiting on one. A
/// client that is silent, slow or sends an endless line delays nothing: each has
/// [`CLIENT_TIMEOUT`] for its whole line of at most [`LINE_MAX`] bytes, at most
/// [`CLIENTS_MAX`] are served at once, and the watch is checked on every turn (20 ms).
///
/// A detach the runtime refuses (after ReJIT) leaves the agent dormant: the thread serves
/// on, with nothing to watch, until a `start` request gives it the next recording.
fn serve(
    listener: UnixListener,
    stop: &AtomicBool,
    target: Arc<dyn Controlled>,
    path: &Path,
    watch: Watch,
) {
    let mut target = target;
    let mut watch = watch;
    let mut last_owner_check = Instant::now();
    let mut clients: Vec<Client> = Vec::with_capacity(CLIENTS_MAX);
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
                Ok(Response::Detaching { .. }) => {
                    let _ = std::fs::remove_file(path);
                    return;
                }
                // Dormant: nothing more to watch until the next recording.
                Ok(_) => watch = Watch::default(),
                // Someone else's detach is under way; keep serving until stopped.
                Err(e) => crate::log!("{e}"),
            }
        }
        // Every connection waiting in the backlog, each checked and kept or refused.
        let mut accept_failed = false;
        loop {
            match listener.accept() {
                Ok((stream, _)) => admit(stream, &mut clients),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(_) => {
                    accept_failed = true;
                    break;
                }
            }
        }
        let mut i = 0;
        while i < clients.len() {
            match read_some(&mut clients[i]) {
                Read::Waiting => i += 1,
                Read::Done => {
                    clients.swap_remove(i);
                }
                Read::Line(line) => {
                    let c = clients.swap_remove(i);
                    match answer(c.stream, &line, &*target) {
                        Served::Detached => {
                            // This thread leaves right away; the runtime's
                            // ProfilerDetachSucceeded joins it before unloading the library.
                            let _ = std::fs::remove_file(path);
                            return;
                        }
                        Served::Dormant => watch = Watch::default(),
                        Served::Restarted(r) => {
                            target = r.target;
                            watch = r.watch;
                            last_owner_check = Instant::now();
                        }
                        Served::Answered => {}
                    }
                }
            }
        }
        // Nothing to watch and nobody connected (a dormant agent, between its sessions):
        // a slower turn, so the listener it keeps for the process's life stays cheap.
        let idle = clients.is_empty() && watch.deadline.is_none() && watch.owner.is_none();
        std::thread::sleep(Duration::from_millis(if accept_failed {
            100
        } else if idle {
            IDLE_TURN_MS
        } else {
            20
        }));
    }
    let _ = std::fs::remove_file(path);
}

/// Whether a peer may use the control socket: this process's own user, or root. The
/// socket's 0600 mode and its 0700 directory say the same, unless someone changed them.
pub fn peer_allowed(peer_uid: u32, own: &[u32]) -> bool {
    peer_uid == 0 || own.contains(&peer_uid)
}

/// Takes a new connection: refused (with the reason, as one typed error) when its peer is
/// another user or too many are being served already.
fn admit(stream: UnixStream, clients: &mut Vec<Client>) {
    use std::os::fd::AsFd;
    let own = [crate::os::process::uid(), crate::os::process::euid()];
    let refusal = match crate::os::net::peer_credentials(stream.as_fd()) {
        Err(e) => Some(ControlError::PeerUnknown {
            reason: e.to_string(),
        }),
        Ok(p) if !peer_allowed(p.uid, &own) => {
            crate::log!(
                "control socket: refused a connection from pid {} (uid {}): only uid {} or root may use it",
                p.pid,
                p.uid,
                own[0]
            );
            Some(ControlError::PeerRefused {
                uid: p.uid,
                owner: own[0],
            })
        }
        Ok(_) if clients.len() >= CLIENTS_MAX => Some(ControlError::Busy {
            clients: CLIENTS_MAX,
        }),
        Ok(_) => None,
    };
    if let Some(r) = refusal {
        reply(&stream, &Response::Error(r));
        return;
    }
    if stream.set_nonblocking(true).is_err() {
        return;
    }
    clients.push(Client {
        stream,
        line: Vec::with_capacity(256),
        deadline: Instant::now() + CLIENT_TIMEOUT,
    });
}

/// Reads what the client has sent so far, never more than [`LINE_MAX`] + 1 bytes in all.
fn read_some(c: &mut Client) -> Read {
    use std::io::Read as _;
    let mut chunk = [0u8; 512];
    loop {
        let room = (LINE_MAX + 1 - c.line.len()).min(chunk.len());
        match c.stream.read(&mut chunk[..room]) {
            Ok(0) => {
                // The client closed its side: a last line without its newline still counts.
                return if c.line.is_empty() {
                    Read::Done
                } else {
                    Read::Line(String::from_utf8_lossy(&c.line).into_owned())
                };
            }
            Ok(n) => {
                let had = c.line.len();
                c.line.extend_from_slice(&chunk[..n]);
                if let Some(at) = c.line[had..].iter().position(|&b| b == b'\n') {
                    return Read::Line(String::from_utf8_lossy(&c.line[..had + at]).into_owned());
                }
                if c.line.len() > LINE_MAX {
                    reply(
                        &c.stream,
                        &Response::Error(ControlError::TooLong { max: LINE_MAX }),
                    );
                    return Read::Done;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if Instant::now() >= c.deadline {
                    reply(
                        &c.stream,
                        &Response::Error(ControlError::Timeout {
                            seconds: CLIENT_TIMEOUT.as_secs(),
                        }),
                    );
                    return Read::Done;
                }
                return Read::Waiting;
            }
            Err(_) => return Read::Done,
        }
    }
}

/// Writes one answer line, waiting at most [`WRITE_TIMEOUT`] for room.
fn reply(stream: &UnixStream, answer: &Response) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_write_timeout(Some(WRITE_TIMEOUT));
    let mut w = stream;
    let _ = w.write_all(answer.to_line().as_bytes());
}

/// What answering one request did.
enum Served {
    Answered,
    /// The profiler detached: the thread leaves.
    Detached,
    /// The runtime kept the profiler: dormant, nothing to watch.
    Dormant,
    /// A dormant agent started its next recording.
    Restarted(Restarted),
}

/// Answers one request.
fn answer(stream: UnixStream, line: &str, target: &dyn Controlled) -> Served {
    let failed = |reason| Response::Error(ControlError::Failed { reason });
    let (answer, served) = match Request::parse(line) {
        Err(e) => (Response::Error(e), Served::Answered),
        Ok(Request::Status) => (Response::Status(target.status()), Served::Answered),
        Ok(Request::Heap) => (
            target.heap().map_or_else(failed, Response::Heap),
            Served::Answered,
        ),
        Ok(Request::Detach) => match target.detach() {
            Ok(answer @ Response::Detaching { .. }) => (answer, Served::Detached),
            Ok(answer) => (answer, Served::Dormant),
            Err(e) => (failed(e), Served::Answered),
        },
        Ok(Request::Start { settings }) => match target.start(&settings) {
            Ok(r) => (Response::Status(r.target.status()), Served::Restarted(r)),
            Err(e) => (failed(e), Served::Answered),
        },
    };
    reply(&stream, &answer);
    served
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader, Read as _};

    struct Fake;
    impl Controlled for Fake {
        fn status(&self) -> Status {
            Status {
                pid: 1,
                mode: clrprof_settings::Mode::Events,
                output: "/tmp/t.clrprof".into(),
                recording: true,
                library: None,
                samples: None,
                probes: None,
                dormant: false,
            }
        }
        fn detach(&self) -> Result<Response, String> {
            Err("not in a test".into())
        }
        fn heap(&self) -> Result<HeapTaken, String> {
            Err("not in a test".into())
        }
        fn start(&self, _settings: &str) -> Result<Restarted, String> {
            Err("not in a test".into())
        }
    }

    /// The typed error of an answer line.
    fn error_of(line: &str) -> ControlError {
        match clrprof_ipc::control::parse_answer(line) {
            Ok(Response::Error(e)) => e,
            other => panic!("{line:?}: {other:?}"),
        }
    }

    fn ask(path: &Path, request: &[u8]) -> String {
        let mut s = UnixStream::connect(path).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let _ = s.write_all(request);
        let mut line = String::new();
        let _ = BufReader::new(s).read_line(&mut line);
        line
    }

    #[test]
    fn silent_slow_and_endless_clients_delay_nobody() {
        let d = std::env::temp_dir().join(format!("clrprof-ctl-serve-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        let path = d.join("1.sock");
        let mut server =
            ControlServer::start(path.clone(), Arc::new(Fake), Watch::default()).unwrap();
        // Six silent clients and one that sends a byte now and then.
        let silent: Vec<UnixStream> = (0..6)
            .map(|_| UnixStream::connect(&path).unwrap())
            .collect();
        let mut slow = UnixStream::connect(&path).unwrap();
        slow.write_all(b"s").unwrap();
        std::thread::sleep(Duration::from_millis(300));
        let t = Instant::now();
        assert_eq!(
            clrprof_ipc::control::parse_answer(&ask(&path, Request::Status.to_line().as_bytes())),
            Ok(Response::Status(Fake.status()))
        );
        assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
        // A line longer than the bound is answered and dropped after LINE_MAX + 1 bytes.
        let long = vec![b'x'; LINE_MAX + 100];
        assert_eq!(
            error_of(&ask(&path, &long)),
            ControlError::TooLong { max: LINE_MAX }
        );
        // Unknown requests are named, shortened.
        assert_eq!(
            error_of(&ask(&path, b"{\"version\":1,\"request\":\"nope\"}\n")),
            ControlError::UnknownRequest {
                request: "nope".into()
            }
        );
        // A failed request says why, typed.
        assert_eq!(
            error_of(&ask(&path, Request::Heap.to_line().as_bytes())),
            ControlError::Failed {
                reason: "not in a test".into()
            }
        );
        // The slow and silent ones run out of time and are told so.
        slow.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let _ = slow.write_all(b"t");
        let mut answer = String::new();
        let _ = slow.read_to_string(&mut answer);
        assert!(
            matches!(error_of(&answer), ControlError::Timeout { .. }),
            "{answer}"
        );
        drop(silent);
        // More than CLIENTS_MAX at once: the extra ones are told to try again.
        let many: Vec<UnixStream> = (0..CLIENTS_MAX + 2)
            .map(|_| UnixStream::connect(&path).unwrap())
            .collect();
        std::thread::sleep(Duration::from_millis(200));
        let mut busy = 0;
        for mut c in many {
            c.set_read_timeout(Some(Duration::from_millis(100)))
                .unwrap();
            let mut b = [0u8; 64];
            if let Ok(n) = c.read(&mut b)
                && matches!(
                    error_of(&String::from_utf8_lossy(&b[..n])),
                    ControlError::Busy { .. }
                )
            {
                busy += 1;
            }
        }
        assert_eq!(busy, 2);
        server.stop();
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn only_the_own_user_or_root_may_connect() {
        assert!(peer_allowed(1000, &[1000, 1000]));
        assert!(peer_allowed(0, &[1000, 1000]));
        assert!(!peer_allowed(1001, &[1000, 1000]));
        assert!(peer_allowed(1001, &[1000, 1001]), "the effective user too");
    }

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
