//! `clrprof dump --pid PID`: the current managed stack of every thread, printed once (like
//! `dotnet-stack report` or `py-spy dump`). The agent attaches in sample mode; the
//! sampler's first tick captures every managed thread (a thread is only skipped on later
//! ticks when it has not run); after a few ticks clrprof detaches, waits until the library
//! is unmapped and prints each thread's last stack. Whether a thread runs comes from the
//! kernel (`/proc/PID/task/TID/stat`, read every 20 ms meanwhile), what it waits in from
//! its stack, by the report's rules (`clrprof_analysis::waits`).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use clrprof_analysis::lines::Lines;
use clrprof_analysis::names::Names;
use clrprof_analysis::samples::{StackSample, push_sample, stack_sample};
use clrprof_analysis::threads::ThreadNames;
use clrprof_analysis::timeline::TimedEvent;
use clrprof_analysis::waits::{WaitKind, classify_at};
use clrprof_export::FrameKind;
use serde::Serialize;

use crate::cli::DumpArgs;
use crate::live::target::{Live, LiveOptions};
use crate::live::tasks::StateTally;

/// How long the sampler runs after its first sample: enough ticks at 100 Hz that every
/// thread was seen, and enough kernel readings to tell running from waiting.
const CAPTURE: Duration = Duration::from_millis(250);
/// The longest wait for the first sample.
const FIRST_SAMPLE_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, Serialize)]
pub struct Dump {
    pub pid: u32,
    pub command_line: String,
    pub threads: Vec<ThreadStack>,
    /// Threads without managed frames (runtime helpers, native threads): name and state.
    pub other_threads: Vec<OtherThread>,
    /// From the attach to the library unloaded.
    pub elapsed_ms: f64,
}

#[derive(Debug, Serialize)]
pub struct ThreadStack {
    pub os_tid: u64,
    pub name: Option<String>,
    /// `running` when the kernel saw it running in at least half of its readings, else
    /// `waiting`.
    pub state: DumpState,
    /// The share of the kernel's readings that saw it running or runnable (0..1).
    pub running_share: f64,
    /// The share of the capture it spent on a CPU (0..1), from the kernel's count of its
    /// run time (`schedstat`); `null` where the kernel keeps none.
    pub on_cpu_share: Option<f64>,
    /// The blocking call it sits in, when its stack shows one.
    pub waiting_in: Option<WaitingIn>,
    /// Leaf first.
    pub frames: Vec<Frame>,
}

/// What the kernel mostly saw a thread do during the capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DumpState {
    Running,
    Waiting,
}

impl DumpState {
    fn as_str(self) -> &'static str {
        match self {
            DumpState::Running => "running",
            DumpState::Waiting => "waiting",
        }
    }
}

#[derive(Debug, Serialize)]
pub struct WaitingIn {
    pub kind: WaitKind,
    pub frame: String,
}

#[derive(Debug, Serialize)]
pub struct Frame {
    pub name: String,
    pub kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub module: Option<String>,
    /// The source file (the path in the module's PDB) and line the frame was on, when
    /// known: a leaf its IP's line, a caller the line of its call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
}

#[derive(Debug, Serialize)]
pub struct OtherThread {
    pub os_tid: u64,
    pub name: String,
    pub kernel_state: String,
}

pub fn run(args: DumpArgs) -> Result<i32> {
    let pid = args.pid;
    let started = Instant::now();
    let opts = LiveOptions {
        rate_hz: 100,
        sampler: args.sampling.sampler(),
        profiler: args.profiler.as_deref(),
        keep: None,
        alloc: false,
        waits: false,
    };
    let mut live = Live::attach(pid, "dump", &opts)?;
    let mut events: Vec<TimedEvent<'static>> = Vec::new();
    let mut tally = StateTally::default();
    let mut first_sample: Option<Instant> = None;
    loop {
        tally.read(pid);
        events.extend(live.follow.poll()?);
        if first_sample.is_none() && events.iter().any(|e| stack_sample(e).is_some()) {
            first_sample = Some(Instant::now());
        }
        if first_sample.is_some_and(|t| t.elapsed() >= CAPTURE) || !live.running() {
            break;
        }
        if first_sample.is_none() && started.elapsed() > FIRST_SAMPLE_TIMEOUT {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    live.stop()?;
    events.extend(live.follow.poll()?);
    let elapsed = started.elapsed();
    let dump = build(pid, &events, &tally, elapsed);
    if dump.threads.is_empty() {
        bail!(
            "no managed stack was captured in pid {pid}: {}",
            if attach_alive(pid) {
                "the sampler took no sample (see `clrprof[pid]:` lines in the target's stderr)"
            } else {
                "the process exited"
            }
        );
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&dump)?);
    } else {
        crate::stdout::write_text(&text(&dump))?;
        eprintln!(
            "clrprof: attached, captured and detached in {:.0} ms; the profiler library stays mapped, inert, for the next attach",
            dump.elapsed_ms
        );
    }
    Ok(0)
}

fn attach_alive(pid: u32) -> bool {
    crate::attach::alive(pid)
}

/// Each thread's last sample, named, with its state.
pub fn build(pid: u32, events: &[TimedEvent<'_>], tally: &StateTally, elapsed: Duration) -> Dump {
    let names = Names::collect(events);
    let thread_names = ThreadNames::collect(events);
    let mut last: BTreeMap<u64, StackSample> = BTreeMap::new();
    let mut all: Vec<StackSample> = Vec::new();
    for e in events {
        push_sample(&mut all, e);
    }
    for s in all {
        last.insert(s.os_tid, s);
    }
    let mut lines = Lines::new(Vec::new());
    // A thread waiting in native code only (the finalizer, tiered compilation's worker)
    // is listed with the others that run no managed code.
    last.retain(|_, s| {
        s.stack
            .iter()
            .any(|&f| names.frame_kind(f) == FrameKind::Managed)
    });
    let threads: Vec<ThreadStack> = last
        .values()
        .map(|s| {
            let frames: Vec<Frame> = s
                .stack
                .iter()
                .enumerate()
                .map(|(i, &f)| {
                    let at = s.positions.get(i).and_then(|&p| lines.line(&names, f, p));
                    Frame {
                        name: names.frame_name(f),
                        kind: match names.frame_kind(f) {
                            FrameKind::Managed => "managed",
                            FrameKind::Runtime => "runtime",
                            _ => "native",
                        },
                        module: names.frame_module(f).map(|m| m.name.clone()),
                        file: at.as_ref().map(|l| l.file.to_string()),
                        line: at.map(|l| l.line),
                    }
                })
                .collect();
            let running_share = tally.get(s.os_tid).map(|t| t.1).unwrap_or(0.0);
            let waiting = classify_at(&s.stack, &names).map(|(kind, i)| WaitingIn {
                kind,
                frame: frames[i].name.clone(),
            });
            ThreadStack {
                os_tid: s.os_tid,
                name: thread_names
                    .named(s.os_tid)
                    .map(String::from)
                    .or_else(|| tally.get(s.os_tid).map(|t| t.0.comm.clone())),
                state: if running_share >= 0.5 {
                    DumpState::Running
                } else {
                    DumpState::Waiting
                },
                running_share,
                on_cpu_share: tally.on_cpu_share(s.os_tid),
                waiting_in: waiting,
                frames,
            }
        })
        .collect();
    let other_threads = tally
        .all()
        .filter(|t| !last.contains_key(&t.tid) && !t.comm.starts_with("clrprof"))
        .map(|t| OtherThread {
            os_tid: t.tid,
            name: t.comm.clone(),
            kernel_state: t.state.to_string(),
        })
        .collect();
    let command_line = std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| {
            String::from_utf8_lossy(&b)
                .split('\0')
                .filter(|s| !s.is_empty())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default();
    Dump {
        pid,
        command_line,
        threads,
        other_threads,
        elapsed_ms: elapsed.as_secs_f64() * 1e3,
    }
}

pub fn text(d: &Dump) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(out, "Process {}: {}", d.pid, d.command_line);
    for t in &d.threads {
        let _ = write!(
            out,
            "\nThread {} {}: {}",
            t.os_tid,
            t.name
                .as_deref()
                .map(|n| format!("\"{n}\""))
                .unwrap_or_else(|| "(unnamed)".into()),
            t.state.as_str()
        );
        // A thread that both ran and waited during the capture (work, then a short
        // sleep), or ran on a machine short of cores, says how much it ran; its stack is
        // from one instant of it. The kernel's count of its run time, not how often it
        // was seen runnable: the sampler's own signal wakes a waiting thread for a few
        // microseconds, which on a busy machine it may spend runnable, waiting for a core.
        let share = t.on_cpu_share.unwrap_or(t.running_share);
        if (0.005..0.995).contains(&share) {
            let _ = write!(out, " (on CPU in {:.0} % of the capture)", share * 100.0);
        }
        if let Some(w) = &t.waiting_in {
            let last = if t.state == DumpState::Running {
                "last seen "
            } else {
                ""
            };
            let _ = write!(out, ", {last}in {} ({})", w.kind.as_str(), w.frame);
        }
        let _ = writeln!(out);
        for f in &t.frames {
            match (&f.file, f.line) {
                (Some(file), Some(line)) => {
                    let name = file.rsplit(['/', '\\']).next().unwrap_or(file);
                    let _ = writeln!(out, "    {} ({name}:{line})", f.name);
                }
                _ => {
                    let _ = writeln!(out, "    {}", f.name);
                }
            }
        }
    }
    if !d.other_threads.is_empty() {
        let _ = writeln!(
            out,
            "\n{} other threads have no managed frames: {}",
            d.other_threads.len(),
            d.other_threads
                .iter()
                .map(|t| format!("{} ({})", t.name, t.kernel_state))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `clrprof dump` of a recorded trace: each sampled thread's last stack, named, with
    /// the wait it is in (no /proc readings: every thread counts as waiting).
    #[test]
    fn dump_rendering_of_a_recorded_trace() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../clrprof-analysis/tests/fixtures/sample-hot.bin");
        let mut follow = crate::live::follow::Follow::open(&path).unwrap();
        let events = follow.poll().unwrap();
        // A pid with no /proc entry: no command line is read.
        let d = build(
            u32::MAX,
            &events,
            &StateTally::default(),
            Duration::from_millis(250),
        );
        insta::with_settings!({ prepend_module_to_snapshot => false }, {
            insta::assert_snapshot!("dump", text(&d));
        });
        // `dump --json` names the state as it did when it was a string.
        let v = serde_json::to_value(&d).unwrap();
        assert_eq!(v["threads"][0]["state"], "waiting");
    }
}
