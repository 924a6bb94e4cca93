//! What the runtime was doing in a sample's native runtime frames. libcoreclr has no
//! symbols to name its functions by, so a `[libcoreclr.so]` frame is named by what the
//! trace says was going on around it: a GC in progress (GcStarted..GcFinished), a JIT
//! compilation on that thread (JitStarted..JitFinished, or libclrjit in the stack), the
//! blocking API the managed code above it called ([`crate::waits`]), or, for anonymous
//! code between two managed frames (signal sampler), a runtime stub. Type loading has no
//! start/end events to window it and stays unnamed.

use std::collections::HashMap;

use clrprof_export::FrameKind;
use clrprof_format::Event;

use crate::names::Names;
use crate::timeline::TimedEvent;
use crate::waits::WaitKind;

/// What the runtime frames of one sample were doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Activity {
    Gc,
    Jit,
    Wait(WaitKind),
    /// A thread on CPU without a managed frame: the whole sample is what the thread is.
    Thread(ThreadRole),
}

impl Activity {
    pub fn as_str(self) -> &'static str {
        match self {
            Activity::Gc => "GC",
            Activity::Jit => "JIT",
            Activity::Wait(k) => k.as_str(),
            Activity::Thread(r) => r.as_str(),
        }
    }
}

/// What a thread without managed frames is, for its CPU: named from the thread's name
/// and the libraries its stack runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ThreadRole {
    /// The tiered-compilation (background JIT) worker, or a stack in libclrjit.
    Jit,
    /// A GC thread (server or background GC), or the runtime during a GC.
    Gc,
    /// The finalizer thread.
    Finalizer,
    /// Other native code: named after its leaf's library.
    Native,
}

impl ThreadRole {
    pub fn as_str(self) -> &'static str {
        match self {
            ThreadRole::Jit => "JIT",
            ThreadRole::Gc => "GC",
            ThreadRole::Finalizer => "finalizer",
            ThreadRole::Native => "native",
        }
    }

    /// The role of a thread running `stack` (no managed frame) at `ns`: by the thread's
    /// OS name first, then by the libraries in the stack.
    pub fn of(
        thread_name: Option<&str>,
        stack: &[u64],
        ns: u64,
        names: &Names,
        windows: &Windows,
    ) -> ThreadRole {
        let named = thread_name.unwrap_or("");
        if named.starts_with(".NET Tiered Com") {
            return ThreadRole::Jit;
        }
        if named.starts_with(".NET Finalizer") {
            return ThreadRole::Finalizer;
        }
        if named.starts_with(".NET Server GC")
            || named.starts_with(".NET BGC")
            || named.starts_with(".NET Background GC")
        {
            return ThreadRole::Gc;
        }
        let in_module = |lib: &str| {
            stack
                .iter()
                .any(|f| names.frame_module(*f).is_some_and(|m| m.name == lib))
        };
        if in_module("libclrjit.so") {
            ThreadRole::Jit
        } else if in_module("libcoreclr.so") && windows.in_gc(ns) {
            ThreadRole::Gc
        } else {
            ThreadRole::Native
        }
    }

    /// The frame name a sample of such a thread gets: `[runtime: JIT]`, or
    /// `[native: libfoo.so]` after the leaf's library.
    pub fn label(self, names: &Names, leaf: u64) -> String {
        match self {
            ThreadRole::Native => match names.frame_module(leaf) {
                Some(m) => format!("[native: {}]", m.name),
                None => crate::names::NATIVE.to_string(),
            },
            r => format!("[runtime: {}]", r.as_str()),
        }
    }
}

/// The windows in which the runtime did something known.
#[derive(Debug, Default)]
pub struct Windows {
    /// GcStarted..GcFinished, in time order.
    gcs: Vec<(u64, u64)>,
    /// Per OS thread, JitStarted..JitFinished, in time order.
    jits: HashMap<u64, Vec<(u64, u64)>>,
    /// The GC and the JIT runs started and not yet finished.
    gc_open: Option<u64>,
    jit_open: HashMap<u64, u64>,
}

impl Windows {
    pub fn collect(events: &[TimedEvent<'_>]) -> Windows {
        let mut w = Windows::default();
        for e in events {
            w.add(e);
        }
        w
    }

    /// Takes in one event (a live view adds events as they are read).
    pub fn add(&mut self, e: &TimedEvent<'_>) {
        match &e.event {
            Event::GcStarted { .. } => self.gc_open = Some(e.ns),
            Event::GcFinished { .. } => {
                if let Some(start) = self.gc_open.take() {
                    self.gcs.push((start, e.ns));
                }
            }
            Event::JitStarted { .. } => {
                self.jit_open.entry(e.os_tid).or_insert(e.ns);
            }
            Event::JitFinished { .. } => {
                if let Some(start) = self.jit_open.remove(&e.os_tid) {
                    self.jits.entry(e.os_tid).or_default().push((start, e.ns));
                }
            }
            _ => {}
        }
    }

    /// Forgets the windows that ended before `ns`: a live reader whose next samples are
    /// all later (`record --push`) keeps its memory flat over hours.
    pub fn forget_before(&mut self, ns: u64) {
        self.gcs.retain(|w| w.1 >= ns);
        for v in self.jits.values_mut() {
            v.retain(|w| w.1 >= ns);
        }
        self.jits.retain(|_, v| !v.is_empty());
    }

    pub fn in_gc(&self, ns: u64) -> bool {
        within(&self.gcs, ns)
    }

    pub fn in_jit(&self, os_tid: u64, ns: u64) -> bool {
        self.jits.get(&os_tid).is_some_and(|v| within(v, ns))
    }
}

/// Whether `ns` falls in one of the sorted, non-overlapping windows.
fn within(windows: &[(u64, u64)], ns: u64) -> bool {
    let i = windows.partition_point(|(start, _)| *start <= ns);
    i > 0 && ns <= windows[i - 1].1
}

/// The activity of a sample's runtime frames: JIT, then GC, then the wait it is in.
pub fn activity(
    stack: &[u64],
    os_tid: u64,
    ns: u64,
    wait: Option<WaitKind>,
    names: &Names,
    windows: &Windows,
) -> Option<Activity> {
    let jit_frame = stack.iter().any(|f| {
        names
            .frame_module(*f)
            .is_some_and(|m| m.name == "libclrjit.so")
    });
    if jit_frame || windows.in_jit(os_tid, ns) {
        Some(Activity::Jit)
    } else if windows.in_gc(ns) {
        Some(Activity::Gc)
    } else {
        wait.map(Activity::Wait)
    }
}

/// The name a native frame gets in a sample: `[libcoreclr.so: GC]` for the runtime's own
/// frames with a known activity, `[libcoreclr.so: helper]` for runtime code called
/// straight from managed code (the JIT's helpers: allocation, casts, write barriers,
/// statics), `[stub]` for anonymous code called from a managed frame when the sampler can
/// tell modules apart (the runtime's stubs and patched helpers live there), else its module's name.
pub fn frame_label(
    names: &Names,
    stack: &[u64],
    i: usize,
    activity: Option<Activity>,
    stubs_named: bool,
) -> String {
    let f = stack[i];
    if let Some(Activity::Thread(role)) = activity {
        return role.label(names, f);
    }
    let name = names.frame_name(f);
    let called_from_managed = stack
        .get(i + 1)
        .is_some_and(|g| !clrprof_format::is_native_frame(*g));
    match names.frame_kind(f) {
        FrameKind::Runtime => match activity {
            Some(a) => format!("{}: {}]", name.trim_end_matches(']'), a.as_str()),
            None if called_from_managed => format!("{}: helper]", name.trim_end_matches(']')),
            None => name,
        },
        FrameKind::Native if names.frame_module(f).is_none() => {
            let managed = |j: Option<usize>| {
                j.and_then(|j| stack.get(j))
                    .is_some_and(|g| !clrprof_format::is_native_frame(*g))
            };
            if stubs_named && managed(Some(i + 1)) {
                "[stub]".to_string()
            } else {
                match activity {
                    Some(a) => format!("[native: {}]", a.as_str()),
                    None => name,
                }
            }
        }
        _ => name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_contain_their_ends() {
        let w = [(10, 20), (30, 40)];
        assert!(!within(&w, 9));
        assert!(within(&w, 10) && within(&w, 20) && within(&w, 35));
        assert!(!within(&w, 25) && !within(&w, 41));
        assert!(!within(&[], 1));
    }

    #[test]
    fn forgetting_keeps_the_windows_that_end_later() {
        let mut w = Windows {
            gcs: vec![(10, 20), (30, 40)],
            ..Default::default()
        };
        w.jits.insert(7, vec![(1, 2)]);
        w.jits.insert(8, vec![(1, 2), (35, 50)]);
        w.forget_before(25);
        assert_eq!(w.gcs, [(30, 40)]);
        assert!(!w.jits.contains_key(&7));
        assert!(w.in_jit(8, 40) && w.in_gc(31) && !w.in_gc(15));
    }
}
