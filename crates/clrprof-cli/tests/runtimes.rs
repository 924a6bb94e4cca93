//! One test per capability on every supported runtime (.NET 8, 9 and 10): startup load and
//! events, sampling, exact trace counts through exceptions and tail calls, attach/detach
//! with unload, `ps`. .NET 8 and 9 are provisioned from NuGet on first use
//! (`scripts/provision-runtimes.sh`); every other acceptance test runs on 10 only.
//! Where the runtimes differ, the difference is asserted, not skipped.

use crate::common;

use std::path::Path;
use std::process::{Output, Stdio};
use std::time::Duration;

use clrprof_testkit::{Runtime, app_on};
use common::serve::Serve;
use common::*;
use serde_json::Value;

/// `runtimes::net8::NAME`, `net9::NAME`, `net10::NAME` for each capability test `NAME(rt)`.
macro_rules! on_every_runtime {
    ($($name:ident),* $(,)?) => {
        mod net8 { $( #[test] fn $name() { super::$name(super::Runtime::Net8) } )* }
        mod net9 { $( #[test] fn $name() { super::$name(super::Runtime::Net9) } )* }
        mod net10 { $( #[test] fn $name() { super::$name(super::Runtime::Net10) } )* }
    };
}

on_every_runtime!(
    startup_load_and_events,
    sequential_threads_keep_their_names,
    sampling,
    trace_counts_through_exceptions,
    trace_counts_tail_calls,
    attach_detach_unloads,
    a_refused_attach_leaves_the_target_attachable,
    a_clrprof_killed_during_the_attach_leaves_no_agent,
    ps_shows_the_runtime_version,
    allocation_samples,
    names_from_module_images,
    waits,
    args_from_registers,
    args_in_the_assembly_hooks,
);

/// The app's own `RESULT runtime=…` names the runtime asked for, and so does the report.
fn assert_ran_on(rt: Runtime, out: &Output, report: &Value) {
    let app_says = results(out)["runtime"].clone();
    assert!(
        app_says.starts_with(&format!("{}.", rt.major())),
        "the app ran on {app_says}, not {rt:?}"
    );
    let recorded = report["trace"]["runtime_version"].as_str().unwrap_or("");
    assert!(
        recorded.starts_with(&app_says),
        "trace says runtime {recorded:?}, the app {app_says}"
    );
}

fn calls(r: &Value, name: &str) -> u64 {
    r["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == name)
        .map_or(0, |f| f["calls"].as_u64().unwrap())
}

fn startup_load_and_events(rt: Runtime) {
    let app = app_on("Scenarios", rt);
    let trace = scratch(&format!("rt-events-{}", rt.tfm())).join("t.clrprof");
    let out = record_app(&app, &trace, &["--mode", "events"], &["exceptions", "7"]);
    let r = report_json(&trace);
    assert_ran_on(rt, &out, &r);
    // The newest profiler-info interface each runtime offers (see docs/runtimes.md).
    let info = match rt {
        Runtime::Net8 => "ICorProfilerInfo14",
        Runtime::Net9 | Runtime::Net10 => "ICorProfilerInfo15",
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&format!("{info})")), "{stderr}");
    assert_eq!(results(&out)["caught"], "7");
    assert_eq!(r["exceptions"]["System.InvalidOperationException"], 7);
    assert_eq!(r["events"]["exceptions_thrown"], 7);
    assert_eq!(r["events"]["exception_catches"], 7);
    assert_eq!(
        r["exception_messages"]["System.InvalidOperationException"]["boom #6"],
        1
    );
    let modules = r["modules"].as_array().unwrap();
    for want in ["Scenarios.dll", "System.Private.CoreLib.dll"] {
        assert!(
            modules
                .iter()
                .any(|m| m["path"].as_str().unwrap().ends_with(want)),
            "{want} not loaded"
        );
    }
}

/// The runtime reuses a dead thread's ThreadID for the next thread: each of the 30
/// threads, started one after another, still gets its own entry, name and OS id.
fn sequential_threads_keep_their_names(rt: Runtime) {
    let app = app_on("Scenarios", rt);
    let trace = scratch(&format!("rt-seq-threads-{}", rt.tfm())).join("t.clrprof");
    let out = record_app(
        &app,
        &trace,
        &["--mode", "events", "--events", "threads"],
        &["sequential-threads", "30"],
    );
    let res = results(&out);
    let r = report_json(&trace);
    let threads = r["threads"].as_array().unwrap();
    let names: Vec<&str> = res["thread_names"].split(',').collect();
    let tids: Vec<u64> = res["thread_tids"]
        .split(',')
        .map(|t| t.parse().unwrap())
        .collect();
    assert_eq!(names.len(), 30);
    for (name, tid) in names.iter().zip(&tids) {
        let t = threads
            .iter()
            .find(|t| t["name"] == *name)
            .unwrap_or_else(|| panic!("no thread {name} in {threads:#?}"));
        assert_eq!(t["os_tid"], *tid, "{t:#}");
    }
    let seq: Vec<&Value> = threads
        .iter()
        .filter(|t| t["name"].as_str().is_some_and(|n| n.starts_with("seq-")))
        .collect();
    assert_eq!(seq.len(), 30, "{seq:#?}");
    // The scenario really exercised the reuse (else this test proves nothing).
    let ids: std::collections::BTreeSet<u64> =
        seq.iter().map(|t| t["id"].as_u64().unwrap()).collect();
    assert!(ids.len() < 30, "no ThreadID was reused on {rt:?}");
}

fn sampling(rt: Runtime) {
    let _serial = timing_lock();
    let app = app_on("Scenarios", rt);
    let trace = scratch(&format!("rt-sample-{}", rt.tfm())).join("t.clrprof");
    let out = record_app(&app, &trace, &["--mode", "sample"], &["hot", "1"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("sampler (signal):"), "{stderr}");
    let r = report_json(&trace);
    assert_ran_on(rt, &out, &r);
    for f in [
        "Scenarios.Hot.HotA",
        "Scenarios.Hot.Worker",
        "Scenarios.Program.Main",
    ] {
        let total = r["functions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["name"] == f)
            .map_or(0, |x| x["total_samples"].as_u64().unwrap());
        assert!(total > 0, "{f} on no sampled stack");
    }
    let sampled: Vec<&str> = r["samples"]["threads"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        sampled.contains(&"hot-a") && sampled.contains(&"hot-b"),
        "{sampled:?}"
    );
}

/// `record --alloc`: .NET 10 samples with `AllocationSampled` and follows the sampled
/// objects; 8 and 9 sample with `GCAllocationTick`, whose object is not yet initialized when
/// the event fires, so the live heap is not followed there (docs/allocations.md). On every
/// runtime the estimate is within 10 % of the app's own count and each site's bytes are
/// charged to its method; and most stacks come from the stack cache, none of them
/// differing from DoStackSnapshot's (`CLRPROF_ALLOC_WALK=compare` takes both). The samples
/// carry lines on every runtime: nearly all of `Bytes`' on the line of its allocation, the
/// one the runtime's own `StackTrace(true)` gives there (8 and 9 refuse the IL map calls on
/// the allocating thread, and the agent's own thread maps them: docs/source-lines.md).
fn allocation_samples(rt: Runtime) {
    let app = app_on("Scenarios", rt);
    let trace = scratch(&format!("rt-alloc-{}", rt.tfm())).join("t.clrprof");
    let out = record_app_env(
        &app,
        &trace,
        &["--mode", "events", "--alloc"],
        &["alloc-sites", "mb=200"],
        &[("CLRPROF_ALLOC_WALK", "compare")],
    );
    let r = report_json(&trace);
    assert_ran_on(rt, &out, &r);
    let log = String::from_utf8_lossy(&out.stderr);
    let line = log
        .lines()
        .find(|l| l.contains("allocation stacks: Compare"))
        .unwrap_or_else(|| panic!("{log}"));
    let (hits, samples) = (number_after(line, "Compare, "), number_after(line, " of "));
    assert!(samples > 1000 && hits * 10 > samples * 9, "{line}");
    assert!(
        line.ends_with(&format!("DoStackSnapshot: 0 of {hits} differ")),
        "{line}"
    );
    let fact = |k: &str| results(&out)[k].parse::<f64>().unwrap();
    let a = &r["allocation_samples"];
    let (source, tracked_max) = match rt {
        Runtime::Net10 => ("AllocationSampled", 4096),
        _ => ("AllocationTick", 0),
    };
    assert_eq!(a["source"], source);
    assert_eq!(a["live"]["tracked_max"], tracked_max);
    let est = a["estimated_bytes"].as_f64().unwrap();
    let total = fact("total_allocated");
    assert!((est - total).abs() / total < 0.10, "{est} vs {total}");
    for (f, site) in [
        ("Scenarios.AllocSites.Bytes", "bytes_site"),
        ("Scenarios.AllocSites.Strings", "strings_site"),
    ] {
        let got = a["functions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["name"] == f)
            .map_or(0.0, |x| x["total_bytes"].as_f64().unwrap());
        assert!(
            (got / est - fact(site) / total).abs() < 0.05,
            "{f}: {got} of {est} vs {} of {total}",
            fact(site)
        );
    }
    let bytes_line = results(&out)["bytes_line"].parse::<u64>().unwrap();
    let rows: Vec<&Value> = a["lines"]
        .as_array()
        .unwrap_or_else(|| panic!("no allocation lines: {a:#}"))
        .iter()
        .filter(|l| l["function"] == "Scenarios.AllocSites.Bytes")
        .collect();
    let self_bytes = |on: Option<u64>| -> u64 {
        rows.iter()
            .filter(|l| on.is_none_or(|n| l["line"] == n))
            .map(|l| l["self_bytes"].as_u64().unwrap())
            .sum()
    };
    let (on_line, all) = (self_bytes(Some(bytes_line)), self_bytes(None));
    assert!(
        all as f64 >= est * 0.5
            && on_line * 10 >= all * 9
            && rows.iter().all(|l| l["file"]
                .as_str()
                .is_some_and(|f| f.ends_with("AllocSites.cs"))),
        "{on_line} of Bytes' {all} self bytes (of {est}) on AllocSites.cs:{bytes_line}: {rows:#?}"
    );
    if rt != Runtime::Net10 {
        assert!(
            log.contains("allocation positions mapped off the allocating thread"),
            "{log}"
        );
    }
}

/// `record --waits` (docs/waits.md) on `Scenarios waits`: the contention count is the
/// app's `Monitor.LockContentionCount` delta (within 10 %), the lock wait its Stopwatch
/// total (within 20 %), the lock is named by its object's type, the waiter is the method
/// that took the lock and the owner the method that held it (from the owner's stacks the
/// signal sampler took on demand, each request taken or counted); the pool starves at least
/// once with the blocking method named; the sleeping thread's method sleeps. .NET 8 has
/// no wait-handle events and the report says so; 9 and 10 name `BlockPoolThread`'s
/// `Task.Wait` among the wait-handle waits. The same recording pushes to a stand-in
/// Pyroscope server (`--push`): see [`pushed_waits`].
fn waits(rt: Runtime) {
    let app = app_on("Scenarios", rt);
    let trace = scratch(&format!("rt-waits-{}", rt.tfm())).join("t.clrprof");
    let (port, seen) = pyroscope::serve(200);
    let url = format!("http://127.0.0.1:{port}");
    let out = record_app(
        &app,
        &trace,
        &["--waits", "--push", &url, "--push-every", "1"],
        &["waits"],
    );
    let r = report_json(&trace);
    assert_ran_on(rt, &out, &r);
    let fact = |k: &str| results(&out)[k].parse::<f64>().unwrap();
    let c = &r["contention"];
    let ledger = c["locks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["type"] == "Scenarios.Ledger")
        .unwrap_or_else(|| panic!("no Scenarios.Ledger lock: {c:#}"));
    let (count, want) = (ledger["count"].as_f64().unwrap(), fact("contentions"));
    // Four threads start together on one lock: the three that do not get it first wait at
    // least once. More depends on the scheduler: with a core kept busy beside the app, one
    // .NET 8 run's first owner took all its rounds in a row while the others stayed
    // blocked from their first wait, and the runtime counted 3 contentions.
    assert!(want >= 3.0, "the scenario barely contended: {want}");
    assert!(
        (count - want).abs() <= want * 0.10,
        "{count} vs {want}: {c:#}"
    );
    let (wait, want) = (ledger["wait_ns"].as_f64().unwrap(), fact("lock_wait_ns"));
    assert!((wait - want).abs() <= want * 0.20, "{wait} vs {want}");
    let first = |list: &Value| list[0]["function"].as_str().unwrap_or("").to_string();
    assert_eq!(
        first(&ledger["waiters"]),
        "Scenarios.Waits.TakeLedger",
        "{ledger:#}"
    );
    // The owner: the app method nearest the leaf of the owner's stack, taken as each wait
    // begins. A wait often begins just as the lock changes hands, the new owner then still
    // in TakeLedger (which holds the lock: the `lock` is there) before it calls HoldLedger.
    // On .NET 8 some runs name the loop that calls TakeLedger for most waits (3 of 4 or 6;
    // 2 of 9 isolated runs of e9c8ae9 failed "HoldLedger first"): the cause is not found yet.
    // So: every owner named is the scenario's, and one of the two methods that hold the
    // lock is among them.
    let owners = ledger["owners"].as_array().unwrap();
    let named = |f: &str| owners.iter().any(|o| o["function"] == f);
    assert!(
        named("Scenarios.Waits.HoldLedger") || named("Scenarios.Waits.TakeLedger"),
        "{ledger:#}"
    );
    assert!(
        owners.iter().all(|o| o["function"]
            .as_str()
            .is_some_and(|f| f.starts_with("Scenarios.Waits"))),
        "{ledger:#}"
    );
    // The owner's stack is taken on demand as each wait begins: the holder is named from
    // those stacks, and what could not be taken is counted by reason.
    assert!(
        owners.iter().any(|o| o["on_demand"].as_u64().unwrap() > 0),
        "{ledger:#}\n{:#}",
        c["owner_stacks"]
    );
    let stacks = &c["owner_stacks"];
    let n = |k: &str| {
        stacks[k]
            .as_u64()
            .unwrap_or_else(|| panic!("no {k}: {stacks:#}"))
    };
    assert!(n("taken") > 0, "{stacks:#}");
    // (one request per ContentionStart; a wait still open at the end has no pair)
    assert!(n("requested") >= c["count"].as_u64().unwrap(), "{stacks:#}");
    let not_taken = [
        "owner_unknown",
        "owner_exited",
        "queue_full",
        "walk_failed",
        "no_sampler",
    ]
    .iter()
    .map(|k| n(k))
    .sum::<u64>();
    assert_eq!(n("taken") + not_taken, n("requested"), "{stacks:#}");
    let tp = &r["threadpool"];
    let episodes = tp["starvation"].as_array().unwrap();
    assert!(!episodes.is_empty(), "{tp:#}");
    assert!(
        episodes
            .iter()
            .any(|e| e["threads_after"].as_u64() > e["threads_before"].as_u64()),
        "{tp:#}"
    );
    assert_eq!(
        first(&tp["blocking"]),
        "Scenarios.Waits.BlockPoolThread",
        "{tp:#}"
    );
    let kind = |k: &str| {
        r["waits"]
            .as_array()
            .unwrap()
            .iter()
            .find(|w| w["kind"] == k)
            .cloned()
    };
    let sleep = kind("sleep").unwrap();
    assert!(
        sleep["functions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["name"] == "Scenarios.Waits.Nap"),
        "{sleep:#}"
    );
    // `convert --weight lock`: the waiting stacks weighted by the same lock waits.
    let folded = trace.with_extension("folded");
    let conv = clrprof()
        .arg("convert")
        .arg(&trace)
        .args(["-f", "folded", "--weight", "lock", "-o"])
        .arg(&folded)
        .output()
        .unwrap();
    assert!(conv.status.success(), "{conv:?}");
    let text = std::fs::read_to_string(&folded).unwrap();
    let weight = |line: &str| line.rsplit(' ').next().unwrap().parse::<u64>().unwrap();
    let total: u64 = text.lines().map(weight).sum();
    assert_eq!(total, c["wait_ns"].as_u64().unwrap(), "{text}");
    let ledger_lines: u64 = text
        .lines()
        .filter(|l| {
            let stack = l.rsplit_once(' ').map_or("", |(s, _)| s);
            stack.split(';').any(|f| f == "Scenarios.Waits.TakeLedger")
        })
        .map(weight)
        .sum();
    assert_eq!(ledger_lines, ledger["wait_ns"].as_u64().unwrap(), "{text}");
    pushed_waits(
        rt,
        &seen.lock().unwrap(),
        (fact("contentions"), fact("lock_wait_ns")),
        ledger_lines,
    );
    // Chrome's timeline: one async slice per contended acquisition.
    let chrome = trace.with_extension("json");
    let conv = clrprof()
        .arg("convert")
        .arg(&trace)
        .args(["-f", "chrome", "-o"])
        .arg(&chrome)
        .output()
        .unwrap();
    assert!(conv.status.success(), "{conv:?}");
    let doc: Value = serde_json::from_slice(&std::fs::read(&chrome).unwrap()).unwrap();
    let slices = doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["cat"] == "wait" && e["ph"] == "b" && e["name"] == "lock contention")
        .count();
    assert_eq!(slices as u64, c["count"].as_u64().unwrap());
    let starving = doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["cat"] == "threadpool" && e["ph"] == "X")
        .count();
    assert_eq!(starving, episodes.len());
    // Firefox: one interval marker per wait, locks and wait handles.
    let ff = trace.with_extension("ff.json");
    let conv = clrprof()
        .arg("convert")
        .arg(&trace)
        .args(["-f", "firefox", "-o"])
        .arg(&ff)
        .output()
        .unwrap();
    assert!(conv.status.success(), "{conv:?}");
    let doc: Value = serde_json::from_slice(&std::fs::read(&ff).unwrap()).unwrap();
    let markers = doc["threads"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| t["markers"]["data"].as_array().unwrap())
        .filter(|d| d["type"] == "ClrprofWait")
        .count() as u64;
    let handles = kind("wait_handle").map_or(0, |h| h["count"].as_u64().unwrap());
    // (and one per starvation episode, on the first thread's track)
    let episodes_n = episodes.len() as u64;
    assert_eq!(markers, c["count"].as_u64().unwrap() + handles + episodes_n);
    let notes = r["waits_notes"].to_string();
    match rt {
        Runtime::Net8 => {
            assert!(kind("wait_handle").is_none());
            assert!(
                notes.contains("no wait-handle events before .NET 9"),
                "{notes}"
            );
        }
        Runtime::Net9 | Runtime::Net10 => {
            let h = kind("wait_handle").unwrap();
            assert_eq!(
                h["functions"][0]["name"], "Scenarios.Waits.BlockPoolThread",
                "{h:#}"
            );
            assert!(!notes.contains("wait-handle"), "{notes}");
        }
    }
}

/// `record --waits --push`'s requests (docs/exports.md): besides each interval's CPU
/// profile, the lock waits as Pyroscope's `mutex` family and, on .NET 9 and later, the
/// wait-handle waits as `block`: each a multipart form (no `format` in the query) of the
/// gzip'd pprof and the `sample_type_config` that names the family, its sample types
/// `contentions/count` and `delay/nanoseconds`. Over all uploads, the waits in
/// `Scenarios.Waits.TakeLedger` are the app's own contentions, and their delay the
/// trace's lock wait there (the same pairing) and the app's Stopwatch total;
/// `BlockPoolThread`'s `Task.Wait` is in the wait-handle waits.
fn pushed_waits(
    rt: Runtime,
    reqs: &[pyroscope::Request],
    (contentions, lock_wait_ns): (f64, f64),
    ledger_wait_ns: u64,
) {
    let display = |r: &pyroscope::Request| -> String {
        let config = r
            .part("sample_type_config")
            .expect("a sample_type_config part");
        let v: Value = serde_json::from_slice(&config.body).unwrap();
        v["contentions"]["display-name"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let cpu = reqs.iter().filter(|r| r.has("format")).count();
    let forms: Vec<&pyroscope::Request> = reqs.iter().filter(|r| !r.has("format")).collect();
    let of = |family: &str| -> Vec<&pyroscope::Request> {
        forms
            .iter()
            .copied()
            .filter(|r| display(r) == format!("{family}_count"))
            .collect()
    };
    let (mutex, block) = (of("mutex"), of("block"));
    assert!(cpu >= 2, "{cpu} CPU profiles");
    assert_eq!(mutex.len(), cpu, "a mutex profile per interval");
    assert_eq!(mutex.len() + block.len(), forms.len());
    let mut totals = [(0i64, 0i64); 2];
    for (i, family) in [&mutex, &block].iter().enumerate() {
        for r in family.iter() {
            assert_eq!((r.method.as_str(), r.path.as_str()), ("POST", "/ingest"));
            assert_eq!(r.q("spyName"), "clrprof");
            assert!(!r.has("sampleRate"), "{:?}", r.query);
            let parts: Vec<(String, Option<String>)> = r
                .parts()
                .into_iter()
                .map(|p| (p.name, p.filename))
                .collect();
            assert_eq!(
                parts,
                [
                    ("profile".to_string(), Some("profile.pprof".to_string())),
                    (
                        "sample_type_config".to_string(),
                        Some("sample_type_config.json".to_string())
                    )
                ]
            );
            let p = pyroscope::profile_of(r);
            let s = |i: i64| p.string_table[i as usize].clone();
            let (types, sums) = pyroscope::by_function(&p);
            assert_eq!(
                types,
                [
                    ("contentions".to_string(), "count".to_string()),
                    ("delay".to_string(), "nanoseconds".to_string())
                ]
            );
            let period = p.period_type.as_ref().unwrap();
            assert_eq!(
                (s(period.r#type), s(period.unit), p.period),
                ("contentions".to_string(), "count".to_string(), 1)
            );
            let method = if i == 0 {
                "Scenarios.Waits.TakeLedger"
            } else {
                "Scenarios.Waits.BlockPoolThread"
            };
            for (name, v) in &sums {
                if name == method {
                    totals[i].0 += v[0];
                    totals[i].1 += v[1];
                }
            }
        }
    }
    let (count, delay) = totals[0];
    assert!(
        (count as f64 - contentions).abs() <= contentions * 0.10,
        "{count} contentions pushed in TakeLedger, the app counted {contentions}"
    );
    assert_eq!(
        delay as u64, ledger_wait_ns,
        "the trace's lock wait in TakeLedger"
    );
    assert!(
        (delay as f64 - lock_wait_ns).abs() <= lock_wait_ns * 0.20,
        "{delay} ns pushed, the app's Stopwatch {lock_wait_ns}"
    );
    match rt {
        Runtime::Net8 => assert!(block.is_empty(), "no wait-handle events on .NET 8"),
        Runtime::Net9 | Runtime::Net10 => {
            assert!(!block.is_empty());
            assert!(
                totals[1].0 > 0 && totals[1].1 > 0,
                "BlockPoolThread's waits: {:?}",
                totals[1]
            );
        }
    }
    eprintln!(
        "pushed waits on {rt:?}: {} mutex and {} block profiles; TakeLedger {count} contentions, {:.1} ms (app: {contentions}, {:.1} ms); BlockPoolThread {} waits, {:.1} ms",
        mutex.len(),
        block.len(),
        delay as f64 / 1e6,
        lock_wait_ns / 1e6,
        totals[1].0,
        totals[1].1 as f64 / 1e6
    );
}

/// Exact counts with every method hooked (no `--include`), so the runtime's own
/// exception-handling code shows: .NET 9 and 10 dispatch exceptions in managed code
/// (`System.Runtime.EH.*`), 8 in native code; and on 9 each of the 7 exceptions leaves
/// three frames without a Leave where 8 and 10 leave one.
fn trace_counts_through_exceptions(rt: Runtime) {
    let app = app_on("Scenarios", rt);
    let trace = scratch(&format!("rt-trace-exceptions-{}", rt.tfm())).join("t.clrprof");
    let out = record_app(&app, &trace, &["--mode", "trace"], &["exceptions", "7"]);
    let r = report_json(&trace);
    assert_ran_on(rt, &out, &r);
    assert_eq!(results(&out)["caught"], "7");
    assert_eq!(calls(&r, "Scenarios.Exceptions.Throw"), 7);
    assert_eq!(calls(&r, "Scenarios.Exceptions.Run"), 1);
    let stats = &r["trace_stats"];
    assert_eq!(stats["unmatched_leaves"], 0, "{stats:#}");
    assert_eq!(stats["open_at_end"], 0, "{stats:#}");
    let unwound = match rt {
        Runtime::Net9 => 21,
        Runtime::Net8 | Runtime::Net10 => 7,
    };
    assert_eq!(stats["unwound_frames"], unwound, "{stats:#}");
    let eh = r["functions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| {
            f["name"]
                .as_str()
                .unwrap()
                .starts_with("System.Runtime.EH.")
        })
        .count();
    if rt == Runtime::Net8 {
        assert_eq!(eh, 0, "System.Runtime.EH.* traced on .NET 8");
    } else {
        assert!(eh > 0, "no System.Runtime.EH.* traced on {rt:?}");
        assert_eq!(calls(&r, "System.Runtime.EH.RhThrowEx"), 7);
    }

    // Filters, finally blocks and ten unwound levels: exact per level on every runtime.
    let trace = scratch(&format!("rt-trace-deep-{}", rt.tfm())).join("t.clrprof");
    let out = record_app(
        &app,
        &trace,
        &["--mode", "trace", "--include", "Scenarios.*"],
        &["deep-exceptions"],
    );
    let r = report_json(&trace);
    let throws: u64 = results(&out)["deep_throws"].parse().unwrap();
    for level in 1..=10 {
        assert_eq!(
            calls(&r, &format!("Scenarios.DeepExceptions.Level{level}")),
            throws,
            "Level{level}"
        );
    }
    let stats = &r["trace_stats"];
    assert_eq!(stats["unwound_frames"], 10 * throws, "{stats:#}");
    assert_eq!(stats["unmatched_leaves"], 0, "{stats:#}");
    assert_eq!(stats["open_at_end"], 0, "{stats:#}");
}

fn trace_counts_tail_calls(rt: Runtime) {
    let app = app_on("TailCalls", rt);
    let trace = scratch(&format!("rt-trace-tail-{}", rt.tfm())).join("t.clrprof");
    let out = record_app(
        &app,
        &trace,
        &["--mode", "trace", "--include", "TailCalls.*"],
        &[],
    );
    let res = results(&out);
    let r = report_json(&trace);
    for m in ["ping", "pong", "hop", "wide"] {
        assert_eq!(res[&format!("tail_prefixes_{m}")], "1");
        assert_eq!(
            calls(&r, &format!("TailCalls.Program.{m}")).to_string(),
            res[m],
            "{m}"
        );
    }
    let stats = &r["trace_stats"];
    assert_eq!(stats["unmatched_leaves"], 0, "{stats:#}");
    assert_eq!(stats["open_at_end"], 0, "{stats:#}");
}

fn attach_detach_unloads(rt: Runtime) {
    let trace = scratch(&format!("rt-attach-{}", rt.tfm())).join("t.clrprof");
    let t = Serve::start(&app_on("Scenarios", rt), &[]);
    let out = clrprof()
        .args([
            "record",
            "--pid",
            &t.pid.to_string(),
            "--duration",
            "1",
            "-o",
        ])
        .arg(&trace)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(says_detached(&stderr), "{stderr}");
    assert!(agent_gone(t.pid), "still active");
    let r = report_json(&trace);
    assert_eq!(r["trace"]["attached"], true);
    assert!(
        r["trace"]["runtime_version"]
            .as_str()
            .unwrap_or("")
            .starts_with(&format!("{}.", rt.major())),
        "{:#}",
        r["trace"]
    );
    assert!(
        has_function(&r, "Scenarios.Serve.ServeWork"),
        "ServeWork never sampled"
    );
    let ran_on = ran_on(t.quit());
    assert!(ran_on.starts_with(&format!("{}.", rt.major())), "{ran_on}");
}

fn control_socket_of(pid: u32) -> std::path::PathBuf {
    Path::new(&std::env::var("TMPDIR").unwrap_or("/tmp".into()))
        // SAFETY: getuid has no preconditions.
        .join(format!("clrprof-{}", unsafe { libc::getuid() }))
        .join(format!("{pid}.sock"))
}

fn samples(trace: &Path) -> u64 {
    report_json(trace)["samples"]["total"].as_u64().unwrap_or(0)
}

/// A second `clrprof record --pid` that the first cannot see (another TMPDIR, so another
/// control directory) is refused by the runtime with CORPROF_E_PROFILER_ALREADY_ACTIVE,
/// and the runtime then keeps the library it loaded for that attach for good. That once
/// made the next attach reuse the first recording's state and segfault the target on the
/// EventPipe thread. Now the second attach names the same, resident copy (found in the
/// target's maps, whatever its TMPDIR), its profiler object finds the session state
/// taken and touches nothing, and every session starts afresh. Also two attaches started
/// at the same moment: one wins, the other is refused, and the target keeps working,
/// with one copy of the library mapped through it all.
fn a_refused_attach_leaves_the_target_attachable(rt: Runtime) {
    let dir = scratch(&format!("rt-attach-refused-{}", rt.tfm()));
    let other_tmp = dir.join("other-tmp");
    std::fs::create_dir_all(&other_tmp).unwrap();
    let mut t = Serve::start(&app_on("Scenarios", rt), &[]);
    let pid = t.pid;
    let first_trace = dir.join("first.clrprof");
    let first = clrprof()
        .args([
            "record",
            "--pid",
            &pid.to_string(),
            "--duration",
            "3",
            "-q",
            "-o",
        ])
        .arg(&first_trace)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let sock = control_socket_of(pid);
    for _ in 0..1000 {
        if sock.exists() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        sock.exists(),
        "the first attach never listened on {}",
        sock.display()
    );
    let second = clrprof()
        .env("TMPDIR", &other_tmp)
        .args([
            "record",
            "--pid",
            &pid.to_string(),
            "--duration",
            "1",
            "-q",
            "-o",
        ])
        .arg(dir.join("second.clrprof"))
        .output()
        .unwrap();
    assert!(
        !second.status.success(),
        "the second attach was not refused"
    );
    let err = String::from_utf8_lossy(&second.stderr);
    assert!(err.contains("CORPROF_E_PROFILER_ALREADY_ACTIVE"), "{err}");
    assert_success(&first.wait_with_output().unwrap());
    assert!(samples(&first_trace) > 0);

    // The attach after it starts afresh and records.
    let third_trace = dir.join("third.clrprof");
    assert_success(&attach_record(
        pid,
        &third_trace,
        &["--duration", "1", "-q"],
    ));
    assert!(
        samples(&third_trace) > 0,
        "the attach after a refused one recorded nothing"
    );
    t.ask("result", "RESULT");

    // Two at the same moment, each blind to the other.
    let racers: Vec<_> = (0..2)
        .map(|i| {
            let tmp = dir.join(format!("race-tmp{i}"));
            std::fs::create_dir_all(&tmp).unwrap();
            clrprof()
                .env("TMPDIR", &tmp)
                .args([
                    "record",
                    "--pid",
                    &pid.to_string(),
                    "--duration",
                    "1",
                    "-q",
                    "-o",
                ])
                .arg(dir.join(format!("race{i}.clrprof")))
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let outs: Vec<_> = racers
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect();
    let won = outs.iter().filter(|o| o.status.success()).count();
    assert!(
        won >= 1,
        "neither racer attached: {:?}",
        outs.iter()
            .map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
            .collect::<Vec<_>>()
    );
    for o in outs.iter().filter(|o| !o.status.success()) {
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("CORPROF_E_PROFILER_ALREADY_ACTIVE"), "{err}");
    }
    let last_trace = dir.join("last.clrprof");
    assert_success(&attach_record(pid, &last_trace, &["--duration", "1", "-q"]));
    assert!(samples(&last_trace) > 0);
    assert_eq!(
        agent_copies(pid),
        1,
        "the refused and racing attaches named the resident copy"
    );
    t.ask("result", "RESULT");
    let ran_on = ran_on(t.quit());
    assert!(ran_on.starts_with(&format!("{}.", rt.major())), "{ran_on}");
}

/// `clrprof record --pid` or `heap --pid` killed at any moment of its attach (SIGKILL, or
/// Ctrl-C before its handler could be installed) must not leave the agent recording: it
/// once did when the kill fell between AttachProfiler and the agent's lookup of its owner
/// (4 of 10 on .NET 10), since an owner it could not find was not watched at all.
fn a_clrprof_killed_during_the_attach_leaves_no_agent(rt: Runtime) {
    let dir = scratch(&format!("rt-attach-killed-{}", rt.tfm()));
    let mut t = Serve::start(&app_on("Scenarios", rt), &[]);
    let pid = t.pid.to_string();
    let cases: [(&str, i32, u64); 9] = [
        ("record", libc::SIGKILL, 5),
        ("record", libc::SIGKILL, 20),
        ("record", libc::SIGKILL, 40),
        ("record", libc::SIGKILL, 70),
        ("record", libc::SIGKILL, 120),
        ("record", libc::SIGINT, 10),
        ("record", libc::SIGINT, 40),
        ("heap", libc::SIGKILL, 60),
        ("heap", libc::SIGINT, 60),
    ];
    for (i, (what, sig, after_ms)) in cases.into_iter().enumerate() {
        let trace = dir.join(format!("k{i}.clrprof"));
        let mut cmd = clrprof();
        if what == "record" {
            cmd.args(["record", "--pid", &pid, "-q", "-o"]);
        } else {
            cmd.args(["heap", "--pid", &pid, "-o"]);
        }
        let mut child = cmd
            .arg(&trace)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(after_ms));
        // SAFETY: kill has no memory-safety preconditions; the pid is our own child's.
        unsafe { libc::kill(child.id() as i32, sig) };
        let _ = child.wait();
        // The agent notices its owner is gone within 200 ms, then detaches (~0.3 s).
        let gone = (0..150).any(|_| {
            std::thread::sleep(Duration::from_millis(100));
            agent_gone(t.pid)
        });
        assert!(
            gone,
            "{what} killed by signal {sig} after {after_ms} ms: the agent is still loaded"
        );
    }
    // Still attachable, still working.
    let last = dir.join("last.clrprof");
    assert_success(&attach_record(t.pid, &last, &["--duration", "1", "-q"]));
    t.ask("result", "RESULT");
    let ran_on = ran_on(t.quit());
    assert!(ran_on.starts_with(&format!("{}.", rt.major())), "{ran_on}");
}

/// 48 attaches to one process. They once reached glibc 2.34-2.36's DTV resizes, one new
/// TLS module id per attach, and a resize aborted a .NET 9 target about once in 2,000
/// cycles (docs/attach.md, step 7); the library is now loaded once per process.
///
/// The three runtimes' targets are cycled at the same time, each by a thread of its own:
/// a cycle mostly waits (its 0.2 s recording, the runtime's 300 ms detach floor), so one
/// test slot holds the three for about the time of one instead of three. Each runtime's
/// failure is reported with its own message.
#[test]
fn idle_attach_cycles() {
    let failed: Vec<String> = std::thread::scope(|s| {
        let runs: Vec<_> = Runtime::ALL
            .map(|rt| {
                (
                    rt,
                    s.spawn(move || idle_attach_cycles_cost_little_memory(rt)),
                )
            })
            .into_iter()
            .collect();
        runs.into_iter()
            .filter_map(|(rt, run)| {
                run.join().err().map(|e| {
                    let why = e
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_default();
                    format!("{}: {why}", rt.tfm())
                })
            })
            .collect()
    });
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// Each attach/detach cycle on an idle target leaves little behind in it (16 KiB or less,
/// the smallest of three runs' slopes, on a loaded machine too): the
/// agent frees the memory its statics kept (the unload of a library drops none), its large
/// blocks are pages of its own rather than malloc's (os/allocator.rs), and it gives its
/// threads' freed heap back (`malloc_trim`) at detach. Without those, an idle target grew
/// by 46-190 KiB a cycle, still rising after 40; and malloc's thread arenas, which the
/// slope alone let settle, are held too. The first cycles settle the
/// runtime's and malloc's own state, so the figure is taken over the cycles after them.
fn idle_attach_cycles_cost_little_memory(rt: Runtime) {
    let dir = scratch(&format!("rt-attach-idle-{}", rt.tfm()));
    // The target's stderr (the agent's log, the runtime's last words) is kept, so that a
    // target that dies says how.
    let target_log = dir.join("target.err");
    let child = app_on("Scenarios", rt)
        .command(&["sleeper", "seconds=600"])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&target_log).unwrap())
        .spawn()
        .unwrap();
    let child = std::cell::RefCell::new(child);
    let pid = child.borrow().id();
    // Resident KiB outside the agent library's own mapping: what the agent leaves elsewhere.
    let rss = || clrprof_testkit::rss_outside_agent(pid);
    let trace = dir.join("t.clrprof");
    let cycle = |i: usize| {
        let out = attach_record(pid, &trace, &["--duration", "0.2", "-q", "--force"]);
        if !out.status.success() {
            let died = child.borrow_mut().try_wait().ok().flatten();
            let log = std::fs::read_to_string(&target_log).unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(12).collect();
            panic!(
                "cycle {i}: {}\ntarget: {}\nits last stderr lines:\n{}",
                String::from_utf8_lossy(&out.stderr),
                died.map_or("still running".to_string(), |s| format!("exited, {s}")),
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            );
        }
    };
    std::thread::sleep(Duration::from_millis(500));
    let arenas_before = malloc_arenas(pid);
    // One run by hand (.NET 10, idle `sleeper`, debug build), RSS per cycle over nine
    // groups of five cycles: +54, +32, +30, +7, +12, +10, +2, −2, +6 KiB: the first twenty
    // settle (the runtime's and malloc's own state), so the slope is taken after 24.
    let warm = 24;
    for i in 0..warm {
        cycle(i);
    }
    // Three runs of eight cycles: a leak grows each; the runtime's own allocations (or
    // another process's load) land as a burst in one or two. The smallest slope is the
    // figure. (With two, a CI run beside other tests read 34 and 18 KiB a cycle on .NET 9,
    // still settling, where a rerun read 7.)
    let half = 8;
    let before = rss();
    for i in 0..half {
        cycle(warm + i);
    }
    let middle = rss();
    for i in half..2 * half {
        cycle(warm + i);
    }
    let after = rss();
    for i in 2 * half..3 * half {
        cycle(warm + i);
    }
    let last = rss();
    let arenas_after = malloc_arenas(pid);
    assert_eq!(
        agent_copies(pid),
        1,
        "one copy of the library for all {} attaches",
        warm + 3 * half
    );
    let _ = child.borrow_mut().kill();
    let _ = child.borrow_mut().wait();
    let slope = |a: u64, b: u64| b.saturating_sub(a) / half as u64;
    let per_cycle = slope(before, middle)
        .min(slope(middle, after))
        .min(slope(after, last));
    eprintln!(
        "{}: {before} -> {middle} -> {after} -> {last} KiB over three runs of {half} cycles: {per_cycle} KiB a cycle",
        rt.tfm()
    );
    // The agent's threads get glibc arenas of their own (a few, reused from one session to
    // the next); a large block freed there stayed resident in the arena's top, which
    // `malloc_trim` does not reach: four arenas of ~1.2 MiB each, most of it free, after 48
    // cycles. The agent's large blocks are its own pages now (os/allocator.rs), and its
    // arenas stay near glibc's first 132 KiB.
    let arena_growth = arenas_after.1.saturating_sub(arenas_before.1);
    eprintln!(
        "{}: thread arenas {} holding {} KiB before the first attach, {} holding {} KiB after the last",
        rt.tfm(),
        arenas_before.0,
        arenas_before.1,
        arenas_after.0,
        arenas_after.1
    );
    assert!(
        arena_growth <= 1024,
        "{}: malloc's thread arenas grew from {} ({} KiB resident) to {} ({} KiB) over {} attach cycles",
        rt.tfm(),
        arenas_before.0,
        arenas_before.1,
        arenas_after.0,
        arenas_after.1,
        warm + 3 * half
    );
    // With one copy of the library per process the slope read 0 KiB on 8, 9 and 10 beside
    // a busy core and another attach loop (single halves: up to 42 KiB, the runtime's own
    // bursts). Before the detach-time frees it was 74 KiB here and 46-190 KiB in the
    // issue, whose bound this is.
    assert!(
        per_cycle <= 16,
        "{} grew from {before} to {middle} to {after} to {last} KiB over three runs of {half} idle attach cycles: {per_cycle} KiB a cycle",
        rt.tfm()
    );
}

fn attach_record(pid: u32, trace: &std::path::Path, extra: &[&str]) -> Output {
    clrprof()
        .args(["record", "--pid", &pid.to_string(), "-o"])
        .arg(trace)
        .args(extra)
        .output()
        .unwrap()
}

fn assert_success(out: &Output) {
    assert!(
        out.status.success(),
        "clrprof failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

fn has_function(r: &Value, name: &str) -> bool {
    r["functions"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["name"] == name)
}

fn ps_shows_the_runtime_version(rt: Runtime) {
    let t = Serve::start(&app_on("Scenarios", rt), &[]);
    let out = clrprof().arg("ps").output().unwrap();
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find(|l| l.split_whitespace().next() == Some(&t.pid.to_string()))
        .unwrap_or_else(|| panic!("pid {} not in:\n{stdout}", t.pid))
        .to_owned();
    let ran_on = ran_on(t.quit());
    assert!(
        line.contains(&format!(" {ran_on}")) && line.contains("Scenarios.dll"),
        "`ps` line {line:?}, the app ran on {ran_on}"
    );
}

/// Names come from the modules' images, not the runtime's importer (which would convert
/// each module's metadata to its read-write form for the rest of the run): every name the
/// trace holds is the one the runtime's own importer gives (`CLRPROF_NAMES=compare` names
/// each id both ways), and by default no module is opened through the importer at all.
fn names_from_module_images(rt: Runtime) {
    let app = app_on("Scenarios", rt);
    let dir = scratch(&format!("rt-names-{}", rt.tfm()));
    let out = record_app_env(
        &app,
        &dir.join("compare.clrprof"),
        &["--mode", "trace"],
        &["args"],
        &[("CLRPROF_NAMES", "compare")],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line = stderr
        .lines()
        .find(|l| l.contains("compared with the importer"))
        .unwrap_or_else(|| panic!("no comparison line:\n{stderr}"));
    assert_eq!(number_before(line, " of "), 0, "{stderr}");
    let compared = number_after(line, " of ");
    assert!(compared >= 300, "only {compared} names compared: {line}");
    let trace = dir.join("default.clrprof");
    let out = record_app(&app, &trace, &["--mode", "trace"], &["args"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line = stderr
        .lines()
        .find(|l| l.contains("names: metadata read"))
        .unwrap_or_else(|| panic!("no names line:\n{stderr}"));
    assert!(number_after(line, "metadata read ") >= 300, "{line}");
    assert_eq!(
        number_before(line, " through the runtime's importer"),
        0,
        "{line}"
    );
    let r = report_json(&trace);
    assert_ran_on(rt, &out, &r);
    assert!(
        has_function(&r, "Scenarios.ArgTargets.AddInt"),
        "AddInt named"
    );
}

/// `--args` reads structs passed in registers and floating-point results from the saved
/// registers once the runtime's first answers agree with the SysV classification
/// (docs/tracing.md): four rounds of the `abi` set, each value exact, and none of these
/// functions left asking the runtime on every call.
fn args_from_registers(rt: Runtime) {
    let rounds = 4;
    let app = app_on("Scenarios", rt);
    let dir = scratch(&format!("rt-args-regs-{}", rt.tfm()));
    let trace = dir.join("t.clrprof");
    let rounds_arg = format!("rounds={rounds}");
    let out = record_app_env(
        &app,
        &trace,
        &["--mode", "trace", "--args", "Scenarios.Abi.*"],
        &["abi", &rounds_arg],
        &[("CLRPROF_ARGS_FAST", "0")],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(", 0 contradicted by the runtime"),
        "{stderr}"
    );
    // A two-eightbyte struct result is copied by the runtime into a buffer of its own
    // (not learned), so the closing log names what still asks.
    let asking = stderr
        .lines()
        .find(|l| l.contains("ask the runtime on every call"))
        .unwrap_or_else(|| panic!("no line naming what asks the runtime:\n{stderr}"));
    assert!(
        asking.contains("Scenarios.Abi.MakeS16 (return)"),
        "{asking}"
    );
    for learned in [
        "Scenarios.Abi.Describe (entry)",
        "Scenarios.Abi.ScaleMix (entry)",
        "Scenarios.Abi.AddSF4 (entry)",
        "Scenarios.Abi.SwapS16 (entry)",
        "Scenarios.Abi.SumS16 (entry)",
        "Scenarios.Abi.ManyMixed (entry)",
        "Scenarios.Abi.MixDouble (return)",
        "Scenarios.Abi.MixFloat (return)",
        "Scenarios.Abi.ManyDoubles (return)",
    ] {
        assert!(!asking.contains(learned), "{learned} still asks: {asking}");
    }
    let app_says = results(&out);
    let key = |k: &str, r: usize| {
        if r == 0 {
            k.to_string()
        } else {
            format!("{k}_r{r}")
        }
    };
    let calls = invocations(&trace, "Scenarios.Abi.*");
    let arg = |inv: &Value, name: &str| -> Value {
        inv["args"]
            .as_array()
            .and_then(|a| a.iter().find(|a| a["name"] == name))
            .map(|a| a["value"].clone())
            .unwrap_or_else(|| panic!("no argument {name} in {inv:#}"))
    };
    let field = |v: &Value, f: &str| v["fields"][f].as_f64().unwrap_or(f64::NAN);
    for r in 0..rounds {
        let describe = &calls["Scenarios.Abi.Describe"][r];
        assert_eq!(arg(describe, "name"), format!("order-{r}"), "{describe:#}");
        let v = arg(describe, "v");
        assert_eq!(field(&v, "I"), (7 + r) as f64, "{describe:#}");
        assert_eq!(field(&v, "D"), 0.25 * (r + 1) as f64, "{describe:#}");
        assert_eq!(
            describe["return"]["value"].as_f64().map(|x| x.to_string()),
            Some(app_says[&key("abi_describe", r)].clone()),
            "{describe:#}"
        );
        let mix = &calls["Scenarios.Abi.ScaleMix"][r];
        let m = arg(mix, "m");
        assert_eq!(field(&m, "D"), 1.25 + r as f64, "{mix:#}");
        assert_eq!(field(&m, "L"), (40 + r) as f64, "{mix:#}");
        assert_eq!(arg(mix, "factor").as_f64(), Some(3.0), "{mix:#}");
        let sf4 = &calls["Scenarios.Abi.AddSF4"][r];
        let (a, b) = (arg(sf4, "a"), arg(sf4, "b"));
        assert_eq!(
            [
                field(&a, "X"),
                field(&a, "Y"),
                field(&a, "Z"),
                field(&a, "W")
            ],
            [1.0 + r as f64, 2.0, 3.0, 4.0],
            "{sf4:#}"
        );
        assert_eq!(
            [
                field(&b, "X"),
                field(&b, "Y"),
                field(&b, "Z"),
                field(&b, "W")
            ],
            [0.5, 0.25, 0.125, 0.0625],
            "{sf4:#}"
        );
        let many = &calls["Scenarios.Abi.ManyMixed"][r];
        let k = arg(many, "k");
        assert_eq!([field(&k, "A"), field(&k, "B")], [6.0, 7.0], "{many:#}");
        for (function, result) in [
            ("MixDouble", "abi_double"),
            ("MixFloat", "abi_float"),
            ("ManyDoubles", "abi_many_doubles"),
        ] {
            let inv = &calls[&format!("Scenarios.Abi.{function}")][r];
            let want: f64 = app_says[&key(result, r)].parse().unwrap();
            assert_eq!(inv["return"]["value"].as_f64(), Some(want), "{inv:#}");
        }
    }
}

/// The assembly hooks (`--args`' default): the JIT's fast-path hooks see the arguments and
/// results where `arg_slots::Placer` puts them on this runtime too, and an object's first
/// word is its ClassID (its method table). One round of the `abi` set: a split struct, a
/// float struct, a struct passed on the stack after the general registers ran out, struct
/// results in two registers and through a buffer, a boxed value passed as `object`.
fn args_in_the_assembly_hooks(rt: Runtime) {
    let app = app_on("Scenarios", rt);
    let dir = scratch(&format!("rt-args-fast-{}", rt.tfm()));
    let trace = dir.join("t.clrprof");
    let out = record_app(
        &app,
        &trace,
        &["--mode", "trace", "--args", "Scenarios.Abi.*"],
        &["abi"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("values read in the assembly hooks"),
        "{stderr}"
    );
    assert!(!stderr.contains("cannot place"), "{stderr}");
    let app_says = results(&out);
    let calls = invocations(&trace, "Scenarios.Abi.*");
    let arg = |inv: &Value, name: &str| -> Value {
        inv["args"]
            .as_array()
            .and_then(|a| a.iter().find(|a| a["name"] == name))
            .map(|a| a["value"].clone())
            .unwrap_or_else(|| panic!("no argument {name} in {inv:#}"))
    };
    let field = |v: &Value, f: &str| v["fields"][f].as_f64().unwrap_or(f64::NAN);
    let describe = &calls["Scenarios.Abi.Describe"][0];
    assert_eq!(arg(describe, "name"), "order-0", "{describe:#}");
    let v = arg(describe, "v");
    assert_eq!(
        [field(&v, "I"), field(&v, "D")],
        [7.0, 0.25],
        "{describe:#}"
    );
    let sf4 = &calls["Scenarios.Abi.AddSF4"][0];
    let b = arg(sf4, "b");
    assert_eq!([field(&b, "X"), field(&b, "W")], [0.5, 0.0625], "{sf4:#}");
    let many = &calls["Scenarios.Abi.ManyMixed"][0];
    let k = arg(many, "k");
    assert_eq!([field(&k, "A"), field(&k, "B")], [6.0, 7.0], "{many:#}");
    assert_eq!(field(&arg(many, "l"), "C"), 10.0, "{many:#}");
    let mix = &calls["Scenarios.Abi.ScaleMix"][0]["return"]["value"];
    assert_eq!([field(mix, "D"), field(mix, "L")], [3.75, 120.0], "{mix:#}");
    let rot = &calls["Scenarios.Abi.RotateS24"][0]["return"]["value"];
    assert_eq!(
        format!(
            "{},{},{}",
            field(rot, "A"),
            field(rot, "B"),
            field(rot, "C")
        ),
        app_says["abi_s24"],
        "{rot:#}"
    );
    assert_eq!(
        calls["Scenarios.Abi.ManyDoubles"][0]["return"]["value"].as_f64(),
        app_says["abi_many_doubles"].parse().ok(),
    );
    let helper = &calls["Scenarios.Abi.<Round>g__Add|2_0"][0];
    let boxed = arg(helper, "value");
    assert_eq!(boxed["type"], "System.Int32", "{helper:#}");
    assert_eq!(
        boxed["value"].as_f64(),
        app_says["abi_int"].parse().ok(),
        "{helper:#}"
    );
    let text = serde_json::to_string(&calls).unwrap();
    assert!(!text.contains("\"unreadable\""), "{text}");
}

/// The `RESULT runtime=` `serve` printed on its way out.
fn ran_on(lines: Vec<String>) -> String {
    lines
        .iter()
        .find_map(|l| l.strip_prefix("RESULT runtime=").map(str::to_owned))
        .unwrap_or_default()
}
