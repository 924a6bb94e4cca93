//! Opening a trace file for reading: memory-mapped, so that a multi-gigabyte trace is
//! not copied onto the heap (the reader works on `&[u8]` and the analysis keeps only what
//! it needs); read into memory when the file cannot be mapped (a pipe, an empty file).

use std::fs::File;
use std::ops::Deref;
use std::path::Path;

use anyhow::{Context, Result};

/// A trace file's bytes.
pub enum TraceBytes {
    Mapped(memmap2::Mmap),
    Read(Vec<u8>),
}

impl Deref for TraceBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            TraceBytes::Mapped(m) => m,
            TraceBytes::Read(v) => v,
        }
    }
}

impl TraceBytes {
    /// Gives back the pages a pass over a mapped file brought in: they count in this
    /// process's resident memory until then, and a heap snapshot's analysis, which holds a
    /// few words per object after the pass, would otherwise carry the whole file beside
    /// them. A later read faults them in again from the page cache.
    pub fn release(&self) {
        if let TraceBytes::Mapped(m) = self {
            // SAFETY: the map is read-only and private, so no page of it was ever written:
            // dropping them loses nothing, and every later read sees the file's bytes again
            // (the hazard `open` names, a truncated file, is unchanged by this).
            let _ = unsafe { m.unchecked_advise(memmap2::UncheckedAdvice::DontNeed) };
        }
    }
}

/// Opens `path` for reading.
pub fn open(path: &Path) -> Result<TraceBytes> {
    let file = File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let is_file = file.metadata().map(|m| m.is_file() && m.len() > 0);
    if let Ok(true) = is_file {
        // SAFETY: the map is read-only and private to this process. Its one hazard is
        // another process truncating the file while it is mapped (reads past the new end
        // fault); a trace is only appended to while recorded, never shortened.
        if let Ok(m) = unsafe { memmap2::Mmap::map(&file) } {
            return Ok(TraceBytes::Mapped(m));
        }
    }
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    Ok(TraceBytes::Read(bytes))
}

/// The reader's warnings about `path` (truncation, a CRC mismatch, a malformed record), one
/// line each on stderr, as every command that reads a trace prints them: a damaged trace
/// never reads as if whole.
pub fn warning_lines(path: &Path, warnings: &[String]) -> Vec<String> {
    warnings
        .iter()
        .map(|w| {
            format!(
                "clrprof: {} {}: {w}",
                crate::style::warning("warning:"),
                path.display()
            )
        })
        .collect()
}

/// [`warning_lines`], printed.
pub fn print_warnings(path: &Path, warnings: &[String]) {
    for line in warning_lines(path, warnings) {
        eprintln!("{line}");
    }
}
