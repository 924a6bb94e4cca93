//! The agent's global allocator: small blocks from `malloc`, large ones (64 KiB and up)
//! from pages of our own (`mmap`, [`super::pages`]), returned to the kernel at their free.
//!
//! Why: glibc keeps a thread's freed memory in that thread's arena, and `malloc_trim`
//! gives back only whole free pages *inside* a non-main arena's heap, never its top
//! chunk (only the main arena's top is trimmed). A large block freed by an agent thread
//! (the writer's 1 MiB scratch, the sampler's frame arrays, the symbolizer's tables)
//! merges into that top and stays resident in the target after the detach. And a large
//! block that glibc itself mmapped raises its *dynamic* mmap threshold when freed (up to
//! 32 MiB, the trim threshold to twice that), so the next session's large blocks came
//! from the arenas: each attach cycle on an idle target grew it by 8-25 KiB (soak: one
//! arena heap after another growing to ~1.3 MiB resident, under 25 KiB of it in use), and
//! changed the target's own malloc thresholds. With this allocator no block of ours raises
//! them and none stays in an arena's top.
//!
//! No hot path allocates (docs/safety.md), so the `mmap`/`munmap` of a large block is
//! never on one.

use std::alloc::{GlobalAlloc, Layout, System};
use std::ptr::{NonNull, null_mut};

/// Blocks of this many bytes or more are pages of our own.
pub const LARGE: usize = 64 << 10;

const PAGE: usize = 4096;

/// See the module documentation.
pub struct AgentAlloc;

fn large(size: usize, align: usize) -> bool {
    size >= LARGE && align <= PAGE
}

fn pages(size: usize) -> usize {
    size.div_ceil(PAGE) * PAGE
}

// SAFETY: (A5) large blocks are fresh anonymous mappings of `pages(size)` bytes, page
// aligned (so aligned for any `align <= PAGE`, the only ones routed there), unmapped once
// with the same length at their `dealloc` (the layout's size decides the route both ways,
// so a block goes back the way it came); every other block is `System`'s, with its
// contract forwarded unchanged.
unsafe impl GlobalAlloc for AgentAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if large(layout.size(), layout.align()) {
            super::pages::map(pages(layout.size())).map_or(null_mut(), NonNull::as_ptr)
        } else {
            // SAFETY: (A5) the caller's contract for `alloc`, forwarded.
            unsafe { System.alloc(layout) }
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if large(layout.size(), layout.align()) {
            // Fresh anonymous pages are zero.
            super::pages::map(pages(layout.size())).map_or(null_mut(), NonNull::as_ptr)
        } else {
            // SAFETY: (A5) the caller's contract for `alloc_zeroed`, forwarded.
            unsafe { System.alloc_zeroed(layout) }
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if large(layout.size(), layout.align()) {
            if let Some(p) = NonNull::new(ptr) {
                // SAFETY: (A5) `ptr` came from `alloc` with this layout (the caller's
                // contract), so from one `map` of exactly `pages(size)` bytes.
                unsafe { super::pages::unmap(p, pages(layout.size())) };
            }
        } else {
            // SAFETY: (A5) the caller's contract for `dealloc`, forwarded.
            unsafe { System.dealloc(ptr, layout) }
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let (was, will) = (
            large(layout.size(), layout.align()),
            large(new_size, layout.align()),
        );
        match (was, will) {
            // SAFETY: (A5) the caller's contract for `realloc`, forwarded: both sizes
            // are `System`'s route.
            (false, false) => unsafe { System.realloc(ptr, layout, new_size) },
            (true, true) => {
                // SAFETY: (A5) `ptr` is one mapping of `pages(layout.size())` bytes (the
                // caller's contract); `remap` moves it as a whole or leaves it alone.
                unsafe { super::pages::remap(ptr, pages(layout.size()), pages(new_size)) }
                    .map_or(null_mut(), NonNull::as_ptr)
            }
            _ => {
                // SAFETY: (A5) the new layout is valid: the caller promises `new_size`
                // rounded up to `align` does not overflow isize.
                let new = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
                // SAFETY: (A5) `new` has a non-zero size (it or the old one is large,
                // and the caller promises `new_size > 0`).
                let q = unsafe { self.alloc(new) };
                if !q.is_null() {
                    // SAFETY: (A5) both blocks are live and distinct, each at least the
                    // smaller size long; `ptr` was allocated with `layout` by us.
                    unsafe {
                        std::ptr::copy_nonoverlapping(ptr, q, layout.size().min(new_size));
                        self.dealloc(ptr, layout);
                    }
                }
                q
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{AgentAlloc, LARGE};
    use std::alloc::{GlobalAlloc, Layout};

    /// Every route and every crossing between them keeps the bytes.
    #[test]
    fn small_large_and_the_crossings_keep_their_bytes() {
        let a = AgentAlloc;
        let sizes = [16, LARGE - 1, LARGE, LARGE + 1, 3 * LARGE + 5, 100];
        let l = Layout::from_size_align(sizes[0], 8).unwrap();
        // SAFETY: (A5) each block is used within its current size and freed once with the
        // layout it has at that moment.
        unsafe {
            let mut p = a.alloc(l);
            assert!(!p.is_null());
            let mut size = sizes[0];
            for (i, &next) in sizes.iter().enumerate().skip(1) {
                for k in 0..size.min(next) {
                    *p.add(k) = (k as u8) ^ (i as u8);
                }
                p = a.realloc(p, Layout::from_size_align(size, 8).unwrap(), next);
                assert!(!p.is_null());
                for k in 0..size.min(next) {
                    assert_eq!(*p.add(k), (k as u8) ^ (i as u8), "{size} -> {next} at {k}");
                }
                size = next;
            }
            a.dealloc(p, Layout::from_size_align(size, 8).unwrap());
            let z = Layout::from_size_align(2 * LARGE, 64).unwrap();
            let q = a.alloc_zeroed(z);
            assert!((0..2 * LARGE).all(|k| *q.add(k) == 0));
            a.dealloc(q, z);
        }
    }
}
