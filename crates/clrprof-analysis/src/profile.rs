//! The bridge to the exporters: a trace as the neutral `clrprof_export::Profile`
//! (interned frames and stacks; per thread, samples with wall and CPU weights, and the
//! exact calls of trace mode).

use std::collections::{BTreeMap, HashMap};

use clrprof_export::{
    AllocationSample, Call, CallPath, Frame, FrameId, FrameKind, Interner, Module, ModuleId,
    ProcessMarker, Profile, Sample, Source, StackId, ThreadProfile, WaitSample,
};

use crate::calltree;
use crate::names::{ModuleFile, Names};
use crate::runtime_frames::{Activity, ThreadRole, Windows};
use crate::samples;
use crate::threads::ThreadNames;
use crate::timeline::Trace;

/// The frame that stands for the frames of a call path below
/// [`calltree::MAX_PATH_DEPTH`].
pub const DEEPER: &str = "[deeper frames]";

/// The profile's frame, stack and module tables, built from the trace's frame ids as they
/// are met: each id is looked up once; ids that name the same frame (two code versions of
/// one method) share it.
#[derive(Default)]
struct Tables {
    /// The tables; its threads stay empty.
    profile: Profile,
    interner: Interner,
    by_id: HashMap<u64, FrameId>,
    /// `--lines`: frames by (id, source line).
    by_line: HashMap<(u64, u32), FrameId>,
    by_module: HashMap<ModuleFile, ModuleId>,
    /// Frames that name what a thread without managed frames is (`[runtime: JIT]`).
    by_role: HashMap<String, FrameId>,
}

impl Tables {
    fn id(&mut self, id: u64, names: &Names) -> FrameId {
        if let Some(&i) = self.by_id.get(&id) {
            return i;
        }
        let module = names.frame_module(id).map(|m| self.module(m));
        let frame = Frame {
            name: names.frame_name(id),
            module,
            kind: names.frame_kind(id),
        };
        let i = self.interner.frame(&mut self.profile, frame);
        self.by_id.insert(id, i);
        i
    }

    /// The frame of id `id` on source line `line`: `Method:42` (the plain frame when the
    /// line is unknown).
    fn id_at(&mut self, id: u64, line: Option<u32>, names: &Names) -> FrameId {
        let Some(line) = line else {
            return self.id(id, names);
        };
        if let Some(&i) = self.by_line.get(&(id, line)) {
            return i;
        }
        let module = names.frame_module(id).map(|m| self.module(m));
        let frame = Frame {
            name: format!("{}:{line}", names.frame_name(id)),
            module,
            kind: names.frame_kind(id),
        };
        let i = self.interner.frame(&mut self.profile, frame);
        self.by_line.insert((id, line), i);
        i
    }

    /// The stack of frame ids `ids` (leaf first), each frame on its source line (from
    /// its `SamplePositions` item in `positions`, one per frame) where that is known.
    fn stack_at(
        &mut self,
        ids: &[u64],
        positions: &[u64],
        lines: &mut crate::lines::Lines,
        names: &Names,
    ) -> Option<StackId> {
        let mut stack = None;
        for (&f, &p) in ids.iter().zip(positions).rev() {
            let line = lines.line(names, f, p).map(|l| l.line);
            let frame = self.id_at(f, line, names);
            stack = Some(self.interner.stack(&mut self.profile, stack, frame));
        }
        stack
    }

    /// The one frame of a sample of a thread without managed frames that used CPU: what
    /// the thread is (`[runtime: JIT]`, `[native: libfoo.so]`), as the report names it.
    fn role(&mut self, role: ThreadRole, leaf: u64, names: &Names) -> FrameId {
        let name = role.label(names, leaf);
        if let Some(&i) = self.by_role.get(&name) {
            return i;
        }
        let (module, kind) = match role {
            ThreadRole::Native => (
                names.frame_module(leaf).map(|m| self.module(m)),
                FrameKind::Native,
            ),
            _ => (None, FrameKind::Runtime),
        };
        let i = self.interner.frame(
            &mut self.profile,
            Frame {
                name: name.clone(),
                module,
                kind,
            },
        );
        self.by_role.insert(name, i);
        i
    }

    /// The frame that stands for the frames of a call path below
    /// [`calltree::MAX_PATH_DEPTH`].
    fn deeper(&mut self) -> FrameId {
        let frame = Frame {
            name: DEEPER.to_string(),
            module: None,
            kind: FrameKind::Managed,
        };
        self.interner.frame(&mut self.profile, frame)
    }

    /// The stack of the frame ids `ids`, root first, each made a frame by `frame`; `None`
    /// when there are none.
    fn stack(
        &mut self,
        ids: impl IntoIterator<Item = u64>,
        mut frame: impl FnMut(&mut Self, u64) -> FrameId,
    ) -> Option<StackId> {
        let mut stack = None;
        for id in ids {
            let f = frame(self, id);
            stack = Some(self.interner.stack(&mut self.profile, stack, f));
        }
        stack
    }

    fn module(&mut self, m: &ModuleFile) -> ModuleId {
        if let Some(&h) = self.by_module.get(m) {
            return h;
        }
        let h = ModuleId(self.profile.modules.len() as u32);
        self.profile.modules.push(Module {
            name: m.name.clone(),
            path: m.path.clone(),
        });
        self.by_module.insert(m.clone(), h);
        h
    }
}

/// What the exporter will need of a traced run's calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallsWanted {
    /// Each call's interval, for a timeline; else only the calls aggregated by path.
    pub timeline: bool,
    /// At most this many intervals: those of the calls that started first, so that the
    /// timeline's first part is whole (see [`Built::calls_dropped`]).
    pub max_calls: usize,
}

/// The model, and what was left out of it.
pub struct Built {
    pub profile: Profile,
    /// Calls left off the timeline by [`CallsWanted::max_calls`] (they still count in
    /// the aggregated formats, which were not asked for here).
    pub calls_dropped: u64,
    /// When the kept part of the timeline ends (ns since the profile start), if cut.
    pub calls_until_ns: Option<u64>,
}

/// A model of some samples alone, already through [`samples::prepare`] (the samples of
/// one interval of a trace being written: `record --push`), with the report's CPU rule
/// and names from the tables read so far. Sample times are left at 0.
pub fn of_samples(
    all: &[samples::StackSample],
    names: &Names,
    threads: &ThreadNames,
    interval_ns: u64,
) -> Profile {
    let mut tables = Tables::default();
    let mut per: BTreeMap<u64, ThreadProfile> = BTreeMap::new();
    let mut all = all.to_vec();
    samples::share_cpu(&mut all, names);
    for s in &all {
        let stack = tables.stack(s.stack.iter().rev().copied(), |t, f| t.id(f, names));
        per.entry(s.os_tid)
            .or_insert_with(|| ThreadProfile::new(threads.name(s.os_tid), s.os_tid))
            .samples
            .push(Sample {
                time_ns: 0,
                stack,
                wall_ns: interval_ns,
                cpu_ns: s.cpu_ns,
            });
    }
    Profile {
        interval_ns,
        threads: per.into_values().collect(),
        ..tables.profile
    }
}

/// A model of allocation samples alone (`record --push --alloc`): each of `allocated`
/// counts its estimated bytes and objects as allocated, each of `live` (followed samples
/// no GC has collected yet, whenever they were allocated) as live. Names from the tables
/// read so far; times are left at 0.
pub fn of_allocations<'a>(
    allocated: &[crate::allocs::AllocPoint],
    live: impl IntoIterator<Item = &'a crate::allocs::AllocPoint>,
    names: &Names,
    threads: &ThreadNames,
) -> Profile {
    let mut tables = Tables::default();
    let mut per: BTreeMap<u64, ThreadProfile> = BTreeMap::new();
    let weighed = allocated
        .iter()
        .map(|p| (p, false))
        .chain(live.into_iter().map(|p| (p, true)));
    for (p, is_live) in weighed {
        let stack = tables.stack(p.frames.iter().rev().copied(), |t, f| t.id(f, names));
        let (bytes, objects) = (p.bytes.round() as u64, p.objects.round() as u64);
        per.entry(p.os_tid)
            .or_insert_with(|| ThreadProfile::new(threads.name(p.os_tid), p.os_tid))
            .allocations
            .push(AllocationSample {
                time_ns: 0,
                stack,
                bytes: if is_live { 0 } else { bytes },
                objects: if is_live { 0 } else { objects },
                live_bytes: if is_live { bytes } else { 0 },
                live_objects: if is_live { objects } else { 0 },
                followed: p.tracked,
                freed_ns: None,
            });
    }
    Profile {
        threads: per.into_values().collect(),
        ..tables.profile
    }
}

/// A model of waits alone (`record --push --waits`): each of `waits` is one sample of its
/// waiting stack whose wall time is the time waited (no CPU), so the pprof's `samples`
/// count the waits and its `wall` sums their time. Names from the tables read so far;
/// times are left at 0.
pub fn of_waits(
    waits: &[crate::report::WaitInterval],
    names: &Names,
    threads: &ThreadNames,
) -> Profile {
    let mut tables = Tables::default();
    let mut per: BTreeMap<u64, ThreadProfile> = BTreeMap::new();
    for w in waits {
        let stack = tables.stack(w.frames.iter().rev().copied(), |t, f| t.id(f, names));
        per.entry(w.os_tid)
            .or_insert_with(|| ThreadProfile::new(threads.name(w.os_tid), w.os_tid))
            .samples
            .push(Sample {
                time_ns: 0,
                stack,
                wall_ns: w.wait_ns,
                cpu_ns: 0,
            });
    }
    Profile {
        threads: per.into_values().collect(),
        ..tables.profile
    }
}

/// Builds the exporters' model of `trace`, with the calls as `wanted`.
pub fn build_with(trace: &Trace<'_>, wanted: CallsWanted) -> Built {
    build_with_lines(trace, wanted, None)
}

/// [`build_with`], and with `lines` (the extra PDB folders) each sampled frame whose
/// source line is known becomes a frame of its own named `Method:42`.
pub fn build_with_lines(
    trace: &Trace<'_>,
    wanted: CallsWanted,
    lines: Option<&[std::path::PathBuf]>,
) -> Built {
    let mut resolver = lines.map(|dirs| crate::lines::Lines::new(dirs.to_vec()));
    let names = Names::collect(&trace.events);
    let threads = ThreadNames::collect(&trace.events);
    let meta = &trace.header.meta;
    let rate = f64::from(meta.settings.rate_hz);
    let interval_ns = if rate > 0.0 { (1e9 / rate) as u64 } else { 0 };
    // Times are ns since the trace's earliest record already (Trace::load), the profile's
    // start.
    let mut tables = Tables::default();
    let mut per: BTreeMap<u64, ThreadProfile> = BTreeMap::new();
    let thread = |per: &mut BTreeMap<u64, ThreadProfile>, tid: u64| {
        per.entry(tid)
            .or_insert_with(|| ThreadProfile::new(threads.name(tid), tid));
    };
    // The report's CPU rules: GC-poll frames folded into the polling method, no CPU for a
    // sample parked in a wait, and each thread's CPU shared among its samples that ran
    // (samples::share_cpu).
    let mut all = samples::stack_samples(&trace.events);
    samples::prepare(&mut all, &names, &Windows::collect(&trace.events));
    samples::share_cpu(&mut all, &names);
    let has_positions = all.iter().any(|s| !s.positions.is_empty());
    for s in all {
        thread(&mut per, s.os_tid);
        // The sample's frames are leaf first.
        let role = match (s.activity, s.stack.first()) {
            (Some(Activity::Thread(role)), Some(&leaf)) => Some(tables.role(role, leaf, &names)),
            _ => None,
        };
        let stack = match resolver.as_mut() {
            _ if role.is_some() => {
                role.map(|frame| tables.interner.stack(&mut tables.profile, None, frame))
            }
            Some(lines) if s.positions.len() == s.stack.len() => {
                tables.stack_at(&s.stack, &s.positions, lines, &names)
            }
            _ => tables.stack(s.stack.iter().rev().copied(), |t, f| t.id(f, &names)),
        };
        if let Some(t) = per.get_mut(&s.os_tid) {
            t.samples.push(Sample {
                time_ns: s.ns,
                stack,
                wall_ns: interval_ns,
                cpu_ns: s.cpu_ns,
            });
        }
    }
    // `record --alloc`: allocation samples with their estimates (and, with `lines`, each
    // frame on its line, as the CPU samples').
    let allocs = crate::allocs::collect(&trace.events).points;
    let has_positions = has_positions || allocs.iter().any(|p| !p.positions.is_empty());
    for p in allocs {
        thread(&mut per, p.os_tid);
        let stack = match resolver.as_mut() {
            Some(lines) if p.positions.len() == p.frames.len() => {
                tables.stack_at(&p.frames, &p.positions, lines, &names)
            }
            _ => tables.stack(p.frames.iter().rev().copied(), |t, f| t.id(f, &names)),
        };
        let alive = p.alive_at_end();
        if let Some(t) = per.get_mut(&p.os_tid) {
            t.allocations.push(AllocationSample {
                time_ns: p.ns,
                stack,
                bytes: p.bytes.round() as u64,
                objects: p.objects.round() as u64,
                live_bytes: if alive { p.bytes.round() as u64 } else { 0 },
                live_objects: if alive { p.objects.round() as u64 } else { 0 },
                followed: p.tracked,
                freed_ns: p.freed_ns,
            });
        }
    }
    // `record --waits`: the runtime's waits with the waiting stacks.
    for w in crate::report::wait_intervals(&trace.events) {
        thread(&mut per, w.os_tid);
        let stack = tables.stack(w.frames.iter().rev().copied(), |t, f| t.id(f, &names));
        if let Some(t) = per.get_mut(&w.os_tid) {
            t.waits.push(WaitSample {
                time_ns: w.start_ns,
                stack,
                wait_ns: w.wait_ns,
                lock: w.lock,
            });
        }
    }
    // Trace mode: exact calls per thread, from the call-tree reconstruction (one
    // implementation of the SP-based shadow-stack repair): every call's interval for a
    // timeline (bounded), else the calls aggregated by path (a flamegraph's input, which
    // grows with the paths and not with the calls).
    let (mut calls_dropped, mut calls_until_ns) = (0, None);
    if trace.call_records > 0 {
        let mut b = calltree::Builder::new(wanted.timeline);
        if wanted.timeline {
            if trace.call_records / 2 > wanted.max_calls as u64 {
                b = b.limit_intervals(wanted.max_calls);
            }
        } else {
            b = b.with_paths();
        }
        // With each call's recorded values (`--args`) for a timeline.
        let which = crate::timeline::Streamed {
            calls: true,
            exceptions: false,
            call_values: wanted.timeline,
        };
        // Without a timeline, each trace thread's calls on one of several threads.
        let parts = b.fork().and_then(|_| {
            trace.calls_on_workers(which, || {
                b.fork().unwrap_or_else(|| calltree::Builder::new(false))
            })
        });
        match parts {
            Some(parts) => {
                for part in parts {
                    b.join(part);
                }
            }
            None => trace.for_each_streamed_into(which, &mut b),
        }
        let trees = b.finish(&names, &threads, 0);
        let decoder =
            (!trees.values.is_empty()).then(|| crate::invocations::CallValuesDecoder::new(trace));
        calls_dropped = trees.intervals_dropped;
        calls_until_ns = trees.intervals_until_ns;
        for (tid, calls) in trees.intervals {
            thread(&mut per, tid);
            let t = per.get_mut(&tid).expect("inserted above");
            t.calls.reserve(calls.len());
            for c in calls {
                let values = match (c.values, &decoder) {
                    (Some(i), Some(d)) => {
                        let v = d.json(tid, &trees.values[i as usize], c.end_ns);
                        t.call_values.push(v);
                        Some((t.call_values.len() - 1) as u32)
                    }
                    _ => None,
                };
                t.calls.push(Call {
                    frame: tables.id(c.function, &names),
                    start_ns: c.start_ns,
                    end_ns: c.end_ns,
                    depth: c.depth,
                    values,
                });
            }
        }
        for (tid, paths) in trees.paths {
            thread(&mut per, tid);
            let t = per.get_mut(&tid).expect("inserted above");
            for p in paths {
                let stack = tables.stack(p.stack.iter().copied(), |t, f| match f {
                    calltree::TRUNCATED => t.deeper(),
                    f => t.id(f, &names),
                });
                // A path is never empty (an empty one would count nothing anyway).
                if let Some(stack) = stack {
                    t.call_paths.push(CallPath {
                        stack,
                        calls: p.calls,
                        self_ns: p.self_ns,
                    });
                }
            }
        }
    }
    for t in per.values_mut() {
        t.calls.sort_by_key(|c| (c.start_ns, c.depth));
    }
    if has_positions {
        // Where each sampled method is in the source (pprof's Function, speedscope's
        // file and line), from the PDBs.
        let mut lines = resolver.unwrap_or_else(|| crate::lines::Lines::new(Vec::new()));
        let mut sources: Vec<Option<Source>> = vec![None; tables.profile.frames.len()];
        let frames = tables.by_id.iter().map(|(&id, &f)| (id, f, None)).chain(
            tables
                .by_line
                .iter()
                .map(|(&(id, line), &f)| (id, f, Some(line))),
        );
        for (id, frame, line) in frames {
            if clrprof_format::is_native_frame(id) {
                continue;
            }
            if let Some((file, start_line, _)) = lines.span(&names, id)
                && let Some(slot) = sources.get_mut(frame.0 as usize)
            {
                *slot = Some(Source {
                    file: file.to_string(),
                    start_line,
                    line,
                });
            }
        }
        tables.profile.sources = sources;
    }
    let profile = Profile {
        name: meta.command_line.join(" "),
        start_unix_ns: meta.start_unix_ns,
        duration_ns: trace.duration_ns,
        interval_ns,
        threads: per
            .into_values()
            .filter(|t| {
                !t.samples.is_empty()
                    || !t.calls.is_empty()
                    || !t.call_paths.is_empty()
                    || !t.allocations.is_empty()
                    || !t.waits.is_empty()
            })
            .collect(),
        // `record --waits`: the thread pool's starvation episodes.
        markers: crate::report::starvation_episodes(&trace.events, &Default::default())
            .into_iter()
            .map(|(start_ns, end_ns, before, after)| ProcessMarker {
                name: format!("thread-pool starvation: {before} → {after} workers"),
                start_ns,
                end_ns,
            })
            .collect(),
        ..tables.profile
    };
    Built {
        profile,
        calls_dropped,
        calls_until_ns,
    }
}
