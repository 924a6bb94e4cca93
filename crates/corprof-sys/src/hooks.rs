//! Free-function typedefs of corprof.idl (hooks and callbacks the profiler supplies).
//!
//! All are `STDMETHODCALLTYPE`/`__stdcall` in the IDL, i.e. `extern "system"` (the plain C ABI
//! on x86-64 Linux and x64 Windows). Methods that take one of these as a parameter take it as
//! `Option<...>` (a nullable function pointer, same ABI as the C pointer).
//!
//! NOTE: the *fast-path* ELT3 hooks (`FunctionEnter3`/`Leave3`/`Tailcall3`) are declared as
//! C functions here, but the JIT calls them with a custom convention on x64 Linux
//! (FunctionIDOrClientID in R14 on enter, all argument registers live); real implementations
//! must be naked trampolines cast to these types. The `*WithInfo` hooks are real C functions.

use core::ffi::c_void;

use crate::structs::{
    COR_PRF_FILTER_DATA, COR_PRF_FUNCTION_ARGUMENT_INFO, COR_PRF_FUNCTION_ARGUMENT_RANGE,
};
use crate::types::{
    BOOL, BYTE, COR_PRF_ELT_INFO, COR_PRF_FRAME_INFO, FunctionID, FunctionIDOrClientID, HRESULT,
    ObjectID, UINT_PTR, UINT8, UINT32, UINT64, ULONG32,
};

/// `UINT_PTR FunctionIDMapper(FunctionID funcId, BOOL *pbHookFunction)`.
pub type FunctionIDMapper =
    unsafe extern "system" fn(func_id: FunctionID, pb_hook_function: *mut BOOL) -> UINT_PTR;

/// `UINT_PTR FunctionIDMapper2(FunctionID funcId, void *clientData, BOOL *pbHookFunction)`.
pub type FunctionIDMapper2 = unsafe extern "system" fn(
    func_id: FunctionID,
    client_data: *mut c_void,
    pb_hook_function: *mut BOOL,
) -> UINT_PTR;

/// V1 enter hook (deprecated in V2).
pub type FunctionEnter = unsafe extern "system" fn(func_id: FunctionID);
/// V1 leave hook (deprecated in V2).
pub type FunctionLeave = unsafe extern "system" fn(func_id: FunctionID);
/// V1 tailcall hook (deprecated in V2).
pub type FunctionTailcall = unsafe extern "system" fn(func_id: FunctionID);

/// V2 enter hook (deprecated in V4).
pub type FunctionEnter2 = unsafe extern "system" fn(
    func_id: FunctionID,
    client_data: UINT_PTR,
    func: COR_PRF_FRAME_INFO,
    argument_info: *mut COR_PRF_FUNCTION_ARGUMENT_INFO,
);
/// V2 leave hook (deprecated in V4).
pub type FunctionLeave2 = unsafe extern "system" fn(
    func_id: FunctionID,
    client_data: UINT_PTR,
    func: COR_PRF_FRAME_INFO,
    retval_range: *mut COR_PRF_FUNCTION_ARGUMENT_RANGE,
);
/// V2 tailcall hook (deprecated in V4).
pub type FunctionTailcall2 =
    unsafe extern "system" fn(func_id: FunctionID, client_data: UINT_PTR, func: COR_PRF_FRAME_INFO);

/// Fast-path enter hook (see the module note about the real calling convention).
pub type FunctionEnter3 = unsafe extern "system" fn(function_id_or_client_id: FunctionIDOrClientID);
/// Fast-path leave hook.
pub type FunctionLeave3 = unsafe extern "system" fn(function_id_or_client_id: FunctionIDOrClientID);
/// Fast-path tailcall hook.
pub type FunctionTailcall3 =
    unsafe extern "system" fn(function_id_or_client_id: FunctionIDOrClientID);

/// Slow-path enter hook (plain C ABI); pass `elt_info` to `GetFunctionEnter3Info`.
pub type FunctionEnter3WithInfo = unsafe extern "system" fn(
    function_id_or_client_id: FunctionIDOrClientID,
    elt_info: COR_PRF_ELT_INFO,
);
/// Slow-path leave hook; pass `elt_info` to `GetFunctionLeave3Info`.
pub type FunctionLeave3WithInfo = unsafe extern "system" fn(
    function_id_or_client_id: FunctionIDOrClientID,
    elt_info: COR_PRF_ELT_INFO,
);
/// Slow-path tailcall hook; pass `elt_info` to `GetFunctionTailcall3Info`.
pub type FunctionTailcall3WithInfo = unsafe extern "system" fn(
    function_id_or_client_id: FunctionIDOrClientID,
    elt_info: COR_PRF_ELT_INFO,
);

/// DoStackSnapshot callback, once per managed frame or run of unmanaged frames (`func_id == 0`).
/// Return `S_OK` to continue, anything else aborts the walk.
pub type StackSnapshotCallback = unsafe extern "system" fn(
    func_id: FunctionID,
    ip: UINT_PTR,
    frame_info: COR_PRF_FRAME_INFO,
    context_size: ULONG32,
    context: *mut BYTE,
    client_data: *mut c_void,
) -> HRESULT;

/// ICorProfilerInfo10::EnumerateObjectReferences callback; return TRUE to continue.
pub type ObjectReferenceCallback = unsafe extern "system" fn(
    root: ObjectID,
    reference: *mut ObjectID,
    client_data: *mut c_void,
) -> BOOL;

/// ICorProfilerInfo15::EnumerateGCHeapObjects callback (`typedef BOOL (*ObjectCallback)(...)`);
/// return TRUE to continue.
pub type ObjectCallback =
    unsafe extern "system" fn(object: ObjectID, callback_state: *mut c_void) -> BOOL;

/// ICorProfilerInfo14::EventPipeCreateProvider2 callback (session enable/disable).
pub type EventPipeProviderCallback = unsafe extern "system" fn(
    source_id: *const UINT8,
    is_enabled: UINT32,
    level: UINT8,
    match_any_keywords: UINT64,
    match_all_keywords: UINT64,
    filter_data: *mut COR_PRF_FILTER_DATA,
    callback_data: *mut c_void,
);
