//! Trace mode after attach: IL probes through ReJIT. The runtime refuses ELT hooks to an
//! attaching profiler, but lets it replace a method's IL: for each method the filters
//! select, `install` builds a body that calls `hooks::on_enter` at entry and
//! `hooks::on_leave` at every exit, a `fault` handler taking the exceptions (`clrprof_il::wrap`,
//! docs/il-rewriter.md), asks the runtime to ReJIT the methods (and the methods they were
//! inlined into, which then keep their calls), and hands each body over when the runtime
//! asks for it (`rejit_body`, from `GetReJITParameters`). The probes record the same
//! Enter/Leave events as the ELT slow path, with the address of the method's frame local
//! as the frame's identity where the hooks pass the caller's SP.
//!
//! The probes are `x64::clrprof_probe_enter` / `clrprof_probe_leave`, the ELT fast path's
//! recording as plain C functions (the Rust slow path without an invariant TSC). The
//! `calli` signature carries `modopt(CallConvSuppressGCTransition)`, so the JIT calls them
//! with the thread still in cooperative mode, as it calls the ELT hooks; they obey the
//! same rules (docs/safety.md A2): the fast path calls nothing, and the slow path (a
//! thread's first event, a full ring) does only what the ELT slow path does there.
//!
//! Asked of the runtime after attach: write access to each probed module's metadata, for
//! a `TypeRef` of `CallConvSuppressGCTransition` and the probe signature's `StandAloneSig`
//! token per module (`DefineTypeRefByName`, `GetTokenFromSig`; refused, the plain
//! unmanaged signature, with its two GC-mode transitions, and a log line), and one
//! `StandAloneSig` per method (the locals with the frame local added). Methods not
//! probed, and why, are logged: dynamic and collectible modules, abstract, P/Invoke and
//! runtime-implemented methods, bodies with `jmp`. Modules loaded while the probes are
//! live are probed from their ModuleLoadFinished (`module_loaded`).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use clrprof_il::Body;
use clrprof_il::sig::{
    PROBE_SIG, frame_local_type, locals_with, method_shape, probe_sig_suppress_gc_transition,
};
use clrprof_il::wrap::{FrameLocal, Probe, wrap};
use corprof::{ClassId, MetadataRead, ModuleId, ProfilerInfo, RawMetadata};

use super::Filter;
use crate::names::{FunctionNames, emit_function_info_as};

/// Probed bodies by (ModuleID, MethodDef).
type Bodies = HashMap<(usize, u32), Vec<u8>>;

/// The wrapped bodies, until the runtime asks for them (again at each ReJIT of one).
static BODIES: OnceLock<Mutex<Bodies>> = OnceLock::new();

/// Between sessions (and at a start): the bodies of an earlier session go.
pub fn release_at_detach() {
    end_live();
    if let Some(b) = BODIES.get() {
        *b.lock().unwrap_or_else(|p| p.into_inner()) = HashMap::new();
    }
}

/// What `install` did.
#[derive(Debug, Default)]
pub struct Installed {
    /// Methods whose probed body is ready and whose ReJIT was requested.
    pub probed: usize,
    /// Those methods, for the revert at the end.
    pub requested: Vec<(ModuleId, u32)>,
    /// Methods the filters selected that cannot be probed, with the reason.
    pub refused: Vec<(String, String)>,
    /// Modules whose probes are called without GC-mode transitions, and with them.
    pub without_transitions: usize,
    pub with_transitions: usize,
    /// Where the time went.
    pub phases: Phases,
}

const METHOD_DEF: u8 = 0x06;
const TYPE_DEF: u8 = 0x02;
/// `mdAbstract`, `mdPinvokeImpl` (CorMethodAttr).
const ABSTRACT: u32 = 0x0400;
const PINVOKE: u32 = 0x2000;

/// The body of one method with probes, or why it has none.
fn probed_body(
    info: &ProfilerInfo,
    md: &RawMetadata<'_>,
    emit: &corprof::MetaDataEmit,
    module: ModuleId,
    token: u32,
    sig_token: u32,
    cookie: i64,
) -> Result<Vec<u8>, String> {
    let props = md.get_method_props(token).map_err(|e| format!("{e}"))?;
    let il = info
        .get_il_function_body(module, token)
        .map_err(|e| format!("GetILFunctionBody: {e}"))?;
    let body = Body::parse(&il).map_err(|e| e.to_string())?;
    let shape = method_shape(&props.sig).map_err(|e| e.to_string())?;
    let original = if body.header.local_sig != 0 {
        Some(
            md.standalone_sig(body.header.local_sig)
                .map_err(|e| format!("locals signature: {e}"))?,
        )
    } else {
        None
    };
    let ty = frame_local_type(&props.sig).map_err(|e| e.to_string())?;
    let (locals, index) = locals_with(original, &ty).map_err(|e| e.to_string())?;
    let locals_token = emit
        .get_token_from_sig(&locals)
        .map_err(|e| format!("GetTokenFromSig (locals): {e}"))?;
    let (enter, leave) = probe_functions();
    let probe = Probe {
        enter,
        leave,
        sig_token,
        cookie,
    };
    let local = FrameLocal {
        locals_token,
        index,
        returns_value: shape.returns.is_some(),
    };
    let wrapped = wrap(&body, &probe, local).map_err(|e| e.to_string())?;
    if wrapped.tail_calls_kept > 0 {
        log!(
            "probes: {} tail call(s) in {:#010x} keep their caller's frame",
            wrapped.tail_calls_kept,
            token
        );
    }
    wrapped.body.encode().map_err(|e| e.to_string())
}

/// The addresses the probes call at entry and at exit: the assembly fast paths where the
/// ELT hooks would use theirs (an invariant TSC; they find the thread's ring through the
/// thread-pointer map, turned on here), the Rust slow path otherwise.
fn probe_functions() -> (u64, u64) {
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    if crate::os::clock::uses_tsc() {
        return (
            super::x64::clrprof_probe_enter as *const () as usize as u64,
            super::x64::clrprof_probe_leave as *const () as usize as u64,
        );
    }
    (
        super::hooks::on_enter as *const () as usize as u64,
        super::hooks::on_leave as *const () as usize as u64,
    )
}

/// Where a module's `CallConvSuppressGCTransition` lives: the first of these it references.
const CORE_ASSEMBLIES: [&str; 4] = [
    "System.Runtime",
    "System.Private.CoreLib",
    "netstandard",
    "mscorlib",
];

/// The probes' `calli` signature token in one module: without GC-mode transitions
/// (`modopt(CallConvSuppressGCTransition)`, through a `TypeRef` the module is given) where
/// the module references a core assembly and the runtime grants the `TypeRef`, else the
/// plain unmanaged signature with its two transitions, and why.
fn probe_sig_token(
    md: &RawMetadata<'_>,
    emit: &corprof::MetaDataEmit,
) -> Result<(u32, Option<String>), String> {
    let fast = (|| {
        let scope = md
            .find_assembly_ref(&CORE_ASSEMBLIES)
            .ok_or("no reference to System.Runtime or System.Private.CoreLib")?;
        let ty = emit
            .define_type_ref_by_name(
                scope,
                "System.Runtime.CompilerServices.CallConvSuppressGCTransition",
            )
            .map_err(|e| format!("DefineTypeRefByName: {e}"))?;
        let sig = probe_sig_suppress_gc_transition(ty).map_err(|e| e.to_string())?;
        emit.get_token_from_sig(&sig)
            .map_err(|e| format!("GetTokenFromSig (probe signature): {e}"))
    })();
    match fast {
        Ok(t) => Ok((t, None)),
        Err(why) => emit
            .get_token_from_sig(&PROBE_SIG)
            .map(|t| (t, Some(why)))
            .map_err(|e| format!("GetTokenFromSig (probe signature): {e}")),
    }
}

/// Where `install` spent its time (the agent logs it: `probes: install took …`).
#[derive(Debug, Default, Clone, Copy)]
pub struct Phases {
    /// Reading each module's metadata and matching every method's name.
    pub select: Duration,
    /// `GetModuleMetaData(ofWrite)`: the runtime's conversion of the module's metadata to
    /// its writable form, once per module.
    pub write_access: Duration,
    /// The probe signature's `TypeRef` and token.
    pub signature: Duration,
    /// Each method's body: read, wrapped, its locals' token, encoded; and its name.
    pub bodies: Duration,
    /// `RequestReJITWithInliners` (the runtime suspends the app for part of it).
    pub rejit: Duration,
}

impl std::fmt::Display for Phases {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        write!(
            f,
            "select {:.1} ms, write access {:.1} ms, signature {:.1} ms, bodies {:.1} ms, \
             RequestReJIT {:.1} ms",
            ms(self.select),
            ms(self.write_access),
            ms(self.signature),
            ms(self.bodies),
            ms(self.rejit)
        )
    }
}

/// A probe session's selection while it is live, for the modules loaded after its
/// install (`module_loaded`).
struct Live {
    filter: Filter,
    next_index: u64,
    /// Modules looked at already (the install's, and those reported loaded since).
    seen: HashSet<usize>,
    /// Methods of those later modules whose ReJIT was requested, for the revert.
    late: Vec<(ModuleId, u32)>,
}

static LIVE: Mutex<Option<Live>> = Mutex::new(None);
/// Whether `LIVE` holds a session: ModuleLoadFinished looks here before taking the lock.
static LIVE_ON: AtomicBool = AtomicBool::new(false);

/// Selects the methods of every loaded module that `filter` accepts, builds their probed
/// bodies, names them and asks the runtime to ReJIT them (blocking their inlining). From
/// here until [`end_live`], modules loaded later are probed too ([`module_loaded`]); the
/// selection lock is held throughout, so a module loaded meanwhile is probed once.
pub fn install(info: &ProfilerInfo, filter: &Filter, next_index: &mut u64) -> Installed {
    let mut live = LIVE.lock().unwrap_or_else(|p| p.into_inner());
    let mut seen = HashSet::new();
    LIVE_ON.store(true, Ordering::Release);
    let mut out = Installed::default();
    let mut requests: Vec<(ModuleId, u32)> = Vec::new();
    let modules = info.enum_modules().unwrap_or_default();
    for module in modules {
        seen.insert(module.0);
        prepare_module(info, module, filter, next_index, &mut out, &mut requests);
    }
    if !requests.is_empty() {
        log!(
            "probes: calls without GC-mode transitions in {} module(s), with them in {}",
            out.without_transitions,
            out.with_transitions
        );
    }
    request(info, &mut out, requests);
    *live = Some(Live {
        filter: filter.clone(),
        next_index: *next_index,
        seen,
        late: Vec::new(),
    });
    out
}

/// `--probes` at startup: no module is loaded yet; each is probed as it loads
/// ([`module_loaded`]).
pub fn start_live(filter: &Filter) {
    let mut live = LIVE.lock().unwrap_or_else(|p| p.into_inner());
    *live = Some(Live {
        filter: filter.clone(),
        next_index: 1,
        seen: HashSet::new(),
        late: Vec::new(),
    });
    LIVE_ON.store(true, Ordering::Release);
}

/// ModuleLoadFinished while a probe session is live: the new module's selected methods get
/// their probes before any of its code can run, so the first compilation of each already
/// takes the probed body. The runtime's documentation asks that `RequestReJIT` (which
/// suspends the runtime) be called from a thread of the profiler's, not from one in a
/// callback: the callback waits for a short-lived thread of ours that makes the request.
/// (The callback runs in preemptive mode, so that wait does not hold up the suspension,
/// and nothing that runs in cooperative mode waits for the selection lock held here.)
pub fn module_loaded(info: &ProfilerInfo, module: ModuleId) {
    if !LIVE_ON.load(Ordering::Acquire) {
        return;
    }
    let mut guard = LIVE.lock().unwrap_or_else(|p| p.into_inner());
    let Some(live) = guard.as_mut() else {
        return;
    };
    if !live.seen.insert(module.0) {
        return;
    }
    let mut out = Installed::default();
    let mut requests = Vec::new();
    prepare_module(
        info,
        module,
        &live.filter,
        &mut live.next_index,
        &mut out,
        &mut requests,
    );
    if requests.is_empty() && out.refused.is_empty() {
        return;
    }
    let name = info
        .get_module_info(module)
        .map(|m| m.name)
        .unwrap_or_else(|_| format!("module {:#x}", module.0));
    out = request_from_our_thread(info, out, requests);
    log!(
        "probes installed in {} methods of {name}, loaded while the probes are live ({})",
        out.probed,
        out.phases
    );
    for (method, why) in &out.refused {
        log!("not probed: {method}: {why}");
    }
    live.late.extend(out.requested);
}

/// The session ends: no later module is probed; the methods of those probed after the
/// install, for the revert.
pub fn end_live() -> Vec<(ModuleId, u32)> {
    LIVE_ON.store(false, Ordering::Release);
    let mut guard = LIVE.lock().unwrap_or_else(|p| p.into_inner());
    guard.take().map(|l| l.late).unwrap_or_default()
}

/// [`request`] on a new thread of ours, waited for; on the calling thread if none starts.
fn request_from_our_thread(
    info: &ProfilerInfo,
    mut out: Installed,
    requests: Vec<(ModuleId, u32)>,
) -> Installed {
    let (tx, rx) = std::sync::mpsc::channel();
    let job = {
        let info = info.clone();
        let requests = requests.clone();
        move || {
            let mut out = Installed::default();
            request(&info, &mut out, requests);
            let _ = tx.send(out);
        }
    };
    match crate::os::thread::spawn("clrprof-rejit", job) {
        Ok(t) => {
            t.join();
            if let Ok(done) = rx.recv() {
                out.probed += done.probed;
                out.requested.extend(done.requested);
                out.phases.rejit += done.phases.rejit;
            }
        }
        Err(e) => {
            log!("probes: no thread for RequestReJIT ({e}); asked from the callback");
            request(info, &mut out, requests);
        }
    }
    out
}

/// Asks the runtime for the new code of `requests`, counting them in `out` if it agrees.
fn request(info: &ProfilerInfo, out: &mut Installed, requests: Vec<(ModuleId, u32)>) {
    if requests.is_empty() {
        return;
    }
    // The assembly probes find a thread's ring through the thread-pointer map.
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    if crate::os::clock::uses_tsc() {
        crate::output::tpmap::enable();
    }
    let t = Instant::now();
    let asked =
        info.request_rejit_with_inliners(corprof_sys::COR_PRF_REJIT_BLOCK_INLINING, &requests);
    out.phases.rejit += t.elapsed();
    match asked {
        Ok(()) => {
            out.probed += requests.len();
            out.requested.extend(requests);
        }
        Err(e) => {
            log!("RequestReJITWithInliners failed: {e}; no probes");
            if let Some(bodies) = BODIES.get()
                && let Ok(mut b) = bodies.lock()
            {
                for r in &requests {
                    b.remove(&(r.0.0, r.1));
                }
            }
        }
    }
}

/// Selects one module's methods, builds their bodies and names them; what is to be
/// ReJITted goes to `requests`, what cannot be probed to `out.refused`.
fn prepare_module(
    info: &ProfilerInfo,
    module: ModuleId,
    filter: &Filter,
    next_index: &mut u64,
    out: &mut Installed,
    requests: &mut Vec<(ModuleId, u32)>,
) {
    let bodies = BODIES.get_or_init(|| Mutex::new(HashMap::new()));
    let t = Instant::now();
    let Ok(md) = info.module_raw_metadata(module) else {
        return;
    };
    let mut selected = Vec::new();
    // Type by type: the methods of a type no include pattern can select are not named.
    let methods = (1..=md.rows(TYPE_DEF))
        .filter_map(|row| {
            let ty = (u32::from(TYPE_DEF) << 24) | row;
            let type_name = md.type_full_name(ty);
            if !filter.may_accept_type(&type_name) {
                return None;
            }
            Some((type_name, md.type_methods(ty).ok()?))
        })
        .flat_map(|(type_name, rows)| rows.map(move |row| (type_name.clone(), row)));
    for (type_name, row) in methods {
        let token = (u32::from(METHOD_DEF) << 24) | row;
        let Ok(props) = md.get_method_props(token) else {
            continue;
        };
        let name = format!("{type_name}.{}", props.name);
        if !filter.accepts(&name) {
            continue;
        }
        let why = if props.attributes & ABSTRACT != 0 {
            Some("abstract")
        } else if props.attributes & PINVOKE != 0 {
            Some("P/Invoke")
        } else if props.impl_flags & 0x3 != 0 {
            Some("not IL (native or runtime-implemented)")
        } else if props.code_rva == 0 {
            Some("no body")
        } else {
            None
        };
        match why {
            Some(w) => out.refused.push((name, w.into())),
            None => selected.push((token, name, props)),
        }
    }
    out.phases.select += t.elapsed();
    if selected.is_empty() {
        return;
    }
    let t = Instant::now();
    let emit = info.get_module_metadata_emit(module);
    out.phases.write_access += t.elapsed();
    let emit = match emit {
        Ok(e) => e,
        Err(e) => {
            for (_, name, _) in selected {
                out.refused
                    .push((name, format!("GetModuleMetaData(ofWrite): {e}")));
            }
            return;
        }
    };
    let t = Instant::now();
    let sig = probe_sig_token(&md, &emit);
    out.phases.signature += t.elapsed();
    let sig_token = match sig {
        Ok((t, None)) => {
            out.without_transitions += 1;
            t
        }
        Ok((t, Some(why))) => {
            let module_name = info
                .get_module_info(module)
                .map(|m| m.name)
                .unwrap_or_else(|_| format!("module {:#x}", module.0));
            log!("probes: {module_name}: calls with GC-mode transitions ({why})");
            out.with_transitions += 1;
            t
        }
        Err(e) => {
            for (_, name, _) in selected {
                out.refused.push((name, e.clone()));
            }
            return;
        }
    };
    let t = Instant::now();
    for (token, name, props) in selected {
        if *next_index > u64::from(crate::output::ring::MAX_INDEX) {
            out.refused.push((name, "too many traced functions".into()));
            continue;
        }
        let index = *next_index;
        match probed_body(info, &md, &emit, module, token, sig_token, index as i64) {
            Ok(bytes) => {
                *next_index += 1;
                if let Ok(mut b) = bodies.lock() {
                    b.insert((module.0, token), bytes);
                }
                let signature = corprof::sig::parse_method(&props.sig)
                    .map(|s| corprof::sig::format_method_params(&s, &|t| md.token_name(t)))
                    .unwrap_or_default();
                emit_function_info_as(
                    Some(FunctionNames {
                        module,
                        class: ClassId(0),
                        token,
                        name,
                        signature,
                    }),
                    index,
                );
                requests.push((module, token));
            }
            Err(e) => out.refused.push((name, e)),
        }
    }
    out.phases.bodies += t.elapsed();
}

/// `GetReJITParameters`: the probed body of this method, if `install` made one.
pub fn rejit_body(module: ModuleId, method: u32) -> Option<Vec<u8>> {
    BODIES.get()?.lock().ok()?.get(&(module.0, method)).cloned()
}
