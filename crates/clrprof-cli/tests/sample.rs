//! Acceptance tests of the sampling mode, with both stack capture methods: `signal`
//! (SIGPROF + frame-pointer walk, the default on Linux x86_64) and `suspend`
//! (SuspendRuntime + asynchronous DoStackSnapshot).

use crate::common;

use common::*;
use serde_json::Value;

/// Records with `sampler` and checks the agent really used it (the signal sampler falls
/// back to SuspendRuntime when it cannot install, which must not pass unnoticed).
fn record_sampled(
    trace: &std::path::Path,
    sampler: &str,
    flags: &[&str],
    app: &[&str],
) -> std::process::Output {
    let mut all = flags.to_vec();
    all.extend(["--sampler", sampler]);
    let out = record(trace, &all, app);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("sampler ({sampler}):")),
        "the agent did not sample with `{sampler}`:\n{stderr}"
    );
    // The agent under test is a debug build: the ReadyToRun guard compared each answer it
    // gave from an image's method-def table with the runtime's own lookup.
    if let Some(line) = stderr.lines().find(|l| l.contains("ReadyToRun guard:")) {
        assert!(line.ends_with(" 0 disagreed"), "{line}");
    }
    out
}

fn function<'a>(r: &'a Value, name: &str) -> Option<&'a Value> {
    r["functions"]
        .as_array()?
        .iter()
        .find(|f| f["name"] == name)
}

fn thread<'a>(r: &'a Value, name: &str) -> &'a Value {
    r["samples"]["threads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no sampled thread {name}: {:#}", r["samples"]["threads"]))
}

#[test]
fn cpu_split_between_two_functions_matches_the_app() {
    cpu_split("signal");
}

#[test]
fn cpu_split_between_two_functions_matches_the_app_suspend_sampler() {
    cpu_split("suspend");
}

fn cpu_split(sampler: &str) {
    let _serial = timing_lock();
    let dir = scratch(&format!("sample-hot-{sampler}"));
    let trace = dir.join("t.clrprof");
    let out = record_sampled(&trace, sampler, &["--rate", "199"], &["hot", "3"]);
    let app = results(&out);
    let r = report_json(&trace);
    let a = function(&r, "Scenarios.Hot.HotA").expect("HotA sampled")["self_samples"]
        .as_f64()
        .unwrap();
    let b = function(&r, "Scenarios.Hot.HotB").expect("HotB sampled")["self_samples"]
        .as_f64()
        .unwrap();
    let share = a / (a + b);
    let expected: f64 = app["hota_share"].parse().unwrap();
    assert!(
        (share - expected).abs() <= 0.05,
        "HotA share {share:.3}, the app measured {expected}"
    );
    // The stacks reach Main through the scenario's frames.
    for f in [
        "Scenarios.Hot.Worker",
        "Scenarios.Hot.RunHot",
        "Scenarios.Program.Main",
    ] {
        assert!(
            function(&r, f).is_some_and(|x| x["total_samples"].as_u64().unwrap() > 0),
            "{f} not on any stack"
        );
    }
    // Thread names are attached to the samples.
    assert!(thread(&r, "hot-a")["samples"].as_u64().unwrap() > 0);
    assert!(thread(&r, "hot-b")["samples"].as_u64().unwrap() > 0);
}

/// The sampler keeps the asked rate, or the trace says which ticks it missed and why.
///
/// On an idle machine every rate is kept within 10 %. Beside a busy core (as CI must pass)
/// the suspend sampler at 999 Hz kept 89 %: it stops the runtime each tick, and the ticks
/// it cannot take for want of a core are the machine's, not lost data. So the test holds
/// what must hold anywhere: every tick due is taken or counted missed under a named
/// reason, the samples carry the rate the sampler says it kept, the report prints the
/// reasons when under 99 %, and no machine of this kind makes a sampler keep under half.
fn rate_kept_or_explained(rate: u32, sampler: &str) {
    let _serial = timing_lock();
    let dir = scratch(&format!("sample-rate-{rate}-{sampler}"));
    let trace = dir.join("t.clrprof");
    record_sampled(
        &trace,
        sampler,
        &["--rate", &rate.to_string()],
        &["sleeper", "5"],
    );
    let r = report_json(&trace);
    let t = &r["sampler"]["timing"];
    let n = |k: &str| {
        t[k].as_u64()
            .unwrap_or_else(|| panic!("no sampler.timing.{k}: {t:#}"))
    };
    let due = n("due_ticks");
    let missed = n("missed_own_work") + n("missed_not_scheduled");
    let taken = r["sampler"]["ticks"].as_u64().unwrap();
    // No tick vanishes: taken + missed is what was due, give or take the partial
    // intervals at the start and end of the run.
    assert!(
        (taken + missed).abs_diff(due) <= 2 + due / 100,
        "{taken} ticks taken and {missed} missed of {due} due: {:#}",
        r["sampler"]
    );
    // The samples say the rate the sampler kept.
    let achieved = r["samples"]["rate_hz"].as_f64().unwrap();
    let kept = t["achieved_hz"].as_f64().unwrap();
    assert!(
        (achieved - kept).abs() <= 0.05 * kept,
        "samples at {achieved:.1} Hz, the sampler kept {kept:.1} Hz: {t:#}"
    );
    assert!(
        achieved >= 0.5 * rate as f64,
        "asked {rate} Hz, got {achieved:.1} Hz ({:#})",
        r["sampler"]
    );
    if achieved < 0.9 * rate as f64 {
        // Under 90 % only with every missed tick named in the report.
        let text = report_text(&trace);
        let line = text
            .lines()
            .find(|l| l.starts_with("  rate:"))
            .unwrap_or_else(|| panic!("asked {rate} Hz, got {achieved:.1} Hz, and the report does not say why:\n{text}"));
        assert!(missed > 0 && line.contains("missed"), "{line}");
        eprintln!("rate kept under 90 % on this machine: {line}");
    }
}

#[test]
fn samples_arrive_at_99_hz() {
    rate_kept_or_explained(99, "signal");
}

#[test]
fn samples_arrive_at_99_hz_suspend_sampler() {
    rate_kept_or_explained(99, "suspend");
}

#[test]
fn samples_arrive_at_999_hz() {
    rate_kept_or_explained(999, "signal");
}

#[test]
fn samples_arrive_at_999_hz_suspend_sampler() {
    rate_kept_or_explained(999, "suspend");
}

#[test]
fn a_sleeping_thread_counts_in_wall_time_not_cpu_time() {
    sleeping_thread("signal");
}

#[test]
fn a_sleeping_thread_counts_in_wall_time_not_cpu_time_suspend_sampler() {
    sleeping_thread("suspend");
}

fn sleeping_thread(sampler: &str) {
    let _serial = timing_lock();
    let dir = scratch(&format!("sample-sleeper-{sampler}"));
    let trace = dir.join("t.clrprof");
    record_sampled(&trace, sampler, &["--rate", "99"], &["sleeper", "3"]);
    // The wall view: every sample, the sleeping thread's included.
    let r = report_json_with(&trace, &["--wall"]);
    let sleepy = thread(&r, "sleepy");
    let spinny = thread(&r, "spinny");
    let (s_samples, s_cpu) = (
        sleepy["samples"].as_u64().unwrap(),
        sleepy["on_cpu"].as_u64().unwrap(),
    );
    let (p_samples, p_cpu) = (
        spinny["samples"].as_u64().unwrap(),
        spinny["on_cpu"].as_u64().unwrap(),
    );
    // Both are sampled in wall time, ~297 ticks each when the sampler keeps its rate (a
    // loaded machine left the signal sampler 143 answers from the spinner, which must get a
    // core to answer)…
    assert!(
        s_samples > 100 && p_samples > 100,
        "sleepy {s_samples}, spinny {p_samples}"
    );
    // The CPU view: the sleeper's wait is apart, as a sleep; SpinLoop is on top.
    let cpu = report_json(&trace);
    assert_eq!(
        thread(&cpu, "sleepy")["state"],
        "sleep",
        "{:#}",
        thread(&cpu, "sleepy")
    );
    assert_eq!(cpu["functions"][0]["name"], "Scenarios.Sleeper.SpinLoop");
    // …but only the spinning one uses the CPU.
    assert!(
        s_cpu * 20 < s_samples,
        "sleepy on CPU in {s_cpu} of {s_samples} samples"
    );
    // "On CPU" means the thread ran since the last tick. Alone on the machine the spinner
    // is on CPU in nearly every sample; with four busy processes on the two cores it got
    // 49–152 of ~290, at load 7–9 28 of 294, so what is asserted is the contrast with the
    // sleeper: on CPU in at least one sample in twenty, and at least ten times as often as
    // the sleeper.
    assert!(
        p_cpu * 20 > p_samples && p_cpu * s_samples > 10 * s_cpu * p_samples,
        "spinny on CPU in {p_cpu} of {p_samples} samples, sleepy in {s_cpu} of {s_samples}"
    );
    assert!(
        function(&r, "Scenarios.Sleeper.SleepLoop").is_some_and(|f| f["total_samples"]
            .as_u64()
            .unwrap()
            * 2
            > s_samples),
        "SleepLoop is not on most of the sleeping thread's stacks: {:#}",
        function(&r, "Scenarios.Sleeper.SleepLoop").unwrap_or(&Value::Null)
    );
    if sampler == "signal" {
        // The signal sampler names native code by module: the sleeper waits in libc
        // (nanosleep), reached through the runtime.
        for (module, min) in [("[libc.so.6]", "self"), ("[libcoreclr.so]", "total")] {
            let n = function(&r, module)
                .map(|f| f[format!("{min}_samples")].as_u64().unwrap())
                .unwrap_or(0);
            assert!(
                n * 2 > s_samples,
                "{module}: {min} {n} of {s_samples}: {:#}",
                r["functions"]
            );
        }
    }
}

#[test]
fn each_thrown_exception_has_its_stack() {
    let _serial = timing_lock();
    let dir = scratch("sample-exception-stacks");
    let trace = dir.join("t.clrprof");
    record(&trace, &[], &["exceptions", "7"]);
    let r = report_json(&trace);
    let stacks: Vec<&Value> = r["exception_stacks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["type_name"] == "System.InvalidOperationException")
        .collect();
    // Aggregated: one entry per distinct stack, with its count.
    let thrown: u64 = stacks.iter().map(|s| s["count"].as_u64().unwrap()).sum();
    assert_eq!(thrown, 7, "{:#}", r["exception_stacks"]);
    for s in stacks {
        let frames: Vec<&str> = s["frames"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f.as_str().unwrap())
            .collect();
        assert!(
            frames
                .iter()
                .any(|f| f.starts_with("Scenarios.Exceptions.")),
            "{frames:?}"
        );
        // With its line (Program.cs:N) when the PDB gives one.
        assert!(
            frames.iter().any(|f| *f == "Scenarios.Program.Main"
                || f.starts_with("Scenarios.Program.Main (Program.cs:")),
            "{frames:?}"
        );
    }
}

#[test]
fn threads_starting_and_dying_while_sampling_at_999_hz() {
    churn("signal");
}

#[test]
fn threads_starting_and_dying_while_sampling_at_999_hz_suspend_sampler() {
    churn("suspend");
}

fn churn(sampler: &str) {
    let _serial = timing_lock();
    let dir = scratch(&format!("sample-churn-{sampler}"));
    let trace = dir.join("t.clrprof");
    let app = scenarios();
    let plain = app.command(&["churn", "2"]).output().unwrap();
    let out = record_sampled(&trace, sampler, &["--rate", "999"], &["churn", "10"]);
    let res = results(&out);
    assert_eq!(res["churn_ok"], "1");
    assert_eq!(res["max_in_flight"], results(&plain)["max_in_flight"]);
    let r = report_json(&trace);
    assert!(
        r["samples"]["total"].as_u64().unwrap() > 1000,
        "{:#}",
        r["samples"]
    );
    assert!(r["events"]["threads_created"].as_u64().unwrap() > 100);
}

#[test]
fn converts_a_sampled_trace_to_flamegraphs_and_speedscope() {
    let _serial = timing_lock();
    let dir = scratch("sample-convert");
    let trace = dir.join("t.clrprof");
    record(&trace, &["--rate", "199"], &["hot", "2"]);
    let convert = |format: &str| convert(&trace, format);
    // Folded stacks: the full path from Main to the hot function, under its thread.
    convert("folded");
    let folded = std::fs::read_to_string(dir.join("t.folded")).unwrap();
    let want =
        "Scenarios.Program.Main;Scenarios.Hot.RunHot;Scenarios.Hot.Worker;Scenarios.Hot.HotA";
    assert!(
        folded
            .lines()
            .any(|l| l.starts_with("hot-a") && l.contains(want)),
        "no `{want}` stack for hot-a in:\n{folded}"
    );
    // SVG: well-formed XML naming the hot functions.
    convert("svg");
    let svg = std::fs::read_to_string(dir.join("t.svg")).unwrap();
    let mut reader = quick_xml::Reader::from_str(&svg);
    loop {
        match reader.read_event() {
            Ok(quick_xml::events::Event::Eof) => break,
            Ok(_) => {}
            Err(e) => panic!("SVG is not well-formed XML: {e}"),
        }
    }
    assert!(svg.contains("Scenarios.Hot.HotA") && svg.contains("Scenarios.Hot.HotB"));
    // speedscope: valid against the schema of speedscope's file format.
    convert("speedscope");
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("t.speedscope.json")).unwrap())
            .unwrap();
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(
            clrprof_testkit::workspace_root()
                .join("crates/clrprof-export/tests/speedscope.schema.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(&doc).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:#?}");
    let names: Vec<&str> = doc["profiles"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert!(names.iter().any(|n| n.contains("hot-a")), "{names:?}");
    // The other formats at least convert.
    for f in ["firefox", "chrome", "pprof"] {
        convert(f);
    }
}

#[test]
fn converting_an_events_trace_explains_what_is_missing() {
    let _serial = timing_lock();
    let dir = scratch("sample-convert-events");
    let trace = dir.join("t.clrprof");
    record(&trace, &["--mode", "events"], &["exceptions", "1"]);
    let out = clrprof()
        .args(["convert", "-f", "svg"])
        .arg(&trace)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no samples or calls"));
}

/// With OSR forced early, Worker and Main run as OSR methods on top of their Tier-0
/// frames. An OSR frame's return slot was never written by a call (it holds whatever the
/// Tier-0 frame left there, once an old return into `Thread.StartCore`), so the walk
/// takes the caller from the Tier-0 frame's record. The signal sampler must report each
/// method once, in order, as DoStackSnapshot (which knows about OSR) does.
#[test]
fn osr_methods_appear_once_in_signal_stacks() {
    let _serial = timing_lock();
    let dir = scratch("sample-osr");
    let trace = dir.join("t.clrprof");
    let out = clrprof()
        .args(["record", "--sampler", "signal", "--rate", "199", "-o"])
        .arg(&trace)
        .arg("--")
        .arg(clrprof_testkit::dotnet())
        .arg(&scenarios().dll)
        .args(["hot", "2"])
        .env("DOTNET_TC_OnStackReplacement_InitialCounter", "1")
        .env("DOTNET_OSR_HitLimit", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let logged = |what: &str| number_before(&stderr, what);
    assert!(
        logged(" OSR frames walked") > 0,
        "no OSR frame met, the test proves nothing:\n{stderr}"
    );

    let conv = clrprof()
        .args(["convert", "-f", "folded"])
        .arg(&trace)
        .output()
        .unwrap();
    assert!(
        conv.status.success(),
        "{}",
        String::from_utf8_lossy(&conv.stderr)
    );
    let folded = std::fs::read_to_string(dir.join("t.folded")).unwrap();
    let want =
        "Scenarios.Program.Main;Scenarios.Hot.RunHot;Scenarios.Hot.Worker;Scenarios.Hot.HotA";
    let hot_a: Vec<&str> = folded
        .lines()
        .filter(|l| l.starts_with("hot-a") && l.contains("Scenarios.Hot.HotA"))
        .collect();
    // Weights are CPU nanoseconds (the folded format's unit), so the check is a share.
    let weight = |l: &&str| -> u64 { l.rsplit(' ').next().unwrap().parse().unwrap() };
    let all: u64 = hot_a.iter().map(weight).sum();
    let full: u64 = hot_a.iter().filter(|l| l.contains(want)).map(weight).sum();
    // A leaf interrupted in its prolog keeps its caller (fpwalk::prolog_return); what is
    // left is a sample landing inside the OSR transition itself, rare: at most 1 % of
    // HotA's CPU, or one sample's worth (1/199 s) when a busy machine gave HotA little, may
    // lack a frame (a busy CI machine once lost 1.5 % before that fix).
    let slack = (all / 100).max(1_000_000_000 / 199 + 1);
    assert!(
        all >= 10_000_000 && all - full <= slack,
        "{full} of {all} ns of HotA's CPU have `{want}`:\n{folded}"
    );
    for dup in ["Worker;Scenarios.Hot.Worker", "Main;Scenarios.Program.Main"] {
        assert!(!folded.contains(dup), "`{dup}` in:\n{folded}");
    }
}

/// At 999 Hz on an app keeping both cores busy, the agent's exit log says the rate it
/// achieved and why each missed tick was missed: the previous tick's work ran past the
/// deadlines, or the sampler thread was not scheduled in time. The two counts add up to
/// the ticks missed, and the report's achieved rate is the log's within a tenth.
#[test]
fn missed_ticks_are_counted_by_reason_on_a_busy_app() {
    let _serial = timing_lock();
    let dir = scratch("sample-missed-reasons");
    let trace = dir.join("t.clrprof");
    let out = record_sampled(&trace, "signal", &["--rate", "999"], &["crunch", "6000"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let sampler = stderr
        .lines()
        .find(|l| l.contains("sampler (signal):"))
        .unwrap();
    let timing = stderr
        .lines()
        .find(|l| l.contains("sampler timing:"))
        .unwrap_or_else(|| panic!("no sampler timing line:\n{stderr}"));
    let missed = number_before(sampler, " ticks missed");
    let busy = number_before(timing, " missed because ticks' own work");
    let sched = number_before(timing, " because the sampler thread was not scheduled");
    assert_eq!(busy + sched, missed, "{sampler}\n{timing}");
    let ticks = number_before(sampler, " ticks,");
    assert!(
        timing.contains(&format!("({ticks} ticks taken of ")),
        "{timing}"
    );
    let achieved: f64 = timing
        .split(" Hz achieved")
        .next()
        .and_then(|s| s.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no achieved rate in {timing}"));
    assert!(achieved > 0.0 && achieved <= 1000.0, "{timing}");
    assert!(timing.contains("999.0 Hz asked"), "{timing}");

    // The handlers copy only as much stack as the walks read (plus a margin): above the
    // crunch threads' first frames lie 4 KiB of TLS and thread control block that whole
    // copies took every time (5.7 KiB copied on average, 1.6 read).
    let copies = stderr
        .lines()
        .find(|l| l.contains("stack copies:"))
        .unwrap_or_else(|| panic!("no stack copies line:\n{stderr}"));
    let kib_before = |what: &str| -> f64 {
        let head = &copies[..copies
            .find(what)
            .unwrap_or_else(|| panic!("{what:?} in {copies}"))];
        head.trim_end()
            .rsplit(' ')
            .next()
            .and_then(|n| n.trim_start_matches('(').parse().ok())
            .unwrap_or_else(|| panic!("a number before {what:?} in {copies}"))
    };
    let (copied, read) = (
        kib_before(" KiB on average,"),
        kib_before(" KiB of them on average"),
    );
    let n = number_before(copies, " (");
    if n >= 100 {
        assert!(copied <= read + 1.5, "{copies}");
    } else {
        eprintln!("too few copies to compare on this machine: {copies}");
    }
    assert!(number_before(copies, " cut short") <= n / 100, "{copies}");

    // The trace carries the same figures (format 2.3): the report says why, not the log.
    let j = report_json(&trace);
    let rejected = number_before(sampler, " rejected walks");
    assert_eq!(j["sampler"]["rejected_walks"], rejected, "{sampler}");
    let t = &j["sampler"]["timing"];
    assert_eq!(t["missed_own_work"], busy, "{t:#}\n{timing}");
    assert_eq!(t["missed_not_scheduled"], sched, "{t:#}\n{timing}");
    let kept = t["achieved_hz"].as_f64().unwrap();
    assert!((kept - achieved).abs() <= 0.1 * achieved, "{t:#}\n{timing}");
    assert!(
        (t["asked_hz"].as_f64().unwrap() - 999.0).abs() < 0.5,
        "{t:#}"
    );
    // Threads left out of ticks, by reason: the log's figures are the trace's, and the
    // report's sampler line names them.
    let skips = stderr
        .lines()
        .find(|l| l.contains("signal sampler skips:"))
        .unwrap_or_else(|| panic!("no signal sampler skips line:\n{stderr}"));
    let k = &j["sampler"]["skipped"];
    for (key, after) in [
        ("handler_pending", " threads left out of a tick"),
        ("no_free_slot", " for want of a free capture slot"),
        ("signals_lost", " signals lost"),
    ] {
        assert_eq!(k[key], number_before(skips, after), "{key}: {k:#}\n{skips}");
    }
    let text = report_text(&trace);
    if k["handler_pending"].as_u64().unwrap() > 0 {
        let said = format!(
            "threads left out of a tick: {} whose previous signal's handler had not run yet",
            k["handler_pending"]
        );
        assert!(text.contains(&said), "{said:?} in\n{text}");
    }
    let ratio = t["achieved_ratio"].as_f64().unwrap();
    if ratio < 0.99 || missed > 0 {
        let line = text
            .lines()
            .find(|l| l.starts_with("  rate:"))
            .unwrap_or_else(|| panic!("the report does not say why ticks were missed:\n{text}"));
        // Each reason that missed a tick is named with its count.
        if busy > 0 {
            let said = format!("{busy} ticks missed because the ticks' own work");
            assert!(line.contains(&said), "{line}");
        }
        if sched > 0 {
            let said = format!("{sched} because the sampler thread was not scheduled");
            assert!(line.contains(&said), "{line}");
        }
    } else {
        assert!(!text.contains("  rate:"), "{text}");
    }
}

/// The runtime's background JIT thread (the tiered-compilation worker) has no managed
/// frame; its CPU is CPU all the same: the function table, the thread table and the
/// flamegraph name it `[runtime: JIT]` and give it about what the kernel says it used.
#[test]
fn the_background_jit_threads_cpu_is_runtime_jit() {
    let _serial = timing_lock();
    let dir = scratch("sample-jit-storm");
    let trace = dir.join("t.clrprof");
    let out = record_sampled(&trace, "signal", &[], &["jit-storm"]);
    let app = results(&out);
    let worker_ms: f64 = app["jit_worker_cpu_ms"].parse().unwrap();
    let worker_tid: u64 = app["jit_worker_tid"].parse().unwrap();
    assert!(
        worker_ms >= 200.0,
        "the scenario kept the JIT worker busy for only {worker_ms} ms: {app:?}"
    );
    let r = report_json(&trace);
    let jit = function(&r, "[runtime: JIT]").unwrap_or_else(|| {
        panic!(
            "no [runtime: JIT] row: {:#}",
            r["functions"].as_array().unwrap()[..8.min(r["functions"].as_array().unwrap().len())]
                .iter()
                .map(|f| f["name"].clone())
                .collect::<Vec<_>>()
                .into_iter()
                .collect::<Value>()
        )
    });
    let jit_ms = jit["self_cpu_ns"].as_f64().unwrap() / 1e6;
    // The kernel counts in 10 ms ticks, and the last sample may precede the app's reading.
    assert!(
        jit_ms >= 0.6 * worker_ms && jit_ms <= 1.3 * worker_ms + 50.0,
        "[runtime: JIT] has {jit_ms:.1} ms of CPU, the worker used {worker_ms} ms"
    );
    let th = r["samples"]["threads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["os_tid"] == worker_tid)
        .unwrap_or_else(|| panic!("worker {worker_tid} not sampled"));
    assert_eq!(th["name"], ".NET Tiered Compilation Worker");
    // The flamegraph's input says the same.
    convert(&trace, "folded");
    let folded = std::fs::read_to_string(dir.join("t.folded")).unwrap();
    assert!(
        folded
            .lines()
            .any(|l| l.starts_with(".NET Tiered Compilation Worker")
                && l.contains(";[runtime: JIT] ")),
        "{folded}"
    );
}

/// A thread-pool server's hot path is one tree in the flamegraph's input by default (its
/// workers share a name), and one per worker with `--per-thread`.
#[test]
fn folded_merges_a_thread_pools_workers_unless_per_thread() {
    let _serial = timing_lock();
    let dir = scratch("sample-pool-hot");
    let trace = dir.join("t.clrprof");
    let out = record(&trace, &[], &["pool-hot", "2", "workers=4"]);
    let app = results(&out);
    assert_eq!(app["pool_threads"], "4", "{app:?}");
    let roots = |args: &[&str]| -> std::collections::BTreeSet<String> {
        let out = dir.join("t.folded");
        let _ = std::fs::remove_file(&out);
        convert_with(&trace, &[&["-f", "folded"][..], args].concat());
        std::fs::read_to_string(&out)
            .unwrap()
            .lines()
            .filter(|l| l.contains("Scenarios.PoolHot.Handle"))
            .map(|l| l.split(';').next().unwrap().to_string())
            .collect()
    };
    let merged = roots(&[]);
    assert_eq!(
        merged.iter().collect::<Vec<_>>(),
        [".NET TP Worker"],
        "one tree for the pool's workers"
    );
    let apart = roots(&["--per-thread"]);
    assert!(
        apart.len() >= 3 && apart.iter().all(|r| r.starts_with(".NET TP Worker (")),
        "{apart:?}"
    );
}

/// Code without metadata is named, not `[native]`: a `DynamicMethod` and a compiled
/// expression (LCG) as `[dynamic] NAME`, the P/Invoke marshalling IL stub as
/// `[stub] IL_STUB_PInvoke`, in the function table and the exports, on .NET 8, 9 and 10.
/// The signal sampler names them from its own table of live dynamic code
/// (`DynamicMethodJITCompilationFinished`, IL stubs included) and never asks the runtime
/// about them (its lookup takes no lock for a thread like the sampler's while the
/// finalizer frees such code; docs/safety.md): the agent's log counts the frames named
/// from the table and the dynamic methods asked of the runtime, which must be none.
#[test]
fn dynamic_methods_and_il_stubs_are_named() {
    let _serial = timing_lock();
    for rt in clrprof_testkit::Runtime::ALL {
        let dir = scratch(&format!("sample-dynamic-{}", rt.major()));
        let trace = dir.join("t.clrprof");
        // The default runtime's run as before; 8 and 9 for a second (~2 s a run).
        let seconds = if rt == clrprof_testkit::Runtime::Net10 {
            "2"
        } else {
            "1"
        };
        let app = clrprof_testkit::app_on("Scenarios", rt);
        let out = record_app(
            &app,
            &trace,
            &["--sampler", "signal"],
            &["dynamic", seconds],
        );
        let on = format!(".NET {}", rt.major());
        let res = results(&out);
        let lambda = format!("[dynamic] {}", res["dynamic_lambda_name"]);
        let r = report_json(&trace);
        let spin = function(&r, "[dynamic] DynSpin").expect("the DynamicMethod is named");
        // It spins for half the run: most of the main thread's CPU.
        assert!(
            spin["self_cpu_ns"].as_f64().unwrap() > 100e6,
            "{on}: {spin}"
        );
        let stub = function(&r, "[stub] IL_STUB_PInvoke").expect("the IL stub is named");
        assert!(stub["total_cpu_ns"].as_f64().unwrap() > 0.0, "{on}: {stub}");
        convert(&trace, "folded");
        let folded = std::fs::read_to_string(dir.join("t.folded")).unwrap();
        let want = format!("Scenarios.Dynamic.Run;{lambda};[dynamic] DynSpin ");
        assert!(folded.contains(&want), "{on}: no `{want}` in:\n{folded}");
        assert!(
            folded.contains("Scenarios.Dynamic.Marshalled;[stub] IL_STUB_PInvoke"),
            "{on}: {folded}"
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        let line = stderr
            .lines()
            .find(|l| l.contains("dynamic code:"))
            .unwrap_or_else(|| {
                panic!("{on}: no `dynamic code:` line in the agent's log:\n{stderr}")
            });
        // The lambda, DynSpin and the stub: all three in the table, the samples' frames
        // in them named from it.
        assert!(number_after(line, "dynamic code: ") >= 3, "{on}: {line}");
        assert!(
            count_before(line, " sampled addresses named") > 100,
            "{on}: {line}"
        );
        assert_eq!(
            count_before(line, " dynamic methods asked"),
            0,
            "{on}: {line}"
        );
    }
}

/// The figure right before `after` in a log line ("… 5794 sampled addresses named …").
fn count_before(line: &str, after: &str) -> u64 {
    let at = line
        .find(after)
        .unwrap_or_else(|| panic!("{after:?} in {line}"));
    line[..at]
        .rsplit(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("a number before {after:?} in {line}"))
}

/// LCG methods compiled, run for a millisecond and freed under the 999 Hz sampler, their
/// code heaps released by the GCs between (`dynamic-churn`): each unload reaches the
/// sampler's table before the runtime frees the code, so no dynamic method is asked of
/// the runtime and a sample that meets freed code drops the frame (~2 s).
#[test]
fn freed_dynamic_methods_leave_the_samplers_table_first() {
    let dir = scratch("sample-dynamic-churn");
    let trace = dir.join("t.clrprof");
    let out = record_sampled(
        &trace,
        "signal",
        &["--rate", "999"],
        &["dynamic-churn", "seconds=1"],
    );
    let res = results(&out);
    let made: u64 = res["dynamic_churn_methods"].parse().unwrap();
    assert!(made > 20, "{res:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line = stderr
        .lines()
        .find(|l| l.contains("dynamic code:"))
        .unwrap_or_else(|| panic!("no `dynamic code:` line in the agent's log:\n{stderr}"));
    // Every method the app made was compiled into the table; at least half were
    // unloaded (their resolvers finalized) while the recording ran.
    assert!(
        number_after(line, "dynamic code: ") >= made,
        "{made} made: {line}"
    );
    assert!(
        count_before(line, " methods unloaded") >= made / 2,
        "{made} made: {line}"
    );
    assert_eq!(count_before(line, " dynamic methods asked"), 0, "{line}");
    assert!(
        line.contains("0 not in the full table, 0 pages not marked"),
        "{line}"
    );
}

/// Issue #26 item 3, the rare segfault of the sampler thread inside libcoreclr: the
/// runtime's code lookup for an address in a ReadyToRun image walks down the image's
/// method table to a method that has run, with no lower bound, and faults in an image
/// none of whose methods at or below the address has run. The signal sampler asked it
/// about words of a thread's stack that merely looked like return addresses (executable
/// memory after a call byte: the image's metadata and tables are in its executable
/// section). `r2r-words` fills a stack with such words pointing into System.Private.Xml,
/// none of whose code runs, behind an RBP of 0, where the walk scans for frame records:
/// before the check, the first such lookup crashed the target.
#[test]
fn guessed_return_addresses_into_readytorun_code_that_never_ran_are_not_asked() {
    // Every run crashed the target before the guard, on each runtime (~2 s a run).
    for rt in clrprof_testkit::Runtime::ALL {
        let dir = scratch(&format!("sample-r2r-words-{}", rt.major()));
        let trace = dir.join("t.clrprof");
        let app = clrprof_testkit::app_on("Scenarios", rt);
        let out = record_app(
            &app,
            &trace,
            &["--rate", "999", "--sampler", "signal"],
            &["r2r-words", "1"],
        );
        let res = results(&out);
        assert_eq!(res["r2r_words_ok"], "1", ".NET {}: {res:?}", rt.major());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("sampler (signal):"), "{stderr}");
        let logged = |what: &str| number_before(&stderr, what);
        let kept = logged(" outside methods' code")
            + logged(" in methods that never ran")
            + logged(" unproven");
        assert!(
            kept > 0,
            "no guessed return address into the image was met, the test proves nothing:\n{stderr}"
        );
        // The agent under test is a debug build: every answer the guard gave from an
        // image's method-def table was compared with the runtime's own (where asking it
        // was safe), and none differed.
        assert!(logged(" compared") > 0, "{stderr}");
        assert_eq!(logged(" disagreed"), 0, "{stderr}");
    }
}

/// A single-file app (self-contained, .NET 10): its assemblies are bundled in the app's
/// own file and the runtime maps each image from inside it, headers 16-byte aligned into a
/// page, while the file's offset-0 mapping is the host's ELF header. The guard took that
/// ELF header for the images' and handed `GetFunctionFromIP` every guessed address there:
/// `r2r-words` killed the target with SIGSEGV in every run. Now the bundled images are
/// found by their headers and judged like the framework's files, and code no loaded
/// module holds is asked about only if it is an ELF file's own executable segment. One run
/// (~2 s; the publish, once per source change, ~40 s).
#[test]
fn a_single_file_app_s_bundled_readytorun_images_are_guarded() {
    let dir = scratch("sample-r2r-words-single-file");
    let trace = dir.join("t.clrprof");
    let app = clrprof_testkit::app_single_file("Scenarios");
    let out = clrprof()
        .arg("record")
        .arg("-o")
        .arg(&trace)
        .args(["--rate", "999", "--sampler", "signal", "--"])
        .arg(&app.dll)
        .args(["r2r-words", "1"])
        .output()
        .expect("run clrprof record");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}\n{stderr}", out.status);
    let res = results(&out);
    // The words point into System.Private.Xml's code, mapped from the app's own file.
    assert_eq!(res["r2r_words_ok"], "1", "{res:?}");
    assert_eq!(res["r2r_file"], "Scenarios", "{res:?}");
    assert!(stderr.contains("sampler (signal):"), "{stderr}");
    // The bundled images were read as ReadyToRun images at the headers the runtime names
    // as their load address (not page-aligned: the assembly's offset in the file).
    let read = stderr
        .lines()
        .find(|l| l.contains("ReadyToRun image System.Private.Xml.dll at "))
        .unwrap_or_else(|| panic!("System.Private.Xml's image was not read:\n{stderr}"));
    let base = read
        .split(" at 0x")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|h| u64::from_str_radix(h, 16).ok())
        .unwrap_or_else(|| panic!("{read}"));
    assert_ne!(base % 4096, 0, "{read}");
    assert!(
        stderr.contains("ReadyToRun image System.Private.CoreLib.dll at "),
        "{stderr}"
    );
    let logged = |what: &str| number_before(&stderr, what);
    // The planted words were judged, not asked; frames at methods that ran were kept,
    // and match the runtime's own answer where asking was safe.
    assert!(logged(" in methods that never ran") > 0, "{stderr}");
    assert!(logged(" answered from method-def tables") > 0, "{stderr}");
    assert!(logged(" compared") > 0, "{stderr}");
    assert_eq!(logged(" disagreed"), 0, "{stderr}");
    // Samples name the app's own method, bundled too.
    let r = report_json(&trace);
    assert!(
        function(&r, "Scenarios.R2rWords.Run").is_some(),
        "no samples in R2rWords.Run"
    );
}

/// A composite ReadyToRun app (`PublishReadyToRunComposite`): the code of its assemblies
/// lies in one image, `Scenarios.r2r.dll`, that no loaded module names (the assembly's own
/// module holds only IL and metadata), so its frames were dropped and shown as the file
/// (`[Scenarios.r2r.dll]`). The guard now reads the composite's method table and each
/// component's method-def table, finds the component's module by the manifest's name, and
/// names them: `Main` and `FibScenario.Run`, precompiled and called once, run in the
/// composite's code all along. One run (~2 s; the publish, once per source change, ~40 s).
#[test]
fn a_composite_readytorun_app_s_frames_are_named() {
    let dir = scratch("sample-composite");
    let trace = dir.join("t.clrprof");
    let app = clrprof_testkit::app_composite("Scenarios");
    assert!(app.dir.join("Scenarios.r2r.dll").is_file(), "{:?}", app.dir);
    let out = record_app(
        &app,
        &trace,
        &["--rate", "999", "--sampler", "signal"],
        &["fib", "34"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("ReadyToRun image (composite of 1 assemblies, 1 loaded)"),
        "the composite was not read:\n{stderr}"
    );
    let logged = |what: &str| number_before(&stderr, what);
    assert!(logged(" answered from method-def tables") > 0, "{stderr}");
    assert!(logged(" compared") > 0, "{stderr}");
    assert_eq!(logged(" disagreed"), 0, "{stderr}");
    let folded = dir.join("t.folded");
    let _ = convert_with(&trace, &["-f", "folded", "-o", folded.to_str().unwrap()]);
    let folded = std::fs::read_to_string(&folded).unwrap();
    assert!(
        folded.lines().any(|l| l.contains(
            "Scenarios.Program.Main;Scenarios.FibScenario.Run;Scenarios.FibScenario.Fib"
        )),
        "the composite's frames are not named:\n{folded}"
    );
    assert!(!folded.contains("r2r.dll"), "{folded}");
}
