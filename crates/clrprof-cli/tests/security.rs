//! Security (issue #26, items 4-8): what another user, or the target's own user, can put
//! in clrprof's way: a planted `PID.error` note, a FIFO at `CLRPROF_LOG`, floods of the
//! control socket, terminal escapes in command lines and traces, and a control socket
//! served by someone else. Each test runs the real runtime and the Scenarios app.

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use clrprof_ipc::control::{ControlError, Request, Response, parse_answer};
use common::*;

fn stderr_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}

fn wait_timeout(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if let Some(s) = child.try_wait().unwrap() {
            return Some(s);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

/// Runs `cmd` to its end, or kills it after `limit` (then `None`): a hang fails the test
/// instead of stalling it.
fn output_within(mut cmd: Command, limit: Duration) -> Option<std::process::Output> {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let o = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        v
    });
    let e = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.read_to_end(&mut v);
        v
    });
    let status = wait_timeout(&mut child, limit)?;
    Some(std::process::Output {
        status,
        stdout: o.join().unwrap(),
        stderr: e.join().unwrap(),
    })
}

/// A running `Scenarios serve <extra>` (the attach target).
struct Target {
    child: Child,
    pid: u32,
    stdin: ChildStdin,
    _lines: mpsc::Receiver<String>,
}

impl Target {
    fn start(extra: &[&str]) -> Target {
        let app = scenarios();
        let mut args = vec!["serve"];
        args.extend_from_slice(extra);
        let mut child = app
            .command(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let (tx, rx) = mpsc::channel();
        let out = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines().map_while(Result::ok) {
                let _ = tx.send(l);
            }
        });
        let ready = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("READY line");
        let pid = ready
            .trim()
            .strip_prefix("READY ")
            .expect("READY")
            .parse()
            .unwrap();
        Target {
            child,
            pid,
            stdin,
            _lines: rx,
        }
    }

    /// Whether the agent is active in the target (its threads run, or more than its one
    /// resident copy is mapped).
    fn profiler_mapped(&self) -> bool {
        !common::agent_gone(self.pid)
    }

    fn wait_unmapped(&self, limit: Duration) -> bool {
        let end = Instant::now() + limit;
        while Instant::now() < end {
            if !self.profiler_mapped() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    fn rss_kb(&self) -> u64 {
        std::fs::read_to_string(format!("/proc/{}/status", self.pid))
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    }

    fn quit(mut self) {
        let _ = writeln!(self.stdin, "quit");
        let status = wait_timeout(&mut self.child, Duration::from_secs(30)).expect("target quits");
        assert!(status.success(), "target exited with {status}");
    }
}

/// Starts `clrprof record --pid` (with `tmpdir` as its TMPDIR) and waits for its
/// "attached" line.
fn start_attached(pid: u32, trace: &Path, tmpdir: Option<&Path>) -> Child {
    let mut cmd = clrprof();
    cmd.args(["record", "--pid", &pid.to_string(), "-o"])
        .arg(trace)
        .stderr(Stdio::piped());
    if let Some(t) = tmpdir {
        cmd.env("TMPDIR", t);
    }
    let mut rec = cmd.spawn().unwrap();
    let mut err = BufReader::new(rec.stderr.take().unwrap());
    let mut line = String::new();
    while err.read_line(&mut line).unwrap() > 0 {
        if line.contains("attached to pid") {
            std::thread::spawn(move || {
                let mut rest = String::new();
                let _ = err.read_to_string(&mut rest);
            });
            return rec;
        }
    }
    let _ = rec.kill();
    let _ = rec.wait();
    panic!("record --pid did not attach: {line}");
}

fn control_socket(tmpdir: &Path, pid: u32) -> PathBuf {
    tmpdir
        .join(format!("clrprof-{}", euid()))
        .join(format!("{pid}.sock"))
}

fn default_tmpdir() -> PathBuf {
    std::env::var_os("TMPDIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp"))
}

// ---- 4. PID.error is read only as a bounded regular file of the target's user ----------

/// What the target's user plants as `PID.error`.
enum Plant {
    LinkTo(PathBuf),
    Fifo,
    /// A sparse file of this many bytes.
    Huge(u64),
}

impl Plant {
    fn put(&self, at: &Path) {
        match self {
            Plant::LinkTo(p) => std::os::unix::fs::symlink(p, at).unwrap(),
            Plant::Fifo => {
                let c = std::ffi::CString::new(at.to_str().unwrap()).unwrap();
                // SAFETY: `c` is a valid NUL-terminated path.
                assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
            }
            Plant::Huge(len) => {
                let f = std::fs::File::create(at).unwrap();
                (&f).write_all(&[b'A'; 65536]).unwrap();
                f.set_len(*len).unwrap();
            }
        }
    }
}

/// `clrprof record --pid` against a runtime that refuses the attach, whose user has
/// planted `plant` as the `PID.error` note by the time the refusal arrives. The runtime
/// is a stand-in (the target is a `sleep` whose diagnostics socket this test serves):
/// with a real one, the agent writes its own note at that moment and the plant would
/// have to win a race against it. The CLI must neither print what a link points to, nor
/// wait on a FIFO, nor read more than its bound, and must say what it found instead.
fn attach_with_a_planted_note(name: &str, plant: Plant) -> String {
    use clrprof_ipc::codec::{self, HEADER_LEN, Header};
    let dir = scratch(name);
    let tmp = dir.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let mut target = Command::new("sleep")
        .arg("60")
        .env("TMPDIR", &tmp)
        .spawn()
        .unwrap();
    let pid = target.id();
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let start: u64 = stat[stat.rfind(')').unwrap() + 1..]
        .split_whitespace()
        .nth(19)
        .unwrap()
        .parse()
        .unwrap();
    let listener =
        UnixListener::bind(tmp.join(format!("dotnet-diagnostic-{pid}-{start}-socket"))).unwrap();
    // The target's user's control directory, as its agent makes it.
    let ctl = tmp.join(format!("clrprof-{}", euid()));
    std::fs::create_dir_all(&ctl).unwrap();
    std::fs::set_permissions(&ctl, std::fs::Permissions::from_mode(0o700)).unwrap();
    let note = ctl.join(format!("{pid}.error"));
    let runtime = std::thread::spawn(move || {
        // Every command is refused; the attach after the note is planted.
        while let Ok((mut s, _)) = listener.accept() {
            let mut head = [0u8; HEADER_LEN];
            if s.read_exact(&mut head).is_err() {
                continue;
            }
            let header = Header::decode(&head).unwrap();
            let mut payload = vec![0; header.payload_len()];
            let _ = s.read_exact(&mut payload);
            let attach = header.command_set == codec::COMMAND_SET_PROFILER;
            if attach {
                let _ = std::fs::remove_file(&note);
                plant.put(&note);
            }
            let _ = s.write_all(&codec::error_response(0x8000_4005_u32 as i32));
            if attach {
                return;
            }
        }
    });
    let mut cmd = clrprof();
    cmd.args(["record", "--pid", &pid.to_string(), "-o"])
        .arg(dir.join("t.clrprof"))
        .env("TMPDIR", &tmp);
    let started = Instant::now();
    let out = output_within(cmd, Duration::from_secs(60));
    let _ = target.kill();
    let _ = target.wait();
    runtime.join().unwrap();
    let out = out.expect("clrprof record --pid hung on the planted note");
    let e = stderr_of(&out);
    assert_eq!(out.status.code(), Some(2), "{e}");
    assert!(e.contains("E_FAIL"), "the runtime's refusal: {e}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    e
}

#[test]
fn a_planted_error_note_is_never_followed_waited_on_or_read_whole() {
    let dir = scratch("sec-note-secret");
    let secret = dir.join("secret");
    std::fs::write(&secret, "TOP-SECRET-4242").unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();

    let e = attach_with_a_planted_note("sec-note-link", Plant::LinkTo(secret));
    assert!(!e.contains("TOP-SECRET"), "the secret was printed: {e}");
    assert!(
        e.contains("that clrprof did not read: it is a symbolic link"),
        "{e}"
    );

    let e = attach_with_a_planted_note("sec-note-zero", Plant::LinkTo("/dev/zero".into()));
    assert!(e.contains("it is a symbolic link"), "{e}");

    let e = attach_with_a_planted_note("sec-note-fifo", Plant::Fifo);
    assert!(e.contains("it is a FIFO"), "{e}");

    // 8 GiB (sparse): the note is the target user's own regular file, so it is read, but
    // only its first 4 KiB.
    let e = attach_with_a_planted_note("sec-note-huge", Plant::Huge(8 << 30));
    assert!(
        e.contains("said: AAAA") && e.contains("(cut at 4096 bytes)"),
        "{e}"
    );
    assert!(e.len() < 8192, "{} bytes of stderr", e.len());
}

// ---- 5. A FIFO at CLRPROF_LOG never blocks the app --------------------------------------

#[test]
fn a_fifo_at_clrprof_log_does_not_hang_the_app() {
    let dir = scratch("sec-log-fifo");
    let fifo = dir.join("log.fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: `c` is a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o666) }, 0);
    let trace = dir.join("t.clrprof");
    let app = scenarios();
    let mut cmd = clrprof();
    cmd.arg("record")
        .arg("-o")
        .arg(&trace)
        .arg("--")
        .arg(&app.dotnet)
        .arg(&app.dll)
        .arg("threads")
        .env("CLRPROF_LOG", &fifo);
    app.env(&mut cmd);
    let started = Instant::now();
    let out = output_within(cmd, Duration::from_secs(90))
        .expect("the app hung at startup on a FIFO at CLRPROF_LOG");
    let e = stderr_of(&out);
    assert!(out.status.success(), "{e}");
    assert!(
        e.contains("CLRPROF_LOG not used") && e.contains("FIFO"),
        "the refused log is named: {e}"
    );
    let r = report_json(&trace);
    assert!(
        r["threads"].as_array().is_some_and(|t| !t.is_empty()),
        "{r}"
    );
    eprintln!(
        "app with a FIFO at CLRPROF_LOG ran in {:?}",
        started.elapsed()
    );
}

// ---- 6. Control-socket floods delay nothing and cost the target nothing --------------------

/// Sends `status` and returns the answer and how long it took.
fn status(sock: &Path) -> (String, Duration) {
    let t = Instant::now();
    let mut s = UnixStream::connect(sock).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    s.write_all(Request::Status.to_line().as_bytes()).unwrap();
    let mut line = String::new();
    let _ = BufReader::new(s).read_line(&mut line);
    (line, t.elapsed())
}

#[test]
fn control_socket_floods_delay_neither_status_nor_the_owner_gone_detach() {
    let _timing = timing_lock();
    let dir = scratch("sec-flood");
    let trace = dir.join("t.clrprof");
    let t = Target::start(&[]);
    let mut rec = start_attached(t.pid, &trace, None);
    let sock = control_socket(&default_tmpdir(), t.pid);
    assert!(sock.exists());

    // Six silent clients, reopened as the agent drops them, and one that sends a byte a
    // second: both stay on until the end.
    let stop = Arc::new(AtomicBool::new(false));
    let (s1, p1) = (stop.clone(), sock.clone());
    let silent = std::thread::spawn(move || {
        let mut held: Vec<UnixStream> = Vec::new();
        while !s1.load(Ordering::Relaxed) {
            held.retain(|c| {
                let mut b = [0u8; 1];
                c.set_nonblocking(true).unwrap();
                (&*c).read(&mut b).is_err()
            });
            while held.len() < 6 {
                match UnixStream::connect(&p1) {
                    Ok(c) => held.push(c),
                    Err(_) => break,
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    });
    let (s2, p2) = (stop.clone(), sock.clone());
    let slow = std::thread::spawn(move || {
        while !s2.load(Ordering::Relaxed) {
            let Ok(mut c) = UnixStream::connect(&p2) else {
                std::thread::sleep(Duration::from_millis(100));
                continue;
            };
            for b in b"status\n" {
                if s2.load(Ordering::Relaxed) || c.write_all(&[*b]).is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_secs(1));
            }
        }
    });
    std::thread::sleep(Duration::from_millis(500));
    let mut worst = Duration::ZERO;
    for _ in 0..5 {
        let (answer, took) = status(&sock);
        assert!(
            matches!(parse_answer(&answer), Ok(Response::Status(_))),
            "{answer:?}"
        );
        worst = worst.max(took);
        std::thread::sleep(Duration::from_millis(700));
    }
    eprintln!("slowest status under the flood: {worst:?}");
    assert!(worst < Duration::from_secs(3), "status took {worst:?}");

    // A 100 MB line: answered after 4 KiB, the target does not hold it.
    let before = t.rss_kb();
    let mut c = UnixStream::connect(&sock).unwrap();
    c.set_write_timeout(Some(Duration::from_secs(10))).unwrap();
    let chunk = vec![b'x'; 1 << 20];
    let mut sent = 0usize;
    for _ in 0..100 {
        match c.write(&chunk) {
            Ok(n) => sent += n,
            Err(_) => break,
        }
    }
    std::thread::sleep(Duration::from_millis(300));
    let after = t.rss_kb();
    eprintln!(
        "a 100 MB line: {sent} bytes taken before the agent closed; target RSS {before} → {after} KiB"
    );
    // What the socket buffers take (about 200 KiB here) is all a client gets to send.
    assert!(sent < 16 << 20, "the agent kept reading: {sent} bytes");
    assert!(
        after < before + 8 * 1024,
        "the target grew by {} KiB",
        after.saturating_sub(before)
    );
    let (answer, _) = status(&sock);
    // The status says what its protocol promises: the sampler's count included.
    match parse_answer(&answer) {
        Ok(Response::Status(st)) => {
            assert!(
                st.recording && st.mode == clrprof_settings::Mode::Sample,
                "{st:?}"
            );
            assert_eq!(st.output, trace, "{st:?}");
            assert!(st.samples.is_some_and(|n| n > 0), "{st:?}");
            assert!(st.library.is_some(), "{st:?}");
        }
        other => panic!("{answer:?}: {other:?}"),
    }
    // An unknown request, and the plain word an older clrprof sent, get a typed error.
    for (request, named) in [
        (&b"{\"version\":1,\"request\":\"nope\"}\n"[..], "nope"),
        (&b"status\n"[..], "status"),
    ] {
        let mut c = UnixStream::connect(&sock).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        c.write_all(request).unwrap();
        let mut line = String::new();
        let _ = BufReader::new(c).read_line(&mut line);
        assert_eq!(
            parse_answer(&line),
            Ok(Response::Error(ControlError::UnknownRequest {
                request: named.into()
            })),
            "{line:?}"
        );
    }

    // The clrprof that attached dies: the agent notices as soon as with no flood.
    rec.kill().unwrap();
    rec.wait().unwrap();
    let killed = Instant::now();
    let gone = t.wait_unmapped(Duration::from_secs(10));
    eprintln!(
        "owner-gone detach under the flood: library unmapped {:?} after the kill",
        killed.elapsed()
    );
    stop.store(true, Ordering::Relaxed);
    silent.join().unwrap();
    slow.join().unwrap();
    assert!(gone, "the agent kept recording after its clrprof died");
    assert!(
        report_json(&trace)["samples"]["total"]
            .as_u64()
            .unwrap_or(0)
            > 0
    );
    t.quit();
}

// ---- 7. Control characters from processes and files are escaped in text output ------------

const PWNED: &str = "tag=\u{1b}]0;PWNED\u{7}";

#[test]
fn ps_and_report_escape_terminal_controls() {
    let t = Target::start(&[PWNED]);
    let out = clrprof().arg("ps").output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    let line = stdout
        .lines()
        .find(|l| l.split_whitespace().next() == Some(&t.pid.to_string()))
        .unwrap_or_else(|| panic!("pid {} not in:\n{stdout}", t.pid));
    assert!(line.contains("tag=\\e]0;PWNED\\x07"), "{line:?}");
    assert!(
        !stdout.contains('\u{1b}') && !stdout.contains('\u{7}'),
        "{stdout:?}"
    );
    t.quit();

    let dir = scratch("sec-escapes");
    let trace = dir.join("t.clrprof");
    record(&trace, &[], &["fib", "5", PWNED]);
    let text = report_text(&trace);
    assert!(text.contains("tag=\\e]0;PWNED\\x07"), "{text}");
    assert!(
        !text.chars().any(|c| c != '\n' && c.is_control()),
        "{text:?}"
    );
    // JSON keeps the exact string (serde escapes it).
    let r = report_json(&trace);
    let cmd: Vec<&str> = r["trace"]["command_line"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    assert!(cmd.contains(&PWNED), "{cmd:?}");
}

// ---- 8. Both ends of a control connection check the other's credentials -------------------

/// Answers every request on `path` with a fake `detaching`, as whoever runs it.
fn fake_server(path: &Path) -> std::thread::JoinHandle<()> {
    let l = UnixListener::bind(path).unwrap();
    std::thread::spawn(move || {
        while let Ok((s, _)) = l.accept() {
            let mut line = String::new();
            let _ = BufReader::new(&s).read_line(&mut line);
            let answer = Response::Detaching {
                trace: "/nonexistent".into(),
            };
            let _ = (&s).write_all(answer.to_line().as_bytes());
        }
    })
}

#[test]
fn the_cli_talks_only_to_the_targets_own_socket() {
    // A socket at the target's control path served by another process (this test).
    let dir = scratch("sec-peer-pid");
    let tmp = dir.join("tmp");
    let mut target = Command::new("sleep").arg("60").spawn().unwrap();
    let ctl = tmp.join(format!("clrprof-{}", euid()));
    std::fs::create_dir_all(&ctl).unwrap();
    std::fs::set_permissions(&ctl, std::fs::Permissions::from_mode(0o700)).unwrap();
    let server = fake_server(&ctl.join(format!("{}.sock", target.id())));
    let out = output_within(
        {
            let mut c = clrprof();
            c.args(["detach", "--pid", &target.id().to_string()])
                .env("TMPDIR", &tmp);
            c
        },
        Duration::from_secs(30),
    )
    .expect("detach ended");
    let _ = target.kill();
    let _ = target.wait();
    let e = stderr_of(&out);
    assert_eq!(out.status.code(), Some(2), "{e}");
    assert!(
        e.contains(&format!("is served by pid {}", std::process::id()))
            && e.contains("clrprof does not talk to it"),
        "{e}"
    );
    drop(server);
}

/// Not a test on its own: the other user's side of `peers_of_another_user_are_refused`,
/// run as `nobody` by it (the test binary started again with `CLRPROF_TEST_PEER` set).
#[test]
fn peer_helper() {
    let Some(mode) = std::env::var_os("CLRPROF_TEST_PEER") else {
        return;
    };
    let mode = mode.to_str().unwrap().to_string();
    let path = PathBuf::from(std::env::var_os("CLRPROF_TEST_PEER_PATH").unwrap());
    if mode == "server" {
        fake_server(&path).join().unwrap();
    } else {
        let mut s = UnixStream::connect(&path).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(Request::Status.to_line().as_bytes()).unwrap();
        let mut line = String::new();
        let _ = BufReader::new(s).read_line(&mut line);
        match parse_answer(&line) {
            Ok(Response::Error(e)) => println!("ANSWER error {e}"),
            _ => println!("ANSWER {}", line.trim_end()),
        }
    }
}

fn as_nobody(mode: &str, path: &Path) -> Command {
    use std::os::unix::process::CommandExt;
    let mut c = Command::new(std::env::current_exe().unwrap());
    // The test's name in this binary: its module path without the crate's name.
    let name = format!(
        "{}::peer_helper",
        module_path!().split_once("::").map_or("", |(_, m)| m)
    );
    c.args(["--exact", &name, "--nocapture", "--test-threads=1"])
        .env("CLRPROF_TEST_PEER", mode)
        .env("CLRPROF_TEST_PEER_PATH", path)
        .uid(65534)
        .gid(65534);
    c
}

#[test]
#[ignore = "needs root (runs a peer as `nobody`); .ci/run runs it as root"]
fn peers_of_another_user_are_refused() {
    assert_eq!(euid(), 0, "run as root: the other peer runs as `nobody`");
    // The CLI side: in a world-writable TMPDIR, another user's socket at the target's
    // control path does not answer `clrprof detach`.
    let dir = scratch("sec-peer-uid");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let tmp = dir.join("tmp");
    let ctl = tmp.join("clrprof-0");
    std::fs::create_dir_all(&ctl).unwrap();
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o777)).unwrap();
    std::fs::set_permissions(&ctl, std::fs::Permissions::from_mode(0o777)).unwrap();
    let mut target = Command::new("sleep").arg("60").spawn().unwrap();
    let sock = ctl.join(format!("{}.sock", target.id()));
    let mut server = as_nobody("server", &sock)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let end = Instant::now() + Duration::from_secs(10);
    while !sock.exists() && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = clrprof()
        .args(["detach", "--pid", &target.id().to_string()])
        .env("TMPDIR", &tmp)
        .output()
        .unwrap();
    let _ = server.kill();
    let _ = server.wait();
    let _ = target.kill();
    let _ = target.wait();
    let e = stderr_of(&out);
    assert_eq!(out.status.code(), Some(2), "{e}");
    assert!(
        e.contains("(uid 65534)") && e.contains("does not talk to it"),
        "{e}"
    );

    // The agent's side: a connection from another user is answered with a refusal, even
    // when the socket's permissions would let it in.
    let tmp2 = dir.join("tmp2");
    std::fs::create_dir_all(&tmp2).unwrap();
    std::fs::set_permissions(&tmp2, std::fs::Permissions::from_mode(0o755)).unwrap();
    let t = Target::start(&[]);
    let mut rec = start_attached(t.pid, &dir.join("t.clrprof"), Some(&tmp2));
    let sock = control_socket(&tmp2, t.pid);
    std::fs::set_permissions(
        sock.parent().unwrap(),
        std::fs::Permissions::from_mode(0o711),
    )
    .unwrap();
    std::fs::set_permissions(&sock, std::fs::Permissions::from_mode(0o666)).unwrap();
    let out = as_nobody("client", &sock).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("ANSWER error uid 65534 may not control this profiler"),
        "{stdout}\n{}",
        stderr_of(&out)
    );
    // Root and the target's user are still served.
    let (answer, _) = status(&sock);
    assert!(
        matches!(parse_answer(&answer), Ok(Response::Status(_))),
        "{answer:?}"
    );
    // SAFETY: SIGINT to the clrprof this test started: it detaches and exits.
    unsafe { libc::kill(rec.id() as i32, libc::SIGINT) };
    let status = wait_timeout(&mut rec, Duration::from_secs(30)).expect("record ended");
    assert!(status.success(), "{status}");
    t.quit();
}
