//! Attach: the settings arrive as the client data of the diagnostics AttachProfiler
//! command (layout: `clrprof_format::attach`). They are the same `CLRPROF_*` settings as
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
    let req = clrprof_format::decode_attach(data)
        .map_err(|m| ConfigError(format!("invalid attach client data: {m}")))?;
    let settings = Settings::from_lookup(|k| req.env.get(k).cloned(), pid)?;
    Ok(AttachRequest {
        settings,
        control: req.control.map(PathBuf::from),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Mode;

    fn data(env: &[(&str, &str)], control: Option<&str>) -> Vec<u8> {
        clrprof_format::encode_attach(&clrprof_format::AttachRequest {
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            control: control.map(String::from),
        })
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
