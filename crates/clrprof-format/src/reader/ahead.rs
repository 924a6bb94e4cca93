//! Decoding on a second core, when `CLRPROF_READ_THREADS=2` asks for it
//! ([`decode_ahead`]): [`Events::for_each_ahead`] runs the event iterator (finding
//! blocks, checking their CRCs, decompressing, decoding each thread's compact call chain)
//! on a thread of its own and hands its events over in batches, through a bounded queue,
//! to the caller's thread, which does the rest (the call tree, the counts) meanwhile.
//!
//! The decoding thread runs the very iterator a single-threaded pass runs, in file order,
//! so the events, their order, the warnings and the counters are the same: what crosses
//! blocks (each thread's call chain, the block numbers seen, the end-of-file check) stays
//! on that one thread. Memory: at most [`QUEUE`] + 3 batches of [`BATCH`] events.

use std::sync::Mutex;
use std::sync::mpsc::sync_channel;

use super::events::Events;
use crate::decoded::DecodedEvent;

/// Events handed over at a time.
pub const BATCH: usize = 4096;
/// Decoded batches waiting for the caller's thread, at most.
pub const QUEUE: usize = 4;

/// The threads a pass may read on: `1` for the caller's only; `N` for up to N (never
/// more than this process may run on); unset, as many as it may run on. `2` also decodes
/// ahead on a second thread where a pass cannot share its work out by thread.
pub const READ_THREADS_ENV: &str = "CLRPROF_READ_THREADS";

/// Workers at most, whatever the machine.
const MAX_WORKERS: usize = 8;

/// How many threads a pass that shares its work out by trace thread may use: what
/// [`READ_THREADS_ENV`] asks (by default, every CPU), never more than the CPUs this
/// process may run on (its affinity mask and cgroup quota: under `taskset -c 0`, one) nor
/// [`MAX_WORKERS`].
pub fn read_workers() -> usize {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let asked = std::env::var(READ_THREADS_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or(usize::MAX);
    asked.min(cpus).clamp(1, MAX_WORKERS)
}

/// Whether a pass decodes on a second thread: only when `CLRPROF_READ_THREADS=2` asks and
/// this process may run on two CPUs or more (its affinity mask and cgroup quota: under
/// `taskset -c 0` it does not). One thread is the default: since the event loop calls its
/// consumer inline, decoding is about a third of a pass, and handing each event over
/// (112 bytes, stored by one thread and read by the other) costs more than that third on
/// the 2-core machine of docs/performance.md (`clrprof-bench read`: 0.61 s on one thread,
/// 0.71 s on two, for 28.2 M events).
pub fn decode_ahead() -> bool {
    if !std::env::var(READ_THREADS_ENV).is_ok_and(|v| v.trim() == "2") {
        return false;
    }
    std::thread::available_parallelism().is_ok_and(|n| n.get() >= 2)
}

impl<'a> Events<'_, 'a> {
    /// [`for_each`](Iterator::for_each), decoding on a second thread while `f` runs on
    /// this one when [`decode_ahead`] says so: the same events in the same order, and the
    /// same warnings and counters in the reader afterwards. If the thread cannot be
    /// started, decodes here.
    pub fn for_each_ahead(self, f: impl FnMut(DecodedEvent<'a>)) {
        if decode_ahead() {
            self.for_each_decoded_ahead(f);
        } else {
            self.for_each(f);
        }
    }

    /// [`for_each_split`](Self::for_each_split), decoding on a second thread when
    /// [`decode_ahead`] says so (the events then cross whole, and are split on this one).
    pub fn for_each_split_ahead(self, sink: &mut impl super::events::SplitSink<'a>) {
        if decode_ahead() {
            self.for_each_split_decoded_ahead(sink);
        } else {
            self.for_each_split(sink);
        }
    }

    /// [`for_each_split_ahead`](Self::for_each_split_ahead) on two threads whatever the
    /// machine.
    pub fn for_each_split_decoded_ahead(self, sink: &mut impl super::events::SplitSink<'a>) {
        self.for_each_decoded_ahead(|e| match e.call() {
            Some(c) => sink.call(c),
            None => sink.event(e),
        });
    }

    /// [`for_each_ahead`](Self::for_each_ahead) on two threads whatever the machine (on
    /// one CPU they take turns).
    pub fn for_each_decoded_ahead(self, mut f: impl FnMut(DecodedEvent<'a>)) {
        // The iterator goes to the decoding thread through this slot, so that it is still
        // here when the thread cannot be started.
        let slot = Mutex::new(Some(self));
        std::thread::scope(|s| {
            let (full_tx, full_rx) = sync_channel::<Vec<DecodedEvent<'a>>>(QUEUE);
            let (empty_tx, empty_rx) = sync_channel::<Vec<DecodedEvent<'a>>>(QUEUE + 2);
            let slot = &slot;
            let decoder = move || {
                let Some(events) = slot.lock().ok().and_then(|mut s| s.take()) else {
                    return;
                };
                let mut batch = Vec::with_capacity(BATCH);
                // False once the caller's thread stopped receiving (it panicked): the
                // rest is decoded and dropped, so that the reader's pass still ends.
                let mut open = true;
                events.for_each(|e| {
                    if !open {
                        return;
                    }
                    batch.push(e);
                    if batch.len() == BATCH {
                        let next = empty_rx
                            .try_recv()
                            .unwrap_or_else(|_| Vec::with_capacity(BATCH));
                        open = full_tx.send(std::mem::replace(&mut batch, next)).is_ok();
                    }
                });
                if open && !batch.is_empty() {
                    let _ = full_tx.send(batch);
                }
            };
            let started = std::thread::Builder::new()
                .name("clrprof-decode".into())
                .spawn_scoped(s, decoder)
                .is_ok();
            if !started {
                if let Some(events) = slot.lock().ok().and_then(|mut s| s.take()) {
                    events.for_each(&mut f);
                }
                return;
            }
            for mut batch in full_rx {
                for e in batch.drain(..) {
                    f(e);
                }
                let _ = empty_tx.try_send(batch);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_of_events_is_small() {
        // The queue's bound in bytes: (QUEUE + 3) batches.
        let bytes = (QUEUE + 3) * BATCH * std::mem::size_of::<DecodedEvent<'static>>();
        assert!(bytes <= 4 << 20, "{bytes} bytes");
    }
}
