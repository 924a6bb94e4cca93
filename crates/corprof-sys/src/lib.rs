//! Raw FFI declarations of the CoreCLR profiling API.
//!
//! Hand-transcribed from dotnet/runtime (no bindgen; checked by the tests in
//! `tests/vtable_order.rs`, which list every vtable slot independently and compare names,
//! order, field offsets and vtable sizes):
//!
//! * `src/coreclr/inc/corprof.idl` @ `05284b23e41225cb8c8ec6c4710b4d51d3dcba25` — interfaces
//!   `ICorProfilerCallback`..`11`, `ICorProfilerInfo`..`15` (the newest in that IDL),
//!   the enumerator/helper interfaces, enums, structs and hook typedefs;
//! * `src/coreclr/inc/cor.h` @ `14ba0d9abe90d227f00c15fc4f769491528115d5` — `IMetaDataImport`,
//!   `IMetaDataImport2`, `IMetaDataAssemblyImport`, `OSINFO`, `ASSEMBLYMETADATA`;
//! * `src/coreclr/inc/corhdr.h` @ `027974814905ee6990e889b1f773b8f39e2f637b` — element types,
//!   calling conventions, type/method/field attributes, open flags, token types;
//! * `src/coreclr/inc/corerror.xml` @ `3e9e3d89456ca39e20504fd3f61988f7dd402535` and
//!   `src/native/eventpipe/ds-types.h` — HRESULTs (`CORPROF_E_NOT_GC_OBJECT` /
//!   `CORPROF_E_MODULE_IS_ENC` from the newer generated corerror.h copy in dotnet/diagnostics
//!   `src/shared/pal/prebuilt/inc/corerror.h`);
//! * `winerror.h` values as the PAL (`pal/inc/rt/palrt.h`) defines them.
//!
//! # Conventions
//!
//! * Everything is re-exported flat at the crate root, under the C/IDL names.
//! * Interfaces: `IFoo { vtbl: *const IFooVtbl }`; `IFooVtbl { base: IParentVtbl, Method: unsafe
//!   extern "system" fn(this: *mut IFoo, ...) }` with the IDL method names in IDL order; `this`
//!   is the interface that introduced the method; `IID_IFoo`; `IFooVtbl::{METHODS, FIRST_SLOT,
//!   SLOT_COUNT}`. See [`com`] for details.
//! * Enums are `u32` constants with their full IDL names (`COR_PRF_MONITOR_GC`), and each enum
//!   type name is a `u32` alias used in signatures (`COR_PRF_SUSPEND_REASON`).
//! * Struct fields are the IDL member names in snake_case.
//! * Function-pointer parameters (hooks, callbacks) are `Option<TypedefName>`.
//! * ABI: `extern "system"` = C ABI on x86-64 Linux/macOS and x64 Windows (`__stdcall` on x86
//!   Windows), matching `STDMETHODCALLTYPE`. `WCHAR` is UTF-16 everywhere, `ULONG`/`LONG` are
//!   32-bit, IDs are pointer-sized.
#![no_std]
#![allow(non_snake_case, non_camel_case_types, non_upper_case_globals)]
#![allow(clippy::upper_case_acronyms, clippy::type_complexity)]

#[macro_use]
pub mod com;
pub mod callback;
pub mod corhdr;
pub mod flags;
pub mod hooks;
pub mod hresult;
pub mod info;
pub mod metadata;
pub mod misc;
pub mod structs;
pub mod types;

pub use callback::*;
pub use com::*;
pub use corhdr::*;
pub use flags::*;
pub use hooks::*;
pub use hresult::*;
pub use info::*;
pub use metadata::*;
pub use misc::*;
pub use structs::*;
pub use types::*;
