//! When an attached profiler detaches on its own: at its deadline (`--duration` and a
//! grace period) or when the `clrprof` that attached it is gone. The control thread
//! (`socket.rs`) checks these between requests.

use std::time::Instant;

/// When the control thread detaches on its own: at a deadline (`--duration`) or when the
/// `clrprof` that attached is gone (killed, or its terminal closed).
#[derive(Default)]
pub struct Watch {
    pub deadline: Option<Instant>,
    pub owner: Option<Owner>,
}

/// A process identified by pid and start time, so a recycled pid is not mistaken for it.
pub struct Owner {
    pub(super) pid: u32,
    start: Option<u64>,
}

impl Owner {
    /// The process `pid` that started at `start` (clock ticks since boot, /proc/PID/stat
    /// field 22, as `clrprof` read it for itself). `clrprof` attaches only to targets in
    /// its own pid namespace (it refuses others before asking), so an owner this process
    /// cannot see, or whose pid now names a process that started at another time, is
    /// gone: it was killed between its AttachProfiler and this lookup, and the returned
    /// owner is not [`alive`](Owner::alive), so the recording stops at once instead of
    /// running unowned. `None` only without a start time and without the process: nothing
    /// to watch.
    pub fn new(pid: u32, start: Option<u64>) -> Option<Owner> {
        let seen = proc_stat(pid).map(|s| s.1);
        match (seen, start) {
            (_, Some(expected)) => Some(Owner {
                pid,
                start: Some(expected),
            }),
            (Some(s), None) => Some(Owner {
                pid,
                start: Some(s),
            }),
            (None, None) => None,
        }
    }

    pub fn alive(&self) -> bool {
        match (proc_stat(self.pid), self.start) {
            (Some((state, start)), Some(s0)) => start == s0 && state != 'Z' && state != 'X',
            _ => false,
        }
    }
}

/// `(state, starttime)` from `/proc/PID/stat`.
fn proc_stat(pid: u32) -> Option<(char, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&text)
}

/// Fields after the command name (which may hold spaces and parentheses): state is the
/// 3rd field of the line, starttime the 22nd.
pub fn parse_stat(text: &str) -> Option<(char, u64)> {
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let state = fields.first()?.chars().next()?;
    let start = fields.get(19)?.parse().ok()?;
    Some((state, start))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_after_a_tricky_command_name() {
        let line =
            "1234 (a) (b c) T 1 1234 1234 0 -1 4194560 100 0 0 0 5 6 0 0 20 0 1 0 987654 1000 10";
        assert_eq!(parse_stat(line), Some(('T', 987654)));
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn this_process_is_alive_and_a_wrong_start_time_is_not() {
        let me = Owner::new(std::process::id(), None).unwrap();
        assert!(me.alive());
        let start = me.start;
        assert!(Owner::new(std::process::id(), start).unwrap().alive());
        // The pid now names a process that started at another time: the owner is gone.
        assert!(
            !Owner::new(std::process::id(), start.map(|s| s + 1))
                .unwrap()
                .alive()
        );
        // pid_max is at most 2^22: a clrprof killed before the lookup is gone too.
        assert!(!Owner::new(99_999_999, Some(1)).unwrap().alive());
        assert!(Owner::new(99_999_999, None).is_none());
        let recycled = Owner {
            pid: std::process::id(),
            start: me.start.map(|s| s + 1),
        };
        assert!(!recycled.alive());
    }
}
