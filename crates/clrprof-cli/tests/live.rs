//! `clrprof dump` and `clrprof top` against real running apps: the stacks and hot methods
//! they show are the ones the apps say they are in, and the target is left as it was.

use crate::common;

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
    /// The app's later output lines.
    lines: mpsc::Receiver<String>,
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
            lines: rx,
        }
    }

    fn assert_unharmed(&mut self) {
        assert!(agent_gone(self.pid), "the profiler is still active");
        assert!(
            self.child.try_wait().unwrap().is_none(),
            "the target exited"
        );
    }

    /// Closes stdin: the app exits 0.
    fn quit(self) {
        self.quit_with_results();
    }

    /// Closes stdin, waits for the app to exit 0, and returns the RESULT lines it printed
    /// after READY.
    fn quit_with_results(mut self) -> std::collections::BTreeMap<String, String> {
        drop(self.stdin.take());
        let status = self.child.wait().unwrap();
        assert!(status.success(), "target exited with {status}");
        let rest: Vec<String> = self.lines.try_iter().collect();
        clrprof_testkit::parse_results(&rest.join("\n"))
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
    assert_eq!(t.results.len(), 6, "{:?}", t.results);
    // The line of blk-holder's Sleep call, as the app's own StackFrame(true) read it from
    // the PDB: dump's Holder frame (a caller, mapped at its return address − 1) must
    // show the same line.
    let holder_line: u64 = t.results["holder_line"].parse().unwrap();
    assert!(holder_line > 0, "the app read no line: {:?}", t.results);
    let holder = threads
        .iter()
        .find(|th| th["name"] == "blk-holder")
        .unwrap_or_else(|| panic!("no blk-holder in {v:#}"));
    let frame = holder["frames"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "Scenarios.Blocked.Holder")
        .unwrap_or_else(|| panic!("no Holder frame: {holder:#}"));
    assert_eq!(frame["line"], holder_line, "{frame:#}");
    assert!(
        frame["file"]
            .as_str()
            .is_some_and(|f| f.ends_with("Blocked.cs")),
        "{frame:#}"
    );
    for (name, method) in t.results.iter().filter(|(k, _)| k.starts_with("blk-")) {
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
                // The report's word for the wait (`clrprof_analysis::waits`), and the
                // frame that names it is the method the app says.
                assert_eq!(thread["waiting_in"]["kind"], kind, "{name}: {thread:#}");
                let frame = thread["waiting_in"]["frame"].as_str().unwrap_or("");
                assert!(frame.starts_with(method.as_str()), "{name}: {thread:#}");
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
    assert!(
        text.contains(&format!(
            "Scenarios.Blocked.Holder (Blocked.cs:{holder_line})"
        )),
        "{text}"
    );
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

/// The function names of `top --once`'s table, in order.
fn once_rows(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .skip_while(|l| !l.contains("FUNCTION"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .map(|l| l.split_whitespace().nth(2).unwrap_or("").to_string())
        .collect()
}

#[test]
fn top_once_shows_the_hot_method_first_and_detaches() {
    let _timing = timing_lock();
    let mut t = Target::start("serve");
    let out = clrprof()
        .args(["top", "--once", "--pid", &t.pid.to_string()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let rows = once_rows(&stdout);
    assert_eq!(rows[0], "Scenarios.Serve.ServeWork", "{stdout}");
    // The workers sleep between work items: their waits are not where the CPU went.
    assert!(
        !rows.iter().take(3).any(|r| r.contains("Sleep")),
        "{stdout}"
    );
    assert!(stdout.contains("serve-worker-1"), "{stdout}");
    assert!(says_detached(&stderr), "{stderr}");
    t.assert_unharmed();
    // --thread keeps one thread's samples.
    let out = clrprof()
        .args(["top", "--once", "--thread", "serve-worker-2"])
        .args(["--pid", &t.pid.to_string()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("serve-worker-2"), "{stdout}");
    assert!(!stdout.contains("serve-worker-1"), "{stdout}");
    // An exact name, as `report --thread`: a part of one keeps no thread.
    let out = clrprof()
        .args(["top", "--once", "--thread", "serve-worker"])
        .args(["--pid", &t.pid.to_string()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(!stdout.contains("serve-worker-"), "{stdout}");
    assert!(stdout.contains(" 0 samples"), "{stdout}");
    t.assert_unharmed();
    t.quit();
}

/// `top --alloc` on a thread that allocates 1 KiB arrays in `AllocLoop.Work`: the
/// allocation rate is all `byte[]`, all that method's, of the order the app itself
/// allocates at (its own counter over its run), the sampled objects are followed, and the
/// target is left as it was.
#[test]
fn top_alloc_shows_the_allocation_rate_by_type_and_by_the_app_method() {
    let _timing = timing_lock();
    let mut t = Target::start("alloc-loop");
    let started = Instant::now();
    let out = clrprof()
        .args(["top", "--once", "--alloc", "--interval", "3"])
        .args(["--pid", &t.pid.to_string()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(says_detached(&stderr), "{stderr}");
    t.assert_unharmed();
    // The app's own rate: its counter over its run.
    let results = t.quit_with_results();
    let app_mib_s = results["allocated"].parse::<f64>().unwrap()
        / f64::from(1 << 20)
        / started.elapsed().as_secs_f64();
    let line = stdout
        .lines()
        .find(|l| l.starts_with("ALLOCATIONS ~"))
        .unwrap_or_else(|| panic!("{stdout}"));
    let mib_s: f64 = line["ALLOCATIONS ~".len()..]
        .split(" MiB/s")
        .next()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    assert!(
        line.contains("sampled objects no GC has collected ~"),
        "{line}"
    );
    let first_after = |header: &str| {
        stdout
            .lines()
            .skip_while(|l| !l.contains(header))
            .nth(1)
            .unwrap_or("")
            .to_string()
    };
    let ty = first_after("TYPE");
    assert!(ty.ends_with("System.Byte[]"), "{stdout}");
    let method = first_after("APP METHOD");
    assert!(method.ends_with("Scenarios.AllocLoop.Work"), "{stdout}");
    // Work's self rate is the whole rate (the same figure, to its rounding).
    assert!(
        method
            .trim_start()
            .starts_with(&format!("{mib_s:.1} MiB/s")),
        "{stdout}"
    );
    // The window's estimate against the app's average: the same order (the loop sleeps
    // a millisecond after each 100 KiB, so its rate varies with the scheduler).
    assert!(
        mib_s > app_mib_s * 0.5 && mib_s < app_mib_s * 2.0,
        "top {mib_s} MiB/s, the app {app_mib_s:.1} MiB/s: {stdout}"
    );
}

/// `top --alloc` in a process whose runtime refuses the EventPipe session (provoked with
/// the agent's test switch): the allocations line names the refusal and its HRESULT, and
/// the CPU view goes on.
#[test]
fn top_alloc_names_a_refused_session_and_shows_the_cpu_view() {
    let _timing = timing_lock();
    let dir = scratch("top-alloc-refused");
    let app = scenarios();
    let out = clrprof()
        .current_dir(&dir)
        .env("CLRPROF_ALLOC_TEST_NO_PROVIDER", "1")
        .args(["top", "--once", "--alloc", "--interval", "2", "--"])
        .arg(&app.dotnet)
        .arg(&app.dll)
        .args(["hot", "seconds=30"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(
            "ALLOCATIONS: none, --alloc could not start: EventPipeStartSession failed: E_INVALIDARG"
        ),
        "{stdout}"
    );
    assert_eq!(once_rows(&stdout)[0], "Scenarios.Hot.HotA", "{stdout}");
}

#[test]
fn top_once_of_a_command_it_starts() {
    let _timing = timing_lock();
    let dir = scratch("top-launch");
    let app = scenarios();
    let out = clrprof()
        .current_dir(&dir)
        .args([
            "top",
            "--once",
            "--interval",
            "2",
            "--",
            app.dotnet.to_str().unwrap(),
        ])
        .arg(&app.dll)
        .args(["hot", "seconds=30"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // HotA takes 75 % of both threads' loop (the app measures it; tests/sample.rs).
    assert_eq!(once_rows(&stdout)[0], "Scenarios.Hot.HotA", "{stdout}");
}

/// `top --waits`: the lock the `waits` scenario's four threads take in turns is the
/// table's first row, about three threads' worth of waiting a second (one holds it while
/// the other three wait), with the method that took it.
#[test]
fn top_once_with_waits_shows_the_contended_lock() {
    let _timing = timing_lock();
    let dir = scratch("top-waits");
    let app = scenarios();
    let out = clrprof()
        .current_dir(&dir)
        .args([
            "top",
            "--once",
            "--waits",
            "--interval",
            "3",
            "--",
            app.dotnet.to_str().unwrap(),
        ])
        .arg(&app.dll)
        .args(["waits", "rounds=100"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = stdout
        .split("WAITS the runtime reported")
        .nth(1)
        .unwrap_or_else(|| panic!("{stdout}"));
    let first = table.lines().nth(2).unwrap_or_default();
    assert!(first.contains("Scenarios.Ledger"), "{stdout}");
    assert!(first.ends_with("Scenarios.Waits.TakeLedger"), "{stdout}");
    let per_s: f64 = first
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    // ms waited per second: up to 3000 (three waiters); well above one waiter's worth.
    assert!(per_s > 1000.0 && per_s < 3300.0, "{stdout}");
}

/// A tmux server of this test's own (never the user's).
struct Tmux {
    socket: String,
}

impl Tmux {
    fn new(name: &str) -> Tmux {
        Tmux {
            socket: format!("clrprof-{name}-{}", std::process::id()),
        }
    }

    fn run(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .expect("tmux (the terminal tests need it installed)");
        // A failing tmux says why on stderr: keep it for the assertion messages.
        let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.push_str(&String::from_utf8_lossy(&out.stderr));
        text
    }

    fn screen(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", "top"])
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        self.run(&["kill-server"]);
    }
}

/// The first row of `top`'s table on the screen.
fn first_row(screen: &str) -> Option<String> {
    let mut lines = screen.lines().skip_while(|l| !l.contains("FUNCTION"));
    lines.next()?;
    lines.next().map(|l| l.trim().to_string())
}

#[test]
fn top_in_a_terminal_shows_the_hot_method_within_3_s_and_q_detaches() {
    let _timing = timing_lock();
    let mut t = Target::start("serve");
    let bin = env!("CARGO_BIN_EXE_clrprof");
    let lib = clrprof_testkit::profiler_library();
    for quit_key in ["q", "C-c"] {
        // A server of its own per round: the last one may still be going away.
        let tmux = Tmux::new(&format!("top-{}", quit_key.len()));
        let started = Instant::now();
        // The pane stays after clrprof exits, to read its last words.
        tmux.run(&[
            "new-session",
            "-d",
            "-x",
            "200",
            "-y",
            "50",
            "-s",
            "top",
            &format!(
                "CLRPROF_PROFILER_PATH={} {bin} top --pid {}; echo CLRPROF-EXIT=$?; sleep 60",
                lib.display(),
                t.pid
            ),
        ]);
        let mut screen = String::new();
        let shown = wait_until(Duration::from_secs(10), || {
            screen = tmux.screen();
            first_row(&screen).is_some_and(|r| r.ends_with("Scenarios.Serve.ServeWork"))
        });
        let took = started.elapsed();
        assert!(
            shown,
            "({quit_key} round) hot method not in the first row after {took:?}:\n{screen}"
        );
        assert!(
            took <= Duration::from_secs(3),
            "the hot method showed after {took:?} (at most 3 s)"
        );
        assert!(screen.contains("serve-worker"), "{screen}");
        // Sort keys and pause change the header.
        tmux.run(&["send-keys", "-t", "top", "t"]);
        assert!(wait_until(Duration::from_secs(5), || tmux
            .screen()
            .contains("sort: total")));
        tmux.run(&["send-keys", "-t", "top", "p"]);
        assert!(wait_until(Duration::from_secs(5), || tmux
            .screen()
            .contains("PAUSED")));
        tmux.run(&["send-keys", "-t", "top", quit_key]);
        assert!(
            wait_until(Duration::from_secs(20), || tmux
                .screen()
                .contains("CLRPROF-EXIT=0")),
            "{quit_key} did not end top:\n{}",
            tmux.screen()
        );
        let last = tmux.screen();
        assert!(says_detached(&last), "{last}");
        t.assert_unharmed();
    }
    t.quit();
}

#[test]
fn top_without_a_terminal_or_with_a_command_that_is_not_dotnet_says_what_to_do() {
    // stdout is a pipe here.
    let out = clrprof().args(["top", "--pid", "1"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("use `clrprof top --once`"), "{err}");
    let dir = scratch("top-not-dotnet");
    let out = clrprof()
        .current_dir(&dir)
        .args(["top", "--once", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("before the profiler started: is it a .NET (CoreCLR) program?"),
        "{err}"
    );
}
