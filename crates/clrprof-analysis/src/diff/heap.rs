//! `clrprof diff A B`: growth by type between two snapshots.

use std::collections::HashMap;

use serde::Serialize;

use super::delta;
use crate::heap::report::TypeRow;

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct TypeDelta {
    pub name: String,
    pub count_before: u64,
    pub count_after: u64,
    pub count_delta: i64,
    pub bytes_delta: i64,
    pub retained_delta: i64,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct HeapDiff {
    pub objects_delta: i64,
    pub bytes_delta: i64,
    /// Types whose count or bytes changed, largest byte change first.
    pub types: Vec<TypeDelta>,
}

/// Compares two full type histograms (see [`super::report::types`]).
pub fn diff(before: &[TypeRow], after: &[TypeRow]) -> HeapDiff {
    let mut rows: HashMap<&str, (Option<&TypeRow>, Option<&TypeRow>)> = HashMap::new();
    for r in before {
        rows.entry(&r.name).or_default().0 = Some(r);
    }
    for r in after {
        rows.entry(&r.name).or_default().1 = Some(r);
    }
    let zero = TypeRow {
        name: String::new(),
        count: 0,
        shallow_bytes: 0,
        retained_bytes: 0,
    };
    let mut types: Vec<TypeDelta> = rows
        .into_iter()
        .map(|(name, (a, b))| {
            let a = a.unwrap_or(&zero);
            let b = b.unwrap_or(&zero);
            TypeDelta {
                name: name.to_string(),
                count_before: a.count,
                count_after: b.count,
                count_delta: delta(a.count, b.count),
                bytes_delta: delta(a.shallow_bytes, b.shallow_bytes),
                retained_delta: delta(a.retained_bytes, b.retained_bytes),
            }
        })
        .filter(|d| d.count_delta != 0 || d.bytes_delta != 0)
        .collect();
    types.sort_by(|x, y| {
        y.bytes_delta
            .unsigned_abs()
            .cmp(&x.bytes_delta.unsigned_abs())
            .then(x.name.cmp(&y.name))
    });
    HeapDiff {
        objects_delta: delta(
            before.iter().map(|r| r.count).sum(),
            after.iter().map(|r| r.count).sum(),
        ),
        bytes_delta: delta(
            before.iter().map(|r| r.shallow_bytes).sum(),
            after.iter().map(|r| r.shallow_bytes).sum(),
        ),
        types,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, count: u64, bytes: u64) -> TypeRow {
        TypeRow {
            name: name.into(),
            count,
            shallow_bytes: bytes,
            retained_bytes: bytes,
        }
    }

    #[test]
    fn growth_and_shrinkage_by_type() {
        let a = [row("A", 10, 240), row("B", 5, 100), row("C", 1, 8)];
        let b = [row("A", 5, 120), row("B", 5, 100), row("D", 2, 64)];
        let d = diff(&a, &b);
        assert_eq!(d.objects_delta, -4);
        assert_eq!(d.bytes_delta, -64);
        let names: Vec<&str> = d.types.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, vec!["A", "D", "C"]);
        assert_eq!(d.types[0].count_delta, -5);
        assert_eq!(d.types[1].count_before, 0);
        assert_eq!(d.types[1].count_after, 2);
    }
}
