//! The target's threads as the kernel sees them (`/proc/PID/task/TID/stat`): scheduler
//! state and name, read from outside without touching the target.

use std::collections::BTreeMap;

/// One reading of one thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Task {
    pub tid: u64,
    /// The kernel's name (`comm`, at most 15 bytes: .NET sets it from `Thread.Name`).
    pub comm: String,
    /// `R` running or runnable, `S` sleeping, `D` uninterruptible (disk), `T` stopped…
    pub state: char,
    /// Its time on a CPU so far, in ns (`schedstat`'s first field), where the kernel
    /// keeps it.
    pub on_cpu_ns: Option<u64>,
}

/// The calling thread's kernel id (tests): `/proc/thread-self` links to `PID/task/TID`.
#[cfg(test)]
fn own_tid() -> u64 {
    let link = std::fs::read_link("/proc/thread-self").unwrap();
    link.file_name().unwrap().to_string_lossy().parse().unwrap()
}

/// Every thread of `pid` now (empty when the process is gone or unreadable).
pub fn tasks(pid: u32) -> Vec<Task> {
    let mut v = Vec::new();
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return v;
    };
    for e in dir.flatten() {
        let Ok(tid) = e.file_name().to_string_lossy().parse::<u64>() else {
            continue;
        };
        if let Ok(text) = std::fs::read_to_string(e.path().join("stat"))
            && let Some(mut t) = parse_stat(tid, &text)
        {
            t.on_cpu_ns = std::fs::read_to_string(e.path().join("schedstat"))
                .ok()
                .and_then(|s| s.split_whitespace().next()?.parse().ok());
            v.push(t);
        }
    }
    v.sort_by_key(|t| t.tid);
    v
}

/// `tid (comm) S …`: the name may hold spaces and parentheses, so it ends at the last `)`.
fn parse_stat(tid: u64, text: &str) -> Option<Task> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text.get(open + 1..close)?.to_string();
    let state = text
        .get(close + 1..)?
        .split_whitespace()
        .next()?
        .chars()
        .next()?;
    Some(Task {
        tid,
        comm,
        state,
        on_cpu_ns: None,
    })
}

/// Readings of the threads over a while: how often each was seen running, and how long
/// it ran.
#[derive(Debug, Default)]
pub struct StateTally {
    readings: u32,
    by_tid: BTreeMap<u64, (Task, u32, Option<OnCpu>)>,
}

/// A thread's time on a CPU at its first reading and at its last.
#[derive(Debug, Clone, Copy)]
struct OnCpu {
    first: (std::time::Instant, u64),
    last: (std::time::Instant, u64),
}

impl StateTally {
    pub fn read(&mut self, pid: u32) {
        self.readings += 1;
        let now = std::time::Instant::now();
        for t in tasks(pid) {
            let running = u32::from(t.state == 'R');
            let e = self.by_tid.entry(t.tid).or_insert((t.clone(), 0, None));
            e.1 += running;
            if let Some(ns) = t.on_cpu_ns {
                let first = e.2.map_or((now, ns), |c| c.first);
                e.2 = Some(OnCpu {
                    first,
                    last: (now, ns),
                });
            }
            e.0 = t;
        }
    }

    /// The thread's last reading, and the share of readings it was running in (or
    /// runnable: a thread the kernel has not given a core yet counts as running).
    pub fn get(&self, tid: u64) -> Option<(&Task, f64)> {
        let (t, r, _) = self.by_tid.get(&tid)?;
        Some((t, f64::from(*r) / f64::from(self.readings.max(1))))
    }

    /// The share of the time between the thread's first and last readings it spent on a
    /// CPU (0..1), where the kernel keeps the figure and the readings span 50 ms or more.
    /// Unlike [`get`](Self::get)'s share it does not count a thread woken for a moment
    /// (by the sampler's own signal, say) that waited for a core on a busy machine.
    pub fn on_cpu_share(&self, tid: u64) -> Option<f64> {
        let c = self.by_tid.get(&tid)?.2?;
        let wall = c.last.0.duration_since(c.first.0).as_nanos() as f64;
        (wall >= 50e6).then(|| (c.last.1.saturating_sub(c.first.1) as f64 / wall).min(1.0))
    }

    pub fn all(&self) -> impl Iterator<Item = &Task> {
        self.by_tid.values().map(|(t, _, _)| t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This thread's own CPU time: a spin of 80 ms is most of the 80 ms it spans on an
    /// idle core, and more than a sleep's on any.
    #[test]
    fn a_spinning_thread_is_on_cpu_and_a_sleeping_one_is_not() {
        let pid = std::process::id();
        let measure = |spin: bool| {
            let (tx, rx) = std::sync::mpsc::channel();
            let (go, wait) = std::sync::mpsc::channel::<()>();
            let h = std::thread::spawn(move || {
                tx.send(crate::live::tasks::own_tid()).unwrap();
                wait.recv().unwrap();
                let end = std::time::Instant::now() + std::time::Duration::from_millis(80);
                while std::time::Instant::now() < end {
                    if !spin {
                        std::thread::sleep(std::time::Duration::from_millis(5));
                    }
                }
                wait.recv().unwrap();
            });
            let tid = rx.recv().unwrap();
            let mut tally = StateTally::default();
            tally.read(pid);
            go.send(()).unwrap();
            std::thread::sleep(std::time::Duration::from_millis(80));
            tally.read(pid);
            go.send(()).unwrap();
            h.join().unwrap();
            tally.on_cpu_share(tid)
        };
        let (spun, slept) = (measure(true), measure(false));
        if let (Some(spun), Some(slept)) = (spun, slept) {
            assert!(spun > slept, "{spun} vs {slept}");
            assert!(slept < 0.2, "{slept}");
        }
    }

    #[test]
    fn names_with_spaces_and_parentheses() {
        let t = parse_stat(7, "7 (a) b (c) S 1 2 3").unwrap();
        assert_eq!((t.comm.as_str(), t.state), ("a) b (c", 'S'));
        let me = tasks(std::process::id());
        assert!(me.iter().any(|t| t.tid == u64::from(std::process::id())));
    }
}
