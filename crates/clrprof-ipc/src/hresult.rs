//! HRESULT names and what to do about them.
//!
//! Names and values come from `corprof_sys` (its `hresult_name` and constants); this module
//! adds the two loader failures it does not name and per-command advice.

use crate::codec::{Command, hr};

pub use corprof_sys::{
    CLASS_E_CLASSNOTAVAILABLE, CORPROF_E_PROFILER_ALREADY_ACTIVE,
    CORPROF_E_PROFILER_NOT_ATTACHABLE, CORPROF_E_TIMEOUT_WAITING_FOR_CONCURRENT_GC,
    CORPROF_E_UNSUPPORTED_FOR_ATTACHING_PROFILER,
};

/// `HRESULT_FROM_WIN32(ERROR_MOD_NOT_FOUND)`: the runtime's `dlopen` of the profiler failed.
pub const HRESULT_MOD_NOT_FOUND: i32 = corprof_sys::hresult_from_win32(126);
/// `HRESULT_FROM_WIN32(ERROR_PROC_NOT_FOUND)`: the library has no `DllGetClassObject`.
pub const HRESULT_PROC_NOT_FOUND: i32 = corprof_sys::hresult_from_win32(127);

/// Loader failures seen from a real runtime that `corprof_sys` does not name.
const EXTRA_NAMES: &[(i32, &str)] = &[
    (
        HRESULT_MOD_NOT_FOUND,
        "HRESULT_FROM_WIN32(ERROR_MOD_NOT_FOUND)",
    ),
    (
        HRESULT_PROC_NOT_FOUND,
        "HRESULT_FROM_WIN32(ERROR_PROC_NOT_FOUND)",
    ),
];

/// The symbolic name of `hresult`, if known: [`corprof_sys::hresult_name`] (which gives
/// the canonical corerror/winerror name, e.g. `CORDIAGIPC_E_UNKNOWN_COMMAND` for
/// `DS_IPC_E_UNKNOWN_COMMAND` and `E_FAIL` for `DS_IPC_E_FAIL`), else the loader errors
/// above.
pub fn hresult_name(hresult: i32) -> Option<&'static str> {
    corprof_sys::hresult_name(hresult).or_else(|| {
        EXTRA_NAMES
            .iter()
            .find(|(value, _)| *value == hresult)
            .map(|(_, name)| *name)
    })
}

/// Advice for a failed command, if there is any beyond the name.
pub fn hint(command: Command, hresult: i32) -> Option<&'static str> {
    let attach = matches!(command, Command::AttachProfiler);
    Some(match hresult {
        HRESULT_MOD_NOT_FOUND if attach => {
            "the runtime could not load the profiler library: check that the path exists as seen \
             from the target (inside its container, if any), is readable by the target's user, \
             matches the target's architecture, and that its dependencies resolve (ldd)"
        }
        HRESULT_PROC_NOT_FOUND if attach => {
            "the library loaded but exports no DllGetClassObject: is it a profiler library?"
        }
        CLASS_E_CLASSNOTAVAILABLE if attach => {
            "the profiler library does not implement this CLSID: pass the CLSID it registers"
        }
        CORPROF_E_PROFILER_ALREADY_ACTIVE => {
            "a profiler is already loaded in this process (one per process; it may have been \
             loaded at startup through CORECLR_ENABLE_PROFILING): restart the target without it"
        }
        CORPROF_E_PROFILER_NOT_ATTACHABLE => {
            "the profiler declined attach (it must implement ICorProfilerCallback3 and succeed \
             in InitializeForAttach): see the profiler's own log"
        }
        CORPROF_E_UNSUPPORTED_FOR_ATTACHING_PROFILER => {
            "the profiler asked for events only a startup profiler may use: start the target \
             under the profiler instead of attaching"
        }
        CORPROF_E_TIMEOUT_WAITING_FOR_CONCURRENT_GC => {
            "a background GC did not finish within the attach timeout: retry with a longer timeout"
        }
        hr::DS_IPC_E_NOT_YET_AVAILABLE | hr::DS_IPC_E_RUNTIME_UNINITIALIZED => {
            "the runtime is still starting: retry in a moment"
        }
        hr::DS_IPC_E_NOTSUPPORTED => {
            "this runtime does not support the command (Mono and NativeAOT runtimes do not load \
             profilers)"
        }
        hr::DS_IPC_E_BAD_ENCODING => {
            "the runtime could not parse the request: this runtime version may expect a \
             different layout; please report it with the runtime version"
        }
        hr::DS_IPC_E_INVALIDARG if matches!(command, Command::StartupProfiler) => {
            "the runtime accepts a startup profiler only while paused at startup: start it with \
             DOTNET_DefaultDiagnosticPortSuspend=1 or DOTNET_DiagnosticPorts=<path>,suspend"
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(
            hresult_name(0x8013_1385_u32 as i32),
            Some("CORDIAGIPC_E_UNKNOWN_COMMAND")
        );
        assert_eq!(
            hresult_name(0x8013_136A_u32 as i32),
            Some("CORPROF_E_PROFILER_ALREADY_ACTIVE")
        );
        assert_eq!(
            hresult_name(0x8013_1368_u32 as i32),
            Some("CORPROF_E_PROFILER_NOT_ATTACHABLE")
        );
        assert_eq!(
            hresult_name(0x8013_136F_u32 as i32),
            Some("CORPROF_E_UNSUPPORTED_FOR_ATTACHING_PROFILER")
        );
        assert_eq!(
            hresult_name(0x8007_007E_u32 as i32),
            Some("HRESULT_FROM_WIN32(ERROR_MOD_NOT_FOUND)")
        );
        assert_eq!(hresult_name(0x1234), None);
    }

    /// The loader failures named here are the ones corprof-sys does not name.
    #[test]
    fn extra_names_are_not_in_corprof_sys() {
        assert_eq!(HRESULT_MOD_NOT_FOUND, 0x8007_007E_u32 as i32);
        assert_eq!(HRESULT_PROC_NOT_FOUND, 0x8007_007F_u32 as i32);
        for (value, _) in EXTRA_NAMES {
            assert_eq!(corprof_sys::hresult_name(*value), None);
        }
    }
}
