//! clrprof's in-process agent: the shared library CoreCLR loads (`libclrprof_profiler.so`).
//! It only collects: callbacks turn runtime notifications into compact records in
//! per-thread buffers, one writer thread streams them to the trace file. All analysis
//! happens out of process (`clrprof report`).
//!
//! Loading: `CORECLR_ENABLE_PROFILING=1`, `CORECLR_PROFILER={27C113DB-28AB-4298-B83A-625E7E26E45D}`,
//! `CORECLR_PROFILER_PATH=/path/to/libclrprof_profiler.so`, settings in `CLRPROF_*`
//! variables (see `clrprof_settings::VARIABLES`).
//!
//! The agent's rooms (ARCHITECTURE.md, "Inside the agent") are crate-private; the only
//! public items are the two exports the runtime looks up, the CLSID, and `for_tests`.

// First: every room after it uses its `log!` macro.
#[macro_use]
pub(crate) mod log;

pub(crate) mod alloc;
pub(crate) mod callbacks;
pub(crate) mod config;
pub(crate) mod control;
pub(crate) mod coverage;
pub(crate) mod heap;
pub(crate) mod inspect;
pub(crate) mod names;
pub(crate) mod os;
pub(crate) mod output;
pub(crate) mod sampling;
pub(crate) mod session;
pub(crate) mod stackwalk;
pub(crate) mod tracing;

use std::ffi::c_void;

/// Large blocks from pages of our own, returned at their free, so that no session leaves
/// them in the target's malloc arenas (os/allocator.rs).
#[global_allocator]
static ALLOCATOR: os::allocator::AgentAlloc = os::allocator::AgentAlloc;

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
    // Before anything can make the runtime unload us (a failed Initialize, a detach): the
    // library is loaded once per process and records each later session in place
    // (os/process.rs, session/state.rs). Touches only the loader's flag; a profiler object
    // made here touches nothing else until its initialisation wins the session state.
    let _ = std::panic::catch_unwind(os::process::keep_loaded);
    // SAFETY: (A1) forwarded as received; dll_get_class_object checks every pointer.
    unsafe {
        corprof::dll_get_class_object::<callbacks::Profiler>(
            rclsid,
            riid,
            ppv,
            &CLSID_CLRPROF,
            || Ok(callbacks::Profiler::default()),
        )
    }
}

/// The runtime unloads us itself after detach; answering S_FALSE keeps COM-style hosts
/// from unloading a library whose objects may still be alive.
#[unsafe(no_mangle)]
pub extern "system" fn DllCanUnloadNow() -> HRESULT {
    corprof_sys::S_FALSE
}

/// What `tests/elt_fastpath.rs`, `tests/count_hooks.rs` and `tests/sessions.rs` drive from outside the crate: they call the ELT hooks the
/// way the JIT does, in a process of its own, and reads the ring they wrote. Integration
/// tests see only public items, so these few are re-exported here under the names the
/// test uses; nothing else of the agent is public, and nothing here is an API.
#[doc(hidden)]
pub mod for_tests {
    pub mod buffers {
        pub use crate::output::buffers::{emit, init, set_accepting, take_registrations};
        pub use crate::output::slot::Slot;
    }
    pub mod session_state {
        pub use crate::session::state::{begin, end, generation};
    }
    pub mod clock {
        pub use crate::os::clock::init;
    }
    pub mod tpmap {
        pub use crate::output::tpmap::{COUNTS, enable, index, lookup, thread_pointer};
    }
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    pub mod elt_x64 {
        pub use crate::tracing::x64::{
            clrprof_count_enter, clrprof_count_leave, clrprof_count_tailcall, clrprof_elt_enter,
            clrprof_elt_leave, clrprof_elt_tailcall,
        };
    }
}
