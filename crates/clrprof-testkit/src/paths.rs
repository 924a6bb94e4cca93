//! Where things are: the workspace, the cargo target dir, the `dotnet` executable.

use std::env;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The directory of the workspace's root `Cargo.toml` (the one with `[workspace]`).
///
/// Found by walking up from this crate's manifest dir (fixed at compile time), then from
/// `CARGO_MANIFEST_DIR` at run time, then from the current directory.
pub fn workspace_root() -> PathBuf {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| {
        let mut starts = vec![PathBuf::from(env!("CARGO_MANIFEST_DIR"))];
        starts.extend(env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from));
        starts.extend(env::current_dir().ok());
        starts
            .iter()
            .find_map(|start| start.ancestors().find(|dir| is_workspace_root(dir)))
            .map(Path::to_path_buf)
            .unwrap_or_else(|| {
                panic!("clrprof-testkit: no Cargo.toml with [workspace] above any of {starts:?}")
            })
    })
    .clone()
}

fn is_workspace_root(dir: &Path) -> bool {
    std::fs::read_to_string(dir.join("Cargo.toml"))
        .map(|toml| toml.lines().any(|line| line.trim() == "[workspace]"))
        .unwrap_or(false)
}

/// The cargo target directory: `CARGO_TARGET_DIR` (relative to the workspace root when
/// relative), else the directory above the running test binary that holds cargo's
/// `CACHEDIR.TAG`, else `<workspace root>/target`.
pub fn target_dir() -> PathBuf {
    static TARGET: OnceLock<PathBuf> = OnceLock::new();
    TARGET
        .get_or_init(|| {
            if let Some(dir) = env::var_os("CARGO_TARGET_DIR").filter(|d| !d.is_empty()) {
                return workspace_root().join(dir);
            }
            env::current_exe()
                .ok()
                .and_then(|exe| {
                    exe.ancestors()
                        .skip(1)
                        .find(|dir| dir.join("CACHEDIR.TAG").is_file())
                        .map(Path::to_path_buf)
                })
                .unwrap_or_else(|| workspace_root().join("target"))
        })
        .clone()
}

/// The `dotnet` executable: `$DOTNET_ROOT/dotnet`, else `dotnet` on `PATH`, else the usual
/// install locations. Panics with a clear message when the .NET SDK is missing.
pub fn dotnet() -> PathBuf {
    static DOTNET: OnceLock<Option<PathBuf>> = OnceLock::new();
    DOTNET.get_or_init(find_dotnet).clone().unwrap_or_else(|| {
        panic!(
            "clrprof-testkit: the .NET SDK was not found: no `dotnet` in $DOTNET_ROOT, \
                 on PATH, in /usr/share/dotnet, /usr/lib/dotnet or ~/.dotnet. The acceptance \
                 tests need the .NET 10 SDK to build and run the apps under apps/; install it \
                 or point DOTNET_ROOT at it."
        )
    })
}

fn find_dotnet() -> Option<PathBuf> {
    let mut candidates = Vec::new();
    if let Some(root) = env::var_os("DOTNET_ROOT").filter(|r| !r.is_empty()) {
        candidates.push(PathBuf::from(root).join("dotnet"));
    }
    if let Some(path) = env::var_os("PATH") {
        candidates.extend(env::split_paths(&path).map(|dir| dir.join("dotnet")));
    }
    candidates.push(PathBuf::from("/usr/share/dotnet/dotnet"));
    candidates.push(PathBuf::from("/usr/lib/dotnet/dotnet"));
    if let Some(home) = env::var_os("HOME") {
        candidates.push(PathBuf::from(home).join(".dotnet/dotnet"));
    }
    candidates.into_iter().find(|c| is_executable(c))
}

fn is_executable(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        path.with_extension("exe").is_file() || path.is_file()
    }
}
