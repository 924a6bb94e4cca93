//! Where a function's arguments and return value lie, learned from the runtime's own
//! answers so that later calls need not ask again.
//!
//! `GetFunctionEnter3Info` / `GetFunctionLeave3Info` build the runtime's argument
//! iterator from the method's signature on every call (a heap allocation and a signature
//! walk each: about 180 ns of the slow path's cost per call, measured with `perf` on
//! `Fib`). The ranges they return are, on Linux x64, addresses inside the stub's saved
//! register block (`PROFILE_PLATFORM_SPECIFIC_DATA`, pointed to by the ELT info) or on
//! the caller's stack above the profiled frame (`profiledRsp`), at offsets that depend
//! only on the signature (dotnet/runtime `vm/amd64/profiler.cpp`,
//! `ProfileArgIterator::GetNextArgAddr` and `GetReturnBufferAddr`). So each function's
//! first calls ask the runtime, express each range as a [`Slot`] relative to those two
//! bases, and check that the next calls give the same slots; after that the hook computes
//! the addresses itself.
//!
//! Two kinds of value are copied by the runtime during the call rather than pointed at
//! where the stub saved them, and are learned from what the runtime copies from:
//!
//! - A struct passed in registers (at most 16 bytes, not `MEMORY` class) is copied by
//!   `ProfileArgIterator::CopyStructFromRegisters` into a scratch buffer after the
//!   register block, eightbyte by eightbyte: an `SSE` eightbyte from the next saved
//!   `xmm` register, an `INTEGER` one from the next general register, the registers
//!   being the ones the SysV classification gave it (dotnet/runtime
//!   `MethodTable::ClassifyEightBytesWithManagedLayout`: an eightbyte whose fields are all
//!   `float`/`double` is `SSE`, any other is `INTEGER`; a struct that needs more registers
//!   of either class than are left goes on the stack whole). [`classify`] does the same
//!   from the class layout, [`Registers`] hands out the registers in argument order, and
//!   the prediction becomes a [`Slot::Struct`] only if its bytes equal the runtime's copy
//!   on the first calls; each call then copies the two registers itself.
//! - A `float`/`double` return value is copied from `xmm0` (`flt0`) into the `rax` slot
//!   (`GetReturnBufferAddr`): its slot is `flt0`.
//!
//! Any disagreement between the runtime's answer and the learned slots switches the
//! function back to asking, for good, and is counted.

/// The offsets below are the Unix x64 layout; elsewhere nothing is learned.
const LAYOUT_KNOWN: bool = cfg!(all(target_arch = "x86_64", target_os = "linux"));

/// Byte offsets inside the stub's saved block (`PROFILE_PLATFORM_SPECIFIC_DATA`, Unix
/// x64): `rax` at 40, `flt0`…`flt7` at 56…112, `rdi`…`r9` at 120…160, `flags` at 168,
/// the copy buffer after it.
pub const RAX: usize = 40;
const FLT0: usize = 56;
const RDI: usize = 120;
const REGISTERS: std::ops::Range<usize> = 56..168;
/// General and floating-point argument registers of the SysV x64 convention.
const GEN_REGS: u8 = 6;
const FLOAT_REGS: u8 = 8;
/// At most this many structs of one call are copied from registers (the registers
/// allow at most eight).
pub const MAX_STRUCTS: usize = 8;
/// Stack arguments lie within this many bytes above `profiledRsp`.
const STACK_SPAN: usize = 4096;

/// An argument's or return value's place, relative to the stub's frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    /// Offset into the saved register block.
    Saved(u16),
    /// Offset from the profiled method's caller SP (stack-passed arguments).
    Stack(u16),
    /// A struct passed in registers: its eightbytes are the saved registers at these
    /// offsets (`regs[1]` unused for one eightbyte), gathered into the call's copy
    /// number `copy` ([`StubFrame::gather`]).
    Struct { regs: [u16; 2], count: u8, copy: u8 },
}

/// The SysV class of one eightbyte of a struct.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    Integer,
    Sse,
}

/// A field of a struct, flattened (nested structs' fields at their offsets from the
/// outer struct): where it lies and whether it is a `float`/`double`.
#[derive(Clone, Copy, Debug)]
pub struct Field {
    pub offset: u32,
    pub size: u32,
    pub float: bool,
}

/// The classes of a struct's eightbytes when it is passed in registers; `None` when it
/// is not (larger than 16 bytes, empty, or a field outside its size). An eightbyte is
/// `SSE` when every field that overlaps it is a float, else `INTEGER`.
pub fn classify(size: u32, fields: &[Field]) -> Option<Vec<Class>> {
    if size == 0 || size > 16 || fields.is_empty() {
        return None;
    }
    let n = size.div_ceil(8) as usize;
    let mut class = vec![None; n];
    for f in fields {
        let end = f.offset.checked_add(f.size)?;
        if f.size == 0 || end > n as u32 * 8 {
            return None;
        }
        for e in f.offset / 8..=(end - 1) / 8 {
            let c = &mut class[e as usize];
            *c = Some(match (*c, f.float) {
                (Some(Class::Integer), _) | (_, false) => Class::Integer,
                _ => Class::Sse,
            });
        }
    }
    // An eightbyte no field covers (padding) is INTEGER-neutral; the runtime treats it
    // as NO_CLASS, which leaves it out: refuse rather than guess.
    class.into_iter().collect()
}

/// The bytes of a struct its fields cover (bit `i` for byte `i`): only those are compared
/// with the runtime's copy (padding is not copied alike).
pub fn field_bytes(fields: &[Field]) -> u16 {
    let mut mask = 0u16;
    for f in fields {
        for b in f.offset..(f.offset + f.size).min(16) {
            mask |= 1 << b;
        }
    }
    mask
}

/// Hands out argument registers in argument order, as the SysV convention does.
#[derive(Clone, Copy, Debug, Default)]
pub struct Registers {
    general: u8,
    float: u8,
}

impl Registers {
    /// One general-register value (integer, reference, pointer).
    pub fn integer(&mut self) {
        self.general = self.general.saturating_add(1);
    }

    /// One `float`/`double`.
    pub fn float(&mut self) {
        self.float = self.float.saturating_add(1);
    }

    /// A struct of these eightbyte classes: the saved-block offsets of its registers, or
    /// `None` (and no register used) when not enough of either class are left and it is
    /// passed on the stack.
    pub fn structure(&mut self, classes: &[Class]) -> Option<Vec<u16>> {
        let general = classes.iter().filter(|c| **c == Class::Integer).count() as u8;
        let float = classes.len() as u8 - general;
        if self.general + general > GEN_REGS || self.float + float > FLOAT_REGS {
            // Only this struct goes to the stack; later arguments still take the
            // registers left.
            return None;
        }
        Some(
            classes
                .iter()
                .map(|c| match c {
                    Class::Integer => {
                        self.general += 1;
                        (RDI + 8 * usize::from(self.general - 1)) as u16
                    }
                    Class::Sse => {
                        self.float += 1;
                        (FLT0 + 8 * usize::from(self.float - 1)) as u16
                    }
                })
                .collect(),
        )
    }
}

/// Places arguments as the SysV convention does, for the assembly `--args` hooks
/// (`x64.rs`), which save the argument registers at the offsets of the runtime's
/// `PROFILE_PLATFORM_SPECIFIC_DATA` (so [`Slot::Saved`] means the same there) and pass the
/// profiled method's caller SP, above which the stack arguments lie in order, each in
/// whole eightbytes. Once one value cannot be placed (a kind of unknown size, a struct
/// the classification cannot tell), neither can any after it.
#[derive(Clone, Copy, Debug, Default)]
pub struct Placer {
    regs: Registers,
    stack: u32,
    structs: u8,
    lost: bool,
}

impl Placer {
    fn on_stack(&mut self, size: u32) -> Option<Slot> {
        let at = self.stack;
        self.stack = at.checked_add(size.div_ceil(8) * 8)?;
        if self.stack as usize > STACK_SPAN {
            self.lost = true;
            return None;
        }
        Some(Slot::Stack(at as u16))
    }

    /// One integer, reference or pointer (also `this`, a return buffer's address and the
    /// generic context): the next general register, else the stack.
    pub fn integer(&mut self) -> Option<Slot> {
        if self.lost {
            return None;
        }
        if self.regs.general < GEN_REGS {
            self.regs.general += 1;
            return Some(Slot::Saved(
                (RDI + 8 * usize::from(self.regs.general - 1)) as u16,
            ));
        }
        self.on_stack(8)
    }

    /// One `float`/`double`: the next XMM register, else the stack.
    pub fn float(&mut self) -> Option<Slot> {
        if self.lost {
            return None;
        }
        if self.regs.float < FLOAT_REGS {
            self.regs.float += 1;
            return Some(Slot::Saved(
                (FLT0 + 8 * usize::from(self.regs.float - 1)) as u16,
            ));
        }
        self.on_stack(8)
    }

    /// A struct of `size` bytes passed by value: in the registers its eightbyte
    /// `classes` give when it has them and they are left, else on the stack whole. A
    /// struct of at most 16 bytes without classes cannot be placed.
    pub fn structure(&mut self, size: u32, classes: Option<&[Class]>) -> Option<Slot> {
        if self.lost {
            return None;
        }
        match classes {
            Some(c) if !c.is_empty() && c.len() <= 2 && size <= 16 => {
                if usize::from(self.structs) < MAX_STRUCTS
                    && let Some(regs) = self.regs.structure(c)
                {
                    let mut fixed = [0u16; 2];
                    fixed[..regs.len()].copy_from_slice(&regs);
                    self.structs += 1;
                    return Some(Slot::Struct {
                        regs: fixed,
                        count: regs.len() as u8,
                        copy: self.structs - 1,
                    });
                }
                if usize::from(self.structs) >= MAX_STRUCTS {
                    self.lost = true;
                    return None;
                }
                self.on_stack(size)
            }
            _ if size > 16 => self.on_stack(size),
            _ => self.unknown(),
        }
    }

    /// A value whose place cannot be told: it and every later one are unplaced.
    pub fn unknown(&mut self) -> Option<Slot> {
        self.lost = true;
        None
    }
}

/// Where a return value lies when the leave hook runs (offsets of the leave trampoline's
/// block: `rax` 40, `xmm0` 56, `xmm1` 64, `rdx` 136).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReturnSlot {
    /// In a saved register, or a struct gathered from two ([`Slot::Saved`] /
    /// [`Slot::Struct`]).
    At(Slot),
    /// Returned through the caller's buffer, whose address the method returns in `rax`.
    Buffer,
}

/// The leave block's offset of `rdx` (the second INTEGER return register).
const RDX: usize = 136;

/// The return value's place for a value of that shape: INTEGER eightbytes come back in
/// RAX then RDX, SSE ones in XMM0 then XMM1, a struct over 16 bytes through the buffer.
pub fn return_place(value: Returned, size: u32, classes: Option<&[Class]>) -> Option<ReturnSlot> {
    match value {
        Returned::Integer => Some(ReturnSlot::At(Slot::Saved(RAX as u16))),
        Returned::Float => Some(ReturnSlot::At(Slot::Saved(FLT0 as u16))),
        Returned::Other => match classes {
            Some(c) if !c.is_empty() && c.len() <= 2 && size <= 16 => {
                let (mut ints, mut floats) = ([RAX, RDX].into_iter(), [FLT0, FLT0 + 8].into_iter());
                let mut regs = [0u16; 2];
                for (r, class) in regs.iter_mut().zip(c) {
                    *r = match class {
                        Class::Integer => ints.next()?,
                        Class::Sse => floats.next()?,
                    } as u16;
                }
                Some(ReturnSlot::At(Slot::Struct {
                    regs,
                    count: c.len() as u8,
                    copy: 0,
                }))
            }
            _ if size > 16 => Some(ReturnSlot::Buffer),
            _ => None,
        },
    }
}

/// The two bases of one hook call.
#[derive(Clone, Copy, Debug)]
pub struct StubFrame {
    /// The saved register block (`PROFILE_PLATFORM_SPECIFIC_DATA`).
    pub saved: usize,
    /// The profiled method's `profiledRsp`.
    pub profiled_sp: usize,
}

impl StubFrame {
    /// The address of a value in a saved register or on the stack; `None` for a struct
    /// in registers, which must be [gathered](Self::gather).
    pub fn address(&self, slot: Slot) -> Option<usize> {
        match slot {
            Slot::Saved(o) => Some(self.saved + usize::from(o)),
            Slot::Stack(o) => Some(self.profiled_sp + usize::from(o)),
            Slot::Struct { .. } => None,
        }
    }

    /// The eightbytes of a struct in registers, copied from the saved registers in
    /// order, as the runtime copies them.
    pub fn gather(&self, regs: [u16; 2], count: u8) -> [u64; 2] {
        let mut out = [0u64; 2];
        for (o, r) in out.iter_mut().zip(regs).take(usize::from(count)) {
            let at = self.saved + usize::from(r);
            // SAFETY: (A1) `r` is an offset inside the saved register block
            // (`REGISTERS`, checked when the slot was made), which lies in the stub's
            // frame on this thread's stack for the duration of the hook.
            *o = unsafe { std::ptr::read_unaligned(at as *const u64) };
        }
        out
    }

    /// The slot of a struct the runtime copied to `start` (`length` bytes) from the
    /// registers predicted for it (`regs`, saved-block offsets), if the copy's bytes (those
    /// `covered`) equal the registers' now.
    pub fn struct_slot(
        &self,
        (start, length): (usize, u32),
        regs: &[u16],
        covered: u16,
        copy: u8,
    ) -> Option<Slot> {
        // The range must hold every byte compared.
        let extent = 16 - covered.leading_zeros();
        if !LAYOUT_KNOWN
            || length < extent
            || regs.is_empty()
            || regs.len() > 2
            || regs.iter().any(|r| !REGISTERS.contains(&usize::from(*r)))
            || usize::from(copy) >= MAX_STRUCTS
        {
            return None;
        }
        let mut fixed = [0u16; 2];
        fixed[..regs.len()].copy_from_slice(regs);
        let ours = self.gather(fixed, regs.len() as u8);
        let ours: [u8; 16] = bytemuck_pair(ours);
        let mut theirs = [0u8; 16];
        for (i, b) in theirs.iter_mut().enumerate().take(regs.len() * 8) {
            if covered & (1 << i) != 0 {
                // SAFETY: (A1) `start` is the range the runtime gave for this argument in
                // this hook call, `length` bytes long (checked to hold byte `i`).
                *b = unsafe { std::ptr::read((start + i) as *const u8) };
            }
        }
        let same = (0..regs.len() * 8).all(|i| covered & (1 << i) == 0 || ours[i] == theirs[i]);
        same.then_some(Slot::Struct {
            regs: fixed,
            count: regs.len() as u8,
            copy,
        })
    }

    /// The slot of an argument the runtime placed at `start`, if the stub saved it there.
    pub fn argument_slot(&self, start: usize) -> Option<Slot> {
        if !LAYOUT_KNOWN {
            return None;
        }
        let saved = start.checked_sub(self.saved);
        if let Some(o) = saved.filter(|o| REGISTERS.contains(o)) {
            return Some(Slot::Saved(o as u16));
        }
        let stack = start.checked_sub(self.profiled_sp);
        stack
            .filter(|&o| o < STACK_SPAN)
            .map(|o| Slot::Stack(o as u16))
    }

    /// The slot of a return value at `start`. The runtime answers `rax` for an integer or
    /// reference result (as saved), for a `float`/`double` one (after copying `flt0`
    /// there: the value is `flt0`'s), and for a one-eightbyte integer struct; only the
    /// first two are learned.
    pub fn return_slot(&self, start: usize, how: Returned) -> Option<Slot> {
        if !LAYOUT_KNOWN {
            return None;
        }
        match (start.checked_sub(self.saved), how) {
            (Some(RAX), Returned::Integer) => Some(Slot::Saved(RAX as u16)),
            (Some(RAX), Returned::Float) => Some(Slot::Saved(FLT0 as u16)),
            (Some(RAX), Returned::Other) => None,
            (Some(o), _) if REGISTERS.contains(&o) => Some(Slot::Saved(o as u16)),
            _ => None,
        }
    }
}

/// What a return value is, for [`StubFrame::return_slot`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Returned {
    /// An integer, `char`, `bool`, pointer or reference.
    Integer,
    /// A `float` or `double`.
    Float,
    /// Anything else (structs, enums).
    Other,
}

fn bytemuck_pair(v: [u64; 2]) -> [u8; 16] {
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&v[0].to_le_bytes());
    out[8..].copy_from_slice(&v[1].to_le_bytes());
    out
}

/// How many of a function's calls compare the runtime's answer with the learned slots
/// before the slots are trusted.
pub const CHECKS: u32 = 3;

#[cfg(test)]
mod tests {
    use super::*;

    const FRAME: StubFrame = StubFrame {
        saved: 0x7000_1000,
        profiled_sp: 0x7000_2000,
    };

    #[test]
    fn register_arguments_are_slots_of_the_saved_block() {
        // rdi (this or the first integer), xmm0, r9.
        assert_eq!(
            FRAME.argument_slot(0x7000_1000 + 120),
            Some(Slot::Saved(120))
        );
        assert_eq!(FRAME.argument_slot(0x7000_1000 + 56), Some(Slot::Saved(56)));
        assert_eq!(
            FRAME.argument_slot(0x7000_1000 + 160),
            Some(Slot::Saved(160))
        );
        assert_eq!(FRAME.address(Slot::Saved(120)), Some(0x7000_1000 + 120));
    }

    #[test]
    fn copies_made_by_the_runtime_are_not_slots() {
        // The struct buffer after `flags`, and the fields before the registers.
        assert_eq!(FRAME.argument_slot(0x7000_1000 + 176), None);
        assert_eq!(FRAME.argument_slot(0x7000_1000 + 168), None);
        assert_eq!(FRAME.argument_slot(0x7000_1000 + RAX), None);
        assert_eq!(FRAME.return_slot(0x7000_1000 + 176, Returned::Other), None);
        assert_eq!(FRAME.return_slot(0x7000_1000 + RAX, Returned::Other), None);
    }

    #[test]
    fn a_floating_point_result_is_read_from_xmm0() {
        // The runtime copies flt0 into rax and answers rax: the value is flt0's.
        assert_eq!(
            FRAME.return_slot(0x7000_1000 + RAX, Returned::Float),
            Some(Slot::Saved(FLT0 as u16))
        );
    }

    const fn f(offset: u32, size: u32, float: bool) -> Field {
        Field {
            offset,
            size,
            float,
        }
    }

    #[test]
    fn eightbytes_are_sse_only_when_all_their_fields_are_floats() {
        use Class::*;
        // ID(int, double): INTEGER then SSE, the split the runtime copies.
        assert_eq!(
            classify(16, &[f(0, 4, false), f(8, 8, true)]),
            Some(vec![Integer, Sse])
        );
        // FFD(float, float, double): two SSE eightbytes.
        assert_eq!(
            classify(16, &[f(0, 4, true), f(4, 4, true), f(8, 8, true)]),
            Some(vec![Sse, Sse])
        );
        // (float, int) share one eightbyte: INTEGER.
        assert_eq!(
            classify(8, &[f(0, 4, true), f(4, 4, false)]),
            Some(vec![Integer])
        );
        // P2(int, int), and (double, int) of 16 bytes.
        assert_eq!(
            classify(8, &[f(0, 4, false), f(4, 4, false)]),
            Some(vec![Integer])
        );
        assert_eq!(
            classify(16, &[f(0, 8, true), f(8, 4, false)]),
            Some(vec![Sse, Integer])
        );
        // Larger than 16 bytes, empty, or a field past the end: not in registers.
        assert_eq!(classify(24, &[f(0, 8, false)]), None);
        assert_eq!(classify(0, &[]), None);
        assert_eq!(classify(8, &[f(4, 8, false)]), None);
        // Only the first eightbyte covered: refused rather than guessed.
        assert_eq!(classify(16, &[f(0, 4, false)]), None);
    }

    #[test]
    fn registers_are_handed_out_in_argument_order() {
        use Class::*;
        // Describe(string, ID): the string in rdi, ID's int part in rsi, its double in xmm0.
        let mut r = Registers::default();
        r.integer();
        assert_eq!(r.structure(&[Integer, Sse]), Some(vec![128, 56]));
        // A struct that does not fit goes to the stack whole; later values still get
        // registers.
        let mut r = Registers::default();
        for _ in 0..5 {
            r.integer();
        }
        assert_eq!(r.structure(&[Integer, Integer]), None);
        assert_eq!(r.structure(&[Integer]), Some(vec![160]));
        let mut r = Registers::default();
        for _ in 0..7 {
            r.float();
        }
        assert_eq!(r.structure(&[Sse, Sse]), None);
        assert_eq!(r.structure(&[Sse, Integer]), Some(vec![112, 120]));
    }

    #[test]
    fn a_struct_slot_is_made_only_when_the_runtime_copied_those_registers() {
        // A saved block: rsi (offset 128) holds 7 in its low half and junk above,
        // flt0 (56) holds 0.25.
        let mut block = [0u64; 24];
        block[128 / 8] = 0xdead_beef_0000_0007;
        block[56 / 8] = 0.25f64.to_bits();
        let frame = StubFrame {
            saved: block.as_ptr() as usize,
            profiled_sp: 0,
        };
        // The runtime's copy of ID(7, 0.25); its padding bytes differ.
        let copy: [u64; 2] = [0x0000_0000_0000_0007, 0.25f64.to_bits()];
        let covered = field_bytes(&[f(0, 4, false), f(8, 8, true)]);
        let slot = frame.struct_slot((copy.as_ptr() as usize, 16), &[128, 56], covered, 0);
        assert_eq!(
            slot,
            Some(Slot::Struct {
                regs: [128, 56],
                count: 2,
                copy: 0
            })
        );
        assert_eq!(frame.gather([128, 56], 2)[1], 0.25f64.to_bits());
        // The registers predicted the other way round: refused.
        assert_eq!(
            frame.struct_slot((copy.as_ptr() as usize, 16), &[56, 128], covered, 0),
            None
        );
        // A range shorter than the bytes compared: refused.
        assert_eq!(
            frame.struct_slot((copy.as_ptr() as usize, 8), &[128, 56], covered, 0),
            None
        );
        // Offsets outside the saved registers: refused.
        assert_eq!(
            frame.struct_slot((copy.as_ptr() as usize, 16), &[176, 56], covered, 0),
            None
        );
    }

    #[test]
    fn stack_arguments_are_relative_to_the_caller_sp() {
        assert_eq!(FRAME.argument_slot(0x7000_2008), Some(Slot::Stack(8)));
        assert_eq!(FRAME.address(Slot::Stack(8)), Some(0x7000_2008));
        assert_eq!(FRAME.argument_slot(0x7000_2000 + STACK_SPAN), None);
        assert_eq!(FRAME.argument_slot(0x10), None);
    }

    #[test]
    fn the_placer_follows_the_sysv_order_registers_then_the_stack() {
        use Class::*;
        // ManyInts(10 ints): six registers, then four eightbytes on the stack.
        let mut p = Placer::default();
        let slots: Vec<_> = (0..10).map(|_| p.integer()).collect();
        assert_eq!(slots[0], Some(Slot::Saved(120)));
        assert_eq!(slots[5], Some(Slot::Saved(160)));
        assert_eq!(slots[6], Some(Slot::Stack(0)));
        assert_eq!(slots[9], Some(Slot::Stack(24)));
        // SumS24(int before, S24 s, int after): the 24-byte struct on the stack, the
        // ints in RDI and RSI.
        let mut p = Placer::default();
        assert_eq!(p.integer(), Some(Slot::Saved(120)));
        assert_eq!(p.structure(24, None), Some(Slot::Stack(0)));
        assert_eq!(p.integer(), Some(Slot::Saved(128)));
        // Describe(string, ID): RDI, then RSI and XMM0 for the split struct.
        let mut p = Placer::default();
        assert_eq!(p.integer(), Some(Slot::Saved(120)));
        assert_eq!(
            p.structure(16, Some(&[Integer, Sse])),
            Some(Slot::Struct {
                regs: [128, 56],
                count: 2,
                copy: 0
            })
        );
        // Nine doubles: eight XMM registers, the ninth on the stack; then a float struct
        // that no longer fits goes to the stack after it.
        let mut p = Placer::default();
        for i in 0..8 {
            assert_eq!(p.float(), Some(Slot::Saved(56 + 8 * i)));
        }
        assert_eq!(p.float(), Some(Slot::Stack(0)));
        assert_eq!(p.structure(16, Some(&[Sse, Sse])), Some(Slot::Stack(8)));
        assert_eq!(p.integer(), Some(Slot::Saved(120)));
        // A struct that cannot be classified: it and everything after are unplaced.
        let mut p = Placer::default();
        assert_eq!(p.structure(12, None), None);
        assert_eq!(p.integer(), None);
    }

    #[test]
    fn return_places_follow_the_return_registers() {
        use Class::*;
        assert_eq!(
            return_place(Returned::Integer, 8, None),
            Some(ReturnSlot::At(Slot::Saved(40)))
        );
        assert_eq!(
            return_place(Returned::Float, 8, None),
            Some(ReturnSlot::At(Slot::Saved(56)))
        );
        // ID(int, double) in RAX and XMM0; SMix(double, long) in XMM0 and RAX; S16 in RAX
        // and RDX; FFD in XMM0 and XMM1.
        let at = |regs: [u16; 2]| {
            Some(ReturnSlot::At(Slot::Struct {
                regs,
                count: 2,
                copy: 0,
            }))
        };
        assert_eq!(
            return_place(Returned::Other, 16, Some(&[Integer, Sse])),
            at([40, 56])
        );
        assert_eq!(
            return_place(Returned::Other, 16, Some(&[Sse, Integer])),
            at([56, 40])
        );
        assert_eq!(
            return_place(Returned::Other, 16, Some(&[Integer, Integer])),
            at([40, 136])
        );
        assert_eq!(
            return_place(Returned::Other, 16, Some(&[Sse, Sse])),
            at([56, 64])
        );
        assert_eq!(
            return_place(Returned::Other, 40, None),
            Some(ReturnSlot::Buffer)
        );
        assert_eq!(return_place(Returned::Other, 12, None), None);
    }

    #[test]
    fn return_values_in_registers() {
        assert_eq!(
            FRAME.return_slot(0x7000_1000 + RAX, Returned::Integer),
            Some(Slot::Saved(40))
        );
        // A one-eightbyte struct of floats comes back in xmm0, uncopied.
        assert_eq!(
            FRAME.return_slot(0x7000_1000 + 56, Returned::Other),
            Some(Slot::Saved(56))
        );
    }
}
