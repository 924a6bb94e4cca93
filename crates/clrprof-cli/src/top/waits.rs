//! `top --waits`: the waits of the last `window` seconds that the runtime reported
//! (`record --waits`, docs/waits.md): per lock object type (or `wait handle`), how many
//! waits ended in the window, the time waited per second, and the app method that waited
//! most. Bounded: at most [`MAX_WAITS`] ended waits are kept; more in one window are
//! counted as dropped.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::time::{Duration, Instant};

use clrprof_analysis::names::Names;
use clrprof_analysis::names::is_app_frame;
use clrprof_analysis::timeline::TimedEvent;
use clrprof_format::{Event, WAIT_HANDLE, WAIT_LOCK};

/// Ended waits kept at most.
const MAX_WAITS: usize = 100_000;

/// A wait begun and not ended yet: its stack, class, LockID and start (ns).
struct Open {
    frames: Vec<u64>,
    class: u64,
    lock_id: u64,
    start: u64,
}

struct Ended {
    at: Instant,
    lock: bool,
    class: u64,
    lock_id: u64,
    frames: Vec<u64>,
    wait_ns: u64,
}

/// One row of the view.
#[derive(Debug, Clone, PartialEq)]
pub struct WaitRow {
    /// The lock object's type, `[lock 0x…]`, or `wait handle`.
    pub what: String,
    pub waits: u64,
    /// Nanoseconds waited per second of the window (1e9 = one thread waiting all along).
    pub ns_per_s: f64,
    /// The app method that waited most for it.
    pub waiter: String,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct WaitView {
    pub rows: Vec<WaitRow>,
    pub dropped: u64,
    /// The agent could not open its sessions, and why.
    pub unavailable: Option<String>,
}

#[derive(Default)]
pub struct WaitWindow {
    on: bool,
    open: HashMap<(u64, u8), Open>,
    nested: HashSet<u64>,
    ended: VecDeque<Ended>,
    dropped: u64,
    unavailable: Option<String>,
}

impl WaitWindow {
    /// Takes the wait records (true), leaves the others.
    pub fn observe(&mut self, e: &TimedEvent<'_>, now: Instant) -> bool {
        match &e.event {
            Event::WaitConfig { error, .. } => {
                self.on = true;
                self.unavailable = (!error.is_empty()).then(|| error.to_string());
            }
            Event::WaitStart {
                kind,
                lock,
                class,
                frames,
                ..
            } => {
                if *kind == WAIT_HANDLE && self.open.contains_key(&(e.os_tid, WAIT_LOCK)) {
                    self.nested.insert(e.os_tid);
                } else {
                    self.open.insert(
                        (e.os_tid, *kind),
                        Open {
                            frames: frames.to_vec(),
                            class: *class,
                            lock_id: *lock,
                            start: e.ns,
                        },
                    );
                }
            }
            Event::WaitStop {
                kind, duration_ns, ..
            } => {
                if *kind == WAIT_HANDLE && self.nested.remove(&e.os_tid) {
                    return true;
                }
                if let Some(o) = self.open.remove(&(e.os_tid, *kind)) {
                    if self.ended.len() >= MAX_WAITS {
                        self.dropped += 1;
                        return true;
                    }
                    self.ended.push_back(Ended {
                        at: now,
                        lock: *kind == WAIT_LOCK,
                        class: o.class,
                        lock_id: o.lock_id,
                        frames: o.frames,
                        wait_ns: if *duration_ns > 0 {
                            *duration_ns
                        } else {
                            e.ns.saturating_sub(o.start)
                        },
                    });
                }
            }
            _ => return false,
        }
        true
    }

    /// Forgets the waits that ended more than `length` ago.
    pub fn close(&mut self, now: Instant, length: Duration) {
        while self
            .ended
            .front()
            .is_some_and(|w| now.duration_since(w.at) > length)
        {
            self.ended.pop_front();
        }
    }

    /// The rows over the last `span` seconds, most time waited first; `None` unless the
    /// target records waits.
    pub fn view(&self, span: f64, names: &Names) -> Option<WaitView> {
        if !self.on {
            return None;
        }
        let mut per: BTreeMap<String, (u64, u64, BTreeMap<String, u64>)> = BTreeMap::new();
        let mut app: HashMap<u64, bool> = HashMap::new();
        for w in &self.ended {
            let what = if !w.lock {
                "wait handle".to_string()
            } else if w.class != 0 {
                names.class(w.class)
            } else {
                format!("[lock {:#x}]", w.lock_id)
            };
            let waiter = w
                .frames
                .iter()
                .find(|f| *app.entry(**f).or_insert_with(|| is_app_frame(names, **f)))
                .or(w.frames.first())
                .map_or_else(|| "[no managed frame]".to_string(), |f| names.function(*f));
            let e = per.entry(what).or_default();
            e.0 += 1;
            e.1 += w.wait_ns;
            *e.2.entry(waiter).or_default() += w.wait_ns;
        }
        let mut rows: Vec<WaitRow> = per
            .into_iter()
            .map(|(what, (waits, ns, by))| WaitRow {
                what,
                waits,
                ns_per_s: ns as f64 / span.max(1e-3),
                waiter: by
                    .into_iter()
                    .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
                    .map(|(f, _)| f)
                    .unwrap_or_default(),
            })
            .collect();
        rows.sort_by(|a, b| b.ns_per_s.total_cmp(&a.ns_per_s).then(a.what.cmp(&b.what)));
        Some(WaitView {
            rows,
            dropped: self.dropped,
            unavailable: self.unavailable.clone(),
        })
    }
}
