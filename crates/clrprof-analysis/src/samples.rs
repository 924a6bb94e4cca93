//! Sampling analysis: per function, how many samples had it on top (self) or anywhere
//! (total), in wall time (every sample) and CPU time (the CPU the thread used since its
//! previous sample, counted for samples taken while the thread ran); per thread, the
//! same totals, its CPU share and what it waited in when it did not run.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::Serialize;

use clrprof_format::Event;

use clrprof_export::FrameKind;

use crate::names::Names;
use crate::runtime_frames::{self, Activity, ThreadRole, Windows};
use crate::threads::ThreadNames;
use crate::timeline::TimedEvent;
use crate::waits::{self, RunState, ThreadState, WaitKind};

/// One sample: its stack as frame ids, leaf first (names come from [`Names`]).
#[derive(Debug, Clone)]
pub struct StackSample {
    pub ns: u64,
    pub os_tid: u64,
    pub cpu_ns: u64,
    /// Whether the thread was running (used at least half the interval on a CPU).
    pub state: RunState,
    /// Frame ids, leaf first: function ids, and native ids (see
    /// [`clrprof_format::is_native_frame`]), consecutive runs of one module merged.
    pub stack: Vec<u64>,
    /// The wait the stack is in (set by [`prepare`]).
    pub wait: Option<WaitKind>,
    /// What its runtime frames were doing (set by [`prepare`]).
    pub activity: Option<Activity>,
    /// Per frame of `stack`, where in its method it was: the trace's `SamplePositions`
    /// items ([`clrprof_format::position_il`]); empty when the trace has none for it.
    pub positions: Vec<u64>,
}

impl StackSample {
    /// Whether the CPU view counts the sample, weighted by the CPU its thread used since
    /// its previous sample: the thread used some, and its stack is not parked in a wait
    /// outside the runtime (a thread that ran and then blocked in `futex` is sampled in
    /// the wait; its CPU was spent elsewhere, and stays unattributed).
    pub fn counts_cpu(&self, names: &Names) -> bool {
        if self.cpu_ns == 0 {
            return false;
        }
        // Parked: a wait whose leaf is native code outside the runtime (a spinning
        // runtime or managed wait is CPU work).
        match (self.wait, self.stack.first()) {
            (Some(_), Some(&leaf)) => names.frame_kind(leaf) != FrameKind::Native,
            _ => true,
        }
    }
}

/// What the function table ranks by.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum View {
    /// On-CPU samples weighted by the CPU their thread used (the default).
    #[default]
    Cpu,
    /// Every sample of every thread, running or not.
    Wall,
}

/// Which samples (and calls) a report looks at.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// A thread's name or OS id.
    pub thread: Option<String>,
    /// Nanoseconds since the trace's start.
    pub from_ns: Option<u64>,
    pub to_ns: Option<u64>,
}

impl Filter {
    pub fn is_empty(&self) -> bool {
        self.thread.is_none() && self.from_ns.is_none() && self.to_ns.is_none()
    }

    #[inline]
    pub fn keeps_time(&self, ns: u64) -> bool {
        self.from_ns.is_none_or(|f| ns >= f) && self.to_ns.is_none_or(|t| ns <= t)
    }

    #[inline]
    pub fn keeps_thread(&self, os_tid: u64, threads: &ThreadNames) -> bool {
        match &self.thread {
            None => true,
            Some(t) => thread_matches(t, os_tid, threads.named(os_tid)),
        }
    }
}

/// Whether a `--thread` value names a thread: its exact name or its OS id (the rule of
/// `report --thread` and `top --thread`).
pub fn thread_matches(wanted: &str, os_tid: u64, name: Option<&str>) -> bool {
    wanted.parse::<u64>().ok() == Some(os_tid) || name == Some(wanted)
}

#[derive(Debug, Default, Serialize)]
pub struct SampleTotals {
    /// `cpu` (the function table counts on-CPU samples, weighted by CPU time) or `wall`
    /// (every sample).
    pub view: View,
    pub total: u64,
    /// Samples whose thread was running: it used at least half the sampling interval on a
    /// CPU since its previous sample.
    pub on_cpu: u64,
    pub cpu_ns: u64,
    /// The CPU time the CPU view gives to stacks ([`share_cpu`]): that of every thread
    /// seen running at least once (the rest was used by threads only ever sampled in a
    /// wait, where the stack does not say what used it).
    pub attributed_cpu_ns: u64,
    /// CPU of the counted samples without any frame of the app's own code (runtime and
    /// framework threads), which the app-code table leaves out.
    pub outside_app_cpu_ns: u64,
    /// Samples whose leaf frames were the runtime's GC poll, given to the method that
    /// polled (the suspend sampler stops threads there).
    pub gc_poll_folded: u64,
    /// Samples per second actually achieved.
    pub rate_hz: f64,
    /// The rate asked for.
    pub requested_rate_hz: Option<f64>,
    pub threads: Vec<ThreadSamples>,
}

#[derive(Debug, Serialize)]
pub struct ThreadSamples {
    pub os_tid: u64,
    pub name: Option<String>,
    pub samples: u64,
    pub on_cpu: u64,
    pub cpu_ns: u64,
    /// CPU time over the thread's sampled time (samples × interval), in percent.
    pub cpu_percent: f64,
    /// `running` when most samples were on CPU, else the wait most samples were in
    /// (`lock`, `sleep`, `I/O`, `join`, `GC`, `idle`, `native`) or `partly running` (off
    /// CPU in managed code: the thread ran less than half the interval).
    pub state: ThreadState,
    /// Samples off CPU by what they waited in (never `running`).
    pub waits: BTreeMap<ThreadState, u64>,
    /// What an unnamed thread is, when its samples say: `main` (the process's first
    /// thread), `runtime: JIT` (no managed frame in any sample, JIT work in some: the
    /// tiered compilation worker), `runtime` (no managed frame in any sample: the
    /// finalizer and other threads the runtime starts). None for named threads.
    pub role: Option<String>,
}

#[derive(Debug, Serialize, Clone)]
pub struct FunctionSamples {
    pub name: String,
    pub self_samples: u64,
    pub total_samples: u64,
    pub self_cpu_ns: u64,
    pub total_cpu_ns: u64,
    /// Traces with source positions: the document of the method's body (null when
    /// unknown); absent in other traces.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<Option<String>>,
    /// Traces with source positions: the first line of the method's body (null when
    /// unknown); absent in other traces.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<Option<u32>>,
}

/// Every sample of the trace, in time order, with its positions.
pub fn stack_samples(events: &[TimedEvent<'_>]) -> Vec<StackSample> {
    let mut out = Vec::new();
    for e in events {
        push_sample(&mut out, e);
    }
    out
}

/// Appends the sample an event holds to `samples`, or gives the positions a
/// `SamplePositions` event holds to the latest sample of its thread (the agent writes
/// them right after it).
pub fn push_sample(samples: &mut Vec<StackSample>, e: &TimedEvent<'_>) {
    if let Event::SamplePositions { os_tid, positions } = &e.event {
        // The sample is among the last few: one per thread sampled at the same tick.
        let n = samples.len();
        if let Some(s) = samples[n.saturating_sub(256)..]
            .iter_mut()
            .rev()
            .find(|s| s.os_tid == *os_tid)
            && s.positions.is_empty()
            && s.stack.len() == positions.len()
        {
            s.positions = positions.to_vec();
        }
    } else if let Some(s) = stack_sample(e) {
        samples.push(s);
    }
}

/// The sample an event holds, if it is one.
pub fn stack_sample(e: &TimedEvent<'_>) -> Option<StackSample> {
    let Event::Sample {
        os_tid,
        cpu_ns,
        state,
        frames,
        ..
    } = &e.event
    else {
        return None;
    };
    let mut stack: Vec<u64> = Vec::with_capacity(frames.len());
    for &f in frames.iter() {
        // Consecutive native runs (of one module) collapse into one frame.
        if clrprof_format::is_native_frame(f) && stack.last() == Some(&f) {
            continue;
        }
        stack.push(f);
    }
    Some(StackSample {
        ns: e.ns,
        os_tid: *os_tid,
        cpu_ns: *cpu_ns,
        state: RunState::from_record(*state),
        stack,
        wait: None,
        activity: None,
        positions: Vec::new(),
    })
}

/// Whether a method is the runtime's GC poll (`Thread.PollGC` and its worker).
fn is_gc_poll(name: &str) -> bool {
    name.starts_with("System.Threading.Thread.PollGC")
        || name.starts_with("System.Threading.Thread.<PollGC>")
}

/// Gives each sample its wait and runtime activity, and drops the GC-poll frames at its
/// leaf (with native frames below them), so that the method that polled gets the time.
/// Returns how many samples lost such frames.
pub fn prepare(samples: &mut [StackSample], names: &Names, windows: &Windows) -> u64 {
    let mut folded = 0;
    let mut poll: HashMap<u64, bool> = HashMap::new();
    for s in samples.iter_mut() {
        let mut cut = 0;
        for (i, f) in s.stack.iter().enumerate() {
            if clrprof_format::is_native_frame(*f) {
                continue;
            }
            if *poll
                .entry(*f)
                .or_insert_with(|| is_gc_poll(&names.function(*f)))
            {
                cut = i + 1;
            } else {
                break;
            }
        }
        if cut > 0 && cut < s.stack.len() {
            s.stack.drain(..cut);
            if s.positions.len() > cut {
                s.positions.drain(..cut);
            }
            folded += 1;
        }
        // A thread that used CPU without a managed frame (the runtime's JIT worker, its
        // GC and finalizer threads, native code) was doing what the thread does, not
        // waiting: its sample becomes one frame named after what the thread is
        // (`[runtime: JIT]`), and the CPU view counts it. (A busy machine often gives
        // such a thread less than half of an interval, so "used some" rather than
        // "running" decides.)
        if s.cpu_ns > 0
            && !s.stack.is_empty()
            && s.stack.iter().all(|f| clrprof_format::is_native_frame(*f))
        {
            let role = ThreadRole::of(
                names.thread_os_names.get(&s.os_tid).map(String::as_str),
                &s.stack,
                s.ns,
                names,
                windows,
            );
            s.stack.truncate(1);
            s.positions.truncate(1);
            s.wait = None;
            s.activity = Some(Activity::Thread(role));
            continue;
        }
        s.wait = waits::classify(&s.stack, names);
        if s.wait.is_none() && s.state != RunState::Running && windows.in_gc(s.ns) {
            s.wait = Some(WaitKind::Gc);
        }
        s.activity = runtime_frames::activity(&s.stack, s.os_tid, s.ns, s.wait, names, windows);
    }
    folded
}

/// What the samples of one thread showed, for its role.
#[derive(Default, Clone, Copy)]
struct Seen {
    managed: bool,
    jit: bool,
    /// Seen running at least once (a sample the CPU view counts).
    running: bool,
}

pub fn totals(
    samples: &[StackSample],
    names: &Names,
    threads: &ThreadNames,
    requested_rate_hz: Option<f64>,
    view: View,
    pid: Option<u64>,
) -> SampleTotals {
    let mut per: BTreeMap<u64, ThreadSamples> = BTreeMap::new();
    let mut seen: HashMap<u64, Seen> = HashMap::new();
    let mut t = SampleTotals {
        view,
        requested_rate_hz,
        ..Default::default()
    };
    for s in samples {
        t.total += 1;
        t.cpu_ns += s.cpu_ns;
        let e = per.entry(s.os_tid).or_insert_with(|| ThreadSamples {
            os_tid: s.os_tid,
            name: threads.named(s.os_tid).map(String::from),
            samples: 0,
            on_cpu: 0,
            cpu_ns: 0,
            cpu_percent: 0.0,
            // Set once all its samples are counted.
            state: ThreadState::PartlyRunning,
            waits: BTreeMap::new(),
            role: None,
        });
        let k = seen.entry(s.os_tid).or_default();
        k.managed |= s.stack.iter().any(|f| !clrprof_format::is_native_frame(*f));
        k.jit |= matches!(
            s.activity,
            Some(Activity::Jit | Activity::Thread(ThreadRole::Jit))
        );
        e.samples += 1;
        e.cpu_ns += s.cpu_ns;
        k.running |= s.counts_cpu(names);
        if s.state == RunState::Running {
            t.on_cpu += 1;
            e.on_cpu += 1;
        } else {
            // Off CPU in managed code: it ran, but less than half the interval.
            *e.waits.entry(ThreadState::off_cpu(s.wait)).or_default() += 1;
        }
    }
    t.attributed_cpu_ns = per
        .values()
        .filter(|th| seen.get(&th.os_tid).is_some_and(|k| k.running))
        .map(|th| th.cpu_ns)
        .sum();
    // Rate: distinct sample instants over the span they cover.
    let mut instants: Vec<u64> = samples.iter().map(|s| s.ns).collect();
    instants.dedup();
    if instants.len() > 1 {
        let span = instants.last().unwrap_or(&0) - instants.first().unwrap_or(&0);
        if span > 0 {
            t.rate_hz = (instants.len() - 1) as f64 / (span as f64 / 1e9);
        }
    }
    let interval_ns = requested_rate_hz
        .filter(|r| *r > 0.0)
        .map_or(0.0, |r| 1e9 / r);
    for th in per.values_mut() {
        let k = seen.get(&th.os_tid).copied().unwrap_or_default();
        th.role = match () {
            _ if th.name.is_some() => None,
            _ if pid == Some(th.os_tid) => Some("main".to_string()),
            _ if !k.managed && k.jit => Some("runtime: JIT".to_string()),
            _ if !k.managed => Some("runtime".to_string()),
            _ => None,
        };
        let sampled_ns = th.samples as f64 * interval_ns;
        if sampled_ns > 0.0 {
            th.cpu_percent = (100.0 * th.cpu_ns as f64 / sampled_ns).min(100.0);
        }
        th.state = if th.on_cpu * 2 >= th.samples {
            ThreadState::Running
        } else {
            th.waits
                .iter()
                .max_by_key(|(k, n)| (**n, std::cmp::Reverse(**k)))
                .map_or(ThreadState::PartlyRunning, |(k, _)| *k)
        };
    }
    t.threads = per.into_values().collect();
    t
}

/// A frame as the function tables count it: its id, and for native frames the activity
/// and whether the frames next to it are managed (bit 0: its callee, bit 1: its caller),
/// which [`runtime_frames::frame_label`] names them by.
type FrameKey = (u64, Option<Activity>, u8);

/// An interned frame name of [`Labels`]: equal names share one.
pub type LabelId = u32;

/// Names frames of samples, cached by [`FrameKey`], and interns the names: a table keyed
/// by [`LabelId`] counts the code versions of one method (and the frames one label
/// names) as one, without a string per sample.
pub struct Labels<'a> {
    names: &'a Names,
    /// Whether anonymous code between managed frames is a runtime stub: true with the
    /// signal sampler, which names every module it can; the suspend sampler reports all
    /// native code as one anonymous frame.
    stubs_named: bool,
    cache: HashMap<FrameKey, LabelId>,
    ids: HashMap<String, LabelId>,
    texts: Vec<String>,
}

impl<'a> Labels<'a> {
    pub fn new(names: &'a Names, stubs_named: bool) -> Labels<'a> {
        Labels {
            names,
            stubs_named,
            cache: HashMap::new(),
            ids: HashMap::new(),
            texts: Vec::new(),
        }
    }

    /// The name of frame `i` of `s`, interned.
    pub fn label(&mut self, s: &StackSample, i: usize) -> LabelId {
        let f = s.stack[i];
        let key: FrameKey = if clrprof_format::is_native_frame(f) {
            let managed = |j: usize| {
                s.stack
                    .get(j)
                    .is_some_and(|g| !clrprof_format::is_native_frame(*g))
            };
            let neighbours = u8::from(i > 0 && managed(i - 1)) | (u8::from(managed(i + 1)) << 1);
            (f, s.activity, neighbours)
        } else {
            (f, None, 0)
        };
        if let Some(&id) = self.cache.get(&key) {
            return id;
        }
        let text = if clrprof_format::is_native_frame(f) {
            runtime_frames::frame_label(self.names, &s.stack, i, s.activity, self.stubs_named)
        } else {
            self.names.display(f)
        };
        let id = match self.ids.get(&text) {
            Some(&id) => id,
            None => {
                let id = self.texts.len() as LabelId;
                self.ids.insert(text.clone(), id);
                self.texts.push(text);
                id
            }
        };
        self.cache.insert(key, id);
        id
    }

    /// The name an id stands for.
    pub fn text(&self, id: LabelId) -> &str {
        &self.texts[id as usize]
    }
}

/// The samples a view counts, with the weight in CPU time it gives each.
pub fn counted<'s>(
    samples: &'s [StackSample],
    names: &'s Names,
    view: View,
) -> impl Iterator<Item = &'s StackSample> + 's {
    samples
        .iter()
        .filter(move |s| view == View::Wall || s.counts_cpu(names))
}

/// The one rule giving CPU time to stacks, used by `report` and `top`.
///
/// A sample carries the CPU its thread used since its previous sample, but the stack is
/// where the thread is *now*. A thread that works for a millisecond and then sleeps is
/// mostly caught asleep, and crediting its CPU to that stack would put `Thread.Sleep` (and
/// the libc below it) on top; dropping it would lose the work. So a sample the CPU view
/// leaves out ([`StackSample::counts_cpu`]: parked in a wait, or its thread did not run)
/// gets no CPU, and each thread's CPU over `samples` is shared equally among its samples
/// the view counts: a thread's total stays what the kernel measured, spread over where it
/// was seen running. A thread never seen running keeps its CPU in the thread table only.
pub fn share_cpu(samples: &mut [StackSample], names: &Names) {
    let mut per: HashMap<u64, (u64, u64)> = HashMap::new();
    let counts: Vec<bool> = samples.iter().map(|s| s.counts_cpu(names)).collect();
    for (s, &c) in samples.iter().zip(&counts) {
        let e = per.entry(s.os_tid).or_default();
        e.0 += s.cpu_ns;
        e.1 += u64::from(c);
    }
    // Equal shares, the remainder one nanosecond each to the first samples, so that the
    // shares add up to the thread's CPU exactly.
    let mut given: HashMap<u64, u64> = HashMap::new();
    for (s, c) in samples.iter_mut().zip(counts) {
        if !c {
            s.cpu_ns = 0;
            continue;
        }
        let (cpu, n) = per[&s.os_tid];
        let i = given.entry(s.os_tid).or_default();
        s.cpu_ns = cpu / n + u64::from(*i < cpu % n);
        *i += 1;
    }
}

/// Per-function self and total figures of the samples `view` counts, most first (CPU
/// time in the CPU view, samples in the wall view). Functions are counted by name, so
/// that the code versions of one method make one row.
pub fn functions(
    samples: &[StackSample],
    names: &Names,
    view: View,
    stubs_named: bool,
) -> Vec<FunctionSamples> {
    let mut labels = Labels::new(names, stubs_named);
    let mut rows: Vec<FunctionSamples> = Vec::new();
    // Per label id, its row.
    let mut row_of: Vec<Option<usize>> = Vec::new();
    let mut seen: HashSet<usize> = HashSet::new();
    for s in counted(samples, names, view) {
        seen.clear();
        for i in 0..s.stack.len() {
            let id = labels.label(s, i) as usize;
            if row_of.len() <= id {
                row_of.resize(id + 1, None);
            }
            let row = *row_of[id].get_or_insert_with(|| {
                rows.push(FunctionSamples {
                    name: labels.text(id as LabelId).to_string(),
                    self_samples: 0,
                    total_samples: 0,
                    self_cpu_ns: 0,
                    total_cpu_ns: 0,
                    file: None,
                    line: None,
                });
                rows.len() - 1
            });
            let e = &mut rows[row];
            if i == 0 {
                e.self_samples += 1;
                e.self_cpu_ns += s.cpu_ns;
            }
            // Recursion: count a function once per sample in totals.
            if seen.insert(row) {
                e.total_samples += 1;
                e.total_cpu_ns += s.cpu_ns;
            }
        }
    }
    rows.sort_by(|a, b| {
        let key = |f: &FunctionSamples| match view {
            View::Cpu => (f.self_cpu_ns, f.total_cpu_ns),
            View::Wall => (f.self_samples, f.total_samples),
        };
        key(b).cmp(&key(a)).then_with(|| a.name.cmp(&b.name))
    });
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::names::FunctionName;
    use clrprof_format::NATIVE_MODULE_FRAME;
    use std::borrow::Cow;

    const A: u64 = 1;
    const MAIN: u64 = 2;
    const B: u64 = 3;
    /// Another code version of `A` (a different FunctionID with the same name).
    const A2: u64 = 4;

    fn names() -> Names {
        let mut n = Names::default();
        for (id, name) in [(A, "A"), (MAIN, "Main"), (B, "B"), (A2, "A")] {
            n.functions.insert(
                id,
                FunctionName {
                    name: name.into(),
                    ..Default::default()
                },
            );
        }
        n
    }

    fn s(stack: &[u64], cpu: u64) -> StackSample {
        StackSample {
            ns: 0,
            os_tid: 1,
            cpu_ns: cpu,
            state: RunState::from_record(u8::from(cpu > 0)),
            stack: stack.to_vec(),
            wait: None,
            activity: None,
            positions: Vec::new(),
        }
    }

    #[test]
    fn self_and_total_count_recursion_once() {
        let v = functions(
            &[s(&[A, A2, MAIN], 10), s(&[B, MAIN], 0), s(&[A2, MAIN], 5)],
            &names(),
            View::Wall,
            true,
        );
        let a = v.iter().find(|f| f.name == "A").unwrap();
        assert_eq!(
            (
                a.self_samples,
                a.total_samples,
                a.self_cpu_ns,
                a.total_cpu_ns
            ),
            (2, 2, 15, 15)
        );
        let m = v.iter().find(|f| f.name == "Main").unwrap();
        assert_eq!((m.self_samples, m.total_samples), (0, 3));
        assert_eq!(v[0].name, "A");
        assert_eq!(v.len(), 3, "one row per name");
    }

    #[test]
    fn a_thread_without_managed_frames_that_used_cpu_is_named_by_what_it_is() {
        let libc = NATIVE_MODULE_FRAME | 1;
        let jit = NATIVE_MODULE_FRAME | 2;
        let mut n = names();
        for (id, path) in [(libc, "/lib/libc.so.6"), (jit, "/rt/libclrjit.so")] {
            n.native_modules.insert(
                id,
                crate::names::ModuleFile {
                    name: path.rsplit('/').next().unwrap().into(),
                    path: Some(path.into()),
                },
            );
        }
        // The tiered-compilation worker, named by the OS (15 bytes), in libc.
        n.thread_os_names
            .insert(7, crate::names::full_thread_name(".NET Tiered Com").into());
        let mut worker = s(&[libc, libc], 5);
        worker.os_tid = 7;
        // Partly running: the thread used CPU, under half the interval.
        worker.state = RunState::OffCpu;
        let mut v = vec![
            worker,
            // An unnamed thread in the JIT library.
            s(&[jit, libc], 3),
            // Other native code.
            s(&[libc], 2),
            // Did not run: a wait, as before.
            s(&[libc], 0),
        ];
        prepare(&mut v, &n, &Windows::default());
        let labels: Vec<String> = v
            .iter()
            .map(|s| runtime_frames::frame_label(&n, &s.stack, 0, s.activity, true))
            .collect();
        assert_eq!(
            labels[..3],
            ["[runtime: JIT]", "[runtime: JIT]", "[native: libc.so.6]"]
        );
        assert_eq!(v[0].stack, [libc], "one frame: what the thread is");
        assert_eq!(v[3].wait, Some(WaitKind::Native));
        let f = functions(&v, &n, View::Cpu, true);
        let rows: Vec<_> = f.iter().map(|f| (f.name.as_str(), f.self_cpu_ns)).collect();
        assert_eq!(rows, [("[runtime: JIT]", 8), ("[native: libc.so.6]", 2)]);
    }

    #[test]
    fn the_cpu_view_counts_running_samples_and_not_waits() {
        const WAIT: u64 = 5;
        const POLL: u64 = 6;
        let libc = NATIVE_MODULE_FRAME | 1;
        let mut n = names();
        for (id, name) in [
            (WAIT, "System.Threading.Monitor.Wait"),
            (POLL, "System.Threading.Thread.<PollGC>g__PollGCWorker|67_0"),
        ] {
            n.functions.insert(
                id,
                FunctionName {
                    name: name.into(),
                    ..Default::default()
                },
            );
        }
        let mut v = vec![
            s(&[B, MAIN], 10),
            // Ran most of the interval, then blocked: sampled in the wait.
            s(&[libc, WAIT, MAIN], 9),
            s(&[libc, WAIT, MAIN], 0),
            // Stopped at the GC poll: the time is the polling method's.
            s(&[0, POLL, A, MAIN], 10),
        ];
        let folded = prepare(&mut v, &n, &Windows::default());
        assert_eq!(folded, 1);
        assert_eq!(v[3].stack, [A, MAIN]);
        assert_eq!(v[1].wait, Some(WaitKind::Lock));
        let f = functions(&v, &n, View::Cpu, true);
        let rows: Vec<_> = f
            .iter()
            .map(|f| (f.name.as_str(), f.self_samples, f.self_cpu_ns))
            .collect();
        assert_eq!(rows, [("A", 1, 10), ("B", 1, 10), ("Main", 0, 0)]);
        let t = totals(
            &v,
            &n,
            &ThreadNames::default(),
            Some(100.0),
            View::Cpu,
            Some(1),
        );
        // The thread ran: all of its CPU goes to stacks.
        assert_eq!((t.on_cpu, t.attributed_cpu_ns, t.cpu_ns), (3, 29, 29));
        let th = &t.threads[0];
        assert_eq!(
            th.waits.get(&ThreadState::Waiting(WaitKind::Lock)),
            Some(&1)
        );
        assert_eq!(th.state, ThreadState::Running);
        assert_eq!(th.role.as_deref(), Some("main"));
        // The one CPU rule (`report` and `top`): the 9 ns the thread used before it
        // blocked are not the wait's, nor lost; the thread's 29 ns are shared by the two
        // samples that ran, to the nanosecond.
        share_cpu(&mut v, &n);
        let f = functions(&v, &n, View::Cpu, true);
        let rows: Vec<_> = f
            .iter()
            .map(|f| (f.name.as_str(), f.self_samples, f.self_cpu_ns))
            .collect();
        assert_eq!(rows, [("B", 1, 15), ("A", 1, 14), ("Main", 0, 0)]);
        assert_eq!(v.iter().map(|s| s.cpu_ns).sum::<u64>(), 29);
        // A thread only ever sampled in a wait gives its CPU to no stack.
        let mut parked = vec![StackSample {
            os_tid: 2,
            ..v[1].clone()
        }];
        parked[0].cpu_ns = 7;
        let t = totals(&parked, &n, &ThreadNames::default(), None, View::Cpu, None);
        assert_eq!((t.attributed_cpu_ns, t.cpu_ns), (0, 7));
        share_cpu(&mut parked, &n);
        assert_eq!(parked[0].cpu_ns, 0);
    }

    #[test]
    fn consecutive_frames_of_one_native_module_collapse() {
        let libc = NATIVE_MODULE_FRAME | 1;
        let coreclr = NATIVE_MODULE_FRAME | 2;
        let frames = vec![libc, libc, coreclr, A, 0, 0, MAIN, MAIN];
        let got = stack_samples(&[TimedEvent {
            ns: 5,
            os_tid: 9,
            event: Event::Sample {
                os_tid: 9,
                thread: 1,
                cpu_ns: 3,
                state: 1,
                frames: Cow::Owned(frames),
            },
        }]);
        assert_eq!(got.len(), 1);
        // Managed recursion stays; native runs merge.
        assert_eq!(got[0].stack, vec![libc, coreclr, A, 0, MAIN, MAIN]);
    }
}
