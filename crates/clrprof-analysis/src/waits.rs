//! What a sampled thread waits in: the blocking API its stack is inside (a lock, a sleep,
//! I/O, `Thread.Join`, a GC, an idle pool thread), read from the managed frames nearest
//! the leaf. The sampler only knows whether the thread ran; the stack says where it
//! stopped.

use serde::Serialize;

use crate::names::{Names, is_framework_name};

/// The kind of wait a stack is blocked in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WaitKind {
    /// Monitor, Lock, SemaphoreSlim, events, wait handles, BlockingCollection.
    Lock,
    /// `Thread.Sleep`.
    Sleep,
    /// Reads, writes, sockets, the console.
    Io,
    /// `Thread.Join`.
    Join,
    /// `GC.Collect`, `GC.WaitForPendingFinalizers`, the finalizer thread's wait.
    Gc,
    /// A thread pool or timer thread waiting for work.
    Idle,
    /// Blocked in native code without a managed frame that says why.
    Native,
}

impl WaitKind {
    pub fn as_str(self) -> &'static str {
        match self {
            WaitKind::Lock => "lock",
            WaitKind::Sleep => "sleep",
            WaitKind::Io => "I/O",
            WaitKind::Join => "join",
            WaitKind::Gc => "GC",
            WaitKind::Idle => "idle",
            WaitKind::Native => "native",
        }
    }
}

/// Whether a thread ran at a sample, from the `Sample` record's state byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RunState {
    /// It used at least half the interval on a CPU (state byte 1).
    Running,
    /// It used less (any other byte).
    OffCpu,
}

impl RunState {
    /// The state of a `Sample` record's `state` byte.
    pub fn from_record(state: u8) -> RunState {
        if state == 1 {
            RunState::Running
        } else {
            RunState::OffCpu
        }
    }
}

/// What a sampled thread mostly did (the profile's per-thread `state`), or what its
/// samples off CPU were in (the keys of its `waits`). Serialized, displayed and ordered
/// by its name: `running`, `partly running` (off CPU in managed code: it ran less than
/// half the interval), or the wait's name (`lock`, `sleep`, `I/O`, `join`, `GC`, `idle`,
/// `native`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ThreadState {
    Running,
    PartlyRunning,
    Waiting(WaitKind),
}

impl ThreadState {
    /// The state of an off-CPU sample in `wait`.
    pub fn off_cpu(wait: Option<WaitKind>) -> ThreadState {
        wait.map_or(ThreadState::PartlyRunning, ThreadState::Waiting)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ThreadState::Running => "running",
            ThreadState::PartlyRunning => "partly running",
            ThreadState::Waiting(w) => w.as_str(),
        }
    }
}

impl Ord for ThreadState {
    /// By name, as the report lists them.
    fn cmp(&self, other: &ThreadState) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl PartialOrd for ThreadState {
    fn partial_cmp(&self, other: &ThreadState) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl std::fmt::Display for ThreadState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ThreadState {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// Name prefixes of the managed methods that block, by kind; the first match from the
/// leaf wins (so `Thread.Join` is a join, though it waits on a handle underneath).
const WAITS: &[(&str, WaitKind)] = &[
    ("System.Threading.Thread.Sleep", WaitKind::Sleep),
    ("System.Threading.Thread.Join", WaitKind::Join),
    ("System.GC.Collect", WaitKind::Gc),
    ("System.GC._Collect", WaitKind::Gc),
    ("System.GC.WaitForPendingFinalizers", WaitKind::Gc),
    ("System.GC.RunFinalizers", WaitKind::Gc),
    ("System.Threading.LowLevelLifoSemaphore", WaitKind::Idle),
    ("System.Threading.PortableThreadPool", WaitKind::Idle),
    ("System.Threading.TimerQueue", WaitKind::Idle),
    ("System.Threading.WaitThread", WaitKind::Idle),
    ("System.Threading.Monitor.", WaitKind::Lock),
    ("System.Threading.Lock.", WaitKind::Lock),
    ("System.Threading.SemaphoreSlim.", WaitKind::Lock),
    ("System.Threading.ManualResetEventSlim.", WaitKind::Lock),
    ("System.Threading.WaitHandle.", WaitKind::Lock),
    ("System.Threading.LowLevelLock", WaitKind::Lock),
    ("System.Threading.LowLevelMonitor", WaitKind::Lock),
    (
        "System.Threading.Tasks.Task.SpinThenBlockingWait",
        WaitKind::Lock,
    ),
    ("System.Threading.Tasks.Task.InternalWait", WaitKind::Lock),
    ("System.Threading.Tasks.Task.Wait", WaitKind::Lock),
    (
        "System.Collections.Concurrent.BlockingCollection",
        WaitKind::Lock,
    ),
    ("Interop+Sys.Read", WaitKind::Io),
    ("Interop+Sys.Write", WaitKind::Io),
    ("Interop+Sys.Poll", WaitKind::Io),
    ("Interop+Sys.WaitForSocketEvents", WaitKind::Io),
    ("Interop+Sys.Accept", WaitKind::Io),
    ("Interop+Sys.Receive", WaitKind::Io),
    ("Interop+Sys.Send", WaitKind::Io),
    ("System.IO.", WaitKind::Io),
    ("System.Net.Sockets.", WaitKind::Io),
    ("System.Console.", WaitKind::Io),
    ("System.ConsolePal", WaitKind::Io),
];

/// Managed frames looked at from the leaf before giving up: a wait API sits within a
/// few frames of the native code that blocks.
const FRAMES_LOOKED_AT: usize = 8;

/// The wait a stack (leaf first) is in: with a native leaf, the blocking API among the
/// managed frames near it, or [`WaitKind::Native`] when there is no managed frame at
/// all; with a managed leaf, the leaf's own kind when it is a blocking API (the suspend
/// sampler's snapshots of a sleeping thread end in `Thread.SleepInternal`, without the
/// native frames below). None otherwise.
pub fn classify(stack: &[u64], names: &Names) -> Option<WaitKind> {
    classify_at(stack, names).map(|(kind, _)| kind)
}

/// [`classify`], with the index in `stack` of the frame that names the wait (the
/// blocking API's frame; the leaf for [`WaitKind::Native`]), for views that show it.
pub fn classify_at(stack: &[u64], names: &Names) -> Option<(WaitKind, usize)> {
    let leaf = *stack.first()?;
    if !clrprof_format::is_native_frame(leaf) {
        return kind_of(&names.function(leaf)).map(|k| (k, 0));
    }
    kind_in(stack, names).or_else(|| {
        let managed = stack.iter().any(|f| !clrprof_format::is_native_frame(*f));
        (!managed).then_some((WaitKind::Native, 0))
    })
}

/// The first blocking API among the framework's managed frames nearest the leaf,
/// whatever the leaf, and its index in `stack`. The search ends at the app's own code:
/// what its callers do (a thread pool worker running it) is not what the leaf waits in.
pub fn kind_in(stack: &[u64], names: &Names) -> Option<(WaitKind, usize)> {
    for (i, f) in stack
        .iter()
        .enumerate()
        .filter(|(_, f)| !clrprof_format::is_native_frame(**f))
        .take(FRAMES_LOOKED_AT)
    {
        let name = names.function(*f);
        if let Some(k) = kind_of(&name) {
            return Some((k, i));
        }
        if !is_framework_name(&name) {
            return None;
        }
    }
    None
}

/// The wait kind of one method's name.
pub fn kind_of(name: &str) -> Option<WaitKind> {
    WAITS
        .iter()
        .find(|(prefix, _)| name.starts_with(prefix))
        .map(|(_, k)| *k)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The report's JSON names thread states and waits as it did when they were strings,
    /// and lists a thread's waits in the same (name) order.
    #[test]
    fn thread_states_keep_their_names_and_order() {
        use std::collections::BTreeMap;
        let waits: BTreeMap<ThreadState, u64> = [
            (ThreadState::PartlyRunning, 1),
            (ThreadState::Waiting(WaitKind::Sleep), 2),
            (ThreadState::Waiting(WaitKind::Io), 3),
            (ThreadState::Waiting(WaitKind::Gc), 4),
            (ThreadState::Waiting(WaitKind::Idle), 5),
        ]
        .into();
        assert_eq!(
            serde_json::to_string(&waits).unwrap(),
            r#"{"GC":4,"I/O":3,"idle":5,"partly running":1,"sleep":2}"#
        );
        assert_eq!(
            serde_json::to_string(&ThreadState::Running).unwrap(),
            r#""running""#
        );
        assert_eq!(ThreadState::Waiting(WaitKind::Lock).to_string(), "lock");
        assert_eq!(RunState::from_record(1), RunState::Running);
        assert_eq!(RunState::from_record(0), RunState::OffCpu);
        assert_eq!(RunState::from_record(2), RunState::OffCpu);
    }
    use crate::names::FunctionName;
    use clrprof_format::NATIVE_MODULE_FRAME;

    fn names(list: &[(u64, &str)]) -> Names {
        let mut n = Names::default();
        for (id, name) in list {
            n.functions.insert(
                *id,
                FunctionName {
                    name: name.to_string(),
                    ..Default::default()
                },
            );
        }
        n
    }

    #[test]
    fn the_nearest_blocking_api_names_the_wait() {
        let libc = NATIVE_MODULE_FRAME | 1;
        let n = names(&[
            (1, "System.Threading.Monitor.Wait"),
            (2, "System.Threading.Thread.Join"),
            (3, "App.Main"),
            (4, "System.Threading.Thread.SleepInternal"),
            (5, "App.Spin"),
            (
                6,
                "System.Threading.PortableThreadPool+WorkerThread.WorkerThreadStart",
            ),
        ]);
        // The app's code ends the search: a pool thread running it is not idle.
        assert_eq!(classify(&[libc, 5, 6], &n), None);
        assert_eq!(classify(&[libc, 2, 1, 3], &n), Some(WaitKind::Join));
        assert_eq!(classify(&[libc, 1, 3], &n), Some(WaitKind::Lock));
        assert_eq!(classify(&[libc, 0, 4, 3], &n), Some(WaitKind::Sleep));
        assert_eq!(classify(&[libc, 0], &n), Some(WaitKind::Native));
        // Native code called by the app, not a wait; a managed leaf is never a wait.
        assert_eq!(classify(&[libc, 5, 3], &n), None);
        assert_eq!(classify(&[5, 3], &n), None);
        // A managed leaf that is itself a wait (suspend sampler).
        assert_eq!(classify(&[4, 3], &n), Some(WaitKind::Sleep));
        // The frame that names the wait, for `dump`.
        assert_eq!(classify_at(&[libc, 2, 1, 3], &n), Some((WaitKind::Join, 1)));
        assert_eq!(
            classify_at(&[libc, 0, 4, 3], &n),
            Some((WaitKind::Sleep, 2))
        );
        assert_eq!(classify_at(&[libc, 0], &n), Some((WaitKind::Native, 0)));
    }
}
