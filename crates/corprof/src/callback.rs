//! The [`ProfilerCallback`] trait: one method per `ICorProfilerCallback`…`11` method.

use core::ffi::c_void;
use core::marker::PhantomData;
use core::ptr::NonNull;

use corprof_sys as sys;
use corprof_sys::GUID;

use crate::hresult::{HResult, Result, check};
use crate::ids::{
    AppDomainId, AssemblyId, ClassId, FunctionId, GcHandleId, ModuleId, ObjectId, ReJitId, ThreadId,
};
use crate::info::ProfilerInfo;

/// A profiler: what the runtime calls back into.
///
/// Implement the methods for the events you enable with
/// [`ProfilerInfo::set_event_mask2`]; every method has a default that does nothing and
/// returns `Ok(())` (except [`initialize_for_attach`](Self::initialize_for_attach), whose
/// default refuses attach). Wrap an implementation with
/// [`new_callback_object`](crate::new_callback_object) or export it through
/// [`dll_get_class_object`](crate::dll_get_class_object).
///
/// # What the runtime guarantees, and what it does not
///
/// * Callbacks are **not serialized**: several threads call in at once, in orders you may
///   not expect (a function can be entered before its `jit_compilation_finished` arrives).
///   Hence `Send + Sync` and `&self`: keep state in atomics, locks or per-thread storage.
///   State created in `initialize` typically lives in a `OnceLock`.
/// * Slices and strings passed to a callback are valid only for the duration of the call;
///   the borrow checker enforces this.
/// * Ids are valid while the runtime says so (for instance a `ThreadId` until
///   `thread_destroyed` returns); see `docs/safety.md`.
/// * A panic in a callback is caught at the boundary, reported through
///   [`set_panic_hook`](crate::set_panic_hook) and turned into `E_FAIL`; it never
///   unwinds into the runtime (which needs `panic = "unwind"`, the default).
/// * Callbacks may run with little stack; keep them shallow.
/// * The runtime mostly ignores the returned `HRESULT`; exceptions are noted on the
///   methods (`initialize`, `initialize_for_attach`, the snapshot-style GC callbacks).
#[allow(unused_variables)]
pub trait ProfilerCallback: Send + Sync + 'static {
    // ---- ICorProfilerCallback (V1) -------------------------------------------------------

    /// Startup: called once, on the startup thread, before it has run managed code. The
    /// only place to set immutable event flags and ELT hooks. `info` wraps the runtime's
    /// `ICorProfilerInfo` at the highest version it offers (at least 3); keep a clone.
    /// Returning `Err(HResult::CORPROF_E_PROFILER_CANCEL_ACTIVATION)` declines loading
    /// quietly; any error unloads the profiler.
    fn initialize(&self, info: ProfilerInfo) -> Result<()> {
        Ok(())
    }
    /// The runtime is shutting down (not called for a detached profiler, nor when the
    /// process exits without an orderly shutdown). Flush what you buffered.
    fn shutdown(&self) -> Result<()> {
        Ok(())
    }
    fn app_domain_creation_started(&self, app_domain: AppDomainId) -> Result<()> {
        Ok(())
    }
    fn app_domain_creation_finished(&self, app_domain: AppDomainId, status: HResult) -> Result<()> {
        Ok(())
    }
    fn app_domain_shutdown_started(&self, app_domain: AppDomainId) -> Result<()> {
        Ok(())
    }
    fn app_domain_shutdown_finished(&self, app_domain: AppDomainId, status: HResult) -> Result<()> {
        Ok(())
    }
    fn assembly_load_started(&self, assembly: AssemblyId) -> Result<()> {
        Ok(())
    }
    fn assembly_load_finished(&self, assembly: AssemblyId, status: HResult) -> Result<()> {
        Ok(())
    }
    fn assembly_unload_started(&self, assembly: AssemblyId) -> Result<()> {
        Ok(())
    }
    fn assembly_unload_finished(&self, assembly: AssemblyId, status: HResult) -> Result<()> {
        Ok(())
    }
    fn module_load_started(&self, module: ModuleId) -> Result<()> {
        Ok(())
    }
    fn module_load_finished(&self, module: ModuleId, status: HResult) -> Result<()> {
        Ok(())
    }
    /// The module's id stays valid until this callback returns.
    fn module_unload_started(&self, module: ModuleId) -> Result<()> {
        Ok(())
    }
    fn module_unload_finished(&self, module: ModuleId, status: HResult) -> Result<()> {
        Ok(())
    }
    fn module_attached_to_assembly(&self, module: ModuleId, assembly: AssemblyId) -> Result<()> {
        Ok(())
    }
    fn class_load_started(&self, class: ClassId) -> Result<()> {
        Ok(())
    }
    fn class_load_finished(&self, class: ClassId, status: HResult) -> Result<()> {
        Ok(())
    }
    fn class_unload_started(&self, class: ClassId) -> Result<()> {
        Ok(())
    }
    fn class_unload_finished(&self, class: ClassId, status: HResult) -> Result<()> {
        Ok(())
    }
    fn function_unload_started(&self, function: FunctionId) -> Result<()> {
        Ok(())
    }
    fn jit_compilation_started(&self, function: FunctionId, is_safe_to_block: bool) -> Result<()> {
        Ok(())
    }
    fn jit_compilation_finished(
        &self,
        function: FunctionId,
        status: HResult,
        is_safe_to_block: bool,
    ) -> Result<()> {
        Ok(())
    }
    /// Set `*use_cached_function = false` to make the runtime JIT the function instead of
    /// using its ReadyToRun code. Needs `COR_PRF_MONITOR_CACHE_SEARCHES`.
    fn jit_cached_function_search_started(
        &self,
        function: FunctionId,
        use_cached_function: &mut bool,
    ) -> Result<()> {
        Ok(())
    }
    /// `result`: `COR_PRF_CACHED_FUNCTION_FOUND` (0) or `COR_PRF_CACHED_FUNCTION_NOT_FOUND`.
    fn jit_cached_function_search_finished(&self, function: FunctionId, result: u32) -> Result<()> {
        Ok(())
    }
    fn jit_function_pitched(&self, function: FunctionId) -> Result<()> {
        Ok(())
    }
    /// Set `*should_inline = false` to prevent this inlining.
    fn jit_inlining(
        &self,
        caller: FunctionId,
        callee: FunctionId,
        should_inline: &mut bool,
    ) -> Result<()> {
        Ok(())
    }
    fn thread_created(&self, thread: ThreadId) -> Result<()> {
        Ok(())
    }
    /// Last callback for `thread`; block here until your own uses of the id (stack walks)
    /// are finished.
    fn thread_destroyed(&self, thread: ThreadId) -> Result<()> {
        Ok(())
    }
    /// `os_thread_id`: the OS thread id (`gettid()` on Linux).
    fn thread_assigned_to_os_thread(
        &self,
        managed_thread: ThreadId,
        os_thread_id: u32,
    ) -> Result<()> {
        Ok(())
    }
    /// .NET Framework remoting; never called by CoreCLR.
    fn remoting_client_invocation_started(&self) -> Result<()> {
        Ok(())
    }
    fn remoting_client_sending_message(&self, cookie: Option<&GUID>, is_async: bool) -> Result<()> {
        Ok(())
    }
    fn remoting_client_receiving_reply(&self, cookie: Option<&GUID>, is_async: bool) -> Result<()> {
        Ok(())
    }
    fn remoting_client_invocation_finished(&self) -> Result<()> {
        Ok(())
    }
    fn remoting_server_receiving_message(
        &self,
        cookie: Option<&GUID>,
        is_async: bool,
    ) -> Result<()> {
        Ok(())
    }
    fn remoting_server_invocation_started(&self) -> Result<()> {
        Ok(())
    }
    fn remoting_server_invocation_returned(&self) -> Result<()> {
        Ok(())
    }
    fn remoting_server_sending_reply(&self, cookie: Option<&GUID>, is_async: bool) -> Result<()> {
        Ok(())
    }
    /// `reason`: `COR_PRF_TRANSITION_CALL` (0) or `COR_PRF_TRANSITION_RETURN` (1).
    /// `function` is null for a `calli` P/Invoke.
    fn unmanaged_to_managed_transition(&self, function: FunctionId, reason: u32) -> Result<()> {
        Ok(())
    }
    /// `reason`: `COR_PRF_TRANSITION_CALL` (0) or `COR_PRF_TRANSITION_RETURN` (1).
    fn managed_to_unmanaged_transition(&self, function: FunctionId, reason: u32) -> Result<()> {
        Ok(())
    }
    /// `reason`: a `COR_PRF_SUSPEND_REASON` (`COR_PRF_SUSPEND_FOR_GC`, …).
    fn runtime_suspend_started(&self, reason: u32) -> Result<()> {
        Ok(())
    }
    fn runtime_suspend_finished(&self) -> Result<()> {
        Ok(())
    }
    fn runtime_suspend_aborted(&self) -> Result<()> {
        Ok(())
    }
    fn runtime_resume_started(&self) -> Result<()> {
        Ok(())
    }
    fn runtime_resume_finished(&self) -> Result<()> {
        Ok(())
    }
    fn runtime_thread_suspended(&self, thread: ThreadId) -> Result<()> {
        Ok(())
    }
    fn runtime_thread_resumed(&self, thread: ThreadId) -> Result<()> {
        Ok(())
    }
    /// Obsolete (lengths truncated to 32 bits): prefer `moved_references2`. The three
    /// slices have the same length.
    fn moved_references(
        &self,
        old_starts: &[ObjectId],
        new_starts: &[ObjectId],
        lengths: &[u32],
    ) -> Result<()> {
        Ok(())
    }
    /// Needs `COR_PRF_ENABLE_OBJECT_ALLOCATED` (startup only) and
    /// `COR_PRF_MONITOR_OBJECT_ALLOCATED`.
    fn object_allocated(&self, object: ObjectId, class: ClassId) -> Result<()> {
        Ok(())
    }
    /// Objects allocated per class since the previous GC (both slices have the same length).
    fn objects_allocated_by_class(&self, classes: &[ClassId], counts: &[u32]) -> Result<()> {
        Ok(())
    }
    /// Heap walk after a GC. Returning an error stops the walk for this GC.
    fn object_references(
        &self,
        object: ObjectId,
        class: ClassId,
        references: &[ObjectId],
    ) -> Result<()> {
        Ok(())
    }
    fn root_references(&self, roots: &[ObjectId]) -> Result<()> {
        Ok(())
    }
    fn exception_thrown(&self, thrown_object: ObjectId) -> Result<()> {
        Ok(())
    }
    fn exception_search_function_enter(&self, function: FunctionId) -> Result<()> {
        Ok(())
    }
    fn exception_search_function_leave(&self) -> Result<()> {
        Ok(())
    }
    fn exception_search_filter_enter(&self, function: FunctionId) -> Result<()> {
        Ok(())
    }
    fn exception_search_filter_leave(&self) -> Result<()> {
        Ok(())
    }
    fn exception_search_catcher_found(&self, function: FunctionId) -> Result<()> {
        Ok(())
    }
    /// Deprecated; the argument is unused.
    fn exception_os_handler_enter(&self, unused: usize) -> Result<()> {
        Ok(())
    }
    /// Deprecated; the argument is unused.
    fn exception_os_handler_leave(&self, unused: usize) -> Result<()> {
        Ok(())
    }
    fn exception_unwind_function_enter(&self, function: FunctionId) -> Result<()> {
        Ok(())
    }
    /// A frame was popped by the exception (shadow stacks pop here: no Leave follows).
    fn exception_unwind_function_leave(&self) -> Result<()> {
        Ok(())
    }
    fn exception_unwind_finally_enter(&self, function: FunctionId) -> Result<()> {
        Ok(())
    }
    fn exception_unwind_finally_leave(&self) -> Result<()> {
        Ok(())
    }
    fn exception_catcher_enter(&self, function: FunctionId, object: ObjectId) -> Result<()> {
        Ok(())
    }
    fn exception_catcher_leave(&self) -> Result<()> {
        Ok(())
    }
    /// COM interop (Windows). `vtable` is the runtime's COM vtable, valid until
    /// `com_classic_vtable_destroyed`.
    fn com_classic_vtable_created(
        &self,
        wrapped_class: ClassId,
        implemented_iid: &GUID,
        vtable: *mut c_void,
        slots: u32,
    ) -> Result<()> {
        Ok(())
    }
    fn com_classic_vtable_destroyed(
        &self,
        wrapped_class: ClassId,
        implemented_iid: &GUID,
        vtable: *mut c_void,
    ) -> Result<()> {
        Ok(())
    }
    /// Deprecated; no longer delivered.
    fn exception_clr_catcher_found(&self) -> Result<()> {
        Ok(())
    }
    /// Deprecated; no longer delivered.
    fn exception_clr_catcher_execute(&self) -> Result<()> {
        Ok(())
    }

    // ---- ICorProfilerCallback2 -----------------------------------------------------------

    /// `name`: the new name as UTF-16 without a NUL (empty when the name was cleared); see
    /// [`utf16_lossy`](crate::utf16_lossy).
    fn thread_name_changed(&self, thread: ThreadId, name: &[u16]) -> Result<()> {
        Ok(())
    }
    /// `generation_collected[g]` tells whether generation `g` (0, 1, 2, LOH = 3, POH = 4)
    /// is collected. `reason`: `COR_PRF_GC_INDUCED` (1) or `COR_PRF_GC_OTHER` (0).
    fn garbage_collection_started(&self, generation_collected: &[bool], reason: u32) -> Result<()> {
        Ok(())
    }
    /// Obsolete (lengths truncated to 32 bits): prefer `surviving_references2`.
    fn surviving_references(&self, starts: &[ObjectId], lengths: &[u32]) -> Result<()> {
        Ok(())
    }
    fn garbage_collection_finished(&self) -> Result<()> {
        Ok(())
    }
    /// `finalizer_flags`: `COR_PRF_FINALIZER_CRITICAL` or 0.
    fn finalizeable_object_queued(&self, finalizer_flags: u32, object: ObjectId) -> Result<()> {
        Ok(())
    }
    /// Four parallel slices of one length: `kinds` are `COR_PRF_GC_ROOT_KIND`s, `flags`
    /// `COR_PRF_GC_ROOT_FLAGS`, `root_ids` a FunctionID (stack roots), a GCHandleID
    /// (handle roots) or 0.
    fn root_references2(
        &self,
        roots: &[ObjectId],
        kinds: &[u32],
        flags: &[u32],
        root_ids: &[usize],
    ) -> Result<()> {
        Ok(())
    }
    fn handle_created(&self, handle: GcHandleId, initial_object: ObjectId) -> Result<()> {
        Ok(())
    }
    fn handle_destroyed(&self, handle: GcHandleId) -> Result<()> {
        Ok(())
    }

    // ---- ICorProfilerCallback3 -----------------------------------------------------------

    /// Attach: called on the diagnostics-server thread with the trigger's client data. Only
    /// `COR_PRF_ALLOWABLE_AFTER_ATTACH` flags may be set. The default returns `E_NOTIMPL`,
    /// which the runtime reports as `CORPROF_E_PROFILER_NOT_ATTACHABLE`.
    fn initialize_for_attach(&self, info: ProfilerInfo, client_data: &[u8]) -> Result<()> {
        Err(HResult::E_NOTIMPL)
    }
    /// After a successful attach: enumerate what already exists (`enum_modules`,
    /// `enum_threads`, …); load callbacks may report the same ids concurrently.
    fn profiler_attach_complete(&self) -> Result<()> {
        Ok(())
    }
    /// Detach is complete: do minimal work; the library is unloaded right after.
    fn profiler_detach_succeeded(&self) -> Result<()> {
        Ok(())
    }

    // ---- ICorProfilerCallback4 -----------------------------------------------------------

    fn rejit_compilation_started(
        &self,
        function: FunctionId,
        rejit_id: ReJitId,
        is_safe_to_block: bool,
    ) -> Result<()> {
        Ok(())
    }
    /// Supply the new IL and codegen flags through `control` (valid during this call).
    fn get_rejit_parameters(
        &self,
        module: ModuleId,
        method: u32,
        control: FunctionControl<'_>,
    ) -> Result<()> {
        Ok(())
    }
    fn rejit_compilation_finished(
        &self,
        function: FunctionId,
        rejit_id: ReJitId,
        status: HResult,
        is_safe_to_block: bool,
    ) -> Result<()> {
        Ok(())
    }
    fn rejit_error(
        &self,
        module: ModuleId,
        method: u32,
        function: FunctionId,
        status: HResult,
    ) -> Result<()> {
        Ok(())
    }
    /// Objects moved by a compacting GC: `[old_starts[i], old_starts[i] + lengths[i])`
    /// now lives at `new_starts[i]`. Three parallel slices of one length.
    fn moved_references2(
        &self,
        old_starts: &[ObjectId],
        new_starts: &[ObjectId],
        lengths: &[usize],
    ) -> Result<()> {
        Ok(())
    }
    /// Objects that survived a non-compacting GC. Two parallel slices of one length.
    fn surviving_references2(&self, starts: &[ObjectId], lengths: &[usize]) -> Result<()> {
        Ok(())
    }

    // ---- ICorProfilerCallback5 … 11 ------------------------------------------------------

    /// Dependent handles (ConditionalWeakTable): three parallel slices of one length.
    fn conditional_weak_table_element_references(
        &self,
        keys: &[ObjectId],
        values: &[ObjectId],
        root_ids: &[GcHandleId],
    ) -> Result<()> {
        Ok(())
    }
    /// Not called by CoreCLR. `assembly_path`: UTF-16 without the NUL.
    fn get_assembly_references(
        &self,
        assembly_path: &[u16],
        provider: AssemblyReferenceProvider<'_>,
    ) -> Result<()> {
        Ok(())
    }
    fn module_in_memory_symbols_updated(&self, module: ModuleId) -> Result<()> {
        Ok(())
    }
    /// IL stubs and LCG methods. `il_header`: the method's IL header and body.
    fn dynamic_method_jit_compilation_started(
        &self,
        function: FunctionId,
        is_safe_to_block: bool,
        il_header: &[u8],
    ) -> Result<()> {
        Ok(())
    }
    fn dynamic_method_jit_compilation_finished(
        &self,
        function: FunctionId,
        status: HResult,
        is_safe_to_block: bool,
    ) -> Result<()> {
        Ok(())
    }
    fn dynamic_method_unloaded(&self, function: FunctionId) -> Result<()> {
        Ok(())
    }
    /// An event of an in-process EventPipe session (ICorProfilerInfo12).
    fn event_pipe_event_delivered(&self, event: &EventPipeEvent<'_>) -> Result<()> {
        Ok(())
    }
    /// `provider`: an `EVENTPIPE_PROVIDER` handle.
    fn event_pipe_provider_created(&self, provider: usize) -> Result<()> {
        Ok(())
    }
    /// Notification-only profilers (`CORECLR_NOTIFICATION_PROFILERS`): set
    /// `*notification_only = true` to load as one.
    fn load_as_notification_only(&self, notification_only: &mut bool) -> Result<()> {
        Ok(())
    }
}

/// One EventPipe event (`ICorProfilerCallback10::EventPipeEventDelivered`); every borrow
/// is valid for the duration of the callback.
#[derive(Debug, Clone, Copy)]
pub struct EventPipeEvent<'a> {
    /// `EVENTPIPE_PROVIDER` handle.
    pub provider: usize,
    pub event_id: u32,
    pub event_version: u32,
    /// The event's metadata blob (name and field descriptions).
    pub metadata: &'a [u8],
    /// The payload.
    pub data: &'a [u8],
    pub activity_id: Option<&'a GUID>,
    pub related_activity_id: Option<&'a GUID>,
    pub thread: ThreadId,
    /// Instruction pointers, leaf first (empty unless the event asked for a stack).
    pub stack: &'a [usize],
}

/// `ICorProfilerFunctionControl`, lent to
/// [`get_rejit_parameters`](ProfilerCallback::get_rejit_parameters) for the duration of
/// the call.
#[derive(Debug)]
pub struct FunctionControl<'a> {
    ptr: NonNull<sys::ICorProfilerFunctionControl>,
    _call: PhantomData<&'a ()>,
}

impl FunctionControl<'_> {
    /// # Safety
    /// `ptr` must be a live `ICorProfilerFunctionControl` for the returned lifetime.
    pub(crate) unsafe fn new<'a>(
        ptr: NonNull<sys::ICorProfilerFunctionControl>,
    ) -> FunctionControl<'a> {
        FunctionControl {
            ptr,
            _call: PhantomData,
        }
    }

    /// `SetCodegenFlags`: `COR_PRF_CODEGEN_FLAGS` bits.
    pub fn set_codegen_flags(&self, flags: u32) -> Result<()> {
        let p = self.ptr.as_ptr();
        // SAFETY: `p` is the runtime's function-control object, alive during the callback
        // that lent it (safety.md R3, R4).
        check(unsafe { ((*(*p).vtbl).SetCodegenFlags)(p, flags) })
    }

    /// `SetILFunctionBody`: the new method (header + IL). The runtime copies the bytes.
    pub fn set_il_function_body(&self, method: &[u8]) -> Result<()> {
        let len = u32::try_from(method.len()).map_err(|_| HResult::E_INVALIDARG)?;
        let p = self.ptr.as_ptr();
        // SAFETY: as above; `method` is valid for `len` bytes during the call (R5).
        check(unsafe { ((*(*p).vtbl).SetILFunctionBody)(p, len, method.as_ptr()) })
    }

    /// The raw interface, valid during the callback.
    pub fn as_raw(&self) -> *mut sys::ICorProfilerFunctionControl {
        self.ptr.as_ptr()
    }
}

/// `ICorProfilerAssemblyReferenceProvider`, lent to
/// [`get_assembly_references`](ProfilerCallback::get_assembly_references) for the call.
#[derive(Debug)]
pub struct AssemblyReferenceProvider<'a> {
    ptr: NonNull<sys::ICorProfilerAssemblyReferenceProvider>,
    _call: PhantomData<&'a ()>,
}

impl AssemblyReferenceProvider<'_> {
    /// # Safety
    /// `ptr` must be a live provider for the returned lifetime.
    pub(crate) unsafe fn new<'a>(
        ptr: NonNull<sys::ICorProfilerAssemblyReferenceProvider>,
    ) -> AssemblyReferenceProvider<'a> {
        AssemblyReferenceProvider {
            ptr,
            _call: PhantomData,
        }
    }

    /// `AddAssemblyReference`.
    ///
    /// # Safety
    /// Every pointer in `info` must be valid as `COR_PRF_ASSEMBLY_REFERENCE_INFO` requires
    /// (name NUL-terminated, key and hash buffers of the stated sizes).
    pub unsafe fn add_assembly_reference(
        &self,
        info: &sys::COR_PRF_ASSEMBLY_REFERENCE_INFO,
    ) -> Result<()> {
        let p = self.ptr.as_ptr();
        // SAFETY: `p` is alive during the callback (R4); `info`'s pointers are the
        // caller's obligation per this function's contract.
        check(unsafe { ((*(*p).vtbl).AddAssemblyReference)(p, info) })
    }

    /// The raw interface, valid during the callback.
    pub fn as_raw(&self) -> *mut sys::ICorProfilerAssemblyReferenceProvider {
        self.ptr.as_ptr()
    }
}
