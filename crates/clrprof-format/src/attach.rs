//! The client data `clrprof record --pid` sends with the diagnostics AttachProfiler
//! command, and the agent's InitializeForAttach reads. One definition for both sides.
//!
//! | bytes | field |
//! |---|---|
//! | 8 | magic `CLRPROF1` |
//! | 4 | u32 LE length N of the JSON that follows (≤ 65536) |
//! | N | UTF-8 JSON `{"version":1,"env":{"CLRPROF_MODE":"sample",…},"control":"/path.sock"}` |
//!
//! `env` carries the same `CLRPROF_*` settings as the startup environment variables, so the
//! agent parses both with one function; `control` is where the agent listens for
//! `clrprof detach`.

use std::collections::BTreeMap;

/// First bytes of the client data.
pub const ATTACH_MAGIC: &[u8; 8] = b"CLRPROF1";
/// Largest JSON part accepted.
pub const ATTACH_MAX_JSON: usize = 65536;

/// Settings for an attach.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AttachRequest {
    /// `CLRPROF_*` name → value.
    pub env: BTreeMap<String, String>,
    /// The control socket the agent listens on.
    pub control: Option<String>,
}

/// Encodes the client data.
pub fn encode_attach(req: &AttachRequest) -> Vec<u8> {
    let json =
        serde_json::json!({ "version": 1, "env": req.env, "control": req.control }).to_string();
    let mut out = Vec::with_capacity(12 + json.len());
    out.extend_from_slice(ATTACH_MAGIC);
    out.extend_from_slice(&(json.len() as u32).to_le_bytes());
    out.extend_from_slice(json.as_bytes());
    out
}

/// Decodes and checks the client data; the error says what is wrong with it.
pub fn decode_attach(data: &[u8]) -> Result<AttachRequest, String> {
    if data.len() < 12 || &data[..8] != ATTACH_MAGIC {
        return Err("missing CLRPROF1 header (was it sent by clrprof?)".into());
    }
    let len = u32::from_le_bytes([data[8], data[9], data[10], data[11]]) as usize;
    if len > ATTACH_MAX_JSON || data.len() != 12 + len {
        return Err(format!(
            "length field says {len} bytes, {} present",
            data.len() - 12
        ));
    }
    let v: serde_json::Value =
        serde_json::from_slice(&data[12..]).map_err(|e| format!("bad JSON: {e}"))?;
    if v["version"].as_u64() != Some(1) {
        return Err(format!(
            "unsupported version {} (this agent reads version 1)",
            v["version"]
        ));
    }
    let Some(obj) = v["env"].as_object() else {
        return Err("no env object".into());
    };
    let mut env = BTreeMap::new();
    for (k, val) in obj {
        let Some(s) = val.as_str() else {
            return Err(format!("setting {k} is not a string"));
        };
        if !k.starts_with("CLRPROF_") {
            return Err(format!("unexpected setting {k}"));
        }
        env.insert(k.clone(), s.to_string());
    }
    Ok(AttachRequest {
        env,
        control: v["control"].as_str().map(String::from),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_rejections() {
        let mut req = AttachRequest {
            control: Some("/tmp/c.sock".into()),
            ..Default::default()
        };
        req.env.insert("CLRPROF_MODE".into(), "sample".into());
        let data = encode_attach(&req);
        assert_eq!(decode_attach(&data).unwrap(), req);
        assert!(decode_attach(b"").unwrap_err().contains("CLRPROF1"));
        let mut long = data.clone();
        long.push(0);
        assert!(decode_attach(&long).unwrap_err().contains("length"));
        req.env.insert("PATH".into(), "/bin".into());
        assert!(
            decode_attach(&encode_attach(&req))
                .unwrap_err()
                .contains("PATH")
        );
    }
}
