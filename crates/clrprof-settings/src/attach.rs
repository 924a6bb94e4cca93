//! The client data `clrprof record --pid` (and `clrprof heap`) sends with the diagnostics
//! AttachProfiler command, and the agent's InitializeForAttach reads.
//!
//! | bytes | field |
//! |---|---|
//! | 8 | magic `CLRPROF1` |
//! | 4 | u32 LE length N of the JSON that follows (≤ 65536) |
//! | N | UTF-8 JSON `{"version":1,"env":{"CLRPROF_MODE":"sample",…},"control":"/path.sock"}` |
//!
//! `env` holds the settings as the same `CLRPROF_*` variables as the startup environment
//! ([`Settings::to_env`]), so both ways in are read by [`Settings::from_env`], with the
//! same rules; `control` is where the agent listens for `clrprof detach`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::{Mode, Settings, SettingsError};

/// First bytes of the client data.
pub const MAGIC: &[u8; 8] = b"CLRPROF1";
/// Largest JSON part accepted.
pub const MAX_JSON: usize = 65536;

/// What an attach asks of the agent.
#[derive(Debug, Clone, PartialEq)]
pub struct AttachRequest {
    pub settings: Settings,
    /// The control socket the agent listens on.
    pub control: Option<PathBuf>,
}

/// Encodes the client data.
pub fn encode(req: &AttachRequest) -> Vec<u8> {
    let env: BTreeMap<&str, String> = req.settings.to_env().into_iter().collect();
    let control = req.control.as_ref().map(|c| c.to_string_lossy());
    let json = serde_json::json!({ "version": 1, "env": env, "control": control }).to_string();
    let mut out = Vec::with_capacity(12 + json.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(json.len() as u32).to_le_bytes());
    out.extend_from_slice(json.as_bytes());
    out
}

/// Decodes and checks the client data; `pid` fills `{pid}` in the output path. The error
/// says what is wrong: the data (`invalid attach client data: …`) or a setting.
pub fn decode(data: &[u8], pid: u32) -> Result<AttachRequest, SettingsError> {
    let (env, control) =
        decode_env(data).map_err(|m| SettingsError(format!("invalid attach client data: {m}")))?;
    let settings = Settings::from_env(|k| env.get(k).cloned(), pid)?;
    Ok(AttachRequest {
        settings,
        control: control.map(PathBuf::from),
    })
}

/// Settings a profiler attached to a running process cannot honour, refused before
/// anything starts: by the agent's InitializeForAttach and by a dormant agent's next
/// session alike (the CLI refuses the options behind them first, with its own advice).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttachConflict {
    /// `CLRPROF_ARGS` or `CLRPROF_COUNTS`: both need the ELT hooks, which the runtime
    /// allows only at startup (`CORPROF_E_UNSUPPORTED_FOR_ATTACHING_PROFILER`).
    NeedsEltHooks,
    /// Trace mode without `CLRPROF_INCLUDE`: after attach, trace mode probes the methods
    /// it selects, and selecting none probes nothing.
    TraceWithoutInclude,
}

impl AttachConflict {
    /// Why, naming the variables (and the options that set them).
    pub fn message(self) -> &'static str {
        match self {
            AttachConflict::NeedsEltHooks => {
                "CLRPROF_COUNTS (--counts) and CLRPROF_ARGS (--args) need ELT hooks, which the \
                 runtime allows only at startup (CORPROF_E_UNSUPPORTED_FOR_ATTACHING_PROFILER)"
            }
            AttachConflict::TraceWithoutInclude => {
                "CLRPROF_MODE=trace after attach probes the methods CLRPROF_INCLUDE (--include) \
                 selects (IL probes through ReJIT), and none was given"
            }
        }
    }
}

impl Settings {
    /// What of these settings an attached profiler cannot honour, if anything.
    pub fn attach_conflict(&self) -> Option<AttachConflict> {
        if self.counts || !self.args.is_empty() {
            Some(AttachConflict::NeedsEltHooks)
        } else if self.mode == Mode::Trace && self.include.is_empty() {
            Some(AttachConflict::TraceWithoutInclude)
        } else {
            None
        }
    }
}

type Env = BTreeMap<String, String>;

fn decode_env(data: &[u8]) -> Result<(Env, Option<String>), String> {
    if data.len() < 12 || &data[..8] != MAGIC {
        return Err("missing CLRPROF1 header (was it sent by clrprof?)".into());
    }
    let len = u32::from_le_bytes([data[8], data[9], data[10], data[11]]) as usize;
    if len > MAX_JSON || data.len() != 12 + len {
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
    Ok((env, v["control"].as_str().map(String::from)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{OnFull, Patterns};

    #[test]
    fn what_an_attached_profiler_cannot_honour() {
        let trace = |include: &[&str]| Settings {
            include: Patterns::of(include),
            ..Settings::for_mode(Mode::Trace)
        };
        assert_eq!(trace(&["A.*"]).attach_conflict(), None);
        assert_eq!(Settings::for_mode(Mode::Sample).attach_conflict(), None);
        assert_eq!(
            trace(&[]).attach_conflict(),
            Some(AttachConflict::TraceWithoutInclude)
        );
        for s in [
            Settings {
                counts: true,
                ..Settings::for_mode(Mode::Sample)
            },
            Settings {
                args: Patterns::of(["A.*"]),
                ..trace(&["A.*"])
            },
            Settings {
                counts: true,
                ..trace(&[])
            },
        ] {
            assert_eq!(s.attach_conflict(), Some(AttachConflict::NeedsEltHooks));
        }
        assert!(
            AttachConflict::NeedsEltHooks
                .message()
                .contains("CLRPROF_ARGS")
        );
        assert!(
            AttachConflict::TraceWithoutInclude
                .message()
                .contains("CLRPROF_INCLUDE")
        );
    }

    fn raw(json: &str) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&(json.len() as u32).to_le_bytes());
        out.extend_from_slice(json.as_bytes());
        out
    }

    #[test]
    fn round_trip_and_rejections() {
        let req = AttachRequest {
            settings: Settings {
                on_full: OnFull::Drop,
                rate_hz: 250,
                output: "/tmp/t.clrprof".into(),
                ..Settings::for_mode(Mode::Sample)
            },
            control: Some("/tmp/c.sock".into()),
        };
        let data = encode(&req);
        assert_eq!(decode(&data, 1).unwrap(), req);
        let e = decode(b"", 1).unwrap_err().0;
        assert!(
            e.starts_with("invalid attach client data: ") && e.contains("CLRPROF1"),
            "{e}"
        );
        let mut long = data.clone();
        long.push(0);
        assert!(decode(&long, 1).unwrap_err().0.contains("length"));
        let e = decode(&raw(r#"{"version":1,"env":{"PATH":"/bin"}}"#), 1).unwrap_err();
        assert!(e.0.contains("PATH"), "{e}");
        let e = decode(&raw(r#"{"version":2,"env":{}}"#), 1).unwrap_err();
        assert!(e.0.contains("version 2"), "{e}");
    }

    /// What an older `clrprof` sends (only some variables) still reads, with defaults for
    /// the rest; a bad value is refused with the variable's message.
    #[test]
    fn partial_and_bad_settings() {
        let r = decode(
            &raw(
                r#"{"version":1,"env":{"CLRPROF_MODE":"sample","CLRPROF_RATE_HZ":"250"},"control":"/tmp/c.sock"}"#,
            ),
            7,
        )
        .unwrap();
        assert_eq!(r.settings.mode, Mode::Sample);
        assert_eq!(r.settings.rate_hz, 250);
        assert_eq!(r.settings.output, PathBuf::from("clrprof-7.clrprof"));
        assert_eq!(r.control, Some(PathBuf::from("/tmp/c.sock")));
        let e = decode(&raw(r#"{"version":1,"env":{"CLRPROF_MODE":"bogus"}}"#), 1).unwrap_err();
        assert_eq!(
            e.0,
            "invalid CLRPROF_MODE=\"bogus\": expected events, sample or trace"
        );
    }
}
