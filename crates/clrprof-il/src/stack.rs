//! The evaluation stack depth of a body (ECMA-335 §III.1.7.5): followed along every path,
//! from the entry and each handler's start, to find the header's max stack and to check
//! that every join sees one depth.

use crate::body::{Body, ClauseKind, Label, Operand};
use crate::error::IlError;
use crate::opcode::{Flow, OpCode, StackEffect};

/// What the calls of a body pop and push, which only their signatures say: for `call`,
/// `callvirt`, `newobj` and `calli` with the operand token, `(pops, pushes)`
/// (`newobj`: its arguments without `this`, and one push). `None`: the token is unknown.
pub type CallEffect<'a> = &'a dyn Fn(OpCode, u32) -> Option<(u16, u16)>;

/// The most items the body's evaluation stack holds at once, following every path.
/// `ret_pops` is 1 for a method that returns a value, else 0.
pub fn max_stack(body: &Body, calls: CallEffect<'_>, ret_pops: u16) -> Result<u16, IlError> {
    let n = body.code.len();
    let mut index = std::collections::HashMap::with_capacity(n);
    for (i, ins) in body.code.iter().enumerate() {
        index.insert(ins.label, i);
    }
    let pos = |l: Label| -> Result<usize, IlError> {
        index
            .get(&l)
            .copied()
            .ok_or(IlError::invalid("a branch to a label no instruction has"))
    };
    let mut depth: Vec<Option<u32>> = vec![None; n];
    let mut work: Vec<(usize, u32)> = Vec::new();
    if n > 0 {
        work.push((0, 0));
    }
    for c in &body.clauses {
        let h = if c.handler_start == Label::END {
            continue;
        } else {
            pos(c.handler_start)?
        };
        match c.kind {
            ClauseKind::Catch(_) => work.push((h, 1)),
            ClauseKind::Filter(f) => {
                work.push((pos(f)?, 1));
                work.push((h, 1));
            }
            ClauseKind::Finally | ClauseKind::Fault => work.push((h, 0)),
        }
    }
    let mut max = 0u32;
    let inconsistent =
        || IlError::invalid("two paths reach an instruction with different stack depths");
    while let Some((i, d)) = work.pop() {
        match depth.get(i) {
            None => return Err(IlError::invalid("code falls off its end")),
            Some(Some(seen)) if *seen == d => continue,
            Some(Some(_)) => return Err(inconsistent()),
            Some(None) => {}
        }
        // Straight-line run from i.
        let mut i = i;
        let mut d = d;
        loop {
            match depth[i] {
                Some(seen) if seen == d => break,
                Some(_) => return Err(inconsistent()),
                None => depth[i] = Some(d),
            }
            max = max.max(d);
            let ins = &body.code[i];
            let info = ins
                .op
                .info()
                .ok_or(IlError::invalid("an unassigned opcode"))?;
            let (pops, pushes, clear) = match info.stack {
                StackEffect::Fixed { pops, pushes } => (u32::from(pops), u32::from(pushes), false),
                StackEffect::Ret => (u32::from(ret_pops), 0, false),
                StackEffect::Clear { pops } => (u32::from(pops), 0, true),
                StackEffect::Call => {
                    let Operand::Token(t) = ins.operand else {
                        return Err(IlError::invalid("a call without a token"));
                    };
                    let (p, q) = calls(ins.op, t)
                        .ok_or(IlError::invalid("a call whose signature is unknown"))?;
                    (u32::from(p), u32::from(q), false)
                }
            };
            if pops > d {
                return Err(IlError::invalid(
                    "an instruction pops more than the stack holds",
                ));
            }
            d = if clear { 0 } else { d - pops + pushes };
            max = max.max(d);
            let targets: Vec<Label> = match &ins.operand {
                Operand::Target(t) => vec![*t],
                Operand::Switch(ts) => ts.clone(),
                _ => Vec::new(),
            };
            for t in targets {
                work.push((pos(t)?, d));
            }
            match info.flow {
                Flow::Next | Flow::CondBranch | Flow::Prefix => {
                    i += 1;
                    if i >= n {
                        return Err(IlError::invalid("code falls off its end"));
                    }
                }
                Flow::Branch | Flow::Exit => break,
            }
        }
    }
    u16::try_from(max).map_err(|_| IlError::invalid("a stack deeper than 65,535"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_calls(_: OpCode, _: u32) -> Option<(u16, u16)> {
        None
    }

    fn tiny(code: &[u8]) -> Body {
        let mut bytes = vec![((code.len() as u8) << 2) | 2];
        bytes.extend_from_slice(code);
        Body::parse(&bytes).unwrap()
    }

    #[test]
    fn depth_follows_branches_and_joins_must_agree() {
        // ldarg.0; brtrue.s L1; ldc.i4.0; br.s L2; L1: ldc.i4.1; L2: ret
        let b = tiny(&[0x02, 0x2D, 0x03, 0x16, 0x2B, 0x01, 0x17, 0x2A]);
        assert_eq!(max_stack(&b, &no_calls, 1).unwrap(), 1);
        // ldarg.0; brtrue.s L; ldc.i4.0; L: ldc.i4.1; ret: L is reached with 0 and 1.
        let b = tiny(&[0x02, 0x2D, 0x01, 0x16, 0x17, 0x2A]);
        assert!(max_stack(&b, &no_calls, 1).is_err());
    }

    #[test]
    fn handlers_start_with_the_exception_on_the_stack() {
        // try { leave.s END } catch { pop; leave.s END } END: ret, with a fat header.
        let code = [0xDE, 0x03, 0x26, 0xDE, 0x00, 0x2A];
        let mut bytes = vec![0x0B, 0x30, 0x01, 0x00];
        bytes.extend_from_slice(&(code.len() as u32).to_le_bytes());
        bytes.extend_from_slice(&0u32.to_le_bytes());
        bytes.extend_from_slice(&code);
        bytes.extend_from_slice(&[0, 0]); // align
        // small section, one catch clause: try 0..2, handler 2..5, class token 0x01000001
        bytes.extend_from_slice(&[0x01, 16, 0, 0, 0, 0, 0, 0, 2, 2, 0, 3, 1, 0, 0, 1]);
        let b = Body::parse(&bytes).unwrap();
        assert_eq!(b.clauses.len(), 1);
        assert_eq!(max_stack(&b, &no_calls, 0).unwrap(), 1);
        assert_eq!(b.encode().unwrap(), bytes);
    }

    #[test]
    fn a_simple_body_has_the_depth_of_its_deepest_point() {
        // ldarg.0 ldarg.1 ldarg.2 add add ret
        let bytes = [0x06 << 2 | 2, 0x02, 0x03, 0x04, 0x58, 0x58, 0x2A];
        let b = Body::parse(&bytes).unwrap();
        assert_eq!(max_stack(&b, &no_calls, 1).unwrap(), 3);
        // Underflow: pop on an empty stack.
        let b = Body::parse(&[0x02 << 2 | 2, 0x26, 0x2A]).unwrap();
        assert!(max_stack(&b, &no_calls, 0).is_err());
        // A call needs its signature.
        let b = Body::parse(&[0x06 << 2 | 2, 0x28, 1, 0, 0, 0x06, 0x2A]).unwrap();
        assert!(max_stack(&b, &no_calls, 0).is_err());
        assert_eq!(max_stack(&b, &|_, _| Some((0, 1)), 1).unwrap(), 1);
    }
}
