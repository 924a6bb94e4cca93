//! Invocations recorded with `record --args`: each call of an `--args` function with its
//! arguments, its return value or the exception that ended it, rebuilt from the
//! `CallArgs` / `CallReturn` / `CallUnwound` records of each thread.
//!
//! A thread's open invocations form a stack keyed by the profiled frame's SP (as the call
//! tree's): a `CallReturn` closes the invocation with its function and SP, and any
//! opened after it that never returned were unwound; a new `CallArgs` at an SP at or
//! above an open one means that one was unwound too. `CallUnwound` (the runtime's
//! unwind callback) closes the innermost open invocation of its function. Unwound
//! invocations carry the type of the last exception thrown on their thread.

use std::collections::HashMap;
use std::fmt::Write;

use clrprof_format::Event;
use clrprof_format::values::{
    Item, Value, ValueClass, ValueClasses, decode_field_names, decode_items_with, decode_names,
};
use serde::Serialize;
use serde_json::json;

use crate::names::Names;
use crate::timeline::Trace;

/// One call of an `--args` function.
#[derive(Debug, Clone)]
pub struct Invocation {
    pub function: String,
    pub os_tid: u64,
    pub start_ns: u64,
    /// `None` when the trace ended before the call did.
    pub duration_ns: Option<u64>,
    /// Arguments in order, `this` first when the method has one.
    pub args: Vec<Item>,
    /// The return value (`None`: void, unwound, or unfinished).
    pub ret: Option<Item>,
    /// The exception type that ended the call.
    pub exception: Option<String>,
    /// Some values were cut at the per-call bound.
    pub cut: bool,
}

struct Open {
    function: u64,
    sp: u32,
    inv: Invocation,
}

/// Every invocation in the trace, in start order. `problems` counts value lists that
/// could not be decoded (damaged records).
pub fn collect(trace: &Trace<'_>) -> (Vec<Invocation>, u64) {
    let names = Names::collect(&trace.events);
    let mut stacks: HashMap<u64, Vec<Open>> = HashMap::new();
    let mut last_exception: HashMap<u64, String> = HashMap::new();
    let mut done = Vec::new();
    let mut problems = 0u64;
    let unwind = |o: Open, ns: u64, exc: &HashMap<u64, String>, done: &mut Vec<Invocation>| {
        let mut inv = o.inv;
        inv.duration_ns = Some(ns.saturating_sub(inv.start_ns));
        inv.exception = Some(
            exc.get(&inv.os_tid)
                .cloned()
                .unwrap_or_else(|| "(unknown exception)".into()),
        );
        done.push(inv);
    };
    // Value names and types, once per function (`ArgNames`, format 1.2): calls refer
    // to them by index. Older 1.2 traces name every value in the call itself.
    let mut arg_names: HashMap<u64, Vec<(String, String)>> = HashMap::new();
    for e in &trace.events {
        if let Event::ArgNames {
            function, names, ..
        } = &e.event
        {
            match decode_names(names) {
                Ok(pairs) => {
                    arg_names.insert(*function, pairs);
                }
                Err(_) => problems += 1,
            }
        }
    }
    // Struct names and field names, once per class (`ValueClass`, format 2.6).
    let (classes, damaged) = value_classes(trace);
    problems += damaged;
    // The throws are not on the timeline: read them from the file, and apply each before
    // the first timeline event of its time or later.
    let mut thrown: Vec<(u64, u64, String)> = Vec::new();
    trace.for_each_exception(|e| {
        if let Event::ExceptionThrown { type_name, .. } = &e.event {
            thrown.push((e.ns, e.os_tid, type_name.to_string()));
        }
    });
    // Stable: throws of one thread keep their recorded order on equal timestamps.
    thrown.sort_by_key(|t| t.0);
    let mut thrown = thrown.into_iter().peekable();
    let no_names = Vec::new();
    for e in &trace.events {
        while let Some((_, os_tid, ty)) = thrown.next_if(|t| t.0 <= e.ns) {
            last_exception.insert(os_tid, ty);
        }
        match &e.event {
            Event::CallArgs {
                function,
                sp,
                values,
            } => {
                let sp = *sp as u32;
                let stack = stacks.entry(e.os_tid).or_default();
                while let Some(top) = stack.last() {
                    if (top.sp.wrapping_sub(sp) as i32) <= 0 {
                        let o = stack.pop().unwrap_or_else(|| unreachable!());
                        unwind(o, e.ns, &last_exception, &mut done);
                    } else {
                        break;
                    }
                }
                let value_names = arg_names.get(function).unwrap_or(&no_names);
                let (args, cut) = decode_items_with(values, value_names, Some(&classes))
                    .unwrap_or_else(|_| {
                        problems += 1;
                        (Vec::new(), true)
                    });
                stack.push(Open {
                    function: *function,
                    sp,
                    inv: Invocation {
                        function: names.function(*function),
                        os_tid: e.os_tid,
                        start_ns: e.ns,
                        duration_ns: None,
                        args,
                        ret: None,
                        exception: None,
                        cut,
                    },
                });
            }
            Event::CallReturn {
                function,
                sp,
                values,
            } => {
                let sp = *sp as u32;
                let stack = stacks.entry(e.os_tid).or_default();
                let Some(k) = stack
                    .iter()
                    .rposition(|o| o.function == *function && o.sp == sp)
                else {
                    continue;
                };
                while stack.len() > k + 1 {
                    let o = stack.pop().unwrap_or_else(|| unreachable!());
                    unwind(o, e.ns, &last_exception, &mut done);
                }
                let Some(o) = stack.pop() else { continue };
                let mut inv = o.inv;
                inv.duration_ns = Some(e.ns.saturating_sub(inv.start_ns));
                let value_names = arg_names.get(function).unwrap_or(&no_names);
                match decode_items_with(values, value_names, Some(&classes)) {
                    Ok((mut items, cut)) => {
                        inv.cut |= cut;
                        inv.ret = items.pop();
                    }
                    Err(_) => problems += 1,
                }
                done.push(inv);
            }
            Event::CallUnwound { function } => {
                let stack = stacks.entry(e.os_tid).or_default();
                if let Some(k) = stack.iter().rposition(|o| o.function == *function) {
                    while stack.len() > k {
                        let o = stack.pop().unwrap_or_else(|| unreachable!());
                        unwind(o, e.ns, &last_exception, &mut done);
                    }
                }
            }
            _ => {}
        }
    }
    for (_, stack) in stacks {
        done.extend(stack.into_iter().map(|o| o.inv));
    }
    done.sort_by_key(|i| (i.start_ns, i.os_tid));
    (done, problems)
}

/// The trace's `ValueClass` records (struct and field names the value lists refer to by
/// number), and how many could not be decoded.
fn value_classes(trace: &Trace<'_>) -> (ValueClasses, u64) {
    let mut classes = ValueClasses::new();
    let mut damaged = 0;
    for e in &trace.events {
        if let Event::ValueClass {
            class,
            name,
            fields,
        } = &e.event
        {
            match decode_field_names(fields) {
                Ok(fields) => {
                    classes.insert(
                        *class,
                        ValueClass {
                            name: name.to_string(),
                            fields,
                        },
                    );
                }
                Err(_) => damaged += 1,
            }
        }
    }
    (classes, damaged)
}

/// Decodes the values `--args` recorded for the calls the call-tree rebuild kept
/// ([`crate::calltree::CallValues`], attached to their own calls as the trace went) into
/// what [`invocation_json`] shows of an invocation, for the exporters' timelines.
pub struct CallValuesDecoder {
    /// Value names and types per function (`ArgNames`).
    arg_names: HashMap<u64, Vec<(String, String)>>,
    /// Struct classes by number (`ValueClass`).
    classes: ValueClasses,
    /// Per thread, the exceptions thrown (time, type), in time order.
    thrown: HashMap<u64, Vec<(u64, String)>>,
}

impl CallValuesDecoder {
    pub fn new(trace: &Trace<'_>) -> CallValuesDecoder {
        let mut arg_names = HashMap::new();
        for e in &trace.events {
            if let Event::ArgNames {
                function, names, ..
            } = &e.event
                && let Ok(pairs) = decode_names(names)
            {
                arg_names.insert(*function, pairs);
            }
        }
        let mut thrown: HashMap<u64, Vec<(u64, String)>> = HashMap::new();
        trace.for_each_exception(|e| {
            if let Event::ExceptionThrown { type_name, .. } = &e.event {
                thrown
                    .entry(e.os_tid)
                    .or_default()
                    .push((e.ns, type_name.to_string()));
            }
        });
        for t in thrown.values_mut() {
            t.sort_by_key(|t| t.0);
        }
        CallValuesDecoder {
            arg_names,
            classes: value_classes(trace).0,
            thrown,
        }
    }

    /// The `this`, `args`, `return`, `exception` and `truncated` of one call on `os_tid`
    /// that ended at `end_ns` (the exception that unwound it: the thread's last throw by
    /// then).
    pub fn json(
        &self,
        os_tid: u64,
        v: &crate::calltree::CallValues,
        end_ns: u64,
    ) -> serde_json::Map<String, serde_json::Value> {
        let no_names = Vec::new();
        let names = self.arg_names.get(&v.function).unwrap_or(&no_names);
        let classes = Some(&self.classes);
        let (args, mut cut) =
            decode_items_with(&v.args, names, classes).unwrap_or((Vec::new(), true));
        let mut ret = None;
        if let Some(r) = &v.ret {
            match decode_items_with(r, names, classes) {
                Ok((mut items, c)) => {
                    cut |= c;
                    ret = items.pop();
                }
                Err(_) => cut = true,
            }
        }
        let exception = v.unwound.then(|| {
            self.thrown
                .get(&os_tid)
                .and_then(|t| {
                    let k = t.partition_point(|x| x.0 <= end_ns);
                    k.checked_sub(1).map(|k| t[k].1.clone())
                })
                .unwrap_or_else(|| "(unknown exception)".into())
        });
        let inv = Invocation {
            function: String::new(),
            os_tid,
            start_ns: 0,
            duration_ns: None,
            args,
            ret,
            exception,
            cut,
        };
        let serde_json::Value::Object(mut values) = invocation_json(&inv) else {
            unreachable!("an invocation is an object")
        };
        for k in ["function", "os_tid", "start_ns", "duration_ns"] {
            values.remove(k);
        }
        values
    }
}

/// The short name of a type (`Shop.Item` → `Item`, generic arguments kept).
fn short(ty: &str) -> &str {
    let head = ty.split('<').next().unwrap_or(ty);
    match head.rfind('.') {
        Some(i) => &ty[i + 1..],
        None => ty,
    }
}

fn float(v: f64) -> String {
    if v.is_finite() && v == v.trunc() && v.abs() < 1e15 {
        format!("{v:.1}")
    } else {
        format!("{v}")
    }
}

/// A value as the log shows it: `Item{Sku="A-17", Qty=2}`, `Cart#3f2a`, `[1, 2, …]`.
pub fn render(v: &Value) -> String {
    let mut s = String::new();
    render_into(&mut s, v);
    s
}

fn render_into(s: &mut String, v: &Value) {
    match v {
        Value::Null => s.push_str("null"),
        Value::Bool(b) => s.push_str(if *b { "true" } else { "false" }),
        Value::Char(c) => {
            let ch = char::from_u32(u32::from(*c)).unwrap_or('\u{fffd}');
            let _ = write!(s, "{ch:?}");
        }
        Value::Int(i) => {
            let _ = write!(s, "{i}");
        }
        Value::UInt(u) => {
            let _ = write!(s, "{u}");
        }
        Value::F32(f) => s.push_str(&float(f64::from(*f))),
        Value::F64(f) => s.push_str(&float(*f)),
        Value::Str { full_length, text } => {
            let _ = write!(s, "{text:?}");
            let have = text.encode_utf16().count() as u64;
            if have < *full_length {
                s.pop();
                let _ = write!(s, "…\" ({full_length} chars)");
            }
        }
        Value::Enum { ty, member, value } => {
            if member.is_empty() {
                let _ = write!(s, "({}){value}", short(ty));
            } else {
                let _ = write!(s, "{}.{member}", short(ty));
            }
        }
        Value::Object {
            ty,
            id,
            fields,
            truncated,
        } => {
            let _ = write!(s, "{}#{:x}", short(ty), id & 0xffff);
            if let Some(fields) = fields {
                fields_into(s, fields, *truncated);
            }
        }
        Value::Boxed { value, .. } => {
            s.push_str("(object)");
            render_into(s, value);
        }
        Value::Array {
            element,
            length,
            items,
            truncated,
            ..
        } => {
            let _ = write!(s, "{}[{length}][", short(element));
            for (i, it) in items.iter().enumerate() {
                if i > 0 {
                    s.push_str(", ");
                }
                render_into(s, it);
            }
            if *truncated {
                s.push_str(if items.is_empty() { "…" } else { ", …" });
            }
            s.push(']');
        }
        Value::Struct {
            ty,
            fields,
            truncated,
        } => {
            s.push_str(short(ty));
            fields_into(s, fields, *truncated);
        }
        Value::Address { kind, address } => {
            let _ = write!(s, "{kind} {address:#x}");
        }
        Value::ByRef { target, .. } => {
            s.push_str("ref ");
            render_into(s, target);
        }
        Value::TypedRef { ty, address } => {
            let _ = write!(s, "{}@{address:#x}", short(ty));
        }
        Value::Unreadable(why) => {
            let _ = write!(s, "<unreadable: {why}>");
        }
        Value::Cut => s.push('…'),
    }
}

fn fields_into(s: &mut String, fields: &[(String, Value)], truncated: bool) {
    s.push('{');
    for (i, (name, v)) in fields.iter().enumerate() {
        if i > 0 {
            s.push_str(", ");
        }
        let _ = write!(s, "{name}=");
        render_into(s, v);
    }
    if truncated {
        s.push_str(if fields.is_empty() { "…" } else { ", …" });
    }
    s.push('}');
}

/// One log line: `Shop.Cart.Add(this=Cart#3f2a, qty=2) → true  4.1 µs  [tid 812]`.
pub fn log_line(inv: &Invocation) -> String {
    let mut s = format!("{}(", inv.function);
    for (i, a) in inv.args.iter().enumerate() {
        if i > 0 {
            s.push_str(", ");
        }
        let _ = write!(s, "{}=", a.name);
        render_into(&mut s, &a.value);
    }
    s.push(')');
    match (&inv.exception, &inv.ret, inv.duration_ns) {
        (Some(e), _, _) => {
            let _ = write!(s, " ✗ {e}");
        }
        (None, Some(r), _) => {
            s.push_str(" → ");
            render_into(&mut s, &r.value);
        }
        (None, None, None) => s.push_str(" (unfinished)"),
        (None, None, Some(_)) => {}
    }
    if let Some(d) = inv.duration_ns {
        let _ = write!(s, "  {}", crate::units::ns(d));
    }
    let _ = write!(s, "  [tid {}]", inv.os_tid);
    if inv.cut {
        s.push_str("  (values cut)");
    }
    s
}

/// The JSON form of a value (schema in docs/report-json.md).
pub fn value_json(v: &Value) -> serde_json::Value {
    const SAFE: i64 = 1 << 53;
    match v {
        Value::Null => serde_json::Value::Null,
        Value::Bool(b) => json!(b),
        Value::Char(c) => json!(char::from_u32(u32::from(*c)).map(String::from)),
        Value::Int(i) if (-SAFE..=SAFE).contains(i) => json!(i),
        Value::Int(i) => json!(i.to_string()),
        Value::UInt(u) if *u <= SAFE as u64 => json!(u),
        Value::UInt(u) => json!(u.to_string()),
        Value::F32(f) => json!(f64::from(*f)),
        Value::F64(f) => json!(f),
        Value::Str { full_length, text } => {
            if (text.encode_utf16().count() as u64) < *full_length {
                json!({ "type": "System.String", "value": text, "length": full_length, "truncated": true })
            } else {
                json!(text)
            }
        }
        Value::Enum { ty, member, value } => {
            json!({ "type": ty, "value": if member.is_empty() { json!(value) } else { json!(member) }, "number": value })
        }
        Value::Object {
            ty,
            id,
            fields,
            truncated,
        } => {
            let mut o = json!({ "type": ty, "id": id });
            if let Some(f) = fields {
                o["fields"] = fields_json(f);
            }
            if *truncated {
                o["truncated"] = json!(true);
            }
            o
        }
        Value::Boxed { ty, id, value } => {
            json!({ "type": ty, "id": id, "value": value_json(value) })
        }
        Value::Array {
            element,
            rank,
            length,
            items,
            truncated,
        } => {
            let mut o = json!({
                "type": format!("{element}[{}]", ",".repeat(rank.saturating_sub(1) as usize)),
                "length": length,
                "items": items.iter().map(value_json).collect::<Vec<_>>(),
            });
            if *truncated {
                o["truncated"] = json!(true);
            }
            o
        }
        Value::Struct {
            ty,
            fields,
            truncated,
        } => {
            let mut o = json!({ "type": ty, "fields": fields_json(fields) });
            if *truncated {
                o["truncated"] = json!(true);
            }
            o
        }
        Value::Address { kind, address } => json!({ "type": kind, "address": address }),
        Value::ByRef { address, target } => {
            json!({ "type": "byref", "address": address, "value": value_json(target) })
        }
        Value::TypedRef { ty, address } => json!({ "type": ty, "address": address }),
        Value::Unreadable(why) => json!({ "type": "unreadable", "reason": why }),
        Value::Cut => json!({ "type": "cut", "truncated": true }),
    }
}

fn fields_json(fields: &[(String, Value)]) -> serde_json::Value {
    let mut m = serde_json::Map::new();
    for (n, v) in fields {
        m.insert(n.clone(), value_json(v));
    }
    serde_json::Value::Object(m)
}

#[derive(Serialize)]
struct ArgJson<'a> {
    name: &'a str,
    #[serde(rename = "type")]
    ty: &'a str,
    value: serde_json::Value,
}

/// The JSON form of an invocation (schema in docs/report-json.md).
pub fn invocation_json(inv: &Invocation) -> serde_json::Value {
    let (this, args): (Vec<&Item>, Vec<&Item>) = inv.args.iter().partition(|a| a.name == "this");
    json!({
        "function": inv.function,
        "os_tid": inv.os_tid,
        "start_ns": inv.start_ns,
        "duration_ns": inv.duration_ns,
        "this": this.first().map(|t| value_json(&t.value)),
        "args": args.iter().map(|a| ArgJson { name: &a.name, ty: &a.ty, value: value_json(&a.value) }).collect::<Vec<_>>(),
        "return": inv.ret.as_ref().map(|r| json!({ "type": r.ty, "value": value_json(&r.value) })),
        "exception": inv.exception,
        "truncated": inv.cut,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rendering() {
        let v = Value::Struct {
            ty: "Shop.Item".into(),
            fields: vec![
                (
                    "Sku".into(),
                    Value::Str {
                        full_length: 4,
                        text: "A-17".into(),
                    },
                ),
                ("Qty".into(), Value::Int(2)),
            ],
            truncated: false,
        };
        assert_eq!(render(&v), r#"Item{Sku="A-17", Qty=2}"#);
        assert_eq!(render(&Value::F64(9.5)), "9.5");
        assert_eq!(render(&Value::F64(3.0)), "3.0");
        assert_eq!(
            render(&Value::Str {
                full_length: 300,
                text: "ab".into()
            }),
            "\"ab…\" (300 chars)"
        );
        assert_eq!(
            value_json(&Value::Int(1 << 60)),
            json!("1152921504606846976")
        );
    }
}
