//! What the agent asks of the machine, and the only place it calls libc: clocks, its own
//! threads, thread-specific keys, memory pages, signals, futexes, this process's ids and
//! memory, who is at the other end of a Unix socket (`net`), and stderr written without
//! blocking (`stderr`). Each call sits in a small
//! function here with its `// SAFETY:` reasoning (rule A8 of docs/safety.md), so the rest
//! of the agent reads as Rust. The functions the
//! SIGPROF handler calls are `#[inline]`, so that moving them out of its module does not
//! stop them being inlined into it; `clock::ticks`, on every event's path, is
//! `#[inline(always)]` as before.

pub(crate) mod allocator;
pub(crate) mod clock;
pub(crate) mod futex;
pub(crate) mod net;
pub(crate) mod pages;
pub(crate) mod process;
pub(crate) mod signal;
pub(crate) mod stderr;
pub(crate) mod thread;
pub(crate) mod tls;
