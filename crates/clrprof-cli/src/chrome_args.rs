//! `convert -f chrome` of a trace recorded with `--args`: puts each recorded invocation's
//! arguments, return value or exception into the `args` of its call's slice, so Perfetto
//! and chrome://tracing show them when the slice is selected.
//!
//! The export model carries calls without values, so the exporter asks for them slice by
//! slice as it streams the document ([`clrprof_export::chrome::SliceValues`]): a slice and
//! an invocation match when they have the same thread and function and the invocation
//! started within the slice (its record follows the Enter by the hook's time).

use std::collections::HashMap;

use clrprof_analysis::invocations::{Invocation, invocation_json};
use serde_json::{Map, Value};

/// The invocations of each (thread, function), in start order, with a cursor: the
/// exporter asks per thread in the order of the slices' start.
pub struct Values<'a> {
    by: HashMap<u64, HashMap<&'a str, (usize, Vec<&'a Invocation>)>>,
    /// Slices that got values.
    pub added: usize,
}

impl<'a> Values<'a> {
    pub fn new(invocations: &'a [Invocation]) -> Values<'a> {
        let mut by: HashMap<u64, HashMap<&str, (usize, Vec<&Invocation>)>> = HashMap::new();
        for i in invocations {
            by.entry(i.os_tid)
                .or_default()
                .entry(i.function.as_str())
                .or_default()
                .1
                .push(i);
        }
        Values { by, added: 0 }
    }
}

impl clrprof_export::chrome::SliceValues for Values<'_> {
    fn values(
        &mut self,
        os_tid: u64,
        name: &str,
        start_ns: u64,
        end_ns: u64,
    ) -> Option<Map<String, Value>> {
        let (cursor, list) = self.by.get_mut(&os_tid)?.get_mut(name)?;
        // The slice's times went through microseconds in the document before; 1 µs either
        // side keeps the match the same.
        let (start, end) = (start_ns as i64 - 1000, end_ns as i64 + 1000);
        while *cursor < list.len() && (list[*cursor].start_ns as i64) < start {
            *cursor += 1;
        }
        let inv = list.get(*cursor).filter(|i| (i.start_ns as i64) <= end)?;
        *cursor += 1;
        let Value::Object(mut values) = invocation_json(inv) else {
            return None;
        };
        for k in ["function", "os_tid", "start_ns", "duration_ns"] {
            values.remove(k);
        }
        self.added += 1;
        Some(values)
    }
}
