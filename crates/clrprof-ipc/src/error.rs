//! Errors a user can act on.

use std::fmt;
use std::io;
use std::path::PathBuf;
use std::time::Duration;

use crate::codec::{CodecError, Command};
use crate::hresult;

/// Why a process has `libcoreclr.so` loaded but no diagnostics socket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DisabledCause {
    /// The target's environment turns the diagnostics IPC off, e.g.
    /// `DOTNET_EnableDiagnostics=0` or `DOTNET_EnableDiagnostics_IPC=0`.
    Environment {
        /// Variable name as found (`DOTNET_` or legacy `COMPlus_` prefix).
        name: String,
        /// Its value.
        value: String,
    },
    /// `/proc/<pid>/environ` was read and has no such variable.
    NotInEnvironment,
    /// `/proc/<pid>/environ` could not be read (another user's process).
    EnvironUnreadable,
}

/// Everything that can go wrong talking to a .NET process. Each variant's message says
/// what to do.
#[derive(Debug, thiserror::Error)]
pub enum IpcError {
    /// No process has this pid (or it has exited and is a zombie).
    #[error("no process with pid {0}")]
    NoSuchProcess(u32),

    /// The process exists but is not a CoreCLR process.
    #[error(
        "pid {0} is not a .NET (CoreCLR) process: it has no diagnostics socket and \
         libcoreclr.so is not loaded (Mono, NativeAOT and single-file apps that link the \
         runtime statically are not detected)"
    )]
    NotDotnet(u32),

    /// The process runs CoreCLR but has no diagnostics socket we can see.
    #[error("{}", disabled_message(*.pid, .cause, .searched))]
    DiagnosticsDisabled {
        /// Target pid.
        pid: u32,
        /// What we could tell about why.
        cause: DisabledCause,
        /// Directories searched for `dotnet-diagnostic-<pid>-*-socket`.
        searched: Vec<PathBuf>,
    },

    /// No socket was found and `/proc/<pid>/maps` could not be read, so it is unknown
    /// whether the process runs .NET.
    #[error(
        "no diagnostics socket found for pid {pid} (searched {}), and /proc/{pid}/maps is not \
         readable to tell whether it runs .NET: run clrprof as the target's user or as root",
        join_paths(.searched)
    )]
    CannotInspect {
        /// Target pid.
        pid: u32,
        /// Directories searched.
        searched: Vec<PathBuf>,
    },

    /// The diagnostics socket belongs to another user (the runtime creates it 0600).
    #[error(
        "permission denied on the diagnostics socket of pid {pid}: it belongs to uid {owner_uid} \
         and only its owner may connect (you are uid {our_uid}); run clrprof as the same user \
         as the target or as root"
    )]
    PermissionDenied {
        /// Target pid.
        pid: u32,
        /// Owner of the socket file.
        owner_uid: u32,
        /// Our effective uid.
        our_uid: u32,
    },

    /// The runtime did not answer in time.
    #[error(
        "pid {pid} did not answer {command} within {after:?}: the process may be stopped \
         (SIGSTOP, a debugger) or hung; retry with a longer timeout"
    )]
    Timeout {
        /// Target pid.
        pid: u32,
        /// Command sent.
        command: Command,
        /// How long we waited.
        after: Duration,
    },

    /// The runtime answered with a failure HRESULT.
    #[error("{}", runtime_error_message(*.pid, *.command, *.hresult, *.name))]
    RuntimeError {
        /// Target pid.
        pid: u32,
        /// Command that failed.
        command: Command,
        /// HRESULT the runtime returned.
        hresult: i32,
        /// Symbolic name of the HRESULT, when known.
        name: Option<&'static str>,
    },

    /// The runtime does not know the command (`DS_IPC_E_UNKNOWN_COMMAND`).
    #[error(
        "the runtime in pid {pid} is too old for {command} (it answered 0x80131385, DS_IPC_E_UNKNOWN_COMMAND); \
         {command} needs {minimum}: upgrade the application's runtime"
    )]
    TooOld {
        /// Target pid.
        pid: u32,
        /// Command the runtime did not know.
        command: Command,
        /// Oldest runtime that supports it.
        minimum: &'static str,
    },

    /// The runtime's answer does not follow the protocol.
    #[error("malformed answer from the .NET runtime: {0}")]
    Protocol(String),

    /// The request would exceed the protocol's 65535-byte message limit.
    #[error(
        "the request would be {size} bytes; a diagnostics message holds at most 65535: \
         shorten the profiler path or the client data"
    )]
    RequestTooLarge {
        /// Size the request would have had.
        size: usize,
    },

    /// An argument cannot be sent as given.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),

    /// Any other I/O failure on the socket.
    #[error("{}", io_message(*.pid, .path, .source))]
    Io {
        /// Target pid.
        pid: u32,
        /// Socket path.
        path: PathBuf,
        /// Underlying error.
        #[source]
        source: io::Error,
    },
}

impl IpcError {
    /// Builds a [`IpcError::RuntimeError`], naming the HRESULT.
    pub fn runtime(pid: u32, command: Command, hresult: i32) -> Self {
        IpcError::RuntimeError {
            pid,
            command,
            hresult,
            name: hresult::hresult_name(hresult),
        }
    }

    /// Maps a codec failure on something we send.
    pub(crate) fn from_request(err: CodecError) -> Self {
        match err {
            CodecError::TooLarge { size } => IpcError::RequestTooLarge { size },
            other => IpcError::InvalidArgument(other.to_string()),
        }
    }

    /// Maps a codec failure on something we received.
    pub(crate) fn from_response(pid: u32, command: Command, err: CodecError) -> Self {
        IpcError::Protocol(format!("pid {pid}, {command}: {err}"))
    }
}

fn join_paths(paths: &[PathBuf]) -> String {
    if paths.is_empty() {
        return "nothing".to_owned();
    }
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

fn disabled_message(pid: u32, cause: &DisabledCause, searched: &[PathBuf]) -> String {
    let head = format!(
        "pid {pid} runs .NET (libcoreclr.so is loaded) but has no diagnostics socket \
         (searched {})",
        join_paths(searched)
    );
    match cause {
        DisabledCause::Environment { name, value } => format!(
            "{head}: its environment sets {name}={value}, which turns the diagnostics IPC off. \
             Restart it without {name} (to keep only the debugger off, use \
             DOTNET_EnableDiagnostics_Debugger=0 instead)"
        ),
        DisabledCause::NotInEnvironment => format!(
            "{head}. Its environment does not set DOTNET_EnableDiagnostics=0 or \
             DOTNET_EnableDiagnostics_IPC=0, so either the runtime is still starting (retry), \
             or it runs in a container or service with its own /tmp that is not visible here \
             (run clrprof inside the same container, or as root so /proc/{pid}/root is \
             readable), or diagnostics were disabled another way"
        ),
        DisabledCause::EnvironUnreadable => format!(
            "{head}. /proc/{pid}/environ is not readable, so whether DOTNET_EnableDiagnostics=0 \
             or DOTNET_EnableDiagnostics_IPC=0 is set is unknown: run clrprof as the target's \
             user or as root. Otherwise the runtime may still be starting, or run in a \
             container with its own /tmp (run clrprof inside it)"
        ),
    }
}

fn runtime_error_message(
    pid: u32,
    command: Command,
    hresult: i32,
    name: Option<&'static str>,
) -> String {
    let mut msg = format!(
        "{command} failed in pid {pid}: HRESULT 0x{:08X}",
        hresult as u32
    );
    if let Some(name) = name {
        msg.push_str(&format!(" ({name})"));
    }
    if let Some(hint) = hresult::hint(command, hresult) {
        msg.push_str(": ");
        msg.push_str(hint);
    }
    msg
}

fn io_message(pid: u32, path: &std::path::Path, source: &io::Error) -> String {
    let advice = match source.kind() {
        io::ErrorKind::ConnectionRefused => {
            ": nothing listens on it any more (stale socket from an exited runtime); \
             check the pid"
        }
        io::ErrorKind::NotFound => ": the socket disappeared (the process probably exited)",
        io::ErrorKind::UnexpectedEof | io::ErrorKind::ConnectionReset => {
            ": the runtime closed the connection without a complete answer (it may be \
             shutting down)"
        }
        _ => "",
    };
    format!(
        "talking to pid {pid} over {}: {source}{advice}",
        path.display()
    )
}

impl fmt::Display for DisabledCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DisabledCause::Environment { name, value } => write!(f, "{name}={value}"),
            DisabledCause::NotInEnvironment => f.write_str("not set in the environment"),
            DisabledCause::EnvironUnreadable => f.write_str("environment unreadable"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_say_what_to_do() {
        assert_eq!(
            IpcError::NoSuchProcess(42).to_string(),
            "no process with pid 42"
        );
        assert!(
            IpcError::NotDotnet(7)
                .to_string()
                .contains("is not a .NET (CoreCLR) process")
        );
        let e = IpcError::PermissionDenied {
            pid: 1,
            owner_uid: 1000,
            our_uid: 1001,
        };
        assert!(
            e.to_string()
                .contains("run clrprof as the same user as the target or as root")
        );
        let e = IpcError::runtime(9, Command::AttachProfiler, 0x8007_007E_u32 as i32);
        let s = e.to_string();
        assert!(s.contains("0x8007007E"), "{s}");
        assert!(s.contains("ERROR_MOD_NOT_FOUND"), "{s}");
        assert!(s.contains("could not load the profiler library"), "{s}");
        let e = IpcError::DiagnosticsDisabled {
            pid: 5,
            cause: DisabledCause::Environment {
                name: "DOTNET_EnableDiagnostics".into(),
                value: "0".into(),
            },
            searched: vec![PathBuf::from("/tmp")],
        };
        let s = e.to_string();
        assert!(s.contains("DOTNET_EnableDiagnostics=0"), "{s}");
        assert!(s.contains("Restart it without"), "{s}");
        let e = IpcError::TooOld {
            pid: 3,
            command: Command::AttachProfiler,
            minimum: ".NET Core 3.0",
        };
        assert!(e.to_string().contains("needs .NET Core 3.0"));
    }
}
