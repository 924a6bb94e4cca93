//! Heap snapshots (docs/heap.md): [`snapshot::load`] reads one from a trace into flat
//! arrays, [`model::Model`] roots it and computes dominators
//! ([`dominators`], Cooper–Harvey–Kennedy) and retained sizes, [`report::build`] makes
//! the heap report, `crate::diff::heap` compares two, `crate::text` prints them.

pub mod dominators;
pub mod model;
pub mod report;
pub mod snapshot;

pub use report::{HeapOptions, HeapReport, build};
pub use snapshot::{HeapSnapshot, load};
