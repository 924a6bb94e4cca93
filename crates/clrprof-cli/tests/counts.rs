//! `--counts`: exact call counts per caller→callee edge from per-thread tables in the
//! agent, no record per call. On the test apps its counts equal trace mode's, function
//! by function and edge by edge, and the apps' own counts.

use crate::common;

use common::*;
use serde_json::Value;

/// Every function as (name, signature, calls, callers, callees), sorted: overloads share
/// a name, so this is compared as a whole. An async state machine's `MoveNext` is left
/// out, as are its edges: whether an awaited task completes before the `await` (no second
/// `MoveNext`) and whether its continuation runs inline (called by the completing
/// `MoveNext`) or from the thread pool change from run to run of the app itself.
fn counted(r: &Value) -> Vec<String> {
    let mut v: Vec<String> = r["functions"]
        .as_array()
        .expect("functions")
        .iter()
        .map(|f| {
            let name = f["name"].as_str().unwrap_or_default();
            let scheduled = |side: &str| {
                let edges = f[side].as_object().cloned().unwrap_or_default();
                let kept: serde_json::Map<String, Value> = edges
                    .into_iter()
                    .filter(|(other, _)| !(other.contains(">d__") && other.ends_with(".MoveNext")))
                    .collect();
                Value::Object(kept)
            };
            if name.contains(">d__") && name.ends_with(".MoveNext") {
                String::new()
            } else {
                format!(
                    "{} {} calls={} callers={} callees={}",
                    f["name"],
                    f["signature"],
                    f["calls"],
                    scheduled("callers"),
                    scheduled("callees")
                )
            }
        })
        .filter(|s: &String| !s.is_empty())
        .collect();
    v.sort();
    v
}

fn calls_of(r: &Value, name: &str) -> u64 {
    r["functions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["name"] == name)
        .map(|f| f["calls"].as_u64().unwrap())
        .sum()
}

/// Records `app_args` traced and counted; returns both reports and the counted run's
/// results (what the app measured).
fn both(
    name: &str,
    app_args: &[&str],
) -> (Value, Value, std::collections::BTreeMap<String, String>) {
    let dir = scratch(name);
    let (traced, counted) = (dir.join("trace.clrprof"), dir.join("counts.clrprof"));
    let flags = ["--mode", "trace", "--include", "Scenarios.*"];
    record(&traced, &flags, app_args);
    let out = record(&counted, &[&flags[..], &["--counts"]].concat(), app_args);
    (report_json(&traced), report_json(&counted), results(&out))
}

#[test]
fn counts_equal_trace_mode_on_recursion_and_mutual_recursion_generics_and_lambdas() {
    let (t, c, _) = both("counts-fib", &["fib", "25"]);
    assert_eq!(calls_of(&c, "Scenarios.FibScenario.Fib"), 242785);
    assert_eq!(counted(&c), counted(&t));
    let (t, c, app) = both("counts-calls", &["calls"]);
    assert_eq!(
        calls_of(&c, "Scenarios.Calls.IsEven").to_string(),
        app["is_even"]
    );
    assert_eq!(
        calls_of(&c, "Scenarios.Calls.IsOdd").to_string(),
        app["is_odd"]
    );
    assert_eq!(counted(&c), counted(&t));
    // No per-call records: the file holds only the tables.
    assert_eq!(c["trace_stats"]["unmatched_leaves"], 0);
}

#[test]
fn counts_equal_trace_mode_through_exceptions() {
    let (t, c, app) = both("counts-exceptions", &["deep-exceptions"]);
    let throws: u64 = app["deep_throws"].parse().unwrap();
    for level in 1..=10 {
        assert_eq!(
            calls_of(&c, &format!("Scenarios.DeepExceptions.Level{level}")),
            throws
        );
    }
    assert_eq!(counted(&c), counted(&t));
}

#[test]
fn counts_equal_trace_mode_on_sixty_four_threads() {
    let (t, c, app) = both("counts-threads64", &["threads64", "20000"]);
    assert_eq!(
        calls_of(&c, "Scenarios.Threads64.Work").to_string(),
        app["work_calls"]
    );
    assert_eq!(counted(&c), counted(&t));
}

#[test]
fn sample_mode_with_counts_has_exact_counts_and_samples() {
    let dir = scratch("counts-sample");
    let trace = dir.join("t.clrprof");
    record(
        &trace,
        &["--mode", "sample", "--counts", "--include", "Scenarios.*"],
        &["fib", "30"],
    );
    let r = report_json(&trace);
    assert_eq!(calls_of(&r, "Scenarios.FibScenario.Fib"), 2_692_537);
    assert!(
        r["samples"]["on_cpu"].as_u64().unwrap() > 0,
        "{:#}",
        r["samples"]
    );
    // Threads that end before the recording does: their last counts are written as they go.
    let trace = dir.join("threads64.clrprof");
    let out = record(
        &trace,
        &["--mode", "sample", "--counts", "--include", "Scenarios.*"],
        &["threads64", "20000"],
    );
    assert_eq!(
        calls_of(&report_json(&trace), "Scenarios.Threads64.Work").to_string(),
        results(&out)["work_calls"]
    );
}

/// `sleeper seconds=4` makes its calls of `Scenarios.*` at the start and then sleeps and
/// spins without any: each thread's table stops changing, and is not written again.
#[test]
fn an_unchanged_table_is_not_written_again() {
    let dir = scratch("counts-idle");
    let trace = dir.join("t.clrprof");
    record(
        &trace,
        &["--mode", "trace", "--counts", "--include", "Scenarios.*"],
        &["sleeper", "seconds=4"],
    );
    let bytes = std::fs::read(&trace).unwrap();
    let mut reader = clrprof_format::TraceReader::new(&bytes).unwrap();
    let mut last: std::collections::HashMap<u64, (u64, u64, Vec<u64>)> = Default::default();
    let mut records = 0;
    for e in reader.events() {
        if let clrprof_format::Event::CallCounts {
            os_tid,
            missed,
            deep,
            edges,
        } = e.event
        {
            records += 1;
            let table = (missed, deep, edges.to_vec());
            let before = last.insert(os_tid, table.clone());
            assert_ne!(before, Some(table), "thread {os_tid} rewrote its table");
        }
    }
    // Three threads call Scenarios.* (main, sleepy, spinny): at least one record each,
    // and not one a second.
    assert!(last.len() >= 3, "{last:?}");
    assert!(records < 3 * 4, "{records} records");
    let r = report_json(&trace);
    assert_eq!(calls_of(&r, "Scenarios.Sleeper.SleepLoop"), 1);
    assert_eq!(calls_of(&r, "Scenarios.Sleeper.SpinLoop"), 1);
}

#[test]
fn counts_cannot_attach_and_say_why() {
    let out = clrprof()
        .args([
            "record",
            "--pid",
            &std::process::id().to_string(),
            "--counts",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--counts cannot attach") && err.contains("COR_PRF_MONITOR_ENTERLEAVE"),
        "{err}"
    );
}

/// The text report of a `--counts` trace shows what counting knows: calls per function
/// and per caller→callee edge, most first, and no time columns (nothing was timed).
#[test]
fn the_counts_table_is_by_calls_without_time() {
    let dir = scratch("counts-text");
    let trace = dir.join("t.clrprof");
    let out = record(
        &trace,
        &["--mode", "trace", "--include", "Scenarios.*", "--counts"],
        &["fib", "25"],
    );
    let fib_calls = &results(&out)["fib_calls"];
    let text = report_text(&trace);
    let table: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("Calls (counted, --counts): "))
        .collect();
    assert!(!table.is_empty(), "{text}");
    assert!(!text.contains("self time"), "{text}");
    assert_eq!(table[1].trim(), "calls  function (by calls)", "{text}");
    assert_eq!(
        table[2].split_whitespace().collect::<Vec<_>>(),
        [fib_calls.as_str(), "Scenarios.FibScenario.Fib"],
        "{text}"
    );
    // Fib calls itself all but once: the first edge.
    let edges = table
        .iter()
        .position(|l| l.trim() == "calls  caller -> callee (by calls)")
        .expect(&text);
    let fib_self: u64 = fib_calls.parse::<u64>().unwrap() - 1;
    assert_eq!(
        table[edges + 1].split_whitespace().collect::<Vec<_>>(),
        [
            fib_self.to_string().as_str(),
            "Scenarios.FibScenario.Fib",
            "->",
            "Scenarios.FibScenario.Fib"
        ],
        "{text}"
    );
}
