//! Event groups: named sets of runtime callbacks, each mapped to event-mask bits by the
//! agent (`mask.rs`).

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::Mode;

/// Groups of runtime events.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EventGroup {
    AppDomains,
    Assemblies,
    Modules,
    Classes,
    Jit,
    CacheSearches,
    Threads,
    Exceptions,
    Suspends,
    Gc,
    Alloc,
    Transitions,
    Waits,
}

impl EventGroup {
    pub const ALL: [EventGroup; 13] = [
        EventGroup::AppDomains,
        EventGroup::Assemblies,
        EventGroup::Modules,
        EventGroup::Classes,
        EventGroup::Jit,
        EventGroup::CacheSearches,
        EventGroup::Threads,
        EventGroup::Exceptions,
        EventGroup::Suspends,
        EventGroup::Gc,
        EventGroup::Alloc,
        EventGroup::Transitions,
        EventGroup::Waits,
    ];

    /// On unless asked otherwise (events mode). `alloc` (forces non-concurrent GC) and
    /// `transitions` (a callback per P/Invoke) are opt-in because of their cost; `waits`
    /// (lock contention, thread-pool and wait-handle events through an EventPipe session,
    /// docs/waits.md) is asked for with `record --waits`.
    pub const DEFAULT: [EventGroup; 10] = [
        EventGroup::AppDomains,
        EventGroup::Assemblies,
        EventGroup::Modules,
        EventGroup::Classes,
        EventGroup::Jit,
        EventGroup::CacheSearches,
        EventGroup::Threads,
        EventGroup::Exceptions,
        EventGroup::Suspends,
        EventGroup::Gc,
    ];

    pub fn name(self) -> &'static str {
        match self {
            EventGroup::AppDomains => "appdomains",
            EventGroup::Assemblies => "assemblies",
            EventGroup::Modules => "modules",
            EventGroup::Classes => "classes",
            EventGroup::Jit => "jit",
            EventGroup::CacheSearches => "cache-searches",
            EventGroup::Threads => "threads",
            EventGroup::Exceptions => "exceptions",
            EventGroup::Suspends => "suspends",
            EventGroup::Gc => "gc",
            EventGroup::Alloc => "alloc",
            EventGroup::Transitions => "transitions",
            EventGroup::Waits => "waits",
        }
    }

    pub fn parse(s: &str) -> Option<EventGroup> {
        EventGroup::ALL.into_iter().find(|g| g.name() == s)
    }
}

/// A set of [`EventGroup`]s as a bit set.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub struct EventGroups(u32);

impl EventGroups {
    pub fn of(groups: &[EventGroup]) -> Self {
        let mut set = EventGroups(0);
        for g in groups {
            set.insert(*g);
        }
        set
    }
    pub fn contains(self, g: EventGroup) -> bool {
        self.0 & (1 << g as u32) != 0
    }
    pub fn insert(&mut self, g: EventGroup) {
        self.0 |= 1 << g as u32;
    }
    pub fn remove(&mut self, g: EventGroup) {
        self.0 &= !(1 << g as u32);
    }
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
    pub fn iter(self) -> impl Iterator<Item = EventGroup> {
        EventGroup::ALL
            .into_iter()
            .filter(move |g| self.contains(*g))
    }

    /// The groups on by default in each mode. Sampling and tracing keep what names
    /// threads and functions and what their analyses need, and leave out the per-load
    /// noise.
    pub fn mode_default(mode: Mode) -> EventGroups {
        match mode {
            Mode::Events => EventGroups::of(&EventGroup::DEFAULT),
            Mode::Sample | Mode::Trace => EventGroups::of(&[
                EventGroup::AppDomains,
                EventGroup::Assemblies,
                EventGroup::Modules,
                EventGroup::Threads,
                EventGroup::Exceptions,
                EventGroup::Gc,
            ]),
        }
    }

    /// The names, comma separated (`none` for the empty set): what `parse` reads back.
    pub fn list(self) -> String {
        if self.is_empty() {
            return "none".into();
        }
        self.iter().map(|g| g.name()).collect::<Vec<_>>().join(",")
    }

    /// Reads a comma list of groups: `default` (the mode's), `all`, `none`, a group name,
    /// or `-group` to remove one, applied in order. The error is what is expected.
    pub fn parse(value: &str, mode: Mode) -> Result<EventGroups, String> {
        let value = value.replace("default", &EventGroups::mode_default(mode).list());
        let mut set = EventGroups::default();
        let mut any = false;
        for item in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            any = true;
            let (remove, name) = match item.strip_prefix('-') {
                Some(rest) => (true, rest),
                None => (false, item.strip_prefix('+').unwrap_or(item)),
            };
            let groups: Vec<EventGroup> = match name {
                "all" => EventGroup::ALL.to_vec(),
                "none" => Vec::new(),
                other => match EventGroup::parse(other) {
                    Some(g) => vec![g],
                    None => {
                        let names: Vec<&str> = EventGroup::ALL.iter().map(|g| g.name()).collect();
                        return Err(format!(
                            "default, all, none or groups among {}",
                            names.join(", ")
                        ));
                    }
                },
            };
            for g in groups {
                if remove { set.remove(g) } else { set.insert(g) }
            }
        }
        if !any {
            return Err("at least one group".into());
        }
        Ok(set)
    }
}

impl fmt::Debug for EventGroups {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set()
            .entries(self.iter().map(|g| g.name()))
            .finish()
    }
}

/// In the header: the list of names.
impl Serialize for EventGroups {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter().map(|g| g.name()))
    }
}

/// Names this version does not know (a newer writer's groups) are left out.
impl<'de> Deserialize<'de> for EventGroups {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let names = Vec::<String>::deserialize(d)?;
        let mut set = EventGroups::default();
        for g in names.iter().filter_map(|n| EventGroup::parse(n)) {
            set.insert(g);
        }
        Ok(set)
    }
}
