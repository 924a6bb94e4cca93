//! The assembly short paths of `--args` (`x64.rs`, `args_prims!`): the parts of a
//! [`PrimPlan`] laid out as words the enter and leave trampolines read before they would
//! call Rust — the entry of a method whose arguments are all primitives in registers or
//! stack slots (`int Fib(int)`), the return of one that returns such a primitive or
//! nothing (`int Describe(string, ID)`'s `int`), each on its own. Each value is one word
//! saying where it lies (a saved register or a caller stack slot), how to widen it and how
//! to encode it; the trampoline writes the same record bytes as
//! [`emit_prims_in_place`](crate::output::buffers::emit_prims_in_place) (the values as
//! [`put_param_prim`](clrprof_format::values::put_param_prim) writes them), with no call,
//! no dispatch on kinds in Rust and no register but the general ones touched. Anything
//! else (not recording, the thread's first event, a ring full, busy or about to wrap, the
//! other parts) takes the Rust hooks as before.
//!
//! [`encode`] is what the assembly does, in Rust, for the tests.

use std::mem::offset_of;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use clrprof_format::values::{BOOL, CHAR, F32, F64, INT, PARAM, PARAM_PRIM_ROOM, UINT};

use super::plan::{Prim, PrimPlan};
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
    /// The arguments' words ([`word`]), then at [`RET_SLOT`] the return value's.
    values: [AtomicU64; 8],
}

/// `meta`'s byte 3: the entry's short path is on, the return's.
pub const ENTER: u32 = 1;
pub const LEAVE: u32 = 2;

/// Where the trampolines find the fields.
pub const META: usize = offset_of!(FastPrims, meta);
pub const LEB: usize = offset_of!(FastPrims, leb);
pub const NEED_ENTER: usize = offset_of!(FastPrims, need);
pub const NEED_LEAVE: usize = offset_of!(FastPrims, need) + 8;
pub const ARGS: usize = offset_of!(FastPrims, values);
const RET_SLOT: usize = 7;
pub const RET: usize = ARGS + 8 * RET_SLOT;

impl FastPrims {
    pub(super) const fn new() -> FastPrims {
        FastPrims {
            meta: AtomicU32::new(0),
            _pad: 0,
            leb: AtomicU64::new(0),
            need: [AtomicU64::new(0), AtomicU64::new(0)],
            values: [const { AtomicU64::new(0) }; 8],
        }
    }

    /// Turns the short paths on for the parts of `plan` that have one (once, before the
    /// function's first call): the entry when every argument has a word and the record
    /// fits the per-call bound `bytes` uncut, the return (value number `nargs`) when it
    /// has a word or there is none.
    pub(super) fn publish(&self, plan: &PrimPlan, nargs: usize, function: Leb35, bytes: u32) {
        if !enabled() {
            return;
        }
        let mut words = [0u64; 8];
        let mut flags = 0u32;
        let mut count = 0usize;
        if let Some(args) = plan
            .args
            .as_deref()
            .filter(|a| a.len() <= RET_SLOT && a.len() * PARAM_PRIM_ROOM <= bytes as usize)
        {
            let each = args
                .iter()
                .enumerate()
                .map(|(i, &(slot, prim))| word(i as u8, slot, prim));
            if let Some(each) = each.collect::<Option<Vec<u64>>>() {
                words[..each.len()].copy_from_slice(&each);
                count = each.len();
                flags |= ENTER;
            }
        }
        let mut nret = 0;
        match plan.ret {
            Some(None) => flags |= LEAVE,
            Some(Some((slot, prim))) if nargs < 0x80 => {
                if let Some(w) = word(nargs as u8, slot, prim) {
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
        self.leb.store(function.bytes(), Ordering::Relaxed);
        self.need[0].store(room(function.len(), count), Ordering::Relaxed);
        self.need[1].store(room(function.len(), nret), Ordering::Relaxed);
        let meta = count as u32 | (nret as u32) << 8 | (function.len() as u32) << 16;
        self.meta.store(meta | flags << 24, Ordering::Release);
    }

    #[cfg(test)]
    fn flags(&self) -> u32 {
        self.meta.load(Ordering::Acquire) >> 24
    }
}

/// Whether the trampolines may take the short path (`CLRPROF_ARGS_ASM=0` sends every call
/// to the Rust hooks, to compare the two; read once).
fn enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("CLRPROF_ARGS_ASM").is_none_or(|v| v != "0"))
}

/// The ring bytes a record of `values` values may take: the header and timestamp words,
/// then the body (kind, length, zero timestamp, the function index, the SP's five bytes
/// at most, the values' length, 13 bytes a value) and the eight bytes the trampoline's
/// widest store may write past it, in whole words.
fn room(function_len: usize, values: usize) -> u64 {
    let body = 3 + function_len + 5 + 1 + values * PARAM_PRIM_ROOM + 8;
    (clrprof_format::compact::words_for_record(body) * 8) as u64
}

/// The word of value number `index` of kind `prim` in `slot`: bytes 0–2 the three bytes
/// before its value ([`PARAM`], `index`, the kind's tag), byte 3 the shift that widens its
/// bits from a 64-bit load, bytes 4–5 its offset, bit 48 whether that is from the caller's
/// SP (else from the saved registers), byte 7 its [`Form`].
fn word(index: u8, slot: Slot, prim: Prim) -> Option<u64> {
    let (offset, from_sp) = match slot {
        Slot::Saved(o) => (o, 0u64),
        Slot::Stack(o) => (o, 1),
        Slot::Struct { .. } => return None,
    };
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
    Some(
        u64::from(PARAM)
            | u64::from(index) << 8
            | u64::from(tag) << 16
            | (64 - bits) << 24
            | u64::from(offset) << 32
            | from_sp << 48
            | (form as u64) << 56,
    )
}

/// What the trampoline writes for a value's `word` whose 64-bit load gave `raw`: the
/// tests' model of the assembly, step by step.
#[cfg(test)]
fn encode(word: u64, raw: u64) -> Vec<u8> {
    let mut out = vec![PARAM, (word >> 8) as u8, (word >> 16) as u8];
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

    #[test]
    fn structs_and_long_lists_keep_the_rust_hooks() {
        assert_eq!(
            word(
                0,
                Slot::Struct {
                    regs: [0, 8],
                    count: 2,
                    copy: 0
                },
                Prim::I4
            ),
            None
        );
        let leb = Leb35::new(5).unwrap();
        let int = (Slot::Saved(120), Prim::I4);
        let ret = Some((Slot::Saved(40), Prim::I4));
        let published = |args: Option<Vec<(Slot, Prim)>>, ret, nargs, bytes| {
            let f = FastPrims::new();
            let plan = PrimPlan {
                args: args.map(Into::into),
                ret,
            };
            f.publish(&plan, nargs, leb, bytes);
            f.flags()
        };
        assert_eq!(
            published(Some(vec![int; 1]), Some(ret), 1, 64),
            ENTER | LEAVE
        );
        // Eight arguments: the entry keeps the Rust hooks, the return takes the short path.
        assert_eq!(published(Some(vec![int; 8]), Some(ret), 8, 4096), LEAVE);
        // Five values of 13 bytes do not fit a 64-byte bound uncut; 65 bytes hold them.
        assert_eq!(published(Some(vec![int; 5]), Some(ret), 5, 64), LEAVE);
        assert_eq!(
            published(Some(vec![int; 5]), Some(ret), 5, 65),
            ENTER | LEAVE
        );
        // A string argument (no words for the entry) returning an int; a struct result.
        assert_eq!(published(None, Some(ret), 2, 64), LEAVE);
        assert_eq!(published(Some(vec![int; 1]), None, 1, 64), ENTER);
        assert_eq!(published(None, None, 1, 64), 0);
        // A void method: an empty return record.
        assert_eq!(published(None, Some(None), 3, 64), LEAVE);
    }

    #[test]
    fn the_room_holds_the_longest_record() {
        // Kind, length, timestamp, a five-byte index, a five-byte SP, the values' length,
        // seven values of 13 bytes and an eight-byte store's overhang: 113 bytes, 15 words.
        assert_eq!(room(5, 7), (2 + 15) * 8);
        const LONGEST_BODY: usize = 3 + 5 + 5 + 1 + 7 * PARAM_PRIM_ROOM;
        const { assert!(LONGEST_BODY - 2 < 0x80, "one-byte body length") };
    }
}
