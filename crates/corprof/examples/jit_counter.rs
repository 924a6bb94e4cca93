//! A complete (tiny) profiler: counts JIT compilations and prints the count at shutdown.
//!
//! Build and run it against any .NET app:
//!
//! ```sh
//! cargo build -p corprof --example jit_counter
//! CORECLR_ENABLE_PROFILING=1 \
//! CORECLR_PROFILER='{8C1D2E1B-6B1A-4C3E-9F5E-2A8E0C6D7B11}' \
//! CORECLR_PROFILER_PATH=$PWD/target/debug/examples/libjit_counter.so \
//! dotnet MyApp.dll
//! ```
//!
//! The library needs exactly one export, `DllGetClassObject`; everything else is the
//! [`ProfilerCallback`] implementation.

use std::ffi::c_void;
use std::io::Write;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use corprof::sys::{self, GUID, HRESULT};
use corprof::{FunctionId, HResult, MetadataRead, ProfilerCallback, ProfilerInfo, Result};

/// The CLSID the runtime is told to create (`CORECLR_PROFILER`).
const CLSID_JIT_COUNTER: GUID = GUID::from_u128(0x8C1D2E1B_6B1A_4C3E_9F5E_2A8E0C6D7B11);

#[derive(Default)]
struct JitCounter {
    info: OnceLock<ProfilerInfo>,
    started: AtomicU64,
    failed: AtomicU64,
}

impl ProfilerCallback for JitCounter {
    fn initialize(&self, info: ProfilerInfo) -> Result<()> {
        // Ask only for what we use; JIT events are allowed after attach too.
        info.set_event_mask(sys::COR_PRF_MONITOR_JIT_COMPILATION)?;
        let _ = self.info.set(info);
        Ok(())
    }

    fn initialize_for_attach(&self, info: ProfilerInfo, _client_data: &[u8]) -> Result<()> {
        self.initialize(info)
    }

    fn jit_compilation_started(
        &self,
        _function: FunctionId,
        _is_safe_to_block: bool,
    ) -> Result<()> {
        // Callbacks arrive on many threads at once: an atomic, no lock.
        self.started.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn jit_compilation_finished(
        &self,
        function: FunctionId,
        status: HResult,
        _safe: bool,
    ) -> Result<()> {
        if status.failed() {
            self.failed.fetch_add(1, Ordering::Relaxed);
            // Names come from the module's metadata.
            if let Some(info) = self.info.get()
                && let Ok((md, token)) = info.get_token_and_metadata_from_function(function)
                && let Ok(name) = md.method_full_name(token)
            {
                let _ = writeln!(
                    std::io::stderr(),
                    "jit_counter: JIT of {name} failed: {status}"
                );
            }
        }
        Ok(())
    }

    fn shutdown(&self) -> Result<()> {
        let _ = writeln!(
            std::io::stderr(),
            "jit_counter: {} JIT compilations ({} failed)",
            self.started.load(Ordering::Relaxed),
            self.failed.load(Ordering::Relaxed)
        );
        Ok(())
    }
}

/// The only export the runtime needs.
///
/// # Safety
/// Called by the runtime with valid (or null) pointers.
#[unsafe(no_mangle)]
pub unsafe extern "system" fn DllGetClassObject(
    rclsid: *const GUID,
    riid: *const GUID,
    ppv: *mut *mut c_void,
) -> HRESULT {
    // SAFETY: the runtime's pointers are forwarded unchanged; dll_get_class_object checks
    // them for null.
    unsafe {
        corprof::dll_get_class_object(rclsid, riid, ppv, &CLSID_JIT_COUNTER, || {
            Ok(JitCounter::default())
        })
    }
}
