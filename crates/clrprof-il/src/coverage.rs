//! Coverage counters written into a method body: `clrprof coverage` (docs/coverage.md).
//!
//! Before the first instruction of each sequence point, and on each edge leaving a
//! conditional branch or `switch`, [`instrument`] inserts an inline increment of a 64-bit
//! counter in native memory:
//!
//! ```text
//! ldc.i8 <address>; conv.i; dup; ldind.i8; ldc.i4.1; conv.i8; add; stind.i8
//! ```
//!
//! No call, no local, and the stack is the same after it as before (three slots more at
//! its deepest, added to the max stack), so it can stand anywhere an instruction starts:
//! in a `try`, at a handler's first instruction (the exception object stays on the stack
//! beneath it), at a `leave` target. The inserted code takes the place of the instruction
//! it precedes for every branch, `switch` entry and clause boundary (`Body::retarget`), so
//! a region that started there starts at the increment and one that ended there ends
//! before it.
//!
//! Branch edges: a conditional branch `B` with targets `L1..Ln` becomes
//!
//! ```text
//!     B (targets T1..Tn)
//!     <increment path 0: fall-through>; br NEXT
//! T1: <increment path 1>; br L1
//!     …
//! Tn: <increment path n>; br Ln
//! NEXT:
//! ```
//!
//! all between `B` and the instruction after it, so in `B`'s own protected region (a
//! conditional branch never falls out of one). Only `B`'s own targets change; other
//! branches to `L1..Ln` count nothing on this edge. The counters are unsynchronised adds:
//! two threads racing may lose a count, never turn a counted line into an uncounted one.

use crate::body::{Body, Instr, Label, Operand};
use crate::error::IlError;
use crate::opcode::{Flow, OpCode};

/// One conditional branch or `switch` whose edges are counted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BranchSite {
    /// The branch instruction's offset in the original body.
    pub il_offset: u32,
    /// Its edges: path 0 is the fall-through, path `i` the `i`-th target.
    pub paths: u32,
}

/// What [`instrument`] made.
#[derive(Clone, Debug)]
pub struct Instrumented {
    /// The new body (header, code, exception sections).
    pub bytes: Vec<u8>,
    /// The counters used, from the base address: one per sequence point given (in that
    /// order), then each branch site's paths (in site order).
    pub counters: u32,
    pub branches: Vec<BranchSite>,
}

/// Bytes of one counter.
pub const COUNTER_BYTES: u64 = 8;

/// The increment of the counter at `address`.
pub fn increment(body: &mut Body, address: u64) -> Vec<Instr> {
    vec![
        body.instr(OpCode::LDC_I8, Operand::I8(address as i64)),
        body.instr(OpCode::CONV_I, Operand::None),
        body.instr(OpCode(0x25), Operand::None), // dup
        body.instr(OpCode(0x4C), Operand::None), // ldind.i8
        body.instr(OpCode(0x17), Operand::None), // ldc.i4.1
        body.instr(OpCode(0x6A), Operand::None), // conv.i8
        body.instr(OpCode(0x58), Operand::None), // add
        body.instr(OpCode(0x55), Operand::None), // stind.i8
    ]
}

/// The conditional branches (and `switch`es) of a parsed body, with their original offsets.
fn branch_sites(body: &Body) -> Result<Vec<(Label, u32, u32)>, IlError> {
    let offsets = body.offsets()?;
    let mut sites = Vec::new();
    for (i, ins) in body.code.iter().enumerate() {
        let Some(info) = ins.op.info() else { continue };
        if info.flow != Flow::CondBranch {
            continue;
        }
        let paths = match &ins.operand {
            Operand::Target(_) => 2,
            Operand::Switch(ls) => 1 + ls.len() as u32,
            _ => continue,
        };
        sites.push((ins.label, offsets[i], paths));
    }
    Ok(sites)
}

/// The branch sites [`instrument`] counts in `il` (a whole method body, trailing bytes
/// ignored), in the same order: what a method that never ran would have had.
pub fn branch_sites_in(il: &[u8]) -> Result<Vec<BranchSite>, IlError> {
    let (body, _) = Body::parse_with_len(il)?;
    Ok(branch_sites(&body)?
        .into_iter()
        .map(|(_, il_offset, paths)| BranchSite { il_offset, paths })
        .collect())
}

/// Instruments `il` (a whole method body as `GetILFunctionBody` gives it): a counter for
/// each of `points` (IL offsets of the method's visible sequence points; each must be an
/// instruction's start) and, with `branches`, for each branch edge. `alloc(n)` is asked
/// once for `n` counters and gives the address of the first (`None`: no room, nothing is
/// changed). Errors: the body does not parse or encode, or a point is at no instruction
/// (the PDB does not describe this body).
pub fn instrument(
    il: &[u8],
    points: &[u32],
    branches: bool,
    alloc: impl FnOnce(u32) -> Option<u64>,
) -> Result<Option<Instrumented>, IlError> {
    let mut body = Body::parse(il)?;
    let offsets = body.offsets()?;
    let mut point_labels = Vec::with_capacity(points.len());
    for &p in points {
        let Some(i) = offsets[..body.code.len()].iter().position(|&o| o == p) else {
            return Err(IlError::invalid(
                "a sequence point at an offset where no instruction starts (the PDB does not match this body)",
            ));
        };
        point_labels.push(body.code[i].label);
    }
    let sites = if branches {
        branch_sites(&body)?
    } else {
        Vec::new()
    };
    let total = points.len() as u64 + sites.iter().map(|s| s.2 as u64).sum::<u64>();
    let total = u32::try_from(total).map_err(|_| IlError::invalid("too many counters"))?;
    let Some(base) = alloc(total) else {
        return Ok(None);
    };
    let addr = |i: u32| base + i as u64 * COUNTER_BYTES;
    let mut next = points.len() as u32;
    let mut out_sites = Vec::with_capacity(sites.len());
    for (label, il_offset, paths) in sites {
        let at = body
            .index_of(label)
            .ok_or(IlError::invalid("branch lost"))?;
        let after = body
            .code
            .get(at + 1)
            .map(|i| i.label)
            .ok_or(IlError::invalid(
                "a conditional branch at the end of the code",
            ))?;
        let targets: Vec<Label> = match &body.code[at].operand {
            Operand::Target(l) => vec![*l],
            Operand::Switch(ls) => ls.clone(),
            _ => unreachable!("branch_sites keeps only branches"),
        };
        let mut code = increment(&mut body, addr(next));
        code.push(body.instr(OpCode::BR, Operand::Target(after)));
        let mut new_targets = Vec::with_capacity(targets.len());
        for (k, t) in targets.iter().enumerate() {
            let mut block = increment(&mut body, addr(next + 1 + k as u32));
            new_targets.push(block[0].label);
            block.push(body.instr(OpCode::BR, Operand::Target(*t)));
            code.extend(block);
        }
        match &mut body.code[at].operand {
            Operand::Target(l) => *l = new_targets[0],
            Operand::Switch(ls) => *ls = new_targets,
            _ => {}
        }
        body.insert_before(after, code)?;
        out_sites.push(BranchSite { il_offset, paths });
        next += paths;
    }
    for (i, label) in point_labels.into_iter().enumerate() {
        let code = increment(&mut body, addr(i as u32));
        let first = code[0].label;
        body.insert_before(label, code)?;
        body.retarget(label, first);
    }
    body.header.max_stack = body.header.max_stack.saturating_add(3);
    Ok(Some(Instrumented {
        bytes: body.encode()?,
        counters: total,
        branches: out_sites,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ClauseKind;

    /// ldarg.0; brfalse.s +2 (to ldc.i4.2); ldc.i4.1; ret; ldc.i4.2; ret
    const IF_ELSE: &[u8] = &[(7 << 2) | 2, 0x02, 0x2C, 0x02, 0x17, 0x2A, 0x18, 0x2A];

    fn ops(b: &Body) -> Vec<&'static str> {
        b.code.iter().map(|i| i.op.name()).collect()
    }

    #[test]
    fn points_and_edges() {
        let mut asked = 0;
        let out = instrument(IF_ELSE, &[0, 3, 5], true, |n| {
            asked = n;
            Some(0x1000)
        })
        .unwrap()
        .unwrap();
        assert_eq!(asked, 3 + 2);
        assert_eq!(out.counters, 5);
        assert_eq!(
            out.branches,
            vec![BranchSite {
                il_offset: 1,
                paths: 2
            }]
        );
        let b = Body::parse(&out.bytes).unwrap();
        assert!(b.header.fat && b.header.max_stack == 11);
        let inc = [
            "ldc.i8", "conv.i", "dup", "ldind.i8", "ldc.i4.1", "conv.i8", "add", "stind.i8",
        ];
        let mut want: Vec<&str> = Vec::new();
        want.extend(inc); // point 0
        want.push("ldarg.0");
        want.push("brfalse.s");
        want.extend(inc); // fall-through
        want.push("br");
        want.extend(inc); // taken
        want.push("br");
        want.extend(inc); // point 1
        want.extend(["ldc.i4.1", "ret"]);
        want.extend(inc); // point 2
        want.extend(["ldc.i4.2", "ret"]);
        assert_eq!(ops(&b), want);
        let addrs: Vec<i64> = b
            .code
            .iter()
            .filter_map(|i| match i.operand {
                Operand::I8(a) => Some(a),
                _ => None,
            })
            .collect();
        assert_eq!(addrs, [0x1000, 0x1018, 0x1020, 0x1008, 0x1010]);
        // The taken edge's block ends in a branch to point 2's increment.
        let offs = b.offsets().unwrap();
        let taken_br = 8 + 2 + 8 + 1 + 8;
        let Operand::Target(t) = b.code[taken_br].operand else {
            panic!()
        };
        assert_eq!(b.code[b.index_of(t).unwrap()].operand, Operand::I8(0x1010));
        assert!(offs.len() == b.code.len() + 1);
    }

    #[test]
    fn no_room_changes_nothing() {
        assert!(
            instrument(IF_ELSE, &[0], false, |_| None)
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn point_inside_an_instruction_is_refused() {
        assert!(instrument(IF_ELSE, &[2], false, |_| Some(0)).is_err());
    }

    #[test]
    fn handler_start_keeps_its_region() {
        // try { nop; leave.s END } catch (0x01000001) { pop; leave.s END } END: ret
        let mut b = Body::parse(&[(1 << 2) | 2, 0x2A]).unwrap();
        let nop = b.instr(OpCode::NOP, Operand::None);
        let end = b.code[0].label;
        let l1 = b.instr(OpCode::LEAVE_S, Operand::Target(end));
        let pop = b.instr(OpCode::POP, Operand::None);
        let l2 = b.instr(OpCode::LEAVE_S, Operand::Target(end));
        let (ts, hs) = (nop.label, pop.label);
        b.insert_before(end, vec![nop, l1, pop, l2]).unwrap();
        b.clauses.push(crate::Clause::new(
            ClauseKind::Catch(0x0100_0001),
            ts,
            hs,
            hs,
            end,
        ));
        b.header.fat = true;
        let il = b.encode().unwrap();
        // points at the try start (0), the handler start (3) and the end (6)
        let out = instrument(&il, &[0, 3, 6], false, |_| Some(0x10))
            .unwrap()
            .unwrap();
        let b = Body::parse(&out.bytes).unwrap();
        let c = &b.clauses[0];
        let at = |l: Label| b.index_of(l).unwrap();
        assert_eq!(at(c.try_start), 0);
        assert_eq!(b.code[at(c.try_start)].op, OpCode::LDC_I8);
        assert_eq!(b.code[at(c.handler_start)].op, OpCode::LDC_I8);
        assert_eq!(b.code[at(c.handler_start) + 8].op, OpCode::POP);
        assert_eq!(b.code[at(c.handler_end)].op, OpCode::LDC_I8);
        assert_eq!(at(c.try_end), at(c.handler_start));
        // both leaves now reach the end's increment
        for i in &b.code {
            if i.op == OpCode::LEAVE_S || i.op == OpCode::LEAVE {
                assert_eq!(i.operand, Operand::Target(c.handler_end));
            }
        }
    }

    #[test]
    fn switch_gets_a_path_per_target_and_default() {
        // ldarg.0; switch (2 targets) ; ret ; ret ; ret
        let mut b = Body::parse(&[(1 << 2) | 2, 0x2A]).unwrap();
        let r0 = b.code[0].label;
        let r1 = b.instr(OpCode::RET, Operand::None);
        let r2 = b.instr(OpCode::RET, Operand::None);
        let arg = b.instr(OpCode::LDARG_0, Operand::None);
        let sw = b.instr(OpCode::SWITCH, Operand::Switch(vec![r1.label, r2.label]));
        b.insert_before(r0, vec![arg, sw]).unwrap();
        b.insert_before(Label::END, vec![r1, r2]).unwrap();
        let il = b.encode().unwrap();
        let out = instrument(&il, &[], true, |n| {
            assert_eq!(n, 3);
            Some(0)
        })
        .unwrap()
        .unwrap();
        assert_eq!(out.branches[0].paths, 3);
        let b = Body::parse(&out.bytes).unwrap();
        assert_eq!(b.code.iter().filter(|i| i.op == OpCode::LDC_I8).count(), 3);
    }
}
