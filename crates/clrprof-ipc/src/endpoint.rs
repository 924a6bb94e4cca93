//! Finding a process's diagnostics socket, and telling why there is none.
//!
//! CoreCLR listens on `$TMPDIR/dotnet-diagnostic-{pid}-{key}-socket` (`/tmp` when `TMPDIR`
//! is unset or empty), where `{key}` is the process start time: field 22 (`starttime`) of
//! `/proc/{pid}/stat`. `{pid}` is the pid as the process sees it, which differs from ours
//! when it runs in another pid namespace (a container).

use std::fs;
use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::error::{DisabledCause, IpcError};

const PREFIX: &str = "dotnet-diagnostic-";
const SUFFIX: &str = "-socket";

/// Parses `dotnet-diagnostic-{pid}-{key}-socket` (the regex
/// `^dotnet-diagnostic-(\d+)-(\d+)-socket$`, ASCII digits) into `(pid, key)`.
pub fn parse_socket_name(name: &str) -> Option<(u32, u64)> {
    let middle = name.strip_prefix(PREFIX)?.strip_suffix(SUFFIX)?;
    let (pid, key) = middle.split_once('-')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(pid) || !digits(key) {
        return None;
    }
    Some((pid.parse().ok()?, key.parse().ok()?))
}

/// Field 22 (`starttime`, clock ticks since boot) of a `/proc/{pid}/stat` line.
///
/// The second field (`comm`) is parenthesised and may contain spaces and `)`, so fields
/// are counted from the last `)`.
pub fn parse_stat_starttime(stat: &str) -> Option<u64> {
    let after = &stat[stat.rfind(')')? + 1..];
    // Field 3 (state) is the first token after ')'; field 22 is 19 tokens later.
    after.split_whitespace().nth(19)?.parse().ok()
}

/// Field 3 (`state`) of a `/proc/{pid}/stat` line.
pub fn parse_stat_state(stat: &str) -> Option<char> {
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().next()?.chars().next()
}

/// The innermost pid from the `NSpid:` line of `/proc/{pid}/status`, when the process
/// lives in a nested pid namespace (more than one value); `None` otherwise.
pub fn parse_nspid(status: &str) -> Option<u32> {
    let line = status.lines().find(|l| l.starts_with("NSpid:"))?;
    let ids: Vec<&str> = line["NSpid:".len()..].split_whitespace().collect();
    if ids.len() < 2 {
        return None;
    }
    ids.last()?.parse().ok()
}

/// The effective uid from the `Uid:` line of `/proc/{pid}/status`.
pub fn parse_status_euid(status: &str) -> Option<u32> {
    let line = status.lines().find(|l| l.starts_with("Uid:"))?;
    line["Uid:".len()..].split_whitespace().nth(1)?.parse().ok()
}

/// Value of `name` in a NUL-separated environment block (`/proc/{pid}/environ`).
pub fn environ_get(environ: &[u8], name: &str) -> Option<String> {
    environ
        .split(|&b| b == 0)
        .filter_map(|entry| {
            let eq = entry.iter().position(|&b| b == b'=')?;
            (&entry[..eq] == name.as_bytes())
                .then(|| String::from_utf8_lossy(&entry[eq + 1..]).into_owned())
        })
        .next_back()
}

/// Variables that turn the diagnostics IPC off when set to 0 (legacy `COMPlus_` prefix
/// included; the `_IPC` form exists since .NET 8).
const DISABLE_VARS: [&str; 4] = [
    "DOTNET_EnableDiagnostics",
    "COMPlus_EnableDiagnostics",
    "DOTNET_EnableDiagnostics_IPC",
    "COMPlus_EnableDiagnostics_IPC",
];

/// The first variable in `environ` that disables the diagnostics IPC, as `(name, value)`.
pub fn diagnostics_disabled_by(environ: &[u8]) -> Option<(String, String)> {
    for entry in environ.split(|&b| b == 0) {
        let Some(eq) = entry.iter().position(|&b| b == b'=') else {
            continue;
        };
        let name = String::from_utf8_lossy(&entry[..eq]);
        if !DISABLE_VARS.iter().any(|v| v.eq_ignore_ascii_case(&name)) {
            continue;
        }
        let value = String::from_utf8_lossy(&entry[eq + 1..]).into_owned();
        // CLRConfig reads these as hexadecimal DWORDs.
        let digits = value.trim();
        let digits = digits
            .strip_prefix("0x")
            .or_else(|| digits.strip_prefix("0X"))
            .unwrap_or(digits);
        if u32::from_str_radix(digits, 16) == Ok(0) {
            return Some((name.into_owned(), value));
        }
    }
    None
}

/// This process's temp directory, as the runtime computes it: `$TMPDIR` when set and
/// non-empty, else `/tmp`.
pub fn temp_dir() -> PathBuf {
    match std::env::var_os("TMPDIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => PathBuf::from("/tmp"),
    }
}

/// A `dotnet-diagnostic-*-socket` file found in a directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SocketFile {
    /// Pid in the file name (the pid as the target sees itself).
    pub pid: u32,
    /// Disambiguation key in the file name (the target's start time).
    pub key: u64,
    /// Full path.
    pub path: PathBuf,
    /// Modification time.
    pub modified: SystemTime,
}

/// All `dotnet-diagnostic-{pid}-{key}-socket` sockets directly in `dir`. Unreadable
/// directories yield nothing.
pub fn scan_dir(dir: &Path) -> Vec<SocketFile> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some((pid, key)) = name.to_str().and_then(parse_socket_name) else {
            continue;
        };
        let path = entry.path();
        let Ok(meta) = fs::metadata(&path) else {
            continue;
        };
        if !meta.file_type().is_socket() {
            continue;
        }
        found.push(SocketFile {
            pid,
            key,
            path,
            modified: meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
        });
    }
    found
}

fn proc_path(pid: u32, leaf: &str) -> PathBuf {
    PathBuf::from(format!("/proc/{pid}/{leaf}"))
}

/// Start time (field 22 of `/proc/{pid}/stat`), if the process exists.
pub fn process_start_time(pid: u32) -> Option<u64> {
    parse_stat_starttime(&fs::read_to_string(proc_path(pid, "stat")).ok()?)
}

/// Whether a live (non-zombie) process has this pid.
pub fn process_exists(pid: u32) -> bool {
    match fs::read_to_string(proc_path(pid, "stat")) {
        Ok(stat) => !matches!(parse_stat_state(&stat), Some('Z' | 'X') | None),
        Err(_) => false,
    }
}

/// `/proc/{pid}/cmdline` with arguments joined by spaces (empty if unreadable).
pub fn process_command_line(pid: u32) -> String {
    let Ok(raw) = fs::read(proc_path(pid, "cmdline")) else {
        return String::new();
    };
    raw.split(|&b| b == 0)
        .filter(|a| !a.is_empty())
        .map(String::from_utf8_lossy)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Our effective uid.
pub fn current_euid() -> Option<u32> {
    parse_status_euid(&fs::read_to_string("/proc/self/status").ok()?)
}

fn push_unique(dirs: &mut Vec<PathBuf>, dir: PathBuf) {
    if !dirs.contains(&dir) {
        dirs.push(dir);
    }
}

/// Where to look for a process's socket, and under which pid it is named.
#[derive(Debug, Clone)]
pub struct SearchPlan {
    /// The pid in the socket name.
    pub name_pid: u32,
    /// Directories to scan, best first.
    pub dirs: Vec<PathBuf>,
    /// Whether the target lives in another pid namespace.
    pub other_namespace: bool,
}

/// Directories where `pid`'s socket can be: the target's `TMPDIR` (read from its
/// environment when readable), our `TMPDIR`, `/tmp`, and the same seen through
/// `/proc/{pid}/root` (a container or a service with a private `/tmp`).
pub fn search_plan(pid: u32) -> SearchPlan {
    let ns_pid = fs::read_to_string(proc_path(pid, "status"))
        .ok()
        .and_then(|s| parse_nspid(&s));
    let target_tmp = fs::read(proc_path(pid, "environ"))
        .ok()
        .and_then(|env| environ_get(&env, "TMPDIR"))
        .filter(|t| !t.is_empty())
        .map(PathBuf::from);
    let root = proc_path(pid, "root");
    let in_root = |dir: &Path| root.join(dir.strip_prefix("/").unwrap_or(dir));

    let mut dirs = Vec::new();
    if ns_pid.is_none() {
        if let Some(t) = &target_tmp {
            push_unique(&mut dirs, t.clone());
        }
        push_unique(&mut dirs, temp_dir());
        push_unique(&mut dirs, PathBuf::from("/tmp"));
    }
    if let Some(t) = &target_tmp {
        push_unique(&mut dirs, in_root(t));
    }
    push_unique(&mut dirs, root.join("tmp"));
    SearchPlan {
        name_pid: ns_pid.unwrap_or(pid),
        dirs,
        other_namespace: ns_pid.is_some(),
    }
}

/// Picks the socket of `pid` following `plan`: sockets whose key is not the process's
/// start time are stale (left by a killed process whose pid was reused) and skipped; of
/// the rest the newest by mtime wins, earlier directories winning ties.
pub fn pick_socket(plan: &SearchPlan, start_time: Option<u64>) -> Option<PathBuf> {
    let mut best: Option<SocketFile> = None;
    for dir in &plan.dirs {
        for sock in scan_dir(dir) {
            if sock.pid != plan.name_pid {
                continue;
            }
            // Inside another pid namespace the key is still the start time in clock
            // ticks since boot, but do not rely on it there (time namespaces).
            if !plan.other_namespace && start_time.is_some_and(|st| st != sock.key) {
                continue;
            }
            if best.as_ref().is_none_or(|b| sock.modified > b.modified) {
                best = Some(sock);
            }
        }
    }
    best.map(|s| s.path)
}

/// Finds the diagnostics socket of `pid`, or explains why there is none.
pub fn find_socket(pid: u32) -> Result<PathBuf, IpcError> {
    if !process_exists(pid) {
        return Err(IpcError::NoSuchProcess(pid));
    }
    let plan = search_plan(pid);
    if let Some(path) = pick_socket(&plan, process_start_time(pid)) {
        return Ok(path);
    }
    Err(diagnose_missing_socket(pid, plan.dirs))
}

/// Classifies a process that has no visible diagnostics socket.
pub fn diagnose_missing_socket(pid: u32, searched: Vec<PathBuf>) -> IpcError {
    match fs::read(proc_path(pid, "maps")) {
        Ok(maps) => {
            if !maps_has_coreclr(&maps) {
                return IpcError::NotDotnet(pid);
            }
            let cause = match fs::read(proc_path(pid, "environ")) {
                Ok(env) => match diagnostics_disabled_by(&env) {
                    Some((name, value)) => DisabledCause::Environment { name, value },
                    None => DisabledCause::NotInEnvironment,
                },
                Err(_) => DisabledCause::EnvironUnreadable,
            };
            IpcError::DiagnosticsDisabled {
                pid,
                cause,
                searched,
            }
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound || !process_exists(pid) => {
            IpcError::NoSuchProcess(pid)
        }
        Err(_) => IpcError::CannotInspect { pid, searched },
    }
}

/// Whether a `/proc/{pid}/maps` text maps `libcoreclr.so`.
pub fn maps_has_coreclr(maps: &[u8]) -> bool {
    maps.split(|&b| b == b'\n').any(|line| {
        line.rsplit(|&b| b == b'/')
            .next()
            .is_some_and(|file| file.starts_with(b"libcoreclr.so"))
    })
}

/// If `path` is a socket another (non-root) user owns without granting us write access,
/// returns its owner and our uid.
pub fn foreign_owner(path: &Path) -> Option<(u32, u32)> {
    let meta = fs::metadata(path).ok()?;
    let ours = current_euid()?;
    let owner = meta.uid();
    let others_may_write = meta.mode() & 0o002 != 0;
    (ours != 0 && ours != owner && !others_may_write).then_some((owner, ours))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn socket_names() {
        assert_eq!(
            parse_socket_name("dotnet-diagnostic-5428-92664-socket"),
            Some((5428, 92664))
        );
        for bad in [
            "dotnet-diagnostic-5428-socket",
            "dotnet-diagnostic--1-socket",
            "dotnet-diagnostic-1--socket",
            "dotnet-diagnostic-a-1-socket",
            "dotnet-diagnostic-1-2-3-socket",
            "dotnet-diagnostic-dsrouter-1-2-socket",
            "dotnet-diagnostic-1-2-socket.bak",
            "xdotnet-diagnostic-1-2-socket",
            "dotnet-diagnostic-+1-2-socket",
            "dotnet-diagnostic-99999999999-2-socket",
        ] {
            assert_eq!(parse_socket_name(bad), None, "{bad}");
        }
    }

    #[test]
    fn stat_fields() {
        let stat = "5428 (dotnet) S 1 5428 5428 0 -1 4194560 5000 0 0 0 10 3 0 0 20 0 \
                    12 0 92664 3000000000 5000 18446744073709551615";
        assert_eq!(parse_stat_starttime(stat), Some(92664));
        assert_eq!(parse_stat_state(stat), Some('S'));
        // comm with spaces and parentheses.
        let odd = "77 (a) b (c) Z 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 4242 x";
        assert_eq!(parse_stat_starttime(odd), Some(4242));
        assert_eq!(parse_stat_state(odd), Some('Z'));
        assert_eq!(parse_stat_starttime("garbage"), None);
        assert_eq!(parse_stat_starttime("1 (x) S 1 2"), None);
    }

    #[test]
    fn status_fields() {
        let status = "Name:\tdotnet\nUid:\t1000\t1001\t1000\t1000\nNSpid:\t680\t50\t1\n";
        assert_eq!(parse_status_euid(status), Some(1001));
        assert_eq!(parse_nspid(status), Some(1));
        assert_eq!(parse_nspid("NSpid:\t680\n"), None);
        assert_eq!(parse_nspid("Name:\tx\n"), None);
    }

    #[test]
    fn environment() {
        let env = b"PATH=/bin\0TMPDIR=/var/tmp\0EMPTY=\0TMPDIR=/last\0";
        assert_eq!(environ_get(env, "TMPDIR").as_deref(), Some("/last"));
        assert_eq!(environ_get(env, "EMPTY").as_deref(), Some(""));
        assert_eq!(environ_get(env, "NOPE"), None);
        assert_eq!(
            diagnostics_disabled_by(b"A=1\0DOTNET_EnableDiagnostics=0\0"),
            Some(("DOTNET_EnableDiagnostics".into(), "0".into()))
        );
        assert_eq!(
            diagnostics_disabled_by(b"DOTNET_EnableDiagnostics_IPC=0x0\0"),
            Some(("DOTNET_EnableDiagnostics_IPC".into(), "0x0".into()))
        );
        assert_eq!(
            diagnostics_disabled_by(b"COMPlus_EnableDiagnostics=0\0"),
            Some(("COMPlus_EnableDiagnostics".into(), "0".into()))
        );
        assert_eq!(
            diagnostics_disabled_by(b"DOTNET_EnableDiagnostics=1\0"),
            None
        );
        assert_eq!(
            diagnostics_disabled_by(b"DOTNET_EnableDiagnostics_Debugger=0\0"),
            None
        );
    }

    #[test]
    fn coreclr_in_maps() {
        let maps = b"7f00-7f01 r-xp 0 08:01 1 /usr/share/dotnet/shared/Microsoft.NETCore.App/10.0.12/libcoreclr.so\n";
        assert!(maps_has_coreclr(maps));
        assert!(!maps_has_coreclr(
            b"7f00-7f01 r-xp 0 08:01 1 /usr/lib/libc.so.6\n"
        ));
        assert!(!maps_has_coreclr(
            b"7f00-7f01 r-xp 0 08:01 1 /x/libcoreclrtraceptprovider.so\n"
        ));
    }

    #[test]
    fn picks_newest_live_socket() {
        use std::os::unix::net::UnixListener;
        let dir = tempfile::tempdir().unwrap();
        let old = dir.path().join("dotnet-diagnostic-77-100-socket");
        let new = dir.path().join("dotnet-diagnostic-77-200-socket");
        let stale = dir.path().join("dotnet-diagnostic-77-300-socket");
        let other = dir.path().join("dotnet-diagnostic-78-100-socket");
        let _a = UnixListener::bind(&old).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let _b = UnixListener::bind(&new).unwrap();
        let _c = UnixListener::bind(&other).unwrap();
        fs::write(dir.path().join("dotnet-diagnostic-77-999-socket-not"), b"").unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let _d = UnixListener::bind(&stale).unwrap();
        // A regular file with a socket name is ignored.
        fs::write(dir.path().join("dotnet-diagnostic-77-200-socketx"), b"").unwrap();

        assert_eq!(scan_dir(dir.path()).len(), 4);
        let plan = SearchPlan {
            name_pid: 77,
            dirs: vec![dir.path().to_path_buf()],
            other_namespace: false,
        };
        // Unknown start time: newest wins.
        assert_eq!(pick_socket(&plan, None), Some(stale.clone()));
        // Known start time: only the matching key counts.
        assert_eq!(pick_socket(&plan, Some(100)), Some(old));
        assert_eq!(pick_socket(&plan, Some(200)), Some(new));
        assert_eq!(pick_socket(&plan, Some(12345)), None);
    }
}
