//! `clrprof diff BEFORE AFTER` of two traces recorded with `--alloc`: the estimated bytes
//! allocated by type and by the app's own methods (self), before and after, largest change
//! first (the allocation side of `pprof -diff_base`). Both sides are estimates from
//! samples (docs/allocations.md): a change smaller than the sampling error of its row
//! (about `1/√n` of it, for `n` samples) is noise.

use std::collections::HashMap;

use serde::Serialize;

use super::delta;
use crate::report::AllocationSamples;

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct AllocDelta {
    pub name: String,
    pub bytes_before: u64,
    pub bytes_after: u64,
    pub bytes_delta: i64,
    pub objects_before: u64,
    pub objects_after: u64,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct AllocDiff {
    /// Always `true`: the figures are estimates scaled from samples.
    pub estimated: bool,
    pub samples_before: u64,
    pub samples_after: u64,
    pub bytes_before: u64,
    pub bytes_after: u64,
    pub bytes_delta: i64,
    /// Types whose bytes changed, largest change first.
    pub types: Vec<AllocDelta>,
    /// The app's own methods by self bytes (with the framework code they call), largest
    /// change first.
    pub app_functions: Vec<AllocDelta>,
}

/// Rows by name from `(name, bytes, objects)` before and after; unchanged ones dropped.
fn rows(before: &[(String, u64, u64)], after: &[(String, u64, u64)]) -> Vec<AllocDelta> {
    let mut m: HashMap<&str, [u64; 4]> = HashMap::new();
    for (name, b, o) in before {
        let e = m.entry(name).or_default();
        e[0] += b;
        e[2] += o;
    }
    for (name, b, o) in after {
        let e = m.entry(name).or_default();
        e[1] += b;
        e[3] += o;
    }
    let mut v: Vec<AllocDelta> = m
        .into_iter()
        .map(|(name, e)| AllocDelta {
            name: name.to_string(),
            bytes_before: e[0],
            bytes_after: e[1],
            bytes_delta: delta(e[0], e[1]),
            objects_before: e[2],
            objects_after: e[3],
        })
        .filter(|d| d.bytes_delta != 0)
        .collect();
    v.sort_by(|x, y| {
        y.bytes_delta
            .unsigned_abs()
            .cmp(&x.bytes_delta.unsigned_abs())
            .then_with(|| x.name.cmp(&y.name))
    });
    v
}

/// Compares the allocation sections of two reports.
pub fn diff(a: &AllocationSamples, b: &AllocationSamples) -> AllocDiff {
    let types = |s: &'_ AllocationSamples| -> Vec<(String, u64, u64)> {
        s.types
            .iter()
            .map(|t| (t.name.clone(), t.bytes, t.objects))
            .collect()
    };
    let apps = |s: &'_ AllocationSamples| -> Vec<(String, u64, u64)> {
        s.app_functions
            .iter()
            .map(|f| (f.name.clone(), f.self_bytes, f.self_objects))
            .collect()
    };
    AllocDiff {
        estimated: true,
        samples_before: a.samples,
        samples_after: b.samples,
        bytes_before: a.estimated_bytes,
        bytes_after: b.estimated_bytes,
        bytes_delta: delta(a.estimated_bytes, b.estimated_bytes),
        types: rows(&types(a), &types(b)),
        app_functions: rows(&apps(a), &apps(b)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{FunctionBytes, LiveHeap, Outside, TypeBytes};

    fn section(types: &[(&str, u64)], apps: &[(&str, u64)]) -> AllocationSamples {
        AllocationSamples {
            source: "AllocationSampled".into(),
            samples: 10,
            runtime_samples: Some(10),
            interval_bytes: 102_400,
            estimated: true,
            estimated_bytes: types.iter().map(|t| t.1).sum(),
            estimated_objects: 0,
            types: types
                .iter()
                .map(|(n, b)| TypeBytes {
                    name: (*n).into(),
                    bytes: *b,
                    objects: b / 100,
                })
                .collect(),
            app_functions: apps
                .iter()
                .map(|(n, b)| FunctionBytes {
                    name: (*n).into(),
                    self_bytes: *b,
                    total_bytes: *b,
                    self_objects: b / 100,
                    total_objects: b / 100,
                })
                .collect(),
            outside_app: Outside::default(),
            functions: vec![],
            lines: Vec::new(),
            positions_mapped_later: None,
            live: LiveHeap {
                bytes: 0,
                objects: 0,
                samples: 0,
                types: vec![],
                app_functions: vec![],
                functions: vec![],
                over_time: vec![],
                tracked_max: 0,
                untracked: 0,
                examined_bytes: [0; 3],
                unexamined_bytes: 0,
                unexamined_objects: 0,
            },
        }
    }

    #[test]
    fn changes_by_type_and_by_app_method_largest_first() {
        let a = section(
            &[
                ("System.String", 1000),
                ("System.Byte[]", 500),
                ("Gone", 10),
            ],
            &[("App.Parse", 1200), ("App.Load", 300)],
        );
        let b = section(
            &[("System.String", 1100), ("System.Byte[]", 2500), ("New", 7)],
            &[("App.Parse", 1100), ("App.Load", 2500)],
        );
        let d = diff(&a, &b);
        assert_eq!(d.bytes_delta, 3607 - 1510);
        let t: Vec<(&str, i64)> = d
            .types
            .iter()
            .map(|r| (r.name.as_str(), r.bytes_delta))
            .collect();
        assert_eq!(
            t,
            [
                ("System.Byte[]", 2000),
                ("System.String", 100),
                ("Gone", -10),
                ("New", 7)
            ]
        );
        let f: Vec<(&str, i64)> = d
            .app_functions
            .iter()
            .map(|r| (r.name.as_str(), r.bytes_delta))
            .collect();
        assert_eq!(f, [("App.Load", 2200), ("App.Parse", -100)]);
        let text = crate::text::render_alloc_diff(&d, 10);
        let head = "allocations diff (estimates from 10 and 10 samples): ~1510 B → ~3607 B (+2097 B, +139 %)";
        assert!(text.starts_with(head), "{text}");
        assert!(
            text.contains("\n        +2000 B  +400 %        500 B       2500 B  System.Byte[]\n"),
            "{text}"
        );
        assert!(
            text.contains("\n           +7 B     new          0 B          7 B  New\n"),
            "{text}"
        );
    }
}
