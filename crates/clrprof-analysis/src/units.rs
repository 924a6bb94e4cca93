//! Numbers with units a person reads at a glance, and names cut to fit a line. A leaf:
//! the text renderers, `invocations` and the diffs use it.

/// Formats nanoseconds with a unit a person reads at a glance.
pub fn ns(v: u64) -> String {
    match v {
        0..=9_999 => format!("{v} ns"),
        10_000..=9_999_999 => format!("{:.1} µs", v as f64 / 1e3),
        10_000_000..=9_999_999_999 => format!("{:.1} ms", v as f64 / 1e6),
        _ => format!("{:.2} s", v as f64 / 1e9),
    }
}

/// Formats a byte count.
pub fn bytes(v: u64) -> String {
    match v {
        0..=9_999 => format!("{v} B"),
        10_000..=9_999_999 => format!("{:.1} KiB", v as f64 / 1024.0),
        10_000_000..=9_999_999_999 => format!("{:.1} MiB", v as f64 / 1048576.0),
        _ => format!("{:.2} GiB", v as f64 / 1073741824.0),
    }
}

/// Formats a byte count as the heap report gives it: B, then KB and MB (of 1024) from
/// ten of each.
pub fn mb(bytes: u64) -> String {
    if bytes >= 10 << 20 {
        format!("{:.1} MB", bytes as f64 / (1 << 20) as f64)
    } else if bytes >= 10 << 10 {
        format!("{:.1} KB", bytes as f64 / 1024.0)
    } else {
        format!("{bytes} B")
    }
}

/// `s`, cut to `max` characters with `…` as the last when longer.
pub(crate) fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max - 1).collect();
        t.push('…');
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(ns(950), "950 ns");
        assert_eq!(ns(12_345), "12.3 µs");
        assert_eq!(ns(25_000_000), "25.0 ms");
        assert_eq!(ns(12_000_000_000), "12.00 s");
        assert_eq!(bytes(20_480), "20.0 KiB");
    }

    #[test]
    fn truncate_counts_characters() {
        assert_eq!(truncate("µµµ", 3), "µµµ");
        assert_eq!(truncate("abcdef", 4), "abc…");
    }
}
