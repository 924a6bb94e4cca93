//! A trace whose target was killed says so: no end record, so `report` warns that it was
//! cut short and when, and its times are right although the kill came before the
//! writer's periodic clock-sync point (1 s): the first block calibrates the clock.

use crate::common;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::*;

/// The pid in the trace header, once the agent has written it.
fn header_pid(trace: &Path) -> Option<u32> {
    let bytes = std::fs::read(trace).ok()?;
    let (header, _) = clrprof_format::Header::parse(&bytes).ok()?;
    Some(header.meta.pid)
}

/// Records `scenario` (which runs 20 s) in `mode`, SIGKILLs the app (not the CLI) ~0.4 s
/// after its trace header appeared, and returns the trace's report and the wall time from
/// header to kill.
fn record_and_kill(
    name: &str,
    mode: &str,
    scenario: &str,
) -> (serde_json::Value, String, Duration) {
    let dir = scratch(name);
    let trace = dir.join("killed.clrprof");
    let app = scenarios();
    let mut cmd = clrprof();
    cmd.arg("record")
        .arg("-o")
        .arg(&trace)
        .args(["--mode", mode])
        .arg("--")
        .arg(&app.dotnet)
        .arg(&app.dll)
        .args([scenario, "20"])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    app.env(&mut cmd);
    let mut rec = cmd.spawn().expect("run clrprof record");
    let deadline = Instant::now() + Duration::from_secs(60);
    let (pid, seen) = loop {
        if let Some(pid) = header_pid(&trace) {
            break (pid, Instant::now());
        }
        assert!(Instant::now() < deadline, "no trace header within 60 s");
        std::thread::sleep(Duration::from_millis(2));
    };
    std::thread::sleep(Duration::from_millis(400));
    // SAFETY: kill(2) with a pid read from the trace header: the app, started by `rec`,
    // which is still running (it runs 20 s); the call only sends a signal.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGKILL) }, 0);
    let wall = seen.elapsed();
    let _ = rec.wait();
    let json = report_json(&trace);
    let out = clrprof().arg("report").arg(&trace).output().unwrap();
    assert!(out.status.success());
    (
        json,
        String::from_utf8_lossy(&out.stderr).into_owned(),
        wall,
    )
}

#[test]
fn a_killed_target_is_reported_cut_short_with_its_real_duration() {
    let _timing = timing_lock();
    // Each keeps its mode's records coming: samples of two busy threads; threads started
    // and ended all the time.
    for (mode, scenario) in [("sample", "hot"), ("events", "churn")] {
        let (json, stderr, wall) = record_and_kill(&format!("cut-short-{mode}"), mode, scenario);
        let warnings: Vec<&str> = json["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w.as_str().unwrap())
            .collect();
        let cut: Vec<&&str> = warnings
            .iter()
            .filter(|w| w.contains("cut short"))
            .collect();
        assert_eq!(cut.len(), 1, "{mode}: {warnings:?}");
        assert!(cut[0].contains("its last event is "), "{}", cut[0]);
        assert!(
            stderr.contains("the trace was cut short"),
            "{mode}: report printed no warning: {stderr}"
        );
        let duration = json["trace"]["duration_ns"].as_u64().unwrap() as f64 / 1e9;
        let wall = wall.as_secs_f64();
        eprintln!("{mode}: killed after {wall:.3} s, trace duration {duration:.3} s: {cut:?}");
        assert!(
            (0.7 * wall..=1.3 * wall).contains(&duration),
            "{mode}: duration {duration:.3} s for {wall:.3} s of recording"
        );
    }
}
