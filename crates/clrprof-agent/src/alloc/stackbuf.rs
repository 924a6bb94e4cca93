//! A sample's frames in a fixed buffer on the allocating thread's stack (no allocation
//! per sample), filled from the stack cache or by DoStackSnapshot.

/// A frame list on the caller's stack: the allocating thread must not allocate.
pub struct FrameBuf<const N: usize> {
    pub buf: [u64; N],
    pub n: usize,
}

impl<const N: usize> FrameBuf<N> {
    pub const fn new() -> Self {
        FrameBuf { buf: [0; N], n: 0 }
    }

    pub fn as_slice(&self) -> &[u64] {
        &self.buf[..self.n]
    }

    /// Appends `v`; a full buffer keeps what it has.
    pub fn push(&mut self, v: u64) {
        if self.n < N {
            self.buf[self.n] = v;
            self.n += 1;
        }
    }
}
