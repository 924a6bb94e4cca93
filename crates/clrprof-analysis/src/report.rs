//! The report: everything `clrprof report` shows, as one serialisable value. The JSON
//! form is documented field by field in docs/report-json.md; keep the two in step.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use clrprof_format::{Event, ExceptionPhase};

use crate::calltree::{self, FunctionStats, ThreadTree, TraceStats, TreeNode};
use crate::gc::{self, Gc};
use crate::names::Names;
use crate::samples::{self, FunctionSamples, SampleTotals};
use crate::threads::{ThreadLifetimes, ThreadNames};
use crate::timeline::Trace;

/// What to put in the report.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Depth of the call trees in the report.
    pub depth: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options { depth: 64 }
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
    /// Sample totals (sample mode).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub samples: Option<SampleTotals>,
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
}

#[derive(Debug, Serialize)]
pub struct ExceptionStack {
    pub type_name: String,
    /// Exceptions thrown from this stack.
    pub count: u64,
    pub frames: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct WriteFailure {
    pub errno: u64,
    /// E.g. `ENOSPC (No space left on device)`.
    pub error: String,
    pub blocks: u64,
    pub events: u64,
}

#[derive(Debug, Default, Serialize)]
pub struct SamplerStats {
    pub ticks: u64,
    pub samples: u64,
    pub missed_ticks: u64,
    pub signal_timeouts: u64,
    /// Stacks deeper than `max_depth` (cut; their root-most frame is `[truncated: …]`).
    pub truncated_stacks: u64,
    pub max_depth: u64,
}

/// The name of a `Lost` reason code.
pub fn lost_reason(code: u8) -> &'static str {
    match code {
        clrprof_format::LOST_BUFFER_FULL => "buffer_full",
        clrprof_format::LOST_WRITE_FAILED => "write_failed",
        clrprof_format::LOST_STOPPING => "stopping",
        _ => "unknown",
    }
}

/// Names the errno of a failed trace write.
pub fn errno_text(errno: u64) -> String {
    match errno {
        28 => "ENOSPC (No space left on device)".into(),
        122 => "EDQUOT (Disk quota exceeded)".into(),
        5 => "EIO (Input/output error)".into(),
        27 => "EFBIG (File too large)".into(),
        30 => "EROFS (Read-only file system)".into(),
        n => format!("errno {n}"),
    }
}

#[derive(Debug, Serialize)]
pub struct TraceInfo {
    pub pid: u32,
    pub command_line: Vec<String>,
    pub mode: String,
    pub runtime_version: Option<String>,
    pub agent_version: String,
    pub format_version: String,
    pub attached: bool,
    pub duration_ns: u64,
    pub settings: clrprof_settings::Settings,
}

#[derive(Debug, Default, Serialize)]
pub struct EventCounts {
    pub runtime_shutdowns: u64,
    pub app_domains_created: u64,
    pub app_domains_shutdown: u64,
    pub assemblies_loaded: u64,
    pub assemblies_unloaded: u64,
    pub modules_loaded: u64,
    pub modules_unloaded: u64,
    pub classes_loaded: u64,
    pub classes_unloaded: u64,
    pub jit_compilations: u64,
    pub jit_cache_searches: u64,
    pub jit_cache_hits: u64,
    pub threads_created: u64,
    pub threads_destroyed: u64,
    pub thread_renames: u64,
    pub exceptions_thrown: u64,
    pub exception_catches: u64,
    pub exception_unwound_frames: u64,
    pub exception_finally_blocks: u64,
    pub exception_filters: u64,
    pub runtime_suspensions: u64,
    pub gcs: u64,
    pub allocation_reports: u64,
    pub transitions: u64,
}

#[derive(Debug, Serialize, PartialEq)]
pub struct ThreadInfo {
    /// The runtime's ThreadID (opaque, stable for the thread's life; the runtime reuses it
    /// for a later thread, which then gets its own entry).
    pub id: u64,
    pub os_tid: Option<u64>,
    pub name: Option<String>,
    pub created_ns: Option<u64>,
    pub destroyed_ns: Option<u64>,
}

#[derive(Debug, Default, Serialize)]
pub struct GcSummary {
    pub count: u64,
    pub induced: u64,
    pub by_generation: [u64; 3],
    pub total_pause_ns: u64,
    pub max_pause_ns: u64,
}

#[derive(Debug, Serialize)]
pub struct ModuleInfo {
    pub id: u64,
    pub path: String,
    pub assembly: u64,
    pub loaded_ns: u64,
}

#[derive(Debug, Default, Serialize)]
pub struct JitSummary {
    pub compilations: u64,
    /// Time spent between JITCompilationStarted and Finished, summed over functions.
    pub total_ns: u64,
    /// The functions that took longest to compile.
    pub slowest: Vec<JitEntry>,
}

#[derive(Debug, Serialize)]
pub struct JitEntry {
    pub name: String,
    pub ns: u64,
}

#[derive(Debug, Serialize)]
pub struct Allocation {
    pub class: String,
    pub count: u64,
}

/// Builds the report of a loaded trace.
pub fn build(trace: &Trace<'_>) -> Report {
    build_with(trace, Options::default())
}

/// Builds the report with explicit options.
pub fn build_with(trace: &Trace<'_>, opts: Options) -> Report {
    let names = Names::collect(&trace.events);
    let thread_names = ThreadNames::collect(&trace.events);
    // (type, frame ids) → count: a million throws from one place are one entry.
    let mut exception_stacks: HashMap<(String, Vec<u64>), u64> = HashMap::new();
    let mut lost_by_reason: BTreeMap<String, u64> = BTreeMap::new();
    let mut write_failures = Vec::new();
    let mut sampler: Option<SamplerStats> = None;
    let mut last_exception: HashMap<u64, String> = HashMap::new();
    let mut has_samples = false;
    let mut c = EventCounts::default();
    let mut exceptions: BTreeMap<String, u64> = BTreeMap::new();
    let mut messages: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    let mut threads = ThreadLifetimes::default();
    let mut modules = Vec::new();
    let mut assemblies = Vec::new();
    let mut classes = Vec::new();
    let mut jit_open: HashMap<(u64, u64), u64> = HashMap::new();
    let mut jit_times: HashMap<u64, u64> = HashMap::new();
    let mut allocs: HashMap<u64, u64> = HashMap::new();
    let mut lost = 0u64;
    for e in &trace.events {
        match &e.event {
            Event::Shutdown {} => c.runtime_shutdowns += 1,
            Event::AppDomainCreated { .. } => c.app_domains_created += 1,
            Event::AppDomainShutdown { .. } => c.app_domains_shutdown += 1,
            Event::AssemblyLoaded { name, .. } => {
                c.assemblies_loaded += 1;
                assemblies.push(name.to_string());
            }
            Event::AssemblyUnloaded { .. } => c.assemblies_unloaded += 1,
            Event::ModuleLoaded {
                id, assembly, path, ..
            } => {
                c.modules_loaded += 1;
                modules.push(ModuleInfo {
                    id: *id,
                    path: path.to_string(),
                    assembly: *assembly,
                    loaded_ns: e.ns,
                });
            }
            Event::ModuleUnloaded { .. } => c.modules_unloaded += 1,
            Event::ClassLoaded { name, .. } => {
                c.classes_loaded += 1;
                classes.push(name.to_string());
            }
            Event::ClassUnloaded { .. } => c.classes_unloaded += 1,
            Event::JitStarted { function, .. } => {
                c.jit_compilations += 1;
                jit_open.insert((e.os_tid, *function), e.ns);
            }
            Event::JitFinished { function, .. } => {
                if let Some(start) = jit_open.remove(&(e.os_tid, *function)) {
                    *jit_times.entry(*function).or_default() += e.ns.saturating_sub(start);
                }
            }
            Event::JitCacheSearch { found, .. } => {
                c.jit_cache_searches += 1;
                if *found {
                    c.jit_cache_hits += 1;
                }
            }
            Event::ThreadCreated { .. } => {
                c.threads_created += 1;
                threads.add(e.ns, &e.event);
            }
            Event::ThreadDestroyed { .. } => {
                c.threads_destroyed += 1;
                threads.add(e.ns, &e.event);
            }
            Event::ThreadAssigned { .. } => threads.add(e.ns, &e.event),
            Event::ThreadName { .. } => {
                c.thread_renames += 1;
                threads.add(e.ns, &e.event);
            }
            Event::Sample { .. } => has_samples = true,
            Event::ExceptionStack { frames } => {
                let ty = last_exception.get(&e.os_tid).cloned().unwrap_or_default();
                *exception_stacks.entry((ty, frames.to_vec())).or_default() += 1;
            }
            Event::ExceptionThrown {
                type_name, message, ..
            } => {
                last_exception.insert(e.os_tid, type_name.to_string());
                c.exceptions_thrown += 1;
                let ty = if type_name.is_empty() {
                    "(unknown type)".to_string()
                } else {
                    type_name.to_string()
                };
                *exceptions.entry(ty.clone()).or_default() += 1;
                *messages
                    .entry(ty)
                    .or_default()
                    .entry(message.to_string())
                    .or_default() += 1;
            }
            Event::ExceptionPhase { phase, .. } => match phase {
                ExceptionPhase::CatcherEnter => c.exception_catches += 1,
                ExceptionPhase::UnwindFunctionEnter => c.exception_unwound_frames += 1,
                ExceptionPhase::UnwindFinallyEnter => c.exception_finally_blocks += 1,
                ExceptionPhase::SearchFilterEnter => c.exception_filters += 1,
                _ => {}
            },
            Event::RuntimeSuspend {
                phase: clrprof_format::SuspendPhase::SuspendStarted,
                ..
            } => c.runtime_suspensions += 1,
            Event::GcStarted { .. } => c.gcs += 1,
            Event::Allocations { class, count } => {
                c.allocation_reports += 1;
                *allocs.entry(*class).or_default() += count;
            }
            Event::Transition { .. } => c.transitions += 1,
            Event::Lost { count, reason } => {
                lost += count;
                *lost_by_reason
                    .entry(lost_reason(*reason).into())
                    .or_default() += count;
            }
            Event::WriteFailed {
                errno,
                blocks,
                events,
            } => write_failures.push(WriteFailure {
                errno: *errno,
                error: errno_text(*errno),
                blocks: *blocks,
                events: *events,
            }),
            Event::SamplerStats {
                ticks,
                samples,
                missed_ticks,
                signal_timeouts,
                truncated,
                max_depth,
            } => {
                // One per sampler run (an attach may start more than one): add them up.
                let s = sampler.get_or_insert_with(SamplerStats::default);
                s.ticks += ticks;
                s.samples += samples;
                s.missed_ticks += missed_ticks;
                s.signal_timeouts += signal_timeouts;
                s.truncated_stacks += truncated;
                s.max_depth = *max_depth;
            }
            _ => {}
        }
    }
    classes.sort();
    let gcs = gc::collect(&trace.events);
    let mut gc_summary = GcSummary {
        count: gcs.len() as u64,
        ..Default::default()
    };
    for g in &gcs {
        gc_summary.by_generation[g.generation.min(2) as usize] += 1;
        if g.reason == "induced" {
            gc_summary.induced += 1;
        }
        gc_summary.total_pause_ns += g.pause_ns;
        gc_summary.max_pause_ns = gc_summary.max_pause_ns.max(g.pause_ns);
    }
    let mut slowest: Vec<JitEntry> = jit_times
        .iter()
        .map(|(f, ns)| JitEntry {
            name: names.function(*f),
            ns: *ns,
        })
        .collect();
    slowest.sort_by(|a, b| b.ns.cmp(&a.ns).then_with(|| a.name.cmp(&b.name)));
    let jit_total = slowest.iter().map(|j| j.ns).sum();
    slowest.truncate(20);
    let mut allocations: Vec<Allocation> = allocs
        .into_iter()
        .map(|(class, count)| Allocation {
            class: names.class(class),
            count,
        })
        .collect();
    allocations.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.class.cmp(&b.class)));
    for m in messages.values_mut() {
        if m.len() > 10 {
            let mut v: Vec<(String, u64)> = std::mem::take(m).into_iter().collect();
            v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            v.truncate(10);
            *m = v.into_iter().collect();
        }
    }
    let meta = &trace.header.meta;
    let (samples_section, mut functions) = if has_samples {
        let stacks = samples::stack_samples(&trace.events);
        let rate = Some(f64::from(meta.settings.rate_hz));
        (
            Some(samples::totals(&stacks, &thread_names, rate)),
            Some(Functions::Sampled(samples::functions(&stacks, &names))),
        )
    } else {
        (None, None)
    };
    let (mut call_tree, mut thread_call_trees, mut trace_stats) = (None, None, None);
    if trace.call_records > 0 {
        let mut b = calltree::Builder::new(false);
        trace.for_each_call(|e| b.push(e));
        // The trees are built and dropped recursively: bound their depth.
        let trees = b.finish(
            &names,
            &thread_names,
            opts.depth.min(calltree::MAX_PATH_DEPTH),
        );
        functions = Some(Functions::Traced(trees.functions));
        call_tree = Some(trees.merged);
        thread_call_trees = Some(trees.threads);
        trace_stats = Some(trees.stats);
    }
    Report {
        samples: samples_section,
        functions,
        call_tree,
        thread_call_trees,
        trace_stats,
        exception_stacks: {
            let mut v: Vec<ExceptionStack> = exception_stacks
                .into_iter()
                .map(|((type_name, frames), count)| ExceptionStack {
                    type_name,
                    count,
                    frames: frames.iter().map(|f| names.frame_name(*f)).collect(),
                })
                .collect();
            v.sort_by(|a, b| {
                b.count
                    .cmp(&a.count)
                    .then_with(|| a.type_name.cmp(&b.type_name))
                    .then_with(|| a.frames.cmp(&b.frames))
            });
            v
        },
        lost_by_reason,
        write_failures,
        sampler,
        trace: TraceInfo {
            pid: meta.pid,
            command_line: meta.command_line.clone(),
            mode: meta.mode.clone(),
            runtime_version: meta.runtime_version.clone(),
            agent_version: meta.agent_version.clone(),
            format_version: format!("{}.{}", trace.header.major, trace.header.minor),
            attached: meta.attached,
            duration_ns: trace.duration_ns,
            settings: meta.settings.clone(),
        },
        warnings: trace.warnings.clone(),
        lost_events: lost,
        exceptions,
        exception_messages: messages,
        threads: threads.finish(),
        gcs,
        gc_summary,
        modules,
        assemblies,
        classes,
        jit: JitSummary {
            compilations: c.jit_compilations,
            total_ns: jit_total,
            slowest,
        },
        allocations,
        events: c,
    }
}
