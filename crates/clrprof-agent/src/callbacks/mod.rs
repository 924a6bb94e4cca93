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

use clrprof_format::{Event, ExceptionPhase, SuspendPhase};
use corprof::{ClassId, FunctionId, HResult, ProfilerInfo};

use crate::config::{Mode, Settings};
use crate::names::{self, Seen};
use crate::output::buffers::emit;
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
    /// The IL maps of the methods on the stacks the runtime's own threads record (exception
    /// stacks, allocation samples), for their positions: taken with `try_lock` only (a
    /// throw or a walked allocation stack that finds it busy records no positions).
    thread_ilmaps: std::sync::Mutex<IlMaps>,
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

#[derive(Default)]
pub struct Profiler {
    active: OnceLock<Active>,
    /// A `clrprof coverage` run (no recording: `active` stays empty).
    coverage: OnceLock<Arc<crate::coverage::Coverage>>,
    /// A coverage attach's `--duration`, for ProfilerAttachComplete.
    attach_duration: std::sync::Mutex<Option<f64>>,
}

impl Profiler {
    fn active(&self) -> Option<&Active> {
        self.active.get()
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
        let _ = self.active.set(Active {
            info,
            settings: session.settings().clone(),
            session,
            functions_named: Arc::new(Seen::new()),
            classes_named: Seen::new(),
            modules_seen: Seen::new(),
            assemblies_seen: Seen::new(),
            attached,
            thread_ilmaps: std::sync::Mutex::new(IlMaps::new(
                std::env::var_os("CLRPROF_SAMPLER_NO_POSITIONS").is_none(),
            )),
        });
        if let Some(a) = self.active()
            && a.settings.mode == Mode::Sample
            && !attached
        {
            a.session.start_sampler(a.functions_named.clone());
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
