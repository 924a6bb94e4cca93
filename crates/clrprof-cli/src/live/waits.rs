//! What a thread waits in, read from its stack: whether its leaf-most managed frame is one
//! of the runtime's blocking calls. Only that frame counts: code that runs under a
//! blocking API's frame (a callback, a parser under a stream reader) is not waiting.

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
    ("System.Threading.Monitor.ObjWait", WaitKind::Wait),
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
    ("Interop+Sys.Read", WaitKind::Io),
    ("Interop+Sys.Write", WaitKind::Io),
    ("Interop+Sys.Poll", WaitKind::Io),
    ("Interop+Sys.WaitForSocketEvents", WaitKind::Io),
    ("System.Net.Sockets.Socket.Receive", WaitKind::Io),
    ("System.Net.Sockets.Socket.Send", WaitKind::Io),
    ("System.Net.Sockets.Socket.Accept", WaitKind::Io),
    ("System.Net.Sockets.Socket.Connect", WaitKind::Io),
    ("System.IO.RandomAccess.ReadAtOffset", WaitKind::Io),
    ("System.IO.RandomAccess.WriteAtOffset", WaitKind::Io),
    ("System.ConsolePal.Read", WaitKind::Io),
];

/// The blocking call a stack (frame names, leaf first; native runs are `[module]`) sits
/// in: its leaf-most managed frame, when that is one.
pub fn waiting_in<'a>(frames: impl IntoIterator<Item = &'a str>) -> Option<(WaitKind, &'a str)> {
    let leaf = frames.into_iter().find(|f| !f.starts_with('['))?;
    blocking_call(leaf).map(|kind| (kind, leaf))
}

/// Whether a managed method is a blocking call, and which kind.
pub fn blocking_call(method: &str) -> Option<WaitKind> {
    BLOCKING
        .iter()
        .find(|(prefix, _)| method.starts_with(prefix))
        .map(|&(_, kind)| kind)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_leaf_most_managed_frame_decides() {
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
        // Running code under a blocking API's frame is not waiting.
        assert_eq!(
            waiting_in(["[libc.so.6]", "App.OnTick", "System.Threading.Thread.Sleep"]),
            None
        );
        assert_eq!(
            waiting_in(["System.Threading.Thread.Join", "App.Main"]).map(|w| w.0),
            Some(WaitKind::Join)
        );
    }
}
