//! Finding the profiler library.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};

pub const LIBRARY: &str = if cfg!(target_os = "macos") {
    "libclrprof_profiler.dylib"
} else if cfg!(windows) {
    "clrprof_profiler.dll"
} else {
    "libclrprof_profiler.so"
};

/// The library's file name without its extension: the copies an attach loads are
/// `LIBRARY_STEM.PID.NONCE.so` (`libcopy`).
pub const LIBRARY_STEM: &str = if cfg!(windows) {
    "clrprof_profiler"
} else {
    "libclrprof_profiler"
};

/// `--profiler`, else `CLRPROF_PROFILER_PATH`, else next to this executable.
pub fn profiler_library(explicit: Option<&Path>) -> Result<PathBuf> {
    let candidate = match explicit {
        Some(p) => p.to_path_buf(),
        None => match std::env::var_os("CLRPROF_PROFILER_PATH") {
            Some(p) => PathBuf::from(p),
            None => {
                let exe = std::env::current_exe()?;
                exe.parent().unwrap_or(Path::new(".")).join(LIBRARY)
            }
        },
    };
    if !candidate.is_file() {
        bail!(
            "profiler library not found at {} (build it with `cargo build -p clrprof-agent`, or pass --profiler PATH)",
            candidate.display()
        );
    }
    Ok(std::fs::canonicalize(&candidate)?)
}
