//! The Exceptions section: the types thrown most, each with its most frequent messages.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::units::truncate;

/// Messages shown per type.
const MESSAGES: usize = 3;

pub fn render(
    o: &mut String,
    by_type: &BTreeMap<String, u64>,
    messages: &BTreeMap<String, BTreeMap<String, u64>>,
    other: &BTreeMap<String, u64>,
    top: usize,
) {
    if by_type.is_empty() {
        return;
    }
    let _ = writeln!(o, "\nExceptions (by type)");
    let mut v: Vec<(&String, &u64)> = by_type.iter().collect();
    v.sort_by(|a, b| b.1.cmp(a.1).then_with(|| a.0.cmp(b.0)));
    for (ty, n) in v.into_iter().take(top) {
        let _ = writeln!(o, "  {n:>8}  {ty}");
        if let Some(msgs) = messages.get(ty) {
            let mut m: Vec<(&String, &u64)> = msgs.iter().collect();
            m.sort_by(|a, b| b.1.cmp(a.1).then_with(|| a.0.cmp(b.0)));
            for (msg, k) in m.into_iter().take(MESSAGES).filter(|(m, _)| !m.is_empty()) {
                let _ = writeln!(o, "            {k:>6} × \"{}\"", truncate(msg, 80));
            }
        }
        if let Some(k) = other.get(ty) {
            let _ = writeln!(
                o,
                "            {k:>6} × (messages past the first {} distinct, not counted one by one)",
                crate::report::MESSAGES_TRACKED
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn most_thrown_first_with_their_messages() {
        let by_type = BTreeMap::from([("A".to_string(), 2), ("B".to_string(), 5)]);
        let messages = BTreeMap::from([
            (
                "B".to_string(),
                BTreeMap::from([
                    ("one".to_string(), 1),
                    ("".to_string(), 2),
                    ("two".to_string(), 2),
                    ("three".to_string(), 1),
                ]),
            ),
            ("A".to_string(), BTreeMap::from([("x".repeat(90), 2)])),
        ]);
        let mut o = String::new();
        render(&mut o, &BTreeMap::new(), &messages, &BTreeMap::new(), 10);
        assert_eq!(o, "");
        render(
            &mut o,
            &by_type,
            &messages,
            &BTreeMap::from([("A".to_string(), 7)]),
            10,
        );
        // B's top three messages are "", "two", "one"; the empty one is not shown.
        let expected = format!(
            "\nExceptions (by type)\n\
             \x20        5  B\n\
             \x20                2 × \"two\"\n\
             \x20                1 × \"one\"\n\
             \x20        2  A\n\
             \x20                2 × \"{}…\"\n\
             \x20                7 × (messages past the first 1000 distinct, not counted one by one)\n",
            "x".repeat(79)
        );
        assert_eq!(o, expected);
        let mut o = String::new();
        render(&mut o, &by_type, &BTreeMap::new(), &BTreeMap::new(), 1);
        assert_eq!(o, "\nExceptions (by type)\n         5  B\n");
    }
}
