//! A running `Scenarios serve` (apps/README.md): a long-running app for the tests that
//! attach to a process, ask it for its results over stdin and read the agent's log on its
//! stderr.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use clrprof_testkit::BuiltApp;

/// How long `serve` may take to say `READY <pid>`, and to answer a command, on a busy
/// machine.
const READY_WITHIN: Duration = Duration::from_secs(60);
const ANSWER_WITHIN: Duration = Duration::from_secs(120);

/// `serve` running: its pid, its stdin for commands, its stdout and stderr lines (both
/// read as they come, so neither pipe ever fills and blocks the app).
pub struct Serve {
    pub child: Child,
    pub pid: u32,
    pub stdin: ChildStdin,
    pub out: mpsc::Receiver<String>,
    /// Where the agent logs.
    pub err: mpsc::Receiver<String>,
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
    /// Starts `app serve` with `env` added and waits for its `READY <pid>` line.
    pub fn start(app: &BuiltApp, env: &[(&str, &str)]) -> Serve {
        Self::start_with_stderr(app, env, Stdio::piped())
    }

    /// [`start`](Self::start) with the app's stderr given: when it is not piped here,
    /// [`err`](Self::err) stays empty.
    pub fn start_with_stderr(app: &BuiltApp, env: &[(&str, &str)], stderr: Stdio) -> Serve {
        let mut cmd = app.command(&["serve"]);
        cmd.envs(env.iter().copied());
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let out = lines(child.stdout.take().unwrap());
        let err = match child.stderr.take() {
            Some(e) => lines(e),
            None => mpsc::channel().1,
        };
        let ready = out.recv_timeout(READY_WITHIN).expect("READY line");
        let pid = ready
            .trim()
            .strip_prefix("READY ")
            .unwrap_or_else(|| panic!("READY <pid>, not {ready:?}"))
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

    /// Sends a command and waits for a line starting with `expect`.
    pub fn ask(&mut self, cmd: &str, expect: &str) -> String {
        writeln!(self.stdin, "{cmd}").unwrap();
        loop {
            let l = self
                .out
                .recv_timeout(ANSWER_WITHIN)
                .unwrap_or_else(|_| panic!("no {expect:?} answer to {cmd:?}"));
            if l.starts_with(expect) {
                return l;
            }
        }
    }

    /// [`ask`](Self::ask), returning the `key=value` pairs of the answer.
    pub fn ask_results(&mut self, cmd: &str, expect: &str) -> BTreeMap<String, String> {
        clrprof_testkit::parse_results(&self.ask(cmd, expect))
    }

    /// `burst n`: the app's counters of n calls of each kind.
    pub fn burst(&mut self, n: u32) -> BTreeMap<String, String> {
        self.ask_results(&format!("burst {n}"), "RESULT burst=")
    }

    /// `spin n`: nanoseconds for n calls of SpinCall.
    pub fn spin(&mut self, n: u32) -> f64 {
        self.ask_results(&format!("spin {n}"), "RESULT spin=")["spin_ns"]
            .parse()
            .unwrap()
    }

    /// Waits for an agent log line containing `needle` on the app's stderr.
    pub fn log_line(&self, needle: &str, timeout: Duration) -> String {
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

    /// The names of the app's threads (`/proc/PID/task/*/comm`).
    pub fn thread_names(&self) -> Vec<String> {
        let mut v = Vec::new();
        if let Ok(d) = std::fs::read_dir(format!("/proc/{}/task", self.pid)) {
            for e in d.flatten() {
                if let Ok(c) = std::fs::read_to_string(e.path().join("comm")) {
                    v.push(c.trim().to_string());
                }
            }
        }
        v
    }

    /// Quits, checks the app exited successfully and returns the stdout lines not read yet
    /// (among them the `RESULT runtime=` it prints on its way out).
    pub fn quit(mut self) -> Vec<String> {
        let _ = writeln!(self.stdin, "quit");
        let status = self.child.wait().unwrap();
        assert!(status.success(), "serve exited with {status}");
        // The reader thread ends at the pipe's end: everything printed is in the channel.
        self.out.iter().collect()
    }
}
