//! The Allocations section: objects allocated per class (the `alloc` event group).

use std::collections::HashMap;

use serde::Serialize;

use clrprof_format::Event;

use crate::names::Names;

#[derive(Debug, Serialize)]
pub struct Allocation {
    pub class: String,
    pub count: u64,
}

#[derive(Debug, Default)]
pub struct Allocations {
    /// Class id → objects allocated.
    by_class: HashMap<u64, u64>,
}

impl Allocations {
    pub fn observe(&mut self, event: &Event<'_>) {
        if let Event::Allocations { class, count } = event {
            *self.by_class.entry(*class).or_default() += count;
        }
    }

    /// Per class, most allocated first.
    pub fn finish(self, names: &Names) -> Vec<Allocation> {
        let mut v: Vec<Allocation> = self
            .by_class
            .into_iter()
            .map(|(class, count)| Allocation {
                class: names.class(class),
                count,
            })
            .collect();
        v.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.class.cmp(&b.class)));
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summed_per_class_most_first() {
        let mut a = Allocations::default();
        for (class, count) in [(1, 5), (2, 7), (1, 4), (3, 9)] {
            a.observe(&Event::Allocations { class, count });
        }
        let mut names = Names::default();
        names.classes.insert(1, "One".into());
        names.classes.insert(3, "Three".into());
        let v: Vec<_> = a
            .finish(&names)
            .into_iter()
            .map(|a| (a.class, a.count))
            .collect();
        assert_eq!(
            v,
            [
                ("One".to_string(), 9),
                ("Three".to_string(), 9),
                ("class@0x2".to_string(), 7)
            ]
        );
    }
}
