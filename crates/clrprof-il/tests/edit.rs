//! Editing a body: inserted code moves branches, `switch` tables and clauses with it;
//! short branches are widened when the distance needs it; clauses move to a fat section
//! when they outgrow a small one; the probe wrap's shape; edits that cannot be encoded
//! are errors.

use clrprof_il::opcode::OperandKind;
use clrprof_il::sig::PROBE_SIG;
use clrprof_il::stack::max_stack;
use clrprof_il::wrap::{FrameLocal, Probe, wrap};
use clrprof_il::{Body, Clause, ClauseKind, IlErrorKind, Label, OpCode, Operand};

fn tiny(code: &[u8]) -> Body {
    let mut bytes = vec![((code.len() as u8) << 2) | 2];
    bytes.extend_from_slice(code);
    let b = Body::parse(&bytes).unwrap();
    assert_eq!(b.encode().unwrap(), bytes);
    b
}

fn nops(b: &mut Body, n: usize) -> Vec<clrprof_il::Instr> {
    (0..n)
        .map(|_| b.instr(OpCode::NOP, Operand::None))
        .collect()
}

/// The instruction a branch operand reaches after an encode → parse round trip.
fn reparse(b: &Body) -> Body {
    Body::parse(&b.encode().unwrap()).unwrap()
}

fn no_calls(_: OpCode, _: u32) -> Option<(u16, u16)> {
    None
}

#[test]
fn a_short_branch_is_widened_when_inserted_code_puts_its_target_out_of_reach() {
    // 0: ldarg.0  1: brtrue.s L  3: ldc.i4.0  4: ret  L(5): ldc.i4.1  6: ret
    let mut b = tiny(&[0x02, 0x2D, 0x02, 0x16, 0x2A, 0x17, 0x2A]);
    let ret0 = b.code[3].label;
    let filler = nops(&mut b, 125);
    b.insert_before(ret0, filler).unwrap();
    // ldc.i4.0, 125 nops and a ret between: still reachable (displacement 127).
    let r = reparse(&b);
    assert_eq!(r.code[1].op.0, 0x2D, "brtrue.s kept");
    let one = nops(&mut b, 2);
    b.insert_before(ret0, one).unwrap();
    let r = reparse(&b);
    assert_eq!(r.code[1].op, OpCode::BRTRUE, "widened to brtrue");
    let Operand::Target(t) = r.code[1].operand else {
        panic!()
    };
    let target = r.index_of(t).unwrap();
    assert_eq!(r.code[target].op.0, 0x17, "still reaches ldc.i4.1");
    assert_eq!(r.code.len(), 6 + 127);
    // Long enough now for a fat header.
    assert!(b.encode().unwrap()[0] & 3 == 3);
    assert_eq!(max_stack(&r, &no_calls, 1).unwrap(), 1);
}

#[test]
fn a_backward_short_branch_is_widened_too() {
    // L(0): ldarg.0  1: brtrue.s L  3: ret
    let mut b = tiny(&[0x02, 0x2D, 0xFD, 0x2A]);
    let br = b.code[1].label;
    let filler = nops(&mut b, 200);
    b.insert_before(br, filler).unwrap();
    let r = reparse(&b);
    let branch = &r.code[201];
    assert_eq!(branch.op, OpCode::BRTRUE);
    assert_eq!(branch.operand, Operand::Target(r.code[0].label));
}

#[test]
fn switch_targets_follow_the_instructions_they_name() {
    // 0: ldarg.0  1: switch (2) L1 L2  14: ret  L1(15): ret  L2(16): ret
    let mut code = vec![0x02, 0x45, 0x02, 0, 0, 0];
    code.extend_from_slice(&1i32.to_le_bytes());
    code.extend_from_slice(&2i32.to_le_bytes());
    code.extend_from_slice(&[0x2A, 0x2A, 0x2A]);
    let mut b = tiny(&code);
    let l2 = b.code[4].label;
    let filler = nops(&mut b, 3);
    b.insert_before(l2, filler).unwrap();
    let r = reparse(&b);
    let Operand::Switch(ts) = &r.code[1].operand else {
        panic!()
    };
    let at: Vec<usize> = ts.iter().map(|t| r.index_of(*t).unwrap()).collect();
    assert_eq!(at, vec![3, 7], "L1 stays, L2 moved past the nops");
    assert_eq!(b.offsets().unwrap(), vec![0, 1, 14, 15, 16, 17, 18, 19, 20]);
}

/// try { ldarg.0; pop; leave.s END } catch [token] { pop; leave.s END } END: ret
fn try_catch() -> (Body, Vec<u8>) {
    let code = [0x02, 0x26, 0xDE, 0x03, 0x26, 0xDE, 0x00, 0x2A];
    let mut bytes = vec![0x1B, 0x30, 0x01, 0x00]; // fat, more sects, init locals; max stack 1
    bytes.extend_from_slice(&(code.len() as u32).to_le_bytes());
    bytes.extend_from_slice(&0u32.to_le_bytes());
    bytes.extend_from_slice(&code);
    // small section: try 0..4, handler 4..7, class token 0x01000002
    bytes.extend_from_slice(&[0x01, 16, 0, 0, 0, 0, 0, 0, 4, 4, 0, 3, 2, 0, 0, 1]);
    let b = Body::parse(&bytes).unwrap();
    assert_eq!(b.encode().unwrap(), bytes);
    (b, bytes)
}

#[test]
fn clauses_grow_with_code_inserted_inside_them_and_move_with_code_before_them() {
    let (mut b, _) = try_catch();
    assert!(b.header.init_locals);
    let c = b.clauses[0];
    assert_eq!(c.kind, ClauseKind::Catch(0x0100_0002));
    // Inside the try (before its `pop`) and before the whole region.
    let pop = b.code[1].label;
    let inside = nops(&mut b, 10);
    b.insert_before(pop, inside).unwrap();
    let first = b.code[0].label;
    let before = nops(&mut b, 1);
    let new_first = before[0].label;
    b.insert_before(first, before).unwrap();
    // The region still starts at the original first instruction: the nop is outside.
    let r = reparse(&b);
    let off = r.offsets().unwrap();
    let c = r.clauses[0];
    let at = |l: Label| off[r.index_of(l).unwrap()];
    assert_eq!((at(c.try_start), at(c.try_end)), (1, 15));
    assert_eq!((at(c.handler_start), at(c.handler_end)), (15, 18));
    // Retargeting the region's start takes the nop in.
    b.retarget(first, new_first);
    let r = reparse(&b);
    let off = r.offsets().unwrap();
    let c = r.clauses[0];
    assert_eq!(off[r.index_of(c.try_start).unwrap()], 0);
    assert_eq!(max_stack(&r, &no_calls, 0).unwrap(), 1);
}

#[test]
fn clauses_that_outgrow_a_small_section_are_written_in_a_fat_one() {
    let (mut b, bytes) = try_catch();
    let pop = b.code[1].label;
    let filler = nops(&mut b, 300);
    b.insert_before(pop, filler).unwrap();
    let out = b.encode().unwrap();
    let code_size = u32::from_le_bytes(out[4..8].try_into().unwrap()) as usize;
    let sect = (12 + code_size).div_ceil(4) * 4;
    assert_eq!(out[sect], 0x41, "a fat exception section");
    assert_eq!(out.len(), sect + 4 + 24);
    let r = Body::parse(&out).unwrap();
    assert_eq!(r.clauses.len(), 1);
    // Removing the filler again gives back the small section and the original bytes.
    b.code.retain(|i| i.op != OpCode::NOP);
    assert_eq!(b.encode().unwrap(), bytes);
}

#[test]
fn a_filter_clause_keeps_its_filter() {
    let (mut b, _) = try_catch();
    // Turn the catch into a filter whose filter block is the handler's `pop` … the
    // encoder writes the filter's offset in the class token field.
    let h = b.clauses[0].handler_start;
    b.clauses[0] = Clause::new(
        ClauseKind::Filter(h),
        b.clauses[0].try_start,
        b.clauses[0].try_end,
        h,
        b.clauses[0].handler_end,
    );
    let r = reparse(&b);
    let ClauseKind::Filter(f) = r.clauses[0].kind else {
        panic!("{:?}", r.clauses[0])
    };
    assert_eq!(r.offsets().unwrap()[r.index_of(f).unwrap()], 4);
}

#[test]
fn edits_that_cannot_be_encoded_are_errors() {
    let mut b = tiny(&[0x2B, 0x00, 0x2A]);
    let invalid = |b: &Body| matches!(b.encode().unwrap_err().what, IlErrorKind::Invalid(_));
    // A branch to a label no instruction has.
    b.code[0].operand = Operand::Target(Label(77));
    assert!(invalid(&b));
    // An operand of the wrong form.
    b.code[0].operand = Operand::I4(1);
    assert!(invalid(&b));
    // Two instructions with one label.
    let mut b = tiny(&[0x00, 0x2A]);
    b.code[1].label = b.code[0].label;
    assert!(invalid(&b));
    // A clause ending before it starts.
    let (mut b, _) = try_catch();
    let c = b.clauses[0];
    b.clauses[0] = Clause::new(
        c.kind,
        c.try_end,
        c.try_start,
        c.handler_start,
        c.handler_end,
    );
    assert!(invalid(&b));
    // Inserting before a label that is not there.
    assert!(b.insert_before(Label(999), Vec::new()).is_err());
    assert!(b.insert_before(Label::END, Vec::new()).is_ok());
}

fn probe() -> Probe {
    Probe {
        enter: 0x1111_2222_3333,
        leave: 0x4444_5555_6666,
        sig_token: 0x1100_0042,
        cookie: -7,
    }
}

fn calls(op: OpCode, token: u32) -> Option<(u16, u16)> {
    (op == OpCode::CALLI && token == 0x1100_0042).then_some((3, 0))
}

/// The frame local of a method that returns nothing: local 0 of a new signature.
fn void_local() -> FrameLocal {
    FrameLocal {
        locals_token: 0x1100_0050,
        index: 0,
        returns_value: false,
    }
}

fn names(b: &Body) -> Vec<&'static str> {
    b.code.iter().map(|i| i.op.name()).collect()
}

#[test]
fn wrap_calls_the_probe_at_entry_and_at_every_exit_normal_or_by_exception() {
    // void: 0: ldarg.0  1: brtrue.s L  3: ret  L(4): ldc.i4.1  5: pop  6: ret
    let b = tiny(&[0x02, 0x2D, 0x01, 0x2A, 0x17, 0x26, 0x2A]);
    let w = wrap(&b, &probe(), void_local()).unwrap();
    let r = reparse(&w.body);
    assert_eq!(
        names(&r),
        [
            "ldc.i8",
            "ldloca.s",
            "ldc.i8",
            "conv.i",
            "calli", // entry probe
            "ldarg.0",
            "brtrue.s",
            "leave.s",
            "ldc.i4.1",
            "pop",
            "leave.s", // the body
            "ldc.i8",
            "ldloca.s",
            "ldc.i8",
            "conv.i",
            "calli",
            "endfinally", // the fault handler: leave probe
            "ldc.i8",
            "ldloca.s",
            "ldc.i8",
            "conv.i",
            "calli", // RET: leave probe
            "ret",
        ]
    );
    assert_eq!(r.code[0].operand, Operand::I8(-7));
    assert_eq!(r.code[1].operand, Operand::U1(0));
    assert_eq!(r.code[2].operand, Operand::I8(0x1111_2222_3333));
    assert_eq!(r.code[4].operand, Operand::Token(0x1100_0042));
    assert_eq!(r.code[13].operand, Operand::I8(0x4444_5555_6666));
    assert_eq!(r.code[19].operand, Operand::I8(0x4444_5555_6666));
    // The branch still reaches ldc.i4.1; both leaves reach RET's probe.
    assert_eq!(r.code[6].operand, Operand::Target(r.code[8].label));
    assert_eq!(r.code[7].operand, Operand::Target(r.code[17].label));
    assert_eq!(r.code[10].operand, Operand::Target(r.code[17].label));
    let c = r.clauses[0];
    assert_eq!(c.kind, ClauseKind::Fault);
    assert_eq!(
        (c.try_start, c.try_end, c.handler_start, c.handler_end),
        (
            r.code[5].label,
            r.code[11].label,
            r.code[11].label,
            r.code[17].label
        )
    );
    assert_eq!(max_stack(&r, &calls, 0).unwrap(), 3);
    assert_eq!(r.header.max_stack, 8, "a tiny body's max stack, kept");
    assert_eq!(r.header.local_sig, 0x1100_0050, "the new locals");
    assert_eq!(w.tail_calls_kept, 0);
}

#[test]
fn wrap_keeps_the_return_value_in_its_local_and_nests_the_original_clauses() {
    let (b, _) = try_catch();
    // Pretend it returns a value: the clause body is the same, ret reads local 3.
    let mut b = b;
    let ret = b.code.len() - 1;
    let one = b.instr(OpCode(0x17), Operand::None);
    let one_label = one.label;
    let ret_label = b.code[ret].label;
    b.insert_before(ret_label, vec![one]).unwrap();
    b.retarget(ret_label, one_label);
    let w = wrap(
        &b,
        &probe(),
        FrameLocal {
            locals_token: 0x1100_0099,
            index: 300,
            returns_value: true,
        },
    )
    .unwrap();
    let r = reparse(&w.body);
    assert_eq!(r.header.local_sig, 0x1100_0099);
    assert!(r.header.init_locals);
    assert_eq!(r.clauses.len(), 2, "original first, the new fault last");
    assert!(matches!(r.clauses[0].kind, ClauseKind::Catch(_)));
    assert_eq!(r.clauses[1].kind, ClauseKind::Fault);
    let n = r.code.len();
    assert_eq!(names(&r)[n - 2..], ["ldloc", "ret"]);
    assert_eq!(r.code[n - 2].operand, Operand::U2(300));
    assert_eq!(
        r.code[1].op,
        OpCode::LDLOCA,
        "the frame's address, long form"
    );
    let store = r.code.iter().position(|i| i.op == OpCode::STLOC).unwrap();
    assert_eq!(r.code[store].operand, Operand::U2(300));
    assert_eq!(r.code[store + 1].op.0, 0xDE, "leave.s");
    assert_eq!(max_stack(&r, &calls, 1).unwrap(), 3);
    // The original clause's offsets moved by the entry probe (9 + 4 + 9 + 1 + 5 bytes).
    let off = r.offsets().unwrap();
    assert_eq!(off[r.index_of(r.clauses[0].try_start).unwrap()], 28);
    // A small index uses the short forms.
    let w = wrap(
        &b,
        &probe(),
        FrameLocal {
            locals_token: 1,
            index: 5,
            returns_value: true,
        },
    )
    .unwrap();
    assert!(
        w.body
            .code
            .iter()
            .any(|i| i.op == OpCode::STLOC_S && i.operand == Operand::U1(5))
    );
}

#[test]
fn wrap_drops_tail_prefixes_and_refuses_jmp() {
    // tail. call 0x0A000001; ret
    let b = tiny(&[0xFE, 0x14, 0x28, 0x01, 0, 0, 0x0A, 0x2A]);
    let w = wrap(&b, &probe(), void_local()).unwrap();
    assert_eq!(w.tail_calls_kept, 1);
    assert!(!w.body.code.iter().any(|i| i.op == OpCode::TAIL));
    // jmp 0x06000001 (ret never reached)
    let b = tiny(&[0x27, 0x01, 0, 0, 0x06, 0x2A]);
    assert!(matches!(
        wrap(&b, &probe(), void_local()).unwrap_err().what,
        IlErrorKind::Unsupported(_)
    ));
}

#[test]
fn a_wrapped_body_with_a_far_return_widens_its_leave() {
    // 200 nops, then ret: its leave jumps over the fault handler only (27 bytes): leave.s.
    let mut b = tiny(&[0x2A]);
    let filler = nops(&mut b, 200);
    b.code.splice(0..0, filler);
    let w = wrap(&b, &probe(), void_local()).unwrap();
    let r = reparse(&w.body);
    assert!(
        r.code.iter().any(|i| i.op == OpCode::LEAVE_S),
        "near: leave.s"
    );
    // Now the ret first: its leave must jump over 200 nops.
    let mut b = tiny(&[0x2A]);
    let filler = nops(&mut b, 200);
    b.code.extend(filler);
    let w = wrap(&b, &probe(), void_local()).unwrap();
    let r = reparse(&w.body);
    assert!(r.code.iter().any(|i| i.op == OpCode::LEAVE), "far: leave");
    assert!(
        r.code
            .iter()
            .all(|i| i.op.operand() != OperandKind::ShortBranch)
    );
}

#[test]
fn the_probe_signature_is_an_unmanaged_cdecl_void_of_int64_and_native_int() {
    let shape = clrprof_il::sig::method_shape(&PROBE_SIG).unwrap();
    assert_eq!(shape.params, 2);
    assert!(!shape.implicit_this);
    assert_eq!(shape.returns, None);
    assert_eq!(shape.stack_effect(OpCode::CALLI), (3, 0));
    // The frame local: the return type, or native int.
    assert_eq!(
        clrprof_il::sig::frame_local_type(&[0x20, 0x00, 0x01]).unwrap(),
        [0x18]
    );
    assert_eq!(
        clrprof_il::sig::frame_local_type(&[0x00, 0x01, 0x0E, 0x08]).unwrap(),
        [0x0E]
    );
}
