//! The neutral profile model every exporter reads.
//!
//! Analysis builds it from a recorded trace; nothing here knows about the trace format
//! or about any output format. Like the Firefox Profiler's processed profile (and
//! samply's `fxprof-processed-profile`, which writes it), the profile keeps tables that
//! everything else refers to by typed handle:
//!
//! - [`Profile::modules`]: each module once, referred to by [`ModuleId`];
//! - [`Profile::frames`]: each function once, referred to by [`FrameId`];
//! - [`Profile::stacks`]: a prefix tree of stacks, referred to by [`StackId`]. An entry is
//!   a frame and the stack of its caller ([`Stack`]); a stack is its leaf entry, and
//!   walking the parents gives its frames leaf to root. Equal (frame, parent) pairs share
//!   one entry, so stacks with a common prefix share that prefix and a sample is one
//!   handle, whatever its depth.
//!
//! The model is plain data. [`Profile::intern_frame`] and [`Profile::intern_stack`] add
//! to the tables by searching them (enough for a small hand-built profile); a builder of
//! a big profile keeps an [`Interner`] next to it, which finds entries by hash.

use std::collections::HashMap;

/// A whole profile: the interned frames and stacks and, per thread, samples and exact
/// calls.
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
    /// Interned frames; stacks and calls refer to them by [`FrameId`].
    pub frames: Vec<Frame>,
    /// Interned stacks, a prefix tree: samples and call paths refer to them by
    /// [`StackId`]. A parent always comes before its children.
    pub stacks: Vec<Stack>,
    /// The modules frames belong to; [`Frame::module`] refers to them by handle.
    pub modules: Vec<Module>,
    /// One entry per thread that has samples or calls.
    pub threads: Vec<ThreadProfile>,
    /// Per frame (by [`FrameId`] index), where its code is in the source, when known (from
    /// the module's PDB); shorter than `frames` when the last ones are unknown.
    pub sources: Vec<Option<Source>>,
    /// Process-wide intervals a timeline marks: the thread pool's starvation episodes
    /// (`record --waits`).
    pub markers: Vec<ProcessMarker>,
}

/// Where a frame's code is in the source.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Source {
    /// The document's path as the compiler wrote it.
    pub file: String,
    /// The first line of the method's body.
    pub start_line: u32,
    /// The line itself, for a frame that stands for one line of its method
    /// (`convert --lines`).
    pub line: Option<u32>,
}

/// A process-wide interval, e.g. a thread-pool starvation episode.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcessMarker {
    /// What it is, e.g. `thread-pool starvation: 2 → 28 workers`.
    pub name: String,
    /// Nanoseconds since the profile start.
    pub start_ns: u64,
    /// Nanoseconds since the profile start.
    pub end_ns: u64,
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

/// A handle to a frame: its index in [`Profile::frames`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FrameId(pub u32);

/// A handle to a stack: its index in [`Profile::stacks`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StackId(pub u32);

/// An entry of the stack table: a frame called from the stack `parent` (`None` for a
/// root frame). The entry stands for the whole stack from the root down to `frame`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Stack {
    /// The stack's leaf (innermost) frame.
    pub frame: FrameId,
    /// The stack of the caller; it comes before this entry in [`Profile::stacks`].
    pub parent: Option<StackId>,
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
    /// Where frame `id`'s code is in the source, when known.
    pub fn source(&self, id: FrameId) -> Option<&Source> {
        self.sources.get(id.0 as usize)?.as_ref()
    }

    /// The frame `id` refers to.
    ///
    /// # Panics
    ///
    /// If the profile has no such frame (the exporters check every handle first).
    pub fn frame(&self, id: FrameId) -> &Frame {
        &self.frames[id.0 as usize]
    }

    /// The stack table entry `id` refers to.
    ///
    /// # Panics
    ///
    /// If the profile has no such stack.
    pub fn stack(&self, id: StackId) -> &Stack {
        &self.stacks[id.0 as usize]
    }

    /// The frames of stack `id`, leaf first: the entry's frame, its parent's, and so on up
    /// to the root.
    ///
    /// # Panics
    ///
    /// When the walk meets a stack the profile does not have, or a parent that does not
    /// come before its child (which could loop).
    pub fn stack_frames_leaf_first(&self, id: StackId) -> impl Iterator<Item = FrameId> + '_ {
        let mut next = Some(id);
        std::iter::from_fn(move || {
            let id = next?;
            let s = self.stack(id);
            if let Some(p) = s.parent {
                assert!(p < id, "stack {} has parent {}, not before it", id.0, p.0);
            }
            next = s.parent;
            Some(s.frame)
        })
    }

    /// The frames of stack `id`, root first (the leaf is last); empty for `None`, the
    /// empty stack (a [`Sample`]'s stack may be either).
    ///
    /// # Panics
    ///
    /// As [`Profile::stack_frames_leaf_first`].
    pub fn stack_frames(&self, id: impl Into<Option<StackId>>) -> Vec<FrameId> {
        let mut frames: Vec<FrameId> = id
            .into()
            .map(|id| self.stack_frames_leaf_first(id).collect())
            .unwrap_or_default();
        frames.reverse();
        frames
    }

    /// Adds `frame` unless an equal one is there; its handle either way. This searches the
    /// whole table: to add many, use an [`Interner`].
    pub fn intern_frame(&mut self, frame: Frame) -> FrameId {
        match self.frames.iter().position(|f| *f == frame) {
            Some(i) => FrameId(i as u32),
            None => {
                self.frames.push(frame);
                FrameId(self.frames.len() as u32 - 1)
            }
        }
    }

    /// The stack of `frame` called from `parent`, added unless it is there. This searches
    /// the whole table: to add many, use an [`Interner`].
    pub fn intern_stack(&mut self, parent: Option<StackId>, frame: FrameId) -> StackId {
        let entry = Stack { frame, parent };
        match self.stacks.iter().position(|s| *s == entry) {
            Some(i) => StackId(i as u32),
            None => {
                self.stacks.push(entry);
                StackId(self.stacks.len() as u32 - 1)
            }
        }
    }

    /// The stack of `frames`, root first, added entry by entry as
    /// [`Profile::intern_stack`] does; `None` when `frames` is empty.
    pub fn intern_stack_frames(
        &mut self,
        frames: impl IntoIterator<Item = FrameId>,
    ) -> Option<StackId> {
        frames
            .into_iter()
            .fold(None, |parent, f| Some(self.intern_stack(parent, f)))
    }

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

/// Finds the entries of a profile's frame and stack tables by hash, for a builder that
/// adds many: each call takes the profile the interner was made for, which must not
/// change behind its back (its tables only grow through this interner).
#[derive(Debug, Clone, Default)]
pub struct Interner {
    frames: HashMap<Frame, FrameId>,
    stacks: HashMap<Stack, StackId>,
}

impl Interner {
    /// An interner for `profile`, knowing the entries it has (the first of equal ones).
    pub fn new(profile: &Profile) -> Self {
        let mut frames = HashMap::with_capacity(profile.frames.len());
        for (i, f) in profile.frames.iter().enumerate() {
            frames.entry(f.clone()).or_insert(FrameId(i as u32));
        }
        let mut stacks = HashMap::with_capacity(profile.stacks.len());
        for (i, s) in profile.stacks.iter().enumerate() {
            stacks.entry(*s).or_insert(StackId(i as u32));
        }
        Interner { frames, stacks }
    }

    /// As [`Profile::intern_frame`].
    pub fn frame(&mut self, profile: &mut Profile, frame: Frame) -> FrameId {
        if let Some(&id) = self.frames.get(&frame) {
            return id;
        }
        let id = FrameId(profile.frames.len() as u32);
        profile.frames.push(frame.clone());
        self.frames.insert(frame, id);
        id
    }

    /// As [`Profile::intern_stack`].
    pub fn stack(
        &mut self,
        profile: &mut Profile,
        parent: Option<StackId>,
        frame: FrameId,
    ) -> StackId {
        let entry = Stack { frame, parent };
        *self.stacks.entry(entry).or_insert_with(|| {
            profile.stacks.push(entry);
            StackId(profile.stacks.len() as u32 - 1)
        })
    }

    /// As [`Profile::intern_stack_frames`].
    pub fn stack_frames(
        &mut self,
        profile: &mut Profile,
        frames: impl IntoIterator<Item = FrameId>,
    ) -> Option<StackId> {
        frames
            .into_iter()
            .fold(None, |parent, f| Some(self.stack(profile, parent, f)))
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
    /// The values recorded for calls (`record --args`), each call's own (not matched
    /// afterwards by name or time): its arguments (`this`, `args`), `return` value or
    /// `exception`, and whether some were `truncated`. [`Call::values`] refers to them by
    /// index; the timeline formats show them with the call.
    pub call_values: Vec<serde_json::Map<String, serde_json::Value>>,
    /// Exact calls aggregated by call path (trace mode); see [`CallPath`]. When present
    /// the aggregated formats (folded, SVG, pprof, speedscope's sampled profiles) count
    /// these instead of `calls`, which may then be left empty.
    pub call_paths: Vec<CallPath>,
    /// Sampled allocations (`record --alloc`), in time order: what the `Alloc*` and
    /// `LiveBytes` weights count.
    pub allocations: Vec<AllocationSample>,
    /// Waits the runtime reported (`record --waits`), in time order: what the `Wait` and
    /// `Lock` weights count.
    pub waits: Vec<WaitSample>,
}

/// One wait the runtime reported, on the waiting thread, with its stack.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WaitSample {
    /// When the wait began, in nanoseconds since the profile start.
    pub time_ns: u64,
    /// The waiting stack, or `None` when it is empty.
    pub stack: Option<StackId>,
    /// How long it waited, in nanoseconds.
    pub wait_ns: u64,
    /// A contended lock (the other waits are wait handles).
    pub lock: bool,
}

/// One sampled allocation, with the estimated bytes and objects it stands for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AllocationSample {
    /// When it was allocated, in nanoseconds since the profile start.
    pub time_ns: u64,
    /// The allocating stack, or `None` when it is empty.
    pub stack: Option<StackId>,
    /// Estimated bytes allocated.
    pub bytes: u64,
    /// Estimated objects allocated.
    pub objects: u64,
    /// Of those bytes, the ones still alive at the end (0 when it was collected or not
    /// followed).
    pub live_bytes: u64,
    /// Of those objects, the ones still alive at the end.
    pub live_objects: u64,
    /// Followed for the live heap (a weak handle): a GC that collects it says so, in
    /// `freed_ns`. Samples not followed (`AllocationTick`, or over the agent's bound) are
    /// neither live nor freed as far as the trace knows.
    pub followed: bool,
    /// When a GC found it collected, in nanoseconds since the profile start.
    pub freed_ns: Option<u64>,
}

/// One stack sample of one thread.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sample {
    /// When the sample was taken, in nanoseconds since the profile start.
    pub time_ns: u64,
    /// The stack, or `None` when it is empty.
    pub stack: Option<StackId>,
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
    /// The function called.
    pub frame: FrameId,
    /// When the call started, in nanoseconds since the profile start.
    pub start_ns: u64,
    /// When it returned (or was unwound), in nanoseconds since the profile start.
    pub end_ns: u64,
    /// Nesting depth: 0 for a call with no traced caller.
    pub depth: u32,
    /// The values recorded for this call (`record --args`): its index in
    /// [`ThreadProfile::call_values`].
    pub values: Option<u32>,
}

/// The calls of one call path, aggregated: what a flamegraph of a trace draws, without
/// one entry per call. Its size grows with the distinct paths, not with the calls (a
/// trace of millions of calls has a few thousand paths).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallPath {
    /// The path: a stack whose leaf is the function called.
    pub stack: StackId,
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
    /// Estimated bytes allocated (`record --alloc`).
    AllocBytes,
    /// Estimated objects allocated.
    AllocObjects,
    /// Estimated bytes still alive at the end.
    LiveBytes,
    /// Nanoseconds waited, by the waits the runtime reported (`record --waits`).
    Wait,
    /// Nanoseconds waited for contended locks (`record --waits`).
    Lock,
}

impl Weight {
    /// `samples`, `wall`, `cpu`, `alloc_space`, `alloc_objects` or `inuse_space`: the
    /// sample type names pprof uses too (Go's and Pyroscope's for allocations).
    pub fn as_str(self) -> &'static str {
        match self {
            Weight::Samples => "samples",
            Weight::Wall => "wall",
            Weight::Cpu => "cpu",
            Weight::AllocBytes => "alloc_space",
            Weight::AllocObjects => "alloc_objects",
            Weight::LiveBytes => "inuse_space",
            Weight::Wait => "wait",
            Weight::Lock => "lock_wait",
        }
    }

    /// Counts the waits of `record --waits` rather than stack samples or calls.
    pub fn is_wait(self) -> bool {
        matches!(self, Weight::Wait | Weight::Lock)
    }

    /// Counts allocation samples rather than stack samples or calls.
    pub fn is_alloc(self) -> bool {
        matches!(
            self,
            Weight::AllocBytes | Weight::AllocObjects | Weight::LiveBytes
        )
    }
}

impl std::fmt::Display for Weight {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl ThreadProfile {
    /// A thread with nothing recorded yet.
    pub fn new(name: String, os_tid: u64) -> ThreadProfile {
        ThreadProfile {
            name,
            os_tid,
            ..ThreadProfile::default()
        }
    }

    /// The label threads of one name share (folded and SVG merge them): the name, or
    /// `thread <tid>` for an unnamed thread.
    pub fn group_label(&self) -> String {
        if self.name.is_empty() {
            format!("thread {}", self.os_tid)
        } else {
            self.name.clone()
        }
    }

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

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(name: &str) -> Frame {
        Frame {
            name: name.into(),
            ..Default::default()
        }
    }

    /// A profile with frames A, B, C, D (ids 0–3) and no stacks.
    fn abcd() -> Profile {
        Profile {
            frames: ["A", "B", "C", "D"].map(frame).to_vec(),
            ..Default::default()
        }
    }

    const A: FrameId = FrameId(0);
    const B: FrameId = FrameId(1);
    const C: FrameId = FrameId(2);
    const D: FrameId = FrameId(3);

    #[test]
    fn stacks_share_their_common_prefix() {
        let mut p = abcd();
        let abc = p.intern_stack_frames([A, B, C]).unwrap();
        let abd = p.intern_stack_frames([A, B, D]).unwrap();
        assert_eq!(p.stacks.len(), 4, "A, A;B, A;B;C, A;B;D");
        assert_ne!(abc, abd);
        assert_eq!(p.stack(abc).parent, p.stack(abd).parent);
        assert_eq!(p.intern_stack_frames([A, B, C]), Some(abc), "interned");
        assert_eq!(p.stacks.len(), 4);
        // The same stacks through an interner: the same table.
        let mut q = abcd();
        let mut interner = Interner::new(&q);
        assert_eq!(interner.stack_frames(&mut q, [A, B, C]), Some(abc));
        assert_eq!(interner.stack_frames(&mut q, [A, B, D]), Some(abd));
        assert_eq!(interner.stack_frames(&mut q, [A, B, C]), Some(abc));
        assert_eq!(q, p);
    }

    #[test]
    fn stack_frames_are_root_first() {
        let mut p = abcd();
        let s = p.intern_stack_frames([A, B, C]).unwrap();
        assert_eq!(p.stack_frames(s), [A, B, C]);
        assert_eq!(p.stack_frames_leaf_first(s).collect::<Vec<_>>(), [C, B, A]);
        assert_eq!(p.stack(s).frame, C);
        let root = p.stack(p.stack(s).parent.unwrap()).parent.unwrap();
        assert_eq!(
            *p.stack(root),
            Stack {
                frame: A,
                parent: None
            }
        );
        assert_eq!(p.frame(p.stack(s).frame).name, "C");
    }

    #[test]
    fn the_empty_stack_is_none() {
        let mut p = abcd();
        assert_eq!(p.intern_stack_frames([]), None);
        assert_eq!(Interner::new(&p).stack_frames(&mut p, []), None);
        assert!(p.stacks.is_empty());
        assert!(p.stack_frames(None).is_empty());
    }

    #[test]
    fn interning_a_frame_finds_an_equal_one() {
        let mut p = abcd();
        assert_eq!(p.intern_frame(frame("C")), C);
        let e = p.intern_frame(frame("E"));
        assert_eq!(e, FrameId(4));
        let mut interner = Interner::new(&p);
        assert_eq!(interner.frame(&mut p, frame("E")), e);
        assert_eq!(interner.frame(&mut p, frame("F")), FrameId(5));
        assert_eq!(p.frames.len(), 6);
    }

    #[test]
    #[should_panic(expected = "not before it")]
    fn a_parent_after_its_child_panics_instead_of_looping() {
        let mut p = abcd();
        p.stacks = vec![Stack {
            frame: A,
            parent: Some(StackId(0)),
        }];
        p.stack_frames(StackId(0));
    }
}
