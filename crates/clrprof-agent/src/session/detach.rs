//! What the control socket asks of a session (status, a heap snapshot, detach), and when
//! an attached session detaches itself.

use std::time::Duration;

use clrprof_ipc::control::{HeapTaken, Response, Status};

use super::Session;
use crate::config::Settings;
use crate::control::{Controlled, Owner, Restarted, Watch};

/// How long after `--duration` an attached agent detaches itself if its CLI has not.
const DURATION_GRACE: Duration = Duration::from_secs(2);

/// When the control thread detaches on its own. The CLI detaches at the duration; this
/// is the backstop for a CLI that cannot (stopped, killed), a little later so the two do
/// not race.
pub(super) fn watch(settings: &Settings) -> Watch {
    Watch {
        deadline: settings
            .duration_s
            .and_then(|d| Duration::try_from_secs_f64(d).ok())
            .map(|d| std::time::Instant::now() + d + DURATION_GRACE),
        owner: settings.owner_pid.and_then(|pid| {
            let owner = Owner::new(pid, settings.owner_start);
            match &owner {
                None => log!(
                    "cannot see the clrprof that attached (pid {pid}) and it gave no start time: \
                     only its detach request or --duration will stop the recording"
                ),
                Some(o) if !o.alive() => log!(
                    "the clrprof that attached (pid {pid}) is already gone: the recording stops at once"
                ),
                Some(_) => {}
            }
            owner
        }),
    }
}

impl Controlled for Session {
    fn status(&self) -> Status {
        Status {
            pid: std::process::id(),
            mode: self.settings.mode,
            output: self.settings.output.clone(),
            recording: self.services.is_running("trace writer"),
            library: crate::os::process::own_library_path(),
            samples: self.services.with(|s: &super::SamplerThread| {
                s.0.stats.samples.load(std::sync::atomic::Ordering::Relaxed)
            }),
            probes: self.probes_report.lock().ok().and_then(|r| r.clone()),
            dormant: crate::session::state::current() == crate::session::state::DORMANT,
        }
    }

    fn start(&self, settings: &str) -> std::result::Result<Restarted, String> {
        let restart = super::RESTART
            .get()
            .ok_or("this profiler cannot start a session in place")?;
        let session = restart(settings)?;
        Ok(Restarted {
            watch: watch(session.settings()),
            target: session,
        })
    }

    fn heap(&self) -> std::result::Result<HeapTaken, String> {
        if self.detaching.load(std::sync::atomic::Ordering::Acquire) {
            return Err("the profiler is detaching".into());
        }
        crate::heap::take(&self.info, clrprof_format::HeapReason::Requested).map(|s| s.taken())
    }

    fn detach(&self) -> std::result::Result<Response, String> {
        if crate::session::state::current() == crate::session::state::DORMANT {
            return Err(
                "the profiler is dormant: it records nothing, and the runtime keeps it loaded until \
                 the process exits (CORPROF_E_IRREVERSIBLE_INSTRUMENTATION_PRESENT); a later \
                 `clrprof record --pid` starts its next recording"
                    .into(),
            );
        }
        if self
            .detaching
            .swap(true, std::sync::atomic::Ordering::AcqRel)
        {
            return Err("a detach is already in progress".into());
        }
        crate::session::state::detaching();
        self.stop("detach requested");
        // The control thread (this one) returns right after answering; the runtime's
        // ProfilerDetachSucceeded joins it before the library is unloaded.
        match self.info.request_profiler_detach(DETACH_EXPECTED_MS) {
            Ok(()) => Ok(Response::Detaching {
                trace: self.settings.output.clone(),
            }),
            // Trace mode after attach enabled ReJIT, after which the runtime never lets a
            // profiler go (even with every probe reverted): the recording is over and the
            // library stays, its threads stopped, until the process exits.
            Err(e) if e.0 == corprof_sys::CORPROF_E_IRREVERSIBLE_INSTRUMENTATION_PRESENT => {
                self.quiet_mask();
                crate::session::state::dormant();
                log!(
                    "the runtime keeps the library loaded after ReJIT ({e}): dormant until the process exits, \
                     or until a later `clrprof record --pid` starts a new recording in it"
                );
                // Gone already when `shutdown` is joining this very thread.
                if let Some(path) = self.control_path() {
                    crate::control::write_dormant_note(&path);
                }
                Ok(Response::Dormant {
                    trace: self.settings.output.clone(),
                    reason: e.to_string(),
                })
            }
            Err(e) => {
                // The runtime keeps this profiler: no other profiler may load, and the
                // next session starts in this one.
                self.quiet_mask();
                crate::session::state::dormant();
                log!("RequestProfilerDetach failed: {e}");
                Err(format!(
                    "RequestProfilerDetach failed: {e}; the trace is complete at {}",
                    self.settings.output.display()
                ))
            }
        }
    }
}

impl Session {
    /// A dormant agent asks for no callback: an empty event mask (the runtime lets an
    /// attached profiler clear every flag it set; `COR_PRF_ENABLE_REJIT` is not among the
    /// immutable ones, and the next session may set it again). The callbacks that come
    /// anyway (already under way, or not governed by the mask) find no session running.
    fn quiet_mask(&self) {
        if let Err(e) = self.info.set_event_mask2(0, 0) {
            log!("SetEventMask2(0, 0) failed: {e}; the dormant profiler keeps its event mask");
        }
    }
}

/// The expected-completion hint given to RequestProfilerDetach: when the runtime's detach
/// thread first checks that no thread is still inside the profiler. 0 means the runtime's
/// default, 2500 ms, which is what detach used to take. The runtime sleeps at least 300 ms
/// between checks (`ProfAPI_DetachMinSleepMs` can raise that floor, never lower it), checks
/// again at twice the hint, then only every 5 s; everything of ours has stopped before the
/// request, so the first check succeeds, and 300 ms gives a second chance at 600 ms.
/// (dotnet/runtime src/coreclr/vm/profdetach.cpp, `SleepWhileProfilerEvacuates`.)
const DETACH_EXPECTED_MS: u32 = 300;
