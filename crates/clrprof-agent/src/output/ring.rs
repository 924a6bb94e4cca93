//! The per-thread event ring: a single-producer/single-consumer byte ring of 8-byte
//! words, written only by its thread and read only by the writer.
//!
//! The producer side is simple enough for the ELT fast path to write it from assembly
//! (`tracing/x64.rs`): check `wpos + 8 <= limit`, store one word at `base + (wpos & mask)`,
//! store `wpos + 8`. x86-64 stores are not reordered with each other, so the plain store
//! of `wpos` publishes the word. [`RingHead`]'s layout is that contract; a test pins it.
//!
//! The words are the file format's compact payload ([`clrprof_format::compact`], 1.3): a
//! call's Enter or Leave is one word (function index, caller-SP delta, low half of the
//! timestamp) relative to the thread's chain (`hi`, `sp` in the head); what does not fit
//! (a new high half of the timestamp, a far SP, a large index) takes the Rust slow path,
//! which writes a `TIME` word and a long two-word event. Other records are framed by a
//! header word and their absolute timestamp. Records and long events never wrap: a `PAD`
//! word ends the ring's last part.
//!
//! In trace mode the writer copies ring memory into the file as it is; otherwise it turns
//! words into ordinary records ([`Ring::drain`]).

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

use clrprof_format::EltKind;
use clrprof_format::compact::{self, Chain, PAD, TAG_OTHER, TIME, word};

/// Largest function index the mapper hands out (a long word holds 32 bits; `--args`
/// ids above it are pointers).
pub const MAX_INDEX: u32 = clrprof_format::units::TAG_VALUE_MAX;
const W: u64 = compact::WORD as u64;
/// Room an ELT event may take from the Rust side: `TIME`, a pad word, a long event.
const ELT_ROOM: u64 = 4 * W;

/// The fields the assembly fast path reads and writes, at fixed offsets.
#[repr(C)]
pub struct RingHead {
    /// Offset 0: bytes written so far. Owner stores, writer loads (Acquire).
    pub wpos: AtomicU64,
    /// Offset 8: owner-only bound for `wpos` (`rpos + size` as last seen). 0 while the
    /// owner is inside a Rust write, which sends a re-entrant fast path to the slow one.
    pub limit: Cell<u64>,
    /// Offset 16: `size - 1`.
    pub mask: u64,
    /// Offset 24: the ring memory (`size` bytes, 64-byte aligned).
    pub base: *mut u8,
    /// Offset 32, owner-only: the high half of the chain's timestamps (`u32::MAX` until
    /// the first `TIME` word, so the first event takes the slow path).
    pub hi: Cell<u32>,
    /// Offset 36, owner-only: the caller SP of the thread's last ELT event (low half).
    pub sp: Cell<u32>,
}

/// The writer's read position, on its own cache line so that draining does not steal
/// the line the producer writes on every event.
#[repr(C, align(64))]
pub struct ReadPos(pub AtomicU64);

/// `repr(C)` so that `head` comes first: a ring pointer is a [`RingHead`] pointer.
#[repr(C)]
pub struct Ring {
    pub head: RingHead,
    pub size: u64,
    pub rpos: ReadPos,
    /// Called (by the owner) when the ring passes half full: asks the writer to drain
    /// while there is still room, so the owner rarely has to wait.
    wake: fn(),
    /// Writer-only: the decoding chain of [`drain`](Ring::drain).
    drain_chain: Cell<Chain>,
}

/// Why a write did not happen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Full {
    /// No room now (the caller decides whether to wait).
    NoRoom,
    /// The record can never fit this ring.
    TooLarge,
}

impl Ring {
    /// A ring of at least `bytes` (rounded up to a power of two, at least 4 KiB). `wake`
    /// is called by the owner each time the ring passes half full.
    pub fn new(bytes: usize, wake: fn()) -> Option<Ring> {
        let size = bytes.max(4096).checked_next_power_of_two()?;
        // Own pages, zeroed and page-aligned (more than the 64 the units need): see os/pages.rs.
        let base = crate::os::pages::map(size)?.as_ptr();
        Some(Ring {
            head: RingHead {
                wpos: AtomicU64::new(0),
                limit: Cell::new(size as u64 / 2),
                mask: size as u64 - 1,
                base,
                hi: Cell::new(u32::MAX),
                sp: Cell::new(0),
            },
            size: size as u64,
            rpos: ReadPos(AtomicU64::new(0)),
            wake,
            drain_chain: Cell::new(Chain::default()),
        })
    }

    /// Owner: takes the write bound, marking the ring busy. `None` if already busy
    /// (re-entered).
    #[inline]
    pub fn enter(&self) -> Option<u64> {
        let lim = self.head.limit.replace(0);
        (lim != 0).then_some(lim)
    }

    /// Owner: gives the (possibly refreshed) bound back.
    #[inline]
    pub fn leave(&self, limit: u64) {
        self.head.limit.set(limit);
    }

    /// Owner: a new bound for a write that must reach `end`, after the writer's
    /// progress. Below half full the bound is the half-way mark, so the owner comes back
    /// here when it passes it; past half full the writer is woken and the bound is the
    /// ring's end. The writer thus drains while the owner fills the other half.
    #[inline]
    pub fn refreshed_limit(&self, end: u64) -> u64 {
        let rpos = self.rpos.0.load(Ordering::Acquire);
        let half = rpos + self.size / 2;
        if end <= half {
            half
        } else {
            (self.wake)();
            rpos + self.size
        }
    }

    /// Owner, between [`enter`](Ring::enter) and [`leave`](Ring::leave): writes one ELT
    /// event as a long word (preceded by a `TIME` word when the high half of the
    /// timestamp changed or the bound was refreshed, so the chain is restated at least
    /// every half ring) if `*limit` allows. The fast path writes the short words.
    #[inline]
    pub fn try_write_elt(
        &self,
        limit: &mut u64,
        ts: u64,
        kind: EltKind,
        index: u32,
        sp: u32,
    ) -> Result<(), Full> {
        let pos = self.head.wpos.load(Ordering::Relaxed);
        let hi = (ts >> 32) as u32;
        let mut time = hi != self.head.hi.get();
        if pos + ELT_ROOM > *limit {
            *limit = self.refreshed_limit(pos + ELT_ROOM);
            if pos + ELT_ROOM > *limit {
                return Err(Full::NoRoom);
            }
            time = true;
        }
        let mut at = pos;
        // SAFETY: (A4) every word written lies in [pos, pos + ELT_ROOM), inside the bound
        // checked above, at 8-aligned offsets `at & mask` inside the ring, which the writer
        // does not read until wpos says so.
        unsafe {
            if time {
                self.put_word(at, word(TAG_OTHER | TIME, hi));
                at += W;
            }
            if (at & self.head.mask) + 2 * W > self.size {
                self.put_word(at, word(TAG_OTHER | PAD, 0));
                at += W;
            }
            self.put_word(at, word(TAG_OTHER | compact::long_value(kind), ts as u32));
            self.put_word(at + W, word(sp, index));
        }
        self.head.hi.set(hi);
        self.head.sp.set(sp);
        self.head.wpos.store(at + 2 * W, Ordering::Release);
        Ok(())
    }

    /// Owner, between `enter` and `leave`: writes one non-ELT record (encoded with a zero
    /// timestamp) if `*limit` allows, padding to the ring's end when it would wrap.
    pub fn try_write_record(&self, limit: &mut u64, ts: u64, record: &[u8]) -> Result<(), Full> {
        self.try_write_record_parts(limit, ts, record, &[])
    }

    /// [`try_write_record`](Self::try_write_record) of the record `head` then `tail`,
    /// copied into the ring without joining them first.
    pub fn try_write_record_parts(
        &self,
        limit: &mut u64,
        ts: u64,
        head: &[u8],
        tail: &[u8],
    ) -> Result<(), Full> {
        let len = head.len() + tail.len();
        let at = self.try_reserve_record(limit, len)?;
        // SAFETY: (A4) the reservation just made, for `len` bytes; the slice is dropped
        // before the commit.
        let body = unsafe { self.record_body(at, len) };
        body[..head.len()].copy_from_slice(head);
        body[head.len()..].copy_from_slice(tail);
        // SAFETY: (A4) the same reservation, `len` bytes written.
        unsafe { self.commit_record(at, len, ts) };
        Ok(())
    }

    /// Whether a record of `len` bytes can ever be written (at most half the ring).
    #[inline]
    pub fn fits_record(&self, len: usize) -> bool {
        compact::words_for_record(len) as u64 * W <= self.size / 2
            && (len as u64) < u64::from(compact::RECORD_LEN_LIMIT)
    }

    /// Owner, between `enter` and `leave`: room for one record of at most `max_len`
    /// bytes, contiguous (a `PAD` word first when it would wrap), to be written in place
    /// through [`record_body`](Self::record_body) and published by
    /// [`commit_record`](Self::commit_record), if `*limit` allows. Returns the record's
    /// position. Nothing is published until the commit: a reservation not committed is
    /// simply written over by the next record.
    #[inline(always)]
    pub fn try_reserve_record(&self, limit: &mut u64, max_len: usize) -> Result<u64, Full> {
        if !self.fits_record(max_len) {
            return Err(Full::TooLarge);
        }
        let words = compact::words_for_record(max_len) as u64;
        let pos = self.head.wpos.load(Ordering::Relaxed);
        let off = pos & self.head.mask;
        let pad = if off + words * W > self.size {
            self.size - off
        } else {
            0
        };
        let need = pad + words * W;
        if pos + need > *limit {
            *limit = self.refreshed_limit(pos + need);
            if pos + need > *limit {
                return Err(Full::NoRoom);
            }
        }
        if pad > 0 {
            // SAFETY: (A4) the padding word lies inside the room reserved above, at `pos`
            // (8-aligned), which the writer does not read until wpos says so.
            unsafe { self.put_word(pos, word(TAG_OTHER | PAD, 0)) };
        }
        Ok(pos + pad)
    }

    /// The body of the record reserved at `at` ([`try_reserve_record`]
    /// (Self::try_reserve_record)): its `max_len` bytes, for the owner to write before
    /// [`commit_record`](Self::commit_record).
    ///
    /// # Safety
    /// `at` and `max_len` are those of a reservation of this ring made since the last
    /// write, and the slice is dropped before any other write or the commit.
    #[inline]
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn record_body(&self, at: u64, max_len: usize) -> &mut [u8] {
        // SAFETY: (A4) the reservation holds `2 + ceil(max_len / 8)` words from `at`, inside
        // the ring without wrapping and inside `[wpos, limit)`, which only the owner writes
        // and the writer does not read until wpos says so; ring pages are initialised
        // (zeroed when mapped), so any byte of them is a valid `u8`.
        unsafe {
            let p = self.head.base.add(((at + 2 * W) & self.head.mask) as usize);
            std::slice::from_raw_parts_mut(p, max_len)
        }
    }

    /// Publishes the record reserved at `at` whose first `len` body bytes are written,
    /// with the timestamp `ts` (read by the caller before it encoded the record, as the
    /// ELT fast path reads its clock first: the read's latency then overlaps the
    /// encoding instead of adding to it).
    ///
    /// # Safety
    /// `at` is a reservation of this ring made since the last write, for at least `len`
    /// bytes.
    #[inline(always)]
    pub unsafe fn commit_record(&self, at: u64, len: usize, ts: u64) {
        let words = compact::words_for_record(len) as u64;
        // SAFETY: (A4) both words lie at the start of the reservation (caller's contract),
        // 8-aligned, unpublished until the wpos store below.
        unsafe {
            self.put_word(at, word(TAG_OTHER | len as u32, 0));
            self.put_word(at + W, ts);
        }
        self.head.wpos.store(at + words * W, Ordering::Release);
    }

    /// # Safety
    /// `pos & mask` must be owned by the producer (between wpos and limit).
    #[inline(always)]
    unsafe fn put_word(&self, pos: u64, w: u64) {
        // SAFETY: (A4) per the contract, 8 writable, 8-aligned bytes.
        unsafe {
            let p = self.head.base.add((pos & self.head.mask) as usize);
            (p as *mut u64).write(w.to_le());
        }
    }

    /// Writer: the words published since the last [`consume`](Ring::consume), as up to
    /// two slices (the second when they wrap around the ring's end).
    pub fn readable(&self) -> (&[u8], &[u8]) {
        let w = self.head.wpos.load(Ordering::Acquire);
        let r = self.rpos.0.load(Ordering::Relaxed);
        let (off, len) = ((r & self.head.mask) as usize, (w - r) as usize);
        let first = len.min(self.size as usize - off);
        // SAFETY: (A4) [r, w) was published by the producer (Acquire above) and is not written
        // again until rpos moves past it; both ranges lie inside the allocation.
        unsafe {
            (
                std::slice::from_raw_parts(self.head.base.add(off), first),
                std::slice::from_raw_parts(self.head.base, len - first),
            )
        }
    }

    /// Writer: gives `bytes` (from the start of what [`readable`](Ring::readable)
    /// returned) back to the producer.
    pub fn consume(&self, bytes: usize) {
        let r = self.rpos.0.load(Ordering::Relaxed);
        self.rpos.0.store(r + bytes as u64, Ordering::Release);
    }

    /// Writer: turns everything published since the last call into trace records
    /// appended to `out`, advancing `running_ts` over their timestamps. Returns the
    /// number of records.
    pub fn drain(&self, out: &mut Vec<u8>, running_ts: &mut u64) -> u32 {
        let (a, b) = self.readable();
        let mut count = 0;
        let mut chain = self.drain_chain.get();
        for part in [a, b] {
            // Our own words are well formed; a malformed one (a bug) ends the part.
            count += compact::to_records(part, &mut chain, running_ts, out).unwrap_or(0);
        }
        self.drain_chain.set(chain);
        self.consume(a.len() + b.len());
        count
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        if let Some(base) = std::ptr::NonNull::new(self.head.base) {
            // SAFETY: (A5) `base` came from pages::map(size) in `new` and is unmapped once;
            // the ring (its only user) is being dropped.
            unsafe { crate::os::pages::unmap(base, self.size as usize) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clrprof_format::{Event, Records};
    use std::mem::offset_of;

    /// Offsets the assembly (tracing/x64.rs) relies on.
    const OFF_WPOS: usize = 0;
    const OFF_LIMIT: usize = 8;
    const OFF_MASK: usize = 16;
    const OFF_BASE: usize = 24;
    const OFF_HI: usize = 32;
    const OFF_SP: usize = 36;

    #[test]
    fn head_layout_is_what_the_assembly_reads() {
        assert_eq!(offset_of!(RingHead, wpos), OFF_WPOS);
        assert_eq!(offset_of!(RingHead, limit), OFF_LIMIT);
        assert_eq!(offset_of!(RingHead, mask), OFF_MASK);
        assert_eq!(offset_of!(RingHead, base), OFF_BASE);
        assert_eq!(offset_of!(RingHead, hi), OFF_HI);
        assert_eq!(offset_of!(RingHead, sp), OFF_SP);
        assert_eq!(offset_of!(Ring, head), 0);
        assert_eq!(offset_of!(crate::output::slot::Slot, ring), 0);
    }

    fn decode(bytes: &[u8], base: u64) -> Vec<(u64, Event<'static>)> {
        Records::new(bytes, base)
            .map(|r| {
                let r = r.unwrap();
                (r.ts, r.event.into_owned())
            })
            .collect()
    }

    #[test]
    fn elt_units_and_records_come_out_in_order_across_wraps() {
        let ring = Ring::new(4096, || ()).unwrap();
        let mut out = Vec::new();
        let mut running = 1000;
        let mut want = Vec::new();
        let mut ts = 1000u64;
        for round in 0..50u64 {
            let mut lim = ring.enter().unwrap();
            for i in 0..40u32 {
                ts += 7;
                if i % 13 == 5 {
                    let ev = Event::ThreadName {
                        thread: round,
                        name: "x".repeat((i * 3) as usize).into(),
                    };
                    let mut rec = Vec::new();
                    clrprof_format::encode(&mut rec, 0, &ev);
                    ring.try_write_record(&mut lim, ts, &rec).unwrap();
                    want.push((ts, ev));
                } else {
                    let kind = [EltKind::Enter, EltKind::Leave, EltKind::Tailcall][i as usize % 3];
                    ring.try_write_elt(&mut lim, ts, kind, i + 1, 0xdead_0000 + i)
                        .unwrap();
                    let (function, sp) = (u64::from(i + 1), u64::from(0xdead_0000 + i));
                    want.push((
                        ts,
                        match kind {
                            EltKind::Enter => Event::Enter { function, sp },
                            EltKind::Leave => Event::Leave { function, sp },
                            EltKind::Tailcall => Event::Tailcall { function, sp },
                        },
                    ));
                }
            }
            ring.leave(lim);
            let before = out.len();
            let base = running;
            let n = ring.drain(&mut out, &mut running);
            let got = decode(&out[before..], base);
            assert_eq!(n as usize, got.len());
        }
        let got = decode(&out, 1000);
        assert_eq!(got, want);
        assert_eq!(running, ts);
    }

    #[test]
    fn full_ring_refuses_until_drained() {
        let ring = Ring::new(4096, || ()).unwrap();
        let mut lim = ring.enter().unwrap();
        let mut written = 0;
        while ring
            .try_write_elt(&mut lim, written, EltKind::Enter, 1, 0)
            .is_ok()
        {
            written += 1;
        }
        assert!(written >= 200, "{written} long events in 4 KiB");
        assert_eq!(
            ring.try_write_record(&mut lim, 1, &[0u8; 3000]),
            Err(Full::TooLarge)
        );
        assert!(ring.enter().is_none(), "busy while entered");
        ring.leave(lim);
        let (mut out, mut ts) = (Vec::new(), 0);
        assert_eq!(u64::from(ring.drain(&mut out, &mut ts)), written);
        let mut lim = ring.enter().unwrap();
        ring.try_write_elt(&mut lim, 999, EltKind::Enter, 1, 0)
            .unwrap();
        ring.leave(lim);
    }
}
