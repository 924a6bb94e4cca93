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
use std::cell::UnsafeCell;
use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::time::Instant;

use clrprof_format::{Event, HeapReason};
use corprof::{ClassId, FunctionId, ObjectId, ProfilerInfo};

use crate::output::buffers::{emit, emit_encoded_waiting, emit_waiting};

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
/// The snapshot's walk outside its GC: put here by `take` before the GC, moved into
/// [`OWNED`] by `GarbageCollectionStarted`, back by `GarbageCollectionFinished`.
static WALK: Mutex<Option<Walk>> = Mutex::new(None);
/// The walk during its GC (docs/safety.md A13).
static OWNED: OwnedWalk = OwnedWalk(UnsafeCell::new(None));
/// One snapshot at a time (control socket and `--heap` timer may race).
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// At a session's start: no snapshot under way, and the session's snapshots are numbered
/// from 1.
pub fn reset_for_session() {
    STATE.store(IDLE, Ordering::Release);
    SEQUENCE.store(0, Ordering::Relaxed);
    GCS.store(0, Ordering::Relaxed);
    *WALK.lock().unwrap_or_else(|p| p.into_inner()) = None;
    // SAFETY: (A13) between sessions no callback of ours runs (A11), so no GC callback
    // holds the walk: a walk whose GarbageCollectionFinished never came is dropped here.
    unsafe { OWNED.replace(None) };
}

/// The walk while the runtime's GC callbacks of the walked GC use it, with no lock: the
/// runtime calls `GarbageCollectionStarted`, `RootReferences2`, `ObjectReferences` and
/// `GarbageCollectionFinished` of one GC one after another, never two at once (the rule
/// and the runtime's side of it: docs/safety.md A13).
struct OwnedWalk(UnsafeCell<Option<Walk>>);

// SAFETY: (A13) the cell is reached only through `get` and `replace`, whose callers are
// the runtime's GC callbacks of one GC (never two at once, each one after the last) or a
// session's reset (no callback runs, A11); `Walk` itself is `Send`.
unsafe impl Sync for OwnedWalk {}

impl OwnedWalk {
    /// The walk, for one GC callback of the walked GC.
    ///
    /// # Safety
    /// (A13) Only from a GC callback of the GC that moved the walk in (`STATE` is
    /// `WALKING`), and the reference must not outlive the callback.
    #[allow(clippy::mut_from_ref)]
    unsafe fn get(&self) -> Option<&mut Walk> {
        // SAFETY: (A13) the runtime calls the GC callbacks of one GC one at a time, so no
        // other reference to the cell's contents is live (contract).
        unsafe { (*self.0.get()).as_mut() }
    }

    /// Puts `walk` in, returning what was there.
    ///
    /// # Safety
    /// (A13) As [`OwnedWalk::get`], or between sessions (A11): no other reference to the
    /// cell's contents is live.
    unsafe fn replace(&self, walk: Option<Walk>) -> Option<Walk> {
        // SAFETY: (A13) no other reference is live (contract).
        unsafe { std::mem::replace(&mut *self.0.get(), walk) }
    }
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
/// References per entry in a batch of `batch_values`: a large array continues in further
/// entries, so that no record outgrows the ring.
fn entry_chunk(batch_values: usize) -> usize {
    (batch_values / 4).max(8)
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
    objects: Batch,
    objects_in_batch: u64,
    previous: u64,
    roots: Vec<u64>,
    roots_in_batch: u64,
    /// ClassID → index, and per index (ClassID, is an array).
    classes: HashMap<usize, u32, BuildHasherDefault<IdHasher>>,
    class_list: Vec<(usize, bool)>,
    /// Per index, for an array of structs: the element's class and size.
    struct_elements: Vec<Option<(usize, u64)>>,
    /// Per index, how its objects' sizes are found.
    sizes: Vec<SizeSource>,
    /// The class of the object before (ClassID, index): a run of objects of one class
    /// needs no map look-up.
    last_class: (usize, u32),
    /// The generation range of the last object asked for (start, end, generation): the
    /// runtime's answer names a block of memory within one generation that holds the
    /// object, so the objects that follow it there are not asked again.
    generation_range: (usize, usize, u64),
    /// Objects whose generation / size was asked of the runtime (the rest came from the
    /// range or the method table).
    generations_asked: u64,
    sizes_asked: u64,
    /// Objects the walk reported (ObjectReferences).
    walked: u64,
    /// Debug builds ask the runtime for every answer that did not come from it and count
    /// the answers compared and those that differed (the `heap_walk` meta record).
    compared: u64,
    differed: u64,
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
        let batch_values = batch_values();
        Walk {
            snapshot,
            info,
            frozen: HashSet::new(),
            batch_values,
            // A batch is flushed once it holds `batch_values`; the entry that got it there
            // added at most a head and a chunk of references (`entry`): it never grows.
            objects: Batch::with_room(batch_values + 2 * entry_chunk(batch_values) + 4),
            objects_in_batch: 0,
            previous: 0,
            roots: Vec::with_capacity(BATCH_VALUES + 64),
            roots_in_batch: 0,
            classes: HashMap::default(),
            class_list: Vec::new(),
            struct_elements: Vec::new(),
            sizes: Vec::new(),
            last_class: (0, 0),
            generation_range: (0, 0, 0),
            generations_asked: 0,
            sizes_asked: 0,
            walked: 0,
            compared: 0,
            differed: 0,
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

    fn class_index(&mut self, info: &ProfilerInfo, class: ClassId) -> u32 {
        if self.last_class.0 == class.0 && class.0 != 0 {
            return self.last_class.1;
        }
        if let Some(&i) = self.classes.get(&class.0) {
            self.last_class = (class.0, i);
            return i;
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
        self.sizes.push(SizeSource::Check(0));
        self.last_class = (class.0, i);
        i
    }

    /// The size of `object`, of class index `index`: from its method table once that has
    /// given the runtime's own answer (`GetObjectSize2`) for an object of the class.
    fn size(&mut self, info: &ProfilerInfo, object: ObjectId, index: u32) -> usize {
        let source = self.sizes[index as usize];
        if source == SizeSource::MethodTable {
            // SAFETY: (A7) called from ObjectReferences: the runtime is suspended for the
            // GC and `object` is a live object; the class's layout was checked.
            let read = unsafe { size_from_method_table(object.0) }.0;
            if cfg!(debug_assertions) {
                self.compare(
                    read as u64,
                    info.get_object_size2(object).ok().map(|s| s as u64),
                );
            }
            return read;
        }
        self.sizes_asked += 1;
        let asked = info.get_object_size2(object).unwrap_or(0);
        if let SizeSource::Check(checked) = source {
            // SAFETY: (A7) as above: a live object during the walk.
            let (read, word) = unsafe { size_from_method_table(object.0) };
            self.sizes[index as usize] = size_check(asked, read, word, checked);
        }
        asked
    }

    /// Debug builds: an answer not asked of the runtime, beside the runtime's.
    fn compare(&mut self, ours: u64, runtime: Option<u64>) {
        self.compared += 1;
        if runtime != Some(ours) {
            self.differed += 1;
        }
    }

    /// The generation of `object` (0–4); else what to record when it is not a listed
    /// non-GC object: 6 (the runtime answered another value) or 7 (it failed).
    fn generation(&mut self, info: &ProfilerInfo, object: ObjectId) -> Result<u64, u64> {
        let (start, end, generation) = self.generation_range;
        if (start..end).contains(&object.0) {
            if cfg!(debug_assertions) {
                let runtime = info.get_object_generation(object).ok();
                self.compare(generation, runtime.map(|r| u64::from(r.generation)));
            }
            return Ok(generation);
        }
        self.generations_asked += 1;
        match info.get_object_generation(object) {
            Ok(r) if r.generation <= 4 => {
                let generation = u64::from(r.generation);
                let end = r.start.saturating_add(r.length);
                if (r.start..end).contains(&object.0) {
                    self.generation_range = (r.start, end, generation);
                }
                Ok(generation)
            }
            Ok(_) => Err(6),
            Err(_) => Err(7),
        }
    }

    fn object(&mut self, info: &ProfilerInfo, object: ObjectId, class: ClassId, refs: &[ObjectId]) {
        self.walked += 1;
        let index = self.class_index(info, class);
        let size = self.size(info, object, index);
        // The walk reports non-GC objects too (.NET 8 and 10), whose generation the
        // runtime does not give (CORPROF_E_NOT_GC_OBJECT / E_FAIL).
        let generation = match self.generation(info, object) {
            Ok(g) => g,
            _ if self.frozen.remove(&object.0) => {
                self.nongc_objects += 1;
                self.nongc_bytes += size as u64;
                NON_GC
            }
            Err(other) => other,
        };
        self.entry(object, index, size, generation, refs, None);
    }

    /// Appends one object; `offsets` (per reference) when known, else they are found by
    /// scanning the object.
    fn entry(
        &mut self,
        object: ObjectId,
        index: u32,
        size: usize,
        generation: u64,
        refs: &[ObjectId],
        offsets: Option<&[u64]>,
    ) {
        let array = self.class_list[index as usize].1;
        let element = self.struct_elements[index as usize];
        let id = object.0 as u64;
        let scan = offsets.is_none()
            && (!array || element.is_some())
            && size <= SCAN_MAX_BYTES
            && refs.len() <= SCAN_MAX_REFS;
        // References per entry: a large array is split into continuation entries so that
        // no record outgrows the ring.
        let chunk = entry_chunk(self.batch_values);
        let mut from = 8usize;
        // The field offset recorded for the reference to `target`: the runtime's when
        // `known`, else the slot a scan finds where `scan` allows one, else 0.
        let mut offset_of = |known: Option<u64>, target: usize| match known {
            Some(o) => o,
            // SAFETY: (A7) called from ObjectReferences (or GarbageCollectionFinished): the
            // runtime is suspended for the GC and `object` is a live object of `size` bytes
            // (the `scan` condition).
            None if scan => unsafe { scanned_offset(object.0, size, target, &mut from, element) },
            None => 0,
        };
        if offsets.is_none() && refs.len() <= chunk {
            // What the walk reports all along: an object whose references fit one entry.
            let delta = zigzag(id.wrapping_sub(self.previous) as i64);
            self.previous = id;
            let size_generation = (size as u64) << 3 | generation;
            self.objects
                .extend(&[delta, u64::from(index), size_generation, refs.len() as u64]);
            self.objects_in_batch += 1;
            for r in refs {
                let target = zigzag((r.0 as u64).wrapping_sub(id) as i64);
                let offset = offset_of(None, r.0);
                self.objects.extend(&[target, offset]);
            }
            if self.objects.len() >= self.batch_values {
                self.flush_objects();
            }
            self.n_objects += 1;
            self.n_references += refs.len() as u64;
            return;
        }
        let mut done = 0usize;
        let mut parts = refs.chunks(chunk).peekable();
        let mut first = true;
        while first || parts.peek().is_some() {
            let part = parts.next().unwrap_or(&[]);
            let delta = zigzag(id.wrapping_sub(self.previous) as i64);
            self.previous = id;
            if first {
                let size_generation = (size as u64) << 3 | generation;
                self.objects
                    .extend(&[delta, u64::from(index), size_generation, part.len() as u64]);
                self.objects_in_batch += 1;
            } else {
                self.objects
                    .extend(&[delta, CONTINUATION, 0, part.len() as u64]);
            }
            first = false;
            for r in part {
                let target = zigzag((r.0 as u64).wrapping_sub(id) as i64);
                let known = offsets.and_then(|o| o.get(done)).filter(|_| !array);
                done += 1;
                let offset = offset_of(known.copied(), r.0);
                self.objects.extend(&[target, offset]);
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
            let index = self.class_index(&info, class);
            self.entry(object, index, size, NON_GC, &refs, Some(&offsets));
            self.nongc_objects += 1;
            self.nongc_bytes += size as u64;
        }
    }

    fn flush_objects(&mut self) {
        if self.objects.is_empty() {
            return;
        }
        let mut head = [0u8; clrprof_format::U64_LIST_HEADER_MAX];
        let n = clrprof_format::encode_u64_list_header(
            &mut head,
            HEAP_OBJECTS,
            0,
            self.snapshot,
            self.objects.values,
            self.objects.used,
        );
        let (snapshot, batch) = (self.snapshot, &self.objects);
        let ok = emit_encoded_waiting(&head[..n], batch.encoded(), || Event::HeapObjects {
            snapshot,
            objects: Cow::Owned(batch.decoded()),
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

/// The kind byte of a `HeapObjects` record (`clrprof_format::events`).
const HEAP_OBJECTS: u8 = 66;

/// A batch of values as a `HeapObjects` record holds them: each one LEB128-encoded once,
/// as the walk appends it, in place: `bytes[..used]` is the batch, the rest is room written
/// over byte by byte (an append that went through a small buffer and `extend_from_slice`
/// called libc's `memcpy` for each object and each reference: 13 % of the GC thread's time
/// in a 10 M-object snapshot).
struct Batch {
    bytes: Vec<u8>,
    used: usize,
    values: usize,
}

/// Room one [`Batch::extend`] needs: four values of at most 10 bytes.
const EXTEND_ROOM: usize = 4 * clrprof_format::leb128::MAX_LEN;

impl Batch {
    /// A batch with room for `values` values of the longest encoding (it grows if an entry
    /// ever needs more).
    fn with_room(values: usize) -> Batch {
        Batch {
            bytes: vec![0; values * clrprof_format::leb128::MAX_LEN + EXTEND_ROOM],
            used: 0,
            values: 0,
        }
    }

    /// Appends a few values (an entry's head, one reference), encoded straight into the
    /// batch's room.
    #[inline(always)]
    fn extend<const N: usize>(&mut self, values: &[u64; N]) {
        const { assert!(N <= 4, "at most 4 values (40 bytes) at a time") };
        if self.bytes.len() - self.used < EXTEND_ROOM {
            self.grow();
        }
        let Some(room) = self.bytes.get_mut(self.used..self.used + EXTEND_ROOM) else {
            return;
        };
        let mut n = 0;
        for &v in values {
            n += leb128_into(&mut room[n..], v);
        }
        self.used += n;
        self.values += N;
    }

    #[cold]
    fn grow(&mut self) {
        let more = self.bytes.len().max(EXTEND_ROOM);
        self.bytes.resize(self.bytes.len() + more, 0);
    }

    /// The encoded values.
    fn encoded(&self) -> &[u8] {
        &self.bytes[..self.used]
    }

    /// Values, not bytes: the batch's bound.
    fn len(&self) -> usize {
        self.values
    }

    fn is_empty(&self) -> bool {
        self.values == 0
    }

    fn clear(&mut self) {
        self.used = 0;
        self.values = 0;
    }

    /// The values back (for a thread without a ring of its own, which records events).
    fn decoded(&self) -> Vec<u64> {
        let mut out = Vec::with_capacity(self.values);
        let bytes = self.encoded();
        let mut at = 0;
        while at < bytes.len() {
            match clrprof_format::leb128::read_u64(bytes, &mut at) {
                Ok(v) => out.push(v),
                Err(_) => break,
            }
        }
        out
    }
}

/// Writes `v` as LEB128 at the start of `out` (which has room for it, else it is cut short
/// as [`clrprof_format::leb128::write_u64`] does) and returns the bytes written; a value
/// below 128 (most of a heap's: class indexes, counts, offsets, deltas) takes one store.
#[inline(always)]
fn leb128_into(out: &mut [u8], v: u64) -> usize {
    if v < 0x80
        && let Some(first) = out.first_mut()
    {
        *first = v as u8;
        return 1;
    }
    clrprof_format::leb128::write_u64(out, v)
}

/// How the walk finds the sizes of a class's objects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SizeSource {
    /// Asks the runtime and compares with the method table's figures; the count is of
    /// the objects that agreed without telling much (a zero count or first field).
    Check(u8),
    /// Reads the method table: it agreed with the runtime on an object whose count (or
    /// first field) was not zero.
    MethodTable,
    /// Asks the runtime (`GetObjectSize2`): the method table disagreed once.
    Ask,
}

/// Objects of a class checked with a zero count before its sizes are asked for good.
const SIZE_CHECKS: u8 = 16;

/// What one object's check says about its class: `asked` is the runtime's size, `read`
/// the method table's, `word` the 32 bits after the method-table pointer (an array's or
/// string's length).
fn size_check(asked: usize, read: usize, word: u32, checked: u8) -> SizeSource {
    if asked != read {
        SizeSource::Ask
    } else if word != 0 {
        SizeSource::MethodTable
    } else if checked + 1 >= SIZE_CHECKS {
        SizeSource::Ask
    } else {
        SizeSource::Check(checked + 1)
    }
}

/// An object's size as the runtime computes it (`Object::GetSize`, and the GC from its
/// own view of a method table, `gcenv.object.h`): the method table (the object's first
/// word, low bits masked) holds 32 bits of flags, whose top bit says that the low 16 are
/// a component size (arrays, strings), then the base size; a component count is the 32
/// bits after the method-table pointer. Returns the size and that word.
///
/// # Safety
/// `object` must be a live object (at least 24 bytes: its header, method-table pointer
/// and one word) that the GC does not move meanwhile.
unsafe fn size_from_method_table(object: usize) -> (usize, u32) {
    // SAFETY: (A7) the object's first word is its method-table pointer (contract).
    let mt = unsafe { std::ptr::read_unaligned(object as *const usize) } & !7;
    // SAFETY: (A7) a live object's method table is loaded memory; these are its first
    // 8 bytes (flags and base size).
    let (flags, base) = unsafe {
        (
            std::ptr::read_unaligned(mt as *const u32),
            std::ptr::read_unaligned((mt + 4) as *const u32),
        )
    };
    // SAFETY: (A7) bytes 8..12 of an object of at least 24 bytes (contract).
    let word = unsafe { std::ptr::read_unaligned((object + 8) as *const u32) };
    let size = if flags & 0x8000_0000 != 0 {
        base as usize + word as usize * (flags & 0xffff) as usize
    } else {
        base as usize
    };
    (size, word)
}

/// Hashes a ClassID (an aligned address) for the walk's class map: one multiplication
/// instead of SipHash, per object of a class other than the one before.
#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }

    fn write_usize(&mut self, n: usize) {
        self.0 = (n as u64 ^ (n as u64 >> 29)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }

    fn finish(&self) -> u64 {
        self.0 ^ (self.0 >> 32)
    }
}

/// The field offset to record for the reference to `target` in `object` of `size` bytes
/// (0 when not found): its slot's offset, or in an array of structs 1 + the offset in its
/// element (0 stays "an element"), as the element's fields are listed. `from` is where
/// the search starts, moved past the slot found.
///
/// # Safety
/// As [`find_slot`]: `object` must be a live object of `size` bytes that the GC does not
/// move meanwhile; its fields lie between `object + 8` and `object + size - 8`.
#[inline(always)]
unsafe fn scanned_offset(
    object: usize,
    size: usize,
    target: usize,
    from: &mut usize,
    element: Option<(usize, u64)>,
) -> u64 {
    // SAFETY: (A7) the caller's contract is find_slot's.
    match unsafe { find_slot(object, size, target, *from) } {
        Some(o) => {
            *from = o + 8;
            match element {
                Some((_, elem_size)) if o >= SZ_ARRAY_DATA => {
                    (o - SZ_ARRAY_DATA) as u64 % elem_size + 1
                }
                Some(_) => 0,
                None => o as u64,
            }
        }
        None => 0,
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

/// GarbageCollectionStarted: an armed snapshot walks the first full GC, whose callbacks
/// own the walk until its GarbageCollectionFinished (moved out of [`WALK`] once, here).
pub fn gc_started(generation_collected: &[bool]) {
    GCS.fetch_add(1, Ordering::Relaxed);
    if STATE.load(Ordering::Acquire) == ARMED
        && generation_collected.get(2) == Some(&true)
        && STATE
            .compare_exchange(ARMED, WALKING, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    {
        let mut walk = WALK.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(w) = walk.as_mut() {
            w.list_non_gc();
        }
        // SAFETY: (A13) a GC callback of the GC that just became the walked one.
        unsafe { OWNED.replace(walk) };
    }
}

/// GarbageCollectionFinished: the walk is over; flush what is batched and hand the walk
/// back to `take`.
pub fn gc_finished() {
    if STATE.load(Ordering::Acquire) != WALKING {
        return;
    }
    // SAFETY: (A13) the last GC callback of the walked GC.
    let mut walk = unsafe { OWNED.replace(None) };
    if let Some(w) = walk.as_mut() {
        w.non_gc();
        w.flush_objects();
        w.flush_roots();
    }
    *WALK.lock().unwrap_or_else(|p| p.into_inner()) = walk;
    STATE.store(DONE, Ordering::Release);
}

/// ObjectReferences: once per live object, on the thread doing the GC.
#[inline]
pub fn object_references(info: &ProfilerInfo, object: ObjectId, class: ClassId, refs: &[ObjectId]) {
    if STATE.load(Ordering::Acquire) != WALKING {
        return;
    }
    // SAFETY: (A13) a GC callback of the walked GC; the borrow ends with it.
    if let Some(w) = unsafe { OWNED.get() } {
        w.object(info, object, class, refs);
    }
}

/// RootReferences2.
pub fn root_references(roots: &[ObjectId], kinds: &[u32], flags: &[u32], ids: &[usize]) {
    if STATE.load(Ordering::Acquire) != WALKING {
        return;
    }
    // SAFETY: (A13) a GC callback of the walked GC; the borrow ends with it.
    if let Some(w) = unsafe { OWNED.get() } {
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
    emit(&Event::Meta {
        key: Cow::Borrowed("heap_walk"),
        json: Cow::Owned(
            serde_json::json!({
                "snapshot": snapshot,
                "walked": walk.walked,
                "classes": walk.class_list.len(),
                "generations_asked": walk.generations_asked,
                "sizes_asked": walk.sizes_asked,
                "compared": walk.compared,
                "differed": walk.differed,
            })
            .to_string(),
        ),
    });
    if walk.differed > 0 {
        log!(
            "heap snapshot {snapshot}: {} of {} generations or sizes not asked of the runtime \
             differ from its answer",
            walk.differed,
            walk.compared
        );
    }
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
    fn a_batch_is_the_heap_objects_record_the_format_encodes() {
        let values = [
            zigzag(-24),
            3,
            32 << 3 | 2,
            1,
            zigzag(1 << 40),
            8,
            CONTINUATION,
            0,
        ];
        let mut batch = Batch::with_room(1);
        batch.extend(&[values[0], values[1], values[2], values[3]]);
        for &v in &values[4..] {
            batch.extend(&[v]);
        }
        assert_eq!(batch.len(), values.len());
        assert_eq!(batch.decoded(), values);
        let mut head = [0u8; clrprof_format::U64_LIST_HEADER_MAX];
        let n = clrprof_format::encode_u64_list_header(
            &mut head,
            HEAP_OBJECTS,
            0,
            9,
            batch.len(),
            batch.used,
        );
        let mut got = head[..n].to_vec();
        got.extend_from_slice(batch.encoded());
        let mut want = Vec::new();
        clrprof_format::encode(
            &mut want,
            0,
            &Event::HeapObjects {
                snapshot: 9,
                objects: Cow::Borrowed(&values),
            },
        );
        assert_eq!(got, want);
    }

    #[test]
    fn a_walk_batch_never_grows_while_the_gc_runs() {
        // The longest values, in entries of the longest chunk, up to the flush: the room
        // the walk gives its batch holds them (a batch that grew would allocate in the GC).
        for batch_values in [64, 700, BATCH_VALUES] {
            let chunk = entry_chunk(batch_values);
            let mut batch = Batch::with_room(batch_values + 2 * chunk + 4);
            let room = batch.bytes.len();
            while batch.len() < batch_values {
                batch.extend(&[u64::MAX; 4]);
                for _ in 0..chunk {
                    batch.extend(&[u64::MAX; 2]);
                }
            }
            assert_eq!(batch.bytes.len(), room, "{batch_values}");
            assert_eq!(batch.decoded().len(), batch.len());
            assert!(batch.decoded().iter().all(|&v| v == u64::MAX));
        }
    }

    #[test]
    fn sizes_come_from_the_method_table_as_the_runtime_computes_them() {
        // A method table: flags (component size 2 in the low 16 bits, the top bit set),
        // base size 22, as System.String's.
        // Little-endian words, 8-byte aligned: the flags, then the base size.
        let string_mt: [u64; 2] = [22 << 32 | 0x8000_0002, 0];
        let plain_mt: [u64; 2] = [32 << 32 | 0x0000_1000, 0];
        // Objects (from the method-table pointer): a string of 5 characters, a plain
        // object whose first field is 7; low bits of the pointer set as the GC may.
        let string: [usize; 3] = [string_mt.as_ptr() as usize | 1, 5, 0];
        let plain: [usize; 3] = [plain_mt.as_ptr() as usize, 7, 0];
        // SAFETY: (A7) each array outlives the call and is 24 bytes from its start.
        unsafe {
            assert_eq!(size_from_method_table(string.as_ptr() as usize), (32, 5));
            assert_eq!(size_from_method_table(plain.as_ptr() as usize), (32, 7));
        }
    }

    #[test]
    fn a_class_is_read_from_its_method_table_only_after_a_telling_agreement() {
        assert_eq!(size_check(32, 32, 7, 0), SizeSource::MethodTable);
        assert_eq!(size_check(32, 24, 7, 0), SizeSource::Ask);
        // An empty array agrees whatever its component size: asked again.
        assert_eq!(size_check(24, 24, 0, 0), SizeSource::Check(1));
        assert_eq!(size_check(24, 24, 0, SIZE_CHECKS - 1), SizeSource::Ask);
    }

    #[test]
    fn the_class_map_hashes_aligned_ids_apart() {
        let mut map: HashMap<usize, u32, BuildHasherDefault<IdHasher>> = HashMap::default();
        for i in 0..10_000usize {
            map.insert(0x7f00_0000_0000 + i * 64, i as u32);
        }
        assert_eq!(map.get(&(0x7f00_0000_0000 + 640)), Some(&10));
        assert_eq!(map.len(), 10_000);
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
