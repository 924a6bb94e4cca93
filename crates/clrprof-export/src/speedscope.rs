//! speedscope's JSON file format (<https://www.speedscope.app/file-format-schema.json>).
//!
//! All frames go to `shared.frames` in profile order, so a `FrameId` is the index. A
//! thread with samples becomes a `sampled` profile (stacks root first, one weight per
//! sample); a thread with calls becomes an `evented` profile of balanced open/close
//! events in nanoseconds.

use std::io::Write;

use serde::Serialize;

use crate::model::{Profile, ThreadProfile, Weight};
use crate::stacks::{self, SpanEvent, validate};
use crate::{ExportError, Options};

/// The `$schema` every speedscope file names.
pub const SCHEMA_URL: &str = "https://www.speedscope.app/file-format-schema.json";

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

/// Writes `profile` as a speedscope file.
///
/// Sampled profiles count `opts.weight` (unit `none`, 1 per sample, or `nanoseconds`);
/// with `opts.merge_threads` all samples form one profile named `all threads`. Evented
/// profiles (from calls) are always per thread and timed in nanoseconds since the
/// profile start. A thread with both samples and calls gets both profiles.
pub fn write(profile: &Profile, opts: &Options, out: impl Write) -> Result<(), ExportError> {
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
