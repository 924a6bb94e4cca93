//! The CIL opcode table (ECMA-335 Partition III): every one-byte opcode and every
//! two-byte one after the `0xFE` prefix, with its name, operand form and stack effect.

/// An opcode: its value as it is written, `0x00..=0xE0` or `0xFE00..=0xFE1E`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OpCode(pub u16);

/// What follows an opcode in the code stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OperandKind {
    None,
    /// `ldc.i4.s`: a signed byte.
    I1,
    /// `ldarg.s`, `ldloc.s`, `unaligned.`, `no.`: an unsigned byte.
    U1,
    /// `ldarg`, `ldloc`, …: an unsigned 16-bit index.
    U2,
    I4,
    I8,
    R4,
    R8,
    /// A metadata token (method, field, type, string, signature).
    Token,
    /// A branch with a signed 8-bit displacement.
    ShortBranch,
    /// A branch with a signed 32-bit displacement.
    Branch,
    /// `switch`: a count, then that many 32-bit displacements.
    Switch,
}

impl OperandKind {
    /// Bytes the operand takes (`switch`: its count only; each target adds 4).
    pub fn size(self) -> usize {
        match self {
            OperandKind::None => 0,
            OperandKind::I1 | OperandKind::U1 | OperandKind::ShortBranch => 1,
            OperandKind::U2 => 2,
            OperandKind::I4
            | OperandKind::R4
            | OperandKind::Token
            | OperandKind::Branch
            | OperandKind::Switch => 4,
            OperandKind::I8 | OperandKind::R8 => 8,
        }
    }
}

/// How an instruction moves the evaluation stack. `Call` depends on the signature of its
/// operand (`call`, `callvirt`, `newobj`, `calli`), `Ret` on the method's own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StackEffect {
    Fixed {
        pops: u8,
        pushes: u8,
    },
    Call,
    Ret,
    /// `leave`, `endfinally`, `throw`, `rethrow`: empties the stack.
    Clear {
        pops: u8,
    },
}

/// How control leaves an instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// Falls through to the next instruction.
    Next,
    /// Branches only (`br`, `leave`).
    Branch,
    /// Branches or falls through (`brtrue`, `switch`, …).
    CondBranch,
    /// Leaves the method or the handler (`ret`, `throw`, `rethrow`, `endfinally`,
    /// `endfilter`, `jmp`).
    Exit,
    /// A prefix (`tail.`, `volatile.`, …): belongs to the next instruction.
    Prefix,
}

/// One row of the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpInfo {
    pub name: &'static str,
    pub operand: OperandKind,
    pub stack: StackEffect,
    pub flow: Flow,
}

const fn fixed(pops: u8, pushes: u8) -> StackEffect {
    StackEffect::Fixed { pops, pushes }
}

const fn op(name: &'static str, operand: OperandKind, stack: StackEffect, flow: Flow) -> OpInfo {
    OpInfo {
        name,
        operand,
        stack,
        flow,
    }
}

const fn simple(name: &'static str, pops: u8, pushes: u8) -> OpInfo {
    op(name, OperandKind::None, fixed(pops, pushes), Flow::Next)
}

const fn with(name: &'static str, operand: OperandKind, pops: u8, pushes: u8) -> OpInfo {
    op(name, operand, fixed(pops, pushes), Flow::Next)
}

const fn prefix(name: &'static str, operand: OperandKind) -> OpInfo {
    op(name, operand, fixed(0, 0), Flow::Prefix)
}

use OperandKind as K;

/// The one-byte opcodes `0x00..=0xE0`; `None` where the value is unassigned.
const ONE: [Option<OpInfo>; 0xE1] = {
    let mut t: [Option<OpInfo>; 0xE1] = [None; 0xE1];
    t[0x00] = Some(simple("nop", 0, 0));
    t[0x01] = Some(simple("break", 0, 0));
    t[0x02] = Some(simple("ldarg.0", 0, 1));
    t[0x03] = Some(simple("ldarg.1", 0, 1));
    t[0x04] = Some(simple("ldarg.2", 0, 1));
    t[0x05] = Some(simple("ldarg.3", 0, 1));
    t[0x06] = Some(simple("ldloc.0", 0, 1));
    t[0x07] = Some(simple("ldloc.1", 0, 1));
    t[0x08] = Some(simple("ldloc.2", 0, 1));
    t[0x09] = Some(simple("ldloc.3", 0, 1));
    t[0x0A] = Some(simple("stloc.0", 1, 0));
    t[0x0B] = Some(simple("stloc.1", 1, 0));
    t[0x0C] = Some(simple("stloc.2", 1, 0));
    t[0x0D] = Some(simple("stloc.3", 1, 0));
    t[0x0E] = Some(with("ldarg.s", K::U1, 0, 1));
    t[0x0F] = Some(with("ldarga.s", K::U1, 0, 1));
    t[0x10] = Some(with("starg.s", K::U1, 1, 0));
    t[0x11] = Some(with("ldloc.s", K::U1, 0, 1));
    t[0x12] = Some(with("ldloca.s", K::U1, 0, 1));
    t[0x13] = Some(with("stloc.s", K::U1, 1, 0));
    t[0x14] = Some(simple("ldnull", 0, 1));
    t[0x15] = Some(simple("ldc.i4.m1", 0, 1));
    t[0x16] = Some(simple("ldc.i4.0", 0, 1));
    t[0x17] = Some(simple("ldc.i4.1", 0, 1));
    t[0x18] = Some(simple("ldc.i4.2", 0, 1));
    t[0x19] = Some(simple("ldc.i4.3", 0, 1));
    t[0x1A] = Some(simple("ldc.i4.4", 0, 1));
    t[0x1B] = Some(simple("ldc.i4.5", 0, 1));
    t[0x1C] = Some(simple("ldc.i4.6", 0, 1));
    t[0x1D] = Some(simple("ldc.i4.7", 0, 1));
    t[0x1E] = Some(simple("ldc.i4.8", 0, 1));
    t[0x1F] = Some(with("ldc.i4.s", K::I1, 0, 1));
    t[0x20] = Some(with("ldc.i4", K::I4, 0, 1));
    t[0x21] = Some(with("ldc.i8", K::I8, 0, 1));
    t[0x22] = Some(with("ldc.r4", K::R4, 0, 1));
    t[0x23] = Some(with("ldc.r8", K::R8, 0, 1));
    t[0x25] = Some(simple("dup", 1, 2));
    t[0x26] = Some(simple("pop", 1, 0));
    // `jmp` needs an empty stack and hands the arguments over as they are.
    t[0x27] = Some(op("jmp", K::Token, fixed(0, 0), Flow::Exit));
    t[0x28] = Some(op("call", K::Token, StackEffect::Call, Flow::Next));
    t[0x29] = Some(op("calli", K::Token, StackEffect::Call, Flow::Next));
    t[0x2A] = Some(op("ret", K::None, StackEffect::Ret, Flow::Exit));
    t[0x2B] = Some(op("br.s", K::ShortBranch, fixed(0, 0), Flow::Branch));
    t[0x2C] = Some(op(
        "brfalse.s",
        K::ShortBranch,
        fixed(1, 0),
        Flow::CondBranch,
    ));
    t[0x2D] = Some(op(
        "brtrue.s",
        K::ShortBranch,
        fixed(1, 0),
        Flow::CondBranch,
    ));
    let mut i = 0;
    let cmp = [
        "beq", "bge", "bgt", "ble", "blt", "bne.un", "bge.un", "bgt.un", "ble.un", "blt.un",
    ];
    let cmp_s = [
        "beq.s", "bge.s", "bgt.s", "ble.s", "blt.s", "bne.un.s", "bge.un.s", "bgt.un.s",
        "ble.un.s", "blt.un.s",
    ];
    while i < 10 {
        t[0x2E + i] = Some(op(cmp_s[i], K::ShortBranch, fixed(2, 0), Flow::CondBranch));
        t[0x3B + i] = Some(op(cmp[i], K::Branch, fixed(2, 0), Flow::CondBranch));
        i += 1;
    }
    t[0x38] = Some(op("br", K::Branch, fixed(0, 0), Flow::Branch));
    t[0x39] = Some(op("brfalse", K::Branch, fixed(1, 0), Flow::CondBranch));
    t[0x3A] = Some(op("brtrue", K::Branch, fixed(1, 0), Flow::CondBranch));
    t[0x45] = Some(op("switch", K::Switch, fixed(1, 0), Flow::CondBranch));
    let ldind = [
        "ldind.i1",
        "ldind.u1",
        "ldind.i2",
        "ldind.u2",
        "ldind.i4",
        "ldind.u4",
        "ldind.i8",
        "ldind.i",
        "ldind.r4",
        "ldind.r8",
        "ldind.ref",
    ];
    i = 0;
    while i < 11 {
        t[0x46 + i] = Some(simple(ldind[i], 1, 1));
        i += 1;
    }
    let stind = [
        "stind.ref",
        "stind.i1",
        "stind.i2",
        "stind.i4",
        "stind.i8",
        "stind.r4",
        "stind.r8",
    ];
    i = 0;
    while i < 7 {
        t[0x51 + i] = Some(simple(stind[i], 2, 0));
        i += 1;
    }
    let binary = [
        "add", "sub", "mul", "div", "div.un", "rem", "rem.un", "and", "or", "xor", "shl", "shr",
        "shr.un",
    ];
    i = 0;
    while i < 13 {
        t[0x58 + i] = Some(simple(binary[i], 2, 1));
        i += 1;
    }
    t[0x65] = Some(simple("neg", 1, 1));
    t[0x66] = Some(simple("not", 1, 1));
    let conv = [
        "conv.i1", "conv.i2", "conv.i4", "conv.i8", "conv.r4", "conv.r8", "conv.u4", "conv.u8",
    ];
    i = 0;
    while i < 8 {
        t[0x67 + i] = Some(simple(conv[i], 1, 1));
        i += 1;
    }
    t[0x6F] = Some(op("callvirt", K::Token, StackEffect::Call, Flow::Next));
    t[0x70] = Some(with("cpobj", K::Token, 2, 0));
    t[0x71] = Some(with("ldobj", K::Token, 1, 1));
    t[0x72] = Some(with("ldstr", K::Token, 0, 1));
    t[0x73] = Some(op("newobj", K::Token, StackEffect::Call, Flow::Next));
    t[0x74] = Some(with("castclass", K::Token, 1, 1));
    t[0x75] = Some(with("isinst", K::Token, 1, 1));
    t[0x76] = Some(simple("conv.r.un", 1, 1));
    t[0x79] = Some(with("unbox", K::Token, 1, 1));
    t[0x7A] = Some(op(
        "throw",
        K::None,
        StackEffect::Clear { pops: 1 },
        Flow::Exit,
    ));
    t[0x7B] = Some(with("ldfld", K::Token, 1, 1));
    t[0x7C] = Some(with("ldflda", K::Token, 1, 1));
    t[0x7D] = Some(with("stfld", K::Token, 2, 0));
    t[0x7E] = Some(with("ldsfld", K::Token, 0, 1));
    t[0x7F] = Some(with("ldsflda", K::Token, 0, 1));
    t[0x80] = Some(with("stsfld", K::Token, 1, 0));
    t[0x81] = Some(with("stobj", K::Token, 2, 0));
    let conv_ovf_un = [
        "conv.ovf.i1.un",
        "conv.ovf.i2.un",
        "conv.ovf.i4.un",
        "conv.ovf.i8.un",
        "conv.ovf.u1.un",
        "conv.ovf.u2.un",
        "conv.ovf.u4.un",
        "conv.ovf.u8.un",
        "conv.ovf.i.un",
        "conv.ovf.u.un",
    ];
    i = 0;
    while i < 10 {
        t[0x82 + i] = Some(simple(conv_ovf_un[i], 1, 1));
        i += 1;
    }
    t[0x8C] = Some(with("box", K::Token, 1, 1));
    t[0x8D] = Some(with("newarr", K::Token, 1, 1));
    t[0x8E] = Some(simple("ldlen", 1, 1));
    t[0x8F] = Some(with("ldelema", K::Token, 2, 1));
    let ldelem = [
        "ldelem.i1",
        "ldelem.u1",
        "ldelem.i2",
        "ldelem.u2",
        "ldelem.i4",
        "ldelem.u4",
        "ldelem.i8",
        "ldelem.i",
        "ldelem.r4",
        "ldelem.r8",
        "ldelem.ref",
    ];
    i = 0;
    while i < 11 {
        t[0x90 + i] = Some(simple(ldelem[i], 2, 1));
        i += 1;
    }
    let stelem = [
        "stelem.i",
        "stelem.i1",
        "stelem.i2",
        "stelem.i4",
        "stelem.i8",
        "stelem.r4",
        "stelem.r8",
        "stelem.ref",
    ];
    i = 0;
    while i < 8 {
        t[0x9B + i] = Some(simple(stelem[i], 3, 0));
        i += 1;
    }
    t[0xA3] = Some(with("ldelem", K::Token, 2, 1));
    t[0xA4] = Some(with("stelem", K::Token, 3, 0));
    t[0xA5] = Some(with("unbox.any", K::Token, 1, 1));
    let conv_ovf = [
        "conv.ovf.i1",
        "conv.ovf.u1",
        "conv.ovf.i2",
        "conv.ovf.u2",
        "conv.ovf.i4",
        "conv.ovf.u4",
        "conv.ovf.i8",
        "conv.ovf.u8",
    ];
    i = 0;
    while i < 8 {
        t[0xB3 + i] = Some(simple(conv_ovf[i], 1, 1));
        i += 1;
    }
    t[0xC2] = Some(with("refanyval", K::Token, 1, 1));
    t[0xC3] = Some(simple("ckfinite", 1, 1));
    t[0xC6] = Some(with("mkrefany", K::Token, 1, 1));
    t[0xD0] = Some(with("ldtoken", K::Token, 0, 1));
    t[0xD1] = Some(simple("conv.u2", 1, 1));
    t[0xD2] = Some(simple("conv.u1", 1, 1));
    t[0xD3] = Some(simple("conv.i", 1, 1));
    t[0xD4] = Some(simple("conv.ovf.i", 1, 1));
    t[0xD5] = Some(simple("conv.ovf.u", 1, 1));
    let arith_ovf = [
        "add.ovf",
        "add.ovf.un",
        "mul.ovf",
        "mul.ovf.un",
        "sub.ovf",
        "sub.ovf.un",
    ];
    i = 0;
    while i < 6 {
        t[0xD6 + i] = Some(simple(arith_ovf[i], 2, 1));
        i += 1;
    }
    t[0xDC] = Some(op(
        "endfinally",
        K::None,
        StackEffect::Clear { pops: 0 },
        Flow::Exit,
    ));
    t[0xDD] = Some(op(
        "leave",
        K::Branch,
        StackEffect::Clear { pops: 0 },
        Flow::Branch,
    ));
    t[0xDE] = Some(op(
        "leave.s",
        K::ShortBranch,
        StackEffect::Clear { pops: 0 },
        Flow::Branch,
    ));
    t[0xDF] = Some(simple("stind.i", 2, 0));
    t[0xE0] = Some(simple("conv.u", 1, 1));
    t
};

/// The two-byte opcodes `0xFE00..=0xFE1E`, by their second byte.
const TWO: [Option<OpInfo>; 0x1F] = {
    let mut t: [Option<OpInfo>; 0x1F] = [None; 0x1F];
    t[0x00] = Some(simple("arglist", 0, 1));
    t[0x01] = Some(simple("ceq", 2, 1));
    t[0x02] = Some(simple("cgt", 2, 1));
    t[0x03] = Some(simple("cgt.un", 2, 1));
    t[0x04] = Some(simple("clt", 2, 1));
    t[0x05] = Some(simple("clt.un", 2, 1));
    t[0x06] = Some(with("ldftn", K::Token, 0, 1));
    t[0x07] = Some(with("ldvirtftn", K::Token, 1, 1));
    t[0x09] = Some(with("ldarg", K::U2, 0, 1));
    t[0x0A] = Some(with("ldarga", K::U2, 0, 1));
    t[0x0B] = Some(with("starg", K::U2, 1, 0));
    t[0x0C] = Some(with("ldloc", K::U2, 0, 1));
    t[0x0D] = Some(with("ldloca", K::U2, 0, 1));
    t[0x0E] = Some(with("stloc", K::U2, 1, 0));
    t[0x0F] = Some(simple("localloc", 1, 1));
    t[0x11] = Some(op("endfilter", K::None, fixed(1, 0), Flow::Exit));
    t[0x12] = Some(prefix("unaligned.", K::U1));
    t[0x13] = Some(prefix("volatile.", K::None));
    t[0x14] = Some(prefix("tail.", K::None));
    t[0x15] = Some(with("initobj", K::Token, 1, 0));
    t[0x16] = Some(prefix("constrained.", K::Token));
    t[0x17] = Some(simple("cpblk", 3, 0));
    t[0x18] = Some(simple("initblk", 3, 0));
    t[0x19] = Some(prefix("no.", K::U1));
    t[0x1A] = Some(op(
        "rethrow",
        K::None,
        StackEffect::Clear { pops: 0 },
        Flow::Exit,
    ));
    t[0x1C] = Some(with("sizeof", K::Token, 0, 1));
    t[0x1D] = Some(simple("refanytype", 1, 1));
    t[0x1E] = Some(prefix("readonly.", K::None));
    t
};

impl OpCode {
    pub const NOP: OpCode = OpCode(0x00);
    pub const LDARG_0: OpCode = OpCode(0x02);
    pub const LDLOC_S: OpCode = OpCode(0x11);
    pub const LDLOCA_S: OpCode = OpCode(0x12);
    pub const STLOC_S: OpCode = OpCode(0x13);
    pub const LDC_I4: OpCode = OpCode(0x20);
    pub const LDC_I8: OpCode = OpCode(0x21);
    pub const POP: OpCode = OpCode(0x26);
    pub const JMP: OpCode = OpCode(0x27);
    pub const CALL: OpCode = OpCode(0x28);
    pub const CALLI: OpCode = OpCode(0x29);
    pub const RET: OpCode = OpCode(0x2A);
    pub const BR_S: OpCode = OpCode(0x2B);
    pub const BR: OpCode = OpCode(0x38);
    pub const BRTRUE: OpCode = OpCode(0x3A);
    pub const SWITCH: OpCode = OpCode(0x45);
    pub const CALLVIRT: OpCode = OpCode(0x6F);
    pub const NEWOBJ: OpCode = OpCode(0x73);
    pub const THROW: OpCode = OpCode(0x7A);
    pub const CONV_I: OpCode = OpCode(0xD3);
    pub const ENDFINALLY: OpCode = OpCode(0xDC);
    pub const LEAVE: OpCode = OpCode(0xDD);
    pub const LEAVE_S: OpCode = OpCode(0xDE);
    pub const LDLOC: OpCode = OpCode(0xFE0C);
    pub const LDLOCA: OpCode = OpCode(0xFE0D);
    pub const STLOC: OpCode = OpCode(0xFE0E);
    pub const ENDFILTER: OpCode = OpCode(0xFE11);
    pub const TAIL: OpCode = OpCode(0xFE14);

    /// Its row of the table, `None` for an unassigned value.
    pub fn info(self) -> Option<&'static OpInfo> {
        match self.0 {
            v @ 0..=0xE0 => ONE[v as usize].as_ref(),
            v @ 0xFE00..=0xFE1E => TWO[(v & 0xFF) as usize].as_ref(),
            _ => None,
        }
    }

    /// Its name (`"?"` for an unassigned value, which [`crate::Body::parse`] refuses).
    pub fn name(self) -> &'static str {
        self.info().map_or("?", |i| i.name)
    }

    /// Its operand form ([`OperandKind::None`] for an unassigned value).
    pub fn operand(self) -> OperandKind {
        self.info().map_or(OperandKind::None, |i| i.operand)
    }

    /// Bytes the opcode itself takes: 2 after the `0xFE` prefix, else 1.
    pub fn size(self) -> usize {
        if self.0 > 0xFF { 2 } else { 1 }
    }

    /// The long form of a short branch (`br.s` → `br`, `leave.s` → `leave`), else itself.
    pub fn long_form(self) -> OpCode {
        match self.0 {
            0x2B..=0x37 => OpCode(self.0 + 13),
            0xDE => OpCode::LEAVE,
            _ => self,
        }
    }

    /// Every assigned opcode, one-byte ones first.
    pub fn all() -> impl Iterator<Item = OpCode> {
        (0u16..=0xE0)
            .chain(0xFE00..=0xFE1E)
            .map(OpCode)
            .filter(|o| o.info().is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_has_every_opcode_of_the_standard() {
        // ECMA-335 Partition III lists 219 opcodes (including the prefixes).
        let one = OpCode::all().filter(|o| o.0 <= 0xFF).count();
        let two = OpCode::all().filter(|o| o.0 > 0xFF).count();
        assert_eq!((one, two), (191, 28));
        let mut names: Vec<_> = OpCode::all().map(OpCode::name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), 219, "names are unique");
    }

    #[test]
    fn every_short_branch_has_a_long_form_with_the_same_meaning() {
        for o in OpCode::all().filter(|o| o.operand() == OperandKind::ShortBranch) {
            let l = o.long_form();
            assert_eq!(l.operand(), OperandKind::Branch, "{}", o.name());
            assert_eq!(format!("{}.s", l.name()), o.name());
            assert_eq!(l.info().unwrap().stack, o.info().unwrap().stack);
            assert_eq!(l.info().unwrap().flow, o.info().unwrap().flow);
        }
    }
}
