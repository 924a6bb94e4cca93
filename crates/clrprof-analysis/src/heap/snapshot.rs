//! One heap snapshot read from a trace: objects in flat arrays (index = position), their
//! references as a compressed sparse row, roots, class and field names, statics. The
//! reader streams over the file once; memory is a few words per object and reference.

use std::collections::HashMap;

use clrprof_format::{Event, FormatError, TraceReader};

/// `COR_PRF_GC_ROOT_KIND` values (`COR_PRF_GC_ROOT_OTHER` is 0).
pub const ROOT_OTHER: u8 = 0;
pub const ROOT_STACK: u8 = 1;
pub const ROOT_FINALIZER: u8 = 2;
pub const ROOT_HANDLE: u8 = 3;
/// `COR_PRF_GC_ROOT_FLAGS` bits.
pub const ROOT_PINNING: u32 = 0x1;
pub const ROOT_WEAK: u32 = 0x2;
pub const ROOT_INTERIOR: u32 = 0x4;
pub const ROOT_REFCOUNTED: u32 = 0x8;

/// Generation value of a non-GC (frozen) heap object: string literals, `RuntimeType`s and
/// other objects the runtime never collects (`EnumerateNonGCObjects`).
pub const NON_GC: u8 = 5;
/// Generation value of an object whose generation the agent could not read.
pub const NO_GENERATION: u8 = 7;
/// Class index of a continuation entry: more references of the object with that id.
pub const CONTINUATION: u64 = u32::MAX as u64;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    /// Index of the object.
    pub object: u32,
    pub kind: u8,
    pub flags: u32,
    /// FunctionID (stack), GCHandleID (handle) or 0.
    pub id: u64,
}

/// A static field as the agent read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Static {
    pub class: String,
    pub field: String,
    /// Managed thread of a `[ThreadStatic]` value, else 0.
    pub thread: u64,
    /// Index of the object it holds, if it holds one that the walk saw.
    pub object: Option<u32>,
    /// Primitive and string values as text.
    pub value: String,
}

/// The snapshot's own accounting (HeapEnd).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    pub objects: u64,
    pub references: u64,
    pub roots: u64,
    pub lost: u64,
    pub pause_ns: u64,
}

#[derive(Debug, Default)]
pub struct HeapSnapshot {
    pub snapshot: u64,
    /// Object ids (addresses at the time of the snapshot), sorted.
    pub ids: Vec<u64>,
    pub class: Vec<u32>,
    pub size: Vec<u64>,
    pub generation: Vec<u8>,
    /// References of object `i`: `targets[edge_start[i]..edge_start[i + 1]]`.
    pub edge_start: Vec<u32>,
    pub targets: Vec<u32>,
    /// Byte offset of the field holding each reference (0 = unknown or array element).
    pub fields: Vec<u32>,
    pub class_names: Vec<String>,
    /// (class index, offset) → field name.
    pub field_names: HashMap<(u32, u32), String>,
    pub roots: Vec<Root>,
    pub statics: Vec<Static>,
    /// FunctionID → name, for stack roots.
    pub functions: HashMap<u64, String>,
    pub totals: Totals,
    /// References to objects the walk did not report (dropped), and malformed batches.
    pub dangling: u64,
    /// Why the snapshot holds no non-GC heap objects (the agent's `heap_nongc` record, or
    /// its absence in traces of older agents); `None` when they were recorded.
    pub nongc_missing: Option<String>,
    pub malformed: u64,
    /// Whether HeapEnd was seen (the snapshot is complete).
    pub complete: bool,
}

impl HeapSnapshot {
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    pub fn edges(&self, object: u32) -> std::ops::Range<usize> {
        self.edge_start[object as usize] as usize..self.edge_start[object as usize + 1] as usize
    }

    pub fn is_non_gc(&self, object: u32) -> bool {
        self.generation[object as usize] == NON_GC
    }

    pub fn class_name(&self, object: u32) -> &str {
        self.class_names
            .get(self.class[object as usize] as usize)
            .map(String::as_str)
            .unwrap_or("?")
    }

    /// Name of the field through which edge `edge` leaves `object`.
    pub fn field_name(&self, object: u32, edge: usize) -> String {
        let offset = self.fields[edge];
        let class = self.class[object as usize];
        if offset == 0 {
            let name = self.class_names.get(class as usize).map(String::as_str);
            return if name.is_some_and(|n| n.ends_with(']')) {
                "[]".into()
            } else {
                "?".into()
            };
        }
        self.field_names
            .get(&(class, offset))
            .cloned()
            .unwrap_or_else(|| format!("+{offset}"))
    }

    /// Index of the object with id `id`.
    pub fn index_of(&self, id: u64) -> Option<u32> {
        self.ids.binary_search(&id).ok().map(|i| i as u32)
    }
}

/// Snapshot numbers with their totals, in order.
pub type SnapshotList = Vec<(u64, Totals)>;

/// The snapshots a trace holds, in order, with their totals (from HeapEnd).
pub fn list(bytes: &[u8]) -> Result<SnapshotList, FormatError> {
    list_checked(bytes).map(|(list, _)| list)
}

/// [`list`], with the reader's warnings about the file (truncation, CRC mismatches…), which
/// a snapshot read from a damaged trace must be shown with.
pub fn list_checked(bytes: &[u8]) -> Result<(SnapshotList, Vec<String>), FormatError> {
    let mut reader = TraceReader::new(bytes)?;
    let mut out = Vec::new();
    for d in reader.events_without_calls() {
        if let Event::HeapEnd {
            snapshot,
            objects,
            references,
            roots,
            lost,
            pause_ns,
        } = d.event
        {
            out.push((
                snapshot,
                Totals {
                    objects,
                    references,
                    roots,
                    lost,
                    pause_ns,
                },
            ));
        }
    }
    out.sort_by_key(|s| s.0);
    let warnings = reader.warnings().iter().map(|w| w.to_string()).collect();
    Ok((out, warnings))
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// Raw objects as read, before ids are mapped to indexes.
#[derive(Default)]
struct Raw {
    ids: Vec<u64>,
    class: Vec<u32>,
    size: Vec<u64>,
    generation: Vec<u8>,
    edge_start: Vec<u32>,
    target_ids: Vec<u64>,
    fields: Vec<u32>,
    /// References from continuation entries: (object id, target id, field).
    more: Vec<(u64, u64, u32)>,
    roots: Vec<(u64, u8, u32, u64)>,
    statics: Vec<(String, String, u64, u64, String)>,
}

impl Raw {
    /// Decodes one HeapObjects batch; false when it is malformed (the rest is skipped).
    fn objects(&mut self, values: &[u64]) -> bool {
        let mut i = 0;
        let mut previous = 0u64;
        let next = |i: &mut usize| -> Option<u64> {
            let v = values.get(*i).copied();
            *i += 1;
            v
        };
        while i < values.len() {
            let (Some(delta), Some(class), Some(size_gen), Some(n)) =
                (next(&mut i), next(&mut i), next(&mut i), next(&mut i))
            else {
                return false;
            };
            if n > (values.len() as u64) {
                return false;
            }
            let id = previous.wrapping_add(unzigzag(delta) as u64);
            previous = id;
            if class == CONTINUATION {
                for _ in 0..n {
                    let (Some(t), Some(field)) = (next(&mut i), next(&mut i)) else {
                        return false;
                    };
                    self.more.push((
                        id,
                        id.wrapping_add(unzigzag(t) as u64),
                        u32::try_from(field).unwrap_or(0),
                    ));
                }
                continue;
            }
            self.ids.push(id);
            self.class.push(class as u32);
            self.size.push(size_gen >> 3);
            self.generation.push((size_gen & 7) as u8);
            self.edge_start.push(self.target_ids.len() as u32);
            for _ in 0..n {
                let (Some(t), Some(field)) = (next(&mut i), next(&mut i)) else {
                    return false;
                };
                self.target_ids.push(id.wrapping_add(unzigzag(t) as u64));
                self.fields.push(u32::try_from(field).unwrap_or(0));
            }
        }
        true
    }
}

/// Reads snapshot number `snapshot` (see [`list`]).
pub fn load(bytes: &[u8], snapshot: u64) -> Result<HeapSnapshot, FormatError> {
    let mut reader = TraceReader::new(bytes)?;
    let mut raw = Raw::default();
    let mut s = HeapSnapshot {
        snapshot,
        ..HeapSnapshot::default()
    };
    let mut functions: HashMap<u64, String> = HashMap::new();
    let mut stack_ids: Vec<u64> = Vec::new();
    s.nongc_missing = Some("not recorded by the agent that wrote this trace".into());
    for d in reader.events() {
        match d.event {
            Event::HeapObjects {
                snapshot: n,
                objects,
            } if n == snapshot && !raw.objects(&objects) => s.malformed += 1,
            Event::HeapRoots { snapshot: n, roots } if n == snapshot => {
                for r in roots.chunks_exact(3) {
                    let kind = (r[1] & 0xf) as u8;
                    raw.roots.push((r[0], kind, (r[1] >> 4) as u32, r[2]));
                    if kind == ROOT_STACK {
                        stack_ids.push(r[2]);
                    }
                }
            }
            Event::HeapClass {
                snapshot: n,
                index,
                name,
                ..
            } if n == snapshot => {
                let i = index as usize;
                if i < 1 << 24 {
                    if s.class_names.len() <= i {
                        s.class_names.resize(i + 1, String::new());
                    }
                    s.class_names[i] = name.into_owned();
                }
            }
            Event::HeapField {
                snapshot: n,
                index,
                offset,
                name,
            } if n == snapshot => {
                s.field_names
                    .entry((index as u32, offset as u32))
                    .or_insert_with(|| name.into_owned());
            }
            Event::HeapStatic {
                snapshot: n,
                class,
                field,
                thread,
                object,
                value,
            } if n == snapshot => raw.statics.push((
                class.into_owned(),
                field.into_owned(),
                thread,
                object,
                value.into_owned(),
            )),
            Event::HeapEnd {
                snapshot: n,
                objects,
                references,
                roots,
                lost,
                pause_ns,
            } if n == snapshot => {
                s.complete = true;
                s.totals = Totals {
                    objects,
                    references,
                    roots,
                    lost,
                    pause_ns,
                };
            }
            Event::FunctionInfo { function, name, .. } => {
                functions.insert(function, name.into_owned());
            }
            Event::Meta { key, json } if key == "heap_nongc" => {
                if let Ok(v) = serde_json::from_str::<serde_json::Value>(&json)
                    && v["snapshot"].as_u64() == Some(snapshot)
                {
                    s.nongc_missing = v["error"].as_str().map(str::to_string);
                }
            }
            _ => {}
        }
    }
    stack_ids.sort_unstable();
    stack_ids.dedup();
    s.functions = stack_ids
        .into_iter()
        .filter_map(|f| functions.get(&f).map(|n| (f, n.clone())))
        .collect();
    finish(raw, &mut s);
    Ok(s)
}

/// Sorts the objects by id and turns reference ids into indexes.
fn finish(mut raw: Raw, s: &mut HeapSnapshot) {
    raw.more.sort_by_key(|m| m.0);
    let n = raw.ids.len();
    let mut order: Vec<u32> = (0..n as u32).collect();
    // Duplicate ids (a batch recorded twice) keep one copy, a non-GC one if there is one.
    order.sort_unstable_by_key(|&i| (raw.ids[i as usize], raw.generation[i as usize] != NON_GC, i));
    order.dedup_by_key(|i| raw.ids[*i as usize]);
    s.ids = order.iter().map(|&i| raw.ids[i as usize]).collect();
    s.class = order.iter().map(|&i| raw.class[i as usize]).collect();
    s.size = order.iter().map(|&i| raw.size[i as usize]).collect();
    s.generation = order.iter().map(|&i| raw.generation[i as usize]).collect();
    let end_of = |i: usize| {
        raw.edge_start
            .get(i + 1)
            .map(|&e| e as usize)
            .unwrap_or(raw.target_ids.len())
    };
    s.edge_start = Vec::with_capacity(s.ids.len() + 1);
    for &o in &order {
        s.edge_start.push(s.targets.len() as u32);
        let o = o as usize;
        let own =
            (raw.edge_start[o] as usize..end_of(o)).map(|e| (raw.target_ids[e], raw.fields[e]));
        let id = raw.ids[o];
        let first = raw.more.partition_point(|m| m.0 < id);
        let more = raw.more[first..]
            .iter()
            .take_while(|m| m.0 == id)
            .map(|m| (m.1, m.2));
        for (target, field) in own.chain(more) {
            match s.ids.binary_search(&target) {
                Ok(t) => {
                    s.targets.push(t as u32);
                    s.fields.push(field);
                }
                Err(_) => s.dangling += 1,
            }
        }
    }
    s.edge_start.push(s.targets.len() as u32);
    for (id, kind, flags, rid) in raw.roots {
        if let Some(object) = s.index_of(id) {
            s.roots.push(Root {
                object,
                kind,
                flags,
                id: rid,
            });
        }
    }
    for (class, field, thread, object, value) in raw.statics {
        let object = if object == 0 {
            None
        } else {
            s.index_of(object)
        };
        s.statics.push(Static {
            class,
            field,
            thread,
            object,
            value,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zz(v: i64) -> u64 {
        ((v << 1) ^ (v >> 63)) as u64
    }

    #[test]
    fn batches_decode_deltas_and_references() {
        let mut raw = Raw::default();
        // Object 1000 (class 0, 24 bytes, gen 2) → 1024 at offset 8; object 1024 (class 1,
        // 32 bytes, gen 0) → 1000, field unknown.
        let batch = [
            zz(1000),
            0,
            24 << 3 | 2,
            1,
            zz(24),
            8,
            zz(24),
            1,
            32 << 3,
            1,
            zz(-24),
            0,
        ];
        assert!(raw.objects(&batch));
        assert_eq!(raw.ids, vec![1000, 1024]);
        assert_eq!(raw.size, vec![24, 32]);
        assert_eq!(raw.generation, vec![2, 0]);
        assert_eq!(raw.target_ids, vec![1024, 1000]);
        assert_eq!(raw.fields, vec![8, 0]);
        assert!(!Raw::default().objects(&[zz(8), 0, 24 << 3, 2, zz(1)]));
        // More references of object 1000, in a later batch.
        assert!(raw.objects(&[zz(1000), CONTINUATION, 0, 1, zz(24), 0]));
        assert_eq!(raw.ids.len(), 2, "a continuation is not an object");
        let mut s = HeapSnapshot::default();
        raw.roots.push((1024, ROOT_HANDLE, 0, 7));
        raw.roots.push((5, ROOT_HANDLE, 0, 7));
        finish(raw, &mut s);
        assert_eq!(s.targets, vec![1, 1, 0]);
        assert_eq!(s.edge_start, vec![0, 2, 3]);
        assert_eq!(s.roots.len(), 1, "a root of an unknown object is dropped");
        assert_eq!(s.roots[0].object, 1);
        assert_eq!(s.dangling, 0);
    }

    #[test]
    fn references_into_the_non_gc_heap_resolve_when_it_is_recorded() {
        // Object 1000 (gen 0) → 5000, a non-GC string, recorded in a later batch; → 9000,
        // not recorded at all.
        let mut raw = Raw::default();
        assert!(raw.objects(&[zz(1000), 0, 24 << 3, 2, zz(4000), 8, zz(8000), 16]));
        assert!(raw.objects(&[zz(5000), 1, 40 << 3 | NON_GC as u64, 0]));
        let mut s = HeapSnapshot::default();
        finish(raw, &mut s);
        assert_eq!(s.generation, vec![0, NON_GC]);
        assert!(s.is_non_gc(1) && !s.is_non_gc(0));
        assert_eq!(s.targets, vec![1]);
        assert_eq!(s.dangling, 1, "only the reference to 9000");
    }
}
