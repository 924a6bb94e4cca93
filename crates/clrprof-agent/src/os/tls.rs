//! Thread-specific keys (`pthread_key_create`): the per-thread buffer registration uses
//! one, whose destructor runs when a thread exits. A Rust `thread_local!` with a
//! destructor would make glibc pin the library (see output/buffers.rs).

use std::ffi::c_void;

/// A pthread key, as the `usize` the buffers keep in an atomic.
pub type Key = usize;

/// Creates a key whose destructor is `destructor`; `None` when the system has no key left.
/// The destructor must never unwind and must stay valid until [`delete`] is called.
pub fn create(destructor: extern "C" fn(*mut c_void)) -> Option<Key> {
    let mut key: libc::pthread_key_t = 0;
    // SAFETY: (A8) `key` is a valid out pointer; the destructor is an extern "C" fn that
    // never unwinds (the caller's contract) and stays valid until `delete`.
    let rc = unsafe { libc::pthread_key_create(&mut key, Some(destructor)) };
    (rc == 0).then_some(key as Key)
}

/// Deletes a key: its destructor never runs again.
///
/// # Safety
/// `key` came from [`create`] and is deleted once.
pub unsafe fn delete(key: Key) {
    // SAFETY: (A8) per the function's contract.
    unsafe { libc::pthread_key_delete(key as libc::pthread_key_t) };
}

/// Stores the calling thread's value for `key`; false when it could not be stored.
///
/// # Safety
/// `key` came from [`create`] and was not deleted; the value is released by its
/// destructor.
pub unsafe fn set(key: Key, value: *const c_void) -> bool {
    // SAFETY: (A8) per the function's contract.
    unsafe { libc::pthread_setspecific(key as libc::pthread_key_t, value) == 0 }
}
