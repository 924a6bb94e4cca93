//! The profiler object: the runtime's callbacks, each turned into one trace event.
//! Callbacks run concurrently on the runtime's threads; they resolve what must be read
//! while the id is valid (names, sizes) and hand one record to the calling thread's
//! buffer. No callback does I/O or takes a process-wide lock on its event path.
//!
//! The recording itself (file, writer, sampler, control socket, detach) belongs to the
//! [`Session`] the profiler starts in Initialize or InitializeForAttach; `events` holds
//! the callbacks, `catch_up` the load records and what an attach catches up on.

mod catch_up;
mod events;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use clrprof_format::{Event, ExceptionPhase, SuspendPhase};
use corprof::{ClassId, FunctionId, HResult, ProfilerInfo};

use crate::config::{Mode, Settings};
use crate::names::{self, Seen};
use crate::output::buffers::emit;
use crate::output::session_cell::SessionCell;
use crate::session::Session;
use crate::stackwalk::ilmap::IlMaps;

/// State that exists once Initialize (or InitializeForAttach) succeeded.
pub struct Active {
    pub info: ProfilerInfo,
    pub settings: Settings,
    pub session: Arc<Session>,
    functions_named: Arc<Seen>,
    classes_named: Seen,
    /// Modules and assemblies already written (attach: enumeration and load callbacks
    /// both report them).
    modules_seen: Seen,
    assemblies_seen: Seen,
    attached: bool,
    /// Whether the JIT callbacks record their events (`session::mask::jit_events`); the
    /// signal sampler turns them on for dynamic methods' code alone.
    jit_events: bool,
    /// The IL maps of the methods on the stacks the runtime's own threads record (exception
    /// stacks, allocation samples), for their positions: taken with `try_lock` only (a
    /// throw or a walked allocation stack that finds it busy records no positions). Shared
    /// with the thread that maps `GCAllocationTick` samples' positions (`alloc::later`).
    thread_ilmaps: Arc<std::sync::Mutex<IlMaps>>,
}

impl Active {
    fn new(info: ProfilerInfo, session: Arc<Session>, attached: bool) -> Active {
        let thread_ilmaps = session.ilmaps().clone();
        let jit_events = crate::session::mask::jit_events(session.settings());
        Active {
            info,
            settings: session.settings().clone(),
            session,
            functions_named: Arc::new(Seen::new()),
            classes_named: Seen::new(),
            modules_seen: Seen::new(),
            assemblies_seen: Seen::new(),
            attached,
            jit_events,
            thread_ilmaps,
        }
    }
}

/// How long a dormant agent's restart waits for the runtime's callbacks to leave the
/// profiler (they are few: the dormant agent's event mask is empty).
const QUIESCE_LIMIT: Duration = Duration::from_secs(2);

/// A `start` request to a dormant agent, on its control thread: the runtime keeps the
/// profiler after ReJIT and allows no second one, so the next session starts in place,
/// with the settings an attach would have carried (`settings`: the client data's JSON).
/// What the runtime refuses a profiler after attach is refused the same way, with the
/// same messages; a start that fails leaves the agent dormant, as it was.
fn restart(settings: &str) -> Result<Arc<Session>, String> {
    let mut data = clrprof_settings::attach::MAGIC.to_vec();
    data.extend_from_slice(&(settings.len() as u32).to_le_bytes());
    data.extend_from_slice(settings.as_bytes());
    let req = crate::control::attach::parse(&data, std::process::id()).map_err(|e| e.0)?;
    if let Some(conflict) = req.settings.attach_conflict() {
        return Err(conflict.message().into());
    }
    crate::session::state::wake().map_err(|state| {
        format!("the profiler in this process is {state}, not dormant: one recording at a time")
    })?;
    // No callback inside and none let in until the new session's state is in place: the
    // last session's state can be freed (rule A11).
    let quiet = match corprof::quiesce::quiesce(QUIESCE_LIMIT) {
        Ok(q) => q,
        Err(corprof::quiesce::Refused::StillInside(inside)) => {
            crate::session::state::dormant();
            return Err(format!(
                "{inside} runtime callbacks were still inside the dormant profiler after {} s; \
                 nothing was started, try again",
                QUIESCE_LIMIT.as_secs()
            ));
        }
        Err(corprof::quiesce::Refused::NotArmed) => {
            // Dormant without having used ReJIT (the runtime refused a detach for another
            // reason): its callbacks were never counted, so none can be said to be out.
            crate::session::state::dormant();
            return Err(
                "the profiler in this process stayed loaded without having counted its callbacks \
                 (it never used ReJIT), so a new recording cannot start in it safely; restart the \
                 process to profile it again"
                    .into(),
            );
        }
    };
    let Some(old) = ACTIVE.take() else {
        crate::session::state::dormant();
        return Err("the dormant profiler has no session to start from".into());
    };
    let info = old.info.clone();
    let control = old.session.take_control();
    crate::session::state::renew();
    let session = match Session::start(&info, req.settings, true, None) {
        Ok(s) => s,
        Err(e) => {
            // What the failed start made goes first (that clears the cell), then the last
            // session, inert, is put back: shutdown finds the control thread through it.
            crate::session::state::back_to_dormant();
            // A start that failed after its event mask was set leaves no callback asked.
            let _ = info.set_event_mask2(0, 0);
            old.session.put_control(control);
            ACTIVE.put(old);
            log!("{e}; the profiler stays dormant");
            return Err(e);
        }
    };
    session.put_control(control);
    drop(old);
    let _ = ACTIVE.set(Active::new(info, session.clone(), true));
    crate::session::state::started();
    drop(quiet);
    // What ProfilerAttachComplete does after an attach.
    if let Some(a) = ACTIVE.get() {
        let p = Profiler::default();
        p.catch_up(a);
        a.session.start_ready(a.functions_named.clone());
    }
    log!("a new session started in the dormant profiler");
    Ok(session)
}

/// Why a recording did not start: `busy` when another session owns the process (the
/// answer is then CORPROF_E_PROFILER_ALREADY_ACTIVE), else the start failed.
pub struct Refused {
    pub busy: bool,
    pub reason: String,
}

impl Refused {
    /// The HRESULT for the runtime: `otherwise` unless another session owns the process.
    fn hresult(&self, otherwise: i32) -> HResult {
        HResult(if self.busy {
            corprof_sys::CORPROF_E_PROFILER_ALREADY_ACTIVE
        } else {
            otherwise
        })
    }
}

/// The session's state the callbacks read (rule A11): set by Initialize or
/// InitializeForAttach, freed at ProfilerDetachSucceeded; a dormant agent's next session
/// replaces it ([`restart`]). Process-wide, not the profiler object's: the control thread
/// of a dormant agent starts the next session, and the runtime makes no new object then.
static ACTIVE: SessionCell<Active> = SessionCell::new();

/// Between sessions (ProfilerDetachSucceeded, before `session::state::end` lets the next
/// one start): the last session's state goes.
fn release_at_detach() {
    ACTIVE.clear();
}

#[derive(Default)]
pub struct Profiler {
    /// A `clrprof coverage` run (no recording: `active` stays empty).
    coverage: OnceLock<Arc<crate::coverage::Coverage>>,
    /// A coverage attach's `--duration`, for ProfilerAttachComplete.
    attach_duration: std::sync::Mutex<Option<f64>>,
}

impl Profiler {
    fn active(&self) -> Option<&'static Active> {
        ACTIVE.get()
    }

    /// Writes a function's names the first time the function is seen.
    fn name_function(&self, a: &Active, function: FunctionId) {
        if a.functions_named.first(function.0) {
            names::emit_function_info(&a.info, function);
        }
    }

    fn name_class(&self, a: &Active, class: ClassId) -> Option<String> {
        if !a.classes_named.first(class.0) {
            return None;
        }
        Some(names::class_name(&a.info, class))
    }

    fn coverage(&self) -> Option<&Arc<crate::coverage::Coverage>> {
        self.coverage.get()
    }

    /// Initialize of a `clrprof coverage` run: the SDK's own processes decline, any other
    /// process gets its counters and map in the run directory.
    fn start_coverage(
        &self,
        info: ProfilerInfo,
        settings: clrprof_settings::coverage::CoverageSettings,
        attach: Option<Option<f64>>,
    ) -> corprof::Result<()> {
        let cancel = HResult(if attach.is_some() {
            corprof_sys::E_FAIL
        } else {
            corprof_sys::CORPROF_E_PROFILER_CANCEL_ACTIVATION
        });
        let argv = crate::session::command_line();
        if attach.is_none() && crate::session::sdk_process(&argv).is_some() {
            return Err(cancel);
        }
        // One session at a time in this process (`session::state`): coverage, once
        // started, owns the library until the process exits (its bodies keep their
        // counters), so the state is never given back after a start.
        if let Err(state) = crate::session::state::begin() {
            log!(
                "the profiler in this process is {state} (CORPROF_E_PROFILER_ALREADY_ACTIVE); coverage refused"
            );
            return Err(cancel);
        }
        *self
            .attach_duration
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = attach.flatten();
        match crate::coverage::Coverage::start(info, settings, &argv, attach.is_some()) {
            Ok(c) => {
                let _ = self.coverage.set(c);
                crate::session::state::started();
                Ok(())
            }
            Err(e) => {
                crate::session::state::end();
                log!("{e}; coverage is not measured in this process");
                Err(cancel)
            }
        }
    }

    fn stop(&self, why: &str) {
        if let Some(a) = self.active() {
            a.session.shutdown(why);
        }
    }

    /// Initialize and InitializeForAttach: starts the session, then (startup sample mode)
    /// the sampler, once the callbacks can name the functions it meets.
    fn start_recording(
        &self,
        info: ProfilerInfo,
        settings: Settings,
        attached: bool,
        control: Option<std::path::PathBuf>,
    ) -> std::result::Result<(), Refused> {
        // One session at a time in this process: the library is loaded once and every
        // attach after the first names the same file, so a second profiler object (a
        // refused attach the runtime loaded anyway, two attaches at once) must find the
        // statics owned and leave them alone.
        if let Err(state) = crate::session::state::begin() {
            return Err(Refused {
                busy: true,
                reason: format!(
                    "the profiler in this process is {state} (CORPROF_E_PROFILER_ALREADY_ACTIVE): \
                     one recording at a time; this request touched nothing"
                ),
            });
        }
        if attached && settings.mode == Mode::Trace {
            // Trace mode after attach uses ReJIT, after which the runtime never detaches
            // the profiler: its later sessions start in place once no callback is inside,
            // which the door counts from now on (rule A11). Armed here, before the event
            // mask lets any callback in, in a process where no earlier session's callback
            // runs (`begin` succeeded: none before, or the runtime detached it). Sessions
            // that never use ReJIT leave it unarmed and pay nothing per callback.
            corprof::quiesce::arm();
        }
        let session = match Session::start(&info, settings, attached, control) {
            Ok(s) => s,
            Err(e) => {
                // Nothing of the failed start runs (its threads were stopped) and the
                // runtime delivers no callback after a failed initialisation.
                crate::session::state::end();
                return Err(Refused {
                    busy: false,
                    reason: e,
                });
            }
        };
        crate::session::state::started();
        let _ = ACTIVE.set(Active::new(info, session, attached));
        let _ = crate::session::RESTART.set(restart);
        // At startup the callbacks can name what the sampler meets from here on; after
        // attach, once ProfilerAttachComplete has caught up.
        if let Some(a) = self.active()
            && !attached
        {
            a.session.start_ready(a.functions_named.clone());
        }
        Ok(())
    }
}

impl Profiler {
    /// Records the throwing thread's stack with a synchronous DoStackSnapshot, and where
    /// in its method each frame was (`ExceptionPositions`): every frame's IP is a return
    /// address here (the throwing method's is that of its call into the runtime's throw
    /// helper), so each maps its address − 1, the call instruction.
    fn exception_stack(&self, a: &Active) {
        let mut frames: Vec<u64> = Vec::with_capacity(64);
        let mut ips: Vec<u64> = Vec::with_capacity(64);
        let _ = a
            .info
            .do_stack_snapshot(None, 0, None, &mut |f: FunctionId, ip, _ctx| {
                frames.push(f.0 as u64);
                ips.push(ip as u64);
                frames.len() < 512
            });
        for f in &frames {
            if *f != 0 {
                self.name_function(a, FunctionId(*f as usize));
            }
        }
        let positions: Option<Vec<u64>> = a.thread_ilmaps.try_lock().ok().map(|mut maps| {
            frames
                .iter()
                .zip(&ips)
                .map(|(&f, &ip)| {
                    let p = (f != 0 && ip > 1)
                        .then(|| maps.position(&a.info, f, ip - 1))
                        .flatten();
                    clrprof_format::position_item(p)
                })
                .collect()
        });
        emit(&Event::ExceptionStack {
            frames: frames.into(),
        });
        if let Some(positions) = positions.filter(|p| p.iter().any(|&p| p != 0)) {
            emit(&Event::ExceptionPositions {
                positions: positions.into(),
            });
        }
    }
}

fn hr(h: HResult) -> i32 {
    h.0
}

fn phase(phase: ExceptionPhase, function: usize) {
    emit(&Event::ExceptionPhase {
        phase,
        function: function as u64,
    });
}

fn suspend(phase: SuspendPhase, reason: u32) {
    emit(&Event::RuntimeSuspend {
        phase,
        reason: reason as u8,
    });
}
