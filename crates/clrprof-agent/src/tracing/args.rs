//! Trace mode with `--args`: the ELT3 slow path, which reads arguments and return values.
//!
//! With `SetEnterLeaveFunctionHooks3WithInfo` the JIT calls the runtime's own stub
//! (`ProfileEnterNaked` in dotnet/runtime `vm/amd64/asmhelpers.S`), which saves the
//! argument registers into a `PROFILE_PLATFORM_SPECIFIC_DATA` on its stack and calls
//! `ProfileEnter` (`vm/proftoeeinterfaceimpl.cpp`), an FCALL that asserts cooperative GC
//! mode, sets up a helper frame and the "in callback" state, and calls our hook as an
//! ordinary C function `(FunctionIDOrClientID, COR_PRF_ELT_INFO)`. So the hooks here are
//! plain `extern "system"` functions (catching panics), and no GC can move an object
//! while they read it (the thread is in cooperative mode and we call nothing that
//! triggers a GC).
//!
//! Every hooked function takes this path once the slow path is on (the fast and slow
//! paths cannot be mixed). Functions that only match `--include` record an Enter/Leave
//! unit as before; functions matching `--args` get a client ID that is a pointer to their
//! [`ArgsFn`] (indices are below 2^30, heap pointers above), and also record a
//! `CallArgs` / `CallReturn` record of typed values ([`clrprof_format::values`]).
//!
//! Planning (signature → per-argument [`Kind`], class layouts) happens once per function
//! and once per class; the per-call work is one `GetFunctionEnter3Info` (or
//! `Leave3Info`), raw reads of the ranges it gives and of the objects they reference,
//! and one record into the thread's ring. Class layouts are shared behind a `RwLock`
//! taken for reading only when a reference-type value is decoded.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use clrprof_format::Event;
use clrprof_format::values::ValueWriter;
use corprof::sig::{self, Type};
use corprof::{ClassId, FunctionId, MetaDataImport, MetadataRead, ModuleId, ProfilerInfo};
use corprof_sys::{COR_PRF_ELT_INFO, FunctionIDOrClientID};

use super::EltKind;
use super::arg_slots::{self, Registers, Returned, Slot, StubFrame};
use crate::config::ArgLimits;
use crate::os::clock;
use crate::output::buffers;

/// One `--args` function; its address is the client ID the JIT passes to the hooks.
pub struct ArgsFn {
    index: u64,
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

struct FnPlan {
    /// `this` first (when the method has one), then the parameters.
    args: Vec<Param>,
    ret: Option<Param>,
}

struct Param {
    name: String,
    ty: String,
    kind: Kind,
    /// For a struct passed in registers: the saved registers the SysV convention
    /// predicts for its eightbytes, and the bytes its fields cover ([`arg_slots`]).
    regs: Option<(Vec<u16>, u16)>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Prim {
    Bool,
    Char,
    I1,
    U1,
    I2,
    U2,
    I4,
    U4,
    I8,
    U8,
    R4,
    R8,
    I,
    U,
}

impl Prim {
    fn size(self) -> usize {
        match self {
            Prim::Bool | Prim::I1 | Prim::U1 => 1,
            Prim::Char | Prim::I2 | Prim::U2 => 2,
            Prim::I4 | Prim::U4 | Prim::R4 => 4,
            _ => 8,
        }
    }

    fn from_element_type(et: u32) -> Option<Prim> {
        Some(match et {
            0x02 => Prim::Bool,
            0x03 => Prim::Char,
            0x04 => Prim::I1,
            0x05 => Prim::U1,
            0x06 => Prim::I2,
            0x07 => Prim::U2,
            0x08 => Prim::I4,
            0x09 => Prim::U4,
            0x0A => Prim::I8,
            0x0B => Prim::U8,
            0x0C => Prim::R4,
            0x0D => Prim::R8,
            0x18 => Prim::I,
            0x19 => Prim::U,
            _ => return None,
        })
    }

    fn from_name(name: &str) -> Option<Prim> {
        Some(match name {
            "System.Boolean" => Prim::Bool,
            "System.Char" => Prim::Char,
            "System.SByte" => Prim::I1,
            "System.Byte" => Prim::U1,
            "System.Int16" => Prim::I2,
            "System.UInt16" => Prim::U2,
            "System.Int32" => Prim::I4,
            "System.UInt32" => Prim::U4,
            "System.Int64" => Prim::I8,
            "System.UInt64" => Prim::U8,
            "System.Single" => Prim::R4,
            "System.Double" => Prim::R8,
            "System.IntPtr" => Prim::I,
            "System.UIntPtr" => Prim::U,
            _ => return None,
        })
    }

    fn corelib_name(self) -> &'static str {
        match self {
            Prim::Bool => "System.Boolean",
            Prim::Char => "System.Char",
            Prim::I1 => "System.SByte",
            Prim::U1 => "System.Byte",
            Prim::I2 => "System.Int16",
            Prim::U2 => "System.UInt16",
            Prim::I4 => "System.Int32",
            Prim::U4 => "System.UInt32",
            Prim::I8 => "System.Int64",
            Prim::U8 => "System.UInt64",
            Prim::R4 => "System.Single",
            Prim::R8 => "System.Double",
            Prim::I => "System.IntPtr",
            Prim::U => "System.UIntPtr",
        }
    }
}

/// How a value at an address is read.
#[derive(Clone)]
enum Kind {
    Prim(Prim),
    /// An object reference (class, string, array, object, boxed): described by the
    /// object's own class.
    Ref,
    /// A reference declared `string` (a sealed class): read as a string without asking
    /// the runtime for the object's class.
    Str,
    /// A value type stored inline (struct, enum).
    Inline(Arc<ClassDesc>),
    /// A managed pointer to a value of the inner kind.
    ByRef(Box<Kind>),
    Ptr,
    FnPtr,
    TypedByRef,
    Unknown(&'static str),
}

impl Kind {
    fn size(&self) -> usize {
        match self {
            Kind::Prim(p) => p.size(),
            Kind::Inline(d) => d.size as usize,
            Kind::TypedByRef => 16,
            _ => 8,
        }
    }
}

/// A loaded class, as decoding needs it.
struct ClassDesc {
    name: String,
    /// Unboxed size of a value type; 0 for reference types.
    size: u32,
    shape: Shape,
}

enum Shape {
    String,
    Array {
        element: String,
        kind: Kind,
        rank: u32,
    },
    /// A reference type: instance fields (inherited first), offsets from the object.
    Object(Vec<FieldDesc>),
    /// A value type: fields with offsets from the value; `box_offset` inside a box.
    Struct {
        fields: Vec<FieldDesc>,
        box_offset: u32,
    },
    Enum {
        underlying: Prim,
        members: Vec<(i64, String)>,
        box_offset: u32,
    },
    /// A boxable primitive (`System.Int32`…).
    Primitive {
        prim: Prim,
        box_offset: u32,
    },
    Unknown(&'static str),
}

struct FieldDesc {
    name: String,
    offset: u32,
    kind: Kind,
}

/// (module, typedef) → [(type args, ClassID)].
type LoadedClasses = HashMap<(usize, u32), Vec<(Vec<ClassId>, ClassId)>>;

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
    });
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
}

pub fn stats() -> ArgStats {
    STATE.get().map_or(ArgStats::default(), |s| {
        let functions = s.functions.lock().unwrap_or_else(|p| p.into_inner());
        let mut asking = Vec::new();
        for f in functions.iter() {
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
        }
    })
}

/// The client ID of an `--args` function: the address of its (leaked, one per function)
/// [`ArgsFn`]. `None` if the address could be mistaken for an index.
pub fn client_id(index: u64, function: FunctionId, name: &str) -> Option<u64> {
    let f = Box::new(ArgsFn {
        index,
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

/// The stub's frame of this hook call: the saved register block and the profiled method's
/// caller SP. `COR_PRF_ELT_INFO` points to the runtime's `COR_PRF_ELT_INFO_INTERNAL`,
/// whose first word is the stub's `PROFILE_PLATFORM_SPECIFIC_DATA`, whose fifth word is
/// `profiledRsp` (the caller SP the JIT passed). This is runtime-internal layout, so each
/// step is checked to stay within the stack just above us; `Err` holds the best frame
/// identifier found when a check fails.
fn stub_frame(elt: usize) -> Result<StubFrame, usize> {
    let here = &elt as *const usize as usize;
    let near = |p: usize| p > here && p - here < (256 << 10);
    if !near(elt) {
        return Err(here);
    }
    // SAFETY: (A1) `elt` is the address of the runtime's ELT info local, on this stack just
    // above our frame (checked); its first word is readable.
    let saved = unsafe { std::ptr::read(elt as *const usize) };
    if !near(saved) {
        return Err(elt);
    }
    // SAFETY: (A1) `saved` points into the stub's frame on this stack (checked), which holds
    // at least the first five words of the platform data.
    let profiled_sp = unsafe { std::ptr::read((saved as *const usize).add(4)) };
    if near(profiled_sp) && profiled_sp > saved {
        Ok(StubFrame { saved, profiled_sp })
    } else {
        Err(saved)
    }
}

/// The profiled method's SP, which identifies its frame for Enter and Leave alike; if
/// the stub's frame cannot be read, the stub's data address (a fixed distance below the
/// profiled frame for enter and leave alike) stands in.
fn frame_sp(frame: Result<StubFrame, usize>) -> usize {
    frame.map_or_else(|fallback| fallback, |f| f.profiled_sp)
}

/// `FunctionEnter3WithInfo`.
///
/// # Safety
/// Called by the runtime's slow-path stub only: `id` is an index or an [`ArgsFn`] address
/// from [`client_id`], `elt` the runtime's ELT info for this call.
pub unsafe extern "system" fn enter(id: FunctionIDOrClientID, elt: COR_PRF_ELT_INFO) {
    let _ = std::panic::catch_unwind(|| on_enter(id.raw(), elt));
}

/// `FunctionLeave3WithInfo`.
///
/// # Safety
/// As for [`enter`].
pub unsafe extern "system" fn leave(id: FunctionIDOrClientID, elt: COR_PRF_ELT_INFO) {
    let _ = std::panic::catch_unwind(|| on_leave(id.raw(), elt, EltKind::Leave));
}

/// `FunctionTailcall3WithInfo`: the call ends without a return value.
///
/// # Safety
/// As for [`enter`].
pub unsafe extern "system" fn tailcall(id: FunctionIDOrClientID, elt: COR_PRF_ELT_INFO) {
    let _ = std::panic::catch_unwind(|| on_leave(id.raw(), elt, EltKind::Tailcall));
}

fn on_enter(id: usize, elt: usize) {
    let frame = stub_frame(elt);
    let sp = frame_sp(frame) as u64;
    if !is_args_client(id) {
        buffers::emit_elt(EltKind::Enter, id as u64, sp);
        return;
    }
    // SAFETY: (A1) args client IDs are addresses of leaked ArgsFn (client_id), never freed.
    let f = unsafe { &*(id as *const ArgsFn) };
    // One timestamp for the Enter and its values (a TSC read costs ~11 ns on a VM).
    let ts = clock::ticks();
    buffers::emit_elt_at(ts, EltKind::Enter, f.index, sp);
    let Some(s) = STATE.get() else { return };
    let Some(plan) = f.plan.get_or_init(|| {
        let plan = build_plan(s, f.function);
        if let Some(plan) = &plan {
            write_names(f.index, plan);
        }
        plan
    }) else {
        return;
    };
    if let (Ok(frame), Some(slots)) = (frame, f.enter_slots.trusted()) {
        // Structs passed in registers are copied together first, as the runtime would.
        let mut copies = [[0u64; 2]; arg_slots::MAX_STRUCTS];
        for slot in slots.iter() {
            if let Slot::Struct { regs, count, copy } = *slot {
                copies[usize::from(copy)] = frame.gather(regs, count);
            }
        }
        return write_args(s, f, plan, ts, sp, |i| {
            slots.get(i).map(|slot| match *slot {
                Slot::Struct { copy, .. } => copies[usize::from(copy)].as_ptr() as usize,
                other => frame.address(other).unwrap_or(0),
            })
        });
    }
    // Up to 16 ranges without allocating; more (rare) through the allocating call.
    let mut inline = [corprof::ArgumentRange::default(); 16];
    let asked = ask_enter_ranges(s, f, elt, &mut inline);
    if let (Ok(frame), Ok(ranges)) = (frame, &asked) {
        // Owned ranges (more than fit inline) are rare enough to keep asking.
        let slots: Option<Box<[Slot]>> = matches!(ranges, std::borrow::Cow::Borrowed(_))
            .then(|| {
                let mut copies = 0u8;
                ranges
                    .iter()
                    .enumerate()
                    .map(|(i, r)| {
                        frame.argument_slot(r.start).or_else(|| {
                            // A struct the runtime copied from registers: from the ones
                            // the SysV convention predicts, if the bytes agree.
                            let (regs, covered) = plan.args.get(i)?.regs.as_ref()?;
                            let slot =
                                frame.struct_slot((r.start, r.length), regs, *covered, copies)?;
                            copies += 1;
                            Some(slot)
                        })
                    })
                    .collect()
            })
            .flatten();
        f.enter_slots.observe(slots, s);
    }
    match &asked {
        Ok(ranges) => write_args(s, f, plan, ts, sp, |i| ranges.get(i).map(|r| r.start)),
        Err(e) => write_bounded(
            s,
            |w| {
                w.item("?", Some("?"));
                w.unreadable(&format!("GetFunctionEnter3Info: {e}"));
            },
            ts,
            Record {
                returned: false,
                function: f.index,
                sp: sp & 0xffff_ffff,
            },
        ),
    }
}

/// Records a call's arguments; `start(i)` is the address of argument `i`.
fn write_args(
    s: &State,
    f: &ArgsFn,
    plan: &FnPlan,
    ts: u64,
    sp: u64,
    start: impl Fn(usize) -> Option<usize>,
) {
    write_bounded(
        s,
        |w| {
            for (i, p) in plan.args.iter().enumerate() {
                w.param(i as u32);
                match start(i) {
                    Some(addr) if addr != 0 => write_value(s, w, &p.kind, addr, 0),
                    _ => w.unreadable("no argument range"),
                }
            }
        },
        ts,
        Record {
            returned: false,
            function: f.index,
            sp: sp & 0xffff_ffff,
        },
    );
}

/// Records a function's value names and declared types once (`ArgNames`); its calls'
/// values refer to them by index. Waits for room whatever `--on-full` says: without the
/// names, none of the function's values could be read.
fn write_names(function: u64, plan: &FnPlan) {
    let pairs = plan.args.iter().chain(&plan.ret);
    let names = clrprof_format::values::encode_names(pairs.map(|p| (&*p.name, &*p.ty)));
    buffers::emit_waiting(&Event::ArgNames {
        function,
        params: plan.args.len() as u64,
        names: std::borrow::Cow::Owned(names),
    });
}

/// The argument ranges from the runtime (`GetFunctionEnter3Info`).
fn ask_enter_ranges<'a>(
    s: &State,
    f: &ArgsFn,
    elt: usize,
    inline: &'a mut [corprof::ArgumentRange; 16],
) -> Result<std::borrow::Cow<'a, [corprof::ArgumentRange]>, corprof::HResult> {
    match s
        .info
        .get_function_enter3_ranges(f.function, elt, &mut inline[..])
    {
        Ok(n) if n <= inline.len() => Ok(std::borrow::Cow::Borrowed(&inline[..n])),
        // More ranges than the inline buffer holds: the runtime answers
        // ERROR_INSUFFICIENT_BUFFER (21 arguments did) rather than a count; ask again with
        // a buffer of the size it needs.
        Ok(_) | Err(corprof::HResult::ERROR_INSUFFICIENT_BUFFER) => s
            .info
            .get_function_enter3_info(f.function, elt)
            .map(|i| std::borrow::Cow::Owned(i.ranges)),
        Err(e) => Err(e),
    }
}

fn on_leave(id: usize, elt: usize, kind: EltKind) {
    let frame = stub_frame(elt);
    let sp = frame_sp(frame) as u64;
    if !is_args_client(id) {
        buffers::emit_elt(kind, id as u64, sp);
        return;
    }
    // SAFETY: (A1) as in on_enter.
    let f = unsafe { &*(id as *const ArgsFn) };
    let ts = clock::ticks();
    if let Some(s) = STATE.get()
        && let Some(Some(plan)) = f.plan.get()
    {
        let retval = match (kind, &plan.ret) {
            (EltKind::Leave, Some(ret)) => Some(return_value(s, f, frame, elt, &ret.kind)),
            _ => None,
        };
        write_bounded(
            s,
            |w| {
                if let (Some(ret), Some(r)) = (&plan.ret, &retval) {
                    w.param(plan.args.len() as u32);
                    match r {
                        Ok(start) if *start != 0 => write_value(s, w, &ret.kind, *start, 0),
                        Ok(_) => w.unreadable("no return value range"),
                        Err(e) => w.unreadable(&format!("GetFunctionLeave3Info: {e}")),
                    }
                }
            },
            ts,
            Record {
                returned: true,
                function: f.index,
                sp: sp & 0xffff_ffff,
            },
        );
    }
    buffers::emit_elt_at(ts, kind, f.index, sp);
}

/// The address of the return value: from the learned slot, or asked of the runtime
/// (`GetFunctionLeave3Info`), whose answer teaches the slot.
fn return_value(
    s: &State,
    f: &ArgsFn,
    frame: Result<StubFrame, usize>,
    elt: usize,
    kind: &Kind,
) -> Result<usize, corprof::HResult> {
    if let (Ok(frame), Some(slot)) = (frame, f.ret_slot.trusted()) {
        return Ok(frame.address(*slot).unwrap_or(0));
    }
    let start = s
        .info
        .get_function_leave3_info(f.function, elt)?
        .retval
        .start;
    if let Ok(frame) = frame {
        // Integers and references are in `rax` as the stub saved them; the runtime
        // copies a float or double result there from xmm0 (`flt0`) during the call.
        let how = match kind {
            Kind::Prim(Prim::R4 | Prim::R8) => Returned::Float,
            Kind::Ref | Kind::Str | Kind::Prim(_) => Returned::Integer,
            _ => Returned::Other,
        };
        f.ret_slot.observe(frame.return_slot(start, how), s);
    }
    Ok(start)
}

/// Encodes values with `write` and emits the record `event` makes of them. The values
/// are written into a small stack buffer first (most calls need a few dozen bytes, and
/// clearing the full bound on every call would cost more than the rest); only if that
/// was cut and the bound is larger are they written again into a buffer of the bound.
fn write_bounded(s: &State, write: impl Fn(&mut ValueWriter<'_>), ts: u64, record: Record) {
    let bound = s.limits.bytes as usize;
    // Most calls need a few bytes: clear 64 first, 256 or the bound only when cut.
    let mut tiny = [0u8; 64];
    let mut w = ValueWriter::new(&mut tiny[..bound.min(64)]);
    write(&mut w);
    if !w.was_cut() || bound <= 64 {
        return finish(s, w, ts, record);
    }
    let mut small = [0u8; 256];
    let mut w = ValueWriter::new(&mut small[..bound.min(256)]);
    write(&mut w);
    if w.was_cut() && bound > 256 {
        let mut big = [0u8; 8192];
        let mut w = ValueWriter::new(&mut big[..bound.min(8192)]);
        write(&mut w);
        return finish(s, w, ts, record);
    }
    finish(s, w, ts, record)
}

/// Which record a value list goes into.
#[derive(Clone, Copy)]
struct Record {
    /// `CallReturn` (else `CallArgs`).
    returned: bool,
    function: u64,
    /// Low 32 bits of the caller SP.
    sp: u64,
}

fn finish(s: &State, w: ValueWriter<'_>, ts: u64, r: Record) {
    let (bytes, cut) = w.finish();
    if cut {
        s.cut.fetch_add(1, Ordering::Relaxed);
    }
    buffers::emit_call_values(ts, r.returned, r.function, r.sp, bytes);
}

// ---- Reading values (inside the hook only) ---------------------------------------------

/// Reads a `T` at `addr`.
///
/// # Safety
/// `addr` must be readable for `size_of::<T>()` bytes: an argument range the runtime
/// gave for this hook, or a field or element of an object that is live during it.
unsafe fn read<T: Copy>(addr: usize) -> T {
    // SAFETY: (A7) per the contract.
    unsafe { std::ptr::read_unaligned(addr as *const T) }
}

fn write_prim(w: &mut ValueWriter<'_>, p: Prim, addr: usize) {
    // SAFETY: (A7) `addr` holds a value of this primitive type (callers' contract: an argument
    // range, or a field/element whose declared type is `p`).
    unsafe {
        match p {
            Prim::Bool => w.bool(read::<u8>(addr) != 0),
            Prim::Char => w.char(read::<u16>(addr)),
            Prim::I1 => w.int(i64::from(read::<i8>(addr))),
            Prim::U1 => w.uint(u64::from(read::<u8>(addr))),
            Prim::I2 => w.int(i64::from(read::<i16>(addr))),
            Prim::U2 => w.uint(u64::from(read::<u16>(addr))),
            Prim::I4 => w.int(i64::from(read::<i32>(addr))),
            Prim::U4 => w.uint(u64::from(read::<u32>(addr))),
            Prim::I8 | Prim::I => w.int(read::<i64>(addr)),
            Prim::U8 | Prim::U => w.uint(read::<u64>(addr)),
            Prim::R4 => w.f32(read::<f32>(addr)),
            Prim::R8 => w.f64(read::<f64>(addr)),
        }
    }
}

fn read_integral(p: Prim, addr: usize) -> i64 {
    // SAFETY: (A7) as in write_prim.
    unsafe {
        match p {
            Prim::Bool | Prim::U1 => i64::from(read::<u8>(addr)),
            Prim::I1 => i64::from(read::<i8>(addr)),
            Prim::Char | Prim::U2 => i64::from(read::<u16>(addr)),
            Prim::I2 => i64::from(read::<i16>(addr)),
            Prim::I4 => i64::from(read::<i32>(addr)),
            Prim::U4 => i64::from(read::<u32>(addr)),
            _ => read::<i64>(addr),
        }
    }
}

/// Writes the value of kind `kind` stored at `addr`; `level` is the object depth.
fn write_value(s: &State, w: &mut ValueWriter<'_>, kind: &Kind, addr: usize, level: u32) {
    match kind {
        Kind::Prim(p) => write_prim(w, *p, addr),
        // SAFETY: (A7) a reference-typed slot holds an ObjectID (or null).
        Kind::Ref => write_object(s, w, unsafe { read::<usize>(addr) }, level),
        // SAFETY: (A7) a `string`-typed slot holds a System.String's ObjectID (or null).
        Kind::Str => write_declared_string(s, w, unsafe { read::<usize>(addr) }),
        Kind::Inline(d) => write_inline(s, w, d, addr, level),
        Kind::ByRef(inner) => {
            // SAFETY: (A7) a BYREF slot holds a managed pointer (or null).
            let target = unsafe { read::<usize>(addr) };
            if target == 0 {
                w.null();
            } else if matches!(
                **inner,
                Kind::Unknown(_) | Kind::ByRef(_) | Kind::TypedByRef
            ) {
                w.address("byref", target as u64);
            } else {
                // A managed pointer points into a live frame or object during the hook
                // (no GC can run); `out` targets were zero-initialised by the JIT.
                w.byref(target as u64);
                write_value(s, w, inner, target, level);
            }
        }
        // SAFETY: (A7) a pointer-typed slot is pointer-sized.
        Kind::Ptr => w.address("ptr", unsafe { read::<u64>(addr) }),
        // SAFETY: (A7) a function-pointer slot is pointer-sized.
        Kind::FnPtr => w.address("fnptr", unsafe { read::<u64>(addr) }),
        Kind::TypedByRef => {
            // SAFETY: (A7) a TypedReference is a managed pointer then a type handle.
            let (ptr, _ty) = unsafe { (read::<u64>(addr), read::<u64>(addr + 8)) };
            w.typed_ref("System.TypedReference", ptr);
        }
        Kind::Unknown(why) => w.unreadable(why),
    }
}

fn write_inline(s: &State, w: &mut ValueWriter<'_>, d: &ClassDesc, addr: usize, level: u32) {
    match &d.shape {
        Shape::Struct { fields, .. } => {
            w.structure(&d.name);
            write_fields(s, w, fields, addr, level);
            w.end();
        }
        Shape::Enum {
            underlying,
            members,
            ..
        } => {
            let v = read_integral(*underlying, addr);
            let member = members
                .iter()
                .find(|(m, _)| *m == v)
                .map(|(_, n)| n.as_str())
                .unwrap_or("");
            w.enumeration(&d.name, member, v);
        }
        Shape::Primitive { prim, .. } => write_prim(w, *prim, addr),
        Shape::Unknown(why) => w.unreadable(why),
        Shape::String | Shape::Array { .. } | Shape::Object(_) => {
            w.unreadable("reference type where a value type was expected")
        }
    }
}

fn write_fields(s: &State, w: &mut ValueWriter<'_>, fields: &[FieldDesc], base: usize, level: u32) {
    for f in fields {
        w.item(&f.name, None);
        write_value(s, w, &f.kind, base + f.offset as usize, level + 1);
    }
}

fn write_object(s: &State, w: &mut ValueWriter<'_>, obj: usize, level: u32) {
    if obj == 0 {
        return w.null();
    }
    if !plausible_object(obj) {
        // Never hand the runtime an address that cannot be an object.
        return w.address("not an object", obj as u64);
    }
    let class = match s.info.get_class_from_object(corprof::ObjectId(obj)) {
        Ok(c) => c,
        Err(e) => return w.unreadable(&format!("GetClassFromObject: {e}")),
    };
    let d = class_desc(s, class);
    match &d.shape {
        Shape::String => write_string(s, w, obj),
        Shape::Array {
            element,
            kind,
            rank,
        } => {
            if level > s.limits.depth {
                return w.object_ref(&d.name, obj as u64);
            }
            let a = match s.info.get_array_object_info(corprof::ObjectId(obj), *rank) {
                Ok(a) => a,
                Err(e) => return w.unreadable(&format!("GetArrayObjectInfo: {e}")),
            };
            let length: u64 = a.dimensions.iter().map(|(n, _)| u64::from(*n)).product();
            w.array(element, *rank, length);
            let size = kind.size();
            for i in 0..length.min(u64::from(s.limits.items)) {
                write_value(s, w, kind, a.data + i as usize * size, level + 1);
            }
            w.end();
        }
        Shape::Object(fields) => {
            if level >= s.limits.depth {
                return w.object_ref(&d.name, obj as u64);
            }
            w.object(&d.name, obj as u64);
            write_fields(s, w, fields, obj, level);
            w.end();
        }
        Shape::Struct { box_offset, .. }
        | Shape::Enum { box_offset, .. }
        | Shape::Primitive { box_offset, .. } => {
            w.boxed(&d.name, obj as u64);
            write_inline(s, w, &d, obj + *box_offset as usize, level);
        }
        Shape::Unknown(why) => {
            w.object_ref(&d.name, obj as u64);
            let _ = why;
        }
    }
}

/// A value whose declared type is `string`: a `System.String` or null, so its class need
/// not be asked.
fn write_declared_string(s: &State, w: &mut ValueWriter<'_>, obj: usize) {
    if obj == 0 {
        return w.null();
    }
    if !plausible_object(obj) {
        return w.address("not an object", obj as u64);
    }
    write_string(s, w, obj)
}

/// The text of the live `System.String` `obj`.
fn write_string(s: &State, w: &mut ValueWriter<'_>, obj: usize) {
    let Some((len_off, buf_off)) = s.string_layout else {
        return w.unreadable("no string layout");
    };
    // SAFETY: (A7) `obj` is a live System.String; the offsets are the runtime's.
    let len = unsafe { read::<i32>(obj + len_off as usize) }.max(0) as usize;
    let n = len.min(s.limits.max_len as usize);
    let base = obj + buf_off as usize;
    // SAFETY: (A7) the string holds `len` UTF-16 units at `base`; we read `n <= len`.
    let units = unsafe { std::slice::from_raw_parts(base as *const u16, n) };
    w.string_utf16_units(len as u64, units);
}

/// Whether `obj` can be an ObjectID at all: objects are pointer-aligned, and the GC heap
/// lies above the first 64 KiB (never mapped on Linux) and below the top of the user
/// address space (47 bits on x86-64 and arm64 with 4-level page tables). A value that
/// fails is no object, whatever the planner thought.
fn plausible_object(obj: usize) -> bool {
    obj.is_multiple_of(std::mem::size_of::<usize>()) && obj >= 0x1_0000 && (obj as u64) < (1 << 47)
}

// ---- Planning (once per function, once per class) ---------------------------------------

fn class_desc(s: &State, class: ClassId) -> Arc<ClassDesc> {
    if let Some(d) = s.classes.read().ok().and_then(|m| m.get(&class.0).cloned()) {
        return d;
    }
    let d = Arc::new(build_class(s, class, 0));
    let mut m = s.classes.write().unwrap_or_else(|p| p.into_inner());
    m.entry(class.0).or_insert(d).clone()
}

fn md_of(s: &State, module: ModuleId) -> Option<MetaDataImport> {
    s.info.get_module_metadata(module, corprof_sys::ofRead).ok()
}

/// `<Name>k__BackingField` → `Name`.
fn field_name(raw: &str) -> String {
    raw.strip_prefix('<')
        .and_then(|r| r.split_once(">k__BackingField"))
        .map(|(n, _)| n.to_string())
        .unwrap_or_else(|| raw.to_string())
}

fn build_class(s: &State, class: ClassId, depth: u32) -> ClassDesc {
    let info = &s.info;
    let name = crate::names::class_name(info, class);
    let unknown = |name: String, why| ClassDesc {
        name,
        size: 0,
        shape: Shape::Unknown(why),
    };
    if depth > 6 {
        return unknown(name, TOO_DEEP);
    }
    if let Ok(Some(a)) = info.is_array_class(class) {
        let (element, kind) = if a.element_class.0 != 0 {
            let ed = class_desc_nested(s, a.element_class, depth + 1);
            let kind = match &ed.shape {
                Shape::Unknown(why) => Kind::Unknown(why),
                _ if is_inline(&ed) => Kind::Inline(ed.clone()),
                _ => Kind::Ref,
            };
            (ed.name.clone(), kind)
        } else {
            match Prim::from_element_type(a.element_type) {
                Some(p) => (p.corelib_name().to_string(), Kind::Prim(p)),
                None => ("?".into(), Kind::Unknown("array element type")),
            }
        };
        return ClassDesc {
            name,
            size: 0,
            shape: Shape::Array {
                element,
                kind,
                rank: a.rank,
            },
        };
    }
    if name == "System.String" {
        return ClassDesc {
            name,
            size: 0,
            shape: Shape::String,
        };
    }
    let Ok(ci) = info.get_class_id_info2(class) else {
        return unknown(name, "GetClassIDInfo2 failed");
    };
    let parent_name = if ci.parent.0 != 0 {
        crate::names::class_name(info, ci.parent)
    } else {
        String::new()
    };
    let value_type = (parent_name == "System.ValueType" || parent_name == "System.Enum")
        && name != "System.Enum";
    if !value_type {
        // A reference type: fields of every ancestor, base first.
        let mut chain = Vec::new();
        let mut c = class;
        for _ in 0..32 {
            if c.0 == 0 {
                break;
            }
            chain.push(c);
            c = info
                .get_class_id_info2(c)
                .map(|i| i.parent)
                .unwrap_or(ClassId(0));
        }
        let mut fields = Vec::new();
        for c in chain.into_iter().rev() {
            fields.extend(own_fields(s, c, depth));
        }
        return ClassDesc {
            name,
            size: 0,
            shape: Shape::Object(fields),
        };
    }
    let box_offset = info.get_box_class_layout(class).unwrap_or(8);
    let size = info.get_class_layout(class).map(|(_, n)| n).unwrap_or(0);
    if let Some(prim) = Prim::from_name(&name) {
        return ClassDesc {
            name,
            size: prim.size() as u32,
            shape: Shape::Primitive { prim, box_offset },
        };
    }
    if parent_name == "System.Enum" {
        let Some(md) = md_of(s, ci.module) else {
            return unknown(name, "no metadata");
        };
        let mut underlying = Prim::I4;
        let mut members = Vec::new();
        for f in md.enum_fields(ci.token).unwrap_or_default() {
            let Ok(p) = md.get_field_props(f) else {
                continue;
            };
            if p.attributes & 0x10 == 0 {
                // The instance field `value__` has the underlying type.
                if let Ok(t) = sig::parse_field(&p.sig)
                    && let Kind::Prim(u) = prim_kind(&t)
                {
                    underlying = u;
                }
            } else if let Some(v) = p.constant {
                members.push((v, p.name));
            }
        }
        return ClassDesc {
            name,
            size: underlying.size() as u32,
            shape: Shape::Enum {
                underlying,
                members,
                box_offset,
            },
        };
    }
    ClassDesc {
        name,
        size,
        shape: Shape::Struct {
            fields: own_fields(s, class, depth),
            box_offset,
        },
    }
}

/// A class met while describing another (element, field type): cached like any, unless
/// the depth limit cut its description short (met again nearer the top, it is described
/// further).
fn class_desc_nested(s: &State, class: ClassId, depth: u32) -> Arc<ClassDesc> {
    if let Some(d) = s.classes.read().ok().and_then(|m| m.get(&class.0).cloned()) {
        return d;
    }
    let d = Arc::new(build_class(s, class, depth));
    if cut_by_depth(&d, 0) {
        return d;
    }
    let mut m = s.classes.write().unwrap_or_else(|p| p.into_inner());
    m.entry(class.0).or_insert(d).clone()
}

const TOO_DEEP: &str = "types nested too deeply";

/// Whether the depth limit left part of `d` undescribed.
fn cut_by_depth(d: &ClassDesc, level: u32) -> bool {
    fn kind_cut(k: &Kind, level: u32) -> bool {
        match k {
            Kind::Unknown(why) => *why == TOO_DEEP,
            Kind::Inline(d) => cut_by_depth(d, level + 1),
            Kind::ByRef(inner) => kind_cut(inner, level),
            _ => false,
        }
    }
    if level > 16 {
        return true;
    }
    match &d.shape {
        Shape::Unknown(why) => *why == TOO_DEEP,
        Shape::Struct { fields, .. } | Shape::Object(fields) => {
            fields.iter().any(|f| kind_cut(&f.kind, level))
        }
        Shape::Array { kind, .. } => kind_cut(kind, level),
        _ => false,
    }
}

/// How a value of the class `d` describes is stored where a signature names it. A class
/// the planner could not describe is unreadable, never guessed to be a reference: its
/// first word read as an ObjectID once crashed the runtime in GetClassFromObject.
fn kind_for_desc(d: Arc<ClassDesc>) -> Kind {
    match &d.shape {
        Shape::Primitive { prim, .. } => Kind::Prim(*prim),
        Shape::String => Kind::Str,
        Shape::Unknown(why) => Kind::Unknown(why),
        _ if is_inline(&d) => Kind::Inline(d),
        _ => Kind::Ref,
    }
}

fn is_inline(d: &ClassDesc) -> bool {
    matches!(
        d.shape,
        Shape::Struct { .. } | Shape::Enum { .. } | Shape::Primitive { .. }
    )
}

fn own_fields(s: &State, class: ClassId, depth: u32) -> Vec<FieldDesc> {
    let info = &s.info;
    let Ok(ci) = info.get_class_id_info2(class) else {
        return Vec::new();
    };
    let Some(md) = md_of(s, ci.module) else {
        return Vec::new();
    };
    let Ok((layout, _)) = info.get_class_layout(class) else {
        return Vec::new();
    };
    let cx = Cx {
        s,
        md: &md,
        module: ci.module,
        class_args: &ci.type_args,
        method_args: &[],
        depth: depth + 1,
    };
    layout
        .into_iter()
        .filter_map(|(tok, offset)| {
            let p = md.get_field_props(tok).ok()?;
            let kind = sig::parse_field(&p.sig)
                .map(|t| cx.kind(&t))
                .unwrap_or(Kind::Unknown("field signature"));
            Some(FieldDesc {
                name: field_name(&p.name),
                offset,
                kind,
            })
        })
        .collect()
}

fn prim_kind(t: &Type) -> Kind {
    Kind::Prim(match t {
        Type::Bool => Prim::Bool,
        Type::Char => Prim::Char,
        Type::I1 => Prim::I1,
        Type::U1 => Prim::U1,
        Type::I2 => Prim::I2,
        Type::U2 => Prim::U2,
        Type::I4 => Prim::I4,
        Type::U4 => Prim::U4,
        Type::I8 => Prim::I8,
        Type::U8 => Prim::U8,
        Type::R4 => Prim::R4,
        Type::R8 => Prim::R8,
        Type::I => Prim::I,
        Type::U => Prim::U,
        _ => return Kind::Unknown("not a primitive"),
    })
}

/// Resolution context: a signature's module and the generic arguments in scope.
struct Cx<'a> {
    s: &'a State,
    md: &'a MetaDataImport,
    module: ModuleId,
    class_args: &'a [ClassId],
    method_args: &'a [ClassId],
    depth: u32,
}

impl Cx<'_> {
    fn kind(&self, t: &Type) -> Kind {
        match t {
            Type::String => Kind::Str,
            Type::Object
            | Type::Class(_)
            | Type::SzArray(_)
            | Type::Array { .. }
            | Type::GenericInst {
                value_type: false, ..
            } => Kind::Ref,
            Type::ValueType(_)
            | Type::GenericInst {
                value_type: true, ..
            } => match self.class_of(t) {
                Some(c) => self.kind_of_class(c),
                None => Kind::Unknown("value type not resolved"),
            },
            Type::Var(n) => self
                .class_args
                .get(*n as usize)
                .map(|c| self.kind_of_class(*c))
                .unwrap_or(Kind::Unknown("generic argument not known")),
            Type::MVar(n) => self
                .method_args
                .get(*n as usize)
                .map(|c| self.kind_of_class(*c))
                .unwrap_or(Kind::Unknown("generic argument not known")),
            Type::ByRef(inner) => Kind::ByRef(Box::new(self.kind(inner))),
            Type::Ptr(_) => Kind::Ptr,
            Type::FnPtr(_) => Kind::FnPtr,
            Type::TypedByRef => Kind::TypedByRef,
            Type::Modified { inner, .. } | Type::Pinned(inner) => self.kind(inner),
            Type::InternalModified { inner, .. } => self.kind(inner),
            other => match prim_kind(other) {
                Kind::Unknown(_) => Kind::Unknown("unsupported type"),
                k => k,
            },
        }
    }

    fn kind_of_class(&self, c: ClassId) -> Kind {
        kind_for_desc(class_desc_nested(self.s, c, self.depth))
    }

    /// The loaded class of a type in this signature.
    fn class_of(&self, t: &Type) -> Option<ClassId> {
        match t {
            Type::ValueType(tok) | Type::Class(tok) => self.class_of_token(*tok, &[]),
            Type::GenericInst { token, args, .. } => {
                let args: Option<Vec<ClassId>> = args.iter().map(|a| self.class_of(a)).collect();
                self.class_of_token(*token, &args?)
            }
            Type::Var(n) => self.class_args.get(*n as usize).copied(),
            Type::MVar(n) => self.method_args.get(*n as usize).copied(),
            Type::String => self.corelib_class("System.String"),
            Type::Object => self.corelib_class("System.Object"),
            other => match prim_kind(other) {
                Kind::Prim(p) => self.corelib_class(p.corelib_name()),
                _ => None,
            },
        }
    }

    fn class_of_token(&self, tok: u32, args: &[ClassId]) -> Option<ClassId> {
        match tok >> 24 {
            0x02 => loaded_class(self.s, self.module, tok, args),
            0x01 => {
                // A type of another assembly: looked up by name in CoreLib (where the
                // framework's value types live).
                let name = self.md.type_ref_full_name(tok);
                let (module, md) = corelib(self.s)?;
                let td = md.find_type_def_by_name(&name).ok()?;
                loaded_class(self.s, *module, td, args)
            }
            0x1B => {
                let blob = self.md.get_type_spec_from_token(tok).ok()?;
                let t = sig::parse_type(&blob).ok()?;
                self.class_of(&t)
            }
            _ => None,
        }
    }

    fn corelib_class(&self, name: &str) -> Option<ClassId> {
        let (module, md) = corelib(self.s)?;
        let td = md.find_type_def_by_name(name).ok()?;
        loaded_class(self.s, *module, td, &[])
    }
}

/// The ClassID of a loaded type `(module, typedef, type args)`, as ClassLoadFinished
/// reported it. (`GetClassFromToken` answers CORPROF_E_UNSUPPORTED_CALL_SEQUENCE inside
/// the ELT hooks, as it may load types; a type a method takes by value is loaded before
/// the method runs, so the map knows it.)
fn loaded_class(s: &State, module: ModuleId, token: u32, args: &[ClassId]) -> Option<ClassId> {
    let m = s.loaded.lock().unwrap_or_else(|p| p.into_inner());
    m.get(&(module.0, token))?
        .iter()
        .find(|(a, _)| a.as_slice() == args)
        .map(|(_, c)| *c)
}

/// ClassLoadFinished: remembers value types (and CoreLib's, for generic arguments).
pub fn class_loaded(class: ClassId, module: ModuleId, token: u32, type_args: Vec<ClassId>) {
    let Some(s) = STATE.get() else { return };
    let mut m = s.loaded.lock().unwrap_or_else(|p| p.into_inner());
    let v = m.entry((module.0, token)).or_default();
    if !v.iter().any(|(_, c)| *c == class) {
        v.push((type_args, class));
    }
}

/// CoreLib's module, found as the module of `System.Object` (the root of any class).
fn corelib(s: &State) -> Option<&(ModuleId, MetaDataImport)> {
    s.corelib.get()?.as_ref()
}

fn find_corelib(s: &State, mut class: ClassId) {
    if s.corelib.get().is_some() || class.0 == 0 {
        return;
    }
    for _ in 0..32 {
        let Ok(ci) = s.info.get_class_id_info2(class) else {
            return;
        };
        if ci.parent.0 == 0 {
            let found = md_of(s, ci.module).map(|md| (ci.module, md));
            let _ = s.corelib.set(found);
            return;
        }
        class = ci.parent;
    }
}

fn build_plan(s: &State, function: FunctionId) -> Option<FnPlan> {
    let info = &s.info;
    let fi = info.get_function_info2(function, 0).ok()?;
    find_corelib(s, fi.class);
    let md = md_of(s, fi.module)?;
    let props = md.get_method_props(fi.token).ok()?;
    let msig = sig::parse_method(&props.sig).ok()?;
    let names = md.param_names(fi.token).unwrap_or_default();
    let class_args = if fi.class.0 != 0 {
        info.get_class_id_info2(fi.class)
            .map(|c| c.type_args)
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    let cx = Cx {
        s,
        md: &md,
        module: fi.module,
        class_args: &class_args,
        method_args: &fi.type_args,
        depth: 0,
    };
    let resolve = |tok: u32| md.token_name(tok);
    let mut args = Vec::with_capacity(msig.params.len() + 1);
    if msig.has_this && !msig.explicit_this {
        let (ty, kind) = if fi.class.0 != 0 {
            let d = class_desc(s, fi.class);
            let kind = match &d.shape {
                Shape::Unknown(why) => Kind::Unknown(why),
                // `this` of a value type's method is a managed pointer to the value.
                _ if is_inline(&d) => Kind::ByRef(Box::new(Kind::Inline(d.clone()))),
                _ => Kind::Ref,
            };
            (d.name.clone(), kind)
        } else {
            ("?".into(), Kind::Ref)
        };
        args.push(Param {
            name: "this".into(),
            ty,
            kind,
            regs: None,
        });
    }
    for (i, t) in msig.params.iter().enumerate() {
        let seq = i as u32 + 1;
        let name = names
            .iter()
            .find(|(n, _)| *n == seq)
            .map(|(_, n)| n.clone())
            .unwrap_or_else(|| format!("arg{i}"));
        args.push(Param {
            name,
            ty: t.format(&resolve),
            kind: cx.kind(t),
            regs: None,
        });
    }
    let ret = (msig.ret != Type::Void).then(|| Param {
        name: "return".into(),
        ty: msig.ret.format(&resolve),
        kind: cx.kind(&msig.ret),
        regs: None,
    });
    // Shared generic code takes a hidden argument whose register is not predicted.
    if class_args.is_empty() && fi.type_args.is_empty() {
        predict_registers(
            &mut args,
            ret.as_ref(),
            msig.has_this && !msig.explicit_this,
        );
    }
    Some(FnPlan { args, ret })
}

/// The SysV registers of each struct argument passed in registers ([`Param::regs`]),
/// handing out registers in argument order: `this`, the return buffer of a struct
/// returned through memory, then the parameters. Stops at the first value whose
/// registers it cannot tell; the runtime's answers check every prediction.
fn predict_registers(args: &mut [Param], ret: Option<&Param>, has_this: bool) {
    let mut r = Registers::default();
    let ret_buffer = match ret.map(|p| &p.kind) {
        Some(Kind::Inline(d)) if matches!(d.shape, Shape::Struct { .. }) => {
            match struct_classes(d) {
                Some(_) => false,
                None if d.size > 16 => true,
                None => return,
            }
        }
        Some(Kind::TypedByRef | Kind::Unknown(_)) => return,
        _ => false,
    };
    for (i, p) in args.iter_mut().enumerate() {
        if i == usize::from(has_this) && ret_buffer {
            r.integer();
        }
        match &p.kind {
            Kind::Prim(Prim::R4 | Prim::R8) => r.float(),
            Kind::Prim(_) | Kind::Ref | Kind::Str | Kind::ByRef(_) | Kind::Ptr | Kind::FnPtr => {
                r.integer()
            }
            Kind::Inline(d) => match &d.shape {
                Shape::Enum { .. } => r.integer(),
                Shape::Primitive {
                    prim: Prim::R4 | Prim::R8,
                    ..
                } => r.float(),
                Shape::Primitive { .. } => r.integer(),
                Shape::Struct { .. } => match struct_classes(d) {
                    Some((classes, covered)) => {
                        p.regs = r.structure(&classes).map(|regs| (regs, covered));
                    }
                    // Larger than 16 bytes: on the stack, no register.
                    None if d.size > 16 => {}
                    None => return,
                },
                _ => return,
            },
            Kind::TypedByRef | Kind::Unknown(_) => return,
        }
    }
}

/// The SysV classes of a struct's eightbytes and the bytes its fields cover, when it is
/// passed in registers.
fn struct_classes(d: &ClassDesc) -> Option<(Vec<arg_slots::Class>, u16)> {
    let mut fields = Vec::new();
    flat_fields(d, 0, &mut fields, 0)?;
    let classes = arg_slots::classify(d.size, &fields)?;
    Some((classes, arg_slots::field_bytes(&fields)))
}

/// A struct's fields with nested structs flattened, offsets from the outer value.
fn flat_fields(
    d: &ClassDesc,
    base: u32,
    out: &mut Vec<arg_slots::Field>,
    level: u32,
) -> Option<()> {
    fn prim(out: &mut Vec<arg_slots::Field>, offset: u32, p: Prim) {
        out.push(arg_slots::Field {
            offset,
            size: p.size() as u32,
            float: matches!(p, Prim::R4 | Prim::R8),
        });
    }
    match &d.shape {
        Shape::Enum { underlying, .. } => prim(out, base, *underlying),
        Shape::Primitive { prim: p, .. } => prim(out, base, *p),
        Shape::Struct { fields, .. } if level < 8 => {
            for f in fields {
                let at = base.checked_add(f.offset)?;
                match &f.kind {
                    Kind::Prim(p) => prim(out, at, *p),
                    Kind::Ref | Kind::Str | Kind::ByRef(_) | Kind::Ptr | Kind::FnPtr => {
                        prim(out, at, Prim::I)
                    }
                    Kind::Inline(inner) => flat_fields(inner, at, out, level + 1)?,
                    Kind::TypedByRef | Kind::Unknown(_) => return None,
                }
            }
        }
        _ => return None,
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn implausible_object_ids_are_refused() {
        assert!(!plausible_object(0xb));
        assert!(!plausible_object(0x1_0004));
        assert!(!plausible_object(0x8000));
        assert!(!plausible_object(1 << 47));
        assert!(plausible_object(0x7f12_3456_7000));
    }

    #[test]
    fn backing_field_names_are_the_property_names() {
        assert_eq!(field_name("<Sku>k__BackingField"), "Sku");
        assert_eq!(field_name("_count"), "_count");
    }

    #[test]
    fn primitive_names_round_trip() {
        for p in [Prim::Bool, Prim::Char, Prim::I4, Prim::R8, Prim::U] {
            assert_eq!(Prim::from_name(p.corelib_name()), Some(p));
        }
    }
}
