//! Trace mode after attach: IL probes through ReJIT (docs/tracing.md). A long-running app
//! (`Scenarios serve`) runs a burst of calls while the probes are live; the report counts
//! every call exactly, against the app's own counters: calls that throw leave as often as
//! they enter, both instantiations of a generic method count, an async method counts once
//! per call. After the recording the probes are gone, the app's results are unchanged,
//! and the runtime keeps the library loaded, dormant.

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::*;

/// `Scenarios serve`, its stdout lines and its stderr lines (where the agent logs).
struct Serve {
    child: Child,
    pid: u32,
    stdin: ChildStdin,
    out: mpsc::Receiver<String>,
    err: mpsc::Receiver<String>,
}

fn lines(r: impl std::io::Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for l in BufReader::new(r).lines().map_while(Result::ok) {
            let _ = tx.send(l);
        }
    });
    rx
}

impl Serve {
    fn start() -> Serve {
        let mut child = scenarios()
            .command(&["serve"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let out = lines(child.stdout.take().unwrap());
        let err = lines(child.stderr.take().unwrap());
        let ready = out.recv_timeout(Duration::from_secs(60)).expect("READY");
        let pid = ready
            .trim()
            .strip_prefix("READY ")
            .unwrap()
            .parse()
            .unwrap();
        Serve {
            child,
            pid,
            stdin,
            out,
            err,
        }
    }

    /// Runs a burst and returns its RESULT values.
    fn burst(&mut self, n: u32) -> BTreeMap<String, String> {
        writeln!(self.stdin, "burst {n}").unwrap();
        loop {
            let l = self
                .out
                .recv_timeout(Duration::from_secs(60))
                .expect("burst result");
            if l.starts_with("RESULT burst=") {
                return clrprof_testkit::parse_results(&l);
            }
        }
    }

    /// Waits for an agent log line containing `needle` on the app's stderr.
    fn log_line(&self, needle: &str, timeout: Duration) -> String {
        let end = Instant::now() + timeout;
        let mut seen = Vec::new();
        while Instant::now() < end {
            if let Ok(l) = self.err.recv_timeout(Duration::from_millis(200)) {
                if l.contains(needle) {
                    return l;
                }
                seen.push(l);
            }
        }
        panic!("no {needle:?} in the app's stderr: {seen:#?}");
    }

    fn quit(mut self) {
        let _ = writeln!(self.stdin, "quit");
        let status = self.child.wait().unwrap();
        assert!(status.success(), "serve exited with {status}");
    }
}

fn functions(r: &serde_json::Value) -> BTreeMap<String, u64> {
    r["functions"]
        .as_array()
        .expect("functions")
        .iter()
        .map(|f| {
            (
                f["name"].as_str().unwrap().to_string(),
                f["calls"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn a_burst_while_probes_are_live_is_counted_exactly() {
    let dir = scratch("probes-burst");
    let trace = dir.join("t.clrprof");
    let mut app = Serve::start();
    // Before: the app's own results without probes.
    let before = app.burst(1000);
    let mut rec = clrprof()
        .args(["record", "--pid", &app.pid.to_string(), "-o"])
        .arg(&trace)
        .args(["--mode", "trace", "--include", "Scenarios.Serve.Burst*"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let installed = app.log_line("probes installed in", Duration::from_secs(60));
    assert!(installed.contains("installed in 5 methods"), "{installed}");
    let during = app.burst(1000);
    assert_eq!(during, before, "the app's results under the probes");
    // Ctrl-C ends the recording: the probes are removed, the library stays dormant.
    let int = Command::new("kill")
        .args(["-INT", &rec.id().to_string()])
        .status()
        .unwrap();
    assert!(int.success());
    let status = rec.wait().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut rec.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(status.success(), "record: {stderr}");
    assert!(stderr.contains("stays loaded, dormant"), "{stderr}");
    app.log_line("probes removed from 5 methods", Duration::from_secs(30));
    let after = app.burst(1000);
    assert_eq!(after, before, "the app's results after the probes");

    let r = report_json(&trace);
    let f = functions(&r);
    let n = 1000;
    assert_eq!(f.get("Scenarios.Serve.Burst"), Some(&1), "{f:#?}");
    assert_eq!(f.get("Scenarios.Serve.BurstCall"), Some(&n), "{f:#?}");
    assert_eq!(
        f.get("Scenarios.Serve.BurstThrow"),
        Some(&(n / 10)),
        "{f:#?}"
    );
    // One method body for both instantiations: int n times, string n/2 times.
    assert_eq!(
        f.get("Scenarios.Serve.BurstEcho"),
        Some(&(n + n / 2)),
        "{f:#?}"
    );
    // The kickoff method once per call (its state machine's MoveNext is not selected).
    assert_eq!(f.get("Scenarios.Serve.BurstAsync"), Some(&5), "{f:#?}");
    assert_eq!(f.len(), 5, "only the selected methods: {f:#?}");
    // Calls that throw leave through the finally: nothing unmatched, nothing unwound.
    let stats = &r["trace_stats"];
    assert_eq!(stats["unmatched_leaves"], 0, "{stats:#}");
    assert_eq!(stats["unwound_frames"], 0, "{stats:#}");
    assert_eq!(stats["open_at_end"], 0, "{stats:#}");
    // The app's own counters agree.
    assert_eq!(before["burst_call"], n.to_string());
    assert_eq!(before["burst_throw"], (n / 10).to_string());
    assert_eq!(before["burst_caught"], (n / 10).to_string());
    // The exact tree: Burst calls the others.
    let text = report_text(&trace);
    assert!(text.contains("Scenarios.Serve.Burst "), "{text}");
    app.quit();
}
