//! The client against a scripted fake runtime on a Unix socket: fallbacks, odd answers,
//! timeouts and what exactly goes on the wire.

use std::io::{Read, Write};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use clrprof_ipc::codec::{
    self, AttachProfilerRequest, HEADER_LEN, Header, ProcessInfo, ProcessInfoKind,
    StartupProfilerRequest, hr,
};
use clrprof_ipc::{Command, DiagnosticsClient, IpcError, Uuid};

const CLSID: Uuid = uuid::uuid!("27C113DB-28AB-4298-B83A-625E7E26E45D");

/// What the fake runtime does with one connection.
enum Reply {
    /// Send these bytes, then close.
    Bytes(Vec<u8>),
    /// Read the request, then hold the connection open without answering.
    Silence(Duration),
}

/// A fake runtime answering one scripted reply per connection; records the requests.
struct Fake {
    _dir: tempfile::TempDir,
    path: PathBuf,
    requests: mpsc::Receiver<(Header, Vec<u8>)>,
    thread: Option<JoinHandle<()>>,
}

impl Fake {
    fn new(replies: Vec<Reply>) -> Fake {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dotnet-diagnostic-1-1-socket");
        let listener = UnixListener::bind(&path).unwrap();
        let (tx, rx) = mpsc::channel();
        let thread = std::thread::spawn(move || {
            for reply in replies {
                let (mut stream, _) = listener.accept().unwrap();
                let mut head = [0u8; HEADER_LEN];
                stream.read_exact(&mut head).unwrap();
                let header = Header::decode(&head).unwrap();
                let mut payload = vec![0; header.payload_len()];
                stream.read_exact(&mut payload).unwrap();
                tx.send((header, payload)).unwrap();
                match reply {
                    Reply::Bytes(bytes) => {
                        let _ = stream.write_all(&bytes);
                    }
                    Reply::Silence(d) => std::thread::sleep(d),
                }
            }
        });
        Fake {
            _dir: dir,
            path,
            requests: rx,
            thread: Some(thread),
        }
    }

    fn client(&self) -> DiagnosticsClient {
        DiagnosticsClient::with_socket(std::process::id(), &self.path)
    }

    /// The commands received so far, as `(set, id)`.
    fn received(&self) -> Vec<(u8, u8, Vec<u8>)> {
        self.requests
            .try_iter()
            .map(|(h, p)| (h.command_set, h.command_id, p))
            .collect()
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        if let Some(t) = self.thread.take()
            && !std::thread::panicking()
        {
            t.join().expect("fake runtime thread");
        }
    }
}

fn info(kind: ProcessInfoKind) -> ProcessInfo {
    ProcessInfo {
        pid: 4242,
        runtime_cookie: Uuid::from_u128(0x0102_0304_0506_0708_090a_0b0c_0d0e_0f10),
        command_line: "/usr/bin/dotnet /app/app.dll".into(),
        os: "Linux".into(),
        arch: "x64".into(),
        entrypoint_assembly: (kind != ProcessInfoKind::V1).then(|| "app".into()),
        clr_product_version: (kind != ProcessInfoKind::V1).then(|| "6.0.36".into()),
        runtime_identifier: None,
        kind,
    }
}

fn ok_info(kind: ProcessInfoKind) -> Reply {
    Reply::Bytes(codec::ok_response(&codec::encode_process_info(&info(kind)).unwrap()).unwrap())
}

fn error(hresult: i32) -> Reply {
    Reply::Bytes(codec::error_response(hresult))
}

#[test]
fn process_info_falls_back_to_older_commands() {
    let fake = Fake::new(vec![
        error(hr::DS_IPC_E_UNKNOWN_COMMAND),
        ok_info(ProcessInfoKind::V2),
    ]);
    let got = fake.client().process_info().unwrap();
    assert_eq!(got, info(ProcessInfoKind::V2));
    let sent = fake.received();
    assert_eq!(
        sent.iter().map(|r| (r.0, r.1)).collect::<Vec<_>>(),
        vec![(4, 8), (4, 4)]
    );
    assert!(sent.iter().all(|r| r.2.is_empty()));

    let fake = Fake::new(vec![
        error(hr::DS_IPC_E_UNKNOWN_COMMAND),
        error(hr::DS_IPC_E_UNKNOWN_COMMAND),
        ok_info(ProcessInfoKind::V1),
    ]);
    assert_eq!(
        fake.client().process_info().unwrap(),
        info(ProcessInfoKind::V1)
    );
}

#[test]
fn process_info_on_a_runtime_without_process_commands() {
    let fake = Fake::new(vec![
        error(hr::DS_IPC_E_UNKNOWN_COMMAND),
        error(hr::DS_IPC_E_UNKNOWN_COMMAND),
        error(hr::DS_IPC_E_UNKNOWN_COMMAND),
    ]);
    let err = fake.client().process_info().unwrap_err();
    assert!(
        matches!(
            err,
            IpcError::TooOld {
                command: Command::ProcessInfo,
                minimum: ".NET 5",
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn process_info_other_error_is_not_retried() {
    let fake = Fake::new(vec![error(hr::DS_IPC_E_FAIL)]);
    let err = fake.client().process_info().unwrap_err();
    assert!(
        matches!(err, IpcError::RuntimeError { command: Command::ProcessInfo3, hresult, name: Some("E_FAIL"), .. } if hresult == hr::DS_IPC_E_FAIL),
        "{err:?}"
    );
}

#[test]
fn attach_sends_milliseconds_and_an_absolute_path() {
    let fake = Fake::new(vec![Reply::Bytes(codec::ok_hresult_response(0))]);
    let outcome = fake
        .client()
        .attach_profiler(
            Duration::from_millis(1500),
            CLSID,
            Path::new("lib/libclrprof_profiler.so"),
            b"\x01\x02",
        )
        .unwrap();
    assert_eq!(outcome.hresult, 0);
    let sent = fake.received();
    assert_eq!((sent[0].0, sent[0].1), (3, 1));
    let req = AttachProfilerRequest::decode(&sent[0].2).unwrap();
    assert_eq!(req.timeout_ms, 1500);
    assert_eq!(req.clsid, CLSID);
    let expected = std::env::current_dir()
        .unwrap()
        .join("lib/libclrprof_profiler.so");
    assert_eq!(Path::new(&req.profiler_path), expected);
    assert_eq!(req.client_data, vec![1, 2]);
    // Windows GUID byte order on the wire.
    assert_eq!(&sent[0].2[4..8], &[0xDB, 0x13, 0xC1, 0x27]);
}

#[test]
fn attach_errors() {
    let fake = Fake::new(vec![
        error(0x8013_136A_u32 as i32),
        error(hr::DS_IPC_E_UNKNOWN_COMMAND),
        // The protocol document shows 28-byte error answers: 4 more bytes after the HRESULT.
        Reply::Bytes({
            let mut m =
                codec::encode_message(0xFF, 0xFF, &[0x68, 0x13, 0x13, 0x80, 9, 9, 9, 9]).unwrap();
            m.extend_from_slice(b"junk after the message");
            m
        }),
    ]);
    let client = fake.client();
    let attach = || client.attach_profiler(Duration::ZERO, CLSID, Path::new("/p.so"), b"");

    let err = attach().unwrap_err();
    assert!(
        matches!(
            err,
            IpcError::RuntimeError {
                command: Command::AttachProfiler,
                name: Some("CORPROF_E_PROFILER_ALREADY_ACTIVE"),
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("already loaded"), "{err}");

    let err = attach().unwrap_err();
    assert!(
        matches!(
            err,
            IpcError::TooOld {
                command: Command::AttachProfiler,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains(".NET Core 3.0"), "{err}");

    let err = attach().unwrap_err();
    assert!(
        matches!(
            err,
            IpcError::RuntimeError {
                name: Some("CORPROF_E_PROFILER_NOT_ATTACHABLE"),
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn arguments_checked_before_sending() {
    let client = DiagnosticsClient::with_socket(1, "/nonexistent/socket");
    let too_big = vec![0u8; 70_000];
    let err = client
        .attach_profiler(Duration::ZERO, CLSID, Path::new("/p.so"), &too_big)
        .unwrap_err();
    assert!(
        matches!(err, IpcError::RequestTooLarge { size } if size > 65535),
        "{err:?}"
    );
    let err = client
        .attach_profiler(Duration::ZERO, Uuid::nil(), Path::new("/p.so"), b"")
        .unwrap_err();
    assert!(matches!(err, IpcError::InvalidArgument(_)), "{err:?}");
    let err = client
        .set_startup_profiler(CLSID, Path::new(""))
        .unwrap_err();
    assert!(matches!(err, IpcError::InvalidArgument(_)), "{err:?}");
}

#[test]
fn startup_profiler_and_resume() {
    let fake = Fake::new(vec![
        Reply::Bytes(codec::ok_hresult_response(0)),
        error(hr::DS_IPC_E_INVALIDARG),
        // The protocol document says ResumeRuntime's OK has no payload; accept that.
        Reply::Bytes(codec::ok_response(&[]).unwrap()),
    ]);
    let client = fake.client();
    client
        .set_startup_profiler(CLSID, Path::new("/p.so"))
        .unwrap();
    let err = client
        .set_startup_profiler(CLSID, Path::new("/p.so"))
        .unwrap_err();
    assert!(err.to_string().contains("paused at startup"), "{err}");
    client.resume_runtime().unwrap();
    let sent = fake.received();
    let req = StartupProfilerRequest::decode(&sent[0].2).unwrap();
    assert_eq!(req.clsid, CLSID);
    assert_eq!(req.profiler_path, "/p.so");
    assert_eq!((sent[2].0, sent[2].1, sent[2].2.len()), (4, 1, 0));
}

#[test]
fn silent_runtime_times_out() {
    let fake = Fake::new(vec![Reply::Silence(Duration::from_millis(600))]);
    let client = fake.client().with_timeout(Duration::from_millis(150));
    let started = Instant::now();
    let err = client.process_info().unwrap_err();
    assert!(
        matches!(
            err,
            IpcError::Timeout {
                command: Command::ProcessInfo3,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(started.elapsed() < Duration::from_millis(550));
}

#[test]
fn malformed_answers() {
    let mut bad_magic = codec::ok_hresult_response(0);
    bad_magic[3] = b'X';
    let fake = Fake::new(vec![
        Reply::Bytes(bad_magic),
        // Header promises 40 bytes, only 24 arrive before the connection closes.
        Reply::Bytes({
            let mut m = codec::ok_hresult_response(0);
            m[14] = 40;
            m
        }),
        Reply::Bytes(Vec::new()),
        // OK with a truncated process-info payload.
        Reply::Bytes(codec::ok_response(&[1, 0, 0, 0, 5]).unwrap()),
        // Not a Server response at all.
        Reply::Bytes(codec::encode_message(4, 0, &[]).unwrap()),
    ]);
    let client = fake.client();
    let err = client.resume_runtime().unwrap_err();
    assert!(
        matches!(&err, IpcError::Protocol(m) if m.contains("bad magic")),
        "{err:?}"
    );
    let err = client.resume_runtime().unwrap_err();
    assert!(
        matches!(&err, IpcError::Io { source, .. } if source.kind() == std::io::ErrorKind::UnexpectedEof),
        "{err:?}"
    );
    let err = client.resume_runtime().unwrap_err();
    assert!(matches!(&err, IpcError::Io { .. }), "{err:?}");
    let err = client.process_info().unwrap_err();
    assert!(
        matches!(&err, IpcError::Protocol(m) if m.contains("truncated")),
        "{err:?}"
    );
    let err = client.resume_runtime().unwrap_err();
    assert!(
        matches!(&err, IpcError::Protocol(m) if m.contains("unexpected response")),
        "{err:?}"
    );
}

#[test]
fn stale_socket_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dotnet-diagnostic-1-1-socket");
    drop(UnixListener::bind(&path).unwrap()); // file stays, nobody listens
    // Our own pid exists, so this is reported as an I/O error on the socket.
    let err = DiagnosticsClient::with_socket(std::process::id(), &path)
        .resume_runtime()
        .unwrap_err();
    assert!(
        matches!(&err, IpcError::Io { source, .. } if source.kind() == std::io::ErrorKind::ConnectionRefused),
        "{err:?}"
    );
    assert!(err.to_string().contains("stale socket"), "{err}");
}
