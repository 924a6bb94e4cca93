//! The Allocations (sampled) section (`record --alloc`): estimated bytes and objects by
//! type and by function, and the live heap of the followed samples
//! (docs/allocations.md for the scaling).

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use crate::allocs::{AllocPoint, AllocSamples};
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

#[derive(Debug, Serialize, PartialEq)]
pub struct LiveHeap {
    /// Estimated bytes of the followed samples still alive at the end.
    pub bytes: u64,
    pub objects: u64,
    /// Followed samples alive at the end.
    pub samples: u64,
    /// By type, most bytes first.
    pub types: Vec<TypeBytes>,
    /// By function, most bytes first.
    pub functions: Vec<FunctionBytes>,
    /// Estimated live bytes after each GC that collected followed samples:
    /// `[ms since the start, bytes]`.
    pub over_time: Vec<(f64, u64)>,
    /// At most this many samples are followed at once.
    pub tracked_max: u64,
    /// Samples not followed because `tracked_max` were (their objects are missing here).
    pub untracked: u64,
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
    /// By function, most total bytes first.
    pub functions: Vec<FunctionBytes>,
    pub live: LiveHeap,
}

fn by_type<'a>(points: impl Iterator<Item = &'a AllocPoint>, names: &Names) -> Vec<TypeBytes> {
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
    let mut v: Vec<FunctionBytes> = m
        .into_iter()
        .map(|(name, e)| FunctionBytes {
            name,
            self_bytes: e[0].round() as u64,
            total_bytes: e[1].round() as u64,
            self_objects: e[2].round() as u64,
            total_objects: e[3].round() as u64,
        })
        .collect();
    v.sort_by(|a, b| {
        b.total_bytes
            .cmp(&a.total_bytes)
            .then(b.self_bytes.cmp(&a.self_bytes))
            .then_with(|| a.name.cmp(&b.name))
    });
    v
}

/// The section, when the trace has allocation samples (or was recorded with `--alloc`).
pub fn section(a: &AllocSamples, names: &Names) -> Option<AllocationSamples> {
    let config = a.config?;
    let points = &a.points;
    let alive = || points.iter().filter(|p| p.alive_at_end());
    let stats = a.stats.unwrap_or_default();
    Some(AllocationSamples {
        source: config.source_name().into(),
        samples: points.len() as u64,
        runtime_samples: a.stats.map(|s| s.delivered),
        interval_bytes: config.interval_bytes,
        estimated: true,
        estimated_bytes: points.iter().map(|p| p.bytes).sum::<f64>().round() as u64,
        estimated_objects: points.iter().map(|p| p.objects).sum::<f64>().round() as u64,
        types: by_type(points.iter(), names),
        functions: by_function(points.iter(), names),
        live: LiveHeap {
            bytes: alive().map(|p| p.bytes).sum::<f64>().round() as u64,
            objects: alive().map(|p| p.objects).sum::<f64>().round() as u64,
            samples: alive().count() as u64,
            types: by_type(alive(), names),
            functions: by_function(alive(), names),
            over_time: a
                .live_over_time
                .iter()
                .map(|(ns, b)| (*ns as f64 / 1e6, b.round() as u64))
                .collect(),
            tracked_max: config.tracked_max,
            untracked: stats.untracked,
        },
    })
}
