//! Chrome's Trace Event Format (JSON object form), for chrome://tracing and Perfetto.
//!
//! Calls become exact `X` (complete) events. A sampled thread becomes a flame chart of
//! `X` events too: consecutive samples that share a stack prefix extend the same events,
//! so each event spans from the first sample showing the frame to the end of the last.
//! Allocation samples (`record --alloc`) that are followed draw a counter, the process's
//! estimated live sampled heap (`C` events, one per instant it changes).

use std::borrow::Cow;
use std::io::Write;

use serde::Serialize;
use serde_json::{Value, json};

use crate::model::{FrameId, FrameKind, Profile, ThreadProfile};
use crate::stacks::{self, validate};
use crate::{ExportError, Options};

/// The `pid` of every event: the model has no process id.
const PID: u32 = 1;

#[derive(Serialize)]
struct Event<'a> {
    name: Cow<'a, str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cat: Option<&'static str>,
    ph: &'static str,
    /// Microseconds since the profile start.
    ts: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    dur: Option<f64>,
    pid: u32,
    tid: u64,
    /// Async events (`b`/`e`): the pair's id.
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    args: Option<Value>,
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

fn metadata(name: &'static str, tid: u64, args: Value) -> Event<'static> {
    Event {
        name: name.into(),
        cat: None,
        ph: "M",
        ts: 0.0,
        dur: None,
        pid: PID,
        tid,
        id: None,
        args: Some(args),
    }
}

/// The event category: the frame kind, plus `sampled` for events merged from samples.
fn category(kind: FrameKind, sampled: bool) -> &'static str {
    match (kind, sampled) {
        (FrameKind::Managed, false) => "managed",
        (FrameKind::Native, false) => "native",
        (FrameKind::Runtime, false) => "runtime",
        (FrameKind::Managed, true) => "managed,sampled",
        (FrameKind::Native, true) => "native,sampled",
        (FrameKind::Runtime, true) => "runtime,sampled",
    }
}

/// A complete event before serialization, kept sortable.
struct Complete {
    frame: FrameId,
    start_ns: u64,
    end_ns: u64,
    depth: u32,
    sampled: Option<(u64, u64)>,
    /// The call's recorded values ([`crate::Call::values`]).
    values: Option<u32>,
}

fn from_calls(t: &ThreadProfile) -> Vec<Complete> {
    stacks::spans(&t.calls)
        .into_iter()
        .map(|s| Complete {
            frame: s.frame,
            start_ns: s.start_ns,
            end_ns: s.end_ns,
            depth: s.depth,
            sampled: None,
            values: s.values,
        })
        .collect()
}

/// Merges consecutive samples into complete events. Sample `i` covers the time up to
/// the next sample when that comes within twice its duration (`wall_ns`, else the
/// interval), else its duration alone; a gap closes every open frame.
fn from_samples(profile: &Profile, t: &ThreadProfile) -> Vec<Complete> {
    let interval_ns = profile.interval_ns;
    struct Open {
        frame: FrameId,
        start_ns: u64,
        samples: u64,
        cpu_ns: u64,
    }
    let mut out = Vec::new();
    let mut open: Vec<Open> = Vec::new();
    let close = |open: &mut Vec<Open>, keep: usize, end_ns: u64, out: &mut Vec<Complete>| {
        while open.len() > keep {
            let o = open.pop().expect("longer than keep");
            out.push(Complete {
                frame: o.frame,
                start_ns: o.start_ns,
                end_ns: end_ns.max(o.start_ns),
                depth: open.len() as u32,
                sampled: Some((o.samples, o.cpu_ns)),
                values: None,
            });
        }
    };
    let mut prev_end = 0;
    for (i, s) in t.samples.iter().enumerate() {
        let own = if s.wall_ns > 0 {
            s.wall_ns
        } else {
            interval_ns
        };
        let end_ns = match t.samples.get(i + 1) {
            Some(next)
                if next.time_ns >= s.time_ns
                    && next.time_ns - s.time_ns <= own.saturating_mul(2) =>
            {
                next.time_ns
            }
            _ => s.time_ns + own,
        };
        if s.time_ns > prev_end {
            close(&mut open, 0, prev_end, &mut out);
        }
        let stack = profile.stack_frames(s.stack);
        let common = open
            .iter()
            .zip(&stack)
            .take_while(|(o, f)| o.frame == **f)
            .count();
        close(&mut open, common, s.time_ns, &mut out);
        for &frame in &stack[common..] {
            open.push(Open {
                frame,
                start_ns: s.time_ns,
                samples: 0,
                cpu_ns: 0,
            });
        }
        for o in &mut open {
            o.samples += 1;
            o.cpu_ns += s.cpu_ns;
        }
        prev_end = end_ns;
    }
    close(&mut open, 0, prev_end, &mut out);
    out
}

/// Writes one JSON array element after the first with its separator.
struct Elements<W: Write> {
    out: W,
    first: bool,
}

impl<W: Write> Elements<W> {
    fn push(&mut self, event: &Event<'_>) -> Result<(), ExportError> {
        if !self.first {
            self.out.write_all(b",")?;
        }
        self.first = false;
        serde_json::to_writer(&mut self.out, event)?;
        Ok(())
    }
}

/// Writes `profile` as a Chrome trace: process and thread names as `M` events, then per
/// thread its calls (when it has any) or its merged samples as `X` events, ordered by
/// start time and depth. Times are microseconds since the profile start; `otherData`
/// holds the profile name and its start in Unix nanoseconds. A call's recorded values
/// (`record --args`, [`crate::ThreadProfile::call_values`]) are in its slice's `args`.
/// `opts` does not apply. The document is streamed: one thread's slices are held at a
/// time, never the whole JSON, so a trace of millions of slices converts in memory
/// proportional to its largest thread.
pub fn write(profile: &Profile, _opts: &Options, mut out: impl Write) -> Result<(), ExportError> {
    validate(profile)?;
    out.write_all(b"{\"traceEvents\":[")?;
    let mut events = Elements {
        out: &mut out,
        first: true,
    };
    events.push(&metadata(
        "process_name",
        0,
        json!({ "name": profile.name }),
    ))?;
    for (i, t) in profile.threads.iter().enumerate() {
        events.push(&metadata(
            "thread_name",
            t.os_tid,
            json!({ "name": t.name }),
        ))?;
        events.push(&metadata(
            "thread_sort_index",
            t.os_tid,
            json!({ "sort_index": i }),
        ))?;
    }
    for t in &profile.threads {
        let mut complete = if t.calls.is_empty() {
            from_samples(profile, t)
        } else {
            from_calls(t)
        };
        complete.sort_by_key(|c| (c.start_ns, c.depth));
        for c in complete {
            let frame = profile.frame(c.frame);
            let mut args = serde_json::Map::new();
            if let Some(m) = profile.module_of(frame) {
                args.insert("module".into(), m.name.as_str().into());
            }
            // The method's source (from the PDB): its file, and the frame's line (with
            // `--lines`) or else the method's first.
            if let Some(src) = profile.source(c.frame) {
                args.insert("file".into(), src.file.as_str().into());
                args.insert("line".into(), src.line.unwrap_or(src.start_line).into());
            }
            if let Some((samples, cpu_ns)) = c.sampled {
                args.insert("samples".into(), samples.into());
                args.insert("cpu_ns".into(), cpu_ns.into());
            } else if let Some(v) = c.values.and_then(|i| t.call_values.get(i as usize)) {
                args.extend(v.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
            events.push(&Event {
                name: Cow::Borrowed(&frame.name),
                cat: Some(category(frame.kind, c.sampled.is_some())),
                ph: "X",
                ts: us(c.start_ns),
                dur: Some(us(c.end_ns - c.start_ns)),
                pid: PID,
                tid: t.os_tid,
                id: None,
                args: (!args.is_empty()).then_some(Value::Object(args)),
            })?;
        }
    }
    // `record --waits`: each wait the runtime reported, as an async slice on its thread
    // (a row of its own: a wait need not nest in the sampled slices), named by what was
    // waited for, with the innermost frame of the waiting stack.
    let mut next_id = 0u64;
    for t in &profile.threads {
        for w in &t.waits {
            next_id += 1;
            let name = if w.lock { "lock contention" } else { "wait" };
            let leaf = profile
                .stack_frames(w.stack)
                .last()
                .map(|f| profile.frame(*f).name.clone())
                .unwrap_or_default();
            for (ph, ts) in [("b", w.time_ns), ("e", w.time_ns + w.wait_ns)] {
                events.push(&Event {
                    name: name.into(),
                    cat: Some("wait"),
                    ph,
                    ts: us(ts),
                    dur: None,
                    pid: PID,
                    tid: t.os_tid,
                    id: Some(next_id),
                    args: (ph == "b").then(|| json!({ "wait_ns": w.wait_ns, "in": leaf })),
                })?;
            }
        }
    }
    for m in &profile.markers {
        events.push(&Event {
            name: Cow::Borrowed(&m.name),
            cat: Some("threadpool"),
            ph: "X",
            ts: us(m.start_ns),
            dur: Some(us(m.end_ns.saturating_sub(m.start_ns))),
            pid: PID,
            tid: 0,
            id: None,
            args: None,
        })?;
    }
    let mut live = 0i64;
    for (at, delta, _) in stacks::live_heap_changes(profile) {
        live += delta;
        events.push(&Event {
            name: "Live sampled heap (estimated)".into(),
            cat: Some("memory"),
            ph: "C",
            ts: us(at),
            dur: None,
            pid: PID,
            tid: 0,
            id: None,
            args: Some(json!({ "bytes": live.max(0) })),
        })?;
    }
    out.write_all(b"],\"displayTimeUnit\":\"ns\",\"otherData\":")?;
    serde_json::to_writer(
        &mut out,
        &json!({
            "name": profile.name,
            "start_unix_ns": profile.start_unix_ns.to_string(),
            "interval_ns": profile.interval_ns.to_string(),
            "exporter": "clrprof",
        }),
    )?;
    out.write_all(b"}")?;
    Ok(())
}
