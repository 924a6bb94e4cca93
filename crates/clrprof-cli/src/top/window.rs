//! `top`'s figures: the samples of the last `window` seconds (by when they were read,
//! at most one flush interval after they were taken), per function self and total CPU as
//! a percentage of one core, and per thread. The samples go through the report's
//! preparation (`samples::prepare`: waits, runtime activity, the GC poll folded into the
//! method that polled) and its CPU rule (`samples::share_cpu`), and the counting is
//! the report's `samples::functions`; the names come from the trace's name records seen
//! so far.
//!
//! Whose CPU it was: the report's one rule (`samples::share_cpu`): a sample parked in a
//! wait gets none, and each thread's CPU in the window is shared equally among its
//! samples that ran.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::time::{Duration, Instant};

use clrprof_analysis::names::Names;
use clrprof_analysis::runtime_frames::Windows;
use clrprof_analysis::samples::{
    StackSample, View, functions, prepare, share_cpu, stack_sample, thread_matches,
};
use clrprof_analysis::threads::ThreadNames;
use clrprof_analysis::timeline::TimedEvent;
use clrprof_format::Event;

use super::allocs::{AllocView, AllocWindow};
use super::waits::{WaitView, WaitWindow};
use crate::cli::TopSort;

/// One row of the table.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub name: String,
    /// CPU time with the function on top of the stack, in % of one core.
    pub self_pct: f64,
    /// CPU time with the function anywhere on the stack, in % of one core.
    pub total_pct: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ThreadRow {
    pub os_tid: u64,
    pub name: String,
    pub cpu_pct: f64,
    pub samples: u64,
}

/// What one refresh shows.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    pub rows: Vec<Row>,
    pub threads: Vec<ThreadRow>,
    /// Samples in the window (after the thread filter).
    pub samples: u64,
    /// Seconds the window covers so far.
    pub span_s: f64,
    /// CPU of the threads shown, in % of one core.
    pub cpu_pct: f64,
    /// `top --alloc`: the allocation rates of the threads shown.
    pub alloc: Option<AllocView>,
    /// `top --waits`: the waits the runtime reported, by lock type.
    pub waits: Option<WaitView>,
}

pub struct Window {
    length: Duration,
    started: Instant,
    batches: VecDeque<(Instant, Vec<StackSample>)>,
    /// (managed thread, OS thread) pairs seen in samples, which name OS threads: the
    /// first sample of each pair goes to `threads`.
    pairs: HashSet<(u64, u64)>,
    /// The name tables, built as the records are read.
    names: Names,
    threads: ThreadNames,
    /// GC and JIT windows, for what runtime frames were doing.
    windows: Windows,
    /// Per OS thread with samples in the window: how many, and its kernel name, read
    /// once when it came into the window (a thread that leaves it is forgotten, so a
    /// reused id is read again).
    in_window: HashMap<u64, (usize, Option<String>)>,
    /// `top --alloc`'s allocation samples.
    allocs: AllocWindow,
    /// `top --waits`' wait records.
    waits: WaitWindow,
    pub total_samples: u64,
    /// Events the agent could not record (its `Lost` records).
    pub lost: u64,
    /// The target, whose threads' kernel names stand in for names the trace lacks.
    pub pid: Option<u32>,
}

impl Window {
    pub fn new(length: Duration) -> Window {
        Window {
            length,
            started: Instant::now(),
            batches: VecDeque::new(),
            pairs: HashSet::new(),
            names: Names::default(),
            threads: ThreadNames::default(),
            windows: Windows::default(),
            in_window: HashMap::new(),
            allocs: AllocWindow::default(),
            waits: WaitWindow::default(),
            total_samples: 0,
            lost: 0,
            pid: None,
        }
    }

    /// The thread's .NET name, else its kernel name (runtime threads started before a
    /// launched program's first managed code are not named in the trace), else its id.
    fn thread_name(&self, os_tid: u64) -> String {
        if let Some(n) = self.threads.named(os_tid) {
            return n.to_string();
        }
        match self.in_window.get(&os_tid) {
            Some((_, Some(comm))) => comm.clone(),
            _ => format!("thread {os_tid}"),
        }
    }

    /// The kernel's name of one of the target's threads.
    fn kernel_name(&self, os_tid: u64) -> Option<String> {
        let pid = self.pid?;
        let comm = std::fs::read_to_string(format!("/proc/{pid}/task/{os_tid}/comm")).ok()?;
        let comm = comm.trim();
        (!comm.is_empty()).then(|| comm.to_string())
    }

    /// Adds what the trace gained since the last poll, read at `now`.
    pub fn add(&mut self, events: Vec<TimedEvent<'static>>, now: Instant) {
        let mut samples = Vec::new();
        for e in events {
            if let Some(s) = stack_sample(&e) {
                // A sample ties its managed thread to its OS thread (the thread names
                // need that after an attach).
                if let Event::Sample { os_tid, thread, .. } = e.event
                    && self.pairs.insert((thread, os_tid))
                {
                    self.threads.add(&e);
                }
                samples.push(s);
            } else if let Event::Lost { count, .. } = e.event {
                self.lost += count;
            } else if !self.allocs.observe(&e) && !self.waits.observe(&e, now) {
                self.names.add(&e);
                self.threads.add(&e);
                self.windows.add(&e);
            }
        }
        self.total_samples += samples.len() as u64;
        for s in &samples {
            if let Some(e) = self.in_window.get_mut(&s.os_tid) {
                e.0 += 1;
            } else {
                let comm = self.kernel_name(s.os_tid);
                self.in_window.insert(s.os_tid, (1, comm));
            }
        }
        if !samples.is_empty() {
            self.batches.push_back((now, samples));
        }
        self.allocs.close(now, self.length);
        self.waits.close(now, self.length);
        while let Some((t, _)) = self.batches.front() {
            if now.duration_since(*t) <= self.length {
                break;
            }
            let Some((_, old)) = self.batches.pop_front() else {
                break;
            };
            for s in &old {
                if let Some(e) = self.in_window.get_mut(&s.os_tid) {
                    e.0 -= 1;
                    if e.0 == 0 {
                        self.in_window.remove(&s.os_tid);
                    }
                }
            }
        }
    }

    /// The figures at `now`, of the thread `filter` names (its exact name or OS id, as
    /// `report --thread`), or of all.
    pub fn snapshot(&self, now: Instant, filter: Option<&str>, sort: TopSort) -> Snapshot {
        let span = now
            .duration_since(self.started)
            .min(self.length)
            .as_secs_f64()
            .max(1e-3);
        let mut kept: HashMap<u64, bool> = HashMap::new();
        let mut keep = |s: &&StackSample| match filter {
            None => true,
            Some(f) => *kept
                .entry(s.os_tid)
                .or_insert_with(|| thread_matches(f, s.os_tid, Some(&self.thread_name(s.os_tid)))),
        };
        let mut samples: Vec<StackSample> = self
            .batches
            .iter()
            .flat_map(|(_, b)| b.iter())
            .filter(&mut keep)
            .cloned()
            .collect();
        prepare(&mut samples, &self.names, &self.windows);
        let pct = |ns: u64| ns as f64 / 1e9 / span * 100.0;
        // The rows are sorted by `sort_rows`; the thread table keeps what each used.
        let mut shared = samples.clone();
        share_cpu(&mut shared, &self.names);
        let mut rows: Vec<Row> = functions(&shared, &self.names, View::Cpu, false)
            .into_iter()
            .map(|f| Row {
                name: f.name,
                self_pct: pct(f.self_cpu_ns),
                total_pct: pct(f.total_cpu_ns),
            })
            .filter(|r| r.total_pct > 0.0)
            .collect();
        sort_rows(&mut rows, sort);
        let mut per: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
        for s in &samples {
            let e = per.entry(s.os_tid).or_default();
            e.0 += s.cpu_ns;
            e.1 += 1;
        }
        let mut threads: Vec<ThreadRow> = per
            .into_iter()
            .map(|(os_tid, (ns, n))| ThreadRow {
                os_tid,
                name: self.thread_name(os_tid),
                cpu_pct: pct(ns),
                samples: n,
            })
            .collect();
        threads.sort_by(|a, b| {
            b.cpu_pct
                .total_cmp(&a.cpu_pct)
                .then(a.os_tid.cmp(&b.os_tid))
        });
        let alloc = self.allocs.view(span, &self.names, |os_tid| {
            filter.is_none_or(|f| thread_matches(f, os_tid, Some(&self.thread_name(os_tid))))
        });
        Snapshot {
            samples: samples.len() as u64,
            span_s: span,
            cpu_pct: pct(samples.iter().map(|s| s.cpu_ns).sum()),
            rows,
            threads,
            alloc,
            waits: self.waits.view(span, &self.names),
        }
    }
}

fn sort_rows(rows: &mut [Row], sort: TopSort) {
    match sort {
        TopSort::Own => rows.sort_by(|a, b| {
            b.self_pct
                .total_cmp(&a.self_pct)
                .then(b.total_pct.total_cmp(&a.total_pct))
                .then_with(|| a.name.cmp(&b.name))
        }),
        TopSort::Total => rows.sort_by(|a, b| {
            b.total_pct
                .total_cmp(&a.total_pct)
                .then(b.self_pct.total_cmp(&a.self_pct))
                .then_with(|| a.name.cmp(&b.name))
        }),
        TopSort::Name => rows.sort_by(|a, b| a.name.cmp(&b.name)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::borrow::Cow;

    /// `top --once` of a recorded trace (`sample-hot.bin`, 1 s of `hot 1`: `HotA` and
    /// `HotB` at 75/25), read by the live follower and shown over a 2 s window.
    #[test]
    fn once_rendering_of_a_recorded_trace() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../clrprof-analysis/tests/fixtures/sample-hot.bin");
        let mut follow = crate::live::follow::Follow::open(&path).unwrap();
        let now = Instant::now();
        let mut w = Window::new(Duration::from_secs(2));
        w.started = now - Duration::from_secs(1);
        w.add(follow.poll().unwrap(), now);
        for (name, filter, sort) in [
            ("all", None, TopSort::Own),
            ("total", None, TopSort::Total),
            ("thread", Some("hot-a"), TopSort::Own),
        ] {
            let snap = w.snapshot(now, filter, sort);
            let status = crate::top::view::Status {
                pid: 4242,
                command: "dotnet Scenarios.dll hot 1",
                sort,
                filter,
                paused: false,
                total_samples: w.total_samples,
                lost: w.lost,
                unreadable_bytes: follow.skipped_bytes,
            };
            insta::with_settings!({ snapshot_suffix => name, prepend_module_to_snapshot => false }, {
                insta::assert_snapshot!("top_once", crate::top::view::plain(&snap, &status, 15));
            });
        }
    }

    fn ev(event: Event<'static>) -> TimedEvent<'static> {
        TimedEvent {
            ns: 0,
            os_tid: 0,
            event,
        }
    }

    fn info(id: u64, name: &str) -> TimedEvent<'static> {
        ev(Event::FunctionInfo {
            function: id,
            module: 0,
            class: 0,
            token: 0,
            name: Cow::Owned(name.into()),
            signature: Cow::Borrowed(""),
        })
    }

    fn sample(tid: u64, cpu_ms: u64, frames: &[u64]) -> TimedEvent<'static> {
        ev(Event::Sample {
            os_tid: tid,
            thread: tid * 10,
            cpu_ns: cpu_ms * 1_000_000,
            state: 1,
            frames: Cow::Owned(frames.to_vec()),
        })
    }

    const LIBC: u64 = clrprof_format::NATIVE_MODULE_FRAME | 1;
    const CORECLR: u64 = clrprof_format::NATIVE_MODULE_FRAME | 2;

    #[test]
    fn waits_are_off_cpu_and_gc_polls_are_their_callers_time() {
        let mut w = Window::new(Duration::from_secs(10));
        let t0 = w.started;
        w.add(
            vec![
                info(1, "App.Work"),
                info(2, "System.Threading.Thread.Sleep"),
                info(3, "System.Threading.Thread.<PollGC>g__PollGCWorker|67_0"),
                info(4, "App.Loop"),
                // Thread 7: 40 ms of CPU, caught once working and once asleep (in
                // native code under `Thread.Sleep`).
                sample(7, 20, &[1]),
                sample(7, 20, &[LIBC, 2, 1]),
                // Thread 8: a loop caught in its GC poll, by the suspend sampler
                // (managed leaf) and by the signal sampler (in the runtime under it).
                sample(8, 5, &[3, 4]),
                sample(8, 5, &[CORECLR, 3, 4]),
            ],
            t0,
        );
        let s = w.snapshot(t0 + Duration::from_secs(1), None, TopSort::Own);
        let row = |n: &str| s.rows.iter().find(|r| r.name == n).cloned();
        // All of thread 7's CPU goes to the sample where it was working.
        assert!(
            (row("App.Work").unwrap().self_pct - 4.0).abs() < 1e-6,
            "{s:?}"
        );
        assert!(row("System.Threading.Thread.Sleep").is_none(), "{s:?}");
        assert!(
            (row("App.Loop").unwrap().self_pct - 1.0).abs() < 1e-6,
            "{s:?}"
        );
        assert!(row("System.Threading.Thread.<PollGC>g__PollGCWorker|67_0").is_none());
    }

    #[test]
    fn percentages_of_one_core_over_the_window_and_old_batches_leave() {
        let mut w = Window::new(Duration::from_secs(2));
        let t0 = w.started;
        w.add(
            vec![
                info(1, "App.Hot"),
                info(2, "App.Main"),
                ev(Event::ThreadName {
                    thread: 80,
                    name: Cow::Borrowed("worker-8"),
                }),
                sample(7, 500, &[1, 2]),
                sample(8, 250, &[2]),
            ],
            t0 + Duration::from_millis(500),
        );
        let s = w.snapshot(t0 + Duration::from_secs(1), None, TopSort::Own);
        // 1 s so far: 500 ms of CPU in Hot is 50 % of a core.
        assert_eq!(s.rows[0].name, "App.Hot");
        assert!((s.rows[0].self_pct - 50.0).abs() < 1e-6);
        assert!((s.rows[1].total_pct - 75.0).abs() < 1e-6);
        assert!((s.cpu_pct - 75.0).abs() < 1e-6);
        // --thread: an OS id or a thread's exact name, as `report --thread`.
        for wanted in ["8", "worker-8"] {
            let only8 = w.snapshot(t0 + Duration::from_secs(1), Some(wanted), TopSort::Own);
            assert_eq!(only8.rows.len(), 1);
            assert_eq!(only8.rows[0].name, "App.Main");
        }
        let part = w.snapshot(t0 + Duration::from_secs(1), Some("worker"), TopSort::Own);
        assert_eq!(part.samples, 0, "a part of a name is not a name");
        let by_name = w.snapshot(t0 + Duration::from_secs(1), None, TopSort::Name);
        assert_eq!(by_name.rows[0].name, "App.Hot");
        // Three seconds later the batch is out of the 2 s window.
        w.add(vec![], t0 + Duration::from_secs(4));
        assert_eq!(
            w.snapshot(t0 + Duration::from_secs(4), None, TopSort::Own)
                .samples,
            0
        );
        assert_eq!(w.total_samples, 2);
    }

    #[test]
    fn kernel_names_are_read_once_per_thread_while_it_is_in_the_window() {
        let mut w = Window::new(Duration::from_secs(2));
        let pid = std::process::id();
        w.pid = Some(pid);
        let t0 = w.started;
        let main = u64::from(pid);
        w.add(
            vec![
                info(1, "App.Main"),
                sample(main, 1, &[1]),
                sample(main, 1, &[1]),
            ],
            t0,
        );
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap();
        let comm = comm.trim().to_string();
        assert_eq!(w.in_window[&main], (2, Some(comm.clone())));
        assert_eq!(w.thread_name(main), comm);
        // Out of the window, forgotten: a reused id is read again.
        w.add(vec![], t0 + Duration::from_secs(3));
        assert!(w.in_window.is_empty());
        assert_eq!(w.thread_name(main), format!("thread {main}"));
    }
}
