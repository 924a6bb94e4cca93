//! Output: from a thread's event to the trace file. Each thread that records gets a slot
//! with a ring of 8-byte words (`slot`, `ring`; `buffers` creates and finds them), found through a thread-local pointer
//! or, for the ELT assembly, through the thread-pointer table (`tpmap`); one writer
//! thread drains every ring into blocks of the file (`writer`), which `outfile` creates
//! without trusting its directory. This room knows nothing of callbacks, sampling or
//! tracing: they call `buffers::emit` (and the ELT hooks `emit_elt` or the ring itself;
//! `--counts` hooks a thread's call-count table, `counts`, which the writer snapshots).
//! `ondemand` is the mailbox through which `--waits`' ContentionStart callbacks ask the
//! signal sampler for a lock owner's stack.

pub(crate) mod buffers;
pub(crate) mod counts;
pub(crate) mod ondemand;
pub(crate) mod outfile;
pub(crate) mod ring;
pub(crate) mod session_cell;
pub(crate) mod slot;
pub(crate) mod tpmap;
pub(crate) mod writer;
