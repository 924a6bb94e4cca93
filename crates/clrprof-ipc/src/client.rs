//! The client: one [`DiagnosticsClient`] per target process.

use std::io;
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use uuid::Uuid;

use crate::codec::{self, Command, ProcessInfo, ProcessInfoKind, Response, hr};
use crate::endpoint;
use crate::error::IpcError;
use crate::transport::{self, TransportError};

/// Default bound on each socket read and write.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// Oldest runtime that answers AttachProfiler on Linux. The command exists since .NET Core
/// 3.0 where the runtime is built with `FEATURE_PROFAPI_ATTACH_DETACH` (Windows and Linux);
/// macOS runtimes got it in .NET 5.
pub const ATTACH_MINIMUM: &str = ".NET Core 3.0 on Linux (.NET 5 on macOS)";

/// What a successful AttachProfiler returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttachOutcome {
    /// The HRESULT in the runtime's OK answer (`S_OK` = 0 when the profiler loaded).
    pub hresult: i32,
}

/// A .NET process reachable over its diagnostics socket.
///
/// Holds no connection: each call opens one, sends one command and reads one answer.
#[derive(Debug, Clone)]
pub struct DiagnosticsClient {
    pid: u32,
    socket: PathBuf,
    timeout: Duration,
}

impl DiagnosticsClient {
    /// Finds the diagnostics socket of `pid`. Fails with [`IpcError::NoSuchProcess`],
    /// [`IpcError::NotDotnet`], [`IpcError::DiagnosticsDisabled`],
    /// [`IpcError::CannotInspect`] or [`IpcError::PermissionDenied`].
    pub fn connect(pid: u32) -> Result<Self, IpcError> {
        let socket = endpoint::find_socket(pid)?;
        if let Some((owner_uid, our_uid)) = endpoint::foreign_owner(&socket) {
            return Err(IpcError::PermissionDenied {
                pid,
                owner_uid,
                our_uid,
            });
        }
        Ok(Self::with_socket(pid, socket))
    }

    /// A client for a socket whose path is already known (e.g. a listen port configured
    /// with `DOTNET_DiagnosticPorts`). Nothing is checked until the first command.
    pub fn with_socket(pid: u32, socket: impl Into<PathBuf>) -> Self {
        DiagnosticsClient {
            pid,
            socket: socket.into(),
            timeout: DEFAULT_TIMEOUT,
        }
    }

    /// Sets the bound on each socket read and write (default 10 s).
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Target pid (in our pid namespace).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Path of the diagnostics socket in use.
    pub fn socket_path(&self) -> &Path {
        &self.socket
    }

    /// Process information. Asks ProcessInfo3, then ProcessInfo2, then ProcessInfo, moving
    /// on only when the runtime does not know the newer command.
    pub fn process_info(&self) -> Result<ProcessInfo, IpcError> {
        for kind in [
            ProcessInfoKind::V3,
            ProcessInfoKind::V2,
            ProcessInfoKind::V1,
        ] {
            let command = kind.command();
            let (header, payload) =
                self.exchange(command, &codec::empty_request(command), self.timeout)?;
            match codec::decode_response(&header, &payload)
                .map_err(|e| IpcError::from_response(self.pid, command, e))?
            {
                Response::Ok(p) => {
                    return codec::decode_process_info(kind, p)
                        .map_err(|e| IpcError::from_response(self.pid, command, e));
                }
                Response::Error { hresult, .. } if hresult == hr::DS_IPC_E_UNKNOWN_COMMAND => {}
                Response::Error { hresult, .. } => {
                    return Err(IpcError::runtime(self.pid, command, hresult));
                }
            }
        }
        Err(IpcError::TooOld {
            pid: self.pid,
            command: Command::ProcessInfo,
            minimum: ".NET 5",
        })
    }

    /// Asks the runtime to load the profiler at `profiler_path` (resolved against our
    /// current directory when relative) with CLSID `clsid`, passing `client_data` to its
    /// `InitializeForAttach`.
    ///
    /// `timeout` is sent in milliseconds (saturating at `u32::MAX`, which the runtime reads
    /// as `INFINITE`); the runtime uses it only to wait for a running background GC when
    /// the profiler asks for GC events. The runtime loads the profiler synchronously before
    /// answering, so the read timeout is `timeout` plus the client's timeout.
    pub fn attach_profiler(
        &self,
        timeout: Duration,
        clsid: Uuid,
        profiler_path: &Path,
        client_data: &[u8],
    ) -> Result<AttachOutcome, IpcError> {
        let command = Command::AttachProfiler;
        let path = profiler_path_arg(clsid, profiler_path)?;
        let timeout_ms = u32::try_from(timeout.as_millis()).unwrap_or(u32::MAX);
        let request = codec::attach_profiler_request(timeout_ms, clsid, &path, client_data)
            .map_err(IpcError::from_request)?;
        let wait = self.timeout.saturating_add(timeout);
        match self.call(command, &request, wait)? {
            Ok(hresult) if hresult >= 0 => Ok(AttachOutcome { hresult }),
            Ok(hresult) | Err(hresult) => Err(self.failure(command, hresult, ATTACH_MINIMUM)),
        }
    }

    /// Resumes a runtime paused at startup by a suspending diagnostic port
    /// (`DOTNET_DefaultDiagnosticPortSuspend=1` or `DOTNET_DiagnosticPorts=...,suspend`).
    /// A runtime that is not paused answers OK too.
    pub fn resume_runtime(&self) -> Result<(), IpcError> {
        let command = Command::ResumeRuntime;
        match self.call(command, &codec::resume_runtime_request(), self.timeout)? {
            Ok(hresult) if hresult >= 0 => Ok(()),
            Ok(hresult) | Err(hresult) => Err(self.failure(command, hresult, ".NET 5")),
        }
    }

    /// Registers a startup profiler, to be loaded when a runtime paused at startup is
    /// resumed (see [`DiagnosticsClient::resume_runtime`]).
    ///
    /// Note: .NET 10.0.12 answers OK even when the runtime is not paused, and then never
    /// loads the profiler; success only means the request was accepted.
    pub fn set_startup_profiler(&self, clsid: Uuid, profiler_path: &Path) -> Result<(), IpcError> {
        let command = Command::StartupProfiler;
        let path = profiler_path_arg(clsid, profiler_path)?;
        let request =
            codec::startup_profiler_request(clsid, &path).map_err(IpcError::from_request)?;
        match self.call(command, &request, self.timeout)? {
            Ok(hresult) if hresult >= 0 => Ok(()),
            Ok(hresult) | Err(hresult) => Err(self.failure(command, hresult, ".NET 6")),
        }
    }

    fn failure(&self, command: Command, hresult: i32, minimum: &'static str) -> IpcError {
        if hresult == hr::DS_IPC_E_UNKNOWN_COMMAND {
            IpcError::TooOld {
                pid: self.pid,
                command,
                minimum,
            }
        } else {
            IpcError::runtime(self.pid, command, hresult)
        }
    }

    /// Sends a command whose answer is an HRESULT: `Ok(hr)` for Server/OK, `Err(hr)` for
    /// Server/Error.
    fn call(
        &self,
        command: Command,
        request: &[u8],
        timeout: Duration,
    ) -> Result<Result<i32, i32>, IpcError> {
        let (header, payload) = self.exchange(command, request, timeout)?;
        match codec::decode_response(&header, &payload)
            .map_err(|e| IpcError::from_response(self.pid, command, e))?
        {
            Response::Ok(p) => codec::ok_hresult(p)
                .map(Ok)
                .map_err(|e| IpcError::from_response(self.pid, command, e)),
            Response::Error { hresult, .. } => Ok(Err(hresult)),
        }
    }

    fn exchange(
        &self,
        command: Command,
        request: &[u8],
        timeout: Duration,
    ) -> Result<(codec::Header, Vec<u8>), IpcError> {
        transport::exchange(&self.socket, request, timeout).map_err(|e| match e {
            TransportError::Timeout => IpcError::Timeout {
                pid: self.pid,
                command,
                after: timeout,
            },
            TransportError::Codec(e) => IpcError::from_response(self.pid, command, e),
            TransportError::Connect(source) => self.connect_error(source),
            TransportError::Send(source) | TransportError::Receive { source, .. } => IpcError::Io {
                pid: self.pid,
                path: self.socket.clone(),
                source,
            },
        })
    }

    fn connect_error(&self, source: io::Error) -> IpcError {
        if source.kind() == io::ErrorKind::PermissionDenied {
            let owner_uid = std::fs::metadata(&self.socket)
                .map(|m| m.uid())
                .unwrap_or(u32::MAX);
            return IpcError::PermissionDenied {
                pid: self.pid,
                owner_uid,
                our_uid: endpoint::current_euid().unwrap_or(u32::MAX),
            };
        }
        if matches!(
            source.kind(),
            io::ErrorKind::NotFound | io::ErrorKind::ConnectionRefused
        ) && !endpoint::process_exists(self.pid)
        {
            return IpcError::NoSuchProcess(self.pid);
        }
        IpcError::Io {
            pid: self.pid,
            path: self.socket.clone(),
            source,
        }
    }
}

/// Checks the CLSID and turns the profiler path into the absolute UTF-8 string the runtime
/// needs (it resolves relative paths against the target's directory, not ours).
fn profiler_path_arg(clsid: Uuid, path: &Path) -> Result<String, IpcError> {
    if clsid.is_nil() {
        return Err(IpcError::InvalidArgument(
            "the profiler CLSID is the nil GUID; pass the CLSID the profiler registers".into(),
        ));
    }
    if path.as_os_str().is_empty() {
        return Err(IpcError::InvalidArgument(
            "the profiler path is empty".into(),
        ));
    }
    let absolute = std::path::absolute(path).map_err(|e| {
        IpcError::InvalidArgument(format!(
            "cannot make the profiler path {} absolute: {e}",
            path.display()
        ))
    })?;
    absolute.into_os_string().into_string().map_err(|p| {
        IpcError::InvalidArgument(format!(
            "the profiler path {} is not valid UTF-8, which the runtime cannot receive",
            Path::new(&p).display()
        ))
    })
}

/// A .NET process found by its diagnostics socket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessEntry {
    /// Process id.
    pub pid: u32,
    /// `/proc/{pid}/cmdline`, arguments joined by spaces.
    pub command_line: String,
    /// The diagnostics socket.
    pub socket_path: PathBuf,
    /// Whether the socket accepted a connection just now (false: the runtime is not
    /// listening, or we may not connect to it).
    pub alive: bool,
}

/// .NET processes with a diagnostics socket in our temp directory (`$TMPDIR`, else
/// `/tmp`) and in `/tmp`, sorted by pid.
///
/// Sockets left behind by killed processes are skipped: their pid no longer exists, or
/// its start time no longer matches the `{key}` in the socket name. Processes whose socket
/// lives elsewhere (another `TMPDIR`, a container's own `/tmp`) are not listed;
/// [`DiagnosticsClient::connect`] still finds them by pid.
pub fn list_dotnet_processes() -> Vec<ProcessEntry> {
    let mut dirs = vec![endpoint::temp_dir()];
    let tmp = PathBuf::from("/tmp");
    if !dirs.contains(&tmp) {
        dirs.push(tmp);
    }
    let mut best: Vec<endpoint::SocketFile> = Vec::new();
    for dir in &dirs {
        for sock in endpoint::scan_dir(dir) {
            if !endpoint::process_exists(sock.pid)
                || endpoint::process_start_time(sock.pid) != Some(sock.key)
            {
                continue;
            }
            match best.iter_mut().find(|b| b.pid == sock.pid) {
                Some(b) if sock.modified > b.modified => *b = sock,
                Some(_) => {}
                None => best.push(sock),
            }
        }
    }
    best.sort_by_key(|s| s.pid);
    best.into_iter()
        .map(|s| ProcessEntry {
            pid: s.pid,
            command_line: endpoint::process_command_line(s.pid),
            alive: UnixStream::connect(&s.path).is_ok(),
            socket_path: s.path,
        })
        .collect()
}
