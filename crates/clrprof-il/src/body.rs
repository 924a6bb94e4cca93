//! A method body (ECMA-335 §II.25.4): its header, its instructions with labels in place of
//! branch displacements, and its exception clauses; parsed from bytes and encoded back.

use crate::error::IlError;
use crate::opcode::{OpCode, OperandKind};

/// An instruction's identity: branches, `switch` tables and exception clauses point at
/// labels, never at offsets, so code can be inserted without breaking them. A parsed
/// body's instruction `i` has label `i`; [`Body::instr`] hands out new ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Label(pub u32);

impl Label {
    /// The end of the code: where a clause that reaches the last instruction ends.
    pub const END: Label = Label(u32::MAX);
}

/// What follows an opcode, with branch targets as labels.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Operand {
    None,
    I1(i8),
    U1(u8),
    U2(u16),
    I4(i32),
    I8(i64),
    /// `ldc.r4`'s bits, so that every value (NaN payloads too) survives.
    R4(u32),
    /// `ldc.r8`'s bits.
    R8(u64),
    Token(u32),
    Target(Label),
    Switch(Vec<Label>),
}

impl Operand {
    fn fits(&self, kind: OperandKind) -> bool {
        matches!(
            (self, kind),
            (Operand::None, OperandKind::None)
                | (Operand::I1(_), OperandKind::I1)
                | (Operand::U1(_), OperandKind::U1)
                | (Operand::U2(_), OperandKind::U2)
                | (Operand::I4(_), OperandKind::I4)
                | (Operand::I8(_), OperandKind::I8)
                | (Operand::R4(_), OperandKind::R4)
                | (Operand::R8(_), OperandKind::R8)
                | (Operand::Token(_), OperandKind::Token)
                | (
                    Operand::Target(_),
                    OperandKind::ShortBranch | OperandKind::Branch
                )
                | (Operand::Switch(_), OperandKind::Switch)
        )
    }
}

/// One instruction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Instr {
    pub label: Label,
    pub op: OpCode,
    pub operand: Operand,
}

/// What an exception clause handles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClauseKind {
    /// `catch` of the type token.
    Catch(u32),
    /// A filter starting at the label; its handler follows it.
    Filter(Label),
    Finally,
    Fault,
}

/// An exception clause: a protected range `[try_start, try_end)` and its handler
/// `[handler_start, handler_end)`, ends exclusive (an instruction's label or [`Label::END`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Clause {
    pub kind: ClauseKind,
    pub try_start: Label,
    pub try_end: Label,
    pub handler_start: Label,
    pub handler_end: Label,
    /// The class-token field of a finally or fault clause, which means nothing but is
    /// written back as it was read.
    unused: u32,
}

impl Clause {
    pub fn new(
        kind: ClauseKind,
        try_start: Label,
        try_end: Label,
        handler_start: Label,
        handler_end: Label,
    ) -> Clause {
        Clause {
            kind,
            try_start,
            try_end,
            handler_start,
            handler_end,
            unused: 0,
        }
    }

    fn flags(&self) -> u32 {
        match self.kind {
            ClauseKind::Catch(_) => 0,
            ClauseKind::Filter(_) => 1,
            ClauseKind::Finally => 2,
            ClauseKind::Fault => 4,
        }
    }
}

/// The header's facts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub max_stack: u16,
    /// The `StandAloneSig` token of the locals, 0 without locals.
    pub local_sig: u32,
    /// `CorILMethod_InitLocals`: locals are zeroed on entry.
    pub init_locals: bool,
    /// Read from a fat header (a body that could be tiny is written tiny unless this).
    pub fat: bool,
    /// Flag bits of a fat header other than its format, `MoreSects` and `InitLocals`,
    /// kept as read.
    pub other_flags: u16,
}

/// How the clauses were laid out in sections, to write them back the same way.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Sections(Vec<(bool, usize)>);

/// A method body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Body {
    pub header: Header,
    pub code: Vec<Instr>,
    pub clauses: Vec<Clause>,
    sections: Sections,
    next_label: u32,
}

const TINY: u8 = 0x2;
const FAT: u16 = 0x3;
const MORE_SECTS: u16 = 0x8;
const INIT_LOCALS: u16 = 0x10;
const SECT_EH: u8 = 0x1;
const SECT_FAT: u8 = 0x40;
const SECT_MORE: u8 = 0x80;
/// ECMA-335's limit on a body's code is the 32-bit size field; this crate refuses bodies
/// over 256 MiB, which no compiler writes, so offsets never overflow.
const MAX_CODE: usize = 1 << 28;

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], IlError> {
        let s = self
            .at
            .checked_add(n)
            .and_then(|end| self.b.get(self.at..end))
            .ok_or(IlError::truncated(self.at, what))?;
        self.at += n;
        Ok(s)
    }
    fn u8(&mut self, what: &'static str) -> Result<u8, IlError> {
        Ok(self.take(1, what)?[0])
    }
    fn u16(&mut self, what: &'static str) -> Result<u16, IlError> {
        let s = self.take(2, what)?;
        Ok(u16::from_le_bytes([s[0], s[1]]))
    }
    fn u32(&mut self, what: &'static str) -> Result<u32, IlError> {
        let s = self.take(4, what)?;
        Ok(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
    }
    fn u64(&mut self, what: &'static str) -> Result<u64, IlError> {
        let s = self.take(8, what)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(s);
        Ok(u64::from_le_bytes(a))
    }
}

/// An operand as read, branch targets as absolute code offsets (i64: a displacement can
/// point anywhere, checked after all instructions are known).
enum RawOperand {
    Done(Operand),
    Target(i64),
    Switch(Vec<i64>),
}

impl Body {
    /// Parses the body at the start of `bytes` (which may continue past it).
    pub fn parse(bytes: &[u8]) -> Result<Body, IlError> {
        Body::parse_with_len(bytes).map(|(b, _)| b)
    }

    /// [`Body::parse`], and how many bytes the body took (header, code, padding and
    /// exception sections).
    pub fn parse_with_len(bytes: &[u8]) -> Result<(Body, usize), IlError> {
        let mut r = Reader { b: bytes, at: 0 };
        let first = r.u8("no header")?;
        let (header, code_size, more) = match first & 0x3 {
            0x2 => (
                Header {
                    max_stack: 8,
                    local_sig: 0,
                    init_locals: false,
                    fat: false,
                    other_flags: 0,
                },
                usize::from(first >> 2),
                false,
            ),
            0x3 => {
                r.at = 0;
                let flags_size = r.u16("short fat header")?;
                if flags_size >> 12 != 3 {
                    return Err(IlError::malformed(0, "fat header size is not 3 dwords"));
                }
                let flags = flags_size & 0xFFF;
                let max_stack = r.u16("short fat header")?;
                let code_size = r.u32("short fat header")? as usize;
                let local_sig = r.u32("short fat header")?;
                if code_size > MAX_CODE {
                    return Err(IlError::malformed(4, "code size over 256 MiB"));
                }
                (
                    Header {
                        max_stack,
                        local_sig,
                        init_locals: flags & INIT_LOCALS != 0,
                        fat: true,
                        other_flags: flags & !(FAT | MORE_SECTS | INIT_LOCALS),
                    },
                    code_size,
                    flags & MORE_SECTS != 0,
                )
            }
            _ => return Err(IlError::malformed(0, "not a tiny or fat header")),
        };
        let code_start = r.at;
        let code = r.take(code_size, "code shorter than its header says")?;
        let (raw, offsets) = decode_code(code, code_start)?;

        // Offsets of instruction starts, for labels; the end of the code is END.
        let label_at = |offset: i64, at: usize, what: &'static str| -> Result<Label, IlError> {
            if offset == code_size as i64 {
                return Ok(Label::END);
            }
            let o = u32::try_from(offset).map_err(|_| IlError::malformed(at, what))?;
            offsets
                .binary_search(&o)
                .map(|i| Label(i as u32))
                .map_err(|_| IlError::malformed(at, what))
        };
        let mut instrs = Vec::with_capacity(raw.len());
        for (i, (op, operand)) in raw.into_iter().enumerate() {
            let at = code_start + offsets[i] as usize;
            let target = |t: i64| -> Result<Label, IlError> {
                match label_at(t, at, "branch to no instruction start")? {
                    Label::END => Err(IlError::malformed(at, "branch past the last instruction")),
                    l => Ok(l),
                }
            };
            let operand = match operand {
                RawOperand::Done(o) => o,
                RawOperand::Target(t) => Operand::Target(target(t)?),
                RawOperand::Switch(ts) => {
                    Operand::Switch(ts.into_iter().map(target).collect::<Result<_, _>>()?)
                }
            };
            instrs.push(Instr {
                label: Label(i as u32),
                op,
                operand,
            });
        }

        let mut clauses = Vec::new();
        let mut sections = Vec::new();
        let mut more = more;
        while more {
            r.at = r.at.div_ceil(4) * 4;
            let sect_at = r.at;
            let kind = r.u8("no section header")?;
            if kind & SECT_EH == 0 {
                return Err(IlError::unsupported_at(
                    sect_at,
                    "a section that is not an exception table",
                ));
            }
            if kind & !(SECT_EH | SECT_FAT | SECT_MORE) != 0 {
                return Err(IlError::malformed(sect_at, "unknown section flags"));
            }
            let fat = kind & SECT_FAT != 0;
            let (size, entry) = if fat {
                let s = r.take(3, "short section header")?;
                (
                    usize::from(s[0]) | usize::from(s[1]) << 8 | usize::from(s[2]) << 16,
                    24,
                )
            } else {
                let s = usize::from(r.u8("short section header")?);
                r.u16("short section header")?;
                (s, 12)
            };
            if size < 4 || (size - 4) % entry != 0 {
                return Err(IlError::malformed(
                    sect_at,
                    "section size is not a whole number of clauses",
                ));
            }
            let count = (size - 4) / entry;
            for _ in 0..count {
                let at = r.at;
                let (flags, t_off, t_len, h_off, h_len) = if fat {
                    (
                        r.u32("short clause")?,
                        r.u32("short clause")?,
                        r.u32("short clause")?,
                        r.u32("short clause")?,
                        r.u32("short clause")?,
                    )
                } else {
                    (
                        u32::from(r.u16("short clause")?),
                        u32::from(r.u16("short clause")?),
                        u32::from(r.u8("short clause")?),
                        u32::from(r.u16("short clause")?),
                        u32::from(r.u8("short clause")?),
                    )
                };
                let extra = r.u32("short clause")?;
                let range = |o: u32, len: u32| -> Result<(Label, Label), IlError> {
                    let end = i64::from(o) + i64::from(len);
                    Ok((
                        label_at(i64::from(o), at, "clause starts at no instruction")?,
                        label_at(end, at, "clause ends at no instruction")?,
                    ))
                };
                let (try_start, try_end) = range(t_off, t_len)?;
                let (handler_start, handler_end) = range(h_off, h_len)?;
                if try_start == Label::END || handler_start == Label::END {
                    return Err(IlError::malformed(
                        at,
                        "clause starts at the end of the code",
                    ));
                }
                let (kind, unused) = match flags {
                    0 => (ClauseKind::Catch(extra), 0),
                    1 => match label_at(i64::from(extra), at, "filter starts at no instruction")? {
                        Label::END => {
                            return Err(IlError::malformed(
                                at,
                                "filter starts at the end of the code",
                            ));
                        }
                        l => (ClauseKind::Filter(l), 0),
                    },
                    2 => (ClauseKind::Finally, extra),
                    4 => (ClauseKind::Fault, extra),
                    _ => return Err(IlError::malformed(at, "unknown clause kind")),
                };
                clauses.push(Clause {
                    kind,
                    try_start,
                    try_end,
                    handler_start,
                    handler_end,
                    unused,
                });
            }
            sections.push((fat, count));
            more = kind & SECT_MORE != 0;
        }
        let next_label = instrs.len() as u32;
        Ok((
            Body {
                header,
                code: instrs,
                clauses,
                sections: Sections(sections),
                next_label,
            },
            r.at,
        ))
    }

    /// A new instruction with a label no other instruction of this body has.
    pub fn instr(&mut self, op: OpCode, operand: Operand) -> Instr {
        let label = Label(self.next_label);
        self.next_label += 1;
        Instr { label, op, operand }
    }

    /// Where the instruction labelled `label` is in [`Body::code`].
    pub fn index_of(&self, label: Label) -> Option<usize> {
        self.code.iter().position(|i| i.label == label)
    }

    /// Inserts `code` before the instruction labelled `before` ([`Label::END`]: at the
    /// end). Branches and clauses that pointed at `before` still do; see
    /// [`Body::retarget`] to send them to the inserted code.
    pub fn insert_before(&mut self, before: Label, code: Vec<Instr>) -> Result<(), IlError> {
        let at = if before == Label::END {
            self.code.len()
        } else {
            self.index_of(before).ok_or(IlError::invalid(
                "insertion before a label no instruction has",
            ))?
        };
        self.code.splice(at..at, code);
        Ok(())
    }

    /// Makes every branch, `switch` entry and clause boundary that points at `from`
    /// point at `to`.
    pub fn retarget(&mut self, from: Label, to: Label) {
        let swap = |l: &mut Label| {
            if *l == from {
                *l = to;
            }
        };
        for i in &mut self.code {
            match &mut i.operand {
                Operand::Target(l) => swap(l),
                Operand::Switch(ls) => ls.iter_mut().for_each(swap),
                _ => {}
            }
        }
        for c in &mut self.clauses {
            swap(&mut c.try_start);
            swap(&mut c.try_end);
            swap(&mut c.handler_start);
            swap(&mut c.handler_end);
            if let ClauseKind::Filter(l) = &mut c.kind {
                swap(l);
            }
        }
    }

    /// Each instruction's code offset under the forms [`Body::encode`] writes (short
    /// branches widened where their distance needs it), and the code size last.
    pub fn offsets(&self) -> Result<Vec<u32>, IlError> {
        Ok(self.layout()?.1)
    }

    /// The opcodes as written (widened where needed) and the offsets.
    fn layout(&self) -> Result<(Vec<OpCode>, Vec<u32>), IlError> {
        let mut index = vec![u32::MAX; self.next_label as usize];
        for (i, ins) in self.code.iter().enumerate() {
            let slot = index
                .get_mut(ins.label.0 as usize)
                .ok_or(IlError::invalid("a label this body did not hand out"))?;
            if *slot != u32::MAX {
                return Err(IlError::invalid("two instructions with the same label"));
            }
            *slot = i as u32;
            let kind = ins
                .op
                .info()
                .ok_or(IlError::invalid("an unassigned opcode"))?
                .operand;
            if !ins.operand.fits(kind) {
                return Err(IlError::invalid("an operand that does not fit its opcode"));
            }
        }
        let pos = |l: Label| -> Result<usize, IlError> {
            index
                .get(l.0 as usize)
                .filter(|&&i| i != u32::MAX)
                .map(|&i| i as usize)
                .ok_or(IlError::invalid("a branch to a label no instruction has"))
        };
        let mut ops: Vec<OpCode> = self.code.iter().map(|i| i.op).collect();
        loop {
            let offsets = offsets_of(&self.code, &ops)?;
            let mut widened = false;
            for (i, ins) in self.code.iter().enumerate() {
                if ops[i].operand() != OperandKind::ShortBranch {
                    continue;
                }
                let Operand::Target(t) = ins.operand else {
                    unreachable!("checked by fits")
                };
                let next = i64::from(offsets[i + 1]);
                let delta = i64::from(offsets[pos(t)?]) - next;
                if i8::try_from(delta).is_err() {
                    ops[i] = ops[i].long_form();
                    widened = true;
                }
            }
            if !widened {
                // Every branch target and clause label must exist.
                for ins in &self.code {
                    if let Operand::Switch(ts) = &ins.operand {
                        for &t in ts {
                            pos(t)?;
                        }
                    }
                }
                for c in &self.clauses {
                    for l in [c.try_start, c.try_end, c.handler_start, c.handler_end] {
                        if l != Label::END {
                            pos(l)?;
                        }
                    }
                    if let ClauseKind::Filter(l) = c.kind {
                        pos(l)?;
                    }
                }
                return Ok((ops, offsets));
            }
        }
    }

    /// The body's bytes: header, code, and exception sections (4-byte aligned from the
    /// first header byte, padded with zeros). A parsed body that was not changed encodes
    /// to the bytes it was read from.
    pub fn encode(&self) -> Result<Vec<u8>, IlError> {
        let (ops, offsets) = self.layout()?;
        let code_size = *offsets.last().unwrap_or(&0) as usize;
        if code_size > MAX_CODE {
            return Err(IlError::invalid("code over 256 MiB"));
        }
        let mut index = vec![0u32; self.next_label as usize];
        for (i, ins) in self.code.iter().enumerate() {
            index[ins.label.0 as usize] = i as u32;
        }
        let off = |l: Label| -> u32 {
            if l == Label::END {
                code_size as u32
            } else {
                offsets[index[l.0 as usize] as usize]
            }
        };
        let h = &self.header;
        let tiny = !h.fat
            && code_size < 64
            && h.max_stack <= 8
            && h.local_sig == 0
            && !h.init_locals
            && h.other_flags == 0
            && self.clauses.is_empty();
        let mut out = Vec::with_capacity(12 + code_size + 16 + self.clauses.len() * 24);
        if tiny {
            out.push(((code_size as u8) << 2) | TINY);
        } else {
            let mut flags = FAT | (h.other_flags & 0xFFF & !(FAT | MORE_SECTS | INIT_LOCALS));
            if h.init_locals {
                flags |= INIT_LOCALS;
            }
            if !self.clauses.is_empty() {
                flags |= MORE_SECTS;
            }
            out.extend_from_slice(&(flags | (3 << 12)).to_le_bytes());
            out.extend_from_slice(&h.max_stack.to_le_bytes());
            out.extend_from_slice(&(code_size as u32).to_le_bytes());
            out.extend_from_slice(&h.local_sig.to_le_bytes());
        }
        for (i, ins) in self.code.iter().enumerate() {
            let op = ops[i];
            if op.0 > 0xFF {
                out.push(0xFE);
            }
            out.push(op.0 as u8);
            let next = i64::from(offsets[i + 1]);
            match &ins.operand {
                Operand::None => {}
                Operand::I1(v) => out.push(*v as u8),
                Operand::U1(v) => out.push(*v),
                Operand::U2(v) => out.extend_from_slice(&v.to_le_bytes()),
                Operand::I4(v) => out.extend_from_slice(&v.to_le_bytes()),
                Operand::I8(v) => out.extend_from_slice(&v.to_le_bytes()),
                Operand::R4(v) => out.extend_from_slice(&v.to_le_bytes()),
                Operand::R8(v) => out.extend_from_slice(&v.to_le_bytes()),
                Operand::Token(v) => out.extend_from_slice(&v.to_le_bytes()),
                Operand::Target(t) => {
                    let delta = i64::from(off(*t)) - next;
                    if op.operand() == OperandKind::ShortBranch {
                        out.push(delta as i8 as u8);
                    } else {
                        out.extend_from_slice(&(delta as i32).to_le_bytes());
                    }
                }
                Operand::Switch(ts) => {
                    out.extend_from_slice(&(ts.len() as u32).to_le_bytes());
                    for t in ts {
                        let delta = i64::from(off(*t)) - next;
                        out.extend_from_slice(&(delta as i32).to_le_bytes());
                    }
                }
            }
        }
        if self.clauses.is_empty() {
            return Ok(out);
        }
        // Clause offsets and lengths, checked.
        let mut rows = Vec::with_capacity(self.clauses.len());
        for c in &self.clauses {
            let (ts, te, hs, he) = (
                off(c.try_start),
                off(c.try_end),
                off(c.handler_start),
                off(c.handler_end),
            );
            if te < ts || he < hs {
                return Err(IlError::invalid("a clause that ends before it starts"));
            }
            let extra = match c.kind {
                ClauseKind::Catch(t) => t,
                ClauseKind::Filter(l) => off(l),
                ClauseKind::Finally | ClauseKind::Fault => c.unused,
            };
            rows.push((c.flags(), ts, te - ts, hs, he - hs, extra));
        }
        let small_ok = |r: &(u32, u32, u32, u32, u32, u32)| {
            r.1 <= 0xFFFF && r.2 <= 0xFF && r.3 <= 0xFFFF && r.4 <= 0xFF
        };
        // The sections as read when they still hold these clauses, else one section.
        let layout: Vec<(bool, usize)> = {
            let kept = &self.sections.0;
            let mut start = 0;
            let fits = kept.iter().map(|s| s.1).sum::<usize>() == rows.len()
                && kept.iter().all(|&(fat, n)| {
                    let ok = fat || (n <= 20 && rows[start..start + n].iter().all(small_ok));
                    start += n;
                    ok
                });
            if fits {
                kept.clone()
            } else {
                vec![(!(rows.len() <= 20 && rows.iter().all(small_ok)), rows.len())]
            }
        };
        let mut start = 0;
        for (s, &(fat, n)) in layout.iter().enumerate() {
            while out.len() % 4 != 0 {
                out.push(0);
            }
            let more = if s + 1 < layout.len() { SECT_MORE } else { 0 };
            let chunk = &rows[start..start + n];
            start += n;
            if fat {
                let size = 4 + n * 24;
                if size >= 1 << 24 {
                    return Err(IlError::invalid("too many exception clauses"));
                }
                out.push(SECT_EH | SECT_FAT | more);
                out.extend_from_slice(&(size as u32).to_le_bytes()[..3]);
                for r in chunk {
                    for v in [r.0, r.1, r.2, r.3, r.4, r.5] {
                        out.extend_from_slice(&v.to_le_bytes());
                    }
                }
            } else {
                out.push(SECT_EH | more);
                out.push((4 + n * 12) as u8);
                out.extend_from_slice(&[0, 0]);
                for r in chunk {
                    out.extend_from_slice(&(r.0 as u16).to_le_bytes());
                    out.extend_from_slice(&(r.1 as u16).to_le_bytes());
                    out.push(r.2 as u8);
                    out.extend_from_slice(&(r.3 as u16).to_le_bytes());
                    out.push(r.4 as u8);
                    out.extend_from_slice(&r.5.to_le_bytes());
                }
            }
        }
        Ok(out)
    }
}

/// Instructions with raw operands, and each one's offset.
type Decoded = (Vec<(OpCode, RawOperand)>, Vec<u32>);

/// Decodes the code into instructions with raw operands, and each one's offset.
fn decode_code(code: &[u8], base: usize) -> Result<Decoded, IlError> {
    let mut r = Reader { b: code, at: 0 };
    let mut out = Vec::new();
    let mut offsets = Vec::new();
    while r.at < code.len() {
        let start = r.at;
        let at = base + start;
        let first = r.u8("opcode")?;
        let op = if first == 0xFE {
            OpCode(0xFE00 | u16::from(r.u8("second opcode byte").map_err(|e| shift(e, base))?))
        } else {
            OpCode(u16::from(first))
        };
        let info = op.info().ok_or(IlError::malformed(at, "unknown opcode"))?;
        let what = "operand past the end of the code";
        let sh = |e: IlError| shift(e, base);
        let operand = match info.operand {
            OperandKind::None => RawOperand::Done(Operand::None),
            OperandKind::I1 => RawOperand::Done(Operand::I1(r.u8(what).map_err(sh)? as i8)),
            OperandKind::U1 => RawOperand::Done(Operand::U1(r.u8(what).map_err(sh)?)),
            OperandKind::U2 => RawOperand::Done(Operand::U2(r.u16(what).map_err(sh)?)),
            OperandKind::I4 => RawOperand::Done(Operand::I4(r.u32(what).map_err(sh)? as i32)),
            OperandKind::I8 => RawOperand::Done(Operand::I8(r.u64(what).map_err(sh)? as i64)),
            OperandKind::R4 => RawOperand::Done(Operand::R4(r.u32(what).map_err(sh)?)),
            OperandKind::R8 => RawOperand::Done(Operand::R8(r.u64(what).map_err(sh)?)),
            OperandKind::Token => RawOperand::Done(Operand::Token(r.u32(what).map_err(sh)?)),
            OperandKind::ShortBranch => {
                let d = r.u8(what).map_err(sh)? as i8;
                RawOperand::Target(r.at as i64 + i64::from(d))
            }
            OperandKind::Branch => {
                let d = r.u32(what).map_err(sh)? as i32;
                RawOperand::Target(r.at as i64 + i64::from(d))
            }
            OperandKind::Switch => {
                let n = r.u32(what).map_err(sh)? as usize;
                // Bounded by the code left, before allocating.
                if n > (code.len() - r.at) / 4 {
                    return Err(IlError::truncated(
                        at,
                        "switch table past the end of the code",
                    ));
                }
                let table = r.take(n * 4, what).map_err(sh)?;
                let next = r.at as i64;
                RawOperand::Switch(
                    table
                        .chunks_exact(4)
                        .map(|d| next + i64::from(i32::from_le_bytes([d[0], d[1], d[2], d[3]])))
                        .collect(),
                )
            }
        };
        offsets.push(start as u32);
        out.push((op, operand));
    }
    Ok((out, offsets))
}

/// An error from a reader over the code alone, at its offset in the body.
fn shift(mut e: IlError, base: usize) -> IlError {
    e.at = e.at.map(|a| a + base);
    e
}

/// Each instruction's offset under `ops`, and the code size last.
fn offsets_of(code: &[Instr], ops: &[OpCode]) -> Result<Vec<u32>, IlError> {
    let mut offsets = Vec::with_capacity(code.len() + 1);
    let mut at: usize = 0;
    for (ins, op) in code.iter().zip(ops) {
        offsets.push(u32::try_from(at).map_err(|_| IlError::invalid("code over 4 GiB"))?);
        at += op.size() + op.operand().size();
        if let Operand::Switch(ts) = &ins.operand {
            at += ts.len() * 4;
        }
    }
    offsets.push(u32::try_from(at).map_err(|_| IlError::invalid("code over 4 GiB"))?);
    Ok(offsets)
}
