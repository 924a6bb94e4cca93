//! Client of the .NET diagnostics IPC protocol (Linux).
//!
//! Every CoreCLR process (.NET Core 3.0 and later) listens on a Unix socket,
//! `$TMPDIR/dotnet-diagnostic-{pid}-{key}-socket`, unless diagnostics are disabled. This
//! crate finds that socket, asks the runtime about its process, and asks it to load a
//! profiler (attach).
//!
//! ```no_run
//! use std::{path::Path, time::Duration};
//! use clrprof_ipc::DiagnosticsClient;
//!
//! let client = DiagnosticsClient::connect(4242)?;
//! let info = client.process_info()?;
//! println!("{} {:?}", info.command_line, info.clr_product_version);
//! let clsid = uuid::uuid!("27C113DB-28AB-4298-B83A-625E7E26E45D");
//! client.attach_profiler(
//!     Duration::from_secs(5),
//!     clsid,
//!     Path::new("/opt/clrprof/libclrprof_profiler.so"),
//!     b"",
//! )?;
//! # Ok::<(), clrprof_ipc::IpcError>(())
//! ```
//!
//! Layers: [`codec`] is pure (bytes in, bytes out), [`transport`] does one exchange on a
//! socket, [`endpoint`] finds sockets and reads `/proc`, and [`DiagnosticsClient`] ties
//! them together with errors a user can act on ([`IpcError`]). See `docs/ipc.md`.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod client;
pub mod codec;
pub mod control;
pub mod endpoint;
mod error;
pub mod hresult;
pub mod transport;

pub use client::{
    ATTACH_MINIMUM, AttachOutcome, DEFAULT_TIMEOUT, DiagnosticsClient, ProcessEntry,
    list_dotnet_processes,
};
pub use codec::{Command, ProcessInfo, ProcessInfoKind};
pub use error::{DisabledCause, IpcError};
pub use hresult::hresult_name;
pub use uuid::Uuid;
