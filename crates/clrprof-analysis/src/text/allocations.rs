//! The Allocations section: objects allocated per class, most first.

use std::fmt::Write;

use crate::report::Allocation;

pub fn render(o: &mut String, allocations: &[Allocation], top: usize) {
    if allocations.is_empty() {
        return;
    }
    let _ = writeln!(o, "\nAllocations (objects, by class)");
    for a in allocations.iter().take(top) {
        let _ = writeln!(o, "  {:>10}  {}", a.count, a.class);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_top_classes() {
        let allocations = [
            Allocation {
                class: "A".into(),
                count: 900,
            },
            Allocation {
                class: "B".into(),
                count: 7,
            },
        ];
        let mut o = String::new();
        render(&mut o, &[], 5);
        assert_eq!(o, "");
        render(&mut o, &allocations, 1);
        assert_eq!(o, "\nAllocations (objects, by class)\n         900  A\n");
    }
}
