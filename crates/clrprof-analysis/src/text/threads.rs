//! The Threads section: each thread lifetime, its OS id, name and how long it lived.

use std::fmt::Write;

use super::units::ns;
use crate::report::ThreadInfo;

/// Threads listed at least, whatever `top`.
const AT_LEAST: usize = 16;

pub fn render(o: &mut String, threads: &[ThreadInfo], top: usize) {
    if threads.is_empty() {
        return;
    }
    let _ = writeln!(o, "\nThreads");
    let _ = writeln!(o, "  {:>8}  {:<32} {:>10}", "os tid", "name", "lifetime");
    for th in threads.iter().take(top.max(AT_LEAST)) {
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
        render(&mut o, &[], 5);
        assert_eq!(o, "");
        render(&mut o, &threads, 1);
        assert_eq!(
            o,
            "\nThreads\n\
             \x20   os tid  name                               lifetime\n\
             \x20      101  worker                              25.0 µs\n\
             \x20        -  (unnamed)                                 -\n"
        );
    }

    #[test]
    fn at_least_sixteen_whatever_top() {
        let threads: Vec<ThreadInfo> = (0..20).map(|t| thread(Some(t), None, None)).collect();
        let mut o = String::new();
        render(&mut o, &threads, 3);
        assert_eq!(o.lines().count(), 3 + 16);
    }
}
