//! Trace mode with `--args`: reading arguments and return values in the ELT hooks.
//!
//! **The runtime's slow path (`CLRPROF_ARGS_FAST=0`).** With `SetEnterLeaveFunctionHooks3WithInfo`
//! the JIT calls the runtime's own stub (`ProfileEnterNaked` in dotnet/runtime
//! `vm/amd64/asmhelpers.S`), which saves the argument registers into a
//! `PROFILE_PLATFORM_SPECIFIC_DATA` on its stack and calls `ProfileEnter`
//! (`vm/proftoeeinterfaceimpl.cpp`), an FCALL that asserts cooperative GC mode, sets up a
//! helper frame and the "in callback" state, and calls our hook as an ordinary C function
//! `(FunctionIDOrClientID, COR_PRF_ELT_INFO)`. So those hooks are plain `extern "system"`
//! functions (catching panics), no GC can move an object while they read it, and the
//! runtime's Info methods answer them. The runtime gives a profiler one kind of hooks for
//! the whole process (`EEToProfInterfaceImpl::SetEnterLeaveFunctionHooks3` clears the
//! slow-path ones and `…WithInfo` the fast ones; `SetEventMask` refuses the slow path's
//! flags once fast hooks are set), so every hooked function takes the slow path then; the
//! per-call work is one `GetFunctionEnter3Info` (or `Leave3Info`) until the function's
//! slots are learned (`arg_slots`), raw reads, and one record into the thread's ring.
//!
//! **The assembly hooks (the default).** On Linux x64 the JIT calls the
//! fast-path enter hook with the method's arguments still in RDI…R9 and XMM0–7 and its
//! caller SP in R15 (the stack arguments above it), and the leave hook with the return
//! value in RAX, RDX, XMM0 and XMM1 (RAX holding a returned buffer's address), all of
//! which the hook must keep (`RBM_PROFILER_ENTER_TRASH` / `_LEAVE_TRASH`). The trampolines
//! in `x64.rs` send indices (functions hooked without values) to the plain recording
//! hooks and [`ArgsFn`] addresses here with the saved registers ([`fast_enter`],
//! [`fast_leave`]). Each value's place is computed once by the SysV rules (`plan::place`,
//! `arg_slots::Placer`). The thread is in cooperative GC mode inside a helper call of JIT
//! code, so no GC moves an object while the hook reads, but it is in no runtime callback:
//! the runtime answers its "synchronous" Info methods (`GetModuleMetaData`,
//! `GetClassFromObject`, …) with `CORPROF_E_UNSUPPORTED_CALL_SEQUENCE` there. So plans
//! are built in the FunctionIDMapper ([`prepare`]), and an object's class is found
//! without the runtime: its first word is its method table, which is its ClassID, looked
//! up in a lock-free table (`table`) of the classes described in ClassLoadFinished and
//! while planning (arrays, which get no ClassLoadFinished, from `IsArrayClass`, an
//! asynchronous method, the first time one is met). A class not described yet reads so,
//! and is counted; primitives, strings (whose layout is known from `GetStringLayout2`),
//! enums, structs, objects, arrays and `ref`s to them are read.
//!
//! Either way, functions that only match `--include` record an Enter/Leave unit as
//! before; functions matching `--args` get a client ID that is a pointer to their
//! [`ArgsFn`] (indices are below 2^30, heap pointers above), and also record a
//! `CallArgs` / `CallReturn` record of typed values ([`clrprof_format::values`]).
//! Planning (signature → per-argument [`plan::Kind`], class layouts, places) happens once
//! per function and once per class. Class layouts are shared behind a `RwLock` taken for
//! reading only when the slow path decodes a reference-type value; the assembly hooks
//! read the lock-free table instead.
//!
//! The files: this one keeps the per-function and per-process state (client IDs, slot
//! caches, the closing statistics); `hooks` is the hooks themselves (the stub's frame, the
//! runtime's ranges or the learned slots, or the saved registers; the records); `plan`
//! turns signatures and loaded classes into [`plan::Kind`]s and places; `read` reads
//! values at the addresses the hooks hand it, the one place that dereferences them.

pub(crate) mod fast;
mod hooks;
mod plan;
mod read;
mod table;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use clrprof_format::Event;
use corprof::{ClassId, FunctionId, MetaDataImport, ModuleId, ProfilerInfo};

use super::arg_slots::{self, Slot};
use crate::config::ArgLimits;
use crate::output::buffers;
use plan::{ClassDesc, FnPlan, LoadedClasses};

pub use hooks::{enter, fast_enter, fast_leave, fast_tailcall, leave, tailcall};

/// With the assembly hooks, a described class goes into the table they read objects'
/// classes from ([`table`]). Here, not in `plan`, so that `plan` (which describes classes)
/// and `table` (which the hooks read) need not import each other.
fn publish(class: ClassId, d: &Arc<ClassDesc>) {
    if fast_path() {
        table::table().insert(class.0, d);
    }
}

/// Whether `--args` reads the values in the assembly hooks (the default) instead of
/// through the runtime's slow path (`CLRPROF_ARGS_FAST=0`, read once).
pub fn fast_path() -> bool {
    static FAST: OnceLock<bool> = OnceLock::new();
    *FAST.get_or_init(|| std::env::var_os("CLRPROF_ARGS_FAST").is_none_or(|v| v != "0"))
}

/// The assembly hooks: plans the `--args` function whose client ID the FunctionIDMapper
/// just handed out, there and then. The assembly hooks run outside any runtime callback,
/// where the runtime refuses its "synchronous" Info methods (`GetModuleMetaData`,
/// `GetClassFromObject`… answer `CORPROF_E_UNSUPPORTED_CALL_SEQUENCE`), so they never
/// plan; the mapper is a callback.
pub fn prepare(client: u64) {
    if !fast_path() || !is_args_client(client as usize) {
        return;
    }
    // SAFETY: (A1) args client IDs are addresses of leaked ArgsFn (client_id), never freed.
    let f = unsafe { &*(client as usize as *const ArgsFn) };
    hooks::plan_of(f);
}

/// One `--args` function; its address is the client ID the JIT passes to the hooks.
#[repr(C)]
pub struct ArgsFn {
    /// First, at the client ID's address: what the trampolines' short path reads.
    fast: fast::FastPrims,
    index: u64,
    /// `index`'s LEB128 bytes, for the short path of primitives-only methods.
    leb: Option<crate::output::buffers::Leb35>,
    function: FunctionId,
    /// Its name, for the closing log line.
    name: String,
    plan: OnceLock<Option<FnPlan>>,
    /// Where the arguments lie, once the runtime's answers agreed ([`arg_slots`]).
    enter_slots: SlotCache<Box<[Slot]>>,
    ret_slot: SlotCache<Slot>,
}

/// What a function's first calls learned about where its values lie.
struct SlotCache<T> {
    /// The slots of the first call; `None` inside when a value is not where the stub
    /// saved it (the runtime copies it), so every call asks.
    learned: OnceLock<Option<T>>,
    /// How many answers agreed with `learned`; [`BROKEN`] after one did not.
    agreed: AtomicU32,
}

const BROKEN: u32 = u32::MAX;

impl<T: PartialEq> SlotCache<T> {
    const fn new() -> Self {
        SlotCache {
            learned: OnceLock::new(),
            agreed: AtomicU32::new(0),
        }
    }

    /// The learned slots, once enough of the runtime's answers agreed with them.
    /// Whether every call asks the runtime: the first answers could not be expressed as
    /// slots, or a later one contradicted them.
    fn asking(&self) -> bool {
        matches!(self.learned.get(), Some(None)) || self.agreed.load(Ordering::Relaxed) == BROKEN
    }

    fn trusted(&self) -> Option<&T> {
        let agreed = self.agreed.load(Ordering::Relaxed);
        if (arg_slots::CHECKS..BROKEN).contains(&agreed) {
            self.learned.get()?.as_ref()
        } else {
            None
        }
    }

    /// Compares one answer of the runtime (as slots) with what the first call learned.
    fn observe(&self, seen: Option<T>, s: &State) {
        // `Err` gives `seen` back when an earlier call taught the slots: compare it.
        let seen = self.learned.set(seen).err();
        let Some(Some(learned)) = self.learned.get() else {
            return;
        };
        if seen.is_none_or(|seen| seen.as_ref() == Some(learned)) {
            let now = self
                .agreed
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |a| {
                    (a != BROKEN).then_some(a + 1)
                });
            if now == Ok(arg_slots::CHECKS - 1) {
                s.slotted.fetch_add(1, Ordering::Relaxed);
            }
        } else if self.agreed.swap(BROKEN, Ordering::Relaxed) != BROKEN {
            s.slot_mismatches.fetch_add(1, Ordering::Relaxed);
        }
    }
}

struct State {
    info: ProfilerInfo,
    limits: ArgLimits,
    string_layout: Option<(u32, u32)>,
    classes: RwLock<HashMap<usize, Arc<ClassDesc>>>,
    /// (module, typedef) → [(type args, ClassID)] of the classes loaded so far.
    loaded: Mutex<LoadedClasses>,
    /// FunctionID → index, for the exception callbacks.
    by_function: Mutex<HashMap<usize, u64>>,
    /// Every `--args` function (leaked, never freed), for the closing log line.
    functions: Mutex<Vec<&'static ArgsFn>>,
    corelib: OnceLock<Option<(ModuleId, MetaDataImport)>>,
    /// Value lists cut at the per-call bound. (No per-call counter: a shared atomic on
    /// every call would cost every traced thread; the trace itself has the count.)
    cut: AtomicU64,
    /// Functions (entries and returns apart) whose values are read from learned slots.
    slotted: AtomicU64,
    /// ... and those whose learned slots the runtime later contradicted.
    slot_mismatches: AtomicU64,
    /// Assembly hooks: objects whose class the table did not describe (a rare path, so
    /// a shared counter costs nothing on the common one).
    undescribed: AtomicU64,
    /// Classes whose description waits for a value type to be reported loaded
    /// ([`plan::describe_loaded`]).
    pending: Mutex<Vec<(ClassId, u8)>>,
    /// Class loads described for the table, and the thread CPU time that took.
    described: AtomicU64,
    describing_ns: AtomicU64,
}

static STATE: OnceLock<State> = OnceLock::new();

/// Sets up `--args` (trace mode, inside Initialize, before the hooks are set).
pub fn init(info: &ProfilerInfo, limits: ArgLimits) {
    let _ = STATE.set(State {
        info: info.clone(),
        limits,
        string_layout: info.get_string_layout2().ok(),
        classes: RwLock::new(HashMap::new()),
        loaded: Mutex::new(HashMap::new()),
        by_function: Mutex::new(HashMap::new()),
        functions: Mutex::new(Vec::new()),
        corelib: OnceLock::new(),
        cut: AtomicU64::new(0),
        slotted: AtomicU64::new(0),
        slot_mismatches: AtomicU64::new(0),
        undescribed: AtomicU64::new(0),
        pending: Mutex::new(Vec::new()),
        described: AtomicU64::new(0),
        describing_ns: AtomicU64::new(0),
    });
    if fast_path() {
        // Made here, in Initialize, so that the hooks only ever read it.
        table::table();
    }
}

/// What `--args` did, for the agent's closing log line.
#[derive(Debug, Default)]
pub struct ArgStats {
    /// Value lists cut at the per-call bound.
    pub cut: u64,
    /// Function entries and returns read from learned slots instead of asking the runtime.
    pub slotted: u64,
    /// Learned slots the runtime later contradicted (those functions ask again).
    pub slot_mismatches: u64,
    /// Functions whose entries (or returns) ask the runtime on every call: named, with
    /// `(entry)` / `(return)`.
    pub asking: Vec<String>,
    /// Assembly hooks: functions called so far with a value that could not be placed
    /// (recorded as unreadable), named.
    pub unplaced: Vec<String>,
    /// Assembly hooks: objects whose class was not described yet (recorded as such).
    pub undescribed: u64,
    /// Assembly hooks: classes the class table had no room for, or that came after its
    /// limit of descriptions (`table::PUBLISHED_MAX`, reloaded classes included).
    pub table_full: u64,
    /// Assembly hooks: class loads described for the table, and the thread CPU time
    /// (ns) the describing took in ClassLoadFinished.
    pub described: u64,
    pub describing_ns: u64,
    /// Assembly hooks: functions whose entries, and whose returns, the trampolines write
    /// themselves (`fast.rs`; the rest go to the Rust hooks).
    pub trampoline_entries: u64,
    pub trampoline_returns: u64,
}

pub fn stats() -> ArgStats {
    STATE.get().map_or(ArgStats::default(), |s| {
        let functions = s.functions.lock().unwrap_or_else(|p| p.into_inner());
        let mut asking = Vec::new();
        let mut unplaced = Vec::new();
        let (mut trampoline_entries, mut trampoline_returns) = (0, 0);
        for f in functions.iter() {
            let flags = f.fast.flags();
            trampoline_entries += u64::from(flags & fast::ENTER != 0);
            trampoline_returns += u64::from(flags & fast::LEAVE != 0);
            if let Some(Some(plan)) = f.plan.get()
                && (plan.places.iter().any(Option::is_none)
                    || (plan.ret.is_some() && plan.ret_place.is_none()))
                && fast_path()
            {
                unplaced.push(f.name.clone());
            }
            if f.enter_slots.asking() {
                asking.push(format!("{} (entry)", f.name));
            }
            if f.ret_slot.asking() {
                asking.push(format!("{} (return)", f.name));
            }
        }
        ArgStats {
            cut: s.cut.load(Ordering::Relaxed),
            slotted: s.slotted.load(Ordering::Relaxed),
            slot_mismatches: s.slot_mismatches.load(Ordering::Relaxed),
            asking,
            unplaced,
            undescribed: s.undescribed.load(Ordering::Relaxed),
            table_full: table::existing().map_or(0, |t| t.full()),
            described: s.described.load(Ordering::Relaxed),
            describing_ns: s.describing_ns.load(Ordering::Relaxed),
            trampoline_entries,
            trampoline_returns,
        }
    })
}

/// The client ID of an `--args` function: the address of its (leaked, one per function)
/// [`ArgsFn`]. `None` if the address could be mistaken for an index.
pub fn client_id(index: u64, function: FunctionId, name: &str) -> Option<u64> {
    let f = Box::new(ArgsFn {
        fast: fast::FastPrims::new(),
        index,
        leb: crate::output::buffers::Leb35::new(index),
        function,
        name: name.to_string(),
        plan: OnceLock::new(),
        enter_slots: SlotCache::new(),
        ret_slot: SlotCache::new(),
    });
    let f: &'static ArgsFn = Box::leak(f);
    let p = f as *const ArgsFn as u64;
    if p <= u64::from(crate::output::ring::MAX_INDEX) {
        // Never happens with a normal heap; the function is then traced without values.
        return None;
    }
    if let Some(s) = STATE.get() {
        let mut m = s.by_function.lock().unwrap_or_else(|p| p.into_inner());
        m.insert(function.0, index);
        drop(m);
        let mut all = s.functions.lock().unwrap_or_else(|p| p.into_inner());
        all.push(f);
    }
    Some(p)
}

/// An exception unwinds `function`: closes its open invocation (exception callbacks).
pub fn unwound(function: FunctionId) {
    let Some(s) = STATE.get() else { return };
    let index = {
        let m = s.by_function.lock().unwrap_or_else(|p| p.into_inner());
        m.get(&function.0).copied()
    };
    if let Some(index) = index {
        buffers::emit(&Event::CallUnwound { function: index });
    }
}

fn is_args_client(id: usize) -> bool {
    id as u64 > u64::from(crate::output::ring::MAX_INDEX)
}

/// ClassUnloadFinished: the class's method table (and those of arrays of it, which get no
/// event of their own) may be reused by a later class, so their descriptions go.
pub fn class_unloaded(class: ClassId) {
    let Some(s) = STATE.get() else { return };
    s.classes
        .write()
        .unwrap_or_else(|p| p.into_inner())
        .remove(&class.0);
    if let Some(t) = table::existing() {
        t.withdraw(|c, d| c == class.0 || matches!(d.shape, plan::Shape::Array { .. }));
    }
}

/// ClassLoadFinished: remembers value types (and CoreLib's, for generic arguments).
pub fn class_loaded(class: ClassId, module: ModuleId, token: u32, type_args: Vec<ClassId>) {
    let Some(s) = STATE.get() else { return };
    {
        let mut m = s.loaded.lock().unwrap_or_else(|p| p.into_inner());
        let v = m.entry((module.0, token)).or_default();
        if !v.iter().any(|(_, c)| *c == class) {
            v.push((type_args, class));
        }
    }
    if fast_path() {
        // The assembly hooks cannot ask the runtime an object's class: describe each
        // class here, where it answers, for them to find by the object's first word.
        let t0 = crate::os::clock::own_thread_cpu_ns();
        plan::describe_loaded(s, class);
        let spent = crate::os::clock::own_thread_cpu_ns().saturating_sub(t0);
        s.described.fetch_add(1, Ordering::Relaxed);
        s.describing_ns.fetch_add(spent, Ordering::Relaxed);
    }
}
