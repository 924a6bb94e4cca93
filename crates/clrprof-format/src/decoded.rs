//! What a reader yields: one event with the thread of the block it was in. A leaf, so that
//! the clock converter and the reader both use it without importing each other.

use crate::events::Event;
use crate::phases::EltKind;

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

impl DecodedEvent<'_> {
    /// The event as a [`DecodedCall`] when it is an Enter, Leave or Tailcall.
    #[inline]
    pub fn call(&self) -> Option<DecodedCall> {
        let (kind, function, sp) = match self.event {
            Event::Enter { function, sp } => (EltKind::Enter, function, sp),
            Event::Leave { function, sp } => (EltKind::Leave, function, sp),
            Event::Tailcall { function, sp } => (EltKind::Tailcall, function, sp),
            _ => return None,
        };
        Some(DecodedCall {
            os_tid: self.os_tid,
            ts: self.ts,
            kind,
            function,
            sp,
        })
    }
}

/// An Enter, Leave or Tailcall as [`Events::for_each_split`](crate::Events::for_each_split)
/// hands it over: plain numbers, no drop, a third of a [`DecodedEvent`] (trace mode has
/// tens of millions of them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodedCall {
    pub os_tid: u64,
    pub ts: u64,
    pub kind: EltKind,
    pub function: u64,
    pub sp: u64,
}

impl DecodedCall {
    /// The same call as an event.
    #[inline]
    pub fn event(self) -> DecodedEvent<'static> {
        let (function, sp) = (self.function, self.sp);
        DecodedEvent {
            os_tid: self.os_tid,
            ts: self.ts,
            event: match self.kind {
                EltKind::Enter => Event::Enter { function, sp },
                EltKind::Leave => Event::Leave { function, sp },
                EltKind::Tailcall => Event::Tailcall { function, sp },
            },
        }
    }
}
