//! Attach: the settings arrive as the client data of the diagnostics AttachProfiler
//! command (layout: `clrprof_settings::attach`). They are the same `CLRPROF_*` settings as
//! the startup variables, parsed by the same function.

use std::path::PathBuf;

use crate::config::{ConfigError, Settings};

#[derive(Debug)]
pub struct AttachRequest {
    pub settings: Settings,
    pub control: Option<PathBuf>,
}

/// Parses and validates the client data.
pub fn parse(data: &[u8], pid: u32) -> Result<AttachRequest, ConfigError> {
    let req = clrprof_settings::attach::decode(data, pid)?;
    Ok(AttachRequest {
        settings: req.settings,
        control: req.control,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Mode;

    /// Client data as an older `clrprof` sends it: only some variables.
    fn data(env: &[(&str, &str)], control: Option<&str>) -> Vec<u8> {
        let env: std::collections::BTreeMap<_, _> = env.iter().copied().collect();
        let json = serde_json::json!({ "version": 1, "env": env, "control": control }).to_string();
        let mut out = clrprof_settings::attach::MAGIC.to_vec();
        out.extend_from_slice(&(json.len() as u32).to_le_bytes());
        out.extend_from_slice(json.as_bytes());
        out
    }

    #[test]
    fn settings_come_from_the_client_data() {
        let r = parse(
            &data(
                &[("CLRPROF_MODE", "sample"), ("CLRPROF_RATE_HZ", "250")],
                Some("/tmp/c.sock"),
            ),
            7,
        )
        .unwrap();
        assert_eq!(r.settings.mode, Mode::Sample);
        assert_eq!(r.settings.rate_hz, 250);
        assert_eq!(r.control, Some(PathBuf::from("/tmp/c.sock")));
    }

    #[test]
    fn bad_data_and_bad_settings_are_refused() {
        assert!(parse(b"", 1).unwrap_err().0.contains("CLRPROF1"));
        assert!(
            parse(&data(&[("CLRPROF_MODE", "bogus")], None), 1)
                .unwrap_err()
                .0
                .contains("CLRPROF_MODE")
        );
    }
}
