//! `convert -f chrome` of a trace recorded with `--args`: puts each recorded invocation's
//! arguments, return value or exception into the `args` of its call's slice, so Perfetto
//! and chrome://tracing show them when the slice is selected.
//!
//! The export model carries calls without values, so the values are joined afterwards:
//! a slice and an invocation match when they have the same thread and function and the
//! invocation started within the slice (its record follows the Enter by the hook's time).

use std::collections::HashMap;

use clrprof_analysis::invocations::{Invocation, invocation_json};
use serde_json::Value;

/// Adds `args` to the slices of `chrome` (a Trace Event Format document); returns how
/// many slices got values.
pub fn add(chrome: &mut Value, invocations: &[Invocation]) -> usize {
    let mut by: HashMap<(u64, String), (usize, Vec<&Invocation>)> = HashMap::new();
    for i in invocations {
        by.entry((i.os_tid, i.function.clone()))
            .or_default()
            .1
            .push(i);
    }
    let Some(events) = chrome.get_mut("traceEvents").and_then(Value::as_array_mut) else {
        return 0;
    };
    let mut added = 0;
    for ev in events.iter_mut() {
        if ev["ph"] != "X" {
            continue;
        }
        let (Some(tid), Some(name), Some(ts), Some(dur)) = (
            ev["tid"].as_u64(),
            ev["name"].as_str().map(str::to_owned),
            ev["ts"].as_f64(),
            ev["dur"].as_f64(),
        ) else {
            continue;
        };
        let Some((cursor, list)) = by.get_mut(&(tid, name)) else {
            continue;
        };
        let (start, end) = ((ts * 1e3) as i64 - 1000, ((ts + dur) * 1e3) as i64 + 1000);
        while *cursor < list.len() && (list[*cursor].start_ns as i64) < start {
            *cursor += 1;
        }
        let Some(inv) = list.get(*cursor).filter(|i| (i.start_ns as i64) <= end) else {
            continue;
        };
        *cursor += 1;
        let mut values = invocation_json(inv);
        if let Some(o) = values.as_object_mut() {
            for k in ["function", "os_tid", "start_ns", "duration_ns"] {
                o.remove(k);
            }
        }
        match ev.get_mut("args").and_then(Value::as_object_mut) {
            Some(args) => {
                if let Value::Object(v) = values {
                    args.extend(v);
                }
            }
            None => ev["args"] = values,
        }
        added += 1;
    }
    added
}
