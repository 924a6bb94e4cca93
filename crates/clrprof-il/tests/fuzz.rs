//! Malformed IL gives an error, never a panic: arbitrary bytes, bodies with a valid header
//! and random code, and valid bodies with bytes changed. Whatever parses encodes, and its
//! encoding parses back to the same body. Random programs built through the API encode
//! and parse back with every branch reaching the instruction it named.

use clrprof_il::sig::{locals_with, method_shape, return_type};
use clrprof_il::stack::max_stack;
use clrprof_il::wrap::{FrameLocal, Probe, wrap};
use clrprof_il::{Body, Label, OpCode, Operand};
use proptest::prelude::*;

/// Parse, and for what parses: encode, parse again, encode again: the same bytes.
fn check(bytes: &[u8]) {
    let Ok((body, len)) = Body::parse_with_len(bytes) else {
        return;
    };
    assert!(len <= bytes.len());
    let out = body.encode().expect("a parsed body encodes");
    let again = Body::parse(&out).expect("an encoded body parses");
    assert_eq!(again.encode().unwrap(), out);
    // The analyses never panic either.
    let _ = max_stack(&body, &|_, _| Some((1, 1)), 1);
    let probe = Probe {
        enter: 1,
        leave: 2,
        sig_token: 0x1100_0001,
        cookie: 3,
    };
    let local = FrameLocal {
        locals_token: 0x1100_0002,
        index: 0,
        returns_value: false,
    };
    if let Ok(w) = wrap(&body, &probe, local) {
        let b = w.body.encode().expect("a wrapped body encodes");
        Body::parse(&b).expect("a wrapped body parses");
    }
}

/// A small valid body with a switch, branches both ways and a try/catch in a small
/// section; mutated below.
fn seed() -> Vec<u8> {
    let mut code = vec![
        0x02, // ldarg.0
        0x45, 0x02, 0, 0, 0, 0x01, 0, 0, 0, 0x03, 0, 0, 0,    // switch (2) +1 +3
        0x00, // nop
        0x2B, 0x02, // br.s +2
        0x26, // pop
        0x00, // nop
        0x02, 0x26, 0xDE, 0x03, // try: ldarg.0; pop; leave.s +3
        0x26, 0xDE, 0x00, // catch: pop; leave.s +0
        0x2A, // ret
    ];
    code.extend_from_slice(&[0x00; 1]);
    let mut b = vec![0x1B, 0x30, 0x02, 0x00];
    b.extend_from_slice(&(code.len() as u32).to_le_bytes());
    b.extend_from_slice(&0x1100_0001u32.to_le_bytes());
    b.extend_from_slice(&code);
    while b.len() % 4 != 0 {
        b.push(0);
    }
    // try 19..23, handler 23..26, catch 0x01000001
    b.extend_from_slice(&[0x01, 16, 0, 0, 0, 0, 19, 0, 4, 23, 0, 3, 1, 0, 0, 1]);
    b
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        check(&bytes);
    }

    #[test]
    fn valid_headers_with_random_code_never_panic(
        fat in any::<bool>(),
        code in proptest::collection::vec(any::<u8>(), 0..300),
        sections in proptest::collection::vec(any::<u8>(), 0..80),
        more in any::<bool>(),
        size_slack in -8i32..8,
    ) {
        let mut b = Vec::new();
        if fat || code.len() >= 64 {
            let flags: u16 = 0x3003 | if more { 0x8 } else { 0 };
            b.extend_from_slice(&flags.to_le_bytes());
            b.extend_from_slice(&8u16.to_le_bytes());
            let size = (code.len() as i32 + size_slack).max(0) as u32;
            b.extend_from_slice(&size.to_le_bytes());
            b.extend_from_slice(&0u32.to_le_bytes());
        } else {
            b.push(((code.len() as u8) << 2) | 2);
        }
        b.extend_from_slice(&code);
        while b.len() % 4 != 0 {
            b.push(0);
        }
        b.extend_from_slice(&sections);
        check(&b);
    }

    #[test]
    fn a_valid_body_with_bytes_changed_never_panics(
        changes in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
        cut in any::<prop::sample::Index>(),
        truncate in any::<bool>(),
    ) {
        let mut b = seed();
        for (at, v) in changes {
            let i = at.index(b.len());
            b[i] = v;
        }
        if truncate {
            b.truncate(cut.index(b.len()));
        }
        check(&b);
    }

    #[test]
    fn signatures_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
        let _ = return_type(&bytes);
        let _ = method_shape(&bytes);
        let _ = locals_with(Some(&bytes), &[0x08]);
        let _ = locals_with(None, &bytes);
    }

    #[test]
    fn random_programs_keep_their_branch_targets(
        shape in proptest::collection::vec((0u8..6, any::<prop::sample::Index>(), 0usize..40), 1..60),
    ) {
        // Each step: an instruction, a branch (short or long, conditional or not) or a
        // switch to a random instruction, or a run of nops (which pushes short branches
        // out of reach). Built through the API, so every label is valid.
        let mut body = Body::parse(&[0x06, 0x2A]).unwrap(); // tiny: ret
        body.code.clear();
        let n = shape.len();
        let labels: Vec<Label> = (0..n).map(|_| body.instr(OpCode::NOP, Operand::None).label).collect();
        let mut code = Vec::new();
        for (i, (kind, target, run)) in shape.iter().enumerate() {
            let t = labels[target.index(n)];
            let (op, operand) = match kind {
                0 => (OpCode::BR_S, Operand::Target(t)),
                1 => (OpCode(0x2C), Operand::Target(t)), // brfalse.s
                2 => (OpCode::BR, Operand::Target(t)),
                3 => (OpCode::SWITCH, Operand::Switch(vec![t, labels[(target.index(n) + 1) % n]])),
                4 => (OpCode::LDC_I4, Operand::I4(*run as i32)),
                _ => (OpCode::NOP, Operand::None),
            };
            for _ in 0..*run {
                code.push(body.instr(OpCode::NOP, Operand::None));
            }
            code.push(clrprof_il::Instr { label: labels[i], op, operand });
        }
        body.code = code;
        let bytes = body.encode().unwrap();
        let r = Body::parse(&bytes).unwrap();
        prop_assert_eq!(r.code.len(), body.code.len());
        prop_assert_eq!(r.offsets().unwrap(), body.offsets().unwrap());
        for (a, b) in body.code.iter().zip(&r.code) {
            let index = |bd: &Body, l: Label| bd.index_of(l).unwrap();
            match (&a.operand, &b.operand) {
                (Operand::Target(x), Operand::Target(y)) => {
                    prop_assert_eq!(index(&body, *x), index(&r, *y));
                    prop_assert_eq!(a.op.long_form(), b.op.long_form());
                }
                (Operand::Switch(x), Operand::Switch(y)) => {
                    let xs: Vec<usize> = x.iter().map(|l| index(&body, *l)).collect();
                    let ys: Vec<usize> = y.iter().map(|l| index(&r, *l)).collect();
                    prop_assert_eq!(xs, ys);
                }
                (x, y) => prop_assert_eq!(x, y),
            }
        }
        prop_assert_eq!(r.encode().unwrap(), bytes);
    }
}

#[test]
fn the_seed_is_valid() {
    let b = seed();
    let body = Body::parse(&b).unwrap();
    assert_eq!(body.encode().unwrap(), b);
    assert_eq!(body.clauses.len(), 1);
}
