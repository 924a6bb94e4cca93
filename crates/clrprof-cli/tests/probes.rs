//! Trace mode after attach: IL probes through ReJIT (docs/tracing.md). A long-running app
//! (`Scenarios serve`) runs a burst of calls while the probes are live; the report counts
//! every call exactly, against the app's own counters: calls that throw leave as often as
//! they enter, both instantiations of a generic method count, an async method counts once
//! per call. After the recording the probes are gone, the app's results are unchanged,
//! and the runtime keeps the library loaded, dormant; every later session (sample, a
//! second probe session, `dump`, `heap`) runs in that dormant agent.

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use clrprof_testkit::{Runtime, app_on};
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
    fn start(rt: Runtime) -> Serve {
        let mut child = app_on("Scenarios", rt)
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

    /// Sends a command and returns the RESULT values of its answer.
    fn ask(&mut self, cmd: &str, result: &str) -> BTreeMap<String, String> {
        writeln!(self.stdin, "{cmd}").unwrap();
        loop {
            let l = self
                .out
                .recv_timeout(Duration::from_secs(120))
                .expect("result line");
            if l.starts_with(result) {
                return clrprof_testkit::parse_results(&l);
            }
        }
    }

    fn burst(&mut self, n: u32) -> BTreeMap<String, String> {
        self.ask(&format!("burst {n}"), "RESULT burst=")
    }

    /// `spin n`: nanoseconds for n calls of SpinCall.
    fn spin(&mut self, n: u32) -> f64 {
        self.ask(&format!("spin {n}"), "RESULT spin=")["spin_ns"]
            .parse()
            .unwrap()
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

/// The first node named `name`, depth first.
fn find<'a>(node: &'a serde_json::Value, name: &str) -> Option<&'a serde_json::Value> {
    if node["name"] == name {
        return Some(node);
    }
    node["children"]
        .as_array()?
        .iter()
        .find_map(|c| find(c, name))
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

/// Calls of SpinCall per `spin`, timed before, during and after the probes.
const SPIN: u32 = 200_000;

fn a_burst_while_probes_are_live_is_counted_exactly(rt: Runtime) {
    let dir = scratch(&format!("probes-burst-{}", rt.major()));
    let trace = dir.join("t.clrprof");
    let mut app = Serve::start(rt);
    // Before: the app's own results without probes, and the time of unprobed calls.
    let before = app.burst(1000);
    app.spin(SPIN);
    let spin_before = app.spin(SPIN);
    let mut rec = clrprof()
        .args(["record", "--pid", &app.pid.to_string(), "-o"])
        .arg(&trace)
        .args(["--mode", "trace", "--include", "Scenarios.Serve.Burst*"])
        .args(["--include", "Scenarios.Serve.SpinCall"])
        // Selected, but abstract: listed as not probed, with the reason.
        .args(["--include", "Scenarios.Shape.Area"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let installed = app.log_line("probes installed in", Duration::from_secs(60));
    assert!(installed.contains("installed in 6 methods"), "{installed}");
    let during = app.burst(1000);
    assert_eq!(during, before, "the app's results under the probes");
    let spin_during = app.spin(SPIN);
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
    assert!(
        stderr.contains("clrprof: probes installed in 6 methods"),
        "{stderr}"
    );
    assert!(
        stderr.contains("clrprof: not probed: Scenarios.Shape.Area: abstract"),
        "{stderr}"
    );
    app.log_line("probes removed from 6 methods", Duration::from_secs(30));
    let after = app.burst(1000);
    assert_eq!(after, before, "the app's results after the probes");
    assert_dormant_in_ps(app.pid);
    let spin_after = app.spin(SPIN);
    let per_call = |ns: f64| ns / f64::from(SPIN);
    eprintln!(
        ".NET {}: SpinCall {:.1} ns a call before the probes, {:.1} ns with them, {:.1} ns after; {}",
        rt.major(),
        per_call(spin_before),
        per_call(spin_during),
        per_call(spin_after),
        installed
    );

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
    // The spin made while the probes were live, and not the ones after.
    assert_eq!(
        f.get("Scenarios.Serve.SpinCall"),
        Some(&u64::from(SPIN)),
        "{f:#?}"
    );
    assert_eq!(f.len(), 6, "only the selected methods: {f:#?}");
    // Calls that throw leave through the fault handler: nothing unmatched, nothing unwound.
    let stats = &r["trace_stats"];
    assert_eq!(stats["unmatched_leaves"], 0, "{stats:#}");
    assert_eq!(stats["unwound_frames"], 0, "{stats:#}");
    assert_eq!(stats["open_at_end"], 0, "{stats:#}");
    // The app's own counters agree.
    assert_eq!(before["burst_call"], n.to_string());
    assert_eq!(before["burst_throw"], (n / 10).to_string());
    assert_eq!(before["burst_caught"], (n / 10).to_string());
    // The exact tree: Burst calls the other four, each as often as counted, and they
    // call none of the probed methods.
    let burst = find(&r["call_tree"], "Scenarios.Serve.Burst").expect("Burst in the tree");
    assert_eq!(burst["calls"], 1);
    let kids: BTreeMap<String, u64> = burst["children"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            assert!(c["children"].as_array().unwrap().is_empty(), "{c:#}");
            (
                c["name"].as_str().unwrap().to_string(),
                c["calls"].as_u64().unwrap(),
            )
        })
        .collect();
    let want: BTreeMap<String, u64> = [
        ("Scenarios.Serve.BurstAsync", 5),
        ("Scenarios.Serve.BurstCall", n),
        ("Scenarios.Serve.BurstEcho", n + n / 2),
        ("Scenarios.Serve.BurstThrow", n / 10),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    assert_eq!(kids, want);
    every_later_session_reuses_the_dormant_agent(&mut app, &dir, &before);
    app.quit();
}

/// `clrprof ps` lists `pid` as dormant.
fn assert_dormant_in_ps(pid: u32) {
    let ps = clrprof().arg("ps").output().unwrap();
    let ps = String::from_utf8_lossy(&ps.stdout);
    let line = ps
        .lines()
        .find(|l| l.split_whitespace().next() == Some(&pid.to_string()))
        .unwrap_or_else(|| panic!("pid {pid} in {ps}"));
    assert!(line.contains("dormant"), "{line}");
}

/// The dormant agent holds the runtime's one profiler slot, and every later session runs
/// in it, started through its control socket: a sample recording (the app's hot method),
/// a second probe session (a burst counted exactly), `dump`, and `heap` (which either
/// works or says why the runtime will not let it); the agent is dormant after each.
fn every_later_session_reuses_the_dormant_agent(
    app: &mut Serve,
    dir: &std::path::Path,
    before: &BTreeMap<String, String>,
) {
    let pid = app.pid.to_string();
    let sample = dir.join("sample.clrprof");
    let out = clrprof()
        .args(["record", "--pid", &pid, "--duration", "2", "-o"])
        .arg(&sample)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "sample record in the dormant agent: {err}"
    );
    assert!(err.contains("stays loaded, dormant"), "{err}");
    app.log_line(
        "a new session started in the dormant profiler",
        Duration::from_secs(30),
    );
    let r = report_json(&sample);
    assert_eq!(r["trace"]["attached"], true);
    assert_eq!(r["trace"]["mode"], "sample", "{:#}", r["trace"]);
    let served = r["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "Scenarios.Serve.ServeWork");
    assert!(
        served.is_some(),
        "ServeWork never sampled: {:#}",
        r["functions"]
    );
    // No probe of the first session is left: the sample trace has no calls.
    assert_dormant_in_ps(app.pid);

    // A second probe session counts a burst exactly.
    let trace2 = dir.join("second.clrprof");
    let mut rec = clrprof()
        .args(["record", "--pid", &pid, "-o"])
        .arg(&trace2)
        .args(["--mode", "trace", "--include", "Scenarios.Serve.Burst*"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let installed = app.log_line("probes installed in", Duration::from_secs(60));
    assert!(installed.contains("installed in 5 methods"), "{installed}");
    let during = app.burst(1000);
    assert_eq!(&during, before, "the app's results under the second probes");
    let int = Command::new("kill")
        .args(["-INT", &rec.id().to_string()])
        .status()
        .unwrap();
    assert!(int.success());
    let status = rec.wait().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut rec.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(status.success(), "second probe session: {stderr}");
    assert!(stderr.contains("stays loaded, dormant"), "{stderr}");
    app.log_line("probes removed from 5 methods", Duration::from_secs(30));
    let f = functions(&report_json(&trace2));
    let n = 1000;
    assert_eq!(f.get("Scenarios.Serve.Burst"), Some(&1), "{f:#?}");
    assert_eq!(f.get("Scenarios.Serve.BurstCall"), Some(&n), "{f:#?}");
    assert_eq!(
        f.get("Scenarios.Serve.BurstThrow"),
        Some(&(n / 10)),
        "{f:#?}"
    );
    assert_eq!(
        f.get("Scenarios.Serve.BurstEcho"),
        Some(&(n + n / 2)),
        "{f:#?}"
    );
    assert_eq!(f.get("Scenarios.Serve.BurstAsync"), Some(&5), "{f:#?}");
    assert_eq!(f.len(), 5, "only the selected methods: {f:#?}");
    assert_dormant_in_ps(app.pid);

    // `dump`: the workers' stacks, through the dormant agent.
    let dump = clrprof().args(["dump", "--pid", &pid]).output().unwrap();
    let text = String::from_utf8_lossy(&dump.stdout);
    assert!(
        dump.status.success(),
        "dump: {text}{}",
        String::from_utf8_lossy(&dump.stderr)
    );
    assert!(text.contains("\"serve-worker-1\""), "{text}");
    assert!(text.contains("Scenarios.Serve.WorkerLoop"), "{text}");
    assert_dormant_in_ps(app.pid);

    // `heap`: the GC monitor can be turned on only inside InitializeForAttach (or with
    // background GC off), which the dormant agent's attach is long past.
    let heap = clrprof()
        .args(["heap", "--pid", &pid, "-o"])
        .arg(dir.join("heap.clrprof"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&heap.stderr);
    eprintln!("heap --pid on the dormant agent: {}: {err}", heap.status);
    if heap.status.success() {
        assert!(dir.join("heap.clrprof").exists(), "{err}");
    } else {
        assert!(
            err.contains("CORPROF_E_CONCURRENT_GC_NOT_PROFILABLE")
                && err.contains("restart the process"),
            "{err}"
        );
    }
    assert_dormant_in_ps(app.pid);
    // The app is unharmed, and a last sample session still works.
    assert_eq!(&app.burst(1000), before);
    let last = dir.join("last.clrprof");
    let out = clrprof()
        .args(["record", "--pid", &pid, "--duration", "1", "-o"])
        .arg(&last)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_dormant_in_ps(app.pid);
}

#[test]
fn a_burst_while_probes_are_live_is_counted_exactly_net8() {
    a_burst_while_probes_are_live_is_counted_exactly(Runtime::Net8);
}

#[test]
fn a_burst_while_probes_are_live_is_counted_exactly_net9() {
    a_burst_while_probes_are_live_is_counted_exactly(Runtime::Net9);
}

#[test]
fn a_burst_while_probes_are_live_is_counted_exactly_net10() {
    a_burst_while_probes_are_live_is_counted_exactly(Runtime::Net10);
}

/// Calls per method of the burst: the generic method's instantiations summed (a startup
/// trace names each; the probes share one body).
fn burst_calls(r: &serde_json::Value) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for (name, calls) in functions(r) {
        let method = name.split('<').next().unwrap_or(&name).to_string();
        *out.entry(method).or_insert(0) += calls;
    }
    out
}

#[test]
fn probes_count_what_startup_elt_tracing_counts() {
    let dir = scratch("probes-vs-elt");
    // Startup: ELT hooks on the same methods, the same burst.
    let elt = dir.join("elt.clrprof");
    let mut rec = clrprof()
        .args(["record", "-q", "--mode", "trace", "-o"])
        .arg(&elt)
        .args(["--include", "Scenarios.Serve.Burst*", "--"])
        .arg(scenarios().dotnet)
        .arg(scenarios().dll)
        .arg("serve")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = rec.stdin.take().unwrap();
    writeln!(stdin, "burst 1000").unwrap();
    writeln!(stdin, "quit").unwrap();
    drop(stdin);
    let out = rec.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let startup = burst_calls(&report_json(&elt));

    // Attach: the probes.
    let probes = dir.join("probes.clrprof");
    let mut app = Serve::start(Runtime::Net10);
    let mut rec = clrprof()
        .args(["record", "-q", "--pid", &app.pid.to_string(), "-o"])
        .arg(&probes)
        .args(["--mode", "trace", "--include", "Scenarios.Serve.Burst*"])
        .spawn()
        .unwrap();
    app.log_line("probes installed in", Duration::from_secs(60));
    app.burst(1000);
    Command::new("kill")
        .args(["-INT", &rec.id().to_string()])
        .status()
        .unwrap();
    assert!(rec.wait().unwrap().success());
    app.quit();
    let attached = burst_calls(&report_json(&probes));
    assert_eq!(attached, startup, "probes (left) and startup ELT (right)");
    assert_eq!(startup.get("Scenarios.Serve.BurstCall"), Some(&1000));
}
