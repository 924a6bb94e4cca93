//! `--waits` (docs/waits.md): where threads wait, from the runtime's own events.
//!
//! The same in-process EventPipe machinery as `--alloc`, with sessions of its own on the
//! runtime provider: Contention (0x4000) and ThreadPool (0x10000) at the informational
//! level, and, on .NET 9 and later, WaitHandle (0x40000000000) at the verbose level in a
//! second session (one session at verbose with the ThreadPool keyword would also turn on
//! the thread pool's per-work-item enqueue/dequeue events). Keyword bits and payloads:
//! ClrEtwAll.man and `NativeRuntimeEventSource` in dotnet/runtime.
//!
//! - `ContentionStart` v2 (id 81): ContentionFlags u8, ClrInstanceID u16, LockID ptr,
//!   AssociatedObjectID ptr, LockOwnerThreadID u64. Raised on the thread that is about to
//!   block, so its stack is the waiter's (`own_stack`: the cache or a DoStackSnapshot).
//! - `ContentionStop` v1 (id 91): ContentionFlags u8, ClrInstanceID u16, DurationNs f64.
//! - `ThreadPoolWorkerThreadStart`/`Stop` (50/51): ActiveWorkerThreadCount u32,
//!   RetiredWorkerThreadCount u32, ClrInstanceID u16.
//! - `ThreadPoolWorkerThreadAdjustmentAdjustment` (55): AverageThroughput f64,
//!   NewWorkerThreadCount u32, Reason u32 (6 = starvation), ClrInstanceID u16.
//! - `WaitHandleWaitStart` (301, .NET 9+): WaitSource u8, AssociatedObjectID ptr,
//!   ClrInstanceID u16; `WaitHandleWaitStop` (302): ClrInstanceID u16.
//!
//! The lock's object is named only where the runtime raises the event in cooperative
//! mode (the monitor's native slow path: the object cannot move while the callback
//! runs). Where the event comes through `NativeRuntimeEventSource` (a QCall, preemptive
//! mode: a GC may move the object meanwhile), the object is not read; those are counted
//! (`WaitStats.unnamed`).

use std::borrow::Cow;

use crate::output::session_cell::SessionCell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use clrprof_format::{Event, WAIT_HANDLE, WAIT_LOCK};
use corprof::{EventPipeEvent, FunctionId, ObjectId, ProfilerInfo};

use crate::config::{EventGroup, Settings};
use crate::names::{self, Seen};
use crate::output::buffers::emit;

use super::{CLASSES_NAMED, Frames, PROVIDER, own_stack, splitmix};

pub const KEYWORD_CONTENTION: u64 = 0x4000;
pub const KEYWORD_THREADPOOL: u64 = 0x1_0000;
pub const KEYWORD_WAITHANDLE: u64 = 0x400_0000_0000;

const CONTENTION_START: u32 = 81;
const CONTENTION_STOP: u32 = 91;
const WORKER_START: u32 = 50;
const WORKER_STOP: u32 = 51;
const ADJUSTMENT: u32 = 55;
const WAIT_HANDLE_START: u32 = 301;
const WAIT_HANDLE_STOP: u32 = 302;

struct State {
    sessions: Vec<u64>,
    stopped: AtomicBool,
    delivered: AtomicU64,
    recorded: AtomicU64,
    unnamed: AtomicU64,
    classes: Seen,
}

static STATE: SessionCell<State> = SessionCell::new();

/// Leaf functions already judged: `id << 1 | raised_in_preemptive_mode`, direct-mapped.
static LEAF_KIND: [AtomicU64; 1024] = [const { AtomicU64::new(0) }; 1024];

/// At a session's start: the leaf judgements of the last one are forgotten (a function
/// id of an unloaded collectible assembly may be reused).
pub fn reset_for_session() {
    for k in &LEAF_KIND {
        k.store(0, Ordering::Relaxed);
    }
}

/// Between sessions: the last session's state goes.
pub fn release_at_detach() {
    STATE.clear();
}

/// Opens the sessions when the `waits` group is on. A failure is logged and recorded
/// (`WaitConfig.error`), the rest of the recording goes on.
pub fn start(info: &ProfilerInfo, settings: &Settings) {
    if !settings.events.contains(EventGroup::Waits) {
        return;
    }
    let major = info.get_runtime_information().map(|r| r.major).unwrap_or(0);
    let wait_handles = major >= 9;
    let mut keywords = KEYWORD_CONTENTION | KEYWORD_THREADPOOL;
    let mut sessions = Vec::new();
    let mut error = String::new();
    if info.version() < 12 {
        error = format!(
            "--waits needs ICorProfilerInfo12 (EventPipe sessions); this runtime has ICorProfilerInfo{}",
            info.version()
        );
    } else {
        match info.event_pipe_start_session(
            &[(
                PROVIDER,
                KEYWORD_CONTENTION | KEYWORD_THREADPOOL,
                corprof_sys::COR_PRF_EVENTPIPE_INFORMATIONAL,
            )],
            false,
        ) {
            Ok(s) => sessions.push(s),
            Err(e) => {
                error = format!("EventPipeStartSession (contention, thread pool) failed: {e}")
            }
        }
        if wait_handles && error.is_empty() {
            match info.event_pipe_start_session(
                &[(
                    PROVIDER,
                    KEYWORD_WAITHANDLE,
                    corprof_sys::COR_PRF_EVENTPIPE_VERBOSE,
                )],
                false,
            ) {
                Ok(s) => {
                    sessions.push(s);
                    keywords |= KEYWORD_WAITHANDLE;
                }
                Err(e) => {
                    log!(
                        "EventPipeStartSession (wait handles) failed: {e}; recording locks and the thread pool only"
                    );
                }
            }
        }
    }
    if !error.is_empty() {
        log!("{error}; recording without wait events");
        keywords = 0;
    } else {
        log!(
            "waits: contention and thread-pool events{}",
            if keywords & KEYWORD_WAITHANDLE != 0 {
                ", wait handles"
            } else {
                " (no wait-handle events before .NET 9)"
            }
        );
    }
    emit(&Event::WaitConfig {
        keywords,
        wait_handles: keywords & KEYWORD_WAITHANDLE != 0,
        error: Cow::Owned(error),
    });
    STATE.set(State {
        sessions,
        stopped: AtomicBool::new(false),
        delivered: AtomicU64::new(0),
        recorded: AtomicU64::new(0),
        unnamed: AtomicU64::new(0),
        classes: Seen::new(),
    });
}

/// An EventPipe event: true if it was one of `--waits`' (recorded here).
pub fn on_event(
    info: &ProfilerInfo,
    ev: &EventPipeEvent<'_>,
    functions: &Seen,
    maps: &std::sync::Mutex<crate::stackwalk::ilmap::IlMaps>,
) -> bool {
    let Some(st) = STATE.get() else {
        return false;
    };
    if !matches!(
        ev.event_id,
        CONTENTION_START
            | CONTENTION_STOP
            | WORKER_START
            | WORKER_STOP
            | ADJUSTMENT
            | WAIT_HANDLE_START
            | WAIT_HANDLE_STOP
    ) {
        return false;
    }
    if st.stopped.load(Ordering::Acquire) {
        return true;
    }
    st.delivered.fetch_add(1, Ordering::Relaxed);
    let thread = ev.thread.0 as u64;
    let d = ev.data;
    match ev.event_id {
        CONTENTION_START => {
            let Some(c) = payload::contention_start(d) else {
                return true;
            };
            let mut buf = Frames::new();
            own_stack(info, &mut buf, functions, maps);
            let frames = buf.as_slice();
            let mut class = 0u64;
            if c.object != 0 {
                if frames.first().is_some_and(|f| !raised_preemptive(info, *f)) {
                    if let Ok(k) = info.get_class_from_object(ObjectId(c.object as usize)) {
                        class = k.0 as u64;
                        if CLASSES_NAMED.first(k.0, &st.classes) {
                            emit(&Event::ClassName {
                                class,
                                name: Cow::Owned(names::class_name(info, k)),
                            });
                        }
                    }
                } else {
                    st.unnamed.fetch_add(1, Ordering::Relaxed);
                }
            }
            st.recorded.fetch_add(1, Ordering::Relaxed);
            emit(&Event::WaitStart {
                thread,
                kind: WAIT_LOCK,
                source: c.flags,
                lock: c.lock,
                object: c.object,
                owner: c.owner,
                class,
                frames: Cow::Borrowed(frames),
            });
            // The owner's stack now, by the signal sampler (best effort, never waited
            // for: output/ondemand.rs).
            crate::output::ondemand::request(thread, c.lock, c.owner);
        }
        CONTENTION_STOP => {
            let ns = payload::contention_stop(d).unwrap_or(0);
            emit(&Event::WaitStop {
                thread,
                kind: WAIT_LOCK,
                duration_ns: ns,
            });
        }
        WAIT_HANDLE_START => {
            let Some((source, object)) = payload::wait_handle_start(d) else {
                return true;
            };
            let mut buf = Frames::new();
            own_stack(info, &mut buf, functions, maps);
            st.recorded.fetch_add(1, Ordering::Relaxed);
            emit(&Event::WaitStart {
                thread,
                kind: WAIT_HANDLE,
                source,
                lock: 0,
                object,
                owner: 0,
                class: 0,
                frames: Cow::Borrowed(buf.as_slice()),
            });
        }
        WAIT_HANDLE_STOP => emit(&Event::WaitStop {
            thread,
            kind: WAIT_HANDLE,
            duration_ns: 0,
        }),
        ADJUSTMENT => {
            if let Some((throughput, threads, reason)) = payload::adjustment(d) {
                emit(&Event::ThreadPoolAdjust {
                    threads: u64::from(threads),
                    reason: u64::from(reason),
                    throughput_milli: if throughput.is_finite() && throughput > 0.0 {
                        (throughput * 1000.0) as u64
                    } else {
                        0
                    },
                });
            }
        }
        WORKER_START | WORKER_STOP => {
            if let Some((active, retired)) = payload::worker(d) {
                emit(&Event::ThreadPoolWorker {
                    started: ev.event_id == WORKER_START,
                    active: u64::from(active),
                    retired: u64::from(retired),
                });
            }
        }
        _ => {}
    }
    true
}

/// Whether the leaf function of the waiter's stack is where the runtime raises the
/// event through `NativeRuntimeEventSource` or the managed `System.Threading.Lock`:
/// a QCall, run in preemptive mode, where a GC may move the object. Judged once per
/// function (its name), then from a direct-mapped cache.
fn raised_preemptive(info: &ProfilerInfo, leaf: u64) -> bool {
    let slot = &LEAF_KIND[(splitmix(leaf) >> 54) as usize];
    let v = slot.load(Ordering::Relaxed);
    if v >> 1 == leaf && v != 0 {
        return v & 1 == 1;
    }
    let name = names::function_names(info, FunctionId(leaf as usize)).map(|n| n.name);
    // Unknown: treated as preemptive (the object is not read).
    // An interop stub as the leaf: a P/Invoke or QCall on its way out, preemptive too.
    let pre = name.as_deref().is_none_or(|n| {
        n.starts_with("System.Diagnostics.Tracing.NativeRuntimeEventSource")
            || n.starts_with("System.Threading.Lock.")
            || n.starts_with("System.Threading.Lock+")
            || n.starts_with("ILStubClass")
            || n.contains("IL_STUB")
            || n.contains("__PInvoke")
    });
    if let Some(n) = &name
        && slot.load(Ordering::Relaxed) == 0
    {
        log!(
            "waits: contention raised under {n}: the lock's object is {}",
            if pre {
                "not read (preemptive mode)"
            } else {
                "named"
            }
        );
    }
    slot.store(leaf << 1 | u64::from(pre), Ordering::Relaxed);
    pre
}

/// Stops the sessions and records the figures (before the writer stops).
pub fn stop(info: &ProfilerInfo) {
    let Some(st) = STATE.get() else {
        return;
    };
    if st.stopped.swap(true, Ordering::AcqRel) {
        return;
    }
    for s in &st.sessions {
        let _ = info.event_pipe_stop_session(*s);
    }
    let (delivered, recorded, unnamed) = (
        st.delivered.load(Ordering::Relaxed),
        st.recorded.load(Ordering::Relaxed),
        st.unnamed.load(Ordering::Relaxed),
    );
    log!(
        "wait events: {delivered} delivered, {recorded} waits recorded with their stack, {unnamed} lock objects not named"
    );
    emit(&Event::WaitStats {
        delivered,
        recorded,
        unnamed,
    });
    let o = &crate::output::ondemand::COUNTS;
    let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
    let stats = Event::WaitOwnerStats {
        requested: get(&o.requested),
        taken: get(&o.taken),
        owner_unknown: get(&o.owner_unknown),
        owner_exited: get(&o.owner_exited),
        queue_full: get(&o.queue_full),
        walk_failed: get(&o.walk_failed),
        no_sampler: get(&o.no_sampler),
    };
    log!("lock owners' stacks on demand: {stats:?}");
    emit(&stats);
}

/// The payloads, decoded (pure).
mod payload {
    struct Reader<'a> {
        data: &'a [u8],
        pos: usize,
    }

    impl Reader<'_> {
        fn take<const N: usize>(&mut self) -> Option<[u8; N]> {
            let s = self.data.get(self.pos..self.pos.checked_add(N)?)?;
            self.pos += N;
            s.try_into().ok()
        }
        fn u8(&mut self) -> Option<u8> {
            Some(self.take::<1>()?[0])
        }
        fn u16(&mut self) -> Option<u16> {
            Some(u16::from_le_bytes(self.take()?))
        }
        fn u32(&mut self) -> Option<u32> {
            Some(u32::from_le_bytes(self.take()?))
        }
        fn u64(&mut self) -> Option<u64> {
            Some(u64::from_le_bytes(self.take()?))
        }
        fn f64(&mut self) -> Option<f64> {
            Some(f64::from_le_bytes(self.take()?))
        }
    }

    fn reader(data: &[u8]) -> Reader<'_> {
        Reader { data, pos: 0 }
    }

    #[derive(Debug, PartialEq, Eq)]
    pub struct ContentionStart {
        pub flags: u8,
        pub lock: u64,
        pub object: u64,
        pub owner: u64,
    }

    /// `ContentionStart` v2; a v1 payload (flags and instance only) gives zeros.
    pub fn contention_start(data: &[u8]) -> Option<ContentionStart> {
        let mut r = reader(data);
        let flags = r.u8()?;
        let _clr = r.u16()?;
        Some(ContentionStart {
            flags,
            lock: r.u64().unwrap_or(0),
            object: r.u64().unwrap_or(0),
            owner: r.u64().unwrap_or(0),
        })
    }

    /// `ContentionStop` v1's duration in whole nanoseconds.
    pub fn contention_stop(data: &[u8]) -> Option<u64> {
        let mut r = reader(data);
        let _flags = r.u8()?;
        let _clr = r.u16()?;
        let ns = r.f64()?;
        (ns.is_finite() && ns >= 0.0).then_some(ns as u64)
    }

    /// `WaitHandleWaitStart`: (WaitSource, AssociatedObjectID).
    pub fn wait_handle_start(data: &[u8]) -> Option<(u8, u64)> {
        let mut r = reader(data);
        Some((r.u8()?, r.u64()?))
    }

    /// `ThreadPoolWorkerThreadAdjustmentAdjustment`: (throughput, new count, reason).
    pub fn adjustment(data: &[u8]) -> Option<(f64, u32, u32)> {
        let mut r = reader(data);
        Some((r.f64()?, r.u32()?, r.u32()?))
    }

    /// `ThreadPoolWorkerThreadStart`/`Stop`: (active, retired).
    pub fn worker(data: &[u8]) -> Option<(u32, u32)> {
        let mut r = reader(data);
        Some((r.u32()?, r.u32()?))
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn contention_start_v2_and_v1() {
            let mut d = vec![0u8];
            d.extend_from_slice(&7u16.to_le_bytes());
            d.extend_from_slice(&0x5000u64.to_le_bytes());
            d.extend_from_slice(&0x7f00_0010u64.to_le_bytes());
            d.extend_from_slice(&4242u64.to_le_bytes());
            assert_eq!(
                contention_start(&d),
                Some(ContentionStart {
                    flags: 0,
                    lock: 0x5000,
                    object: 0x7f00_0010,
                    owner: 4242
                })
            );
            assert_eq!(
                contention_start(&d[..3]),
                Some(ContentionStart {
                    flags: 0,
                    lock: 0,
                    object: 0,
                    owner: 0
                })
            );
            assert_eq!(contention_start(&d[..2]), None);
        }

        #[test]
        fn stop_adjustment_worker_wait_handle() {
            let mut d = vec![0u8, 7, 0];
            d.extend_from_slice(&20_123_456.7f64.to_le_bytes());
            assert_eq!(contention_stop(&d), Some(20_123_456));
            let mut d = vec![0u8, 7, 0];
            d.extend_from_slice(&f64::NAN.to_le_bytes());
            assert_eq!(contention_stop(&d), None);
            let mut a = 12.5f64.to_le_bytes().to_vec();
            a.extend_from_slice(&9u32.to_le_bytes());
            a.extend_from_slice(&6u32.to_le_bytes());
            a.extend_from_slice(&7u16.to_le_bytes());
            assert_eq!(adjustment(&a), Some((12.5, 9, 6)));
            assert_eq!(adjustment(&a[..12]), None);
            let mut w = 3u32.to_le_bytes().to_vec();
            w.extend_from_slice(&1u32.to_le_bytes());
            assert_eq!(worker(&w), Some((3, 1)));
            let mut h = vec![1u8];
            h.extend_from_slice(&0x7f00_0020u64.to_le_bytes());
            assert_eq!(wait_handle_start(&h), Some((1, 0x7f00_0020)));
            assert_eq!(wait_handle_start(&h[..5]), None);
        }
    }
}
