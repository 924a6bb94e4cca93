//! Traces that travel: when a recording ends, `record` appends to each trace the source
//! lines of the positions its samples, allocation samples and exception stacks hold
//! (`SourceLine` records, read from the modules' PDBs now, while they are at hand), in
//! one block after the agent's last, so
//! `report` shows the same lines on a machine without the PDBs (docs/source-lines.md).
//! `record --no-lines` leaves the trace as the agent wrote it.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use clrprof_analysis::lines::{ExceptionPositions, Lines, table};
use clrprof_analysis::names::Names;
use clrprof_analysis::samples::stack_samples;
use clrprof_analysis::timeline::Trace;
use clrprof_format::{Event, TraceReader, encode, write_block};

/// Appends the trace's line table; returns how many lines it holds (0: nothing appended,
/// as for traces of other modes or without positions).
pub fn append_lines(path: &Path) -> Result<usize> {
    let (mut f, bytes) = open_to_append(path, "its source lines")?;
    let mut reader = TraceReader::new(&bytes)
        .with_context(|| format!("{} is not a readable clrprof trace", path.display()))?;
    let (mut last_seq, mut last_ts, mut positions) = (None::<u64>, 0u64, false);
    // Call records hold no positions: a trace-mode file's millions of them are skipped.
    for e in reader.events_without_calls() {
        last_ts = last_ts.max(e.ts);
        positions |= matches!(
            e.event,
            Event::SamplePositions { .. }
                | Event::ExceptionPositions { .. }
                | Event::AllocPositions { .. }
        );
        if matches!(e.event, Event::SourceLine { .. }) {
            // Appended already.
            return Ok(0);
        }
    }
    last_ts = last_ts.max(reader.stats().calls_last_ts);
    if !positions {
        return Ok(0);
    }
    for b in reader.blocks().flatten() {
        last_seq = last_seq.max(b.header.seq);
    }
    let trace = Trace::load(&bytes)?;
    let names = Names::collect(&trace.events);
    let samples = stack_samples(&trace.events);
    let mut exception = ExceptionPositions::default();
    trace.for_each_exception(|e| exception.observe(e));
    // The allocation samples' positions with the exception stacks'.
    let mut pairs = exception.pairs;
    for p in clrprof_analysis::allocs::collect(&trace.events).points {
        pairs.extend(
            p.frames
                .iter()
                .zip(&p.positions)
                .filter(|(_, item)| **item != 0)
                .map(|(&f, &item)| (f, item)),
        );
    }
    let rows = table(&samples, &pairs, &names, &mut Lines::new(Vec::new()));
    if rows.is_empty() {
        return Ok(0);
    }
    let mut records = Vec::new();
    for (function, position, line) in &rows {
        encode(
            &mut records,
            0,
            &Event::SourceLine {
                function: *function,
                position: *position,
                file: line.file.as_ref().into(),
                line: line.line,
            },
        );
    }
    let mut block = Vec::new();
    write_block(
        &mut block,
        last_seq.map_or(0, |s| s + 1),
        0,
        last_ts,
        rows.len() as u32,
        &records,
        true,
    )?;
    f.write_all(&block)
        .with_context(|| format!("cannot add the source lines to {}", path.display()))?;
    Ok(rows.len())
}

/// The trace at `path` opened to read and append, and its bytes: one descriptor for the
/// read and the append, never through a symbolic link, and only to a regular file (the
/// agent created it O_EXCL|O_NOFOLLOW; something else may have been put at the path
/// since).
fn open_to_append(path: &Path, what: &str) -> Result<(std::fs::File, Vec<u8>)> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .append(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .with_context(|| format!("cannot open {} to add {what}", path.display()))?;
    if !f.metadata()?.file_type().is_file() {
        anyhow::bail!("{} is not a regular file", path.display());
    }
    let mut bytes = Vec::new();
    f.read_to_end(&mut bytes)
        .with_context(|| format!("cannot read {}", path.display()))?;
    Ok((f, bytes))
}

/// Appends a `Meta` record `key` holding `json` to the trace, in a block of its own after
/// the last (`os_tid` 0, the next block number, the latest block's time), as the line
/// table is: a note of the CLI's (e.g. what `--push` sent) for the trace's readers.
pub fn append_meta(path: &Path, key: &str, json: &str) -> Result<()> {
    let (mut f, bytes) = open_to_append(path, "a note")?;
    let mut reader = TraceReader::new(&bytes)
        .with_context(|| format!("{} is not a readable clrprof trace", path.display()))?;
    let (mut last_seq, mut last_ts) = (None::<u64>, 0u64);
    for b in reader.blocks().flatten() {
        last_seq = last_seq.max(b.header.seq);
        last_ts = last_ts.max(b.header.base_ts);
    }
    let mut records = Vec::new();
    encode(
        &mut records,
        0,
        &Event::Meta {
            key: key.into(),
            json: json.into(),
        },
    );
    let mut block = Vec::new();
    write_block(
        &mut block,
        last_seq.map_or(0, |s| s + 1),
        0,
        last_ts,
        1,
        &records,
        false,
    )?;
    f.write_all(&block)
        .with_context(|| format!("cannot add a note to {}", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_through_a_symbolic_link() {
        let dir = std::env::temp_dir().join(format!("clrprof-travel-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let target = dir.join("victim");
        std::fs::write(&target, b"not a trace").unwrap();
        let link = dir.join("t.clrprof");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let e = append_lines(&link).unwrap_err();
        assert!(format!("{e:#}").contains("cannot open"), "{e:#}");
        assert_eq!(std::fs::read(&target).unwrap(), b"not a trace");
        // A file that is no trace is refused, and left as it was.
        assert!(append_lines(&target).is_err());
        assert_eq!(std::fs::read(&target).unwrap(), b"not a trace");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
