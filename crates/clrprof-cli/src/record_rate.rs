//! `record --mode trace`: a broad `--include` can hook getters and lambdas called hundreds
//! of millions of times, and the trace then grows by hundreds of MB a second while the
//! app crawls. After the trace's first second this says how fast calls are recorded and
//! the file grows, and names the methods that make most of the calls, with what to do
//! (`--exclude` them, or count calls with `--counts`). It follows the run's first trace
//! from its start for a second (or its first 8 MiB), counting calls as their blocks
//! complete, and stops.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use clrprof_format::{ClockConverter, DecodedEvent, Event};

/// How long the trace is read before the rate is told.
const WINDOW: Duration = Duration::from_secs(1);
/// Calls a second from which the notice is printed.
const NOTICE_CALLS_PER_S: f64 = 1_000_000.0;
/// Bytes a second from which the notice is printed.
const NOTICE_BYTES_PER_S: f64 = 50.0 * 1024.0 * 1024.0;
/// Methods named.
const NAMED: usize = 3;
/// Bytes of the trace read, from its start: a sample of a fast-growing file, not all of it.
const READ_PREFIX: u64 = 8 << 20;

/// The watching thread; [`Watch::finish`] stops it.
pub struct Watch {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl Watch {
    pub fn start(run_dir: PathBuf) -> Watch {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let handle = std::thread::Builder::new()
            .name("trace-rate".into())
            .spawn(move || {
                if let Some(line) = measure(&run_dir, &s).and_then(|r| r.notice()) {
                    eprintln!("{line}");
                }
            })
            .ok();
        Watch { stop, handle }
    }

    /// Stops the thread without waiting for it (it may be decoding a block: it ends at
    /// its next check, or with the process).
    pub fn finish(mut self) {
        self.stop.store(true, Ordering::Release);
        drop(self.handle.take());
    }
}

/// What the first second of a trace showed.
#[derive(Debug, Default, PartialEq)]
pub struct Rate {
    pub calls_per_s: f64,
    pub bytes_per_s: f64,
    /// The methods that made most calls, with their share of the calls.
    pub top: Vec<(String, f64)>,
}

impl Rate {
    /// The line to print, when the trace grows fast enough to hurt.
    pub fn notice(&self) -> Option<String> {
        if self.calls_per_s < NOTICE_CALLS_PER_S && self.bytes_per_s < NOTICE_BYTES_PER_S {
            return None;
        }
        let top: Vec<String> = self
            .top
            .iter()
            .map(|(name, share)| format!("{name} ({:.0} %)", share * 100.0))
            .collect();
        let exclude = self
            .top
            .first()
            .map(|(name, _)| format!("`--exclude '{name}'`, "))
            .unwrap_or_default();
        Some(format!(
            "clrprof: tracing records {} calls/s ({}/s written) after its first second; most calls: {}. \
             To trace less, add {exclude}narrow --include, or count calls without timing them with --counts",
            human(self.calls_per_s),
            clrprof_analysis::text::bytes(self.bytes_per_s as u64),
            if top.is_empty() {
                "(not named yet)".to_string()
            } else {
                top.join(", ")
            }
        ))
    }
}

/// `20.4 M`, `310 k`, `12`.
fn human(n: f64) -> String {
    if n >= 1e6 {
        format!("{:.1} M", n / 1e6)
    } else if n >= 1e3 {
        format!("{:.0} k", n / 1e3)
    } else {
        format!("{n:.0}")
    }
}

/// Follows the run's first trace for [`WINDOW`] from its creation, decoding at most its
/// first [`READ_PREFIX`] bytes as they are written (from its start, each thread's compact
/// call chain carried from block to block): the calls in them over the time they span (the
/// trace's own clock, not the writer's pace, which may lag far behind) give the rate at
/// which the app makes calls, and the calls per byte how fast the trace grows at that rate.
fn measure(run_dir: &Path, stop: &AtomicBool) -> Option<Rate> {
    let path = loop {
        if stop.load(Ordering::Acquire) {
            return None;
        }
        if let Some((_, p)) = crate::push::named_traces(run_dir).into_iter().next() {
            break p;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let t0 = Instant::now();
    let mut follow = crate::live::follow::Follow::open(&path).ok()?;
    let mut tally = Tally::default();
    loop {
        if stop.load(Ordering::Acquire) {
            return None;
        }
        let left = READ_PREFIX.saturating_sub(follow.read_bytes);
        if left > 0 {
            follow.poll_at_most(left, |e| tally.add(e)).ok()?;
        }
        if t0.elapsed() >= WINDOW {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let Tally {
        names,
        calls,
        enters,
        first,
        last,
        syncs,
    } = tally;
    if enters < 2 || last <= first {
        return None;
    }
    let clock = ClockConverter::from_clock_info(&follow.header()?.meta.clock, &syncs);
    let span_ns = (last - first) as f64 * clock.ns_per_tick();
    if span_ns <= 0.0 {
        return None;
    }
    let calls_per_s = enters as f64 / (span_ns / 1e9);
    let per_byte = enters as f64 / follow.read_bytes.max(1) as f64;
    Some(rate(
        calls_per_s / per_byte,
        per_byte,
        &calls,
        &names,
        enters,
    ))
}

/// What the followed events showed: the methods' names, the calls per method, the calls
/// and the first and last of their timestamps (ticks), and the first and last clock sync
/// points (to turn ticks into time).
#[derive(Default)]
struct Tally {
    names: HashMap<u64, String>,
    calls: HashMap<u64, u64>,
    enters: u64,
    first: u64,
    last: u64,
    syncs: Vec<(u64, u64)>,
}

impl Tally {
    fn add(&mut self, e: DecodedEvent<'_>) {
        match e.event {
            Event::Enter { function, .. } => {
                if self.enters == 0 {
                    self.first = e.ts;
                }
                self.enters += 1;
                *self.calls.entry(function).or_default() += 1;
                self.first = self.first.min(e.ts);
                self.last = self.last.max(e.ts);
            }
            Event::FunctionInfo { function, name, .. } => {
                self.names.insert(function, name.into_owned());
            }
            Event::ClockSync { mono_ns, .. } => {
                let sync = (e.ts, mono_ns);
                match self.syncs.len() {
                    0 | 1 => self.syncs.push(sync),
                    _ => self.syncs[1] = sync,
                }
            }
            _ => {}
        }
    }
}

fn rate(
    bytes_per_s: f64,
    calls_per_byte: f64,
    calls: &HashMap<u64, u64>,
    names: &HashMap<u64, String>,
    enters: u64,
) -> Rate {
    let mut by: Vec<(u64, u64)> = calls.iter().map(|(f, n)| (*f, *n)).collect();
    by.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    Rate {
        calls_per_s: bytes_per_s * calls_per_byte,
        bytes_per_s,
        top: by
            .into_iter()
            .take(NAMED)
            // A method with under 1 % of the calls is not what to exclude.
            .filter(|(_, n)| *n * 100 >= enters)
            .map(|(f, n)| {
                (
                    names
                        .get(&f)
                        .cloned()
                        .unwrap_or_else(|| format!("function #{f}")),
                    n as f64 / enters.max(1) as f64,
                )
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fast_trace_names_its_busiest_methods_and_says_what_to_do() {
        let calls = HashMap::from([(1, 600), (2, 300), (3, 90), (4, 10), (5, 5)]);
        let names = HashMap::from([(1, "Shop.Item.get_Price".to_string())]);
        let r = rate(100.0 * 1024.0 * 1024.0, 0.05, &calls, &names, 1005);
        assert_eq!(r.top.len(), 3);
        let line = r.notice().expect("fast enough to say so");
        assert!(line.contains("5.2 M calls/s"), "{line}");
        assert!(
            line.contains("100 MiB/s written") || line.contains("100.0 MiB/s"),
            "{line}"
        );
        assert!(
            line.contains("Shop.Item.get_Price (60 %), function #2 (30 %), function #3 (9 %). "),
            "{line}"
        );
        assert!(line.contains("--exclude 'Shop.Item.get_Price'") && line.contains("--counts"));
        let slow = rate(1000.0, 0.05, &calls, &names, 1005);
        assert_eq!(slow.notice(), None);
    }
}
