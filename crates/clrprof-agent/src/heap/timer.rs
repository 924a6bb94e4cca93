//! `clrprof record --heap SECONDS`: a native thread that takes a heap snapshot at each
//! given time after the profiler started (ForceGC must come from a thread of ours).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use corprof::ProfilerInfo;

use crate::os::thread::NativeThread;

pub struct HeapTimer {
    stop: Arc<AtomicBool>,
    thread: NativeThread,
}

impl HeapTimer {
    /// `drop_monitor`: the settings, when the GC monitor is to be dropped first.
    pub fn start(
        info: ProfilerInfo,
        at: Vec<f64>,
        drop_monitor: Option<crate::config::Settings>,
    ) -> std::io::Result<HeapTimer> {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let started = Instant::now();
        let thread = crate::os::thread::spawn("clrprof-heap", move || {
            // Loaded at startup: COR_PRF_MONITOR_GC was set in Initialize so that the
            // runtime creates a GC without background collections; drop it until the
            // first snapshot so that ordinary GCs do not walk the heap.
            if let Some(settings) = drop_monitor.as_ref() {
                // Only once the runtime has created its GC (see snapshot::GC_CREATED); a
                // runtime that never says so within the limit is long past that point.
                if !super::snapshot::wait_for_gc_created(Duration::from_secs(10), &s)
                    && s.load(Ordering::Acquire)
                {
                    return;
                }
                super::snapshot::monitor_between_snapshots(&info, settings);
            }
            for t in at {
                let due = started + Duration::from_secs_f64(t);
                while Instant::now() < due {
                    if s.load(Ordering::Acquire) {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(10).min(due - Instant::now()));
                }
                if s.load(Ordering::Acquire) {
                    return;
                }
                match super::snapshot::take(&info, clrprof_format::HeapReason::Timer) {
                    Ok(sum) => log!(
                        "heap snapshot {}: {} objects, {} references, {} roots, {} lost, target paused {:.1} ms",
                        sum.snapshot,
                        sum.objects,
                        sum.references,
                        sum.roots,
                        sum.lost,
                        sum.pause_ns as f64 / 1e6
                    ),
                    Err(e) => log!("heap snapshot at {t} s failed: {e}"),
                }
            }
        })?;
        Ok(HeapTimer { stop, thread })
    }

    /// Stops waiting and joins (a snapshot under way finishes first).
    pub fn stop(self) {
        self.stop.store(true, Ordering::Release);
        self.thread.finish();
    }
}
