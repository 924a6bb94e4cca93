//! `clrprof-bench heap`: a heap of a given number of objects (the `heap` scenario: a linked
//! list of 2/3 of them under a static, the rest held by a local), one `clrprof heap
//! --pid` snapshot, then `clrprof report` of it. Prints the target's pause, objects
//! recorded per second of pause, bytes per object in the file, and the report's time and
//! peak memory (GNU time's maximum resident set size).

use std::io::BufRead;
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, bail};

pub fn run(objects: u64) -> Result<()> {
    let clrprof = crate::clrprof()?;
    let app = clrprof_testkit::app("Scenarios");
    let n = (objects * 2 / 3).max(3);
    let started = Instant::now();
    let mut child = crate::dotnet_app(&app, &["heap", &n.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()?;
    let mut lines = std::io::BufReader::new(child.stdout.take().context("stdout")?).lines();
    let pid: u32 = loop {
        let l = lines.next().context("the app ended before READY")??;
        if let Some(p) = l.strip_prefix("READY ") {
            break p.trim().parse()?;
        }
    };
    let built = started.elapsed();
    let trace = crate::scratch().join("heap.clrprof");
    // The bench's own file from a previous run: `clrprof heap` never writes over one.
    let _ = std::fs::remove_file(&trace);
    let t = Instant::now();
    let out = Command::new(&clrprof)
        .args([
            "heap",
            "--pid",
            &pid.to_string(),
            "--json",
            "--top",
            "5",
            "-o",
        ])
        .arg(&trace)
        .output()?;
    let snapshot_wall = t.elapsed();
    drop(child.stdin.take());
    let _ = child.wait();
    if !out.status.success() {
        bail!(
            "clrprof heap failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    let h = &v["heap"];
    let recorded = h["objects"].as_u64().unwrap_or(0);
    let references = h["references"].as_u64().unwrap_or(0);
    let pause_ms = h["pause_ms"].as_f64().unwrap_or(0.0);
    let lost = h["lost"].as_u64().unwrap_or(0);
    let bytes = std::fs::metadata(&trace)?.len();

    // The report on its own, under GNU time for the peak memory.
    let t = Instant::now();
    let rep = Command::new("/usr/bin/time")
        .args(["-f", "%M %U %S"])
        .arg(&clrprof)
        .arg("report")
        .arg(&trace)
        .stdout(Stdio::null())
        .output()
        .context("running /usr/bin/time (GNU time)")?;
    let report_s = t.elapsed().as_secs_f64();
    if !rep.status.success() {
        bail!(
            "clrprof report failed: {}",
            String::from_utf8_lossy(&rep.stderr)
        );
    }
    // GNU time's last line: peak KB, user s, system s.
    let stderr = String::from_utf8_lossy(&rep.stderr);
    let figures: Vec<f64> = stderr
        .lines()
        .last()
        .unwrap_or("")
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    let (peak_kb, cpu_s) = match figures[..] {
        [kb, user, sys] => (kb, user + sys),
        _ => (0.0, 0.0),
    };

    println!(
        "heap snapshot of {recorded} objects, {references} references (app built its heap in {:.1} s)",
        built.as_secs_f64()
    );
    println!("  target paused (forced GC + walk): {pause_ms:.0} ms; objects or roots lost: {lost}");
    println!(
        "  objects recorded per second of pause: {:.2} M",
        recorded as f64 / (pause_ms / 1e3).max(1e-9) / 1e6
    );
    println!(
        "  file: {:.1} MB, {:.1} bytes per object, {:.1} bytes per object + reference",
        bytes as f64 / 1e6,
        bytes as f64 / recorded.max(1) as f64,
        bytes as f64 / (recorded + references).max(1) as f64
    );
    println!(
        "  clrprof heap (attach, snapshot, detach, report): {:.1} s",
        snapshot_wall.as_secs_f64()
    );
    println!(
        "  clrprof report: {report_s:.1} s ({cpu_s:.1} s of CPU), peak memory {:.0} MB",
        peak_kb / 1024.0
    );
    Ok(())
}
