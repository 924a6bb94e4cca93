//! Acceptance tests of `record --alloc` (docs/allocations.md) against the `alloc-sites`
//! and `alloc-live` scenarios, which measure what they allocate and keep themselves.

mod common;

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
    let text =
        String::from_utf8(clrprof().arg("report").arg(&trace).output().unwrap().stdout).unwrap();
    assert!(
        text.contains("Allocations (sampled: estimates from"),
        "{text}"
    );
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
    assert!(!live["over_time"].as_array().unwrap().is_empty());
}
