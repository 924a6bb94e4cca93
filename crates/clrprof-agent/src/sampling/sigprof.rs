//! Signal-driven stack capture (Linux x86_64): the sampler sends SIGPROF to each managed
//! thread with `rt_tgsigqueueinfo`; the handler, running on that thread, records RIP, RSP
//! and RBP from the signal context and copies the top of the stack into a preallocated
//! slot with one `process_vm_readv` on our own process (which reports an unmapped page
//! as a short read instead of faulting). The walk and the symbolisation happen afterwards
//! on the sampler thread (`fpwalk.rs`, GetFunctionFromIP), so no thread is ever stopped
//! for longer than its own handler (a few microseconds), and nothing waits for a safe
//! point: this is what makes sampling cheap where SuspendRuntime is not.
//!
//! Each slot stays armed across ticks until its handler runs ([`SignalSampler::arm`]):
//! the sampler never waits for a handler at a tick. A thread whose signal is still
//! outstanding (it has had no core since, or blocks SIGPROF) is neither waited for nor
//! signalled again (a second SIGPROF to a thread whose first is pending is dropped by the
//! kernel); its capture is collected at whichever later tick finds it done. A slot whose
//! signal can no longer arrive (its thread exited, or the signal was merged into another
//! SIGPROF) is taken back by [`SignalSampler::reclaim_stale`] and counted.
//!
//! When the sampler knows the thread's own stack mapping (`stackmap.rs`) and the handler
//! finds itself on that thread (same thread pointer) with RSP inside it, the copy is a
//! plain `memcpy` up to at most the mapping's end (mapped for as long as the thread
//! lives), without the system call.
//!
//! The handler is async-signal-safe: atomics, at most three syscalls (`process_vm_readv`
//! unless the copy is a `memcpy`, its own thread's CPU clock, and a futex wake when the
//! sampler sleeps on a capture), no allocation, no lock, errno saved and restored. A slot's
//! phase and sequence number are one atomic word, so a signal that arrives late (after its
//! slot was taken back or armed again for another thread) carries a sequence number that
//! no longer matches and is ignored: no handler can write a slot armed for another signal.

use std::ffi::c_void;
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use super::stackmap::Bounds;
use crate::os::{clock, futex, process, signal};
use crate::stackwalk::fpwalk::Captured;

/// The signal used. CoreCLR itself uses SIGRTMIN (activation injection) and the fault
/// signals, not SIGPROF.
const SIGNAL: libc::c_int = libc::SIGPROF;

/// Captures that can be outstanding at once (one slot each); more threads to signal at
/// one tick than free slots wait for a later tick (counted).
pub const SLOT_COUNT: usize = 64;

/// A slot's phase, the low 2 bits of its state word (the sequence number of the signal it
/// is armed for is the rest): IDLE (free or collected), ARMED (a signal is outstanding),
/// WRITING (its handler is copying), DONE (captured, not yet collected).
const IDLE: u64 = 0;
const ARMED: u64 = 1;
const WRITING: u64 = 2;
const DONE: u64 = 3;

fn word(seq: u32, phase: u64) -> u64 {
    (u64::from(seq) << 2) | phase
}

/// One capture: written by the handler between ARMED→WRITING→DONE, read by the sampler
/// after it saw DONE (acquire), re-armed only by the sampler.
struct Slot {
    /// `seq << 2 | phase`: the handler's ARMED→WRITING compares both, so a late signal
    /// (an older sequence number) never claims a slot armed again.
    state: AtomicU64,
    ip: AtomicU64,
    sp: AtomicU64,
    fp: AtomicU64,
    copied: AtomicUsize,
    /// Whether the copy took `process_vm_readv` (1) rather than a `memcpy` (0).
    by_syscall: AtomicU32,
    /// The thread's CPU clock at the end of the copy (its own, read by the handler).
    cpu_after: AtomicU64,
    /// When the handler ran (`clock::ticks`): the sample's time.
    at: AtomicU64,
    /// The thread's stack mapping and thread pointer, when known (set when arming; 0:
    /// copy with `process_vm_readv`).
    stack_lo: AtomicU64,
    stack_hi: AtomicU64,
    stack_tp: AtomicU64,
    /// Where a `memcpy` copy stops, below `stack_hi` (0: at `stack_hi`): the sampler
    /// learnt that the thread's walks never read above it (`stackmap.rs`).
    stack_top: AtomicU64,
    /// The thread pointer of the thread the handler ran on (so the sampler can learn it).
    seen_tp: AtomicU64,
    /// Bytes the handler should copy this time (≤ cap), set by the sampler when arming.
    want: AtomicUsize,
    /// `cap` bytes owned by this slot for the life of the process.
    buf: *mut u8,
    cap: usize,
}

// SAFETY: (A6) the raw buffer is written only by the one handler that won ARMED→WRITING and
// read only by the sampler after it observed DONE (release/acquire), so it is never
// accessed from two threads at once; every other field is atomic.
unsafe impl Sync for Slot {}

impl Slot {
    fn new(buf: *mut u8, cap: usize) -> Slot {
        Slot {
            state: AtomicU64::new(IDLE),
            ip: AtomicU64::new(0),
            sp: AtomicU64::new(0),
            fp: AtomicU64::new(0),
            copied: AtomicUsize::new(0),
            by_syscall: AtomicU32::new(0),
            cpu_after: AtomicU64::new(0),
            at: AtomicU64::new(0),
            stack_lo: AtomicU64::new(0),
            stack_hi: AtomicU64::new(0),
            stack_tp: AtomicU64::new(0),
            stack_top: AtomicU64::new(0),
            seen_tp: AtomicU64::new(0),
            want: AtomicUsize::new(cap),
            buf,
            cap,
        }
    }

    fn phase(&self) -> u64 {
        self.state.load(Ordering::Acquire) & 3
    }

    /// The sampler: the slot is armed for signal `seq` (its fields set before, published
    /// by the release). Only on a slot no handler can be writing (IDLE, or DONE collected).
    fn arm(&self, seq: u32) {
        self.state.store(word(seq, ARMED), Ordering::Release);
    }

    /// The handler of signal `seq`: whether it may write the slot (ARMED for `seq`).
    fn claim(&self, seq: u32) -> bool {
        self.state
            .compare_exchange(
                word(seq, ARMED),
                word(seq, WRITING),
                Ordering::AcqRel,
                Ordering::Relaxed,
            )
            .is_ok()
    }

    /// The handler of signal `seq`, done writing: the capture is the sampler's.
    fn publish(&self, seq: u32) {
        self.state.store(word(seq, DONE), Ordering::Release);
    }

    /// The sampler: takes back a slot whose signal is still outstanding, so that its
    /// handler, if it ever runs, finds it no longer armed; false when the handler has
    /// claimed it first (WRITING or DONE).
    fn disarm(&self) -> bool {
        let w = self.state.load(Ordering::Acquire);
        w & 3 == ARMED
            && self
                .state
                .compare_exchange(w, w & !3, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
    }
}

static SLOTS: AtomicPtr<Slot> = AtomicPtr::new(std::ptr::null_mut());
static PID: AtomicU32 = AtomicU32::new(0);
/// Handlers currently running (uninstall waits for 0).
static IN_HANDLER: AtomicUsize = AtomicUsize::new(0);
/// Captures completed; a sampler that waits for one (`--waits`, stop) sleeps on it.
static COMPLETED: AtomicU32 = AtomicU32::new(0);
/// 1 while the sampler sleeps on COMPLETED: only then does a handler wake it.
static WAITING: AtomicU32 = AtomicU32::new(0);

/// Who a slot is armed for: the sampler's side of a slot, set when arming and cleared when
/// the capture is collected or the slot taken back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Owner {
    pub thread: u64,
    pub os_tid: u32,
    /// Bytes asked of the handler.
    pub want: usize,
    /// Armed by a tick (a sample), not for a lock owner's stack.
    pub by_tick: bool,
    /// When the signal was sent, and when the sampler last looked whether it can still
    /// arrive (CLOCK_MONOTONIC).
    armed_ns: u64,
    checked_ns: u64,
}

/// What became of an attempt to signal a thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sent {
    /// Signalled; its capture will be in this slot.
    Slot(usize),
    /// The thread is gone (ESRCH).
    Gone,
    /// Every slot is outstanding.
    NoSlot,
}

/// Whether a thread's outstanding signal can still arrive (`/proc/self/task/TID/status`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outstanding {
    /// Still pending: the thread has had no core since, or blocks SIGPROF.
    Pending,
    /// Not pending (it was merged into another SIGPROF, or the thread id names a new thread).
    Lost,
    /// The thread has exited.
    Gone,
}

/// The sampler's ledger of its slots: which is armed for whom. Pure bookkeeping (the
/// atomics are the slots'), so its rules are unit-tested without signals.
#[derive(Debug)]
pub struct Ledger {
    owners: [Option<Owner>; SLOT_COUNT],
    seq: u32,
}

impl Default for Ledger {
    fn default() -> Ledger {
        Ledger {
            owners: [None; SLOT_COUNT],
            seq: 0,
        }
    }
}

impl Ledger {
    /// The slot armed for `os_tid`, if its capture is still outstanding or uncollected.
    pub fn slot_of(&self, os_tid: u32) -> Option<usize> {
        self.owners
            .iter()
            .position(|o| o.is_some_and(|o| o.os_tid == os_tid))
    }

    pub fn owner(&self, i: usize) -> Option<Owner> {
        self.owners.get(i).copied().flatten()
    }

    /// A free slot, taken for `owner`, and the sequence number of its signal.
    fn take(&mut self, owner: Owner) -> Option<(usize, u32)> {
        let i = self.owners.iter().position(Option::is_none)?;
        self.owners[i] = Some(owner);
        self.seq = self.seq.wrapping_add(1);
        Some((i, self.seq))
    }

    fn release(&mut self, i: usize) {
        if let Some(o) = self.owners.get_mut(i) {
            *o = None;
        }
    }

    /// Slots in use.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.owners.iter().filter(|o| o.is_some()).count()
    }
}

pub struct SignalSampler {
    slots: &'static [Slot],
    uid: u32,
    ledger: Ledger,
}

impl SignalSampler {
    /// Installs the SIGPROF handler and the slots, each able to copy `copy_bytes` of stack.
    /// Fails (and the caller falls back to SuspendRuntime sampling) when the application
    /// already handles SIGPROF or `process_vm_readv` is not permitted (seccomp).
    pub fn install(copy_bytes: usize) -> Result<SignalSampler, String> {
        if !SLOTS.load(Ordering::Acquire).is_null() {
            return Err("the signal sampler is already installed".into());
        }
        let (pid, uid) = (process::pid(), process::uid());
        PID.store(pid, Ordering::Relaxed);
        probe_process_vm_readv(pid)?;
        match signal::handled_elsewhere(SIGNAL) {
            Err(e) => return Err(format!("sigaction(SIGPROF) failed: {e}")),
            Ok(true) => return Err("the application has its own SIGPROF handler".into()),
            Ok(false) => {}
        }
        let mut slots: Vec<Slot> = Vec::with_capacity(SLOT_COUNT);
        for _ in 0..SLOT_COUNT {
            // Own pages (see os/pages.rs): only the bytes a handler copies become resident.
            let Some(buf) = crate::os::pages::map(copy_bytes) else {
                free_bufs(&slots);
                return Err(format!("cannot map {copy_bytes} bytes for a stack copy"));
            };
            slots.push(Slot::new(buf.as_ptr(), copy_bytes));
        }
        // Slots and buffers live until `uninstall`, which frees them only once SIGPROF
        // is ignored and no handler runs (a late signal must find valid memory until
        // then). They used to be leaked, which cost every attach/detach cycle ~4 MB.
        let slots: &'static [Slot] = Box::leak(slots.into_boxed_slice());
        SLOTS.store(slots.as_ptr() as *mut Slot, Ordering::Release);
        // SAFETY: (A6) installs a handler that is async-signal-safe, never unwinds and only
        // touches the static slots (see on_signal).
        if !unsafe { signal::install(SIGNAL, on_signal) } {
            SLOTS.store(std::ptr::null_mut(), Ordering::Release);
            free_bufs(slots);
            // SAFETY: (A6) the boxed slice leaked just above, never reached by a handler (none
            // was installed), freed once.
            drop(unsafe {
                Box::from_raw(std::ptr::slice_from_raw_parts_mut(
                    slots.as_ptr() as *mut Slot,
                    SLOT_COUNT,
                ))
            });
            return Err(format!(
                "sigaction(SIGPROF) failed: {}",
                std::io::Error::last_os_error()
            ));
        }
        Ok(SignalSampler {
            slots,
            uid,
            ledger: Ledger::default(),
        })
    }

    pub fn ledger(&self) -> &Ledger {
        &self.ledger
    }

    /// Arms a free slot for thread (`thread`, `os_tid`) and signals it, without waiting:
    /// the capture is in the slot once [`SignalSampler::is_done`] says so, at whichever
    /// later call. `want` is how many bytes of stack to copy, `stack` its stack mapping if
    /// known. The caller does not arm a second slot for a thread that has one
    /// ([`Ledger::slot_of`]).
    pub fn arm(
        &mut self,
        thread: u64,
        os_tid: u32,
        want: usize,
        stack: Bounds,
        by_tick: bool,
    ) -> Sent {
        let (pid, uid) = (PID.load(Ordering::Relaxed), self.uid);
        self.arm_with(thread, os_tid, want, stack, by_tick, |value| {
            signal::send_queued(pid, os_tid, SIGNAL, uid, value)
        })
    }

    /// [`SignalSampler::arm`] with `send` sending the signal's value (unit tests: no signal).
    fn arm_with(
        &mut self,
        thread: u64,
        os_tid: u32,
        want: usize,
        stack: Bounds,
        by_tick: bool,
        send: impl FnOnce(u64) -> bool,
    ) -> Sent {
        let now = clock::monotonic_ns();
        let owner = Owner {
            thread,
            os_tid,
            want,
            by_tick,
            armed_ns: now,
            checked_ns: now,
        };
        let Some((i, seq)) = self.ledger.take(owner) else {
            return Sent::NoSlot;
        };
        let slot = &self.slots[i];
        let want = want.min(slot.cap);
        if let Some(o) = self.ledger.owners[i].as_mut() {
            o.want = want;
        }
        slot.want.store(want, Ordering::Relaxed);
        slot.stack_lo.store(stack.lo, Ordering::Relaxed);
        slot.stack_hi.store(stack.hi, Ordering::Relaxed);
        slot.stack_tp.store(stack.tp, Ordering::Relaxed);
        slot.stack_top.store(stack.top, Ordering::Relaxed);
        slot.arm(seq);
        let value = (u64::from(seq) << 32) | i as u64;
        if send(value) {
            Sent::Slot(i)
        } else {
            // Not queued: no handler can claim it.
            slot.disarm();
            self.ledger.release(i);
            Sent::Gone
        }
    }

    /// Whether slot `i`'s capture is complete (and not yet collected).
    pub fn is_done(&self, i: usize) -> bool {
        self.ledger.owner(i).is_some() && self.slots[i].phase() == DONE
    }

    /// Slot `i` collected: free for another thread.
    pub fn release(&mut self, i: usize) {
        if self.is_done(i) {
            self.ledger.release(i);
        }
    }

    /// Takes back slot `i` if its signal is still outstanding (its handler, if it ever
    /// runs, will find it no longer armed); false when its handler has claimed it.
    pub fn take_back(&mut self, i: usize) -> bool {
        if self.ledger.owner(i).is_some() && self.slots[i].disarm() {
            self.ledger.release(i);
            true
        } else {
            false
        }
    }

    /// Looks, for each slot armed at least `stale_ns` ago (and not looked at for as long),
    /// whether its signal can still arrive (`check`); takes back those that cannot and
    /// returns them (owner and why) through `lost`. Never waits.
    pub fn reclaim_stale(
        &mut self,
        now_ns: u64,
        stale_ns: u64,
        mut check: impl FnMut(u32) -> Outstanding,
        mut lost: impl FnMut(Owner, Outstanding),
    ) {
        for i in 0..SLOT_COUNT {
            let Some(o) = self.ledger.owner(i) else {
                continue;
            };
            if now_ns.saturating_sub(o.armed_ns) < stale_ns
                || now_ns.saturating_sub(o.checked_ns) < stale_ns
                || self.slots[i].phase() != ARMED
            {
                continue;
            }
            if let Some(own) = self.ledger.owners[i].as_mut() {
                own.checked_ns = now_ns;
            }
            let why = check(o.os_tid);
            if why != Outstanding::Pending && self.take_back(i) {
                lost(o, why);
            }
        }
    }

    /// Waits until each of `slots` is no longer outstanding (its handler ran), at most until
    /// `deadline_ns` (CLOCK_MONOTONIC): for lock owners' stacks and at stop, never at a tick.
    pub fn wait_for(&self, slots: &[usize], deadline_ns: u64) {
        self.wait_until(deadline_ns, |s| {
            !slots
                .iter()
                .any(|&i| matches!(s.slots[i].phase(), ARMED | WRITING))
        });
    }

    /// Waits until some slot's capture is done (or none is outstanding), at most until
    /// `deadline_ns`.
    pub fn wait_any_done(&self, deadline_ns: u64) {
        self.wait_until(deadline_ns, |s| {
            let mut outstanding = false;
            for i in 0..SLOT_COUNT {
                if s.ledger.owner(i).is_none() {
                    continue;
                }
                match s.slots[i].phase() {
                    DONE => return true,
                    ARMED | WRITING => outstanding = true,
                    _ => {}
                }
            }
            !outstanding
        });
    }

    fn wait_until(&self, deadline_ns: u64, done: impl Fn(&SignalSampler) -> bool) {
        loop {
            if done(self) {
                return;
            }
            let now = clock::monotonic_ns();
            if now >= deadline_ns {
                return;
            }
            // Announce the sleep, then look again (SeqCst on both sides, as the handler
            // increments COMPLETED then reads WAITING: one of the two sees the other).
            WAITING.store(1, Ordering::SeqCst);
            let completed = COMPLETED.load(Ordering::SeqCst);
            if !done(self) {
                // Sleeping (not spinning) also lets a thread that this sampler preempted
                // run its handler on this core.
                futex::wait(&COMPLETED, completed, deadline_ns - now);
            }
            WAITING.store(0, Ordering::SeqCst);
        }
    }

    /// The capture in slot `i`, once [`SignalSampler::is_done`].
    pub fn captured(&self, i: usize) -> Option<Captured<&[u8]>> {
        if !self.is_done(i) {
            return None;
        }
        let slot = &self.slots[i];
        let len = slot.copied.load(Ordering::Relaxed).min(slot.cap);
        // SAFETY: (A6) the handler finished writing `len` bytes (DONE, acquire) and the slot is
        // not armed again before `release`, which needs `&mut self`.
        let stack = unsafe { std::slice::from_raw_parts(slot.buf, len) };
        Some(Captured {
            ip: slot.ip.load(Ordering::Relaxed),
            sp: slot.sp.load(Ordering::Relaxed),
            fp: slot.fp.load(Ordering::Relaxed),
            stack,
        })
    }

    /// The thread pointer of slot `i`'s thread (0 when unknown); valid where
    /// [`SignalSampler::captured`] is.
    pub fn thread_pointer(&self, i: usize) -> u64 {
        self.slots
            .get(i)
            .map_or(0, |s| s.seen_tp.load(Ordering::Relaxed))
    }

    /// Whether slot `i`'s copy took `process_vm_readv` (not a `memcpy`); valid where
    /// [`SignalSampler::captured`] is.
    pub fn by_syscall(&self, i: usize) -> bool {
        self.slots
            .get(i)
            .is_some_and(|s| s.by_syscall.load(Ordering::Relaxed) != 0)
    }

    /// When slot `i`'s handler ran (`clock::ticks`) and its thread's CPU clock at its end;
    /// valid where [`SignalSampler::captured`] is.
    pub fn taken_at(&self, i: usize) -> (u64, u64) {
        self.slots.get(i).map_or((0, 0), |s| {
            (
                s.at.load(Ordering::Relaxed),
                s.cpu_after.load(Ordering::Relaxed),
            )
        })
    }

    /// Stops handling SIGPROF: the disposition becomes SIG_IGN (which also discards
    /// pending SIGPROFs, so slots still armed are never claimed; SIG_DFL would terminate
    /// the process on a late one) and this returns once no handler runs any more, so the
    /// library can be unloaded.
    pub fn uninstall(self) {
        signal::ignore(SIGNAL);
        // Unpublish the slots first, then wait for the handlers that may have seen them.
        // SeqCst on both sides (here: store SLOTS, load IN_HANDLER; in the handler:
        // increment IN_HANDLER, load SLOTS): a handler that loaded the slots counted
        // itself before, so the wait below sees it; one that did not sees null.
        SLOTS.store(std::ptr::null_mut(), Ordering::SeqCst);
        let mut waited = 0;
        while IN_HANDLER.load(Ordering::SeqCst) != 0 && waited < 1000 {
            std::thread::sleep(Duration::from_millis(1));
            waited += 1;
        }
        // A handler that was entered but had not yet counted itself: give it time (it
        // would find SLOTS null anyway).
        std::thread::sleep(Duration::from_millis(5));
        if IN_HANDLER.load(Ordering::SeqCst) != 0 {
            // A handler is stuck (it cannot be, short of a stopped thread): keep the
            // memory rather than risk it writing into freed buffers.
            return;
        }
        let slots = self.slots.as_ptr() as *mut Slot;
        // No handler can reach the buffers any more (SIGPROF is ignored, SLOTS is null
        // and every handler that saw it non-null has left).
        free_bufs(self.slots);
        // SAFETY: (A6) `slots` is the leaked boxed slice of SLOT_COUNT slots from `install`,
        // freed once; `self` (its only other reference) is consumed by this call.
        drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(slots, SLOT_COUNT)) });
    }
}

/// Whether thread `os_tid`'s SIGPROF is still pending, from its `SigPnd` line in
/// `/proc/self/task/TID/status` (read on the sampler thread, for slots armed long ago).
pub fn outstanding(os_tid: u32) -> Outstanding {
    let Ok(status) = std::fs::read_to_string(format!("/proc/self/task/{os_tid}/status")) else {
        return Outstanding::Gone;
    };
    sigpnd_has_sigprof(&status)
}

fn sigpnd_has_sigprof(status: &str) -> Outstanding {
    let pending = status
        .lines()
        .find_map(|l| l.strip_prefix("SigPnd:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok());
    match pending {
        Some(mask) if mask & (1u64 << (SIGNAL - 1)) != 0 => Outstanding::Pending,
        Some(_) => Outstanding::Lost,
        // Unreadable: assume it may still arrive (looked at again later).
        None => Outstanding::Pending,
    }
}

/// Unmaps the stack-copy buffers of `slots` (once, when no handler can reach them).
fn free_bufs(slots: &[Slot]) {
    for slot in slots {
        if let Some(buf) = std::ptr::NonNull::new(slot.buf) {
            // SAFETY: (A5) `buf` came from pages::map(cap) in `install`; callers free each
            // slot's buffer once, after no handler can use it.
            unsafe { crate::os::pages::unmap(buf, slot.cap) };
        }
    }
}

fn probe_process_vm_readv(pid: u32) -> Result<(), String> {
    let probe = [0x5au8; 64];
    let mut dst = [0u8; 64];
    // SAFETY: (A8) `dst` is a local buffer of the 64 bytes asked for.
    let n = unsafe { process::copy_own_memory(pid, dst.as_mut_ptr(), probe.as_ptr() as u64, 64) };
    if n == 64 && dst == probe {
        Ok(())
    } else {
        Err(format!(
            "process_vm_readv on our own process is not permitted ({})",
            std::io::Error::last_os_error()
        ))
    }
}

/// The SIGPROF handler. Only: match the slot by the queued value, record registers, copy
/// the stack, publish. Never panics (no indexing that can fail, no allocation).
extern "C" fn on_signal(_sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut c_void) {
    IN_HANDLER.fetch_add(1, Ordering::SeqCst);
    // errno is thread-local; saved and restored around our syscalls.
    let errno = signal::errno();
    handle(info, ctx);
    signal::set_errno(errno);
    IN_HANDLER.fetch_sub(1, Ordering::AcqRel);
}

fn handle(info: *mut libc::siginfo_t, ctx: *mut c_void) {
    if info.is_null() || ctx.is_null() {
        return;
    }
    // SAFETY: (A6) `info` is the kernel's siginfo for this SA_SIGINFO handler (non-null).
    let queued = unsafe { signal::queued(info) };
    let pid = PID.load(Ordering::Relaxed);
    let Some((_, value)) = queued.filter(|&(sender, _)| sender == pid) else {
        return; // not ours (kill -PROF from outside): ignore
    };
    // SeqCst: pairs with uninstall's store (see there).
    let slots = SLOTS.load(Ordering::SeqCst);
    let index = (value & 0xffff_ffff) as usize;
    let seq = (value >> 32) as u32;
    if slots.is_null() || index >= SLOT_COUNT {
        return;
    }
    // SAFETY: (A6) SLOTS points at SLOT_COUNT live slots while non-null (uninstall nulls it
    // and waits for IN_HANDLER, incremented above, before freeing them).
    let slot = unsafe { &*slots.add(index) };
    if !slot.claim(seq) {
        return; // late signal for a slot taken back or armed again
    }
    // SAFETY: (A6) `ctx` is the kernel's ucontext for this SA_SIGINFO handler (non-null).
    let (ip, sp, fp) = unsafe { signal::registers(ctx) };
    slot.ip.store(ip, Ordering::Relaxed);
    slot.sp.store(sp, Ordering::Relaxed);
    slot.fp.store(fp, Ordering::Relaxed);
    let want = slot.want.load(Ordering::Relaxed).min(slot.cap);
    let tp = crate::output::tpmap::thread_pointer() as u64;
    slot.seen_tp.store(tp, Ordering::Relaxed);
    let (lo, hi) = (
        slot.stack_lo.load(Ordering::Relaxed),
        slot.stack_hi.load(Ordering::Relaxed),
    );
    let memcpy = tp != 0 && tp == slot.stack_tp.load(Ordering::Relaxed) && lo <= sp && sp < hi;
    slot.by_syscall.store(u32::from(!memcpy), Ordering::Relaxed);
    let copied = if memcpy {
        // Only as far as this thread's walks read, unless RBP points above that (code
        // that keeps something else in RBP, e.g. an address in the thread's TLS, which
        // lies above its first frame): then up to the mapping's end, as the walk may read
        // there.
        let end = match slot.stack_top.load(Ordering::Relaxed) {
            top if sp < top && top < hi && fp < top => top,
            _ => hi,
        };
        let len = want.min((end - sp) as usize);
        // SAFETY: (A6) this handler won ARMED→WRITING, so it alone writes the slot's buffer,
        // `len <= want <= cap` bytes of it; it runs on the thread whose own stack mapping
        // is [lo, hi) (same thread pointer: stackmap.rs), which stays mapped while the
        // thread lives, and [sp, sp + len) lies inside it (sp + len <= end <= hi).
        unsafe { std::ptr::copy_nonoverlapping(sp as *const u8, slot.buf, len) };
        len
    } else {
        // SAFETY: (A6) this handler won ARMED→WRITING, so it alone writes the slot's
        // buffer, `want <= cap` bytes of it.
        unsafe { process::copy_own_memory(pid, slot.buf, sp, want) }
    };
    slot.copied.store(copied, Ordering::Relaxed);
    // The thread's own clock, read here (a local read) so that the sampler knows the CPU
    // time the thread had after this handler: if it has not moved by the next tick, the
    // thread has not run since, and its stack is reused without a signal.
    slot.cpu_after
        .store(clock::own_thread_cpu_ns(), Ordering::Relaxed);
    slot.at.store(clock::ticks(), Ordering::Relaxed);
    slot.publish(seq);
    COMPLETED.fetch_add(1, Ordering::SeqCst);
    if WAITING.load(Ordering::SeqCst) != 0 {
        futex::wake(&COMPLETED);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Slots over small leaked buffers, and a sampler over them that sends no signal.
    fn sampler() -> SignalSampler {
        let slots: Vec<Slot> = (0..SLOT_COUNT)
            .map(|_| Slot::new(Box::leak(vec![0u8; 64].into_boxed_slice()).as_mut_ptr(), 64))
            .collect();
        SignalSampler {
            slots: Box::leak(slots.into_boxed_slice()),
            uid: 0,
            ledger: Ledger::default(),
        }
    }

    /// Arms a slot for `os_tid`; returns it and the value its signal carries.
    fn arm(s: &mut SignalSampler, os_tid: u32) -> (Sent, u64) {
        let mut sent = 0;
        let r = s.arm_with(
            1000 + u64::from(os_tid),
            os_tid,
            48,
            Bounds::default(),
            true,
            |v| {
                sent = v;
                true
            },
        );
        (r, sent)
    }

    /// What the handler does with a signal's value (without the copy): whether it wrote.
    fn handler_runs(s: &SignalSampler, value: u64, ip: u64) -> bool {
        let (i, seq) = ((value & 0xffff_ffff) as usize, (value >> 32) as u32);
        let slot = &s.slots[i];
        if !slot.claim(seq) {
            return false;
        }
        slot.ip.store(ip, Ordering::Relaxed);
        slot.copied.store(8, Ordering::Relaxed);
        slot.publish(seq);
        true
    }

    #[test]
    fn an_outstanding_signal_keeps_its_slot_until_its_handler_runs_at_a_later_tick() {
        let mut s = sampler();
        let (sent, value) = arm(&mut s, 7);
        assert_eq!(sent, Sent::Slot(0));
        // Ticks later, no handler yet: the thread has its slot (not signalled again), and
        // nothing is collected.
        assert_eq!(s.ledger().slot_of(7), Some(0));
        assert!(!s.is_done(0) && s.captured(0).is_none());
        assert!(handler_runs(&s, value, 0x1234));
        assert!(s.is_done(0));
        assert_eq!(s.captured(0).unwrap().ip, 0x1234);
        assert_eq!(s.ledger().owner(0).unwrap().os_tid, 7);
        s.release(0);
        assert_eq!(s.ledger().slot_of(7), None);
        assert_eq!(s.ledger().len(), 0);
        // A second delivery of the same signal (it cannot happen; nor can it write).
        assert!(!handler_runs(&s, value, 0x9999));
    }

    #[test]
    fn a_signal_is_claimed_by_one_handler_and_only_for_the_sequence_armed() {
        let mut s = sampler();
        let (_, value) = arm(&mut s, 7);
        let slot = &s.slots[0];
        let seq = (value >> 32) as u32;
        assert!(!slot.claim(seq.wrapping_add(1)), "another signal's number");
        assert!(slot.claim(seq));
        assert!(!slot.claim(seq), "claimed once");
        // While the handler writes, the sampler can neither take the slot back nor read it.
        assert!(!s.take_back(0));
        assert!(!s.is_done(0));
        s.release(0);
        assert_eq!(s.ledger().slot_of(7), Some(0), "not freed while WRITING");
        slot.publish(seq);
        assert!(s.is_done(0) && !s.take_back(0));
        s.release(0);
        assert_eq!(s.ledger().len(), 0);
    }

    #[test]
    fn a_thread_that_exits_with_its_signal_outstanding_gives_its_slot_back() {
        let mut s = sampler();
        let (_, value) = arm(&mut s, 7);
        let armed = s.ledger().owner(0).unwrap().armed_ns;
        let mut lost = Vec::new();
        let mut asked = 0;
        // Not stale yet: not even looked at.
        s.reclaim_stale(
            armed + 10,
            1_000,
            |_| {
                asked += 1;
                Outstanding::Gone
            },
            |o, why| lost.push((o.os_tid, why)),
        );
        assert_eq!((asked, lost.len()), (0, 0));
        s.reclaim_stale(
            armed + 5_000,
            1_000,
            |_| {
                asked += 1;
                Outstanding::Gone
            },
            |o, why| lost.push((o.os_tid, why)),
        );
        assert_eq!(asked, 1);
        assert_eq!(lost, vec![(7, Outstanding::Gone)]);
        assert_eq!(s.ledger().len(), 0);
        // Its signal, were it ever delivered, writes nothing.
        assert!(!handler_runs(&s, value, 1));
        assert!(!s.is_done(0));
    }

    #[test]
    fn a_signal_still_pending_is_left_and_looked_at_again_only_after_as_long() {
        let mut s = sampler();
        arm(&mut s, 7);
        let armed = s.ledger().owner(0).unwrap().armed_ns;
        let mut asked = 0;
        for t in [5_000, 5_500, 6_100] {
            s.reclaim_stale(
                armed + t,
                1_000,
                |_| {
                    asked += 1;
                    Outstanding::Pending
                },
                |_, _| panic!("pending: not lost"),
            );
        }
        assert_eq!(asked, 2, "at 5000 and 6100, not 500 after the last look");
        assert_eq!(s.ledger().slot_of(7), Some(0));
    }

    #[test]
    fn a_slot_reused_by_a_new_thread_ignores_the_old_threads_late_signal() {
        let mut s = sampler();
        let (_, old) = arm(&mut s, 7);
        assert!(s.take_back(0));
        // The same slot, armed for another thread (or the same id, now a new thread).
        let (sent, new) = arm(&mut s, 8);
        assert_eq!(sent, Sent::Slot(0));
        assert_ne!(old, new);
        assert!(
            !handler_runs(&s, old, 0xdead),
            "the old signal arrives late"
        );
        assert!(!s.is_done(0));
        assert!(handler_runs(&s, new, 0xbeef));
        assert_eq!(s.captured(0).unwrap().ip, 0xbeef);
        assert_eq!(s.ledger().owner(0).unwrap().os_tid, 8);
    }

    #[test]
    fn when_every_slot_is_outstanding_the_next_thread_gets_none() {
        let mut s = sampler();
        let values: Vec<u64> = (0..SLOT_COUNT as u32)
            .map(|t| {
                let (sent, v) = arm(&mut s, 100 + t);
                assert_eq!(sent, Sent::Slot(t as usize));
                v
            })
            .collect();
        assert_eq!(arm(&mut s, 999).0, Sent::NoSlot);
        assert_eq!(s.ledger().slot_of(999), None);
        assert!(handler_runs(&s, values[5], 1));
        s.release(5);
        assert_eq!(arm(&mut s, 999).0, Sent::Slot(5));
    }

    #[test]
    fn a_signal_that_cannot_be_sent_frees_its_slot() {
        let mut s = sampler();
        let mut value = 0;
        let r = s.arm_with(1, 7, 48, Bounds::default(), true, |v| {
            value = v;
            false
        });
        assert_eq!(r, Sent::Gone);
        assert_eq!(s.ledger().len(), 0);
        assert!(!handler_runs(&s, value, 1));
    }

    #[test]
    fn waits_return_at_once_when_nothing_is_outstanding() {
        let mut s = sampler();
        let far = clock::monotonic_ns() + 10_000_000_000;
        s.wait_for(&[], far);
        s.wait_any_done(far);
        let (_, value) = arm(&mut s, 7);
        assert!(handler_runs(&s, value, 1));
        s.wait_for(&[0], far);
        s.wait_any_done(far);
        // One still outstanding: waits until the deadline, no longer.
        arm(&mut s, 8);
        let t = clock::monotonic_ns();
        s.wait_for(&[1], t + 2_000_000);
        assert!(clock::monotonic_ns() >= t + 2_000_000);
    }

    #[test]
    fn a_pending_sigprof_is_read_from_the_status_line() {
        let line = |m: &str| format!("Name:\tx\nSigQ:\t0/1\nSigPnd:\t{m}\nShdPnd:\t0\n");
        assert_eq!(
            sigpnd_has_sigprof(&line("0000000004000000")),
            Outstanding::Pending
        );
        assert_eq!(
            sigpnd_has_sigprof(&line("0000000000000000")),
            Outstanding::Lost
        );
        assert_eq!(
            sigpnd_has_sigprof(&line("0000000000000100")),
            Outstanding::Lost
        );
        assert_eq!(sigpnd_has_sigprof("Name:\tx\n"), Outstanding::Pending);
    }
}
