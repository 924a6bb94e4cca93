//! The agent's own threads, started with `pthread_create` rather than `std::thread`.
//!
//! Why: `std::thread::spawn` initialises a thread-local (its spawn hooks) on the *calling*
//! thread, which registers a TLS destructor with glibc. When the caller is a runtime thread
//! (InitializeForAttach runs on the diagnostics server thread, which lives for ever), glibc
//! then keeps our library loaded for the life of that thread, and a detached profiler could
//! never be unloaded. Starting threads here touches no Rust thread-local on the caller.
//! Inside the new thread std is used freely: its TLS destructors run when it exits, which
//! is before any detach completes (every thread is joined first).

use std::ffi::c_void;
use std::io;
use std::panic::AssertUnwindSafe;

type Job = Box<dyn FnOnce() + Send + 'static>;

/// A joinable native thread.
pub struct NativeThread {
    handle: libc::pthread_t,
    joined: bool,
}

extern "C" fn start(arg: *mut c_void) -> *mut c_void {
    // SAFETY: (A8) `arg` is the Box<Job> leaked by `spawn` for this thread alone.
    let job = unsafe { Box::from_raw(arg as *mut Job) };
    // A panic ends this thread quietly; it must not unwind into libc.
    let _ = std::panic::catch_unwind(AssertUnwindSafe(job));
    std::ptr::null_mut()
}

/// Starts `f` on a new thread named `name` (at most 15 bytes are kept by Linux).
pub fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> io::Result<NativeThread> {
    let job: Box<Job> = Box::new(Box::new(f));
    let arg = Box::into_raw(job) as *mut c_void;
    let mut handle: libc::pthread_t = 0;
    // SAFETY: (A8) `handle` is a valid out pointer, `start` has the pthread start signature and
    // takes ownership of `arg`, default attributes (null) are allowed.
    let rc = unsafe { libc::pthread_create(&mut handle, std::ptr::null(), start, arg) };
    if rc != 0 {
        // SAFETY: (A8) the thread was not created, so `arg` is still ours to free.
        drop(unsafe { Box::from_raw(arg as *mut Job) });
        return Err(io::Error::from_raw_os_error(rc));
    }
    let mut cname = [0u8; 16];
    for (d, s) in cname.iter_mut().zip(name.bytes().take(15)) {
        *d = s;
    }
    // SAFETY: (A8) `handle` is a live thread and `cname` is NUL-terminated (16 bytes, ≤15 used).
    unsafe { libc::pthread_setname_np(handle, cname.as_ptr() as *const libc::c_char) };
    Ok(NativeThread {
        handle,
        joined: false,
    })
}

impl NativeThread {
    /// Waits for the thread to end. Must not be called from the thread itself.
    pub fn join(mut self) {
        self.join_inner();
    }

    fn join_inner(&mut self) {
        if !self.joined {
            self.joined = true;
            // SAFETY: (A8) `handle` is a joinable thread we created and have not joined yet.
            unsafe { libc::pthread_join(self.handle, std::ptr::null_mut()) };
        }
    }

    /// Whether the caller is this thread.
    pub fn is_current(&self) -> bool {
        // SAFETY: (A8) pthread_self/pthread_equal have no preconditions.
        unsafe { libc::pthread_equal(self.handle, libc::pthread_self()) != 0 }
    }

    /// Waits for the thread to end, or, called from the thread itself (which cannot wait
    /// for itself), lets it end on its own.
    pub fn finish(self) {
        if self.is_current() {
            self.detach();
        } else {
            self.join();
        }
    }

    /// Lets the thread end on its own, unjoined.
    pub fn detach(mut self) {
        self.joined = true;
        // SAFETY: (A8) `handle` is a joinable thread we created; detaching it once is allowed.
        unsafe { libc::pthread_detach(self.handle) };
    }
}

impl Drop for NativeThread {
    fn drop(&mut self) {
        if !self.joined && !self.is_current() {
            self.join_inner();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    #[test]
    fn runs_and_joins() {
        let flag = Arc::new(AtomicBool::new(false));
        let f = flag.clone();
        let t = spawn("clrprof-test", move || f.store(true, Ordering::SeqCst)).unwrap();
        t.join();
        assert!(flag.load(Ordering::SeqCst));
    }
}

/// The calling thread's stack as `[low, high)`, from `pthread_getattr_np` (for the
/// process's main thread glibc reads `/proc/self/maps` for it: call once per thread and
/// keep the answer).
pub fn own_stack() -> Option<(u64, u64)> {
    // SAFETY: (A8) a zeroed `pthread_attr_t` is only an out value for
    // `pthread_getattr_np`, which initialises it; it is destroyed once, after the reads.
    unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) != 0 {
            return None;
        }
        let mut addr: *mut c_void = std::ptr::null_mut();
        let mut size: libc::size_t = 0;
        let rc = libc::pthread_attr_getstack(&attr, &mut addr, &mut size);
        libc::pthread_attr_destroy(&mut attr);
        let low = addr as u64;
        (rc == 0 && size > 0).then_some((low, low.checked_add(size as u64)?))
    }
}

#[cfg(test)]
mod own_stack_tests {
    #[test]
    fn the_stack_holds_a_local() {
        let local = 0u64;
        let at = std::ptr::addr_of!(local) as u64;
        let (low, high) = super::own_stack().expect("stack range");
        assert!(low < at && at < high, "{low:#x} {at:#x} {high:#x}");
    }
}
