//! Bakes the commit into `clrprof --version` (`0.1.0 (1a2b3c4d5e6f)`): a packed tool or a
//! copied binary says which source it was built from. Outside a git checkout: `unknown`.

use std::path::Path;
use std::process::Command;

fn main() {
    let commit = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=CLRPROF_COMMIT={commit}");
    // Re-run when HEAD moves; only paths that exist (a missing one re-runs every build).
    for p in [
        "../../.git/HEAD",
        "../../.git/refs/heads",
        "../../.git/packed-refs",
    ] {
        if Path::new(p).exists() {
            println!("cargo:rerun-if-changed={p}");
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
