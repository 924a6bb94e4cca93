//! Signal-driven stack capture (Linux x86_64): the sampler sends SIGPROF to each managed
//! thread with `rt_tgsigqueueinfo`; the handler, running on that thread, records RIP, RSP
//! and RBP from the signal context and copies the top of the stack into a preallocated
//! slot with one `process_vm_readv` on our own process (which reports an unmapped page
//! as a short read instead of faulting). The walk and the symbolisation happen afterwards
//! on the sampler thread (`fpwalk.rs`, GetFunctionFromIP), so no thread is ever stopped
//! for longer than its own handler (a few microseconds), and nothing waits for a safe
//! point: this is what makes sampling cheap where SuspendRuntime is not.
//!
//! The sampler need not wait for the handlers: [`SignalSampler::send`] arms and signals,
//! [`SignalSampler::finish`] (usually a tick later, when every handler has long run)
//! collects. Only a sampler that finds captures still missing sleeps on a futex.
//!
//! When the sampler knows the thread's own stack mapping (`stackmap.rs`) and the handler
//! finds itself on that thread (same thread pointer) with RSP inside it, the copy is a
//! plain `memcpy` up to at most the mapping's end (mapped for as long as the thread
//! lives), without the system call.
//!
//! The handler is async-signal-safe: atomics, at most three syscalls (`process_vm_readv`
//! unless the copy is a `memcpy`, its own thread's CPU clock, and a futex wake when it
//! completes a batch the sampler is sleeping on), no allocation, no lock, errno saved and
//! restored. A signal that arrives
//! late (after its slot timed out or was reused) is recognised by the sequence number it
//! carries and ignored.

use std::ffi::c_void;
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use super::stackmap::Bounds;
use crate::os::{clock, futex, process, signal};
use crate::stackwalk::fpwalk::Captured;

/// The signal used. CoreCLR itself uses SIGRTMIN (activation injection) and the fault
/// signals, not SIGPROF.
const SIGNAL: libc::c_int = libc::SIGPROF;

/// Threads signalled at once; more threads are sampled in several batches per tick.
pub const BATCH: usize = 64;

const IDLE: u32 = 0;
const ARMED: u32 = 1;
const WRITING: u32 = 2;
const DONE: u32 = 3;

/// One capture: written by the handler between ARMED→WRITING→DONE, read by the sampler
/// after it saw DONE (acquire), re-armed only by the sampler.
struct Slot {
    state: AtomicU32,
    seq: AtomicU32,
    ip: AtomicU64,
    sp: AtomicU64,
    fp: AtomicU64,
    copied: AtomicUsize,
    /// Whether the copy took `process_vm_readv` (1) rather than a `memcpy` (0).
    by_syscall: AtomicU32,
    /// The thread's CPU clock at the end of the copy (its own, read by the handler).
    cpu_after: AtomicU64,
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

static SLOTS: AtomicPtr<Slot> = AtomicPtr::new(std::ptr::null_mut());
static PID: AtomicU32 = AtomicU32::new(0);
/// Handlers currently running (uninstall waits for 0).
static IN_HANDLER: AtomicUsize = AtomicUsize::new(0);
/// Captures completed in the current batch; the sampler sleeps on it (futex).
static COMPLETED: AtomicU32 = AtomicU32::new(0);
/// Captures the current batch waits for (u32::MAX while signals are still being sent):
/// the handler that completes the last one wakes the sampler, so a tick costs the
/// sampler one wake-up, not a polling loop that would preempt the application.
static EXPECTED: AtomicU32 = AtomicU32::new(u32::MAX);
/// 1 while the sampler sleeps on COMPLETED: only then does the last handler wake it (a
/// sampler that collects a tick later finds every capture done and never sleeps).
static WAITING: AtomicU32 = AtomicU32::new(0);

/// Per tick outcome counts.
#[derive(Default, Debug, Clone, Copy)]
pub struct BatchOutcome {
    /// The thread no longer exists (ESRCH).
    pub gone: usize,
    /// The handler did not run within the timeout (signal blocked, thread not scheduled).
    pub timed_out: usize,
}

pub struct SignalSampler {
    slots: &'static [Slot],
    uid: u32,
    seq: u32,
    armed: usize,
    /// Per slot: the tid it was armed for this batch (0: not armed / send failed).
    tids: [u32; BATCH],
    /// Signals sent and threads gone in the batch sent last.
    sent: u32,
    gone: usize,
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
        let mut slots: Vec<Slot> = Vec::with_capacity(BATCH);
        for _ in 0..BATCH {
            // Own pages (see os/pages.rs): only the bytes a handler copies become resident.
            let Some(buf) = crate::os::pages::map(copy_bytes) else {
                free_bufs(&slots);
                return Err(format!("cannot map {copy_bytes} bytes for a stack copy"));
            };
            slots.push(Slot {
                state: AtomicU32::new(IDLE),
                seq: AtomicU32::new(0),
                ip: AtomicU64::new(0),
                sp: AtomicU64::new(0),
                fp: AtomicU64::new(0),
                copied: AtomicUsize::new(0),
                by_syscall: AtomicU32::new(0),
                cpu_after: AtomicU64::new(0),
                stack_lo: AtomicU64::new(0),
                stack_hi: AtomicU64::new(0),
                stack_tp: AtomicU64::new(0),
                stack_top: AtomicU64::new(0),
                seen_tp: AtomicU64::new(0),
                want: AtomicUsize::new(copy_bytes),
                buf: buf.as_ptr(),
                cap: copy_bytes,
            });
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
                    BATCH,
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
            seq: 0,
            armed: 0,
            tids: [0; BATCH],
            sent: 0,
            gone: 0,
        })
    }

    /// Arms a slot for each of up to [`BATCH`] threads and signals them, without waiting;
    /// [`SignalSampler::finish`] collects. `wants[i]` is how many bytes of stack to copy
    /// for `tids[i]`, `stacks[i]` its stack mapping if known.
    pub fn send(&mut self, tids: &[u32], wants: &[usize], stacks: &[Bounds]) {
        let pid = PID.load(Ordering::Relaxed);
        let n = tids.len().min(BATCH);
        self.gone = 0;
        self.armed = n;
        EXPECTED.store(u32::MAX, Ordering::SeqCst);
        COMPLETED.store(0, Ordering::SeqCst);
        let mut sent = 0u32;
        for (i, &tid) in tids[..n].iter().enumerate() {
            let slot = &self.slots[i];
            if !wait_not_writing(slot) {
                self.tids[i] = 0;
                continue;
            }
            self.seq = self.seq.wrapping_add(1);
            let want = wants.get(i).copied().unwrap_or(slot.cap).min(slot.cap);
            slot.want.store(want, Ordering::Relaxed);
            let b = stacks.get(i).copied().unwrap_or_default();
            slot.stack_lo.store(b.lo, Ordering::Relaxed);
            slot.stack_hi.store(b.hi, Ordering::Relaxed);
            slot.stack_tp.store(b.tp, Ordering::Relaxed);
            slot.stack_top.store(b.top, Ordering::Relaxed);
            slot.seq.store(self.seq, Ordering::Relaxed);
            slot.state.store(ARMED, Ordering::Release);
            let value = (u64::from(self.seq) << 32) | i as u64;
            if signal::send_queued(pid, tid, SIGNAL, self.uid, value) {
                self.tids[i] = tid;
                sent += 1;
            } else {
                let _ =
                    slot.state
                        .compare_exchange(ARMED, IDLE, Ordering::AcqRel, Ordering::Relaxed);
                self.tids[i] = 0;
                self.gone += 1;
            }
        }
        EXPECTED.store(sent, Ordering::SeqCst);
        self.sent = sent;
    }

    /// Waits until every handler of the batch sent last has run, at most until
    /// `deadline_ns` (CLOCK_MONOTONIC); afterwards [`SignalSampler::captured`] gives each
    /// thread's capture. A handler that has not run by then is counted as timed out.
    pub fn finish(&mut self, deadline_ns: u64) -> BatchOutcome {
        let n = self.armed;
        let sent = self.sent;
        let mut out = BatchOutcome {
            gone: self.gone,
            timed_out: 0,
        };
        loop {
            let done = COMPLETED.load(Ordering::SeqCst);
            if done >= sent {
                break;
            }
            let now = clock::monotonic_ns();
            if now >= deadline_ns {
                break;
            }
            // Announce the sleep, then look again (SeqCst on both sides, as the handler
            // increments COMPLETED then reads WAITING: one of the two sees the other).
            WAITING.store(1, Ordering::SeqCst);
            let done = COMPLETED.load(Ordering::SeqCst);
            if done < sent {
                // Sleeping (not spinning) also lets a thread that this sampler preempted
                // run its handler on this core.
                futex::wait(&COMPLETED, done, deadline_ns - now);
            }
            WAITING.store(0, Ordering::SeqCst);
        }
        for i in 0..n {
            if self.tids[i] == 0 {
                continue;
            }
            let slot = &self.slots[i];
            if slot
                .state
                .compare_exchange(ARMED, IDLE, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                self.tids[i] = 0;
                out.timed_out += 1;
            } else if !(wait_not_writing(slot) && slot.state.load(Ordering::Acquire) == DONE) {
                self.tids[i] = 0;
            }
        }
        out
    }

    /// The capture of the `i`-th thread of the batch sent last, once
    /// [`SignalSampler::finish`] returned.
    pub fn captured(&self, i: usize) -> Option<Captured<&[u8]>> {
        if i >= self.armed || self.tids[i] == 0 {
            return None;
        }
        let slot = &self.slots[i];
        if slot.state.load(Ordering::Acquire) != DONE {
            return None;
        }
        let len = slot.copied.load(Ordering::Relaxed).min(slot.cap);
        // SAFETY: (A6) the handler finished writing `len` bytes (DONE, acquire) and the slot is
        // not re-armed before the next `capture`, which needs `&mut self`.
        let stack = unsafe { std::slice::from_raw_parts(slot.buf, len) };
        Some(Captured {
            ip: slot.ip.load(Ordering::Relaxed),
            sp: slot.sp.load(Ordering::Relaxed),
            fp: slot.fp.load(Ordering::Relaxed),
            stack,
        })
    }

    /// The thread pointer of the `i`-th thread of the last batch (0 when unknown); valid
    /// where [`SignalSampler::captured`] is.
    pub fn thread_pointer(&self, i: usize) -> u64 {
        self.slots
            .get(i)
            .map_or(0, |s| s.seen_tp.load(Ordering::Relaxed))
    }

    /// Whether the `i`-th thread's copy took `process_vm_readv` (not a `memcpy`); valid
    /// where [`SignalSampler::captured`] is.
    pub fn by_syscall(&self, i: usize) -> bool {
        self.slots
            .get(i)
            .is_some_and(|s| s.by_syscall.load(Ordering::Relaxed) != 0)
    }

    /// The CPU clock of the `i`-th thread of the last batch at the end of its handler
    /// (0 when unknown); valid where [`SignalSampler::captured`] is.
    pub fn cpu_after(&self, i: usize) -> u64 {
        self.slots
            .get(i)
            .map_or(0, |s| s.cpu_after.load(Ordering::Relaxed))
    }

    /// Stops handling SIGPROF: the disposition becomes SIG_IGN (which also discards
    /// pending SIGPROFs; SIG_DFL would terminate the process on a late one) and this
    /// returns once no handler runs any more, so the library can be unloaded.
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
        // SAFETY: (A6) `slots` is the leaked boxed slice of BATCH slots from `install`, freed
        // once; `self` (its only other reference) is consumed by this call.
        drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(slots, BATCH)) });
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

/// Waits until a slot's handler (if one is writing) has finished; false after ~1 s.
fn wait_not_writing(slot: &Slot) -> bool {
    for i in 0..20_000 {
        if slot.state.load(Ordering::Acquire) != WRITING {
            return true;
        }
        if i < 100 {
            std::hint::spin_loop();
        } else {
            std::thread::sleep(Duration::from_micros(50));
        }
    }
    false
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
    if slots.is_null() || index >= BATCH {
        return;
    }
    // SAFETY: (A6) SLOTS points at BATCH live slots while non-null (uninstall nulls it and
    // waits for IN_HANDLER, incremented above, before freeing them).
    let slot = unsafe { &*slots.add(index) };
    if slot.seq.load(Ordering::Acquire) != seq
        || slot
            .state
            .compare_exchange(ARMED, WRITING, Ordering::AcqRel, Ordering::Relaxed)
            .is_err()
    {
        return; // late signal for a slot that timed out or was re-armed
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
    slot.state.store(DONE, Ordering::Release);
    let done = COMPLETED.fetch_add(1, Ordering::SeqCst) + 1;
    if done >= EXPECTED.load(Ordering::SeqCst) && WAITING.load(Ordering::SeqCst) != 0 {
        futex::wake(&COMPLETED);
    }
}
