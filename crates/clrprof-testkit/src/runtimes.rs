//! The .NET runtimes the acceptance tests run on: 10 from the installed SDK, 8 and 9
//! provisioned from NuGet by `scripts/provision-runtimes.sh` into
//! `<target>/dotnet-runtimes/dotnet`, a private `DOTNET_ROOT` that also holds the system's
//! runtimes. The script runs once per test process, under its own file lock, so the first
//! test binary that needs .NET 8 or 9 on a fresh machine downloads them and the others wait.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::paths::{dotnet, target_dir, workspace_root};

/// A major .NET version the project supports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Runtime {
    Net8,
    Net9,
    Net10,
}

impl Runtime {
    /// Every supported runtime, oldest first.
    pub const ALL: [Runtime; 3] = [Runtime::Net8, Runtime::Net9, Runtime::Net10];

    /// The major version: 8, 9 or 10.
    pub fn major(self) -> u32 {
        match self {
            Runtime::Net8 => 8,
            Runtime::Net9 => 9,
            Runtime::Net10 => 10,
        }
    }

    /// The target framework moniker the test apps are built for: `net8.0`, …
    pub fn tfm(self) -> &'static str {
        match self {
            Runtime::Net8 => "net8.0",
            Runtime::Net9 => "net9.0",
            Runtime::Net10 => "net10.0",
        }
    }

    /// The `dotnet` muxer that runs apps on this runtime, and the `DOTNET_ROOT` to give it
    /// (`None`: the installed SDK, as found by [`dotnet`]). Provisions 8 and 9 on first use;
    /// panics with the script's message when that fails (e.g. NuGet unreachable).
    pub fn host(self) -> (PathBuf, Option<PathBuf>) {
        match self {
            Runtime::Net10 => (dotnet(), None),
            Runtime::Net8 | Runtime::Net9 => {
                let root = provisioned_root();
                (root.join("dotnet"), Some(root))
            }
        }
    }
}

/// The private `DOTNET_ROOT` with .NET 8 and 9 beside the system's runtimes.
fn provisioned_root() -> PathBuf {
    static ROOT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    ROOT.get_or_init(provision)
        .clone()
        .unwrap_or_else(|e| panic!("{e}"))
}

fn provision() -> Result<PathBuf, String> {
    let script = workspace_root().join("scripts/provision-runtimes.sh");
    let cache = target_dir().join("dotnet-runtimes");
    let system = system_dotnet_root();
    let out = Command::new("bash")
        .arg(&script)
        .arg(&cache)
        .env("CLRPROF_SYSTEM_DOTNET", &system)
        .env("DOTNET_CLI_TELEMETRY_OPTOUT", "1")
        .env("DOTNET_NOLOGO", "1")
        .env_remove("CORECLR_ENABLE_PROFILING")
        .output()
        .map_err(|e| format!("clrprof-testkit: cannot run {}: {e}", script.display()))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !stderr.trim().is_empty() {
        eprint!("{stderr}");
    }
    if !out.status.success() {
        return Err(format!(
            "clrprof-testkit: provisioning .NET 8 and 9 failed ({}):\n{stderr}",
            out.status
        ));
    }
    let root = String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .map(|l| PathBuf::from(l.trim()))
        .ok_or_else(|| format!("{} printed no DOTNET_ROOT", script.display()))?;
    if !root.join("dotnet").is_file() {
        return Err(format!(
            "clrprof-testkit: {} has no dotnet muxer after provisioning",
            root.display()
        ));
    }
    Ok(root)
}

/// The installed .NET root: the directory of the real (symlink-resolved) `dotnet`.
fn system_dotnet_root() -> PathBuf {
    let muxer = dotnet();
    let real = std::fs::canonicalize(&muxer).unwrap_or(muxer);
    real.parent().map(Path::to_path_buf).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_versions_line_up() {
        let tfms: Vec<_> = Runtime::ALL.iter().map(|r| r.tfm()).collect();
        assert_eq!(tfms, ["net8.0", "net9.0", "net10.0"]);
        for r in Runtime::ALL {
            assert_eq!(r.tfm(), format!("net{}.0", r.major()));
        }
    }
}
