//! Large buffers straight from the kernel (`mmap`), for the rings and the signal
//! sampler's stack copies. Not `malloc`: glibc raises its mmap threshold after the first
//! large free, so later buffers would come from the (target's) heap arenas and stay
//! resident after a detach; pages of our own are untouched until used and go back to the
//! kernel at `munmap`, so an attach/detach cycle leaves the target's memory where it was.

use std::ptr::NonNull;

/// `len` bytes of zeroed, page-aligned memory, or `None`.
pub fn map(len: usize) -> Option<NonNull<u8>> {
    if len == 0 {
        return None;
    }
    // SAFETY: (A5) an anonymous private mapping with no address hint; no memory is aliased.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        None
    } else {
        NonNull::new(p as *mut u8)
    }
}

/// `len` bytes of `file` mapped shared (`MAP_SHARED`), or `None`: what is stored there is
/// in the file at once, for whoever reads it, even if this process is killed the next
/// instant. `clrprof coverage`'s counters. Never unmapped: the instrumented code that
/// writes there lives as long as the process.
pub fn map_shared(file: &std::fs::File, len: usize) -> Option<NonNull<u8>> {
    use std::os::fd::AsRawFd;
    if len == 0 {
        return None;
    }
    // SAFETY: (A12) a shared mapping of a file this process created and opened read-write,
    // of a length the caller set with `set_len`; no address hint, so no memory is replaced.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            0,
        )
    };
    if p == libc::MAP_FAILED {
        None
    } else {
        NonNull::new(p as *mut u8)
    }
}

/// Returns memory from [`map`].
///
/// # Safety
/// `p` and `len` must be exactly what one `map` call returned and was given, unmapped
/// once, with no reference into it left.
pub unsafe fn unmap(p: NonNull<u8>, len: usize) {
    // SAFETY: (A5) per the function's contract.
    unsafe { libc::munmap(p.as_ptr() as *mut libc::c_void, len) };
}

/// Resizes one mapping from [`map`] (`mremap`, moving it if it must): the new address, or
/// `None` with the old mapping untouched.
///
/// # Safety
/// `p` and `old` must be exactly what one `map` (or `remap`) call returned and was given;
/// on success the old address is gone, so no reference into it may be used after.
pub unsafe fn remap(p: *mut u8, old: usize, new: usize) -> Option<NonNull<u8>> {
    // SAFETY: (A5) per the function's contract; MREMAP_MAYMOVE without a fixed address
    // replaces no other mapping.
    let q = unsafe { libc::mremap(p as *mut libc::c_void, old, new, libc::MREMAP_MAYMOVE) };
    if q == libc::MAP_FAILED {
        None
    } else {
        NonNull::new(q as *mut u8)
    }
}

/// Gives the free memory of the malloc arenas back to the kernel (`malloc_trim(0)`: whole
/// free pages inside every arena's heap with `MADV_DONTNEED`, and the main arena's top;
/// glibc never trims a thread arena's top chunk here, which is why the agent's large
/// blocks are not `malloc`'s at all: `os::allocator`). Called once at detach: the agent's
/// threads freed what they allocated, but glibc keeps freed chunks in their arenas.
pub fn trim_heap() {
    // SAFETY: (A8) malloc_trim takes glibc's arena locks itself and has no preconditions.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn map_write_unmap() {
        let p = super::map(1 << 20).unwrap();
        // SAFETY: (A5) 1 MiB mapped just above, written then unmapped once.
        unsafe {
            assert_eq!(*p.as_ptr().add(12345), 0);
            *p.as_ptr().add(12345) = 7;
            super::unmap(p, 1 << 20);
        }
        assert!(super::map(0).is_none());
    }
}
