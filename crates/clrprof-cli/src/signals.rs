//! SIGINT, SIGTERM and SIGHUP: `record -- app` passes each on to the app (so the app is
//! not left running unowned when a script or a closing terminal stops clrprof), and
//! `record --pid` turns each into a clean detach. The handler only stores and `kill`s,
//! both async-signal-safe.

use std::sync::atomic::{AtomicI32, Ordering};

static CHILD: AtomicI32 = AtomicI32::new(0);
static RECEIVED: AtomicI32 = AtomicI32::new(0);

const STOP_SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

extern "C" fn on_signal(sig: libc::c_int) {
    RECEIVED.store(sig, Ordering::SeqCst);
    let pid = CHILD.load(Ordering::SeqCst);
    if pid > 0 {
        // SAFETY: kill is async-signal-safe and has no memory-safety preconditions.
        unsafe { libc::kill(pid, sig) };
    }
}

fn install() {
    for sig in STOP_SIGNALS {
        // SAFETY: a zeroed sigaction is valid; the handler only touches atomics and calls
        // kill (async-signal-safe).
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
            sa.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// From now on, SIGINT/SIGTERM/SIGHUP sent to clrprof are sent on to `pid`.
pub fn forward_to(pid: u32) {
    CHILD.store(pid as i32, Ordering::SeqCst);
    install();
}

/// From now on, SIGINT/SIGTERM/SIGHUP only set [`received`].
pub fn catch() {
    install();
}

/// The last stop signal received, if any.
pub fn received() -> Option<i32> {
    match RECEIVED.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}
