//! The `CLRPROF_*` variables: each setting's name, the rules of its value, and the two
//! directions, [`Settings::to_env`] and [`Settings::from_env`]. A value outside the rules
//! is refused with a message naming the variable, the value and what is accepted.

use std::fmt;
use std::path::PathBuf;

use crate::pattern::Patterns;
use crate::{ArgLimits, EventGroups, LogTarget, Mode, OnFull, SamplerKind, Settings, TraceProbe};

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

/// One `CLRPROF_*` variable: its name, the `clrprof record` option that sets it (if one
/// does), its default, its meaning, and the two directions between its text and the
/// [`Settings`].
pub struct Variable {
    pub name: &'static str,
    /// The `clrprof record` option that decides this variable: the CLI's arguments are
    /// made from it.
    pub flag: Option<Flag>,
    /// Puts the setting's default for a mode into settings ([`Settings::for_mode`]: the
    /// defaults are the table's).
    default: fn(&mut Settings, Mode),
    /// What it means, its accepted values and its default (for docs and errors; a test
    /// checks the default named is the one `default` gives).
    pub doc: &'static str,
    /// Reads a set (non-empty) value into settings that hold the mode's defaults and
    /// the mode already; `Err` says what is accepted.
    read: fn(&mut Settings, &str) -> Result<(), String>,
    /// The value that reads back to these settings; `None`: left unset.
    write: fn(&Settings) -> Option<String>,
}

/// The `clrprof record` option of a variable: how it is spelled, shown and given. Its
/// value is read by the variable's own reader ([`Variable::read`]), so the option refuses
/// exactly what the agent refuses, with the same words; `clrprof` makes a `clap` argument
/// of each.
#[derive(Clone, Copy)]
pub struct Flag {
    /// The long form, without `--`.
    pub long: &'static str,
    pub short: Option<char>,
    /// The value's name in the help (none for a switch).
    pub value_name: &'static str,
    /// The option's help: its own words, not the variable's doc, since its syntax differs
    /// (a repeatable option, not a `;`-joined list; a switch, not `0 | 1`).
    pub help: &'static str,
    pub takes: Takes,
    /// Turns the option's text into the variable's (`64M` into bytes); `None`: the same.
    pub convert: Option<Convert>,
    /// The values an enumerated setting takes, with their help.
    pub values: Option<fn() -> Vec<clap::builder::PossibleValue>>,
    /// The help shows the value `clrprof record` gives the setting when the option is not
    /// given: the table's default for sample mode (`record`'s mode).
    pub shows_default: bool,
}

/// Turns an option's text into its variable's; `Err` says what is accepted.
pub type Convert = fn(&str) -> Result<String, String>;

/// What a `record` option takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Takes {
    /// Nothing: given, the variable is `1`.
    Switch,
    /// One value.
    One,
    /// One value each time it is given; the values are joined with this separator.
    Many(&'static str),
}

impl Flag {
    const fn new(long: &'static str, value_name: &'static str, help: &'static str) -> Flag {
        Flag {
            long,
            short: None,
            value_name,
            help,
            takes: Takes::One,
            convert: None,
            values: None,
            shows_default: false,
        }
    }
    /// A switch.
    const fn switch(long: &'static str, help: &'static str) -> Flag {
        Flag {
            takes: Takes::Switch,
            ..Flag::new(long, "", help)
        }
    }
    const fn short(self, c: char) -> Flag {
        Flag {
            short: Some(c),
            ..self
        }
    }
    const fn many(self, separator: &'static str) -> Flag {
        Flag {
            takes: Takes::Many(separator),
            ..self
        }
    }
    const fn convert(self, f: Convert) -> Flag {
        Flag {
            convert: Some(f),
            ..self
        }
    }
    const fn values(self, f: fn() -> Vec<clap::builder::PossibleValue>) -> Flag {
        Flag {
            values: Some(f),
            ..self
        }
    }
    const fn shows_default(self) -> Flag {
        Flag {
            shows_default: true,
            ..self
        }
    }
}

/// The values of a `clap::ValueEnum`, with their help (their doc comments).
fn variants<E: clap::ValueEnum>() -> Vec<clap::builder::PossibleValue> {
    E::value_variants()
        .iter()
        .filter_map(E::to_possible_value)
        .collect()
}

impl Variable {
    /// Reads `value` (the variable's text) into `s`, as [`Settings::from_env`] does (`s`
    /// holds its mode and the mode's defaults); `Err` says what is accepted.
    pub fn read(&self, s: &mut Settings, value: &str) -> Result<(), String> {
        (self.read)(s, value)
    }

    /// The text an option's value gives this variable, if the variable accepts it (read
    /// over any mode's defaults: only what `default` means in `--events` depends on it);
    /// `Err` says what is accepted, starting `expected`.
    pub fn option_value(&self, text: &str) -> Result<String, String> {
        let value = match self.flag.and_then(|f| f.convert) {
            Some(convert) => convert(text).map_err(|e| format!("expected {e}"))?,
            None => text.to_string(),
        };
        self.read(&mut Settings::for_mode(Mode::Trace), &value)
            .map_err(|e| format!("expected {e}"))?;
        Ok(value)
    }
}

/// `--max-size`: bytes, or a whole number with `K`, `M` or `G` (binary units), as bytes.
pub fn size_option(s: &str) -> Result<String, String> {
    let t = s.trim();
    let (num, scale) = match t.char_indices().last() {
        Some((i, 'K' | 'k')) => (&t[..i], 1u64 << 10),
        Some((i, 'M' | 'm')) => (&t[..i], 1 << 20),
        Some((i, 'G' | 'g')) => (&t[..i], 1 << 30),
        _ => (t, 1),
    };
    let (lo, hi) = limits::MAX_SIZE;
    match num
        .trim()
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
    {
        Some(b) if (lo..=hi).contains(&b) => Ok(b.to_string()),
        _ => Err(format!(
            "a size from 1M to {}G: bytes, or a whole number with K, M or G",
            hi >> 30
        )),
    }
}

/// `--heap`: one number of seconds, 0 or more (the variable takes a `,`-list).
fn seconds_option(s: &str) -> Result<String, String> {
    match s.trim().parse::<f64>() {
        Ok(t) if t.is_finite() && t >= 0.0 => Ok(s.trim().to_string()),
        _ => Err("a number of seconds, 0 or more".into()),
    }
}

/// The table of variables: each line declares one, and the `var` names, [`VARIABLES`],
/// the defaults ([`Settings::for_mode`]; some depend on the mode), [`Settings::from_env`],
/// [`Settings::to_env`] and the refusal messages all come from it.
macro_rules! variables {
    ($( $id:ident = $name:literal, flag $flag:expr, default $default:expr, $doc:expr,
        read $read:expr, write $write:expr; )*) => {
        /// The variable names.
        pub mod var {
            $( pub const $id: &str = $name; )*
        }

        /// Every variable the agent reads, in the order the table declares them.
        pub const TABLE: &[Variable] = &[
            $( Variable {
                name: $name,
                flag: $flag,
                default: $default,
                doc: $doc,
                read: $read,
                write: $write,
            }, )*
        ];

        /// The environment variables the agent reads, with their meaning (for docs and
        /// errors).
        pub const VARIABLES: &[(&str, &str)] = &[ $( ($name, $doc), )* ];
    };
}

variables! {
    OUTPUT = "CLRPROF_OUTPUT", flag Some(Flag::new("output", "OUTPUT", "Trace file to write; `{pid}` is replaced by the process id. Other .NET processes the command starts write `<name>.<pid>.<ext>` beside it [default: clrprof-{pid}.clrprof]").short('o')),
        default |s, _| s.output = PathBuf::from("clrprof-{pid}.clrprof"),
        "trace file path; `{pid}` is replaced by the process id (default clrprof-{pid}.clrprof)",
        read |s, v| {
            s.output = PathBuf::from(v);
            Ok(())
        },
        write |s| Some(s.output.to_string_lossy().into_owned());
    MODE = "CLRPROF_MODE", flag Some(Flag::new("mode", "MODE", "What to record").values(variants::<Mode>).shows_default()),
        default |s, m| s.mode = m,
        "events | sample | trace (default events)",
        read |s, v| {
            s.mode = match v {
                "events" => Mode::Events,
                "sample" => Mode::Sample,
                "trace" => Mode::Trace,
                _ => return Err("events, sample or trace".into()),
            };
            Ok(())
        },
        write |s| Some(s.mode.as_str().into());
    EVENTS = "CLRPROF_EVENTS", flag Some(Flag::new("events", "EVENTS", "Event groups, comma separated: default, all, none, appdomains, assemblies, modules, classes, jit, cache-searches, threads, exceptions, suspends, gc, alloc, transitions, waits; `-group` removes one (e.g. `default,alloc,-classes`)")),
        default |s, m| s.events = EventGroups::mode_default(m),
        "comma list of event groups; `default`, `all`, a group name, or `-group` to remove one",
        read |s, v| {
            s.events = EventGroups::parse(v, s.mode)?;
            Ok(())
        },
        write |s| Some(s.events.list());
    BUFFER_KB = "CLRPROF_BUFFER_KB", flag Some(Flag::new("buffer-kb", "BUFFER_KB", "Per-thread buffer size in KiB, 4..=65536 [default: 256, trace mode 4096]")),
        default |s, m| {
            // Trace mode: a traced thread can make ~80 M events/s (1.3 GB/s of units). A
            // ring well beyond the L2 lets the writer read lines the thread has already
            // moved past, instead of stealing the ones it is writing (measured in
            // docs/performance.md). Pages are only touched as a thread fills its ring.
            s.buffer_bytes = if m == Mode::Trace { 4096 } else { 256 } * 1024;
        },
        "per-thread buffer size in KiB, 4..=65536 (default 256; 4096 in trace mode)",
        read |s, v| {
            s.buffer_bytes = number(v, limits::BUFFER_KB)? as usize * 1024;
            Ok(())
        },
        write |s| Some((s.buffer_bytes / 1024).to_string());
    ON_FULL = "CLRPROF_ON_FULL", flag Some(Flag::new("on-full", "ON_FULL", "When a thread's buffer is full: wait for the writer (exact) or drop and count").values(variants::<OnFull>)),
        default |s, _| s.on_full = OnFull::Wait,
        "wait | drop: what a thread does when its buffer is full (default wait)",
        read |s, v| {
            s.on_full = match v {
                "wait" => OnFull::Wait,
                "drop" => OnFull::Drop,
                _ => return Err("wait or drop".into()),
            };
            Ok(())
        },
        write |s| Some(s.on_full.as_str().into());
    FLUSH_MS = "CLRPROF_FLUSH_MS", flag None,
        default |s, _| s.flush_ms = 20,
        "writer period in milliseconds, 1..=10000 (default 20)",
        read |s, v| {
            s.flush_ms = number(v, limits::FLUSH_MS)?;
            Ok(())
        },
        write |s| Some(s.flush_ms.to_string());
    COMPRESS = "CLRPROF_COMPRESS", flag None,
        default |s, _| s.compress = false,
        "0 | 1: lz4-compress blocks (default 0)",
        read |s, v| {
            s.compress = flag(v)?;
            Ok(())
        },
        write |s| Some(bit(s.compress));
    LOG = "CLRPROF_LOG", flag Some(Flag::new("agent-log", "AGENT_LOG", "Where the profiler inside the app writes its own log: stderr (the app's), off, or a file (appended). A session attached with --pid leaves its figures (sampler, stack copies, names) off the app's stderr; a file gets them all [default: stderr]")),
        default |s, _| s.log = LogTarget::Stderr,
        "stderr | off | a file path for the agent's own log (default stderr)",
        read |s, v| {
            s.log = match v {
                "stderr" => LogTarget::Stderr,
                "off" => LogTarget::Off,
                path => LogTarget::File(PathBuf::from(path)),
            };
            Ok(())
        },
        write |s| Some(match &s.log {
            LogTarget::Stderr => "stderr".into(),
            LogTarget::Off => "off".into(),
            LogTarget::File(p) => p.to_string_lossy().into_owned(),
        });
    RATE_HZ = "CLRPROF_RATE_HZ", flag Some(Flag::new("rate", "RATE", "Samples per second (sample mode)").shows_default()),
        default |s, _| s.rate_hz = 99,
        "sample mode: samples per second, 1..=1000 (default 99)",
        read |s, v| {
            s.rate_hz = number(v, limits::RATE_HZ)? as u32;
            Ok(())
        },
        write |s| Some(s.rate_hz.to_string());
    SAMPLER = "CLRPROF_SAMPLER", flag Some(Flag::new("sampler", "SAMPLER", "How stacks are captured (sample mode) [default: signal on Linux x86_64]").values(variants::<SamplerKind>)),
        default |s, _| s.sampler = SamplerKind::DEFAULT,
        "sample mode: signal (SIGPROF + frame-pointer walk) | suspend (SuspendRuntime + DoStackSnapshot) (default signal on Linux x86_64, else suspend)",
        read |s, v| {
            s.sampler = match v {
                "suspend" => SamplerKind::Suspend,
                "signal" => SamplerKind::Signal,
                _ => return Err("signal or suspend".into()),
            };
            Ok(())
        },
        write |s| Some(s.sampler.as_str().into());
    DURATION_S = "CLRPROF_DURATION_S", flag Some(Flag::new("duration", "SECONDS", "Stop after this many seconds: sampling stops and the command goes on; an attached profiler detaches (it does so itself if clrprof is gone)")),
        default |s, _| s.duration_s = None,
        "stop after this many seconds, more than 0 and at most 31536000: sample mode stops sampling, an attached profiler detaches (default: until exit)",
        read |s, v| match v.trim().parse::<f64>() {
            Ok(d) if d > 0.0 && d <= MAX_DURATION_S => {
                s.duration_s = Some(d);
                Ok(())
            }
            _ => Err("a number of seconds, more than 0 and at most 31536000 (a year)".into()),
        },
        // f64's Display is the shortest text that parses back to the same number.
        write |s| s.duration_s.map(|d| d.to_string());
    MAX_DEPTH = "CLRPROF_MAX_DEPTH", flag Some(Flag::new("max-depth", "FRAMES", "Frames kept per sampled stack, 16..=16384; deeper stacks lose their root-most frames and end in a `[truncated: …]` frame, and the report counts them (sample mode)")),
        default |s, _| s.max_depth = 512,
        "sample mode: frames kept per stack, 16..=16384 (default 512); deeper stacks lose their root-most frames and end in a `[truncated: …]` frame",
        read |s, v| {
            s.max_depth = number(v, limits::MAX_DEPTH)? as usize;
            Ok(())
        },
        write |s| Some(s.max_depth.to_string());
    SIBLINGS = "CLRPROF_SIBLINGS", flag None,
        default |s, _| s.siblings = false,
        "0 | 1: when CLRPROF_OUTPUT exists, write <stem>.<pid>.<ext> beside it (set by `clrprof record` so each process of the launched tree writes its own trace; default 0)",
        read |s, v| {
            s.siblings = flag(v)?;
            Ok(())
        },
        write |s| Some(bit(s.siblings));
    OWNER_PID = "CLRPROF_OWNER_PID", flag None,
        default |s, _| s.owner_pid = None,
        "attach: pid of the clrprof that attached; the profiler detaches itself when that process is gone",
        read |s, v| {
            s.owner_pid = Some(number(v, (1, u64::from(u32::MAX)))? as u32);
            Ok(())
        },
        write |s| s.owner_pid.map(|p| p.to_string());
    OWNER_START = "CLRPROF_OWNER_START", flag None,
        default |s, _| s.owner_start = None,
        "attach: start time of CLRPROF_OWNER_PID (field 22 of its /proc/PID/stat), so a pid reused or seen from another pid namespace is not taken for it",
        read |s, v| {
            s.owner_start = Some(number(v, (0, u64::MAX))?);
            Ok(())
        },
        write |s| s.owner_start.map(|t| t.to_string());
    RUN = "CLRPROF_RUN", flag None,
        default |s, _| s.run = None,
        "set by `clrprof record`: its private run directory, where each process that records notes its trace's name and, at the end, what it lost and why",
        read |s, v| {
            s.run = Some(PathBuf::from(v));
            Ok(())
        },
        write |s| s.run.as_ref().map(|r| r.to_string_lossy().into_owned());
    PROFILE_SDK = "CLRPROF_PROFILE_SDK", flag None,
        default |s, _| s.profile_sdk = false,
        "0 | 1: also profile the .NET SDK's own processes (dotnet build/run, MSBuild, VBCSCompiler, csc); default 0: they decline",
        read |s, v| {
            s.profile_sdk = flag(v)?;
            Ok(())
        },
        write |s| Some(bit(s.profile_sdk));
    TRACE_PROBE = "CLRPROF_TRACE_PROBE", flag None,
        default |s, _| s.trace_probe = None,
        "trace mode, for benchmarks: noop | clock: hooks that only return, or only read the TSC; nothing is recorded",
        read |s, v| {
            s.trace_probe = Some(match v {
                "noop" => TraceProbe::Noop,
                "clock" => TraceProbe::Clock,
                _ => return Err("noop or clock".into()),
            });
            Ok(())
        },
        write |s| s.trace_probe.map(|p| p.as_str().to_string());
    INCLUDE = "CLRPROF_INCLUDE", flag Some(Flag::new("include", "INCLUDE", "Only trace functions matching these patterns, e.g. `MyApp.*` (trace mode; repeatable; required with --pid, where the methods it selects get IL probes through ReJIT)").many(";")),
        default |s, _| s.include = Patterns::default(),
        "trace mode: `;`-separated name patterns (`*`, `?`) of functions to hook (default all)",
        read |s, v| {
            s.include = Patterns::parse(v);
            Ok(())
        },
        write |s| s.include.joined();
    EXCLUDE = "CLRPROF_EXCLUDE", flag Some(Flag::new("exclude", "EXCLUDE", "Never trace functions matching these patterns (trace mode; repeatable)").many(";")),
        default |s, _| s.exclude = Patterns::default(),
        "trace mode: `;`-separated name patterns of functions never to hook",
        read |s, v| {
            s.exclude = Patterns::parse(v);
            Ok(())
        },
        write |s| s.exclude.joined();
    INLINING = "CLRPROF_INLINING", flag Some(Flag::switch("allow-inlining", "Let the JIT inline in trace mode (faster; inlined calls are not counted)")),
        default |s, _| s.allow_inlining = false,
        "trace mode: 1 lets the JIT inline (inlined calls are then not seen; default 0)",
        read |s, v| {
            s.allow_inlining = flag(v)?;
            Ok(())
        },
        write |s| Some(bit(s.allow_inlining));
    COUNTS = "CLRPROF_COUNTS", flag Some(Flag::switch("counts", "Exact call counts per caller→callee edge, without timestamps: per-thread tables in the target, written about every second and at the end, no record per call (with --mode trace, or beside --mode sample's samples; startup only)")),
        default |s, _| s.counts = false,
        "trace or sample mode: 1 counts calls per caller→callee edge in per-thread tables instead of recording each call (no timestamps; default 0)",
        read |s, v| {
            s.counts = flag(v)?;
            Ok(())
        },
        write |s| Some(bit(s.counts));
    PROBES = "CLRPROF_PROBES", flag Some(Flag::switch("probes", "With --mode trace at startup: IL probes (through ReJIT) on the methods --include selects instead of ELT hooks on every method (after attach trace mode always uses them; see docs/tracing.md)")),
        default |s, _| s.probes = false,
        "trace mode at startup: 1 puts IL probes (ReJIT) on the selected methods instead of ELT hooks on every method (default 0; after attach always probes)",
        read |s, v| {
            s.probes = flag(v)?;
            Ok(())
        },
        write |s| Some(bit(s.probes));
    HEAP = "CLRPROF_HEAP", flag None,
        default |s, _| s.heap = false,
        "0 | 1: allow heap snapshots on request (turns background GC off while loaded; default 0, 1 with CLRPROF_HEAP_AT)",
        read |s, v| {
            s.heap = flag(v)?;
            Ok(())
        },
        write |s| Some(bit(s.heap));
    HEAP_AT = "CLRPROF_HEAP_AT", flag Some(Flag::new("heap", "SECONDS", "Take a heap snapshot this many seconds after the start (repeatable; docs/heap.md)").many(",").convert(seconds_option)),
        default |s, _| s.heap_at = Vec::new(),
        "`,`-separated seconds after startup at which to take a heap snapshot (docs/heap.md)",
        read |s, v| {
            s.heap_at = heap_times(v)
                .ok_or("`,`-separated non-negative numbers of seconds, e.g. 2,5.5")?;
            Ok(())
        },
        write |s| (!s.heap_at.is_empty()).then(|| {
            let times: Vec<String> = s.heap_at.iter().map(f64::to_string).collect();
            times.join(",")
        });
    EXCEPTION_STACKS = "CLRPROF_EXCEPTION_STACKS", flag None,
        default |s, _| s.exception_stacks = true,
        "0 | 1: record each thrown exception's stack (default 1)",
        read |s, v| {
            s.exception_stacks = flag(v)?;
            Ok(())
        },
        write |s| Some(bit(s.exception_stacks));
    ARGS = "CLRPROF_ARGS", flag Some(Flag::new("args", "PATTERN", "Record arguments and return values of functions matching these patterns, e.g. `Shop.Cart.*` (trace mode, startup only; repeatable; see docs/tracing.md)").many(";")),
        default |s, _| s.args = Patterns::default(),
        "trace mode: `;`-separated name patterns of functions whose arguments and return values are recorded (ELT slow path)",
        read |s, v| {
            s.args = Patterns::parse(v);
            Ok(())
        },
        write |s| s.args.joined();
    ARG_MAX_LEN = "CLRPROF_ARG_MAX_LEN", flag Some(Flag::new("arg-max-len", "ARG_MAX_LEN", "--args: characters of a string kept (the full length is recorded too)").shows_default()),
        default |s, _| s.arg_limits.max_len = ArgLimits::DEFAULT.max_len,
        "--args: characters of a string kept, 0..=65536 (default 256)",
        read |s, v| {
            s.arg_limits.max_len = number(v, limits::ARG_MAX_LEN)? as u32;
            Ok(())
        },
        write |s| Some(s.arg_limits.max_len.to_string());
    ARG_DEPTH = "CLRPROF_ARG_DEPTH", flag Some(Flag::new("arg-depth", "ARG_DEPTH", "--args: levels of object fields read").shows_default()),
        default |s, _| s.arg_limits.depth = ArgLimits::DEFAULT.depth,
        "--args: levels of object fields read, 0..=4 (default 1)",
        read |s, v| {
            s.arg_limits.depth = number(v, limits::ARG_DEPTH)? as u32;
            Ok(())
        },
        write |s| Some(s.arg_limits.depth.to_string());
    ARG_ITEMS = "CLRPROF_ARG_ITEMS", flag Some(Flag::new("arg-items", "ARG_ITEMS", "--args: array elements read").shows_default()),
        default |s, _| s.arg_limits.items = ArgLimits::DEFAULT.items,
        "--args: array elements read, 0..=1024 (default 8)",
        read |s, v| {
            s.arg_limits.items = number(v, limits::ARG_ITEMS)? as u32;
            Ok(())
        },
        write |s| Some(s.arg_limits.items.to_string());
    ARG_BYTES = "CLRPROF_ARG_BYTES", flag None,
        default |s, _| s.arg_limits.bytes = ArgLimits::DEFAULT.bytes,
        "--args: bytes of values recorded per call, 64..=8192 (default 2048; the rest is cut and counted)",
        read |s, v| {
            s.arg_limits.bytes = number(v, limits::ARG_BYTES)? as u32;
            Ok(())
        },
        write |s| Some(s.arg_limits.bytes.to_string());
    ALLOC_INTERVAL = "CLRPROF_ALLOC_INTERVAL", flag Some(Flag::new("alloc-interval", "BYTES", "--alloc: about one sample per this many bytes allocated [default: 102400]; the runtime samples every 100 KiB on average, so smaller values act as 102400")),
        default |s, _| s.alloc_interval = None,
        "sample allocations with stacks, about one per this many bytes, 1024..=1073741824 (unset = off; the runtime samples at least every 100 KiB, docs/allocations.md)",
        read |s, v| {
            s.alloc_interval = Some(number(v, limits::ALLOC_INTERVAL)?);
            Ok(())
        },
        write |s| s.alloc_interval.map(|i| i.to_string());
    MAX_SIZE = "CLRPROF_MAX_SIZE", flag Some(Flag::new("max-size", "SIZE", "Stop recording once the trace holds this much (`500M`, `2G`, `65536K` or bytes; at least 1M): the app runs on, the trace ends with what was written, and the report says how much was not").convert(size_option)),
        default |s, _| s.max_size = None,
        "stop recording (the app runs on) once the trace holds this many bytes of blocks, 1048576..=1125899906842624 (unset = no bound)",
        read |s, v| {
            s.max_size = Some(number(v, limits::MAX_SIZE)?);
            Ok(())
        },
        write |s| s.max_size.map(|i| i.to_string());
}

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

fn number(value: &str, (lo, hi): (u64, u64)) -> Result<u64, String> {
    match value.trim().parse::<u64>() {
        Ok(n) if (lo..=hi).contains(&n) => Ok(n),
        _ => Err(format!("a whole number from {lo} to {hi}")),
    }
}

fn flag(value: &str) -> Result<bool, String> {
    match value {
        "0" => Ok(false),
        "1" => Ok(true),
        _ => Err("0 or 1".into()),
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

/// Puts every setting's default for `mode` into `s` (whatever it held before), from the
/// table: what [`Settings::for_mode`] is made of.
pub(crate) fn put_defaults(s: &mut Settings, mode: Mode) {
    for v in TABLE {
        (v.default)(s, mode);
    }
}

impl Settings {
    /// Reads settings through `lookup` (the environment at startup, the attach client
    /// data's variables on attach); an empty value counts as unset. `pid` fills `{pid}`
    /// in the output path. Settings that contradict each other are refused here, each
    /// message naming the variables.
    pub fn from_env(
        lookup: impl Fn(&str) -> Option<String>,
        pid: u32,
    ) -> Result<Settings, SettingsError> {
        let get = |k: &str| lookup(k).filter(|v| !v.is_empty());
        let read = |v: &Variable, s: &mut Settings| -> Result<(), SettingsError> {
            match get(v.name) {
                Some(value) => (v.read)(s, &value).map_err(|e| bad(v.name, &value, &e)),
                None => Ok(()),
            }
        };
        // The mode first: the other defaults, and how the event list reads, depend on it.
        let mut s = Settings::default();
        let mode_var = TABLE.iter().find(|v| v.name == var::MODE);
        if let Some(v) = mode_var {
            read(v, &mut s)?;
        }
        let mut s = Settings::for_mode(s.mode);
        for v in TABLE {
            read(v, &mut s)?;
        }
        s.output = PathBuf::from(
            s.output
                .to_string_lossy()
                .replace("{pid}", &pid.to_string()),
        );
        // Timed snapshots imply snapshots.
        s.heap |= !s.heap_at.is_empty();
        s.refuse_conflicts()?;
        Ok(s)
    }

    /// Settings that cannot be honoured together, refused before anything starts.
    fn refuse_conflicts(&self) -> Result<(), SettingsError> {
        let refuse = |m: &str| Err(SettingsError(m.into()));
        if !self.args.is_empty() && self.mode != Mode::Trace {
            return refuse(
                "CLRPROF_ARGS needs CLRPROF_MODE=trace (arguments are read by the ELT hooks)",
            );
        }
        if self.counts && !self.args.is_empty() {
            return refuse(
                "CLRPROF_COUNTS and CLRPROF_ARGS cannot be combined: counting records no values",
            );
        }
        if self.counts && self.mode == Mode::Events {
            return refuse(
                "CLRPROF_COUNTS needs CLRPROF_MODE=trace or sample (calls are counted by the ELT hooks)",
            );
        }
        if self.probes && self.mode != Mode::Trace {
            return refuse("CLRPROF_PROBES needs CLRPROF_MODE=trace (the probes record calls)");
        }
        if self.probes && (self.counts || !self.args.is_empty()) {
            return refuse(
                "CLRPROF_PROBES cannot be combined with CLRPROF_COUNTS or CLRPROF_ARGS (they need \
                 the ELT hooks, which the probes replace)",
            );
        }
        Ok(())
    }

    /// The variables that make [`Settings::from_env`] read back these settings: every
    /// setting, with its value spelled out (an unset optional one is left out). Paths that
    /// are not UTF-8 cannot be passed (`CLRPROF_*` values must be UTF-8); callers refuse
    /// them first.
    pub fn to_env(&self) -> Vec<(&'static str, String)> {
        TABLE
            .iter()
            .filter_map(|v| (v.write)(self).map(|value| (v.name, value)))
            .collect()
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
    use crate::{ArgLimits, EventGroup};
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

    /// Every setting's default comes from the table: put over settings that differ in
    /// every field from `for_mode`'s starting values, the table's defaults give
    /// [`Settings::for_mode`].
    #[test]
    fn every_default_is_the_tables() {
        for mode in Mode::ALL {
            let mut s = Settings {
                mode: Mode::ALL.into_iter().find(|&m| m != mode).unwrap(),
                output: PathBuf::from("elsewhere"),
                events: EventGroups::of(&[EventGroup::Waits]),
                buffer_bytes: 1,
                on_full: OnFull::Drop,
                flush_ms: 1,
                compress: true,
                log: LogTarget::File(PathBuf::from("log")),
                rate_hz: 1,
                duration_s: Some(1.0),
                sampler: SamplerKind::Signal,
                include: Patterns::of(["A"]),
                exclude: Patterns::of(["B"]),
                allow_inlining: true,
                counts: true,
                probes: true,
                exception_stacks: true,
                trace_probe: Some(TraceProbe::Noop),
                siblings: true,
                owner_pid: Some(1),
                owner_start: Some(1),
                run: Some(PathBuf::from("run")),
                profile_sdk: true,
                max_depth: 1,
                args: Patterns::of(["C"]),
                arg_limits: ArgLimits {
                    max_len: 1,
                    depth: 2,
                    items: 3,
                    bytes: 4,
                },
                heap_at: vec![1.0],
                heap: true,
                alloc_interval: Some(1),
                max_size: Some(1),
            };
            put_defaults(&mut s, mode);
            assert_eq!(s, Settings::for_mode(mode), "{mode:?}");
        }
        // The defaults themselves.
        let s = Settings::for_mode(Mode::Events);
        assert_eq!(
            (s.buffer_bytes, s.flush_ms, s.rate_hz, s.max_depth),
            (256 * 1024, 20, 99, 512)
        );
        assert_eq!(Settings::for_mode(Mode::Trace).buffer_bytes, 4096 * 1024);
        assert!(s.exception_stacks && !s.compress && s.duration_s.is_none());
        assert_eq!(
            (s.on_full, s.log, s.sampler),
            (OnFull::Wait, LogTarget::Stderr, SamplerKind::DEFAULT)
        );
        assert_eq!(s.arg_limits, ArgLimits::DEFAULT);
    }

    /// Each variable's doc names the default the table gives it (the events mode's, and
    /// another mode's where it differs: `4096 in trace mode`).
    #[test]
    fn every_doc_names_its_default() {
        let events = Settings::for_mode(Mode::Events);
        for v in TABLE {
            if v.name == var::EVENTS {
                // The mode's groups, by the name `default`.
                assert!(v.doc.contains("`default`"), "{}", v.doc);
                continue;
            }
            let base = (v.write)(&events);
            if let Some(d) = &base {
                assert!(
                    v.doc.contains(&format!("default {d}")),
                    "{}: no `default {d}` in {:?}",
                    v.name,
                    v.doc
                );
            }
            for mode in [Mode::Sample, Mode::Trace] {
                let d = (v.write)(&Settings::for_mode(mode));
                if d != base && v.name != var::MODE {
                    let d = d.unwrap_or_default();
                    let m = mode.as_str();
                    assert!(
                        v.doc.contains(&format!("{d} in {m} mode")),
                        "{}: no `{d} in {m} mode` in {:?}",
                        v.name,
                        v.doc
                    );
                }
            }
        }
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
        assert_eq!(s.args, Patterns::of(["A.*", "B.*"]));
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
    fn sizes_take_binary_units_within_the_agents_range() {
        assert_eq!(size_option("8M").as_deref(), Ok("8388608"));
        assert_eq!(size_option("2g").as_deref(), Ok("2147483648"));
        assert_eq!(size_option("65536K").as_deref(), Ok("67108864"));
        assert_eq!(size_option("1048576").as_deref(), Ok("1048576"));
        for bad in ["", "M", "1.5G", "512K", "-1M", "99999999999G"] {
            assert!(size_option(bad).is_err(), "{bad}");
        }
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
            include: Patterns::of(["A.*", "A2.*"]),
            exclude: Patterns::of(["B.*"]),
            allow_inlining: true,
            counts: false,
            probes: false,
            exception_stacks: false,
            trace_probe: Some(TraceProbe::Clock),
            siblings: true,
            owner_pid: Some(7),
            owner_start: Some(123),
            run: Some("/tmp/clrprof-run-1".into()),
            profile_sdk: true,
            max_depth: 64,
            args: Patterns::of(["C.*"]),
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
                && e.counts == d.counts
                && e.probes == d.probes
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

    /// Each variable alone (over trace mode's defaults) reads back as it was written.
    #[test]
    fn every_variable_round_trips_alone() {
        let mut written = everything().to_env();
        // Those `everything` leaves at their default: each conflicts with its `--args`.
        written.push((var::COUNTS, "1".into()));
        written.push((var::PROBES, "1".into()));
        for (k, v) in written {
            let env = [(var::MODE, "trace".to_string()), (k, v.clone())];
            let s = Settings::from_env(
                |n| env.iter().find(|(e, _)| *e == n).map(|(_, v)| v.clone()),
                42,
            )
            .unwrap_or_else(|e| panic!("{k}={v}: {e}"));
            assert!(
                s.to_env().contains(&(k, v.clone())),
                "{k}={v} read back as {:?}",
                s.to_env().iter().find(|(n, _)| *n == k)
            );
        }
    }

    /// Every value refused, whichever variable and rule refuses it, names its variable;
    /// only the free-text variables accept anything.
    #[test]
    fn every_refusal_names_its_variable() {
        let candidates = ["bogus", "-1", "0", "2", "99999999999999999999999", "1e400"];
        let mut refusing = BTreeSet::new();
        for v in TABLE {
            for value in candidates {
                let env = [(var::MODE, "trace"), (v.name, value)];
                let lookup = |n: &str| {
                    // The variable under test wins over the mode when it is the mode.
                    env.iter()
                        .rev()
                        .find(|(e, _)| *e == n)
                        .map(|(_, v)| v.to_string())
                };
                if let Err(e) = Settings::from_env(lookup, 1) {
                    assert!(e.0.contains(v.name), "{}={value}: {e}", v.name);
                    refusing.insert(v.name);
                }
            }
        }
        let free: BTreeSet<&str> = TABLE
            .iter()
            .map(|v| v.name)
            .filter(|n| !refusing.contains(n))
            .collect();
        assert_eq!(
            free,
            BTreeSet::from([
                var::OUTPUT,
                var::LOG,
                var::RUN,
                var::INCLUDE,
                var::EXCLUDE,
                var::ARGS
            ])
        );
        // The conflicts name both variables.
        for (env, names) in [
            (vec![(var::ARGS, "A.*")], [var::ARGS, var::MODE]),
            (
                vec![(var::MODE, "trace"), (var::ARGS, "A.*"), (var::COUNTS, "1")],
                [var::COUNTS, var::ARGS],
            ),
            (vec![(var::COUNTS, "1")], [var::COUNTS, var::MODE]),
            (vec![(var::PROBES, "1")], [var::PROBES, var::MODE]),
            (
                vec![(var::MODE, "trace"), (var::PROBES, "1"), (var::COUNTS, "1")],
                [var::PROBES, var::COUNTS],
            ),
            (
                vec![(var::MODE, "trace"), (var::PROBES, "1"), (var::ARGS, "A.*")],
                [var::PROBES, var::ARGS],
            ),
        ] {
            let e = Settings::from_env(
                |n| {
                    env.iter()
                        .find(|(e, _)| *e == n)
                        .map(|(_, v)| v.to_string())
                },
                1,
            )
            .unwrap_err();
            assert!(names.iter().all(|n| e.0.contains(n)), "{env:?}: {e}");
        }
    }

    fn in_range((lo, hi): (u64, u64)) -> impl Strategy<Value = u64> {
        lo..=hi
    }

    fn patterns() -> impl Strategy<Value = Patterns> {
        proptest::collection::vec("[A-Za-z.*?]{1,8}", 0..3).prop_map(Patterns::of)
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
            // Calls are counted by the ELT hooks (trace or sample mode), with no values.
            let counts = flags[6] && mode != Mode::Events && (mode != Mode::Trace || args.is_empty());
            // Arguments are read in trace mode only.
            let args = if mode == Mode::Trace { args } else { Patterns::default() };
            // The probes replace the ELT hooks, in trace mode.
            let probes = flags[7] && mode == Mode::Trace && !counts && args.is_empty();
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
                counts,
                probes,
                exception_stacks: flags[2],
                trace_probe: probe,
                siblings: flags[3],
                owner_pid,
                owner_start,
                run: None,
                profile_sdk: flags[4],
                max_depth: max_depth as usize,
                args,
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
