//! What a reader yields: one event with the thread of the block it was in. A leaf, so that
//! the clock converter and the reader both use it without importing each other.

use crate::events::Event;

/// One event with the thread of the block it was in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodedEvent<'a> {
    /// OS thread id of the block (0 = process-wide block).
    pub os_tid: u64,
    /// Absolute raw clock ticks (deltas resolved); see
    /// [`ClockConverter`](crate::ClockConverter).
    pub ts: u64,
    pub event: Event<'a>,
}
