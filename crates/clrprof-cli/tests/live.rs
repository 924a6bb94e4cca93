//! `clrprof dump` and `clrprof top` against real running apps: the stacks and hot methods
//! they show are the ones the apps say they are in, and the target is left as it was.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::*;

/// A running `Scenarios <scenario>` that prints `READY <pid>` and runs until its stdin
/// closes.
struct Target {
    child: Child,
    pid: u32,
    stdin: Option<ChildStdin>,
    /// The RESULT lines printed before READY.
    results: std::collections::BTreeMap<String, String>,
}

impl Target {
    fn start(scenario: &str) -> Target {
        let mut child = scenarios()
            .command(&[scenario])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let (tx, rx) = mpsc::channel();
        let out = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines().map_while(Result::ok) {
                let _ = tx.send(l);
            }
        });
        let mut before = String::new();
        let pid = loop {
            let l = rx
                .recv_timeout(Duration::from_secs(60))
                .expect("READY line");
            if let Some(p) = l.trim().strip_prefix("READY ") {
                break p.parse().unwrap();
            }
            before.push_str(&l);
            before.push('\n');
        };
        Target {
            child,
            pid,
            stdin,
            results: clrprof_testkit::parse_results(&before),
        }
    }

    fn maps(&self) -> String {
        std::fs::read_to_string(format!("/proc/{}/maps", self.pid)).unwrap_or_default()
    }

    fn assert_unharmed(&mut self) {
        assert!(
            !self.maps().contains("libclrprof_profiler"),
            "the profiler library is still mapped"
        );
        assert!(
            self.child.try_wait().unwrap().is_none(),
            "the target exited"
        );
    }

    /// Closes stdin: the app exits 0.
    fn quit(mut self) {
        drop(self.stdin.take());
        let status = self.child.wait().unwrap();
        assert!(status.success(), "target exited with {status}");
    }
}

#[test]
fn dump_shows_each_thread_in_the_method_the_app_says_it_is_blocked_in() {
    let mut t = Target::start("blocked");
    let out = clrprof()
        .args(["dump", "--json", "--pid", &t.pid.to_string()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let threads = v["threads"].as_array().unwrap();
    assert_eq!(t.results.len(), 5, "{:?}", t.results);
    for (name, method) in &t.results {
        let thread = threads
            .iter()
            .find(|th| th["name"] == name.as_str())
            .unwrap_or_else(|| panic!("no thread {name} in {v:#}"));
        let frames: Vec<&str> = thread["frames"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["name"].as_str().unwrap())
            .collect();
        // .NET 10's Monitor.Enter is an inlined fast path whose waiting part is
        // `Monitor.Enter_Slowpath`: the method or one of its parts is on the stack.
        assert!(
            frames.iter().any(|f| f.starts_with(method.as_str())),
            "{name} should be in {method}: {frames:?}"
        );
        let expected_kind = match name.as_str() {
            "blk-lock" => Some("lock"),
            "blk-sleep" | "blk-holder" => Some("sleep"),
            "blk-join" => Some("join"),
            _ => None,
        };
        match expected_kind {
            Some(kind) => {
                assert_eq!(thread["state"], "waiting", "{name}: {thread:#}");
                assert_eq!(thread["waiting_in"]["kind"], kind, "{name}: {thread:#}");
            }
            None => {
                assert_eq!(frames[0], method, "{name} runs its loop: {frames:?}");
                assert_eq!(thread["state"], "running", "{name}: {thread:#}");
            }
        }
    }
    t.assert_unharmed();
    // The text form names the same threads and calls.
    let text = clrprof()
        .args(["dump", "--pid", &t.pid.to_string()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("\"blk-lock\": waiting, in lock (System.Threading.Monitor.Enter"),
        "{text}"
    );
    assert!(text.contains("\"blk-spin\": running"), "{text}");
    t.assert_unharmed();
    t.quit();
}

#[test]
fn dump_of_a_process_that_is_not_dotnet_says_so() {
    let mut sleeper = Command::new("sleep").arg("30").spawn().unwrap();
    let out = clrprof()
        .args(["dump", "--pid", &sleeper.id().to_string()])
        .output()
        .unwrap();
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("is not a .NET (CoreCLR) process"), "{err}");
}

#[allow(dead_code)]
fn wait_until(timeout: Duration, mut f: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + timeout;
    while Instant::now() < end {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}
