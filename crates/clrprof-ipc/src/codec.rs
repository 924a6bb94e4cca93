//! Sans-IO encoding and decoding of diagnostics IPC messages.
//!
//! Everything here is a pure function on bytes: no sockets, no files. The transport
//! ([`crate::transport`]) moves the bytes; this module decides what they mean.
//!
//! Wire format (all integers little-endian):
//!
//! ```text
//! header (20 bytes)
//!   0  14  magic "DOTNET_IPC_V1\0"
//!  14   2  size: total message length INCLUDING the header (20..=65535)
//!  16   1  command set
//!  17   1  command id
//!  18   2  reserved (0)
//! payload (size - 20 bytes)
//! ```
//!
//! Strings are `u32` count of UTF-16 code units **including** the terminating NUL, then the
//! code units; a count of 0 means a null string. GUIDs are 16 bytes in Windows order
//! (`Data1` u32 LE, `Data2` u16 LE, `Data3` u16 LE, `Data4` 8 raw bytes), which is what
//! [`Uuid::to_bytes_le`] produces.

use std::fmt;

use uuid::Uuid;

/// `"DOTNET_IPC_V1"` followed by a NUL byte.
pub const MAGIC: [u8; 14] = *b"DOTNET_IPC_V1\0";
/// Length of every message header.
pub const HEADER_LEN: usize = 20;
/// Largest message the protocol can describe: the header's `size` field is a `u16`.
pub const MAX_MESSAGE_LEN: usize = u16::MAX as usize;

/// Command set of the Profiler commands.
pub const COMMAND_SET_PROFILER: u8 = 0x03;
/// Command set of the Process commands.
pub const COMMAND_SET_PROCESS: u8 = 0x04;
/// Command set of every response.
pub const COMMAND_SET_SERVER: u8 = 0xFF;
/// Response id: success.
pub const SERVER_OK: u8 = 0x00;
/// Response id: error; the payload starts with an `i32` HRESULT.
pub const SERVER_ERROR: u8 = 0xFF;

/// HRESULTs the diagnostics server itself produces (`ds-protocol.h`).
pub mod hr {
    pub use corprof_sys::{
        DS_IPC_E_BAD_ENCODING, DS_IPC_E_ENVVAR_NOT_FOUND, DS_IPC_E_FAIL,
        DS_IPC_E_INSUFFICIENT_BUFFER, DS_IPC_E_INVALIDARG, DS_IPC_E_NOT_YET_AVAILABLE,
        DS_IPC_E_NOTSUPPORTED, DS_IPC_E_RUNTIME_UNINITIALIZED, DS_IPC_E_UNKNOWN_COMMAND,
        DS_IPC_E_UNKNOWN_MAGIC,
    };
}

/// The commands this crate knows how to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Command {
    /// Process/ProcessInfo (0x04, 0x00), .NET 5+.
    ProcessInfo,
    /// Process/ResumeRuntime (0x04, 0x01), .NET 5+.
    ResumeRuntime,
    /// Process/ProcessInfo2 (0x04, 0x04), .NET 6+.
    ProcessInfo2,
    /// Process/ProcessInfo3 (0x04, 0x08), .NET 8+.
    ProcessInfo3,
    /// Profiler/AttachProfiler (0x03, 0x01).
    AttachProfiler,
    /// Profiler/StartupProfiler (0x03, 0x02), .NET 6+.
    StartupProfiler,
}

impl Command {
    /// `(command_set, command_id)` on the wire.
    pub const fn code(self) -> (u8, u8) {
        match self {
            Command::ProcessInfo => (COMMAND_SET_PROCESS, 0x00),
            Command::ResumeRuntime => (COMMAND_SET_PROCESS, 0x01),
            Command::ProcessInfo2 => (COMMAND_SET_PROCESS, 0x04),
            Command::ProcessInfo3 => (COMMAND_SET_PROCESS, 0x08),
            Command::AttachProfiler => (COMMAND_SET_PROFILER, 0x01),
            Command::StartupProfiler => (COMMAND_SET_PROFILER, 0x02),
        }
    }

    /// The protocol's name for the command.
    pub const fn name(self) -> &'static str {
        match self {
            Command::ProcessInfo => "ProcessInfo",
            Command::ResumeRuntime => "ResumeRuntime",
            Command::ProcessInfo2 => "ProcessInfo2",
            Command::ProcessInfo3 => "ProcessInfo3",
            Command::AttachProfiler => "AttachProfiler",
            Command::StartupProfiler => "StartupProfiler",
        }
    }
}

impl fmt::Display for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why bytes could not be encoded or decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodecError {
    /// The encoded message would not fit the header's `u16` size field.
    #[error(
        "the request would be {size} bytes; the protocol allows at most 65535 (shorten the path or the client data)"
    )]
    TooLarge {
        /// Size the message would have had.
        size: usize,
    },
    /// A string to send contains U+0000, which the runtime would read as its end.
    #[error("{field} contains a NUL character")]
    InteriorNul {
        /// Which field.
        field: &'static str,
    },
    /// The first 14 bytes were not `DOTNET_IPC_V1\0`.
    #[error("bad magic {0:02x?} (expected \"DOTNET_IPC_V1\\0\")")]
    BadMagic([u8; 14]),
    /// The header's size field is smaller than the header itself.
    #[error("header size field is {0}, smaller than the 20-byte header")]
    SizeTooSmall(u16),
    /// Fewer bytes than a field needs.
    #[error("truncated {field}: needs {needed} bytes, {available} left")]
    Truncated {
        /// Which field.
        field: &'static str,
        /// Bytes the field needs.
        needed: u64,
        /// Bytes that were left.
        available: usize,
    },
    /// A non-empty string whose last code unit is not 0.
    #[error("string {field} is not NUL-terminated")]
    UnterminatedString {
        /// Which field.
        field: &'static str,
    },
    /// Bytes left over where the format requires the payload to end.
    #[error("{count} unexpected bytes after {field}")]
    TrailingBytes {
        /// The last field read.
        field: &'static str,
        /// How many bytes were left.
        count: usize,
    },
    /// A response whose command set / id is neither Server/OK nor Server/Error.
    #[error("unexpected response command set 0x{command_set:02X}, id 0x{command_id:02X}")]
    UnexpectedResponse {
        /// Command set received.
        command_set: u8,
        /// Command id received.
        command_id: u8,
    },
}

// ---------------------------------------------------------------------------------------
// Header

/// A message header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Total message size including these 20 bytes.
    pub size: u16,
    /// Command set (0xFF for responses).
    pub command_set: u8,
    /// Command id (0x00 OK / 0xFF Error for responses).
    pub command_id: u8,
    /// Reserved, 0 when sent; not checked when received.
    pub reserved: u16,
}

impl Header {
    /// Serializes the header.
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut out = [0u8; HEADER_LEN];
        out[..14].copy_from_slice(&MAGIC);
        out[14..16].copy_from_slice(&self.size.to_le_bytes());
        out[16] = self.command_set;
        out[17] = self.command_id;
        out[18..20].copy_from_slice(&self.reserved.to_le_bytes());
        out
    }

    /// Parses the first 20 bytes of `bytes`: checks the magic and that `size >= 20`.
    pub fn decode(bytes: &[u8]) -> Result<Self, CodecError> {
        if bytes.len() < HEADER_LEN {
            return Err(CodecError::Truncated {
                field: "header",
                needed: HEADER_LEN as u64,
                available: bytes.len(),
            });
        }
        let mut magic = [0u8; 14];
        magic.copy_from_slice(&bytes[..14]);
        if magic != MAGIC {
            return Err(CodecError::BadMagic(magic));
        }
        let size = u16::from_le_bytes([bytes[14], bytes[15]]);
        if usize::from(size) < HEADER_LEN {
            return Err(CodecError::SizeTooSmall(size));
        }
        Ok(Header {
            size,
            command_set: bytes[16],
            command_id: bytes[17],
            reserved: u16::from_le_bytes([bytes[18], bytes[19]]),
        })
    }

    /// `size - 20`: how many payload bytes follow the header.
    pub fn payload_len(&self) -> usize {
        usize::from(self.size).saturating_sub(HEADER_LEN)
    }
}

/// Builds a complete message: header followed by `payload`.
pub fn encode_message(
    command_set: u8,
    command_id: u8,
    payload: &[u8],
) -> Result<Vec<u8>, CodecError> {
    let size = HEADER_LEN + payload.len();
    let size16 = u16::try_from(size).map_err(|_| CodecError::TooLarge { size })?;
    let header = Header {
        size: size16,
        command_set,
        command_id,
        reserved: 0,
    };
    let mut out = Vec::with_capacity(size);
    out.extend_from_slice(&header.encode());
    out.extend_from_slice(payload);
    Ok(out)
}

/// Splits one complete message off the front of `bytes`, using the header's size field.
///
/// Returns the header and the payload; bytes after `size` are not looked at.
pub fn decode_message(bytes: &[u8]) -> Result<(Header, &[u8]), CodecError> {
    let header = Header::decode(bytes)?;
    let size = usize::from(header.size);
    if bytes.len() < size {
        return Err(CodecError::Truncated {
            field: "payload",
            needed: header.payload_len() as u64,
            available: bytes.len() - HEADER_LEN,
        });
    }
    Ok((header, &bytes[HEADER_LEN..size]))
}

// ---------------------------------------------------------------------------------------
// Primitive readers and writers

/// Encodes a GUID in Windows byte order.
pub fn guid_to_bytes(guid: Uuid) -> [u8; 16] {
    guid.to_bytes_le()
}

/// Decodes a GUID stored in Windows byte order.
pub fn guid_from_bytes(bytes: [u8; 16]) -> Uuid {
    Uuid::from_bytes_le(bytes)
}

/// Appends a protocol string: `u32` code-unit count including the NUL, UTF-16LE units, NUL.
///
/// Fails on an interior NUL (the runtime would cut the string there) or if the string
/// cannot possibly fit a message.
pub fn put_string(out: &mut Vec<u8>, field: &'static str, value: &str) -> Result<(), CodecError> {
    if value.contains('\0') {
        return Err(CodecError::InteriorNul { field });
    }
    let units: Vec<u16> = value.encode_utf16().collect();
    let count = units.len() + 1;
    let size = HEADER_LEN + 4 + count * 2;
    if size > MAX_MESSAGE_LEN {
        return Err(CodecError::TooLarge { size });
    }
    out.extend_from_slice(&(count as u32).to_le_bytes());
    for unit in units {
        out.extend_from_slice(&unit.to_le_bytes());
    }
    out.extend_from_slice(&[0, 0]);
    Ok(())
}

/// A cursor over a payload. Every read is bounds-checked and never panics.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// Starts reading at the beginning of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    /// Bytes not read yet.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Reads `n` raw bytes.
    pub fn bytes(&mut self, field: &'static str, n: u64) -> Result<&'a [u8], CodecError> {
        let available = self.remaining();
        match usize::try_from(n) {
            Ok(n) if n <= available => {
                let out = &self.buf[self.pos..self.pos + n];
                self.pos += n;
                Ok(out)
            }
            _ => Err(CodecError::Truncated {
                field,
                needed: n,
                available,
            }),
        }
    }

    fn array<const N: usize>(&mut self, field: &'static str) -> Result<[u8; N], CodecError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.bytes(field, N as u64)?);
        Ok(out)
    }

    /// Reads a little-endian `u32`.
    pub fn u32(&mut self, field: &'static str) -> Result<u32, CodecError> {
        self.array(field).map(u32::from_le_bytes)
    }

    /// Reads a little-endian `i32`.
    pub fn i32(&mut self, field: &'static str) -> Result<i32, CodecError> {
        self.array(field).map(i32::from_le_bytes)
    }

    /// Reads a little-endian `u64`.
    pub fn u64(&mut self, field: &'static str) -> Result<u64, CodecError> {
        self.array(field).map(u64::from_le_bytes)
    }

    /// Reads a GUID in Windows byte order.
    pub fn guid(&mut self, field: &'static str) -> Result<Uuid, CodecError> {
        self.array(field).map(guid_from_bytes)
    }

    /// Reads a protocol string. A null string (count 0) reads as `""`; text after an
    /// embedded NUL is dropped; unpaired surrogates become U+FFFD.
    pub fn string(&mut self, field: &'static str) -> Result<String, CodecError> {
        let count = u64::from(self.u32(field)?);
        let raw = self.bytes(field, count * 2)?;
        if raw.is_empty() {
            return Ok(String::new());
        }
        if raw[raw.len() - 2..] != [0, 0] {
            return Err(CodecError::UnterminatedString { field });
        }
        let units: Vec<u16> = raw
            .chunks_exact(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .take_while(|&u| u != 0)
            .collect();
        Ok(String::from_utf16_lossy(&units))
    }

    /// Fails if any byte is left.
    pub fn finish(&self, field: &'static str) -> Result<(), CodecError> {
        match self.remaining() {
            0 => Ok(()),
            count => Err(CodecError::TrailingBytes { field, count }),
        }
    }
}

// ---------------------------------------------------------------------------------------
// Requests

/// A request without payload (ProcessInfo*, ResumeRuntime).
pub fn empty_request(command: Command) -> Vec<u8> {
    let (set, id) = command.code();
    let header = Header {
        size: HEADER_LEN as u16,
        command_set: set,
        command_id: id,
        reserved: 0,
    };
    header.encode().to_vec()
}

/// Process/ProcessInfo request (20 bytes).
pub fn process_info_request() -> Vec<u8> {
    empty_request(Command::ProcessInfo)
}

/// Process/ProcessInfo2 request (20 bytes).
pub fn process_info2_request() -> Vec<u8> {
    empty_request(Command::ProcessInfo2)
}

/// Process/ProcessInfo3 request (20 bytes).
pub fn process_info3_request() -> Vec<u8> {
    empty_request(Command::ProcessInfo3)
}

/// Process/ResumeRuntime request (20 bytes).
pub fn resume_runtime_request() -> Vec<u8> {
    empty_request(Command::ResumeRuntime)
}

/// Profiler/AttachProfiler request.
///
/// Payload: `u32 timeout_ms`, 16-byte CLSID, string path, `u32 len`, `len` bytes.
/// `timeout_ms` is in **milliseconds**: that is what the runtime reads (the official .NET
/// client sends seconds by mistake). The payload ends exactly after the client data: at
/// least .NET 10.0.12 answers `DS_IPC_E_BAD_ENCODING` to any byte after it.
pub fn attach_profiler_request(
    timeout_ms: u32,
    clsid: Uuid,
    profiler_path: &str,
    client_data: &[u8],
) -> Result<Vec<u8>, CodecError> {
    let mut payload = Vec::with_capacity(64 + profiler_path.len() * 2 + client_data.len());
    payload.extend_from_slice(&timeout_ms.to_le_bytes());
    payload.extend_from_slice(&guid_to_bytes(clsid));
    put_string(&mut payload, "profiler path", profiler_path)?;
    let size = HEADER_LEN + payload.len() + 4 + client_data.len();
    if size > MAX_MESSAGE_LEN {
        return Err(CodecError::TooLarge { size });
    }
    payload.extend_from_slice(&(client_data.len() as u32).to_le_bytes());
    payload.extend_from_slice(client_data);
    let (set, id) = Command::AttachProfiler.code();
    encode_message(set, id, &payload)
}

/// Profiler/StartupProfiler request. Payload: 16-byte CLSID, string path.
pub fn startup_profiler_request(clsid: Uuid, profiler_path: &str) -> Result<Vec<u8>, CodecError> {
    let mut payload = Vec::with_capacity(24 + profiler_path.len() * 2);
    payload.extend_from_slice(&guid_to_bytes(clsid));
    put_string(&mut payload, "profiler path", profiler_path)?;
    let (set, id) = Command::StartupProfiler.code();
    encode_message(set, id, &payload)
}

/// A decoded AttachProfiler payload (what the runtime would see).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttachProfilerRequest {
    /// Attach timeout in milliseconds.
    pub timeout_ms: u32,
    /// Profiler CLSID.
    pub clsid: Uuid,
    /// Profiler library path.
    pub profiler_path: String,
    /// Bytes handed to `InitializeForAttach`.
    pub client_data: Vec<u8>,
}

impl AttachProfilerRequest {
    /// Encodes the whole request message.
    pub fn encode(&self) -> Result<Vec<u8>, CodecError> {
        attach_profiler_request(
            self.timeout_ms,
            self.clsid,
            &self.profiler_path,
            &self.client_data,
        )
    }

    /// Decodes an AttachProfiler payload (header excluded), requiring it to end exactly
    /// after the client data.
    pub fn decode(payload: &[u8]) -> Result<Self, CodecError> {
        let mut r = Reader::new(payload);
        let timeout_ms = r.u32("attach timeout")?;
        let clsid = r.guid("profiler CLSID")?;
        let profiler_path = r.string("profiler path")?;
        let len = r.u32("client data length")?;
        let client_data = r.bytes("client data", u64::from(len))?.to_vec();
        r.finish("client data")?;
        Ok(AttachProfilerRequest {
            timeout_ms,
            clsid,
            profiler_path,
            client_data,
        })
    }
}

/// A decoded StartupProfiler payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartupProfilerRequest {
    /// Profiler CLSID.
    pub clsid: Uuid,
    /// Profiler library path.
    pub profiler_path: String,
}

impl StartupProfilerRequest {
    /// Encodes the whole request message.
    pub fn encode(&self) -> Result<Vec<u8>, CodecError> {
        startup_profiler_request(self.clsid, &self.profiler_path)
    }

    /// Decodes a StartupProfiler payload (header excluded).
    pub fn decode(payload: &[u8]) -> Result<Self, CodecError> {
        let mut r = Reader::new(payload);
        let clsid = r.guid("profiler CLSID")?;
        let profiler_path = r.string("profiler path")?;
        r.finish("profiler path")?;
        Ok(StartupProfilerRequest {
            clsid,
            profiler_path,
        })
    }
}

// ---------------------------------------------------------------------------------------
// Responses

/// A response, classified by its header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Response<'a> {
    /// Server/OK (0xFF, 0x00) and its payload (command-specific; often an `i32` HRESULT).
    Ok(&'a [u8]),
    /// Server/Error (0xFF, 0xFF). `rest` is whatever follows the HRESULT (some commands
    /// append an error message string).
    Error {
        /// The failure HRESULT.
        hresult: i32,
        /// Bytes after the HRESULT.
        rest: &'a [u8],
    },
}

/// Classifies a response from its header and payload.
pub fn decode_response<'a>(header: &Header, payload: &'a [u8]) -> Result<Response<'a>, CodecError> {
    match (header.command_set, header.command_id) {
        (COMMAND_SET_SERVER, SERVER_OK) => Ok(Response::Ok(payload)),
        (COMMAND_SET_SERVER, SERVER_ERROR) => {
            let mut r = Reader::new(payload);
            let hresult = r.i32("error HRESULT")?;
            Ok(Response::Error {
                hresult,
                rest: &payload[4..],
            })
        }
        (command_set, command_id) => Err(CodecError::UnexpectedResponse {
            command_set,
            command_id,
        }),
    }
}

/// Reads the `i32` HRESULT at the start of an OK payload; an empty payload counts as
/// `S_OK` (the protocol document describes ResumeRuntime's answer as having none).
pub fn ok_hresult(payload: &[u8]) -> Result<i32, CodecError> {
    if payload.is_empty() {
        return Ok(0);
    }
    Reader::new(payload).i32("HRESULT")
}

/// Server/OK message whose payload is `payload`.
pub fn ok_response(payload: &[u8]) -> Result<Vec<u8>, CodecError> {
    encode_message(COMMAND_SET_SERVER, SERVER_OK, payload)
}

/// Server/OK message carrying an HRESULT (24 bytes).
pub fn ok_hresult_response(hresult: i32) -> Vec<u8> {
    let mut out = Vec::with_capacity(24);
    let header = Header {
        size: 24,
        command_set: COMMAND_SET_SERVER,
        command_id: SERVER_OK,
        reserved: 0,
    };
    out.extend_from_slice(&header.encode());
    out.extend_from_slice(&hresult.to_le_bytes());
    out
}

/// Server/Error message carrying an HRESULT (24 bytes).
pub fn error_response(hresult: i32) -> Vec<u8> {
    let mut out = ok_hresult_response(hresult);
    out[17] = SERVER_ERROR;
    out
}

// ---------------------------------------------------------------------------------------
// Process info

/// Which ProcessInfo command produced a payload; they differ in layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProcessInfoKind {
    /// ProcessInfo: pid, cookie, command line, OS, arch.
    V1,
    /// ProcessInfo2: V1 + entrypoint assembly name + CLR product version.
    V2,
    /// ProcessInfo3: `u32` payload version, then V2, then (version >= 1) runtime identifier.
    V3,
}

impl ProcessInfoKind {
    /// The command that returns this layout.
    pub const fn command(self) -> Command {
        match self {
            ProcessInfoKind::V1 => Command::ProcessInfo,
            ProcessInfoKind::V2 => Command::ProcessInfo2,
            ProcessInfoKind::V3 => Command::ProcessInfo3,
        }
    }
}

/// What the runtime reports about its process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessInfo {
    /// Process id in the target's pid namespace.
    pub pid: u64,
    /// Random per-runtime-instance cookie (also sent in the diagnostic-port advertise block).
    pub runtime_cookie: Uuid,
    /// On Linux: full path of `argv[0]` followed by the arguments, space-separated.
    pub command_line: String,
    /// `"Linux"`, `"macOS"`, `"Windows"` or `"Unknown"`.
    pub os: String,
    /// `"x64"`, `"x86"`, `"arm32"`, `"arm64"`, ...
    pub arch: String,
    /// Name of the entrypoint assembly (ProcessInfo2+).
    pub entrypoint_assembly: Option<String>,
    /// CLR product version such as `10.0.12` (ProcessInfo2+).
    pub clr_product_version: Option<String>,
    /// Portable runtime identifier such as `linux-x64` (ProcessInfo3 payload version 1+).
    pub runtime_identifier: Option<String>,
    /// Which command answered.
    pub kind: ProcessInfoKind,
}

/// Decodes a ProcessInfo / ProcessInfo2 / ProcessInfo3 payload.
///
/// Bytes after the known fields are ignored (ProcessInfo3 may grow at the end).
pub fn decode_process_info(
    kind: ProcessInfoKind,
    payload: &[u8],
) -> Result<ProcessInfo, CodecError> {
    let mut r = Reader::new(payload);
    let version = match kind {
        ProcessInfoKind::V3 => Some(r.u32("payload version")?),
        _ => None,
    };
    let pid = r.u64("process id")?;
    let runtime_cookie = r.guid("runtime cookie")?;
    let command_line = r.string("command line")?;
    let os = r.string("OS")?;
    let arch = r.string("architecture")?;
    let (entrypoint_assembly, clr_product_version) = match kind {
        ProcessInfoKind::V1 => (None, None),
        ProcessInfoKind::V2 | ProcessInfoKind::V3 => (
            Some(r.string("entrypoint assembly name")?),
            Some(r.string("CLR product version")?),
        ),
    };
    let runtime_identifier = match version {
        Some(v) if v >= 1 => Some(r.string("runtime identifier")?),
        _ => None,
    };
    Ok(ProcessInfo {
        pid,
        runtime_cookie,
        command_line,
        os,
        arch,
        entrypoint_assembly,
        clr_product_version,
        runtime_identifier,
        kind,
    })
}

/// Encodes a process-info payload in the layout of `info.kind` (for fakes and tests).
///
/// ProcessInfo3 is written as payload version 1 when `runtime_identifier` is set, else 0.
/// Fields the layout does not carry are left out.
pub fn encode_process_info(info: &ProcessInfo) -> Result<Vec<u8>, CodecError> {
    let mut out = Vec::new();
    if info.kind == ProcessInfoKind::V3 {
        let version: u32 = u32::from(info.runtime_identifier.is_some());
        out.extend_from_slice(&version.to_le_bytes());
    }
    out.extend_from_slice(&info.pid.to_le_bytes());
    out.extend_from_slice(&guid_to_bytes(info.runtime_cookie));
    put_string(&mut out, "command line", &info.command_line)?;
    put_string(&mut out, "OS", &info.os)?;
    put_string(&mut out, "architecture", &info.arch)?;
    if info.kind != ProcessInfoKind::V1 {
        let empty = String::new();
        put_string(
            &mut out,
            "entrypoint assembly name",
            info.entrypoint_assembly.as_ref().unwrap_or(&empty),
        )?;
        put_string(
            &mut out,
            "CLR product version",
            info.clr_product_version.as_ref().unwrap_or(&empty),
        )?;
    }
    if info.kind == ProcessInfoKind::V3
        && let Some(rid) = &info.runtime_identifier
    {
        put_string(&mut out, "runtime identifier", rid)?;
    }
    let size = HEADER_LEN + out.len();
    if size > MAX_MESSAGE_LEN {
        return Err(CodecError::TooLarge { size });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const CLSID: Uuid = uuid::uuid!("cf0d821e-299b-5307-a3d8-b283c03916dd");
    const MAGIC_HEX: [u8; 14] = [
        0x44, 0x4F, 0x54, 0x4E, 0x45, 0x54, 0x5F, 0x49, 0x50, 0x43, 0x5F, 0x56, 0x31, 0x00,
    ];

    fn with_magic(rest: &[u8]) -> Vec<u8> {
        let mut v = MAGIC_HEX.to_vec();
        v.extend_from_slice(rest);
        v
    }

    #[test]
    fn magic_bytes() {
        assert_eq!(MAGIC, MAGIC_HEX);
    }

    #[test]
    fn payloadless_requests() {
        let cases = [
            (process_info_request(), 0x00u8),
            (resume_runtime_request(), 0x01),
            (process_info2_request(), 0x04),
            (process_info3_request(), 0x08),
        ];
        for (bytes, id) in cases {
            assert_eq!(bytes, with_magic(&[0x14, 0x00, 0x04, id, 0x00, 0x00]));
        }
    }

    #[test]
    fn guid_windows_byte_order() {
        assert_eq!(
            guid_to_bytes(CLSID),
            [
                0x1e, 0x82, 0x0d, 0xcf, 0x9b, 0x29, 0x07, 0x53, 0xa3, 0xd8, 0xb2, 0x83, 0xc0, 0x39,
                0x16, 0xdd
            ]
        );
        assert_eq!(guid_from_bytes(guid_to_bytes(CLSID)), CLSID);
    }

    #[test]
    fn attach_profiler_fixture() {
        let bytes = attach_profiler_request(5000, CLSID, "/p.so", &[1, 2, 3]).unwrap();
        let expected = with_magic(&[
            0x3F, 0x00, 0x03, 0x01, 0x00, 0x00, // size 63, Profiler/AttachProfiler
            0x88, 0x13, 0x00, 0x00, // 5000 ms
            0x1e, 0x82, 0x0d, 0xcf, 0x9b, 0x29, 0x07, 0x53, // Data1, Data2, Data3
            0xa3, 0xd8, 0xb2, 0x83, 0xc0, 0x39, 0x16, 0xdd, // Data4
            0x06, 0x00, 0x00, 0x00, // 6 code units incl. NUL
            0x2f, 0x00, 0x70, 0x00, 0x2e, 0x00, // "/p."
            0x73, 0x00, 0x6f, 0x00, 0x00, 0x00, // "so" NUL
            0x03, 0x00, 0x00, 0x00, 0x01, 0x02, 0x03, // client data
        ]);
        assert_eq!(bytes, expected);
        let (header, payload) = decode_message(&bytes).unwrap();
        assert_eq!(header.size, 63);
        let decoded = AttachProfilerRequest::decode(payload).unwrap();
        assert_eq!(decoded.timeout_ms, 5000);
        assert_eq!(decoded.clsid, CLSID);
        assert_eq!(decoded.profiler_path, "/p.so");
        assert_eq!(decoded.client_data, vec![1, 2, 3]);
    }

    #[test]
    fn attach_profiler_without_client_data() {
        let bytes = attach_profiler_request(0, CLSID, "/p.so", &[]).unwrap();
        assert_eq!(bytes.len(), 60);
        assert_eq!(&bytes[56..], &[0, 0, 0, 0]);
    }

    #[test]
    fn startup_profiler_fixture() {
        let bytes = startup_profiler_request(CLSID, "/p.so").unwrap();
        let expected = with_magic(&[
            0x34, 0x00, 0x03, 0x02, 0x00, 0x00, // size 52, Profiler/StartupProfiler
            0x1e, 0x82, 0x0d, 0xcf, 0x9b, 0x29, 0x07, 0x53, 0xa3, 0xd8, 0xb2, 0x83, 0xc0, 0x39,
            0x16, 0xdd, 0x06, 0x00, 0x00, 0x00, 0x2f, 0x00, 0x70, 0x00, 0x2e, 0x00, 0x73, 0x00,
            0x6f, 0x00, 0x00, 0x00,
        ]);
        assert_eq!(bytes, expected);
    }

    #[test]
    fn non_ascii_path_is_utf16() {
        // U+00E9 is one unit, U+1F600 is a surrogate pair.
        let bytes = startup_profiler_request(CLSID, "é😀").unwrap();
        let payload = &bytes[HEADER_LEN + 16..];
        assert_eq!(
            payload,
            &[
                0x04, 0, 0, 0, 0xE9, 0x00, 0x3D, 0xD8, 0x00, 0xDE, 0x00, 0x00
            ]
        );
    }

    #[test]
    fn rejects_oversize_requests() {
        // 20 header + 4 + 16 + (4 + 2) empty path + 4 length = 50 bytes of overhead.
        let fits = vec![0u8; MAX_MESSAGE_LEN - 50];
        assert_eq!(
            attach_profiler_request(1, CLSID, "", &fits).unwrap().len(),
            MAX_MESSAGE_LEN
        );
        let too_big = vec![0u8; MAX_MESSAGE_LEN - 49];
        assert_eq!(
            attach_profiler_request(1, CLSID, "", &too_big),
            Err(CodecError::TooLarge { size: 65536 })
        );
        let long_path = "a".repeat(40_000);
        assert!(matches!(
            attach_profiler_request(1, CLSID, &long_path, &[]),
            Err(CodecError::TooLarge { .. })
        ));
        assert!(matches!(
            startup_profiler_request(CLSID, &long_path),
            Err(CodecError::TooLarge { .. })
        ));
        assert!(matches!(
            encode_message(1, 1, &vec![0; 65516]),
            Err(CodecError::TooLarge { size: 65536 })
        ));
    }

    #[test]
    fn rejects_interior_nul() {
        assert_eq!(
            startup_profiler_request(CLSID, "/a\0b"),
            Err(CodecError::InteriorNul {
                field: "profiler path"
            })
        );
    }

    #[test]
    fn ok_and_error_responses() {
        let ok = with_magic(&[0x18, 0x00, 0xFF, 0x00, 0x00, 0x00, 0, 0, 0, 0]);
        let (h, p) = decode_message(&ok).unwrap();
        assert_eq!(
            decode_response(&h, p).unwrap(),
            Response::Ok(&[0, 0, 0, 0][..])
        );
        assert_eq!(ok_hresult(p).unwrap(), 0);
        assert_eq!(ok, ok_hresult_response(0));

        let err = with_magic(&[0x18, 0x00, 0xFF, 0xFF, 0x00, 0x00, 0x85, 0x13, 0x13, 0x80]);
        let (h, p) = decode_message(&err).unwrap();
        assert_eq!(
            decode_response(&h, p).unwrap(),
            Response::Error {
                hresult: hr::DS_IPC_E_UNKNOWN_COMMAND,
                rest: &[]
            }
        );
        assert_eq!(err, error_response(hr::DS_IPC_E_UNKNOWN_COMMAND));
    }

    #[test]
    fn error_response_longer_than_24_bytes() {
        // The protocol document's example error is 28 bytes (8-byte payload); only the
        // first 4 are the HRESULT. Trailing bytes after `size` belong to nothing.
        let err = with_magic(&[
            0x1C, 0x00, 0xFF, 0xFF, 0x00, 0x00, 0x84, 0x13, 0x13, 0x80, 0xAA, 0xBB, 0xCC, 0xDD,
            0x99, 0x99,
        ]);
        let (h, p) = decode_message(&err).unwrap();
        assert_eq!(h.size, 28);
        assert_eq!(p.len(), 8);
        assert_eq!(
            decode_response(&h, p).unwrap(),
            Response::Error {
                hresult: hr::DS_IPC_E_BAD_ENCODING,
                rest: &[0xAA, 0xBB, 0xCC, 0xDD]
            }
        );
    }

    #[test]
    fn bad_headers() {
        let mut bad = ok_hresult_response(0);
        bad[0] = b'X';
        assert!(matches!(decode_message(&bad), Err(CodecError::BadMagic(_))));
        let small = with_magic(&[0x13, 0x00, 0xFF, 0x00, 0, 0]);
        assert_eq!(Header::decode(&small), Err(CodecError::SizeTooSmall(19)));
        let short = with_magic(&[0x18, 0x00, 0xFF, 0x00, 0, 0, 1, 2]);
        assert!(matches!(
            decode_message(&short),
            Err(CodecError::Truncated {
                field: "payload",
                ..
            })
        ));
        let empty_error = with_magic(&[0x14, 0x00, 0xFF, 0xFF, 0, 0]);
        let (h, p) = decode_message(&empty_error).unwrap();
        assert!(matches!(
            decode_response(&h, p),
            Err(CodecError::Truncated { .. })
        ));
        let other = with_magic(&[0x14, 0x00, 0x04, 0x00, 0, 0]);
        let (h, p) = decode_message(&other).unwrap();
        assert_eq!(
            decode_response(&h, p),
            Err(CodecError::UnexpectedResponse {
                command_set: 4,
                command_id: 0
            })
        );
    }

    /// ProcessInfo2 payload written by hand from the protocol document.
    fn process_info2_fixture() -> Vec<u8> {
        let mut p = vec![
            0x34, 0x15, 0, 0, 0, 0, 0, 0, // pid 5428
            0x8e, 0x1e, 0x0b, 0x20, 0x3c, 0x36, 0xa1, 0x4c, // cookie
            0xbf, 0x91, 0xa0, 0x1d, 0xd6, 0x35, 0x74, 0xf6,
        ];
        p.extend_from_slice(&[0x02, 0, 0, 0, b'a', 0, 0, 0]); // "a"
        p.extend_from_slice(&[0x06, 0, 0, 0]); // "Linux"
        p.extend_from_slice(&[b'L', 0, b'i', 0, b'n', 0, b'u', 0, b'x', 0, 0, 0]);
        p.extend_from_slice(&[0x04, 0, 0, 0, b'x', 0, b'6', 0, b'4', 0, 0, 0]); // "x64"
        p.extend_from_slice(&[0x00, 0, 0, 0]); // null entrypoint name
        p.extend_from_slice(&[0x05, 0, 0, 0]); // "10.0"
        p.extend_from_slice(&[b'1', 0, b'0', 0, b'.', 0, b'0', 0, 0, 0]);
        p
    }

    #[test]
    fn process_info_fixtures() {
        let p2 = process_info2_fixture();
        let info = decode_process_info(ProcessInfoKind::V2, &p2).unwrap();
        assert_eq!(info.pid, 5428);
        assert_eq!(
            info.runtime_cookie,
            uuid::uuid!("200b1e8e-363c-4ca1-bf91-a01dd63574f6")
        );
        assert_eq!(info.command_line, "a");
        assert_eq!(info.os, "Linux");
        assert_eq!(info.arch, "x64");
        assert_eq!(info.entrypoint_assembly.as_deref(), Some(""));
        assert_eq!(info.clr_product_version.as_deref(), Some("10.0"));
        assert_eq!(info.runtime_identifier, None);

        // ProcessInfo (V1) is a prefix of V2; the V2 tail is ignored.
        let v1 = decode_process_info(ProcessInfoKind::V1, &p2).unwrap();
        assert_eq!(v1.arch, "x64");
        assert_eq!(v1.clr_product_version, None);

        // ProcessInfo3 = u32 version + V2 + RID (when version >= 1).
        let mut p3 = vec![1, 0, 0, 0];
        p3.extend_from_slice(&p2);
        p3.extend_from_slice(&[0x0a, 0, 0, 0]);
        for c in "linux-x64".bytes() {
            p3.extend_from_slice(&[c, 0]);
        }
        p3.extend_from_slice(&[0, 0]);
        let v3 = decode_process_info(ProcessInfoKind::V3, &p3).unwrap();
        assert_eq!(v3.runtime_identifier.as_deref(), Some("linux-x64"));
        assert_eq!(v3.clr_product_version.as_deref(), Some("10.0"));

        let mut p3v0 = vec![0, 0, 0, 0];
        p3v0.extend_from_slice(&p2);
        let v3 = decode_process_info(ProcessInfoKind::V3, &p3v0).unwrap();
        assert_eq!(v3.runtime_identifier, None);
    }

    #[test]
    fn process_info_errors() {
        let p2 = process_info2_fixture();
        assert!(matches!(
            decode_process_info(ProcessInfoKind::V2, &p2[..p2.len() - 1]),
            Err(CodecError::Truncated { .. })
        ));
        let mut unterminated = p2.clone();
        let n = unterminated.len();
        unterminated[n - 2] = b'X';
        assert_eq!(
            decode_process_info(ProcessInfoKind::V2, &unterminated),
            Err(CodecError::UnterminatedString {
                field: "CLR product version"
            })
        );
        // A huge count must not allocate or overflow.
        let mut huge = p2[..24].to_vec();
        huge.extend_from_slice(&u32::MAX.to_le_bytes());
        assert!(matches!(
            decode_process_info(ProcessInfoKind::V1, &huge),
            Err(CodecError::Truncated {
                needed: 8_589_934_590,
                ..
            })
        ));
    }

    #[test]
    fn attach_decode_requires_exact_length() {
        let bytes = attach_profiler_request(1, CLSID, "/p.so", &[7]).unwrap();
        let mut payload = bytes[HEADER_LEN..].to_vec();
        payload.push(0);
        assert_eq!(
            AttachProfilerRequest::decode(&payload),
            Err(CodecError::TrailingBytes {
                field: "client data",
                count: 1
            })
        );
    }

    fn arb_string() -> impl Strategy<Value = String> {
        // Any Unicode text without NUL, up to a modest length.
        proptest::collection::vec(any::<char>().prop_filter("no NUL", |c| *c != '\0'), 0..40)
            .prop_map(|cs| cs.into_iter().collect())
    }

    fn arb_uuid() -> impl Strategy<Value = Uuid> {
        any::<[u8; 16]>().prop_map(Uuid::from_bytes)
    }

    fn arb_process_info() -> impl Strategy<Value = ProcessInfo> {
        (
            any::<u64>(),
            arb_uuid(),
            arb_string(),
            arb_string(),
            arb_string(),
            arb_string(),
            arb_string(),
            proptest::option::of(arb_string()),
            prop_oneof![
                Just(ProcessInfoKind::V1),
                Just(ProcessInfoKind::V2),
                Just(ProcessInfoKind::V3)
            ],
        )
            .prop_map(|(pid, cookie, cl, os, arch, ep, ver, rid, kind)| {
                let v2 = kind != ProcessInfoKind::V1;
                ProcessInfo {
                    pid,
                    runtime_cookie: cookie,
                    command_line: cl,
                    os,
                    arch,
                    entrypoint_assembly: v2.then_some(ep),
                    clr_product_version: v2.then_some(ver),
                    runtime_identifier: if kind == ProcessInfoKind::V3 {
                        rid
                    } else {
                        None
                    },
                    kind,
                }
            })
    }

    proptest! {
        #[test]
        fn parsing_random_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            if let Ok((h, p)) = decode_message(&bytes) {
                let _ = decode_response(&h, p);
                let _ = ok_hresult(p);
            }
            for kind in [ProcessInfoKind::V1, ProcessInfoKind::V2, ProcessInfoKind::V3] {
                let _ = decode_process_info(kind, &bytes);
            }
            let _ = AttachProfilerRequest::decode(&bytes);
            let _ = StartupProfilerRequest::decode(&bytes);
            let _ = Header::decode(&bytes);
        }

        #[test]
        fn parsing_random_bytes_after_valid_magic_never_panics(rest in proptest::collection::vec(any::<u8>(), 0..300)) {
            let mut bytes = MAGIC.to_vec();
            bytes.extend_from_slice(&rest);
            if let Ok((h, p)) = decode_message(&bytes) {
                prop_assert_eq!(p.len(), h.payload_len());
                let _ = decode_response(&h, p);
            }
        }

        #[test]
        fn header_round_trip(size in 20u16.., set: u8, id: u8, reserved: u16) {
            let h = Header { size, command_set: set, command_id: id, reserved };
            prop_assert_eq!(Header::decode(&h.encode()), Ok(h));
        }

        #[test]
        fn string_round_trip(s in arb_string()) {
            let mut buf = Vec::new();
            put_string(&mut buf, "s", &s).unwrap();
            let mut r = Reader::new(&buf);
            prop_assert_eq!(r.string("s").unwrap(), s);
            prop_assert_eq!(r.remaining(), 0);
        }

        #[test]
        fn guid_round_trip(g in arb_uuid()) {
            prop_assert_eq!(guid_from_bytes(guid_to_bytes(g)), g);
        }

        #[test]
        fn attach_round_trip(timeout_ms: u32, clsid in arb_uuid(), path in arb_string(),
                             data in proptest::collection::vec(any::<u8>(), 0..200)) {
            let req = AttachProfilerRequest { timeout_ms, clsid, profiler_path: path, client_data: data };
            let bytes = req.encode().unwrap();
            let (h, p) = decode_message(&bytes).unwrap();
            prop_assert_eq!(usize::from(h.size), bytes.len());
            prop_assert_eq!((h.command_set, h.command_id), (3, 1));
            prop_assert_eq!(AttachProfilerRequest::decode(p).unwrap(), req);
        }

        #[test]
        fn startup_round_trip(clsid in arb_uuid(), path in arb_string()) {
            let req = StartupProfilerRequest { clsid, profiler_path: path };
            let bytes = req.encode().unwrap();
            let (h, p) = decode_message(&bytes).unwrap();
            prop_assert_eq!((h.command_set, h.command_id), (3, 2));
            prop_assert_eq!(StartupProfilerRequest::decode(p).unwrap(), req);
        }

        #[test]
        fn process_info_round_trip(info in arb_process_info()) {
            let payload = encode_process_info(&info).unwrap();
            let message = ok_response(&payload).unwrap();
            let (h, p) = decode_message(&message).unwrap();
            let Response::Ok(p) = decode_response(&h, p).unwrap() else {
                return Err(TestCaseError::fail("not OK"));
            };
            prop_assert_eq!(decode_process_info(info.kind, p).unwrap(), info);
        }

        #[test]
        fn hresult_responses_round_trip(hresult: i32) {
            let ok = ok_hresult_response(hresult);
            let (h, p) = decode_message(&ok).unwrap();
            prop_assert_eq!(decode_response(&h, p).unwrap(), Response::Ok(&hresult.to_le_bytes()[..]));
            prop_assert_eq!(ok_hresult(p).unwrap(), hresult);
            let err = error_response(hresult);
            let (h, p) = decode_message(&err).unwrap();
            prop_assert_eq!(decode_response(&h, p).unwrap(), Response::Error { hresult, rest: &[] });
        }
    }
}
