//! The `ProfilerCallback` implementation: each callback the runtime makes becomes one
//! record (or a few), after what must be read while its ids are valid.

use std::borrow::Cow;

use clrprof_format::{Event, ExceptionPhase, SuspendPhase};
use corprof::{
    AppDomainId, AssemblyId, ClassId, FunctionId, HResult, ModuleId, ObjectId, ProfilerCallback,
    ProfilerInfo, Result, ThreadId,
};

use super::{Profiler, hr, phase, suspend};
use crate::config::{AttachConflict, EventGroup};
use crate::output::buffers::emit;
use crate::stackwalk::dyncode;
use crate::{inspect, names, sampling, session};

impl ProfilerCallback for Profiler {
    fn initialize(&self, info: ProfilerInfo) -> Result<()> {
        match clrprof_settings::coverage::CoverageSettings::from_env(|k| std::env::var(k).ok()) {
            Ok(Some(c)) => return self.start_coverage(info, c, None),
            Ok(None) => {}
            Err(e) => {
                log!("{e}; the profiler is not loaded and the application runs unmeasured");
                return Err(HResult(corprof_sys::CORPROF_E_PROFILER_CANCEL_ACTIVATION));
            }
        }
        let settings = match crate::config::check_utf8(std::env::vars_os()).and_then(|()| {
            crate::config::Settings::from_env(|k| std::env::var(k).ok(), std::process::id())
        }) {
            Ok(s) => s,
            Err(e) => {
                log!("{e}; the profiler is not loaded and the application runs unprofiled");
                return Err(HResult(corprof_sys::CORPROF_E_PROFILER_CANCEL_ACTIVATION));
            }
        };
        let sdk = session::sdk_process(&session::command_line());
        if !settings.profile_sdk
            && let Some(sdk) = &sdk
        {
            if let Some(run) = &settings.run {
                session::note_declined(run, std::process::id(), &sdk.what, sdk.quiet);
            }
            if !sdk.quiet {
                log!(
                    "pid {} is {}, not an app: not profiled (CLRPROF_PROFILE_SDK=1 profiles it too)",
                    std::process::id(),
                    sdk.what
                );
            }
            return Err(HResult(corprof_sys::CORPROF_E_PROFILER_CANCEL_ACTIVATION));
        }
        let mut settings = settings;
        if sdk.is_some() {
            // Profiled on request (CLRPROF_PROFILE_SDK=1): MSBuild turns each stderr line of
            // the tools it runs into a build error, so the log goes beside the trace.
            crate::log::never_stderr();
            // A caught panic too: its lines go to the log, not to stderr.
            std::panic::set_hook(Box::new(|p| crate::log::line(&p.to_string())));
            corprof::set_panic_hook(crate::log::line);
            if settings.log == crate::config::LogTarget::Stderr {
                settings.log = crate::config::LogTarget::File(session::sdk_log_path(
                    &settings.output,
                    std::process::id(),
                ));
            }
        }
        self.start_recording(info, settings, false, None)
            .map_err(|e| {
                log!("{}; the application runs unprofiled", e.reason);
                e.hresult(corprof_sys::CORPROF_E_PROFILER_CANCEL_ACTIVATION)
            })
    }

    fn initialize_for_attach(&self, info: ProfilerInfo, client_data: &[u8]) -> Result<()> {
        match clrprof_settings::coverage::decode_attach(client_data) {
            Ok(Some((c, duration))) => return self.start_coverage(info, c, Some(duration)),
            Ok(None) => {}
            Err(e) => {
                log!("{e}; attach refused, the application is untouched");
                return Err(HResult(corprof_sys::E_INVALIDARG));
            }
        }
        let req = match crate::control::attach::parse(client_data, std::process::id()) {
            Ok(r) => r,
            Err(e) => {
                log!("{e}; attach refused, the application is untouched");
                return Err(HResult(corprof_sys::E_INVALIDARG));
            }
        };
        if let Some(conflict) = req.settings.attach_conflict() {
            log!("{}; attach refused", conflict.message());
            return Err(HResult(match conflict {
                AttachConflict::NeedsEltHooks => {
                    corprof_sys::CORPROF_E_UNSUPPORTED_FOR_ATTACHING_PROFILER
                }
                AttachConflict::TraceWithoutInclude => corprof_sys::E_INVALIDARG,
            }));
        }
        let control = req.control.clone();
        self.start_recording(info, req.settings, true, req.control)
            .map_err(|e| {
                log!("{}; attach refused, the application is untouched", e.reason);
                // The runtime passes only the HRESULT back: leave the reason where the
                // CLI that asked looks for it. Not when another session owns the process:
                // the HRESULT says it all, and the note's path may be the running
                // session's (two `clrprof` with one TMPDIR, started at the same moment).
                if !e.busy
                    && let Some(c) = &control
                {
                    crate::control::write_error_note(c, &e.reason);
                }
                e.hresult(corprof_sys::E_FAIL)
            })
    }

    fn profiler_attach_complete(&self) -> Result<()> {
        if let Some(c) = self.coverage() {
            let duration = *self
                .attach_duration
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            c.attach_complete(duration);
            return Ok(());
        }
        let Some(a) = self.active() else {
            return Ok(());
        };
        self.catch_up(a);
        // The sampler, or trace mode's probes.
        a.session.start_ready(a.functions_named.clone());
        Ok(())
    }

    fn profiler_detach_succeeded(&self) -> Result<()> {
        // Minimal work: the runtime unloads the library right after this returns, so make
        // sure the control thread (which asked for the detach and then returned) has
        // finished: after this join no code of ours runs on any thread.
        let socket = self.active().and_then(|a| a.session.stop_control());
        // No callback runs any more and no thread of ours: what the session held goes,
        // and the next attach (which loads this same copy) may start a session.
        super::release_at_detach();
        crate::session::state::end();
        // What our threads freed goes back to the kernel, not into the target's RSS.
        crate::os::pages::trim_heap();
        if crate::os::process::kept_loaded() == Ok(true) {
            log!(
                "detached; the library stays mapped, inert, for the next attach to this process \
                 (glibc {})",
                crate::os::process::glibc_version().unwrap_or_default()
            );
            // Last: the CLI that waits for it may attach again at once.
            if let Some(socket) = socket {
                crate::control::write_detached_note(&socket);
            }
        } else {
            log!("detached");
        }
        Ok(())
    }

    fn shutdown(&self) -> Result<()> {
        if let Some(c) = self.coverage() {
            c.shutdown();
            return Ok(());
        }
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
        if let Some(c) = self.coverage() {
            if status.0 >= 0 {
                c.module_loaded(id);
            }
            return Ok(());
        }
        let Some(a) = self.active() else {
            return Ok(());
        };
        self.module_loaded(a, id, status);
        if status.0 >= 0 {
            crate::tracing::probes::module_loaded(&a.info, id);
        }
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
                if !a.settings.args.is_empty() {
                    crate::tracing::args::class_loaded(id, ci.module, ci.token, ci.type_args);
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
        if self.active().is_some_and(|a| !a.settings.args.is_empty()) {
            crate::tracing::args::class_unloaded(id);
        }
        emit(&Event::ClassUnloaded { id: id.0 as u64 });
        Ok(())
    }

    fn get_rejit_parameters(
        &self,
        module: corprof::ModuleId,
        method: u32,
        control: corprof::FunctionControl<'_>,
    ) -> Result<()> {
        let body = match self.coverage() {
            Some(c) => c.rejit_body(module, method),
            None => crate::tracing::probes::rejit_body(module, method),
        };
        match body {
            Some(body) => control.set_il_function_body(&body).inspect_err(|e| {
                log!("SetILFunctionBody({method:#010x}) failed: {e}; that method keeps its code")
            }),
            None => Ok(()),
        }
    }

    fn rejit_error(
        &self,
        _module: corprof::ModuleId,
        method: u32,
        _function: FunctionId,
        status: HResult,
    ) -> Result<()> {
        log!("ReJIT of {method:#010x} failed: {status}; that method is not probed");
        Ok(())
    }

    fn jit_compilation_started(&self, function: FunctionId, is_safe_to_block: bool) -> Result<()> {
        if let Some(c) = self.coverage() {
            c.jit_started(function);
            return Ok(());
        }
        let Some(a) = self.active().filter(|a| a.jit_events) else {
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
        if self.active().is_some_and(|a| a.jit_events) {
            emit(&Event::JitFinished {
                function: function.0 as u64,
                hr: hr(status),
            });
        }
        Ok(())
    }

    /// An LCG method or IL stub was compiled, its code published: named now (its id is
    /// valid here, maybe not when a sample meets it), its code ranges put in the signal
    /// sampler's table of live dynamic code (`stackwalk/dyncode.rs`).
    fn dynamic_method_jit_compilation_finished(
        &self,
        function: FunctionId,
        status: HResult,
        _is_safe_to_block: bool,
    ) -> Result<()> {
        let Some(a) = self.active() else {
            return Ok(());
        };
        if status.0 < 0 {
            return Ok(());
        }
        self.name_function(a, function);
        let mut ranges = [(0u64, 0u64); 4];
        let n = dynamic_code(&a.info, function, &mut ranges);
        for &(start, end) in &ranges[..n] {
            dyncode::TABLE.insert(start, end, function.0 as u64);
        }
        Ok(())
    }

    /// An LCG method is about to be freed (the runtime frees its code when this returns):
    /// the sampler's table forgets it first, and its pages are marked freed.
    fn dynamic_method_unloaded(&self, function: FunctionId) -> Result<()> {
        let Some(a) = self.active() else {
            return Ok(());
        };
        // Its code as the runtime still gives it: a method compiled before the callbacks
        // were on (an attach) is not in the table, its pages are marked all the same.
        let mut ranges = [(0u64, 0u64); 4];
        let n = dynamic_code(&a.info, function, &mut ranges);
        dyncode::TABLE.unload(function.0 as u64, &ranges[..n]);
        Ok(())
    }

    fn jit_cached_function_search_started(
        &self,
        function: FunctionId,
        use_cached_function: &mut bool,
    ) -> Result<()> {
        if let Some(c) = self.coverage() {
            c.cached_search(function, use_cached_function);
        }
        Ok(())
    }

    fn jit_inlining(
        &self,
        _caller: FunctionId,
        callee: FunctionId,
        should_inline: &mut bool,
    ) -> Result<()> {
        if let Some(c) = self.coverage() {
            c.inlining(callee, should_inline);
        }
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
        sampling::wait_thread_destroyed();
        sampling::thread_gone(thread.0 as u64);
        emit(&Event::ThreadDestroyed {
            thread: thread.0 as u64,
        });
        Ok(())
    }

    fn thread_assigned_to_os_thread(&self, managed: ThreadId, os_thread: u32) -> Result<()> {
        sampling::thread_assigned(managed.0 as u64, os_thread);
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
            && !a.settings.args.is_empty()
        {
            crate::tracing::args::unwound(function);
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
        crate::alloc::gc_finished(&a.info);
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

    fn event_pipe_event_delivered(&self, event: &corprof::EventPipeEvent<'_>) -> Result<()> {
        if let Some(a) = self.active() {
            crate::alloc::on_event(&a.info, event, &a.functions_named, &a.thread_ilmaps);
        }
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

/// A dynamic method's code ranges `[start, end)` (one native code version: dynamic methods
/// are not tiered), from the runtime, into `out`; how many.
fn dynamic_code(info: &ProfilerInfo, function: FunctionId, out: &mut [(u64, u64)]) -> usize {
    let mut n = 0;
    let starts = info
        .get_native_code_start_addresses(function, corprof::ReJitId(0))
        .unwrap_or_default();
    for start in starts {
        for r in info.get_code_info4(start).unwrap_or_default() {
            if n < out.len() && r.size > 0 {
                out[n] = (r.start as u64, (r.start + r.size) as u64);
                n += 1;
            }
        }
    }
    n
}
