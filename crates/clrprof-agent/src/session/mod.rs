//! The recording: a [`Session`] owns what a recording starts (the trace file and writer,
//! the event mask, trace mode's hooks, the sampler, the control socket, the heap timer)
//! and stops it again: at runtime shutdown, at detach, or when starting fails half way.
//!
//! - `start`: the log, clock, buffers, the trace file, its header and the writer thread;
//! - `mask`: the event-mask bits for the settings; `sdk`: processes that decline;
//! - `detach`: what the control socket asks (status, heap, detach) and the self-detach
//!   watch;
//! - `summary`: the end-of-recording lines in the agent's log;
//! - `notes`: what the trace cannot say about itself, said beside it (`<trace>.lost`) and
//!   to the `clrprof record` that started the run (its run directory).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clrprof_format::Event;
use corprof::ProfilerInfo;

use crate::config::{Mode, Settings};
use crate::control::ControlServer;
use crate::heap::HeapTimer;
use crate::names::Seen;
use crate::output::buffers::emit;
use crate::output::writer::Writer;
use crate::sampling::Sampler;

mod detach;
pub(crate) mod mask;
mod notes;
mod sdk;
mod start;
pub(crate) mod state;
mod summary;

pub(crate) use notes::{note_declined, sdk_log_path};
pub(crate) use sdk::sdk_process;
pub(crate) use start::command_line;

/// How a dormant agent starts its next session (`callbacks::restart`, which owns the
/// callbacks' state): handed in by the callbacks room, which this room does not import.
pub(crate) static RESTART: std::sync::OnceLock<Restart> = std::sync::OnceLock::new();

/// A dormant agent's next session from the settings of a `start` request.
pub(crate) type Restart = fn(&str) -> Result<Arc<Session>, String>;

/// The running recording: what detach and shutdown stop.
pub struct Session {
    info: ProfilerInfo,
    settings: Settings,
    attached: bool,
    writer: Mutex<Option<Writer>>,
    sampler: Mutex<Option<Sampler>>,
    control: Mutex<Option<ControlServer>>,
    /// The `--heap SECONDS` timer thread, if any.
    heap_timer: Mutex<Option<HeapTimer>>,
    detaching: std::sync::atomic::AtomicBool,
    /// The room beside the trace for what it could not record (`notes`).
    lost_note: Mutex<Option<notes::LostNote>>,
    start_unix_ns: u64,
    /// Trace mode after attach: the methods whose probes were requested, reverted when
    /// the recording stops.
    probed: Mutex<Vec<(corprof::ModuleId, u32)>>,
    /// What `install_probes` did, for the control socket's `status` (the CLI prints it).
    probes_report: Mutex<Option<clrprof_ipc::control::Probes>>,
}

impl Session {
    /// Everything Initialize and InitializeForAttach share: the file and writer, the
    /// event mask, hooks (startup trace mode), the heap timer and the control channel
    /// (attach). The sampler starts afterwards ([`Session::start_sampler`]), once the
    /// callbacks can name the functions it meets.
    pub fn start(
        info: &ProfilerInfo,
        settings: Settings,
        attached: bool,
        control: Option<PathBuf>,
    ) -> Result<Arc<Session>, String> {
        let start::Started {
            settings,
            writer,
            lost_note,
            start_unix_ns,
        } = start::start_with(info, settings, attached)?;
        // Any failure below removes the file again: a failed start leaves no stub trace.
        let created = start::RemoveOnError(Some(settings.output.clone()));
        let (mut low, mut high) = mask::for_settings(&settings);
        if attached {
            let (l, h) = (
                low & corprof_sys::COR_PRF_ALLOWABLE_AFTER_ATTACH,
                high & corprof_sys::COR_PRF_HIGH_ALLOWABLE_AFTER_ATTACH,
            );
            if (l, h) != (low, high) {
                log!(
                    "after attach the runtime allows only COR_PRF_ALLOWABLE_AFTER_ATTACH flags: leaving out {:#x} / high {:#x}",
                    low & !l,
                    high & !h
                );
            }
            (low, high) = (l, h);
            if settings.mode == Mode::Trace {
                // The probes block their own inlining (RequestReJITWithInliners); .NET 8
                // and 9 answer E_FAIL to COR_PRF_DISABLE_INLINING after attach.
                low &= !corprof_sys::COR_PRF_DISABLE_INLINING;
            }
        }
        if let Err(e) = info.set_event_mask2(low, high) {
            drop(writer);
            let hint = if e.0 == corprof_sys::CORPROF_E_CONCURRENT_GC_NOT_PROFILABLE {
                // A dormant agent's next session: its InitializeForAttach is long past.
                "; the runtime turns COR_PRF_MONITOR_GC on (for heap snapshots, --events alloc) \
                 only inside InitializeForAttach, where it turns background GC off, or when \
                 background GC is off already (DOTNET_gcConcurrent=0); the profiler in this \
                 process was attached without it, and stays loaded: restart the process to take \
                 heap snapshots of it"
            } else {
                ""
            };
            return Err(format!(
                "SetEventMask2({low:#x}, {high:#x}) failed: {e}{hint}"
            ));
        }
        crate::alloc::start(info, &settings);
        if settings.heap && attached {
            crate::heap::monitor_between_snapshots(info, &settings);
        }
        if settings.mode == Mode::Trace && !attached && settings.probes {
            // Probes, not ELT hooks: each module is probed as it loads.
            crate::tracing::probes::start_live(&crate::tracing::Filter::new(
                &settings.include,
                &settings.exclude,
            ));
        } else if (settings.mode == Mode::Trace && !attached)
            || (settings.mode == Mode::Sample && settings.counts)
        {
            let filter = crate::tracing::Filter::new(&settings.include, &settings.exclude);
            let args = (!settings.args.is_empty()).then(|| {
                (
                    crate::tracing::Filter::new(&settings.args, &Default::default()),
                    settings.arg_limits,
                )
            });
            if let Err(e) =
                crate::tracing::install(info, filter, settings.trace_probe, args, settings.counts)
            {
                drop(writer);
                return Err(e);
            }
        }
        let session = Arc::new(Session {
            info: info.clone(),
            settings: settings.clone(),
            attached,
            writer: Mutex::new(Some(writer)),
            sampler: Mutex::new(None),
            control: Mutex::new(None),
            heap_timer: Mutex::new(None),
            detaching: std::sync::atomic::AtomicBool::new(false),
            lost_note: Mutex::new(lost_note),
            start_unix_ns,
            probed: Mutex::new(Vec::new()),
            probes_report: Mutex::new(None),
        });
        if !settings.heap_at.is_empty() {
            match HeapTimer::start(
                info.clone(),
                settings.heap_at.clone(),
                (!attached).then(|| settings.clone()),
            ) {
                Ok(t) => {
                    if let Ok(mut g) = session.heap_timer.lock() {
                        *g = Some(t);
                    }
                }
                Err(e) => log!("cannot start the heap snapshot thread: {e}; no snapshots"),
            }
        }
        if let Some(path) = control {
            let watch = detach::watch(&settings);
            match ControlServer::start(path, session.clone(), watch) {
                Ok(c) => {
                    if let Ok(mut g) = session.control.lock() {
                        *g = Some(c);
                    }
                }
                Err(e) => {
                    session.stop("control channel failed");
                    return Err(e);
                }
            }
        }
        created.keep();
        if let Some(run) = &settings.run {
            notes::note_trace(run, std::process::id(), &settings.output);
        }
        Ok(session)
    }

    /// Starts sample mode's sampler thread (at startup right away, after attach once the
    /// catch-up is done); `seen` is the set of functions whose names are written.
    pub fn start_sampler(&self, seen: Arc<Seen>) {
        let interval = Duration::from_nanos(1_000_000_000 / u64::from(self.settings.rate_hz));
        let duration = self
            .settings
            .duration_s
            .and_then(|d| Duration::try_from_secs_f64(d).ok());
        match Sampler::start(
            self.info.clone(),
            interval,
            duration,
            self.settings.sampler,
            self.attached,
            seen,
            self.settings.max_depth,
            self.settings
                .events
                .contains(crate::config::EventGroup::Waits),
        ) {
            Ok(s) => {
                if let Ok(mut g) = self.sampler.lock() {
                    *g = Some(s);
                }
            }
            Err(e) => log!("cannot start the sampler thread: {e}; recording events only"),
        }
    }

    /// Stops the sampler, then the writer (which flushes everything); idempotent.
    pub fn stop(&self, why: &str) {
        let mut probed = self
            .probed
            .lock()
            .map(|mut p| std::mem::take(&mut *p))
            .unwrap_or_default();
        // And those of modules loaded after the install; none is probed from here on.
        probed.extend(crate::tracing::probes::end_live());
        if !probed.is_empty() {
            // The original code again; calls from now on are not recorded.
            match self.info.request_revert(&probed) {
                Ok(_) => log!("probes removed from {} methods", probed.len()),
                Err(e) => log!("RequestRevert failed: {e}; the probes stay, recording nothing"),
            }
        }
        let timer = self.heap_timer.lock().ok().and_then(|mut t| t.take());
        if let Some(t) = timer {
            t.stop();
        }
        let sampler = self.sampler.lock().ok().and_then(|mut s| s.take());
        if let Some(mut s) = sampler {
            s.stop();
            summary::log_sampler(&s.stats);
        }
        let writer = self.writer.lock().ok().and_then(|mut w| w.take());
        if let Some(w) = writer {
            crate::alloc::stop(&self.info);
            for line in crate::names::summary() {
                log!("{line}");
            }
            emit(&Event::Shutdown {});
            let stats = w.stop();
            crate::output::buffers::shutdown();
            let note = self.lost_note.lock().ok().and_then(|mut n| n.take());
            if let Some(note) = note
                && note.finish(&stats)
            {
                log!(
                    "what the trace could not record is in {}",
                    notes::lost_note_path(&self.settings.output).display()
                );
            }
            if let Some(run) = &self.settings.run {
                notes::note_end(
                    run,
                    std::process::id(),
                    &self.settings.output,
                    self.start_unix_ns,
                    &stats,
                );
            }
            summary::log_writer(
                why,
                &self.settings.output,
                &stats,
                !self.settings.args.is_empty(),
            );
        }
    }

    /// Trace mode after attach: probes in the methods `--include` selects, through ReJIT
    /// (`tracing::probes`); what was probed and what was not goes to the log.
    pub fn install_probes(&self) {
        // IL probes through ReJIT instead of ELT hooks. Without JIT-compilation monitoring
        // the runtime may never ask for the new bodies (dotnet/runtime#87418). Asked for
        // here, once the attach is complete: .NET 8 and 9 answer E_FAIL to ENABLE_REJIT
        // in InitializeForAttach. From here on the runtime refuses detach for good
        // (CORPROF_E_IRREVERSIBLE_INSTRUMENTATION_PRESENT).
        // Module loads: a module loaded while the probes are live gets them too.
        let rejit = corprof_sys::COR_PRF_ENABLE_REJIT
            | corprof_sys::COR_PRF_MONITOR_JIT_COMPILATION
            | corprof_sys::COR_PRF_MONITOR_MODULE_LOADS;
        let mask = self
            .info
            .get_event_mask2()
            .and_then(|(low, high)| self.info.set_event_mask2(low | rejit, high));
        if let Err(e) = mask {
            log!(
                "SetEventMask2 with COR_PRF_ENABLE_REJIT failed: {e}; probes installed in 0 methods"
            );
            self.report_probes(
                0,
                &[],
                Some(format!("SetEventMask2(COR_PRF_ENABLE_REJIT): {e}")),
            );
            return;
        }
        let filter = crate::tracing::Filter::new(&self.settings.include, &self.settings.exclude);
        let mut next = 1;
        let started = std::time::Instant::now();
        let done = crate::tracing::probes::install(&self.info, &filter, &mut next);
        log!(
            "probes installed in {} methods ({} ms)",
            done.probed,
            started.elapsed().as_millis()
        );
        log!("probes: install took {}", done.phases);
        for (name, why) in &done.refused {
            log!("not probed: {name}: {why}");
        }
        self.report_probes(done.probed, &done.refused, None);
        if let Ok(mut p) = self.probed.lock() {
            *p = done.requested;
        }
    }

    fn report_probes(&self, installed: usize, refused: &[(String, String)], error: Option<String>) {
        if let Ok(mut r) = self.probes_report.lock() {
            *r = Some(clrprof_ipc::control::Probes {
                installed: installed as u64,
                not_probed: refused.to_vec(),
                error,
            });
        }
    }

    /// A dormant agent's restart: the control thread's handle moves to the next session
    /// (the thread itself runs on, serving the new one).
    pub fn take_control(&self) -> Option<ControlServer> {
        self.control.lock().ok().and_then(|mut c| c.take())
    }

    /// Gives the control thread's handle to this session.
    pub fn put_control(&self, control: Option<ControlServer>) {
        if let Ok(mut c) = self.control.lock() {
            *c = control;
        }
    }

    /// The settings the recording runs with (the trace's final path included).
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Runtime shutdown: stops the recording, then the control thread.
    pub fn shutdown(&self, why: &str) {
        self.stop(why);
        if let Ok(mut c) = self.control.lock()
            && let Some(mut c) = c.take()
        {
            c.stop();
        }
    }

    /// ProfilerDetachSucceeded: the runtime unloads the library right after, so make sure
    /// the control thread (which asked for the detach and then returned) has finished:
    /// after this join no code of ours runs on any thread.
    /// Stops the control thread; the socket's path, if there was one.
    pub fn stop_control(&self) -> Option<PathBuf> {
        let control = self.control.lock().ok().and_then(|mut c| c.take());
        control.map(|mut c| {
            c.stop();
            c.path().to_path_buf()
        })
    }
}
