//! Acceptance tests of `record --alloc` (docs/allocations.md) against the `alloc-sites`
//! and `alloc-live` scenarios, which measure what they allocate and keep themselves.

use crate::common;

use serde_json::Value;

use common::*;

fn fact(out: &std::process::Output, key: &str) -> f64 {
    results(out)[key].parse().unwrap()
}

fn find<'a>(list: &'a Value, name: &str) -> Option<&'a Value> {
    list.as_array().unwrap().iter().find(|t| t["name"] == name)
}

fn bytes_of(list: &Value, name: &str) -> f64 {
    find(list, name).map_or(0.0, |t| t["bytes"].as_f64().unwrap())
}

/// 300 MiB of byte[] from one method, 100 MiB of strings from another: the estimated
/// total is within 10 % of the process's own count, each site's share within 5 points,
/// and each type is charged to its method, under the whole managed stack.
#[test]
fn sampled_bytes_match_what_the_app_allocated_per_site() {
    let dir = scratch("alloc-sites");
    let trace = dir.join("t.clrprof");
    let out = record(
        &trace,
        &["--alloc", "--mode", "events"],
        &["alloc-sites", "mb=400"],
    );
    let total = fact(&out, "total_allocated");
    let (bytes_site, strings_site) = (fact(&out, "bytes_site"), fact(&out, "strings_site"));
    let r = report_json(&trace);
    let a = &r["allocation_samples"];
    assert_eq!(a["source"], "AllocationSampled");
    assert_eq!(a["interval_bytes"], 102_400);
    assert_eq!(a["estimated"], true);
    let est = a["estimated_bytes"].as_f64().unwrap();
    assert!(
        (est - total).abs() / total < 0.10,
        "estimated {est} vs GC.GetTotalAllocatedBytes {total}"
    );
    let share = |v: f64| v / est;
    let arrays = bytes_of(&a["types"], "System.Byte[]");
    let strings = bytes_of(&a["types"], "System.String");
    assert!(
        (share(arrays) - bytes_site / total).abs() < 0.05,
        "byte[] {arrays} of {est} vs {bytes_site} of {total}"
    );
    assert!(
        (share(strings) - strings_site / total).abs() < 0.05,
        "string {strings} of {est} vs {strings_site} of {total}"
    );
    // Each site's bytes are charged to its method, under the whole managed stack.
    let f = &a["functions"];
    let total_of = |name: &str| {
        find(f, name).unwrap_or_else(|| panic!("{name} in {f:#}"))["total_bytes"]
            .as_f64()
            .unwrap()
    };
    assert!((total_of("Scenarios.AllocSites.Bytes") - arrays).abs() / arrays < 0.02);
    assert!((total_of("Scenarios.AllocSites.Strings") - strings).abs() / strings < 0.05);
    let run = total_of("Scenarios.AllocSites.Run");
    assert!(run >= arrays * 0.98 + strings * 0.95, "{run}");
    assert!(total_of("Scenarios.Program.Main") >= run);
    let text = report_text(&trace);
    assert!(
        text.contains("Allocations (sampled: estimates from"),
        "{text}"
    );
}

/// Two app methods that allocate only through the framework (JSON serialization, LINQ):
/// nearly every sample's leaf is the framework's, so the per-function table charges the
/// app's methods almost nothing of their own; the table of the app's own methods gives each the bytes
/// of the framework code it called, within 5 points of what each measured itself.
#[test]
fn allocations_through_the_framework_are_charged_to_the_app_method_that_called_it() {
    let dir = scratch("alloc-via");
    let trace = dir.join("t.clrprof");
    let out = record(
        &trace,
        &["--alloc", "--mode", "events", "--events", "none"],
        &["alloc-via", "mb=400"],
    );
    let total = fact(&out, "total_allocated");
    let r = report_json(&trace);
    let a = &r["allocation_samples"];
    let est = a["estimated_bytes"].as_f64().unwrap();
    assert!((est - total).abs() / total < 0.10, "{est} vs {total}");
    let field = |list: &Value, name: &str, key: &str| {
        find(list, name).unwrap_or_else(|| panic!("{name} in {list:#}"))[key]
            .as_f64()
            .unwrap()
    };
    for (method, key) in [("Serialize", "serialize_bytes"), ("Arrays", "arrays_bytes")] {
        let name = format!("Scenarios.AllocVia.{method}");
        let want = fact(&out, key) / total;
        // The raw table: hardly a leaf (Enumerable.Range is inlined into Arrays, so its
        // iterator, about 3 % of Arrays' bytes, is Arrays' own); the rest is below it.
        let leaf = find(&a["functions"], &name).map_or(0.0, |f| f["self_bytes"].as_f64().unwrap());
        assert!(
            leaf < want * est * 0.1,
            "{name} is a leaf for {leaf} of {est}"
        );
        // The app's table: the nearest app frame of its samples.
        let got = field(&a["app_functions"], &name, "self_bytes") / est;
        assert!((got - want).abs() < 0.05, "{method}: {got:.3} vs {want:.3}");
    }
    // Run is under both; what no app frame is on (start-up, the runtime's own threads)
    // is apart, and small here.
    let run = field(&a["app_functions"], "Scenarios.AllocVia.Run", "total_bytes");
    assert!(run > est * 0.9, "{run} of {est}");
    let outside = a["outside_app"]["bytes"].as_f64().unwrap();
    assert!(outside < est * 0.05, "{outside} of {est}");
    let text = report_text(&trace);
    let table: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.contains("by the app's own methods"))
        .skip(2)
        .take(2)
        .collect();
    assert!(
        table[0].ends_with("Scenarios.AllocVia.Serialize")
            && table[1].ends_with("Scenarios.AllocVia.Arrays"),
        "{text}"
    );
}

/// `clrprof diff` of two `--alloc` traces of the same program, the second allocating
/// twice as much: the change by type and by the app's methods is what the app's own
/// counters changed by (within 15 % for the larger site, 25 % for the smaller: each side
/// is an estimate, and their difference carries both errors), in text and JSON.
#[test]
fn diff_of_two_alloc_traces_is_the_change_the_app_counted() {
    let dir = scratch("alloc-diff");
    let (before, after) = (dir.join("before.clrprof"), dir.join("after.clrprof"));
    let flags = ["--alloc", "--mode", "events", "--events", "none"];
    let a = record(&before, &flags, &["alloc-sites", "mb=400"]);
    let b = record(&after, &flags, &["alloc-sites", "mb=800"]);
    let d = diff_json(&before, &after, &[]);
    assert_eq!(d["estimated"], true);
    let change = |list: &str, name: &str| {
        find(&d[list], name).unwrap_or_else(|| panic!("{name} in {d:#}"))["bytes_delta"]
            .as_f64()
            .unwrap()
    };
    let grew = |key: &str| fact(&b, key) - fact(&a, key);
    for (list, name, key, within) in [
        ("types", "System.Byte[]", "bytes_site", 0.15),
        (
            "app_functions",
            "Scenarios.AllocSites.Bytes",
            "bytes_site",
            0.15,
        ),
        ("types", "System.String", "strings_site", 0.25),
        (
            "app_functions",
            "Scenarios.AllocSites.Strings",
            "strings_site",
            0.25,
        ),
    ] {
        let (got, want) = (change(list, name), grew(key));
        assert!(
            (got - want).abs() / want < within,
            "{name}: {got} vs {want}"
        );
    }
    let text = clrprof()
        .arg("diff")
        .arg(&before)
        .arg(&after)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.starts_with("allocations diff (estimates from "),
        "{text}"
    );
    let first_type = text.lines().nth(3).unwrap_or("");
    assert!(first_type.ends_with("  System.Byte[]"), "{text}");
    // A trace with neither heap snapshots nor allocation samples says what diff takes.
    let plain = dir.join("plain.clrprof");
    record(&plain, &["--mode", "events"], &["alloc-sites", "mb=1"]);
    let out = clrprof()
        .arg("diff")
        .arg(&plain)
        .arg(&after)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("holds neither a heap snapshot nor allocation samples"),
        "{err}"
    );
    let out = clrprof()
        .arg("diff")
        .arg(&before)
        .arg(&plain)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("has no allocation samples to compare"),
        "{err}"
    );
}

/// A damaged `--alloc` trace (bytes flipped inside a block) is warned about by `diff` as
/// by `report`: the same reader warnings, not a diff that reads as if both were whole.
#[test]
fn diff_of_a_damaged_alloc_trace_warns_as_report_does() {
    let dir = scratch("alloc-diff-damaged");
    let (before, after) = (dir.join("before.clrprof"), dir.join("after.clrprof"));
    let flags = ["--alloc", "--mode", "events", "--events", "none"];
    record(&before, &flags, &["alloc-sites", "mb=50"]);
    record(&after, &flags, &["alloc-sites", "mb=50"]);
    // Flip bytes in the middle of the body, past the header: inside a block's payload.
    let mut bytes = std::fs::read(&after).unwrap();
    let (_, header_len) = clrprof_format::Header::parse(&bytes).unwrap();
    assert!(bytes.len() > header_len + 4096, "{} bytes", bytes.len());
    let at = header_len + (bytes.len() - header_len) / 2;
    for b in &mut bytes[at..at + 8] {
        *b ^= 0x5A;
    }
    std::fs::write(&after, &bytes).unwrap();
    let warnings = |out: &std::process::Output| -> Vec<String> {
        String::from_utf8_lossy(&out.stderr)
            .lines()
            .filter(|l| l.contains("warning:"))
            .map(String::from)
            .collect()
    };
    let report = clrprof().arg("report").arg(&after).output().unwrap();
    let from_report = warnings(&report);
    assert!(
        !from_report.is_empty(),
        "report does not see the damage: {}",
        String::from_utf8_lossy(&report.stderr)
    );
    for json in [false, true] {
        let mut cmd = clrprof();
        cmd.arg("diff");
        if json {
            cmd.arg("--json");
        }
        let out = cmd.arg(&before).arg(&after).output().unwrap();
        assert!(out.status.success(), "{out:?}");
        let from_diff = warnings(&out);
        assert_eq!(from_diff, from_report, "diff (json {json}) vs report");
        assert!(
            from_diff
                .iter()
                .all(|l| l.contains(&after.display().to_string())),
            "{from_diff:?}"
        );
    }
}

/// `--alloc-interval` above the runtime's 100 KiB keeps about one runtime sample in
/// `interval / 100 KiB`, each counting that many times: fewer samples, the same estimate.
#[test]
fn a_longer_interval_thins_the_runtime_samples() {
    let dir = scratch("alloc-thin");
    let trace = dir.join("t.clrprof");
    let out = record(
        &trace,
        &["--alloc-interval", "524288", "--mode", "events"],
        &["alloc-sites", "mb=400"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("thinned to one per 524288"), "{stderr}");
    let total = fact(&out, "total_allocated");
    let a = &report_json(&trace)["allocation_samples"];
    assert_eq!(a["interval_bytes"], 524_288);
    let (kept, delivered) = (
        a["samples"].as_f64().unwrap(),
        a["runtime_samples"].as_f64().unwrap(),
    );
    let ratio = delivered / kept;
    assert!((ratio - 5.12).abs() < 1.0, "{kept} of {delivered}");
    let est = a["estimated_bytes"].as_f64().unwrap();
    assert!((est - total).abs() / total < 0.15, "{est} vs {total}");
}

/// 64 MiB kept under a static, four times as much dropped: the live estimate at the end
/// is within 15 % of what the app kept, and the dropped site is not in it.
#[test]
fn the_live_heap_holds_what_the_app_kept() {
    let dir = scratch("alloc-live");
    let trace = dir.join("t.clrprof");
    let out = record(
        &trace,
        &["--alloc", "--mode", "events"],
        &["alloc-live", "mb=64"],
    );
    let kept = fact(&out, "kept_bytes");
    let r = report_json(&trace);
    let live = &r["allocation_samples"]["live"];
    let arrays = bytes_of(&live["types"], "System.Byte[]");
    assert!(
        (arrays - kept).abs() / kept < 0.15,
        "live byte[] {arrays} vs kept {kept}"
    );
    let by = |name: &str| {
        find(&live["functions"], name).map_or(0.0, |f| f["total_bytes"].as_f64().unwrap())
    };
    assert!((by("Scenarios.AllocLive.Keep") - kept).abs() / kept < 0.15);
    assert_eq!(by("Scenarios.AllocLive.Drop"), 0.0, "{live:#}");
    // All allocations are seen: the dropped four fifths too.
    let drop = find(
        &r["allocation_samples"]["functions"],
        "Scenarios.AllocLive.Drop",
    )
    .unwrap()["total_bytes"]
        .as_f64()
        .unwrap();
    let dropped = fact(&out, "dropped_bytes");
    assert!(
        (drop - dropped).abs() / dropped < 0.10,
        "{drop} vs {dropped}"
    );
    assert_eq!(live["untracked"], 0);
    // The app kept its arrays through two full GCs: they are live as of a gen2 GC, and
    // next to nothing is left that no GC has looked at.
    let examined = &live["examined_bytes"];
    let gen2 = examined[2].as_f64().unwrap();
    assert!(
        (gen2 - kept).abs() / kept < 0.15,
        "live as of gen2 GCs {gen2} vs kept {kept}: {live:#}"
    );
    let unexamined = live["unexamined_bytes"].as_f64().unwrap();
    assert!(
        unexamined < 0.05 * kept,
        "not yet examined {unexamined}: {live:#}"
    );
    assert!(!live["over_time"].as_array().unwrap().is_empty());
    // The text shows the growth: the peak after a GC is about what the app kept.
    let text = report_text(&trace);
    let line = text
        .lines()
        .find(|l| l.starts_with("  after ") && l.contains(" GCs: "))
        .unwrap_or_else(|| panic!("{text}"));
    let peak = line.rsplit_once("peak ~").unwrap().1;
    assert!(peak.contains(" MiB at "), "{line}");
    let peak_mib: f64 = peak.split(" MiB").next().unwrap().parse().unwrap();
    let kept_mib = kept / f64::from(1 << 20);
    assert!(
        (peak_mib - kept_mib).abs() / kept_mib < 0.15,
        "{line} vs kept {kept_mib} MiB"
    );
    // The Firefox Profiler's view of the same samples: what the native allocations
    // retain, and where the memory track ends, are the live estimate.
    let ff = dir.join("t.firefox.json");
    convert_with(&trace, &["-f", "firefox", "-o", ff.to_str().unwrap()]);
    let f = json_file(&ff);
    let holder = f["threads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t.get("nativeAllocations").is_some())
        .expect("a thread with the allocations");
    let weights = holder["nativeAllocations"]["weight"].as_array().unwrap();
    let retained: f64 = weights.iter().map(|w| w.as_f64().unwrap()).sum();
    let est = live["bytes"].as_f64().unwrap();
    assert!((retained - est).abs() / est < 0.01, "{retained} vs {est}");
    assert!(
        (retained - kept).abs() / kept < 0.15,
        "{retained} vs kept {kept}"
    );
    let track: f64 = f["counters"][0]["samples"]["count"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_f64().unwrap())
        .sum();
    assert!((track - est).abs() / est < 0.01, "{track} vs {est}");
    // Chrome's format: the counter ends at the same estimate.
    let ct = dir.join("t.chrome.json");
    convert_with(&trace, &["-f", "chrome", "-o", ct.to_str().unwrap()]);
    let c = json_file(&ct);
    let last = c["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "C")
        .max_by(|a, b| {
            a["ts"]
                .as_f64()
                .unwrap()
                .total_cmp(&b["ts"].as_f64().unwrap())
        })
        .expect("a counter")["args"]["bytes"]
        .as_f64()
        .unwrap();
    assert!((last - est).abs() / est < 0.01, "{last} vs {est}");
}

/// Allocation flamegraphs: `convert --weight alloc-bytes|alloc-objects|live-bytes`.
#[test]
fn allocation_flamegraphs_weigh_bytes_objects_and_live_bytes() {
    let dir = scratch("alloc-convert");
    let trace = dir.join("t.clrprof");
    record(
        &trace,
        &["--alloc", "--mode", "events"],
        &["alloc-live", "mb=16"],
    );
    let folded = |weight: &str| {
        let out = dir.join(format!("{weight}.folded"));
        let o = out.to_str().unwrap();
        convert_with(
            &trace,
            &[
                "-f",
                "folded",
                "--merge-threads",
                "--weight",
                weight,
                "-o",
                o,
            ],
        );
        std::fs::read_to_string(&out).unwrap()
    };
    let count = |text: &str, leaf: &str| -> u64 {
        text.lines()
            .filter(|l| l.rsplit_once(' ').unwrap().0.ends_with(leaf))
            .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
            .sum()
    };
    let bytes = folded("alloc-bytes");
    let (keep, drop) = (
        count(&bytes, "AllocLive.Keep"),
        count(&bytes, "AllocLive.Drop"),
    );
    assert!(drop > 3 * keep && keep > 0, "{bytes}");
    assert!(
        bytes.contains("Scenarios.Program.Main;Scenarios.AllocLive.Run;Scenarios.AllocLive.Drop ")
    );
    let objects = folded("alloc-objects");
    // 8 KiB objects: bytes / objects is the object size.
    let per = count(&bytes, "AllocLive.Drop") as f64 / count(&objects, "AllocLive.Drop") as f64;
    assert!((per - 8192.0).abs() < 100.0, "{per}");
    let live = folded("live-bytes");
    assert_eq!(count(&live, "AllocLive.Drop"), 0, "{live}");
    assert!(count(&live, "AllocLive.Keep") > 0);
    for f in ["pprof", "speedscope", "svg"] {
        let out = dir.join(format!("t.{f}"));
        convert_with(
            &trace,
            &[
                "-f",
                f,
                "--weight",
                "alloc-bytes",
                "-o",
                out.to_str().unwrap(),
            ],
        );
    }
    // Timeline formats have no place for them, and say which formats do.
    let out = clrprof()
        .args(["convert", "-f", "firefox", "--weight", "alloc-bytes"])
        .arg(&trace)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("use -f svg, folded, speedscope or pprof"),
    );
    // A trace without allocation samples says how to get them.
    let plain = dir.join("plain.clrprof");
    record(&plain, &["--mode", "sample"], &["alloc-live", "mb=1"]);
    let out = clrprof()
        .args(["convert", "-f", "folded", "--weight", "live-bytes"])
        .arg(&plain)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("record --alloc"));
}

/// The Demo app with events, CPU samples and allocation samples in one trace: its results
/// are those of an unprofiled run.
#[test]
fn demo_with_events_cpu_and_allocation_samples() {
    let demo = clrprof_testkit::app("Demo");
    let plain = demo.command(&["30000"]).output().unwrap();
    assert!(plain.status.success());
    let dir = scratch("alloc-demo");
    let trace = dir.join("t.clrprof");
    let out = record_app(
        &demo,
        &trace,
        &[
            "--mode",
            "sample",
            "--events",
            "default,exceptions,gc",
            "--alloc",
        ],
        &["30000"],
    );
    assert_eq!(results(&out), results(&plain));
    let r = report_json(&trace);
    assert!(r["samples"]["total"].as_u64().unwrap() > 0);
    assert!(!r["gcs"].as_array().unwrap().is_empty());
    assert!(!r["exceptions"].as_object().unwrap().is_empty());
    let a = &r["allocation_samples"];
    assert!(a["samples"].as_u64().unwrap() > 10, "{a:#}");
    assert!(
        a["functions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["name"].as_str().unwrap().starts_with("Demo.")),
        "{a:#}"
    );
}

/// `record --pid --alloc`: the runtime allows the EventPipe session, the GC callbacks and
/// the handles after an attach; the detach leaves the agent inert and the app going.
#[test]
fn attach_samples_allocations_then_detaches() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;
    let mut child = scenarios()
        .command(&["alloc-loop"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut ready = String::new();
    stdout.read_line(&mut ready).unwrap();
    let pid = ready
        .trim()
        .strip_prefix("READY ")
        .expect("READY")
        .to_string();
    let trace = scratch("alloc-attach").join("t.clrprof");
    let out = clrprof()
        .args(["record", "--alloc", "--duration", "1", "--pid", &pid, "-o"])
        .arg(&trace)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(says_detached(&stderr), "{stderr}");
    assert!(
        agent_gone(pid.parse().unwrap()),
        "the agent is still active"
    );
    writeln!(child.stdin.as_mut().unwrap(), "quit").unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    assert!(child.wait().unwrap().success());
    assert!(rest.contains("RESULT allocated="), "{rest}");
    let r = report_json(&trace);
    assert_eq!(r["trace"]["attached"], true);
    let a = &r["allocation_samples"];
    assert!(a["samples"].as_u64().unwrap() > 50, "{a:#}");
    let work = find(&a["functions"], "Scenarios.AllocLoop.Work").expect("AllocLoop.Work");
    assert!(work["total_bytes"].as_f64().unwrap() > 0.9 * a["estimated_bytes"].as_f64().unwrap());
}

/// The live heap is bounded: 512 MiB kept is ~5000 samples alive, over the 4096 followed
/// at once. The rest are recorded, counted as not followed, and said so.
#[test]
fn followed_samples_are_bounded_and_the_rest_counted() {
    let dir = scratch("alloc-bound");
    let trace = dir.join("t.clrprof");
    let out = record(
        &trace,
        &["--alloc", "--mode", "events"],
        &["alloc-live", "mb=512"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("not followed (over the bound of 4096)"),
        "{stderr}"
    );
    let kept = fact(&out, "kept_bytes");
    let r = report_json(&trace);
    let a = &r["allocation_samples"];
    let live = &a["live"];
    assert_eq!(live["tracked_max"], 4096);
    let untracked = live["untracked"].as_u64().unwrap();
    assert!(untracked > 500, "{live:#}");
    assert!(live["samples"].as_u64().unwrap() <= 4096);
    // What is followed is a part of what was kept; all allocations are still counted.
    assert!(bytes_of(&live["types"], "System.Byte[]") < kept);
    let total = fact(&out, "total_allocated");
    let est = a["estimated_bytes"].as_f64().unwrap();
    assert!((est - total).abs() / total < 0.10, "{est} vs {total}");
    let text = report_text(&trace);
    assert!(
        text.contains(&format!(
            "{untracked} samples not followed, over the bound of 4096"
        )),
        "{text}"
    );
}

/// `record --alloc --mode events` of Scenarios with the given extra environment.
fn record_alloc_env(
    trace: &std::path::Path,
    env: (&str, &str),
    app_args: &[&str],
) -> std::process::Output {
    record_app_env(
        &scenarios(),
        trace,
        &["--alloc", "--mode", "events"],
        app_args,
        &[env],
    )
}

/// When the runtime refuses the EventPipe session, the trace says so and the report
/// tells why there are no allocation samples, with the HRESULT's name. (The test makes
/// the agent ask for a session without providers, which the runtime refuses.)
#[test]
fn a_refused_session_is_reported_with_its_hresult() {
    let dir = scratch("alloc-refused");
    let trace = dir.join("t.clrprof");
    let out = record_alloc_env(
        &trace,
        ("CLRPROF_ALLOC_TEST_NO_PROVIDER", "1"),
        &["alloc-sites", "mb=8"],
    );
    // The app ran and finished unharmed.
    assert!(fact(&out, "total_allocated") > 8.0 * 1024.0 * 1024.0);
    let r = report_json(&trace);
    assert!(r.get("allocation_samples").is_none(), "{r:#}");
    let why = r["allocation_samples_unavailable"].as_str().unwrap();
    assert!(
        why.contains("EventPipeStartSession failed") && why.contains("E_INVALIDARG"),
        "{why}"
    );
    let text = report_text(&trace);
    assert!(
        text.contains("Allocations (sampled): none, --alloc could not start: EventPipeStartSession failed: E_INVALIDARG"),
        "{text}"
    );
}

/// The stack cache gives DoStackSnapshot's frames on stacks made to look alike (one
/// virtual call site calling three implementations with frames of different sizes, under
/// 0 to 3 levels of recursion): `CLRPROF_ALLOC_WALK=compare` takes both for every sample
/// and counts the cached stacks that differ. None may; most samples come from the cache.
#[test]
fn cached_stacks_are_the_stacks_do_stack_snapshot_walks() {
    let dir = scratch("alloc-compare");
    let trace = dir.join("t.clrprof");
    let out = record_alloc_env(
        &trace,
        ("CLRPROF_ALLOC_WALK", "compare"),
        &["alloc-shapes", "mb=400"],
    );
    let log = String::from_utf8_lossy(&out.stderr);
    let line = log
        .lines()
        .find(|l| l.contains("allocation stacks: Compare"))
        .unwrap_or_else(|| panic!("{log}"));
    let (hits, recorded) = (number_before(line, " of "), number_after(line, " of "));
    let (differed, compared) = (
        number_after(line, "DoStackSnapshot: "),
        number_before(line, " differ"),
    );
    assert!(recorded > 3000 && hits * 10 > recorded * 9, "{line}");
    assert_eq!((differed, compared), (0, hits), "{line}");
    assert!(!log.contains("alloc stack differs"), "{log}");
}

/// With the cache (the default), each implementation behind the one call site gets its
/// own share of the bytes, within 5 points of what each measured itself, under the whole
/// stack down to its call site.
#[test]
fn cached_stacks_charge_each_implementation_its_share() {
    let dir = scratch("alloc-shapes");
    let trace = dir.join("t.clrprof");
    let out = record(
        &trace,
        &["--alloc", "--mode", "events"],
        &["alloc-shapes", "mb=400"],
    );
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(log.contains("stacks by Cached"), "{log}");
    let total = fact(&out, "total_allocated");
    let r = report_json(&trace);
    let a = &r["allocation_samples"];
    let est = a["estimated_bytes"].as_f64().unwrap();
    assert!((est - total).abs() / total < 0.10, "{est} vs {total}");
    let f = &a["functions"];
    let self_of = |name: &str| {
        find(f, name).unwrap_or_else(|| panic!("{name} in {f:#}"))["self_bytes"]
            .as_f64()
            .unwrap()
    };
    for (shape, key) in [
        ("Small", "small_bytes"),
        ("Medium", "medium_bytes"),
        ("Large", "large_bytes"),
    ] {
        let got = self_of(&format!("Scenarios.AllocShapes+{shape}.Make")) / est;
        let want = fact(&out, key) / total;
        assert!((got - want).abs() < 0.05, "{shape}: {got:.3} vs {want:.3}");
    }
    let through = find(f, "Scenarios.AllocShapes.Through").unwrap()["total_bytes"]
        .as_f64()
        .unwrap();
    assert!(through > est * 0.95, "{through} of {est}");
}

/// The two diagnostic variables of `--alloc` are not part of the settings contract (they
/// do not stop the profiler from loading): an unknown value is logged and the samples are
/// taken the default way.
#[test]
fn unknown_walk_and_bench_values_are_logged_and_sampling_goes_on() {
    let dir = scratch("alloc-bad-env");
    let trace = dir.join("t.clrprof");
    let out = record_app_env(
        &scenarios(),
        &trace,
        &["--alloc", "--mode", "events"],
        &["alloc-sites", "mb=400"],
        &[
            ("CLRPROF_ALLOC_WALK", "fast"),
            ("CLRPROF_ALLOC_BENCH", "flor"),
        ],
    );
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(
        log.contains("CLRPROF_ALLOC_WALK=\"fast\": expected cached, snapshot or compare")
            && log.contains("cached it is"),
        "{log}"
    );
    assert!(
        log.contains("CLRPROF_ALLOC_BENCH=\"flor\": expected floor; ignored"),
        "{log}"
    );
    assert!(log.contains("stacks by Cached"), "{log}");
    // Sampled as usual: the estimate is the app's own total within 10 % (~4 000 samples:
    // one standard deviation is 1.6 %).
    let total = fact(&out, "total_allocated");
    let est = report_json(&trace)["allocation_samples"]["estimated_bytes"]
        .as_f64()
        .unwrap();
    assert!((est - total).abs() / total < 0.10, "{est} vs {total}");
}
