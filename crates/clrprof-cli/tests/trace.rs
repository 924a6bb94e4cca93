//! Acceptance tests of the tracing mode (ELT3 fast-path hooks): exact call counts from
//! real apps, balanced trees through exceptions and tail calls, untouched results.

use crate::common;

use std::collections::BTreeMap;

use common::*;
use serde_json::Value;

fn functions(r: &Value) -> BTreeMap<String, Value> {
    r["functions"]
        .as_array()
        .expect("functions")
        .iter()
        .map(|f| (f["name"].as_str().unwrap().to_string(), f.clone()))
        .collect()
}

fn calls(f: &BTreeMap<String, Value>, name: &str) -> u64 {
    f.get(name)
        .map(|v| v["calls"].as_u64().unwrap())
        .unwrap_or(0)
}

/// Every node: inclusive ≥ self, and the children's inclusive time fits in the parent's.
fn check_tree(n: &Value) {
    let inc = n["inclusive_ns"].as_u64().unwrap();
    let slf = n["self_ns"].as_u64().unwrap();
    assert!(inc >= slf, "inclusive < self in {}", n["name"]);
    let kids: u64 = n["children"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["inclusive_ns"].as_u64().unwrap())
        .sum();
    assert!(kids <= inc, "children exceed parent in {}", n["name"]);
    for c in n["children"].as_array().unwrap() {
        check_tree(c);
    }
}

#[test]
fn counts_every_recursive_call() {
    let dir = scratch("trace-fib");
    let trace = dir.join("t.clrprof");
    let out = record(
        &trace,
        &["--mode", "trace", "--include", "Scenarios.*"],
        &["fib", "25"],
    );
    assert_eq!(results(&out)["fib_calls"], "242785");
    assert_eq!(results(&out)["fib"], "75025");
    let r = report_json(&trace);
    let f = functions(&r);
    assert_eq!(calls(&f, "Scenarios.FibScenario.Fib"), 242785);
    let fib = &f["Scenarios.FibScenario.Fib"];
    assert!(
        fib["signature"].as_str().unwrap().contains("int"),
        "{fib:#}"
    );
    assert_eq!(fib["callers"]["Scenarios.FibScenario.Fib"], 242784);
    assert_eq!(fib["callers"]["Scenarios.FibScenario.Run"], 1);
    // Only the included namespace is hooked.
    assert!(
        f.keys().all(|k| k.starts_with("Scenarios.")),
        "{:?}",
        f.keys().collect::<Vec<_>>()
    );
    let stats = &r["trace_stats"];
    assert_eq!(stats["unmatched_leaves"], 0, "{stats:#}");
    assert_eq!(stats["open_at_end"], 0, "{stats:#}");
    check_tree(&r["call_tree"]);
}

#[test]
fn counts_generic_virtual_interface_lambda_and_async_calls() {
    let dir = scratch("trace-calls");
    let trace = dir.join("t.clrprof");
    let out = record(
        &trace,
        &[
            "--mode",
            "trace",
            "--include",
            "Scenarios.*",
            "--exclude",
            "Scenarios.Circle.*",
        ],
        &["calls"],
    );
    let app = results(&out);
    let r = report_json(&trace);
    let f = functions(&r);
    let n = |k: &str| app[k].parse::<u64>().unwrap();
    let sum_prefix = |p: &str| -> u64 {
        f.iter()
            .filter(|(k, _)| k.starts_with(p))
            .map(|(_, v)| v["calls"].as_u64().unwrap())
            .sum()
    };
    let keys = || f.keys().cloned().collect::<Vec<_>>().join("\n");
    assert_eq!(
        calls(&f, "Scenarios.Calls.IsEven"),
        n("is_even"),
        "{}",
        keys()
    );
    assert_eq!(calls(&f, "Scenarios.Calls.IsOdd"), n("is_odd"));
    // Each instantiation is its own function; reference types share canonical code.
    assert_eq!(
        calls(&f, "Scenarios.Calls.Echo<System.Int32>"),
        n("echo_int"),
        "{}",
        keys()
    );
    assert_eq!(
        calls(&f, "Scenarios.Calls.Echo<System.__Canon>"),
        n("echo_string"),
        "{}",
        keys()
    );
    assert_eq!(
        calls(&f, "Scenarios.Calls.Echo<Scenarios.Point>"),
        n("echo_struct"),
        "{}",
        keys()
    );
    // Virtual and interface dispatch reach each override; an excluded type is never
    // hooked (its calls happened: the app counted them).
    assert!(n("area_circle") > 0);
    assert!(
        !f.keys().any(|k| k.starts_with("Scenarios.Circle.")),
        "{}",
        keys()
    );
    assert_eq!(calls(&f, "Scenarios.Square.Area"), n("area_square"));
    assert_eq!(
        calls(&f, "Scenarios.EnglishGreeter.Greet"),
        n("greet_english")
    );
    assert_eq!(
        calls(&f, "Scenarios.FrenchGreeter.Greet"),
        n("greet_french")
    );
    // The lambda, by the name the app reports for its method.
    assert_eq!(calls(&f, &app["lambda_method"]), n("lambda"), "{}", keys());
    // The async state machine: one MoveNext per start and one per resumption.
    assert_eq!(
        calls(&f, "Scenarios.Calls.StepAsync"),
        n("step_async_calls")
    );
    assert_eq!(
        sum_prefix("Scenarios.Calls+<StepAsync>"),
        n("step_async_calls") + n("step_async_resumes"),
        "{}",
        keys()
    );
    check_tree(&r["call_tree"]);
}

fn max_depth_of(n: &Value, needle: &str, depth: usize) -> usize {
    let here = if n["name"].as_str().unwrap_or("").contains(needle) {
        depth
    } else {
        0
    };
    n["children"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| max_depth_of(c, needle, depth + 1))
        .max()
        .unwrap_or(0)
        .max(here)
}

#[test]
fn tail_calls_replace_frames_and_are_counted() {
    let dir = scratch("trace-tail");
    let trace = dir.join("t.clrprof");
    let app = clrprof_testkit::app("TailCalls");
    let out = record_app(
        &app,
        &trace,
        &["--mode", "trace", "--include", "TailCalls.*"],
        &[],
    );
    let res = results(&out);
    // The F# compiler really emitted `tail.` on each of the four methods.
    for m in ["ping", "pong", "hop", "wide"] {
        assert_eq!(res[&format!("tail_prefixes_{m}")], "1");
    }
    let r = report_json(&trace);
    let f = functions(&r);
    for (name, key) in [
        ("ping", "ping"),
        ("pong", "pong"),
        ("hop", "hop"),
        ("wide", "wide"),
    ] {
        assert_eq!(
            calls(&f, &format!("TailCalls.Program.{name}")).to_string(),
            res[key],
            "{name}"
        );
    }
    let stats = &r["trace_stats"];
    assert_eq!(stats["unmatched_leaves"], 0, "{stats:#}");
    assert_eq!(stats["open_at_end"], 0, "{stats:#}");
    // 1001 mutually tail-recursive calls leave no nested chain behind: a tail call closes
    // the caller's frame before the callee enters.
    let tree = &r["call_tree"];
    assert!(
        max_depth_of(tree, ".ping", 0) < 8,
        "ping nests {} deep",
        max_depth_of(tree, ".ping", 0)
    );
    assert!(
        max_depth_of(tree, ".hop", 0) < 8,
        "hop nests {} deep",
        max_depth_of(tree, ".hop", 0)
    );
    check_tree(tree);
}

#[test]
fn exceptions_through_finally_and_filters_leave_balanced_trees() {
    let dir = scratch("trace-deep-exceptions");
    let trace = dir.join("t.clrprof");
    let out = record(
        &trace,
        &["--mode", "trace", "--include", "Scenarios.*"],
        &["deep-exceptions"],
    );
    let app = results(&out);
    let r = report_json(&trace);
    let f = functions(&r);
    let throws: u64 = app["deep_throws"].parse().unwrap();
    for level in 1..=10 {
        let n = calls(&f, &format!("Scenarios.DeepExceptions.Level{level}"));
        assert_eq!(
            n,
            throws,
            "Level{level}: {}",
            f.keys().cloned().collect::<Vec<_>>().join(", ")
        );
    }
    let stats = &r["trace_stats"];
    assert_eq!(stats["unmatched_leaves"], 0, "{stats:#}");
    assert_eq!(stats["open_at_end"], 0, "{stats:#}");
    // Frames the exceptions unwound got no Leave; the SP-based reconstruction closed them.
    assert!(
        stats["unwound_frames"].as_u64().unwrap() >= 9 * throws,
        "{stats:#}"
    );
    check_tree(&r["call_tree"]);
    for t in r["thread_call_trees"].as_array().unwrap() {
        check_tree(&t["root"]);
        let span = t["span_ns"].as_f64().unwrap();
        let root = t["root"]["inclusive_ns"].as_f64().unwrap();
        if span > 1e6 {
            assert!(
                (root - span).abs() / span < 0.01,
                "root {root} vs thread span {span} on {}",
                t["os_tid"]
            );
        }
    }
}

#[test]
fn sixty_four_threads_are_counted_exactly_with_nothing_lost() {
    let dir = scratch("trace-threads64");
    let trace = dir.join("t.clrprof");
    let out = record(
        &trace,
        &["--mode", "trace", "--include", "Scenarios.*"],
        &["threads64", "20000"],
    );
    let app = results(&out);
    // 64 threads' blocks interleaved: read on one thread, or with the threads shared out
    // among workers, the same report and flamegraph (#35 item 3).
    let r = reads_the_same_on_one_and_two_threads(&trace);
    assert_eq!(r["lost_events"], 0);
    let f = functions(&r);
    assert_eq!(
        calls(&f, "Scenarios.Threads64.Work").to_string(),
        app["work_calls"]
    );
    let per_thread: Vec<u64> = r["thread_call_trees"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["name"].as_str().is_some_and(|n| n.starts_with("t64-")))
        .map(|t| {
            fn count(n: &Value, name: &str) -> u64 {
                let own = if n["name"] == name {
                    n["calls"].as_u64().unwrap()
                } else {
                    0
                };
                own + n["children"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|c| count(c, name))
                    .sum::<u64>()
            }
            count(&t["root"], "Scenarios.Threads64.Work")
        })
        .collect();
    assert_eq!(per_thread.len(), 64, "{per_thread:?}");
    assert!(per_thread.iter().all(|n| *n == 20000), "{per_thread:?}");
}

#[test]
fn hooked_methods_compute_the_same_results() {
    let dir = scratch("trace-abi");
    let trace = dir.join("t.clrprof");
    let app = scenarios();
    let plain = app.command(&["abi"]).output().unwrap();
    assert!(plain.status.success());
    let traced = record(
        &trace,
        &["--mode", "trace", "--include", "Scenarios.*"],
        &["abi"],
    );
    assert_eq!(
        String::from_utf8_lossy(&traced.stdout),
        String::from_utf8_lossy(&plain.stdout)
    );
    // …and the methods were really hooked.
    let r = report_json(&trace);
    let f = functions(&r);
    assert!(
        f.keys().filter(|k| k.starts_with("Scenarios.Abi.")).count() >= 8,
        "{:?}",
        f.keys().collect::<Vec<_>>()
    );
}

#[test]
fn a_traced_run_converts_to_a_timeline_with_every_call() {
    let dir = scratch("trace-convert");
    let trace = dir.join("t.clrprof");
    let out = record(
        &trace,
        &["--mode", "trace", "--include", "Scenarios.*"],
        &["deep-exceptions"],
    );
    let throws: usize = results(&out)["deep_throws"].parse().unwrap();
    convert(&trace, "chrome");
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("t.chrome.json")).unwrap()).unwrap();
    let calls: Vec<&Value> = doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X")
        .collect();
    // Each level was entered once per throw; levels the exception unwound (no Leave) are
    // closed too, so every call appears as one complete event.
    for level in [1, 5, 10] {
        let name = format!("Scenarios.DeepExceptions.Level{level}");
        assert_eq!(
            calls.iter().filter(|e| e["name"] == name.as_str()).count(),
            throws,
            "{name}"
        );
    }
    assert!(calls.iter().all(|e| e["dur"].as_f64().unwrap() >= 0.0));

    // The flamegraph formats count calls by path, all of them.
    convert(&trace, "folded");
    let folded = std::fs::read_to_string(dir.join("t.folded")).unwrap();
    let level5: u64 = folded
        .lines()
        .filter_map(|l| l.rsplit_once(' '))
        .filter(|(stack, _)| stack.ends_with(";Scenarios.DeepExceptions.Level5"))
        .map(|(_, n)| n.parse::<u64>().unwrap())
        .sum();
    assert_eq!(level5, throws as u64, "{folded}");

    // A timeline can be cut to its first calls; the cut is stated.
    let all = calls.len();
    let keep = all / 3;
    let out = dir.join("cut.chrome.json");
    let stderr = convert_with(
        &trace,
        &[
            "-f",
            "chrome",
            "--max-calls",
            &keep.to_string(),
            "-o",
            out.to_str().unwrap(),
        ],
    );
    assert!(
        stderr.contains(&format!("{} later ones left out", all - keep)),
        "{stderr}"
    );
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let cut: Vec<&Value> = doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X")
        .collect();
    assert_eq!(cut.len(), keep);
    // A prefix: the kept calls are the ones that started first.
    let ts = |e: &&Value| e["ts"].as_f64().unwrap();
    let mut starts: Vec<f64> = calls.iter().map(ts).collect();
    starts.sort_by(f64::total_cmp);
    let last_kept = cut.iter().map(ts).fold(0.0, f64::max);
    assert!(last_kept <= starts[keep], "{last_kept} > {}", starts[keep]);
}

/// `--on-full drop` with a ring far too small for the event rate: the traced thread never
/// waits, the events that did not fit are counted, and the report says so. (Exact mode,
/// the default, is checked by every other test here: `lost_events` 0.)
#[test]
fn drop_mode_counts_what_it_drops_and_the_report_says_so() {
    let dir = scratch("trace-drop");
    let trace = dir.join("t.clrprof");
    let out = record(
        &trace,
        &[
            "--mode",
            "trace",
            "--include",
            "Scenarios.*",
            "--on-full",
            "drop",
            "--buffer-kb",
            "4",
        ],
        &["fib", "27"],
    );
    assert_eq!(results(&out)["fib_calls"], "635621");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("events LOST"), "agent log:\n{stderr}");
    let r = report_json(&trace);
    let lost = r["lost_events"].as_u64().unwrap();
    let fib = calls(&functions(&r), "Scenarios.FibScenario.Fib");
    // Each call's Enter was either recorded or lost: the two together cover every call,
    // and a 4 KiB ring cannot have held them all.
    assert!(lost > 0, "nothing was lost with a 4 KiB ring");
    assert!(fib < 635_621, "{fib} calls recorded, {lost} events lost");
    assert!(
        fib + lost >= 635_621,
        "{fib} calls recorded and {lost} events lost do not cover 635621 calls"
    );
    let text = report_text(&trace);
    assert!(
        text.contains(&format!("LOST:     {lost} events")),
        "report does not state the loss:\n{text}"
    );
}

/// Exact mode (the default) with the same far too small ring: the traced thread waits
/// for the writer instead, nothing is lost, every call is recorded, and the agent says
/// how often it waited.
#[test]
fn exact_mode_waits_for_the_writer_and_says_so() {
    let dir = scratch("trace-exact-small");
    let trace = dir.join("t.clrprof");
    let out = record(
        &trace,
        &[
            "--mode",
            "trace",
            "--include",
            "Scenarios.*",
            "--buffer-kb",
            "4",
        ],
        // Two threads calling: with the writer that makes three threads on two cores, so
        // the 4 KiB rings fill before it drains them. (With one, an idle machine's writer
        // kept up and nothing waited.)
        &["fib", "22", "threads=2"],
    );
    assert_eq!(results(&out)["threads"], "2");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("waited for the writer"),
        "agent log:\n{stderr}"
    );
    assert!(!stderr.contains("LOST"), "agent log:\n{stderr}");
    // Two threads' calls in many small blocks: read on one thread and with each thread's
    // calls on a worker of its own, the same report and flamegraph (#35 item 3).
    let r = reads_the_same_on_one_and_two_threads(&trace);
    assert_eq!(r["lost_events"], 0);
    // Each thread runs the uncounted twin of Fib: 2·F(23) − 1 calls each.
    assert_eq!(
        calls(&functions(&r), "Scenarios.FibScenario.FibUncounted"),
        2 * 57313
    );
}

/// A method emitted into a collectible dynamic assembly has no image to read names from:
/// it is named through the runtime's importer, the same name either way, and counted.
#[test]
fn an_emitted_method_is_named_through_the_importer_and_counted() {
    let trace = scratch("trace-emitted").join("t.clrprof");
    let out = record_app_env(
        &scenarios(),
        &trace,
        &["--mode", "trace"],
        &["emitted", "calls=1000"],
        &[("CLRPROF_NAMES", "compare")],
    );
    assert_eq!(results(&out)["sum"], "1000");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line = stderr
        .lines()
        .find(|l| l.contains("compared with the importer"))
        .unwrap_or_else(|| panic!("no comparison line:\n{stderr}"));
    assert_eq!(number_before(line, " of "), 0, "{stderr}");
    let r = report_json(&trace);
    assert_eq!(calls(&functions(&r), "Emitted.Adder.Add"), 1000);
    // Without `compare`, only the emitted module goes through the importer.
    let out = record_app(
        &scenarios(),
        &trace,
        &["--mode", "trace", "--force"],
        &["emitted", "calls=1000"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line = stderr
        .lines()
        .find(|l| l.contains("names: metadata read"))
        .unwrap_or_else(|| panic!("no names line:\n{stderr}"));
    assert!(
        number_before(line, " through the runtime's importer") >= 1,
        "{line}"
    );
    assert!(number_after(line, "metadata read ") >= 100, "{line}");
    assert_eq!(
        calls(&functions(&report_json(&trace)), "Emitted.Adder.Add"),
        1000
    );
}

/// A trace that grows fast is said to while it runs: after its first second, the call
/// rate, the MB/s written, the method making most calls, and what to do about it. A
/// quiet trace says nothing.
#[test]
fn a_broad_trace_says_its_rate_and_busiest_method_while_it_runs() {
    let _serial = timing_lock();
    let dir = scratch("trace-rate");
    let trace = dir.join("t.clrprof");
    // Calls for three seconds, however fast the machine (the notice needs the app to run
    // past its first second); the file bounded, the rate is read from its start.
    let out = record(
        &trace,
        &[
            "--mode",
            "trace",
            "--include",
            "Scenarios.*",
            "--max-size",
            "64M",
        ],
        &["fib", "25", "seconds=3"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    // The trace is large; only what was said matters.
    let _ = std::fs::remove_file(&trace);
    let line = stderr
        .lines()
        .find(|l| l.starts_with("clrprof: tracing records "))
        .unwrap_or_else(|| panic!("no rate notice:\n{stderr}"));
    assert!(
        line.contains(" calls/s (") && line.contains("/s written) after its first second"),
        "{line}"
    );
    assert!(
        line.contains("most calls: Scenarios.FibScenario.Fib (")
            && line.contains("--exclude 'Scenarios.FibScenario.Fib'")
            && line.contains("--counts"),
        "{line}"
    );
    let quiet = dir.join("quiet.clrprof");
    let out = record(
        &quiet,
        &["--mode", "trace", "--include", "Scenarios.*"],
        &["calls"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("tracing records"), "{stderr}");
}

/// `--max-size` stops recording, not the app: the trace ends near the bound, the app
/// finishes its work, and the report says how many events were left out and why.
#[test]
fn max_size_stops_the_recording_and_the_app_runs_on() {
    let dir = scratch("trace-max-size");
    let trace = dir.join("t.clrprof");
    let out = record(
        &trace,
        &[
            "--mode",
            "trace",
            "--include",
            "Scenarios.*",
            "--max-size",
            "8M",
        ],
        &["fib", "32"],
    );
    assert_eq!(results(&out)["fib_calls"], "7049155", "the app ran on");
    let len = std::fs::metadata(&trace).unwrap().len();
    // The bound is checked before each block; a block is at most a thread's ring (4 MiB).
    assert!(len < (8 + 5) << 20, "{len} bytes");
    let r = report_json(&trace);
    let capped = r["lost_by_reason"]["max_size"].as_u64().unwrap_or(0);
    assert!(capped > 1_000_000, "{:#}", r["lost_by_reason"]);
    let text = report_text(&trace);
    assert!(
        text.contains(
            "because the trace reached --max-size and recording stopped (the app ran on)"
        ),
        "{text}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("the trace reached --max-size: "),
        "{stderr}"
    );
}
