//! Sampling analysis: per function, how many samples had it on top (self) or anywhere
//! (total), in wall time (every sample) and CPU time (the CPU the thread used since its
//! previous sample); per thread, the same totals.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::Serialize;

use clrprof_format::Event;

use crate::names::Names;
use crate::threads::ThreadNames;
use crate::timeline::TimedEvent;

/// The name given to a run of native (unmanaged) frames.
pub const NATIVE: &str = "[native]";

/// Whether a native module's frame is the runtime itself (the VM, GC and JIT libraries).
/// Ask [`Names::is_native`] first.
pub fn is_runtime(name: &str) -> bool {
    matches!(name, "[libcoreclr.so]" | "[libclrjit.so]")
}

/// One sample, leaf first, with names resolved.
#[derive(Debug, Clone)]
pub struct NamedSample {
    pub ns: u64,
    pub os_tid: u64,
    pub cpu_ns: u64,
    /// 1 when the thread was running (used at least half the interval on a CPU).
    pub state: u8,
    /// Function names, leaf first.
    pub stack: Vec<String>,
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

/// Every sample of the trace with names.
pub fn named_samples(events: &[TimedEvent<'_>], names: &Names) -> Vec<NamedSample> {
    let mut out = Vec::new();
    for e in events {
        if let Event::Sample {
            os_tid,
            cpu_ns,
            state,
            frames,
            ..
        } = &e.event
        {
            let mut stack: Vec<String> = Vec::with_capacity(frames.len());
            for f in frames.iter() {
                let name = if *f == 0 {
                    NATIVE.to_string()
                } else {
                    names.function(*f)
                };
                // Consecutive native runs (of one module) collapse into one frame.
                if clrprof_format::is_native_frame(*f) && stack.last() == Some(&name) {
                    continue;
                }
                stack.push(name);
            }
            out.push(NamedSample {
                ns: e.ns,
                os_tid: *os_tid,
                cpu_ns: *cpu_ns,
                state: *state,
                stack,
            });
        }
    }
    out
}

pub fn totals(
    samples: &[NamedSample],
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

/// Per-function self and total counts, most self samples first.
pub fn functions(samples: &[NamedSample]) -> Vec<FunctionSamples> {
    let mut map: HashMap<&str, FunctionSamples> = HashMap::new();
    let mut seen: HashSet<&str> = HashSet::new();
    for s in samples {
        seen.clear();
        for (i, f) in s.stack.iter().enumerate() {
            let e = map.entry(f.as_str()).or_insert_with(|| FunctionSamples {
                name: f.clone(),
                self_samples: 0,
                total_samples: 0,
                self_cpu_ns: 0,
                total_cpu_ns: 0,
            });
            if i == 0 {
                e.self_samples += 1;
                e.self_cpu_ns += s.cpu_ns;
            }
            // Recursion: count a function once per sample in totals.
            if seen.insert(f.as_str()) {
                e.total_samples += 1;
                e.total_cpu_ns += s.cpu_ns;
            }
        }
    }
    let mut v: Vec<FunctionSamples> = map.into_values().collect();
    v.sort_by(|a, b| {
        b.self_samples
            .cmp(&a.self_samples)
            .then(b.total_samples.cmp(&a.total_samples))
            .then_with(|| a.name.cmp(&b.name))
    });
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(stack: &[&str], cpu: u64) -> NamedSample {
        NamedSample {
            ns: 0,
            os_tid: 1,
            cpu_ns: cpu,
            state: u8::from(cpu > 0),
            stack: stack.iter().map(|x| x.to_string()).collect(),
        }
    }

    #[test]
    fn self_and_total_count_recursion_once() {
        let v = functions(&[
            s(&["A", "A", "Main"], 10),
            s(&["B", "Main"], 0),
            s(&["A", "Main"], 5),
        ]);
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
    }

    #[test]
    fn native_module_frames() {
        use clrprof_format::NATIVE_MODULE_FRAME;
        use std::borrow::Cow;
        let mut events = Vec::new();
        let modules = [
            "[libc.so.6]",
            "[libcoreclr.so]",
            "[libclrjit.so]",
            "[ld-linux-x86-64.so.2]",
            "[dotnet]",
        ];
        for (i, n) in modules
            .iter()
            .chain(["Main", "[deeper frames]"].iter())
            .enumerate()
        {
            let module = i < modules.len();
            let id = if module {
                NATIVE_MODULE_FRAME | (i as u64 + 1)
            } else {
                0x7f00 + i as u64
            };
            events.push(TimedEvent {
                ns: 0,
                os_tid: 1,
                event: Event::FunctionInfo {
                    function: id,
                    module: 0,
                    class: 0,
                    token: 0,
                    name: Cow::Borrowed(n),
                    signature: Cow::Borrowed(""),
                },
            });
        }
        let names = Names::collect(&events);
        for n in [NATIVE].iter().chain(modules.iter()) {
            assert!(names.is_native(n), "{n}");
        }
        for n in ["Main", "[deeper frames]", "Demo.[weird]"] {
            assert!(!names.is_native(n), "{n}");
        }
        assert!(is_runtime("[libcoreclr.so]") && !is_runtime("[libc.so.6]"));
    }
}
