//! The profiler object: the runtime's callbacks, each turned into one trace event.
//! Callbacks run concurrently on the runtime's threads; they resolve what must be read
//! while the id is valid (names, sizes) and hand one record to the calling thread's
//! buffer. No callback does I/O or takes a process-wide lock on its event path.

use std::borrow::Cow;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use clrprof_format::{Event, ExceptionPhase, SuspendPhase};
use corprof::{
    AppDomainId, AssemblyId, ClassId, FunctionId, HResult, ModuleId, ObjectId, ProfilerCallback,
    ProfilerInfo, Result, ThreadId,
};

use crate::buffers::emit;
use crate::config::{EventGroup, Mode, Settings};
use crate::control::{ControlServer, Controlled};
use crate::names::{self, Seen};
use crate::sampler::{self, Sampler};
use crate::writer::Writer;
use crate::{inspect, mask, session};

/// How long after `--duration` an attached agent detaches itself if its CLI has not.
const DURATION_GRACE: Duration = Duration::from_secs(2);

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

/// The running recording: what detach and shutdown stop.
pub struct Session {
    info: ProfilerInfo,
    settings: Settings,
    writer: Mutex<Option<Writer>>,
    sampler: Mutex<Option<Sampler>>,
    control: Mutex<Option<ControlServer>>,
    /// The `--heap SECONDS` timer thread, if any.
    heap_timer: Mutex<Option<crate::heap_timer::HeapTimer>>,
    detaching: std::sync::atomic::AtomicBool,
}

impl Session {
    /// Stops the sampler, then the writer (which flushes everything); idempotent.
    pub fn stop(&self, why: &str) {
        let timer = self.heap_timer.lock().ok().and_then(|mut t| t.take());
        if let Some(t) = timer {
            t.stop();
        }
        let sampler = self.sampler.lock().ok().and_then(|mut s| s.take());
        if let Some(mut s) = sampler {
            s.stop();
            let st = &s.stats;
            let get =
                |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed);
            let ticks = get(&st.ticks).max(1);
            log!(
                "sampler ({}): {} ticks, {} samples, {} ticks missed, {} suspend failures, {} empty walks, \
                 {} signal timeouts, {} truncated stacks, {} idle reuses, {} OSR frames walked, {} OSR frames merged; per tick {:.0} µs capturing, {:.0} µs busy",
                if st.signal.load(std::sync::atomic::Ordering::Relaxed) {
                    "signal"
                } else {
                    "suspend"
                },
                get(&st.ticks),
                get(&st.samples),
                get(&st.missed_ticks),
                get(&st.suspend_failures),
                get(&st.walk_failures),
                get(&st.signal_timeouts),
                get(&st.truncated),
                get(&st.reused),
                get(&st.osr_frames),
                get(&st.osr_merged),
                get(&st.suspended_ns) as f64 / ticks as f64 / 1e3,
                get(&st.busy_ns) as f64 / ticks as f64 / 1e3
            );
        }
        let writer = self.writer.lock().ok().and_then(|mut w| w.take());
        if let Some(w) = writer {
            emit(&Event::Shutdown {});
            let stats = w.stop();
            crate::buffers::shutdown();
            log!(
                "{why}: wrote {} ({} blocks, {} bytes of events{})",
                self.settings.output.display(),
                stats.blocks,
                stats.bytes,
                if stats.lost > 0 {
                    format!(", {} events LOST", stats.lost)
                } else {
                    String::new()
                }
            );
            if let Some(errno) = stats.write_errno {
                log!(
                    "{} block(s) holding {} events could not be written to {}: {} ({}); the trace \
                     records the loss if the disk had room again at the end",
                    stats.write_errors,
                    stats.write_lost,
                    self.settings.output.display(),
                    std::io::Error::from_raw_os_error(errno),
                    errno_name(errno)
                );
            }
            let (waits, waited_ns) = crate::buffers::waits();
            if waits > 0 {
                log!(
                    "exact mode: threads found their buffer full and waited for the writer {waits} \
                     time(s), {:.1} ms in all (the writer fell behind: a slow disk or small buffers, \
                     --buffer-kb; `--on-full drop` drops and counts instead)",
                    waited_ns as f64 / 1e6
                );
            }
            if self.settings.args.is_some() {
                let args = crate::elt_args::stats();
                log!(
                    "args: {} value lists cut at the per-call bound (CLRPROF_ARG_BYTES); \
                     {} function entries/returns read from learned slots, {} contradicted by the runtime",
                    args.cut,
                    args.slotted,
                    args.slot_mismatches
                );
            }
            if crate::tpmap::collisions() > 0 {
                log!(
                    "trace: {} thread(s) shared a fast-path table entry and used the slow path",
                    crate::tpmap::collisions()
                );
            }
        }
    }
}

impl Controlled for Session {
    fn status_json(&self) -> String {
        serde_json::json!({
            "pid": std::process::id(),
            "mode": self.settings.mode.as_str(),
            "output": self.settings.output.display().to_string(),
            "recording": self.writer.lock().map(|w| w.is_some()).unwrap_or(false),
        })
        .to_string()
    }

    fn heap(&self) -> std::result::Result<String, String> {
        if self.detaching.load(std::sync::atomic::Ordering::Acquire) {
            return Err("the profiler is detaching".into());
        }
        crate::heap::take(&self.info, 0).map(|s| s.json())
    }

    fn detach(&self) -> std::result::Result<String, String> {
        if self
            .detaching
            .swap(true, std::sync::atomic::Ordering::AcqRel)
        {
            return Err("a detach is already in progress".into());
        }
        self.stop("detach requested");
        // The control thread (this one) returns right after answering; the runtime's
        // ProfilerDetachSucceeded joins it before the library is unloaded.
        match self.info.request_profiler_detach(DETACH_EXPECTED_MS) {
            Ok(()) => Ok(format!(
                "detaching; trace written to {}",
                self.settings.output.display()
            )),
            Err(e) => {
                log!("RequestProfilerDetach failed: {e}");
                Err(format!(
                    "RequestProfilerDetach failed: {e}; the trace is complete at {}",
                    self.settings.output.display()
                ))
            }
        }
    }
}

/// The expected-completion hint given to RequestProfilerDetach: when the runtime's detach
/// thread first checks that no thread is still inside the profiler. 0 means the runtime's
/// default, 2500 ms, which is what detach used to take. The runtime sleeps at least 300 ms
/// between checks (`ProfAPI_DetachMinSleepMs` can raise that floor, never lower it), checks
/// again at twice the hint, then only every 5 s; everything of ours has stopped before the
/// request, so the first check succeeds, and 300 ms gives a second chance at 600 ms.
/// (dotnet/runtime src/coreclr/vm/profdetach.cpp, `SleepWhileProfilerEvacuates`.)
const DETACH_EXPECTED_MS: u32 = 300;

#[derive(Default)]
pub struct Profiler {
    active: OnceLock<Active>,
}

impl Profiler {
    fn active(&self) -> Option<&Active> {
        self.active.get()
    }

    /// Writes a function's names the first time the function is seen.
    fn name_function(&self, a: &Active, function: FunctionId) {
        if a.functions_named.first(function.0) {
            emit_function_info(&a.info, function);
        }
    }

    fn name_class(&self, a: &Active, class: ClassId) -> Option<String> {
        if !a.classes_named.first(class.0) {
            return None;
        }
        Some(names::class_name(&a.info, class))
    }

    fn stop(&self, why: &str) {
        if let Some(a) = self.active() {
            a.session.stop(why);
            if let Ok(mut c) = a.session.control.lock()
                && let Some(mut c) = c.take()
            {
                c.stop();
            }
        }
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

/// Writes the names of `function` (no de-duplication: callers decide).
pub fn emit_function_info(info: &ProfilerInfo, function: FunctionId) {
    if let Some(n) = names::function_names(info, function) {
        emit_names(function.0 as u64, n);
    }
}

/// Writes names under a trace-mode index instead of the FunctionID.
pub fn emit_function_info_as(names: Option<names::FunctionNames>, index: u64) {
    if let Some(n) = names {
        emit_names(index, n);
    }
}

/// Names a native module's frame id (from the signal sampler) with the module's path.
pub fn emit_native_module(frame: u64, path: String) {
    emit(&Event::NativeModule {
        frame,
        path: Cow::Owned(path),
    });
}

/// Names a pseudo frame id (bit 63 set, e.g. `TRUNCATED_FRAME`) with a bracketed label;
/// readers take it as a native-module-style frame.
pub fn emit_frame_name(id: u64, name: String) {
    emit(&Event::FunctionInfo {
        function: id,
        module: 0,
        class: 0,
        token: 0,
        name: Cow::Owned(name),
        signature: Cow::Borrowed(""),
    });
}

fn emit_names(id: u64, n: names::FunctionNames) {
    emit(&Event::FunctionInfo {
        function: id,
        module: n.module.0 as u64,
        class: n.class.0 as u64,
        token: n.token,
        name: Cow::Owned(n.name),
        signature: Cow::Owned(n.signature),
    });
}

impl Profiler {
    /// Everything Initialize and InitializeForAttach share: the file and writer, the
    /// event mask, hooks (startup trace mode), the sampler (startup sample mode) and the
    /// control channel (attach).
    fn start_recording(
        &self,
        info: ProfilerInfo,
        settings: Settings,
        attached: bool,
        control: Option<std::path::PathBuf>,
    ) -> std::result::Result<(), String> {
        let (settings, writer) = session::start_with(&info, settings, attached)?;
        // Any failure below removes the file again: a failed start leaves no stub trace.
        let created = session::RemoveOnError(Some(settings.output.clone()));
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
        }
        if let Err(e) = info.set_event_mask2(low, high) {
            drop(writer);
            return Err(format!("SetEventMask2({low:#x}, {high:#x}) failed: {e}"));
        }
        if settings.heap && attached {
            crate::heap::monitor_between_snapshots(&info, &settings);
        }
        if settings.mode == Mode::Trace {
            let filter =
                crate::elt::Filter::parse(settings.include.as_deref(), settings.exclude.as_deref());
            let args = settings.args.as_deref().map(|a| {
                (
                    crate::elt::Filter::parse(Some(a), None),
                    settings.arg_limits,
                )
            });
            if let Err(e) = crate::elt::install(&info, filter, settings.trace_probe, args) {
                drop(writer);
                return Err(e);
            }
        }
        let session = Arc::new(Session {
            info: info.clone(),
            settings: settings.clone(),
            writer: Mutex::new(Some(writer)),
            sampler: Mutex::new(None),
            control: Mutex::new(None),
            heap_timer: Mutex::new(None),
            detaching: std::sync::atomic::AtomicBool::new(false),
        });
        if !settings.heap_at.is_empty() {
            match crate::heap_timer::HeapTimer::start(
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
            // The CLI detaches at the duration; this is the backstop for a CLI that
            // cannot (stopped, killed), a little later so the two do not race.
            let watch = crate::control::Watch {
                deadline: settings
                    .duration_s
                    .and_then(|d| Duration::try_from_secs_f64(d).ok())
                    .map(|d| std::time::Instant::now() + d + DURATION_GRACE),
                owner: settings.owner_pid.and_then(|pid| {
                    let owner = crate::control::Owner::new(pid, settings.owner_start);
                    if owner.is_none() {
                        log!(
                            "cannot see the clrprof that attached (pid {pid}; another pid namespace?): \
                             only its detach request or --duration will stop the recording"
                        );
                    }
                    owner
                }),
            };
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
        let _ = self.active.set(Active {
            info,
            settings,
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
            self.start_sampler(a);
        }
        Ok(())
    }

    fn start_sampler(&self, a: &Active) {
        let interval = Duration::from_nanos(1_000_000_000 / u64::from(a.settings.rate_hz));
        let duration = a
            .settings
            .duration_s
            .and_then(|d| Duration::try_from_secs_f64(d).ok());
        match Sampler::start(
            a.info.clone(),
            interval,
            duration,
            a.settings.sampler,
            a.attached,
            a.functions_named.clone(),
            a.settings.max_depth,
        ) {
            Ok(s) => {
                if let Ok(mut g) = a.session.sampler.lock() {
                    *g = Some(s);
                }
            }
            Err(e) => log!("cannot start the sampler thread: {e}; recording events only"),
        }
    }

    /// After attach: what loaded before we did. Load callbacks may report the same ids
    /// concurrently; the `*_seen` sets keep one record per id.
    fn catch_up(&self, a: &Active) {
        if let Ok(modules) = a.info.enum_modules() {
            for m in modules {
                self.module_loaded(a, m, HResult(0));
            }
        }
        if let Ok(threads) = a.info.enum_threads() {
            for t in threads {
                emit(&Event::ThreadCreated { thread: t.0 as u64 });
                if let Ok(os) = a.info.get_thread_info(t) {
                    emit(&Event::ThreadAssigned {
                        thread: t.0 as u64,
                        os_tid: u64::from(os),
                    });
                    // The runtime names OS threads after Thread.Name (15 bytes on Linux).
                    if let Ok(comm) = std::fs::read_to_string(format!("/proc/self/task/{os}/comm"))
                    {
                        let comm = comm.trim_end();
                        if !comm.is_empty() {
                            emit(&Event::ThreadName {
                                thread: t.0 as u64,
                                name: Cow::Owned(comm.to_string()),
                            });
                        }
                    }
                }
            }
        }
        if let Ok(functions) = a.info.enum_jited_functions() {
            for f in functions {
                self.name_function(a, f);
            }
        }
    }

    fn module_loaded(&self, a: &Active, id: ModuleId, status: HResult) {
        if !a.modules_seen.first(id.0) {
            return;
        }
        let (path, assembly, base) = match a.info.get_module_info(id) {
            Ok(m) => (m.name, m.assembly, m.base_address as u64),
            Err(_) => (String::new(), AssemblyId(0), 0),
        };
        if a.attached && assembly.0 != 0 && a.assemblies_seen.first(assembly.0) {
            self.assembly_loaded(a, assembly, HResult(0));
        }
        emit(&Event::ModuleLoaded {
            id: id.0 as u64,
            assembly: assembly.0 as u64,
            base_address: base,
            path: Cow::Owned(path),
            hr: hr(status),
        });
    }

    fn assembly_loaded(&self, a: &Active, id: AssemblyId, status: HResult) {
        let (name, app_domain, module) = match a.info.get_assembly_info(id) {
            Ok(i) => (i.name, i.app_domain.0 as u64, i.module.0 as u64),
            Err(_) => (String::new(), 0, 0),
        };
        emit(&Event::AssemblyLoaded {
            id: id.0 as u64,
            app_domain,
            module,
            name: Cow::Owned(name),
            hr: hr(status),
        });
    }
}

/// The symbolic name of the errors a trace write meets.
pub fn errno_name(errno: i32) -> &'static str {
    match errno {
        libc::ENOSPC => "ENOSPC",
        libc::EDQUOT => "EDQUOT",
        libc::EIO => "EIO",
        libc::EFBIG => "EFBIG",
        libc::EROFS => "EROFS",
        libc::EBADF => "EBADF",
        _ => "errno",
    }
}

fn hr(h: HResult) -> i32 {
    h.0
}

impl ProfilerCallback for Profiler {
    fn initialize(&self, info: ProfilerInfo) -> Result<()> {
        let settings = match crate::config::check_utf8(std::env::vars_os()).and_then(|()| {
            crate::config::Settings::from_env(|k| std::env::var(k).ok(), std::process::id())
        }) {
            Ok(s) => s,
            Err(e) => {
                log!("{e}; the profiler is not loaded and the application runs unprofiled");
                return Err(HResult(corprof_sys::CORPROF_E_PROFILER_CANCEL_ACTIVATION));
            }
        };
        if !settings.profile_sdk
            && let Some(sdk) = crate::sdk::sdk_process(&session::command_line())
        {
            if !sdk.quiet {
                log!(
                    "pid {} is {}, not an app: not profiled (CLRPROF_PROFILE_SDK=1 profiles it too)",
                    std::process::id(),
                    sdk.what
                );
            }
            return Err(HResult(corprof_sys::CORPROF_E_PROFILER_CANCEL_ACTIVATION));
        }
        self.start_recording(info, settings, false, None)
            .map_err(|e| {
                log!("{e}; the application runs unprofiled");
                HResult(corprof_sys::CORPROF_E_PROFILER_CANCEL_ACTIVATION)
            })
    }

    fn initialize_for_attach(&self, info: ProfilerInfo, client_data: &[u8]) -> Result<()> {
        let req = match crate::attach::parse(client_data, std::process::id()) {
            Ok(r) => r,
            Err(e) => {
                log!("{e}; attach refused, the application is untouched");
                return Err(HResult(corprof_sys::E_INVALIDARG));
            }
        };
        if req.settings.mode == Mode::Trace {
            log!(
                "trace mode needs ELT hooks, which the runtime allows only at startup; attach refused"
            );
            return Err(HResult(
                corprof_sys::CORPROF_E_UNSUPPORTED_FOR_ATTACHING_PROFILER,
            ));
        }
        let control = req.control.clone();
        self.start_recording(info, req.settings, true, req.control)
            .map_err(|e| {
                log!("{e}; attach refused, the application is untouched");
                // The runtime passes only the HRESULT back: leave the reason where the
                // CLI that asked looks for it.
                if let Some(c) = &control {
                    crate::control::write_error_note(c, &e);
                }
                HResult(corprof_sys::E_FAIL)
            })
    }

    fn profiler_attach_complete(&self) -> Result<()> {
        let Some(a) = self.active() else {
            return Ok(());
        };
        self.catch_up(a);
        if a.settings.mode == Mode::Sample {
            self.start_sampler(a);
        }
        Ok(())
    }

    fn profiler_detach_succeeded(&self) -> Result<()> {
        // Minimal work: the runtime unloads the library right after this returns, so make
        // sure the control thread (which asked for the detach and then returned) has
        // finished: after this join no code of ours runs on any thread.
        if let Some(a) = self.active() {
            let control = a.session.control.lock().ok().and_then(|mut c| c.take());
            if let Some(mut c) = control {
                c.stop();
            }
        }
        // No callback runs any more: the rings of threads that outlive us can go.
        crate::buffers::release_thread_refs();
        log!("detached");
        Ok(())
    }

    fn shutdown(&self) -> Result<()> {
        self.stop("runtime shutdown");
        Ok(())
    }

    fn app_domain_creation_finished(&self, id: AppDomainId, status: HResult) -> Result<()> {
        let Some(a) = self.active() else {
            return Ok(());
        };
        let name = a
            .info
            .get_app_domain_info(id)
            .map(|d| d.name)
            .unwrap_or_default();
        emit(&Event::AppDomainCreated {
            id: id.0 as u64,
            name: Cow::Owned(name),
            hr: hr(status),
        });
        Ok(())
    }

    fn app_domain_shutdown_finished(&self, id: AppDomainId, _status: HResult) -> Result<()> {
        emit(&Event::AppDomainShutdown { id: id.0 as u64 });
        Ok(())
    }

    fn assembly_load_finished(&self, id: AssemblyId, status: HResult) -> Result<()> {
        let Some(a) = self.active() else {
            return Ok(());
        };
        if a.assemblies_seen.first(id.0) {
            self.assembly_loaded(a, id, status);
        }
        Ok(())
    }

    fn assembly_unload_finished(&self, id: AssemblyId, _status: HResult) -> Result<()> {
        emit(&Event::AssemblyUnloaded { id: id.0 as u64 });
        Ok(())
    }

    fn module_load_finished(&self, id: ModuleId, status: HResult) -> Result<()> {
        let Some(a) = self.active() else {
            return Ok(());
        };
        self.module_loaded(a, id, status);
        Ok(())
    }

    fn module_unload_started(&self, id: ModuleId) -> Result<()> {
        emit(&Event::ModuleUnloaded { id: id.0 as u64 });
        Ok(())
    }

    fn class_load_finished(&self, id: ClassId, status: HResult) -> Result<()> {
        let Some(a) = self.active() else {
            return Ok(());
        };
        let (module, token) = match a.info.get_class_id_info2(id) {
            Ok(ci) => {
                if a.settings.args.is_some() {
                    crate::elt_args::class_loaded(id, ci.module, ci.token, ci.type_args);
                }
                (ci.module.0 as u64, ci.token)
            }
            Err(_) => (0, 0),
        };
        a.classes_named.first(id.0);
        let name = names::class_name(&a.info, id);
        emit(&Event::ClassLoaded {
            id: id.0 as u64,
            module,
            token,
            name: Cow::Owned(name),
            hr: hr(status),
        });
        Ok(())
    }

    fn class_unload_finished(&self, id: ClassId, _status: HResult) -> Result<()> {
        emit(&Event::ClassUnloaded { id: id.0 as u64 });
        Ok(())
    }

    fn jit_compilation_started(&self, function: FunctionId, is_safe_to_block: bool) -> Result<()> {
        let Some(a) = self.active() else {
            return Ok(());
        };
        self.name_function(a, function);
        emit(&Event::JitStarted {
            function: function.0 as u64,
            safe_to_block: is_safe_to_block,
        });
        Ok(())
    }

    fn jit_compilation_finished(
        &self,
        function: FunctionId,
        status: HResult,
        _is_safe_to_block: bool,
    ) -> Result<()> {
        emit(&Event::JitFinished {
            function: function.0 as u64,
            hr: hr(status),
        });
        Ok(())
    }

    fn jit_cached_function_search_finished(&self, function: FunctionId, result: u32) -> Result<()> {
        let Some(a) = self.active() else {
            return Ok(());
        };
        let found = result == corprof_sys::COR_PRF_CACHED_FUNCTION_FOUND;
        if found {
            self.name_function(a, function);
        }
        emit(&Event::JitCacheSearch {
            function: function.0 as u64,
            found,
        });
        Ok(())
    }

    fn thread_created(&self, thread: ThreadId) -> Result<()> {
        emit(&Event::ThreadCreated {
            thread: thread.0 as u64,
        });
        Ok(())
    }

    fn thread_destroyed(&self, thread: ThreadId) -> Result<()> {
        // A thread must not finish dying while the sampler walks its stack: wait for an
        // in-flight walk to end.
        sampler::wait_thread_destroyed();
        sampler::thread_gone(thread.0 as u64);
        emit(&Event::ThreadDestroyed {
            thread: thread.0 as u64,
        });
        Ok(())
    }

    fn thread_assigned_to_os_thread(&self, managed: ThreadId, os_thread: u32) -> Result<()> {
        sampler::thread_assigned(managed.0 as u64, os_thread);
        emit(&Event::ThreadAssigned {
            thread: managed.0 as u64,
            os_tid: u64::from(os_thread),
        });
        Ok(())
    }

    fn thread_name_changed(&self, thread: ThreadId, name: &[u16]) -> Result<()> {
        let name = String::from_utf16_lossy(name);
        emit(&Event::ThreadName {
            thread: thread.0 as u64,
            name: Cow::Owned(name),
        });
        Ok(())
    }

    fn exception_thrown(&self, object: ObjectId) -> Result<()> {
        let Some(a) = self.active() else {
            return Ok(());
        };
        let class = a.info.get_class_from_object(object).unwrap_or(ClassId(0));
        let type_name = if class.0 != 0 {
            names::class_name(&a.info, class)
        } else {
            String::new()
        };
        let message = inspect::exception_message(&a.info, object).unwrap_or_default();
        emit(&Event::ExceptionThrown {
            object: object.0 as u64,
            class: class.0 as u64,
            type_name: Cow::Owned(type_name),
            message: Cow::Owned(message),
        });
        if a.settings.exception_stacks {
            self.exception_stack(a);
        }
        Ok(())
    }

    fn exception_search_function_enter(&self, function: FunctionId) -> Result<()> {
        phase(ExceptionPhase::SearchFunctionEnter, function.0);
        Ok(())
    }
    fn exception_search_function_leave(&self) -> Result<()> {
        phase(ExceptionPhase::SearchFunctionLeave, 0);
        Ok(())
    }
    fn exception_search_filter_enter(&self, function: FunctionId) -> Result<()> {
        phase(ExceptionPhase::SearchFilterEnter, function.0);
        Ok(())
    }
    fn exception_search_filter_leave(&self) -> Result<()> {
        phase(ExceptionPhase::SearchFilterLeave, 0);
        Ok(())
    }
    fn exception_search_catcher_found(&self, function: FunctionId) -> Result<()> {
        phase(ExceptionPhase::SearchCatcherFound, function.0);
        Ok(())
    }
    fn exception_unwind_function_enter(&self, function: FunctionId) -> Result<()> {
        phase(ExceptionPhase::UnwindFunctionEnter, function.0);
        if let Some(a) = self.active()
            && a.settings.args.is_some()
        {
            crate::elt_args::unwound(function);
        }
        Ok(())
    }
    fn exception_unwind_function_leave(&self) -> Result<()> {
        phase(ExceptionPhase::UnwindFunctionLeave, 0);
        Ok(())
    }
    fn exception_unwind_finally_enter(&self, function: FunctionId) -> Result<()> {
        phase(ExceptionPhase::UnwindFinallyEnter, function.0);
        Ok(())
    }
    fn exception_unwind_finally_leave(&self) -> Result<()> {
        phase(ExceptionPhase::UnwindFinallyLeave, 0);
        Ok(())
    }
    fn exception_catcher_enter(&self, function: FunctionId, _object: ObjectId) -> Result<()> {
        phase(ExceptionPhase::CatcherEnter, function.0);
        Ok(())
    }
    fn exception_catcher_leave(&self) -> Result<()> {
        phase(ExceptionPhase::CatcherLeave, 0);
        Ok(())
    }

    fn runtime_suspend_started(&self, reason: u32) -> Result<()> {
        suspend(SuspendPhase::SuspendStarted, reason);
        Ok(())
    }
    fn runtime_suspend_finished(&self) -> Result<()> {
        suspend(SuspendPhase::SuspendFinished, 0);
        Ok(())
    }
    fn runtime_suspend_aborted(&self) -> Result<()> {
        suspend(SuspendPhase::SuspendAborted, 0);
        Ok(())
    }
    fn runtime_resume_started(&self) -> Result<()> {
        suspend(SuspendPhase::ResumeStarted, 0);
        Ok(())
    }
    fn runtime_resume_finished(&self) -> Result<()> {
        suspend(SuspendPhase::ResumeFinished, 0);
        Ok(())
    }
    fn runtime_thread_suspended(&self, thread: ThreadId) -> Result<()> {
        emit(&Event::ThreadSuspended {
            thread: thread.0 as u64,
            resumed: false,
        });
        Ok(())
    }
    fn runtime_thread_resumed(&self, thread: ThreadId) -> Result<()> {
        emit(&Event::ThreadSuspended {
            thread: thread.0 as u64,
            resumed: true,
        });
        Ok(())
    }

    fn handle_created(
        &self,
        _handle: corprof::GcHandleId,
        _initial_object: ObjectId,
    ) -> Result<()> {
        crate::heap::note_handle_created();
        Ok(())
    }

    fn garbage_collection_started(&self, generation_collected: &[bool], reason: u32) -> Result<()> {
        let mut generations = 0u8;
        for (i, collected) in generation_collected.iter().enumerate().take(8) {
            if *collected {
                generations |= 1 << i;
            }
        }
        emit(&Event::GcStarted {
            generations,
            reason: reason as u8,
        });
        crate::heap::gc_started(generation_collected);
        Ok(())
    }

    fn garbage_collection_finished(&self) -> Result<()> {
        crate::heap::gc_finished();
        let Some(a) = self.active() else {
            return Ok(());
        };
        let mut sizes = [0u64; 5];
        if let Ok(ranges) = a.info.get_generation_bounds() {
            for r in ranges {
                if let Some(s) = sizes.get_mut(r.generation as usize) {
                    *s += r.length as u64;
                }
            }
        }
        emit(&Event::GcFinished {
            generation_sizes: sizes.to_vec().into(),
        });
        Ok(())
    }

    fn object_references(
        &self,
        object: ObjectId,
        class: ClassId,
        references: &[ObjectId],
    ) -> Result<()> {
        if let Some(a) = self.active() {
            crate::heap::object_references(&a.info, object, class, references);
        }
        Ok(())
    }

    fn root_references2(
        &self,
        roots: &[ObjectId],
        kinds: &[u32],
        flags: &[u32],
        root_ids: &[usize],
    ) -> Result<()> {
        crate::heap::root_references(roots, kinds, flags, root_ids);
        Ok(())
    }

    fn objects_allocated_by_class(&self, classes: &[ClassId], counts: &[u32]) -> Result<()> {
        let Some(a) = self.active() else {
            return Ok(());
        };
        for (class, count) in classes.iter().zip(counts) {
            if let Some(name) = self.name_class(a, *class) {
                emit(&Event::ClassName {
                    class: class.0 as u64,
                    name: Cow::Owned(name),
                });
            }
            emit(&Event::Allocations {
                class: class.0 as u64,
                count: u64::from(*count),
            });
        }
        Ok(())
    }

    fn unmanaged_to_managed_transition(&self, function: FunctionId, reason: u32) -> Result<()> {
        if let Some(a) = self.active()
            && a.settings.events.contains(EventGroup::Transitions)
        {
            self.name_function(a, function);
        }
        emit(&Event::Transition {
            function: function.0 as u64,
            to_managed: true,
            reason: reason as u8,
        });
        Ok(())
    }

    fn managed_to_unmanaged_transition(&self, function: FunctionId, reason: u32) -> Result<()> {
        if let Some(a) = self.active() {
            self.name_function(a, function);
        }
        emit(&Event::Transition {
            function: function.0 as u64,
            to_managed: false,
            reason: reason as u8,
        });
        Ok(())
    }
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

/// Writer flush period from settings.
pub fn flush_period(s: &Settings) -> Duration {
    Duration::from_millis(s.flush_ms)
}
