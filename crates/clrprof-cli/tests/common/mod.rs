//! Shared helpers for the CLI's acceptance tests: run a test app under `clrprof record`,
//! read the report as JSON.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use clrprof_testkit::BuiltApp;

pub mod pyroscope;
pub mod serve;

/// Held by tests whose assertions depend on timing (rates, CPU shares), so they do not
/// compete with each other for this machine's two cores.
pub fn timing_lock() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

/// `clrprof`, with the profiler library built and passed explicitly (`cargo test` does
/// not link the cdylib by itself).
/// `clrprof`, with the default SIGINT: a shell without job control starts background
/// commands with SIGINT ignored, which survives exec, and the tests that send Ctrl-C
/// to clrprof (or, through it, to the app) need the disposition a terminal gives.
pub fn clrprof() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_clrprof"));
    cmd.env("CLRPROF_PROFILER_PATH", clrprof_testkit::profiler_library());
    // SAFETY: between fork and exec only `signal`, which is async-signal-safe.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut cmd, || {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            Ok(())
        });
    }
    cmd
}

pub fn scenarios() -> BuiltApp {
    clrprof_testkit::app("Scenarios")
}

/// Builds what `clrprof record -- dotnet Scenarios.dll` needs (the profiler library, the
/// app; each a no-op once up to date) ahead of a test's time bound, so the bound measures
/// the run and not a build on a busy machine.
pub fn build_first() -> BuiltApp {
    let _ = clrprof_testkit::profiler_library();
    scenarios()
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

/// `clrprof report ARGS… TRACE` (text), which must succeed.
pub fn report_text_with(trace: &Path, args: &[&str]) -> String {
    let out = clrprof()
        .arg("report")
        .args(args)
        .arg(trace)
        .output()
        .expect("run clrprof report");
    assert!(
        out.status.success(),
        "clrprof report {args:?} failed: {}",
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

/// How many records of each kind the trace's intact blocks hold, as written (a record
/// that holds two events, such as `--args`' `EnterArgs`, counts once under its own kind).
pub fn record_kinds(trace: &Path) -> std::collections::BTreeMap<u8, u64> {
    let file = std::fs::read(trace).unwrap();
    let mut reader = clrprof_format::TraceReader::new(&file).unwrap();
    let mut kinds = std::collections::BTreeMap::new();
    for b in reader.blocks() {
        for r in b.unwrap().records() {
            *kinds.entry(r.unwrap().event.kind()).or_insert(0) += 1;
        }
    }
    kinds
}

/// `report --calls PATTERN --json`: the invocations, grouped by function, in call order.
pub fn invocations(
    trace: &Path,
    pattern: &str,
) -> std::collections::BTreeMap<String, Vec<serde_json::Value>> {
    let out = clrprof()
        .args(["report", "--calls", pattern, "--json"])
        .arg(trace)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "report --calls failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let all: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).expect("JSON");
    let mut by: std::collections::BTreeMap<String, Vec<serde_json::Value>> =
        std::collections::BTreeMap::new();
    for i in all {
        let name = i["function"].as_str().unwrap().to_string();
        by.entry(name).or_default().push(i);
    }
    by
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

/// The files of the agent library copies `pid` maps (those still on disk).
pub fn agent_copy_paths(pid: u32) -> Vec<PathBuf> {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
    let mut copies: Vec<PathBuf> = maps
        .lines()
        .filter_map(|l| l.find('/').map(|i| &l[i..]))
        .filter(|p| p.contains("libclrprof_profiler") && !p.ends_with(" (deleted)"))
        .map(PathBuf::from)
        .collect();
    copies.sort();
    copies.dedup();
    copies
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

/// glibc's thread arenas in `pid`: `(count, resident KiB)` (the bench reads them too).
pub use clrprof_testkit::malloc_arenas;

/// Whether the agent has left `pid`: none of its threads runs, and at most its one
/// resident copy is mapped, inert (the agent stays loaded between sessions, every attach
/// after the first names the same copy: docs/attach.md).
pub fn agent_gone(pid: u32) -> bool {
    agent_threads(pid).is_empty() && agent_copies(pid) <= 1
}

/// Whether a `record --pid` stderr says the detach finished (the library kept mapped,
/// inert, for the next attach; or unloaded, where the agent could not pin it).
pub fn says_detached(stderr: &str) -> bool {
    stderr.contains("library is unloaded") || stderr.contains("library stays mapped, inert")
}

/// Waits until the .NET process `pid` listens on its diagnostics socket (the runtime
/// creates it early in startup), so that an attach can be sent. Panics after 60 s.
pub fn wait_for_diagnostics(pid: u32) {
    let prefix = format!("dotnet-diagnostic-{pid}-");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let found = std::fs::read_dir(std::env::temp_dir())
            .into_iter()
            .flatten()
            .flatten()
            .any(|e| {
                let name = e.file_name();
                let name = name.to_string_lossy();
                name.starts_with(&prefix) && name.ends_with("-socket")
            });
        if found {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "pid {pid} opened no diagnostics socket in 60 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// What one `clrprof` run took.
pub struct Run {
    pub status: i32,
    pub wall: std::time::Duration,
    pub max_rss_mib: f64,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `clrprof ARGS…` and measures its wall time and peak RSS.
#[allow(clippy::zombie_processes)] // reaped by `wait4`, which also gives its rusage
pub fn measure(args: &[&str], dir: &Path) -> Run {
    let (out, err) = (dir.join("stdout"), dir.join("stderr"));
    let mut cmd = clrprof();
    let start = std::time::Instant::now();
    let child = cmd
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to overwrite.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: wait4 on the child just spawned (not waited for elsewhere), with valid
    // out-pointers to locals.
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as i32);
    let wall = start.elapsed();
    Run {
        status,
        wall,
        max_rss_mib: usage.ru_maxrss as f64 / 1024.0,
        stdout: std::fs::read_to_string(&out).unwrap_or_default(),
        stderr: std::fs::read_to_string(&err).unwrap_or_default(),
    }
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

/// `report --json` and `convert -f folded` of `trace` read on the caller's thread only
/// (`CLRPROF_READ_THREADS=1`), as they read by default (each trace thread's calls on one
/// of the machine's CPUs) and with `CLRPROF_READ_THREADS=2` (two workers, or decoding
/// ahead on a second thread where the work cannot be shared out by thread): the three
/// must be the same, byte for byte. Returns the report's JSON.
pub fn reads_the_same_on_one_and_two_threads(trace: &Path) -> serde_json::Value {
    let run = |args: &[&str], threads: Option<&str>| -> Vec<u8> {
        let mut cmd = clrprof();
        cmd.args(args).arg(trace);
        match threads {
            Some(n) => cmd.env(clrprof_format::READ_THREADS_ENV, n),
            None => cmd.env_remove(clrprof_format::READ_THREADS_ENV),
        };
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{args:?} of {}: {}",
            trace.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let mut bytes = out.stdout;
        bytes.extend_from_slice(b"\n--- stderr ---\n");
        bytes.extend_from_slice(&out.stderr);
        bytes
    };
    let report = run(&["report", "--json"], Some("1"));
    for threads in [None, Some("2")] {
        assert!(
            report == run(&["report", "--json"], threads),
            "report --json of {} differs with {}={threads:?}",
            trace.display(),
            clrprof_format::READ_THREADS_ENV
        );
    }
    let folded = |threads: Option<&str>| {
        let out = trace.with_extension(format!("{}.folded", threads.unwrap_or("default")));
        let stderr = run(
            &["convert", "-f", "folded", "-o", out.to_str().unwrap()],
            threads,
        );
        let bytes = std::fs::read(&out).unwrap();
        let _ = std::fs::remove_file(&out);
        (
            bytes,
            String::from_utf8_lossy(&stderr).replace(out.to_str().unwrap(), "OUT"),
        )
    };
    let one = folded(Some("1"));
    for threads in [None, Some("2")] {
        assert!(
            one == folded(threads),
            "convert -f folded of {} differs with {}={threads:?}",
            trace.display(),
            clrprof_format::READ_THREADS_ENV
        );
    }
    let end = report
        .windows(16)
        .position(|w| w == b"\n--- stderr ---\n")
        .unwrap_or(report.len());
    serde_json::from_slice(&report[..end]).expect("report --json prints JSON")
}
