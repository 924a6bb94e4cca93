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
}

/// Set by the first recording this copy of the library starts, never cleared: the library's
/// statics (thread-local slot pointers, the writer, the allocation session's state) belong
/// to that recording. The runtime unloads the library after a detach, which clears them
/// all, except when another load of the same file is still held: a refused attach
/// (CORPROF_E_PROFILER_ALREADY_ACTIVE) leaks its reference (dotnet/runtime's
/// `ProfilingAPIUtility::LoadProfiler` returns without releasing the loaded profiler), so
/// the file stays mapped and a later attach would find the old state, and the EventPipe
/// thread's stale slot pointer would write into a freed ring. Such a load is refused
/// instead; the CLI attaches a fresh copy of the library each time (docs/attach.md).
static RECORDED_BEFORE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

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
        if RECORDED_BEFORE.swap(true, std::sync::atomic::Ordering::AcqRel) {
            log!(
                "this copy of the profiler library already ran once in this process; coverage refused"
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
                Ok(())
            }
            Err(e) => {
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
    ) -> std::result::Result<(), String> {
        if RECORDED_BEFORE.swap(true, std::sync::atomic::Ordering::AcqRel) {
            return Err(format!(
                "this copy of the profiler library ({}) already recorded once in this process and \
                 is still loaded: the runtime never unloads a library whose attach it refused \
                 (CORPROF_E_PROFILER_ALREADY_ACTIVE), and a second recording here would reuse the \
                 first one's state; `clrprof record --pid` attaches a fresh copy each time, so use \
                 it or give each attach a library file of its own",
                crate::os::process::own_library_path()
                    .map(|p| p.display().to_string())
                    .unwrap_or_else(|| "path unknown".into())
            ));
        }
        let session = Session::start(&info, settings, attached, control)?;
        let _ = self.active.set(Active {
            info,
            settings: session.settings().clone(),
            session,
            functions_named: Arc::new(Seen::new()),
            classes_named: Seen::new(),
            modules_seen: Seen::new(),
            assemblies_seen: Seen::new(),
            attached,
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
    /// Records the throwing thread's stack with a synchronous DoStackSnapshot.
    fn exception_stack(&self, a: &Active) {
        let mut frames: Vec<u64> = Vec::with_capacity(64);
        let _ = a
            .info
            .do_stack_snapshot(None, 0, None, &mut |f: FunctionId, _ip, _ctx| {
                frames.push(f.0 as u64);
                frames.len() < 512
            });
        for f in &frames {
            if *f != 0 {
                self.name_function(a, FunctionId(*f as usize));
            }
        }
        emit(&Event::ExceptionStack {
            frames: frames.into(),
        });
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
