//! The recording: a [`Session`] starts what a recording runs from one list of services,
//! [`SERVICES`] (`services`: one start/stop contract, started in order, stopped in
//! reverse; a failed start stops what started and names the service), and stops it again:
//! at runtime shutdown, at detach, or when starting fails half way.
//!
//! - `start`: the log, clock, buffers, the trace file and its header; the writer thread;
//! - `mask`: the event-mask bits for the settings; `sdk`: processes that decline;
//! - `detach`: what the control socket asks (status, heap, detach) and the self-detach
//!   watch;
//! - `summary`: the end-of-recording lines in the agent's log;
//! - `notes`: what the trace cannot say about itself, said beside it (`<trace>.lost`) and
//!   to the `clrprof record` that started the run (its run directory).

use std::cell::Cell;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use corprof::ProfilerInfo;

use crate::config::{Mode, Settings};
use crate::control::ControlServer;
use crate::heap::HeapTimer;
use crate::names::Seen;
use crate::sampling::Sampler;
use crate::stackwalk::ilmap::IlMaps;

mod detach;
pub(crate) mod mask;
mod notes;
mod sdk;
mod services;
mod start;
pub(crate) mod state;
mod summary;

pub(crate) use notes::{note_declined, sdk_log_path};
pub(crate) use sdk::sdk_process;
pub(crate) use services::Entry as HandedOver;
pub(crate) use start::command_line;

use services::{End, Phase, Running, Service, Services, Started, Until};

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
    /// What it runs, in the order [`SERVICES`] started them.
    services: Services,
    detaching: std::sync::atomic::AtomicBool,
    /// The IL maps of the methods on the stacks the runtime's own threads record
    /// (exception stacks, allocation samples), shared by the callbacks and the thread that
    /// maps `GCAllocationTick` samples' positions (`alloc::later`).
    ilmaps: Arc<Mutex<IlMaps>>,
    /// What `install_probes` did, for the control socket's `status` (the CLI prints it).
    probes_report: Mutex<Option<clrprof_ipc::control::Probes>>,
}

/// What the services start from.
struct Ctx {
    session: Arc<Session>,
    /// The trace file and its header, until the writer takes them.
    trace: Cell<Option<start::Prepared>>,
    /// The control socket's path (attach).
    control: Option<PathBuf>,
    /// The functions whose names are written ([`Phase::Ready`]).
    seen: Option<Arc<Seen>>,
}

/// What a session runs, in the order it starts them (and stops them in reverse).
const SERVICES: &[Service<Ctx>] = &[
    Service {
        name: "trace writer",
        phase: Phase::Start,
        until: Until::Recording,
        start: trace_writer,
    },
    Service {
        name: "event mask",
        phase: Phase::Start,
        until: Until::Recording,
        start: event_mask,
    },
    Service {
        name: "allocation feed",
        phase: Phase::Start,
        until: Until::Recording,
        start: allocation_feed,
    },
    Service {
        name: "call hooks",
        phase: Phase::Start,
        until: Until::Recording,
        start: call_hooks,
    },
    Service {
        name: "heap timer",
        phase: Phase::Start,
        until: Until::Recording,
        start: heap_timer,
    },
    Service {
        name: "control socket",
        phase: Phase::Start,
        until: Until::Session,
        start: control_socket,
    },
    Service {
        name: "sampler",
        phase: Phase::Ready,
        until: Until::Recording,
        start: sampler,
    },
    Service {
        name: "probes",
        phase: Phase::Ready,
        until: Until::Recording,
        start: probes_after_attach,
    },
];

/// The header, then the writer thread (`start`).
fn trace_writer(c: &Ctx) -> Started {
    let trace = c.trace.take().ok_or("no trace file to write")?;
    start::TraceWriter::start(&c.session.info, trace)
}

/// The event mask for the settings, less what the runtime refuses after attach. Nothing
/// to stop: a detached profiler gets no callback, a dormant one clears its mask itself.
fn event_mask(c: &Ctx) -> Started {
    let (info, settings) = (&c.session.info, &c.session.settings);
    let (mut low, mut high) = mask::for_settings(settings);
    if c.session.attached {
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
    if settings.heap && c.session.attached {
        crate::heap::monitor_between_snapshots(info, settings);
    }
    Ok(None)
}

/// `--alloc` and `--waits`' EventPipe sessions, and the thread that maps the positions of
/// `GCAllocationTick` samples (.NET 8 and 9). Their failures are recorded in the trace
/// and the recording goes on.
fn allocation_feed(c: &Ctx) -> Started {
    let info = &c.session.info;
    crate::alloc::start(info, &c.session.settings);
    crate::alloc::start_mapper(info, &c.session.ilmaps);
    Ok(Some(Box::new(AllocationFeed(info.clone()))))
}

struct AllocationFeed(ProfilerInfo);

impl Running for AllocationFeed {
    /// Stops the EventPipe sessions and the mapping thread, records their figures (before
    /// the writer stops).
    fn stop(self: Box<Self>, _: &End) {
        crate::alloc::stop(&self.0);
    }
}

/// Trace mode at startup (and `--counts` in sample mode): the ELT hooks, which the
/// runtime never lets go, or `--probes`' IL probes, put on each module as it loads.
fn call_hooks(c: &Ctx) -> Started {
    let (info, settings) = (&c.session.info, &c.session.settings);
    if c.session.attached {
        return Ok(None);
    }
    let filter = || crate::tracing::Filter::new(&settings.include, &settings.exclude);
    if settings.mode == Mode::Trace && settings.probes {
        crate::tracing::probes::start_live(&filter());
        return Ok(Some(Box::new(Probes {
            info: info.clone(),
            requested: Vec::new(),
        })));
    }
    if settings.mode == Mode::Trace || (settings.mode == Mode::Sample && settings.counts) {
        let args = (!settings.args.is_empty()).then(|| {
            (
                crate::tracing::Filter::new(&settings.args, &Default::default()),
                settings.arg_limits,
            )
        });
        crate::tracing::install(info, filter(), settings.trace_probe, args, settings.counts)?;
    }
    Ok(None)
}

/// IL probes: those requested at once (after attach), and those of modules loaded while
/// they are live.
struct Probes {
    info: ProfilerInfo,
    requested: Vec<(corprof::ModuleId, u32)>,
}

impl Running for Probes {
    /// The original code again; calls from now on are not recorded.
    fn stop(self: Box<Self>, _: &End) {
        let Probes {
            info,
            requested: mut probed,
        } = *self;
        // And those of modules loaded after the install; none is probed from here on.
        probed.extend(crate::tracing::probes::end_live());
        if !probed.is_empty() {
            match info.request_revert(&probed) {
                Ok(_) => log!("probes removed from {} methods", probed.len()),
                Err(e) => log!("RequestRevert failed: {e}; the probes stay, recording nothing"),
            }
        }
    }
}

/// `--heap SECONDS`: the thread that takes the timed snapshots.
fn heap_timer(c: &Ctx) -> Started {
    let s = &c.session;
    if s.settings.heap_at.is_empty() {
        return Ok(None);
    }
    match HeapTimer::start(
        s.info.clone(),
        s.settings.heap_at.clone(),
        (!s.attached).then(|| s.settings.clone()),
    ) {
        Ok(t) => Ok(Some(Box::new(Timer(t)))),
        Err(e) => {
            log!("cannot start the heap snapshot thread: {e}; no snapshots");
            Ok(None)
        }
    }
}

struct Timer(HeapTimer);

impl Running for Timer {
    fn stop(self: Box<Self>, _: &End) {
        self.0.stop();
    }
}

/// After attach: the control socket, served by a thread of its own that runs until the
/// session ends (it asks for the detach, and answers after the recording stopped).
fn control_socket(c: &Ctx) -> Started {
    let Some(path) = c.control.clone() else {
        return Ok(None);
    };
    let watch = detach::watch(&c.session.settings);
    let server = ControlServer::start(path, c.session.clone(), watch)?;
    Ok(Some(Box::new(Control(server))))
}

struct Control(ControlServer);

impl Running for Control {
    /// Stops serving (never called on the control thread: see `Session::shutdown`).
    fn stop(self: Box<Self>, _: &End) {
        let mut c = self.0;
        c.stop();
    }
}

/// Sample mode's sampler thread; `seen` is the set of functions whose names are written.
/// A sampler that cannot start leaves a recording of events.
fn sampler(c: &Ctx) -> Started {
    let s = &c.session;
    let Some(seen) = c.seen.clone() else {
        return Ok(None);
    };
    if s.settings.mode != Mode::Sample {
        return Ok(None);
    }
    let interval = Duration::from_nanos(1_000_000_000 / u64::from(s.settings.rate_hz));
    let duration = s
        .settings
        .duration_s
        .and_then(|d| Duration::try_from_secs_f64(d).ok());
    match Sampler::start(
        s.info.clone(),
        interval,
        duration,
        s.settings.sampler,
        s.attached,
        seen,
        s.settings.max_depth,
        s.settings.events.contains(crate::config::EventGroup::Waits),
    ) {
        Ok(sampler) => Ok(Some(Box::new(SamplerThread(sampler)))),
        Err(e) => {
            log!("cannot start the sampler thread: {e}; recording events only");
            Ok(None)
        }
    }
}

struct SamplerThread(Sampler);

impl Running for SamplerThread {
    fn stop(self: Box<Self>, _: &End) {
        let mut s = self.0;
        s.stop();
        summary::log_sampler(&s.stats);
    }
}

/// Trace mode after attach: probes in the methods `--include` selects.
fn probes_after_attach(c: &Ctx) -> Started {
    let s = &c.session;
    if s.settings.mode != Mode::Trace || !s.attached {
        return Ok(None);
    }
    Ok(s.install_probes().map(|requested| {
        Box::new(Probes {
            info: s.info.clone(),
            requested,
        }) as Box<dyn Running>
    }))
}

impl Session {
    /// Everything Initialize and InitializeForAttach share: the file and writer, the
    /// event mask, hooks (startup trace mode), the heap timer and the control channel
    /// (attach): the services of [`Phase::Start`]. The sampler, or the probes after
    /// attach, start afterwards ([`Session::start_ready`]), once the callbacks can name
    /// the functions they meet.
    pub fn start(
        info: &ProfilerInfo,
        settings: Settings,
        attached: bool,
        control: Option<PathBuf>,
    ) -> Result<Arc<Session>, String> {
        let trace = start::prepare(info, settings, attached)?;
        // Any failure below removes the file again: a failed start leaves no stub trace.
        let created = start::RemoveOnError(Some(trace.settings.output.clone()));
        let settings = trace.settings.clone();
        let session = Arc::new(Session {
            info: info.clone(),
            settings: settings.clone(),
            attached,
            services: Services::default(),
            detaching: std::sync::atomic::AtomicBool::new(false),
            ilmaps: Arc::new(Mutex::new(IlMaps::new(
                std::env::var_os("CLRPROF_SAMPLER_NO_POSITIONS").is_none(),
            ))),
            probes_report: Mutex::new(None),
        });
        let ctx = Ctx {
            session: session.clone(),
            trace: Cell::new(Some(trace)),
            control,
            seen: None,
        };
        session.services.start(SERVICES, Phase::Start, &ctx)?;
        drop(ctx);
        created.keep();
        if let Some(run) = &settings.run {
            notes::note_trace(run, std::process::id(), &settings.output);
        }
        Ok(session)
    }

    /// The services of [`Phase::Ready`]: sample mode's sampler (at startup right away,
    /// after attach once the catch-up is done), trace mode's probes after attach; `seen`
    /// is the set of functions whose names are written.
    pub fn start_ready(self: &Arc<Self>, seen: Arc<Seen>) {
        let ctx = Ctx {
            session: self.clone(),
            trace: Cell::new(None),
            control: None,
            seen: Some(seen),
        };
        if let Err(e) = self.services.start(SERVICES, Phase::Ready, &ctx) {
            log!("{e}; the recording stopped");
        }
    }

    /// The IL maps the callbacks share with the allocation feed's mapping thread.
    pub fn ilmaps(&self) -> &Arc<Mutex<IlMaps>> {
        &self.ilmaps
    }

    /// Stops the services of the recording, in reverse order of their start (the sampler,
    /// the heap timer, the probes, the allocation feed, then the writer, which flushes
    /// everything); idempotent. The control socket runs on.
    pub fn stop(&self, why: &str) {
        self.services
            .stop(Until::Recording, &End { why, started: true });
    }

    /// Trace mode after attach: probes in the methods `--include` selects, through ReJIT
    /// (`tracing::probes`); what was probed and what was not goes to the log. The
    /// methods whose probes were requested, for the revert; `None` when none could be.
    fn install_probes(&self) -> Option<Vec<(corprof::ModuleId, u32)>> {
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
            return None;
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
        Some(done.requested)
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

    /// A dormant agent's restart: the control socket moves to the next session (its
    /// thread runs on, serving the new one).
    pub(crate) fn take_control(&self) -> Option<HandedOver> {
        self.services.hand_over("control socket")
    }

    /// Gives the control socket to this session.
    pub(crate) fn put_control(&self, control: Option<HandedOver>) {
        if let Some(c) = control {
            self.services.adopt(c);
        }
    }

    /// The settings the recording runs with (the trace's final path included).
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The control socket's path, while it is served.
    fn control_path(&self) -> Option<PathBuf> {
        self.services.with(|c: &Control| c.0.path().to_path_buf())
    }

    /// Runtime shutdown: stops the recording, then the control thread.
    pub fn shutdown(&self, why: &str) {
        self.stop(why);
        self.services
            .stop(Until::Session, &End { why, started: true });
    }

    /// ProfilerDetachSucceeded: the runtime unloads the library right after, so make sure
    /// the control thread (which asked for the detach and then returned) has finished:
    /// after this join no code of ours runs on any thread.
    /// Stops the control thread; the socket's path, if there was one.
    pub fn stop_control(&self) -> Option<PathBuf> {
        let path = self.control_path();
        self.services.stop(
            Until::Session,
            &End {
                why: "detached",
                started: true,
            },
        );
        path
    }
}
