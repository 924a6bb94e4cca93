//! The Firefox Profiler's processed profile format (`preprocessedProfileVersion` 55),
//! written as it is produced: thread by thread, each table once it is final.
//!
//! One process holds one thread per [`ThreadProfile`], with its name and tid. Frames are
//! labels in one of three categories (Managed, Native, Runtime), with the module as
//! subcategory; a function carries its source file and first line, and a frame that stands
//! for one line (`convert --lines`) that line, when the model knows them. The profile's
//! stack table is translated into each thread's (the format keeps one per thread). Samples
//! keep their times and CPU deltas. Calls become interval markers named after the function
//! (with the call's stack, and the values `record --args` recorded for it, as JSON); a
//! thread with calls and no samples also gets samples rebuilt from its calls, so that its
//! call tree and stack chart are filled.
//!
//! Allocation samples (`record --alloc`) become the process's native allocations, which
//! the profiler keeps on the process's first thread and offers above that thread's call
//! tree ("Native Allocations", and "Retained Memory": the allocations no GC was seen
//! collecting): each sample an allocation of its estimated bytes, and a deallocation at
//! the GC that found a followed sample collected. A memory track draws the followed
//! samples' estimated live bytes.
//!
//! Memory: the document is never held. The format's tables are columns, so a thread's
//! samples and markers are written column by column, each a pass over the model (the
//! rebuilt call stacks are kept as one stack index per call); what is held is the
//! thread's own stack, frame, function and string tables, which grow with its distinct
//! stacks, not with its samples or calls. The document is what `fxprof-processed-profile`
//! 0.8 writes for the same profile (a test compares them), with the source columns filled.

use std::collections::HashMap;
use std::io::Write;
use std::time::Duration;

use crate::model::{FrameId, FrameKind, Profile, StackId, ThreadProfile};
use crate::stacks::{self, Span, SpanEvent, validate};
use crate::{ExportError, Options};

/// The declared interval of a profile without one (a call trace): synthesized samples
/// are weighted in units of it.
const TRACE_INTERVAL_NS: u64 = 1_000;

/// The category of frames of each kind; 0 is the format's default category, "Other".
fn category(kind: FrameKind) -> u8 {
    match kind {
        FrameKind::Managed => 1,
        FrameKind::Native => 2,
        FrameKind::Runtime => 3,
    }
}

const CATEGORIES: [(&str, &str); 4] = [
    ("Other", "grey"),
    ("Managed", "yellow"),
    ("Native", "lightblue"),
    ("Runtime", "orange"),
];

/// The marker types: a traced call, and a wait the runtime reported (or a process-wide
/// interval such as thread-pool starvation).
fn marker_schema(calls: bool, waits: bool, values: bool) -> serde_json::Value {
    let [mut call, wait] = [
        serde_json::json!({
            "name": "ClrprofCall",
            "display": ["marker-chart", "marker-table"],
            "chartLabel": "{marker.name}",
            "tableLabel": "{marker.name} ({marker.data.module})",
            "description": "A traced call: exact enter and leave times",
            "fields": [
                {"key": "depth", "label": "Depth", "format": "integer"},
                {"key": "module", "label": "Module", "format": "unique-string", "searchable": true}
            ]
        }),
        serde_json::json!({
            "name": "ClrprofWait",
            "display": ["marker-chart", "marker-table"],
            "chartLabel": "{marker.name}",
            "tableLabel": "{marker.name} in {marker.data.inner}",
            "description": "A wait the runtime reported: a contended lock or a wait handle",
            "fields": [
                {"key": "inner", "label": "Waiting in", "format": "unique-string", "searchable": true}
            ]
        }),
    ];
    if values {
        // The values recorded for the call (`record --args`), as JSON: sanitized, as
        // the profiler removes such strings from a profile it uploads when asked to.
        call["fields"]
            .as_array_mut()
            .expect("fields")
            .push(serde_json::json!({"key": "values", "label": "Values", "format": "sanitized-string", "searchable": true}));
    }
    let used = [(calls, call), (waits, wait)];
    serde_json::Value::Array(used.into_iter().filter(|u| u.0).map(|u| u.1).collect())
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1_000_000.0
}

/// The JSON writer: values through serde_json (strings escaped, floats as it prints
/// them), punctuation by hand.
struct Json<W: Write> {
    w: W,
}

impl<W: Write> Json<W> {
    fn raw(&mut self, s: &str) -> Result<(), ExportError> {
        self.w.write_all(s.as_bytes())?;
        Ok(())
    }

    fn value(&mut self, v: &impl serde::Serialize) -> Result<(), ExportError> {
        serde_json::to_writer(&mut self.w, v)?;
        Ok(())
    }

    /// `"key":` preceded by a comma unless `first`.
    fn key(&mut self, key: &str, first: bool) -> Result<(), ExportError> {
        if !first {
            self.raw(",")?;
        }
        self.value(&key)?;
        self.raw(":")
    }

    /// `,"key":value`.
    fn field(&mut self, key: &str, v: &impl serde::Serialize) -> Result<(), ExportError> {
        self.key(key, false)?;
        self.value(v)
    }

    /// `,"key":[v, …]` with each item written by `each`.
    fn column<T>(
        &mut self,
        key: &str,
        items: impl IntoIterator<Item = T>,
        mut each: impl FnMut(&mut Self, T) -> Result<(), ExportError>,
    ) -> Result<(), ExportError> {
        self.key(key, false)?;
        self.raw("[")?;
        for (i, item) in items.into_iter().enumerate() {
            if i > 0 {
                self.raw(",")?;
            }
            each(self, item)?;
        }
        self.raw("]")
    }

    /// `,"key":[v, v, …]`: `n` times the same value.
    fn repeat(&mut self, key: &str, v: &str, n: usize) -> Result<(), ExportError> {
        self.column(key, 0..n, |j, _| j.raw(v))
    }

    /// `,"key":[…]` of times as deltas from the previous one (the first from 0), in ms.
    fn deltas(&mut self, key: &str, times: impl Iterator<Item = u64>) -> Result<(), ExportError> {
        let mut prev = 0;
        self.column(key, times, |j, t| {
            let d = ms(t.wrapping_sub(prev));
            prev = t;
            j.value(&d)
        })
    }

    /// `,"key":[…]` of optional indexes (null for none).
    fn indexes(
        &mut self,
        key: &str,
        items: impl Iterator<Item = Option<u32>>,
    ) -> Result<(), ExportError> {
        self.column(key, items, |j, i| match i {
            Some(i) => j.value(&i),
            None => j.raw("null"),
        })
    }
}

/// The subcategory of each frame (by [`FrameId`] index) and the subcategories of each
/// category: "Other", then the modules of that category's frames, in frame order.
fn subcategories(profile: &Profile) -> (Vec<u16>, [Vec<&str>; 4]) {
    let mut names: [Vec<&str>; 4] = Default::default();
    for n in &mut names {
        n.push("Other");
    }
    let mut index: HashMap<(u8, &str), u16> = HashMap::new();
    let of_frame = profile
        .frames
        .iter()
        .map(|f| match profile.module_of(f) {
            None => 0,
            Some(m) => {
                let c = category(f.kind);
                *index.entry((c, m.name.as_str())).or_insert_with(|| {
                    let list = &mut names[c as usize];
                    list.push(m.name.as_str());
                    (list.len() - 1) as u16
                })
            }
        })
        .collect();
    (of_frame, names)
}

/// One thread's tables, as the format has them: strings, functions (one per name),
/// frames (a function in a category pair), stacks (a frame with its prefix).
struct Tables<'a> {
    profile: &'a Profile,
    subcategory: &'a [u16],
    strings: Vec<&'a str>,
    string_index: HashMap<&'a str, u32>,
    /// Per function, the string of its name.
    funcs: Vec<u32>,
    func_index: HashMap<u32, u32>,
    /// Per frame: function, category, subcategory.
    frames: Vec<(u32, u8, u16)>,
    frame_index: HashMap<(u32, u8, u16), u32>,
    /// Per stack: prefix and frame.
    stacks: Vec<(Option<u32>, u32)>,
    stack_index: HashMap<(Option<u32>, u32), u32>,
    /// The model's stacks translated so far.
    ours: HashMap<StackId, u32>,
}

impl<'a> Tables<'a> {
    fn new(profile: &'a Profile, subcategory: &'a [u16]) -> Self {
        Tables {
            profile,
            subcategory,
            strings: Vec::new(),
            string_index: HashMap::new(),
            funcs: Vec::new(),
            func_index: HashMap::new(),
            frames: Vec::new(),
            frame_index: HashMap::new(),
            stacks: Vec::new(),
            stack_index: HashMap::new(),
            ours: HashMap::new(),
        }
    }

    fn string(&mut self, s: &'a str) -> u32 {
        *self.string_index.entry(s).or_insert_with(|| {
            self.strings.push(s);
            (self.strings.len() - 1) as u32
        })
    }

    fn frame(&mut self, id: FrameId) -> u32 {
        let f = self.profile.frame(id);
        let name = self.string(&f.name);
        let func = *self.func_index.entry(name).or_insert_with(|| {
            self.funcs.push(name);
            (self.funcs.len() - 1) as u32
        });
        let key = (func, category(f.kind), self.subcategory[id.0 as usize]);
        *self.frame_index.entry(key).or_insert_with(|| {
            self.frames.push(key);
            (self.frames.len() - 1) as u32
        })
    }

    /// The stack of `frame` called from `prefix`.
    fn push(&mut self, prefix: Option<u32>, frame: FrameId) -> u32 {
        let frame = self.frame(frame);
        *self.stack_index.entry((prefix, frame)).or_insert_with(|| {
            self.stacks.push((prefix, frame));
            (self.stacks.len() - 1) as u32
        })
    }

    /// The model's stack `id` in this thread's table; only the entries on the way up to
    /// the first one translated before are added.
    fn stack(&mut self, id: StackId) -> u32 {
        if let Some(&s) = self.ours.get(&id) {
            return s;
        }
        let mut todo = Vec::new();
        let mut prefix = None;
        let mut next = Some(id);
        while let Some(i) = next {
            if let Some(&h) = self.ours.get(&i) {
                prefix = Some(h);
                break;
            }
            todo.push(i);
            next = self.profile.stack(i).parent;
        }
        for i in todo.into_iter().rev() {
            let h = self.push(prefix, self.profile.stack(i).frame);
            self.ours.insert(i, h);
            prefix = Some(h);
        }
        prefix.expect("a stack has at least its own entry")
    }

    /// An already translated stack (see [`Tables::stack`]).
    fn known(&self, id: Option<StackId>) -> Option<u32> {
        id.map(|id| self.ours[&id])
    }

    /// An already interned string.
    fn known_string(&self, s: &str) -> u32 {
        self.string_index[s]
    }
}

/// What a traced thread's calls give: each span's stack, and the synthesized samples.
struct CallWalk<'s> {
    spans: &'s [Span],
    /// Per span, its stack in the thread's table.
    stack_of: Vec<u32>,
}

impl CallWalk<'_> {
    /// The samples rebuilt from the calls, one at every boundary time: (time, stack,
    /// weight in intervals up to the next boundary, CPU µs since the previous sample
    /// when code was running).
    fn samples(
        &self,
        interval: u64,
        mut each: impl FnMut(u64, Option<u32>, i32, u64) -> Result<(), ExportError>,
    ) -> Result<(), ExportError> {
        let mut open: Vec<u32> = Vec::new();
        let mut pending: Option<(u64, Option<u32>)> = None;
        let mut prev_sample = (0u64, false);
        let mut emit = |since: u64, until: u64, stack: Option<u32>| {
            let span = until - since;
            let weight = i32::try_from((span + interval / 2) / interval).unwrap_or(i32::MAX);
            let (prev, running) = prev_sample;
            let cpu = if running { since - prev } else { 0 };
            prev_sample = (since, stack.is_some());
            each(since, stack, weight, cpu / 1000)
        };
        let mut events = stacks::events_iter(self.spans).peekable();
        let mut end = 0;
        while let Some(e) = events.next() {
            let at = e.at(self.spans);
            end = at;
            match e {
                SpanEvent::Open(i) => open.push(self.stack_of[i]),
                SpanEvent::Close(_) => {
                    open.pop();
                }
            }
            let last_at_this_time = events.peek().is_none_or(|n| n.at(self.spans) != at);
            if last_at_this_time {
                if let Some((since, stack)) = pending.take() {
                    emit(since, at, stack)?;
                }
                pending = Some((at, open.last().copied()));
            }
        }
        if let Some((since, stack)) = pending {
            emit(since, end, stack)?;
        }
        Ok(())
    }

    fn sample_count(&self) -> usize {
        let mut n = 0;
        let _ = self.samples(1, |_, _, _, _| {
            n += 1;
            Ok(())
        });
        n
    }
}

/// A marker of a thread, in table order.
#[derive(Clone, Copy)]
enum Marker {
    /// A traced call: its span.
    Call(usize),
    /// A wait of the thread: its index in [`ThreadProfile::waits`].
    Wait(usize),
    /// A process-wide interval (on the first thread): its index in [`Profile::markers`].
    Process(usize),
}

/// Writes one thread; returns nothing but errors. `first`: the process's first thread,
/// which also holds the process-wide markers and every thread's allocations.
fn write_thread<W: Write>(
    j: &mut Json<W>,
    profile: &Profile,
    t: &ThreadProfile,
    first: bool,
    subcategory: &[u16],
    interval: u64,
) -> Result<(), ExportError> {
    let mut tables = Tables::new(profile, subcategory);
    let start = thread_start(t);
    let mut end = start;

    // Pass 1: the stacks of the samples, then of the calls, the waits and the
    // allocations, in this order, with the markers' strings where they come.
    for s in &t.samples {
        if let Some(id) = s.stack {
            tables.stack(id);
        }
        end = end.max(s.time_ns + s.wall_ns);
    }
    let spans = stacks::spans(&t.calls);
    let mut walk = CallWalk {
        spans: &spans,
        stack_of: Vec::with_capacity(spans.len()),
    };
    let empty_module = "";
    // The spans open in their order (a parent before its children).
    let mut calls_end = 0;
    for s in &spans {
        let parent = s.parent.map(|p| walk.stack_of[p]);
        walk.stack_of.push(tables.push(parent, s.frame));
        let f = profile.frame(s.frame);
        tables.string(&f.name);
        tables.string(profile.module_of(f).map_or(empty_module, |m| &m.name));
        calls_end = calls_end.max(s.end_ns);
    }
    end = end.max(calls_end);
    let inner_name = |stack| inner_name(profile, stack);
    for w in &t.waits {
        if let Some(id) = w.stack {
            tables.stack(id);
        }
        tables.string(if w.lock { "lock contention" } else { "wait" });
        tables.string(inner_name(w.stack));
        end = end.max(w.time_ns + w.wait_ns);
    }
    let process_markers: &[crate::model::ProcessMarker] =
        if first { &profile.markers } else { &[] };
    for m in process_markers {
        tables.string(&m.name);
        tables.string("");
    }
    let allocations = if first {
        allocation_events(profile)
    } else {
        Vec::new()
    };
    for (_, stack, _, _) in &allocations {
        if let Some(id) = stack {
            tables.stack(*id);
        }
    }
    if let Some(last) = allocations.last() {
        end = end.max(last.0);
    }

    j.raw("{")?;
    j.key("name", true)?;
    j.value(&t.name)?;
    j.field("tid", &tid(t))?;
    j.field("pid", &"0")?;
    j.field("processName", &process_name(profile))?;
    j.field("processType", &"default")?;
    j.field("processStartupTime", &0.0)?;
    j.field("processShutdownTime", &())?;
    j.field("registerTime", &ms(start))?;
    j.field("unregisterTime", &ms(end))?;
    j.field("isMainThread", &false)?;
    j.field("showMarkersInTimeline", &false)?;
    j.raw(",\"pausedRanges\":[]")?;

    // The samples, column by column.
    j.key("samples", false)?;
    j.raw("{\"weightType\":\"samples\"")?;
    if t.samples.is_empty() && !t.calls.is_empty() {
        j.field("length", &walk.sample_count())?;
        for column in 0..4 {
            let key = ["stack", "timeDeltas", "weight", "threadCPUDelta"][column];
            j.key(key, false)?;
            j.raw("[")?;
            let mut n = 0usize;
            let mut prev = 0u64;
            walk.samples(interval, |at, stack, weight, cpu| {
                if n > 0 {
                    j.raw(",")?;
                }
                n += 1;
                match column {
                    0 => match stack {
                        Some(s) => j.value(&s),
                        None => j.raw("null"),
                    },
                    1 => {
                        let d = ms(at - prev);
                        prev = at;
                        j.value(&d)
                    }
                    2 => j.value(&weight),
                    _ => j.value(&cpu),
                }
            })?;
            j.raw("]")?;
        }
    } else {
        // In time order (the model keeps them so; a permutation otherwise).
        let sorted = t.samples.is_sorted_by_key(|s| s.time_ns);
        let order: Vec<u32> = if sorted {
            Vec::new()
        } else {
            let mut o: Vec<u32> = (0..t.samples.len() as u32).collect();
            o.sort_by_key(|&i| t.samples[i as usize].time_ns);
            o
        };
        let samples = || -> Box<dyn Iterator<Item = &crate::model::Sample> + '_> {
            if sorted {
                Box::new(t.samples.iter())
            } else {
                Box::new(order.iter().map(|&i| &t.samples[i as usize]))
            }
        };
        j.field("length", &t.samples.len())?;
        j.indexes("stack", samples().map(|s| tables.known(s.stack)))?;
        j.deltas("timeDeltas", samples().map(|s| s.time_ns))?;
        j.repeat("weight", "1", t.samples.len())?;
        j.column("threadCPUDelta", samples(), |j, s| {
            j.value(&(s.cpu_ns / 1000))
        })?;
    }
    j.raw("}")?;

    // The markers: the calls, the waits, the process-wide intervals.
    let markers = || {
        let calls = (0..spans.len()).map(Marker::Call);
        let waits = (0..t.waits.len()).map(Marker::Wait);
        let process = (0..process_markers.len()).map(Marker::Process);
        calls.chain(waits).chain(process)
    };
    let times = |m: Marker| match m {
        Marker::Call(i) => (spans[i].start_ns, spans[i].end_ns),
        Marker::Wait(i) => (t.waits[i].time_ns, t.waits[i].time_ns + t.waits[i].wait_ns),
        Marker::Process(i) => (process_markers[i].start_ns, process_markers[i].end_ns),
    };
    let name = |m| marker_name(profile, t, &spans, process_markers, m);
    j.key("markers", false)?;
    j.raw("{")?;
    j.key("length", true)?;
    j.value(&(spans.len() + t.waits.len() + process_markers.len()))?;
    j.column("category", markers(), |j, m| match m {
        Marker::Call(i) => j.value(&category(profile.frame(spans[i].frame).kind)),
        _ => j.raw("1"),
    })?;
    j.column("data", markers(), |j, m| {
        match m {
            Marker::Call(i) => {
                j.raw("{\"type\":\"ClrprofCall\",\"cause\":{\"stack\":")?;
                j.value(&walk.stack_of[i])?;
                j.raw("}")?;
                j.field("depth", &f64::from(spans[i].depth))?;
                let f = profile.frame(spans[i].frame);
                let module = profile.module_of(f).map_or(empty_module, |m| &m.name);
                j.field("module", &tables.known_string(module))?;
                if let Some(v) = spans[i].values.and_then(|v| t.call_values.get(v as usize)) {
                    j.field("values", &serde_json::to_string(v)?)?;
                }
            }
            Marker::Wait(i) => {
                let w = &t.waits[i];
                j.raw("{\"type\":\"ClrprofWait\"")?;
                if let Some(s) = tables.known(w.stack) {
                    j.raw(",\"cause\":{\"stack\":")?;
                    j.value(&s)?;
                    j.raw("}")?;
                }
                j.field("inner", &tables.known_string(inner_name(w.stack)))?;
            }
            Marker::Process(_) => {
                j.raw("{\"type\":\"ClrprofWait\"")?;
                j.field("inner", &tables.known_string(""))?;
            }
        }
        j.raw("}")
    })?;
    j.column("endTime", markers(), |j, m| j.value(&ms(times(m).1)))?;
    j.column("name", markers(), |j, m| {
        j.value(&tables.known_string(name(m)))
    })?;
    j.repeat(
        "phase",
        "1",
        spans.len() + t.waits.len() + process_markers.len(),
    )?;
    j.column("startTime", markers(), |j, m| j.value(&ms(times(m).0)))?;
    j.raw("}")?;

    if !allocations.is_empty() {
        j.key("nativeAllocations", false)?;
        j.raw("{")?;
        j.key("length", true)?;
        j.value(&allocations.len())?;
        j.field("weightType", &"bytes")?;
        j.column("time", &allocations, |j, a| j.value(&ms(a.0)))?;
        j.column("weight", &allocations, |j, a| j.value(&a.3))?;
        j.indexes("stack", allocations.iter().map(|a| tables.known(a.1)))?;
        j.column("memoryAddress", &allocations, |j, a| j.value(&a.2))?;
        j.repeat("threadId", "0", allocations.len())?;
        j.raw("}")?;
    }
    drop(walk);
    drop(spans);
    write_tables(j, profile, tables)?;
    j.raw("}")
}

/// The innermost frame's name of a wait's stack ("" for none).
fn inner_name(profile: &Profile, stack: Option<StackId>) -> &str {
    profile
        .stack_frames(stack)
        .last()
        .map_or("", |f| profile.frame(*f).name.as_str())
}

fn marker_name<'p>(
    profile: &'p Profile,
    t: &ThreadProfile,
    spans: &[Span],
    process_markers: &'p [crate::model::ProcessMarker],
    m: Marker,
) -> &'p str {
    match m {
        Marker::Call(i) => &profile.frame(spans[i].frame).name,
        Marker::Wait(i) if t.waits[i].lock => "lock contention",
        Marker::Wait(_) => "wait",
        Marker::Process(i) => &process_markers[i].name,
    }
}

/// The thread's tables, final once its samples, markers and allocations are written;
/// the functions' source files are added to its strings here.
fn write_tables<'a, W: Write>(
    j: &mut Json<W>,
    profile: &'a Profile,
    mut tables: Tables<'a>,
) -> Result<(), ExportError> {
    j.key("stackTable", false)?;
    j.raw("{")?;
    j.key("length", true)?;
    j.value(&tables.stacks.len())?;
    j.indexes("prefix", tables.stacks.iter().map(|s| s.0))?;
    j.column("frame", &tables.stacks, |j, s| j.value(&s.1))?;
    j.raw("}")?;

    // Sources by function name (the frames' labels): the first frame of that name with
    // a known source.
    let mut by_name: HashMap<&str, &crate::model::Source> = HashMap::new();
    for (i, f) in profile.frames.iter().enumerate() {
        if let Some(Some(s)) = profile.sources.get(i) {
            by_name.entry(f.name.as_str()).or_insert(s);
        }
    }
    let sources: Vec<Option<&crate::model::Source>> = tables
        .funcs
        .iter()
        .map(|&name| by_name.get(tables.strings[name as usize]).copied())
        .collect();
    let files: Vec<Option<u32>> = sources
        .iter()
        .map(|s| s.map(|s| tables.string(&s.file)))
        .collect();

    let n = tables.frames.len();
    j.key("frameTable", false)?;
    j.raw("{")?;
    j.key("length", true)?;
    j.value(&n)?;
    j.repeat("address", "-1", n)?;
    j.repeat("inlineDepth", "0", n)?;
    j.column("category", &tables.frames, |j, f| j.value(&f.1))?;
    j.column("subcategory", &tables.frames, |j, f| j.value(&f.2))?;
    j.column("func", &tables.frames, |j, f| j.value(&f.0))?;
    j.repeat("nativeSymbol", "null", n)?;
    j.repeat("innerWindowID", "0", n)?;
    // A frame's line is its function's line when the frame stands for one line.
    j.indexes(
        "line",
        tables
            .frames
            .iter()
            .map(|f| sources[f.0 as usize].and_then(|s| s.line)),
    )?;
    j.repeat("column", "null", n)?;
    j.raw("}")?;

    let n = tables.funcs.len();
    j.key("funcTable", false)?;
    j.raw("{")?;
    j.key("length", true)?;
    j.value(&n)?;
    j.column("name", &tables.funcs, |j, f| j.value(f))?;
    j.repeat("isJS", "false", n)?;
    j.repeat("relevantForJS", "false", n)?;
    j.repeat("resource", "-1", n)?;
    j.indexes("fileName", files.iter().copied())?;
    j.indexes(
        "lineNumber",
        sources.iter().map(|s| s.map(|s| s.start_line)),
    )?;
    j.repeat("columnNumber", "null", n)?;
    j.raw("}")?;

    j.raw(",\"resourceTable\":{\"length\":0,\"lib\":[],\"name\":[],\"host\":[],\"type\":[]}")?;
    j.raw(
        ",\"nativeSymbols\":{\"length\":0,\"address\":[],\"functionSize\":[],\"libIndex\":[],\"name\":[]}",
    )?;
    j.column("stringArray", &tables.strings, |j, s| j.value(s))
}

/// The process's allocation events, in time order: (time, stack, address, signed size),
/// an allocation, or a deallocation (no stack) of the same address.
fn allocation_events(profile: &Profile) -> Vec<(u64, Option<StackId>, u64, i64)> {
    let mut events = Vec::new();
    let samples = profile.threads.iter().flat_map(|t| t.allocations.iter());
    for (i, a) in samples.enumerate() {
        let address = i as u64 + 1;
        let size = i64::try_from(a.bytes).unwrap_or(i64::MAX);
        events.push((a.time_ns, a.stack, address, size));
        if let Some(freed) = a.freed_ns {
            events.push((freed, None, address, -size));
        }
    }
    events.sort_by_key(|e| (e.0, e.2, e.3 < 0));
    events
}

/// When a thread starts: its first sample, call or allocation.
fn thread_start(t: &ThreadProfile) -> u64 {
    let first = t.samples.first().map(|s| s.time_ns);
    let first_call = t.calls.iter().map(|c| c.start_ns).min();
    let first_alloc = t.allocations.first().map(|a| a.time_ns);
    first
        .into_iter()
        .chain(first_call)
        .chain(first_alloc)
        .min()
        .unwrap_or(0)
}

/// The thread id as the format has it: a string.
fn tid(t: &ThreadProfile) -> String {
    u32::try_from(t.os_tid).unwrap_or(u32::MAX).to_string()
}

fn process_name(profile: &Profile) -> &str {
    if profile.name.is_empty() {
        "clrprof"
    } else {
        &profile.name
    }
}

/// Writes `profile` in the Firefox Profiler's processed format (see the module docs).
/// Samples count 1 each: the profiler draws CPU use from the CPU deltas itself, so
/// `opts` does not apply.
pub fn write(profile: &Profile, _opts: &Options, out: impl Write) -> Result<(), ExportError> {
    validate(profile)?;
    let mut j = Json { w: out };
    let interval = if profile.interval_ns > 0 {
        profile.interval_ns
    } else {
        TRACE_INTERVAL_NS
    };
    let (subcategory, subcategory_names) = subcategories(profile);
    // Threads in the order the profiler lists them: by start, name and tid.
    let mut order: Vec<usize> = (0..profile.threads.len()).collect();
    order.sort_by_cached_key(|&i| {
        let t = &profile.threads[i];
        (thread_start(t), t.name.clone(), tid(t))
    });
    // The busiest thread is selected when the profile opens.
    let mut busiest: Option<(usize, usize)> = None;
    for (i, t) in profile.threads.iter().enumerate() {
        let size = t.samples.len() + t.calls.len();
        if busiest.is_none_or(|(_, n)| size > n) {
            busiest = Some((i, size));
        }
    }

    let categories: Vec<serde_json::Value> = CATEGORIES
        .iter()
        .zip(&subcategory_names)
        .map(|((name, color), subs)| {
            serde_json::json!({"name": name, "color": color, "subcategories": subs})
        })
        .collect();
    let start_ms = Duration::from_nanos(profile.start_unix_ns).as_secs_f64() * 1000.0;
    let mut meta = serde_json::json!({
        "categories": categories,
        "debug": false,
        "extensions": {"length": 0, "baseURL": [], "id": [], "name": []},
        "interval": Duration::from_nanos(interval).as_secs_f64() * 1000.0,
        "preprocessedProfileVersion": 55,
        "processType": 0,
        "product": process_name(profile),
        "sampleUnits": {"time": "ms", "eventDelay": "ms", "threadCPUDelta": "µs"},
        "startTime": start_ms,
        "symbolicated": true,
        "pausedRanges": [],
        "version": 24,
        "usesOnlyOneStackType": true,
        "sourceCodeIsNotOnSearchfox": true,
        // The marker types in use.
        "markerSchema": marker_schema(
            profile.threads.iter().any(|t| !t.calls.is_empty()),
            profile.threads.iter().any(|t| !t.waits.is_empty())
                || (!profile.threads.is_empty() && !profile.markers.is_empty()),
            profile.threads.iter().any(|t| !t.call_values.is_empty()),
        ),
    });
    if let Some((b, _)) = busiest {
        let at = order.iter().position(|&i| i == b).unwrap_or(0);
        meta["initialSelectedThreads"] = serde_json::json!([at]);
    }
    j.raw("{")?;
    j.key("meta", true)?;
    j.value(&meta)?;
    j.raw(",\"libs\":[]")?;
    j.column("threads", &order, |j, &i| {
        write_thread(
            j,
            profile,
            &profile.threads[i],
            i == 0,
            &subcategory,
            interval,
        )
    })?;
    j.raw(",\"pages\":[],\"profilerOverhead\":[]")?;
    // The memory track of the followed allocation samples, on the process's first
    // thread in the list.
    let live = stacks::live_heap_changes(profile);
    j.key("counters", false)?;
    j.raw("[")?;
    if !live.is_empty() {
        let counter = serde_json::json!({
            "category": "Memory",
            "name": "Live sampled heap (estimated)",
            "description": "Estimated bytes of the sampled objects that no GC was seen collecting",
            "mainThreadIndex": 0,
            "pid": "0",
        });
        let serde_json::Value::Object(fields) = counter else {
            unreachable!("an object")
        };
        j.raw("{")?;
        for (k, (key, v)) in fields.iter().enumerate() {
            j.key(key, k == 0)?;
            j.value(v)?;
        }
        j.key("samples", false)?;
        j.raw("{")?;
        j.key("length", true)?;
        j.value(&live.len())?;
        j.column("count", &live, |j, c| j.value(&(c.1 as f64)))?;
        j.column("number", &live, |j, c| j.value(&c.2))?;
        j.deltas("timeDeltas", live.iter().map(|c| c.0))?;
        j.raw("}}")?;
    }
    j.raw("]}")?;
    Ok(())
}
