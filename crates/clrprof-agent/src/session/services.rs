//! One start/stop contract for everything a session runs (the writer, the event mask, the
//! allocation feed, the hooks or probes, the heap timer, the control socket, the sampler):
//! each is a [`Service`] of one list, started in the list's order and stopped in reverse.
//!
//! - A service's start gives a [`Running`] service, nothing (not wanted with these
//!   settings, or a failure the recording goes on without, which the service logs itself),
//!   or an error. An error ends the start: the services already running stop, in reverse,
//!   and the error names the service that failed.
//! - The list is started in [`Phase`]s: most services in Initialize (or
//!   InitializeForAttach, or a dormant agent's restart); those that name what they meet
//!   once the callbacks can ([`Phase::Ready`]).
//! - A running service stops with the recording ([`Until::Recording`]: detach, runtime
//!   shutdown) or when the session ends ([`Until::Session`]: the control socket, whose
//!   thread asks for the detach and answers after the recording has stopped). A service of
//!   the recording that starts after the recording stopped is stopped at once.
//! - Nothing is stopped under the list's lock: a service's stop may join a thread (the
//!   control thread) that asks the list what runs.

use std::any::Any;
use std::sync::{Mutex, MutexGuard};

/// A started service: stopping it is all that is left.
pub(crate) trait Running: Any + Send {
    fn stop(self: Box<Self>, end: &End);
}

/// Why the services stop.
pub(crate) struct End<'a> {
    /// For the log: "detach requested", "runtime shutdown", ….
    pub why: &'a str,
    /// False after a start that failed: the trace is removed again, and nothing is said
    /// of it beside the trace or to `clrprof record`.
    pub started: bool,
}

/// When a service of the list starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// In Initialize, InitializeForAttach or a dormant agent's restart.
    Start,
    /// Once the callbacks can name the functions the service meets: right after
    /// Initialize, at ProfilerAttachComplete after the catch-up.
    Ready,
}

/// Until when a running service runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Until {
    /// Until the recording stops.
    Recording,
    /// Until the session ends, after the recording.
    Session,
}

/// What a service's start gives.
pub(crate) type Started = Result<Option<Box<dyn Running>>, String>;

/// One service of the list.
pub(crate) struct Service<C> {
    /// Names it in a failed start's error.
    pub name: &'static str,
    pub phase: Phase,
    pub until: Until,
    pub start: fn(&C) -> Started,
}

/// A running service, with its name and lifetime.
pub(crate) struct Entry {
    name: &'static str,
    until: Until,
    service: Box<dyn Running>,
}

#[derive(Default)]
struct List {
    running: Vec<Entry>,
    /// The recording stopped: a service of the recording started now stops at once.
    recording_over: bool,
}

/// The services a session runs, in the order they started.
#[derive(Default)]
pub(crate) struct Services(Mutex<List>);

impl Services {
    fn list(&self) -> MutexGuard<'_, List> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts the services of `list` in `phase`, in order. When one fails, every running
    /// service stops (in reverse), and the error names the one that failed.
    pub fn start<C>(&self, list: &[Service<C>], phase: Phase, ctx: &C) -> Result<(), String> {
        for s in list.iter().filter(|s| s.phase == phase) {
            match (s.start)(ctx) {
                Ok(Some(service)) => {
                    let entry = Entry {
                        name: s.name,
                        until: s.until,
                        service,
                    };
                    let late = {
                        let mut list = self.list();
                        if list.recording_over && s.until == Until::Recording {
                            Some(entry)
                        } else {
                            list.running.push(entry);
                            None
                        }
                    };
                    if let Some(e) = late {
                        e.service.stop(&End {
                            why: "the recording had stopped",
                            started: true,
                        });
                    }
                }
                Ok(None) => {}
                Err(e) => {
                    let why = format!("the {} did not start", s.name);
                    self.stop(
                        Until::Session,
                        &End {
                            why: &why,
                            // A start in Initialize failed: no recording.
                            started: phase != Phase::Start,
                        },
                    );
                    return Err(format!("{}: {e}", s.name));
                }
            }
        }
        Ok(())
    }

    /// Stops, in reverse order of their start, the services that run until `until`: those
    /// of the recording, or (`Until::Session`) every one still running.
    pub fn stop(&self, until: Until, end: &End) {
        let stopping: Vec<Entry> = {
            let mut list = self.list();
            list.recording_over = true;
            let all = std::mem::take(&mut list.running);
            let (stop, keep) = all
                .into_iter()
                .partition(|e| until == Until::Session || e.until == Until::Recording);
            list.running = keep;
            stop
        };
        for e in stopping.into_iter().rev() {
            e.service.stop(end);
        }
    }

    /// Whether the service of this name runs.
    pub fn is_running(&self, name: &str) -> bool {
        self.list().running.iter().any(|e| e.name == name)
    }

    /// `f` of the running service of type `T`, if there is one (under the list's lock:
    /// `f` only reads).
    pub fn with<T: Running, R>(&self, f: impl FnOnce(&T) -> R) -> Option<R> {
        let list = self.list();
        list.running
            .iter()
            .find_map(|e| {
                let any: &dyn Any = &*e.service;
                any.downcast_ref::<T>()
            })
            .map(f)
    }

    /// Takes the running service of this name out of the list, still running: a dormant
    /// agent's control thread goes on serving the next session ([`Services::adopt`]).
    pub fn hand_over(&self, name: &str) -> Option<Entry> {
        let mut list = self.list();
        let i = list.running.iter().position(|e| e.name == name)?;
        Some(list.running.remove(i))
    }

    /// A service another session started, handed over to this one; it stops with it.
    pub fn adopt(&self, entry: Entry) {
        self.list().running.push(entry);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// What the fake services did, in order.
    type Log = Arc<Mutex<Vec<String>>>;

    struct Fake {
        name: &'static str,
        log: Log,
    }

    impl Running for Fake {
        fn stop(self: Box<Self>, end: &End) {
            self.log.lock().unwrap().push(format!(
                "stop {} ({}{})",
                self.name,
                end.why,
                if end.started { "" } else { ", failed start" }
            ));
        }
    }

    struct Ctx {
        log: Log,
        /// The service whose start fails.
        fails: Option<&'static str>,
    }

    fn start(name: &'static str, ctx: &Ctx) -> Started {
        ctx.log.lock().unwrap().push(format!("start {name}"));
        if ctx.fails == Some(name) {
            return Err("refused".into());
        }
        Ok(Some(Box::new(Fake {
            name,
            log: ctx.log.clone(),
        })))
    }

    fn writer(c: &Ctx) -> Started {
        start("writer", c)
    }
    fn mask(c: &Ctx) -> Started {
        c.log.lock().unwrap().push("start mask".into());
        Ok(None)
    }
    fn timer(c: &Ctx) -> Started {
        start("timer", c)
    }
    fn control(c: &Ctx) -> Started {
        start("control", c)
    }
    fn sampler(c: &Ctx) -> Started {
        start("sampler", c)
    }

    const LIST: &[Service<Ctx>] = &[
        Service {
            name: "writer",
            phase: Phase::Start,
            until: Until::Recording,
            start: writer,
        },
        Service {
            name: "mask",
            phase: Phase::Start,
            until: Until::Recording,
            start: mask,
        },
        Service {
            name: "timer",
            phase: Phase::Start,
            until: Until::Recording,
            start: timer,
        },
        Service {
            name: "control",
            phase: Phase::Start,
            until: Until::Session,
            start: control,
        },
        Service {
            name: "sampler",
            phase: Phase::Ready,
            until: Until::Recording,
            start: sampler,
        },
    ];

    fn ctx(fails: Option<&'static str>) -> Ctx {
        Ctx {
            log: Log::default(),
            fails,
        }
    }

    fn taken(c: &Ctx) -> Vec<String> {
        std::mem::take(&mut *c.log.lock().unwrap())
    }

    #[test]
    fn services_start_in_order_by_phase_and_stop_in_reverse() {
        let c = ctx(None);
        let s = Services::default();
        s.start(LIST, Phase::Start, &c).unwrap();
        assert_eq!(
            taken(&c),
            ["start writer", "start mask", "start timer", "start control"]
        );
        assert!(!s.is_running("sampler") && !s.is_running("mask"));
        s.start(LIST, Phase::Ready, &c).unwrap();
        assert_eq!(taken(&c), ["start sampler"]);
        assert_eq!(s.with(|f: &Fake| f.name), Some("writer"));
        // The recording stops; the control socket runs on until the session ends.
        let end = End {
            why: "detach",
            started: true,
        };
        s.stop(Until::Recording, &end);
        assert_eq!(
            taken(&c),
            [
                "stop sampler (detach)",
                "stop timer (detach)",
                "stop writer (detach)"
            ]
        );
        assert!(s.is_running("control") && !s.is_running("writer"));
        s.stop(Until::Recording, &end);
        assert!(taken(&c).is_empty(), "each stops once");
        s.stop(Until::Session, &end);
        assert_eq!(taken(&c), ["stop control (detach)"]);
    }

    #[test]
    fn a_failed_start_stops_what_started_in_reverse_and_names_the_service() {
        let c = ctx(Some("control"));
        let s = Services::default();
        let e = s.start(LIST, Phase::Start, &c).unwrap_err();
        assert_eq!(e, "control: refused");
        assert_eq!(
            taken(&c),
            [
                "start writer",
                "start mask",
                "start timer",
                "start control",
                "stop timer (the control did not start, failed start)",
                "stop writer (the control did not start, failed start)",
            ]
        );
        assert!(!s.is_running("writer"));
        // A later phase's failure stops every service, the session's too (the recording
        // had started: its trace stays).
        let c = ctx(Some("sampler"));
        let s = Services::default();
        s.start(LIST, Phase::Start, &c).unwrap();
        taken(&c);
        assert_eq!(
            s.start(LIST, Phase::Ready, &c).unwrap_err(),
            "sampler: refused"
        );
        assert_eq!(
            taken(&c),
            [
                "start sampler",
                "stop control (the sampler did not start)",
                "stop timer (the sampler did not start)",
                "stop writer (the sampler did not start)",
            ]
        );
    }

    #[test]
    fn a_service_started_after_the_recording_stopped_stops_at_once() {
        let c = ctx(None);
        let s = Services::default();
        s.start(LIST, Phase::Start, &c).unwrap();
        s.stop(
            Until::Recording,
            &End {
                why: "detach",
                started: true,
            },
        );
        taken(&c);
        s.start(LIST, Phase::Ready, &c).unwrap();
        assert_eq!(
            taken(&c),
            ["start sampler", "stop sampler (the recording had stopped)"]
        );
        assert!(!s.is_running("sampler"));
    }

    #[test]
    fn a_handed_over_service_runs_on_in_the_next_session() {
        let c = ctx(None);
        let (old, new) = (Services::default(), Services::default());
        old.start(LIST, Phase::Start, &c).unwrap();
        let control = old.hand_over("control").expect("running");
        old.stop(
            Until::Session,
            &End {
                why: "old",
                started: true,
            },
        );
        taken(&c);
        new.adopt(control);
        assert!(new.is_running("control"));
        new.stop(
            Until::Session,
            &End {
                why: "new",
                started: true,
            },
        );
        assert_eq!(taken(&c), ["stop control (new)"]);
    }
}
