//! Heap snapshots (docs/heap.md): `snapshot` forces a full GC with the GC monitor on and
//! records the runtime's walk of it in batches; `statics` reads the static fields of the
//! classes the walk met; `timer` takes snapshots at given times (`--heap SECONDS`).

mod snapshot;
mod statics;
mod timer;

pub(crate) use snapshot::reset_for_session;
pub(crate) use snapshot::{
    gc_finished, gc_started, monitor_between_snapshots, note_handle_created, object_references,
    root_references, take,
};
pub(crate) use timer::HeapTimer;

/// Between sessions: a walk left by a snapshot that never finished goes.
pub fn release_at_detach() {
    snapshot::reset_for_session();
}
