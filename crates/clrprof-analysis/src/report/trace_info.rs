//! The report's heading: which process, how it was recorded, for how long.

use serde::Serialize;

use clrprof_format::Header;

#[derive(Debug, Serialize)]
pub struct TraceInfo {
    pub pid: u32,
    pub command_line: Vec<String>,
    pub mode: clrprof_settings::Mode,
    pub runtime_version: Option<String>,
    pub agent_version: String,
    pub format_version: String,
    pub attached: bool,
    pub duration_ns: u64,
    pub settings: clrprof_settings::Settings,
}

impl TraceInfo {
    pub fn new(header: &Header, duration_ns: u64) -> TraceInfo {
        let meta = &header.meta;
        TraceInfo {
            pid: meta.pid,
            command_line: meta.command_line.clone(),
            mode: meta.settings.mode,
            runtime_version: meta.runtime_version.clone(),
            agent_version: meta.agent_version.clone(),
            format_version: format!("{}.{}", header.major, header.minor),
            attached: meta.attached,
            duration_ns,
            settings: meta.settings.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clrprof_format::TraceMeta;

    #[test]
    fn from_the_header() {
        let header = Header {
            major: 1,
            minor: 2,
            meta: TraceMeta {
                pid: 42,
                command_line: vec!["dotnet".into(), "app.dll".into()],
                settings: clrprof_settings::Settings::for_mode(clrprof_settings::Mode::Sample),
                attached: true,
                ..Default::default()
            },
        };
        let t = TraceInfo::new(&header, 99);
        assert_eq!(
            (
                t.pid,
                t.mode.as_str(),
                t.format_version.as_str(),
                t.attached
            ),
            (42, "sample", "1.2", true)
        );
        assert_eq!(
            (t.command_line.len(), t.runtime_version, t.duration_ns),
            (2, None, 99)
        );
    }
}
