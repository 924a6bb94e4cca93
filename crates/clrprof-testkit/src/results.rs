//! The `RESULT key=value ...` lines the test apps print about themselves.

use std::collections::BTreeMap;

/// Collects every `key=value` pair from the lines of `stdout` that start with `RESULT `.
///
/// A line may hold several pairs separated by whitespace (values never contain whitespace);
/// other lines are ignored. When a key appears more than once, the last value wins.
pub fn parse_results(stdout: &str) -> BTreeMap<String, String> {
    let mut results = BTreeMap::new();
    for line in stdout.lines() {
        let Some(pairs) = line.trim_end().strip_prefix("RESULT ") else {
            continue;
        };
        for pair in pairs.split_whitespace() {
            if let Some((key, value)) = pair.split_once('=')
                && !key.is_empty()
            {
                results.insert(key.to_owned(), value.to_owned());
            }
        }
    }
    results
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_pairs_from_result_lines_only() {
        let out = "READY 42\r\nRESULT a=1 b=x=y\nnoise RESULT c=3\nRESULT  d=4\r\nRESULTe=5\n";
        let r = parse_results(out);
        assert_eq!(r.len(), 3, "{r:?}");
        assert_eq!(r["a"], "1");
        assert_eq!(r["b"], "x=y");
        assert_eq!(r["d"], "4");
    }

    #[test]
    fn later_values_win_and_junk_is_skipped() {
        let r = parse_results("RESULT k=1 junk =v\nRESULT k=2 empty=\n");
        assert_eq!(r["k"], "2");
        assert_eq!(r["empty"], "");
        assert_eq!(r.len(), 2, "{r:?}");
    }
}
