//! `record --waits` (docs/waits.md): where threads waited, from the runtime's wait events
//! (`WaitStart`/`WaitStop`, `ThreadPoolAdjust`) and, for the kinds the runtime raises no
//! event for (sleep, join), from the samples of threads that did not run.
//!
//! - Locks: each `WaitStart` of kind lock is paired with its thread's next `WaitStop`
//!   (its `duration_ns` is the runtime's own measure). The waiter is the app method
//!   nearest the leaf of the waiting stack; the owner is the app method nearest the leaf
//!   of the owner's stack the signal sampler took on demand when the wait began
//!   (`WaitOwnerStack`), else of the owner thread's samples taken during the wait (best
//!   effort: a wait may have neither; those are counted as `owner_unknown`).
//! - Thread-pool starvation: runs of worker-count adjustments whose reason is starvation
//!   (6) or cooperative blocking (8), less than [`EPISODE_GAP_NS`] apart; the methods
//!   blocking pool threads then are the app methods nearest the leaf of pool threads'
//!   samples in a wait, from [`BLOCKING_LEAD_NS`] before the episode to its end.
//! - Waits by kind: lock and wait handle from the events; sleep and join from samples
//!   (samples × the sampling interval); thread-pool starvation from its episodes; GC
//!   from the GCs' pauses (the `suspends` group).

use std::collections::{BTreeMap, HashMap, HashSet};

use clrprof_format::{Event, WAIT_HANDLE, WAIT_LOCK};
use serde::Serialize;

use crate::gc::Gc;
use crate::names::Names;
use crate::names::is_app_frame;
use crate::samples::{Filter, StackSample};
use crate::threads::ThreadNames;
use crate::timeline::TimedEvent;
use crate::waits::WaitKind;

/// Starvation adjustments closer than this belong to one episode.
pub const EPISODE_GAP_NS: u64 = 1_500_000_000;
/// The pool starves for a while before the runtime injects a thread (its gate thread
/// looks every 500 ms): blocking is looked for from this long before an episode.
pub const BLOCKING_LEAD_NS: u64 = 1_000_000_000;
/// `ThreadPoolAdjust.reason`: starvation, cooperative blocking.
const REASON_STARVATION: u64 = 6;
const REASON_COOPERATIVE_BLOCKING: u64 = 8;

/// Lock contention (JSON `contention`).
#[derive(Debug, Default, Serialize)]
pub struct Contention {
    /// Contended acquisitions (ContentionStart events).
    pub count: u64,
    /// Their total wait, as the runtime measured each.
    pub wait_ns: u64,
    /// Per lock object type, most wait first.
    pub locks: Vec<LockRow>,
    /// Waits whose owner was seen neither in a stack taken on demand nor running in a
    /// sample during the wait.
    pub owner_unknown: u64,
    /// The owners' stacks the agent took on demand (`None`: a trace without them).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner_stacks: Option<OwnerStacks>,
}

/// The agent's requests for lock owners' stacks (`WaitOwnerStats`): one per contended
/// acquisition, taken or not, by reason.
#[derive(Debug, Default, Serialize, PartialEq, Eq)]
pub struct OwnerStacks {
    pub requested: u64,
    pub taken: u64,
    /// The runtime gave no owner, or it was not a managed thread the sampler knew.
    pub owner_unknown: u64,
    /// The owner had exited before it was signalled.
    pub owner_exited: u64,
    /// The request table was full.
    pub queue_full: u64,
    /// The owner's handler did not answer in time, or its stack had no managed frame.
    pub walk_failed: u64,
    /// No signal sampler was running (suspend sampling, another mode, the end).
    pub no_sampler: u64,
}

#[derive(Debug, Serialize)]
pub struct LockRow {
    /// The locked object's type (`[lock 0x…]` when the agent could not name it).
    #[serde(rename = "type")]
    pub type_name: String,
    pub count: u64,
    pub wait_ns: u64,
    pub max_wait_ns: u64,
    /// The app methods that waited (nearest app frame of the waiting stack).
    pub waiters: Vec<Waiter>,
    /// The app methods that held it (the owner's samples during the waits).
    pub owners: Vec<Owner>,
}

#[derive(Debug, Serialize)]
pub struct Waiter {
    pub function: String,
    pub count: u64,
    pub wait_ns: u64,
}

#[derive(Debug, Serialize)]
pub struct Owner {
    pub function: String,
    /// `on_demand` + `samples`.
    pub count: u64,
    /// Waits whose owner's stack, taken on demand as the wait began, was in this method.
    pub on_demand: u64,
    /// Samples of the owner in that method during the waits that had no stack taken on
    /// demand.
    pub samples: u64,
}

/// The thread pool (JSON `threadpool`).
#[derive(Debug, Default, Serialize)]
pub struct ThreadPool {
    pub starvation: Vec<Episode>,
    /// The app methods blocking pool threads during the episodes.
    pub blocking: Vec<Blocking>,
    /// Worker-count adjustments the runtime made, all reasons.
    pub adjustments: u64,
}

#[derive(Debug, Serialize)]
pub struct Episode {
    /// Nanoseconds since the trace's start of the first starvation adjustment.
    pub at_ns: u64,
    /// From the first to the last adjustment of the episode.
    pub duration_ns: u64,
    /// Worker threads before the episode's first adjustment.
    pub threads_before: u64,
    /// The most worker threads the runtime set during the episode.
    pub threads_after: u64,
}

#[derive(Debug, Serialize)]
pub struct Blocking {
    pub function: String,
    /// Wait-handle time (.NET 9+) of pool threads in this method during the episodes;
    /// without wait-handle events, samples × the sampling interval.
    pub wait_ns: u64,
    /// Samples of pool threads waiting in this method during the episodes.
    pub samples: u64,
}

/// One kind of wait (JSON `waits[]`).
#[derive(Debug, Serialize)]
pub struct KindRow {
    /// `lock`, `wait_handle`, `sleep`, `join`, `threadpool_starvation`, `gc`.
    pub kind: &'static str,
    pub wait_ns: u64,
    /// Events (lock, wait handle), samples (sleep, join), episodes, GCs.
    pub count: u64,
    /// The app methods that waited, most first.
    pub functions: Vec<NamedWait>,
}

#[derive(Debug, Serialize)]
pub struct NamedWait {
    pub name: String,
    pub wait_ns: u64,
}

/// Everything of `--waits`.
#[derive(Debug, Default)]
pub struct WaitsSection {
    pub contention: Contention,
    pub threadpool: ThreadPool,
    pub kinds: Vec<KindRow>,
    /// What the trace cannot say (e.g. no wait-handle events on .NET 8).
    pub notes: Vec<String>,
}

struct Open {
    ns: u64,
    thread: u64,
    lock: u64,
    owner: u64,
    class: u64,
    function: Option<u64>,
    pool: bool,
}

/// The nearest app frame of a stack, leaf first.
fn app_frame(stack: &[u64], names: &Names, cache: &mut HashMap<u64, bool>) -> Option<u64> {
    stack
        .iter()
        .copied()
        .find(|f| *cache.entry(*f).or_insert_with(|| is_app_frame(names, *f)))
}

/// Whether a stack runs on a thread-pool worker.
fn on_pool(stack: &[u64], names: &Names, cache: &mut HashMap<u64, bool>) -> bool {
    stack.iter().rev().take(12).any(|f| {
        *cache.entry(*f).or_insert_with(|| {
            let n = names.function(*f);
            n.starts_with("System.Threading.PortableThreadPool+WorkerThread")
                || n.starts_with("System.Threading.ThreadPoolWorkQueue.Dispatch")
        })
    })
}

fn add(map: &mut BTreeMap<String, (u64, u64)>, key: String, count: u64, ns: u64) {
    let e = map.entry(key).or_default();
    e.0 += count;
    e.1 += ns;
}

/// One wait the runtime reported, paired: its thread, when it began, how long it lasted,
/// whether it was a contended lock, and the waiting stack (leaf first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaitInterval {
    pub os_tid: u64,
    pub start_ns: u64,
    pub wait_ns: u64,
    pub lock: bool,
    pub frames: Vec<u64>,
}

/// Every wait of `--waits`, each `WaitStart` paired with its thread's next `WaitStop` of
/// the same kind (a wait-handle wait inside a lock's is the lock's, left out), as the
/// Waits section pairs them: what `convert --weight wait|lock` weighs stacks by.
pub fn intervals(events: &[TimedEvent<'_>]) -> Vec<WaitInterval> {
    let mut pairs = WaitPairs::default();
    events.iter().filter_map(|e| pairs.push(e)).collect()
}

/// The pairing of [`intervals`], one record at a time, for records read as a trace is
/// written (`record --push --waits`): it holds each thread's open waits (at most one per
/// thread and kind).
#[derive(Debug, Default)]
pub struct WaitPairs {
    open: HashMap<(u64, u8), (u64, Vec<u64>)>,
    nested: HashSet<u64>,
}

impl WaitPairs {
    /// Takes one record (of any kind); the wait it ends, if it ends one.
    pub fn push(&mut self, e: &TimedEvent<'_>) -> Option<WaitInterval> {
        match &e.event {
            Event::WaitStart { kind, frames, .. } => {
                if *kind == WAIT_HANDLE && self.open.contains_key(&(e.os_tid, WAIT_LOCK)) {
                    self.nested.insert(e.os_tid);
                    return None;
                }
                self.open.insert((e.os_tid, *kind), (e.ns, frames.to_vec()));
                None
            }
            Event::WaitStop {
                kind, duration_ns, ..
            } => {
                if *kind == WAIT_HANDLE && self.nested.remove(&e.os_tid) {
                    return None;
                }
                let (start_ns, frames) = self.open.remove(&(e.os_tid, *kind))?;
                Some(WaitInterval {
                    os_tid: e.os_tid,
                    start_ns,
                    wait_ns: if *duration_ns > 0 {
                        *duration_ns
                    } else {
                        e.ns.saturating_sub(start_ns)
                    },
                    lock: *kind == WAIT_LOCK,
                    frames,
                })
            }
            _ => None,
        }
    }
}

/// The thread pool's starvation episodes: (first, last adjustment, workers before, most
/// workers during), from runs of adjustments for starvation or cooperative blocking less
/// than [`EPISODE_GAP_NS`] apart that `filter`'s time window keeps.
pub fn starvation_episodes(
    events: &[TimedEvent<'_>],
    filter: &Filter,
) -> Vec<(u64, u64, u64, u64)> {
    let mut last_threads: Option<u64> = None;
    let mut last_active: Option<u64> = None;
    let mut episodes: Vec<(u64, u64, u64, u64)> = Vec::new();
    for e in events {
        match e.event {
            Event::ThreadPoolWorker { active, .. } => last_active = Some(active),
            Event::ThreadPoolAdjust {
                threads, reason, ..
            } => {
                let starving = reason == REASON_STARVATION || reason == REASON_COOPERATIVE_BLOCKING;
                if starving && filter.keeps_time(e.ns) {
                    match episodes.last_mut() {
                        Some(ep) if e.ns.saturating_sub(ep.1) <= EPISODE_GAP_NS => {
                            ep.1 = e.ns;
                            ep.3 = ep.3.max(threads);
                        }
                        _ => {
                            let before = last_threads
                                .or(last_active)
                                .unwrap_or(threads.saturating_sub(1));
                            episodes.push((e.ns, e.ns, before, threads));
                        }
                    }
                }
                last_threads = Some(threads);
            }
            _ => {}
        }
    }
    episodes
}

/// The section, or `None` when the trace was not recorded with `--waits`.
pub fn section(
    events: &[TimedEvent<'_>],
    samples: &[StackSample],
    gcs: &[Gc],
    names: &Names,
    threads: &ThreadNames,
    filter: &Filter,
    interval_ns: u64,
) -> Option<WaitsSection> {
    let mut config = None;
    for e in events {
        if let Event::WaitConfig {
            wait_handles,
            error,
            ..
        } = &e.event
        {
            config = Some((*wait_handles, error.to_string()));
        }
    }
    let (wait_handles, error) = config?;
    let mut out = WaitsSection::default();
    if !error.is_empty() {
        out.notes.push(format!("no wait events: {error}"));
    }
    if !wait_handles && error.is_empty() {
        out.notes
            .push("wait handles: the runtime raises no wait-handle events before .NET 9".into());
    }
    let keep = |ns: u64, os_tid: u64| filter.keeps_time(ns) && filter.keeps_thread(os_tid, threads);
    let mut app_cache = HashMap::new();
    let mut pool_cache = HashMap::new();

    // Managed thread id → OS thread id, and the OS ids seen, to find the owner.
    let mut os_of: HashMap<u64, u64> = HashMap::new();
    let mut known_os: HashSet<u64> = HashSet::new();
    for e in events {
        if let Event::ThreadAssigned { thread, os_tid } = e.event {
            os_of.insert(thread, os_tid);
            known_os.insert(os_tid);
        }
    }
    let mut by_thread: HashMap<u64, Vec<&StackSample>> = HashMap::new();
    for s in samples {
        known_os.insert(s.os_tid);
        by_thread.entry(s.os_tid).or_default().push(s);
    }
    let owner_os = |owner: u64| -> Option<u64> {
        if owner == 0 {
            None
        } else if known_os.contains(&owner) {
            Some(owner)
        } else {
            os_of.get(&owner).copied()
        }
    };

    // Locks and wait handles.
    struct LockAcc {
        count: u64,
        wait_ns: u64,
        max: u64,
        waiters: BTreeMap<String, (u64, u64)>,
        owners: BTreeMap<String, (u64, u64)>,
    }
    let mut locks: BTreeMap<String, LockAcc> = BTreeMap::new();
    let mut lock_kind: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    let mut handle_kind: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    let (mut handle_count, mut handle_ns) = (0u64, 0u64);
    // Pool threads' wait-handle waits: (start, end, function).
    let mut pool_handle_waits: Vec<(u64, u64, String)> = Vec::new();
    // Each thread's lock waits' start times: an owner holds the lock at most until it
    // queues for it again.
    let mut lock_starts: HashMap<u64, Vec<u64>> = HashMap::new();
    for e in events {
        if let Event::WaitStart {
            kind: WAIT_LOCK, ..
        } = e.event
        {
            lock_starts.entry(e.os_tid).or_default().push(e.ns);
        }
    }
    // The owners' stacks taken on demand, by (waiter's managed thread, lock).
    type Taken<'e> = Vec<(u64, &'e [u64])>;
    let mut owner_stacks: HashMap<(u64, u64), Taken<'_>> = HashMap::new();
    for e in events {
        match &e.event {
            Event::WaitOwnerStack {
                thread,
                lock,
                frames,
                ..
            } => owner_stacks
                .entry((*thread, *lock))
                .or_default()
                .push((e.ns, frames)),
            Event::WaitOwnerStats {
                requested,
                taken,
                owner_unknown,
                owner_exited,
                queue_full,
                walk_failed,
                no_sampler,
            } => {
                out.contention.owner_stacks = Some(OwnerStacks {
                    requested: *requested,
                    taken: *taken,
                    owner_unknown: *owner_unknown,
                    owner_exited: *owner_exited,
                    queue_full: *queue_full,
                    walk_failed: *walk_failed,
                    no_sampler: *no_sampler,
                })
            }
            _ => {}
        }
    }
    let mut open: HashMap<(u64, u8), Open> = HashMap::new();
    let mut nested: HashSet<u64> = HashSet::new();
    for e in events {
        match &e.event {
            Event::WaitStart {
                thread,
                kind,
                lock,
                owner,
                class,
                frames,
                ..
            } => {
                // A contended monitor may block in a wait the runtime reports as a
                // wait-handle wait too (.NET 9 and 10): it is the lock's wait, counted once.
                if *kind == WAIT_HANDLE && open.contains_key(&(e.os_tid, WAIT_LOCK)) {
                    nested.insert(e.os_tid);
                    continue;
                }
                open.insert(
                    (e.os_tid, *kind),
                    Open {
                        ns: e.ns,
                        thread: *thread,
                        lock: *lock,
                        owner: *owner,
                        class: *class,
                        function: app_frame(frames, names, &mut app_cache)
                            .or_else(|| frames.first().copied()),
                        pool: on_pool(frames, names, &mut pool_cache),
                    },
                );
            }
            Event::WaitStop {
                kind, duration_ns, ..
            } => {
                if *kind == WAIT_HANDLE && nested.remove(&e.os_tid) {
                    continue;
                }
                let Some(o) = open.remove(&(e.os_tid, *kind)) else {
                    continue;
                };
                if !keep(o.ns, e.os_tid) {
                    continue;
                }
                let ns = if *duration_ns > 0 {
                    *duration_ns
                } else {
                    e.ns.saturating_sub(o.ns)
                };
                let function = o
                    .function
                    .map_or_else(|| "[no managed frame]".to_string(), |f| names.function(f));
                if *kind == WAIT_LOCK {
                    out.contention.count += 1;
                    out.contention.wait_ns += ns;
                    let type_name = if o.class != 0 {
                        names.class(o.class)
                    } else {
                        format!("[lock {:#x}]", o.lock)
                    };
                    let acc = locks.entry(type_name).or_insert_with(|| LockAcc {
                        count: 0,
                        wait_ns: 0,
                        max: 0,
                        waiters: BTreeMap::new(),
                        owners: BTreeMap::new(),
                    });
                    acc.count += 1;
                    acc.wait_ns += ns;
                    acc.max = acc.max.max(ns);
                    add(&mut acc.waiters, function.clone(), 1, ns);
                    add(&mut lock_kind, function, 1, ns);
                    let mut end = o.ns.saturating_add(ns);
                    // First the owner's stack taken as the wait began: the first of this
                    // waiter's for this lock taken during the wait.
                    let on_demand = owner_stacks.get(&(o.thread, o.lock)).and_then(|l| {
                        l.iter()
                            .find(|(at, _)| *at >= o.ns && *at <= end)
                            .and_then(|(_, f)| app_frame(f, names, &mut app_cache))
                    });
                    if let Some(f) = on_demand {
                        add(&mut acc.owners, names.function(f), 1, 1);
                        continue;
                    }
                    let mut seen = false;
                    let owner = owner_os(o.owner);
                    if let Some(next) = owner
                        .and_then(|t| lock_starts.get(&t))
                        .and_then(|l| l.get(l.partition_point(|s| *s <= o.ns)))
                    {
                        end = end.min(*next);
                    }
                    if let Some(list) = owner.and_then(|t| by_thread.get(&t)) {
                        let from = list.partition_point(|s| s.ns < o.ns);
                        // The owner's samples while it ran, not those of it waiting
                        // (after it let go, it may queue for the lock itself).
                        for s in list[from..].iter().take_while(|s| s.ns <= end) {
                            if s.wait.is_some() {
                                continue;
                            }
                            if let Some(f) = app_frame(&s.stack, names, &mut app_cache) {
                                add(&mut acc.owners, names.function(f), 1, 0);
                                seen = true;
                            }
                        }
                    }
                    if !seen {
                        out.contention.owner_unknown += 1;
                    }
                } else if *kind == WAIT_HANDLE {
                    handle_count += 1;
                    handle_ns += ns;
                    if o.pool {
                        pool_handle_waits.push((o.ns, o.ns + ns, function.clone()));
                    }
                    add(&mut handle_kind, function, 1, ns);
                }
            }
            _ => {}
        }
    }
    let rows = |m: BTreeMap<String, (u64, u64)>| -> Vec<(String, u64, u64)> {
        let mut v: Vec<(String, u64, u64)> = m.into_iter().map(|(k, (c, n))| (k, c, n)).collect();
        v.sort_by(|a, b| b.2.cmp(&a.2).then(b.1.cmp(&a.1)).then(a.0.cmp(&b.0)));
        v
    };
    out.contention.locks = locks
        .into_iter()
        .map(|(type_name, a)| LockRow {
            type_name,
            count: a.count,
            wait_ns: a.wait_ns,
            max_wait_ns: a.max,
            waiters: rows(a.waiters)
                .into_iter()
                .map(|(function, count, wait_ns)| Waiter {
                    function,
                    count,
                    wait_ns,
                })
                .collect(),
            owners: {
                let mut v: Vec<Owner> = a
                    .owners
                    .into_iter()
                    .map(|(function, (count, on_demand))| Owner {
                        function,
                        count,
                        on_demand,
                        samples: count - on_demand,
                    })
                    .collect();
                v.sort_by(|a, b| b.count.cmp(&a.count).then(a.function.cmp(&b.function)));
                v
            },
        })
        .collect();
    out.contention.locks.sort_by(|a, b| {
        b.wait_ns
            .cmp(&a.wait_ns)
            .then(a.type_name.cmp(&b.type_name))
    });

    // Thread-pool starvation.
    let episodes = starvation_episodes(events, filter);
    out.threadpool.adjustments = events
        .iter()
        .filter(|e| matches!(e.event, Event::ThreadPoolAdjust { .. }))
        .count() as u64;
    let in_episode = |ns: u64| {
        episodes
            .iter()
            .any(|(a, b, _, _)| ns + BLOCKING_LEAD_NS >= *a && ns <= *b)
    };
    let mut blocking: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for s in samples {
        if s.state == crate::waits::RunState::Running
            || !matches!(
                s.wait,
                Some(WaitKind::Lock | WaitKind::Sleep | WaitKind::Join)
            )
            || !in_episode(s.ns)
            || !keep(s.ns, s.os_tid)
            || !on_pool(&s.stack, names, &mut pool_cache)
        {
            continue;
        }
        if let Some(f) = app_frame(&s.stack, names, &mut app_cache) {
            add(
                &mut blocking,
                names.function(f),
                1,
                if wait_handles { 0 } else { interval_ns },
            );
        }
    }
    if wait_handles {
        for (a, b, f) in &pool_handle_waits {
            // The part of the wait inside an episode's window.
            let inside: u64 = episodes
                .iter()
                .map(|(s, e, _, _)| {
                    let lo = (*a).max(s.saturating_sub(BLOCKING_LEAD_NS));
                    let hi = (*b).min(*e);
                    hi.saturating_sub(lo)
                })
                .sum();
            if inside > 0 {
                add(&mut blocking, f.clone(), 0, inside);
            }
        }
    }
    out.threadpool.blocking = rows(blocking)
        .into_iter()
        .filter(|(_, samples, _)| *samples > 0)
        .map(|(function, samples, wait_ns)| Blocking {
            function,
            wait_ns,
            samples,
        })
        .collect();
    out.threadpool
        .blocking
        .sort_by(|a, b| b.samples.cmp(&a.samples).then(b.wait_ns.cmp(&a.wait_ns)));
    out.threadpool.starvation = episodes
        .iter()
        .map(|(a, b, before, after)| Episode {
            at_ns: *a,
            duration_ns: b - a,
            threads_before: *before,
            threads_after: *after,
        })
        .collect();

    // Waits by kind.
    let named = |m: BTreeMap<String, (u64, u64)>| -> Vec<NamedWait> {
        rows(m)
            .into_iter()
            .map(|(name, _, wait_ns)| NamedWait { name, wait_ns })
            .collect()
    };
    out.kinds.push(KindRow {
        kind: "lock",
        wait_ns: out.contention.wait_ns,
        count: out.contention.count,
        functions: named(lock_kind),
    });
    if wait_handles {
        out.kinds.push(KindRow {
            kind: "wait_handle",
            wait_ns: handle_ns,
            count: handle_count,
            functions: named(handle_kind),
        });
    }
    for (kind, name) in [(WaitKind::Sleep, "sleep"), (WaitKind::Join, "join")] {
        let mut m = BTreeMap::new();
        let mut count = 0;
        for s in samples {
            if s.state == crate::waits::RunState::Running
                || s.wait != Some(kind)
                || !keep(s.ns, s.os_tid)
            {
                continue;
            }
            count += 1;
            let f = app_frame(&s.stack, names, &mut app_cache)
                .map_or_else(|| "[no app frame]".to_string(), |f| names.function(f));
            add(&mut m, f, 1, interval_ns);
        }
        out.kinds.push(KindRow {
            kind: name,
            wait_ns: count * interval_ns,
            count,
            functions: named(m),
        });
    }
    let starving_ns: u64 = out
        .threadpool
        .starvation
        .iter()
        .map(|e| e.duration_ns)
        .sum();
    out.kinds.push(KindRow {
        kind: "threadpool_starvation",
        wait_ns: starving_ns,
        count: out.threadpool.starvation.len() as u64,
        functions: out
            .threadpool
            .blocking
            .iter()
            .map(|b| NamedWait {
                name: b.function.clone(),
                wait_ns: b.wait_ns,
            })
            .collect(),
    });
    let paused: Vec<&Gc> = gcs
        .iter()
        .filter(|g| g.pause_ns > 0 && filter.keeps_time(g.start_ns))
        .collect();
    out.kinds.push(KindRow {
        kind: "gc",
        wait_ns: paused.iter().map(|g| g.pause_ns).sum(),
        count: paused.len() as u64,
        functions: Vec::new(),
    });
    Some(out)
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::*;
    use crate::report::tests::{at, names};

    fn sample(ns: u64, os_tid: u64, stack: &[u64], wait: Option<WaitKind>) -> StackSample {
        StackSample {
            ns,
            os_tid,
            cpu_ns: 0,
            state: crate::waits::RunState::from_record(u8::from(wait.is_none())),
            stack: stack.to_vec(),
            positions: Vec::new(),
            wait,
            activity: None,
        }
    }

    #[test]
    fn pairs_waits_names_owners_and_finds_starvation() {
        const MS: u64 = 1_000_000;
        let mut n = names(&[
            (1, "App.TakeLedger"),
            (2, "App.HoldLedger"),
            (3, "App.Block"),
            (
                4,
                "System.Threading.PortableThreadPool+WorkerThread.WorkerThreadStart",
            ),
        ]);
        n.classes.insert(5, "App.Ledger".into());
        let lock_start = |ns, tid, owner| {
            at(
                ns,
                tid,
                Event::WaitStart {
                    thread: tid * 100,
                    kind: WAIT_LOCK,
                    source: 0,
                    lock: 0x50,
                    object: 0x7e00,
                    owner,
                    class: 5,
                    frames: Cow::Owned(vec![1]),
                },
            )
        };
        let stop = |ns, tid, kind, duration_ns| {
            at(
                ns,
                tid,
                Event::WaitStop {
                    thread: tid * 100,
                    kind,
                    duration_ns,
                },
            )
        };
        let events = vec![
            at(
                0,
                1,
                Event::WaitConfig {
                    keywords: 0x400_0001_4000,
                    wait_handles: true,
                    error: Cow::Borrowed(""),
                },
            ),
            lock_start(10 * MS, 10, 11),
            // The monitor's own wait inside the lock's: not a second wait.
            at(
                10 * MS,
                10,
                Event::WaitStart {
                    thread: 1000,
                    kind: WAIT_HANDLE,
                    source: 1,
                    lock: 0,
                    object: 0,
                    owner: 0,
                    class: 0,
                    frames: Cow::Owned(vec![1]),
                },
            ),
            stop(29 * MS, 10, WAIT_HANDLE, 0),
            stop(30 * MS, 10, WAIT_LOCK, 20 * MS),
            // The owner queues again at 25 ms: its later samples are not holding.
            lock_start(25 * MS, 11, 10),
            stop(40 * MS, 11, WAIT_LOCK, 15 * MS),
            at(
                900 * MS,
                1,
                Event::ThreadPoolWorker {
                    started: true,
                    active: 2,
                    retired: 0,
                },
            ),
            at(
                1000 * MS,
                1,
                Event::ThreadPoolAdjust {
                    threads: 3,
                    reason: 8,
                    throughput_milli: 0,
                },
            ),
            at(
                1200 * MS,
                1,
                Event::ThreadPoolAdjust {
                    threads: 5,
                    reason: 8,
                    throughput_milli: 0,
                },
            ),
            at(
                1300 * MS,
                1,
                Event::ThreadPoolAdjust {
                    threads: 4,
                    reason: 8,
                    throughput_milli: 0,
                },
            ),
            at(
                9000 * MS,
                1,
                Event::ThreadPoolAdjust {
                    threads: 2,
                    reason: 3,
                    throughput_milli: 0,
                },
            ),
        ];
        let samples = vec![
            sample(15 * MS, 11, &[2, 1], None),
            sample(20 * MS, 11, &[2, 1], None),
            sample(27 * MS, 11, &[1], None),
            sample(1100 * MS, 12, &[3, 4], Some(WaitKind::Lock)),
            sample(1110 * MS, 13, &[3, 4], Some(WaitKind::Lock)),
            // Not a pool thread.
            sample(1110 * MS, 14, &[3], Some(WaitKind::Lock)),
        ];
        let threads = ThreadNames::collect(&events);
        let w = section(
            &events,
            &samples,
            &[],
            &n,
            &threads,
            &Filter::default(),
            10 * MS,
        )
        .unwrap();
        let c = &w.contention;
        assert_eq!((c.count, c.wait_ns), (2, 35 * MS));
        let l = &c.locks[0];
        assert_eq!(l.type_name, "App.Ledger");
        assert_eq!((l.count, l.max_wait_ns), (2, 20 * MS));
        assert_eq!(l.waiters[0].function, "App.TakeLedger");
        assert_eq!(l.owners.len(), 1, "{:?}", l.owners);
        assert_eq!(
            (l.owners[0].function.as_str(), l.owners[0].count),
            ("App.HoldLedger", 2)
        );
        let handle = w.kinds.iter().find(|k| k.kind == "wait_handle").unwrap();
        assert_eq!(handle.count, 0);
        let tp = &w.threadpool;
        assert_eq!(tp.starvation.len(), 1);
        let e = &tp.starvation[0];
        assert_eq!(
            (e.at_ns, e.duration_ns, e.threads_before, e.threads_after),
            (1000 * MS, 300 * MS, 2, 5)
        );
        assert_eq!(tp.blocking.len(), 1);
        assert_eq!(
            (tp.blocking[0].function.as_str(), tp.blocking[0].samples),
            ("App.Block", 2)
        );
        assert!(w.notes.is_empty());
        assert_eq!(c.owner_stacks, None);
        // The owner's stack taken on demand as the wait began comes first (here in
        // App.Block, not the HoldLedger of its samples); one taken after the wait ended,
        // or for another lock, is not the owner's then.
        let mut with_stacks = events.clone();
        for (ns, lock) in [(12 * MS, 0x50), (31 * MS, 0x50), (12 * MS, 0x51)] {
            with_stacks.push(at(
                ns,
                99,
                Event::WaitOwnerStack {
                    thread: 1000,
                    lock,
                    owner: 11,
                    frames: Cow::Owned(vec![3, 4]),
                },
            ));
        }
        with_stacks.push(at(
            50 * MS,
            1,
            Event::WaitOwnerStats {
                requested: 2,
                taken: 1,
                owner_unknown: 0,
                owner_exited: 0,
                queue_full: 0,
                walk_failed: 1,
                no_sampler: 0,
            },
        ));
        let w2 = section(
            &with_stacks,
            &samples,
            &[],
            &n,
            &threads,
            &Filter::default(),
            10 * MS,
        )
        .unwrap();
        let c2 = &w2.contention;
        let owners: Vec<(&str, u64, u64, u64)> = c2.locks[0]
            .owners
            .iter()
            .map(|o| (o.function.as_str(), o.count, o.on_demand, o.samples))
            .collect();
        assert_eq!(owners, vec![("App.Block", 1, 1, 0)]);
        // The second wait (thread 11's, owner 10) has neither.
        assert_eq!(c2.owner_unknown, 1);
        assert_eq!(
            c2.owner_stacks.as_ref().map(|s| (s.taken, s.walk_failed)),
            Some((1, 1))
        );
        // A thread filter keeps only that thread's waits.
        let only = Filter {
            thread: Some("11".into()),
            ..Filter::default()
        };
        let w = section(&events, &samples, &[], &n, &threads, &only, 10 * MS).unwrap();
        assert_eq!((w.contention.count, w.contention.wait_ns), (1, 15 * MS));
        // --from: the waits that began from then on.
        let later = Filter {
            from_ns: Some(20 * MS),
            ..Filter::default()
        };
        let w = section(&events, &samples, &[], &n, &threads, &later, 10 * MS).unwrap();
        assert_eq!((w.contention.count, w.contention.wait_ns), (1, 15 * MS));
        // .NET 8: no wait-handle events, said so.
        let mut events8 = events.clone();
        events8[0] = at(
            0,
            1,
            Event::WaitConfig {
                keywords: 0x1_4000,
                wait_handles: false,
                error: Cow::Borrowed(""),
            },
        );
        let w = section(
            &events8,
            &samples,
            &[],
            &n,
            &threads,
            &Filter::default(),
            10 * MS,
        )
        .unwrap();
        assert!(w.kinds.iter().all(|k| k.kind != "wait_handle"));
        assert!(w.notes[0].contains("before .NET 9"), "{:?}", w.notes);
        // Without `--waits`: no section.
        assert!(
            section(
                &events[1..],
                &samples,
                &[],
                &n,
                &threads,
                &Filter::default(),
                1
            )
            .is_none()
        );
    }
}
