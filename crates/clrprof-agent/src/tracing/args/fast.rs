//! The assembly short paths of `--args` (`x64.rs`, `args_prims!`): a plan laid out as
//! words the enter and leave trampolines read before they would call Rust. The entry
//! when every argument is a primitive in a register or stack slot, a `string`, or a
//! struct of primitives (numbered by its `ValueClass`) in registers or on the stack
//! (`int Fib(int)`, `Describe(string, ID)`); the return when it is such a primitive or
//! nothing; each on its own. Each word writes up to three constant bytes (`PARAM` and the
//! value's number, a struct's header, its end) and then, per its [`Form`], nothing, a
//! primitive loaded from where it lies and widened, or a string; the trampoline writes
//! the same record bytes as the Rust hooks (the values as the value writer writes them),
//! with no call, no dispatch on kinds in Rust and no register but the general ones
//! touched. Anything else (not recording, the thread's first event, a ring full, busy or
//! about to wrap, a string longer than [`STR_MOST`] or past ASCII, lengths that take
//! more than a byte, the other parts) takes the Rust hooks as before.
//!
//! [`encode`] is what the assembly does for a primitive, in Rust, for the tests.

use std::mem::offset_of;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use clrprof_format::values::{
    BOOL, CHAR, CLASS_STRUCT, END, F32, F64, INT, PARAM, PARAM_PRIM_ROOM, UINT,
};

use super::plan::{FnPlan, Kind, Prim, Shape};
use crate::config::ArgLimits;
use crate::output::buffers::Leb35;
use crate::tracing::arg_slots::Slot;

/// How a value's widened bits are written after its three tag bytes.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Form {
    /// LEB128 of the zero-extended value.
    Unsigned = 0,
    /// LEB128 of the zigzag of the sign-extended value.
    Signed = 1,
    /// One byte: 1 when the low byte is not 0.
    Bool = 2,
    /// The low four bytes as they are (`float`).
    Raw4 = 3,
    /// The eight bytes as they are (`double`).
    Raw8 = 4,
    /// Nothing loaded: the prefix bytes only (a struct's header and end).
    Const = 5,
    /// A `string`: null, or a `System.String` whose units are all ASCII (else the Rust
    /// hooks write the call), written as the value writer writes it.
    Str = 6,
}

/// One `--args` function's short path, read by the trampolines at the start of its
/// [`ArgsFn`](super::ArgsFn) (a `repr(C)` prefix at the client ID's address). Written once,
/// in the FunctionIDMapper before the function's first call, `meta` last.
#[repr(C)]
pub(super) struct FastPrims {
    /// 0: no short path (the Rust hooks). Else the argument count (byte 0), the return
    /// value count (byte 1, 0 or 1), the function index's LEB128 length (byte 2) and
    /// which short paths are on (byte 3: [`ENTER`], [`LEAVE`]).
    meta: AtomicU32,
    _pad: u32,
    /// The function index's LEB128 bytes ([`Leb35`]).
    leb: AtomicU64,
    /// Bytes to reserve in the ring for an entry's record and a return's (their header
    /// and timestamp words, and the longest body rounded up to words).
    need: [AtomicU64; 2],
    /// For [`Form::Str`]: the runtime's string layout (the length's offset in bits 0–15,
    /// the characters' in 16–31) and the characters kept (`--arg-max-len`, bits 32–63).
    strings: AtomicU64,
    /// The entry's words ([`value_word`], [`constant`], a string's), then at [`RET_SLOT`] the
    /// return value's.
    values: [AtomicU64; 32],
}

/// `meta`'s byte 3: the entry's short path is on, the return's.
pub const ENTER: u32 = 1;
pub const LEAVE: u32 = 2;

/// Where the trampolines find the fields.
pub const META: usize = offset_of!(FastPrims, meta);
pub const LEB: usize = offset_of!(FastPrims, leb);
pub const NEED_ENTER: usize = offset_of!(FastPrims, need);
pub const NEED_LEAVE: usize = offset_of!(FastPrims, need) + 8;
pub const STRINGS: usize = offset_of!(FastPrims, strings);
pub const ARGS: usize = offset_of!(FastPrims, values);
const RET_SLOT: usize = 31;
pub const RET: usize = ARGS + 8 * RET_SLOT;

impl FastPrims {
    pub(super) const fn new() -> FastPrims {
        FastPrims {
            meta: AtomicU32::new(0),
            _pad: 0,
            leb: AtomicU64::new(0),
            need: [AtomicU64::new(0), AtomicU64::new(0)],
            strings: AtomicU64::new(0),
            values: [const { AtomicU64::new(0) }; 32],
        }
    }

    /// Turns the short paths on for the parts of `plan` that have one (once, before the
    /// function's first call, after `announce_plan` numbered its structs): the entry when
    /// every argument has words ([`entry_words`]) and the record fits the per-call bound
    /// uncut, the return when it is a primitive in a register or there is none.
    pub(super) fn publish(
        &self,
        plan: &FnPlan,
        function: Leb35,
        limits: &ArgLimits,
        string_layout: Option<(u32, u32)>,
    ) {
        if !enabled() {
            return;
        }
        let bytes = limits.bytes as usize;
        let mut words = [0u64; RET_SLOT + 1];
        let mut flags = 0u32;
        let mut count = 0usize;
        let mut most = 0usize;
        let strings = string_layout.filter(|(len, chars)| *len < 1 << 16 && *chars < 1 << 16);
        if let Some((each, longest, prims_only)) = entry_words(plan, strings.is_some()) {
            // Primitives only: the Rust short path's bound (it never cuts). Else the value
            // writer's: room to spare, so that it would not have cut either.
            let fits = if prims_only {
                each.len() * PARAM_PRIM_ROOM <= bytes
            } else {
                longest + 64 <= bytes
            };
            if fits {
                words[..each.len()].copy_from_slice(&each);
                count = each.len();
                most = longest;
                flags |= ENTER;
            }
        }
        let nargs = plan.args.len();
        let mut nret = 0;
        match plan.prims.ret {
            Some(None) => flags |= LEAVE,
            Some(Some((slot, prim))) if nargs < 0x80 => {
                if let Some(w) = value_word(&[PARAM, nargs as u8], slot, prim) {
                    words[RET_SLOT] = w;
                    nret = 1;
                    flags |= LEAVE;
                }
            }
            _ => {}
        }
        if flags == 0 {
            return;
        }
        for (v, w) in self.values.iter().zip(words) {
            v.store(w, Ordering::Relaxed);
        }
        if let Some((len, chars)) = strings {
            let layout = u64::from(len) | u64::from(chars) << 16 | u64::from(limits.max_len) << 32;
            self.strings.store(layout, Ordering::Relaxed);
        }
        self.leb.store(function.bytes(), Ordering::Relaxed);
        self.need[0].store(room(function.len(), most), Ordering::Relaxed);
        self.need[1].store(
            room(function.len(), nret * PARAM_PRIM_ROOM),
            Ordering::Relaxed,
        );
        let meta = count as u32 | (nret as u32) << 8 | (function.len() as u32) << 16;
        self.meta.store(meta | flags << 24, Ordering::Release);
    }

    /// Which short paths are on ([`ENTER`], [`LEAVE`]).
    pub(super) fn flags(&self) -> u32 {
        self.meta.load(Ordering::Acquire) >> 24
    }
}

/// Whether the trampolines may take the short path (`CLRPROF_ARGS_ASM=0` sends every call
/// to the Rust hooks, to compare the two; read once).
fn enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("CLRPROF_ARGS_ASM").is_none_or(|v| v != "0"))
}

/// The ring bytes a record whose values take at most `values` bytes may take: the header
/// and timestamp words, then the body (kind, length, zero timestamp, the function index,
/// the SP's five bytes at most, the values' length, the values) and the eight bytes the
/// trampoline's widest store may write past it, in whole words.
fn room(function_len: usize, values: usize) -> u64 {
    let body = 3 + function_len + 5 + 1 + values + 8;
    (clrprof_format::compact::words_for_record(body) * 8) as u64
}

/// A word's prefix: up to three bytes written before its value, and how many.
fn prefix(bytes: &[u8]) -> u64 {
    debug_assert!(bytes.len() <= 3);
    let mut w = (bytes.len() as u64) << 49;
    for (i, b) in bytes.iter().enumerate() {
        w |= u64::from(*b) << (8 * i);
    }
    w
}

/// A word writing only its prefix.
fn constant(bytes: &[u8]) -> u64 {
    prefix(bytes) | (Form::Const as u64) << 56
}

/// Where a word loads from: bytes 4–5 the offset, bit 48 whether from the caller's SP
/// (else from the saved registers). `None` for a struct's registers.
fn at(slot: Slot) -> Option<u64> {
    let (offset, from_sp) = match slot {
        Slot::Saved(o) => (o, 0u64),
        Slot::Stack(o) => (o, 1),
        Slot::Struct { .. } => return None,
    };
    Some(u64::from(offset) << 32 | from_sp << 48)
}

/// The word of a primitive of kind `prim` in `slot`, after the bytes `before` (`PARAM`
/// and its number for a value, nothing for a struct's field), its kind's tag last: bytes
/// 0–2 those bytes, bits 49–50 how many, byte 3 the shift that widens its bits from a
/// 64-bit load, bytes 4–5 and bit 48 where it lies ([`at`]), byte 7 its [`Form`].
fn value_word(before: &[u8], slot: Slot, prim: Prim) -> Option<u64> {
    let (tag, bits, form) = match prim {
        Prim::Bool => (BOOL, 8, Form::Bool),
        Prim::Char => (CHAR, 16, Form::Unsigned),
        Prim::I1 => (INT, 8, Form::Signed),
        Prim::U1 => (UINT, 8, Form::Unsigned),
        Prim::I2 => (INT, 16, Form::Signed),
        Prim::U2 => (UINT, 16, Form::Unsigned),
        Prim::I4 => (INT, 32, Form::Signed),
        Prim::U4 => (UINT, 32, Form::Unsigned),
        Prim::I8 | Prim::I => (INT, 64, Form::Signed),
        Prim::U8 | Prim::U => (UINT, 64, Form::Unsigned),
        Prim::R4 => (F32, 32, Form::Raw4),
        Prim::R8 => (F64, 64, Form::Raw8),
    };
    let mut bytes = before.to_vec();
    bytes.push(tag);
    Some(prefix(&bytes) | (64 - bits) << 24 | at(slot)? | (form as u64) << 56)
}

/// The word of value number `index`, a primitive.
#[cfg(test)]
fn word(index: u8, slot: Slot, prim: Prim) -> Option<u64> {
    value_word(&[PARAM, index], slot, prim)
}

/// Where field `offset` (of `size` bytes) of a struct placed at `slot` lies: after the
/// struct's start on the stack, or in the saved register holding its eightbyte.
fn field_at(slot: Slot, offset: u32, size: usize) -> Option<Slot> {
    let offset = u16::try_from(offset).ok()?;
    match slot {
        Slot::Stack(o) => Some(Slot::Stack(o.checked_add(offset)?)),
        Slot::Struct { regs, count, .. } => {
            let eightbyte = usize::from(offset / 8);
            let within = offset % 8;
            if eightbyte >= usize::from(count) || usize::from(within) + size > 8 {
                return None;
            }
            Some(Slot::Saved(regs.get(eightbyte)? + within))
        }
        Slot::Saved(_) => None,
    }
}

/// The most characters of a string the trampoline writes (a longer one, or one with a
/// character past ASCII, goes to the Rust hooks).
pub const STR_MOST: usize = 96;

/// The entry's words of `plan` (primitives; strings, when `strings`; structs of
/// primitives numbered by their `ValueClass`), the most bytes they write, and whether
/// they are all primitives; `None` if an argument has none.
fn entry_words(plan: &FnPlan, strings: bool) -> Option<(Vec<u64>, usize, bool)> {
    if plan.args.len() >= 0x80 || plan.places.len() != plan.args.len() {
        return None;
    }
    let mut words = Vec::new();
    let mut most = 0;
    let mut prims_only = true;
    for (i, (param, place)) in plan.args.iter().zip(&plan.places).enumerate() {
        let index = i as u8;
        let slot = (*place)?;
        match &param.kind {
            Kind::Prim(p) => {
                words.push(value_word(&[PARAM, index], slot, *p)?);
                most += PARAM_PRIM_ROOM;
            }
            Kind::Str if strings => {
                prims_only = false;
                words.push(prefix(&[PARAM, index]) | at(slot)? | (Form::Str as u64) << 56);
                // The tag, the full length (five bytes at most), the length kept (one).
                most += 2 + 1 + 5 + 1 + STR_MOST;
            }
            Kind::Inline(d) => {
                prims_only = false;
                let Shape::Struct { fields, number, .. } = &d.shape else {
                    return None;
                };
                let n = u64::from(number.load(std::sync::atomic::Ordering::Relaxed));
                if n == 0 || n >= 1 << 21 {
                    return None;
                }
                words.push(constant(&[PARAM, index, CLASS_STRUCT]));
                let mut leb = [0u8; 10];
                let k = clrprof_format::leb128::write_u64(&mut leb, n);
                words.push(constant(&leb[..k]));
                most += 3 + k;
                for f in fields {
                    let Kind::Prim(p) = f.kind else {
                        return None;
                    };
                    words.push(value_word(&[], field_at(slot, f.offset, p.size())?, p)?);
                    most += PARAM_PRIM_ROOM - 2;
                }
                words.push(constant(&[END]));
                most += 1;
            }
            _ => return None,
        }
    }
    (words.len() <= RET_SLOT).then_some((words, most, prims_only))
}

/// What the trampoline writes for a value's `word` whose 64-bit load gave `raw`: the
/// tests' model of the assembly, step by step.
#[cfg(test)]
fn encode(word: u64, raw: u64) -> Vec<u8> {
    let plen = (word >> 49 & 3) as usize;
    let mut out = word.to_le_bytes()[..plen].to_vec();
    let shift = (word >> 24) as u8 as u32;
    let form = (word >> 56) as u8;
    let widened = |signed: bool| {
        let up = raw << shift;
        if signed {
            ((up as i64) >> shift) as u64
        } else {
            up >> shift
        }
    };
    let leb = |out: &mut Vec<u8>, mut v: u64| loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            break;
        }
        out.push(b | 0x80);
    };
    match form {
        0 => leb(&mut out, widened(false)),
        1 => {
            let v = widened(true);
            leb(&mut out, (v << 1) ^ ((v as i64 >> 63) as u64));
        }
        2 => out.push(u8::from(widened(false) != 0)),
        3 => out.extend_from_slice(&(widened(false) as u32).to_le_bytes()),
        _ => out.extend_from_slice(&raw.to_le_bytes()),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use clrprof_format::values::put_param_prim;
    use proptest::prelude::*;

    const PRIMS: [Prim; 14] = [
        Prim::Bool,
        Prim::Char,
        Prim::I1,
        Prim::U1,
        Prim::I2,
        Prim::U2,
        Prim::I4,
        Prim::U4,
        Prim::I8,
        Prim::U8,
        Prim::R4,
        Prim::R8,
        Prim::I,
        Prim::U,
    ];

    proptest! {
        /// The assembly's encoding of any bits of any kind is the value writer's.
        #[test]
        fn the_words_encode_as_the_value_writer_does(
            raw in any::<u64>(),
            kind in 0..PRIMS.len(),
            index in 0u8..8,
            offset in any::<u16>(),
            on_stack in any::<bool>(),
        ) {
            let prim = PRIMS[kind];
            let slot = if on_stack { Slot::Stack(offset) } else { Slot::Saved(offset) };
            let w = word(index, slot, prim).unwrap();
            prop_assert_eq!((w >> 32) as u16, offset);
            prop_assert_eq!(w >> 48 & 1, u64::from(on_stack));
            let bytes = raw.to_le_bytes();
            // SAFETY: (A7) `bytes` holds the eight bytes `read_prim` may read.
            let v = unsafe { super::super::read::read_prim(prim, bytes.as_ptr() as usize) };
            let mut expect = [0u8; PARAM_PRIM_ROOM];
            let n = put_param_prim(&mut expect, index, v);
            prop_assert_eq!(encode(w, raw), expect[..n].to_vec());
        }
    }

    /// A plan of `args` (kinds and places) returning `ret` in RAX.
    fn plan(args: Vec<(Kind, Option<Slot>)>, ret: Option<Prim>) -> FnPlan {
        let param = |kind: Kind| super::super::plan::Param {
            name: "p".into(),
            ty: "t".into(),
            kind,
            regs: None,
        };
        let places: Vec<Option<Slot>> = args.iter().map(|a| a.1).collect();
        let args: Vec<_> = args.into_iter().map(|a| param(a.0)).collect();
        let ret = ret.map(|p| param(Kind::Prim(p)));
        let ret_place = ret
            .as_ref()
            .map(|_| crate::tracing::arg_slots::ReturnSlot::At(Slot::Saved(40)));
        let prims = super::super::plan::PrimPlan::of(&args, ret.as_ref(), &places, ret_place);
        FnPlan {
            args,
            ret,
            places,
            ret_place,
            prims,
        }
    }

    fn flags_of(p: &FnPlan, bytes: u32) -> u32 {
        let f = FastPrims::new();
        let limits = ArgLimits {
            bytes,
            ..ArgLimits::default()
        };
        f.publish(p, Leb35::new(5).unwrap(), &limits, Some((8, 12)));
        f.flags()
    }

    #[test]
    fn which_parts_take_the_trampolines_path() {
        let int = || (Kind::Prim(Prim::I4), Some(Slot::Saved(120)));
        assert_eq!(
            flags_of(&plan(vec![int()], Some(Prim::I4)), 64),
            ENTER | LEAVE
        );
        // Eight primitive arguments, a string: the entry still has words.
        let mut eight = vec![int(); 8];
        assert_eq!(
            flags_of(&plan(eight.clone(), Some(Prim::I4)), 4096),
            ENTER | LEAVE
        );
        let string = (Kind::Str, Some(Slot::Saved(120)));
        assert_eq!(
            flags_of(&plan(vec![string.clone()], Some(Prim::I4)), 2048),
            ENTER | LEAVE
        );
        // ... but not under a bound that would cut it, nor 32 words' worth.
        assert_eq!(flags_of(&plan(vec![string], Some(Prim::I4)), 128), LEAVE);
        eight.extend(vec![int(); 24]);
        assert_eq!(flags_of(&plan(eight, None), 4096), LEAVE);
        // Five primitives of 13 bytes do not fit a 64-byte bound uncut; 65 bytes hold them.
        assert_eq!(flags_of(&plan(vec![int(); 5], Some(Prim::I4)), 64), LEAVE);
        assert_eq!(
            flags_of(&plan(vec![int(); 5], Some(Prim::I4)), 65),
            ENTER | LEAVE
        );
        // An object reference, an unplaced value: the Rust hooks for the entry.
        assert_eq!(
            flags_of(&plan(vec![(Kind::Ref, Some(Slot::Saved(120)))], None), 64),
            LEAVE
        );
        assert_eq!(
            flags_of(&plan(vec![(Kind::Prim(Prim::I4), None)], None), 64),
            LEAVE
        );
    }

    #[test]
    fn struct_fields_lie_in_their_eightbytes() {
        let regs = Slot::Struct {
            regs: [136, 56],
            count: 2,
            copy: 0,
        };
        assert_eq!(field_at(regs, 0, 4), Some(Slot::Saved(136)));
        assert_eq!(field_at(regs, 4, 4), Some(Slot::Saved(140)));
        assert_eq!(field_at(regs, 8, 8), Some(Slot::Saved(56)));
        // Past the struct's eightbytes, or across two.
        assert_eq!(field_at(regs, 16, 4), None);
        assert_eq!(field_at(regs, 6, 4), None);
        assert_eq!(field_at(Slot::Stack(16), 12, 4), Some(Slot::Stack(28)));
    }

    #[test]
    fn the_room_holds_the_longest_record() {
        // Kind, length, timestamp, a five-byte index, a five-byte SP, the values' length,
        // seven values of 13 bytes and an eight-byte store's overhang: 113 bytes, 15 words.
        assert_eq!(room(5, 7 * PARAM_PRIM_ROOM), (2 + 15) * 8);
        // The trampoline writes a record only when both its lengths take one byte.
        const LONGEST_BODY: usize = 3 + 5 + 5 + 1 + 7 * PARAM_PRIM_ROOM;
        const { assert!(LONGEST_BODY - 2 < 0x80, "one-byte body length") };
    }
}
