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
            && let Some(t) = parse_stat(tid, &text)
        {
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
    Some(Task { tid, comm, state })
}

/// Readings of the threads over a while: how often each was seen running.
#[derive(Debug, Default)]
pub struct StateTally {
    readings: u32,
    by_tid: BTreeMap<u64, (Task, u32)>,
}

impl StateTally {
    pub fn read(&mut self, pid: u32) {
        self.readings += 1;
        for t in tasks(pid) {
            let running = u32::from(t.state == 'R');
            let e = self.by_tid.entry(t.tid).or_insert((t.clone(), 0));
            e.1 += running;
            e.0 = t;
        }
    }

    /// The thread's last reading, and the share of readings it was running in.
    pub fn get(&self, tid: u64) -> Option<(&Task, f64)> {
        let (t, r) = self.by_tid.get(&tid)?;
        Some((t, f64::from(*r) / f64::from(self.readings.max(1))))
    }

    pub fn all(&self) -> impl Iterator<Item = &Task> {
        self.by_tid.values().map(|(t, _)| t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_with_spaces_and_parentheses() {
        let t = parse_stat(7, "7 (a) b (c) S 1 2 3").unwrap();
        assert_eq!((t.comm.as_str(), t.state), ("a) b (c", 'S'));
        let me = tasks(std::process::id());
        assert!(me.iter().any(|t| t.tid == u64::from(std::process::id())));
    }
}
