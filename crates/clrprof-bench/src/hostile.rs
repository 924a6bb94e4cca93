//! `clrprof-bench hostile`: issue #26's campaign, rerun. Each hostile item runs N times
//! against real targets (the runs rotate over .NET 8, 9 and 10, the items interleaved
//! round by round so that the machine's load falls on all of them), and counts target
//! crashes (a target that dies, or a recorded app that exits non-zero or by a signal),
//! hangs (a time limit passed, or a `status` answered late), and leaks (a secret printed,
//! an agent left attached after its `clrprof` died). One line per item at the end, with
//! the first failure's output.

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clrprof_testkit::{BuiltApp, Runtime};

enum Outcome {
    Ok,
    Crash(String),
    Hang(String),
    Leak(String),
}

#[derive(Default)]
struct Tally {
    runs: usize,
    crashes: usize,
    hangs: usize,
    leaks: usize,
    first: Option<String>,
    secs: f64,
}

const ITEMS: &[&str] = &[
    "refused 2nd attach, planted PID.error, re-attach (1, 4)",
    "hostile --args shapes (2)",
    "FIFO at CLRPROF_LOG (5)",
    "socket flood + slow client, then owner killed (6, 8)",
    "kill -9 / Ctrl-C of the CLI during attach (9)",
    "sampled `exceptions 2` at 99 Hz, nice'd (3)",
    "sampled `dynamic-churn` at 999 Hz: LCG code freed under the sampler",
];

/// One idle `sleeper` per runtime, restarted when one dies (the death is the crash of the
/// item that found it).
struct Targets {
    apps: Vec<BuiltApp>,
    live: Vec<Option<Child>>,
}

impl Targets {
    fn pid(&mut self, r: usize) -> Result<u32> {
        if self.live[r].is_none() {
            let c = self.apps[r]
                .command(&["sleeper", "seconds=36000"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()?;
            std::thread::sleep(Duration::from_millis(700));
            self.live[r] = Some(c);
        }
        Ok(self.live[r].as_ref().map_or(0, Child::id))
    }

    /// `None` while target `r` lives; how it ended once it has not (and forgets it).
    fn died(&mut self, r: usize) -> Option<String> {
        let status = self.live[r].as_mut()?.try_wait().ok().flatten()?;
        self.live[r] = None;
        Some(format!("the target died: {status}"))
    }
}

/// `n` rounds, or as many as start within `minutes` (0: no limit).
/// With `only`, just the items whose name contains one of its words.
pub fn run(clrprof: &Path, n: usize, minutes: u64, only: &[String]) -> Result<()> {
    let dir = crate::scratch().join("hostile");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let mut targets = Targets {
        apps: Runtime::ALL
            .iter()
            .map(|&r| clrprof_testkit::app_on("Scenarios", r))
            .collect(),
        live: Runtime::ALL.iter().map(|_| None).collect(),
    };
    let secret = dir.join("secret");
    std::fs::write(&secret, "TOP-SECRET-4242")?;
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600))?;
    let fifo = dir.join("log.fifo");
    mkfifo(&fifo)?;
    let ctx = Ctx {
        clrprof,
        dir: &dir,
        secret: &secret,
        fifo: &fifo,
    };
    let mut tally: Vec<Tally> = ITEMS.iter().map(|_| Tally::default()).collect();
    let started = Instant::now();
    let mut rounds = 0;
    for i in 0..n {
        if minutes > 0 && started.elapsed() > Duration::from_secs(60 * minutes) {
            break;
        }
        rounds += 1;
        let r = i % Runtime::ALL.len();
        for (k, t) in tally.iter_mut().enumerate() {
            if !only.is_empty() && !only.iter().any(|w| ITEMS[k].contains(w.as_str())) {
                continue;
            }
            let t0 = Instant::now();
            let mut outcome = match k {
                0 => ctx.refused(&mut targets, r, i)?,
                1 => ctx.recorded(
                    &targets.apps[r],
                    &["--mode", "trace", "--args", "Scenarios.HostileArgs.*"],
                    &["hostile-args"],
                    None,
                    300,
                )?,
                2 => ctx.recorded(&targets.apps[r], &[], &["threads"], Some(ctx.fifo), 90)?,
                3 => ctx.flood(&mut targets, r)?,
                4 => ctx.killed_during_attach(&mut targets, r, i)?,
                5 => ctx.recorded(
                    &targets.apps[r],
                    &["--rate", "99"],
                    &["exceptions", "2"],
                    None,
                    120,
                )?,
                _ => ctx.recorded(
                    &targets.apps[r],
                    &["--rate", "999"],
                    &["dynamic-churn", "seconds=2"],
                    None,
                    120,
                )?,
            };
            if matches!(k, 0 | 3 | 4)
                && let Some(death) = targets.died(r)
            {
                outcome = Outcome::Crash(death);
            }
            t.runs += 1;
            t.secs += t0.elapsed().as_secs_f64();
            let (what, counter) = match outcome {
                Outcome::Ok => continue,
                Outcome::Crash(s) => (format!("crash: {s}"), &mut t.crashes),
                Outcome::Hang(s) => (format!("hang: {s}"), &mut t.hangs),
                Outcome::Leak(s) => (format!("leak: {s}"), &mut t.leaks),
            };
            *counter += 1;
            let what = format!("run {i} on {}: {what}", Runtime::ALL[r].tfm());
            println!("{}: {what}", ITEMS[k]);
            t.first.get_or_insert(what);
        }
        if (i + 1) % 10 == 0 {
            println!("{} rounds, {:.0} s", i + 1, started.elapsed().as_secs_f64());
        }
    }
    for r in 0..Runtime::ALL.len() {
        if let Some(mut c) = targets.live[r].take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
    println!(
        "{rounds} rounds on .NET 8, 9, 10 in turn, {:.0} s:",
        started.elapsed().as_secs_f64()
    );
    for (name, t) in ITEMS.iter().zip(&tally) {
        if t.runs == 0 {
            continue;
        }
        println!(
            "{name:<55} runs {:>4}  crashes {}  hangs {}  leaks {}  {:>5.1} s a run{}",
            t.runs,
            t.crashes,
            t.hangs,
            t.leaks,
            t.secs / t.runs.max(1) as f64,
            t.first
                .as_ref()
                .map(|f| format!("\n    first: {f}"))
                .unwrap_or_default()
        );
    }
    Ok(())
}

struct Ctx<'a> {
    clrprof: &'a Path,
    dir: &'a Path,
    secret: &'a Path,
    fifo: &'a Path,
}

impl Ctx<'_> {
    fn attach(&self, pid: u32, tmpdir: Option<&Path>, extra: &[&str]) -> Command {
        let mut c = Command::new(self.clrprof);
        if let Some(t) = tmpdir {
            c.env("TMPDIR", t);
        }
        c.args(["record", "--pid", &pid.to_string(), "-q", "--force", "-o"])
            .arg(self.dir.join(format!("attach-{}.clrprof", extra.len())))
            .args(extra)
            .stdout(Stdio::null());
        c
    }

    /// Item 1 and 4: a second `record --pid` from another TMPDIR during a recording is
    /// refused, with a link to a root-only file, a FIFO or `/dev/zero` planted as its
    /// `PID.error`; the first finishes; an attach after them records.
    fn refused(&self, targets: &mut Targets, r: usize, i: usize) -> Result<Outcome> {
        let pid = targets.pid(r)?;
        let other = self.dir.join("other-tmp");
        let ctl = other.join(format!("clrprof-{}", euid()));
        std::fs::create_dir_all(&ctl)?;
        std::fs::set_permissions(&ctl, std::fs::Permissions::from_mode(0o700))?;
        let note = ctl.join(format!("{pid}.error"));
        let _ = std::fs::remove_file(&note);
        match i % 3 {
            0 => std::os::unix::fs::symlink(self.secret, &note)?,
            1 => mkfifo(&note)?,
            _ => std::os::unix::fs::symlink("/dev/zero", &note)?,
        }
        let first = self
            .attach(pid, None, &["--duration", "1.5"])
            .stderr(Stdio::piped())
            .spawn()?;
        std::thread::sleep(Duration::from_millis(700));
        let (second, err) =
            output_limited(self.attach(pid, Some(&other), &["--duration", "0.2"]), 30)?;
        let _ = std::fs::remove_file(&note);
        let (first, first_err) = wait_output(first, 30)?;
        if err.contains("TOP-SECRET") {
            return Ok(Outcome::Leak(format!(
                "the refused attach printed the planted link's file: {err}"
            )));
        }
        match second {
            None => {
                return Ok(Outcome::Hang(format!(
                    "the refused attach (planted note {}): {err}",
                    i % 3
                )));
            }
            Some(s) if s.success() => {
                return Ok(Outcome::Leak(format!("a second session was let in: {err}")));
            }
            Some(_) => {}
        }
        match first {
            None => return Ok(Outcome::Hang(format!("the first recording: {first_err}"))),
            Some(s) if !s.success() => {
                return Ok(Outcome::Crash(format!(
                    "the first recording failed ({s}): {first_err}"
                )));
            }
            Some(_) => {}
        }
        let (after, err) = output_limited(self.attach(pid, None, &["--duration", "0.3"]), 30)?;
        Ok(match after {
            None => Outcome::Hang(format!("the attach after: {err}")),
            Some(s) if !s.success() => {
                Outcome::Crash(format!("the attach after failed ({s}): {err}"))
            }
            Some(_) => Outcome::Ok,
        })
    }

    /// A recorded app (`record [flags] -- dotnet Scenarios.dll args`), nice'd, with
    /// `log` as CLRPROF_LOG; a non-zero exit is a crash.
    fn recorded(
        &self,
        app: &BuiltApp,
        flags: &[&str],
        args: &[&str],
        log: Option<&Path>,
        limit: u64,
    ) -> Result<Outcome> {
        let mut c = Command::new("nice");
        c.args(["-n", "10"])
            .arg(self.clrprof)
            .args(["record", "-q", "--force", "-o"])
            .arg(self.dir.join("recorded.clrprof"))
            .args(flags)
            .arg("--")
            .arg(&app.dotnet)
            .arg(&app.dll)
            .args(args)
            .stdout(Stdio::null());
        app.env(&mut c);
        if let Some(l) = log {
            c.env("CLRPROF_LOG", l);
        }
        let (status, err) = output_limited(c, limit)?;
        let tail = last_lines(&err, 6);
        Ok(match status {
            None => Outcome::Hang(format!("{} past {limit} s: {tail}", args.join(" "))),
            Some(s) if !s.success() => Outcome::Crash(format!("{} ({s}): {tail}", args.join(" "))),
            Some(_) => Outcome::Ok,
        })
    }

    /// Items 6 and 8: six silent clients, a one-byte-a-second client and a 16 MiB line on
    /// the control socket of a recording; `status` must answer within 3 s, and the agent
    /// must leave within 15 s of its `clrprof`'s SIGKILL.
    fn flood(&self, targets: &mut Targets, r: usize) -> Result<Outcome> {
        let pid = targets.pid(r)?;
        let mut rec = self.attach(pid, None, &[]).stderr(Stdio::null()).spawn()?;
        let tmp = std::env::var_os("TMPDIR").map_or_else(|| PathBuf::from("/tmp"), PathBuf::from);
        let sock = tmp
            .join(format!("clrprof-{}", euid()))
            .join(format!("{pid}.sock"));
        let end = Instant::now() + Duration::from_secs(30);
        while !sock.exists() {
            if Instant::now() >= end {
                let _ = rec.kill();
                let _ = rec.wait();
                return Ok(Outcome::Hang(
                    "no control socket 30 s after record --pid".into(),
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        std::thread::sleep(Duration::from_millis(300));
        let silent: Vec<UnixStream> = (0..6)
            .filter_map(|_| UnixStream::connect(&sock).ok())
            .collect();
        let stop = Arc::new(AtomicBool::new(false));
        let (s2, p2) = (stop.clone(), sock.clone());
        let slow = std::thread::spawn(move || {
            if let Ok(mut c) = UnixStream::connect(&p2) {
                for b in b"status\n" {
                    if s2.load(Ordering::Relaxed) || c.write_all(&[*b]).is_err() {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(500));
                }
            }
        });
        let mut big = UnixStream::connect(&sock)?;
        big.set_write_timeout(Some(Duration::from_secs(5)))?;
        let chunk = vec![b'x'; 1 << 20];
        for _ in 0..16 {
            if big.write(&chunk).is_err() {
                break;
            }
        }
        let t = Instant::now();
        let answer = status(&sock);
        let took = t.elapsed();
        rec.kill()?;
        rec.wait()?;
        let killed = Instant::now();
        let mut gone = false;
        while killed.elapsed() < Duration::from_secs(15) {
            if agent_threads(pid) == 0 {
                gone = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        stop.store(true, Ordering::Relaxed);
        let _ = slow.join();
        drop(silent);
        drop(big);
        Ok(if !answer.contains("\"status\"") {
            Outcome::Hang(format!(
                "status under the flood answered {answer:?} after {took:?}"
            ))
        } else if took > Duration::from_secs(3) {
            Outcome::Hang(format!("status under the flood took {took:?}"))
        } else if !gone {
            Outcome::Leak("the agent still records 15 s after its clrprof was killed".into())
        } else {
            Outcome::Ok
        })
    }

    /// Item 9: the CLI killed (SIGKILL, or SIGINT as Ctrl-C) 0-400 ms into `record --pid`;
    /// the agent must not stay attached (15 s).
    fn killed_during_attach(&self, targets: &mut Targets, r: usize, i: usize) -> Result<Outcome> {
        let pid = targets.pid(r)?;
        let rec = self.attach(pid, None, &[]).stderr(Stdio::null()).spawn()?;
        std::thread::sleep(Duration::from_millis((i as u64 * 37) % 400));
        let sig = if i.is_multiple_of(2) { "-KILL" } else { "-INT" };
        Command::new("kill")
            .args([sig, &rec.id().to_string()])
            .status()?;
        let _ = wait_limited(rec, 30)?;
        let end = Instant::now() + Duration::from_secs(15);
        while Instant::now() < end {
            if agent_threads(pid) == 0 {
                return Ok(Outcome::Ok);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        // Not left for the next run: ask it to go.
        let _ = Command::new(self.clrprof)
            .args(["detach", "--pid", &pid.to_string()])
            .output();
        Ok(Outcome::Leak(format!(
            "the agent stayed attached after kill {sig} at {} ms",
            (i as u64 * 37) % 400
        )))
    }
}

fn euid() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|v| v.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

fn mkfifo(at: &Path) -> Result<()> {
    let ok = Command::new("mkfifo").arg(at).status()?.success();
    anyhow::ensure!(ok, "mkfifo {}", at.display());
    Ok(())
}

/// The agent's threads (named `clrprof…`) running in `pid`.
fn agent_threads(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| {
            d.flatten()
                .filter(|e| {
                    std::fs::read_to_string(e.path().join("comm"))
                        .is_ok_and(|c| c.starts_with("clrprof"))
                })
                .count()
        })
        .unwrap_or(0)
}

/// Sends `status` on the control socket; the answer line (empty on a 10 s timeout).
fn status(sock: &Path) -> String {
    let Ok(mut s) = UnixStream::connect(sock) else {
        return String::new();
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
    let _ = s.write_all(b"{\"version\":1,\"request\":\"status\"}\n");
    let mut buf = Vec::new();
    let mut b = [0u8; 4096];
    while let Ok(k) = s.read(&mut b) {
        if k == 0 {
            break;
        }
        buf.extend_from_slice(&b[..k]);
        if buf.contains(&b'\n') {
            break;
        }
    }
    String::from_utf8_lossy(&buf).into_owned()
}

/// Runs `cmd` with its stderr to a file, at most `limit` seconds: its status (`None`:
/// killed at the limit) and its stderr.
fn output_limited(mut cmd: Command, limit: u64) -> Result<(Option<ExitStatus>, String)> {
    let err = tempfile_path();
    cmd.stderr(std::fs::File::create(&err)?);
    let child = cmd.spawn().context("spawn")?;
    let status = wait_limited(child, limit)?;
    let text = std::fs::read_to_string(&err).unwrap_or_default();
    let _ = std::fs::remove_file(&err);
    Ok((status, text))
}

/// Waits for a child whose stderr is piped: its status (`None` past `limit` s) and stderr.
fn wait_output(mut child: Child, limit: u64) -> Result<(Option<ExitStatus>, String)> {
    let mut pipe = child.stderr.take();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(p) = pipe.as_mut() {
            let _ = p.read_to_string(&mut s);
        }
        s
    });
    let status = wait_limited(child, limit)?;
    Ok((status, reader.join().unwrap_or_default()))
}

fn wait_limited(mut child: Child, limit: u64) -> Result<Option<ExitStatus>> {
    let end = Instant::now() + Duration::from_secs(limit);
    while Instant::now() < end {
        if let Some(s) = child.try_wait()? {
            return Ok(Some(s));
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    let _ = child.kill();
    let _ = child.wait();
    Ok(None)
}

fn tempfile_path() -> PathBuf {
    use std::sync::atomic::AtomicUsize;
    static N: AtomicUsize = AtomicUsize::new(0);
    crate::scratch().join(format!(
        "hostile-err-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ))
}

fn last_lines(s: &str, n: usize) -> String {
    let v: Vec<&str> = s.lines().rev().take(n).collect();
    v.into_iter().rev().collect::<Vec<_>>().join(" | ")
}
