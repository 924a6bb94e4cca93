//! The profiler library for the acceptance tests. `cargo test --workspace` builds it (the
//! agent's library is a cdylib and an rlib, and its own tests need the rlib), but
//! `cargo test -p clrprof-cli` does not, so [`profiler_library`] makes sure it is there
//! and newer than its sources, else runs `cargo build -p clrprof-agent`, once per test
//! process, under a file lock shared with concurrently running test binaries.
//!
//! Why not always run that build (a no-op when up to date)? Cargo keeps one fingerprint
//! for the library whichever command built it, and `cargo test`'s differs from `cargo
//! build`'s, so the build recompiled the agent (~30 s of a fresh CI run) that `cargo test
//! --workspace` had just compiled with the same command line.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::SystemTime;

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
    let lib = target.join("debug").join(LIBRARY);
    if is_newer_than_its_sources(&lib, &workspace_root()) {
        let _ = lock.unlock();
        return Ok(lib);
    }
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
    if !lib.is_file() {
        return Err(format!(
            "{} was not produced by `cargo build -p clrprof-agent`",
            lib.display()
        ));
    }
    Ok(lib)
}

/// Whether `lib` is newer than every file it is built from: the workspace's Cargo.toml and
/// Cargo.lock, and the Cargo.toml, build script and sources of `clrprof-agent` and of
/// each crate of the workspace it depends on (its `path` dependencies, transitively).
fn is_newer_than_its_sources(lib: &Path, root: &Path) -> bool {
    let Ok(built) = lib.metadata().and_then(|m| m.modified()) else {
        return false;
    };
    let mut newest = SystemTime::UNIX_EPOCH;
    let mut note = |p: &Path| {
        if let Ok(t) = p.metadata().and_then(|m| m.modified()) {
            newest = newest.max(t);
        }
    };
    note(&root.join("Cargo.toml"));
    note(&root.join("Cargo.lock"));
    let mut todo = vec!["clrprof-agent".to_string()];
    let mut seen = Vec::new();
    while let Some(name) = todo.pop() {
        if seen.contains(&name) {
            continue;
        }
        let dir = root.join("crates").join(&name);
        let Ok(manifest) = std::fs::read_to_string(dir.join("Cargo.toml")) else {
            return false;
        };
        note(&dir.join("Cargo.toml"));
        note(&dir.join("build.rs"));
        let mut files = vec![dir.join("src")];
        while let Some(p) = files.pop() {
            match std::fs::read_dir(&p) {
                Ok(entries) => files.extend(entries.flatten().map(|e| e.path())),
                Err(_) => note(&p),
            }
        }
        todo.extend(path_dependencies(&manifest));
        seen.push(name);
    }
    newest < built
}

/// The crates named by `path = "../NAME"` in a manifest's `[dependencies]` and
/// `[build-dependencies]` (not its dev-dependencies: they are not in the library).
fn path_dependencies(manifest: &str) -> Vec<String> {
    let mut section = "";
    let mut found = Vec::new();
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            section = line;
            continue;
        }
        if section != "[dependencies]" && section != "[build-dependencies]" {
            continue;
        }
        if let Some(rest) = line.split("path = \"../").nth(1)
            && let Some(name) = rest.split('"').next()
        {
            found.push(name.to_string());
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_dependencies_are_read_from_the_librarys_sections_only() {
        let m = "[package]\nname = \"x\"\n[dependencies]\na = { path = \"../a\" }\nlibc = \"0.2\"\n\
                 [build-dependencies]\nb = { path = \"../b\", features = [] }\n\
                 [dev-dependencies]\nc = { path = \"../c\" }\n";
        assert_eq!(path_dependencies(m), ["a", "b"]);
    }

    #[test]
    fn the_agents_sources_are_found() {
        // A library older than every source is stale; one from the future is not.
        let root = workspace_root();
        let dir = std::env::temp_dir().join(format!("clrprof-agent-fresh-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let lib = dir.join("lib.so");
        std::fs::write(&lib, b"").unwrap();
        let f = std::fs::File::options().write(true).open(&lib).unwrap();
        f.set_modified(SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1))
            .unwrap();
        assert!(!is_newer_than_its_sources(&lib, &root));
        f.set_modified(SystemTime::now() + std::time::Duration::from_secs(3600))
            .unwrap();
        assert!(is_newer_than_its_sources(&lib, &root));
        assert!(!is_newer_than_its_sources(&dir.join("absent.so"), &root));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
