//! The probe wrap: a body that calls a probe at entry and at every exit, normal or by
//! exception. Trace mode installs it through ReJIT (`GetReJITParameters` →
//! `SetILFunctionBody`), so it uses nothing a module would need a new assembly reference
//! for: each probe call is `ldc.i8 <cookie>; ldloca R; ldc.i8 <function pointer>;
//! conv.i; calli <signature token>`, the signature an unmanaged
//! `void (int64, native int)` whose token the runtime gives after attach: without GC-mode
//! transitions ([`crate::sig::probe_sig_suppress_gc_transition`]) or, as a fallback, with
//! them ([`crate::sig::PROBE_SIG`]).
//!
//! ```text
//!       <entry probe>
//! TRY:  <the original body; each `ret` becomes `stloc R; leave RET`
//!        (or `leave RET` without a value), each `tail.` prefix a `nop`>
//! FLT:  <leave probe>; endfault            .try TRY to FLT fault handler FLT to RET
//! RET:  <leave probe>; ldloc R; ret        (or `<leave probe>; ret`)
//! ```
//!
//! Every exit passes one leave probe: a normal one at `RET`, an exception through the
//! `fault` handler. The common path so stays in the method's own code, out of handler
//! funclets, which the JIT compiles with fewer optimisations (P/Invokes in a handler are
//! not inlined).
//!
//! `R` is a local the wrap adds ([`crate::sig::frame_local_type`]): it carries the return
//! value across the `leave`, and its address identifies the frame. Every probe of one call
//! sees the same address (a handler runs on its method's frame, whose locals it shares),
//! and a deeper call's local lies lower on the stack, as a caller SP would.
//!
//! The original clauses stay, nested inside the new one (listed after them, as ECMA-335
//! §II.19 orders nested clauses). The stack is empty at the new `try`'s start (method
//! entry) and `leave` empties it, so no value crosses a region boundary but the returned
//! one, through `R`.

use crate::body::{Body, Clause, ClauseKind, Operand};
use crate::error::IlError;
use crate::opcode::OpCode;

/// The probe the wrapped body calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Probe {
    /// The address of the unmanaged `extern "C" fn(i64)` called at entry.
    pub enter: u64,
    /// The one called at every exit (at `RET`, or in the `fault` handler).
    pub leave: u64,
    /// A `StandAloneSig` token of the probe's signature in the method's module
    /// ([`crate::sig::probe_sig_suppress_gc_transition`] or [`crate::sig::PROBE_SIG`]).
    pub sig_token: u32,
    /// The first argument both receive: which method this is.
    pub cookie: i64,
}

/// The local the wrap adds (`R` above): its index among the locals
/// ([`crate::sig::locals_with`] with [`crate::sig::frame_local_type`]), the token of the
/// new locals signature, and whether the method returns a value (kept in it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameLocal {
    pub locals_token: u32,
    pub index: u16,
    pub returns_value: bool,
}

/// A wrapped body, and what the wrap had to change besides adding the probes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Wrapped {
    pub body: Body,
    /// `tail.` prefixes turned into `nop` (a tail call cannot leave a protected region):
    /// these calls now keep their caller's frame.
    pub tail_calls_kept: usize,
}

fn probe_call(
    body: &mut Body,
    cookie: i64,
    local: u16,
    target: u64,
    sig: u32,
) -> Vec<crate::Instr> {
    let address = match u8::try_from(local) {
        Ok(i) => body.instr(OpCode::LDLOCA_S, Operand::U1(i)),
        Err(_) => body.instr(OpCode::LDLOCA, Operand::U2(local)),
    };
    vec![
        body.instr(OpCode::LDC_I8, Operand::I8(cookie)),
        address,
        body.instr(OpCode::LDC_I8, Operand::I8(target as i64)),
        body.instr(OpCode::CONV_I, Operand::None),
        body.instr(OpCode::CALLI, Operand::Token(sig)),
    ]
}

fn local_op(body: &mut Body, store: bool, index: u16) -> crate::Instr {
    match (store, u8::try_from(index)) {
        (true, Ok(i)) => body.instr(OpCode::STLOC_S, Operand::U1(i)),
        (true, Err(_)) => body.instr(OpCode::STLOC, Operand::U2(index)),
        (false, Ok(i)) => body.instr(OpCode::LDLOC_S, Operand::U1(i)),
        (false, Err(_)) => body.instr(OpCode::LDLOC, Operand::U2(index)),
    }
}

/// Wraps `body` with `probe`, adding `local`. `local.returns_value` must say what the
/// method's signature says (the result would not be valid IL otherwise).
///
/// Refused: an empty body, and one with `jmp` (it leaves the method without passing
/// through an exit probe).
pub fn wrap(body: &Body, probe: &Probe, local: FrameLocal) -> Result<Wrapped, IlError> {
    if body.code.is_empty() {
        return Err(IlError::invalid("an empty body"));
    }
    if body.code.iter().any(|i| i.op == OpCode::JMP) {
        return Err(IlError::unsupported(
            "jmp leaves the method without its exit probe",
        ));
    }
    let mut b = body.clone();
    let mut tail_calls_kept = 0;
    for i in &mut b.code {
        if i.op == OpCode::TAIL {
            i.op = OpCode::NOP;
            tail_calls_kept += 1;
        }
    }
    let try_start = b.code[0].label;
    let fault_code = probe_call(
        &mut b,
        probe.cookie,
        local.index,
        probe.leave,
        probe.sig_token,
    );
    let fin = fault_code[0].label;
    let mut tail = fault_code;
    // `endfault` is `endfinally`'s opcode.
    tail.push(b.instr(OpCode::ENDFINALLY, Operand::None));
    let mut ret_code = probe_call(
        &mut b,
        probe.cookie,
        local.index,
        probe.leave,
        probe.sig_token,
    );
    if local.returns_value {
        ret_code.push(local_op(&mut b, false, local.index));
    }
    ret_code.push(b.instr(OpCode::RET, Operand::None));
    let ret_label = ret_code[0].label;
    tail.extend(ret_code);

    // Each original `ret` becomes `[stloc R;] leave.s RET` (widened by the encoder when
    // RET is too far); the first instruction keeps the `ret`'s label, so branches to the
    // `ret` now reach the store.
    let original = std::mem::take(&mut b.code);
    let mut code = Vec::with_capacity(original.len() + 8);
    code.extend(probe_call(
        &mut b,
        probe.cookie,
        local.index,
        probe.enter,
        probe.sig_token,
    ));
    for ins in original {
        if ins.op != OpCode::RET {
            code.push(ins);
            continue;
        }
        let leave = b.instr(OpCode::LEAVE_S, Operand::Target(ret_label));
        if local.returns_value {
            let mut store = local_op(&mut b, true, local.index);
            store.label = ins.label;
            code.push(store);
            code.push(leave);
        } else {
            code.push(crate::Instr {
                label: ins.label,
                ..leave
            });
        }
    }
    code.extend(tail);
    b.code = code;
    b.clauses.push(Clause::new(
        ClauseKind::Fault,
        try_start,
        fin,
        fin,
        ret_label,
    ));
    b.header.fat = true;
    b.header.max_stack = b.header.max_stack.max(3);
    b.header.local_sig = local.locals_token;
    Ok(Wrapped {
        body: b,
        tail_calls_kept,
    })
}
