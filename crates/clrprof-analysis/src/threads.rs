//! Who is who: OS thread ids ↔ runtime ThreadIDs ↔ names, from the thread events.

use std::collections::HashMap;

use clrprof_format::Event;

use crate::timeline::TimedEvent;

#[derive(Debug, Default)]
pub struct ThreadNames {
    by_os: HashMap<u64, String>,
    by_managed: HashMap<u64, String>,
    os_of: HashMap<u64, u64>,
}

impl ThreadNames {
    pub fn collect(events: &[TimedEvent<'_>]) -> ThreadNames {
        let mut t = ThreadNames::default();
        for e in events {
            match &e.event {
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
                Event::Sample { os_tid, thread, .. } if *os_tid != 0 => {
                    t.os_of.entry(*thread).or_insert(*os_tid);
                    if let Some(n) = t.by_managed.get(thread).cloned() {
                        t.by_os.entry(*os_tid).or_insert(n);
                    }
                }
                _ => {}
            }
        }
        t
    }

    /// The thread's name, or `thread <tid>`.
    pub fn name(&self, os_tid: u64) -> String {
        self.by_os
            .get(&os_tid)
            .cloned()
            .unwrap_or_else(|| format!("thread {os_tid}"))
    }

    pub fn named(&self, os_tid: u64) -> Option<&str> {
        self.by_os.get(&os_tid).map(String::as_str)
    }
}
