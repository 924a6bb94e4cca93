//! Starting a recording: settings, log, clock, buffers, the trace file and its header
//! ([`prepare`], before the services), then the writer thread (the first service,
//! [`TraceWriter`]). Any failure is reported as one message and the profiler declines to
//! load.

use std::fs::File;
use std::path::PathBuf;
use std::time::Duration;

use clrprof_format::{ClockInfo, ClockKind, Event, Header, TraceMeta};
use corprof::ProfilerInfo;

use crate::config::Settings;
use crate::log;
use crate::os::clock;
use crate::output::buffers::{self, emit};
use crate::output::writer::Writer;

use super::notes::{self, LostNote};
use super::services::{End, Running, Started};

/// A recording about to start: its settings (with the trace's final path), the trace
/// file, and its header, which the writer writes first.
pub struct Prepared {
    pub settings: Settings,
    pub file: File,
    pub header: Header,
}

/// The log, the clock, the buffers and the trace file (created `O_EXCL`; the caller
/// removes it again if the start fails).
pub fn prepare(
    info: &ProfilerInfo,
    settings: Settings,
    attached: bool,
) -> Result<Prepared, String> {
    log::set_target(settings.log.clone());
    log::set_attached(attached);
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
    Ok(Prepared {
        settings,
        file,
        header,
    })
}

/// The writer thread and what the end of the recording says about the trace.
pub struct TraceWriter {
    writer: Writer,
    /// The room beside the trace for what it could not record (`notes`).
    lost_note: Option<LostNote>,
    output: PathBuf,
    run: Option<PathBuf>,
    args: bool,
    start_unix_ns: u64,
}

impl TraceWriter {
    /// Writes the header and starts the writer thread.
    pub fn start(info: &ProfilerInfo, trace: Prepared) -> Started {
        let Prepared {
            settings,
            file,
            header,
        } = trace;
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
        log!(
            "recording {} to {} (runtime {}, ICorProfilerInfo{})",
            settings.mode.as_str(),
            settings.output.display(),
            header.meta.runtime_version.as_deref().unwrap_or("unknown"),
            info.version()
        );
        Ok(Some(Box::new(TraceWriter {
            writer,
            lost_note,
            output: settings.output,
            run: settings.run,
            args: !settings.args.is_empty(),
            start_unix_ns: header.meta.start_unix_ns,
        })))
    }
}

impl Running for TraceWriter {
    /// Writes the end record, flushes everything and says what the trace holds and lost;
    /// after a failed start only stops the thread (the trace and its note go).
    fn stop(self: Box<Self>, end: &End) {
        let TraceWriter {
            writer,
            lost_note,
            output,
            run,
            args,
            start_unix_ns,
        } = *self;
        if !end.started {
            let _ = writer.stop();
            buffers::shutdown();
            drop(lost_note);
            return;
        }
        for line in crate::names::summary() {
            log::detail(&line);
        }
        emit(&Event::Shutdown {});
        let stats = writer.stop();
        buffers::shutdown();
        if let Some(note) = lost_note
            && note.finish(&stats)
        {
            log!(
                "what the trace could not record is in {}",
                notes::lost_note_path(&output).display()
            );
        }
        if let Some(run) = &run {
            notes::note_end(run, std::process::id(), &output, start_unix_ns, &stats);
        }
        super::summary::log_writer(end.why, &output, &stats, args);
    }
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
