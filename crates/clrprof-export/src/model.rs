//! The neutral profile model every exporter reads.
//!
//! Analysis builds it from a recorded trace; nothing here knows about the trace format
//! or about any output format. Frames are interned once per profile and stacks refer to
//! them by index, root first.

/// A whole profile: the interned frames and, per thread, samples and exact calls.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Profile {
    /// What was profiled, e.g. the profiled command line.
    pub name: String,
    /// When the profile starts, in nanoseconds since the Unix epoch. Every other time in
    /// the profile is relative to it.
    pub start_unix_ns: u64,
    /// The nominal sampling interval in nanoseconds (0 for call traces).
    pub interval_ns: u64,
    /// How long the profile lasts, in nanoseconds since its start (0 when unknown: the
    /// formats that state a duration then take the last sample or call).
    pub duration_ns: u64,
    /// Interned frames; stacks and calls refer to them by index.
    pub frames: Vec<Frame>,
    /// The modules frames belong to; [`Frame::module`] refers to them by handle.
    pub modules: Vec<Module>,
    /// One entry per thread that has samples or calls.
    pub threads: Vec<ThreadProfile>,
}

/// One function (or pseudo-frame) as it appears in stacks.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Frame {
    /// `Namespace.Type.Method`, or a pseudo-frame such as `[native]`.
    pub name: String,
    /// The module (assembly or shared library) the code belongs to, when known.
    pub module: Option<ModuleId>,
    /// Managed, native or runtime code.
    pub kind: FrameKind,
}

/// A handle to a module: its index in [`Profile::modules`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ModuleId(pub u32);

/// A file that code comes from: a managed assembly or a native library.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Module {
    /// Its file name, e.g. `App.dll` or `libcoreclr.so`.
    pub name: String,
    /// Its full path, when recorded.
    pub path: Option<String>,
}

impl Profile {
    /// The module of frame `frame`, if it has one (and the handle is valid).
    pub fn module_of(&self, frame: &Frame) -> Option<&Module> {
        frame.module.and_then(|m| self.modules.get(m.0 as usize))
    }

    /// Adds `module` unless an equal one is there; its handle either way.
    pub fn intern_module(&mut self, module: Module) -> ModuleId {
        match self.modules.iter().position(|m| *m == module) {
            Some(i) => ModuleId(i as u32),
            None => {
                self.modules.push(module);
                ModuleId(self.modules.len() as u32 - 1)
            }
        }
    }
}

/// What kind of code a frame is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FrameKind {
    /// JIT-compiled or ready-to-run .NET code.
    #[default]
    Managed,
    /// Native code outside the runtime (P/Invoke targets, libraries).
    Native,
    /// The runtime itself (GC, JIT, type loader, stubs).
    Runtime,
}

impl FrameKind {
    /// A lower-case name, used as a category by the formats that have categories.
    pub fn as_str(self) -> &'static str {
        match self {
            FrameKind::Managed => "managed",
            FrameKind::Native => "native",
            FrameKind::Runtime => "runtime",
        }
    }
}

/// The samples and calls of one OS thread.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ThreadProfile {
    /// The thread's name (the managed name when it has one).
    pub name: String,
    /// The OS thread id.
    pub os_tid: u64,
    /// Stack samples, in time order.
    pub samples: Vec<Sample>,
    /// Exact call intervals (trace mode), in any order; see [`Call`].
    pub calls: Vec<Call>,
    /// Exact calls aggregated by call path (trace mode); see [`CallPath`]. When present
    /// the aggregated formats (folded, SVG, pprof, speedscope's sampled profiles) count
    /// these instead of `calls`, which may then be left empty.
    pub call_paths: Vec<CallPath>,
}

/// One stack sample of one thread.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sample {
    /// When the sample was taken, in nanoseconds since the profile start.
    pub time_ns: u64,
    /// Indices into [`Profile::frames`], root first (the leaf is last).
    pub stack: Vec<u32>,
    /// The wall time this sample stands for, in nanoseconds (usually the interval).
    pub wall_ns: u64,
    /// The CPU time the thread used since its previous sample, in nanoseconds.
    pub cpu_ns: u64,
}

/// One exact call interval from trace mode.
///
/// Calls of a thread nest: a call at `depth` d + 1 lies inside the call at depth d that
/// was open when it started. Exporters tolerate small violations (a callee that outlives
/// its caller is cut at the caller's end).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Call {
    /// Index into [`Profile::frames`].
    pub frame: u32,
    /// When the call started, in nanoseconds since the profile start.
    pub start_ns: u64,
    /// When it returned (or was unwound), in nanoseconds since the profile start.
    pub end_ns: u64,
    /// Nesting depth: 0 for a call with no traced caller.
    pub depth: u32,
}

/// The calls of one call path, aggregated: what a flamegraph of a trace draws, without
/// one entry per call. Its size grows with the distinct paths, not with the calls (a
/// trace of millions of calls has a few thousand paths).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallPath {
    /// Indices into [`Profile::frames`], root first; never empty.
    pub stack: Vec<u32>,
    /// Calls of the last frame made on this path.
    pub calls: u64,
    /// Their time in the last frame itself, callees excluded, in nanoseconds.
    pub self_ns: u64,
}

/// What a flamegraph (or any aggregated view) counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Weight {
    /// One per sample (one per call for traced threads).
    #[default]
    Samples,
    /// Wall time in nanoseconds (self time of calls for traced threads).
    Wall,
    /// CPU time in nanoseconds. Traced calls carry no CPU time.
    Cpu,
}

impl Weight {
    /// `samples`, `wall` or `cpu`: the sample type names pprof uses too.
    pub fn as_str(self) -> &'static str {
        match self {
            Weight::Samples => "samples",
            Weight::Wall => "wall",
            Weight::Cpu => "cpu",
        }
    }
}

impl std::fmt::Display for Weight {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl ThreadProfile {
    /// A label that tells threads apart even when they share a name: `name (tid)`, or
    /// `thread <tid>` for a nameless thread.
    pub fn label(&self) -> String {
        let tid = self.os_tid;
        if self.name.is_empty() {
            format!("thread {tid}")
        } else if self.name == format!("thread {tid}") {
            self.name.clone()
        } else {
            format!("{} ({tid})", self.name)
        }
    }
}
