//! The IL reader and writer on the bodies of real assemblies: every method body of the
//! test apps (C# and F#), of the .NET runtime's System.Private.CoreLib and System.Linq
//! parses and encodes back to the same bytes, and reads as System.Reflection.Metadata reads it (`apps/IlOracle`:
//! header facts, every instruction with its offset and operand, every exception region,
//! and the opcode table itself against System.Reflection.Emit's).

use std::path::{Path, PathBuf};

use clrprof_il::opcode::{OperandKind, StackEffect};
use clrprof_il::sig::{frame_local_type, locals_with, method_shape};
use clrprof_il::stack::{CallEffect, max_stack};
use clrprof_il::wrap::{FrameLocal, Probe, wrap};
use clrprof_il::{Body, ClauseKind, Label, OpCode, Operand};
use clrprof_metadata::MetadataRead;
use clrprof_metadata::rawmd::{RawMetadata, pe};
use clrprof_testkit::{app, dotnet};

/// Every method with an IL body: its token and its body's file offset.
fn bodies(image: &[u8]) -> Vec<(u32, usize)> {
    let read = |o: usize, n: usize| image.get(o..o.checked_add(n)?);
    let (md_at, md_len) = pe::locate(&read, true).expect("a managed image");
    let md = RawMetadata::parse(&image[md_at..md_at + md_len]).expect("metadata");
    (1..=md.rows(0x06))
        .filter_map(|row| {
            let token = 0x0600_0000 | row;
            let p = md.get_method_props(token).expect("method row");
            // Code type IL (not native, not runtime-provided) with a body.
            (p.code_rva != 0 && p.impl_flags & 0x3 == 0).then(|| {
                (
                    token,
                    pe::file_offset(&read, p.code_rva).expect("RVA in a section"),
                )
            })
        })
        .collect()
}

/// Parses every body, checks it encodes to its own bytes; returns the parsed bodies.
fn round_trip(dll: &Path) -> Vec<(u32, Body, usize)> {
    let image = std::fs::read(dll).unwrap_or_else(|e| panic!("{}: {e}", dll.display()));
    let mut out = Vec::new();
    for (token, at) in bodies(&image) {
        let (body, len) = Body::parse_with_len(&image[at..])
            .unwrap_or_else(|e| panic!("{}: {token:#010x}: {e}", dll.display()));
        let bytes = body
            .encode()
            .unwrap_or_else(|e| panic!("{}: {token:#010x}: {e}", dll.display()));
        assert!(
            bytes == image[at..at + len],
            "{}: {token:#010x} encodes to other bytes:\n ours {:02x?}\n file {:02x?}",
            dll.display(),
            bytes,
            &image[at..at + len]
        );
        out.push((token, body, len));
    }
    out
}

/// The runtime's System.Private.CoreLib, beside the `dotnet` the tests use.
fn corelib() -> PathBuf {
    let shared = dotnet()
        .canonicalize()
        .unwrap()
        .parent()
        .unwrap()
        .join("shared/Microsoft.NETCore.App");
    let mut versions: Vec<_> = std::fs::read_dir(&shared)
        .unwrap_or_else(|e| panic!("{}: {e}", shared.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("System.Private.CoreLib.dll").exists())
        .collect();
    versions.sort();
    versions
        .pop()
        .expect("a runtime with System.Private.CoreLib")
        .join("System.Private.CoreLib.dll")
}

#[test]
fn every_body_of_system_private_corelib_round_trips() {
    let bodies = round_trip(&corelib());
    // The real thing: tens of thousands of bodies, every kind of clause and operand.
    assert!(bodies.len() > 20_000, "{}", bodies.len());
    let clauses = |k: fn(&ClauseKind) -> bool| {
        bodies
            .iter()
            .flat_map(|b| &b.1.clauses)
            .filter(|c| k(&c.kind))
            .count()
    };
    let counts = [
        clauses(|k| matches!(k, ClauseKind::Catch(_))),
        clauses(|k| matches!(k, ClauseKind::Filter(_))),
        clauses(|k| matches!(k, ClauseKind::Finally)),
        clauses(|k| matches!(k, ClauseKind::Fault)),
    ];
    eprintln!(
        "CoreLib: {} bodies; catch, filter, finally, fault clauses: {counts:?}",
        bodies.len()
    );
    assert!(counts.iter().all(|&n| n > 0), "{counts:?}");
    let ops = |o: OpCode| {
        bodies
            .iter()
            .flat_map(|b| &b.1.code)
            .filter(|i| i.op == o)
            .count()
    };
    assert!(ops(OpCode::SWITCH) > 100);
    assert!(ops(OpCode(0xFE16)) > 1000, "constrained.");
}

/// Our reading in the oracle's format.
fn ours(bodies: &[(u32, Body, usize)]) -> String {
    let mut o = String::new();
    // System.Reflection.Emit has no `no.` (0xFE19), which no compiler writes.
    for op in OpCode::all().filter(|&o| o != OpCode(0xFE19)) {
        let info = op.info().unwrap();
        let kind = match info.operand {
            OperandKind::None => "InlineNone",
            OperandKind::I1 => "ShortInlineI",
            OperandKind::U1 if op.0 > 0xFF => "ShortInlineI", // unaligned., no.
            OperandKind::U1 => "ShortInlineVar",
            OperandKind::U2 => "InlineVar",
            OperandKind::I4 => "InlineI",
            OperandKind::I8 => "InlineI8",
            OperandKind::R4 => "ShortInlineR",
            OperandKind::R8 => "InlineR",
            OperandKind::Token => "Token",
            OperandKind::ShortBranch => "ShortInlineBrTarget",
            OperandKind::Branch => "InlineBrTarget",
            OperandKind::Switch => "InlineSwitch",
        };
        let (pops, pushes) = match info.stack {
            StackEffect::Fixed { pops, pushes } => (pops.to_string(), pushes.to_string()),
            StackEffect::Call if op == OpCode::NEWOBJ => ("var".into(), "1".into()),
            StackEffect::Call => ("var".into(), "var".into()),
            StackEffect::Ret => ("var".into(), "0".into()),
            StackEffect::Clear { pops } => (pops.to_string(), "0".into()),
        };
        o.push_str(&format!(
            "op\t{:04x}\t{}\t{kind}\t{pops}\t{pushes}\n",
            op.0,
            op.name()
        ));
    }
    for (token, body, len) in bodies {
        let offsets = body.offsets().unwrap();
        let code_size = *offsets.last().unwrap();
        let at = |l: Label| {
            if l == Label::END {
                code_size
            } else {
                offsets[body.index_of(l).unwrap()]
            }
        };
        let h = &body.header;
        o.push_str(&format!(
            "m\t{token:#010x}\t{}\t{:#010x}\t{}\t{code_size}\t{len}\n",
            h.max_stack,
            h.local_sig,
            u8::from(h.init_locals)
        ));
        for (i, ins) in body.code.iter().enumerate() {
            let operand = match &ins.operand {
                Operand::None => String::new(),
                Operand::I1(v) => format!("{:#04x}", *v as u8),
                Operand::U1(v) => format!("{v:#04x}"),
                Operand::U2(v) => v.to_string(),
                Operand::I4(v) => v.to_string(),
                Operand::I8(v) => v.to_string(),
                Operand::R4(v) => format!("{v:#010x}"),
                Operand::R8(v) => format!("{v:#018x}"),
                Operand::Token(v) => format!("{v:#010x}"),
                Operand::Target(t) => at(*t).to_string(),
                Operand::Switch(ts) => ts
                    .iter()
                    .map(|t| at(*t).to_string())
                    .collect::<Vec<_>>()
                    .join(","),
            };
            o.push_str(&format!(
                "i\t{}\t{}\t{operand}\n",
                offsets[i],
                ins.op.name()
            ));
        }
        for c in &body.clauses {
            let (kind, extra) = match c.kind {
                ClauseKind::Catch(t) => ("Catch", t),
                ClauseKind::Filter(l) => ("Filter", at(l)),
                ClauseKind::Finally => ("Finally", 0),
                ClauseKind::Fault => ("Fault", 0),
            };
            let (ts, hs) = (at(c.try_start), at(c.handler_start));
            o.push_str(&format!(
                "eh\t{kind}\t{ts}\t{}\t{hs}\t{}\t{extra:#010x}\n",
                at(c.try_end) - ts,
                at(c.handler_end) - hs
            ));
        }
    }
    o
}

/// What the oracle prints for `dll`, its token operands (field, method, type…) all
/// named `Token` as ours are.
fn oracle(dll: &Path) -> String {
    let o = app("IlOracle");
    let out = o
        .command(&[dll.to_str().unwrap()])
        .output()
        .expect("run IlOracle");
    assert!(
        out.status.success(),
        "IlOracle failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let mut ops: Vec<String> = Vec::new();
    let mut rest = String::new();
    for line in text.lines() {
        if line.starts_with("op\t") {
            let mut f: Vec<&str> = line.split('\t').collect();
            if matches!(
                f[3],
                "InlineField"
                    | "InlineMethod"
                    | "InlineType"
                    | "InlineTok"
                    | "InlineString"
                    | "InlineSig"
            ) {
                f[3] = "Token";
            }
            ops.push(f.join("\t"));
        } else {
            rest.push_str(line);
            rest.push('\n');
        }
    }
    // Ours lists the table in value order.
    ops.sort();
    let mut o = ops.join("\n");
    o.push('\n');
    o + &rest
}

fn assert_same(ours: &str, theirs: &str, what: &str) {
    for (i, (a, b)) in ours.lines().zip(theirs.lines()).enumerate() {
        assert_eq!(
            a,
            b,
            "{what}: line {} differs (ours left, System.Reflection.Metadata right)",
            i + 1
        );
    }
    assert_eq!(
        ours.lines().count(),
        theirs.lines().count(),
        "{what}: line counts"
    );
}

#[test]
fn scenarios_bodies_match_system_reflection_metadata() {
    let s = app("Scenarios");
    let bodies = round_trip(&s.dll);
    assert!(bodies.len() > 100, "{}", bodies.len());
    assert_same(&ours(&bodies), &oracle(&s.dll), "Scenarios");
}

#[test]
fn fsharp_bodies_with_tail_prefixes_match_system_reflection_metadata() {
    let t = app("TailCalls");
    let bodies = round_trip(&t.dll);
    let text = ours(&bodies);
    assert_same(&text, &oracle(&t.dll), "TailCalls");
    assert!(text.contains("\ttail.\t"), "the F# app's tail. prefixes");
}

#[test]
fn the_oracles_own_shapes_match_system_reflection_metadata() {
    let o = app("IlOracle");
    let bodies = round_trip(&o.dll);
    let text = ours(&bodies);
    assert_same(&text, &oracle(&o.dll), "IlOracle");
    // The shapes are there: a filter, a switch, long branches, a fat section, localloc.
    for needle in [
        "eh\tFilter",
        "\tswitch\t",
        "\tbr\t",
        "\tlocalloc\t",
        "\tldc.r8\t",
        "\tldc.i8\t",
    ] {
        assert!(text.contains(needle), "no {needle:?} in IlOracle");
    }
    assert!(
        bodies.iter().any(
            |b| b.1.clauses.iter().any(|c| c.kind == ClauseKind::Finally) && b.1.code.len() > 300
        ),
        "the long try/finally"
    );
}

#[test]
fn a_framework_assembly_matches_system_reflection_metadata() {
    // A ReadyToRun image of the runtime: its IL bodies as the oracle reads them.
    let linq = corelib().with_file_name("System.Linq.dll");
    let bodies = round_trip(&linq);
    assert!(bodies.len() > 1000, "{}", bodies.len());
    assert_same(&ours(&bodies), &oracle(&linq), "System.Linq");
}

/// For every IL body of `dll`: its token, its signature's shape (owned), the body, and
/// the call effects of its module, given to `check`.
fn with_calls(
    dll: &Path,
    mut check: impl FnMut(u32, &[u8], &Body, CallEffect<'_>, &RawMetadata<'_>),
) {
    let image = std::fs::read(dll).unwrap();
    let read = |o: usize, n: usize| image.get(o..o.checked_add(n)?);
    let (md_at, md_len) = pe::locate(&read, true).unwrap();
    let md = RawMetadata::parse(&image[md_at..md_at + md_len]).unwrap();
    let sig_of = |token: u32| -> Option<Vec<u8>> {
        let token = if token >> 24 == 0x2B {
            md.method_spec_method(token).ok()?
        } else {
            token
        };
        match token >> 24 {
            0x06 => md.get_method_props(token).ok().map(|p| p.sig),
            0x0A => md.get_member_ref_props(token).ok().map(|p| p.sig),
            0x11 => md.standalone_sig(token).ok().map(<[u8]>::to_vec),
            _ => None,
        }
    };
    let calls = |op: OpCode, token: u32| -> Option<(u16, u16)> {
        if token == PROBE_SIG_TOKEN {
            return Some((3, 0));
        }
        let sig = sig_of(token)?;
        let (p, q) = method_shape(&sig).ok()?.stack_effect(op);
        Some((u16::try_from(p).ok()?, u16::try_from(q).ok()?))
    };
    for (token, at) in bodies(&image) {
        let sig = md.get_method_props(token).unwrap().sig;
        let body = Body::parse(&image[at..]).unwrap();
        check(token, &sig, &body, &calls, &md);
    }
}

/// The probe signature's token in these tests: past any real StandAloneSig row.
const PROBE_SIG_TOKEN: u32 = 0x1100_0F00;

#[test]
fn the_stack_depth_of_every_corelib_body_is_the_max_stack_its_compiler_wrote() {
    let (mut same, mut over, mut total) = (0, Vec::new(), 0);
    with_calls(&corelib(), |token, sig, body, calls, _| {
        let ret = u16::from(method_shape(sig).unwrap().returns.is_some());
        let depth = max_stack(body, calls, ret).unwrap_or_else(|e| panic!("{token:#010x}: {e}"));
        if !body.header.fat {
            // A tiny header's max stack is 8 whatever the code needs.
            assert!(depth <= 8, "{token:#010x}: {depth}");
            return;
        }
        total += 1;
        if depth == body.header.max_stack {
            same += 1;
        } else if depth > body.header.max_stack {
            over.push((token, depth, body.header.max_stack));
        }
    });
    eprintln!(
        "CoreLib max stack: {same} of {total} fat bodies exactly as written; deeper: {over:?}"
    );
    // Never deeper than the compiler said (that would be a wrong table entry or flow),
    // and the same almost everywhere (a compiler may reserve more than it uses).
    assert!(over.is_empty(), "{over:?}");
    assert!(same * 100 > total * 99, "{same} of {total}");
}

#[test]
fn every_corelib_body_wraps_into_a_body_with_consistent_stack_depths() {
    let probe = Probe {
        enter: 0x7F00_1234_5670,
        leave: 0x7F00_1234_5680,
        sig_token: PROBE_SIG_TOKEN,
        cookie: 42,
    };
    let (mut wrapped, mut refused) = (0, 0);
    with_calls(&corelib(), |token, sig, body, calls, md| {
        let shape = method_shape(sig).unwrap();
        let locals =
            (body.header.local_sig != 0).then(|| md.standalone_sig(body.header.local_sig).unwrap());
        let ty = frame_local_type(sig).unwrap();
        let (_, index) = locals_with(locals, &ty).unwrap_or_else(|e| panic!("{token:#010x}: {e}"));
        let local = FrameLocal {
            locals_token: 0x1100_0F01,
            index,
            returns_value: shape.returns.is_some(),
        };
        let w = match wrap(body, &probe, local) {
            Ok(w) => w,
            Err(_) => {
                assert!(
                    body.code.iter().any(|i| i.op == OpCode::JMP),
                    "{token:#010x}"
                );
                refused += 1;
                return;
            }
        };
        wrapped += 1;
        let ret_pops = u16::from(shape.returns.is_some());
        let before = max_stack(body, calls, ret_pops).unwrap();
        let after = max_stack(&w.body, calls, ret_pops)
            .unwrap_or_else(|e| panic!("{token:#010x} wrapped: {e}"));
        assert_eq!(after, before.max(3), "{token:#010x}");
        assert!(after <= w.body.header.max_stack, "{token:#010x}");
        let bytes = w.body.encode().unwrap();
        let again = Body::parse(&bytes).unwrap();
        assert_eq!(again.encode().unwrap(), bytes, "{token:#010x}");
        assert!(!w.body.code.iter().any(|i| i.op == OpCode::TAIL));
        // The only ret is the last instruction.
        let rets: Vec<usize> = (0..w.body.code.len())
            .filter(|&i| w.body.code[i].op == OpCode::RET)
            .collect();
        assert_eq!(rets, vec![w.body.code.len() - 1], "{token:#010x}");
    });
    eprintln!("CoreLib wrap: {wrapped} bodies wrapped, {refused} refused (jmp)");
    assert!(wrapped > 20_000);
}
