//! What a process holds in memory, read from `/proc`: for the tests and benches that hold
//! an attach/detach cycle's cost to the target.

/// glibc's thread arenas in `pid` (each first heap of one: an anonymous `rw-p` mapping at a
/// 64 MiB boundary whose first word, `heap_info.ar_ptr`, points just past itself at the
/// arena it holds; read through `/proc/PID/mem`): `(count, resident KiB)`. The main
/// arena (`[heap]`) is not among them.
pub fn malloc_arenas(pid: u32) -> (usize, u64) {
    use std::io::{Read, Seek, SeekFrom};
    let smaps = std::fs::read_to_string(format!("/proc/{pid}/smaps")).unwrap_or_default();
    let Ok(mut mem) = std::fs::File::open(format!("/proc/{pid}/mem")) else {
        return (0, 0);
    };
    let (mut count, mut kb, mut in_arena) = (0, 0, false);
    for l in smaps.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.first()
            .is_some_and(|r| r.contains('-') && !r.ends_with(':'))
        {
            let start = u64::from_str_radix(f[0].split('-').next().unwrap(), 16).unwrap_or(1);
            in_arena =
                start.is_multiple_of(64 << 20) && f.get(1) == Some(&"rw-p") && f.len() == 5 && {
                    let mut word = [0u8; 8];
                    mem.seek(SeekFrom::Start(start)).is_ok()
                        && mem.read_exact(&mut word).is_ok()
                        && (start + 8..start + 0x100).contains(&u64::from_le_bytes(word))
                };
            count += usize::from(in_arena);
        } else if in_arena && let Some(v) = l.strip_prefix("Rss:") {
            kb += v
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<u64>()
                .unwrap_or(0);
        }
    }
    (count, kb)
}

/// Resident KiB of `pid` outside the agent library's own mapping (its one resident copy,
/// whose code pages are the same from the first cycle on): what the agent leaves elsewhere.
pub fn rss_outside_agent(pid: u32) -> u64 {
    let smaps = std::fs::read_to_string(format!("/proc/{pid}/smaps")).unwrap_or_default();
    let (mut total, mut in_copy) = (0, false);
    for l in smaps.lines() {
        if let Some(kb) = l.strip_prefix("Rss:") {
            if !in_copy {
                total += kb
                    .trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse::<u64>()
                    .unwrap_or(0);
            }
        } else if l.split_whitespace().next().is_some_and(|f| f.contains('-')) {
            in_copy = l.contains("libclrprof_profiler");
        }
    }
    total
}
