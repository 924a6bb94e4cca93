//! clrprof's in-process agent: the shared library CoreCLR loads (`libclrprof_profiler.so`).
//! It only collects: callbacks turn runtime notifications into compact records in
//! per-thread buffers, one writer thread streams them to the trace file. All analysis
//! happens out of process (`clrprof report`).
//!
//! Loading: `CORECLR_ENABLE_PROFILING=1`, `CORECLR_PROFILER={27C113DB-28AB-4298-B83A-625E7E26E45D}`,
//! `CORECLR_PROFILER_PATH=/path/to/libclrprof_profiler.so`, settings in `CLRPROF_*`
//! variables (see [`config::VARIABLES`]).

#![deny(clippy::undocumented_unsafe_blocks)]

pub mod arg_slots;
pub mod attach;
pub mod buffers;
pub mod clock;
pub mod config;
pub mod control;
pub mod elt;
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
pub mod elt_x64;
pub mod fpwalk;
pub mod inspect;
#[macro_use]
pub mod log;
pub mod heap;
pub mod heap_statics;
pub mod heap_timer;
// After `log`: uses its macro.
pub mod elt_args;
pub mod mask;
pub mod names;
pub mod outfile;
pub mod pages;
pub mod profiler;
pub mod ring;
pub mod sampler;
pub mod sdk;
pub mod session;
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
pub mod sigsample;
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
pub mod symbolize;
pub mod thread;
pub mod tpmap;
pub mod writer;

use std::ffi::c_void;

use corprof_sys::{GUID, HRESULT};

/// The CLSID the runtime is told to create (`CORECLR_PROFILER`).
pub const CLSID_CLRPROF: GUID = GUID::from_u128(clrprof_settings::CLSID);

/// The only export the runtime needs: hands out our class factory.
///
/// # Safety
/// Called by the runtime with valid pointers (checked for null anyway).
#[unsafe(no_mangle)]
pub unsafe extern "system" fn DllGetClassObject(
    rclsid: *const GUID,
    riid: *const GUID,
    ppv: *mut *mut c_void,
) -> HRESULT {
    // SAFETY: forwarded as received; dll_get_class_object checks every pointer.
    unsafe {
        corprof::dll_get_class_object::<profiler::Profiler>(
            rclsid,
            riid,
            ppv,
            &CLSID_CLRPROF,
            || Ok(profiler::Profiler::default()),
        )
    }
}

/// The runtime unloads us itself after detach; answering S_FALSE keeps COM-style hosts
/// from unloading a library whose objects may still be alive.
#[unsafe(no_mangle)]
pub extern "system" fn DllCanUnloadNow() -> HRESULT {
    corprof_sys::S_FALSE
}
