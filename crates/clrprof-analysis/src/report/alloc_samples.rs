//! The Allocations (sampled) section (`record --alloc`): estimated bytes and objects by
//! type, by the app's own methods and by function, and the live heap of the followed
//! samples (docs/allocations.md for the scaling).

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use crate::allocs::{AllocPoint, AllocSamples};
use crate::lines::{Lines, SourceLine};
use crate::names::Names;

#[derive(Debug, Serialize, PartialEq)]
pub struct TypeBytes {
    pub name: String,
    pub bytes: u64,
    pub objects: u64,
}

#[derive(Debug, Serialize, PartialEq)]
pub struct FunctionBytes {
    pub name: String,
    /// Allocated by the function itself (it is the stack's leaf).
    pub self_bytes: u64,
    /// Allocated by it and what it called.
    pub total_bytes: u64,
    /// The same in objects.
    pub self_objects: u64,
    pub total_objects: u64,
}

/// One source line's allocations: the estimated bytes and objects of the samples with a
/// frame on it.
#[derive(Debug, Serialize, PartialEq)]
pub struct LineBytes {
    /// The method the line is in.
    pub function: String,
    /// The document's path as the compiler wrote it.
    pub file: String,
    pub line: u32,
    /// The samples whose nearest app frame is on this line: the line of the app's code
    /// that allocated, directly or through the framework and runtime code it called.
    pub self_bytes: u64,
    pub self_objects: u64,
    pub self_samples: u64,
    /// The samples with any frame on this line (counted once a sample).
    pub total_bytes: u64,
    pub total_objects: u64,
}

#[derive(Debug, Serialize, PartialEq)]
pub struct LiveHeap {
    /// Estimated bytes of the followed samples still alive at the end.
    pub bytes: u64,
    pub objects: u64,
    /// Followed samples alive at the end.
    pub samples: u64,
    /// By type, most bytes first.
    pub types: Vec<TypeBytes>,
    /// By the app's own methods (as in [`AllocationSamples::app_functions`]).
    pub app_functions: Vec<FunctionBytes>,
    /// By function, most bytes first.
    pub functions: Vec<FunctionBytes>,
    /// Estimated live bytes after each GC that collected followed samples:
    /// `[ms since the start, bytes]`.
    pub over_time: Vec<(f64, u64)>,
    /// At most this many samples are followed at once.
    pub tracked_max: u64,
    /// Samples not followed because `tracked_max` were (their objects are missing here).
    pub untracked: u64,
    /// Of `bytes`: what a GC saw alive, per the generation that GC collected up to
    /// (`[gen0, gen1, gen2]`): live as of the last GC that looked at it.
    pub examined_bytes: [u64; 3],
    /// Of `bytes`: allocated since the last GC of its generation, which no GC has looked
    /// at yet (alive or not, no one knows).
    pub unexamined_bytes: u64,
    pub unexamined_objects: u64,
}

#[derive(Debug, Serialize, PartialEq)]
pub struct AllocationSamples {
    /// The runtime event sampled: `AllocationSampled` or `AllocationTick`.
    pub source: String,
    /// Samples recorded.
    pub samples: u64,
    /// Samples the runtime delivered (more than `samples` when `--alloc-interval` thinned
    /// them; null in a trace that ended before the agent's figures were written).
    pub runtime_samples: Option<u64>,
    /// About one sample per this many bytes.
    pub interval_bytes: u64,
    /// The figures below are scaled from samples (`true`): estimates, not counts.
    pub estimated: bool,
    pub estimated_bytes: u64,
    pub estimated_objects: u64,
    /// By type, most bytes first.
    pub types: Vec<TypeBytes>,
    /// By the app's own methods (those outside the shared framework), with the framework
    /// and runtime code they called: self is what the samples whose nearest app frame it
    /// is stand for, total what those with it anywhere on the stack do; most self bytes
    /// first.
    pub app_functions: Vec<FunctionBytes>,
    /// What the samples without any app frame stand for (the runtime's and the
    /// framework's own threads and start-up).
    pub outside_app: Outside,
    /// By function, most total bytes first.
    pub functions: Vec<FunctionBytes>,
    /// By source line (from the frames' IL offsets, the trace's line table and the
    /// modules' PDBs), most self bytes first; absent when the trace has no positions.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lines: Vec<LineBytes>,
    /// .NET 8 and 9: the samples whose positions the agent's own thread mapped, and those
    /// left without (their lines unknown) because its queue was full or they came after
    /// its last round; absent on .NET 10 and in traces before format 2.4.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub positions_mapped_later: Option<crate::allocs::PositionStats>,
    pub live: LiveHeap,
}

/// Bytes and objects by type, most bytes first.
pub fn by_type<'a>(points: impl Iterator<Item = &'a AllocPoint>, names: &Names) -> Vec<TypeBytes> {
    let mut m: HashMap<u64, (f64, f64)> = HashMap::new();
    for p in points {
        let e = m.entry(p.class).or_default();
        e.0 += p.bytes;
        e.1 += p.objects;
    }
    let mut v: Vec<TypeBytes> = m
        .into_iter()
        .map(|(class, (b, o))| TypeBytes {
            name: names.class(class),
            bytes: b.round() as u64,
            objects: o.round() as u64,
        })
        .collect();
    v.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.name.cmp(&b.name)));
    v
}

/// Estimated bytes and objects of the samples with no app frame on their stack.
#[derive(Debug, Serialize, PartialEq, Default)]
pub struct Outside {
    pub bytes: u64,
    pub objects: u64,
}

/// Per app method (by name, overloads together): self and total bytes and objects, the
/// samples' nearest app frame getting self, like the CPU table of the app's methods
/// (`app_code`); and what the samples without an app frame stand for.
pub fn by_app_function<'a>(
    points: impl Iterator<Item = &'a AllocPoint>,
    names: &Names,
) -> (Vec<FunctionBytes>, Outside) {
    let mut app: HashMap<u64, bool> = HashMap::new();
    // Per name: self bytes, total bytes, self objects, total objects.
    let mut m: HashMap<String, [f64; 4]> = HashMap::new();
    let mut seen = HashSet::new();
    let (mut out_bytes, mut out_objects) = (0.0, 0.0);
    for p in points {
        seen.clear();
        let mut nearest = true;
        for f in &p.frames {
            if !*app
                .entry(*f)
                .or_insert_with(|| crate::names::is_app_frame(names, *f))
            {
                continue;
            }
            let name = names.function(*f);
            if !seen.insert(name.clone()) {
                continue;
            }
            let e = m.entry(name).or_default();
            if nearest {
                e[0] += p.bytes;
                e[2] += p.objects;
                nearest = false;
            }
            e[1] += p.bytes;
            e[3] += p.objects;
        }
        if nearest {
            out_bytes += p.bytes;
            out_objects += p.objects;
        }
    }
    let mut v = rows(m);
    v.sort_by(|a, b| {
        (b.self_bytes, b.total_bytes)
            .cmp(&(a.self_bytes, a.total_bytes))
            .then_with(|| a.name.cmp(&b.name))
    });
    let outside = Outside {
        bytes: out_bytes.round() as u64,
        objects: out_objects.round() as u64,
    };
    (v, outside)
}

fn rows(m: HashMap<String, [f64; 4]>) -> Vec<FunctionBytes> {
    m.into_iter()
        .map(|(name, e)| FunctionBytes {
            name,
            self_bytes: e[0].round() as u64,
            total_bytes: e[1].round() as u64,
            self_objects: e[2].round() as u64,
            total_objects: e[3].round() as u64,
        })
        .collect()
}

fn by_function<'a>(
    points: impl Iterator<Item = &'a AllocPoint>,
    names: &Names,
) -> Vec<FunctionBytes> {
    // Per name: self bytes, total bytes, self objects, total objects.
    let mut m: HashMap<String, [f64; 4]> = HashMap::new();
    let mut seen = HashSet::new();
    for p in points {
        seen.clear();
        for (i, f) in p.frames.iter().enumerate() {
            let name = names.frame_name(*f);
            if !seen.insert(name.clone()) {
                continue;
            }
            let e = m.entry(name).or_default();
            if i == 0 {
                e[0] += p.bytes;
                e[2] += p.objects;
            }
            e[1] += p.bytes;
            e[3] += p.objects;
        }
    }
    let mut v = rows(m);
    v.sort_by(|a, b| {
        b.total_bytes
            .cmp(&a.total_bytes)
            .then(b.self_bytes.cmp(&a.self_bytes))
            .then_with(|| a.name.cmp(&b.name))
    });
    v
}

/// Per source line (of each method) the samples stand for: self for the line of each
/// sample's nearest app frame, total for every line on its stack; most self bytes first.
/// Frames without a known line are left out.
pub fn by_line<'a>(
    points: impl Iterator<Item = &'a AllocPoint>,
    names: &Names,
    lines: &mut Lines,
) -> Vec<LineBytes> {
    // Per (function id, position item): the row, resolved once.
    let mut resolved: HashMap<(u64, u64), Option<usize>> = HashMap::new();
    let mut app: HashMap<u64, bool> = HashMap::new();
    let mut row_of: HashMap<(String, SourceLine), usize> = HashMap::new();
    // Per row: its key, then self bytes, self objects, self samples, total bytes, total
    // objects.
    let mut rows: Vec<((String, SourceLine), [f64; 5])> = Vec::new();
    let mut seen: Vec<usize> = Vec::new();
    for p in points {
        if p.positions.len() != p.frames.len() {
            continue;
        }
        seen.clear();
        let mut nearest = true;
        for (&f, &item) in p.frames.iter().zip(&p.positions) {
            let is_app = *app
                .entry(f)
                .or_insert_with(|| crate::names::is_app_frame(names, f));
            let row = match item {
                0 => None,
                _ => *resolved.entry((f, item)).or_insert_with(|| {
                    let line = lines.line(names, f, item)?;
                    let key = (names.display(f), line);
                    Some(*row_of.entry(key.clone()).or_insert_with(|| {
                        rows.push((key, [0.0; 5]));
                        rows.len() - 1
                    }))
                }),
            };
            if let Some(row) = row {
                let r = &mut rows[row].1;
                if is_app && nearest {
                    r[0] += p.bytes;
                    r[1] += p.objects;
                    r[2] += 1.0;
                }
                if !seen.contains(&row) {
                    seen.push(row);
                    r[3] += p.bytes;
                    r[4] += p.objects;
                }
            }
            nearest &= !is_app;
        }
    }
    let mut v: Vec<LineBytes> = rows
        .into_iter()
        .map(|((function, line), r)| LineBytes {
            function,
            file: line.file.to_string(),
            line: line.line,
            self_bytes: r[0].round() as u64,
            self_objects: r[1].round() as u64,
            self_samples: r[2] as u64,
            total_bytes: r[3].round() as u64,
            total_objects: r[4].round() as u64,
        })
        .collect();
    v.sort_by(|a, b| {
        (b.self_bytes, b.total_bytes)
            .cmp(&(a.self_bytes, a.total_bytes))
            .then_with(|| (&a.file, a.line, &a.function).cmp(&(&b.file, b.line, &b.function)))
    });
    v
}

/// The section, when the trace has allocation samples (or was recorded with `--alloc`).
pub fn section(a: &AllocSamples, names: &Names) -> Option<AllocationSamples> {
    section_with_lines(a, names, None)
}

/// [`section`], with its `lines` table when `lines` is given.
pub fn section_with_lines(
    a: &AllocSamples,
    names: &Names,
    lines: Option<&mut Lines>,
) -> Option<AllocationSamples> {
    let config = a.config?;
    let points = &a.points;
    let alive = || points.iter().filter(|p| p.alive_at_end());
    let stats = a.stats.unwrap_or_default();
    let (app_functions, outside_app) = by_app_function(points.iter(), names);
    let mut examined = [0.0f64; 3];
    let mut unexamined = (0.0f64, 0.0f64);
    for p in alive() {
        match crate::allocs::examined(&a.gcs, p.ns, p.is_large()) {
            crate::allocs::Examined::AsOf(g) => examined[usize::from(g.min(2))] += p.bytes,
            crate::allocs::Examined::Not => {
                unexamined.0 += p.bytes;
                unexamined.1 += p.objects;
            }
        }
    }
    let examined_bytes = examined.map(|b| b.round() as u64);
    Some(AllocationSamples {
        source: config.source_name().into(),
        samples: points.len() as u64,
        runtime_samples: a.stats.map(|s| s.delivered),
        interval_bytes: config.interval_bytes,
        estimated: true,
        estimated_bytes: points.iter().map(|p| p.bytes).sum::<f64>().round() as u64,
        estimated_objects: points.iter().map(|p| p.objects).sum::<f64>().round() as u64,
        types: by_type(points.iter(), names),
        app_functions,
        outside_app,
        functions: by_function(points.iter(), names),
        lines: lines.map_or_else(Vec::new, |l| by_line(points.iter(), names, l)),
        positions_mapped_later: a.position_stats,
        live: LiveHeap {
            bytes: alive().map(|p| p.bytes).sum::<f64>().round() as u64,
            objects: alive().map(|p| p.objects).sum::<f64>().round() as u64,
            samples: alive().count() as u64,
            types: by_type(alive(), names),
            app_functions: by_app_function(alive(), names).0,
            functions: by_function(alive(), names),
            over_time: a
                .live_over_time
                .iter()
                .map(|(ns, b)| (*ns as f64 / 1e6, b.round() as u64))
                .collect(),
            tracked_max: config.tracked_max,
            untracked: stats.untracked,
            examined_bytes,
            unexamined_bytes: unexamined.0.round() as u64,
            unexamined_objects: unexamined.1.round() as u64,
        },
    })
}
