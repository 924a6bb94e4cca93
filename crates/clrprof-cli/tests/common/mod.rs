//! Shared helpers for the CLI's acceptance tests: run a test app under `clrprof record`,
//! read the report as JSON.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use clrprof_testkit::BuiltApp;

/// Held by tests whose assertions depend on timing (rates, CPU shares), so they do not
/// compete with each other for this machine's two cores.
pub fn timing_lock() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

/// `clrprof`, with the profiler library built and passed explicitly (`cargo test` does
/// not link the cdylib by itself).
pub fn clrprof() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_clrprof"));
    cmd.env("CLRPROF_PROFILER_PATH", clrprof_testkit::profiler_library());
    cmd
}

pub fn scenarios() -> BuiltApp {
    clrprof_testkit::app("Scenarios")
}

/// A fresh directory for one test's files, under the target dir.
pub fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("clrprof-tests")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs `clrprof record <flags> -o <trace> -- dotnet Scenarios.dll <args>`.
pub fn record(trace: &Path, flags: &[&str], app_args: &[&str]) -> Output {
    record_app(&scenarios(), trace, flags, app_args)
}

/// Runs `clrprof record <flags> -o <trace> -- dotnet <app> <args>`; panics with its
/// output if it fails.
pub fn record_app(app: &BuiltApp, trace: &Path, flags: &[&str], app_args: &[&str]) -> Output {
    record_app_env(app, trace, flags, app_args, &[])
}

/// [`record_app`] with extra environment variables for clrprof and the app. The app runs
/// on the runtime it was built for (`app.dotnet`, and `DOTNET_ROOT` for .NET 8 and 9).
pub fn record_app_env(
    app: &BuiltApp,
    trace: &Path,
    flags: &[&str],
    app_args: &[&str],
    env: &[(&str, &str)],
) -> Output {
    let mut cmd = clrprof();
    cmd.arg("record").arg("-o").arg(trace).args(flags).arg("--");
    cmd.arg(&app.dotnet)
        .arg(&app.dll)
        .args(app_args)
        .envs(env.iter().copied());
    app.env(&mut cmd);
    let out = cmd.output().expect("run clrprof record");
    if !out.status.success() {
        panic!(
            "clrprof record on {:?} failed ({}):\nstdout:\n{}\nstderr:\n{}",
            app.runtime,
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    out
}

/// `clrprof report TRACE` (text), which must succeed.
pub fn report_text(trace: &Path) -> String {
    let out = clrprof()
        .arg("report")
        .arg(trace)
        .output()
        .expect("run clrprof report");
    assert!(
        out.status.success(),
        "clrprof report failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("the report is UTF-8")
}

pub fn report_json(trace: &Path) -> serde_json::Value {
    report_json_with(trace, &[])
}

/// `clrprof report --json ARGS… TRACE`, which must succeed.
pub fn report_json_with(trace: &Path, args: &[&str]) -> serde_json::Value {
    let out = clrprof()
        .arg("report")
        .arg("--json")
        .args(args)
        .arg(trace)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "report failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("report --json prints JSON")
}

/// `clrprof diff --json ARGS… BEFORE AFTER`, which must succeed.
pub fn diff_json(before: &Path, after: &Path, args: &[&str]) -> serde_json::Value {
    let out = clrprof()
        .args(["diff", "--json"])
        .args(args)
        .arg(before)
        .arg(after)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "diff failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("diff --json prints JSON")
}

/// A JSON file (an export) as a value.
pub fn json_file(path: &Path) -> serde_json::Value {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `clrprof convert -f FORMAT TRACE` (output next to the trace); panics on failure.
pub fn convert(trace: &Path, format: &str) {
    convert_with(trace, &["-f", format]);
}

/// `clrprof convert TRACE ARGS…`, which must succeed; returns its stderr.
pub fn convert_with(trace: &Path, args: &[&str]) -> String {
    let out = clrprof()
        .arg("convert")
        .args(args)
        .arg(trace)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "convert {args:?} failed: {stderr}");
    stderr
}

pub fn results(out: &Output) -> std::collections::BTreeMap<String, String> {
    clrprof_testkit::parse_results(&String::from_utf8_lossy(&out.stdout))
}

/// The figure right after `before` in a log line ("… 3375 of 3563 from the cache …").
pub fn number_after(line: &str, before: &str) -> u64 {
    let at = line
        .find(before)
        .unwrap_or_else(|| panic!("{before:?} in {line}"))
        + before.len();
    line[at..]
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("a number after {before:?} in {line}"))
}

/// The figure right before `after` in a log line.
pub fn number_before(line: &str, after: &str) -> u64 {
    let head = &line[..line
        .find(after)
        .unwrap_or_else(|| panic!("{after:?} in {line}"))];
    head.trim_end()
        .rsplit(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("a number before {after:?} in {line}"))
}

/// Whether this machine's glibc is one on which the agent keeps its library mapped after
/// a detach (2.34-2.36: unloading a library with thread-local storage there can corrupt
/// other libraries'; the agent's `os::process::unload_corrupts_tls`).
pub fn agent_stays_mapped() -> bool {
    // SAFETY: gnu_get_libc_version has no preconditions and returns a static string.
    let v = unsafe { std::ffi::CStr::from_ptr(libc::gnu_get_libc_version()) };
    let v = v.to_string_lossy();
    let mut parts = v.split('.');
    let major: u32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    let minor: u32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    major == 2 && (34..=36).contains(&minor)
}

/// The threads of `pid` whose names start with `clrprof` (the agent's own).
pub fn agent_threads(pid: u32) -> Vec<String> {
    let mut v = Vec::new();
    if let Ok(d) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        for e in d.flatten() {
            if let Ok(c) = std::fs::read_to_string(e.path().join("comm"))
                && c.starts_with("clrprof")
            {
                v.push(c.trim().to_string());
            }
        }
    }
    v
}

/// The distinct copies of the agent library `pid` maps.
pub fn agent_copies(pid: u32) -> usize {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
    let mut copies: Vec<&str> = maps
        .lines()
        .filter_map(|l| l.find('/').map(|i| &l[i..]))
        .filter(|p| p.contains("libclrprof_profiler"))
        .collect();
    copies.sort();
    copies.dedup();
    copies.len()
}

/// Whether the agent has left `pid`: none of its threads runs, and its library is
/// unmapped, or (where [`agent_stays_mapped`]) mapped only, inert.
pub fn agent_gone(pid: u32) -> bool {
    agent_threads(pid).is_empty() && (agent_stays_mapped() || agent_copies(pid) == 0)
}

/// Whether a `record --pid` stderr says the detach finished (the library unloaded, or
/// kept mapped and dormant where this glibc cannot unload it safely).
pub fn says_detached(stderr: &str) -> bool {
    stderr.contains("library is unloaded") || stderr.contains("library stays mapped, inert")
}

/// Runs `clrprof coverage -f json -o <dir>/coverage.json <flags> -- dotnet <app> <args>`;
/// returns the output and the report (`Value::Null` when none was written).
pub fn coverage_app(
    app: &BuiltApp,
    dir: &Path,
    flags: &[&str],
    app_args: &[&str],
) -> (Output, serde_json::Value) {
    let report = dir.join("coverage.json");
    let _ = std::fs::remove_file(&report);
    let mut cmd = clrprof();
    cmd.arg("coverage")
        .arg("-f")
        .arg("json")
        .arg("-o")
        .arg(&report)
        .args(flags)
        .arg("--");
    cmd.arg(&app.dotnet).arg(&app.dll).args(app_args);
    app.env(&mut cmd);
    let out = cmd.output().expect("run clrprof coverage");
    let json = std::fs::read(&report)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(serde_json::Value::Null);
    (out, json)
}
