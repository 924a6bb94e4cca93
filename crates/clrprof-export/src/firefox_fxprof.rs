//! The reference for [`crate::firefox`] (tests only): the Firefox document as
//! `fxprof-processed-profile` 0.8 builds it, the whole profile in memory, with the source
//! columns filled by a JSON round trip. The streaming writer must write the same document
//! (up to the order of subcategories, which it takes from the frame table, where this
//! one takes them as frames are met).
//!
//! One process holds one thread per [`ThreadProfile`], with its
//! name and tid. Frames are labels in one of three categories (Managed, Native, Runtime),
//! with the module as subcategory. The profile's stack table is translated into each
//! thread's (the format keeps one per thread). Samples keep their times and CPU deltas. Calls become
//! interval markers named after the function (with the call's stack); a thread with
//! calls and no samples also gets samples rebuilt from its calls, so that its call tree
//! and stack chart are filled.
//!
//! Allocation samples (`record --alloc`) become the process's native allocations, which
//! the profiler keeps on the process's first thread and offers above that thread's call
//! tree ("Native Allocations", and "Retained Memory": the allocations no GC was seen
//! collecting): each sample an allocation of its estimated bytes, and a deallocation at
//! the GC that found a followed sample collected. A memory track draws the followed
//! samples' estimated live bytes.

use std::collections::HashMap;
use std::io::Write;
use std::time::Duration;

use fx::{
    CategoryColor, CategoryHandle, CategoryPairHandle, CpuDelta, FrameFlags, FrameInfo,
    MarkerFieldFlags, MarkerFieldFormat, MarkerTiming, ReferenceTimestamp, SamplingInterval,
    StackHandle, StaticSchemaMarker, StaticSchemaMarkerField, StringHandle, ThreadHandle,
    Timestamp,
};
use fxprof_processed_profile as fx;

use crate::model::{FrameId, FrameKind, Profile, StackId, ThreadProfile};
use crate::stacks::{self, SpanEvent, validate};
use crate::{ExportError, Options};

/// The declared interval of a profile without one (a call trace): synthesized samples
/// are weighted in units of it.
const TRACE_INTERVAL_NS: u64 = 1_000;

/// A traced call, shown in the marker chart.
struct CallMarker {
    name: StringHandle,
    category: CategoryHandle,
    depth: u32,
    module: StringHandle,
}

impl StaticSchemaMarker for CallMarker {
    const UNIQUE_MARKER_TYPE_NAME: &'static str = "ClrprofCall";
    const DESCRIPTION: Option<&'static str> = Some("A traced call: exact enter and leave times");
    const CHART_LABEL: Option<&'static str> = Some("{marker.name}");
    const TABLE_LABEL: Option<&'static str> = Some("{marker.name} ({marker.data.module})");
    const FIELDS: &'static [StaticSchemaMarkerField] = &[
        StaticSchemaMarkerField {
            key: "depth",
            label: "Depth",
            format: MarkerFieldFormat::Integer,
            flags: MarkerFieldFlags::empty(),
        },
        StaticSchemaMarkerField {
            key: "module",
            label: "Module",
            format: MarkerFieldFormat::String,
            flags: MarkerFieldFlags::SEARCHABLE,
        },
    ];

    fn name(&self, _profile: &mut fx::Profile) -> StringHandle {
        self.name
    }

    fn category(&self, _profile: &mut fx::Profile) -> CategoryHandle {
        self.category
    }

    fn string_field_value(&self, _field_index: u32) -> StringHandle {
        self.module
    }

    fn number_field_value(&self, _field_index: u32) -> f64 {
        f64::from(self.depth)
    }
}

/// A wait the runtime reported (`record --waits`), shown in the marker chart.
struct WaitMarker {
    name: StringHandle,
    category: CategoryHandle,
    /// The innermost frame of the waiting stack.
    inner: StringHandle,
}

impl StaticSchemaMarker for WaitMarker {
    const UNIQUE_MARKER_TYPE_NAME: &'static str = "ClrprofWait";
    const DESCRIPTION: Option<&'static str> =
        Some("A wait the runtime reported: a contended lock or a wait handle");
    const CHART_LABEL: Option<&'static str> = Some("{marker.name}");
    const TABLE_LABEL: Option<&'static str> = Some("{marker.name} in {marker.data.inner}");
    const FIELDS: &'static [StaticSchemaMarkerField] = &[StaticSchemaMarkerField {
        key: "inner",
        label: "Waiting in",
        format: MarkerFieldFormat::String,
        flags: MarkerFieldFlags::SEARCHABLE,
    }];

    fn name(&self, _profile: &mut fx::Profile) -> StringHandle {
        self.name
    }

    fn category(&self, _profile: &mut fx::Profile) -> CategoryHandle {
        self.category
    }

    fn string_field_value(&self, _field_index: u32) -> StringHandle {
        self.inner
    }

    fn number_field_value(&self, _field_index: u32) -> f64 {
        0.0
    }
}

/// Categories and per-thread frame handles.
struct Builder<'a> {
    model: &'a Profile,
    fx: fx::Profile,
    categories: [CategoryHandle; 3],
    /// (category, module) → category pair, so each module is one subcategory.
    pairs: HashMap<(usize, &'a str), CategoryPairHandle>,
}

fn ts(ns: u64) -> Timestamp {
    Timestamp::from_nanos_since_reference(ns)
}

fn kind_index(kind: FrameKind) -> usize {
    match kind {
        FrameKind::Managed => 0,
        FrameKind::Native => 1,
        FrameKind::Runtime => 2,
    }
}

impl<'a> Builder<'a> {
    fn new(model: &'a Profile) -> Self {
        let start = ReferenceTimestamp::from_duration_since_unix_epoch(Duration::from_nanos(
            model.start_unix_ns,
        ));
        let interval = if model.interval_ns > 0 {
            model.interval_ns
        } else {
            TRACE_INTERVAL_NS
        };
        let name = if model.name.is_empty() {
            "clrprof"
        } else {
            &model.name
        };
        let mut fx = fx::Profile::new(name, start, SamplingInterval::from_nanos(interval));
        fx.set_symbolicated(true);
        let categories = [
            fx.add_category("Managed", CategoryColor::Yellow),
            fx.add_category("Native", CategoryColor::LightBlue),
            fx.add_category("Runtime", CategoryColor::Orange),
        ];
        Builder {
            model,
            fx,
            categories,
            pairs: HashMap::new(),
        }
    }

    fn frame_info(&mut self, frame: FrameId) -> FrameInfo {
        let f = self.model.frame(frame);
        let k = kind_index(f.kind);
        let category_pair = match self.model.module_of(f).map(|m| m.name.as_str()) {
            None => self.categories[k].into(),
            Some(m) => *self
                .pairs
                .entry((k, m))
                .or_insert_with(|| self.fx.add_subcategory(self.categories[k], m)),
        };
        let label = self.fx.intern_string(&f.name);
        FrameInfo {
            frame: fx::Frame::Label(label),
            category_pair,
            flags: FrameFlags::empty(),
        }
    }

    /// Stack `id` in `thread`'s stack table. The processed profile has a stack table like
    /// ours, but one per thread: `ours` maps the entries translated for this thread so
    /// far, and only those on the way up to the first translated one are added.
    fn stack(
        &mut self,
        thread: ThreadHandle,
        id: StackId,
        ours: &mut HashMap<StackId, StackHandle>,
    ) -> StackHandle {
        let mut todo = Vec::new();
        let mut parent = None;
        let mut next = Some(id);
        while let Some(i) = next {
            if let Some(&h) = ours.get(&i) {
                parent = Some(h);
                break;
            }
            todo.push(i);
            next = self.model.stack(i).parent;
        }
        for i in todo.into_iter().rev() {
            let h = self.push(thread, parent, self.model.stack(i).frame);
            ours.insert(i, h);
            parent = Some(h);
        }
        parent.expect("a stack has at least its own entry")
    }

    fn push(
        &mut self,
        thread: ThreadHandle,
        parent: Option<StackHandle>,
        frame: FrameId,
    ) -> StackHandle {
        let info = self.frame_info(frame);
        let handle = self.fx.intern_frame(thread, info);
        self.fx.intern_stack(thread, parent, handle)
    }

    /// Adds a thread with its samples and calls; returns it and its end.
    fn thread(&mut self, process: fx::ProcessHandle, t: &ThreadProfile) -> (ThreadHandle, u64) {
        let first = t.samples.first().map(|s| s.time_ns);
        let first_call = t.calls.iter().map(|c| c.start_ns).min();
        let first_alloc = t.allocations.first().map(|a| a.time_ns);
        let start = first
            .into_iter()
            .chain(first_call)
            .chain(first_alloc)
            .min()
            .unwrap_or(0);
        let tid = u32::try_from(t.os_tid).unwrap_or(u32::MAX);
        // Not "main": the profiler would show a main thread under the process's name.
        let thread = self.fx.add_thread(process, tid, ts(start), false);
        self.fx.set_thread_name(thread, &t.name);
        let mut end = start;
        let mut stacks = HashMap::new();
        for s in &t.samples {
            let stack = s.stack.map(|id| self.stack(thread, id, &mut stacks));
            self.fx.add_sample(
                thread,
                ts(s.time_ns),
                stack,
                CpuDelta::from_nanos(s.cpu_ns),
                1,
            );
            end = end.max(s.time_ns + s.wall_ns);
        }
        if !t.calls.is_empty() {
            end = end.max(self.calls(thread, t));
        }
        // `record --waits`: each wait as an interval marker with the waiting stack.
        for w in &t.waits {
            let stack = w.stack.map(|id| self.stack(thread, id, &mut stacks));
            let inner = self
                .model
                .stack_frames(w.stack)
                .last()
                .map(|f| self.model.frame(*f).name.clone())
                .unwrap_or_default();
            let marker = WaitMarker {
                name: self
                    .fx
                    .intern_string(if w.lock { "lock contention" } else { "wait" }),
                category: self.categories[0],
                inner: self.fx.intern_string(&inner),
            };
            let timing = MarkerTiming::Interval(ts(w.time_ns), ts(w.time_ns + w.wait_ns));
            let m = self.fx.add_marker(thread, timing, marker);
            self.fx.set_marker_stack(thread, m, stack);
            end = end.max(w.time_ns + w.wait_ns);
        }
        self.fx.set_thread_end_time(thread, ts(end));
        (thread, end)
    }

    /// Adds a thread's calls as markers and, when it has no samples, as samples taken at
    /// every call boundary, each weighted by the time to the next boundary (in units of
    /// the declared interval) and with that time as CPU delta when code was running.
    /// Returns the end of the last call.
    fn calls(&mut self, thread: ThreadHandle, t: &ThreadProfile) -> u64 {
        let spans = stacks::spans(&t.calls);
        let events = stacks::events(&spans);
        let synthesize = t.samples.is_empty();
        let interval = self.fx_interval_ns();
        let empty_module = self.fx.intern_string("");
        let mut open: Vec<StackHandle> = Vec::new();
        // The stack that has been current since `since`, waiting for its sample.
        let mut pending: Option<(u64, Option<StackHandle>)> = None;
        // The previous sample: its time and whether code was running from then on.
        let mut prev_sample = (0, false);
        for (k, e) in events.iter().enumerate() {
            let at = e.at(&spans);
            match *e {
                SpanEvent::Open(i) => {
                    let s = spans[i];
                    let handle = self.push(thread, open.last().copied(), s.frame);
                    open.push(handle);
                    let f = self.model.frame(s.frame);
                    let marker = CallMarker {
                        name: self.fx.intern_string(&f.name),
                        category: self.categories[kind_index(f.kind)],
                        depth: s.depth,
                        module: self
                            .model
                            .module_of(f)
                            .map_or(empty_module, |m| self.fx.intern_string(&m.name)),
                    };
                    let timing = MarkerTiming::Interval(ts(s.start_ns), ts(s.end_ns));
                    let m = self.fx.add_marker(thread, timing, marker);
                    self.fx.set_marker_stack(thread, m, Some(handle));
                }
                SpanEvent::Close(_) => {
                    open.pop();
                }
            }
            let last_at_this_time = events.get(k + 1).is_none_or(|n| n.at(&spans) != at);
            if synthesize && last_at_this_time {
                if let Some((since, stack)) = pending.take() {
                    self.synthetic_sample(thread, since, at, stack, interval, &mut prev_sample);
                }
                pending = Some((at, open.last().copied()));
            }
        }
        let end = events.last().map_or(0, |e| e.at(&spans));
        if let Some((since, stack)) = pending {
            self.synthetic_sample(thread, since, end, stack, interval, &mut prev_sample);
        }
        end
    }

    fn synthetic_sample(
        &mut self,
        thread: ThreadHandle,
        since: u64,
        until: u64,
        stack: Option<StackHandle>,
        interval: u64,
        prev_sample: &mut (u64, bool),
    ) {
        let span = until - since;
        let weight = i32::try_from((span + interval / 2) / interval).unwrap_or(i32::MAX);
        let (prev, running) = *prev_sample;
        let cpu = if running { since - prev } else { 0 };
        self.fx
            .add_sample(thread, ts(since), stack, CpuDelta::from_nanos(cpu), weight);
        *prev_sample = (since, stack.is_some());
    }

    /// The allocation samples of every thread, on `first` (the process's first thread,
    /// where the profiler keeps a process's allocations: their stacks must be in its
    /// table), in time order, and the memory track.
    /// Returns the time of the last allocation event.
    fn allocations(&mut self, process: fx::ProcessHandle, first: ThreadHandle) -> u64 {
        // (time, stack, address, signed size): an allocation, or a deallocation (no
        // stack) of the same address.
        let mut events: Vec<(u64, Option<StackId>, u64, i64)> = Vec::new();
        let samples = self.model.threads.iter().flat_map(|t| t.allocations.iter());
        for (i, a) in samples.enumerate() {
            let address = i as u64 + 1;
            let size = i64::try_from(a.bytes).unwrap_or(i64::MAX);
            events.push((a.time_ns, a.stack, address, size));
            if let Some(freed) = a.freed_ns {
                events.push((freed, None, address, -size));
            }
        }
        if events.is_empty() {
            return 0;
        }
        events.sort_by_key(|e| (e.0, e.2, e.3 < 0));
        let last = events.last().map_or(0, |e| e.0);
        let mut stacks = HashMap::new();
        for (at, stack, address, size) in events {
            let stack = stack.map(|id| self.stack(first, id, &mut stacks));
            self.fx
                .add_allocation_sample(first, ts(at), stack, address, size);
        }
        let live = stacks::live_heap_changes(self.model);
        if live.is_empty() {
            return last;
        }
        let counter = self.fx.add_counter(
            process,
            "Live sampled heap (estimated)",
            "Memory",
            "Estimated bytes of the sampled objects that no GC was seen collecting",
        );
        for (at, delta, n) in live {
            self.fx.add_counter_sample(counter, ts(at), delta as f64, n);
        }
        last
    }

    fn fx_interval_ns(&self) -> u64 {
        if self.model.interval_ns > 0 {
            self.model.interval_ns
        } else {
            TRACE_INTERVAL_NS
        }
    }
}

/// Writes `profile` in the Firefox Profiler's processed format (see the module docs).
/// Samples count 1 each: the profiler draws CPU use from the CPU deltas itself, so
/// `opts` does not apply.
pub fn write(profile: &Profile, _opts: &Options, out: impl Write) -> Result<(), ExportError> {
    validate(profile)?;
    let mut b = Builder::new(profile);
    let name = if profile.name.is_empty() {
        "clrprof"
    } else {
        &profile.name
    };
    let process = b.fx.add_process(name, 0, ts(0));
    let mut busiest = None;
    let mut first = None;
    for t in &profile.threads {
        let (thread, end) = b.thread(process, t);
        first.get_or_insert((thread, end));
        let size = t.samples.len() + t.calls.len();
        if busiest.is_none_or(|(_, n)| size > n) {
            busiest = Some((thread, size));
        }
    }
    if let Some((first, _)) = first {
        // Process-wide intervals (thread-pool starvation) on the first thread's track.
        for m in &profile.markers {
            let marker = WaitMarker {
                name: b.fx.intern_string(&m.name),
                category: b.categories[0],
                inner: b.fx.intern_string(""),
            };
            let timing = MarkerTiming::Interval(ts(m.start_ns), ts(m.end_ns));
            b.fx.add_marker(first, timing, marker);
        }
    }
    if let Some((first, end)) = first {
        // The first thread holds every thread's allocations: it lasts until the last.
        let last = b.allocations(process, first);
        if last > end {
            b.fx.set_thread_end_time(first, ts(last));
        }
    }
    if let Some((thread, _)) = busiest {
        b.fx.add_initial_selected_thread(thread);
    }
    if profile.sources.iter().any(Option::is_some) {
        // fxprof-processed-profile writes no source positions (its funcTable's fileName
        // and lineNumber columns are all null): fill them in, per thread, for the
        // functions whose source the model knows.
        let mut v = serde_json::to_value(&b.fx)?;
        add_sources(profile, &mut v);
        serde_json::to_writer(out, &v)?;
    } else {
        serde_json::to_writer(out, &b.fx)?;
    }
    Ok(())
}

/// Fills each thread's `funcTable.fileName` (an index into the thread's `stringArray`)
/// and `lineNumber` (the method's first line; a frame that stands for one line,
/// `convert --lines`, also gets that line in `frameTable.line`) from the model's sources,
/// matched by the function's name, which the frames' labels are.
fn add_sources(profile: &Profile, v: &mut serde_json::Value) {
    use serde_json::Value;
    let mut by_name: HashMap<&str, &crate::model::Source> = HashMap::new();
    for (i, f) in profile.frames.iter().enumerate() {
        if let Some(Some(s)) = profile.sources.get(i) {
            by_name.entry(f.name.as_str()).or_insert(s);
        }
    }
    let Some(threads) = v.get_mut("threads").and_then(Value::as_array_mut) else {
        return;
    };
    for t in threads {
        let Some(t) = t.as_object_mut() else { continue };
        // The thread's strings are taken out (not copied) and put back with the files.
        let Some(Value::Array(mut strings)) = t.remove("stringArray") else {
            continue;
        };
        let names: Vec<Option<u64>> = t
            .get("funcTable")
            .and_then(|f| f.get("name"))
            .and_then(Value::as_array)
            .map(|n| n.iter().map(Value::as_u64).collect())
            .unwrap_or_default();
        let mut index: HashMap<String, usize> = strings
            .iter()
            .enumerate()
            .filter_map(|(i, s)| Some((s.as_str()?.to_string(), i)))
            .collect();
        let mut files = Vec::with_capacity(names.len());
        let mut lines = Vec::with_capacity(names.len());
        let mut func_line = Vec::with_capacity(names.len());
        for n in &names {
            let source = n
                .and_then(|i| strings.get(i as usize))
                .and_then(Value::as_str)
                .and_then(|name| by_name.get(name));
            match source {
                Some(s) => {
                    let at = *index.entry(s.file.clone()).or_insert_with(|| {
                        strings.push(Value::from(s.file.as_str()));
                        strings.len() - 1
                    });
                    files.push(Value::from(at));
                    lines.push(Value::from(s.start_line));
                    func_line.push(s.line.map(Value::from).unwrap_or(Value::Null));
                }
                None => {
                    files.push(Value::Null);
                    lines.push(Value::Null);
                    func_line.push(Value::Null);
                }
            }
        }
        t.insert("stringArray".into(), Value::Array(strings));
        if let Some(f) = t.get_mut("funcTable").and_then(Value::as_object_mut) {
            f.insert("fileName".into(), Value::Array(files));
            f.insert("lineNumber".into(), Value::Array(lines));
        }
        // A frame's line is its function's line when the frame stands for one line.
        if let Some(frames) = t.get_mut("frameTable").and_then(Value::as_object_mut) {
            let line: Option<Vec<Value>> =
                frames.get("func").and_then(Value::as_array).map(|funcs| {
                    funcs
                        .iter()
                        .map(|f| {
                            f.as_u64()
                                .and_then(|i| func_line.get(i as usize))
                                .cloned()
                                .unwrap_or(Value::Null)
                        })
                        .collect()
                });
            if let Some(line) = line {
                frames.insert("line".into(), Value::Array(line));
            }
        }
    }
}

/// The export tests' fixtures.
#[path = "../tests/common/mod.rs"]
pub(crate) mod fixtures;

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::fixtures::*;
    use crate::model::*;

    fn ours(p: &Profile) -> Value {
        let mut out = Vec::new();
        crate::firefox::write(p, &crate::Options::default(), &mut out).unwrap();
        serde_json::from_slice(&out).expect("valid JSON")
    }

    fn reference(p: &Profile) -> Value {
        let mut out = Vec::new();
        super::write(p, &crate::Options::default(), &mut out).unwrap();
        serde_json::from_slice(&out).unwrap()
    }

    /// Subcategory indexes replaced by their names; each category's list sorted, and only
    /// with the subcategories in use (the streaming writer lists every module of the
    /// category's frames).
    fn normalized(mut v: Value) -> Value {
        let categories = v["meta"]["categories"].clone();
        let mut used = std::collections::BTreeSet::new();
        for t in v["threads"].as_array_mut().unwrap() {
            let frames = &mut t["frameTable"];
            let named: Vec<Value> = frames["subcategory"]
                .as_array()
                .unwrap()
                .iter()
                .zip(frames["category"].as_array().unwrap())
                .map(|(s, c)| {
                    let c = c.as_u64().unwrap() as usize;
                    let name = categories[c]["subcategories"][s.as_u64().unwrap() as usize].clone();
                    used.insert((c, name.as_str().unwrap().to_string()));
                    name
                })
                .collect();
            frames["subcategory"] = Value::Array(named);
        }
        for (i, c) in v["meta"]["categories"]
            .as_array_mut()
            .unwrap()
            .iter_mut()
            .enumerate()
        {
            let subs = c["subcategories"].as_array_mut().unwrap();
            subs.retain(|s| s == "Other" || used.contains(&(i, s.as_str().unwrap().to_string())));
            subs.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
        }
        v
    }

    fn same(p: &Profile) {
        let (a, b) = (normalized(ours(p)), normalized(reference(p)));
        let mut diffs = Vec::new();
        diff("", &a, &b, &mut diffs);
        assert!(diffs.is_empty(), "documents differ:\n{}", diffs.join("\n"));
    }

    /// Where two documents differ: a path and the two values, for the first 20.
    fn diff(at: &str, a: &Value, b: &Value, out: &mut Vec<String>) {
        if out.len() >= 20 {
            return;
        }
        match (a, b) {
            (Value::Object(x), Value::Object(y)) => {
                let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
                for k in keys {
                    let (u, v) = (
                        x.get(k).unwrap_or(&Value::Null),
                        y.get(k).unwrap_or(&Value::Null),
                    );
                    if x.contains_key(k) != y.contains_key(k) {
                        out.push(format!(
                            "{at}.{k}: ours {} | fxprof {}",
                            x.contains_key(k),
                            y.contains_key(k)
                        ));
                    }
                    diff(&format!("{at}.{k}"), u, v, out);
                }
            }
            (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
                for (i, (u, v)) in x.iter().zip(y).enumerate() {
                    diff(&format!("{at}[{i}]"), u, v, out);
                }
            }
            _ if a != b => out.push(format!("{at}: ours {a} | fxprof {b}")),
            _ => {}
        }
    }

    /// Every part of the model the Firefox document shows: sampled and traced threads,
    /// allocations, waits, process-wide markers, sources.
    fn everything() -> Profile {
        let mut p = fixture();
        let add = p.intern_stack_frames([MAIN, RUN, LIST_ADD]);
        let compute = p.intern_stack_frames([MAIN, COMPUTE]);
        let native = p.intern_stack_frames([RUN, NATIVE]);
        p.threads[1].allocations = vec![
            AllocationSample {
                time_ns: 0,
                stack: add,
                bytes: 3000,
                objects: 3,
                live_bytes: 1000,
                live_objects: 1,
                followed: true,
                freed_ns: None,
            },
            AllocationSample {
                time_ns: MS,
                stack: compute,
                bytes: 500,
                objects: 1,
                followed: true,
                freed_ns: Some(2 * MS),
                ..Default::default()
            },
        ];
        p.threads[0].allocations = vec![AllocationSample {
            time_ns: MS / 2,
            stack: native,
            bytes: 100,
            objects: 1,
            ..Default::default()
        }];
        p.threads[1].waits = vec![
            WaitSample {
                time_ns: 3 * MS,
                stack: native,
                wait_ns: 2 * MS,
                lock: true,
            },
            WaitSample {
                time_ns: 9 * MS,
                stack: None,
                wait_ns: MS,
                lock: false,
            },
        ];
        p.markers = vec![ProcessMarker {
            name: "thread-pool starvation: 2 → 28 workers".into(),
            start_ns: MS,
            end_ns: 5 * MS,
        }];
        p.sources = vec![None; p.frames.len()];
        p.sources[MAIN.0 as usize] = Some(Source {
            file: "/src/App/Program.cs".into(),
            start_line: 40,
            line: Some(42),
        });
        p.sources[INNER.0 as usize] = Some(Source {
            file: "/src/App/Traced.cs".into(),
            start_line: 7,
            line: None,
        });
        p
    }

    #[test]
    fn the_streaming_writer_writes_what_fxprof_wrote() {
        same(&fixture());
        same(&traced_only());
        same(&everything());
        // Samples out of time order; a thread with both samples and calls.
        let mut p = everything();
        p.threads[0].samples.swap(1, 4);
        let calls = p.threads[2].calls.clone();
        p.threads[0].calls = calls;
        same(&p);
        // Nothing at all.
        same(&Profile::default());
    }
}
