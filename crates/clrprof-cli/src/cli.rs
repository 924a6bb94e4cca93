//! Command-line syntax. Plain data: each subcommand turns these into its own settings.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

#[derive(Parser, Debug)]
#[command(name = "clrprof", version = concat!(env!("CARGO_PKG_VERSION"), " (", env!("CLRPROF_COMMIT"), ")"), about = "A profiler for .NET (CoreCLR) processes", long_about = None)]
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
    /// Compare two heap snapshots (growth by type), or two traces' allocation samples
    /// (`record --alloc`: bytes by type and by the app's methods)
    Diff(DiffArgs),
    /// Detach clrprof from a process it was attached to
    Detach(DetachArgs),
    /// List the .NET processes this user can profile
    Ps,
    /// Live view of the hottest functions of a running process (or a command)
    Top(TopArgs),
    /// Print the current managed stack of every thread of a running process
    Dump(DumpArgs),
    /// Measure code coverage of a command (e.g. `dotnet test`) by in-memory IL rewriting
    Coverage(crate::coverage::CoverageArgs),
    /// Print a shell completion script: `clrprof completions bash > /etc/bash_completion.d/clrprof`
    Completions {
        /// The shell
        #[arg(value_enum)]
        shell: Shell,
    },
    /// Print the manual page (roff): `clrprof man > clrprof.1; man ./clrprof.1`
    Man,
}

/// Shells `completions` writes scripts for.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum TopSort {
    /// CPU time with the function on top of the stack
    #[value(name = "self")]
    Own,
    /// CPU time with the function anywhere on the stack
    Total,
    /// The function's name
    Name,
}

#[derive(clap::Args, Debug)]
pub struct TopArgs {
    /// Attach to this running process
    #[arg(long, conflicts_with = "command")]
    pub pid: Option<u32>,
    /// Print one plain snapshot after --interval seconds and detach (for scripts)
    #[arg(long)]
    pub once: bool,
    /// Seconds between refreshes (and what --once waits)
    #[arg(long, default_value_t = 1.0, value_parser = parse_duration, value_name = "SECONDS")]
    pub interval: f64,
    /// Seconds of samples the percentages cover
    #[arg(long, default_value_t = 5.0, value_parser = parse_duration, value_name = "SECONDS")]
    pub window: f64,
    /// Sort by (keys in the view: s, t, n)
    #[arg(long, value_enum, default_value_t = TopSort::Own)]
    pub sort: TopSort,
    /// Only the thread with this exact name or OS id (as `report --thread`)
    #[arg(long, value_name = "NAME|TID")]
    pub thread: Option<String>,
    /// Rows of --once (the view fills the terminal)
    #[arg(long, default_value_t = 20)]
    pub top: usize,
    /// Also sample allocations (as `record --alloc`): the view adds the allocation rate by
    /// type and by the app's own methods, and the sampled objects still alive
    #[arg(long)]
    pub alloc: bool,
    /// Also record where threads wait (as `record --waits`): the view adds the waits of
    /// the window by lock type, with the app method that waited most
    #[arg(long)]
    pub waits: bool,
    /// `--rate` and `--sampler`, from the settings table.
    #[command(flatten)]
    pub sampling: crate::setting_args::SettingArgs<crate::setting_args::Sampling>,
    /// Also keep the samples in this trace file (for `clrprof report`)
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// The profiler library [default: libclrprof_profiler.so next to this executable]
    #[arg(long)]
    pub profiler: Option<PathBuf>,
    /// The command to start under the profiler, e.g. `-- dotnet app.dll`; its output goes
    /// to clrprof-top-<clrprof's pid>.log in the current directory
    #[arg(last = true, required_unless_present = "pid", num_args = 1..)]
    pub command: Vec<String>,
}

#[derive(clap::Args, Debug)]
pub struct DumpArgs {
    /// The process
    #[arg(long)]
    pub pid: u32,
    /// Print JSON
    #[arg(long)]
    pub json: bool,
    /// `--sampler`, from the settings table.
    #[command(flatten)]
    pub sampling: crate::setting_args::SettingArgs<crate::setting_args::Stacks>,
    /// The profiler library [default: libclrprof_profiler.so next to this executable]
    #[arg(long)]
    pub profiler: Option<PathBuf>,
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
    /// The trace holding the earlier snapshot (`FILE` or `FILE:N` for its Nth snapshot),
    /// or the earlier trace recorded with `--alloc`
    pub before: String,
    /// The trace holding the later snapshot; with one file of several snapshots, omit it
    /// to compare the first with the last. Or the later trace recorded with `--alloc`
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

/// What a flamegraph (folded, SVG, speedscope) counts; pprof carries every sample type
/// and opens on this one.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum Weight {
    /// CPU time of the samples taken while their thread ran, waits left out
    Cpu,
    /// Wall time: every sample of every thread, waits included (self time of traced calls)
    Wall,
    /// Estimated bytes allocated (`record --alloc`)
    AllocBytes,
    /// Estimated objects allocated (`record --alloc`)
    AllocObjects,
    /// Estimated bytes of the sampled objects still alive at the end (`record --alloc`)
    LiveBytes,
    /// Time waited, by the waits the runtime reported: contended locks and wait handles
    /// (`record --waits`)
    Wait,
    /// Time waited for contended locks (`record --waits`)
    Lock,
}

#[derive(clap::Args, Debug)]
pub struct ConvertArgs {
    /// The trace file
    pub file: PathBuf,
    /// Sampled frames by source line: a method's frame on line 42 is `Method:42` (for
    /// svg and folded above all; lines from the trace or the modules' PDBs)
    #[arg(long)]
    pub lines: bool,
    /// With --lines: also look for the modules' portable PDBs in this folder (repeatable)
    #[arg(long = "pdb-dir", value_name = "DIR")]
    pub pdb_dirs: Vec<PathBuf>,
    /// Output format
    #[arg(short, long, value_enum, default_value_t = ConvertFormat::Svg)]
    pub format: ConvertFormat,
    /// Output file [default: the trace's name with the format's extension]
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// What a flamegraph counts [default: cpu; a trace-mode file, which has no CPU
    /// times, counts calls unless `wall` asks for their self time]
    #[arg(long, value_enum)]
    pub weight: Option<Weight>,
    /// One flamegraph for all threads instead of one tree per thread name
    #[arg(long, conflicts_with = "per_thread")]
    pub merge_threads: bool,
    /// Folded and SVG: one tree per thread (`name (tid)`); by default threads of one
    /// name (a thread pool's workers) share one tree
    #[arg(long)]
    pub per_thread: bool,
    /// Icicle graph (leaves at the top)
    #[arg(long)]
    pub reverse: bool,
    /// Timeline formats (speedscope, firefox, chrome) of a traced run: at most this many
    /// calls, those of the trace's first part, so that the viewer can open the file. The
    /// flamegraph formats always count every call.
    #[arg(long, default_value_t = 2_000_000, value_name = "N")]
    pub max_calls: usize,
}

#[derive(clap::Args, Debug)]
pub struct RecordArgs {
    /// The options that are agent settings, from the settings table (`--output`, `--mode`,
    /// `--events`, … `--max-size`).
    #[command(flatten)]
    pub settings: crate::setting_args::SettingArgs,
    /// Replace an existing trace file of yours (never a symbolic link or another user's file)
    #[arg(long)]
    pub force: bool,
    /// The profiler library [default: libclrprof_profiler.so next to this executable]
    #[arg(long)]
    pub profiler: Option<PathBuf>,
    /// Don't print the summary line after the command ends
    #[arg(short, long)]
    pub quiet: bool,
    /// Don't add the source lines of the sampled methods to the trace when it ends (by
    /// default they are read from the modules' PDBs then, so the trace shows its lines
    /// without them)
    #[arg(long)]
    pub no_lines: bool,
    /// Sample allocations with their managed stacks and follow the sampled objects for
    /// the live heap (docs/allocations.md); works with every mode
    #[arg(long)]
    pub alloc: bool,
    /// Where threads wait: lock contention with the waiting stack and the holder, the
    /// thread pool's starvation, wait handles (.NET 9+) and GC suspensions (the event
    /// groups `waits` and `suspends`; docs/waits.md); works with every mode
    #[arg(long)]
    pub waits: bool,
    /// Push a CPU profile (with --alloc a memory one, with --waits the lock and wait-handle
    /// waits) to this Grafana Pyroscope
    /// server every --push-every seconds,
    /// e.g. `http://localhost:4040` (docs/exports.md); `CLRPROF_PUSH_TOKEN` is sent as a
    /// bearer token, `user:password@` in the URL as basic authentication
    #[arg(long, value_name = "URL", value_parser = crate::push_args::parse_url_arg)]
    pub push: Option<Box<crate::push_args::Endpoint>>,
    /// --push: seconds each profile covers, whole and at least 1
    #[arg(long, value_name = "SECONDS", default_value_t = 15, value_parser = crate::push_args::parse_every, requires = "push")]
    pub push_every: u64,
    /// --push: the application's name in Pyroscope [default: the program's name]
    #[arg(long, value_name = "NAME", value_parser = crate::push_args::parse_app_name, requires = "push")]
    pub app_name: Option<String>,
    /// --push: labels added to every profile, e.g. `env=prod,region=eu` (besides host,
    /// pid and runtime_version)
    #[arg(long, value_name = "KEY=VALUE,...", value_parser = crate::push_args::parse_labels, requires = "push")]
    pub labels: Option<crate::push_args::Labels>,
    /// --push: push only, keep no trace file (it is unlinked as soon as it is open)
    #[arg(long, requires = "push", conflicts_with = "output")]
    pub no_trace: bool,
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
    /// Print the recorded invocations (`record --args`) of functions matching this
    /// pattern as a log, instead of the summary
    #[arg(long, value_name = "PATTERN")]
    pub calls: Option<String>,
    /// Invocations printed by --calls (and put in --json's `invocations`)
    #[arg(long, default_value_t = 1000)]
    pub limit: usize,
    /// Rank sampled functions by every sample of every thread (wall clock, waits
    /// included) instead of by CPU time
    #[arg(long)]
    pub wall: bool,
    /// Print the callers and callees of functions matching this pattern (`*` wildcards),
    /// instead of the summary (--json: the report's `butterfly`)
    #[arg(long, value_name = "PATTERN")]
    pub function: Option<String>,
    /// Only the samples and calls of this thread (its exact name or OS id)
    #[arg(long, value_name = "NAME|TID")]
    pub thread: Option<String>,
    /// Only the samples and calls from this time on (seconds since the trace's start,
    /// or `250ms`)
    #[arg(long, value_parser = parse_offset, value_name = "TIME")]
    pub from: Option<u64>,
    /// Only the samples and calls up to this time (seconds since the trace's start, or
    /// `250ms`)
    #[arg(long, value_parser = parse_offset, value_name = "TIME")]
    pub to: Option<u64>,
    /// Print the source of the sampled methods matching this pattern (`*` wildcards) with
    /// the self and total CPU and samples of each line beside it, instead of the summary
    /// (--json: the listings as an array)
    #[arg(long, value_name = "PATTERN")]
    pub source: Option<String>,
    /// Also look for the modules' portable PDBs in this folder (repeatable; after the
    /// embedded PDB and the one beside the module, before the path the compiler wrote)
    #[arg(long = "pdb-dir", value_name = "DIR")]
    pub pdb_dirs: Vec<PathBuf>,
    /// No source lines: frames are not mapped to lines (neither from the trace's line
    /// table nor from any PDB), as in traces recorded without positions
    #[arg(long, conflicts_with_all = ["source", "pdb_dirs"])]
    pub no_lines: bool,
    /// Every section in full: each GC even when its pause was not recorded, threads
    /// without a name or lifetime (the text report shortens them by default)
    #[arg(long)]
    pub all: bool,
    #[command(flatten)]
    pub heap: HeapView,
}

/// Longest `--duration`: a year (the agent refuses more).
pub use clrprof_settings::MAX_DURATION_S;

/// `--duration`: a number of seconds, more than 0 and at most a year (no NaN, no infinity).
pub fn parse_duration(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(d) if d > 0.0 && d <= MAX_DURATION_S => Ok(d),
        _ => Err(format!(
            "expected a number of seconds, more than 0 and at most {MAX_DURATION_S} (a year)"
        )),
    }
}

/// `--from`/`--to`: a time since the trace's start, `1.5` or `1.5s` or `250ms`, in ns.
pub fn parse_offset(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, scale) = if let Some(ms) = t.strip_suffix("ms") {
        (ms, 1e6)
    } else {
        (t.strip_suffix('s').unwrap_or(t), 1e9)
    };
    match num.trim().parse::<f64>() {
        Ok(v) if v >= 0.0 && v.is_finite() && v * scale < u64::MAX as f64 => {
            Ok((v * scale) as u64)
        }
        _ => Err("expected a time since the trace's start: seconds (`1.5`, `1.5s`) or milliseconds (`250ms`)".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets() {
        assert_eq!(parse_offset("1.5"), Ok(1_500_000_000));
        assert_eq!(parse_offset("2s"), Ok(2_000_000_000));
        assert_eq!(parse_offset("250ms"), Ok(250_000_000));
        for bad in ["-1", "x", "", "nan", "inf"] {
            assert!(parse_offset(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn durations() {
        for bad in ["0", "-1", "nan", "NaN", "inf", "1e20", "x", ""] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_duration("2.5"), Ok(2.5));
    }
}
