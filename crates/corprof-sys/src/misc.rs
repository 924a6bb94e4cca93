//! The small helper interfaces of corprof.idl: enumerators, `IMethodMalloc`,
//! `ICorProfilerFunctionControl`, `ICorProfilerAssemblyReferenceProvider`.
//!
//! Enumerators follow the usual COM pattern: `Next(celt, out[], pcelt_fetched)` returns `S_OK`
//! when `celt` items were written and `S_FALSE` when fewer were.

use crate::com::IUnknownVtbl;
use crate::structs::{
    COR_IL_MAP, COR_PRF_ASSEMBLY_REFERENCE_INFO, COR_PRF_FUNCTION, COR_PRF_METHOD,
};
use crate::types::{DWORD, HRESULT, LPCBYTE, ModuleID, ObjectID, PVOID, ThreadID, ULONG};

com_interface! {
    /// Enumerates ObjectIDs (frozen / non-GC objects).
    interface ICorProfilerObjectEnum(ICorProfilerObjectEnumVtbl): IUnknown(IUnknownVtbl),
    IID_ICorProfilerObjectEnum = 0x2C6269BD_2D13_4321_AE12_6686365FD6AF;
    {
        fn Skip(celt: ULONG) -> HRESULT;
        fn Reset() -> HRESULT;
        fn Clone(pp_enum: *mut *mut ICorProfilerObjectEnum) -> HRESULT;
        fn GetCount(pcelt: *mut ULONG) -> HRESULT;
        fn Next(celt: ULONG, objects: *mut ObjectID, pcelt_fetched: *mut ULONG) -> HRESULT;
    }
}

com_interface! {
    /// Enumerates jitted functions (`COR_PRF_FUNCTION`).
    interface ICorProfilerFunctionEnum(ICorProfilerFunctionEnumVtbl): IUnknown(IUnknownVtbl),
    IID_ICorProfilerFunctionEnum = 0xFF71301A_B994_429D_A10B_B345A65280EF;
    {
        fn Skip(celt: ULONG) -> HRESULT;
        fn Reset() -> HRESULT;
        fn Clone(pp_enum: *mut *mut ICorProfilerFunctionEnum) -> HRESULT;
        fn GetCount(pcelt: *mut ULONG) -> HRESULT;
        fn Next(celt: ULONG, ids: *mut COR_PRF_FUNCTION, pcelt_fetched: *mut ULONG) -> HRESULT;
    }
}

com_interface! {
    /// Enumerates loaded modules.
    interface ICorProfilerModuleEnum(ICorProfilerModuleEnumVtbl): IUnknown(IUnknownVtbl),
    IID_ICorProfilerModuleEnum = 0xB0266D75_2081_4493_AF7F_028BA34DB891;
    {
        fn Skip(celt: ULONG) -> HRESULT;
        fn Reset() -> HRESULT;
        fn Clone(pp_enum: *mut *mut ICorProfilerModuleEnum) -> HRESULT;
        fn GetCount(pcelt: *mut ULONG) -> HRESULT;
        fn Next(celt: ULONG, ids: *mut ModuleID, pcelt_fetched: *mut ULONG) -> HRESULT;
    }
}

com_interface! {
    /// Deprecated allocator for `ICorProfilerInfo::SetILFunctionBody` (memory is never freed).
    interface IMethodMalloc(IMethodMallocVtbl): IUnknown(IUnknownVtbl),
    IID_IMethodMalloc = 0xA0EFB28B_6EE2_4D7B_B983_A75EF7BEEDB8;
    {
        /// Returns the block (may be null); note the return type is `PVOID`, not `HRESULT`.
        fn Alloc(cb: ULONG) -> PVOID;
    }
}

com_interface! {
    /// Given to `ICorProfilerCallback4::GetReJITParameters` to shape a ReJIT.
    interface ICorProfilerFunctionControl(ICorProfilerFunctionControlVtbl): IUnknown(IUnknownVtbl),
    IID_ICorProfilerFunctionControl = 0xF0963021_E1EA_4732_8581_E01B0BD3C0C6;
    {
        /// `flags`: `COR_PRF_CODEGEN_FLAGS`.
        fn SetCodegenFlags(flags: DWORD) -> HRESULT;
        fn SetILFunctionBody(cb_new_il_method_header: ULONG, pb_new_il_method_header: LPCBYTE) -> HRESULT;
        /// Not implemented by the runtime (E_NOTIMPL).
        fn SetILInstrumentedCodeMap(c_il_map_entries: ULONG, rg_il_map_entries: *mut COR_IL_MAP) -> HRESULT;
    }
}

com_interface! {
    /// Enumerates threads.
    interface ICorProfilerThreadEnum(ICorProfilerThreadEnumVtbl): IUnknown(IUnknownVtbl),
    IID_ICorProfilerThreadEnum = 0x571194F7_25ED_419F_AA8B_7016B3159701;
    {
        fn Skip(celt: ULONG) -> HRESULT;
        fn Reset() -> HRESULT;
        fn Clone(pp_enum: *mut *mut ICorProfilerThreadEnum) -> HRESULT;
        fn GetCount(pcelt: *mut ULONG) -> HRESULT;
        fn Next(celt: ULONG, ids: *mut ThreadID, pcelt_fetched: *mut ULONG) -> HRESULT;
    }
}

com_interface! {
    /// Enumerates methods (`COR_PRF_METHOD`), e.g. NGen/R2R inliners.
    interface ICorProfilerMethodEnum(ICorProfilerMethodEnumVtbl): IUnknown(IUnknownVtbl),
    IID_ICorProfilerMethodEnum = 0xFCCEE788_0088_454B_A811_C99F298D1942;
    {
        fn Skip(celt: ULONG) -> HRESULT;
        fn Reset() -> HRESULT;
        fn Clone(pp_enum: *mut *mut ICorProfilerMethodEnum) -> HRESULT;
        fn GetCount(pcelt: *mut ULONG) -> HRESULT;
        fn Next(celt: ULONG, elements: *mut COR_PRF_METHOD, pcelt_fetched: *mut ULONG) -> HRESULT;
    }
}

com_interface! {
    /// Given to `ICorProfilerCallback6::GetAssemblyReferences`.
    interface ICorProfilerAssemblyReferenceProvider(ICorProfilerAssemblyReferenceProviderVtbl): IUnknown(IUnknownVtbl),
    IID_ICorProfilerAssemblyReferenceProvider = 0x66A78C24_2EEF_4F65_B45F_DD1D8038BF3C;
    {
        fn AddAssemblyReference(p_assembly_ref_info: *const COR_PRF_ASSEMBLY_REFERENCE_INFO) -> HRESULT;
    }
}
