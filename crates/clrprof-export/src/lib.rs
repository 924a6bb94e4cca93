//! clrprof's exporters: the neutral [`Profile`] model written as other tools' files.
//!
//! Analysis turns a recorded trace into a [`Profile`] (interned frames and a stack table
//! that samples refer to by handle; per thread, samples with wall and CPU weights, and
//! the exact calls of trace mode); each exporter is a pure function of it that writes to
//! any [`Write`]r. Nothing here reads the clock or the file system, so the same profile
//! always gives the same bytes.
//!
//! | format | module | what it carries |
//! |---|---|---|
//! | [`Format::Folded`] | [`folded`] | aggregated stacks counting one [`Weight`] |
//! | [`Format::Svg`] | [`svg`] | an inferno flamegraph of the folded stacks |
//! | [`Format::Speedscope`] | [`speedscope`] | samples with weights per thread; calls as evented profiles |
//! | [`Format::Firefox`] | [`firefox`] | timed samples with CPU deltas, categories; calls as markers |
//! | [`Format::Chrome`] | [`chrome`] | a timeline: calls exactly, samples merged into spans |
//! | [`Format::Pprof`] | [`pprof`] | aggregated stacks with sample count, wall and CPU time |
//!
//! `docs/exports.md` says how to open each one and what it drops.
//!
//! ```
//! use clrprof_export::*;
//!
//! let mut profile = Profile {
//!     name: "dotnet app.dll".into(),
//!     interval_ns: 1_000_000,
//!     modules: vec![Module { name: "app.dll".into(), path: Some("/srv/app/app.dll".into()) }],
//!     ..Default::default()
//! };
//! let app = Some(ModuleId(0));
//! let main = profile.intern_frame(Frame { name: "App.Program.Main".into(), module: app, kind: FrameKind::Managed });
//! let work = profile.intern_frame(Frame { name: "App.Program.Work".into(), module: app, kind: FrameKind::Managed });
//! // Main calling Work: two entries of the stack table, one handle.
//! let stack = profile.intern_stack_frames([main, work]);
//! assert_eq!(profile.stack_frames(stack), [main, work]);
//! profile.threads.push(ThreadProfile {
//!     name: "Main".into(),
//!     os_tid: 42,
//!     samples: vec![
//!         Sample { time_ns: 0, stack, wall_ns: 1_000_000, cpu_ns: 900_000 },
//!         Sample { time_ns: 1_000_000, stack, wall_ns: 1_000_000, cpu_ns: 1_000_000 },
//!     ],
//!     ..Default::default()
//! });
//! let mut out = Vec::new();
//! let opts = Options { weight: Weight::Cpu, ..Default::default() };
//! export(&profile, Format::Folded, &opts, &mut out).unwrap();
//! assert_eq!(String::from_utf8(out).unwrap(), "Main;App.Program.Main;App.Program.Work 1900000\n");
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

use std::io::Write;

// The test fixtures (tests/common) name this crate by its name.
#[cfg(test)]
extern crate self as clrprof_export;

pub mod chrome;
pub mod firefox;
#[cfg(test)]
mod firefox_fxprof;
pub mod folded;
mod model;
pub mod pprof;
pub mod speedscope;
mod stacks;
pub mod svg;

pub use model::{
    AllocationSample, Call, CallPath, Frame, FrameId, FrameKind, Interner, Module, ModuleId,
    ProcessMarker, Profile, Sample, Source, Stack, StackId, ThreadProfile, WaitSample, Weight,
};

/// What went wrong while exporting.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExportError {
    /// Writing the output failed.
    #[error("cannot write the output")]
    Io(#[from] std::io::Error),
    /// Serializing JSON failed (in practice: writing it failed).
    #[error("cannot write the JSON output")]
    Json(#[from] serde_json::Error),
    /// A stack or call refers to a frame the profile does not have.
    #[error("thread {thread} refers to frame {index}, but the profile has {frames} frames")]
    BadFrame {
        /// The thread's label.
        thread: String,
        /// The bad index.
        index: u32,
        /// How many frames the profile has.
        frames: usize,
    },
    /// A sample or call path refers to a stack the profile does not have (or to a stack
    /// table entry whose parent does not come before it).
    #[error("thread {thread} refers to stack {index}, but the profile has {stacks} stacks")]
    BadStack {
        /// The thread's label.
        thread: String,
        /// The bad index.
        index: u32,
        /// How many stacks the profile has.
        stacks: usize,
    },
    /// A flamegraph would be empty: no stack has a nonzero weight.
    #[error(
        "nothing to draw: no stack has any {weight} weight (traced calls carry no CPU time; \
         try --weight wall or --weight samples)"
    )]
    Empty {
        /// The weight that was asked for.
        weight: Weight,
    },
}

/// What the exporters are asked to do beyond the format.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Options {
    /// What aggregated views count (folded, SVG, speedscope's sampled profiles, pprof's
    /// default sample type).
    pub weight: Weight,
    /// One tree for all threads instead of one per thread (folded, SVG, speedscope's
    /// sampled profiles, pprof).
    pub merge_threads: bool,
    /// Folded and SVG: one tree per thread, labelled `name (tid)`. Without it (and
    /// without `merge_threads`) threads of one name share a tree labelled by the name,
    /// so a thread pool's workers show their hot path once.
    pub per_thread: bool,
    /// SVG only: reversed stacks drawn as an icicle (leaf functions in the top row).
    pub reverse: bool,
}

/// An output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// Collapsed stacks, `thread;root;…;leaf N` (flamegraph.pl, inferno).
    Folded,
    /// An interactive SVG flamegraph.
    Svg,
    /// speedscope's JSON file format.
    Speedscope,
    /// The Firefox Profiler's processed profile JSON.
    Firefox,
    /// Chrome's Trace Event Format JSON (chrome://tracing, Perfetto).
    Chrome,
    /// pprof's gzip-compressed `profile.proto`.
    Pprof,
}

impl Format {
    /// Every format, in the order above.
    pub const ALL: [Format; 6] = [
        Format::Folded,
        Format::Svg,
        Format::Speedscope,
        Format::Firefox,
        Format::Chrome,
        Format::Pprof,
    ];

    /// The file name ending, with its leading dot: `.folded`, `.svg`, `.speedscope.json`,
    /// `.firefox.json`, `.chrome.json`, `.pb.gz`.
    pub fn extension(self) -> &'static str {
        match self {
            Format::Folded => ".folded",
            Format::Svg => ".svg",
            Format::Speedscope => ".speedscope.json",
            Format::Firefox => ".firefox.json",
            Format::Chrome => ".chrome.json",
            Format::Pprof => ".pb.gz",
        }
    }

    /// Whether the format shows each traced call on a timeline (speedscope's evented
    /// profiles, the Firefox Profiler's markers, Chrome's trace events) and so needs
    /// [`ThreadProfile::calls`]; the others count [`ThreadProfile::call_paths`].
    pub fn is_timeline(self) -> bool {
        matches!(self, Format::Speedscope | Format::Firefox | Format::Chrome)
    }

    /// The format's name on the command line: `folded`, `svg`, `speedscope`, …
    pub fn name(self) -> &'static str {
        match self {
            Format::Folded => "folded",
            Format::Svg => "svg",
            Format::Speedscope => "speedscope",
            Format::Firefox => "firefox",
            Format::Chrome => "chrome",
            Format::Pprof => "pprof",
        }
    }
}

/// Writes `profile` to `out` as `format`. The output is not flushed.
pub fn export(
    profile: &Profile,
    format: Format,
    opts: &Options,
    out: &mut dyn Write,
) -> Result<(), ExportError> {
    match format {
        Format::Folded => folded::write(profile, opts, out),
        Format::Svg => svg::write(profile, opts, out),
        Format::Speedscope => speedscope::write(profile, opts, out),
        Format::Firefox => firefox::write(profile, opts, out),
        Format::Chrome => chrome::write(profile, opts, out),
        Format::Pprof => pprof::write(profile, opts, out),
    }
}
