//! One heap snapshot read from a trace: objects in flat arrays (index = position), their
//! references as a compressed sparse row, roots, class and field names, statics. The
//! reader streams over the file once; memory is a few words per object and reference:
//! objects keep the order they were recorded in, and the ids (addresses) they were
//! recorded with are only held while references are turned into indexes.

use std::collections::HashMap;

use clrprof_format::{Event, FormatError, TraceReader};

/// A root as the runtime reported it (`COR_PRF_GC_ROOT_KIND`, recorded in 4 bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GcRootKind {
    /// `COR_PRF_GC_ROOT_STACK` (1): a stack slot of a frame, with its FunctionID.
    Stack,
    /// `COR_PRF_GC_ROOT_FINALIZER` (2): the finalizer queue.
    Finalizer,
    /// `COR_PRF_GC_ROOT_HANDLE` (3): a GC handle, with its GCHandleID.
    Handle,
    /// `COR_PRF_GC_ROOT_OTHER` (0), and any value this reader does not know.
    Other,
}

impl GcRootKind {
    /// The recorded value.
    pub fn from_raw(kind: u8) -> GcRootKind {
        match kind {
            1 => GcRootKind::Stack,
            2 => GcRootKind::Finalizer,
            3 => GcRootKind::Handle,
            _ => GcRootKind::Other,
        }
    }
}
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
/// A size that does not fit a `u32`: the object's size is in `large_sizes`.
pub const LARGE: u32 = u32::MAX;

/// Class index of a continuation entry: more references of the object with that id.
pub const CONTINUATION: u64 = u32::MAX as u64;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    /// Index of the object.
    pub object: u32,
    pub kind: GcRootKind,
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
    /// Per object (in recorded order): its class index, size and generation.
    pub class: Vec<u32>,
    /// Sizes in bytes; [`LARGE`] stands for a size in `large_sizes` (see [`Self::size`]).
    pub size: Vec<u32>,
    /// (object, size) of the objects of 4 GiB or more, by object.
    pub large_sizes: Vec<(u32, u64)>,
    pub generation: Vec<u8>,
    /// References of object `i`: `targets[edge_start[i]..edge_start[i + 1]]`.
    pub edge_start: Vec<u32>,
    pub targets: Vec<u32>,
    /// Byte offset of the field holding each reference (0 = unknown or array element);
    /// empty when loaded without them ([`load_with`]).
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
        self.class.len()
    }

    pub fn is_empty(&self) -> bool {
        self.class.is_empty()
    }

    /// References of `object` (none after [`Self::drop_references`]).
    pub fn edges(&self, object: u32) -> std::ops::Range<usize> {
        match self.edge_start.get(object as usize..object as usize + 2) {
            Some(&[from, to]) => from as usize..to as usize,
            _ => 0..0,
        }
    }

    /// Gives back the references (and their fields) once the graph has been read.
    pub fn drop_references(&mut self) {
        self.edge_start = Vec::new();
        self.targets = Vec::new();
        self.fields = Vec::new();
    }

    /// The size of an object in bytes.
    pub fn size(&self, object: u32) -> u64 {
        match self.size[object as usize] {
            LARGE => self
                .large_sizes
                .binary_search_by_key(&object, |l| l.0)
                .map_or(u64::from(LARGE), |i| self.large_sizes[i].1),
            s => u64::from(s),
        }
    }

    /// Every object's size in bytes, in object order.
    pub fn sizes(&self) -> impl Iterator<Item = u64> + '_ {
        (0..self.len() as u32).map(|o| self.size(o))
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
        let offset = self.fields.get(edge).copied().unwrap_or(0);
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

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// Reference targets as read, before they become indexes: per reference the zigzag
/// LEB128 of its id's difference to the reference before it in its object's run (to the
/// object's own id for the first). A list node's next, an array's consecutive elements:
/// one or two bytes a reference where an id takes eight.
#[derive(Default)]
struct TargetStream {
    bytes: Vec<u8>,
    len: usize,
    /// The id the next reference is written relative to.
    last: u64,
}

impl TargetStream {
    /// The references that follow are those of the object `id`.
    fn start(&mut self, id: u64) {
        self.last = id;
    }

    fn push(&mut self, target: u64) {
        let mut v = zigzag(target.wrapping_sub(self.last) as i64);
        self.last = target;
        while v >= 0x80 {
            self.bytes.push(v as u8 | 0x80);
            v >>= 7;
        }
        self.bytes.push(v as u8);
        self.len += 1;
    }

    fn reader(&self) -> TargetReader<'_> {
        TargetReader {
            bytes: &self.bytes,
            at: 0,
            last: 0,
        }
    }
}

/// Reads a [`TargetStream`] back in order.
struct TargetReader<'a> {
    bytes: &'a [u8],
    at: usize,
    last: u64,
}

impl TargetReader<'_> {
    fn start(&mut self, id: u64) {
        self.last = id;
    }

    fn next(&mut self) -> u64 {
        let mut v = 0u64;
        let mut shift = 0;
        while let Some(&b) = self.bytes.get(self.at) {
            self.at += 1;
            v |= u64::from(b & 0x7f) << shift.min(63);
            shift += 7;
            if b & 0x80 == 0 {
                break;
            }
        }
        self.last = self.last.wrapping_add(unzigzag(v) as u64);
        self.last
    }
}

/// Raw objects as read, before ids are mapped to indexes.
#[derive(Default)]
struct Raw {
    ids: Vec<u64>,
    class: Vec<u32>,
    size: Vec<u32>,
    /// (raw index, size) of the objects of [`LARGE`] size or more.
    large: Vec<(u32, u64)>,
    generation: Vec<u8>,
    edge_start: Vec<u32>,
    target_ids: TargetStream,
    fields: Vec<u32>,
    /// Whether the fields of the references are kept (only paths name them).
    keep_fields: bool,
    /// References from continuation entries that do not follow their object (another
    /// thread's batch came between): (object id, target id, field).
    more: Vec<(u64, u64, u32)>,
    /// Object indexes sorted by id, when the ids are not in few runs ([`finish`]).
    by_id: Vec<u32>,
    roots: Vec<(u64, GcRootKind, u32, u64)>,
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
                // More references of the object read last: they extend its run.
                let follows = self.ids.last() == Some(&id);
                for _ in 0..n {
                    let (Some(t), Some(field)) = (next(&mut i), next(&mut i)) else {
                        return false;
                    };
                    let target = id.wrapping_add(unzigzag(t) as u64);
                    let field = u32::try_from(field).unwrap_or(0);
                    if follows {
                        self.target_ids.push(target);
                        if self.keep_fields {
                            self.fields.push(field);
                        }
                    } else {
                        self.more.push((id, target, field));
                    }
                }
                continue;
            }
            self.ids.push(id);
            self.class.push(class as u32);
            let size = size_gen >> 3;
            if size >= u64::from(LARGE) {
                self.large.push((self.size.len() as u32, size));
            }
            self.size.push(u32::try_from(size).unwrap_or(LARGE));
            self.generation.push((size_gen & 7) as u8);
            self.edge_start.push(self.target_ids.len as u32);
            self.target_ids.start(id);
            for _ in 0..n {
                let (Some(t), Some(field)) = (next(&mut i), next(&mut i)) else {
                    return false;
                };
                self.target_ids.push(id.wrapping_add(unzigzag(t) as u64));
                if self.keep_fields {
                    self.fields.push(u32::try_from(field).unwrap_or(0));
                }
            }
        }
        true
    }
}

/// Reads snapshot number `snapshot` (see [`list`]), with the field of every reference.
pub fn load(bytes: &[u8], snapshot: u64) -> Result<HeapSnapshot, FormatError> {
    load_with(bytes, snapshot, true)
}

/// [`load`]; `fields`: keep the field each reference is held by (4 bytes a reference,
/// which only paths show: without them [`HeapSnapshot::field_name`] says `?`).
pub fn load_with(bytes: &[u8], snapshot: u64, fields: bool) -> Result<HeapSnapshot, FormatError> {
    load_releasing(bytes, snapshot, fields, &|| {})
}

/// Objects read between two calls of a [`load_releasing`] caller's `release`.
pub const RELEASE_EVERY: usize = 1 << 20;

/// [`load_with`], calling `release` after every [`RELEASE_EVERY`] objects read: a caller
/// whose `bytes` are a mapped file gives back the pages read so far, so that the file
/// does not sit in memory beside the arrays the objects fill.
pub fn load_releasing(
    bytes: &[u8],
    snapshot: u64,
    fields: bool,
    release: &dyn Fn(),
) -> Result<HeapSnapshot, FormatError> {
    let mut released_at = 0usize;
    let mut reader = TraceReader::new(bytes)?;
    let mut raw = Raw {
        keep_fields: fields,
        ..Raw::default()
    };
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
            } if n == snapshot => {
                if !raw.objects(&objects) {
                    s.malformed += 1;
                }
                if raw.ids.len() >= released_at + RELEASE_EVERY {
                    released_at = raw.ids.len();
                    release();
                }
            }
            Event::HeapRoots { snapshot: n, roots } if n == snapshot => {
                for r in roots.chunks_exact(3) {
                    let kind = GcRootKind::from_raw((r[1] & 0xf) as u8);
                    raw.roots.push((r[0], kind, (r[1] >> 4) as u32, r[2]));
                    if kind == GcRootKind::Stack {
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
    // The pass is over: what it read is in `raw`.
    release();
    finish(raw, &mut s);
    Ok(s)
}

/// A stretch of objects, in recorded order, whose ids increase and lie within 4 GiB of
/// its first: the walk reports a region (or segment) of the heap at a time, in address
/// order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Run {
    first_id: u64,
    last_id: u64,
    /// Object indexes `start..end`.
    start: u32,
    end: u32,
}

/// A run also ends at a gap of more than this between two ids: one run then covers one
/// stretch of live objects, not the space between two regions, which a region walked later
/// may lie in.
const RUN_GAP: u64 = 1 << 20;

/// The runs of increasing ids, in recorded order, when there are few of them and their
/// id ranges do not overlap (so no id is recorded twice); `None` otherwise.
fn increasing_runs(ids: &[u64]) -> Option<Vec<Run>> {
    let most = (ids.len() / 64).max(1024);
    let mut runs: Vec<Run> = Vec::new();
    let mut start = 0usize;
    for i in 1..=ids.len() {
        if i == ids.len()
            || ids[i] <= ids[i - 1]
            || ids[i] - ids[i - 1] > RUN_GAP
            || ids[i] - ids[start] > u64::from(u32::MAX)
        {
            if runs.len() == most {
                return None;
            }
            runs.push(Run {
                first_id: ids[start],
                last_id: ids[i - 1],
                start: start as u32,
                end: i as u32,
            });
            start = i;
        }
    }
    let mut by_id: Vec<&Run> = runs.iter().collect();
    by_id.sort_unstable_by_key(|r| r.first_id);
    by_id
        .windows(2)
        .all(|w| w[0].last_id < w[1].first_id)
        .then_some(runs)
}

/// Finds an object's index by its id, and an object's id by its index.
enum Lookup {
    /// Few runs of increasing ids (the usual walk): each object's id as 32 bits, its
    /// distance from its run's first id (4 bytes an object where the ids took 8).
    Runs {
        /// In recorded order.
        runs: Vec<Run>,
        /// Run indexes by first id.
        by_id: Vec<u32>,
        offsets: Vec<u32>,
    },
    /// The ids, and the object indexes sorted by id.
    Sorted { ids: Vec<u64>, by_id: Vec<u32> },
}

impl Lookup {
    /// Keeps `ids` in runs when [`increasing_runs`] finds them (the ids are then given
    /// back), else with `by_id`, the indexes sorted by id.
    fn new(ids: Vec<u64>, by_id: impl FnOnce(&[u64]) -> Vec<u32>) -> Lookup {
        let Some(runs) = increasing_runs(&ids) else {
            let by_id = by_id(&ids);
            return Lookup::Sorted { ids, by_id };
        };
        let mut offsets = Vec::with_capacity(ids.len());
        for r in &runs {
            offsets.extend(
                ids[r.start as usize..r.end as usize]
                    .iter()
                    .map(|&id| (id - r.first_id) as u32),
            );
        }
        drop(ids);
        let mut by_id: Vec<u32> = (0..runs.len() as u32).collect();
        by_id.sort_unstable_by_key(|&k| runs[k as usize].first_id);
        Lookup::Runs {
            runs,
            by_id,
            offsets,
        }
    }

    fn len(&self) -> usize {
        match self {
            Lookup::Runs { offsets, .. } => offsets.len(),
            Lookup::Sorted { ids, .. } => ids.len(),
        }
    }

    fn find(&self, id: u64) -> Option<u32> {
        match self {
            Lookup::Runs {
                runs,
                by_id,
                offsets,
            } => {
                let k =
                    by_id[..by_id.partition_point(|&k| runs[k as usize].first_id <= id)].last()?;
                let r = &runs[*k as usize];
                if id > r.last_id {
                    return None;
                }
                let at = offsets[r.start as usize..r.end as usize]
                    .binary_search(&((id - r.first_id) as u32))
                    .ok()?;
                Some(r.start + at as u32)
            }
            Lookup::Sorted { ids, by_id } => by_id
                .binary_search_by_key(&id, |&i| ids[i as usize])
                .ok()
                .map(|k| by_id[k]),
        }
    }

    /// The ids of the objects in order.
    fn ids(&self) -> Box<dyn Iterator<Item = u64> + '_> {
        match self {
            Lookup::Runs { runs, offsets, .. } => Box::new(runs.iter().flat_map(move |r| {
                offsets[r.start as usize..r.end as usize]
                    .iter()
                    .map(move |&o| r.first_id + u64::from(o))
            })),
            Lookup::Sorted { ids, .. } => Box::new(ids.iter().copied()),
        }
    }
}

/// Drops objects recorded twice, turns reference ids into indexes, resolves roots and
/// statics. Objects keep their recorded order; they are found by id through their runs of
/// increasing ids, or, when those are many or overlap, through a permutation sorted by id.
fn finish(mut raw: Raw, s: &mut HeapSnapshot) {
    raw.edge_start.push(raw.target_ids.len as u32);
    let mut runs_found = false;
    if raw.more.is_empty() {
        runs_found = increasing_runs(&raw.ids).is_some();
    }
    if !runs_found {
        // Object indexes by id. Duplicate ids (a batch recorded twice) keep one copy, a
        // non-GC one if there is one.
        let mut by_id: Vec<u32> = (0..raw.ids.len() as u32).collect();
        by_id.sort_unstable_by_key(|&i| {
            (raw.ids[i as usize], raw.generation[i as usize] != NON_GC, i)
        });
        let before = by_id.len();
        by_id.dedup_by_key(|i| raw.ids[*i as usize]);
        if by_id.len() != before || !raw.more.is_empty() {
            regroup(&mut raw, &mut by_id);
        }
        raw.by_id = by_id;
    }
    let by_id = std::mem::take(&mut raw.by_id);
    let lookup = Lookup::new(std::mem::take(&mut raw.ids), |_| by_id);
    let n = lookup.len();
    let find = |id: u64| lookup.find(id);
    // References: read back from the stream object by object and resolved, those to no
    // recorded object dropped (counted).
    let mut targets: Vec<u32> = Vec::with_capacity(raw.target_ids.len);
    let mut reader = raw.target_ids.reader();
    let mut begin = raw.edge_start[0] as usize;
    for (o, id) in lookup.ids().enumerate() {
        let end = raw.edge_start[o + 1] as usize;
        raw.edge_start[o] = targets.len() as u32;
        reader.start(id);
        for e in begin..end {
            match find(reader.next()) {
                Some(t) => {
                    if raw.keep_fields {
                        raw.fields[targets.len()] = raw.fields[e];
                    }
                    targets.push(t);
                }
                None => s.dangling += 1,
            }
        }
        begin = end;
    }
    raw.edge_start[n] = targets.len() as u32;
    raw.fields.truncate(targets.len());
    drop(std::mem::take(&mut raw.target_ids));
    s.targets = targets;
    s.fields = std::mem::take(&mut raw.fields);
    s.edge_start = std::mem::take(&mut raw.edge_start);
    for (id, kind, flags, rid) in std::mem::take(&mut raw.roots) {
        if let Some(object) = find(id) {
            s.roots.push(Root {
                object,
                kind,
                flags,
                id: rid,
            });
        }
    }
    for (class, field, thread, object, value) in std::mem::take(&mut raw.statics) {
        let object = if object == 0 { None } else { find(object) };
        s.statics.push(Static {
            class,
            field,
            thread,
            object,
            value,
        });
    }
    drop(lookup);
    s.class = std::mem::take(&mut raw.class);
    s.size = std::mem::take(&mut raw.size);
    s.large_sizes = std::mem::take(&mut raw.large);
    s.generation = std::mem::take(&mut raw.generation);
}

/// The uncommon case: objects recorded twice, or references of an object recorded apart
/// from it. Rebuilds the objects (the kept copies, in recorded order) and their reference
/// runs (own, then the apart ones); `by_id` is renumbered to match.
fn regroup(raw: &mut Raw, by_id: &mut [u32]) {
    let n = raw.ids.len();
    let mut keep = vec![false; n];
    for &i in by_id.iter() {
        keep[i as usize] = true;
    }
    let mut more = std::mem::take(&mut raw.more);
    more.sort_by_key(|m| m.0);
    let mut r = Raw {
        keep_fields: raw.keep_fields,
        ..Raw::default()
    };
    let mut new_index = vec![u32::MAX; n];
    let mut reader = raw.target_ids.reader();
    for o in 0..n {
        let own = raw.edge_start[o] as usize..raw.edge_start[o + 1] as usize;
        reader.start(raw.ids[o]);
        if !keep[o] {
            own.for_each(|_| {
                reader.next();
            });
            continue;
        }
        new_index[o] = r.ids.len() as u32;
        let id = raw.ids[o];
        r.ids.push(id);
        r.class.push(raw.class[o]);
        r.size.push(raw.size[o]);
        r.generation.push(raw.generation[o]);
        r.edge_start.push(r.target_ids.len as u32);
        r.target_ids.start(id);
        for _ in own.clone() {
            r.target_ids.push(reader.next());
        }
        if raw.keep_fields {
            r.fields.extend_from_slice(&raw.fields[own]);
        }
        let first = more.partition_point(|m| m.0 < id);
        for m in more[first..].iter().take_while(|m| m.0 == id) {
            r.target_ids.push(m.1);
            if raw.keep_fields {
                r.fields.push(m.2);
            }
        }
    }
    r.edge_start.push(r.target_ids.len as u32);
    r.large = raw
        .large
        .iter()
        .filter(|l| keep[l.0 as usize])
        .map(|&(o, size)| (new_index[o as usize], size))
        .collect();
    for i in by_id.iter_mut() {
        *i = new_index[*i as usize];
    }
    r.roots = std::mem::take(&mut raw.roots);
    r.statics = std::mem::take(&mut raw.statics);
    *raw = r;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zz(v: i64) -> u64 {
        ((v << 1) ^ (v >> 63)) as u64
    }

    #[test]
    fn batches_decode_deltas_and_references() {
        let mut raw = Raw {
            keep_fields: true,
            ..Raw::default()
        };
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
        let mut reader = raw.target_ids.reader();
        reader.start(1000);
        assert_eq!(reader.next(), 1024);
        reader.start(1024);
        assert_eq!(reader.next(), 1000);
        assert_eq!(raw.fields, vec![8, 0]);
        assert!(!Raw::default().objects(&[zz(8), 0, 24 << 3, 2, zz(1)]));
        // More references of object 1000, in a later batch.
        assert!(raw.objects(&[zz(1000), CONTINUATION, 0, 1, zz(24), 0]));
        assert_eq!(raw.ids.len(), 2, "a continuation is not an object");
        let mut s = HeapSnapshot::default();
        raw.roots.push((1024, GcRootKind::Handle, 0, 7));
        raw.roots.push((5, GcRootKind::Handle, 0, 7));
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
        let mut raw = Raw {
            keep_fields: true,
            ..Raw::default()
        };
        assert!(raw.objects(&[zz(1000), 0, 24 << 3, 2, zz(4000), 8, zz(8000), 16]));
        assert!(raw.objects(&[zz(5000), 1, 40 << 3 | NON_GC as u64, 0]));
        let mut s = HeapSnapshot::default();
        finish(raw, &mut s);
        assert_eq!(s.generation, vec![0, NON_GC]);
        assert!(s.is_non_gc(1) && !s.is_non_gc(0));
        assert_eq!(s.targets, vec![1]);
        assert_eq!(s.dangling, 1, "only the reference to 9000");
    }

    #[test]
    fn a_continuation_right_after_its_object_extends_its_run() {
        // Object 1000 → 1024; its continuation (→ 1000 itself) follows at once; then
        // 1024; then 1000 recorded again (a batch read twice): one copy is kept.
        let mut raw = Raw {
            keep_fields: true,
            ..Raw::default()
        };
        assert!(raw.objects(&[zz(1000), 0, 24 << 3 | 2, 1, zz(24), 8]));
        assert!(raw.objects(&[zz(1000), CONTINUATION, 0, 1, zz(0), 0]));
        assert!(raw.more.is_empty(), "no run kept apart");
        assert!(raw.objects(&[zz(1024), 1, 32 << 3, 0]));
        let mut s = HeapSnapshot::default();
        finish(raw, &mut s);
        assert_eq!(s.len(), 2);
        assert_eq!(s.targets, vec![1, 0]);
        assert_eq!(s.edge_start, vec![0, 2, 2]);
        let mut raw = Raw {
            keep_fields: true,
            ..Raw::default()
        };
        assert!(raw.objects(&[zz(1024), 1, 32 << 3, 1, zz(-24), 0]));
        assert!(raw.objects(&[zz(1000), 0, 24 << 3 | 2, 1, zz(24), 8]));
        assert!(raw.objects(&[zz(1024), 1, 32 << 3, 1, zz(-24), 0]));
        raw.roots.push((1000, GcRootKind::Handle, 0, 7));
        let mut s = HeapSnapshot::default();
        finish(raw, &mut s);
        assert_eq!(
            s.class,
            vec![1, 0],
            "recorded order, the second 1024 dropped"
        );
        assert_eq!(s.targets, vec![1, 0]);
        assert_eq!(s.edge_start, vec![0, 1, 2]);
        assert_eq!(s.roots[0].object, 1);
    }

    #[test]
    fn ids_are_found_through_their_increasing_runs() {
        // Regions walked out of address order (the second and third read as one run, as
        // they follow each other upwards), then the non-GC heap below them.
        let ids = vec![500, 510, 520, 100, 110, 300, 310, 320, 10, 20];
        let runs = increasing_runs(&ids).unwrap();
        assert_eq!(
            runs.iter().map(|r| (r.start, r.end)).collect::<Vec<_>>(),
            vec![(0, 3), (3, 8), (8, 10)]
        );
        let lookup = Lookup::new(ids.clone(), |_| unreachable!("runs were found"));
        assert!(matches!(&lookup, Lookup::Runs { offsets, .. } if offsets[..3] == [0, 10, 20]));
        assert_eq!(lookup.ids().collect::<Vec<_>>(), ids);
        for (i, &id) in ids.iter().enumerate() {
            assert_eq!(lookup.find(id), Some(i as u32), "{id}");
        }
        for id in [0, 15, 105, 200, 315, 505, 600] {
            assert_eq!(lookup.find(id), None, "{id}");
        }
        // Ids more than 4 GiB apart start a new run (an offset holds 32 bits).
        let far = [8, 16, 8 + (5 << 30), 16 + (5 << 30)];
        assert_eq!(increasing_runs(&far).unwrap().len(), 2);
        let lookup = Lookup::new(far.to_vec(), |_| unreachable!());
        assert_eq!(lookup.find(16 + (5 << 30)), Some(3));
        assert_eq!(lookup.find(8 + (1 << 32)), None);
        // Two regions walked upwards, then one between them: the gap splits the first run,
        // so the runs do not overlap.
        let (a, b, c) = (1 << 30, (1 << 30) + (4 << 20), (1 << 30) + (2 << 20));
        let regions = [a, a + 16, b, b + 16, c, c + 16];
        let lookup = Lookup::new(regions.to_vec(), |_| unreachable!("runs were found"));
        assert_eq!(lookup.find(c + 16), Some(5));
        assert_eq!(lookup.find(b), Some(2));
        // Overlapping runs (an id range walked twice) or a run per object: no runs.
        assert_eq!(increasing_runs(&[100, 200, 150, 250]), None);
        let reversed: Vec<u64> = (0..2000).rev().collect();
        assert_eq!(increasing_runs(&reversed), None);
        let lookup = Lookup::new(reversed, |ids| {
            let mut by_id: Vec<u32> = (0..ids.len() as u32).collect();
            by_id.sort_unstable_by_key(|&i| ids[i as usize]);
            by_id
        });
        assert_eq!(lookup.find(0), Some(1999));
        assert_eq!(increasing_runs(&[]), Some(Vec::new()));
    }

    #[test]
    fn references_resolve_the_same_through_runs_as_through_a_sorted_copy() {
        // Two regions out of order, references across them.
        let mut raw = Raw::default();
        assert!(raw.objects(&[
            zz(2000),
            0,
            24 << 3,
            1,
            zz(-1000),
            0,
            zz(24),
            0,
            24 << 3,
            1,
            zz(-1024),
            0
        ]));
        assert!(raw.objects(&[zz(1000), 1, 32 << 3, 1, zz(1000), 0]));
        raw.roots.push((1000, GcRootKind::Handle, 0, 7));
        let mut s = HeapSnapshot::default();
        finish(raw, &mut s);
        assert_eq!(s.targets, vec![2, 2, 0]);
        assert_eq!(s.roots[0].object, 2);
        assert_eq!(s.dangling, 0);
    }

    #[test]
    fn sizes_of_four_gib_and_more_are_kept_whole() {
        let big = 5u64 << 30;
        let mut raw = Raw::default();
        assert!(raw.objects(&[zz(1000), 0, 24 << 3, 0, zz(24), 0, (big << 3) | 3, 0]));
        let mut s = HeapSnapshot::default();
        finish(raw, &mut s);
        assert_eq!(s.sizes().collect::<Vec<_>>(), vec![24, big]);
        assert_eq!(s.size, vec![24, LARGE]);
        assert!(s.fields.is_empty(), "loaded without the fields");
        assert_eq!(s.field_name(0, 0), "?");
    }
}
