//! The file header: magic, version, and a JSON document describing the recording.
//!
//! ```text
//! offset size
//!      0    8  magic "CLRPROF\0"
//!      8    2  format major (u16 LE)
//!     10    2  format minor (u16 LE)
//!     12    4  length N of the JSON document (u32 LE)
//!     16    4  CRC-32 of bytes 0..16 and the JSON (format 2; absent in format 1)
//!     20    N  JSON (UTF-8): TraceMeta (at 16 in format 1)
//! ```

use std::io::{self, Write};

use serde::{Deserialize, Serialize};

use clrprof_settings::Settings;

use crate::error::FormatError;

/// First 8 bytes of every trace.
pub const FILE_MAGIC: [u8; 8] = *b"CLRPROF\0";
/// Format major version this crate writes. It reads this one and 1 (whose blocks have no
/// sequence numbers and whose header has no CRC).
pub const FORMAT_MAJOR: u16 = 2;
/// Format minor version this crate writes; readers accept any minor of their major.
pub const FORMAT_MINOR: u16 = 6;
/// The last minor version of format 1.
pub const FORMAT_1_LAST_MINOR: u16 = 3;
/// Bytes before the JSON document (format 2: magic, version, length, CRC).
pub const FILE_HEADER_FIXED_LEN: usize = 20;
/// Bytes before the JSON document in format 1 (no CRC).
pub const FILE_HEADER_FIXED_LEN_V1: usize = 16;
/// Largest JSON document a reader accepts.
pub const MAX_HEADER_JSON_LEN: usize = 16 << 20;

/// The decoded file header.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    pub major: u16,
    pub minor: u16,
    pub meta: TraceMeta,
}

/// What was recorded, where and how. Every field has a default so readers cope with
/// documents from older or newer writers (unknown fields are ignored).
///
/// The mode is `settings.mode`. The document also has it as a top-level `mode` string
/// (`"events"`, `"trace"` or `"sample"`), where it always was and where the first headers,
/// whose `settings` hold no mode, have it alone: written from `settings.mode`, and read
/// into it when `settings` leaves the mode out.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(try_from = "MetaDocument")]
pub struct TraceMeta {
    pub pid: u32,
    pub command_line: Vec<String>,
    pub agent_version: String,
    pub runtime_version: Option<String>,
    /// Wall-clock time at which recording started.
    pub start_unix_ns: u64,
    pub clock: ClockInfo,
    /// Whether the profiler attached to a running process (rather than loading at startup).
    pub attached: bool,
    /// The agent's settings. A member an older writer left out reads as
    /// [`Settings::unrecorded`] has it; `null` or no `settings` at all, as all left out.
    pub settings: Settings,
    /// Every event kind the writer knew: lets a reader name and skip kinds it does not know.
    pub event_kinds: Vec<EventKindDesc>,
    /// The writer ends the trace with a `TraceEnd` record (the agent does): a reader that
    /// finds none says the trace was cut short.
    pub end_record: bool,
}

/// What an empty header document reads as.
impl Default for TraceMeta {
    fn default() -> Self {
        TraceMeta {
            pid: 0,
            command_line: Vec::new(),
            agent_version: String::new(),
            runtime_version: None,
            start_unix_ns: 0,
            clock: ClockInfo::default(),
            attached: false,
            settings: Settings::unrecorded(),
            event_kinds: Vec::new(),
            end_record: false,
        }
    }
}

/// The header document as written: [`TraceMeta`]'s fields, the top-level `mode` beside
/// them, in this order.
#[derive(Default, Deserialize)]
#[serde(default)]
struct MetaDocument {
    pid: u32,
    command_line: Vec<String>,
    mode: String,
    agent_version: String,
    runtime_version: Option<String>,
    start_unix_ns: u64,
    clock: ClockInfo,
    attached: bool,
    /// Kept as it came: whether it names the mode decides where the mode is read from.
    settings: Option<serde_json::Value>,
    event_kinds: Vec<EventKindDesc>,
    end_record: bool,
}

impl TryFrom<MetaDocument> for TraceMeta {
    type Error = serde_json::Error;

    fn try_from(d: MetaDocument) -> Result<TraceMeta, serde_json::Error> {
        // A member an older writer left out reads as `Settings::unrecorded` has it.
        let names_mode = d.settings.as_ref().is_some_and(|s| s.get("mode").is_some());
        let mut settings = match d.settings {
            None | Some(serde_json::Value::Null) => Settings::unrecorded(),
            Some(v) => serde_json::from_value(v)?,
        };
        if !names_mode && let Ok(mode) = serde_json::from_value(serde_json::Value::String(d.mode)) {
            settings.mode = mode;
        }
        Ok(TraceMeta {
            pid: d.pid,
            command_line: d.command_line,
            agent_version: d.agent_version,
            runtime_version: d.runtime_version,
            start_unix_ns: d.start_unix_ns,
            clock: d.clock,
            attached: d.attached,
            settings,
            event_kinds: d.event_kinds,
            end_record: d.end_record,
        })
    }
}

impl Serialize for TraceMeta {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut m = s.serialize_struct("TraceMeta", 11)?;
        m.serialize_field("pid", &self.pid)?;
        m.serialize_field("command_line", &self.command_line)?;
        m.serialize_field("mode", self.settings.mode.as_str())?;
        m.serialize_field("agent_version", &self.agent_version)?;
        m.serialize_field("runtime_version", &self.runtime_version)?;
        m.serialize_field("start_unix_ns", &self.start_unix_ns)?;
        m.serialize_field("clock", &self.clock)?;
        m.serialize_field("attached", &self.attached)?;
        m.serialize_field("settings", &self.settings)?;
        m.serialize_field("event_kinds", &self.event_kinds)?;
        m.serialize_field("end_record", &self.end_record)?;
        m.end()
    }
}

/// What record timestamps count.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ClockInfo {
    pub kind: ClockKind,
    /// Tick rate when the writer knew it (a hint; the reader fits it from `ClockSync`).
    pub ticks_per_second: Option<f64>,
}

/// The tick source of record timestamps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClockKind {
    /// Raw x86 time-stamp counter (invariant TSC).
    Tsc,
    /// CLOCK_MONOTONIC nanoseconds.
    #[default]
    MonotonicNs,
}

/// One event kind in the header's self-description.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct EventKindDesc {
    pub id: u8,
    pub name: String,
    /// In wire order, after the record timestamp.
    pub fields: Vec<FieldDesc>,
}

/// One field of an event kind.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct FieldDesc {
    pub name: String,
    /// Wire type: `u64`, `u32`, `i32`, `u8`, `bool`, `str` or `[u64]`; one-byte enums are
    /// `u8 <EnumName>`. See docs/trace-format.md.
    pub ty: String,
}

impl Header {
    /// A header of the version this crate writes.
    pub fn new(meta: TraceMeta) -> Header {
        Header {
            major: FORMAT_MAJOR,
            minor: FORMAT_MINOR,
            meta,
        }
    }

    /// The header's bytes (format 2 and later with a CRC; format 1 without).
    pub fn to_bytes(&self) -> Result<Vec<u8>, serde_json::Error> {
        let json = serde_json::to_vec(&self.meta)?;
        let mut out = Vec::with_capacity(FILE_HEADER_FIXED_LEN + json.len());
        out.extend_from_slice(&FILE_MAGIC);
        out.extend_from_slice(&self.major.to_le_bytes());
        out.extend_from_slice(&self.minor.to_le_bytes());
        out.extend_from_slice(&(json.len() as u32).to_le_bytes());
        if self.major >= 2 {
            let crc = header_crc(&out, &json);
            out.extend_from_slice(&crc.to_le_bytes());
        }
        out.extend_from_slice(&json);
        Ok(out)
    }

    /// Parses the header at the start of `bytes`; returns it and the offset of the first
    /// block. A header whose CRC does not match is returned all the same (see
    /// [`parse_checked`](Self::parse_checked)).
    pub fn parse(bytes: &[u8]) -> Result<(Header, usize), FormatError> {
        Header::parse_checked(bytes).map(|(h, end, _)| (h, end))
    }

    /// [`parse`](Self::parse), also saying whether the header's CRC matches (always true
    /// for format 1, which has none).
    pub fn parse_checked(bytes: &[u8]) -> Result<(Header, usize, bool), FormatError> {
        if bytes.is_empty() {
            return Err(FormatError::Empty);
        }
        let magic_len = bytes.len().min(FILE_MAGIC.len());
        if bytes[..magic_len] != FILE_MAGIC[..magic_len] {
            return Err(FormatError::NotATrace {
                found: escape(&bytes[..magic_len]),
            });
        }
        if bytes.len() < FILE_HEADER_FIXED_LEN_V1 {
            return Err(FormatError::HeaderTruncated {
                len: bytes.len(),
                needed: FILE_HEADER_FIXED_LEN_V1,
            });
        }
        let u16_at = |i: usize| u16::from_le_bytes([bytes[i], bytes[i + 1]]);
        let (major, minor) = (u16_at(8), u16_at(10));
        if major != FORMAT_MAJOR && major != 1 {
            return Err(FormatError::UnsupportedVersion { major, minor });
        }
        let fixed = if major >= 2 {
            FILE_HEADER_FIXED_LEN
        } else {
            FILE_HEADER_FIXED_LEN_V1
        };
        if bytes.len() < fixed {
            return Err(FormatError::HeaderTruncated {
                len: bytes.len(),
                needed: fixed,
            });
        }
        let json_len = u32::from_le_bytes([bytes[12], bytes[13], bytes[14], bytes[15]]) as usize;
        if json_len > MAX_HEADER_JSON_LEN {
            return Err(FormatError::HeaderJsonTooLarge { len: json_len });
        }
        let end = fixed + json_len;
        let Some(json) = bytes.get(fixed..end) else {
            return Err(FormatError::HeaderJsonTruncated {
                declared: json_len,
                present: bytes.len() - fixed,
            });
        };
        let crc_ok = fixed == FILE_HEADER_FIXED_LEN_V1
            || header_crc(&bytes[..FILE_HEADER_FIXED_LEN_V1], json)
                == u32::from_le_bytes([bytes[16], bytes[17], bytes[18], bytes[19]]);
        let meta = serde_json::from_slice(json).map_err(|e| FormatError::HeaderJsonInvalid {
            error: e.to_string(),
        })?;
        Ok((Header { major, minor, meta }, end, crc_ok))
    }
}

/// The CRC-32 a format 2 header carries: of its first 16 bytes, then the JSON.
fn header_crc(fixed: &[u8], json: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(fixed);
    h.update(json);
    h.finalize()
}

/// Writes the file header.
pub fn write_file_header<W: Write + ?Sized>(w: &mut W, header: &Header) -> io::Result<()> {
    let bytes = header.to_bytes().map_err(io::Error::other)?;
    w.write_all(&bytes)
}

/// Bytes shown as a Rust-like byte string: `"MZ\x90\0"`.
fn escape(bytes: &[u8]) -> String {
    let mut s = String::from("\"");
    for &b in bytes {
        match b {
            0 => s.push_str("\\0"),
            b'"' => s.push_str("\\\""),
            b'\\' => s.push_str("\\\\"),
            0x20..=0x7e => s.push(b as char),
            _ => s.push_str(&format!("\\x{b:02x}")),
        }
    }
    s.push('"');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let h = Header::new(TraceMeta {
            pid: 42,
            clock: ClockInfo {
                kind: ClockKind::Tsc,
                ticks_per_second: Some(3e9),
            },
            event_kinds: crate::event_kind_table(),
            ..TraceMeta::default()
        });
        let bytes = h.to_bytes().unwrap();
        let (back, end) = Header::parse(&bytes).unwrap();
        assert_eq!(back, h);
        assert_eq!(end, bytes.len());
        assert!(Header::parse_checked(&bytes).unwrap().2);
        // The CRC covers the version and the JSON.
        for i in [10, 20, bytes.len() - 2] {
            let mut bad = bytes.clone();
            bad[i] ^= 0x01;
            if let Ok((_, _, crc_ok)) = Header::parse_checked(&bad) {
                assert!(!crc_ok, "byte {i}");
            }
        }
    }

    #[test]
    fn missing_and_unknown_fields_are_tolerated() {
        let json = br#"{"pid":7,"something_new":[1,2],"clock":{"kind":"tsc"}}"#;
        let mut bytes = FILE_MAGIC.to_vec();
        bytes.extend_from_slice(&1u16.to_le_bytes());
        bytes.extend_from_slice(&9u16.to_le_bytes());
        bytes.extend_from_slice(&(json.len() as u32).to_le_bytes());
        bytes.extend_from_slice(json);
        let (h, _) = Header::parse(&bytes).unwrap();
        assert_eq!((h.major, h.minor, h.meta.pid), (1, 9, 7));
        assert_eq!(h.meta.clock.kind, ClockKind::Tsc);
        assert!(h.meta.event_kinds.is_empty());
        assert_eq!(h.meta.settings, Settings::unrecorded());
    }

    #[test]
    fn settings_are_typed_and_old_ones_read() {
        let parse = |json: &str| {
            let mut bytes = FILE_MAGIC.to_vec();
            bytes.extend_from_slice(&1u16.to_le_bytes());
            bytes.extend_from_slice(&0u16.to_le_bytes());
            bytes.extend_from_slice(&(json.len() as u32).to_le_bytes());
            bytes.extend_from_slice(json.as_bytes());
            Header::parse(&bytes).map(|(h, _)| h.meta.settings)
        };
        assert_eq!(
            parse(r#"{"settings":null}"#).unwrap(),
            Settings::unrecorded()
        );
        let s = parse(r#"{"settings":{"rate_hz":250,"mode":"sample","something_new":1}}"#).unwrap();
        assert_eq!((s.rate_hz, s.mode), (250, clrprof_settings::Mode::Sample));
        // The first headers name the mode at the top only; the settings' own wins.
        let meta = |json: &str| {
            let mut bytes = FILE_MAGIC.to_vec();
            bytes.extend_from_slice(&1u16.to_le_bytes());
            bytes.extend_from_slice(&0u16.to_le_bytes());
            bytes.extend_from_slice(&(json.len() as u32).to_le_bytes());
            bytes.extend_from_slice(json.as_bytes());
            Header::parse(&bytes).map(|(h, _)| h.meta).unwrap()
        };
        use clrprof_settings::Mode;
        assert_eq!(meta(r#"{"mode":"trace"}"#).settings.mode, Mode::Trace);
        assert_eq!(
            meta(r#"{"mode":"trace","settings":{"flush_ms":5}}"#)
                .settings
                .mode,
            Mode::Trace
        );
        assert_eq!(
            meta(r#"{"mode":"trace","settings":{"mode":"sample"}}"#)
                .settings
                .mode,
            Mode::Sample
        );
        assert_eq!(meta(r#"{"mode":"?"}"#).settings.mode, Mode::Events);
        // And it is written at the top, from the settings.
        let m = TraceMeta {
            settings: Settings::for_mode(Mode::Sample),
            ..TraceMeta::default()
        };
        let json = serde_json::to_string(&m).unwrap();
        assert!(
            json.starts_with(r#"{"pid":0,"command_line":[],"mode":"sample","#),
            "{json}"
        );
        assert!(matches!(
            parse(r#"{"settings":{"rate_hz":"fast"}}"#),
            Err(FormatError::HeaderJsonInvalid { .. })
        ));
    }

    #[test]
    fn escapes_magic() {
        assert_eq!(escape(b"MZ\x90\0\"\\"), r#""MZ\x90\0\"\\""#);
    }
}
