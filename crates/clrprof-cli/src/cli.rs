//! Command-line syntax. Plain data: each subcommand turns these into its own settings.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

#[derive(Parser, Debug)]
#[command(name = "clrprof", version, about = "A profiler for .NET (CoreCLR) processes", long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run a command under the profiler and record a trace
    Record(RecordArgs),
    /// Summarise a recorded trace
    Report(ReportArgs),
    /// Convert a trace to a flamegraph or another profiler's format
    Convert(ConvertArgs),
    /// Take a heap snapshot of a running process and summarise it
    Heap(HeapArgs),
    /// Compare two heap snapshots: growth by type
    Diff(DiffArgs),
    /// Detach clrprof from a process it was attached to
    Detach(DetachArgs),
    /// List the .NET processes this user can profile
    Ps,
}

#[derive(clap::Args, Debug)]
pub struct DetachArgs {
    /// The process
    #[arg(long)]
    pub pid: u32,
    /// The profiler library [default: next to this executable]
    #[arg(long)]
    pub profiler: Option<PathBuf>,
}

/// What to show of a heap snapshot (`heap`, `report`).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct HeapView {
    /// Shortest paths from roots to objects of this type (`Ns.Type`, `Type`, `*` wildcards)
    #[arg(long, value_name = "PATTERN")]
    pub paths_to: Option<String>,
    /// List the static fields of classes matching this pattern, with their values
    #[arg(long, value_name = "PATTERN")]
    pub statics: Option<String>,
    /// Which heap snapshot of the trace (1, 2, …) [default: the last]
    #[arg(long, value_name = "N")]
    pub snapshot: Option<u64>,
}

#[derive(clap::Args, Debug)]
pub struct HeapArgs {
    /// The process
    #[arg(long)]
    pub pid: u32,
    /// Trace file to write [default: clrprof-<pid>-heap.clrprof]
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Print JSON (schema: docs/report-json.md)
    #[arg(long)]
    pub json: bool,
    /// Rows per list
    #[arg(long, default_value_t = 15)]
    pub top: usize,
    #[command(flatten)]
    pub view: HeapView,
    /// The profiler library [default: libclrprof_profiler.so next to this executable]
    #[arg(long)]
    pub profiler: Option<PathBuf>,
}

#[derive(clap::Args, Debug)]
pub struct DiffArgs {
    /// The trace holding the earlier snapshot (`FILE` or `FILE:N` for its Nth snapshot)
    pub before: String,
    /// The trace holding the later snapshot; with one file of several snapshots, omit it
    /// to compare the first with the last
    pub after: Option<String>,
    /// Print JSON (schema: docs/report-json.md)
    #[arg(long)]
    pub json: bool,
    /// Rows
    #[arg(long, default_value_t = 15)]
    pub top: usize,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum ConvertFormat {
    /// Interactive flamegraph (inferno)
    Svg,
    /// Collapsed stacks, one line per stack (inferno, flamegraph.pl)
    Folded,
    /// speedscope.app JSON
    Speedscope,
    /// Firefox Profiler (profiler.firefox.com)
    Firefox,
    /// Chrome trace event JSON (chrome://tracing, ui.perfetto.dev)
    Chrome,
    /// pprof protobuf (go tool pprof)
    Pprof,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum WeightArg {
    /// Count samples
    Samples,
    /// Wall time
    Wall,
    /// CPU time
    Cpu,
}

#[derive(clap::Args, Debug)]
pub struct ConvertArgs {
    /// The trace file
    pub file: PathBuf,
    /// Output format
    #[arg(short, long, value_enum, default_value_t = ConvertFormat::Svg)]
    pub format: ConvertFormat,
    /// Output file [default: the trace's name with the format's extension]
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// What a flamegraph counts
    #[arg(long, value_enum, default_value_t = WeightArg::Samples)]
    pub weight: WeightArg,
    /// One flamegraph for all threads instead of one tree per thread
    #[arg(long)]
    pub merge_threads: bool,
    /// Icicle graph (leaves at the top)
    #[arg(long)]
    pub reverse: bool,
    /// Timeline formats (speedscope, firefox, chrome) of a traced run: at most this many
    /// calls, those of the trace's first part, so that the viewer can open the file. The
    /// flamegraph formats always count every call.
    #[arg(long, default_value_t = 2_000_000, value_name = "N")]
    pub max_calls: usize,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    /// Runtime events: loads, JIT, threads, exceptions, GCs
    Events,
    /// Periodic stack samples
    Sample,
    /// Every call, via enter/leave hooks
    Trace,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Events => "events",
            Mode::Sample => "sample",
            Mode::Trace => "trace",
        }
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum OnFull {
    Wait,
    Drop,
}

/// How sample mode captures stacks.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum Sampler {
    /// SIGPROF to each managed thread and a frame-pointer walk of a copy of its stack:
    /// no thread waits for another (default on Linux x86_64)
    Signal,
    /// SuspendRuntime and an asynchronous DoStackSnapshot of every thread (the profiling
    /// API's own way; stops the whole runtime on every tick)
    Suspend,
}

impl Sampler {
    pub fn as_str(self) -> &'static str {
        match self {
            Sampler::Signal => "signal",
            Sampler::Suspend => "suspend",
        }
    }
}

#[derive(clap::Args, Debug)]
pub struct RecordArgs {
    /// Trace file to write [default: clrprof-<pid>.clrprof]
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// What to record
    #[arg(long, value_enum, default_value_t = Mode::Sample)]
    pub mode: Mode,
    /// Event groups, comma separated: default, all, none, appdomains, assemblies, modules,
    /// classes, jit, cache-searches, threads, exceptions, suspends, gc, alloc, transitions;
    /// `-group` removes one (e.g. `default,alloc,-classes`)
    #[arg(long)]
    pub events: Option<String>,
    /// Per-thread buffer size in KiB [default: 256, trace mode 4096]
    #[arg(long)]
    pub buffer_kb: Option<u32>,
    /// When a thread's buffer is full: wait for the writer (exact) or drop and count
    #[arg(long, value_enum)]
    pub on_full: Option<OnFull>,
    /// Samples per second (sample mode)
    #[arg(long, default_value_t = 99, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub rate: u32,
    /// How stacks are captured (sample mode) [default: signal on Linux x86_64]
    #[arg(long, value_enum)]
    pub sampler: Option<Sampler>,
    /// Stop sampling after this many seconds; the command goes on (sample mode)
    #[arg(long)]
    pub duration: Option<f64>,
    /// Only trace functions matching these patterns, e.g. `MyApp.*` (trace mode; repeatable)
    #[arg(long)]
    pub include: Vec<String>,
    /// Never trace functions matching these patterns (trace mode; repeatable)
    #[arg(long)]
    pub exclude: Vec<String>,
    /// Let the JIT inline in trace mode (faster; inlined calls are not counted)
    #[arg(long)]
    pub allow_inlining: bool,
    /// The profiler library [default: libclrprof_profiler.so next to this executable]
    #[arg(long)]
    pub profiler: Option<PathBuf>,
    /// Don't print the summary line after the command ends
    #[arg(short, long)]
    pub quiet: bool,
    /// Take a heap snapshot this many seconds after the start (repeatable; docs/heap.md)
    #[arg(long, value_name = "SECONDS")]
    pub heap: Vec<f64>,
    /// Attach to this running process instead of starting a command
    #[arg(long, conflicts_with = "command")]
    pub pid: Option<u32>,
    /// The command to run, e.g. `-- dotnet app.dll`
    #[arg(last = true, required_unless_present = "pid", num_args = 1..)]
    pub command: Vec<String>,
}

#[derive(clap::Args, Debug)]
pub struct ReportArgs {
    /// The trace file
    pub file: PathBuf,
    /// Print JSON (schema: docs/report-json.md)
    #[arg(long)]
    pub json: bool,
    /// Rows per list
    #[arg(long, default_value_t = 15)]
    pub top: usize,
    /// Depth of call trees (trace mode) [default: 12 in text, 40 in JSON]
    #[arg(long)]
    pub depth: Option<usize>,
    #[command(flatten)]
    pub heap: HeapView,
}
