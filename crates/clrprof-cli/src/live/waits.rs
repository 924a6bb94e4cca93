//! What a thread waits in, read from its stack: the leaf-most managed frame that is one of
//! the runtime's blocking calls.

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum WaitKind {
    /// Entering a lock held by another thread (`Monitor.Enter`, `lock`, `Lock.Enter`).
    Lock,
    /// `Monitor.Wait`, a wait handle, an event, a semaphore, a task.
    Wait,
    Sleep,
    Join,
    /// Reading or writing a file, a pipe, the console or a socket.
    Io,
    /// Waiting for the GC or the finalizer.
    Gc,
}

impl WaitKind {
    pub fn as_str(self) -> &'static str {
        match self {
            WaitKind::Lock => "lock",
            WaitKind::Wait => "wait",
            WaitKind::Sleep => "sleep",
            WaitKind::Join => "join",
            WaitKind::Io => "I/O",
            WaitKind::Gc => "GC",
        }
    }
}

/// Method name prefixes (`Namespace.Type.Method`) and what waiting in them means; the
/// first match from the leaf wins.
const BLOCKING: &[(&str, WaitKind)] = &[
    ("System.Threading.Monitor.Enter", WaitKind::Lock),
    ("System.Threading.Monitor.ReliableEnter", WaitKind::Lock),
    ("System.Threading.Monitor.TryEnter", WaitKind::Lock),
    ("System.Threading.Lock.Enter", WaitKind::Lock),
    ("System.Threading.Lock.TryEnter", WaitKind::Lock),
    ("System.Threading.Monitor.Wait", WaitKind::Wait),
    ("System.Threading.Thread.Sleep", WaitKind::Sleep),
    ("System.Threading.Thread.Join", WaitKind::Join),
    ("System.GC.Collect", WaitKind::Gc),
    ("System.GC.WaitForPendingFinalizers", WaitKind::Gc),
    ("System.Threading.WaitHandle.Wait", WaitKind::Wait),
    ("System.Threading.ManualResetEventSlim.Wait", WaitKind::Wait),
    ("System.Threading.SemaphoreSlim.Wait", WaitKind::Wait),
    ("System.Threading.Tasks.Task.Wait", WaitKind::Wait),
    ("System.Threading.Tasks.Task.InternalWait", WaitKind::Wait),
    (
        "System.Threading.LowLevelLifoSemaphore.Wait",
        WaitKind::Wait,
    ),
    ("System.Threading.PortableThreadPool", WaitKind::Wait),
    ("System.Threading.Channels", WaitKind::Wait),
    ("Interop+Sys.Read", WaitKind::Io),
    ("Interop+Sys.Write", WaitKind::Io),
    ("Interop+Sys.Poll", WaitKind::Io),
    ("Interop+Sys.WaitForSocketEvents", WaitKind::Io),
    ("System.Net.Sockets", WaitKind::Io),
    ("System.IO.", WaitKind::Io),
    ("System.ConsolePal", WaitKind::Io),
    ("System.Console.ReadLine", WaitKind::Io),
];

/// The blocking call `frames` (names, leaf first) sit in, and the frame that says so.
pub fn waiting_in<'a>(frames: impl IntoIterator<Item = &'a str>) -> Option<(WaitKind, &'a str)> {
    frames.into_iter().find_map(|f| {
        BLOCKING
            .iter()
            .find(|(prefix, _)| f.starts_with(prefix))
            .map(|&(_, kind)| (kind, f))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_leaf_most_blocking_call_wins() {
        let stack = [
            "[libc.so.6]",
            "[libcoreclr.so]",
            "System.Threading.Monitor.Enter_Slowpath",
            "System.Threading.Monitor.Enter",
            "App.Work",
            "System.Threading.Thread.Sleep",
        ];
        assert_eq!(
            waiting_in(stack),
            Some((WaitKind::Lock, "System.Threading.Monitor.Enter_Slowpath"))
        );
        assert_eq!(waiting_in(["App.Spin", "App.Main"]), None);
        assert_eq!(
            waiting_in(["System.Threading.Thread.Join", "App.Main"]).map(|w| w.0),
            Some(WaitKind::Join)
        );
    }
}
