//! What the agent asks of the machine, and the only place it calls libc: clocks, its own
//! threads, thread-specific keys, memory pages, signals, futexes and this process's ids
//! and memory. Each call sits in a small function here with its `// SAFETY:` reasoning
//! (rule A8 of docs/safety.md), so the rest of the agent reads as Rust. Functions that
//! the SIGPROF handler or the ELT slow path call are `#[inline]`: moving them here adds
//! no call.

pub mod clock;
pub mod futex;
pub mod pages;
pub mod process;
pub mod signal;
pub mod thread;
pub mod tls;
