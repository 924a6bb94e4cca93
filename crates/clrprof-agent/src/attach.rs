//! Attach: the settings arrive as the client data of the diagnostics AttachProfiler
//! command. Layout (versioned, size-checked):
//!
//! | bytes | field |
//! |---|---|
//! | 8 | magic `CLRPROF1` |
//! | 4 | u32 LE length N of the JSON that follows (≤ 65536) |
//! | N | UTF-8 JSON: `{"version":1,"env":{"CLRPROF_MODE":"sample",…},"control":"/path.sock"}` |
//!
//! `env` holds the same `CLRPROF_*` settings as the startup variables, so both paths share
//! one parser; `control` is where to listen for `clrprof detach`.

use std::collections::HashMap;
use std::path::PathBuf;

use crate::config::{ConfigError, Settings};

pub const MAGIC: &[u8; 8] = b"CLRPROF1";
pub const MAX_JSON: usize = 65536;

#[derive(Debug)]
pub struct AttachRequest {
    pub settings: Settings,
    pub control: Option<PathBuf>,
}

/// Parses and validates the client data.
pub fn parse(data: &[u8], pid: u32) -> Result<AttachRequest, ConfigError> {
    let err = |m: &str| ConfigError(format!("invalid attach client data: {m}"));
    if data.len() < 12 || &data[..8] != MAGIC {
        return Err(err("missing CLRPROF1 header (was it sent by clrprof?)"));
    }
    let len = u32::from_le_bytes([data[8], data[9], data[10], data[11]]) as usize;
    if len > MAX_JSON || data.len() != 12 + len {
        return Err(err(&format!(
            "length field says {len} bytes, {} present",
            data.len() - 12
        )));
    }
    let v: serde_json::Value =
        serde_json::from_slice(&data[12..]).map_err(|e| err(&format!("bad JSON: {e}")))?;
    if v["version"].as_u64() != Some(1) {
        return Err(err(&format!(
            "unsupported version {} (this agent reads version 1)",
            v["version"]
        )));
    }
    let env: HashMap<String, String> = match v["env"].as_object() {
        Some(o) => o
            .iter()
            .filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_string())))
            .collect(),
        None => return Err(err("no env object")),
    };
    if let Some(k) = env.keys().find(|k| !k.starts_with("CLRPROF_")) {
        return Err(err(&format!("unexpected setting {k}")));
    }
    let settings = Settings::from_lookup(|k| env.get(k).cloned(), pid)?;
    let control = v["control"].as_str().map(PathBuf::from);
    Ok(AttachRequest { settings, control })
}

/// Builds client data (used by tests; the CLI has its own copy of this layout).
pub fn encode(env: &[(&str, &str)], control: Option<&str>) -> Vec<u8> {
    let env: serde_json::Map<String, serde_json::Value> = env
        .iter()
        .map(|(k, v)| (k.to_string(), serde_json::Value::String(v.to_string())))
        .collect();
    let json = serde_json::json!({ "version": 1, "env": env, "control": control }).to_string();
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(&(json.len() as u32).to_le_bytes());
    out.extend_from_slice(json.as_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Mode;

    #[test]
    fn round_trip() {
        let data = encode(
            &[
                ("CLRPROF_MODE", "sample"),
                ("CLRPROF_OUTPUT", "/tmp/x.clrprof"),
            ],
            Some("/tmp/c.sock"),
        );
        let r = parse(&data, 7).unwrap();
        assert_eq!(r.settings.mode, Mode::Sample);
        assert_eq!(r.control, Some(PathBuf::from("/tmp/c.sock")));
    }

    #[test]
    fn rejects_bad_data() {
        assert!(parse(b"", 1).unwrap_err().0.contains("CLRPROF1"));
        let mut d = encode(&[], None);
        d.push(0);
        assert!(parse(&d, 1).unwrap_err().0.contains("length"));
        let d = encode(&[("CLRPROF_MODE", "bogus")], None);
        assert!(parse(&d, 1).unwrap_err().0.contains("CLRPROF_MODE"));
        let d = encode(&[("PATH", "/bin")], None);
        assert!(parse(&d, 1).unwrap_err().0.contains("PATH"));
    }
}
