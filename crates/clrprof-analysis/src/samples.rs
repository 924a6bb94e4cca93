//! Sampling analysis: per function, how many samples had it on top (self) or anywhere
//! (total), in wall time (every sample) and CPU time (the CPU the thread used since its
//! previous sample); per thread, the same totals.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::Serialize;

use clrprof_format::Event;

use crate::names::Names;
use crate::threads::ThreadNames;
use crate::timeline::TimedEvent;

/// One sample: its stack as frame ids, leaf first (names come from [`Names`]).
#[derive(Debug, Clone)]
pub struct StackSample {
    pub ns: u64,
    pub os_tid: u64,
    pub cpu_ns: u64,
    /// 1 when the thread was running (used at least half the interval on a CPU).
    pub state: u8,
    /// Frame ids, leaf first: function ids, and native ids (see
    /// [`clrprof_format::is_native_frame`]), consecutive runs of one module merged.
    pub stack: Vec<u64>,
}

#[derive(Debug, Default, Serialize)]
pub struct SampleTotals {
    pub total: u64,
    /// Samples whose thread was running: it used at least half the sampling interval on a
    /// CPU since its previous sample.
    pub on_cpu: u64,
    pub cpu_ns: u64,
    /// Samples per second actually achieved.
    pub rate_hz: f64,
    /// The rate asked for.
    pub requested_rate_hz: Option<f64>,
    pub threads: Vec<ThreadSamples>,
}

#[derive(Debug, Serialize)]
pub struct ThreadSamples {
    pub os_tid: u64,
    pub name: Option<String>,
    pub samples: u64,
    pub on_cpu: u64,
    pub cpu_ns: u64,
}

#[derive(Debug, Serialize, Clone)]
pub struct FunctionSamples {
    pub name: String,
    pub self_samples: u64,
    pub total_samples: u64,
    pub self_cpu_ns: u64,
    pub total_cpu_ns: u64,
}

/// Every sample of the trace, in time order.
pub fn stack_samples(events: &[TimedEvent<'_>]) -> Vec<StackSample> {
    events.iter().filter_map(stack_sample).collect()
}

/// The sample an event holds, if it is one.
pub fn stack_sample(e: &TimedEvent<'_>) -> Option<StackSample> {
    let Event::Sample {
        os_tid,
        cpu_ns,
        state,
        frames,
        ..
    } = &e.event
    else {
        return None;
    };
    let mut stack: Vec<u64> = Vec::with_capacity(frames.len());
    for &f in frames.iter() {
        // Consecutive native runs (of one module) collapse into one frame.
        if clrprof_format::is_native_frame(f) && stack.last() == Some(&f) {
            continue;
        }
        stack.push(f);
    }
    Some(StackSample {
        ns: e.ns,
        os_tid: *os_tid,
        cpu_ns: *cpu_ns,
        state: *state,
        stack,
    })
}

pub fn totals(
    samples: &[StackSample],
    threads: &ThreadNames,
    requested_rate_hz: Option<f64>,
) -> SampleTotals {
    let mut per: BTreeMap<u64, ThreadSamples> = BTreeMap::new();
    let mut t = SampleTotals {
        requested_rate_hz,
        ..Default::default()
    };
    for s in samples {
        t.total += 1;
        t.cpu_ns += s.cpu_ns;
        let e = per.entry(s.os_tid).or_insert_with(|| ThreadSamples {
            os_tid: s.os_tid,
            name: threads.named(s.os_tid).map(String::from),
            samples: 0,
            on_cpu: 0,
            cpu_ns: 0,
        });
        e.samples += 1;
        e.cpu_ns += s.cpu_ns;
        if s.state == 1 {
            t.on_cpu += 1;
            e.on_cpu += 1;
        }
    }
    // Rate: distinct sample instants over the span they cover.
    let mut instants: Vec<u64> = samples.iter().map(|s| s.ns).collect();
    instants.dedup();
    if instants.len() > 1 {
        let span = instants.last().unwrap_or(&0) - instants.first().unwrap_or(&0);
        if span > 0 {
            t.rate_hz = (instants.len() - 1) as f64 / (span as f64 / 1e9);
        }
    }
    t.threads = per.into_values().collect();
    t
}

/// Per-function self and total counts, most self samples first. Functions are counted
/// by name, so that the code versions of one method make one row.
pub fn functions(samples: &[StackSample], names: &Names) -> Vec<FunctionSamples> {
    let mut name_of: HashMap<u64, usize> = HashMap::new();
    let mut rows: Vec<FunctionSamples> = Vec::new();
    let mut by_name: HashMap<String, usize> = HashMap::new();
    let mut seen: HashSet<usize> = HashSet::new();
    for s in samples {
        seen.clear();
        for (i, f) in s.stack.iter().enumerate() {
            let row = *name_of.entry(*f).or_insert_with(|| {
                let name = names.frame_name(*f);
                *by_name.entry(name.clone()).or_insert_with(|| {
                    rows.push(FunctionSamples {
                        name,
                        self_samples: 0,
                        total_samples: 0,
                        self_cpu_ns: 0,
                        total_cpu_ns: 0,
                    });
                    rows.len() - 1
                })
            });
            let e = &mut rows[row];
            if i == 0 {
                e.self_samples += 1;
                e.self_cpu_ns += s.cpu_ns;
            }
            // Recursion: count a function once per sample in totals.
            if seen.insert(row) {
                e.total_samples += 1;
                e.total_cpu_ns += s.cpu_ns;
            }
        }
    }
    rows.sort_by(|a, b| {
        b.self_samples
            .cmp(&a.self_samples)
            .then(b.total_samples.cmp(&a.total_samples))
            .then_with(|| a.name.cmp(&b.name))
    });
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::names::FunctionName;
    use clrprof_format::NATIVE_MODULE_FRAME;
    use std::borrow::Cow;

    const A: u64 = 1;
    const MAIN: u64 = 2;
    const B: u64 = 3;
    /// Another code version of `A` (a different FunctionID with the same name).
    const A2: u64 = 4;

    fn names() -> Names {
        let mut n = Names::default();
        for (id, name) in [(A, "A"), (MAIN, "Main"), (B, "B"), (A2, "A")] {
            n.functions.insert(
                id,
                FunctionName {
                    name: name.into(),
                    ..Default::default()
                },
            );
        }
        n
    }

    fn s(stack: &[u64], cpu: u64) -> StackSample {
        StackSample {
            ns: 0,
            os_tid: 1,
            cpu_ns: cpu,
            state: u8::from(cpu > 0),
            stack: stack.to_vec(),
        }
    }

    #[test]
    fn self_and_total_count_recursion_once() {
        let v = functions(
            &[s(&[A, A2, MAIN], 10), s(&[B, MAIN], 0), s(&[A2, MAIN], 5)],
            &names(),
        );
        let a = v.iter().find(|f| f.name == "A").unwrap();
        assert_eq!(
            (
                a.self_samples,
                a.total_samples,
                a.self_cpu_ns,
                a.total_cpu_ns
            ),
            (2, 2, 15, 15)
        );
        let m = v.iter().find(|f| f.name == "Main").unwrap();
        assert_eq!((m.self_samples, m.total_samples), (0, 3));
        assert_eq!(v[0].name, "A");
        assert_eq!(v.len(), 3, "one row per name");
    }

    #[test]
    fn consecutive_frames_of_one_native_module_collapse() {
        let libc = NATIVE_MODULE_FRAME | 1;
        let coreclr = NATIVE_MODULE_FRAME | 2;
        let frames = vec![libc, libc, coreclr, A, 0, 0, MAIN, MAIN];
        let got = stack_samples(&[TimedEvent {
            ns: 5,
            os_tid: 9,
            event: Event::Sample {
                os_tid: 9,
                thread: 1,
                cpu_ns: 3,
                state: 1,
                frames: Cow::Owned(frames),
            },
        }]);
        assert_eq!(got.len(), 1);
        // Managed recursion stays; native runs merge.
        assert_eq!(got[0].stack, vec![libc, coreclr, A, 0, MAIN, MAIN]);
    }
}
