//! clrprof's settings contract, declared once for the CLI, the agent and analysis:
//!
//! - [`Settings`]: every setting with its type;
//! - the `CLRPROF_*` environment it travels in, declared once in a table ([`TABLE`]: each
//!   variable's name, `record` option, default, meaning, and how it reads and writes its
//!   setting), from which the defaults ([`Settings::for_mode`]), [`Settings::to_env`],
//!   [`Settings::from_env`], [`VARIABLES`], the messages a bad value or a conflict is
//!   refused with, and `clrprof record`'s options ([`Flag`]) come;
//! - the attach client data, which carries the same variables ([`attach`]);
//! - the trace header's `settings` object, which is `Settings` serialized (serde); a
//!   header that leaves a setting out is read as [`Settings::unrecorded`] has it;
//! - the agent's [`CLSID`] and the `CORECLR_*` variables that load it at startup.
//!
//! Pure: no I/O, no unsafe code.

#![forbid(unsafe_code)]

pub mod attach;
pub mod coverage;
mod env;
mod groups;
mod kinds;
pub mod pattern;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use env::{
    Flag, MAX_DURATION_S, SettingsError, TABLE, Takes, VARIABLES, Variable, check_utf8, limits,
    size_option, var,
};
pub use groups::{EventGroup, EventGroups};
pub use kinds::{ArgLimits, LogTarget, Mode, OnFull, SamplerKind, TraceProbe};
pub use pattern::Patterns;

/// The agent's COM class id, which the runtime is told to create (`CORECLR_PROFILER`, and
/// the CLSID of the diagnostics AttachProfiler command).
pub const CLSID: u128 = 0x27C113DB_28AB_4298_B83A_625E7E26E45D;

/// [`CLSID`] as `{XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX}`, the only form the runtime accepts
/// in `CORECLR_PROFILER` on Linux.
pub fn clsid_braced() -> String {
    let c = CLSID;
    format!(
        "{{{:08X}-{:04X}-{:04X}-{:04X}-{:012X}}}",
        c >> 96,
        (c >> 80) & 0xFFFF,
        (c >> 64) & 0xFFFF,
        (c >> 48) & 0xFFFF,
        c & 0xFFFF_FFFF_FFFF
    )
}

/// The variables that make the runtime load the agent at startup from `library`.
pub fn startup_env(library: &std::path::Path) -> [(&'static str, std::ffi::OsString); 3] {
    [
        ("CORECLR_ENABLE_PROFILING", "1".into()),
        ("CORECLR_PROFILER", clsid_braced().into()),
        ("CORECLR_PROFILER_PATH", library.as_os_str().to_owned()),
    ]
}

/// Everything the agent needs to know to run.
///
/// Serialized, it is the trace header's `settings` object: the process-local fields
/// (`output`, `log`, `owner_start`, `run`) are left out, and a key missing from an older header
/// reads as [`Settings::unrecorded`] has it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default = "Settings::unrecorded")]
pub struct Settings {
    pub mode: Mode,
    /// The trace file; `{pid}` in it is the process id (replaced by [`Settings::from_env`]).
    #[serde(skip)]
    pub output: PathBuf,
    pub events: EventGroups,
    /// Per-thread buffer size in bytes (a whole number of KiB: the variable is in KiB).
    pub buffer_bytes: usize,
    pub on_full: OnFull,
    /// How often the writer drains the per-thread buffers.
    pub flush_ms: u64,
    pub compress: bool,
    /// Where the agent's own log lines go.
    #[serde(skip)]
    pub log: LogTarget,
    /// Sample mode: samples per second.
    pub rate_hz: u32,
    /// Sample mode: stop sampling after this many seconds (the app goes on); attached:
    /// detach then.
    pub duration_s: Option<f64>,
    /// Sample mode: how stacks are captured.
    pub sampler: SamplerKind,
    /// Trace mode: only hook functions whose name matches one of these (none: all).
    pub include: Patterns,
    /// Trace mode: never hook functions whose name matches one of these.
    pub exclude: Patterns,
    /// Trace mode: let the JIT inline (faster, but inlined calls are not counted).
    pub allow_inlining: bool,
    /// Trace mode: exact call counts per caller→callee edge, kept in per-thread tables
    /// and written about every second and at the end, instead of a record per call.
    pub counts: bool,
    /// Trace mode at startup: IL probes (through ReJIT) on the selected methods instead of
    /// ELT hooks on every method; after attach trace mode always uses them.
    pub probes: bool,
    /// Record the stack of every thrown exception (synchronous DoStackSnapshot).
    pub exception_stacks: bool,
    /// Trace mode, benchmarking only: install hooks that record nothing.
    pub trace_probe: Option<TraceProbe>,
    /// Several processes of one `clrprof record` run may share `output`: when it exists,
    /// write `<stem>.<pid>.<ext>` beside it instead.
    pub siblings: bool,
    /// Attach: the pid of the `clrprof` that attached; when it is gone, detach.
    pub owner_pid: Option<u32>,
    /// Its start time (/proc/PID/stat field 22), to tell it from a reused pid.
    #[serde(skip)]
    pub owner_start: Option<u64>,
    /// `clrprof record`'s private run directory (0700, its own): each process that records
    /// leaves there the name of the trace it writes and, at the end, what it lost and why,
    /// so the CLI lists exactly the traces of its run and tells an incomplete one.
    #[serde(skip)]
    pub run: Option<PathBuf>,
    /// Also profile the .NET SDK's own processes (`dotnet run`/`build`, MSBuild, the
    /// compiler server), which are skipped by default.
    pub profile_sdk: bool,
    /// Sample mode: the deepest stack kept; deeper ones are cut and marked.
    pub max_depth: usize,
    /// Trace mode: record arguments and return values of the functions these patterns
    /// match (the ELT slow path; see docs/tracing.md).
    pub args: Patterns,
    /// `--args`: what is read of each value.
    #[serde(flatten)]
    pub arg_limits: ArgLimits,
    /// Heap snapshots at these many seconds after startup, in order (docs/heap.md).
    pub heap_at: Vec<f64>,
    /// Heap snapshots may be taken (on request or at `heap_at`): the GC monitor must be
    /// requested at startup or attach, the only times the runtime allows it.
    pub heap: bool,
    /// `--alloc`: sample allocations with their stacks, about one per this many bytes
    /// (docs/allocations.md); `None` = off.
    pub alloc_interval: Option<u64>,
    /// Stop recording once the trace file holds this many bytes of blocks (the app runs
    /// on; what is not written is counted, docs/tracing.md); `None` = no bound.
    pub max_size: Option<u64>,
}

impl Settings {
    /// The defaults of `mode`: what the agent runs with when only `CLRPROF_MODE` is set.
    /// Each is declared in the variables' table, beside its variable ([`TABLE`]).
    pub fn for_mode(mode: Mode) -> Settings {
        // Only a place to put the table's defaults in: each field is overwritten (a test
        // puts them over other values and finds the same settings).
        let mut s = Settings {
            mode,
            output: PathBuf::new(),
            events: EventGroups::default(),
            buffer_bytes: 0,
            on_full: OnFull::Wait,
            flush_ms: 0,
            compress: false,
            log: LogTarget::Off,
            rate_hz: 0,
            duration_s: None,
            sampler: SamplerKind::Suspend,
            include: Patterns::default(),
            exclude: Patterns::default(),
            allow_inlining: false,
            counts: false,
            probes: false,
            exception_stacks: false,
            trace_probe: None,
            siblings: false,
            owner_pid: None,
            owner_start: None,
            run: None,
            profile_sdk: false,
            max_depth: 0,
            args: Patterns::default(),
            arg_limits: ArgLimits::DEFAULT,
            heap_at: Vec::new(),
            heap: false,
            alloc_interval: None,
            max_size: None,
        };
        env::put_defaults(&mut s, mode);
        s
    }

    /// How a trace header that does not record a setting is read: the events-mode
    /// default, except the sampler, which headers record since there is a choice; before,
    /// every sample was taken by suspending the runtime. The same on every platform.
    pub fn unrecorded() -> Settings {
        Settings {
            sampler: SamplerKind::Suspend,
            ..Settings::for_mode(Mode::Events)
        }
    }
}

/// The agent's defaults with no variable set: events mode.
impl Default for Settings {
    fn default() -> Self {
        Settings::for_mode(Mode::Events)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clsid_in_braces() {
        assert_eq!(clsid_braced(), "{27C113DB-28AB-4298-B83A-625E7E26E45D}");
    }

    #[test]
    fn header_form_keeps_its_keys_and_reads_old_headers() {
        let s = Settings::for_mode(Mode::Sample);
        let v = serde_json::to_value(&s).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(|k| k.as_str()).collect();
        assert_eq!(
            keys,
            [
                "alloc_interval",
                "allow_inlining",
                "arg_bytes",
                "arg_depth",
                "arg_items",
                "arg_max_len",
                "args",
                "buffer_bytes",
                "compress",
                "counts",
                "duration_s",
                "events",
                "exception_stacks",
                "exclude",
                "flush_ms",
                "heap",
                "heap_at",
                "include",
                "max_depth",
                "max_size",
                "mode",
                "on_full",
                "owner_pid",
                "probes",
                "profile_sdk",
                "rate_hz",
                "sampler",
                "siblings",
                "trace_probe",
            ]
        );
        assert_eq!(v["mode"], "sample");
        assert_eq!(v["on_full"], "wait");
        assert_eq!(
            v["events"],
            serde_json::json!([
                "appdomains",
                "assemblies",
                "modules",
                "threads",
                "exceptions",
                "gc"
            ])
        );
        let mut back: Settings = serde_json::from_value(v).unwrap();
        back.output = s.output.clone();
        assert_eq!(back, s);

        // A 1.0 header: two keys, and one this version does not know.
        let old: Settings = serde_json::from_str(
            r#"{"buffer_bytes":65536,"flush_ms":100,"events":["gc","future-group"],"new":1}"#,
        )
        .unwrap();
        assert_eq!(
            old,
            Settings {
                buffer_bytes: 65536,
                flush_ms: 100,
                events: EventGroups::of(&[EventGroup::Gc]),
                ..Settings::unrecorded()
            }
        );
        assert_eq!(old.sampler, SamplerKind::Suspend);
    }
}
