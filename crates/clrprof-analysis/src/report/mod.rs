//! The report: everything `clrprof report` shows, as one serialisable value. The JSON
//! form is documented field by field in docs/report-json.md; keep the two in step.
//!
//! Each section has its collector: [`build_with`] feeds every timeline event to each of
//! them (each `observe` ignores the kinds its section does not count) and the call
//! records to [`Calls`], then assembles what their `finish` gives. [`crate::text`]
//! renders the sections.

mod alloc_samples;
mod allocations;
mod calls;
mod counts;
mod exceptions;
mod gc_summary;
mod jit;
mod lost;
mod modules;
pub mod push;
mod sampler;
mod samples;
mod trace_info;
mod waits_section;

use std::collections::BTreeMap;

use serde::Serialize;

use crate::butterfly::{self, Butterfly};
use crate::calltree::{self, FunctionStats, ThreadTree, TraceStats, TreeNode};
use crate::gc::{self, Gc};
use crate::names::Names;
use crate::runtime_frames::Windows;
use crate::samples::{Filter, FunctionSamples, SampleTotals, View};
use crate::threads::{ThreadLifetimes, ThreadNames};
use crate::timeline::{StreamSink, Streamed, TimedCall, TimedEvent, Trace, is_exception};

pub use crate::threads::ThreadInfo;
pub use alloc_samples::{
    AllocationSamples, FunctionBytes, LineBytes, LiveHeap, Outside, TypeBytes, by_app_function,
    by_type,
};
pub use allocations::{Allocation, Allocations};
pub use calls::{Calls, CallsSection};
pub use counts::EventCounts;
pub use exceptions::{ExceptionStack, Exceptions, ExceptionsSection, MESSAGES_TRACKED};
pub use gc_summary::GcSummary;
pub use jit::{Jit, JitEntry, JitSummary};
pub use lost::{Lost, WriteFailure, errno_text, lost_reason};
pub use modules::{Loaded, ModuleInfo};
pub use sampler::{Sampler, SamplerStats, SamplerTiming};
pub use samples::{SampleView, Samples, SamplesSection};
pub use trace_info::TraceInfo;
pub use waits_section::{
    Blocking, Contention, Episode, KindRow, LockRow, NamedWait, Owner, OwnerStacks, ThreadPool,
    WaitInterval, WaitPairs, Waiter, WaitsSection, intervals as wait_intervals,
    starvation_episodes,
};

use crate::lines::{LineSamples, Lines, MissingPdb};

/// What to put in the report.
#[derive(Debug, Clone)]
pub struct Options {
    /// Depth of the call trees in the report.
    pub depth: usize,
    /// What the sampled function table ranks by.
    pub view: View,
    /// The samples and calls looked at (a thread, a time window); other sections cover
    /// the whole trace.
    pub filter: Filter,
    /// Callers and callees of the functions matching this pattern (the butterfly).
    pub function: Option<String>,
    /// Sample mode: map frames to source lines through the modules' PDBs, also looking in
    /// these folders (`--pdb-dir`); None: no lines.
    pub pdb_dirs: Option<Vec<std::path::PathBuf>>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            depth: 64,
            view: View::Cpu,
            filter: Filter::default(),
            function: None,
            pdb_dirs: Some(Vec::new()),
        }
    }
}

/// Per-function figures: sampled (sample mode) or exact (trace mode).
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum Functions {
    Sampled(Vec<FunctionSamples>),
    Traced(Vec<FunctionStats>),
}

#[derive(Debug, Serialize)]
pub struct Report {
    pub trace: TraceInfo,
    /// Problems met while reading the file; the report covers the events before them.
    pub warnings: Vec<String>,
    /// Events the agent could not record (full buffers in drop mode, …).
    pub lost_events: u64,
    /// How many events of each kind were recorded.
    pub events: EventCounts,
    /// Exception type → number thrown.
    pub exceptions: BTreeMap<String, u64>,
    /// Per exception type, its most frequent messages.
    pub exception_messages: BTreeMap<String, BTreeMap<String, u64>>,
    /// Per exception type, the throws whose message was not counted one by one (the
    /// type had 1,000 distinct messages before it); absent when none.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub exception_messages_other: BTreeMap<String, u64>,
    pub threads: Vec<ThreadInfo>,
    pub gcs: Vec<Gc>,
    pub gc_summary: GcSummary,
    pub modules: Vec<ModuleInfo>,
    pub assemblies: Vec<String>,
    /// Names of the classes loaded, sorted.
    pub classes: Vec<String>,
    pub jit: JitSummary,
    /// Objects allocated per class (only with the `alloc` event group), most first.
    pub allocations: Vec<Allocation>,
    /// Sampled allocations with stacks and the live heap (`record --alloc`): estimates.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allocation_samples: Option<AllocationSamples>,
    /// `record --alloc` could not start, and why (the agent's message, with the HRESULT's
    /// name when a runtime call failed); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allocation_samples_unavailable: Option<String>,
    /// Sample totals (sample mode).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub samples: Option<SampleTotals>,
    /// Sample mode: the app's own methods, each with the CPU of the samples it is the
    /// nearest app frame of (the framework, runtime and native code it called included),
    /// most first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub app_functions: Option<Vec<FunctionSamples>>,
    /// Per-function figures (sample and trace modes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub functions: Option<Functions>,
    /// The merged call tree of all threads (trace mode).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call_tree: Option<TreeNode>,
    /// One call tree per thread (trace mode).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thread_call_trees: Option<Vec<ThreadTree>>,
    /// Consistency figures of the call-tree reconstruction (trace mode).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_stats: Option<TraceStats>,
    /// The distinct stacks exceptions were thrown from, leaf first, with how many were
    /// thrown from each, most first (when recorded).
    pub exception_stacks: Vec<ExceptionStack>,
    /// `lost_events` by reason: `buffer_full` (drop mode), `write_failed` (the file
    /// refused writes), `stopping` (arrived while the recording stopped), `unknown` (a
    /// trace of before reasons were recorded).
    pub lost_by_reason: BTreeMap<String, u64>,
    /// Writes the trace file refused, by error (e.g. ENOSPC: the disk was full).
    pub write_failures: Vec<WriteFailure>,
    /// The sampler's own figures (sample mode, when recorded).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sampler: Option<SamplerStats>,
    /// Callers and callees of the functions `--function` matched (trace mode: from the
    /// calls; sample mode: from the samples the view counts).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub butterfly: Option<Butterfly>,
    /// Sample mode: CPU by source line (from the frames' IL offsets and the modules'
    /// PDBs), most self CPU first; absent when the trace has no positions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lines: Option<Vec<LineSamples>>,
    /// Modules of sampled frames without readable lines, and why (where a PDB was
    /// looked for); absent when none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub missing_pdbs: Vec<MissingPdb>,
    /// `record --waits`: lock contention by object type, with waiters and owners.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contention: Option<Contention>,
    /// `record --waits`: thread-pool starvation episodes and what blocked the pool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threadpool: Option<ThreadPool>,
    /// `record --waits`: time blocked by kind, with the app methods that waited.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waits: Option<Vec<KindRow>>,
    /// `record --waits`: what the trace cannot say about waits (e.g. no wait-handle
    /// events on .NET 8).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub waits_notes: Vec<String>,
    /// `record --push`: the profiles pushed for this process, and those dropped and why
    /// (appended by the CLI when the recording ended); absent without `--push`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub push: Option<push::PushOutcome>,
}

/// Builds the report of a loaded trace.
pub fn build(trace: &Trace<'_>) -> Report {
    build_with(trace, Options::default())
}

/// The allocation section of `trace` alone (`record --alloc`), without the rest of the
/// report: what `clrprof diff` compares. `None` when the trace has no allocation samples.
pub fn allocation_samples(trace: &Trace<'_>) -> Option<AllocationSamples> {
    let names = Names::collect(&trace.events);
    alloc_samples::section(&crate::allocs::collect(&trace.events), &names)
}

/// The collectors of the sections that come from the timeline.
#[derive(Default)]
struct Collectors {
    counts: EventCounts,
    exceptions: Exceptions,
    threads: ThreadLifetimes,
    loaded: Loaded,
    jit: Jit,
    allocations: Allocations,
    lost: Lost,
    sampler: Sampler,
    samples: Samples,
}

impl Collectors {
    fn observe(&mut self, e: &TimedEvent<'_>) {
        self.counts.observe(&e.event);
        self.exceptions.observe(e);
        self.threads.add(e.ns, &e.event);
        self.loaded.observe(e);
        self.jit.observe(e);
        self.allocations.observe(&e.event);
        self.lost.observe(&e.event);
        self.sampler.observe(&e.event);
        self.samples.observe(e);
    }
}

/// Builds the report with explicit options.
pub fn build_with(trace: &Trace<'_>, opts: Options) -> Report {
    let names = Names::collect(&trace.events);
    let thread_names = ThreadNames::collect(&trace.events);
    let mut c = Collectors::default();
    for e in &trace.events {
        c.observe(e);
    }
    let filter = &opts.filter;
    let mut butterfly = None;
    // One more pass over the file for what the timeline does not hold: the calls and
    // the exceptions.
    let mut calls = (trace.call_records > 0).then(Calls::default);
    let which = Streamed {
        calls: calls.is_some(),
        exceptions: true,
        call_values: false,
    };
    // The calls come apart from the other records (`TimedCall`: plain numbers), in
    // their place among them.
    struct Streaming<'s> {
        c: &'s mut Collectors,
        calls: &'s mut Option<Calls>,
        filter: &'s Filter,
        thread_names: &'s ThreadNames,
        /// No `--from`, `--to` or `--thread`: every call is kept.
        all: bool,
    }
    impl Streaming<'_> {
        #[inline(always)]
        fn kept(&self, ns: u64, os_tid: u64) -> bool {
            self.all
                || (self.filter.keeps_time(ns)
                    && self.filter.keeps_thread(os_tid, self.thread_names))
        }
    }
    impl<'a> StreamSink<'a> for Streaming<'_> {
        #[inline(always)]
        fn call(&mut self, e: &TimedCall) {
            if self.calls.is_some()
                && self.kept(e.ns, e.os_tid)
                && let Some(calls) = self.calls.as_mut()
            {
                calls.observe_call(e);
            }
        }
        fn event(&mut self, e: &TimedEvent<'a>) {
            let exception = is_exception(&e.event);
            if exception {
                self.c.counts.observe(&e.event);
                self.c.exceptions.observe(e);
            }
            let for_calls = !exception
                || matches!(
                    e.event,
                    clrprof_format::Event::ExceptionPhase {
                        phase: clrprof_format::ExceptionPhase::CatcherEnter,
                        ..
                    }
                );
            if for_calls
                && self.calls.is_some()
                && self.kept(e.ns, e.os_tid)
                && let Some(calls) = self.calls.as_mut()
            {
                calls.observe(e);
            }
        }
    }
    // The calls alone (no exceptions in the trace): on several threads, each trace
    // thread's calls on one of them.
    struct ThreadCalls<'s> {
        calls: Calls,
        filter: &'s Filter,
        thread_names: &'s ThreadNames,
        all: bool,
    }
    impl<'a> StreamSink<'a> for ThreadCalls<'_> {
        #[inline(always)]
        fn call(&mut self, e: &TimedCall) {
            if self.all
                || (self.filter.keeps_time(e.ns)
                    && self.filter.keeps_thread(e.os_tid, self.thread_names))
            {
                self.calls.observe_call(e);
            }
        }
        fn event(&mut self, e: &TimedEvent<'a>) {
            if self.all
                || (self.filter.keeps_time(e.ns)
                    && self.filter.keeps_thread(e.os_tid, self.thread_names))
            {
                self.calls.observe(e);
            }
        }
    }
    let on_workers = calls.as_ref().and_then(|first| {
        trace.calls_on_workers(which, || ThreadCalls {
            calls: first.fork(),
            filter,
            thread_names: &thread_names,
            all: filter.is_empty(),
        })
    });
    if let Some(parts) = on_workers {
        if let Some(calls) = calls.as_mut() {
            for part in parts {
                calls.join(part.calls);
            }
        }
    } else {
        trace.for_each_streamed_into(
            which,
            &mut Streaming {
                c: &mut c,
                calls: &mut calls,
                filter,
                thread_names: &thread_names,
                all: filter.is_empty(),
            },
        );
    }
    let calls = calls.map(|calls| {
        // The butterfly needs the whole tree; the report's trees are cut after.
        let depth = if opts.function.is_some() {
            calltree::MAX_PATH_DEPTH
        } else {
            opts.depth
        };
        let mut section = calls.finish(&names, &thread_names, depth);
        if let Some(p) = &opts.function {
            butterfly = Some(butterfly::of_calls(&section.tree, p));
            section.tree.prune(opts.depth);
            for t in &mut section.thread_trees {
                t.root.prune(opts.depth);
            }
        }
        section
    });
    let windows = Windows::collect(&trace.events);
    let want = SampleView {
        view: opts.view,
        filter,
        function: opts.function.as_deref(),
        pdb_dirs: opts.pdb_dirs.as_deref(),
    };
    let sampled_section =
        c.samples
            .finish(&trace.header.meta, &names, &thread_names, &windows, &want);
    let mut lines = None;
    let mut missing_pdbs = Vec::new();
    let (samples, sampled, app_functions) = match sampled_section {
        Some(s) => {
            if calls.is_none() {
                butterfly = butterfly.or(s.butterfly);
            }
            lines = s.lines;
            missing_pdbs = s.missing_pdbs;
            (
                Some(s.totals),
                Some(Functions::Sampled(s.functions)),
                Some(s.app_functions),
            )
        }
        None => (None, None, None),
    };
    let alloc_points = crate::allocs::collect(&trace.events);
    // Trace mode's exact figures, else the sampled ones.
    let (functions, call_tree, thread_call_trees, trace_stats) = match calls {
        Some(s) => (
            Some(Functions::Traced(s.functions)),
            Some(s.tree),
            Some(s.thread_trees),
            Some(s.stats),
        ),
        None => (sampled, None, None, None),
    };
    let mut exception_lines = opts.pdb_dirs.as_deref().map(|d| Lines::new(d.to_vec()));
    let exceptions = c.exceptions.finish(&names, exception_lines.as_mut());
    let loaded = c.loaded.finish();
    // Allocation samples' lines: modules without readable lines join the sampled ones'.
    let mut alloc_lines = opts.pdb_dirs.as_deref().map(|d| Lines::new(d.to_vec()));
    let allocation_samples =
        alloc_samples::section_with_lines(&alloc_points, &names, alloc_lines.as_mut());
    for m in alloc_lines.as_ref().map_or(&[][..], |l| l.missing()) {
        if !missing_pdbs.iter().any(|k| k.module == m.module) {
            missing_pdbs.push(m.clone());
        }
    }
    let gcs = gc::collect(&trace.events);
    let waits = waits_of(trace, &names, &thread_names, &windows, &gcs, filter);
    let (contention, threadpool, wait_kinds, waits_notes) = match waits {
        Some(w) => (
            Some(w.contention),
            Some(w.threadpool),
            Some(w.kinds),
            w.notes,
        ),
        None => (None, None, None, Vec::new()),
    };
    Report {
        trace: TraceInfo::new(&trace.header, trace.duration_ns),
        warnings: trace.warnings.clone(),
        lost_events: c.lost.events,
        events: c.counts,
        exceptions: exceptions.by_type,
        exception_messages: exceptions.messages,
        exception_messages_other: exceptions.messages_other,
        threads: c.threads.finish(),
        gc_summary: GcSummary::of(&gcs),
        gcs,
        modules: loaded.modules,
        assemblies: loaded.assemblies,
        classes: loaded.classes,
        jit: c.jit.finish(&names),
        allocations: c.allocations.finish(&names),
        allocation_samples,
        allocation_samples_unavailable: alloc_points.unavailable.clone(),
        samples,
        app_functions,
        functions,
        call_tree,
        thread_call_trees,
        trace_stats,
        exception_stacks: exceptions.stacks,
        lost_by_reason: c.lost.by_reason,
        write_failures: c.lost.write_failures,
        sampler: c.sampler.finish(),
        butterfly,
        lines,
        missing_pdbs,
        contention,
        threadpool,
        waits: wait_kinds,
        waits_notes,
        push: trace
            .events
            .iter()
            .rev()
            .find_map(|e| push::PushOutcome::from_event(&e.event)),
    }
}

/// The `--waits` section, when the trace was recorded with it.
fn waits_of(
    trace: &Trace<'_>,
    names: &Names,
    threads: &ThreadNames,
    windows: &Windows,
    gcs: &[gc::Gc],
    filter: &Filter,
) -> Option<WaitsSection> {
    if !trace
        .events
        .iter()
        .any(|e| matches!(e.event, clrprof_format::Event::WaitConfig { .. }))
    {
        return None;
    }
    let mut samples = crate::samples::stack_samples(&trace.events);
    crate::samples::prepare(&mut samples, names, windows);
    let interval_ns = 1_000_000_000 / u64::from(trace.header.meta.settings.rate_hz.max(1));
    waits_section::section(
        &trace.events,
        &samples,
        gcs,
        names,
        threads,
        filter,
        interval_ns,
    )
}

/// What the collectors' tests share.
#[cfg(test)]
pub(crate) mod tests {
    use clrprof_format::Event;

    use crate::names::{FunctionName, Names};
    use crate::timeline::TimedEvent;

    pub fn at(ns: u64, os_tid: u64, event: Event<'static>) -> TimedEvent<'static> {
        TimedEvent { ns, os_tid, event }
    }

    /// Function names by id.
    pub fn names(functions: &[(u64, &str)]) -> Names {
        let mut n = Names::default();
        for (id, name) in functions {
            let name = FunctionName {
                name: name.to_string(),
                ..Default::default()
            };
            n.functions.insert(*id, name);
        }
        n
    }
}
