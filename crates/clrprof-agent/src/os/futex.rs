//! Private futex waits and wakes on an atomic word: how the signal sampler sleeps until
//! the last handler of a batch has run, and how that handler wakes it.

use std::sync::atomic::AtomicU32;

/// Waits while `*word == expected`, at most `timeout_ns`.
#[inline]
pub fn wait(word: &AtomicU32, expected: u32, timeout_ns: u64) {
    let ts = libc::timespec {
        tv_sec: (timeout_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (timeout_ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: (A8) a private futex wait on a live atomic, with a valid relative timeout.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            expected,
            &ts as *const libc::timespec,
        );
    }
}

/// Wakes one thread waiting in [`wait`]. Async-signal-safe (one syscall).
#[inline]
pub fn wake(word: &AtomicU32) {
    // SAFETY: (A8) a private futex wake on a live atomic.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            1,
        );
    }
}
