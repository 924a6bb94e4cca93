//! Agent settings, read from `CLRPROF_*` environment variables (startup) or from the
//! attach client data. Parsing is pure (a lookup function in, `Settings` or a message
//! out) so every rule is unit-tested; a bad value declines the load with that message.

use std::fmt;
use std::path::PathBuf;

/// What the agent records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Runtime events (loads, JIT, threads, exceptions, GC, …).
    Events,
    /// Periodic stack samples (plus the events needed to name them).
    Sample,
    /// ELT enter/leave/tailcall tracing (startup only).
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

/// Policy when a thread's buffer is full.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnFull {
    /// Wait for the writer to drain the buffer: nothing is lost, the thread stalls.
    Wait,
    /// Drop the event and count it; the report states how many were lost.
    Drop,
}

/// Groups of runtime events; each maps to event-mask bits (see `session/mask.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EventGroup {
    AppDomains,
    Assemblies,
    Modules,
    Classes,
    Jit,
    CacheSearches,
    Threads,
    Exceptions,
    Suspends,
    Gc,
    Alloc,
    Transitions,
}

impl EventGroup {
    pub const ALL: [EventGroup; 12] = [
        EventGroup::AppDomains,
        EventGroup::Assemblies,
        EventGroup::Modules,
        EventGroup::Classes,
        EventGroup::Jit,
        EventGroup::CacheSearches,
        EventGroup::Threads,
        EventGroup::Exceptions,
        EventGroup::Suspends,
        EventGroup::Gc,
        EventGroup::Alloc,
        EventGroup::Transitions,
    ];

    /// On unless asked otherwise. `alloc` (forces non-concurrent GC) and
    /// `transitions` (a callback per P/Invoke) are opt-in because of their cost.
    pub const DEFAULT: [EventGroup; 10] = [
        EventGroup::AppDomains,
        EventGroup::Assemblies,
        EventGroup::Modules,
        EventGroup::Classes,
        EventGroup::Jit,
        EventGroup::CacheSearches,
        EventGroup::Threads,
        EventGroup::Exceptions,
        EventGroup::Suspends,
        EventGroup::Gc,
    ];

    pub fn name(self) -> &'static str {
        match self {
            EventGroup::AppDomains => "appdomains",
            EventGroup::Assemblies => "assemblies",
            EventGroup::Modules => "modules",
            EventGroup::Classes => "classes",
            EventGroup::Jit => "jit",
            EventGroup::CacheSearches => "cache-searches",
            EventGroup::Threads => "threads",
            EventGroup::Exceptions => "exceptions",
            EventGroup::Suspends => "suspends",
            EventGroup::Gc => "gc",
            EventGroup::Alloc => "alloc",
            EventGroup::Transitions => "transitions",
        }
    }

    fn parse(s: &str) -> Option<EventGroup> {
        EventGroup::ALL.into_iter().find(|g| g.name() == s)
    }
}

/// A set of [`EventGroup`]s as a bit set.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub struct EventGroups(u32);

impl EventGroups {
    pub fn of(groups: &[EventGroup]) -> Self {
        let mut set = EventGroups(0);
        for g in groups {
            set.insert(*g);
        }
        set
    }
    pub fn contains(self, g: EventGroup) -> bool {
        self.0 & (1 << g as u32) != 0
    }
    pub fn insert(&mut self, g: EventGroup) {
        self.0 |= 1 << g as u32;
    }
    pub fn remove(&mut self, g: EventGroup) {
        self.0 &= !(1 << g as u32);
    }
    pub fn iter(self) -> impl Iterator<Item = EventGroup> {
        EventGroup::ALL
            .into_iter()
            .filter(move |g| self.contains(*g))
    }
}

impl fmt::Debug for EventGroups {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set()
            .entries(self.iter().map(|g| g.name()))
            .finish()
    }
}

/// Everything the agent needs to know to run.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    pub mode: Mode,
    pub output: PathBuf,
    pub events: EventGroups,
    /// Per-thread buffer size in bytes.
    pub buffer_bytes: usize,
    pub on_full: OnFull,
    /// How often the writer drains the per-thread buffers.
    pub flush_ms: u64,
    pub compress: bool,
    /// Where the agent's own log lines go (`None`: nowhere).
    pub log: LogTarget,
    /// Sample mode: samples per second.
    pub rate_hz: u32,
    /// Sample mode: stop sampling after this many seconds (the app goes on).
    pub duration_s: Option<f64>,
    /// Sample mode: how stacks are captured.
    pub sampler: SamplerKind,
    /// Trace mode: only hook functions whose name matches one of these (`;`-separated).
    pub include: Option<String>,
    /// Trace mode: never hook functions whose name matches one of these.
    pub exclude: Option<String>,
    /// Trace mode: let the JIT inline (faster, but inlined calls are not counted).
    pub allow_inlining: bool,
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
    pub owner_start: Option<u64>,
    /// Also profile the .NET SDK's own processes (`dotnet run`/`build`, MSBuild, the
    /// compiler server), which are skipped by default.
    pub profile_sdk: bool,
    /// Sample mode: the deepest stack kept; deeper ones are cut and marked.
    pub max_depth: usize,
    /// Trace mode: record arguments and return values of the functions these
    /// `;`-separated patterns match (the ELT slow path; see docs/tracing.md).
    pub args: Option<String>,
    /// `--args`: what is read of each value.
    pub arg_limits: ArgLimits,
    /// Heap snapshots at these many seconds after startup, in order (docs/heap.md).
    pub heap_at: Vec<f64>,
    /// Heap snapshots may be taken (on request or at `heap_at`): the GC monitor must be
    /// requested at startup or attach, the only times the runtime allows it.
    pub heap: bool,
}

/// How much of each argument `--args` reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArgLimits {
    /// Characters of a string kept (the full length is recorded too).
    pub max_len: u32,
    /// Levels of object fields read.
    pub depth: u32,
    /// Array elements read.
    pub items: u32,
    /// Bytes of values per call; the rest is cut and counted.
    pub bytes: u32,
}

impl Default for ArgLimits {
    fn default() -> Self {
        ArgLimits {
            max_len: 256,
            depth: 1,
            items: 8,
            bytes: 2048,
        }
    }
}

/// Hooks that record nothing, to measure the parts of trace mode's cost
/// (`clrprof-bench trace`): the JIT's hook calls alone, and with one clock read each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceProbe {
    Noop,
    Clock,
}

#[derive(Clone, Debug, PartialEq)]
pub enum LogTarget {
    Stderr,
    File(PathBuf),
    Off,
}

/// The environment variables the agent reads, with their meaning (for docs and errors).
#[allow(dead_code)] // a reference list: no code of the agent reads it
pub const VARIABLES: &[(&str, &str)] = &[
    (
        "CLRPROF_OUTPUT",
        "trace file path; `{pid}` is replaced by the process id (default clrprof-{pid}.clrprof)",
    ),
    ("CLRPROF_MODE", "events | sample | trace (default events)"),
    (
        "CLRPROF_EVENTS",
        "comma list of event groups; `default`, `all`, a group name, or `-group` to remove one",
    ),
    (
        "CLRPROF_BUFFER_KB",
        "per-thread buffer size in KiB, 4..=65536 (default 256; 4096 in trace mode)",
    ),
    (
        "CLRPROF_ON_FULL",
        "wait | drop: what a thread does when its buffer is full (default wait)",
    ),
    (
        "CLRPROF_FLUSH_MS",
        "writer period in milliseconds, 1..=10000 (default 20)",
    ),
    ("CLRPROF_COMPRESS", "0 | 1: lz4-compress blocks (default 0)"),
    (
        "CLRPROF_LOG",
        "stderr | off | a file path for the agent's own log (default stderr)",
    ),
    (
        "CLRPROF_RATE_HZ",
        "sample mode: samples per second, 1..=1000 (default 99)",
    ),
    (
        "CLRPROF_SAMPLER",
        "sample mode: signal (SIGPROF + frame-pointer walk; default on Linux x86_64) | suspend (SuspendRuntime + DoStackSnapshot)",
    ),
    (
        "CLRPROF_DURATION_S",
        "stop after this many seconds, more than 0 and at most 31536000: sample mode stops sampling, an attached profiler detaches (default: until exit)",
    ),
    (
        "CLRPROF_MAX_DEPTH",
        "sample mode: frames kept per stack, 16..=16384 (default 512); deeper stacks lose their root-most frames and end in a `[truncated: …]` frame",
    ),
    (
        "CLRPROF_SIBLINGS",
        "0 | 1: when CLRPROF_OUTPUT exists, write <stem>.<pid>.<ext> beside it (set by `clrprof record` so each process of the launched tree writes its own trace)",
    ),
    (
        "CLRPROF_OWNER_PID",
        "attach: pid of the clrprof that attached; the profiler detaches itself when that process is gone",
    ),
    (
        "CLRPROF_OWNER_START",
        "attach: start time of CLRPROF_OWNER_PID (field 22 of its /proc/PID/stat), so a pid reused or seen from another pid namespace is not taken for it",
    ),
    (
        "CLRPROF_PROFILE_SDK",
        "0 | 1: also profile the .NET SDK's own processes (dotnet build/run, MSBuild, VBCSCompiler, csc); default 0: they decline",
    ),
    (
        "CLRPROF_TRACE_PROBE",
        "trace mode, for benchmarks: noop | clock: hooks that only return, or only read the TSC; nothing is recorded",
    ),
    (
        "CLRPROF_INCLUDE",
        "trace mode: `;`-separated name patterns (`*`, `?`) of functions to hook (default all)",
    ),
    (
        "CLRPROF_EXCLUDE",
        "trace mode: `;`-separated name patterns of functions never to hook",
    ),
    (
        "CLRPROF_INLINING",
        "trace mode: 1 lets the JIT inline (inlined calls are then not seen; default 0)",
    ),
    (
        "CLRPROF_HEAP",
        "0 | 1: allow heap snapshots on request (turns background GC off while loaded; default 0, 1 with CLRPROF_HEAP_AT)",
    ),
    (
        "CLRPROF_HEAP_AT",
        "`,`-separated seconds after startup at which to take a heap snapshot (docs/heap.md)",
    ),
    (
        "CLRPROF_EXCEPTION_STACKS",
        "0 | 1: record each thrown exception's stack (default 1)",
    ),
    (
        "CLRPROF_ARGS",
        "trace mode: `;`-separated name patterns of functions whose arguments and return values are recorded (ELT slow path)",
    ),
    (
        "CLRPROF_ARG_MAX_LEN",
        "--args: characters of a string kept, 0..=65536 (default 256)",
    ),
    (
        "CLRPROF_ARG_DEPTH",
        "--args: levels of object fields read, 0..=4 (default 1)",
    ),
    (
        "CLRPROF_ARG_ITEMS",
        "--args: array elements read, 0..=1024 (default 8)",
    ),
    (
        "CLRPROF_ARG_BYTES",
        "--args: bytes of values recorded per call, 64..=8192 (default 2048; the rest is cut and counted)",
    ),
];

/// A configuration error: names the variable, the bad value and what is accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError(pub String);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The longest `CLRPROF_DURATION_S` accepted: a year (`Duration::from_secs_f64` panics
/// on values past `u64::MAX` seconds, and no recording means to run longer).
pub const MAX_DURATION_S: f64 = 31_536_000.0;

/// Refuses a `CLRPROF_*` variable whose value is not UTF-8 (naming it) instead of
/// ignoring it: a setting that cannot be read must not silently fall back to its default.
pub fn check_utf8(
    vars: impl Iterator<Item = (std::ffi::OsString, std::ffi::OsString)>,
) -> Result<(), ConfigError> {
    for (k, v) in vars {
        let key = k.to_string_lossy();
        if key.starts_with("CLRPROF_") && v.to_str().is_none() {
            return Err(ConfigError(format!(
                "invalid {key}={:?}: the value is not valid UTF-8",
                v.to_string_lossy()
            )));
        }
    }
    Ok(())
}

fn bad(var: &str, value: &str, expected: &str) -> ConfigError {
    ConfigError(format!("invalid {var}={value:?}: expected {expected}"))
}

fn number(var: &str, value: &str, lo: u64, hi: u64) -> Result<u64, ConfigError> {
    match value.trim().parse::<u64>() {
        Ok(n) if (lo..=hi).contains(&n) => Ok(n),
        _ => Err(bad(
            var,
            value,
            &format!("a whole number from {lo} to {hi}"),
        )),
    }
}

fn parse_events(value: &str) -> Result<EventGroups, ConfigError> {
    let mut set = EventGroups::default();
    let mut any = false;
    for item in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        any = true;
        let (remove, name) = match item.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, item.strip_prefix('+').unwrap_or(item)),
        };
        let groups: Vec<EventGroup> = match name {
            "default" => EventGroup::DEFAULT.to_vec(),
            "all" => EventGroup::ALL.to_vec(),
            "none" => Vec::new(),
            other => match EventGroup::parse(other) {
                Some(g) => vec![g],
                None => {
                    let names: Vec<&str> = EventGroup::ALL.iter().map(|g| g.name()).collect();
                    return Err(bad(
                        "CLRPROF_EVENTS",
                        value,
                        &format!("default, all, none or groups among {}", names.join(", ")),
                    ));
                }
            },
        };
        for g in groups {
            if remove { set.remove(g) } else { set.insert(g) }
        }
    }
    if !any {
        return Err(bad("CLRPROF_EVENTS", value, "at least one group"));
    }
    Ok(set)
}

/// The groups on by default in each mode. Sampling and tracing keep what names threads
/// and functions and what their analyses need, and leave out the per-load noise.
fn mode_default_events(mode: Mode) -> EventGroups {
    match mode {
        Mode::Events => EventGroups::of(&EventGroup::DEFAULT),
        Mode::Sample | Mode::Trace => EventGroups::of(&[
            EventGroup::AppDomains,
            EventGroup::Assemblies,
            EventGroup::Modules,
            EventGroup::Threads,
            EventGroup::Exceptions,
            EventGroup::Gc,
        ]),
    }
}

fn default_list(mode: Mode) -> String {
    mode_default_events(mode)
        .iter()
        .map(|g| g.name())
        .collect::<Vec<_>>()
        .join(",")
}

impl Settings {
    /// Reads settings through `lookup` (the environment in production). `pid` fills `{pid}`.
    pub fn from_lookup(
        lookup: impl Fn(&str) -> Option<String>,
        pid: u32,
    ) -> Result<Settings, ConfigError> {
        let get = |k: &str| lookup(k).filter(|v| !v.is_empty());
        let mode = match get("CLRPROF_MODE").as_deref() {
            None | Some("events") => Mode::Events,
            Some("sample") => Mode::Sample,
            Some("trace") => Mode::Trace,
            Some(v) => return Err(bad("CLRPROF_MODE", v, "events, sample or trace")),
        };
        let output = get("CLRPROF_OUTPUT").unwrap_or_else(|| "clrprof-{pid}.clrprof".into());
        let output = PathBuf::from(output.replace("{pid}", &pid.to_string()));
        let events = match get("CLRPROF_EVENTS") {
            None => mode_default_events(mode),
            Some(v) => parse_events(&v.replace("default", &default_list(mode)))?,
        };
        let buffer_bytes = match get("CLRPROF_BUFFER_KB") {
            // Trace mode: a traced thread can make ~80 M events/s (1.3 GB/s of units). A
            // ring well beyond the L2 lets the writer read lines the thread has already
            // moved past, instead of stealing the ones it is writing (measured in
            // docs/performance.md). Pages are only touched as a thread fills its ring.
            None if mode == Mode::Trace => 4096 * 1024,
            None => 256 * 1024,
            Some(v) => number("CLRPROF_BUFFER_KB", &v, 4, 65536)? as usize * 1024,
        };
        let on_full = match get("CLRPROF_ON_FULL").as_deref() {
            None | Some("wait") => OnFull::Wait,
            Some("drop") => OnFull::Drop,
            Some(v) => return Err(bad("CLRPROF_ON_FULL", v, "wait or drop")),
        };
        let flush_ms = match get("CLRPROF_FLUSH_MS") {
            None => 20,
            Some(v) => number("CLRPROF_FLUSH_MS", &v, 1, 10_000)?,
        };
        let compress = match get("CLRPROF_COMPRESS").as_deref() {
            None | Some("0") => false,
            Some("1") => true,
            Some(v) => return Err(bad("CLRPROF_COMPRESS", v, "0 or 1")),
        };
        let log = match get("CLRPROF_LOG").as_deref() {
            None | Some("stderr") => LogTarget::Stderr,
            Some("off") => LogTarget::Off,
            Some(path) => LogTarget::File(PathBuf::from(path)),
        };
        let rate_hz = match get("CLRPROF_RATE_HZ") {
            None => 99,
            Some(v) => number("CLRPROF_RATE_HZ", &v, 1, 1000)? as u32,
        };
        let duration_s = match get("CLRPROF_DURATION_S") {
            None => None,
            Some(v) => match v.trim().parse::<f64>() {
                Ok(d) if d > 0.0 && d <= MAX_DURATION_S => Some(d),
                _ => {
                    return Err(bad(
                        "CLRPROF_DURATION_S",
                        &v,
                        "a number of seconds, more than 0 and at most 31536000 (a year)",
                    ));
                }
            },
        };
        let sampler = match get("CLRPROF_SAMPLER").as_deref() {
            None if cfg!(all(target_os = "linux", target_arch = "x86_64")) => SamplerKind::Signal,
            None | Some("suspend") => SamplerKind::Suspend,
            Some("signal") => SamplerKind::Signal,
            Some(v) => return Err(bad("CLRPROF_SAMPLER", v, "signal or suspend")),
        };
        let allow_inlining = match get("CLRPROF_INLINING").as_deref() {
            None | Some("0") => false,
            Some("1") => true,
            Some(v) => return Err(bad("CLRPROF_INLINING", v, "0 or 1")),
        };
        let exception_stacks = match get("CLRPROF_EXCEPTION_STACKS").as_deref() {
            None | Some("1") => true,
            Some("0") => false,
            Some(v) => return Err(bad("CLRPROF_EXCEPTION_STACKS", v, "0 or 1")),
        };
        let trace_probe = match get("CLRPROF_TRACE_PROBE").as_deref() {
            None => None,
            Some("noop") => Some(TraceProbe::Noop),
            Some("clock") => Some(TraceProbe::Clock),
            Some(v) => return Err(bad("CLRPROF_TRACE_PROBE", v, "noop or clock")),
        };
        let siblings = match get("CLRPROF_SIBLINGS").as_deref() {
            None | Some("0") => false,
            Some("1") => true,
            Some(v) => return Err(bad("CLRPROF_SIBLINGS", v, "0 or 1")),
        };
        let owner_pid = match get("CLRPROF_OWNER_PID") {
            None => None,
            Some(v) => Some(number("CLRPROF_OWNER_PID", &v, 1, u64::from(u32::MAX))? as u32),
        };
        let owner_start = match get("CLRPROF_OWNER_START") {
            None => None,
            Some(v) => Some(number("CLRPROF_OWNER_START", &v, 0, u64::MAX)?),
        };
        let profile_sdk = match get("CLRPROF_PROFILE_SDK").as_deref() {
            None | Some("0") => false,
            Some("1") => true,
            Some(v) => return Err(bad("CLRPROF_PROFILE_SDK", v, "0 or 1")),
        };
        let max_depth = match get("CLRPROF_MAX_DEPTH") {
            None => 512,
            Some(v) => number("CLRPROF_MAX_DEPTH", &v, 16, 16384)? as usize,
        };
        let d = ArgLimits::default();
        let limit = |name: &str, default: u32, lo: u64, hi: u64| -> Result<u32, ConfigError> {
            match get(name) {
                None => Ok(default),
                Some(v) => Ok(number(name, &v, lo, hi)? as u32),
            }
        };
        let arg_limits = ArgLimits {
            max_len: limit("CLRPROF_ARG_MAX_LEN", d.max_len, 0, 65536)?,
            depth: limit("CLRPROF_ARG_DEPTH", d.depth, 0, 4)?,
            items: limit("CLRPROF_ARG_ITEMS", d.items, 0, 1024)?,
            bytes: limit("CLRPROF_ARG_BYTES", d.bytes, 64, 8192)?,
        };
        let args = get("CLRPROF_ARGS").filter(|a| !a.trim().is_empty());
        if args.is_some() && mode != Mode::Trace {
            return Err(ConfigError(
                "CLRPROF_ARGS needs CLRPROF_MODE=trace (arguments are read by the ELT hooks)"
                    .into(),
            ));
        }
        let heap_at = match get("CLRPROF_HEAP_AT") {
            None => Vec::new(),
            Some(v) => heap_times(&v).ok_or_else(|| {
                bad(
                    "CLRPROF_HEAP_AT",
                    &v,
                    "`,`-separated non-negative numbers of seconds, e.g. 2,5.5",
                )
            })?,
        };
        let heap = match get("CLRPROF_HEAP").as_deref() {
            None | Some("0") => !heap_at.is_empty(),
            Some("1") => true,
            Some(v) => return Err(bad("CLRPROF_HEAP", v, "0 or 1")),
        };
        Ok(Settings {
            max_depth,
            siblings,
            owner_pid,
            owner_start,
            profile_sdk,
            args,
            arg_limits,
            heap,
            heap_at,
            trace_probe,
            rate_hz,
            duration_s,
            sampler,
            include: get("CLRPROF_INCLUDE"),
            exclude: get("CLRPROF_EXCLUDE"),
            allow_inlining,
            exception_stacks,
            mode,
            output,
            events,
            buffer_bytes,
            on_full,
            flush_ms,
            compress,
            log,
        })
    }

    /// Settings as JSON, stored in the trace header so a report shows how it was made.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "mode": self.mode.as_str(),
            "events": self.events.iter().map(|g| g.name()).collect::<Vec<_>>(),
            "buffer_bytes": self.buffer_bytes,
            "on_full": match self.on_full { OnFull::Wait => "wait", OnFull::Drop => "drop" },
            "flush_ms": self.flush_ms,
            "compress": self.compress,
            "rate_hz": self.rate_hz,
            "duration_s": self.duration_s,
            "sampler": self.sampler.as_str(),
            "include": self.include,
            "exclude": self.exclude,
            "allow_inlining": self.allow_inlining,
            "exception_stacks": self.exception_stacks,
            "max_depth": self.max_depth,
            "siblings": self.siblings,
            "owner_pid": self.owner_pid,
            "profile_sdk": self.profile_sdk,
            "args": self.args,
            "arg_max_len": self.arg_limits.max_len,
            "arg_depth": self.arg_limits.depth,
            "arg_items": self.arg_limits.items,
            "arg_bytes": self.arg_limits.bytes,
            "heap": self.heap,
            "heap_at": self.heap_at,
            "trace_probe": self.trace_probe.map(|p| match p {
                TraceProbe::Noop => "noop",
                TraceProbe::Clock => "clock",
            }),
        })
    }
}

/// Parses `2,5.5`: sorted seconds; `None` for anything else.
fn heap_times(v: &str) -> Option<Vec<f64>> {
    let mut times = Vec::new();
    for part in v.split(',') {
        let t: f64 = part.trim().parse().ok()?;
        if !(t.is_finite() && t >= 0.0) {
            return None;
        }
        times.push(t);
    }
    times.sort_by(f64::total_cmp);
    Some(times)
}

/// How stacks are captured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SamplerKind {
    /// SIGPROF to each managed thread, frame-pointer walk of a stack copy (Linux x86_64).
    Signal,
    /// SuspendRuntime + asynchronous DoStackSnapshot of every thread (the profiling API's
    /// own way).
    Suspend,
}

impl SamplerKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SamplerKind::Signal => "signal",
            SamplerKind::Suspend => "suspend",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn parse(vars: &[(&str, &str)]) -> Result<Settings, ConfigError> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Settings::from_lookup(|k| map.get(k).cloned(), 42)
    }

    #[test]
    fn defaults() {
        let s = parse(&[]).unwrap();
        assert_eq!(s.mode, Mode::Events);
        assert_eq!(s.output, PathBuf::from("clrprof-42.clrprof"));
        assert_eq!(s.events, EventGroups::of(&EventGroup::DEFAULT));
        assert!(!s.events.contains(EventGroup::Alloc));
        assert_eq!(s.on_full, OnFull::Wait);
    }

    #[test]
    fn heap_times_are_sorted_and_checked() {
        let s = parse(&[("CLRPROF_HEAP_AT", "5, 2.5,0")]).unwrap();
        assert_eq!(s.heap_at, vec![0.0, 2.5, 5.0]);
        assert!(s.heap, "timed snapshots imply heap snapshots");
        assert!(parse(&[]).unwrap().heap_at.is_empty());
        assert!(!parse(&[]).unwrap().heap);
        assert!(parse(&[("CLRPROF_HEAP", "1")]).unwrap().heap);
        assert!(parse(&[("CLRPROF_HEAP", "yes")]).is_err());
        let e = parse(&[("CLRPROF_HEAP_AT", "2,-1")]).unwrap_err();
        assert!(e.0.contains("CLRPROF_HEAP_AT"), "{e}");
        assert!(parse(&[("CLRPROF_HEAP_AT", "soon")]).is_err());
    }

    #[test]
    fn events_list_edits_default() {
        let s = parse(&[("CLRPROF_EVENTS", "default,alloc,-classes")]).unwrap();
        assert!(s.events.contains(EventGroup::Alloc));
        assert!(!s.events.contains(EventGroup::Classes));
        assert!(s.events.contains(EventGroup::Jit));
        let s = parse(&[("CLRPROF_EVENTS", "threads")]).unwrap();
        assert_eq!(s.events, EventGroups::of(&[EventGroup::Threads]));
    }

    #[test]
    fn bad_values_name_the_variable() {
        let e = parse(&[("CLRPROF_MODE", "fast")]).unwrap_err();
        assert_eq!(
            e.0,
            "invalid CLRPROF_MODE=\"fast\": expected events, sample or trace"
        );
        let e = parse(&[("CLRPROF_BUFFER_KB", "1")]).unwrap_err();
        assert!(
            e.0.contains("CLRPROF_BUFFER_KB") && e.0.contains("4 to 65536"),
            "{e}"
        );
        let e = parse(&[("CLRPROF_EVENTS", "threads,bogus")]).unwrap_err();
        assert!(e.0.contains("bogus") && e.0.contains("exceptions"), "{e}");
        assert!(parse(&[("CLRPROF_ON_FULL", "maybe")]).is_err());
        assert!(parse(&[("CLRPROF_FLUSH_MS", "0")]).is_err());
        assert!(parse(&[("CLRPROF_COMPRESS", "yes")]).is_err());
    }

    #[test]
    fn durations_that_cannot_be_honoured_are_refused() {
        for v in ["0", "-1", "nan", "inf", "1e20", "31536001", "soon"] {
            let e = parse(&[("CLRPROF_DURATION_S", v)]).unwrap_err();
            assert!(e.0.contains("CLRPROF_DURATION_S"), "{v}: {e}");
        }
        let s = parse(&[("CLRPROF_DURATION_S", "0.5")]).unwrap();
        assert_eq!(s.duration_s, Some(0.5));
    }

    #[test]
    fn non_utf8_values_name_the_variable() {
        use std::ffi::OsString;
        use std::os::unix::ffi::OsStringExt;
        let vars = vec![
            (OsString::from("PATH"), OsString::from_vec(vec![0xff])),
            (
                OsString::from("CLRPROF_MODE"),
                OsString::from_vec(vec![b's', 0xff]),
            ),
        ];
        let e = check_utf8(vars.into_iter()).unwrap_err();
        assert!(e.0.starts_with("invalid CLRPROF_MODE="), "{e}");
        assert!(e.0.contains("not valid UTF-8"), "{e}");
        assert!(check_utf8(std::iter::empty()).is_ok());
    }

    #[test]
    fn args_need_trace_mode_and_bounded_limits() {
        let e = parse(&[("CLRPROF_ARGS", "A.*")]).unwrap_err();
        assert!(e.0.contains("CLRPROF_MODE=trace"), "{e}");
        let s = parse(&[("CLRPROF_MODE", "trace"), ("CLRPROF_ARGS", "A.*;B.*")]).unwrap();
        assert_eq!(s.args.as_deref(), Some("A.*;B.*"));
        assert_eq!(s.arg_limits, ArgLimits::default());
        let s = parse(&[
            ("CLRPROF_MODE", "trace"),
            ("CLRPROF_ARGS", "A.*"),
            ("CLRPROF_ARG_MAX_LEN", "10"),
            ("CLRPROF_ARG_DEPTH", "2"),
        ])
        .unwrap();
        assert_eq!((s.arg_limits.max_len, s.arg_limits.depth), (10, 2));
        let e = parse(&[("CLRPROF_MODE", "trace"), ("CLRPROF_ARG_BYTES", "100000")]).unwrap_err();
        assert!(e.0.contains("CLRPROF_ARG_BYTES"), "{e}");
        let (low, _) = crate::session::mask::for_settings(
            &parse(&[("CLRPROF_MODE", "trace"), ("CLRPROF_ARGS", "A.*")]).unwrap(),
        );
        assert_ne!(low & corprof_sys::COR_PRF_ENABLE_FUNCTION_ARGS, 0);
        assert_ne!(low & corprof_sys::COR_PRF_ENABLE_FUNCTION_RETVAL, 0);
        assert_ne!(low & corprof_sys::COR_PRF_ENABLE_FRAME_INFO, 0);
    }

    #[test]
    fn output_pid_placeholder() {
        let s = parse(&[("CLRPROF_OUTPUT", "/tmp/x-{pid}.trace")]).unwrap();
        assert_eq!(s.output, PathBuf::from("/tmp/x-42.trace"));
    }
}
