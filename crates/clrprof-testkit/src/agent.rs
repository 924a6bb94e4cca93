//! The profiler library for the acceptance tests. `cargo test` builds a cdylib crate's
//! tests and rlib but never links `libclrprof_profiler.so` itself, so on a fresh checkout
//! there is nothing for `clrprof record` to load. [`profiler_library`] runs
//! `cargo build -p clrprof-agent` once per test process (a no-op when up to date), under a
//! file lock shared with concurrently running test binaries.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use crate::paths::{target_dir, workspace_root};

/// The library's file name on this platform.
pub const LIBRARY: &str = "libclrprof_profiler.so";

/// Builds (if needed) and returns the debug profiler library, next to the `clrprof` binary.
pub fn profiler_library() -> PathBuf {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BUILT
        .get_or_init(build)
        .clone()
        .unwrap_or_else(|e| panic!("{e}"))
}

fn build() -> Result<PathBuf, String> {
    let target = target_dir();
    std::fs::create_dir_all(&target)
        .map_err(|e| format!("cannot create {}: {e}", target.display()))?;
    let lock_path = target.join("clrprof-agent-build.lock");
    let lock = std::fs::File::create(&lock_path)
        .map_err(|e| format!("cannot create {}: {e}", lock_path.display()))?;
    lock.lock()
        .map_err(|e| format!("cannot lock {}: {e}", lock_path.display()))?;
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(&cargo)
        .args(["build", "-p", "clrprof-agent"])
        .current_dir(workspace_root())
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .map_err(|e| format!("cannot run cargo to build the profiler library: {e}"))?;
    let _ = lock.unlock();
    if !out.status.success() {
        return Err(format!(
            "`cargo build -p clrprof-agent` failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let lib = target.join("debug").join(LIBRARY);
    if !lib.is_file() {
        return Err(format!(
            "{} was not produced by `cargo build -p clrprof-agent`",
            lib.display()
        ));
    }
    Ok(lib)
}
