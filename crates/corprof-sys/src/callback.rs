//! `ICorProfilerCallback` … `ICorProfilerCallback11`: implemented by the profiler, called by the
//! runtime. Every method returns `HRESULT` (the runtime mostly ignores it).

use core::ffi::{c_int, c_void};

use crate::com::{IUnknown, IUnknownVtbl};
use crate::flags::{
    COR_PRF_GC_REASON, COR_PRF_GC_ROOT_FLAGS, COR_PRF_GC_ROOT_KIND, COR_PRF_JIT_CACHE,
    COR_PRF_SUSPEND_REASON, COR_PRF_TRANSITION_REASON,
};
use crate::misc::{ICorProfilerAssemblyReferenceProvider, ICorProfilerFunctionControl};
use crate::types::{
    AppDomainID, AssemblyID, BOOL, ClassID, DWORD, EVENTPIPE_PROVIDER, FunctionID, GCHandleID,
    GUID, HRESULT, LPCBYTE, LPCGUID, ModuleID, ObjectID, REFGUID, ReJITID, SIZE_T, ThreadID, UINT,
    UINT_PTR, ULONG, WCHAR, mdMethodDef,
};

com_interface! {
    /// The primary callback interface (V1): 69 methods, slots 3..=71.
    interface ICorProfilerCallback(ICorProfilerCallbackVtbl): IUnknown(IUnknownVtbl),
    IID_ICorProfilerCallback = 0x176FBED1_A55C_4796_98CA_A9DA0EF883E7;
    {
        /// Startup: QI `p_icor_profiler_info_unk` for `ICorProfilerInfoN`. The only chance to
        /// set immutable event-mask flags.
        fn Initialize(p_icor_profiler_info_unk: *mut IUnknown) -> HRESULT;
        fn Shutdown() -> HRESULT;
        fn AppDomainCreationStarted(app_domain_id: AppDomainID) -> HRESULT;
        fn AppDomainCreationFinished(app_domain_id: AppDomainID, hr_status: HRESULT) -> HRESULT;
        fn AppDomainShutdownStarted(app_domain_id: AppDomainID) -> HRESULT;
        fn AppDomainShutdownFinished(app_domain_id: AppDomainID, hr_status: HRESULT) -> HRESULT;
        fn AssemblyLoadStarted(assembly_id: AssemblyID) -> HRESULT;
        fn AssemblyLoadFinished(assembly_id: AssemblyID, hr_status: HRESULT) -> HRESULT;
        fn AssemblyUnloadStarted(assembly_id: AssemblyID) -> HRESULT;
        fn AssemblyUnloadFinished(assembly_id: AssemblyID, hr_status: HRESULT) -> HRESULT;
        fn ModuleLoadStarted(module_id: ModuleID) -> HRESULT;
        fn ModuleLoadFinished(module_id: ModuleID, hr_status: HRESULT) -> HRESULT;
        fn ModuleUnloadStarted(module_id: ModuleID) -> HRESULT;
        fn ModuleUnloadFinished(module_id: ModuleID, hr_status: HRESULT) -> HRESULT;
        fn ModuleAttachedToAssembly(module_id: ModuleID, assembly_id: AssemblyID) -> HRESULT;
        fn ClassLoadStarted(class_id: ClassID) -> HRESULT;
        fn ClassLoadFinished(class_id: ClassID, hr_status: HRESULT) -> HRESULT;
        fn ClassUnloadStarted(class_id: ClassID) -> HRESULT;
        fn ClassUnloadFinished(class_id: ClassID, hr_status: HRESULT) -> HRESULT;
        fn FunctionUnloadStarted(function_id: FunctionID) -> HRESULT;
        fn JITCompilationStarted(function_id: FunctionID, f_is_safe_to_block: BOOL) -> HRESULT;
        fn JITCompilationFinished(function_id: FunctionID, hr_status: HRESULT, f_is_safe_to_block: BOOL) -> HRESULT;
        fn JITCachedFunctionSearchStarted(function_id: FunctionID, pb_use_cached_function: *mut BOOL) -> HRESULT;
        fn JITCachedFunctionSearchFinished(function_id: FunctionID, result: COR_PRF_JIT_CACHE) -> HRESULT;
        fn JITFunctionPitched(function_id: FunctionID) -> HRESULT;
        fn JITInlining(caller_id: FunctionID, callee_id: FunctionID, pf_should_inline: *mut BOOL) -> HRESULT;
        fn ThreadCreated(thread_id: ThreadID) -> HRESULT;
        fn ThreadDestroyed(thread_id: ThreadID) -> HRESULT;
        fn ThreadAssignedToOSThread(managed_thread_id: ThreadID, os_thread_id: DWORD) -> HRESULT;
        fn RemotingClientInvocationStarted() -> HRESULT;
        fn RemotingClientSendingMessage(p_cookie: *mut GUID, f_is_async: BOOL) -> HRESULT;
        fn RemotingClientReceivingReply(p_cookie: *mut GUID, f_is_async: BOOL) -> HRESULT;
        fn RemotingClientInvocationFinished() -> HRESULT;
        fn RemotingServerReceivingMessage(p_cookie: *mut GUID, f_is_async: BOOL) -> HRESULT;
        fn RemotingServerInvocationStarted() -> HRESULT;
        fn RemotingServerInvocationReturned() -> HRESULT;
        fn RemotingServerSendingReply(p_cookie: *mut GUID, f_is_async: BOOL) -> HRESULT;
        fn UnmanagedToManagedTransition(function_id: FunctionID, reason: COR_PRF_TRANSITION_REASON) -> HRESULT;
        fn ManagedToUnmanagedTransition(function_id: FunctionID, reason: COR_PRF_TRANSITION_REASON) -> HRESULT;
        fn RuntimeSuspendStarted(suspend_reason: COR_PRF_SUSPEND_REASON) -> HRESULT;
        fn RuntimeSuspendFinished() -> HRESULT;
        fn RuntimeSuspendAborted() -> HRESULT;
        fn RuntimeResumeStarted() -> HRESULT;
        fn RuntimeResumeFinished() -> HRESULT;
        fn RuntimeThreadSuspended(thread_id: ThreadID) -> HRESULT;
        fn RuntimeThreadResumed(thread_id: ThreadID) -> HRESULT;
        /// Obsolete (ranges > 4 GB truncated); see `ICorProfilerCallback4::MovedReferences2`.
        fn MovedReferences(
            c_moved_object_id_ranges: ULONG,
            old_object_id_range_start: *mut ObjectID,
            new_object_id_range_start: *mut ObjectID,
            c_object_id_range_length: *mut ULONG,
        ) -> HRESULT;
        fn ObjectAllocated(object_id: ObjectID, class_id: ClassID) -> HRESULT;
        fn ObjectsAllocatedByClass(c_class_count: ULONG, class_ids: *mut ClassID, c_objects: *mut ULONG) -> HRESULT;
        fn ObjectReferences(object_id: ObjectID, class_id: ClassID, c_object_refs: ULONG, object_ref_ids: *mut ObjectID) -> HRESULT;
        fn RootReferences(c_root_refs: ULONG, root_ref_ids: *mut ObjectID) -> HRESULT;
        fn ExceptionThrown(thrown_object_id: ObjectID) -> HRESULT;
        fn ExceptionSearchFunctionEnter(function_id: FunctionID) -> HRESULT;
        fn ExceptionSearchFunctionLeave() -> HRESULT;
        fn ExceptionSearchFilterEnter(function_id: FunctionID) -> HRESULT;
        fn ExceptionSearchFilterLeave() -> HRESULT;
        fn ExceptionSearchCatcherFound(function_id: FunctionID) -> HRESULT;
        /// Deprecated; the parameter is named `__unused` in the IDL.
        fn ExceptionOSHandlerEnter(unused: UINT_PTR) -> HRESULT;
        /// Deprecated; the parameter is named `__unused` in the IDL.
        fn ExceptionOSHandlerLeave(unused: UINT_PTR) -> HRESULT;
        fn ExceptionUnwindFunctionEnter(function_id: FunctionID) -> HRESULT;
        fn ExceptionUnwindFunctionLeave() -> HRESULT;
        fn ExceptionUnwindFinallyEnter(function_id: FunctionID) -> HRESULT;
        fn ExceptionUnwindFinallyLeave() -> HRESULT;
        fn ExceptionCatcherEnter(function_id: FunctionID, object_id: ObjectID) -> HRESULT;
        fn ExceptionCatcherLeave() -> HRESULT;
        fn COMClassicVTableCreated(wrapped_class_id: ClassID, implemented_iid: REFGUID, p_vtable: *mut c_void, c_slots: ULONG) -> HRESULT;
        fn COMClassicVTableDestroyed(wrapped_class_id: ClassID, implemented_iid: REFGUID, p_vtable: *mut c_void) -> HRESULT;
        /// Deprecated, no longer delivered.
        fn ExceptionCLRCatcherFound() -> HRESULT;
        /// Deprecated, no longer delivered.
        fn ExceptionCLRCatcherExecute() -> HRESULT;
    }
}

com_interface! {
    /// V2 callbacks (threads names, GC, handles).
    interface ICorProfilerCallback2(ICorProfilerCallback2Vtbl): ICorProfilerCallback(ICorProfilerCallbackVtbl),
    IID_ICorProfilerCallback2 = 0x8A8CC829_CCF2_49FE_BBAE_0F022228071A;
    {
        /// `name` is not NUL-terminated; `cch_name` UTF-16 units.
        fn ThreadNameChanged(thread_id: ThreadID, cch_name: ULONG, name: *mut WCHAR) -> HRESULT;
        /// `generation_collected[i]` is TRUE if generation `i` is collected.
        fn GarbageCollectionStarted(c_generations: c_int, generation_collected: *mut BOOL, reason: COR_PRF_GC_REASON) -> HRESULT;
        /// Obsolete (ranges > 4 GB truncated); see `ICorProfilerCallback4::SurvivingReferences2`.
        fn SurvivingReferences(
            c_surviving_object_id_ranges: ULONG,
            object_id_range_start: *mut ObjectID,
            c_object_id_range_length: *mut ULONG,
        ) -> HRESULT;
        fn GarbageCollectionFinished() -> HRESULT;
        /// `finalizer_flags`: `COR_PRF_FINALIZER_FLAGS`.
        fn FinalizeableObjectQueued(finalizer_flags: DWORD, object_id: ObjectID) -> HRESULT;
        fn RootReferences2(
            c_root_refs: ULONG,
            root_ref_ids: *mut ObjectID,
            root_kinds: *mut COR_PRF_GC_ROOT_KIND,
            root_flags: *mut COR_PRF_GC_ROOT_FLAGS,
            root_ids: *mut UINT_PTR,
        ) -> HRESULT;
        fn HandleCreated(handle_id: GCHandleID, initial_object_id: ObjectID) -> HRESULT;
        fn HandleDestroyed(handle_id: GCHandleID) -> HRESULT;
    }
}

com_interface! {
    /// V4 (attach/detach) callbacks. The runtime requires this interface for attach.
    interface ICorProfilerCallback3(ICorProfilerCallback3Vtbl): ICorProfilerCallback2(ICorProfilerCallback2Vtbl),
    IID_ICorProfilerCallback3 = 0x4FD2ED52_7731_4B8D_9469_03D2CC3086C5;
    {
        fn InitializeForAttach(p_cor_profiler_info_unk: *mut IUnknown, pv_client_data: *mut c_void, cb_client_data: UINT) -> HRESULT;
        fn ProfilerAttachComplete() -> HRESULT;
        fn ProfilerDetachSucceeded() -> HRESULT;
    }
}

com_interface! {
    /// ReJIT and 64-bit-safe moved/surviving references.
    interface ICorProfilerCallback4(ICorProfilerCallback4Vtbl): ICorProfilerCallback3(ICorProfilerCallback3Vtbl),
    IID_ICorProfilerCallback4 = 0x7B63B2E3_107D_4D48_B2F6_F61E229470D2;
    {
        fn ReJITCompilationStarted(function_id: FunctionID, rejit_id: ReJITID, f_is_safe_to_block: BOOL) -> HRESULT;
        fn GetReJITParameters(module_id: ModuleID, method_id: mdMethodDef, p_function_control: *mut ICorProfilerFunctionControl) -> HRESULT;
        fn ReJITCompilationFinished(function_id: FunctionID, rejit_id: ReJITID, hr_status: HRESULT, f_is_safe_to_block: BOOL) -> HRESULT;
        fn ReJITError(module_id: ModuleID, method_id: mdMethodDef, function_id: FunctionID, hr_status: HRESULT) -> HRESULT;
        fn MovedReferences2(
            c_moved_object_id_ranges: ULONG,
            old_object_id_range_start: *mut ObjectID,
            new_object_id_range_start: *mut ObjectID,
            c_object_id_range_length: *mut SIZE_T,
        ) -> HRESULT;
        fn SurvivingReferences2(
            c_surviving_object_id_ranges: ULONG,
            object_id_range_start: *mut ObjectID,
            c_object_id_range_length: *mut SIZE_T,
        ) -> HRESULT;
    }
}

com_interface! {
    /// Dependent handles (ConditionalWeakTable).
    interface ICorProfilerCallback5(ICorProfilerCallback5Vtbl): ICorProfilerCallback4(ICorProfilerCallback4Vtbl),
    IID_ICorProfilerCallback5 = 0x8DFBA405_8C9F_45F8_BFFA_83B14CEF78B5;
    {
        fn ConditionalWeakTableElementReferences(
            c_root_refs: ULONG,
            key_ref_ids: *mut ObjectID,
            value_ref_ids: *mut ObjectID,
            root_ids: *mut GCHandleID,
        ) -> HRESULT;
    }
}

com_interface! {
    /// Assembly reference closure walk (never called by CoreCLR).
    interface ICorProfilerCallback6(ICorProfilerCallback6Vtbl): ICorProfilerCallback5(ICorProfilerCallback5Vtbl),
    IID_ICorProfilerCallback6 = 0xFC13DF4B_4448_4F4F_950C_BA8D19D00C36;
    {
        fn GetAssemblyReferences(wsz_assembly_path: *const WCHAR, p_asm_ref_provider: *mut ICorProfilerAssemblyReferenceProvider) -> HRESULT;
    }
}

com_interface! {
    /// In-memory symbols (COR_PRF_HIGH_IN_MEMORY_SYMBOLS_UPDATED).
    interface ICorProfilerCallback7(ICorProfilerCallback7Vtbl): ICorProfilerCallback6(ICorProfilerCallback6Vtbl),
    IID_ICorProfilerCallback7 = 0xF76A2DBA_1D52_4539_866C_2AA518F9EFC3;
    {
        fn ModuleInMemorySymbolsUpdated(module_id: ModuleID) -> HRESULT;
    }
}

com_interface! {
    /// Dynamic methods (IL stubs, LCG) JIT events.
    interface ICorProfilerCallback8(ICorProfilerCallback8Vtbl): ICorProfilerCallback7(ICorProfilerCallback7Vtbl),
    IID_ICorProfilerCallback8 = 0x5BED9B15_C079_4D47_BFE2_215A140C07E0;
    {
        /// `p_il_header` is only valid during the callback.
        fn DynamicMethodJITCompilationStarted(function_id: FunctionID, f_is_safe_to_block: BOOL, p_il_header: LPCBYTE, cb_il_header: ULONG) -> HRESULT;
        fn DynamicMethodJITCompilationFinished(function_id: FunctionID, hr_status: HRESULT, f_is_safe_to_block: BOOL) -> HRESULT;
    }
}

com_interface! {
    /// Dynamic method unload (COR_PRF_HIGH_MONITOR_DYNAMIC_FUNCTION_UNLOADS).
    interface ICorProfilerCallback9(ICorProfilerCallback9Vtbl): ICorProfilerCallback8(ICorProfilerCallback8Vtbl),
    IID_ICorProfilerCallback9 = 0x27583EC3_C8F5_482F_8052_194B8CE4705A;
    {
        fn DynamicMethodUnloaded(function_id: FunctionID) -> HRESULT;
    }
}

com_interface! {
    /// EventPipe delivery (COR_PRF_HIGH_MONITOR_EVENT_PIPE). All pointers valid only during the call.
    interface ICorProfilerCallback10(ICorProfilerCallback10Vtbl): ICorProfilerCallback9(ICorProfilerCallback9Vtbl),
    IID_ICorProfilerCallback10 = 0xCEC5B60E_C69C_495F_87F6_84D28EE16FFB;
    {
        fn EventPipeEventDelivered(
            provider: EVENTPIPE_PROVIDER,
            event_id: DWORD,
            event_version: DWORD,
            cb_metadata_blob: ULONG,
            metadata_blob: LPCBYTE,
            cb_event_data: ULONG,
            event_data: LPCBYTE,
            p_activity_id: LPCGUID,
            p_related_activity_id: LPCGUID,
            event_thread: ThreadID,
            num_stack_frames: ULONG,
            stack_frames: *mut UINT_PTR,
        ) -> HRESULT;
        fn EventPipeProviderCreated(provider: EVENTPIPE_PROVIDER) -> HRESULT;
    }
}

com_interface! {
    /// Notification-only profilers (CORECLR_NOTIFICATION_PROFILERS). Highest callback version.
    interface ICorProfilerCallback11(ICorProfilerCallback11Vtbl): ICorProfilerCallback10(ICorProfilerCallback10Vtbl),
    IID_ICorProfilerCallback11 = 0x42350846_AAED_47F7_B128_FD0C98881CDE;
    {
        fn LoadAsNotificationOnly(pb_notification_only: *mut BOOL) -> HRESULT;
    }
}
