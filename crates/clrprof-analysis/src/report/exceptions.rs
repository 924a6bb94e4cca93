//! The Exceptions section: how many of each type were thrown, their most frequent
//! messages, and the distinct stacks they were thrown from.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use clrprof_format::Event;

use crate::lines::Lines;
use crate::names::Names;
use crate::timeline::TimedEvent;

/// Messages kept per exception type: the most frequent.
const MESSAGES_PER_TYPE: usize = 10;

/// Distinct messages counted per exception type: a type's first this many; the throws
/// with a message met after them are counted together (`messages_other`), so that a
/// million distinct messages ("item 123456 not found") do not each take memory.
pub const MESSAGES_TRACKED: usize = 1000;

#[derive(Debug, Serialize)]
pub struct ExceptionStack {
    pub type_name: String,
    /// Exceptions thrown from this stack.
    pub count: u64,
    pub frames: Vec<String>,
}

/// What [`Exceptions::finish`] found.
#[derive(Debug, Default)]
pub struct ExceptionsSection {
    /// Exception type → number thrown.
    pub by_type: BTreeMap<String, u64>,
    /// Per exception type, its most frequent messages.
    pub messages: BTreeMap<String, BTreeMap<String, u64>>,
    /// Per exception type, the throws whose message was not counted one by one (it came
    /// after [`MESSAGES_TRACKED`] distinct others); types without such throws are absent.
    pub messages_other: BTreeMap<String, u64>,
    /// Distinct throw stacks, most thrown from first.
    pub stacks: Vec<ExceptionStack>,
}

#[derive(Debug, Default)]
pub struct Exceptions {
    by_type: BTreeMap<String, u64>,
    messages: BTreeMap<String, BTreeMap<String, u64>>,
    messages_other: BTreeMap<String, u64>,
    /// (type, frame ids, positions) → count: a million throws from one place are one
    /// entry. Positions are empty until the stack's `ExceptionPositions` says them.
    stacks: HashMap<StackKey, u64>,
    /// Per OS thread, the type of its last exception thrown: an `ExceptionStack` follows
    /// its `ExceptionThrown` on the same thread.
    last_thrown: HashMap<u64, String>,
    /// Per OS thread, the key its last `ExceptionStack` was counted under: an
    /// `ExceptionPositions` right after it moves that count to the key with positions.
    last_stack: HashMap<u64, StackKey>,
}

type StackKey = (String, Vec<u64>, Vec<u64>);

impl Exceptions {
    pub fn observe(&mut self, e: &TimedEvent<'_>) {
        match &e.event {
            Event::ExceptionStack { frames } => {
                let ty = self.last_thrown.get(&e.os_tid).cloned().unwrap_or_default();
                let key = (ty, frames.to_vec(), Vec::new());
                *self.stacks.entry(key.clone()).or_default() += 1;
                self.last_stack.insert(e.os_tid, key);
            }
            Event::ExceptionPositions { positions } => {
                let Some(key) = self.last_stack.remove(&e.os_tid) else {
                    return;
                };
                if positions.len() != key.1.len() {
                    return;
                }
                if let Some(n) = self.stacks.get_mut(&key) {
                    *n -= 1;
                    if *n == 0 {
                        self.stacks.remove(&key);
                    }
                }
                let (ty, frames, _) = key;
                *self
                    .stacks
                    .entry((ty, frames, positions.to_vec()))
                    .or_default() += 1;
            }
            Event::ExceptionThrown {
                type_name, message, ..
            } => {
                self.last_thrown.insert(e.os_tid, type_name.to_string());
                let ty = if type_name.is_empty() {
                    "(unknown type)".to_string()
                } else {
                    type_name.to_string()
                };
                *self.by_type.entry(ty.clone()).or_default() += 1;
                let messages = self.messages.entry(ty.clone()).or_default();
                if let Some(n) = messages.get_mut(message.as_ref()) {
                    *n += 1;
                } else if messages.len() < MESSAGES_TRACKED {
                    messages.insert(message.to_string(), 1);
                } else {
                    *self.messages_other.entry(ty).or_default() += 1;
                }
            }
            _ => {}
        }
    }

    /// The section; a frame whose line is known (from the trace's own line table, or
    /// through `lines` from the module's PDB) is shown as `Method (File.cs:42)`.
    pub fn finish(self, names: &Names, mut lines: Option<&mut Lines>) -> ExceptionsSection {
        let mut messages = self.messages;
        for m in messages.values_mut() {
            if m.len() > MESSAGES_PER_TYPE {
                let mut v: Vec<(String, u64)> = std::mem::take(m).into_iter().collect();
                v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
                v.truncate(MESSAGES_PER_TYPE);
                *m = v.into_iter().collect();
            }
        }
        // Stacks that differ only in positions the lines do not tell apart are one.
        let mut merged: HashMap<(String, Vec<String>), u64> = HashMap::new();
        for ((type_name, frames, positions), count) in self.stacks {
            let shown = frames
                .iter()
                .enumerate()
                .map(|(i, &f)| {
                    let name = names.frame_name(f);
                    let line = positions
                        .get(i)
                        .filter(|&&item| item != 0)
                        .and_then(|&item| match lines.as_deref_mut() {
                            Some(l) => l.line(names, f, item),
                            None => crate::lines::traced_line(names, f, item),
                        });
                    match line {
                        Some(l) => format!("{name} ({l})"),
                        None => name,
                    }
                })
                .collect();
            *merged.entry((type_name, shown)).or_default() += count;
        }
        let mut stacks: Vec<ExceptionStack> = merged
            .into_iter()
            .map(|((type_name, frames), count)| ExceptionStack {
                type_name,
                count,
                frames,
            })
            .collect();
        stacks.sort_by(|a, b| {
            b.count
                .cmp(&a.count)
                .then_with(|| a.type_name.cmp(&b.type_name))
                .then_with(|| a.frames.cmp(&b.frames))
        });
        ExceptionsSection {
            by_type: self.by_type,
            messages,
            messages_other: self.messages_other,
            stacks,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::{at, names};
    use std::borrow::Cow;

    fn thrown(os_tid: u64, type_name: &'static str, message: String) -> TimedEvent<'static> {
        at(
            0,
            os_tid,
            Event::ExceptionThrown {
                object: 0,
                class: 0,
                type_name: type_name.into(),
                message: message.into(),
            },
        )
    }

    fn stack(os_tid: u64, frames: &[u64]) -> TimedEvent<'static> {
        at(
            0,
            os_tid,
            Event::ExceptionStack {
                frames: Cow::Owned(frames.to_vec()),
            },
        )
    }

    #[test]
    fn types_messages_and_stacks() {
        let mut x = Exceptions::default();
        for e in [
            thrown(1, "E", "m".into()),
            stack(1, &[1, 2]),
            thrown(2, "", String::new()),
            thrown(1, "E", "m".into()),
            // Thread 2's stack follows thread 1's throw: it is thread 2's exception's.
            stack(2, &[2]),
            stack(1, &[1, 2]),
        ] {
            x.observe(&e);
        }
        let s = x.finish(&names(&[(1, "A"), (2, "Main")]), None);
        assert_eq!(
            s.by_type.into_iter().collect::<Vec<_>>(),
            [("(unknown type)".to_string(), 1), ("E".to_string(), 2)]
        );
        assert_eq!(s.messages["E"]["m"], 2);
        assert_eq!(s.messages["(unknown type)"][""], 1);
        let stacks: Vec<_> = s
            .stacks
            .iter()
            .map(|st| (st.type_name.as_str(), st.count, st.frames.join(" < ")))
            .collect();
        // The stack of an unnamed type keeps the empty name.
        assert_eq!(
            stacks,
            [("E", 2, "A < Main".into()), ("", 1, "Main".into())]
        );
    }

    #[test]
    fn only_the_ten_most_frequent_messages_are_kept() {
        let mut x = Exceptions::default();
        for i in 0..12u64 {
            for _ in 0..=i % 3 {
                x.observe(&thrown(1, "E", format!("m{i:02}")));
            }
        }
        let s = x.finish(&Names::default(), None);
        let kept: Vec<&str> = s.messages["E"].keys().map(String::as_str).collect();
        // Counts 3 (m02 m05 m08 m11), 2 (m01 m04 m07 m10), then 1 by name (m00 m03).
        assert_eq!(
            kept,
            [
                "m00", "m01", "m02", "m03", "m04", "m05", "m07", "m08", "m10", "m11"
            ]
        );
        assert_eq!(s.by_type["E"], 24);
    }

    #[test]
    fn messages_past_the_tracked_ones_are_counted_together() {
        let mut x = Exceptions::default();
        for i in 0..MESSAGES_TRACKED + 500 {
            x.observe(&thrown(1, "E", format!("item {i} not found")));
        }
        // A message counted before the bound keeps being counted after it.
        for _ in 0..3 {
            x.observe(&thrown(1, "E", "item 7 not found".into()));
        }
        x.observe(&thrown(1, "F", "other type".into()));
        let s = x.finish(&Names::default(), None);
        assert_eq!(s.by_type["E"], MESSAGES_TRACKED as u64 + 503);
        assert_eq!(s.messages["E"]["item 7 not found"], 4);
        assert_eq!(s.messages["E"].len(), MESSAGES_PER_TYPE);
        assert_eq!(
            s.messages_other.into_iter().collect::<Vec<_>>(),
            [("E".to_string(), 500)]
        );
        assert_eq!(s.messages["F"]["other type"], 1);
    }
}
