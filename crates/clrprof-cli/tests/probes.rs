//! Trace mode after attach: IL probes through ReJIT (docs/tracing.md). A long-running app
//! (`Scenarios serve`) runs a burst of calls while the probes are live; the report counts
//! every call exactly, against the app's own counters: calls that throw leave as often as
//! they enter, both instantiations of a generic method count, an async method counts once
//! per call. After the recording the probes are gone, the app's results are unchanged,
//! and the runtime keeps the library loaded, dormant; every later session (sample, a
//! second probe session, `dump`, `heap`) runs in that dormant agent.

use crate::common;

use std::collections::BTreeMap;
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use clrprof_testkit::{Runtime, app_on};
use common::serve::Serve;
use common::*;

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
    let mut app = Serve::start(&app_on("Scenarios", rt), &[]);
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
    // The runtime grants the TypeRef the signature without GC-mode transitions needs.
    let how = app.log_line("calls without GC-mode transitions", Duration::from_secs(60));
    assert!(how.ends_with("in 1 module(s), with them in 0"), "{how}");
    let installed = app.log_line("probes installed in", Duration::from_secs(60));
    assert!(installed.contains("installed in 6 methods"), "{installed}");
    let during = app.burst(1000);
    assert_eq!(during, before, "the app's results under the probes");
    // The new bodies start at tier 0: one spin and a pause let tiering promote them
    // before the timed one.
    app.spin(SPIN);
    std::thread::sleep(Duration::from_millis(500));
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
    // The two spins made while the probes were live, and not the ones after.
    assert_eq!(
        f.get("Scenarios.Serve.SpinCall"),
        Some(&u64::from(2 * SPIN)),
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
    let mut app = Serve::start(&app_on("Scenarios", Runtime::Net10), &[]);
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

    // Startup with --probes: probes on the selected methods as their module loads, no
    // ELT hooks.
    let at_start = dir.join("startup-probes.clrprof");
    let mut rec = clrprof()
        .args(["record", "-q", "--mode", "trace", "--probes", "-o"])
        .arg(&at_start)
        .args(["--include", "Scenarios.Serve.Burst*", "--"])
        .arg(scenarios().dotnet)
        .arg(scenarios().dll)
        .arg("serve")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = rec.stdin.take().unwrap();
    writeln!(stdin, "burst 1000").unwrap();
    writeln!(stdin, "quit").unwrap();
    drop(stdin);
    let out = rec.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("probes installed in 5 methods of") && err.contains("Scenarios.dll"),
        "{err}"
    );
    let probed_at_start = burst_calls(&report_json(&at_start));
    assert_eq!(
        probed_at_start, startup,
        "startup probes (left) and startup ELT (right)"
    );
}

/// Probes in the 1,000 generated methods of `Scenarios.Many`: all installed, each call
/// counted exactly. The install time and the app's longest stall during it are printed
/// (`clrprof-bench probes` measures them against the runtime's own ReJIT pause).
#[test]
fn probes_in_a_thousand_methods_count_every_call() {
    let dir = scratch("probes-many");
    let trace = dir.join("t.clrprof");
    let mut app = Serve::start(&app_on("Scenarios", Runtime::Net10), &[]);
    let before = app.ask_results("many 2", "RESULT many=");
    assert_eq!(before["many"], "2000");
    let mut rec = clrprof()
        .args(["record", "-q", "--pid", &app.pid.to_string(), "-o"])
        .arg(&trace)
        .args(["--mode", "trace", "--include", "Scenarios.Many.*"])
        .spawn()
        .unwrap();
    let installed = app.log_line("probes installed in", Duration::from_secs(120));
    assert!(
        installed.contains("installed in 1000 methods"),
        "{installed}"
    );
    let phases = app.log_line("probes: install took", Duration::from_secs(10));
    let during = app.ask_results("many 3", "RESULT many=");
    assert_eq!(
        during["many_sum"],
        app.ask_results("many 3", "RESULT many=")["many_sum"]
    );
    Command::new("kill")
        .args(["-INT", &rec.id().to_string()])
        .status()
        .unwrap();
    assert!(rec.wait().unwrap().success());
    app.log_line("probes removed from 1000 methods", Duration::from_secs(30));
    let after = app.ask_results("many 2", "RESULT many=");
    assert_eq!(after, before, "the app's results after the probes");
    app.quit();
    eprintln!("{installed}\n{phases}");
    let f = functions(&report_json(&trace));
    assert_eq!(f.len(), 1000, "{f:#?}");
    // Two `many 3` while the probes were live: 6 calls of each method.
    for (name, calls) in &f {
        assert!(name.starts_with("Scenarios.Many.M"), "{name}");
        assert_eq!(*calls, 6, "{name}");
    }
}

/// A module loaded while the probes are live gets them too: `serve`'s `load` loads
/// Plugin.dll (not referenced by the app) with Assembly.LoadFrom and calls
/// `PluginEntry.Run` at once; every call made while the probes are live is counted, none
/// after.
fn a_module_loaded_after_the_attach_is_probed(rt: Runtime) {
    let dir = scratch(&format!("probes-late-{}", rt.major()));
    let trace = dir.join("t.clrprof");
    let mut app = Serve::start(&app_on("Scenarios", rt), &[]);
    let mut rec = clrprof()
        .args(["record", "-q", "--pid", &app.pid.to_string(), "-o"])
        .arg(&trace)
        .args(["--mode", "trace", "--include", "Plugin.PluginEntry.*"])
        .args(["--include", "Scenarios.Serve.BurstCall"])
        .spawn()
        .unwrap();
    let installed = app.log_line("probes installed in", Duration::from_secs(60));
    assert!(installed.contains("installed in 1 methods"), "{installed}");
    for _ in 0..3 {
        app.ask("load", "LOADED");
    }
    let late = app.log_line("loaded while the probes are live", Duration::from_secs(30));
    assert!(
        late.contains("probes installed in 1 methods of") && late.contains("Plugin.dll"),
        "{late}"
    );
    app.burst(10);
    Command::new("kill")
        .args(["-INT", &rec.id().to_string()])
        .status()
        .unwrap();
    assert!(rec.wait().unwrap().success());
    // Both the install's method and the late one are reverted.
    app.log_line("probes removed from 2 methods", Duration::from_secs(30));
    app.ask("load", "LOADED");
    app.quit();
    let f = functions(&report_json(&trace));
    assert_eq!(f.get("Plugin.PluginEntry.Run"), Some(&3), "{f:#?}");
    assert_eq!(f.get("Scenarios.Serve.BurstCall"), Some(&10), "{f:#?}");
    assert_eq!(f.len(), 2, "{f:#?}");
}

#[test]
fn a_module_loaded_after_the_attach_is_probed_net8() {
    a_module_loaded_after_the_attach_is_probed(Runtime::Net8);
}

#[test]
fn a_module_loaded_after_the_attach_is_probed_net9() {
    a_module_loaded_after_the_attach_is_probed(Runtime::Net9);
}

#[test]
fn a_module_loaded_after_the_attach_is_probed_net10() {
    a_module_loaded_after_the_attach_is_probed(Runtime::Net10);
}
