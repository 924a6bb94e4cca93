//! The background writer: the only thread that writes the trace file. Every `flush_ms` (or
//! sooner when a thread waits for room) it drains each thread's ring: in events and sample
//! mode the ring's records become one record block; in trace mode (`raw_units`) the ring's
//! 8-byte words are copied as they are into compact blocks (format 1.3), which the reader
//! turns into `Enter`/`Leave`/`Tailcall` records. Each block goes out with a single
//! `write`, so a killed target leaves every block written so far intact. The writer also
//! keeps its own block of process-wide records (periodic clock-sync points and, at the
//! end, the `Lost` counters). Its first block holds two clock-sync points
//! [`CALIBRATION`] apart, so the tick rate is known whenever the trace ends; its last
//! block holds only the `TraceEnd` record, which a killed target's trace lacks. Blocks
//! are numbered in the order written (a failed write leaves a gap), so a reader finds
//! lost and repeated blocks.

use std::fs::File;
use std::io;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use clrprof_format::{Event, Header};

use super::buffers::{self, Registration};
use crate::os::clock;

/// The session's writer thread, to wake; set by the writer itself, freed between sessions.
static WRITER: super::session_cell::SessionCell<Thread> = super::session_cell::SessionCell::new();

/// Time between the first two clock-sync points, written before any other block: the
/// TSC's rate from them is within a few parts per million (each point is read within
/// ~50 ns), so a trace cut short before the next sync point (1 s) still has its times.
const CALIBRATION: Duration = Duration::from_millis(10);
/// Bytes of one trace-mode unit (an event, or a part of a larger record).
const UNIT_BYTES: usize = clrprof_format::units::UNIT;
static WAKE_PENDING: AtomicBool = AtomicBool::new(false);

/// At a session's start: no wake-up is pending for a writer that does not exist yet.
pub fn reset_for_session() {
    WAKE_PENDING.store(false, Ordering::Release);
}

/// Between sessions: the last writer's handle goes.
pub fn release_at_detach() {
    WRITER.clear();
}

/// Asks the writer to drain now (called by a thread waiting for room).
pub fn wake() {
    if !WAKE_PENDING.swap(true, Ordering::AcqRel)
        && let Some(t) = WRITER.get()
    {
        t.unpark();
    }
}

/// Counters reported at the end of the trace.
#[derive(Debug, Default, Clone, Copy)]
pub struct Stats {
    pub blocks: u64,
    pub bytes: u64,
    pub lost: u64,
    pub write_errors: u64,
    /// Events in blocks that could not be written (part of `lost`).
    pub write_lost: u64,
    /// The first write error's errno (28: ENOSPC).
    pub write_errno: Option<i32>,
    /// `--max-size`: events left out once the trace reached it (part of `lost`).
    pub capped: u64,
}

struct Shared {
    stop: AtomicBool,
    blocks: AtomicU64,
    bytes: AtomicU64,
}

pub struct Writer {
    handle: Option<crate::os::thread::NativeThread>,
    shared: Arc<Shared>,
    result: Arc<Mutex<Option<Stats>>>,
}

impl Writer {
    /// Writes the header and starts the writer thread.
    pub fn start(
        mut file: File,
        header: &Header,
        flush: Duration,
        compress: bool,
        raw_units: bool,
        max_bytes: Option<u64>,
    ) -> io::Result<Writer> {
        clrprof_format::write_file_header(&mut file, header)?;
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            blocks: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
        });
        let s = shared.clone();
        let result = Arc::new(Mutex::new(None));
        let r = result.clone();
        let handle = crate::os::thread::spawn("clrprof-writer", move || {
            WRITER.set(thread::current());
            let stats = run(file, flush, compress, raw_units, max_bytes, &s);
            if let Ok(mut g) = r.lock() {
                *g = Some(stats);
            }
        })?;
        buffers::set_accepting(true);
        Ok(Writer {
            handle: Some(handle),
            shared,
            result,
        })
    }

    /// Stops accepting events, drains everything, writes the end counters and closes the file.
    pub fn stop(mut self) -> Stats {
        self.stop_inner()
    }

    fn stop_inner(&mut self) -> Stats {
        buffers::set_accepting(false);
        self.shared.stop.store(true, Ordering::Release);
        match self.handle.take() {
            Some(h) => {
                if let Some(t) = WRITER.get() {
                    t.unpark();
                }
                h.join();
                self.result
                    .lock()
                    .ok()
                    .and_then(|mut r| r.take())
                    .unwrap_or_default()
            }
            None => Stats::default(),
        }
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        self.stop_inner();
    }
}

/// A registered thread stream and the timestamp its next block starts from.
struct Stream {
    reg: Registration,
    /// Absolute timestamp of the last record drained (records carry deltas).
    running_ts: u64,
    /// `--counts`: the total of the thread's last `CallCounts` record (None before the
    /// first).
    counts_written: Option<u64>,
}

struct Drain {
    /// Write the rings' units as they are (trace mode: the writer must keep up with tens
    /// of millions of events a second) instead of encoding records.
    raw_units: bool,
    /// Compression buffer for unit blocks.
    lz4: Vec<u8>,
    regs: Vec<Stream>,
    scratch: Vec<u8>,
    /// The writer's own records (clock syncs, loss counters) and their delta chain.
    process_block: Vec<u8>,
    own_last_ts: u64,
    own_base_ts: u64,
    /// Running timestamp of the fallback stream.
    fallback_ts: u64,
    /// The next block's number.
    seq: u64,
    stats: Stats,
    /// `--max-size`: threads' blocks stop being written once this many bytes of events
    /// were (the writer's own records, and the end, still are).
    max_bytes: u64,
    /// Events left out since.
    capped: u64,
}

fn run(
    mut file: File,
    flush: Duration,
    compress: bool,
    raw_units: bool,
    max_bytes: Option<u64>,
    shared: &Shared,
) -> Stats {
    let mut d = Drain {
        max_bytes: max_bytes.unwrap_or(u64::MAX),
        capped: 0,
        raw_units,
        lz4: Vec::new(),
        regs: Vec::new(),
        scratch: Vec::with_capacity(1 << 20),
        process_block: Vec::with_capacity(4096),
        own_last_ts: 0,
        own_base_ts: 0,
        fallback_ts: 0,
        seq: 0,
        stats: Stats::default(),
    };
    d.clock_sync();
    if clock::uses_tsc() {
        // Events wait meanwhile (or are dropped in drop mode) only if a ring fills.
        let start = Instant::now();
        while let Some(left) = CALIBRATION.checked_sub(start.elapsed()) {
            thread::park_timeout(left);
        }
        d.clock_sync();
    }
    d.write_process_block(&mut file, compress);
    let mut last_sync = Instant::now();
    loop {
        let stopping = shared.stop.load(Ordering::Acquire);
        d.register();
        d.drain_all(&mut file, compress);
        if last_sync.elapsed() >= Duration::from_secs(1) {
            d.clock_sync();
            d.all_counts();
            last_sync = Instant::now();
        }
        d.flush_process_block(&mut file, compress);
        shared.blocks.store(d.stats.blocks, Ordering::Relaxed);
        shared.bytes.store(d.stats.bytes, Ordering::Relaxed);
        if stopping {
            break;
        }
        WAKE_PENDING.store(false, Ordering::Release);
        thread::park_timeout(flush);
    }
    // Final pass: anything registered or written while we were stopping.
    d.register();
    d.drain_all(&mut file, compress);
    d.all_counts();
    // `stats.lost` holds retired threads' buffer losses and the write failures.
    let in_buffers: u64 = buffers::lost_global()
        + d.regs
            .iter()
            .map(|r| r.reg.slot.lost.load(Ordering::Relaxed))
            .sum::<u64>()
        + d.stats.lost.saturating_sub(d.stats.write_lost);
    d.stats.lost = in_buffers + d.stats.write_lost;
    if in_buffers > 0 {
        d.record(&Event::Lost {
            count: in_buffers,
            reason: if buffers::drop_when_full() {
                clrprof_format::LOST_BUFFER_FULL
            } else {
                clrprof_format::LOST_STOPPING
            },
        });
    }
    if d.capped > 0 {
        d.stats.lost += d.capped;
        d.stats.capped = d.capped;
        d.record(&Event::Lost {
            count: d.capped,
            reason: clrprof_format::LOST_MAX_SIZE,
        });
    }
    if d.stats.write_errors > 0 {
        // Written now if the disk has room again (a temporary ENOSPC); the agent's log
        // names the error either way.
        d.record(&Event::WriteFailed {
            errno: d.stats.write_errno.unwrap_or(0) as u64,
            blocks: d.stats.write_errors,
            events: d.stats.write_lost,
        });
        d.record(&Event::Lost {
            count: d.stats.write_lost,
            reason: clrprof_format::LOST_WRITE_FAILED,
        });
    }
    d.clock_sync();
    d.flush_process_block(&mut file, compress);
    // Last: the record that says the trace is complete, alone in the last block.
    d.record(&Event::TraceEnd { blocks: d.seq });
    d.write_process_block(&mut file, compress);
    d.stats
}

impl Drain {
    fn register(&mut self) {
        for reg in buffers::take_registrations() {
            self.regs.push(Stream {
                reg,
                running_ts: 0,
                counts_written: None,
            });
        }
    }

    fn record_at(&mut self, ts: u64, ev: &Event<'_>) {
        let delta = ts.wrapping_sub(self.own_last_ts);
        self.own_last_ts = ts;
        clrprof_format::encode(&mut self.process_block, delta, ev);
    }

    fn record(&mut self, ev: &Event<'_>) {
        self.record_at(clock::ticks(), ev);
    }

    /// `--counts`: one `CallCounts` record of a thread's cumulative counts, when they
    /// changed since its last one (`written`: that one's total). Every figure of a table
    /// only grows, so their sum changes whenever the table does: an idle thread's table
    /// is not written again, and the assembly fast path needs no dirty flag.
    fn counts_of(&mut self, slot: &super::slot::Slot, written: &mut Option<u64>) {
        let Some(table) = slot.counts.get() else {
            return;
        };
        let mut edges = Vec::new();
        let (missed, deep) = table.snapshot(&mut edges);
        let total = edges
            .chunks_exact(3)
            .fold(missed.wrapping_add(deep), |t, e| t.wrapping_add(e[2]));
        if *written == Some(total) {
            return;
        }
        *written = Some(total);
        self.record(&Event::CallCounts {
            os_tid: slot.os_tid,
            missed,
            deep,
            edges: edges.into(),
        });
    }

    /// `--counts`: every live thread's counts that changed (about once a second and at
    /// the end).
    fn all_counts(&mut self) {
        for i in 0..self.regs.len() {
            let slot = self.regs[i].reg.slot.clone();
            let mut written = self.regs[i].counts_written;
            self.counts_of(&slot, &mut written);
            self.regs[i].counts_written = written;
        }
    }

    fn clock_sync(&mut self) {
        let (ticks, mono_ns, unix_ns) = clock::sync_point();
        self.record_at(ticks, &Event::ClockSync { mono_ns, unix_ns });
    }

    /// Writes the writer's own records, if any, as one block.
    fn write_process_block(&mut self, file: &mut File, compress: bool) {
        if !self.process_block.is_empty() {
            let block = std::mem::take(&mut self.process_block);
            let count = count_records(&block, &mut 0);
            self.write(file, 0, self.own_base_ts, count, &block, compress);
            self.own_base_ts = self.own_last_ts;
            self.process_block = block;
            self.process_block.clear();
        }
    }

    /// Writes the writer's own records and those of threads without a buffer.
    fn flush_process_block(&mut self, file: &mut File, compress: bool) {
        self.write_process_block(file, compress);
        self.scratch.clear();
        buffers::take_fallback(&mut self.scratch);
        if !self.scratch.is_empty() {
            let block = std::mem::take(&mut self.scratch);
            let base = self.fallback_ts;
            let count = count_records(&block, &mut self.fallback_ts);
            self.write(file, 0, base, count, &block, compress);
            self.scratch = block;
        }
    }

    /// Forgets drained stream `i` of a thread that ended: its last counts (`--counts`, in
    /// trace and sample mode alike: the table goes with the slot) and its losses stay.
    fn retire(&mut self, i: usize) {
        let mut r = self.regs.swap_remove(i);
        self.counts_of(&r.reg.slot, &mut r.counts_written);
        self.stats.lost += r.reg.slot.lost.load(Ordering::Relaxed);
    }

    fn drain_all(&mut self, file: &mut File, compress: bool) {
        let mut i = 0;
        while i < self.regs.len() {
            // Read `retired` before draining: a retired slot gets no more writes, so once
            // drained after seeing the flag it is empty for good.
            let retired = self.regs[i].reg.slot.retired.load(Ordering::Acquire);
            let os_tid = self.regs[i].reg.slot.os_tid;
            if self.raw_units {
                self.write_units(file, i, os_tid, compress);
                if retired {
                    self.retire(i);
                } else {
                    i += 1;
                }
                continue;
            }
            self.scratch.clear();
            let stream = &mut self.regs[i];
            let base = stream.running_ts;
            let count = stream
                .reg
                .slot
                .ring
                .drain(&mut self.scratch, &mut stream.running_ts);
            if count > 0 && self.over_max_size(u64::from(count)) {
                // Drained and left out: the ring goes on taking events.
            } else if count > 0 {
                let block = std::mem::take(&mut self.scratch);
                self.write(file, os_tid, base, count, &block, compress);
                self.scratch = block;
            }
            if retired {
                self.retire(i);
            } else {
                i += 1;
            }
        }
    }

    /// Copies stream `i`'s published words into the file as compact blocks (two when they
    /// wrap around the ring's end), then hands the room back.
    fn write_units(&mut self, file: &mut File, i: usize, os_tid: u64, compress: bool) {
        let slot = self.regs[i].reg.slot.clone();
        let (a, b) = slot.ring.readable();
        for part in [a, b] {
            if part.is_empty() || self.over_max_size((part.len() / UNIT_BYTES) as u64) {
                continue;
            }
            let seq = self.next_seq();
            match clrprof_format::write_compact_block(
                file,
                &mut self.lz4,
                seq,
                os_tid,
                part,
                compress,
            ) {
                Ok(_) => {
                    self.stats.blocks += 1;
                    self.stats.bytes += part.len() as u64;
                }
                Err(e) => self.write_failed(&e, (part.len() / 8) as u64),
            }
        }
        slot.ring.consume(a.len() + b.len());
    }

    fn write(
        &mut self,
        file: &mut File,
        os_tid: u64,
        base_ts: u64,
        count: u32,
        records: &[u8],
        compress: bool,
    ) {
        let seq = self.next_seq();
        match clrprof_format::write_block(file, seq, os_tid, base_ts, count, records, compress) {
            Ok(()) => {
                self.stats.blocks += 1;
                self.stats.bytes += records.len() as u64;
            }
            Err(e) => self.write_failed(&e, u64::from(count)),
        }
    }

    /// `--max-size`: whether the threads' blocks are past the bound, counting `events`
    /// as left out when they are.
    fn over_max_size(&mut self, events: u64) -> bool {
        if self.stats.bytes < self.max_bytes {
            return false;
        }
        self.capped += events.max(1);
        true
    }

    /// The number of the block about to be written (used even if the write fails, so the
    /// reader sees the gap).
    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq - 1
    }

    fn write_failed(&mut self, e: &io::Error, events: u64) {
        self.stats.write_errors += 1;
        self.stats.lost += events;
        self.stats.write_lost += events;
        if self.stats.write_errno.is_none() {
            self.stats.write_errno = Some(e.raw_os_error().unwrap_or(0));
        }
    }
}

/// Counts whole records and advances `running_ts` over their timestamp deltas.
fn count_records(bytes: &[u8], running_ts: &mut u64) -> u32 {
    clrprof_format::count_records_with_ts(bytes, running_ts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_records() {
        let mut buf = Vec::new();
        clrprof_format::encode(&mut buf, 5, &Event::ThreadCreated { thread: 1 });
        clrprof_format::encode(&mut buf, 300, &Event::ThreadDestroyed { thread: 1 });
        let mut ts = 1000;
        assert_eq!(count_records(&buf, &mut ts), 2);
        assert_eq!(ts, 1305);
        assert_eq!(count_records(&[], &mut ts), 0);
    }
}
