//! What could not be recorded: lost events by reason, and the writes the trace file
//! refused.

use std::collections::BTreeMap;

use serde::Serialize;

use clrprof_format::Event;

#[derive(Debug, Serialize)]
pub struct WriteFailure {
    pub errno: u64,
    /// E.g. `ENOSPC (No space left on device)`.
    pub error: String,
    pub blocks: u64,
    pub events: u64,
}

/// The name of a `Lost` reason code.
pub fn lost_reason(code: u8) -> &'static str {
    match code {
        clrprof_format::LOST_BUFFER_FULL => "buffer_full",
        clrprof_format::LOST_WRITE_FAILED => "write_failed",
        clrprof_format::LOST_STOPPING => "stopping",
        clrprof_format::LOST_MAX_SIZE => "max_size",
        _ => "unknown",
    }
}

/// Names the errno of a failed trace write.
pub fn errno_text(errno: u64) -> String {
    match errno {
        28 => "ENOSPC (No space left on device)".into(),
        122 => "EDQUOT (Disk quota exceeded)".into(),
        5 => "EIO (Input/output error)".into(),
        27 => "EFBIG (File too large)".into(),
        30 => "EROFS (Read-only file system)".into(),
        n => format!("errno {n}"),
    }
}

#[derive(Debug, Default)]
pub struct Lost {
    /// Events lost, all reasons.
    pub events: u64,
    pub by_reason: BTreeMap<String, u64>,
    pub write_failures: Vec<WriteFailure>,
}

impl Lost {
    pub fn observe(&mut self, event: &Event<'_>) {
        match event {
            Event::Lost { count, reason } => {
                self.events += count;
                *self
                    .by_reason
                    .entry(lost_reason(*reason).into())
                    .or_default() += count;
            }
            Event::WriteFailed {
                errno,
                blocks,
                events,
            } => self.write_failures.push(WriteFailure {
                errno: *errno,
                error: errno_text(*errno),
                blocks: *blocks,
                events: *events,
            }),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lost_by_reason_and_write_failures() {
        let mut l = Lost::default();
        for e in [
            Event::Lost {
                count: 3,
                reason: clrprof_format::LOST_BUFFER_FULL,
            },
            Event::Lost {
                count: 4,
                reason: 0,
            },
            Event::Lost {
                count: 5,
                reason: clrprof_format::LOST_BUFFER_FULL,
            },
            Event::WriteFailed {
                errno: 28,
                blocks: 2,
                events: 40,
            },
        ] {
            l.observe(&e);
        }
        assert_eq!(l.events, 12);
        assert_eq!(
            l.by_reason.into_iter().collect::<Vec<_>>(),
            [("buffer_full".to_string(), 8), ("unknown".to_string(), 4)]
        );
        let w = &l.write_failures[0];
        assert_eq!(
            (w.errno, w.error.as_str(), w.blocks, w.events),
            (28, "ENOSPC (No space left on device)", 2, 40)
        );
        assert_eq!(errno_text(99), "errno 99");
    }
}
