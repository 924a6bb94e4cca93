//! speedscope's JSON file format (<https://www.speedscope.app/file-format-schema.json>).
//!
//! All frames go to `shared.frames` in profile order, so a `FrameId` is the index. A
//! thread with samples becomes a `sampled` profile (stacks root first, one weight per
//! sample); a thread with calls becomes an `evented` profile of balanced open/close
//! events in nanoseconds.
//!
//! Memory: the document is never held. It is written as it is produced, one profile
//! after the other; what is held is one thread's calls nested into spans while its
//! evented profile is written (and, before, while its end time is found, which the
//! choice of the profile opened first needs), not its events or its samples' stacks.

use std::io::Write;

use serde::Serialize;

use crate::model::{Profile, ThreadProfile, Weight};
use crate::stacks::{self, SpanEvent, validate};
use crate::{ExportError, Options};

/// The `$schema` every speedscope file names.
pub const SCHEMA_URL: &str = "https://www.speedscope.app/file-format-schema.json";

/// One frame of `shared.frames`.
#[derive(Serialize)]
struct SFrame<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    file: Option<&'a str>,
    /// The source line (a line frame's own, else the method's first), when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    line: Option<u32>,
}

/// Which samples a sampled profile holds.
#[derive(Clone, Copy)]
enum Threads {
    /// Every thread with samples (`--merge-threads`).
    All,
    One(usize),
}

/// A profile to write: what it is made of, and its size (see [`Planned::size`]).
enum Planned {
    Sampled {
        name: String,
        threads: Threads,
        /// The sum of its weights: its `endValue`, and its size.
        total: u64,
    },
    Evented {
        name: String,
        thread: usize,
        /// The time of its last event: its `endValue`, and its size.
        end: u64,
    },
}

impl Planned {
    /// How much the profile holds, to pick the one speedscope opens first: its weight
    /// (CPU or wall time, or samples, as the export counts them), or the time its calls
    /// span. Not the number of samples: an idle thread has as many as a busy one, and
    /// speedscope once opened on a main thread that only waited.
    fn size(&self) -> u64 {
        match self {
            Planned::Sampled { total, .. } => *total,
            Planned::Evented { end, .. } => *end,
        }
    }
}

/// Calls `each(stack, weight)` for every sample of the profile, in the order the
/// profile lists them: allocations, waits or CPU samples as `weight` counts.
fn for_each_sample<'p>(
    profile: &'p Profile,
    threads: impl Iterator<Item = &'p ThreadProfile>,
    weight: Weight,
    mut each: impl FnMut(Option<crate::model::StackId>, u64) -> Result<(), ExportError>,
) -> Result<(), ExportError> {
    let _ = profile;
    for t in threads {
        if weight.is_alloc() {
            for a in &t.allocations {
                each(
                    a.stack,
                    match weight {
                        Weight::AllocObjects => a.objects,
                        Weight::LiveBytes => a.live_bytes,
                        _ => a.bytes,
                    },
                )?;
            }
        } else if weight.is_wait() {
            for w in t.waits.iter().filter(|w| w.lock || weight == Weight::Wait) {
                each(w.stack, w.wait_ns)?;
            }
        } else {
            for s in &t.samples {
                each(
                    s.stack,
                    match weight {
                        Weight::Samples => 1,
                        Weight::Wall => s.wall_ns,
                        Weight::Cpu => s.cpu_ns,
                        // Handled above.
                        Weight::AllocBytes
                        | Weight::AllocObjects
                        | Weight::LiveBytes
                        | Weight::Wait
                        | Weight::Lock => 0,
                    },
                )?;
            }
        }
    }
    Ok(())
}

fn sample_unit(weight: Weight) -> &'static str {
    if weight.is_alloc() {
        if weight == Weight::AllocObjects {
            "none"
        } else {
            "bytes"
        }
    } else if weight.is_wait() {
        "nanoseconds"
    } else if weight == Weight::Samples {
        "none"
    } else {
        "nanoseconds"
    }
}

/// The writer: values through serde_json (strings escaped as it escapes them),
/// punctuation by hand.
struct Json<W: Write> {
    w: W,
}

impl<W: Write> Json<W> {
    fn raw(&mut self, s: &str) -> Result<(), ExportError> {
        self.w.write_all(s.as_bytes())?;
        Ok(())
    }

    fn value(&mut self, v: &(impl Serialize + ?Sized)) -> Result<(), ExportError> {
        serde_json::to_writer(&mut self.w, v)?;
        Ok(())
    }

    /// `"key":value` preceded by a comma unless `first`.
    fn field(
        &mut self,
        key: &str,
        v: &(impl Serialize + ?Sized),
        first: bool,
    ) -> Result<(), ExportError> {
        if !first {
            self.raw(",")?;
        }
        self.value(key)?;
        self.raw(":")?;
        self.value(v)
    }

    /// The fields every profile starts with, after its opening brace.
    fn profile_head(
        &mut self,
        kind: &str,
        name: &str,
        unit: &str,
        end: u64,
    ) -> Result<(), ExportError> {
        self.field("type", kind, true)?;
        self.field("name", name, false)?;
        self.field("unit", unit, false)?;
        self.field("startValue", &0u64, false)?;
        self.field("endValue", &end, false)
    }
}

fn write_sampled<W: Write>(
    j: &mut Json<W>,
    profile: &Profile,
    name: &str,
    threads: Threads,
    total: u64,
    weight: Weight,
    counted: &impl Fn(&ThreadProfile) -> bool,
) -> Result<(), ExportError> {
    let threads = || -> Box<dyn Iterator<Item = &ThreadProfile>> {
        match threads {
            Threads::All => Box::new(profile.threads.iter().filter(|t| counted(t))),
            Threads::One(i) => Box::new(std::iter::once(&profile.threads[i])),
        }
    };
    j.raw("{")?;
    j.profile_head("sampled", name, sample_unit(weight), total)?;
    j.raw(",\"samples\":[")?;
    let mut first = true;
    for_each_sample(profile, threads(), weight, |stack, _| {
        if !std::mem::take(&mut first) {
            j.raw(",")?;
        }
        j.raw("[")?;
        let mut frames: Vec<_> = stack
            .map(|s| profile.stack_frames_leaf_first(s).collect())
            .unwrap_or_default();
        frames.reverse();
        for (k, f) in frames.iter().enumerate() {
            if k > 0 {
                j.raw(",")?;
            }
            j.value(&f.0)?;
        }
        j.raw("]")
    })?;
    j.raw("],\"weights\":[")?;
    let mut first = true;
    for_each_sample(profile, threads(), weight, |_, w| {
        if !std::mem::take(&mut first) {
            j.raw(",")?;
        }
        j.value(&w)
    })?;
    j.raw("]}")
}

/// The time of the last open/close event of a thread's calls: its evented profile's end.
fn evented_end(t: &ThreadProfile) -> u64 {
    let spans = stacks::spans(&t.calls);
    stacks::events_iter(&spans)
        .last()
        .map_or(0, |e| e.at(&spans))
}

fn write_evented<W: Write>(
    j: &mut Json<W>,
    name: &str,
    t: &ThreadProfile,
    end: u64,
) -> Result<(), ExportError> {
    let spans = stacks::spans(&t.calls);
    j.raw("{")?;
    j.profile_head("evented", name, "nanoseconds", end)?;
    j.raw(",\"events\":[")?;
    for (k, e) in stacks::events_iter(&spans).enumerate() {
        let (kind, i) = match e {
            SpanEvent::Open(i) => ("{\"type\":\"O\",\"frame\":", i),
            SpanEvent::Close(i) => ("{\"type\":\"C\",\"frame\":", i),
        };
        if k > 0 {
            j.raw(",")?;
        }
        j.raw(kind)?;
        j.value(&spans[i].frame.0)?;
        j.raw(",\"at\":")?;
        j.value(&e.at(&spans))?;
        j.raw("}")?;
    }
    j.raw("]}")
}

/// Writes `profile` as a speedscope file.
///
/// Sampled profiles count `opts.weight` (unit `none`, 1 per sample, or `nanoseconds`);
/// with `opts.merge_threads` all samples form one profile named `all threads`. Evented
/// profiles (from calls) are always per thread and timed in nanoseconds since the
/// profile start. A thread with both samples and calls gets both profiles.
pub fn write(profile: &Profile, opts: &Options, out: impl Write) -> Result<(), ExportError> {
    validate(profile)?;
    let alloc = opts.weight.is_alloc();
    let counted = |t: &ThreadProfile| {
        if alloc {
            !t.allocations.is_empty()
        } else {
            !t.samples.is_empty()
        }
    };
    let total = |threads: Threads| {
        let mut sum = 0u64;
        let list: Box<dyn Iterator<Item = &ThreadProfile>> = match threads {
            Threads::All => Box::new(profile.threads.iter().filter(|t| counted(t))),
            Threads::One(i) => Box::new(std::iter::once(&profile.threads[i])),
        };
        let _ = for_each_sample(profile, list, opts.weight, |_, w| {
            sum += w;
            Ok(())
        });
        sum
    };
    // The profiles, in the order they are written, each with its size.
    let mut planned = Vec::new();
    if opts.merge_threads && profile.threads.iter().any(counted) {
        planned.push(Planned::Sampled {
            name: "all threads".into(),
            threads: Threads::All,
            total: total(Threads::All),
        });
    }
    for (i, t) in profile.threads.iter().enumerate() {
        let both = counted(t) && !t.calls.is_empty();
        if counted(t) && !opts.merge_threads {
            let name = if both {
                format!("{} (samples)", t.label())
            } else {
                t.label()
            };
            planned.push(Planned::Sampled {
                name,
                threads: Threads::One(i),
                total: total(Threads::One(i)),
            });
        }
        if !t.calls.is_empty() {
            let name = if both {
                format!("{} (calls)", t.label())
            } else {
                t.label()
            };
            planned.push(Planned::Evented {
                name,
                thread: i,
                end: evented_end(t),
            });
        }
    }
    // The biggest profile first on screen; the earliest of equals.
    let active_profile_index = planned
        .iter()
        .enumerate()
        .max_by_key(|(i, p)| (p.size(), std::cmp::Reverse(*i)))
        .map_or(0, |(i, _)| i);

    let mut j = Json { w: out };
    j.raw("{")?;
    j.field("$schema", SCHEMA_URL, true)?;
    j.field("version", "0.0.1", false)?;
    j.field("name", profile.name.as_str(), false)?;
    j.field("activeProfileIndex", &active_profile_index, false)?;
    j.raw(",\"shared\":{\"frames\":[")?;
    for (i, f) in profile.frames.iter().enumerate() {
        // The source file and line when the PDB gave them, else the module's file.
        let source = profile.source(crate::FrameId(i as u32));
        let frame = SFrame {
            name: &f.name,
            file: source.map(|s| s.file.as_str()).or_else(|| {
                profile
                    .module_of(f)
                    .map(|m| m.path.as_deref().unwrap_or(&m.name))
            }),
            line: source.map(|s| s.line.unwrap_or(s.start_line)),
        };
        if i > 0 {
            j.raw(",")?;
        }
        j.value(&frame)?;
    }
    j.raw("]},\"profiles\":[")?;
    for (k, p) in planned.iter().enumerate() {
        if k > 0 {
            j.raw(",")?;
        }
        match p {
            Planned::Sampled {
                name,
                threads,
                total,
            } => write_sampled(
                &mut j,
                profile,
                name,
                *threads,
                *total,
                opts.weight,
                &counted,
            )?,
            Planned::Evented { name, thread, end } => {
                write_evented(&mut j, name, &profile.threads[*thread], *end)?
            }
        }
    }
    j.raw("]}")?;
    j.w.flush()?;
    Ok(())
}

#[cfg(test)]
mod reference {
    //! The writer that built the whole document before serializing it: the streamed
    //! file must be the same, byte for byte.

    use std::io::Write;

    use super::SCHEMA_URL;

    use serde::Serialize;

    use crate::model::{Profile, ThreadProfile, Weight};
    use crate::stacks::{self, SpanEvent, validate};
    use crate::{ExportError, Options};

    /// The `$schema` every speedscope file names.

    #[derive(Serialize)]
    struct File<'a> {
        #[serde(rename = "$schema")]
        schema: &'static str,
        version: &'static str,
        name: &'a str,
        #[serde(rename = "activeProfileIndex")]
        active_profile_index: usize,
        shared: Shared<'a>,
        profiles: Vec<SProfile>,
    }

    #[derive(Serialize)]
    struct Shared<'a> {
        frames: Vec<SFrame<'a>>,
    }

    #[derive(Serialize)]
    struct SFrame<'a> {
        name: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        file: Option<&'a str>,
        /// The source line (a line frame's own, else the method's first), when known.
        #[serde(skip_serializing_if = "Option::is_none")]
        line: Option<u32>,
    }

    #[derive(Serialize)]
    #[serde(tag = "type", rename_all = "lowercase")]
    enum SProfile {
        Sampled {
            name: String,
            unit: &'static str,
            #[serde(rename = "startValue")]
            start_value: u64,
            #[serde(rename = "endValue")]
            end_value: u64,
            samples: Vec<Vec<u32>>,
            weights: Vec<u64>,
        },
        Evented {
            name: String,
            unit: &'static str,
            #[serde(rename = "startValue")]
            start_value: u64,
            #[serde(rename = "endValue")]
            end_value: u64,
            events: Vec<SEvent>,
        },
    }

    impl SProfile {
        /// How much the profile holds, to pick the one speedscope opens first: its weight
        /// (CPU or wall time, or samples, as the export counts them), or the time its calls
        /// span. Not the number of samples: an idle thread has as many as a busy one, and
        /// speedscope once opened on a main thread that only waited.
        fn size(&self) -> u64 {
            match self {
                SProfile::Sampled { weights, .. } => weights.iter().sum(),
                SProfile::Evented {
                    start_value,
                    end_value,
                    ..
                } => end_value.saturating_sub(*start_value),
            }
        }
    }

    #[derive(Serialize)]
    struct SEvent {
        #[serde(rename = "type")]
        kind: &'static str,
        frame: u32,
        at: u64,
    }

    fn sampled<'a>(
        profile: &Profile,
        name: String,
        threads: impl Iterator<Item = &'a ThreadProfile>,
        weight: Weight,
    ) -> SProfile {
        let mut samples = Vec::new();
        let mut weights = Vec::new();
        if weight.is_alloc() {
            for t in threads {
                for a in &t.allocations {
                    samples.push(profile.stack_frames(a.stack).iter().map(|f| f.0).collect());
                    weights.push(match weight {
                        Weight::AllocObjects => a.objects,
                        Weight::LiveBytes => a.live_bytes,
                        _ => a.bytes,
                    });
                }
            }
            return SProfile::Sampled {
                name,
                unit: if weight == Weight::AllocObjects {
                    "none"
                } else {
                    "bytes"
                },
                start_value: 0,
                end_value: weights.iter().sum(),
                samples,
                weights,
            };
        }
        if weight.is_wait() {
            for t in threads {
                for w in t.waits.iter().filter(|w| w.lock || weight == Weight::Wait) {
                    samples.push(profile.stack_frames(w.stack).iter().map(|f| f.0).collect());
                    weights.push(w.wait_ns);
                }
            }
            return SProfile::Sampled {
                name,
                unit: "nanoseconds",
                start_value: 0,
                end_value: weights.iter().sum(),
                samples,
                weights,
            };
        }
        for s in threads.flat_map(|t| &t.samples) {
            samples.push(profile.stack_frames(s.stack).iter().map(|f| f.0).collect());
            weights.push(match weight {
                Weight::Samples => 1,
                Weight::Wall => s.wall_ns,
                Weight::Cpu => s.cpu_ns,
                // Handled above.
                Weight::AllocBytes
                | Weight::AllocObjects
                | Weight::LiveBytes
                | Weight::Wait
                | Weight::Lock => 0,
            });
        }
        SProfile::Sampled {
            name,
            unit: if weight == Weight::Samples {
                "none"
            } else {
                "nanoseconds"
            },
            start_value: 0,
            end_value: weights.iter().sum(),
            samples,
            weights,
        }
    }

    fn evented(name: String, t: &ThreadProfile) -> SProfile {
        let spans = stacks::spans(&t.calls);
        let events: Vec<SEvent> = stacks::events(&spans)
            .into_iter()
            .map(|e| {
                let (kind, i) = match e {
                    SpanEvent::Open(i) => ("O", i),
                    SpanEvent::Close(i) => ("C", i),
                };
                SEvent {
                    kind,
                    frame: spans[i].frame.0,
                    at: e.at(&spans),
                }
            })
            .collect();
        SProfile::Evented {
            name,
            unit: "nanoseconds",
            start_value: 0,
            end_value: events.last().map_or(0, |e| e.at),
            events,
        }
    }

    /// The document-building writer this module replaced.
    ///
    /// Sampled profiles count `opts.weight` (unit `none`, 1 per sample, or `nanoseconds`);
    /// with `opts.merge_threads` all samples form one profile named `all threads`. Evented
    /// profiles (from calls) are always per thread and timed in nanoseconds since the
    /// profile start. A thread with both samples and calls gets both profiles.
    pub(super) fn write(
        profile: &Profile,
        opts: &Options,
        out: impl Write,
    ) -> Result<(), ExportError> {
        validate(profile)?;
        let frames = profile
            .frames
            .iter()
            .enumerate()
            .map(|(i, f)| {
                // The source file and line when the PDB gave them, else the module's file.
                let source = profile.source(crate::FrameId(i as u32));
                SFrame {
                    name: &f.name,
                    file: source.map(|s| s.file.as_str()).or_else(|| {
                        profile
                            .module_of(f)
                            .map(|m| m.path.as_deref().unwrap_or(&m.name))
                    }),
                    line: source.map(|s| s.line.unwrap_or(s.start_line)),
                }
            })
            .collect();
        let mut profiles = Vec::new();
        let alloc = opts.weight.is_alloc();
        let counted = |t: &ThreadProfile| {
            if alloc {
                !t.allocations.is_empty()
            } else {
                !t.samples.is_empty()
            }
        };
        let with_samples = || profile.threads.iter().filter(|t| counted(t));
        if opts.merge_threads && with_samples().next().is_some() {
            profiles.push(sampled(
                profile,
                "all threads".into(),
                with_samples(),
                opts.weight,
            ));
        }
        for t in &profile.threads {
            let both = counted(t) && !t.calls.is_empty();
            if counted(t) && !opts.merge_threads {
                let name = if both {
                    format!("{} (samples)", t.label())
                } else {
                    t.label()
                };
                profiles.push(sampled(profile, name, std::iter::once(t), opts.weight));
            }
            if !t.calls.is_empty() {
                let name = if both {
                    format!("{} (calls)", t.label())
                } else {
                    t.label()
                };
                profiles.push(evented(name, t));
            }
        }
        // The biggest profile first on screen; the earliest of equals.
        let active_profile_index = profiles
            .iter()
            .enumerate()
            .max_by_key(|(i, p)| (p.size(), std::cmp::Reverse(*i)))
            .map_or(0, |(i, _)| i);
        let file = File {
            schema: SCHEMA_URL,
            version: "0.0.1",
            name: &profile.name,
            active_profile_index,
            shared: Shared { frames },
            profiles,
        };
        serde_json::to_writer(out, &file)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    // The export tests' fixtures (tests/common), loaded once for the crate's tests.
    use crate::firefox_fxprof::fixtures::*;
    use crate::model::*;
    use crate::{Options, Weight};

    #[test]
    fn the_streamed_file_is_the_built_document_byte_for_byte() {
        let mut profiles = vec![fixture(), traced_only(), Profile::default()];
        // A thread with both samples and calls.
        let mut both = fixture();
        let calls = both.threads.pop().unwrap().calls;
        both.threads[0].calls = calls;
        // Allocations (one without a stack) and waits (a lock, a handle).
        let add = both.intern_stack_frames([MAIN, RUN, LIST_ADD]);
        let compute = both.intern_stack_frames([MAIN, COMPUTE]);
        for (i, t) in both.threads.iter_mut().enumerate() {
            let i = i as u64;
            t.allocations = vec![
                AllocationSample {
                    time_ns: i,
                    stack: add,
                    bytes: 3000 + i,
                    objects: 3,
                    live_bytes: 1000,
                    live_objects: 1,
                    followed: true,
                    freed_ns: None,
                },
                AllocationSample {
                    time_ns: MS,
                    stack: None,
                    bytes: 500,
                    objects: 1,
                    ..Default::default()
                },
            ];
            t.waits = vec![
                WaitSample {
                    time_ns: 0,
                    stack: compute,
                    wait_ns: 7 * MS + i,
                    lock: true,
                },
                WaitSample {
                    time_ns: MS,
                    stack: add,
                    wait_ns: 9 * MS,
                    lock: false,
                },
            ];
        }
        profiles.push(both);
        let weights = [
            Weight::Samples,
            Weight::Wall,
            Weight::Cpu,
            Weight::AllocBytes,
            Weight::AllocObjects,
            Weight::LiveBytes,
            Weight::Wait,
            Weight::Lock,
        ];
        for (n, profile) in profiles.iter().enumerate() {
            for weight in weights {
                for merge_threads in [false, true] {
                    let opts = Options {
                        weight,
                        merge_threads,
                        ..Default::default()
                    };
                    let (mut streamed, mut built) = (Vec::new(), Vec::new());
                    super::write(profile, &opts, &mut streamed).unwrap();
                    super::reference::write(profile, &opts, &mut built).unwrap();
                    assert!(
                        streamed == built,
                        "profile {n}, {opts:?}:\n{}\n{}",
                        String::from_utf8_lossy(&streamed),
                        String::from_utf8_lossy(&built)
                    );
                }
            }
        }
    }
}
