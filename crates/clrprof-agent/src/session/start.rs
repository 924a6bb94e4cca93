//! Starting a recording: settings, log, clock, buffers, the trace file and its header,
//! and the writer thread. Any failure here is reported as one message and the profiler
//! declines to load.

use std::time::Duration;

use clrprof_format::{ClockInfo, ClockKind, Header, TraceMeta};
use corprof::ProfilerInfo;

use crate::config::Settings;
use crate::log;
use crate::os::clock;
use crate::output::buffers;
use crate::output::writer::Writer;

use super::notes::LostNote;

/// A started recording: its settings (with the trace's final path), the writer, the
/// room reserved for a note of what the trace could not record, and its start time.
pub struct Started {
    pub settings: Settings,
    pub writer: Writer,
    pub lost_note: Option<LostNote>,
    pub start_unix_ns: u64,
}

pub fn start_with(
    info: &ProfilerInfo,
    settings: Settings,
    attached: bool,
) -> Result<Started, String> {
    log::set_target(settings.log.clone());
    let tsc = clock::init();
    if !buffers::init(
        settings.buffer_bytes,
        settings.on_full == crate::config::OnFull::Drop,
        crate::output::writer::wake,
    ) {
        return Err("cannot create the thread-buffer key (pthread_key_create failed)".into());
    }
    let mut settings = settings;
    let (file, path) = crate::output::outfile::create_new(
        &settings.output,
        settings.siblings,
        std::process::id(),
    )?;
    settings.output = path;
    let created = RemoveOnError(Some(settings.output.clone()));
    let runtime = info.get_runtime_information().ok();
    let header = Header {
        major: clrprof_format::FORMAT_MAJOR,
        minor: clrprof_format::FORMAT_MINOR,
        meta: TraceMeta {
            pid: std::process::id(),
            command_line: command_line(),
            agent_version: env!("CARGO_PKG_VERSION").into(),
            runtime_version: runtime.as_ref().map(|r| {
                format!(
                    "{}.{}.{}.{} ({})",
                    r.major, r.minor, r.build, r.qfe, r.version
                )
            }),
            start_unix_ns: clock::unix_ns(),
            clock: ClockInfo {
                kind: if tsc {
                    ClockKind::Tsc
                } else {
                    ClockKind::MonotonicNs
                },
                ticks_per_second: None,
            },
            attached,
            settings: settings.clone(),
            event_kinds: clrprof_format::event_kind_table(),
            end_record: true,
        },
    };
    let writer = Writer::start(
        file,
        &header,
        flush_period(&settings),
        settings.compress,
        // Trace mode writes ring units as they are: see output/writer.rs.
        settings.mode == crate::config::Mode::Trace,
        settings.max_size,
    )
    .map_err(|e| format!("cannot write trace file {}: {e}", settings.output.display()))?;
    // While the disk has room: the room for saying what a full disk cost at the end.
    let lost_note = LostNote::reserve(
        &settings.output,
        std::process::id(),
        header.meta.start_unix_ns,
    );
    created.keep();
    log!(
        "recording {} to {} (runtime {}, ICorProfilerInfo{})",
        settings.mode.as_str(),
        settings.output.display(),
        header.meta.runtime_version.as_deref().unwrap_or("unknown"),
        info.version()
    );
    Ok(Started {
        settings,
        writer,
        lost_note,
        start_unix_ns: header.meta.start_unix_ns,
    })
}

pub fn command_line() -> Vec<String> {
    std::fs::read("/proc/self/cmdline")
        .map(|b| {
            b.split(|c| *c == 0)
                .filter(|s| !s.is_empty())
                .map(|s| String::from_utf8_lossy(s).into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Removes the trace file it names when dropped, unless kept: a recording that fails to
/// start leaves no stub file behind.
pub struct RemoveOnError(pub Option<std::path::PathBuf>);

impl RemoveOnError {
    pub fn keep(mut self) {
        self.0 = None;
    }
}

impl Drop for RemoveOnError {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Writer flush period from settings.
pub fn flush_period(s: &Settings) -> Duration {
    Duration::from_millis(s.flush_ms)
}
