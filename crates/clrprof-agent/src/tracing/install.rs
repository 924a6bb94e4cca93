//! Installing trace mode: the FunctionIDMapper2 callback (which decides which functions
//! are hooked and gives each a compact index) and the ELT hooks themselves.

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use corprof::{FunctionId, ProfilerInfo};

use super::Filter;

struct Mapper {
    info: ProfilerInfo,
    filter: Filter,
    /// `--args` patterns: these functions are hooked too and get an `args` client ID.
    args: Option<Filter>,
    /// FunctionID → client ID (an index, or an `args::ArgsFn` pointer; 0: not hooked). The
    /// runtime may ask twice for one function and must get the same answer.
    indices: Mutex<HashMap<usize, u64>>,
    next: AtomicU64,
}

static MAPPER: OnceLock<Mapper> = OnceLock::new();

/// Installs the mapper and the hooks. Only valid inside Initialize (startup).
pub fn install(
    info: &ProfilerInfo,
    filter: Filter,
    probe: Option<crate::config::TraceProbe>,
    args: Option<(Filter, crate::config::ArgLimits)>,
    counts: bool,
) -> Result<(), String> {
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    {
        let (args, limits) = match args {
            Some((f, l)) => (Some(f), Some(l)),
            None => (None, None),
        };
        let with_args = args.is_some();
        let slow_path = with_args && !super::args::fast_path();
        let _ = MAPPER.set(Mapper {
            info: info.clone(),
            filter,
            args,
            indices: Mutex::new(HashMap::new()),
            next: AtomicU64::new(1),
        });
        // SAFETY: (A1) `map_function` has the FunctionIDMapper2 signature, catches panics and
        // stays valid for the life of the library (which cannot detach once hooks are set).
        unsafe { info.set_function_id_mapper2(Some(map_function), std::ptr::null_mut()) }
            .map_err(|e| format!("SetFunctionIDMapper2 failed: {e}"))?;
        if let Some(limits) = limits
            && slow_path
        {
            // --args through the runtime: the slow path for every hooked function (the
            // runtime lets a profiler have one kind of hooks, for the whole process).
            super::args::init(info, limits);
            use super::args as a;
            // SAFETY: (A1) the hooks are plain C-ABI functions that catch panics; the runtime's
            // stub calls them with the client ID and its ELT info (args/hooks.rs).
            unsafe {
                info.set_enter_leave_function_hooks3_with_info(
                    Some(a::enter),
                    Some(a::leave),
                    Some(a::tailcall),
                )
            }
            .map_err(|e| format!("SetEnterLeaveFunctionHooks3WithInfo failed: {e}"))?;
            return Ok(());
        }
        // With an invariant TSC the assembly fast paths write the rings themselves and
        // need the thread-pointer map; otherwise every event takes the slow path, whose
        // Rust half reads the monotonic clock.
        use super::x64 as x;
        let fast = crate::os::clock::uses_tsc();
        let probe: Option<unsafe extern "C" fn()> = probe.map(|p| match p {
            crate::config::TraceProbe::Noop => {
                x::clrprof_elt_probe_noop as unsafe extern "C" fn()
            }
            crate::config::TraceProbe::Clock => x::clrprof_elt_probe_clock,
        });
        // The counting hooks find the thread's table through the map too.
        if fast || counts {
            crate::output::tpmap::enable();
        }
        if let Some(limits) = limits {
            super::args::init(info, limits);
        }
        let (enter, leave, tailcall): (
            unsafe extern "C" fn(),
            unsafe extern "C" fn(),
            unsafe extern "C" fn(),
        ) = if let Some(probe) = probe {
            (probe, probe, probe)
        } else if with_args && fast {
            // --args in the assembly hooks (the default): the trampolines read the values of `ArgsFn`
            // clients and send indices to the plain hooks.
            (
                x::clrprof_args_enter,
                x::clrprof_args_leave,
                x::clrprof_args_tailcall,
            )
        } else if with_args {
            (
                x::clrprof_args_enter_notsc,
                x::clrprof_args_leave_notsc,
                x::clrprof_args_tailcall_notsc,
            )
        } else if counts {
            (
                x::clrprof_count_enter,
                x::clrprof_count_leave,
                x::clrprof_count_tailcall,
            )
        } else if fast {
            (
                x::clrprof_elt_enter,
                x::clrprof_elt_leave,
                x::clrprof_elt_tailcall,
            )
        } else {
            (
                x::clrprof_elt_enter_slow,
                x::clrprof_elt_leave_slow,
                x::clrprof_elt_tailcall_slow,
            )
        };
        // SAFETY: (A2) the trampolines follow the JIT's fast-path hook convention (x64.rs).
        let (enter, leave, tailcall) = unsafe {
            (
                std::mem::transmute::<unsafe extern "C" fn(), corprof_sys::FunctionEnter3>(enter),
                std::mem::transmute::<unsafe extern "C" fn(), corprof_sys::FunctionLeave3>(leave),
                std::mem::transmute::<unsafe extern "C" fn(), corprof_sys::FunctionTailcall3>(
                    tailcall,
                ),
            )
        };
        // SAFETY: (A2) the trampolines keep every register the JIT's fast-path convention
        // requires (x64.rs) and never unwind.
        unsafe { info.set_enter_leave_function_hooks3(Some(enter), Some(leave), Some(tailcall)) }
            .map_err(|e| format!("SetEnterLeaveFunctionHooks3 failed: {e}"))?;
        Ok(())
    }
    #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
    {
        let _ = (info, filter, probe, args, counts);
        Err("trace mode (ELT hooks) is implemented for Linux x86_64 only; use --mode sample on this machine".into())
    }
}

/// FunctionIDMapper2: decides whether a function is hooked and gives it a compact index.
unsafe extern "system" fn map_function(
    function: usize,
    _client: *mut c_void,
    hook: *mut i32,
) -> usize {
    let r = std::panic::catch_unwind(|| {
        let Some(m) = MAPPER.get() else {
            return (function, false);
        };
        if let Ok(map) = m.indices.lock()
            && let Some(&idx) = map.get(&function)
        {
            return (idx as usize, idx != 0);
        }
        let names = crate::names::function_names(&m.info, FunctionId(function));
        let with_args = match (&m.args, &names) {
            (Some(a), Some(n)) => a.accepts(&n.name),
            _ => false,
        };
        let accept = with_args
            || names
                .as_ref()
                .map(|n| m.filter.accepts(&n.name))
                .unwrap_or(m.filter.include.is_empty());
        // Indices must fit the ring unit's 30 bits; past that (a billion functions)
        // functions simply stay unhooked.
        let idx = if accept {
            let i = m.next.fetch_add(1, Ordering::Relaxed);
            if i <= u64::from(crate::output::ring::MAX_INDEX) {
                i
            } else {
                0
            }
        } else {
            0
        };
        let client = if let (true, Some(n)) = (with_args && idx != 0, &names) {
            super::args::client_id(idx, FunctionId(function), &n.name).unwrap_or(idx)
        } else {
            idx
        };
        let mut map = match m.indices.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        let stored = *map.entry(function).or_insert(client);
        drop(map);
        if stored == client && idx != 0 {
            crate::names::emit_function_info_as(names, idx);
            // --args in the assembly hooks: plan it here, inside a callback.
            super::args::prepare(client);
        }
        (
            if stored != 0 {
                stored as usize
            } else {
                function
            },
            stored != 0,
        )
    });
    let (value, hooked) = r.unwrap_or((function, false));
    if !hook.is_null() {
        // SAFETY: (A1) the runtime passes a valid BOOL out pointer (checked for null above).
        unsafe { *hook = i32::from(hooked) };
    }
    value
}
