//! A tiny .NET console app to test against, built once per test binary, and guards that
//! kill the processes a test starts.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Project name; the app is `{APP_NAME}.dll`.
pub const APP_NAME: &str = "ClrprofIpcTestApp";

/// Prints READY, then sleeps for `args[0]` seconds (default 60).
const PROGRAM: &str = r#"using System;
using System.Threading;

Console.WriteLine("READY");
Console.Out.Flush();
int seconds = args.Length > 0 ? int.Parse(args[0]) : 60;
Thread.Sleep(TimeSpan.FromSeconds(seconds));
"#;

/// Environment for every `dotnet` invocation: quiet, offline-friendly, and leaving no
/// build servers behind (they would be .NET processes with diagnostics sockets too).
const DOTNET_ENV: [(&str, &str); 6] = [
    ("DOTNET_CLI_TELEMETRY_OPTOUT", "1"),
    ("DOTNET_NOLOGO", "1"),
    ("DOTNET_SKIP_FIRST_TIME_EXPERIENCE", "1"),
    ("DOTNET_CLI_USE_MSBUILD_SERVER", "0"),
    ("DOTNET_GENERATE_ASPNET_CERTIFICATE", "false"),
    ("MSBUILDDISABLENODEREUSE", "1"),
];

/// Variables that would change what the tests observe if inherited.
const SCRUBBED_ENV: [&str; 6] = [
    "DOTNET_EnableDiagnostics",
    "DOTNET_EnableDiagnostics_IPC",
    "DOTNET_DiagnosticPorts",
    "DOTNET_DefaultDiagnosticPortSuspend",
    "CORECLR_ENABLE_PROFILING",
    "COMPlus_EnableDiagnostics",
];

/// The built app.
pub struct TestApp {
    /// Project directory.
    pub dir: PathBuf,
    /// `out/{APP_NAME}.dll`.
    pub dll: PathBuf,
}

fn run(cmd: &mut Command, what: &str) {
    let out = cmd
        .envs(DOTNET_ENV)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot run dotnet: {e}"));
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Builds the app with `dotnet new console` + `dotnet build` the first time it is called
/// in this test binary.
pub fn test_app() -> &'static TestApp {
    static APP: OnceLock<TestApp> = OnceLock::new();
    APP.get_or_init(|| {
        // One directory per test binary under cargo's scratch space for integration
        // tests (inside the target directory), rebuilt from scratch on each run.
        let binary = std::env::current_exe()
            .ok()
            .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "tests".into());
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("testapp-{binary}"));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create test app dir");
        let started = Instant::now();
        run(
            Command::new("dotnet")
                .args(["new", "console", "--force", "-n", APP_NAME, "-o"])
                .arg(&dir),
            "dotnet new console",
        );
        std::fs::write(dir.join("Program.cs"), PROGRAM).expect("write Program.cs");
        run(
            Command::new("dotnet")
                .args([
                    "build",
                    "-c",
                    "Release",
                    "--nologo",
                    "-nodeReuse:false",
                    "-p:UseSharedCompilation=false",
                    "-o",
                ])
                .arg(dir.join("out"))
                .current_dir(&dir),
            "dotnet build",
        );
        let dll = dir.join("out").join(format!("{APP_NAME}.dll"));
        assert!(dll.exists(), "{} was not built", dll.display());
        eprintln!("built {} in {:.1?}", dll.display(), started.elapsed());
        TestApp { dir, dll }
    })
}

/// A child process killed (and reaped) on drop.
pub struct Running {
    child: Child,
    /// Its pid.
    pub pid: u32,
    ready: Option<mpsc::Receiver<String>>,
}

impl Running {
    /// Whether it has not exited yet.
    pub fn is_running(&mut self) -> bool {
        self.child.try_wait().expect("try_wait").is_none()
    }

    /// Sends SIGKILL and reaps it, leaving any socket file in place.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Waits for a stdout line equal to `line`.
    pub fn wait_for_line(&mut self, line: &str, timeout: Duration) {
        let rx = self.ready.as_ref().expect("stdout not captured");
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(l) if l.trim() == line => return,
                Ok(_) => {}
                Err(e) => panic!("pid {}: no {line:?} line within {timeout:?}: {e}", self.pid),
            }
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        remove_sockets_of(self.pid);
    }
}

/// Removes the diagnostics sockets a killed child left behind (SIGKILL gives the runtime
/// no chance to delete its own).
pub fn remove_sockets_of(pid: u32) {
    for dir in [clrprof_ipc::endpoint::temp_dir(), "/tmp".into()] {
        for sock in clrprof_ipc::endpoint::scan_dir(&dir) {
            if sock.pid == pid {
                let _ = std::fs::remove_file(&sock.path);
            }
        }
    }
}

fn spawn_capturing(mut cmd: Command) -> Running {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    Running {
        pid: child.id(),
        child,
        ready: Some(rx),
    }
}

/// Starts the app with extra environment variables, without waiting for it.
pub fn spawn_app(env: &[(&str, &str)]) -> Running {
    let app = test_app();
    let mut cmd = Command::new("dotnet");
    cmd.arg(&app.dll).arg("60").envs(DOTNET_ENV);
    for name in SCRUBBED_ENV {
        cmd.env_remove(name);
    }
    cmd.envs(env.iter().copied());
    spawn_capturing(cmd)
}

/// Starts the app and waits until it printed READY (its runtime, and so its diagnostics
/// server, is up by then).
pub fn start_app(env: &[(&str, &str)]) -> Running {
    let mut app = spawn_app(env);
    app.wait_for_line("READY", Duration::from_secs(30));
    app
}

/// Starts `sleep 30`: a live process that is not .NET.
pub fn start_sleep() -> Running {
    let mut cmd = Command::new("sleep");
    cmd.arg("30");
    let mut r = spawn_capturing(cmd);
    r.ready = None;
    // Give exec a moment so /proc/{pid}/maps shows `sleep`, not the forked test binary.
    wait_until(Duration::from_secs(5), || {
        std::fs::read_to_string(format!("/proc/{}/comm", r.pid)).is_ok_and(|c| c.trim() == "sleep")
    });
    r
}

/// Polls `cond` every 20 ms until it holds or `timeout` passes; returns whether it held.
pub fn wait_until(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A pid no process has right now.
pub fn unused_pid() -> u32 {
    let max: u32 = std::fs::read_to_string("/proc/sys/kernel/pid_max")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(32768);
    (2..max)
        .rev()
        .find(|pid| !Path::new(&format!("/proc/{pid}")).exists())
        .expect("a free pid")
}
