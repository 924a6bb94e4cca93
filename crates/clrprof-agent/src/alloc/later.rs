//! .NET 8 and 9: allocation samples' positions mapped off the allocating thread.
//!
//! `GCAllocationTick` is delivered inside the GC's allocator, where the runtime refuses
//! the IL map calls (`GetNativeCodeStartAddresses`, `GetCodeInfo4`,
//! `GetILToNativeMapping3` answer `CORPROF_E_UNSUPPORTED_CALL_SEQUENCE`: the thread may not
//! trigger a GC). So there the allocating thread only *reads* the maps the runtime's
//! threads share (no runtime call); a sample with a frame whose code version is not
//! mapped yet is recorded without positions and its frames' FunctionIDs and return
//! addresses are queued here. The agent's own thread (`clrprof-ilmap`) takes the queue
//! every [`PERIOD`], reads the missing maps into the shared ones (a later sample of the
//! same code finds them, and its stack is kept in the stack cache with them) and records
//! the sample's `AllocPositions` (kind 103, the sample's id: the reader pairs them by id,
//! whichever thread wrote it).
//!
//! Bounded: the queue holds at most [`MAX_SAMPLES`] samples and [`MAX_WORDS`] words of
//! frames between two rounds (two such buffers, swapped under a lock only tried by the
//! allocating thread, which never allocates or waits); a sample that finds it full or
//! busy keeps no positions and is counted (`queue_full`), and so is one queued after the
//! thread's last round (`left_at_end`): the trace's `AllocPositionStats` carries them, and
//! `clrprof report` says how many samples have no lines for it.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clrprof_format::Event;
use corprof::ProfilerInfo;

use crate::os::thread::NativeThread;
use crate::output::buffers::emit;
use crate::stackwalk::ilmap::IlMaps;

/// How often the thread maps what was queued.
const PERIOD: Duration = Duration::from_millis(10);
/// Samples queued between two rounds, at most.
const MAX_SAMPLES: usize = 1024;
/// Words of frames queued between two rounds (two per frame: FunctionID, address).
const MAX_WORDS: usize = 16 * 1024;

/// Samples waiting for their positions: (id, first word, frames) and the words.
struct Batch {
    samples: Vec<(u64, u32, u32)>,
    words: Vec<u64>,
}

impl Batch {
    fn new() -> Batch {
        Batch {
            samples: Vec::with_capacity(MAX_SAMPLES),
            words: Vec::with_capacity(MAX_WORDS),
        }
    }

    /// Queues a sample within the capacity reserved at the start (no allocation); false
    /// when it does not fit.
    fn push(&mut self, id: u64, frames: &[u64], addrs: &[u64]) -> bool {
        let need = frames.len() * 2;
        if self.samples.len() >= MAX_SAMPLES || self.words.len() + need > MAX_WORDS {
            return false;
        }
        self.samples
            .push((id, self.words.len() as u32, frames.len() as u32));
        for (&f, &a) in frames.iter().zip(addrs) {
            self.words.push(f);
            self.words.push(a);
        }
        true
    }

    fn clear(&mut self) {
        self.samples.clear();
        self.words.clear();
    }
}

/// The queue and its counters; part of the session's allocation state.
pub struct Later {
    inbox: Mutex<Batch>,
    /// Samples queued, and those whose positions were recorded from here.
    pub queued: AtomicU64,
    pub mapped: AtomicU64,
    /// Samples that needed a map and kept no positions because the queue was full or
    /// busy when they came.
    pub queue_full: AtomicU64,
    /// Samples queued after the thread's last round, kept without positions.
    pub left_at_end: AtomicU64,
}

impl Later {
    pub fn new() -> Later {
        Later {
            inbox: Mutex::new(Batch::new()),
            queued: AtomicU64::new(0),
            mapped: AtomicU64::new(0),
            queue_full: AtomicU64::new(0),
            left_at_end: AtomicU64::new(0),
        }
    }

    /// On the allocating thread: queues sample `id`'s frames and their addresses (each
    /// frame's return address), or counts it dropped. No allocation, no waiting.
    pub fn queue(&self, id: u64, frames: &[u64], addrs: &[u64]) {
        let queued = self
            .inbox
            .try_lock()
            .is_ok_and(|mut b| b.push(id, frames, addrs));
        let counter = if queued {
            &self.queued
        } else {
            &self.queue_full
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Samples queued and not mapped (after the thread's last round), counted.
    pub fn drop_rest(&self) {
        let mut b = self.inbox.lock().unwrap_or_else(|p| p.into_inner());
        self.left_at_end
            .fetch_add(b.samples.len() as u64, Ordering::Relaxed);
        b.clear();
    }

    /// The figures, as the trace's record (written at the end).
    pub fn stats(&self) -> Event<'static> {
        Event::AllocPositionStats {
            queued: self.queued.load(Ordering::Relaxed),
            mapped: self.mapped.load(Ordering::Relaxed),
            queue_full: self.queue_full.load(Ordering::Relaxed),
            left_at_end: self.left_at_end.load(Ordering::Relaxed),
        }
    }

    /// One round, on the agent's thread: takes the queue (swapped with `spare`, so the
    /// allocating threads' lock is held for a moment only), reads the maps it needs,
    /// records each sample's positions.
    fn round(
        &self,
        info: &ProfilerInfo,
        maps: &Mutex<IlMaps>,
        spare: &mut Batch,
        out: &mut Vec<u64>,
    ) {
        {
            let mut inbox = self.inbox.lock().unwrap_or_else(|p| p.into_inner());
            std::mem::swap(&mut *inbox, spare);
        }
        for &(id, start, n) in &spare.samples {
            let words = &spare.words[start as usize..(start + n * 2) as usize];
            out.clear();
            {
                let mut maps = maps.lock().unwrap_or_else(|p| p.into_inner());
                for fa in words.chunks_exact(2) {
                    let (f, addr) = (fa[0], fa[1]);
                    let p = (f != 0 && addr > 1)
                        .then(|| maps.position(info, f, addr - 1))
                        .flatten();
                    out.push(clrprof_format::position_item(p));
                }
                if let Some(e) = maps.stats.first_error
                    && !REFUSED_LOGGED.swap(true, Ordering::Relaxed)
                {
                    log!(
                        "source positions: the runtime refused an IL map call on the agent's own thread: {e}; those frames have no positions"
                    );
                }
            }
            if out.iter().any(|&p| p != 0) {
                emit(&Event::AllocPositions {
                    id,
                    positions: std::borrow::Cow::Borrowed(out),
                });
            }
            self.mapped.fetch_add(1, Ordering::Relaxed);
        }
        spare.clear();
    }
}

/// The refusal of an IL map call on the agent's thread was logged (once a process).
static REFUSED_LOGGED: AtomicBool = AtomicBool::new(false);

/// The thread that maps the queue.
pub struct Mapper {
    stop: Arc<AtomicBool>,
    thread: NativeThread,
}

impl Mapper {
    /// Starts the thread; `later` is the session's queue (`state` gives it each round:
    /// the session's allocation state outlives the thread, which `stop` joins).
    pub fn start(
        info: ProfilerInfo,
        maps: Arc<Mutex<IlMaps>>,
        later: fn() -> Option<&'static Later>,
    ) -> std::io::Result<Mapper> {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let thread = crate::os::thread::spawn("clrprof-ilmap", move || {
            let mut spare = Batch::new();
            let mut out = Vec::with_capacity(super::MAX_FRAMES);
            loop {
                // The last round runs after the stop was asked (the samples recorded
                // until then are mapped).
                let last = s.load(Ordering::Acquire);
                if let Some(l) = later() {
                    l.round(&info, &maps, &mut spare, &mut out);
                }
                if last {
                    return;
                }
                std::thread::sleep(PERIOD);
            }
        })?;
        Ok(Mapper { stop, thread })
    }

    /// A last round, then the thread ends (joined).
    pub fn stop(self) {
        self.stop.store(true, Ordering::Release);
        self.thread.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_queue_holds_what_fits_and_no_more() {
        let mut b = Batch::new();
        let (wcap, scap) = (b.words.capacity(), b.samples.capacity());
        assert!(b.push(7, &[1, 2], &[0x10, 0x20]));
        assert_eq!(b.samples, [(7, 0, 2)]);
        assert_eq!(b.words, [1, 0x10, 2, 0x20]);
        // A sample larger than what is left is refused whole.
        let big = vec![3u64; MAX_WORDS / 2];
        assert!(!b.push(8, &big, &big));
        // Samples up to the count.
        while b.push(9, &[1], &[2]) {}
        assert_eq!(b.samples.len(), MAX_SAMPLES);
        // Never grown past what was reserved (no allocation on the allocating thread).
        assert_eq!((b.words.capacity(), b.samples.capacity()), (wcap, scap));
        b.clear();
        assert!(b.push(10, &big[..MAX_WORDS / 2 - 1], &big[..MAX_WORDS / 2 - 1]));
        assert_eq!((b.words.capacity(), b.samples.capacity()), (wcap, scap));
    }

    #[test]
    fn a_busy_or_full_queue_counts_the_sample_dropped() {
        let l = Later::new();
        l.queue(1, &[1], &[2]);
        {
            let _held = l.inbox.lock().unwrap();
            l.queue(2, &[1], &[2]);
        }
        assert_eq!(l.queued.load(Ordering::Relaxed), 1);
        assert_eq!(l.queue_full.load(Ordering::Relaxed), 1);
        l.drop_rest();
        assert_eq!(l.left_at_end.load(Ordering::Relaxed), 1);
        assert_eq!(l.queue_full.load(Ordering::Relaxed), 1);
    }

    /// More samples than the queue holds between two rounds: those past its bound keep no
    /// positions and are counted `queue_full`, which the trace's record carries; after a
    /// round (the queue emptied) samples are queued again.
    #[test]
    fn a_full_queue_counts_what_it_refused_in_the_trace_record() {
        let l = Later::new();
        for id in 0..MAX_SAMPLES as u64 + 25 {
            l.queue(id, &[1, 2], &[0x10, 0x20]);
        }
        assert_eq!(
            l.stats(),
            Event::AllocPositionStats {
                queued: MAX_SAMPLES as u64,
                mapped: 0,
                queue_full: 25,
                left_at_end: 0,
            }
        );
        // Words fill too: samples of many frames are refused before the count is reached.
        let words = Later::new();
        let deep = vec![7u64; 400];
        let fits = (MAX_WORDS / (2 * deep.len())) as u64;
        for id in 0..fits + 3 {
            words.queue(id, &deep, &deep);
        }
        assert_eq!(words.queued.load(Ordering::Relaxed), fits);
        assert_eq!(words.queue_full.load(Ordering::Relaxed), 3);
        // The thread's round takes the queue (here: emptied, as `round` swaps it out).
        {
            let mut inbox = l.inbox.lock().unwrap();
            *inbox = Batch::new();
        }
        l.queue(99, &[1], &[2]);
        assert_eq!(l.queued.load(Ordering::Relaxed), MAX_SAMPLES as u64 + 1);
        l.drop_rest();
        let Event::AllocPositionStats {
            queue_full,
            left_at_end,
            ..
        } = l.stats()
        else {
            unreachable!()
        };
        assert_eq!((queue_full, left_at_end), (25, 1));
    }
}
