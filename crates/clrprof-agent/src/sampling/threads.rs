//! The thread registry: managed threads and their OS thread ids, from
//! ThreadAssignedToOSThread and ThreadDestroyed (and, after attach, one enumeration):
//! the threads the signal sampler signals.

use std::sync::{Mutex, PoisonError};

use corprof::ProfilerInfo;

/// Most threads the registry keeps (more are not sampled in signal mode, and counted).
pub(super) const MAX_THREADS: usize = 16_384;

/// Managed threads and their OS thread ids (ThreadAssignedToOSThread, ThreadDestroyed):
/// the threads the signal sampler signals. A lock held only for a push, a removal or a
/// copy; the sampler thread never runs managed code, so waiting here cannot deadlock with
/// a GC.
static THREADS: Mutex<Vec<(u64, u32)>> = Mutex::new(Vec::new());

/// After a detach: the registry's memory back (the unload of the library drops no static).
pub fn release_at_detach() {
    *THREADS.lock().unwrap_or_else(PoisonError::into_inner) = Vec::new();
}

/// ThreadAssignedToOSThread: the thread becomes a sampling target.
pub fn thread_assigned(thread: u64, os_tid: u32) {
    let mut t = THREADS.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(e) = t.iter_mut().find(|e| e.0 == thread) {
        e.1 = os_tid;
    } else if t.len() < MAX_THREADS {
        t.push((thread, os_tid));
    }
}

/// ThreadDestroyed: the thread is no longer signalled.
pub fn thread_gone(thread: u64) {
    let mut t = THREADS.lock().unwrap_or_else(PoisonError::into_inner);
    t.retain(|e| e.0 != thread);
}

pub(super) fn forget_tid(os_tid: u32) {
    let mut t = THREADS.lock().unwrap_or_else(PoisonError::into_inner);
    t.retain(|e| e.1 != os_tid);
}

/// Threads that existed before the callbacks could tell us (attach, or threads created
/// before the sampler started): one suspension to enumerate them safely.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
pub(super) fn seed_registry(info: &ProfilerInfo) {
    if !super::suspend::suspend_with_retry(info) {
        crate::log!("signal sampler: could not suspend the runtime to list existing threads");
        return;
    }
    let found: Vec<(u64, u32)> = info
        .enum_threads()
        .map(|threads| {
            threads
                .into_iter()
                .filter_map(|t| {
                    let tid = info.get_thread_info(t).ok()?;
                    (tid != 0).then_some((t.0 as u64, tid))
                })
                .collect()
        })
        .unwrap_or_default();
    let _ = info.resume_runtime();
    for (thread, tid) in found {
        thread_assigned(thread, tid);
    }
}

/// Appends the registered (thread, OS thread id) pairs to `out`.
pub(super) fn copy_into(out: &mut Vec<(u64, u32)>) {
    out.extend(
        THREADS
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .copied(),
    );
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
pub(super) fn thread_alive(os_tid: u32) -> bool {
    std::path::Path::new(&format!("/proc/self/task/{os_tid}")).exists()
}

/// The first time the sampler sees a thread: its OS name (`/proc/self/task/TID/comm`,
/// 15 bytes), as a `thread_os_name` Meta record, so that the runtime's own threads, which
/// never get a `ThreadName` (".NET Tiered Compilation Worker", ".NET Finalizer", the GC's
/// threads), are named in the report and their CPU put under what they are. Read on the
/// sampler thread, never the target's; the process's first thread (named after the
/// executable) is left out.
pub(super) fn emit_os_name(os_tid: u64) {
    if os_tid == 0 || os_tid == u64::from(std::process::id()) {
        return;
    }
    let Ok(comm) = std::fs::read_to_string(format!("/proc/self/task/{os_tid}/comm")) else {
        return;
    };
    let name = comm.trim_end();
    if name.is_empty() {
        return;
    }
    let json = serde_json::json!({ "os_tid": os_tid, "name": name }).to_string();
    crate::output::buffers::emit(&clrprof_format::Event::Meta {
        key: "thread_os_name".into(),
        json: json.into(),
    });
}
