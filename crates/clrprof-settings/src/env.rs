//! The `CLRPROF_*` variables: each setting's name, the rules of its value, and the two
//! directions, [`Settings::to_env`] and [`Settings::from_env`]. A value outside the rules
//! is refused with a message naming the variable, the value and what is accepted.

use std::fmt;
use std::path::PathBuf;

use crate::{ArgLimits, EventGroups, LogTarget, Mode, OnFull, SamplerKind, Settings, TraceProbe};

/// The variable names.
pub mod var {
    pub const OUTPUT: &str = "CLRPROF_OUTPUT";
    pub const MODE: &str = "CLRPROF_MODE";
    pub const EVENTS: &str = "CLRPROF_EVENTS";
    pub const BUFFER_KB: &str = "CLRPROF_BUFFER_KB";
    pub const ON_FULL: &str = "CLRPROF_ON_FULL";
    pub const FLUSH_MS: &str = "CLRPROF_FLUSH_MS";
    pub const COMPRESS: &str = "CLRPROF_COMPRESS";
    pub const LOG: &str = "CLRPROF_LOG";
    pub const RATE_HZ: &str = "CLRPROF_RATE_HZ";
    pub const SAMPLER: &str = "CLRPROF_SAMPLER";
    pub const DURATION_S: &str = "CLRPROF_DURATION_S";
    pub const MAX_DEPTH: &str = "CLRPROF_MAX_DEPTH";
    pub const SIBLINGS: &str = "CLRPROF_SIBLINGS";
    pub const OWNER_PID: &str = "CLRPROF_OWNER_PID";
    pub const OWNER_START: &str = "CLRPROF_OWNER_START";
    pub const RUN: &str = "CLRPROF_RUN";
    pub const PROFILE_SDK: &str = "CLRPROF_PROFILE_SDK";
    pub const TRACE_PROBE: &str = "CLRPROF_TRACE_PROBE";
    pub const INCLUDE: &str = "CLRPROF_INCLUDE";
    pub const EXCLUDE: &str = "CLRPROF_EXCLUDE";
    pub const INLINING: &str = "CLRPROF_INLINING";
    pub const COUNTS: &str = "CLRPROF_COUNTS";
    pub const PROBES: &str = "CLRPROF_PROBES";
    pub const HEAP: &str = "CLRPROF_HEAP";
    pub const HEAP_AT: &str = "CLRPROF_HEAP_AT";
    pub const EXCEPTION_STACKS: &str = "CLRPROF_EXCEPTION_STACKS";
    pub const ARGS: &str = "CLRPROF_ARGS";
    pub const ARG_MAX_LEN: &str = "CLRPROF_ARG_MAX_LEN";
    pub const ARG_DEPTH: &str = "CLRPROF_ARG_DEPTH";
    pub const ARG_ITEMS: &str = "CLRPROF_ARG_ITEMS";
    pub const ARG_BYTES: &str = "CLRPROF_ARG_BYTES";
    pub const ALLOC_INTERVAL: &str = "CLRPROF_ALLOC_INTERVAL";
    pub const MAX_SIZE: &str = "CLRPROF_MAX_SIZE";
}

/// The accepted ranges of the numeric settings, inclusive (the CLI checks its options
/// against the same).
pub mod limits {
    pub const BUFFER_KB: (u64, u64) = (4, 65536);
    pub const FLUSH_MS: (u64, u64) = (1, 10_000);
    pub const RATE_HZ: (u64, u64) = (1, 1000);
    pub const MAX_DEPTH: (u64, u64) = (16, 16384);
    pub const ARG_MAX_LEN: (u64, u64) = (0, 65536);
    pub const ARG_DEPTH: (u64, u64) = (0, 4);
    pub const ARG_ITEMS: (u64, u64) = (0, 1024);
    pub const ARG_BYTES: (u64, u64) = (64, 8192);
    pub const ALLOC_INTERVAL: (u64, u64) = (1024, 1 << 30);
    pub const MAX_SIZE: (u64, u64) = (1 << 20, 1 << 50);
}

/// The longest `CLRPROF_DURATION_S` accepted: a year (`Duration::from_secs_f64` panics
/// on values past `u64::MAX` seconds, and no recording means to run longer).
pub const MAX_DURATION_S: f64 = 31_536_000.0;

/// The environment variables the agent reads, with their meaning (for docs and errors).
pub const VARIABLES: &[(&str, &str)] = &[
    (
        var::OUTPUT,
        "trace file path; `{pid}` is replaced by the process id (default clrprof-{pid}.clrprof)",
    ),
    (var::MODE, "events | sample | trace (default events)"),
    (
        var::EVENTS,
        "comma list of event groups; `default`, `all`, a group name, or `-group` to remove one",
    ),
    (
        var::BUFFER_KB,
        "per-thread buffer size in KiB, 4..=65536 (default 256; 4096 in trace mode)",
    ),
    (
        var::ON_FULL,
        "wait | drop: what a thread does when its buffer is full (default wait)",
    ),
    (
        var::FLUSH_MS,
        "writer period in milliseconds, 1..=10000 (default 20)",
    ),
    (var::COMPRESS, "0 | 1: lz4-compress blocks (default 0)"),
    (
        var::LOG,
        "stderr | off | a file path for the agent's own log (default stderr)",
    ),
    (
        var::RATE_HZ,
        "sample mode: samples per second, 1..=1000 (default 99)",
    ),
    (
        var::SAMPLER,
        "sample mode: signal (SIGPROF + frame-pointer walk; default on Linux x86_64) | suspend (SuspendRuntime + DoStackSnapshot)",
    ),
    (
        var::DURATION_S,
        "stop after this many seconds, more than 0 and at most 31536000: sample mode stops sampling, an attached profiler detaches (default: until exit)",
    ),
    (
        var::MAX_DEPTH,
        "sample mode: frames kept per stack, 16..=16384 (default 512); deeper stacks lose their root-most frames and end in a `[truncated: …]` frame",
    ),
    (
        var::SIBLINGS,
        "0 | 1: when CLRPROF_OUTPUT exists, write <stem>.<pid>.<ext> beside it (set by `clrprof record` so each process of the launched tree writes its own trace)",
    ),
    (
        var::OWNER_PID,
        "attach: pid of the clrprof that attached; the profiler detaches itself when that process is gone",
    ),
    (
        var::OWNER_START,
        "attach: start time of CLRPROF_OWNER_PID (field 22 of its /proc/PID/stat), so a pid reused or seen from another pid namespace is not taken for it",
    ),
    (
        var::RUN,
        "set by `clrprof record`: its private run directory, where each process that records notes its trace's name and, at the end, what it lost and why",
    ),
    (
        var::PROFILE_SDK,
        "0 | 1: also profile the .NET SDK's own processes (dotnet build/run, MSBuild, VBCSCompiler, csc); default 0: they decline",
    ),
    (
        var::TRACE_PROBE,
        "trace mode, for benchmarks: noop | clock: hooks that only return, or only read the TSC; nothing is recorded",
    ),
    (
        var::INCLUDE,
        "trace mode: `;`-separated name patterns (`*`, `?`) of functions to hook (default all)",
    ),
    (
        var::EXCLUDE,
        "trace mode: `;`-separated name patterns of functions never to hook",
    ),
    (
        var::INLINING,
        "trace mode: 1 lets the JIT inline (inlined calls are then not seen; default 0)",
    ),
    (
        var::COUNTS,
        "trace mode: 1 counts calls per caller→callee edge in per-thread tables instead of recording each call (no timestamps; default 0)",
    ),
    (
        var::PROBES,
        "trace mode at startup: 1 puts IL probes (ReJIT) on the selected methods instead of ELT hooks on every method (default 0; after attach always probes)",
    ),
    (
        var::HEAP,
        "0 | 1: allow heap snapshots on request (turns background GC off while loaded; default 0, 1 with CLRPROF_HEAP_AT)",
    ),
    (
        var::HEAP_AT,
        "`,`-separated seconds after startup at which to take a heap snapshot (docs/heap.md)",
    ),
    (
        var::EXCEPTION_STACKS,
        "0 | 1: record each thrown exception's stack (default 1)",
    ),
    (
        var::ARGS,
        "trace mode: `;`-separated name patterns of functions whose arguments and return values are recorded (ELT slow path)",
    ),
    (
        var::ARG_MAX_LEN,
        "--args: characters of a string kept, 0..=65536 (default 256)",
    ),
    (
        var::ARG_DEPTH,
        "--args: levels of object fields read, 0..=4 (default 1)",
    ),
    (
        var::ARG_ITEMS,
        "--args: array elements read, 0..=1024 (default 8)",
    ),
    (
        var::ARG_BYTES,
        "--args: bytes of values recorded per call, 64..=8192 (default 2048; the rest is cut and counted)",
    ),
    (
        var::ALLOC_INTERVAL,
        "sample allocations with stacks, about one per this many bytes, 1024..=1073741824 (unset = off; the runtime samples at least every 100 KiB, docs/allocations.md)",
    ),
    (
        var::MAX_SIZE,
        "stop recording (the app runs on) once the trace holds this many bytes of blocks, 1048576..=1125899906842624 (unset = no bound)",
    ),
];

/// A configuration error: names the variable, the bad value and what is accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SettingsError(pub String);

impl fmt::Display for SettingsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SettingsError {}

/// Refuses a `CLRPROF_*` variable whose value is not UTF-8 (naming it) instead of
/// ignoring it: a setting that cannot be read must not silently fall back to its default.
pub fn check_utf8(
    vars: impl Iterator<Item = (std::ffi::OsString, std::ffi::OsString)>,
) -> Result<(), SettingsError> {
    for (k, v) in vars {
        let key = k.to_string_lossy();
        if key.starts_with("CLRPROF_") && v.to_str().is_none() {
            return Err(SettingsError(format!(
                "invalid {key}={:?}: the value is not valid UTF-8",
                v.to_string_lossy()
            )));
        }
    }
    Ok(())
}

fn bad(var: &str, value: &str, expected: &str) -> SettingsError {
    SettingsError(format!("invalid {var}={value:?}: expected {expected}"))
}

fn number(var: &str, value: &str, (lo, hi): (u64, u64)) -> Result<u64, SettingsError> {
    match value.trim().parse::<u64>() {
        Ok(n) if (lo..=hi).contains(&n) => Ok(n),
        _ => Err(bad(
            var,
            value,
            &format!("a whole number from {lo} to {hi}"),
        )),
    }
}

fn flag(var: &str, value: Option<&str>, default: bool) -> Result<bool, SettingsError> {
    match value {
        None => Ok(default),
        Some("0") => Ok(false),
        Some("1") => Ok(true),
        Some(v) => Err(bad(var, v, "0 or 1")),
    }
}

fn bit(b: bool) -> String {
    if b { "1" } else { "0" }.into()
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

impl Settings {
    /// Reads settings through `lookup` (the environment at startup, the attach client
    /// data's variables on attach); an empty value counts as unset. `pid` fills `{pid}`
    /// in the output path.
    pub fn from_env(
        lookup: impl Fn(&str) -> Option<String>,
        pid: u32,
    ) -> Result<Settings, SettingsError> {
        let get = |k: &str| lookup(k).filter(|v| !v.is_empty());
        let mode = match get(var::MODE).as_deref() {
            None | Some("events") => Mode::Events,
            Some("sample") => Mode::Sample,
            Some("trace") => Mode::Trace,
            Some(v) => return Err(bad(var::MODE, v, "events, sample or trace")),
        };
        let d = Settings::for_mode(mode);
        let output = get(var::OUTPUT).unwrap_or_else(|| d.output.to_string_lossy().into_owned());
        let output = PathBuf::from(output.replace("{pid}", &pid.to_string()));
        let events = match get(var::EVENTS) {
            None => d.events,
            Some(v) => EventGroups::parse(&v, mode).map_err(|e| bad(var::EVENTS, &v, &e))?,
        };
        let buffer_bytes = match get(var::BUFFER_KB) {
            None => d.buffer_bytes,
            Some(v) => number(var::BUFFER_KB, &v, limits::BUFFER_KB)? as usize * 1024,
        };
        let on_full = match get(var::ON_FULL).as_deref() {
            None | Some("wait") => OnFull::Wait,
            Some("drop") => OnFull::Drop,
            Some(v) => return Err(bad(var::ON_FULL, v, "wait or drop")),
        };
        let flush_ms = match get(var::FLUSH_MS) {
            None => d.flush_ms,
            Some(v) => number(var::FLUSH_MS, &v, limits::FLUSH_MS)?,
        };
        let compress = flag(var::COMPRESS, get(var::COMPRESS).as_deref(), d.compress)?;
        let log = match get(var::LOG).as_deref() {
            None | Some("stderr") => LogTarget::Stderr,
            Some("off") => LogTarget::Off,
            Some(path) => LogTarget::File(PathBuf::from(path)),
        };
        let rate_hz = match get(var::RATE_HZ) {
            None => d.rate_hz,
            Some(v) => number(var::RATE_HZ, &v, limits::RATE_HZ)? as u32,
        };
        let duration_s = match get(var::DURATION_S) {
            None => None,
            Some(v) => match v.trim().parse::<f64>() {
                Ok(s) if s > 0.0 && s <= MAX_DURATION_S => Some(s),
                _ => {
                    return Err(bad(
                        var::DURATION_S,
                        &v,
                        "a number of seconds, more than 0 and at most 31536000 (a year)",
                    ));
                }
            },
        };
        let sampler = match get(var::SAMPLER).as_deref() {
            None => d.sampler,
            Some("suspend") => SamplerKind::Suspend,
            Some("signal") => SamplerKind::Signal,
            Some(v) => return Err(bad(var::SAMPLER, v, "signal or suspend")),
        };
        let allow_inlining = flag(var::INLINING, get(var::INLINING).as_deref(), false)?;
        let counts = flag(var::COUNTS, get(var::COUNTS).as_deref(), false)?;
        let probes = flag(var::PROBES, get(var::PROBES).as_deref(), false)?;
        let exception_stacks = flag(
            var::EXCEPTION_STACKS,
            get(var::EXCEPTION_STACKS).as_deref(),
            true,
        )?;
        let trace_probe = match get(var::TRACE_PROBE).as_deref() {
            None => None,
            Some("noop") => Some(TraceProbe::Noop),
            Some("clock") => Some(TraceProbe::Clock),
            Some(v) => return Err(bad(var::TRACE_PROBE, v, "noop or clock")),
        };
        let siblings = flag(var::SIBLINGS, get(var::SIBLINGS).as_deref(), false)?;
        let owner_pid = match get(var::OWNER_PID) {
            None => None,
            Some(v) => Some(number(var::OWNER_PID, &v, (1, u64::from(u32::MAX)))? as u32),
        };
        let owner_start = match get(var::OWNER_START) {
            None => None,
            Some(v) => Some(number(var::OWNER_START, &v, (0, u64::MAX))?),
        };
        let run = get(var::RUN).filter(|v| !v.is_empty()).map(PathBuf::from);
        let profile_sdk = flag(var::PROFILE_SDK, get(var::PROFILE_SDK).as_deref(), false)?;
        let max_depth = match get(var::MAX_DEPTH) {
            None => d.max_depth,
            Some(v) => number(var::MAX_DEPTH, &v, limits::MAX_DEPTH)? as usize,
        };
        let limit = |name: &str, default: u32, range: (u64, u64)| -> Result<u32, SettingsError> {
            match get(name) {
                None => Ok(default),
                Some(v) => Ok(number(name, &v, range)? as u32),
            }
        };
        let a = ArgLimits::DEFAULT;
        let arg_limits = ArgLimits {
            max_len: limit(var::ARG_MAX_LEN, a.max_len, limits::ARG_MAX_LEN)?,
            depth: limit(var::ARG_DEPTH, a.depth, limits::ARG_DEPTH)?,
            items: limit(var::ARG_ITEMS, a.items, limits::ARG_ITEMS)?,
            bytes: limit(var::ARG_BYTES, a.bytes, limits::ARG_BYTES)?,
        };
        let args = get(var::ARGS).filter(|a| !a.trim().is_empty());
        if args.is_some() && mode != Mode::Trace {
            return Err(SettingsError(
                "CLRPROF_ARGS needs CLRPROF_MODE=trace (arguments are read by the ELT hooks)"
                    .into(),
            ));
        }
        let heap_at = match get(var::HEAP_AT) {
            None => Vec::new(),
            Some(v) => heap_times(&v).ok_or_else(|| {
                bad(
                    var::HEAP_AT,
                    &v,
                    "`,`-separated non-negative numbers of seconds, e.g. 2,5.5",
                )
            })?,
        };
        let heap = flag(var::HEAP, get(var::HEAP).as_deref(), false)? || !heap_at.is_empty();
        let alloc_interval = match get(var::ALLOC_INTERVAL) {
            None => None,
            Some(v) => Some(number(var::ALLOC_INTERVAL, &v, limits::ALLOC_INTERVAL)?),
        };
        let max_size = match get(var::MAX_SIZE) {
            None => None,
            Some(v) => Some(number(var::MAX_SIZE, &v, limits::MAX_SIZE)?),
        };
        Ok(Settings {
            mode,
            output,
            events,
            buffer_bytes,
            on_full,
            flush_ms,
            compress,
            log,
            rate_hz,
            duration_s,
            sampler,
            include: get(var::INCLUDE),
            exclude: get(var::EXCLUDE),
            allow_inlining,
            counts,
            probes,
            exception_stacks,
            trace_probe,
            siblings,
            owner_pid,
            owner_start,
            run,
            profile_sdk,
            max_depth,
            args,
            arg_limits,
            heap_at,
            heap,
            alloc_interval,
            max_size,
        })
    }

    /// The variables that make [`Settings::from_env`] read back these settings: every
    /// setting, with its value spelled out (an unset optional one is left out). Paths that
    /// are not UTF-8 cannot be passed (`CLRPROF_*` values must be UTF-8); callers refuse
    /// them first.
    pub fn to_env(&self) -> Vec<(&'static str, String)> {
        let mut env = vec![
            (var::OUTPUT, self.output.to_string_lossy().into_owned()),
            (var::MODE, self.mode.as_str().into()),
            (var::EVENTS, self.events.list()),
            (var::BUFFER_KB, (self.buffer_bytes / 1024).to_string()),
            (var::ON_FULL, self.on_full.as_str().into()),
            (var::FLUSH_MS, self.flush_ms.to_string()),
            (var::COMPRESS, bit(self.compress)),
            (
                var::LOG,
                match &self.log {
                    LogTarget::Stderr => "stderr".into(),
                    LogTarget::Off => "off".into(),
                    LogTarget::File(p) => p.to_string_lossy().into_owned(),
                },
            ),
            (var::RATE_HZ, self.rate_hz.to_string()),
            (var::SAMPLER, self.sampler.as_str().into()),
            (var::MAX_DEPTH, self.max_depth.to_string()),
            (var::SIBLINGS, bit(self.siblings)),
            (var::PROFILE_SDK, bit(self.profile_sdk)),
            (var::INLINING, bit(self.allow_inlining)),
            (var::COUNTS, bit(self.counts)),
            (var::PROBES, bit(self.probes)),
            (var::EXCEPTION_STACKS, bit(self.exception_stacks)),
            (var::HEAP, bit(self.heap)),
            (var::ARG_MAX_LEN, self.arg_limits.max_len.to_string()),
            (var::ARG_DEPTH, self.arg_limits.depth.to_string()),
            (var::ARG_ITEMS, self.arg_limits.items.to_string()),
            (var::ARG_BYTES, self.arg_limits.bytes.to_string()),
        ];
        // f64's Display is the shortest text that parses back to the same number.
        let optional = [
            (var::DURATION_S, self.duration_s.map(|d| d.to_string())),
            (var::OWNER_PID, self.owner_pid.map(|p| p.to_string())),
            (var::OWNER_START, self.owner_start.map(|s| s.to_string())),
            (
                var::RUN,
                self.run.as_ref().map(|r| r.to_string_lossy().into_owned()),
            ),
            (
                var::TRACE_PROBE,
                self.trace_probe.map(|p| p.as_str().to_string()),
            ),
            (var::INCLUDE, self.include.clone()),
            (var::EXCLUDE, self.exclude.clone()),
            (var::ARGS, self.args.clone()),
            (
                var::ALLOC_INTERVAL,
                self.alloc_interval.map(|i| i.to_string()),
            ),
            (var::MAX_SIZE, self.max_size.map(|i| i.to_string())),
            (
                var::HEAP_AT,
                (!self.heap_at.is_empty()).then(|| {
                    let times: Vec<String> = self.heap_at.iter().map(f64::to_string).collect();
                    times.join(",")
                }),
            ),
        ];
        env.extend(optional.into_iter().filter_map(|(k, v)| v.map(|v| (k, v))));
        env
    }

    /// Whether these settings are ones the agent accepts (their variables read back
    /// without error); the error is the one the agent would log.
    pub fn check(&self) -> Result<(), SettingsError> {
        let env = self.to_env();
        Settings::from_env(
            |k| env.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone()),
            0,
        )
        .map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::EventGroup;
    use proptest::prelude::*;
    use std::cell::RefCell;
    use std::collections::{BTreeSet, HashMap};

    fn parse(vars: &[(&str, &str)]) -> Result<Settings, SettingsError> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Settings::from_env(|k| map.get(k).cloned(), 42)
    }

    fn round_trip(s: &Settings) -> Result<Settings, SettingsError> {
        let env = s.to_env();
        let names: BTreeSet<&str> = env.iter().map(|(k, _)| *k).collect();
        assert_eq!(names.len(), env.len(), "a variable given twice: {env:?}");
        Settings::from_env(
            |k| env.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone()),
            42,
        )
    }

    #[test]
    fn defaults() {
        let s = parse(&[]).unwrap();
        assert_eq!(s.mode, Mode::Events);
        assert_eq!(s.output, PathBuf::from("clrprof-42.clrprof"));
        assert_eq!(s.events, EventGroups::of(&EventGroup::DEFAULT));
        assert!(!s.events.contains(EventGroup::Alloc));
        assert_eq!(s.on_full, OnFull::Wait);
        assert_eq!(s.sampler, SamplerKind::DEFAULT);
        for mode in Mode::ALL {
            let s = parse(&[("CLRPROF_MODE", mode.as_str())]).unwrap();
            assert_eq!(
                s,
                Settings {
                    output: PathBuf::from("clrprof-42.clrprof"),
                    ..Settings::for_mode(mode)
                }
            );
        }
        assert_eq!(
            parse(&[("CLRPROF_MODE", "trace")]).unwrap().buffer_bytes,
            4096 * 1024
        );
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
        let s = parse(&[
            ("CLRPROF_MODE", "sample"),
            ("CLRPROF_EVENTS", "default,jit"),
        ])
        .unwrap();
        assert!(s.events.contains(EventGroup::Jit) && !s.events.contains(EventGroup::Classes));
        assert!(
            parse(&[("CLRPROF_EVENTS", "none")])
                .unwrap()
                .events
                .is_empty()
        );
    }

    #[test]
    fn bad_values_name_the_variable() {
        let e = parse(&[("CLRPROF_MODE", "fast")]).unwrap_err();
        assert_eq!(
            e.0,
            "invalid CLRPROF_MODE=\"fast\": expected events, sample or trace"
        );
        let e = parse(&[("CLRPROF_BUFFER_KB", "1")]).unwrap_err();
        assert_eq!(
            e.0,
            "invalid CLRPROF_BUFFER_KB=\"1\": expected a whole number from 4 to 65536"
        );
        let e = parse(&[("CLRPROF_EVENTS", "threads,bogus")]).unwrap_err();
        assert_eq!(
            e.0,
            "invalid CLRPROF_EVENTS=\"threads,bogus\": expected default, all, none or groups among \
             appdomains, assemblies, modules, classes, jit, cache-searches, threads, exceptions, \
             suspends, gc, alloc, transitions, waits"
        );
        assert_eq!(
            parse(&[("CLRPROF_EVENTS", ",")]).unwrap_err().0,
            "invalid CLRPROF_EVENTS=\",\": expected at least one group"
        );
        assert_eq!(
            parse(&[("CLRPROF_ON_FULL", "maybe")]).unwrap_err().0,
            "invalid CLRPROF_ON_FULL=\"maybe\": expected wait or drop"
        );
        assert!(parse(&[("CLRPROF_FLUSH_MS", "0")]).is_err());
        assert_eq!(
            parse(&[("CLRPROF_COMPRESS", "yes")]).unwrap_err().0,
            "invalid CLRPROF_COMPRESS=\"yes\": expected 0 or 1"
        );
        assert_eq!(
            parse(&[("CLRPROF_SAMPLER", "perf")]).unwrap_err().0,
            "invalid CLRPROF_SAMPLER=\"perf\": expected signal or suspend"
        );
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
    }

    #[test]
    fn output_pid_placeholder() {
        let s = parse(&[("CLRPROF_OUTPUT", "/tmp/x-{pid}.trace")]).unwrap();
        assert_eq!(s.output, PathBuf::from("/tmp/x-42.trace"));
    }

    /// A setting with every optional field set, none at its default.
    fn everything() -> Settings {
        Settings {
            mode: Mode::Trace,
            output: PathBuf::from("/tmp/t.clrprof"),
            events: EventGroups::of(&[EventGroup::Alloc, EventGroup::Jit]),
            buffer_bytes: 8 * 1024,
            on_full: OnFull::Drop,
            flush_ms: 7,
            compress: true,
            log: LogTarget::File("/tmp/log".into()),
            rate_hz: 250,
            duration_s: Some(1.25),
            sampler: SamplerKind::Suspend,
            include: Some("A.*".into()),
            exclude: Some("B.*".into()),
            allow_inlining: true,
            counts: true,
            probes: true,
            exception_stacks: false,
            trace_probe: Some(TraceProbe::Clock),
            siblings: true,
            owner_pid: Some(7),
            owner_start: Some(123),
            run: Some("/tmp/clrprof-run-1".into()),
            profile_sdk: true,
            max_depth: 64,
            args: Some("C.*".into()),
            arg_limits: ArgLimits {
                max_len: 9,
                depth: 3,
                items: 5,
                bytes: 100,
            },
            heap_at: vec![0.5, 2.0],
            heap: true,
            alloc_interval: Some(65536),
            max_size: Some(64 << 20),
        }
    }

    /// Each variable is declared once, in `VARIABLES`; `to_env` of settings with every
    /// field set writes each of them, and `from_env` reads each of them.
    #[test]
    fn every_setting_has_one_variable() {
        let declared: BTreeSet<&str> = VARIABLES.iter().map(|(k, _)| *k).collect();
        assert_eq!(declared.len(), VARIABLES.len(), "a variable declared twice");
        let written: BTreeSet<&str> = everything().to_env().iter().map(|(k, _)| *k).collect();
        assert_eq!(written, declared);
        let asked = RefCell::new(BTreeSet::new());
        Settings::from_env(
            |k| {
                asked.borrow_mut().insert(k.to_string());
                None
            },
            1,
        )
        .unwrap();
        let asked: BTreeSet<String> = asked.into_inner();
        assert_eq!(
            asked.iter().map(String::as_str).collect::<BTreeSet<_>>(),
            declared
        );
        // No field is left at its default: each one travels through its variable.
        let e = everything();
        let d = Settings::default();
        assert!(
            e.mode != d.mode
                && e.output != d.output
                && e.events != d.events
                && e.buffer_bytes != d.buffer_bytes
                && e.on_full != d.on_full
                && e.flush_ms != d.flush_ms
                && e.compress != d.compress
                && e.log != d.log
                && e.rate_hz != d.rate_hz
                && e.duration_s != d.duration_s
                && e.include != d.include
                && e.exclude != d.exclude
                && e.allow_inlining != d.allow_inlining
                && e.counts != d.counts
                && e.probes != d.probes
                && e.exception_stacks != d.exception_stacks
                && e.trace_probe != d.trace_probe
                && e.siblings != d.siblings
                && e.owner_pid != d.owner_pid
                && e.owner_start != d.owner_start
                && e.run != d.run
                && e.profile_sdk != d.profile_sdk
                && e.max_depth != d.max_depth
                && e.args != d.args
                && e.arg_limits.max_len != d.arg_limits.max_len
                && e.arg_limits.depth != d.arg_limits.depth
                && e.arg_limits.items != d.arg_limits.items
                && e.arg_limits.bytes != d.arg_limits.bytes
                && e.heap_at != d.heap_at
                && e.heap != d.heap
                && e.alloc_interval != d.alloc_interval
                && e.max_size != d.max_size
        );
        assert_eq!(round_trip(&e).unwrap(), e);
        for s in [SamplerKind::Signal, SamplerKind::Suspend] {
            let x = Settings {
                sampler: s,
                ..e.clone()
            };
            assert_eq!(round_trip(&x).unwrap(), x);
        }
        assert!(e.check().is_ok());
        let wrong = Settings {
            buffer_bytes: 1024,
            ..e
        };
        assert!(wrong.check().unwrap_err().0.contains("CLRPROF_BUFFER_KB"));
    }

    fn in_range((lo, hi): (u64, u64)) -> impl Strategy<Value = u64> {
        lo..=hi
    }

    fn patterns() -> impl Strategy<Value = Option<String>> {
        proptest::option::of("[A-Za-z.*?;]{1,16}")
    }

    prop_compose! {
        fn any_settings()(
            mode in prop::sample::select(Mode::ALL.to_vec()),
            output in "/[a-z.-]{1,20}",
            events in 0u32..(1 << EventGroup::ALL.len()),
            kb in in_range(limits::BUFFER_KB),
            drop in any::<bool>(),
            flush_ms in in_range(limits::FLUSH_MS),
            flags in any::<[bool; 8]>(),
            log in prop::sample::select(vec![LogTarget::Stderr, LogTarget::Off, LogTarget::File("/tmp/l.log".into())]),
            rate in in_range(limits::RATE_HZ),
            duration_s in proptest::option::of(1e-6..=MAX_DURATION_S),
            signal in any::<bool>(),
            include in patterns(),
            exclude in patterns(),
            args in patterns(),
            probe in proptest::option::of(prop::sample::select(vec![TraceProbe::Noop, TraceProbe::Clock])),
            owner_pid in proptest::option::of(1u32..),
            owner_start in proptest::option::of(any::<u64>()),
            max_depth in in_range(limits::MAX_DEPTH),
            lim in (in_range(limits::ARG_MAX_LEN), in_range(limits::ARG_DEPTH), in_range(limits::ARG_ITEMS), in_range(limits::ARG_BYTES)),
            mut heap_at in proptest::collection::vec(0.0..1e6f64, 0..4),
            alloc_interval in proptest::option::of(in_range(limits::ALLOC_INTERVAL)),
            max_size in proptest::option::of(in_range(limits::MAX_SIZE)),
        ) -> Settings {
            heap_at.sort_by(f64::total_cmp);
            let mut groups = EventGroups::default();
            for (i, g) in EventGroup::ALL.into_iter().enumerate() {
                if events & (1 << i) != 0 {
                    groups.insert(g);
                }
            }
            Settings {
                mode,
                output: output.into(),
                events: groups,
                buffer_bytes: kb as usize * 1024,
                on_full: if drop { OnFull::Drop } else { OnFull::Wait },
                flush_ms,
                compress: flags[0],
                log,
                rate_hz: rate as u32,
                duration_s,
                sampler: if signal { SamplerKind::Signal } else { SamplerKind::Suspend },
                include,
                exclude,
                allow_inlining: flags[1],
                counts: flags[6],
                probes: flags[7],
                exception_stacks: flags[2],
                trace_probe: probe,
                siblings: flags[3],
                owner_pid,
                owner_start,
                run: None,
                profile_sdk: flags[4],
                max_depth: max_depth as usize,
                // Arguments are read in trace mode only.
                args: if mode == Mode::Trace { args } else { None },
                arg_limits: ArgLimits {
                    max_len: lim.0 as u32,
                    depth: lim.1 as u32,
                    items: lim.2 as u32,
                    bytes: lim.3 as u32,
                },
                // Timed snapshots imply snapshots.
                heap: flags[5] || !heap_at.is_empty(),
                heap_at,
                alloc_interval,
                max_size,
            }
        }
    }

    proptest! {
        #[test]
        fn from_env_reads_back_to_env(s in any_settings()) {
            prop_assert_eq!(round_trip(&s).unwrap(), s.clone());
            prop_assert!(s.check().is_ok());
        }

        #[test]
        fn the_header_form_reads_back(mut s in any_settings()) {
            // serde_json parses floats to within an ulp (without its float_roundtrip
            // feature): use ones it reads exactly.
            let exact = |t: f64| (t * 8.0).round() / 8.0;
            s.heap_at = s.heap_at.iter().map(|t| exact(*t)).collect();
            s.duration_s = s.duration_s.map(|d| exact(d).max(0.125));
            let back: Settings = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
            // The process-local fields stay out of the header.
            let expected = Settings {
                output: Settings::unrecorded().output,
                log: LogTarget::Stderr,
                owner_start: None,
                run: None,
                ..s
            };
            prop_assert_eq!(back, expected);
        }
    }
}
