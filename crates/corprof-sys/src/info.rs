//! `ICorProfilerInfo` … `ICorProfilerInfo15`: implemented by the runtime, called by the profiler.
//!
//! To call a method introduced by version N on a pointer `p: *mut ICorProfilerInfoM` (M ≥ N),
//! walk `base` down to the version-N vtable and cast `this`:
//! `((*(*p).vtbl).base.base.GetFunctionInfo2)(p.cast::<ICorProfilerInfo2>(), ...)`.

use core::ffi::{c_int, c_void};

use crate::com::{IUnknown, IUnknownVtbl};
use crate::corhdr::CorElementType;
use crate::flags::{COR_PRF_HANDLE_TYPE, COR_PRF_RUNTIME_TYPE, COR_PRF_STATIC_TYPE};
use crate::hooks::{
    EventPipeProviderCallback, FunctionEnter, FunctionEnter2, FunctionEnter3,
    FunctionEnter3WithInfo, FunctionIDMapper, FunctionIDMapper2, FunctionLeave, FunctionLeave2,
    FunctionLeave3, FunctionLeave3WithInfo, FunctionTailcall, FunctionTailcall2, FunctionTailcall3,
    FunctionTailcall3WithInfo, ObjectCallback, ObjectReferenceCallback, StackSnapshotCallback,
};
use crate::misc::{
    ICorProfilerFunctionEnum, ICorProfilerMethodEnum, ICorProfilerModuleEnum,
    ICorProfilerObjectEnum, ICorProfilerThreadEnum, IMethodMalloc,
};
use crate::structs::{
    COR_DEBUG_IL_TO_NATIVE_MAP, COR_FIELD_OFFSET, COR_IL_MAP, COR_PRF_CODE_INFO,
    COR_PRF_EVENT_DATA, COR_PRF_EVENTPIPE_PARAM_DESC, COR_PRF_EVENTPIPE_PROVIDER_CONFIG,
    COR_PRF_EX_CLAUSE_INFO, COR_PRF_FUNCTION_ARGUMENT_INFO, COR_PRF_FUNCTION_ARGUMENT_RANGE,
    COR_PRF_GC_GENERATION_RANGE, COR_PRF_NONGC_HEAP_RANGE,
};
use crate::types::{
    AppDomainID, AssemblyID, BOOL, BYTE, COR_PRF_ELT_INFO, COR_PRF_FRAME_INFO, ClassID, ContextID,
    DWORD, EVENTPIPE_EVENT, EVENTPIPE_PROVIDER, EVENTPIPE_SESSION, FunctionID, HANDLE, HRESULT,
    LPCBYTE, LPCGUID, ModuleID, ObjectHandleID, ObjectID, PCCOR_SIGNATURE, ProcessID, REFIID,
    ReJITID, SIZE_T, ThreadID, UINT_PTR, UINT8, UINT32, UINT64, ULONG, ULONG32, USHORT, WCHAR,
    mdFieldDef, mdMethodDef, mdToken, mdTypeDef,
};

com_interface! {
    /// V1 info interface: 33 methods, slots 3..=35.
    interface ICorProfilerInfo(ICorProfilerInfoVtbl): IUnknown(IUnknownVtbl),
    IID_ICorProfilerInfo = 0x28B5557D_3F3F_48B4_90B2_5F9EEA2F6C48;
    {
        fn GetClassFromObject(object_id: ObjectID, p_class_id: *mut ClassID) -> HRESULT;
        /// Does not work for generic types; use `GetClassFromTokenAndTypeArgs`.
        fn GetClassFromToken(module_id: ModuleID, type_def: mdTypeDef, p_class_id: *mut ClassID) -> HRESULT;
        fn GetCodeInfo(function_id: FunctionID, p_start: *mut LPCBYTE, pc_size: *mut ULONG) -> HRESULT;
        fn GetEventMask(pdw_events: *mut DWORD) -> HRESULT;
        fn GetFunctionFromIP(ip: LPCBYTE, p_function_id: *mut FunctionID) -> HRESULT;
        fn GetFunctionFromToken(module_id: ModuleID, token: mdToken, p_function_id: *mut FunctionID) -> HRESULT;
        fn GetHandleFromThread(thread_id: ThreadID, ph_thread: *mut HANDLE) -> HRESULT;
        /// Obsolete for objects > 4 GB; use `GetObjectSize2`.
        fn GetObjectSize(object_id: ObjectID, pc_size: *mut ULONG) -> HRESULT;
        /// S_OK if an array class, S_FALSE if not.
        fn IsArrayClass(class_id: ClassID, p_base_elem_type: *mut CorElementType, p_base_class_id: *mut ClassID, pc_rank: *mut ULONG) -> HRESULT;
        fn GetThreadInfo(thread_id: ThreadID, pdw_win32_thread_id: *mut DWORD) -> HRESULT;
        fn GetCurrentThreadID(p_thread_id: *mut ThreadID) -> HRESULT;
        fn GetClassIDInfo(class_id: ClassID, p_module_id: *mut ModuleID, p_type_def_token: *mut mdTypeDef) -> HRESULT;
        fn GetFunctionInfo(function_id: FunctionID, p_class_id: *mut ClassID, p_module_id: *mut ModuleID, p_token: *mut mdToken) -> HRESULT;
        /// `dw_events`: `COR_PRF_MONITOR` bits.
        fn SetEventMask(dw_events: DWORD) -> HRESULT;
        fn SetEnterLeaveFunctionHooks(
            p_func_enter: Option<FunctionEnter>,
            p_func_leave: Option<FunctionLeave>,
            p_func_tailcall: Option<FunctionTailcall>,
        ) -> HRESULT;
        fn SetFunctionIDMapper(p_func: Option<FunctionIDMapper>) -> HRESULT;
        fn GetTokenAndMetaDataFromFunction(function_id: FunctionID, riid: REFIID, pp_import: *mut *mut IUnknown, p_token: *mut mdToken) -> HRESULT;
        fn GetModuleInfo(
            module_id: ModuleID,
            pp_base_load_address: *mut LPCBYTE,
            cch_name: ULONG,
            pcch_name: *mut ULONG,
            sz_name: *mut WCHAR,
            p_assembly_id: *mut AssemblyID,
        ) -> HRESULT;
        /// `dw_open_flags`: `ofRead` or `ofWrite`. S_FALSE + null for modules without metadata.
        fn GetModuleMetaData(module_id: ModuleID, dw_open_flags: DWORD, riid: REFIID, pp_out: *mut *mut IUnknown) -> HRESULT;
        fn GetILFunctionBody(module_id: ModuleID, method_id: mdMethodDef, pp_method_header: *mut LPCBYTE, pcb_method_size: *mut ULONG) -> HRESULT;
        fn GetILFunctionBodyAllocator(module_id: ModuleID, pp_malloc: *mut *mut IMethodMalloc) -> HRESULT;
        fn SetILFunctionBody(module_id: ModuleID, methodid: mdMethodDef, pb_new_il_method_header: LPCBYTE) -> HRESULT;
        fn GetAppDomainInfo(
            app_domain_id: AppDomainID,
            cch_name: ULONG,
            pcch_name: *mut ULONG,
            sz_name: *mut WCHAR,
            p_process_id: *mut ProcessID,
        ) -> HRESULT;
        fn GetAssemblyInfo(
            assembly_id: AssemblyID,
            cch_name: ULONG,
            pcch_name: *mut ULONG,
            sz_name: *mut WCHAR,
            p_app_domain_id: *mut AppDomainID,
            p_module_id: *mut ModuleID,
        ) -> HRESULT;
        /// Deprecated: always E_NOTIMPL.
        fn SetFunctionReJIT(function_id: FunctionID) -> HRESULT;
        fn ForceGC() -> HRESULT;
        fn SetILInstrumentedCodeMap(function_id: FunctionID, f_start_jit: BOOL, c_il_map_entries: ULONG, rg_il_map_entries: *mut COR_IL_MAP) -> HRESULT;
        /// Deprecated.
        fn GetInprocInspectionInterface(ppicd: *mut *mut IUnknown) -> HRESULT;
        /// Deprecated.
        fn GetInprocInspectionIThisThread(ppicd: *mut *mut IUnknown) -> HRESULT;
        fn GetThreadContext(thread_id: ThreadID, p_context_id: *mut ContextID) -> HRESULT;
        /// Deprecated.
        fn BeginInprocDebugging(f_this_thread_only: BOOL, pdw_profiler_context: *mut DWORD) -> HRESULT;
        /// Deprecated.
        fn EndInprocDebugging(dw_profiler_context: DWORD) -> HRESULT;
        fn GetILToNativeMapping(function_id: FunctionID, c_map: ULONG32, pc_map: *mut ULONG32, map: *mut COR_DEBUG_IL_TO_NATIVE_MAP) -> HRESULT;
    }
}

com_interface! {
    /// V2 info interface: stack snapshots, generics, GC/object layout.
    interface ICorProfilerInfo2(ICorProfilerInfo2Vtbl): ICorProfilerInfo(ICorProfilerInfoVtbl),
    IID_ICorProfilerInfo2 = 0xCC0935CD_A518_487D_B0BB_A93214E65478;
    {
        /// `thread == 0` walks the current thread. `info_flags`: `COR_PRF_SNAPSHOT_INFO`.
        fn DoStackSnapshot(
            thread: ThreadID,
            callback: Option<StackSnapshotCallback>,
            info_flags: ULONG32,
            client_data: *mut c_void,
            context: *mut BYTE,
            context_size: ULONG32,
        ) -> HRESULT;
        fn SetEnterLeaveFunctionHooks2(
            p_func_enter: Option<FunctionEnter2>,
            p_func_leave: Option<FunctionLeave2>,
            p_func_tailcall: Option<FunctionTailcall2>,
        ) -> HRESULT;
        fn GetFunctionInfo2(
            func_id: FunctionID,
            frame_info: COR_PRF_FRAME_INFO,
            p_class_id: *mut ClassID,
            p_module_id: *mut ModuleID,
            p_token: *mut mdToken,
            c_type_args: ULONG32,
            pc_type_args: *mut ULONG32,
            type_args: *mut ClassID,
        ) -> HRESULT;
        /// Deprecated; use `GetStringLayout2`.
        fn GetStringLayout(p_buffer_length_offset: *mut ULONG, p_string_length_offset: *mut ULONG, p_buffer_offset: *mut ULONG) -> HRESULT;
        fn GetClassLayout(
            class_id: ClassID,
            r_field_offset: *mut COR_FIELD_OFFSET,
            c_field_offset: ULONG,
            pc_field_offset: *mut ULONG,
            pul_class_size: *mut ULONG,
        ) -> HRESULT;
        fn GetClassIDInfo2(
            class_id: ClassID,
            p_module_id: *mut ModuleID,
            p_type_def_token: *mut mdTypeDef,
            p_parent_class_id: *mut ClassID,
            c_num_type_args: ULONG32,
            pc_num_type_args: *mut ULONG32,
            type_args: *mut ClassID,
        ) -> HRESULT;
        fn GetCodeInfo2(function_id: FunctionID, c_code_infos: ULONG32, pc_code_infos: *mut ULONG32, code_infos: *mut COR_PRF_CODE_INFO) -> HRESULT;
        fn GetClassFromTokenAndTypeArgs(
            module_id: ModuleID,
            type_def: mdTypeDef,
            c_type_args: ULONG32,
            type_args: *mut ClassID,
            p_class_id: *mut ClassID,
        ) -> HRESULT;
        fn GetFunctionFromTokenAndTypeArgs(
            module_id: ModuleID,
            func_def: mdMethodDef,
            class_id: ClassID,
            c_type_args: ULONG32,
            type_args: *mut ClassID,
            p_function_id: *mut FunctionID,
        ) -> HRESULT;
        fn EnumModuleFrozenObjects(module_id: ModuleID, pp_enum: *mut *mut ICorProfilerObjectEnum) -> HRESULT;
        fn GetArrayObjectInfo(
            object_id: ObjectID,
            c_dimensions: ULONG32,
            p_dimension_sizes: *mut ULONG32,
            p_dimension_lower_bounds: *mut c_int,
            pp_data: *mut *mut BYTE,
        ) -> HRESULT;
        fn GetBoxClassLayout(class_id: ClassID, p_buffer_offset: *mut ULONG32) -> HRESULT;
        fn GetThreadAppDomain(thread_id: ThreadID, p_app_domain_id: *mut AppDomainID) -> HRESULT;
        fn GetRVAStaticAddress(class_id: ClassID, field_token: mdFieldDef, pp_address: *mut *mut c_void) -> HRESULT;
        fn GetAppDomainStaticAddress(class_id: ClassID, field_token: mdFieldDef, app_domain_id: AppDomainID, pp_address: *mut *mut c_void) -> HRESULT;
        fn GetThreadStaticAddress(class_id: ClassID, field_token: mdFieldDef, thread_id: ThreadID, pp_address: *mut *mut c_void) -> HRESULT;
        fn GetContextStaticAddress(class_id: ClassID, field_token: mdFieldDef, context_id: ContextID, pp_address: *mut *mut c_void) -> HRESULT;
        fn GetStaticFieldInfo(class_id: ClassID, field_token: mdFieldDef, p_field_info: *mut COR_PRF_STATIC_TYPE) -> HRESULT;
        fn GetGenerationBounds(c_object_ranges: ULONG, pc_object_ranges: *mut ULONG, ranges: *mut COR_PRF_GC_GENERATION_RANGE) -> HRESULT;
        fn GetObjectGeneration(object_id: ObjectID, range: *mut COR_PRF_GC_GENERATION_RANGE) -> HRESULT;
        /// S_FALSE if no exception clause is active.
        fn GetNotifiedExceptionClauseInfo(pinfo: *mut COR_PRF_EX_CLAUSE_INFO) -> HRESULT;
    }
}

com_interface! {
    /// V4 info interface: attach/detach, ELT3, module enumeration.
    interface ICorProfilerInfo3(ICorProfilerInfo3Vtbl): ICorProfilerInfo2(ICorProfilerInfo2Vtbl),
    IID_ICorProfilerInfo3 = 0xB555ED4F_452A_4E54_8B39_B5360BAD32A0;
    {
        fn EnumJITedFunctions(pp_enum: *mut *mut ICorProfilerFunctionEnum) -> HRESULT;
        fn RequestProfilerDetach(dw_expected_completion_milliseconds: DWORD) -> HRESULT;
        fn SetFunctionIDMapper2(p_func: Option<FunctionIDMapper2>, client_data: *mut c_void) -> HRESULT;
        fn GetStringLayout2(p_string_length_offset: *mut ULONG, p_buffer_offset: *mut ULONG) -> HRESULT;
        fn SetEnterLeaveFunctionHooks3(
            p_func_enter3: Option<FunctionEnter3>,
            p_func_leave3: Option<FunctionLeave3>,
            p_func_tailcall3: Option<FunctionTailcall3>,
        ) -> HRESULT;
        fn SetEnterLeaveFunctionHooks3WithInfo(
            p_func_enter3_with_info: Option<FunctionEnter3WithInfo>,
            p_func_leave3_with_info: Option<FunctionLeave3WithInfo>,
            p_func_tailcall3_with_info: Option<FunctionTailcall3WithInfo>,
        ) -> HRESULT;
        /// `*pcb_argument_info` is in/out (bytes); too small → `ERROR_INSUFFICIENT_BUFFER`.
        fn GetFunctionEnter3Info(
            function_id: FunctionID,
            elt_info: COR_PRF_ELT_INFO,
            p_frame_info: *mut COR_PRF_FRAME_INFO,
            pcb_argument_info: *mut ULONG,
            p_argument_info: *mut COR_PRF_FUNCTION_ARGUMENT_INFO,
        ) -> HRESULT;
        fn GetFunctionLeave3Info(
            function_id: FunctionID,
            elt_info: COR_PRF_ELT_INFO,
            p_frame_info: *mut COR_PRF_FRAME_INFO,
            p_retval_range: *mut COR_PRF_FUNCTION_ARGUMENT_RANGE,
        ) -> HRESULT;
        fn GetFunctionTailcall3Info(function_id: FunctionID, elt_info: COR_PRF_ELT_INFO, p_frame_info: *mut COR_PRF_FRAME_INFO) -> HRESULT;
        fn EnumModules(pp_enum: *mut *mut ICorProfilerModuleEnum) -> HRESULT;
        fn GetRuntimeInformation(
            p_clr_instance_id: *mut USHORT,
            p_runtime_type: *mut COR_PRF_RUNTIME_TYPE,
            p_major_version: *mut USHORT,
            p_minor_version: *mut USHORT,
            p_build_number: *mut USHORT,
            p_qfe_version: *mut USHORT,
            cch_version_string: ULONG,
            pcch_version_string: *mut ULONG,
            sz_version_string: *mut WCHAR,
        ) -> HRESULT;
        fn GetThreadStaticAddress2(
            class_id: ClassID,
            field_token: mdFieldDef,
            app_domain_id: AppDomainID,
            thread_id: ThreadID,
            pp_address: *mut *mut c_void,
        ) -> HRESULT;
        fn GetAppDomainsContainingModule(
            module_id: ModuleID,
            c_app_domain_ids: ULONG32,
            pc_app_domain_ids: *mut ULONG32,
            app_domain_ids: *mut AppDomainID,
        ) -> HRESULT;
        /// `pdw_module_flags`: `COR_PRF_MODULE_FLAGS`.
        fn GetModuleInfo2(
            module_id: ModuleID,
            pp_base_load_address: *mut LPCBYTE,
            cch_name: ULONG,
            pcch_name: *mut ULONG,
            sz_name: *mut WCHAR,
            p_assembly_id: *mut AssemblyID,
            pdw_module_flags: *mut DWORD,
        ) -> HRESULT;
    }
}

com_interface! {
    /// ReJIT, thread enumeration, 64-bit object sizes.
    interface ICorProfilerInfo4(ICorProfilerInfo4Vtbl): ICorProfilerInfo3(ICorProfilerInfo3Vtbl),
    IID_ICorProfilerInfo4 = 0x0D8FDCAA_6257_47BF_B1BF_94DAC88466EE;
    {
        fn EnumThreads(pp_enum: *mut *mut ICorProfilerThreadEnum) -> HRESULT;
        fn InitializeCurrentThread() -> HRESULT;
        fn RequestReJIT(c_functions: ULONG, module_ids: *mut ModuleID, method_ids: *mut mdMethodDef) -> HRESULT;
        fn RequestRevert(c_functions: ULONG, module_ids: *mut ModuleID, method_ids: *mut mdMethodDef, status: *mut HRESULT) -> HRESULT;
        fn GetCodeInfo3(
            function_id: FunctionID,
            re_jit_id: ReJITID,
            c_code_infos: ULONG32,
            pc_code_infos: *mut ULONG32,
            code_infos: *mut COR_PRF_CODE_INFO,
        ) -> HRESULT;
        fn GetFunctionFromIP2(ip: LPCBYTE, p_function_id: *mut FunctionID, p_re_jit_id: *mut ReJITID) -> HRESULT;
        fn GetReJITIDs(function_id: FunctionID, c_re_jit_ids: ULONG, pc_re_jit_ids: *mut ULONG, re_jit_ids: *mut ReJITID) -> HRESULT;
        fn GetILToNativeMapping2(
            function_id: FunctionID,
            re_jit_id: ReJITID,
            c_map: ULONG32,
            pc_map: *mut ULONG32,
            map: *mut COR_DEBUG_IL_TO_NATIVE_MAP,
        ) -> HRESULT;
        fn EnumJITedFunctions2(pp_enum: *mut *mut ICorProfilerFunctionEnum) -> HRESULT;
        fn GetObjectSize2(object_id: ObjectID, pc_size: *mut SIZE_T) -> HRESULT;
    }
}

com_interface! {
    /// High event-mask word.
    interface ICorProfilerInfo5(ICorProfilerInfo5Vtbl): ICorProfilerInfo4(ICorProfilerInfo4Vtbl),
    IID_ICorProfilerInfo5 = 0x07602928_CE38_4B83_81E7_74ADAF781214;
    {
        fn GetEventMask2(pdw_events_low: *mut DWORD, pdw_events_high: *mut DWORD) -> HRESULT;
        /// `dw_events_low`: `COR_PRF_MONITOR`; `dw_events_high`: `COR_PRF_HIGH_MONITOR`.
        fn SetEventMask2(dw_events_low: DWORD, dw_events_high: DWORD) -> HRESULT;
    }
}

com_interface! {
    /// NGen/R2R inliner enumeration.
    interface ICorProfilerInfo6(ICorProfilerInfo6Vtbl): ICorProfilerInfo5(ICorProfilerInfo5Vtbl),
    IID_ICorProfilerInfo6 = 0xF30A070D_BFFB_46A7_B1D8_8781EF7B698A;
    {
        fn EnumNgenModuleMethodsInliningThisMethod(
            inliners_module_id: ModuleID,
            inlinee_module_id: ModuleID,
            inlinee_method_id: mdMethodDef,
            incomplete_data: *mut BOOL,
            pp_enum: *mut *mut ICorProfilerMethodEnum,
        ) -> HRESULT;
    }
}

com_interface! {
    /// Metadata apply and in-memory symbols.
    interface ICorProfilerInfo7(ICorProfilerInfo7Vtbl): ICorProfilerInfo6(ICorProfilerInfo6Vtbl),
    IID_ICorProfilerInfo7 = 0x9AEECC0D_63E0_4187_8C00_E312F503F663;
    {
        fn ApplyMetaData(module_id: ModuleID) -> HRESULT;
        fn GetInMemorySymbolsLength(module_id: ModuleID, p_count_symbol_bytes: *mut DWORD) -> HRESULT;
        fn ReadInMemorySymbols(
            module_id: ModuleID,
            symbols_read_offset: DWORD,
            p_symbol_bytes: *mut BYTE,
            count_symbol_bytes: DWORD,
            p_count_symbol_bytes_read: *mut DWORD,
        ) -> HRESULT;
    }
}

com_interface! {
    /// Dynamic (no-metadata) methods.
    interface ICorProfilerInfo8(ICorProfilerInfo8Vtbl): ICorProfilerInfo7(ICorProfilerInfo7Vtbl),
    IID_ICorProfilerInfo8 = 0xC5AC80A6_782E_4716_8044_39598C60CFBF;
    {
        fn IsFunctionDynamic(function_id: FunctionID, is_dynamic: *mut BOOL) -> HRESULT;
        fn GetFunctionFromIP3(ip: LPCBYTE, function_id: *mut FunctionID, p_re_jit_id: *mut ReJITID) -> HRESULT;
        fn GetDynamicFunctionInfo(
            function_id: FunctionID,
            module_id: *mut ModuleID,
            ppv_sig: *mut PCCOR_SIGNATURE,
            pb_sig: *mut ULONG,
            cch_name: ULONG,
            pcch_name: *mut ULONG,
            wsz_name: *mut WCHAR,
        ) -> HRESULT;
    }
}

com_interface! {
    /// Native code versions (tiered compilation).
    interface ICorProfilerInfo9(ICorProfilerInfo9Vtbl): ICorProfilerInfo8(ICorProfilerInfo8Vtbl),
    IID_ICorProfilerInfo9 = 0x008170DB_F8CC_4796_9A51_DC8AA0B47012;
    {
        fn GetNativeCodeStartAddresses(
            function_id: FunctionID,
            re_jit_id: ReJITID,
            c_code_start_addresses: ULONG32,
            pc_code_start_addresses: *mut ULONG32,
            code_start_addresses: *mut UINT_PTR,
        ) -> HRESULT;
        fn GetILToNativeMapping3(
            p_native_code_start_address: UINT_PTR,
            c_map: ULONG32,
            pc_map: *mut ULONG32,
            map: *mut COR_DEBUG_IL_TO_NATIVE_MAP,
        ) -> HRESULT;
        fn GetCodeInfo4(
            p_native_code_start_address: UINT_PTR,
            c_code_infos: ULONG32,
            pc_code_infos: *mut ULONG32,
            code_infos: *mut COR_PRF_CODE_INFO,
        ) -> HRESULT;
    }
}

com_interface! {
    /// Object references, runtime suspension, ReJIT with inliners.
    interface ICorProfilerInfo10(ICorProfilerInfo10Vtbl): ICorProfilerInfo9(ICorProfilerInfo9Vtbl),
    IID_ICorProfilerInfo10 = 0x2F1B5152_C869_40C9_AA5F_3ABE026BD720;
    {
        fn EnumerateObjectReferences(object_id: ObjectID, callback: Option<ObjectReferenceCallback>, client_data: *mut c_void) -> HRESULT;
        fn IsFrozenObject(object_id: ObjectID, pb_frozen: *mut BOOL) -> HRESULT;
        fn GetLOHObjectSizeThreshold(p_threshold: *mut DWORD) -> HRESULT;
        /// `dw_rejit_flags`: `COR_PRF_REJIT_FLAGS`.
        fn RequestReJITWithInliners(dw_rejit_flags: DWORD, c_functions: ULONG, module_ids: *mut ModuleID, method_ids: *mut mdMethodDef) -> HRESULT;
        fn SuspendRuntime() -> HRESULT;
        fn ResumeRuntime() -> HRESULT;
    }
}

com_interface! {
    /// Environment variables of the profiled process.
    interface ICorProfilerInfo11(ICorProfilerInfo11Vtbl): ICorProfilerInfo10(ICorProfilerInfo10Vtbl),
    IID_ICorProfilerInfo11 = 0x06398876_8987_4154_B621_40A00D6E4D04;
    {
        fn GetEnvironmentVariable(sz_name: *const WCHAR, cch_value: ULONG, pcch_value: *mut ULONG, sz_value: *mut WCHAR) -> HRESULT;
        /// `sz_value == null` deletes the variable.
        fn SetEnvironmentVariable(sz_name: *const WCHAR, sz_value: *const WCHAR) -> HRESULT;
    }
}

com_interface! {
    /// In-process EventPipe sessions and providers.
    interface ICorProfilerInfo12(ICorProfilerInfo12Vtbl): ICorProfilerInfo11(ICorProfilerInfo11Vtbl),
    IID_ICorProfilerInfo12 = 0x27B24CCD_1CB1_47C5_96EE_98190DC30959;
    {
        fn EventPipeStartSession(
            c_provider_configs: UINT32,
            p_provider_configs: *mut COR_PRF_EVENTPIPE_PROVIDER_CONFIG,
            request_rundown: BOOL,
            p_session: *mut EVENTPIPE_SESSION,
        ) -> HRESULT;
        /// Note: `provider_config` is passed by value.
        fn EventPipeAddProviderToSession(session: EVENTPIPE_SESSION, provider_config: COR_PRF_EVENTPIPE_PROVIDER_CONFIG) -> HRESULT;
        fn EventPipeStopSession(session: EVENTPIPE_SESSION) -> HRESULT;
        fn EventPipeCreateProvider(provider_name: *const WCHAR, p_provider: *mut EVENTPIPE_PROVIDER) -> HRESULT;
        fn EventPipeGetProviderInfo(provider: EVENTPIPE_PROVIDER, cch_name: ULONG, pcch_name: *mut ULONG, provider_name: *mut WCHAR) -> HRESULT;
        fn EventPipeDefineEvent(
            provider: EVENTPIPE_PROVIDER,
            event_name: *const WCHAR,
            event_id: UINT32,
            keywords: UINT64,
            event_version: UINT32,
            level: UINT32,
            opcode: UINT8,
            need_stack: BOOL,
            c_param_descs: UINT32,
            p_param_descs: *mut COR_PRF_EVENTPIPE_PARAM_DESC,
            p_event: *mut EVENTPIPE_EVENT,
        ) -> HRESULT;
        fn EventPipeWriteEvent(
            event: EVENTPIPE_EVENT,
            c_data: UINT32,
            data: *mut COR_PRF_EVENT_DATA,
            p_activity_id: LPCGUID,
            p_related_activity_id: LPCGUID,
        ) -> HRESULT;
    }
}

com_interface! {
    /// GC handles owned by the profiler.
    interface ICorProfilerInfo13(ICorProfilerInfo13Vtbl): ICorProfilerInfo12(ICorProfilerInfo12Vtbl),
    IID_ICorProfilerInfo13 = 0x6E6C7EE2_0701_4EC2_9D29_2E8733B66934;
    {
        /// `type_` is the IDL parameter `type`.
        fn CreateHandle(object: ObjectID, type_: COR_PRF_HANDLE_TYPE, p_handle: *mut ObjectHandleID) -> HRESULT;
        fn DestroyHandle(handle: ObjectHandleID) -> HRESULT;
        fn GetObjectIDFromHandle(handle: ObjectHandleID, p_object: *mut ObjectID) -> HRESULT;
    }
}

com_interface! {
    /// Non-GC (frozen) heap, EventPipe provider callbacks.
    interface ICorProfilerInfo14(ICorProfilerInfo14Vtbl): ICorProfilerInfo13(ICorProfilerInfo13Vtbl),
    IID_ICorProfilerInfo14 = 0xF460E352_D76D_4FE9_835F_F6AF9D6E862D;
    {
        fn EnumerateNonGCObjects(pp_enum: *mut *mut ICorProfilerObjectEnum) -> HRESULT;
        fn GetNonGCHeapBounds(c_object_ranges: ULONG, pc_object_ranges: *mut ULONG, ranges: *mut COR_PRF_NONGC_HEAP_RANGE) -> HRESULT;
        fn EventPipeCreateProvider2(provider_name: *const WCHAR, p_callback: Option<EventPipeProviderCallback>, p_provider: *mut EVENTPIPE_PROVIDER) -> HRESULT;
    }
}

com_interface! {
    /// GC heap walk (.NET 9+). Highest info version in the runtime IDL.
    interface ICorProfilerInfo15(ICorProfilerInfo15Vtbl): ICorProfilerInfo14(ICorProfilerInfo14Vtbl),
    IID_ICorProfilerInfo15 = 0xB446462D_BD22_41DD_872D_DC714C49EB56;
    {
        /// Suspends the runtime itself unless the caller already did (SuspendRuntime).
        fn EnumerateGCHeapObjects(callback: Option<ObjectCallback>, callback_state: *mut c_void) -> HRESULT;
    }
}
