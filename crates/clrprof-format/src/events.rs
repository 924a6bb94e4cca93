//! The event table: every record kind, its id and its fields, declared once. The enum, the
//! field encoder and decoder, and the header's self-description (`event_kind_table`) are
//! all generated from this one declaration.

use std::borrow::Cow;

use crate::fields::{Cursor, FieldError, IntoStatic, Wire};
use crate::header::{EventKindDesc, FieldDesc};
use crate::phases::{ExceptionPhase, HeapReason, SuspendPhase};

macro_rules! events {
    ($(
        $(#[$doc:meta])*
        $id:literal $name:ident { $( $(#[$fdoc:meta])* $field:ident : $ty:ty ),* $(,)? }
    )*) => {
        /// One event. Strings and frame lists borrow when they can: the encoder takes
        /// borrowed data, the decoder borrows strings from the input.
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub enum Event<'a> {
            $( $(#[$doc])* $name { $( $(#[$fdoc])* $field: $ty ),* }, )*
        }

        impl<'a> Event<'a> {
            /// The record kind id (part of the format; never reused).
            pub fn kind(&self) -> u8 {
                match self {
                    $( Event::$name { .. } => $id, )*
                }
            }

            /// The kind's name, e.g. `"JitStarted"`.
            pub fn name(&self) -> &'static str {
                match self {
                    $( Event::$name { .. } => stringify!($name), )*
                }
            }

            /// The same event with nothing borrowed.
            pub fn into_owned(self) -> Event<'static> {
                match self {
                    $( Event::$name { $($field),* } => Event::$name {
                        $( $field: IntoStatic::into_static($field) ),*
                    }, )*
                }
            }

            /// Appends the fields (not the kind, length or timestamp).
            #[inline]
            pub(crate) fn put_fields(&self, out: &mut Vec<u8>) {
                match self {
                    $( Event::$name { $($field),* } => { $( Wire::put($field, out); )* } )*
                }
            }

            /// Reads the fields of a record of kind `kind`; `None` for a kind this version
            /// does not know. Errors name the field.
            pub(crate) fn get_fields(
                kind: u8,
                r: &mut Cursor<'a>,
            ) -> Option<Result<Event<'a>, (&'static str, FieldError)>> {
                match kind {
                    $( $id => Some(fields_of(r, |_r| Ok(Event::$name {
                        $( $field: <$ty as Wire<'a>>::get(_r)
                            .map_err(|e| (stringify!($field), e))? ),*
                    }))), )*
                    _ => None,
                }
            }

            /// The self-description of every kind (see [`event_kind_table`]).
            fn describe() -> Vec<EventKindDesc> {
                vec![$(
                    EventKindDesc {
                        id: $id,
                        name: stringify!($name).to_string(),
                        fields: vec![$(
                            FieldDesc {
                                name: stringify!($field).to_string(),
                                ty: <$ty as Wire<'a>>::TY.to_string(),
                            }
                        ),*],
                    },
                )*]
            }
        }

        /// The name of kind `id`, if this version knows it.
        pub fn kind_name(id: u8) -> Option<&'static str> {
            match id {
                $( $id => Some(stringify!($name)), )*
                _ => None,
            }
        }
    };
}

/// Runs one kind's field decoder (a function, so the `?`s inside have a boundary).
#[inline]
fn fields_of<'a, 'r>(
    r: &'r mut Cursor<'a>,
    f: impl FnOnce(&'r mut Cursor<'a>) -> Result<Event<'a>, (&'static str, FieldError)>,
) -> Result<Event<'a>, (&'static str, FieldError)> {
    f(r)
}

events! {
    /// A clock reading: the record's timestamp is the raw tick value read at the same
    /// instant as these two clocks. The reader fits ticks to nanoseconds from these.
    1 ClockSync { mono_ns: u64, unix_ns: u64 }
    /// A free-form fact: runtime information, agent statistics, end-of-trace counters.
    2 Meta { key: Cow<'a, str>, json: Cow<'a, str> }
    /// The runtime is shutting down.
    3 Shutdown {}
    4 AppDomainCreated { id: u64, name: Cow<'a, str>, hr: i32 }
    5 AppDomainShutdown { id: u64 }
    6 AssemblyLoaded { id: u64, app_domain: u64, module: u64, name: Cow<'a, str>, hr: i32 }
    7 AssemblyUnloaded { id: u64 }
    8 ModuleLoaded { id: u64, assembly: u64, base_address: u64, path: Cow<'a, str>, hr: i32 }
    9 ModuleUnloaded { id: u64 }
    10 ClassLoaded { id: u64, module: u64, token: u32, name: Cow<'a, str>, hr: i32 }
    11 ClassUnloaded { id: u64 }
    12 JitStarted { function: u64, safe_to_block: bool }
    13 JitFinished { function: u64, hr: i32 }
    14 JitCacheSearch { function: u64, found: bool }
    /// A function's names, written once per function id (the names table).
    15 FunctionInfo {
        function: u64,
        module: u64,
        class: u64,
        token: u32,
        /// `Namespace.Type.Method`.
        name: Cow<'a, str>,
        signature: Cow<'a, str>,
    }
    16 ThreadCreated { thread: u64 }
    17 ThreadDestroyed { thread: u64 }
    18 ThreadAssigned { thread: u64, os_tid: u64 }
    19 ThreadName { thread: u64, name: Cow<'a, str> }
    20 ExceptionThrown { object: u64, class: u64, type_name: Cow<'a, str>, message: Cow<'a, str> }
    21 ExceptionPhase { phase: ExceptionPhase, function: u64 }
    22 RuntimeSuspend { phase: SuspendPhase, reason: u8 }
    23 ThreadSuspended { thread: u64, resumed: bool }
    24 GcStarted {
        /// Bit i = generation i collected; bit 3 = LOH, bit 4 = POH.
        generations: u8,
        reason: u8,
    }
    25 GcFinished {
        /// Bytes per generation after the GC: gen0, gen1, gen2, LOH, POH.
        generation_sizes: Cow<'a, [u64]>,
    }
    26 Allocations { class: u64, count: u64 }
    27 Transition { function: u64, to_managed: bool, reason: u8 }
    /// ELT tracing (see [`encode_elt`](crate::encode_elt)): a function was entered.
    28 Enter {
        /// The agent's compact function index.
        function: u64,
        /// Low 32 bits of the caller's stack pointer: identifies the frame.
        sp: u64,
    }
    /// ELT tracing: a function returned.
    29 Leave { function: u64, sp: u64 }
    /// ELT tracing: a function was left by a tail call.
    30 Tailcall { function: u64, sp: u64 }
    /// A stack sample of thread `os_tid` (recorded by the sampler thread).
    31 Sample {
        os_tid: u64,
        /// Managed thread id.
        thread: u64,
        /// CPU time the thread used since its previous sample.
        cpu_ns: u64,
        /// 1 = it ran since the previous sample, 0 = it did not.
        state: u8,
        /// Leaf first; 0 stands for a run of native frames.
        frames: Cow<'a, [u64]>,
    }
    32 ExceptionStack { frames: Cow<'a, [u64]> }
    /// Events that could not be recorded, and why (`LOST_*`; 0 in traces of before the
    /// reasons were recorded).
    33 Lost { count: u64, reason: u8 }
    34 ObjectAllocated { class: u64, size: u64 }
    /// The sampler's own figures, written when it stops.
    35 SamplerStats {
        ticks: u64,
        samples: u64,
        /// Ticks skipped because the sampler fell behind.
        missed_ticks: u64,
        /// Signal mode: threads whose handler did not run in time (no sample).
        signal_timeouts: u64,
        /// Samples deeper than `max_depth` frames (or than the stack copy): their root-most
        /// frames are cut and replaced by [`TRUNCATED_FRAME`](crate::TRUNCATED_FRAME).
        truncated: u64,
        max_depth: u64,
    }
    /// The trace file refused writes: `blocks` blocks holding `events` events are missing.
    36 WriteFailed {
        /// The first error's errno (28 = ENOSPC, the disk is full).
        errno: u64,
        blocks: u64,
        events: u64,
    }
    /// The trace is complete: the writer's last record, in its last block, after every
    /// other (format 2). `blocks` is the number of blocks it wrote or tried to before this
    /// one's. A trace whose header says `end_record` and that has none was cut short.
    37 TraceEnd { blocks: u64 }
    /// The sampler's timing, written right after its `SamplerStats` (2.3): the rate it
    /// kept and, for the ticks it missed or took late, why.
    38 SamplerTiming {
        /// The interval asked for, and how long the sampler ran.
        interval_ns: u64,
        run_ns: u64,
        /// Missed ticks by reason: the previous ticks' own work ran past their deadlines
        /// (`busy`), or the sampler thread, free, was not scheduled in time (`sched`).
        missed_busy: u64,
        missed_sched: u64,
        /// Ticks taken more than one interval late (caught up at once), by the same reasons.
        late_busy: u64,
        late_sched: u64,
        /// The longest tick's work, and the longest delay between a free sampler's deadline
        /// and its wake-up.
        max_tick_ns: u64,
        max_wake_delay_ns: u64,
        /// All ticks' work, and the part of it spent stopping the threads and copying their
        /// stacks (signal mode: signalling the threads and collecting the captures that came).
        busy_ns: u64,
        capture_ns: u64,
        /// Signal mode: walks that met a frame record whose return address no call
        /// instruction precedes (a stale or foreign record); that frame is not taken for
        /// managed code.
        rejected_walks: u64,
    }
    /// `--args`: the arguments of a call, recorded right after its Enter (same thread,
    /// same timestamp). `values` is a [`values`](crate::values) list (`this` first).
    40 CallArgs {
        /// The trace-mode function index (as in Enter).
        function: u64,
        /// Low 32 bits of the caller's SP (as in Enter).
        sp: u64,
        values: Cow<'a, [u8]>,
    }
    /// `--args`: the return value of a call, recorded right before its Leave; `values`
    /// holds one item named `return`, or none for `void`.
    41 CallReturn { function: u64, sp: u64, values: Cow<'a, [u8]> }
    /// `--args`: an exception unwound a call of `function` (no CallReturn follows).
    42 CallUnwound { function: u64 }
    /// `--args`: the names and declared types of a function's values, written once before
    /// its first `CallArgs`: `params` pairs for `this` and the parameters, then one for
    /// the return value unless it is `void` ([`values::encode_names`](crate::values::encode_names)).
    /// `CallArgs`/`CallReturn` items then refer to them by index (`PARAM`).
    43 ArgNames { function: u64, params: u64, names: Cow<'a, [u8]> }
    /// `--args` (2.5): a call's Enter and its `CallArgs` in one record, as the agent writes
    /// them: the reader returns them as those two events ([`Event::split_call`]).
    44 EnterArgs { function: u64, sp: u64, values: Cow<'a, [u8]> }
    /// `--args` (2.5): a call's `CallReturn` and its Leave in one record, returned by the
    /// reader as those two events.
    45 ReturnLeave { function: u64, sp: u64, values: Cow<'a, [u8]> }
    /// `--args` (2.6): a value type's name and its fields' names, once per class, numbered
    /// `class` (from 1, per trace); value lists then write such a struct as `CLASS_STRUCT`,
    /// the number and the fields' values only ([`values`](crate::values),
    /// [`values::encode_field_names`](crate::values::encode_field_names)).
    46 ValueClass { class: u64, name: Cow<'a, str>, fields: Cow<'a, [u8]> }
    /// A class's name, written once per class id by events that refer to classes the
    /// runtime did not announce with `ClassLoaded` (allocations). Since 1.2; before, a
    /// `Meta` record with key `class_name` and JSON `{"id", "name"}` said the same.
    50 ClassName { class: u64, name: Cow<'a, str> }
    /// A native module seen in stacks: `frame` is the id its runs of frames carry in
    /// `Sample` records (with [`NATIVE_MODULE_FRAME`](crate::NATIVE_MODULE_FRAME) set), `path`
    /// the mapped file. Since 1.2; before, a `FunctionInfo` named the id `[file name]`.
    51 NativeModule { frame: u64, path: Cow<'a, str> }
    /// A heap snapshot begins (docs/heap.md). Its records carry the same `snapshot`.
    65 HeapStart {
        snapshot: u64,
        /// Asked for over the control socket, or the `--heap SECONDS` timer (a byte:
        /// 0, 1).
        reason: HeapReason,
    }
    /// A batch of live objects, each as `zigzag(id - previous id)`, class index,
    /// `size << 3 | generation` (7 = not in a GC generation), reference count, then per
    /// reference `zigzag(target - id)` and the field's byte offset in the object (0 =
    /// not known, array elements). Class index `u32::MAX` marks a continuation: size 0,
    /// then more references of the object with that id.
    66 HeapObjects { snapshot: u64, objects: Cow<'a, [u64]> }
    /// A batch of GC roots, each as object id, `kind | flags << 4`
    /// (`COR_PRF_GC_ROOT_KIND`: 0 other, 1 stack, 2 finalizer, 3 handle;
    /// `COR_PRF_GC_ROOT_FLAGS`), root id (a FunctionID for stack
    /// roots, a GCHandleID for handles, else 0).
    67 HeapRoots { snapshot: u64, roots: Cow<'a, [u64]> }
    /// The class behind a class index of this snapshot's objects.
    68 HeapClass { snapshot: u64, index: u64, class: u64, name: Cow<'a, str> }
    /// A field of a class (its own or inherited): byte offset from the object id.
    69 HeapField { snapshot: u64, index: u64, offset: u64, name: Cow<'a, str> }
    /// A static field and what it holds: `object` (0 for none), or its value as text
    /// for primitives and strings; `thread` is the managed thread of a `[ThreadStatic]`.
    70 HeapStatic {
        snapshot: u64,
        class: Cow<'a, str>,
        field: Cow<'a, str>,
        thread: u64,
        object: u64,
        value: Cow<'a, str>,
    }
    /// The snapshot is complete: what it holds and what could not be recorded.
    71 HeapEnd {
        snapshot: u64,
        objects: u64,
        references: u64,
        roots: u64,
        /// Objects and roots that could not be recorded.
        lost: u64,
        /// How long the target was stopped (the forced GC and the walk).
        pause_ns: u64,
    }
    /// `--alloc`: how allocations are sampled in this process (written once, before the
    /// first `AllocSample`; docs/allocations.md).
    80 AllocConfig {
        /// [`ALLOC_SOURCE_SAMPLED`] or [`ALLOC_SOURCE_TICK`].
        source: u8,
        /// The runtime's mean distance between samples, in bytes.
        mean_bytes: u64,
        /// The asked-for interval (`--alloc-interval`); above `mean_bytes` the agent keeps
        /// each runtime sample with probability `mean_bytes / interval_bytes`.
        interval_bytes: u64,
        /// At most this many sampled objects are followed for the live heap at once.
        tracked_max: u64,
    }
    /// `--alloc`: one sampled allocation, on the allocating thread.
    81 AllocSample {
        /// The sample's number in this process (`AllocFreed` refers to it).
        id: u64,
        /// Managed thread id.
        thread: u64,
        class: u64,
        /// The object's size in bytes.
        size: u64,
        /// `AllocationTick` only: the bytes allocated since the previous tick (0 for
        /// `AllocationSampled`).
        amount: u64,
        /// 1 = followed for the live heap, 0 = not (the table was full, or no handle).
        tracked: u8,
        /// Leaf first; 0 for an address the runtime could not name.
        frames: Cow<'a, [u64]>,
    }
    /// `--alloc`: followed samples whose objects a GC collected (at the GC's end).
    82 AllocFreed { ids: Cow<'a, [u64]> }
    /// `--alloc`: the allocation sampler's own figures, written when the recording stops.
    83 AllocStats {
        /// Samples the runtime delivered.
        delivered: u64,
        /// Samples recorded (the others were thinned out by `--alloc-interval`).
        recorded: u64,
        /// Recorded samples not followed for the live heap because `tracked_max` objects
        /// were followed already.
        untracked: u64,
        /// Followed samples whose objects were still alive at the end.
        alive_at_end: u64,
    }
    /// `--alloc` could not start (format 1.3): why, as the agent logged it, with the
    /// HRESULT when a runtime call failed (0 otherwise), e.g. EventPipeStartSession
    /// refused. The trace has no allocation samples.
    84 AllocUnavailable { hresult: u64, reason: Cow<'a, str> }
    /// Exact call counts of one thread (`record --mode trace --counts`, 1.3): cumulative
    /// since the recording started, written by the writer thread about every second and
    /// at the end, so a thread's last `CallCounts` holds its totals. `edges` are triples:
    /// caller index (0 = no hooked caller), callee index, calls; indices are the compact
    /// function indices of `Enter`. `missed` counts calls not counted because the
    /// thread's table was full; `deep` calls made deeper than its shadow stack (their
    /// caller may be attributed to the deepest frame kept).
    90 CallCounts { os_tid: u64, missed: u64, deep: u64, edges: Cow<'a, [u64]> }
    /// Where in each frame's method a `Sample` was (format 2.1): written by the sampler
    /// right after the `Sample` of thread `os_tid`, with its timestamp, and belonging to
    /// the latest `Sample` of that thread. One item per frame of that sample, in its
    /// order: [`position_il`](crate::position_il) decodes them (0 unknown or not managed,
    /// 1 epilog, 2 prolog, 3 no mapping, 4 + n IL offset n).
    100 SamplePositions { os_tid: u64, positions: Cow<'a, [u64]> }
    /// The source line of a position the trace's samples hold (format 2.1): appended by
    /// `clrprof record` when the recording ends, from the module's PDB, so that the trace
    /// shows its lines without the PDBs. `position` is a `SamplePositions` item, `file`
    /// the document's path as the compiler wrote it.
    101 SourceLine { function: u64, position: u64, file: Cow<'a, str>, line: u32 }
    /// Where in each frame's method the thread's latest `ExceptionStack` was (format
    /// 2.2): written right after it, on the same thread, one item per frame in its order,
    /// as `SamplePositions` items (every frame maps its return address − 1).
    102 ExceptionPositions { positions: Cow<'a, [u64]> }
    /// Where in each frame's method the `AllocSample` numbered `id` was (format 2.3):
    /// written right after it, on the same thread, one item per frame in its order, as
    /// `SamplePositions` items (every frame maps its return address − 1: the allocating
    /// method's is its call of the runtime's allocation helper). Absent when no frame
    /// mapped.
    103 AllocPositions { id: u64, positions: Cow<'a, [u64]> }
    /// `--waits` (2.1): what the agent asked the runtime for: the runtime provider's
    /// `keywords` (Contention 0x4000, ThreadPool 0x10000, WaitHandle 0x40000000000 on .NET
    /// 9 and later), whether wait-handle events can come (false on .NET 8, which has
    /// none), and why there are no wait events at all (empty when the sessions started).
    110 WaitConfig { keywords: u64, wait_handles: bool, error: Cow<'a, str> }
    /// `--waits`: a thread begins to wait, on that thread, with its managed stack.
    111 WaitStart {
        /// Managed thread id of the waiting thread.
        thread: u64,
        /// [`WAIT_LOCK`] (ContentionStart) or [`WAIT_HANDLE`] (WaitHandleWaitStart).
        kind: u8,
        /// Lock: `ContentionFlags` (0 managed, 1 native); wait handle: `WaitSource`
        /// (0 unknown, 1 `Monitor.Wait`).
        source: u8,
        /// Lock: the runtime's `LockID`; wait handle: 0.
        lock: u64,
        /// The associated object's address when the event was raised (0 = none).
        object: u64,
        /// Lock: `LockOwnerThreadID` as the runtime gives it (0 = not known).
        owner: u64,
        /// The associated object's class (0 = not named; `ClassName` names it).
        class: u64,
        /// Leaf first; 0 for an address the runtime could not name.
        frames: Cow<'a, [u64]>,
    }
    /// `--waits`: the wait of the thread's last `WaitStart` of `kind` is over:
    /// `duration_ns` as the runtime measured it (ContentionStop), 0 when it did not (a
    /// wait handle: the time between the two records is the wait).
    112 WaitStop { thread: u64, kind: u8, duration_ns: u64 }
    /// `--waits`: the thread pool changed its worker-thread target
    /// (ThreadPoolWorkerThreadAdjustmentAdjustment): the new count and the reason
    /// (0 warmup, 1 initializing, 2 random move, 3 climbing move, 4 change point,
    /// 5 stabilizing, 6 starvation, 7 thread timed out, 8 cooperative blocking);
    /// `throughput_milli` is the average throughput in thousandths of items a second.
    113 ThreadPoolAdjust { threads: u64, reason: u64, throughput_milli: u64 }
    /// `--waits`: a thread-pool worker started (`started`) or stopped, with the pool's
    /// active and retired worker counts the runtime gave then.
    114 ThreadPoolWorker { started: bool, active: u64, retired: u64 }
    /// `--waits`: the agent's figures at the end: wait events delivered, recorded
    /// (with a stack), and lock objects whose class was not named (the event came
    /// where the object may move: see docs/waits.md).
    115 WaitStats { delivered: u64, recorded: u64, unnamed: u64 }
    /// `--waits` (2.3): the stack of a lock's owner, taken by the signal sampler when a
    /// thread began to wait for the lock (its `WaitStart`), written by the sampler
    /// thread with the time the owner was signalled.
    116 WaitOwnerStack {
        /// Managed thread id of the waiting thread (its `WaitStart.thread`).
        thread: u64,
        /// The `WaitStart.lock` waited for.
        lock: u64,
        /// The owner as `WaitStart.owner` gives it (its OS thread id).
        owner: u64,
        /// The owner's stack, leaf first.
        frames: Cow<'a, [u64]>,
    }
    /// `--waits` (2.3): the owners' stacks asked for (one per `WaitStart` of a lock),
    /// taken, and those not taken by reason: the owner was not known (no owner given, or
    /// not a managed thread the sampler knew), it had exited, the request table was
    /// full, its handler did not answer or its stack had no managed frame, no signal
    /// sampler was running (suspend sampling, another mode, the recording stopping).
    117 WaitOwnerStats {
        requested: u64,
        taken: u64,
        owner_unknown: u64,
        owner_exited: u64,
        queue_full: u64,
        walk_failed: u64,
        no_sampler: u64,
    }
    /// `--alloc` on .NET 8 and 9 (2.4): the allocation samples whose source positions
    /// the agent's own thread maps (their code was not mapped yet where the runtime
    /// delivered them), written at the end: queued for it, mapped, and kept without
    /// positions because the queue was full (or busy) when they came, or because they
    /// were queued after its last round.
    118 AllocPositionStats {
        queued: u64,
        mapped: u64,
        queue_full: u64,
        left_at_end: u64,
    }
}

/// `AllocConfig.source`: the runtime's `AllocationSampled` event (.NET 10, Poisson).
pub const ALLOC_SOURCE_SAMPLED: u8 = 1;
/// `AllocConfig.source`: the runtime's `AllocationTick` event (one per ~100 KB).
pub const ALLOC_SOURCE_TICK: u8 = 2;

/// `WaitStart.kind`: monitor lock contention (ContentionStart).
pub const WAIT_LOCK: u8 = 1;
/// `WaitStart.kind`: a wait-handle wait (WaitHandleWaitStart, .NET 9 and later).
pub const WAIT_HANDLE: u8 = 2;

/// `Lost.reason`: a thread's buffer was full in drop mode (`--on-full drop`).
pub const LOST_BUFFER_FULL: u8 = 1;
/// `Lost.reason`: writing the trace failed (see the `WriteFailed` record for the errno).
pub const LOST_WRITE_FAILED: u8 = 2;
/// `Lost.reason`: events arrived while the recording was stopping, or were larger than
/// a buffer.
pub const LOST_STOPPING: u8 = 3;
/// `Lost.reason`: the trace reached `--max-size`; recording stopped, the app ran on.
pub const LOST_MAX_SIZE: u8 = 4;

/// The self-description written into the header: every kind this version writes, with
/// its fields in wire order.
pub fn event_kind_table() -> Vec<EventKindDesc> {
    Event::describe()
}

impl<'a> Event<'a> {
    /// A record that holds two events (`EnterArgs`, `ReturnLeave`) as those two, in the
    /// order they happened: the Enter then its `CallArgs`, the `CallReturn` then its Leave.
    /// Any other event comes back unchanged as `Err`.
    pub fn split_call(self) -> Result<(Event<'a>, Event<'a>), Event<'a>> {
        match self {
            Event::EnterArgs {
                function,
                sp,
                values,
            } => Ok((
                Event::Enter { function, sp },
                Event::CallArgs {
                    function,
                    sp,
                    values,
                },
            )),
            Event::ReturnLeave {
                function,
                sp,
                values,
            } => Ok((
                Event::CallReturn {
                    function,
                    sp,
                    values,
                },
                Event::Leave { function, sp },
            )),
            other => Err(other),
        }
    }

    /// Whether this record holds two events ([`split_call`](Self::split_call)).
    #[inline]
    pub fn is_pair(&self) -> bool {
        matches!(self, Event::EnterArgs { .. } | Event::ReturnLeave { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_ids_are_unique_and_named() {
        let table = event_kind_table();
        // Ids need not be consecutive (ranges are handed out per feature): unique, nonzero.
        let mut ids: Vec<u8> = table.iter().map(|k| k.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), table.len(), "duplicate kind ids");
        assert!(!ids.contains(&0));
        assert!(table.len() >= 36);
        for k in &table {
            assert_eq!(kind_name(k.id), Some(k.name.as_str()));
        }
        assert!(ids.starts_with(&(1..=34).collect::<Vec<u8>>()));
        assert_eq!(kind_name(0), None);
        assert_eq!(kind_name(u8::MAX), None);
        assert_eq!(kind_name(65), Some("HeapStart"));
    }
}
