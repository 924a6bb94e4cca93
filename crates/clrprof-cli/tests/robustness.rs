//! What happens when things go wrong: bad configuration, a killed target, bad files.

use crate::common;

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::Duration;

use common::*;

#[test]
fn bad_configuration_declines_and_the_app_runs_unprofiled() {
    let dir = scratch("badconfig");
    let trace = dir.join("t.clrprof");
    let app = scenarios();
    let out = clrprof()
        .args(["record", "--mode", "events", "-o"])
        .arg(&trace)
        .arg("--")
        .arg(clrprof_testkit::dotnet())
        .arg(&app.dll)
        .args(["exceptions", "3"])
        .env("CLRPROF_BUFFER_KB", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The app ran and printed its own results…
    assert_eq!(results(&out)["exceptions"], "3", "{stderr}");
    // …the agent said why it declined…
    assert!(
        stderr.contains("invalid CLRPROF_BUFFER_KB=\"1\""),
        "{stderr}"
    );
    assert!(stderr.contains("runs unprofiled"), "{stderr}");
    // …and record explains that no trace exists, with a failing exit code.
    assert!(stderr.contains("no trace was written"), "{stderr}");
    assert!(!out.status.success());
    assert!(!trace.exists() || std::fs::metadata(&trace).unwrap().len() == 0);
}

/// Starts `clrprof record --mode events -- dotnet Scenarios.dll wait` and returns it with
/// the app's first line (`READY <pid>`).
fn record_waiting_app(trace: &std::path::Path) -> (std::process::Child, String) {
    let app = scenarios();
    // (`clrprof()` gives it the default SIGINT, which the Ctrl-C test needs.)
    let mut child = clrprof()
        .args(["record", "--mode", "events", "-q", "-o"])
        .arg(trace)
        .arg("--")
        .arg(clrprof_testkit::dotnet())
        .arg(&app.dll)
        .arg("wait")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    (child, line)
}

#[test]
fn a_killed_target_leaves_a_readable_trace() {
    let dir = scratch("killed");
    let trace = dir.join("t.clrprof");
    let (mut child, line) = record_waiting_app(&trace);
    let pid: i32 = line
        .trim()
        .strip_prefix("READY ")
        .expect("READY line")
        .parse()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    // SIGKILL the .NET process itself: no Shutdown callback, no final flush.
    // SAFETY: plain syscall on a pid we started.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(128 + 9));
    let r = report_json(&trace);
    assert!(
        r["events"]["modules_loaded"].as_u64().unwrap() > 3,
        "{:#}",
        r["events"]
    );
    assert_eq!(r["events"]["runtime_shutdowns"], 0);
}

#[test]
fn garbage_files_get_a_clear_error() {
    let dir = scratch("garbage");
    let path = dir.join("random.clrprof");
    std::fs::write(&path, b"this is not a trace at all, just text").unwrap();
    let out = clrprof().arg("report").arg(&path).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("not a readable clrprof trace"), "{stderr}");
    assert!(stderr.contains("not a clrprof trace"), "{stderr}");

    let empty = dir.join("empty.clrprof");
    std::fs::write(&empty, b"").unwrap();
    let out = clrprof().arg("report").arg(&empty).output().unwrap();
    assert_eq!(out.status.code(), Some(2));

    let missing = dir.join("missing.clrprof");
    let out = clrprof().arg("report").arg(&missing).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read"));
}

#[test]
fn a_truncated_trace_reports_what_it_has_with_a_warning() {
    let dir = scratch("truncated");
    let trace = dir.join("t.clrprof");
    record(&trace, &["--mode", "events"], &["exceptions", "7"]);
    let bytes = std::fs::read(&trace).unwrap();
    let cut = dir.join("cut.clrprof");
    std::fs::write(&cut, &bytes[..bytes.len() - 7]).unwrap();
    let out = clrprof()
        .arg("report")
        .arg("--json")
        .arg(&cut)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("warning"), "{stderr}");
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(!r["warnings"].as_array().unwrap().is_empty());
}

#[test]
fn a_command_that_is_not_dotnet_keeps_its_exit_code() {
    let dir = scratch("notdotnet");
    let out = clrprof()
        .args(["record", "--mode", "events", "-o"])
        .arg(dir.join("t.clrprof"))
        .args(["--", "sh", "-c", "exit 3"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("the profiler did not load"), "{e}");
    // The fix: how a .NET app is run under clrprof.
    assert!(e.contains("clrprof record -- dotnet app.dll"), "{e}");
}

#[test]
fn ctrl_c_reaches_the_app_and_its_exit_code_comes_back() {
    let dir = scratch("ctrl-c");
    let trace = dir.join("t.clrprof");
    let (mut child, line) = record_waiting_app(&trace);
    assert!(line.starts_with("READY"), "{line}");
    std::thread::sleep(Duration::from_millis(300));
    // Ctrl-C delivered to clrprof alone (as from a script): it must pass it on.
    // SAFETY: plain syscall on a pid we started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    // Keep the app's stdin open until it has ended: `wait` closes it first, and the app
    // ends with 0 at end of input, which on a loaded machine can come before the signal.
    let stdin = child.stdin.take();
    let status = child.wait().unwrap();
    drop(stdin);
    // .NET ends on SIGINT with exit code 130 (128 + SIGINT); record returns it.
    assert_eq!(status.code(), Some(130), "{status}");
    // .NET ends on SIGINT without calling the profiler's Shutdown; every block written
    // before (the writer flushes every 20 ms) is in the trace.
    let r = report_json(&trace);
    assert!(
        r["events"]["modules_loaded"].as_u64().unwrap() > 3,
        "{:#}",
        r["events"]
    );
    assert!(
        r["threads"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "clrprof-busy")
    );
}
