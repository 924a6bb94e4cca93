//! The hooks: those the runtime's slow-path stub calls (`CLRPROF_ARGS_FAST=0`: the stub's
//! frame, the runtime's ranges, learned slots), and by default the Rust half of the
//! assembly `--args` trampolines (`x64.rs`), which read the values where the SysV
//! convention placed them in the registers the trampoline saved; and the records both
//! write.

use std::sync::atomic::Ordering;

use clrprof_format::Event;
use clrprof_format::values::{ValueWriter, put_param_prim};
use corprof_sys::{COR_PRF_ELT_INFO, FunctionIDOrClientID};

use super::plan::{FnPlan, Kind, Prim, announce_plan, build_plan};
use super::read::{read_prim, write_prim, write_value};
use super::{ArgsFn, STATE, State, is_args_client};
use crate::os::clock;
use crate::output::buffers;
use crate::tracing::EltKind;
use crate::tracing::arg_slots::{self, ReturnSlot, Returned, Slot, StubFrame};

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

/// The assembly enter trampoline's call for an `--args` function.
///
/// # Safety
/// Called by `clrprof_args_enter` only (`x64.rs`): `id` is the address of an [`ArgsFn`]
/// from [`client_id`](super::client_id), `sp` the profiled method's caller SP the JIT
/// passed, `block` the trampoline's saved argument registers (laid out as
/// [`arg_slots`] says), live for this call; the thread runs managed code's helper call
/// in cooperative mode, so no GC moves an object meanwhile.
pub unsafe extern "C" fn fast_enter(id: usize, sp: usize, block: usize) {
    let _ = std::panic::catch_unwind(|| on_fast_enter(id, sp, block));
}

/// The assembly leave trampoline's call for an `--args` function.
///
/// # Safety
/// As for [`fast_enter`], `block` holding the saved return registers.
pub unsafe extern "C" fn fast_leave(id: usize, sp: usize, block: usize) {
    let _ = std::panic::catch_unwind(|| on_fast_leave(id, sp, block, EltKind::Leave));
}

/// The assembly tail-call trampoline's call for an `--args` function (no return value).
///
/// # Safety
/// As for [`fast_leave`].
pub unsafe extern "C" fn fast_tailcall(id: usize, sp: usize, block: usize) {
    let _ = std::panic::catch_unwind(|| on_fast_leave(id, sp, block, EltKind::Tailcall));
}

/// The function's plan, built on its first call (its value names recorded then).
pub(super) fn plan_of(f: &ArgsFn) -> Option<(&'static State, &FnPlan)> {
    let s = STATE.get()?;
    let plan = f.plan.get_or_init(|| {
        let plan = build_plan(s, f.function);
        if let Some(plan) = &plan {
            write_names(f.index, plan);
            announce_plan(plan);
            // Last: from here the trampolines may write the function's records.
            if let (true, Some(leb)) = (super::fast_path(), f.leb) {
                f.fast.publish(plan, leb, &s.limits, s.string_layout);
            }
        }
        plan
    });
    Some((s, plan.as_ref()?))
}

fn on_fast_enter(id: usize, sp: usize, block: usize) {
    // The clock first, as the ELT fast path reads it: its latency overlaps the work below.
    let ts = clock::ticks();
    // SAFETY: (A1) the trampoline calls this for args client IDs only, addresses of leaked
    // ArgsFn (client_id), never freed.
    let f = unsafe { &*(id as *const ArgsFn) };
    // Planned by the FunctionIDMapper (`prepare`): never here, outside a callback.
    let (Some(s), Some(Some(plan))) = (STATE.get(), f.plan.get()) else {
        return buffers::emit_elt(EltKind::Enter, f.index, sp as u64);
    };
    let frame = StubFrame {
        saved: block,
        profiled_sp: sp,
    };
    let record = Record {
        ts,
        kind: EltKind::Enter,
        function: f.index,
        sp: sp as u64,
    };
    if let (Some(args), Some(leb)) = (&plan.prims.args, f.leb) {
        return write_prims(s, frame, args, 0, leb, record);
    }
    // Structs passed in registers are copied together first.
    let mut copies = [[0u64; 2]; arg_slots::MAX_STRUCTS];
    for slot in plan.places.iter().flatten() {
        if let Slot::Struct { regs, count, copy } = *slot {
            copies[usize::from(copy)] = frame.gather(regs, count);
        }
    }
    let start = |i: usize| {
        plan.places
            .get(i)
            .copied()
            .flatten()
            .map(|slot| match slot {
                Slot::Struct { copy, .. } => copies[usize::from(copy)].as_ptr() as usize,
                other => frame.address(other).unwrap_or(0),
            })
    };
    // SAFETY: (A7) inside the hook; each address is the trampoline's saved register the
    // SysV convention assigns the argument (`plan::place`), the caller's stack argument
    // area above `sp` at its offset, or our copy of a struct's registers (16 bytes, the
    // struct at most that).
    unsafe { write_args(s, f, plan, ts, sp as u64, start, "not placed") }
}

fn on_fast_leave(id: usize, sp: usize, block: usize, kind: EltKind) {
    // The clock first (as in on_fast_enter).
    let ts = clock::ticks();
    // SAFETY: (A1) as in on_fast_enter.
    let f = unsafe { &*(id as *const ArgsFn) };
    let (Some(s), Some(Some(plan))) = (STATE.get(), f.plan.get()) else {
        return buffers::emit_elt(kind, f.index, sp as u64);
    };
    let frame = StubFrame {
        saved: block,
        profiled_sp: sp,
    };
    if let (EltKind::Leave, Some(ret), Some(leb)) = (kind, &plan.prims.ret, f.leb) {
        let record = Record {
            ts,
            kind,
            function: f.index,
            sp: sp as u64,
        };
        let first = plan.args.len() as u32;
        return write_prims(s, frame, ret.as_slice(), first, leb, record);
    }
    // A struct returned in registers is copied together first.
    let copy = match plan.ret_place {
        Some(ReturnSlot::At(Slot::Struct { regs, count, .. })) => frame.gather(regs, count),
        _ => [0u64; 2],
    };
    let at = match (kind, plan.ret_place) {
        (EltKind::Leave, Some(ReturnSlot::At(Slot::Struct { .. }))) => Some(copy.as_ptr() as usize),
        (EltKind::Leave, Some(ReturnSlot::At(slot))) => frame.address(slot),
        (EltKind::Leave, Some(ReturnSlot::Buffer)) => {
            // SAFETY: (A1) `rax`'s slot lies inside the trampoline's block, live for this call.
            Some(unsafe { std::ptr::read((block + arg_slots::RAX) as *const usize) })
        }
        _ => None,
    };
    write_bounded(
        s,
        |w| {
            if let (EltKind::Leave, Some(ret)) = (kind, &plan.ret) {
                w.param(plan.args.len() as u32);
                match at {
                    // SAFETY: (A7) inside the hook; the return value lies there: the saved
                    // return register the convention assigns it, our copy of a struct's
                    // two, or the caller's buffer whose address the method returned in
                    // `rax`.
                    Some(start) if start != 0 => unsafe { write_value(s, w, &ret.kind, start, 0) },
                    _ => w.unreadable("return value not placed"),
                }
            }
        },
        Record {
            ts,
            kind,
            function: f.index,
            sp: sp as u64,
        },
    );
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
    let ts = clock::ticks();
    let frame = stub_frame(elt);
    let sp = frame_sp(frame) as u64;
    if !is_args_client(id) {
        buffers::emit_elt(EltKind::Enter, id as u64, sp);
        return;
    }
    // SAFETY: (A1) args client IDs are addresses of leaked ArgsFn (client_id), never freed.
    let f = unsafe { &*(id as *const ArgsFn) };
    let Some((s, plan)) = plan_of(f) else {
        return buffers::emit_elt(EltKind::Enter, f.index, sp);
    };
    if let (Ok(frame), Some(slots)) = (frame, f.enter_slots.trusted()) {
        // Structs passed in registers are copied together first, as the runtime would.
        let mut copies = [[0u64; 2]; arg_slots::MAX_STRUCTS];
        for slot in slots.iter() {
            if let Slot::Struct { regs, count, copy } = *slot {
                copies[usize::from(copy)] = frame.gather(regs, count);
            }
        }
        let start = |i: usize| {
            slots.get(i).map(|slot| match *slot {
                Slot::Struct { copy, .. } => copies[usize::from(copy)].as_ptr() as usize,
                other => frame.address(other).unwrap_or(0),
            })
        };
        // SAFETY: (A7) inside the hook; each address is a slot of the stub's frame on this
        // stack where the runtime's answers for this function agreed its argument lies
        // (`arg_slots::CHECKS` of them, every slot compared), or our copy of the registers
        // those answers placed a struct in (16 bytes, the struct at most that).
        return unsafe { write_args(s, f, plan, ts, sp, start, "no argument range") };
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
        // SAFETY: (A7) inside the hook; the ranges are the runtime's answer for this call
        // (GetFunctionEnter3Info), one per argument in signature order.
        Ok(ranges) => unsafe {
            write_args(
                s,
                f,
                plan,
                ts,
                sp,
                |i| ranges.get(i).map(|r| r.start),
                "no argument range",
            )
        },
        Err(e) => write_bounded(
            s,
            |w| {
                w.item("?", Some("?"));
                w.unreadable(&format!("GetFunctionEnter3Info: {e}"));
            },
            Record {
                ts,
                kind: EltKind::Enter,
                function: f.index,
                sp,
            },
        ),
    }
}

/// Records the primitives `values` (numbered from `first`: the arguments from 0, the
/// return value after them) of a [`PrimPlan`](super::plan::PrimPlan), read from the
/// slots the assembly hook's `frame` saved.
#[inline(always)]
fn write_prims(
    s: &State,
    frame: StubFrame,
    values: &[(Slot, Prim)],
    first: u32,
    function: buffers::Leb35,
    record: Record,
) {
    // The short path writes 13 bytes a value at most, uncut: within the per-call bound
    // (64 bytes or more) for up to four values; more, under a bound set that low, take
    // the general path, which cuts.
    let fits = values.len() * clrprof_format::values::PARAM_PRIM_ROOM <= s.limits.bytes as usize;
    let short = fits
        && buffers::emit_prims_in_place(
            record.ts,
            record.kind,
            function,
            record.sp,
            values.len(),
            |out| {
                let mut n = 0;
                for (i, &(slot, prim)) in values.iter().enumerate() {
                    // A slot the plan made is always an address (`PrimPlan::of`).
                    let Some(addr) = frame.address(slot) else {
                        continue;
                    };
                    // SAFETY: (A7) inside the hook; the plan placed a primitive of this kind in
                    // that saved register or caller stack slot (`PrimPlan::of`).
                    let v = unsafe { read_prim(prim, addr) };
                    n += put_param_prim(&mut out[n..], (first + i as u32) as u8, v);
                }
                n
            },
        );
    if short {
        return;
    }
    write_bounded(
        s,
        |w| {
            for (i, &(slot, prim)) in values.iter().enumerate() {
                w.param(first + i as u32);
                match frame.address(slot) {
                    // SAFETY: (A7) inside the hook; the plan placed a primitive of this
                    // kind in that saved register or caller stack slot (`PrimPlan::of`).
                    Some(addr) => unsafe { write_prim(w, prim, addr) },
                    None => w.unreadable("not placed"),
                }
            }
        },
        record,
    );
}

/// Records a call's arguments; `start(i)` is the address of argument `i` (`None` or 0:
/// recorded as unreadable, for the reason `missing`).
///
/// # Safety
/// Called inside the hook; `start(i)`, when not `None` or 0, is where argument `i` lies
/// for this call, readable as its planned kind ([`write_value`]'s contract).
unsafe fn write_args(
    s: &State,
    f: &ArgsFn,
    plan: &FnPlan,
    ts: u64,
    sp: u64,
    start: impl Fn(usize) -> Option<usize>,
    missing: &str,
) {
    write_bounded(
        s,
        |w| {
            for (i, p) in plan.args.iter().enumerate() {
                w.param(i as u32);
                match start(i) {
                    // SAFETY: (A7) argument `i` lies at `addr` (contract).
                    Some(addr) if addr != 0 => unsafe { write_value(s, w, &p.kind, addr, 0) },
                    _ => w.unreadable(missing),
                }
            }
        },
        Record {
            ts,
            kind: EltKind::Enter,
            function: f.index,
            sp,
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
    let ts = clock::ticks();
    let frame = stub_frame(elt);
    let sp = frame_sp(frame) as u64;
    if !is_args_client(id) {
        buffers::emit_elt(kind, id as u64, sp);
        return;
    }
    // SAFETY: (A1) as in on_enter.
    let f = unsafe { &*(id as *const ArgsFn) };
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
                        // SAFETY: (A7) inside the hook; the return value lies there: the
                        // runtime's range for this call (GetFunctionLeave3Info) or the slot
                        // of the stub's frame its answers agreed on (`return_value`).
                        Ok(start) if *start != 0 => unsafe {
                            write_value(s, w, &ret.kind, *start, 0)
                        },
                        Ok(_) => w.unreadable("no return value range"),
                        Err(e) => w.unreadable(&format!("GetFunctionLeave3Info: {e}")),
                    }
                }
            },
            Record {
                ts,
                kind,
                function: f.index,
                sp,
            },
        );
    } else {
        buffers::emit_elt(kind, f.index, sp);
    }
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

/// Encodes values with `write` and emits the record `record` makes of them, stamped
/// with the time its hook began (`record.ts`): in the thread's ring as they are encoded
/// ([`buffers::emit_elt_with_values_in_place`]), else (a tail call, the thread's first
/// event, a re-entered ring, a ring smaller than the bound) through a buffer.
#[inline(always)]
fn write_bounded(s: &State, write: impl Fn(&mut ValueWriter<'_>), record: Record) {
    let bound = s.limits.bytes as usize;
    match buffers::emit_elt_with_values_in_place(
        record.ts,
        record.kind,
        record.function,
        record.sp,
        bound,
        &write,
    ) {
        Some(false) => {}
        Some(true) => {
            s.cut.fetch_add(1, Ordering::Relaxed);
        }
        None => write_buffered(s, write, record, bound),
    }
}

/// [`write_bounded`] through a buffer: the values are written into a small stack buffer
/// first (most calls need a few dozen bytes, and clearing the full bound on every call
/// would cost more than the rest); only if that was cut and the bound is larger are they
/// written again into a buffer of the bound.
#[cold]
#[inline(never)]
fn write_buffered(s: &State, write: impl Fn(&mut ValueWriter<'_>), record: Record, bound: usize) {
    let ts = record.ts;
    // Most calls need a few bytes: clear 64 first, 256 or the bound only when cut.
    let mut tiny = [0u8; 64];
    let mut w = ValueWriter::new(&mut tiny[..bound.min(64)]);
    write(&mut w);
    if !w.was_cut() || bound <= 64 {
        return finish(s, w, ts, record);
    }
    write_larger(s, write, ts, record, bound);
}

/// [`write_buffered`]'s values that did not fit 64 bytes: in a frame of their own, so that
/// the common call's frame holds no 8 KiB buffer (whose stack probe every call paid).
#[cold]
#[inline(never)]
fn write_larger(
    s: &State,
    write: impl Fn(&mut ValueWriter<'_>),
    ts: u64,
    record: Record,
    bound: usize,
) {
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

/// The ELT event a value list goes with: `CallArgs` after an Enter, `CallReturn` before a
/// Leave or Tailcall.
#[derive(Clone, Copy)]
struct Record {
    /// When the hook began (its first instruction of note: the clock read).
    ts: u64,
    kind: EltKind,
    function: u64,
    /// The caller SP (the value record keeps its low 32 bits).
    sp: u64,
}

// Inlined so that the writer is not moved into a frame of its own on every call.
#[inline(always)]
fn finish(s: &State, w: ValueWriter<'_>, ts: u64, r: Record) {
    let (bytes, cut) = w.finish();
    if cut {
        s.cut.fetch_add(1, Ordering::Relaxed);
    }
    buffers::emit_elt_with_values(ts, r.kind, r.function, r.sp, bytes);
}
