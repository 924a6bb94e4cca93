//! Bakes the commit into `clrprof --version` (`0.1.0 (1a2b3c4d5e6f)`): a packed tool or a
//! copied binary says which source it was built from. Outside a git checkout: `unknown`.

use std::path::PathBuf;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    Command::new("git")
        .args(args)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|s| !s.is_empty())
}

fn main() {
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=CLRPROF_COMMIT={commit}");
    // Re-run when HEAD moves: the checkout's own HEAD, and the refs, which a linked
    // worktree keeps in the common directory (its `.git` is a file naming its own git
    // directory, so `../../.git/HEAD` is not there). Only paths that exist (a missing one
    // re-runs every build).
    let dirs: Vec<PathBuf> = [
        git(&["rev-parse", "--absolute-git-dir"]),
        git(&["rev-parse", "--path-format=absolute", "--git-common-dir"]),
    ]
    .into_iter()
    .flatten()
    .map(PathBuf::from)
    .collect();
    for dir in &dirs {
        for p in ["HEAD", "refs/heads", "packed-refs"] {
            let p = dir.join(p);
            if p.exists() {
                println!("cargo:rerun-if-changed={}", p.display());
            }
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
