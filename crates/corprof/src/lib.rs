//! Safe Rust binding of the CLR profiling API (CoreCLR, .NET 8–10; Linux first, Windows
//! kept possible), on top of the raw declarations in [`corprof_sys`] (re-exported as
//! [`sys`]).
//!
//! A profiler is a shared library the runtime loads into the profiled process. With this
//! crate it is:
//!
//! 1. a type implementing [`ProfilerCallback`] (one method per `ICorProfilerCallback`…`11`
//!    method, all defaulted), which receives a [`ProfilerInfo`] in
//!    [`initialize`](ProfilerCallback::initialize) and asks the runtime questions through it;
//! 2. an exported `DllGetClassObject` that calls [`dll_get_class_object`].
//!
//! ```no_run
//! use std::sync::atomic::{AtomicU64, Ordering};
//! use corprof::{FunctionId, ProfilerCallback, ProfilerInfo, Result, sys};
//!
//! #[derive(Default)]
//! struct JitCounter {
//!     compiled: AtomicU64,
//! }
//!
//! impl ProfilerCallback for JitCounter {
//!     fn initialize(&self, info: ProfilerInfo) -> Result<()> {
//!         info.set_event_mask(sys::COR_PRF_MONITOR_JIT_COMPILATION)
//!     }
//!     fn jit_compilation_started(&self, _f: FunctionId, _safe: bool) -> Result<()> {
//!         self.compiled.fetch_add(1, Ordering::Relaxed);
//!         Ok(())
//!     }
//! }
//!
//! const CLSID: sys::GUID = sys::GUID::from_u128(0x8C1D2E1B_6B1A_4C3E_9F5E_2A8E0C6D7B11);
//!
//! #[unsafe(no_mangle)]
//! pub unsafe extern "system" fn DllGetClassObject(
//!     rclsid: *const sys::GUID,
//!     riid: *const sys::GUID,
//!     ppv: *mut *mut core::ffi::c_void,
//! ) -> sys::HRESULT {
//!     // SAFETY: the runtime's pointers are forwarded unchanged; null is checked.
//!     unsafe { corprof::dll_get_class_object(rclsid, riid, ppv, &CLSID, || Ok(JitCounter::default())) }
//! }
//! ```
//!
//! See `examples/jit_counter.rs` for the whole library, and `docs/safety.md` for the rules
//! the `unsafe` code here relies on (COM lifetimes, callback threading, what "valid for the
//! duration of the call" means, and why panics never unwind into the runtime).
//!
//! Modules (re-exported from the pure `clrprof-metadata` crate): [`sig`] decodes ECMA-335 signature blobs (pure, no `unsafe`); [`rawmd`] reads a
//! module's metadata tables from its bytes ([`RawMetadata`], pure, no `unsafe`;
//! [`ProfilerInfo::module_raw_metadata`] finds them in a loaded module), for names without
//! the runtime's importer, whose first use converts the module's metadata to read-write;
//! [`MetadataRead`] is what both give; [`elt`] re-exports the hook function-pointer types.

#![warn(missing_debug_implementations)]

mod boundary;
mod callback;
mod com;
mod hresult;
mod ids;
mod info;
mod metadata;
pub mod quiesce;
mod wstr;

pub use corprof_sys as sys;

/// The pure readers live in `clrprof-metadata`; these paths keep naming them as before.
pub use clrprof_metadata::{rawmd, sig};

pub use boundary::set_panic_hook;
pub use callback::{AssemblyReferenceProvider, EventPipeEvent, FunctionControl, ProfilerCallback};
pub use clrprof_metadata::MetadataRead;
pub use com::{dll_get_class_object, new_callback_object, new_class_factory};
pub use hresult::{HResult, Result, check};
pub use ids::{
    AppDomainId, AssemblyId, ClassId, FunctionId, GcHandleId, ModuleId, ObjectId, ReJitId, ThreadId,
};
pub use info::{
    AppDomainInfo, ArgumentRange, ArrayClass, ArrayObject, AssemblyInfo, ClassInfo, CodeRange,
    Enter3Info, FunctionInfo2, GenerationRange, IlToNative, InfoInterface, Leave3Info,
    MAX_INFO_VERSION, MIN_INFO_VERSION, ModuleInfo, ProfilerInfo, RuntimeInfo,
};
pub use metadata::{
    FieldProps, GenericParamProps, MemberRefProps, MetaDataEmit, MetaDataImport, MethodProps,
    ScopeProps, TypeDefProps, TypeRefProps,
};
pub use rawmd::{RawError, RawMetadata};
pub use wstr::utf16_lossy;

/// The function-pointer types of the ELT hooks and the FunctionID mapper, for
/// [`ProfilerInfo::set_enter_leave_function_hooks3`] and friends.
///
/// The fast-path hooks (`FunctionEnter3`, `FunctionLeave3`, `FunctionTailcall3`) are
/// called by JIT-generated code with its own register convention, not the C ABI: they must
/// be assembly trampolines. The `…WithInfo` hooks and the mapper are plain C functions.
pub mod elt {
    pub use corprof_sys::{
        COR_PRF_ELT_INFO, FunctionEnter3, FunctionEnter3WithInfo, FunctionIDMapper2,
        FunctionIDOrClientID, FunctionLeave3, FunctionLeave3WithInfo, FunctionTailcall3,
        FunctionTailcall3WithInfo,
    };
}
