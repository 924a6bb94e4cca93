//! What a user looks at first and how they move around: the CPU-first sample report on
//! the demo app, and `report --function` (callers and callees) with `--thread` and a
//! time window, in sample and trace mode.

use crate::common;

use std::collections::BTreeMap;

use common::*;
use serde_json::Value;

fn report_with(trace: &std::path::Path, args: &[&str]) -> Value {
    let out = clrprof()
        .arg("report")
        .arg("--json")
        .args(args)
        .arg(trace)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// name → figure, of a butterfly's callers or callees.
fn edges(focus: &Value, side: &str, figure: &str) -> BTreeMap<String, u64> {
    focus[side]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["name"].as_str().unwrap().to_string(),
                e[figure].as_u64().unwrap(),
            )
        })
        .collect()
}

fn focus<'a>(r: &'a Value, name: &str) -> &'a Value {
    r["butterfly"]["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == name)
        .unwrap_or_else(|| panic!("{name} not in the butterfly: {:#}", r["butterfly"]))
}

/// The demo's pipeline: the order-parser thread deserialises every order
/// (`Demo.Pipeline.Parse` → System.Text.Json) and is the busiest; the generator and
/// aggregator spend most of their time blocked on the bounded queues, the main thread in
/// `Join`.
#[test]
fn the_demo_report_opens_on_the_apps_hot_methods() {
    let _t = timing_lock();
    let dir = scratch("demo-cpu-first");
    let trace = dir.join("demo.clrprof");
    record_app(&clrprof_testkit::app("Demo"), &trace, &[], &[]);
    let text = report_text(&trace);
    // The first table: the app's own methods, Parse on top; nothing else ranks above it.
    let table: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.contains("CPU by the app's own methods"))
        .skip(2)
        .take_while(|l| !l.contains("CPU by function"))
        .collect();
    assert!(
        table[0].ends_with("Demo.Pipeline.Parse"),
        "first row: {}\n{text}",
        table[0]
    );
    for row in table.iter().take(3) {
        assert!(row.contains("  Demo."), "not the app's code: {row}\n{text}");
    }
    let r = report_json(&trace);
    assert_eq!(r["samples"]["view"], "cpu");
    assert_eq!(r["app_functions"][0]["name"], "Demo.Pipeline.Parse");
    // In the CPU table of every function, no wait ranks above the app's hot code: rows
    // before the first Demo/System.Text.Json frame are the runtime's work (GC, helpers,
    // JIT), never a blocked libc frame or a wait.
    let functions = r["functions"].as_array().unwrap();
    let parse_cpu = r["app_functions"][0]["self_cpu_ns"].as_u64().unwrap();
    for f in functions {
        let name = f["name"].as_str().unwrap();
        assert!(
            !(name.contains(": lock]") || name.contains(": sleep]") || name.contains(": join]"))
                || f["self_cpu_ns"].as_u64().unwrap() < parse_cpu,
            "{name} ranks above Parse"
        );
    }
    // Waits are apart, per thread: the main thread joins, the others block on the queues.
    let threads = r["samples"]["threads"].as_array().unwrap();
    let by_name = |n: &str| threads.iter().find(|t| t["name"] == n).unwrap();
    let busiest = threads
        .iter()
        .max_by_key(|t| t["cpu_ns"].as_u64().unwrap())
        .unwrap();
    assert_eq!(busiest["name"], "order-parser", "{threads:#?}");
    let aggregator = by_name("order-aggregator");
    assert!(
        aggregator["waits"]["lock"].as_u64().unwrap_or(0) > 0,
        "{aggregator:#}"
    );
    // The wall view keeps today's figures: every sample counted.
    let wall = report_with(&trace, &["--wall"]);
    assert_eq!(wall["samples"]["view"], "wall");
    let total: u64 = wall["samples"]["total"].as_u64().unwrap();
    let libc = wall["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "[libc.so.6]")
        .unwrap();
    assert!(libc["total_samples"].as_u64().unwrap() * 2 > total);
}

/// `hot`: Worker calls HotA and HotB; on hot-a, RunHot calls Worker; on hot-b, the thread's
/// lambda does.
#[test]
fn sampled_callers_and_callees_of_known_methods() {
    let _t = timing_lock();
    let dir = scratch("butterfly-samples");
    let trace = dir.join("hot.clrprof");
    record(&trace, &["--rate", "199"], &["hot", "2"]);
    let r = report_with(&trace, &["--function", "Scenarios.Hot.Worker"]);
    let worker = focus(&r, "Scenarios.Hot.Worker");
    let callees = edges(worker, "callees", "samples");
    let (a, b) = (callees["Scenarios.Hot.HotA"], callees["Scenarios.Hot.HotB"]);
    assert!(a > 2 * b && b > 0, "{callees:?}");
    let callers = edges(worker, "callers", "samples");
    let known = [
        "Scenarios.Hot.RunHot",
        // The lambda `Scenarios.Hot+<>c__DisplayClass2_0.<RunHot>b__0`, named after the
        // method it is written in.
        "Scenarios.Hot.RunHot (lambda 0)",
    ];
    let all: u64 = callers.values().sum();
    let right: u64 = known.iter().filter_map(|k| callers.get(*k)).sum();
    // A sample landing in a prolog or an OSR transition can lose a frame (docs/sampling.md).
    assert!(right * 100 >= all * 98, "{callers:?}");

    // One thread: hot-b's Worker is called by its lambda only.
    let r = report_with(
        &trace,
        &["--function", "Scenarios.Hot.Worker", "--thread", "hot-b"],
    );
    let callers = edges(focus(&r, "Scenarios.Hot.Worker"), "callers", "samples");
    assert!(!callers.contains_key("Scenarios.Hot.RunHot"), "{callers:?}");
    // Windows: half a second holds some of the samples, and windows that tile the run hold
    // each sample once. (How many fall in half a second depends on how much CPU the thread
    // got then: on a loaded machine one half second held 60 of 118.)
    let whole = r["samples"]["total"].as_u64().unwrap();
    let window = |from: &str, to: Option<&str>| {
        let mut args = vec!["--thread", "hot-b", "--from", from];
        if let Some(to) = to {
            args.extend(["--to", to]);
        }
        report_with(&trace, &args)["samples"]["total"]
            .as_u64()
            .unwrap()
    };
    let part = window("0.5", Some("1s"));
    assert!(part > 0 && part < whole, "{part} of {whole}");
    let (before, after) = (window("0", Some("0.5")), window("1", None));
    assert_eq!(before + part + after, whole, "{before} + {part} + {after}");
}

/// `calls`: IsEven(100) recurses through IsOdd: Run calls IsEven once, IsOdd calls it 50
/// times, IsEven calls IsOdd 50 times; the app counts them.
#[test]
fn traced_callers_and_callees_with_exact_counts() {
    let dir = scratch("butterfly-calls");
    let trace = dir.join("calls.clrprof");
    let out = record(
        &trace,
        &["--mode", "trace", "--include", "Scenarios.*"],
        &["calls"],
    );
    let app = results(&out);
    let r = report_with(&trace, &["--function", "Scenarios.Calls.Is*"]);
    let even = focus(&r, "Scenarios.Calls.IsEven");
    assert_eq!(even["calls"].as_u64().unwrap().to_string(), app["is_even"]);
    assert_eq!(
        edges(even, "callers", "calls"),
        BTreeMap::from([
            ("Scenarios.Calls.Run".to_string(), 1),
            ("Scenarios.Calls.IsOdd".to_string(), 50)
        ])
    );
    assert_eq!(
        edges(even, "callees", "calls"),
        BTreeMap::from([("Scenarios.Calls.IsOdd".to_string(), 50)])
    );
    let odd = focus(&r, "Scenarios.Calls.IsOdd");
    assert_eq!(odd["calls"].as_u64().unwrap().to_string(), app["is_odd"]);
    assert_eq!(
        edges(odd, "callers", "calls"),
        BTreeMap::from([("Scenarios.Calls.IsEven".to_string(), 50)])
    );
    // The text form prints the same.
    let out = clrprof()
        .args(["report", "--function", "Scenarios.Calls.IsOdd"])
        .arg(&trace)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("▶ Scenarios.Calls.IsOdd"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.contains("50 calls") && l.ends_with("Scenarios.Calls.IsEven")),
        "{text}"
    );
}

/// `--sampler suspend` stops threads at safe points: many of the demo's samples end in the
/// runtime's GC poll (`Thread.<PollGC>g__PollGCWorker`). The report gives them to the
/// method that polled, says how many, and still opens on Parse.
#[test]
fn the_suspend_sampler_gives_gc_polls_to_the_polling_method() {
    let _t = timing_lock();
    let dir = scratch("suspend-gc-poll");
    let trace = dir.join("demo.clrprof");
    record_app(
        &clrprof_testkit::app("Demo"),
        &trace,
        &["--sampler", "suspend"],
        &[],
    );
    for view in [&[][..], &["--wall"][..]] {
        let r = report_with(&trace, view);
        assert!(
            r["samples"]["gc_poll_folded"].as_u64().unwrap() > 0,
            "{view:?}"
        );
        for f in r["functions"].as_array().unwrap() {
            assert!(
                !f["name"].as_str().unwrap().contains("PollGC"),
                "{view:?}: {f}"
            );
        }
    }
    let r = report_json(&trace);
    assert_eq!(r["app_functions"][0]["name"], "Demo.Pipeline.Parse");
}
