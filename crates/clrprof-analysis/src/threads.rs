//! Who is who: OS thread ids ↔ runtime ThreadIDs ↔ names, from the thread events.
//!
//! A runtime ThreadID is the address of the runtime's thread object, and the runtime
//! reuses it: once a dead thread's object is freed, the next thread created often gets the
//! same ThreadID. So a ThreadID names a thread only for its lifetime, from `ThreadCreated`
//! to `ThreadDestroyed`; everything here is keyed by that lifetime, never by the id alone.

use std::collections::HashMap;

use serde::Serialize;

use clrprof_format::Event;

use crate::timeline::TimedEvent;

#[derive(Debug, Default)]
pub struct ThreadNames {
    by_os: HashMap<u64, String>,
    /// OS names (`thread_os_name` records) of threads without a managed name.
    os_names: HashMap<u64, String>,
    /// Name and OS id of the live thread holding each ThreadID.
    by_managed: HashMap<u64, String>,
    os_of: HashMap<u64, u64>,
}

impl ThreadNames {
    pub fn collect(events: &[TimedEvent<'_>]) -> ThreadNames {
        let mut t = ThreadNames::default();
        for e in events {
            t.add(e);
        }
        t
    }

    /// Takes in what one event says about threads (a live view adds events as they are
    /// read).
    pub fn add(&mut self, e: &TimedEvent<'_>) {
        let t = self;
        match &e.event {
            // The end of the ThreadID's lifetime: forget what its holder was called and
            // which OS thread it ran on. (Not at ThreadCreated: a thread named before
            // `Start` has its name reported before its creation.)
            Event::ThreadDestroyed { thread } => {
                t.by_managed.remove(thread);
                t.os_of.remove(thread);
            }
            Event::ThreadAssigned { thread, os_tid } => {
                t.os_of.insert(*thread, *os_tid);
                if let Some(n) = t.by_managed.get(thread).cloned() {
                    t.by_os.insert(*os_tid, n);
                }
            }
            Event::ThreadName { thread, name } => {
                t.by_managed.insert(*thread, name.to_string());
                if let Some(os) = t.os_of.get(thread) {
                    t.by_os.insert(*os, name.to_string());
                }
            }
            Event::Meta { key, json } if key == "thread_os_name" => {
                if let Ok(v) = serde_json::from_str::<serde_json::Value>(json)
                    && let (Some(tid), Some(name)) = (v["os_tid"].as_u64(), v["name"].as_str())
                {
                    t.os_names
                        .insert(tid, crate::names::full_thread_name(name).to_string());
                }
            }
            Event::Sample { os_tid, thread, .. } if *os_tid != 0 => {
                t.os_of.entry(*thread).or_insert(*os_tid);
                if let Some(n) = t.by_managed.get(thread).cloned() {
                    t.by_os.entry(*os_tid).or_insert(n);
                }
            }
            _ => {}
        }
    }

    /// The thread's name, or `thread <tid>`.
    pub fn name(&self, os_tid: u64) -> String {
        self.named(os_tid)
            .map_or_else(|| format!("thread {os_tid}"), str::to_string)
    }

    /// The managed name, else the OS name the sampler read (the runtime's own threads).
    pub fn named(&self, os_tid: u64) -> Option<&str> {
        self.by_os
            .get(&os_tid)
            .or_else(|| self.os_names.get(&os_tid))
            .map(String::as_str)
    }
}

/// One thread lifetime, as the report lists it.
#[derive(Debug, Serialize, PartialEq)]
pub struct ThreadInfo {
    /// The runtime's ThreadID (opaque, stable for the thread's life; the runtime reuses it
    /// for a later thread, which then gets its own entry).
    pub id: u64,
    pub os_tid: Option<u64>,
    pub name: Option<String>,
    pub created_ns: Option<u64>,
    pub destroyed_ns: Option<u64>,
}

/// The report's thread list: one entry per thread lifetime, in order of first appearance.
/// `ThreadCreated` opens a new entry unless the ThreadID's open entry has not been created
/// yet (events of a thread that started before its creation was recorded, e.g. after an
/// attach, or reordered on the timeline); `ThreadDestroyed` closes it, so whatever comes
/// later for the same ThreadID belongs to the next thread.
#[derive(Debug, Default)]
pub struct ThreadLifetimes {
    threads: Vec<ThreadInfo>,
    /// ThreadID → index in `threads` of its open lifetime.
    open: HashMap<u64, usize>,
    /// OS names the sampler read (`thread_os_name`), for threads never named otherwise.
    os_names: HashMap<u64, String>,
}

impl ThreadLifetimes {
    /// Applies one event; events other than the four thread events are ignored.
    pub fn add(&mut self, ns: u64, event: &Event<'_>) {
        match event {
            Event::ThreadCreated { thread } => {
                let fresh = self
                    .open
                    .get(thread)
                    .is_none_or(|&i| self.threads[i].created_ns.is_some());
                let i = if fresh {
                    self.start(*thread)
                } else {
                    self.open_entry(*thread)
                };
                self.threads[i].created_ns = Some(ns);
            }
            Event::ThreadDestroyed { thread } => {
                let i = self.open_entry(*thread);
                self.threads[i].destroyed_ns = Some(ns);
                self.open.remove(thread);
            }
            Event::ThreadAssigned { thread, os_tid } => {
                let i = self.open_entry(*thread);
                self.threads[i].os_tid = Some(*os_tid);
            }
            Event::ThreadName { thread, name } => {
                let i = self.open_entry(*thread);
                self.threads[i].name = Some(name.to_string());
            }
            Event::Meta { key, json } if key == "thread_os_name" => {
                if let Ok(v) = serde_json::from_str::<serde_json::Value>(json)
                    && let (Some(tid), Some(name)) = (v["os_tid"].as_u64(), v["name"].as_str())
                {
                    self.os_names
                        .insert(tid, crate::names::full_thread_name(name).to_string());
                }
            }
            _ => {}
        }
    }

    pub fn finish(mut self) -> Vec<ThreadInfo> {
        for t in &mut self.threads {
            if t.name.is_none()
                && let Some(n) = t.os_tid.and_then(|tid| self.os_names.get(&tid))
            {
                t.name = Some(n.clone());
            }
        }
        self.threads
    }

    fn open_entry(&mut self, id: u64) -> usize {
        match self.open.get(&id) {
            Some(&i) => i,
            None => self.start(id),
        }
    }

    fn start(&mut self, id: u64) -> usize {
        self.threads.push(ThreadInfo {
            id,
            os_tid: None,
            name: None,
            created_ns: None,
            destroyed_ns: None,
        });
        let i = self.threads.len() - 1;
        self.open.insert(id, i);
        i
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ns: u64, event: Event<'static>) -> TimedEvent<'static> {
        TimedEvent {
            ns,
            os_tid: 0,
            event,
        }
    }

    /// Two threads, one after the other, with the same ThreadID (what the runtime does
    /// once the first thread's object is freed).
    fn reused_id() -> Vec<TimedEvent<'static>> {
        const ID: u64 = 0x5555_0000_1000;
        vec![
            at(10, Event::ThreadCreated { thread: ID }),
            at(
                11,
                Event::ThreadAssigned {
                    thread: ID,
                    os_tid: 101,
                },
            ),
            at(
                12,
                Event::ThreadName {
                    thread: ID,
                    name: "first".into(),
                },
            ),
            at(20, Event::ThreadDestroyed { thread: ID }),
            at(30, Event::ThreadCreated { thread: ID }),
            at(
                31,
                Event::ThreadAssigned {
                    thread: ID,
                    os_tid: 102,
                },
            ),
            at(
                32,
                Event::ThreadName {
                    thread: ID,
                    name: "second".into(),
                },
            ),
            at(40, Event::ThreadDestroyed { thread: ID }),
        ]
    }

    #[test]
    fn a_reused_thread_id_gives_two_threads() {
        let mut lives = ThreadLifetimes::default();
        for e in reused_id() {
            lives.add(e.ns, &e.event);
        }
        let threads = lives.finish();
        let summary: Vec<_> = threads
            .iter()
            .map(|t| (t.os_tid, t.name.as_deref(), t.created_ns, t.destroyed_ns))
            .collect();
        assert_eq!(
            summary,
            [
                (Some(101), Some("first"), Some(10), Some(20)),
                (Some(102), Some("second"), Some(30), Some(40)),
            ]
        );
    }

    #[test]
    fn a_name_set_before_the_thread_starts_is_kept() {
        // `new Thread(…) { Name = "x" }.Start()`: ThreadName, then ThreadCreated.
        const ID: u64 = 0x5555_0000_2000;
        let events = vec![
            at(
                1,
                Event::ThreadName {
                    thread: ID,
                    name: "early".into(),
                },
            ),
            at(2, Event::ThreadCreated { thread: ID }),
            at(
                3,
                Event::ThreadAssigned {
                    thread: ID,
                    os_tid: 200,
                },
            ),
        ];
        assert_eq!(ThreadNames::collect(&events).named(200), Some("early"));
        let mut lives = ThreadLifetimes::default();
        for e in &events {
            lives.add(e.ns, &e.event);
        }
        let threads = lives.finish();
        assert_eq!(threads.len(), 1);
        assert_eq!(threads[0].name.as_deref(), Some("early"));
        assert_eq!(threads[0].os_tid, Some(200));
    }

    #[test]
    fn a_reused_thread_id_does_not_carry_the_old_name() {
        let mut events = reused_id();
        // The second thread is never named.
        events.retain(|e| !matches!(&e.event, Event::ThreadName { name, .. } if name == "second"));
        let names = ThreadNames::collect(&events);
        assert_eq!(names.named(101), Some("first"));
        assert_eq!(names.named(102), None);
    }

    #[test]
    fn events_before_the_creation_join_the_same_thread() {
        // Attach: a thread that already ran is named and assigned before (or without) any
        // ThreadCreated; a later ThreadCreated still belongs to it.
        let mut lives = ThreadLifetimes::default();
        lives.add(
            1,
            &Event::ThreadAssigned {
                thread: 7,
                os_tid: 70,
            },
        );
        lives.add(
            2,
            &Event::ThreadName {
                thread: 7,
                name: "early".into(),
            },
        );
        lives.add(3, &Event::ThreadCreated { thread: 7 });
        lives.add(
            4,
            &Event::ThreadAssigned {
                thread: 8,
                os_tid: 80,
            },
        );
        let threads = lives.finish();
        assert_eq!(threads.len(), 2);
        assert_eq!(threads[0].name.as_deref(), Some("early"));
        assert_eq!(threads[0].created_ns, Some(3));
        assert_eq!(threads[1].os_tid, Some(80));
    }
}
