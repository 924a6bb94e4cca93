//! Structures of corprof.idl (and the two cor.h structures it forward-declares), `#[repr(C)]`.
//!
//! Field names are the IDL member names converted to snake_case (`startAddress` →
//! `start_address`, `reJitId` → `re_jit_id`, `Ptr` → `ptr`). Structures that contain raw
//! pointers get a manual `Default` (null pointers, zero numbers).

use core::ffi::c_void;
use core::ptr;

use crate::flags::{COR_PRF_CLAUSE_TYPE, COR_PRF_GC_GENERATION};
use crate::types::{
    BOOL, DWORD, FunctionID, LPCWSTR, LPWSTR, ModuleID, ObjectID, ReJITID, SIZE_T, UINT_PTR,
    UINT32, UINT64, ULONG, ULONG32, USHORT, WCHAR, mdFieldDef, mdMethodDef,
};

/// `COR_IL_MAP` (also in cordebug.idl): one old→new IL offset pair for SetILInstrumentedCodeMap.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct COR_IL_MAP {
    /// Old IL offset relative to the beginning of the function.
    pub old_offset: ULONG32,
    /// New IL offset relative to the beginning of the function.
    pub new_offset: ULONG32,
    /// Kept for compatibility with the debugger structure.
    pub f_accurate: BOOL,
}

/// `COR_DEBUG_IL_TO_NATIVE_MAP`. `il_offset` may be one of `NO_MAPPING`, `PROLOG`, `EPILOG`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct COR_DEBUG_IL_TO_NATIVE_MAP {
    pub il_offset: ULONG32,
    pub native_start_offset: ULONG32,
    pub native_end_offset: ULONG32,
}

/// `COR_FIELD_OFFSET` (GetClassLayout): offset is relative to the ObjectID pointer.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct COR_FIELD_OFFSET {
    pub rid_of_field: mdFieldDef,
    pub ul_offset: ULONG,
}

/// `COR_PRF_FUNCTION_ARGUMENT_RANGE`: a contiguous run of argument bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct COR_PRF_FUNCTION_ARGUMENT_RANGE {
    pub start_address: UINT_PTR,
    pub length: ULONG,
}

/// `COR_PRF_FUNCTION_ARGUMENT_INFO`: header followed by `num_ranges` ranges. The IDL declares
/// `ranges[1]`; the runtime writes `num_ranges` entries into a caller buffer whose byte size was
/// negotiated through `pcbArgumentInfo` (`GetFunctionEnter3Info`), so read the tail through a
/// raw pointer, not through this array.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct COR_PRF_FUNCTION_ARGUMENT_INFO {
    pub num_ranges: ULONG,
    pub total_argument_size: ULONG,
    pub ranges: [COR_PRF_FUNCTION_ARGUMENT_RANGE; 1],
}

/// `COR_PRF_CODE_INFO`: one contiguous chunk of native code.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct COR_PRF_CODE_INFO {
    pub start_address: UINT_PTR,
    pub size: SIZE_T,
}

/// `COR_PRF_FUNCTION`: FunctionID plus ReJIT version.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct COR_PRF_FUNCTION {
    pub function_id: FunctionID,
    pub re_jit_id: ReJITID,
}

/// `COR_PRF_METHOD`: module + methoddef token.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct COR_PRF_METHOD {
    pub module_id: ModuleID,
    pub method_id: mdMethodDef,
}

/// `OSINFO` (cor.h).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct OSINFO {
    pub dw_os_platform_id: DWORD,
    pub dw_os_major_version: DWORD,
    pub dw_os_minor_version: DWORD,
}

/// `ASSEMBLYMETADATA` (cor.h).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ASSEMBLYMETADATA {
    pub us_major_version: USHORT,
    pub us_minor_version: USHORT,
    pub us_build_number: USHORT,
    pub us_revision_number: USHORT,
    pub sz_locale: LPWSTR,
    /// In/out: buffer size in wide chars / actual size.
    pub cb_locale: ULONG,
    pub r_processor: *mut DWORD,
    pub ul_processor: ULONG,
    pub r_os: *mut OSINFO,
    pub ul_os: ULONG,
}

impl Default for ASSEMBLYMETADATA {
    fn default() -> Self {
        ASSEMBLYMETADATA {
            us_major_version: 0,
            us_minor_version: 0,
            us_build_number: 0,
            us_revision_number: 0,
            sz_locale: ptr::null_mut(),
            cb_locale: 0,
            r_processor: ptr::null_mut(),
            ul_processor: 0,
            r_os: ptr::null_mut(),
            ul_os: 0,
        }
    }
}

/// `COR_PRF_ASSEMBLY_REFERENCE_INFO` (ICorProfilerAssemblyReferenceProvider).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct COR_PRF_ASSEMBLY_REFERENCE_INFO {
    pub pb_public_key_or_token: *mut c_void,
    pub cb_public_key_or_token: ULONG,
    pub sz_name: LPCWSTR,
    pub p_meta_data: *mut ASSEMBLYMETADATA,
    pub pb_hash_value: *mut c_void,
    pub cb_hash_value: ULONG,
    pub dw_assembly_ref_flags: DWORD,
}

impl Default for COR_PRF_ASSEMBLY_REFERENCE_INFO {
    fn default() -> Self {
        COR_PRF_ASSEMBLY_REFERENCE_INFO {
            pb_public_key_or_token: ptr::null_mut(),
            cb_public_key_or_token: 0,
            sz_name: ptr::null(),
            p_meta_data: ptr::null_mut(),
            pb_hash_value: ptr::null_mut(),
            cb_hash_value: 0,
            dw_assembly_ref_flags: 0,
        }
    }
}

/// `COR_PRF_GC_GENERATION_RANGE` (GetGenerationBounds / GetObjectGeneration).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct COR_PRF_GC_GENERATION_RANGE {
    pub generation: COR_PRF_GC_GENERATION,
    pub range_start: ObjectID,
    pub range_length: UINT_PTR,
    pub range_length_reserved: UINT_PTR,
}

/// `COR_PRF_NONGC_HEAP_RANGE` (ICorProfilerInfo14::GetNonGCHeapBounds).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct COR_PRF_NONGC_HEAP_RANGE {
    pub range_start: ObjectID,
    pub range_length: UINT_PTR,
    pub range_length_reserved: UINT_PTR,
}

/// `COR_PRF_EX_CLAUSE_INFO` (GetNotifiedExceptionClauseInfo).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct COR_PRF_EX_CLAUSE_INFO {
    pub clause_type: COR_PRF_CLAUSE_TYPE,
    pub program_counter: UINT_PTR,
    pub frame_pointer: UINT_PTR,
    pub shadow_stack_pointer: UINT_PTR,
}

/// `COR_PRF_EVENTPIPE_PROVIDER_CONFIG` (ICorProfilerInfo12). Passed *by value* to
/// `EventPipeAddProviderToSession`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct COR_PRF_EVENTPIPE_PROVIDER_CONFIG {
    pub provider_name: *const WCHAR,
    pub keywords: UINT64,
    pub logging_level: UINT32,
    /// Semicolon-delimited `key=value` pairs, or null.
    pub filter_data: *const WCHAR,
}

impl Default for COR_PRF_EVENTPIPE_PROVIDER_CONFIG {
    fn default() -> Self {
        COR_PRF_EVENTPIPE_PROVIDER_CONFIG {
            provider_name: ptr::null(),
            keywords: 0,
            logging_level: 0,
            filter_data: ptr::null(),
        }
    }
}

/// `COR_PRF_EVENTPIPE_PARAM_DESC` (EventPipeDefineEvent).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct COR_PRF_EVENTPIPE_PARAM_DESC {
    /// A `COR_PRF_EVENTPIPE_PARAM_TYPE`.
    pub type_: UINT32,
    /// Element type when `type_` is `COR_PRF_EVENTPIPE_ARRAY`.
    pub element_type: UINT32,
    pub name: *const WCHAR,
}

impl Default for COR_PRF_EVENTPIPE_PARAM_DESC {
    fn default() -> Self {
        COR_PRF_EVENTPIPE_PARAM_DESC {
            type_: 0,
            element_type: 0,
            name: ptr::null(),
        }
    }
}

/// `COR_PRF_EVENT_DATA` (EventPipeWriteEvent): `ptr` is an address stored as UINT64.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct COR_PRF_EVENT_DATA {
    pub ptr: UINT64,
    pub size: UINT32,
    pub reserved: UINT32,
}

/// `COR_PRF_FILTER_DATA` (EventPipeProviderCallback); IDL members `Ptr`, `Size`, `Type`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct COR_PRF_FILTER_DATA {
    pub ptr: UINT64,
    pub size: UINT32,
    pub type_: UINT32,
}
