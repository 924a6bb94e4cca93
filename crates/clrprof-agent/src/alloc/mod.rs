//! `--alloc` (docs/allocations.md): allocation samples with their managed stacks, and
//! the live heap of the sampled objects.
//!
//! The runtime samples: the agent opens an in-process EventPipe session
//! (ICorProfilerInfo12::EventPipeStartSession) on the runtime provider, whose events the
//! runtime delivers synchronously on the allocating thread (`EventPipeEventDelivered`);
//! the callback walks that thread's stack (DoStackSnapshot, unless `stackcache` knows
//! the stack from an earlier sample) and records the sample.
//! .NET 10 and later: `AllocationSampled` (a Poisson process of mean 100 KiB, a constant
//! of the runtime); before: `GCAllocationTick` (one event each time ~100 KB were
//! allocated). `--alloc-interval` above 100 KiB thins the runtime's samples at random;
//! below, the runtime's 100 KiB stands. `payload` decodes the events, `live` follows the
//! sampled objects through weak handles.
//!
//! Per sample, on the allocating thread: no allocation and no syscall (but the first
//! sample of a thread asks for its stack range); a stack from the cache (a few loads per
//! frame, its frames' IL positions included) or a DoStackSnapshot, one load per frame in
//! a lock-free cache of the functions named (the sharded name table, and its lock, only
//! on a miss), one weak handle, one record and its positions. A walked stack's frames
//! are mapped to IL offsets through the maps the runtime's threads share (a lock only
//! tried: a sample that finds it taken has no positions, and is counted; a code address
//! is mapped once, its version's map read once, both caches bounded), then kept in the
//! stack cache with them.

mod later;
mod live;
mod payload;
mod stackbuf;
mod stackcache;
mod waits;

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use clrprof_format::Event;
use corprof::{ClassId, EventPipeEvent, FunctionId, ObjectId, ProfilerInfo};

use crate::config::Settings;
use crate::names::{self, Seen};
use crate::os::clock;
use crate::output::buffers::emit;
use crate::stackwalk::ilmap::IlMaps;

use later::{Later, Mapper};
use live::{LiveTable, TRACKED_MAX};
use stackbuf::FrameBuf;

/// The runtime's mean distance between samples, for both events.
const RUNTIME_MEAN: u64 = 100 * 1024;
/// `Microsoft-Windows-DotNETRuntime` keywords and levels.
const KEYWORD_GC: u64 = 0x1;
const KEYWORD_ALLOCATION_SAMPLING: u64 = 0x800_0000_0000;
const PROVIDER: &str = "Microsoft-Windows-DotNETRuntime";
/// Frames kept per sample: a deeper stack keeps its leaf-most frames. 2 KiB of the
/// allocating thread's stack while the sample is taken.
const MAX_FRAMES: usize = 256;

/// How a sample's stack is taken (`CLRPROF_ALLOC_WALK`, for comparisons and the bench).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum WalkMode {
    /// A stack seen before from `stackcache`, DoStackSnapshot for the others: the default.
    Cached,
    /// DoStackSnapshot for every sample (`CLRPROF_ALLOC_WALK=snapshot`).
    Snapshot,
    /// Both for every sample (`compare`); the sample keeps DoStackSnapshot's frames, and
    /// stacks from the cache that differ are counted and the first few logged.
    Compare,
    /// No per-sample work at all (`CLRPROF_ALLOC_BENCH=floor`): the session is open and
    /// the runtime builds and delivers every event, the agent returns at once. What the
    /// runtime's feed costs by itself, for `clrprof-bench alloc`; records no samples.
    Floor,
}

impl WalkMode {
    fn from_env() -> WalkMode {
        match std::env::var("CLRPROF_ALLOC_BENCH").as_deref() {
            Ok("floor") => return WalkMode::Floor,
            Err(std::env::VarError::NotPresent) => {}
            Ok(other) => log!("CLRPROF_ALLOC_BENCH={other:?}: expected floor; ignored"),
            Err(_) => log!("CLRPROF_ALLOC_BENCH is not UTF-8: expected floor; ignored"),
        }
        match std::env::var("CLRPROF_ALLOC_WALK").as_deref() {
            Ok("cached") | Err(_) => WalkMode::Cached,
            Ok("snapshot") => WalkMode::Snapshot,
            Ok("compare") => WalkMode::Compare,
            Ok(other) => {
                log!(
                    "CLRPROF_ALLOC_WALK={other:?}: expected cached, snapshot or compare; cached it is"
                );
                WalkMode::Cached
            }
        }
    }
}

struct State {
    session: u64,
    walk: WalkMode,
    /// Samples whose stack came from the cache.
    hits: AtomicU64,
    /// `Compare`: stacks from the cache compared with DoStackSnapshot's, and how many
    /// differed.
    compared: AtomicU64,
    differed: AtomicU64,
    /// Walked samples recorded without positions: another thread held the maps.
    positions_busy: AtomicU64,
    /// `GCAllocationTick` (.NET 8, 9): positions the maps do not know yet are mapped by
    /// the agent's thread (`later`), as the runtime refuses the calls on this one.
    later: Option<Later>,
    /// `AllocationSampled` (true) or `AllocationTick`.
    sampled: bool,
    /// Keep a runtime sample when `splitmix(counter) < keep` (`u64::MAX` = keep all).
    keep: u64,
    /// The live heap is followed (weak handles need ICorProfilerInfo13).
    follow: bool,
    next_id: AtomicU64,
    rng: AtomicU64,
    stopped: AtomicBool,
    delivered: AtomicU64,
    recorded: AtomicU64,
    untracked: AtomicU64,
    /// The agent's own time per recorded sample, and the stack walk's part of it, and
    /// the time of the sweeps at GC ends, in clock ticks (`clock::ticks`: no system
    /// call); logged at the end in ms, so that what `--alloc` costs can be split between
    /// the runtime and the agent. `started` (ticks, ns) converts them.
    own_ticks: AtomicU64,
    walk_ticks: AtomicU64,
    sweep_ticks: AtomicU64,
    sweeps: AtomicU64,
    started: (u64, u64),
    live: LiveTable,
    classes: Seen,
}

/// The session's sampling state; freed between sessions (`session::state`).
static STATE: crate::output::session_cell::SessionCell<State> =
    crate::output::session_cell::SessionCell::new();

/// At a session's start: caches of the last session are forgotten (its names were
/// written to its own trace, not to this one).
pub fn reset_for_session() {
    FUNCTIONS_NAMED.clear();
    CLASSES_NAMED.clear();
    waits::reset_for_session();
    stackcache::reset_for_session();
}

/// Between sessions: the state of the last `--alloc` and `--waits` goes.
pub fn release_at_detach() {
    stop_mapper();
    STATE.clear();
    waits::release_at_detach();
}

/// Starts the EventPipe session (after the event mask asked for EventPipe delivery and
/// the GC callbacks). An error leaves the rest of the recording running; it is logged and
/// recorded (`AllocUnavailable`), so that the report says why there are no samples.
pub fn start(info: &ProfilerInfo, settings: &Settings) {
    waits::start(info, settings);
    if let Err((hresult, reason)) = try_start(info, settings) {
        log!("{reason}; recording without allocation samples");
        emit(&Event::AllocUnavailable {
            hresult: u64::from(hresult),
            reason: Cow::Owned(reason),
        });
    }
}

fn try_start(info: &ProfilerInfo, settings: &Settings) -> Result<(), (u32, String)> {
    let Some(interval) = settings.alloc_interval else {
        return Ok(());
    };
    if info.version() < 12 {
        return Err((
            0,
            format!(
                "--alloc needs ICorProfilerInfo12 (.NET 5 or later); this runtime has ICorProfilerInfo{}",
                info.version()
            ),
        ));
    }
    let major = info.get_runtime_information().map(|r| r.major).unwrap_or(0);
    let sampled = major >= 10;
    let (keywords, level) = if sampled {
        (
            KEYWORD_ALLOCATION_SAMPLING,
            corprof_sys::COR_PRF_EVENTPIPE_INFORMATIONAL,
        )
    } else {
        (KEYWORD_GC, corprof_sys::COR_PRF_EVENTPIPE_VERBOSE)
    };
    // For the test of this failure only: no provider at all, which the runtime refuses.
    let providers: &[(&str, u64, u32)] =
        if std::env::var_os("CLRPROF_ALLOC_TEST_NO_PROVIDER").is_some() {
            &[]
        } else {
            &[(PROVIDER, keywords, level)]
        };
    let session = info
        .event_pipe_start_session(providers, false)
        .map_err(|e| (e.0 as u32, format!("EventPipeStartSession failed: {e}")))?;
    let keep = if interval > RUNTIME_MEAN {
        ((RUNTIME_MEAN as f64 / interval as f64) * u64::MAX as f64) as u64
    } else {
        u64::MAX
    };
    // The object of a GCAllocationTick is not initialized yet when the event fires (the
    // allocator reports the space it is about to hand out), so only AllocationSampled's
    // objects, which are, can be given a handle.
    let follow = sampled && info.version() >= 13;
    emit(&Event::AllocConfig {
        source: if sampled {
            clrprof_format::ALLOC_SOURCE_SAMPLED
        } else {
            clrprof_format::ALLOC_SOURCE_TICK
        },
        mean_bytes: RUNTIME_MEAN,
        interval_bytes: interval.max(RUNTIME_MEAN),
        tracked_max: if follow { TRACKED_MAX as u64 } else { 0 },
    });
    let walk = WalkMode::from_env();
    STATE.set(State {
        session,
        walk,
        hits: AtomicU64::new(0),
        compared: AtomicU64::new(0),
        differed: AtomicU64::new(0),
        positions_busy: AtomicU64::new(0),
        later: (!sampled).then(Later::new),
        sampled,
        keep,
        follow,
        next_id: AtomicU64::new(1),
        stopped: AtomicBool::new(false),
        rng: AtomicU64::new(crate::os::clock::unix_ns()),
        delivered: AtomicU64::new(0),
        recorded: AtomicU64::new(0),
        untracked: AtomicU64::new(0),
        own_ticks: AtomicU64::new(0),
        walk_ticks: AtomicU64::new(0),
        sweep_ticks: AtomicU64::new(0),
        sweeps: AtomicU64::new(0),
        started: (clock::ticks(), clock::monotonic_ns()),
        live: LiveTable::new(if follow { TRACKED_MAX } else { 0 }),
        classes: Seen::new(),
    });
    if interval < RUNTIME_MEAN {
        log!(
            "--alloc-interval {interval}: the runtime samples every {RUNTIME_MEAN} bytes on average, which stands"
        );
    }
    log!(
        "allocation sampling: {} (mean {RUNTIME_MEAN} bytes{}), stacks by {walk:?}, live heap {}",
        if sampled {
            "AllocationSampled"
        } else {
            "GCAllocationTick"
        },
        if keep == u64::MAX {
            String::new()
        } else {
            format!(", thinned to one per {interval}")
        },
        if follow {
            format!("followed for up to {TRACKED_MAX} samples")
        } else {
            "not followed (needs AllocationSampled, .NET 10)".into()
        }
    );
    Ok(())
}

/// The thread that maps `GCAllocationTick` samples' positions (`later`), while there is one.
static MAPPER: Mutex<Option<Mapper>> = Mutex::new(None);

/// The session's queue of samples waiting for positions, if it has one.
fn later_queue() -> Option<&'static Later> {
    STATE.get().and_then(|st| st.later.as_ref())
}

/// Once the profiler's shared IL maps exist (after `start`): starts the thread that maps
/// the positions the allocating threads may not ask for (.NET 8 and 9), if this session
/// samples allocations there.
pub fn start_mapper(info: &ProfilerInfo, maps: &Arc<Mutex<IlMaps>>) {
    if later_queue().is_none() {
        return;
    }
    match Mapper::start(info.clone(), maps.clone(), later_queue) {
        Ok(m) => {
            let old = MAPPER.lock().unwrap_or_else(|p| p.into_inner()).replace(m);
            if let Some(old) = old {
                old.stop();
            }
        }
        Err(e) => log!(
            "cannot start the thread that maps allocation samples' positions: {e}; samples whose code was not mapped yet have no lines"
        ),
    }
}

/// Stops the mapping thread after its last round (idempotent).
fn stop_mapper() {
    let m = MAPPER.lock().unwrap_or_else(|p| p.into_inner()).take();
    if let Some(m) = m {
        m.stop();
    }
}

/// Ids named already, direct-mapped by hash: a hit skips the name table's lock, so the
/// frames every sample repeats (Main, the allocating method) cost one load.
struct NamedCache([AtomicUsize; 4096]);

impl NamedCache {
    const fn new() -> NamedCache {
        NamedCache([const { AtomicUsize::new(0) }; 4096])
    }

    fn clear(&self) {
        for s in &self.0 {
            s.store(0, Ordering::Relaxed);
        }
    }

    /// True the first time `id` is seen (`seen` decides; the cache only remembers).
    fn first(&self, id: usize, seen: &Seen) -> bool {
        let slot = &self.0[(splitmix(id as u64) >> 52) as usize];
        if slot.load(Ordering::Relaxed) == id {
            return false;
        }
        let first = seen.first(id);
        slot.store(id, Ordering::Relaxed);
        first
    }
}

static FUNCTIONS_NAMED: NamedCache = NamedCache::new();
static CLASSES_NAMED: NamedCache = NamedCache::new();

/// splitmix64: a well-mixed value from a counter (no lock, no thread-local state).
fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// An EventPipe event, on the thread that wrote it: records the allocation samples.
/// `maps`: the IL maps shared by the runtime's threads (frames → IL offsets).
pub fn on_event(
    info: &ProfilerInfo,
    ev: &EventPipeEvent<'_>,
    functions: &Seen,
    maps: &Mutex<IlMaps>,
) {
    if waits::on_event(info, ev, functions, maps) {
        return;
    }
    let Some(st) = STATE.get() else {
        return;
    };
    if st.stopped.load(Ordering::Acquire) {
        return;
    }
    let alloc = match (ev.event_id, st.sampled) {
        (payload::ALLOCATION_SAMPLED, true) => payload::allocation_sampled(ev.data),
        (payload::ALLOCATION_TICK, false) => payload::allocation_tick(ev.data),
        _ => return,
    };
    let Some(alloc) = alloc else {
        return;
    };
    st.delivered.fetch_add(1, Ordering::Relaxed);
    if st.walk == WalkMode::Floor {
        return;
    }
    if st.keep != u64::MAX && splitmix(st.rng.fetch_add(1, Ordering::Relaxed)) >= st.keep {
        return;
    }
    st.recorded.fetch_add(1, Ordering::Relaxed);
    let t0 = clock::ticks();
    let id = st.next_id.fetch_add(1, Ordering::Relaxed);
    if CLASSES_NAMED.first(alloc.class as usize, &st.classes) {
        emit(&Event::ClassName {
            class: alloc.class,
            name: Cow::Owned(names::class_name(info, ClassId(alloc.class as usize))),
        });
    }
    // A synchronous session's events come without the stack (the runtime walks stacks
    // only for buffered sessions): this thread's own, from the cache or walked. The
    // frames go into a buffer on this thread's stack (no allocation per sample), whose
    // address anchors the cache's offsets; their positions into another.
    let mut buf = Frames::new();
    let mut positions = Frames::new();
    // The frames' return addresses (walked, or the cache's), for positions left to `later`.
    let mut ips = Frames::new();
    let mut deferred = false;
    let walk0 = clock::ticks();
    let stack = match st.walk {
        // (The register context's layout is x86-64's.)
        WalkMode::Cached | WalkMode::Compare if cfg!(target_arch = "x86_64") => {
            stackcache::OwnStack::new(std::ptr::addr_of!(buf) as u64)
        }
        _ => None,
    };
    let hit = stack
        .as_ref()
        .is_some_and(|s| stackcache::find(s, &mut buf, &mut positions, &mut ips));
    if hit {
        st.hits.fetch_add(1, Ordering::Relaxed);
        // `later`: a stack kept before its maps were read holds no position for some
        // frames; what the maps know now, or later.
        if st.later.is_some()
            && st.walk != WalkMode::Compare
            && buf
                .as_slice()
                .iter()
                .zip(positions.as_slice())
                .any(|(&f, &p)| f != 0 && p == 0)
        {
            let mut known = Frames::new();
            deferred = !known_positions(maps, &buf, &ips, &mut known);
            positions = known;
        }
    }
    if !hit || st.walk == WalkMode::Compare {
        let mut snap = Frames::new();
        let mut walked = Walked::new();
        let complete = snapshot(
            info,
            &mut snap,
            &mut ips,
            stack.is_some().then_some(&mut walked),
        );
        let mut snap_positions = Frames::new();
        let mapped = if st.later.is_some() {
            // The runtime answers no IL map call here: what the maps know, or later.
            deferred = !known_positions(maps, &snap, &ips, &mut snap_positions);
            !deferred
        } else {
            map_positions(info, maps, &snap, &ips, &mut snap_positions)
        };
        if !mapped && !deferred {
            st.positions_busy.fetch_add(1, Ordering::Relaxed);
        }
        // A stack is kept with its positions, so that it is not kept without them (with
        // `later`, with those known: a hit asks again for the others).
        if let Some(s) = &stack
            && !hit
            && (mapped || deferred)
        {
            stackcache::keep(
                s,
                walked.as_slice(),
                snap_positions.as_slice(),
                complete && walked.exact,
                |a, f| in_code_of(maps, f, a),
            );
        }
        if hit {
            st.compared.fetch_add(1, Ordering::Relaxed);
            if snap.as_slice() != buf.as_slice() {
                let k = st.differed.fetch_add(1, Ordering::Relaxed);
                if k < 5 {
                    let name = |f: &u64| {
                        names::function_names(info, FunctionId(*f as usize))
                            .map_or_else(|| format!("{f:#x}"), |n| n.name)
                    };
                    let cached: Vec<String> = buf.as_slice().iter().take(4).map(name).collect();
                    let walked: Vec<String> = snap.as_slice().iter().take(4).map(name).collect();
                    log!(
                        "alloc stack differs: cached [{}] snapshot [{}]",
                        cached.join(" < "),
                        walked.join(" < ")
                    );
                }
            }
        }
        buf = snap;
        positions = snap_positions;
    }
    st.walk_ticks
        .fetch_add(clock::ticks().saturating_sub(walk0), Ordering::Relaxed);
    let frames = buf.as_slice();
    for f in frames {
        if FUNCTIONS_NAMED.first(*f as usize, functions) {
            names::emit_function_info(info, FunctionId(*f as usize));
        }
    }
    let tracked = st.follow && st.live.track(info, ObjectId(alloc.address as usize), id);
    if st.follow && !tracked {
        st.untracked.fetch_add(1, Ordering::Relaxed);
    }
    emit(&Event::AllocSample {
        id,
        thread: ev.thread.0 as u64,
        class: alloc.class,
        size: alloc.size,
        amount: alloc.amount,
        tracked: u8::from(tracked),
        frames: Cow::Borrowed(frames),
    });
    // Where in its method each frame was: the same thread's next record, or the mapping
    // thread's once it has read the maps.
    let positions = positions.as_slice();
    if deferred {
        if let Some(l) = &st.later {
            l.queue(id, frames, ips.as_slice());
        }
    } else if positions.len() == frames.len() && positions.iter().any(|&p| p != 0) {
        emit(&Event::AllocPositions {
            id,
            positions: Cow::Borrowed(positions),
        });
    }
    st.own_ticks
        .fetch_add(clock::ticks().saturating_sub(t0), Ordering::Relaxed);
}

/// The frames of a sample: a fixed buffer on the allocating thread's stack.
type Frames = FrameBuf<MAX_FRAMES>;

/// The calling thread's own managed stack into `buf` (leaf first): from the stack cache
/// when it knows it, else a DoStackSnapshot that the cache then keeps (with its
/// positions, as allocation samples keep theirs, since the cache is one). True if it
/// came from the cache. Then each frame's function is named once (`FunctionInfo`).
fn own_stack(
    info: &ProfilerInfo,
    buf: &mut Frames,
    functions: &Seen,
    maps: &Mutex<IlMaps>,
) -> bool {
    // (The register context's layout is x86-64's.)
    let stack = if cfg!(target_arch = "x86_64") {
        stackcache::OwnStack::new(std::ptr::addr_of!(*buf) as u64)
    } else {
        None
    };
    let mut positions = Frames::new();
    let hit = stack
        .as_ref()
        .is_some_and(|s| stackcache::find(s, buf, &mut positions, &mut Frames::new()));
    if !hit {
        let mut walked = Walked::new();
        let mut ips = Frames::new();
        let complete = snapshot(info, buf, &mut ips, stack.is_some().then_some(&mut walked));
        if let Some(s) = &stack
            && map_positions(info, maps, buf, &ips, &mut positions)
        {
            stackcache::keep(
                s,
                walked.as_slice(),
                positions.as_slice(),
                complete && walked.exact,
                |a, f| in_code_of(maps, f, a),
            );
        }
    }
    for f in buf.as_slice() {
        if FUNCTIONS_NAMED.first(*f as usize, functions) {
            names::emit_function_info(info, FunctionId(*f as usize));
        }
    }
    hit
}

/// A walk's managed frames with their IP and SP, for the cache; `exact` while every
/// frame's register context agreed with the IP the runtime reported.
struct Walked {
    frames: [stackcache::Walked; stackcache::MAX_FRAMES],
    n: usize,
    exact: bool,
}

impl Walked {
    fn new() -> Walked {
        Walked {
            frames: [stackcache::Walked::default(); stackcache::MAX_FRAMES],
            n: 0,
            exact: true,
        }
    }

    fn as_slice(&self) -> &[stackcache::Walked] {
        &self.frames[..self.n]
    }
}

/// Where in its method each frame of a walk is, as `SamplePositions` items into `out`:
/// every frame's IP is a return address here (the allocating method's is that of its
/// call of the runtime's allocation helper), so each maps its IP − 1, the call. Through
/// the maps the runtime's threads share, under a lock only tried: false, and no
/// positions, when another thread holds it.
fn map_positions(
    info: &ProfilerInfo,
    maps: &Mutex<IlMaps>,
    frames: &Frames,
    ips: &Frames,
    out: &mut Frames,
) -> bool {
    out.n = 0;
    let Ok(mut maps) = maps.try_lock() else {
        return false;
    };
    for (&f, &ip) in frames.as_slice().iter().zip(ips.as_slice()) {
        let p = (f != 0 && ip > 1)
            .then(|| maps.position(info, f, ip - 1))
            .flatten();
        out.push(clrprof_format::position_item(p));
    }
    if let Some(e) = maps.stats.first_error
        && !REFUSED_LOGGED.swap(true, Ordering::Relaxed)
    {
        log!(
            "source positions: the runtime refused an IL map call on a thread recording a stack: {e}; its frames have no positions"
        );
    }
    out.n == frames.n
}

/// Whether `addr` lies in `function`'s code, from the maps' code ranges only (the lock
/// only tried; no runtime call on a guessed address).
fn in_code_of(maps: &Mutex<IlMaps>, function: u64, addr: u64) -> bool {
    maps.try_lock().is_ok_and(|m| m.in_code_of(function, addr))
}

/// Where in its method each frame of a walk is, from what the shared maps know already
/// (no runtime call: the allocating thread of a `GCAllocationTick` may make none), each
/// frame's return address − 1 as in [`map_positions`]; false when some frame's code is not
/// mapped yet, or the maps are busy (the sample's positions are then left to `later`).
/// `out` gets a position for every frame, 0 (none) for those not known.
fn known_positions(maps: &Mutex<IlMaps>, frames: &Frames, ips: &Frames, out: &mut Frames) -> bool {
    out.n = 0;
    let maps = maps.try_lock().ok();
    let mut all = maps.is_some() && ips.n == frames.n;
    for (i, &f) in frames.as_slice().iter().enumerate() {
        let ip = ips.as_slice().get(i).copied().unwrap_or(0);
        let p = if f != 0 && ip > 1 {
            match maps.as_ref().and_then(|m| m.known(f, ip - 1)) {
                Some(p) => p,
                None => {
                    all = false;
                    None
                }
            }
        } else {
            None
        };
        out.push(clrprof_format::position_item(p));
    }
    all
}

/// The refusal of an IL map call was logged (once a process).
static REFUSED_LOGGED: AtomicBool = AtomicBool::new(false);

/// `CONTEXT` (AMD64, the PAL's layout on Unix too): where RSP and RIP are.
const CONTEXT_RSP: usize = 0x98;
const CONTEXT_RIP: usize = 0xF8;

/// The thread's own stack by DoStackSnapshot (allowed on the current thread at any time),
/// each managed frame's IP into `ips`; with `walked`, each managed frame's IP and SP too
/// (from its register context). True if the walk reached the root: not cut at
/// [`MAX_FRAMES`] or by a failure.
fn snapshot(
    info: &ProfilerInfo,
    out: &mut Frames,
    ips: &mut Frames,
    mut walked: Option<&mut Walked>,
) -> bool {
    out.n = 0;
    ips.n = 0;
    let flags = if walked.is_some() {
        corprof_sys::COR_PRF_SNAPSHOT_REGISTER_CONTEXT
    } else {
        0
    };
    let r = info.do_stack_snapshot(None, flags, None, &mut |f: FunctionId, ip, ctx| {
        if f.0 == 0 {
            return true;
        }
        out.push(f.0 as u64);
        ips.push(ip as u64);
        if let Some(w) = walked.as_deref_mut() {
            let reg = |at: usize| {
                ctx.get(at..at + 8)
                    .map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
            };
            match (reg(CONTEXT_RSP), reg(CONTEXT_RIP)) {
                (Some(sp), Some(rip)) if rip == ip as u64 && w.n < w.frames.len() => {
                    w.frames[w.n] = stackcache::Walked {
                        function: f.0 as u64,
                        ip: ip as u64,
                        sp,
                    };
                    w.n += 1;
                }
                _ => w.exact = false,
            }
        }
        out.n < MAX_FRAMES
    });
    r.is_ok() && out.n < MAX_FRAMES
}

/// GarbageCollectionFinished: records the followed samples that this GC collected.
pub fn gc_finished(info: &ProfilerInfo) {
    let Some(st) = STATE.get() else {
        return;
    };
    if st.stopped.load(Ordering::Acquire) || st.live.used() == 0 {
        return;
    }
    let t0 = clock::ticks();
    let mut died = Vec::new();
    st.live.sweep(info, &mut died);
    for chunk in died.chunks(1024) {
        emit(&Event::AllocFreed {
            ids: Cow::Borrowed(chunk),
        });
    }
    st.sweeps.fetch_add(1, Ordering::Relaxed);
    st.sweep_ticks
        .fetch_add(clock::ticks().saturating_sub(t0), Ordering::Relaxed);
}

/// Stops the session, releases the handles and records the figures (before the writer
/// stops). Samples still being delivered meanwhile see `stopped` and are dropped.
pub fn stop(info: &ProfilerInfo) {
    waits::stop(info);
    let Some(st) = STATE.get() else {
        return;
    };
    st.stopped.store(true, Ordering::Release);
    let _ = info.event_pipe_stop_session(st.session);
    // The samples recorded until now get their positions, then the thread ends.
    stop_mapper();
    if let Some(l) = &st.later {
        l.drop_rest();
        log!(
            "allocation positions mapped off the allocating thread (GCAllocationTick): {} samples queued, {} mapped, {} without positions because the queue was full or busy, {} queued after the last round",
            l.queued.load(Ordering::Relaxed),
            l.mapped.load(Ordering::Relaxed),
            l.queue_full.load(Ordering::Relaxed),
            l.left_at_end.load(Ordering::Relaxed),
        );
        emit(&l.stats());
    }
    let alive_at_end = st.live.release_all(info);
    let (hits, compared, differed, busy) = (
        st.hits.load(Ordering::Relaxed),
        st.compared.load(Ordering::Relaxed),
        st.differed.load(Ordering::Relaxed),
        st.positions_busy.load(Ordering::Relaxed),
    );
    let not_kept = |i: usize| stackcache::NOT_KEPT[i].load(Ordering::Relaxed);
    log!(
        "allocation stacks: {:?}, {hits} of {} from the cache (walks not kept: {} with a return address elsewhere, {} cut or deeper than {} frames, {} on a path over the {}th, {} busy; {busy} walked without positions, the IL maps busy){}",
        st.walk,
        st.recorded.load(Ordering::Relaxed),
        not_kept(0),
        not_kept(1),
        stackcache::MAX_FRAMES,
        not_kept(2),
        8,
        not_kept(3),
        if st.walk == WalkMode::Compare {
            format!(", compared with DoStackSnapshot: {differed} of {compared} differ")
        } else {
            String::new()
        },
    );
    let (delivered, recorded, untracked) = (
        st.delivered.load(Ordering::Relaxed),
        st.recorded.load(Ordering::Relaxed),
        st.untracked.load(Ordering::Relaxed),
    );
    log!(
        "allocation samples: {recorded} recorded of {delivered} delivered, {alive_at_end} followed still alive{}",
        if untracked > 0 {
            format!(", {untracked} not followed (over the bound of {TRACKED_MAX})")
        } else {
            String::new()
        }
    );
    let (t0, n0) = st.started;
    let ns_per_tick = clock::monotonic_ns().saturating_sub(n0) as f64
        / clock::ticks().saturating_sub(t0).max(1) as f64;
    let ms = |a: &AtomicU64| a.load(Ordering::Relaxed) as f64 * ns_per_tick / 1e6;
    log!(
        "allocation samples cost the agent {:.1} ms ({:.1} µs per sample, of which the stack walk {:.1} µs), and {:.1} ms in {} sweeps of the followed objects",
        ms(&st.own_ticks),
        ms(&st.own_ticks) * 1e3 / recorded.max(1) as f64,
        ms(&st.walk_ticks) * 1e3 / recorded.max(1) as f64,
        ms(&st.sweep_ticks),
        st.sweeps.load(Ordering::Relaxed),
    );
    emit(&Event::AllocStats {
        delivered,
        recorded,
        untracked,
        alive_at_end,
    });
}
