//! Heap snapshots (docs/heap.md): a full GC forced from one of our native threads with
//! `COR_PRF_MONITOR_GC` turned on for that GC only. After marking, the runtime walks the
//! heap for us: `RootReferences2` gives every root, `ObjectReferences` every live object
//! and its outgoing references. Each callback appends to a small batch that goes into
//! the calling thread's ring as one `HeapObjects` / `HeapRoots` record when full, so the
//! agent never holds a copy of the heap. Non-GC (frozen) heap objects get generation
//! [`NON_GC`]: listed at `GarbageCollectionStarted` (`EnumerateNonGCObjects`), marked when
//! the walk reports them, the others recorded at `GarbageCollectionFinished`. Class
//! names, field layouts and statics are read after the GC, from the requesting thread,
//! for the classes the walk met.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::time::Instant;

use clrprof_format::{Event, HeapReason};
use corprof::{ClassId, FunctionId, ObjectId, ProfilerInfo};

use crate::output::buffers::{emit, emit_waiting};

const IDLE: u8 = 0;
/// A snapshot asked for a GC; the next full GC is walked.
const ARMED: u8 = 1;
/// The walked GC is running: object and root callbacks are recorded.
const WALKING: u8 = 2;
/// The walked GC finished.
const DONE: u8 = 3;

static STATE: AtomicU8 = AtomicU8::new(IDLE);
static SEQUENCE: AtomicU64 = AtomicU64::new(0);
/// GCs started since load (while GC callbacks are on): statics read after the walk are
/// valid only if no GC ran in between.
static GCS: AtomicU64 = AtomicU64::new(0);
static WALK: Mutex<Option<Walk>> = Mutex::new(None);
/// One snapshot at a time (control socket and `--heap` timer may race).
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// At a session's start: no snapshot under way, and the session's snapshots are numbered
/// from 1.
pub fn reset_for_session() {
    STATE.store(IDLE, Ordering::Release);
    SEQUENCE.store(0, Ordering::Relaxed);
    GCS.store(0, Ordering::Relaxed);
    *WALK.lock().unwrap_or_else(|p| p.into_inner()) = None;
}

/// Values per batch record at most (each value takes ≤ 10 bytes); less with small rings
/// (a record may fill at most half a ring), see `batch_values`.
const BATCH_VALUES: usize = 2048;
/// Class index of a continuation entry: more references of the previous object with the
/// same id (an object with more references than one batch holds, e.g. a large array).
pub const CONTINUATION: u64 = u32::MAX as u64;
/// Generation value of a non-GC (frozen) heap object: after 0–2, LOH (3), POH (4); 7 is
/// an object whose generation could not be read.
pub const NON_GC: u64 = 5;

/// Values per batch for this ring size; an entry adds at most a quarter of it.
fn batch_values() -> usize {
    (crate::output::buffers::buffer_bytes() / 2 / 10 / 2).clamp(64, BATCH_VALUES)
}
/// Objects larger than this, or with more references, get no field offsets (arrays
/// never do: their references are elements).
const SCAN_MAX_BYTES: usize = 4096;
const SCAN_MAX_REFS: usize = 256;
/// Where a one-dimensional array's elements start: after the method-table pointer and the
/// length (padded to 8 bytes).
const SZ_ARRAY_DATA: usize = 16;

struct Walk {
    snapshot: u64,
    /// For the non-GC heap, read in `gc_started` / `gc_finished` (which the runtime calls
    /// without it).
    info: ProfilerInfo,
    /// Non-GC objects listed at the start of the GC that the walk has not reported yet.
    frozen: HashSet<usize>,
    batch_values: usize,
    objects: Vec<u64>,
    objects_in_batch: u64,
    previous: u64,
    roots: Vec<u64>,
    roots_in_batch: u64,
    /// ClassID → index, and per index (ClassID, is an array).
    classes: HashMap<usize, u32>,
    class_list: Vec<(usize, bool)>,
    /// Per index, for an array of structs: the element's class and size.
    struct_elements: Vec<Option<(usize, u64)>>,
    stack_functions: HashSet<usize>,
    n_objects: u64,
    n_references: u64,
    n_roots: u64,
    lost: u64,
    nongc_objects: u64,
    nongc_bytes: u64,
    /// Why the non-GC heap is not in the snapshot.
    nongc_error: Option<String>,
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

impl Walk {
    fn new(snapshot: u64, info: ProfilerInfo) -> Walk {
        Walk {
            snapshot,
            info,
            frozen: HashSet::new(),
            batch_values: batch_values(),
            objects: Vec::with_capacity(BATCH_VALUES + 64),
            objects_in_batch: 0,
            previous: 0,
            roots: Vec::with_capacity(BATCH_VALUES + 64),
            roots_in_batch: 0,
            classes: HashMap::new(),
            class_list: Vec::new(),
            struct_elements: Vec::new(),
            stack_functions: HashSet::new(),
            n_objects: 0,
            n_references: 0,
            n_roots: 0,
            lost: 0,
            nongc_objects: 0,
            nongc_bytes: 0,
            nongc_error: None,
        }
    }

    fn class_index(&mut self, info: &ProfilerInfo, class: ClassId) -> (u32, bool) {
        if let Some(&i) = self.classes.get(&class.0) {
            return (i, self.class_list[i as usize].1);
        }
        let info_array = info.is_array_class(class);
        let array = matches!(info_array, Ok(Some(_)));
        // An array of structs (ELEMENT_TYPE_VALUETYPE, one dimension): its references are
        // fields of its elements, named by the element's layout.
        let element = match info_array {
            Ok(Some(a)) if a.element_type == 0x11 && a.rank == 1 && a.element_class.0 != 0 => info
                .get_class_layout(a.element_class)
                .ok()
                .filter(|(_, size)| *size > 0)
                .map(|(_, size)| (a.element_class.0, u64::from(size))),
            _ => None,
        };
        let i = self.class_list.len() as u32;
        self.classes.insert(class.0, i);
        self.class_list.push((class.0, array));
        self.struct_elements.push(element);
        (i, array)
    }

    fn object(&mut self, info: &ProfilerInfo, object: ObjectId, class: ClassId, refs: &[ObjectId]) {
        let size = info.get_object_size2(object).unwrap_or(0);
        // The walk reports non-GC objects too (.NET 8 and 10), whose generation the
        // runtime does not give (CORPROF_E_NOT_GC_OBJECT / E_FAIL).
        let generation = match info.get_object_generation(object) {
            Ok(r) if r.generation <= 4 => u64::from(r.generation),
            _ if self.frozen.remove(&object.0) => {
                self.nongc_objects += 1;
                self.nongc_bytes += size as u64;
                NON_GC
            }
            Ok(_) => 6,
            Err(_) => 7,
        };
        self.entry(info, object, class, size, generation, refs, None);
    }

    /// Appends one object; `offsets` (per reference) when known, else they are found by
    /// scanning the object.
    #[allow(clippy::too_many_arguments)]
    fn entry(
        &mut self,
        info: &ProfilerInfo,
        object: ObjectId,
        class: ClassId,
        size: usize,
        generation: u64,
        refs: &[ObjectId],
        offsets: Option<&[u64]>,
    ) {
        let (index, array) = self.class_index(info, class);
        let element = self.struct_elements[index as usize];
        let id = object.0 as u64;
        let scan = offsets.is_none()
            && (!array || element.is_some())
            && size <= SCAN_MAX_BYTES
            && refs.len() <= SCAN_MAX_REFS;
        let mut done = 0usize;
        // References per entry: a large array is split into continuation entries so that
        // no record outgrows the ring.
        let chunk = (self.batch_values / 4).max(8);
        let mut from = 8usize;
        let mut parts = refs.chunks(chunk).peekable();
        let mut first = true;
        while first || parts.peek().is_some() {
            let part = parts.next().unwrap_or(&[]);
            self.objects
                .push(zigzag(id.wrapping_sub(self.previous) as i64));
            self.previous = id;
            if first {
                self.objects.push(u64::from(index));
                self.objects.push((size as u64) << 3 | generation);
                self.objects_in_batch += 1;
            } else {
                self.objects.push(CONTINUATION);
                self.objects.push(0);
            }
            first = false;
            self.objects.push(part.len() as u64);
            for r in part {
                self.objects
                    .push(zigzag((r.0 as u64).wrapping_sub(id) as i64));
                let known = offsets.and_then(|o| o.get(done)).filter(|_| !array);
                done += 1;
                let offset = if let Some(&o) = known {
                    o
                } else if scan {
                    // SAFETY: (A7) called from ObjectReferences: the runtime is suspended for
                    // the GC and `object` is a live object of `size` bytes
                    // (GetObjectSize2), whose fields lie between id + 8 and id + size - 8.
                    match unsafe { find_slot(object.0, size, r.0, from) } {
                        Some(o) => {
                            from = o + 8;
                            match element {
                                // In an array of structs: 1 + the offset in its element (0
                                // stays "an element"), as the element's fields are listed.
                                Some((_, elem_size)) if o >= SZ_ARRAY_DATA => {
                                    (o - SZ_ARRAY_DATA) as u64 % elem_size + 1
                                }
                                Some(_) => 0,
                                None => o as u64,
                            }
                        }
                        None => 0,
                    }
                } else {
                    0
                };
                self.objects.push(offset);
            }
            if self.objects.len() >= self.batch_values {
                self.flush_objects();
            }
        }
        self.n_objects += 1;
        self.n_references += refs.len() as u64;
    }

    /// Lists the non-GC (frozen) heap at `GarbageCollectionStarted`, before the walk.
    fn list_non_gc(&mut self) {
        let version = self.info.version();
        if version < 14 {
            self.nongc_error = Some(format!(
                "the runtime offers ICorProfilerInfo{version}, EnumerateNonGCObjects needs 14"
            ));
            return;
        }
        match self.info.enumerate_non_gc_objects() {
            Ok(ids) => self.frozen = ids.into_iter().map(|o| o.0).collect(),
            Err(e) => self.nongc_error = Some(format!("EnumerateNonGCObjects failed: {e}")),
        }
    }

    /// Records the listed non-GC objects the walk did not report, from
    /// `GarbageCollectionFinished`: the GC is still in progress, so they may be inspected.
    /// They never move and reference only each other (never the GC heap); their
    /// references come from EnumerateObjectReferences, with the field offsets.
    fn non_gc(&mut self) {
        let info = self.info.clone();
        let (mut refs, mut offsets) = (Vec::new(), Vec::new());
        let mut left: Vec<usize> = self.frozen.drain().collect();
        left.sort_unstable();
        for object in left.into_iter().map(ObjectId) {
            let Ok(class) = info.get_class_from_object(object) else {
                self.lost += 1;
                continue;
            };
            let size = info.get_object_size2(object).unwrap_or(0);
            refs.clear();
            offsets.clear();
            // Err: recorded without references (the runtime refused the walk).
            let _ = info.enumerate_object_references(object, &mut |slot, target| {
                let offset = slot.wrapping_sub(object.0);
                refs.push(target);
                offsets.push(if offset < size { offset as u64 } else { 0 });
                true
            });
            self.entry(&info, object, class, size, NON_GC, &refs, Some(&offsets));
            self.nongc_objects += 1;
            self.nongc_bytes += size as u64;
        }
    }

    fn flush_objects(&mut self) {
        if self.objects.is_empty() {
            return;
        }
        let ok = emit_waiting(&Event::HeapObjects {
            snapshot: self.snapshot,
            objects: Cow::Borrowed(&self.objects),
        });
        if !ok {
            // A batch of continuations only: count its object once.
            self.lost += self.objects_in_batch.max(1);
        }
        self.objects.clear();
        self.objects_in_batch = 0;
        self.previous = 0;
    }

    fn roots(&mut self, roots: &[ObjectId], kinds: &[u32], flags: &[u32], ids: &[usize]) {
        for (i, r) in roots.iter().enumerate() {
            if r.0 == 0 {
                continue;
            }
            let kind = kinds
                .get(i)
                .copied()
                .unwrap_or(corprof_sys::COR_PRF_GC_ROOT_OTHER);
            let id = ids.get(i).copied().unwrap_or(0);
            self.roots.push(r.0 as u64);
            self.roots
                .push(u64::from(kind & 0xf) | u64::from(flags.get(i).copied().unwrap_or(0)) << 4);
            self.roots.push(id as u64);
            if kind == corprof_sys::COR_PRF_GC_ROOT_STACK && id != 0 {
                self.stack_functions.insert(id);
            }
            self.n_roots += 1;
            self.roots_in_batch += 1;
            if self.roots.len() >= self.batch_values {
                self.flush_roots();
            }
        }
    }

    fn flush_roots(&mut self) {
        if self.roots_in_batch == 0 {
            return;
        }
        let ok = emit_waiting(&Event::HeapRoots {
            snapshot: self.snapshot,
            roots: Cow::Borrowed(&self.roots),
        });
        if !ok {
            self.lost += self.roots_in_batch;
        }
        self.roots.clear();
        self.roots_in_batch = 0;
    }
}

/// The offset of the pointer-sized slot of `object` that holds `target`, searching from
/// `from` to the end and then from the start.
///
/// # Safety
/// `object` must be a live object of `size` bytes that the GC does not move meanwhile.
unsafe fn find_slot(object: usize, size: usize, target: usize, from: usize) -> Option<usize> {
    let end = size.saturating_sub(8);
    let read = |o: usize| {
        // SAFETY: (A7) 8 <= o < size - 8: inside the object (function contract).
        unsafe { std::ptr::read_unaligned((object + o) as *const usize) }
    };
    let first = (from.max(8)..end).step_by(8).find(|&o| read(o) == target);
    first.or_else(|| (8..from.min(end)).step_by(8).find(|&o| read(o) == target))
}

/// GarbageCollectionStarted: an armed snapshot walks the first full GC.
pub fn gc_started(generation_collected: &[bool]) {
    GCS.fetch_add(1, Ordering::Relaxed);
    if STATE.load(Ordering::Acquire) == ARMED
        && generation_collected.get(2) == Some(&true)
        && STATE
            .compare_exchange(ARMED, WALKING, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        && let Ok(mut w) = WALK.lock()
        && let Some(w) = w.as_mut()
    {
        w.list_non_gc();
    }
}

/// GarbageCollectionFinished: the walk is over; flush what is batched.
pub fn gc_finished() {
    if STATE.load(Ordering::Acquire) != WALKING {
        return;
    }
    if let Ok(mut w) = WALK.lock()
        && let Some(w) = w.as_mut()
    {
        w.non_gc();
        w.flush_objects();
        w.flush_roots();
    }
    STATE.store(DONE, Ordering::Release);
}

/// ObjectReferences.
pub fn object_references(info: &ProfilerInfo, object: ObjectId, class: ClassId, refs: &[ObjectId]) {
    if STATE.load(Ordering::Acquire) != WALKING {
        return;
    }
    if let Ok(mut w) = WALK.lock()
        && let Some(w) = w.as_mut()
    {
        w.object(info, object, class, refs);
    }
}

/// RootReferences2.
pub fn root_references(roots: &[ObjectId], kinds: &[u32], flags: &[u32], ids: &[usize]) {
    if STATE.load(Ordering::Acquire) != WALKING {
        return;
    }
    if let Ok(mut w) = WALK.lock()
        && let Some(w) = w.as_mut()
    {
        w.roots(roots, kinds, flags, ids);
    }
}

/// Whether the settings need the GC monitor all the time (allocation counts).
fn gc_monitor_wanted(settings: &crate::config::Settings) -> bool {
    settings.events.contains(crate::config::EventGroup::Alloc)
}

/// Process-wide on purpose (a fact of the process, not of a session: the GC exists).
/// Set by the first `HandleCreated` callback: the GC heap exists, so the runtime has
/// already chosen non-concurrent GC for a profiler that asked for `COR_PRF_MONITOR_GC` in
/// `Initialize` (it reads the bit right after `Initialize` returns, before it creates the
/// GC: dropping the bit earlier leaves background GC on, and every later snapshot is
/// refused with `CORPROF_E_CONCURRENT_GC_NOT_PROFILABLE`).
static GC_CREATED: AtomicBool = AtomicBool::new(false);

/// The runtime created a GC handle (callbacks with the GC monitor on).
pub fn note_handle_created() {
    if !GC_CREATED.load(Ordering::Relaxed) {
        GC_CREATED.store(true, Ordering::Release);
    }
}

/// Waits (up to `limit`, or until `stop`) for the runtime to have created its GC.
pub fn wait_for_gc_created(limit: std::time::Duration, stop: &AtomicBool) -> bool {
    let until = Instant::now() + limit;
    while !GC_CREATED.load(Ordering::Acquire) {
        if stop.load(Ordering::Acquire) || Instant::now() >= until {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    true
}

/// After the event mask with `COR_PRF_MONITOR_GC` is set: the runtime has turned
/// background GC off, so the bit can now be dropped and set again for each snapshot.
/// Without it between snapshots, ordinary GCs do not walk the heap for us.
pub fn monitor_between_snapshots(info: &ProfilerInfo, settings: &crate::config::Settings) {
    if gc_monitor_wanted(settings) {
        return;
    }
    if let Ok((low, high)) = info.get_event_mask2() {
        let _ = info.set_event_mask2(low & !corprof_sys::COR_PRF_MONITOR_GC, high);
    }
}

/// What one snapshot recorded.
#[derive(Debug, Clone, Copy)]
pub struct Summary {
    pub snapshot: u64,
    pub objects: u64,
    pub references: u64,
    pub roots: u64,
    pub lost: u64,
    pub pause_ns: u64,
    /// Of `objects`, those of the non-GC heap.
    pub nongc_objects: u64,
}

impl Summary {
    /// The control socket's answer to `heap`.
    pub fn taken(&self) -> clrprof_ipc::control::HeapTaken {
        clrprof_ipc::control::HeapTaken {
            snapshot: self.snapshot,
            objects: self.objects,
            references: self.references,
            roots: self.roots,
            lost: self.lost,
            pause_ms: self.pause_ns as f64 / 1e6,
            nongc_objects: self.nongc_objects,
        }
    }
}

/// Takes one snapshot. Call from a native thread of ours (ForceGC is refused on a
/// managed thread and from inside callbacks).
pub fn take(info: &ProfilerInfo, reason: HeapReason) -> Result<Summary, String> {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let snapshot = SEQUENCE.fetch_add(1, Ordering::Relaxed) + 1;
    let (low, high) = info
        .get_event_mask2()
        .map_err(|e| format!("GetEventMask2 failed: {e}"))?;
    let gc_bit = corprof_sys::COR_PRF_MONITOR_GC;
    *WALK.lock().unwrap_or_else(|p| p.into_inner()) = Some(Walk::new(snapshot, info.clone()));
    emit(&Event::HeapStart { snapshot, reason });
    STATE.store(ARMED, Ordering::Release);
    let added = low & gc_bit == 0;
    if added && let Err(e) = info.set_event_mask2(low | gc_bit, high) {
        STATE.store(IDLE, Ordering::Release);
        let hint = if e.0 == corprof_sys::CORPROF_E_CONCURRENT_GC_NOT_PROFILABLE {
            ": this profiler was loaded without heap snapshots enabled (CLRPROF_HEAP=1), \
             and the runtime allows the GC monitor only at startup or attach; detach it and \
             attach again with heap snapshots"
        } else {
            ""
        };
        return Err(format!(
            "SetEventMask2 with COR_PRF_MONITOR_GC failed: {e}{hint}; no snapshot taken"
        ));
    }
    let started = Instant::now();
    let gc = info.force_gc();
    let pause_ns = started.elapsed().as_nanos() as u64;
    let gcs_after_walk = GCS.load(Ordering::Relaxed);
    let state = STATE.swap(IDLE, Ordering::AcqRel);
    let walk = WALK.lock().unwrap_or_else(|p| p.into_inner()).take();
    // Statics are read with the GC monitor still on, so that a GC in between is seen.
    let statics = if gc.is_ok() && state == DONE {
        Some(super::statics::record(info, snapshot))
    } else {
        None
    };
    let moved = GCS.load(Ordering::Relaxed) != gcs_after_walk;
    if added && let Err(e) = info.set_event_mask2(low, high) {
        log!("could not turn COR_PRF_MONITOR_GC off again after the snapshot: {e}");
    }
    let Some(mut walk) = walk else {
        return Err("the snapshot state vanished".into());
    };
    if let Err(e) = gc {
        return Err(format!("ForceGC failed: {e}; no snapshot taken"));
    }
    if state != DONE {
        return Err(
            "the forced GC was not walked (the runtime gave no ObjectReferences callbacks); \
             no snapshot taken"
                .into(),
        );
    }
    // In case GarbageCollectionFinished did not come (it always should).
    walk.flush_objects();
    walk.flush_roots();
    describe_classes(info, &walk);
    for f in &walk.stack_functions {
        crate::names::emit_function_info(info, FunctionId(*f));
    }
    let statics = statics.unwrap_or_default();
    if moved {
        log!(
            "heap snapshot {snapshot}: a GC ran while statics were read; their objects may not match"
        );
    }
    emit(&Event::Meta {
        key: Cow::Borrowed("heap_statics"),
        json: Cow::Owned(
            serde_json::json!({
                "snapshot": snapshot,
                "classes": statics.classes,
                "fields": statics.fields,
                "uninitialized": statics.uninitialized,
                "moved": moved,
            })
            .to_string(),
        ),
    });
    if let Some(e) = &walk.nongc_error {
        log!("heap snapshot {snapshot}: no non-GC heap objects: {e}");
    }
    emit(&Event::Meta {
        key: Cow::Borrowed("heap_nongc"),
        json: Cow::Owned(
            serde_json::json!({
                "snapshot": snapshot,
                "objects": walk.nongc_objects,
                "bytes": walk.nongc_bytes,
                "error": walk.nongc_error,
            })
            .to_string(),
        ),
    });
    let summary = Summary {
        snapshot,
        objects: walk.n_objects,
        references: walk.n_references,
        roots: walk.n_roots,
        lost: walk.lost,
        pause_ns,
        nongc_objects: walk.nongc_objects,
    };
    emit(&Event::HeapEnd {
        snapshot,
        objects: summary.objects,
        references: summary.references,
        roots: summary.roots,
        lost: summary.lost,
        pause_ns,
    });
    Ok(summary)
}

/// Names every class the walk met and lists its fields (own and inherited) with their
/// offsets, so that the analysis can name each reference.
fn describe_classes(info: &ProfilerInfo, walk: &Walk) {
    for (index, (class, array)) in walk.class_list.iter().enumerate() {
        let class = ClassId(*class);
        emit(&Event::HeapClass {
            snapshot: walk.snapshot,
            index: index as u64,
            class: class.0 as u64,
            name: Cow::Owned(crate::names::class_name(info, class)),
        });
        if *array {
            // An array of structs: its element's fields, `[].Name`, at 1 + their offset
            // in the element (how the walk records them).
            if let Some(Some((element, _))) = walk.struct_elements.get(index) {
                describe_fields(
                    info,
                    walk.snapshot,
                    index as u64,
                    ClassId(*element),
                    1,
                    "[]",
                    0,
                );
            }
            continue;
        }
        // A boxed struct: the runtime gives a value type's field offsets from its data,
        // which in the box follows the method-table pointer.
        let base = if is_value_type(info, class) {
            std::mem::size_of::<usize>() as u64
        } else {
            0
        };
        describe_fields(info, walk.snapshot, index as u64, class, base, "", 0);
    }
}

/// Structs nested in structs named at most this deep.
const MAX_EMBEDDING: u32 = 4;

/// Whether `class` is a value type (its parent is `System.ValueType` or `System.Enum`).
fn is_value_type(info: &ProfilerInfo, class: ClassId) -> bool {
    info.get_class_id_info2(class).is_ok_and(|ci| {
        ci.parent.0 != 0
            && matches!(
                crate::names::class_name(info, ci.parent).as_str(),
                "System.ValueType" | "System.Enum"
            )
    })
}

/// The fields of `class` and its parents at `base` + their offsets, named `prefix.Name`;
/// a field of a struct type of the same module also names its own fields, inside it
/// (`S.Ref`), first, so that a reference at the struct's start is named by the innermost
/// field that holds it.
fn describe_fields(
    info: &ProfilerInfo,
    snapshot: u64,
    index: u64,
    class: ClassId,
    base: u64,
    prefix: &str,
    depth: u32,
) {
    let mut c = class;
    for _ in 0..64 {
        if c.0 == 0 {
            break;
        }
        let Ok(ci) = info.get_class_id_info2(c) else {
            break;
        };
        if let (Ok(md), Ok((fields, _))) = (
            info.get_module_metadata(ci.module, corprof_sys::ofRead),
            info.get_class_layout(c),
        ) {
            for (token, offset) in fields {
                let Ok(p) = md.get_field_props(token) else {
                    continue;
                };
                let at = base + u64::from(offset);
                let name = if prefix.is_empty() {
                    p.name
                } else {
                    format!("{prefix}.{}", p.name)
                };
                if depth < MAX_EMBEDDING
                    && let Ok(corprof::sig::Type::ValueType(t)) = corprof::sig::parse_field(&p.sig)
                    && t >> 24 == 0x02
                    && let Ok(inner) = info.get_class_from_token(ci.module, t)
                    && inner != c
                {
                    // A value type's layout has no method-table pointer: its fields sit
                    // at the struct's own offset plus theirs.
                    describe_fields(info, snapshot, index, inner, at, &name, depth + 1);
                }
                emit(&Event::HeapField {
                    snapshot,
                    index,
                    offset: at,
                    name: Cow::Owned(name),
                });
            }
        }
        c = ci.parent;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zigzag_keeps_small_deltas_small() {
        assert_eq!(zigzag(0), 0);
        assert_eq!(zigzag(-1), 1);
        assert_eq!(zigzag(1), 2);
        assert_eq!(zigzag(24), 48);
        assert_eq!(zigzag(i64::MIN), u64::MAX);
    }

    #[test]
    fn find_slot_finds_the_field_holding_a_reference() {
        // header word, method table, three fields, padding.
        let obj: [usize; 6] = [0, 0xaaaa, 11, 22, 11, 0];
        let id = obj.as_ptr() as usize + 8;
        let size = 6 * 8;
        // SAFETY: (A7) `obj` outlives the calls and is `size` bytes from id - 8.
        unsafe {
            assert_eq!(find_slot(id, size, 22, 8), Some(16));
            assert_eq!(find_slot(id, size, 11, 8), Some(8));
            assert_eq!(find_slot(id, size, 11, 16), Some(24));
            assert_eq!(find_slot(id, size, 11, 32), Some(8));
            assert_eq!(find_slot(id, size, 99, 8), None);
        }
    }
}
