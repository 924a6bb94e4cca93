//! The Threads section: each thread lifetime, its OS id, name and how long it lived.

use std::fmt::Write;

use super::units::ns;
use crate::report::ThreadInfo;

/// Threads listed at least, whatever `top`.
const AT_LEAST: usize = 16;

/// Without `all`, threads the trace knows little of (no name, no lifetime: a row of
/// dashes but for the OS id) are counted on one line instead of listed.
pub fn render(o: &mut String, threads: &[ThreadInfo], top: usize, all: bool) {
    let blank = |th: &&ThreadInfo| {
        th.name.is_none() && (th.created_ns.is_none() || th.destroyed_ns.is_none())
    };
    let hidden = if all {
        0
    } else {
        threads.iter().filter(blank).count()
    };
    if threads.is_empty() {
        return;
    }
    if threads.len() == hidden {
        let _ = writeln!(
            o,
            "\nThreads: {hidden}, none with a name or lifetime (`report --all` lists them)"
        );
        return;
    }
    let _ = writeln!(o, "\nThreads");
    let _ = writeln!(o, "  {:>8}  {:<32} {:>10}", "os tid", "name", "lifetime");
    let shown = threads.iter().filter(|th| all || !blank(th));
    for th in shown.take(top.max(AT_LEAST)) {
        let life = match (th.created_ns, th.destroyed_ns) {
            (Some(a), Some(b)) => ns(b.saturating_sub(a)),
            _ => "-".into(),
        };
        let tid = th
            .os_tid
            .map(|t| t.to_string())
            .unwrap_or_else(|| "-".into());
        let _ = writeln!(
            o,
            "  {tid:>8}  {:<32} {life:>10}",
            th.name.as_deref().unwrap_or("(unnamed)")
        );
    }
    if hidden > 0 {
        let _ = writeln!(
            o,
            "  … {hidden} more without a name or lifetime (`report --all`)"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thread(os_tid: Option<u64>, name: Option<&str>, life: Option<(u64, u64)>) -> ThreadInfo {
        ThreadInfo {
            id: 1,
            os_tid,
            name: name.map(String::from),
            created_ns: life.map(|l| l.0),
            destroyed_ns: life.map(|l| l.1),
        }
    }

    #[test]
    fn lifetimes_and_missing_parts() {
        let threads = [
            thread(Some(101), Some("worker"), Some((10, 25_010))),
            thread(None, None, None),
        ];
        let mut o = String::new();
        render(&mut o, &[], 5, true);
        assert_eq!(o, "");
        render(&mut o, &threads, 1, true);
        assert_eq!(
            o,
            "\nThreads\n\
             \x20   os tid  name                               lifetime\n\
             \x20      101  worker                              25.0 µs\n\
             \x20        -  (unnamed)                                 -\n"
        );
        // By default the row of dashes is counted, not listed.
        o.clear();
        render(&mut o, &threads, 1, false);
        assert_eq!(
            o,
            "\nThreads\n\
             \x20   os tid  name                               lifetime\n\
             \x20      101  worker                              25.0 µs\n\
             \x20 … 1 more without a name or lifetime (`report --all`)\n"
        );
        o.clear();
        render(&mut o, &threads[1..], 1, false);
        assert_eq!(
            o,
            "\nThreads: 1, none with a name or lifetime (`report --all` lists them)\n"
        );
    }

    #[test]
    fn at_least_sixteen_whatever_top() {
        let threads: Vec<ThreadInfo> = (0..20).map(|t| thread(Some(t), None, None)).collect();
        let mut o = String::new();
        render(&mut o, &threads, 3, true);
        assert_eq!(o.lines().count(), 3 + 16);
    }
}
