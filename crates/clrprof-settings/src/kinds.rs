//! The enumerated settings and the `--args` limits.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// What the agent records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Runtime events: loads, JIT, threads, exceptions, GCs
    Events,
    /// Periodic stack samples
    Sample,
    /// Every call, via enter/leave hooks
    Trace,
}

impl Mode {
    pub const ALL: [Mode; 3] = [Mode::Events, Mode::Sample, Mode::Trace];

    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Events => "events",
            Mode::Sample => "sample",
            Mode::Trace => "trace",
        }
    }
}

/// Policy when a thread's buffer is full.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum OnFull {
    /// Wait for the writer to drain the buffer: nothing is lost, the thread stalls
    Wait,
    /// Drop the event and count it; the report states how many were lost
    Drop,
}

impl OnFull {
    pub fn as_str(self) -> &'static str {
        match self {
            OnFull::Wait => "wait",
            OnFull::Drop => "drop",
        }
    }
}

/// How sample mode captures stacks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum SamplerKind {
    /// SIGPROF to each managed thread and a frame-pointer walk of a copy of its stack:
    /// no thread waits for another (default on Linux x86_64)
    Signal,
    /// SuspendRuntime and an asynchronous DoStackSnapshot of every thread (the profiling
    /// API's own way; stops the whole runtime on every tick)
    Suspend,
}

impl SamplerKind {
    /// The signal sampler where it exists (Linux x86_64), else suspend.
    pub const DEFAULT: SamplerKind = if cfg!(all(target_os = "linux", target_arch = "x86_64")) {
        SamplerKind::Signal
    } else {
        SamplerKind::Suspend
    };

    pub fn as_str(self) -> &'static str {
        match self {
            SamplerKind::Signal => "signal",
            SamplerKind::Suspend => "suspend",
        }
    }
}

/// Hooks that record nothing, to measure the parts of trace mode's cost
/// (`clrprof-bench trace`): the JIT's hook calls alone, and with one clock read each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TraceProbe {
    Noop,
    Clock,
}

impl TraceProbe {
    pub fn as_str(self) -> &'static str {
        match self {
            TraceProbe::Noop => "noop",
            TraceProbe::Clock => "clock",
        }
    }
}

/// Where the agent's own log lines go.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum LogTarget {
    #[default]
    Stderr,
    File(PathBuf),
    Off,
}

/// How much of each argument `--args` reads. In the header its fields are `arg_max_len`,
/// `arg_depth`, `arg_items` and `arg_bytes`, beside the other settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ArgLimits {
    /// Characters of a string kept (the full length is recorded too).
    #[serde(rename = "arg_max_len")]
    pub max_len: u32,
    /// Levels of object fields read.
    #[serde(rename = "arg_depth")]
    pub depth: u32,
    /// Array elements read.
    #[serde(rename = "arg_items")]
    pub items: u32,
    /// Bytes of values per call; the rest is cut and counted.
    #[serde(rename = "arg_bytes")]
    pub bytes: u32,
}

impl ArgLimits {
    pub const DEFAULT: ArgLimits = ArgLimits {
        max_len: 256,
        depth: 1,
        items: 8,
        bytes: 2048,
    };
}

impl Default for ArgLimits {
    fn default() -> Self {
        ArgLimits::DEFAULT
    }
}
