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
//! A range is only turned into a slot where the runtime points at data the stub saved,
//! never at data the runtime copies during the call: structs split across registers are
//! copied into a scratch buffer after the register block, and a `float`/`double` return
//! value is copied from `xmm0` into the `rax` slot. Such functions keep asking the
//! runtime on every call. Any disagreement between the runtime's answer and the learned
//! slots switches the function back to asking, for good, and is counted.

/// The offsets below are the Unix x64 layout; elsewhere nothing is learned.
const LAYOUT_KNOWN: bool = cfg!(all(target_arch = "x86_64", target_os = "linux"));

/// Byte offsets inside the stub's saved block (`PROFILE_PLATFORM_SPECIFIC_DATA`, Unix
/// x64): `rax` at 40, `flt0`…`flt7` at 56…112, `rdi`…`r9` at 120…160, `flags` at 168,
/// the copy buffer after it.
const RAX: usize = 40;
const REGISTERS: std::ops::Range<usize> = 56..168;
/// Stack arguments lie within this many bytes above `profiledRsp`.
const STACK_SPAN: usize = 4096;

/// An argument's or return value's place, relative to the stub's frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    /// Offset into the saved register block.
    Saved(u16),
    /// Offset from the profiled method's caller SP (stack-passed arguments).
    Stack(u16),
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
    pub fn address(&self, slot: Slot) -> usize {
        match slot {
            Slot::Saved(o) => self.saved + usize::from(o),
            Slot::Stack(o) => self.profiled_sp + usize::from(o),
        }
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

    /// The slot of a return value at `start`. `rax` holds the value as saved only when the
    /// runtime did not copy a floating-point result into it (`copied_into_rax`).
    pub fn return_slot(&self, start: usize, copied_into_rax: bool) -> Option<Slot> {
        if !LAYOUT_KNOWN {
            return None;
        }
        match start.checked_sub(self.saved) {
            Some(RAX) if !copied_into_rax => Some(Slot::Saved(RAX as u16)),
            Some(o) if REGISTERS.contains(&o) => Some(Slot::Saved(o as u16)),
            _ => None,
        }
    }
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
        assert_eq!(FRAME.address(Slot::Saved(120)), 0x7000_1000 + 120);
    }

    #[test]
    fn copies_made_by_the_runtime_are_not_slots() {
        // The struct buffer after `flags`, and the fields before the registers.
        assert_eq!(FRAME.argument_slot(0x7000_1000 + 176), None);
        assert_eq!(FRAME.argument_slot(0x7000_1000 + 168), None);
        assert_eq!(FRAME.argument_slot(0x7000_1000 + RAX), None);
        assert_eq!(FRAME.return_slot(0x7000_1000 + 176, false), None);
        // A double result copied from xmm0 into rax.
        assert_eq!(FRAME.return_slot(0x7000_1000 + RAX, true), None);
    }

    #[test]
    fn stack_arguments_are_relative_to_the_caller_sp() {
        assert_eq!(FRAME.argument_slot(0x7000_2008), Some(Slot::Stack(8)));
        assert_eq!(FRAME.address(Slot::Stack(8)), 0x7000_2008);
        assert_eq!(FRAME.argument_slot(0x7000_2000 + STACK_SPAN), None);
        assert_eq!(FRAME.argument_slot(0x10), None);
    }

    #[test]
    fn return_values_in_registers() {
        assert_eq!(
            FRAME.return_slot(0x7000_1000 + RAX, false),
            Some(Slot::Saved(40))
        );
        // A one-eightbyte struct of floats comes back in xmm0, uncopied.
        assert_eq!(
            FRAME.return_slot(0x7000_1000 + 56, true),
            Some(Slot::Saved(56))
        );
    }
}
