//! Acceptance tests of the events mode: real .NET apps under `clrprof record`, exact
//! facts read back from `clrprof report --json`.

use crate::common;

use common::*;

#[test]
fn counts_exactly_the_exceptions_the_app_throws() {
    let dir = scratch("exceptions");
    let trace = dir.join("t.clrprof");
    let out = record(&trace, &["--mode", "events"], &["exceptions", "7"]);
    assert_eq!(results(&out)["exceptions"], "7");
    let r = report_json(&trace);
    assert_eq!(
        r["exceptions"]["System.InvalidOperationException"], 7,
        "{:#}",
        r["exceptions"]
    );
    assert_eq!(r["events"]["exceptions_thrown"], 7);
    assert_eq!(r["events"]["exception_catches"], 7);
    let msgs = &r["exception_messages"]["System.InvalidOperationException"];
    assert_eq!(msgs["boom #0"], 1, "{msgs:#}");
    assert_eq!(msgs["boom #6"], 1, "{msgs:#}");
    // The throw stack's lines are the ones the exception's own stack trace names (the
    // runtime reading the PDB in the app): the throw in Throw, the call in Run.
    let (throw_line, call_line) = (&results(&out)["throw_line"], &results(&out)["call_line"]);
    assert_ne!(throw_line, "0");
    let stacks = r["exception_stacks"].as_array().unwrap();
    let stack = stacks
        .iter()
        .find(|s| s["count"] == 7)
        .unwrap_or_else(|| panic!("{stacks:#?}"));
    let frames: Vec<&str> = stack["frames"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    assert_eq!(
        frames[..2],
        [
            format!("Scenarios.Exceptions.Throw (Exceptions.cs:{throw_line})"),
            format!("Scenarios.Exceptions.Run (Exceptions.cs:{call_line})"),
        ],
        "{frames:#?}"
    );
}

#[test]
fn names_the_threads_the_app_starts() {
    let dir = scratch("threads");
    let trace = dir.join("t.clrprof");
    record(&trace, &["--mode", "events"], &["threads"]);
    let r = report_json(&trace);
    let threads = r["threads"].as_array().unwrap();
    for i in 1..=5 {
        let name = format!("clrprof-worker-{i}");
        let t = threads
            .iter()
            .find(|t| t["name"] == name.as_str())
            .unwrap_or_else(|| panic!("no thread named {name} in {threads:#?}"));
        assert!(t["os_tid"].as_u64().unwrap_or(0) > 0, "{t:#}");
    }
    assert!(r["events"]["threads_created"].as_u64().unwrap() >= 5);
}

#[test]
fn sees_each_induced_gen2_collection() {
    let dir = scratch("gc");
    let trace = dir.join("t.clrprof");
    record(&trace, &["--mode", "events"], &["gc", "3"]);
    let r = report_json(&trace);
    let gcs = r["gcs"].as_array().unwrap();
    let induced_gen2: Vec<_> = gcs
        .iter()
        .filter(|g| g["reason"] == "induced" && g["generation"] == 2)
        .collect();
    assert_eq!(induced_gen2.len(), 3, "{gcs:#?}");
    for g in induced_gen2 {
        assert!(g["pause_ns"].as_u64().unwrap() > 0, "{g:#}");
    }
}

/// Sample mode records GCs but not the suspensions around them: the text report must
/// not show a pause of 0 ns for each. It leads with what sample mode measured, the CPU;
/// the GCs come after, their rows only with `--all`.
#[test]
fn gc_pauses_that_were_not_recorded_are_not_shown_as_zero() {
    let dir = scratch("gc-no-pauses");
    let trace = dir.join("t.clrprof");
    record(&trace, &["--mode", "sample"], &["gc", "3"]);
    let short = report_text(&trace);
    let at = |t: &str, what: &str| t.find(what).unwrap_or_else(|| panic!("{what}: {t}"));
    assert!(
        at(&short, "\nSamples: ") < at(&short, "\nEvents"),
        "{short}"
    );
    assert!(
        at(&short, "CPU by function") < at(&short, "\nGarbage collections"),
        "{short}"
    );
    assert!(short.contains("pauses not recorded"), "{short}");
    assert!(
        !short.contains(" reason ") && short.contains("`report --all`"),
        "no per-GC rows without their pauses: {short}"
    );
    let text = report_text_with(&trace, &["--all"]);
    assert!(text.contains("pauses not recorded"), "{text}");
    let rows: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.contains("reason") || !l.contains("pause"))
        .skip(1)
        .take_while(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
        .collect();
    assert!(rows.len() >= 3, "{text}");
    for row in rows {
        let cols: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cols[3], "-", "{row}");
    }
}

#[test]
fn lists_the_app_classes_it_loads() {
    let dir = scratch("classes");
    let trace = dir.join("t.clrprof");
    record(&trace, &["--mode", "events"], &["classes"]);
    let r = report_json(&trace);
    let classes: Vec<&str> = r["classes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c.as_str())
        .collect();
    for want in [
        "Scenarios.Known.Alpha",
        "Scenarios.Known.Beta",
        "Scenarios.Known.Gamma<System.Int32>",
        "Scenarios.Known.Outer+Inner",
    ] {
        assert!(
            classes.contains(&want),
            "{want} missing from {} classes",
            classes.len()
        );
    }
    let modules = r["modules"].as_array().unwrap();
    assert!(
        modules
            .iter()
            .any(|m| m["path"].as_str().unwrap().ends_with("Scenarios.dll"))
    );
    assert!(modules.iter().any(|m| {
        m["path"]
            .as_str()
            .unwrap()
            .ends_with("System.Private.CoreLib.dll")
    }));
}

#[test]
fn counts_allocations_by_class_when_asked() {
    let dir = scratch("alloc");
    let trace = dir.join("t.clrprof");
    record(
        &trace,
        &["--mode", "events", "--events", "default,alloc"],
        &["alloc", "10000"],
    );
    let r = report_json(&trace);
    let allocs = r["allocations"].as_array().unwrap();
    let known = allocs
        .iter()
        .find(|a| a["class"] == "Scenarios.Known.Allocated")
        .unwrap_or_else(|| panic!("no Scenarios.Known.Allocated in {allocs:#?}"));
    assert_eq!(known["count"], 10000);
}

#[test]
fn records_managed_native_transitions_when_asked() {
    let dir = scratch("transitions");
    let trace = dir.join("t.clrprof");
    // Console output goes through P/Invokes into the runtime's native shims.
    record(
        &trace,
        &["--mode", "events", "--events", "threads,transitions"],
        &["exceptions", "1"],
    );
    let r = report_json(&trace);
    assert!(
        r["events"]["transitions"].as_u64().unwrap() > 0,
        "{:#}",
        r["events"]
    );
    // Groups that were not asked for stay empty.
    assert_eq!(r["events"]["classes_loaded"], 0);
    assert_eq!(r["events"]["exceptions_thrown"], 0);
}
