//! The bridge to the exporters: a trace as the neutral `clrprof_export::Profile`
//! (interned frames; per thread, samples root first with wall and CPU weights, and the
//! exact calls of trace mode).

use std::collections::{BTreeMap, HashMap};

use clrprof_export::{Call, Frame, FrameKind, Profile, Sample, ThreadProfile};

use crate::calltree;
use crate::names::Names;
use crate::samples::{self, NATIVE};
use crate::threads::ThreadNames;
use crate::timeline::Trace;

/// Builds the exporters' model of `trace`.
pub fn build(trace: &Trace<'_>) -> Profile {
    let names = Names::collect(&trace.events);
    let threads = ThreadNames::collect(&trace.events);
    let meta = &trace.header.meta;
    let rate = meta
        .settings
        .get("rate_hz")
        .and_then(|v| v.as_f64())
        .unwrap_or(0.0);
    let interval_ns = if rate > 0.0 { (1e9 / rate) as u64 } else { 0 };
    let start = trace.events.first().map(|e| e.ns).unwrap_or(0);
    let mut frames: Vec<Frame> = Vec::new();
    let mut index: HashMap<String, u32> = HashMap::new();
    let mut intern = |name: &str| -> u32 {
        if let Some(i) = index.get(name) {
            return *i;
        }
        let i = frames.len() as u32;
        frames.push(Frame {
            name: name.to_string(),
            module: None,
            kind: if name == NATIVE {
                FrameKind::Native
            } else {
                FrameKind::Managed
            },
        });
        index.insert(name.to_string(), i);
        i
    };
    let mut per: BTreeMap<u64, ThreadProfile> = BTreeMap::new();
    let thread = |per: &mut BTreeMap<u64, ThreadProfile>, tid: u64| {
        per.entry(tid).or_insert_with(|| ThreadProfile {
            name: threads.name(tid),
            os_tid: tid,
            samples: Vec::new(),
            calls: Vec::new(),
        });
    };
    for s in samples::named_samples(&trace.events, &names) {
        thread(&mut per, s.os_tid);
        let stack: Vec<u32> = s.stack.iter().rev().map(|n| intern(n)).collect();
        if let Some(t) = per.get_mut(&s.os_tid) {
            t.samples.push(Sample {
                time_ns: s.ns - start,
                stack,
                wall_ns: interval_ns,
                cpu_ns: s.cpu_ns,
            });
        }
    }
    // Trace mode: exact call intervals per thread, from the call-tree reconstruction
    // (one implementation of the SP-based shadow-stack repair).
    let mut b = calltree::Builder::new(true);
    trace.for_each_call(|e| b.push(e));
    let trees = b.finish(&names, &threads, 0);
    for (tid, calls) in trees.intervals {
        thread(&mut per, tid);
        let t = per.get_mut(&tid).expect("inserted above");
        for c in calls {
            t.calls.push(Call {
                frame: intern(&names.function(c.function)),
                start_ns: c.start_ns.saturating_sub(start),
                end_ns: c.end_ns.saturating_sub(start),
                depth: c.depth,
            });
        }
    }
    for t in per.values_mut() {
        t.calls.sort_by_key(|c| (c.start_ns, c.depth));
    }
    Profile {
        name: meta.command_line.join(" "),
        start_unix_ns: meta.start_unix_ns,
        interval_ns,
        frames,
        threads: per
            .into_values()
            .filter(|t| !t.samples.is_empty() || !t.calls.is_empty())
            .collect(),
    }
}
