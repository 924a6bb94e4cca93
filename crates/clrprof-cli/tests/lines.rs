//! Source lines (issue #29): the sampler records each frame's IL offset, `report` maps it
//! to a line through the module's portable PDB. The `lines` scenario spins on one marked
//! line of `apps/Scenarios/Scenarios/Lines.cs` in `Lines.Busy`, then on another in the
//! async `Lines.BusyAsync` (its state machine's `MoveNext`); each runs in Tier-0, OSR and
//! Tier-1 code in turn, all of which must give the marked line. One run per runtime (CI
//! time), the sampler and the PDB's kind varied across them: .NET 8 suspend sampler with
//! the PDB beside the DLL, .NET 9 signal sampler with the PDB embedded, .NET 10 signal
//! sampler beside the DLL (moved away and found again with `--pdb-dir`) and suspend
//! sampler embedded.

use crate::common;

use std::path::Path;

use clrprof_testkit::{BuiltApp, Runtime, app_embedded_pdb_on, app_on};
use common::*;
use serde_json::Value;

/// The number of the line of `Lines.cs` that ends with `// <marker>`.
fn marked_line(marker: &str) -> u64 {
    let src = clrprof_testkit::workspace_root().join("apps/Scenarios/Scenarios/Lines.cs");
    let text = std::fs::read_to_string(&src).unwrap();
    let n = text
        .lines()
        .position(|l| l.trim_end().ends_with(&format!("// {marker}")))
        .unwrap_or_else(|| panic!("no line marked {marker} in {}", src.display()));
    n as u64 + 1
}

/// The function row named `name`, else the one whose name contains it.
fn function<'a>(r: &'a Value, name: &str) -> &'a Value {
    let rows = r["functions"].as_array().unwrap();
    rows.iter()
        .find(|f| f["name"] == name)
        .or_else(|| {
            rows.iter()
                .find(|f| f["name"].as_str().is_some_and(|n| n.contains(name)))
        })
        .unwrap_or_else(|| panic!("no function {name} in {:#}", r["functions"]))
}

/// Asserts that at least 90 % of the self samples of the function named `name` are on
/// the line marked `marker`, and that the line table names `Lines.cs`.
fn assert_on_marked_line(r: &Value, name: &str, marker: &str, what: &str) {
    let line = marked_line(marker);
    let f = function(r, name);
    let self_samples = f["self_samples"].as_u64().unwrap();
    // The function table names where the method's body starts.
    assert!(
        f["file"].as_str().is_some_and(|p| p.ends_with("Lines.cs"))
            && f["line"].as_u64().is_some_and(|l| l < line && l + 5 > line),
        "{what}: {f:#}"
    );
    // A starved host may give the app little CPU: the share is what is checked.
    assert!(
        self_samples >= 5,
        "{what}: {name} has {self_samples} self samples"
    );
    let rows: Vec<&Value> = r["lines"]
        .as_array()
        .unwrap_or_else(|| panic!("{what}: no lines in the report"))
        .iter()
        .filter(|l| l["function"] == f["name"])
        .collect();
    let on_line: u64 = rows
        .iter()
        .filter(|l| l["line"] == line && l["file"].as_str().unwrap().ends_with("Lines.cs"))
        .map(|l| l["self_samples"].as_u64().unwrap())
        .sum();
    assert!(
        on_line * 10 >= self_samples * 9,
        "{what}: {on_line} of {name}'s {self_samples} self samples on Lines.cs:{line}; rows {rows:#?}"
    );
}

/// Records the `lines` scenario with `sampler` and checks both busy loops' lines.
fn record_lines(app: &BuiltApp, sampler: &str, what: &str) -> (std::path::PathBuf, Value) {
    let _timing = timing_lock();
    let trace = scratch(&format!("lines-{what}")).join("t.clrprof");
    let out = record_app(
        app,
        &trace,
        &["--sampler", sampler, "--rate", "499"],
        &["lines", "2"],
    );
    assert_eq!(results(&out)["lines_seconds"], "2");
    let r = report_json(&trace);
    let runtime = r["trace"]["runtime_version"].as_str().unwrap_or("");
    assert!(
        runtime.starts_with(&format!("{}.", app.runtime.major())),
        "{what}: ran on {runtime}"
    );
    assert_on_marked_line(&r, "Scenarios.Lines.Busy", "busy line", what);
    assert_on_marked_line(&r, "BusyAsync", "async busy line", what);
    // The async method's state machine is named after it (and kept apart from it).
    assert_eq!(
        function(&r, "BusyAsync")["name"],
        "Scenarios.Lines.BusyAsync (MoveNext)",
        "{what}"
    );
    // The text report's section names the line.
    let text = report_text(&trace);
    let busy = format!("Lines.cs:{}", marked_line("busy line"));
    assert!(
        text.contains("CPU by source line") && text.contains(&busy),
        "{what}: {text}"
    );
    (trace, r)
}

/// A copy of the app's build output in `dir`, to move its PDB away.
fn copy_app(app: &BuiltApp, dir: &Path) -> BuiltApp {
    std::fs::create_dir_all(dir).unwrap();
    for e in std::fs::read_dir(&app.dir).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), dir.join(e.file_name())).unwrap();
        }
    }
    // The DLL names the PDB where the compiler wrote it (under the build's intermediate
    // folder), which is the last place looked: point that path elsewhere (same length),
    // so that moving the PDB away from beside the DLL leaves none to find.
    let dll = dir.join(app.dll.file_name().unwrap());
    let mut bytes = std::fs::read(&dll).unwrap();
    let (from, to) = (b"/.artifacts/", b"/.artifactz/");
    let at = bytes
        .windows(from.len())
        .position(|w| w == from)
        .expect("the CodeView path of the DLL");
    bytes[at..at + to.len()].copy_from_slice(to);
    std::fs::write(&dll, bytes).unwrap();
    BuiltApp {
        dll,
        dir: dir.to_path_buf(),
        ..app.clone()
    }
}

#[test]
fn net8_suspend_sampler_pdb_beside_the_dll() {
    let (_, r) = record_lines(
        &app_on("Scenarios", Runtime::Net8),
        "suspend",
        "net8-suspend",
    );
    // `record` appended the lines (one block after the agent's last): the trace still
    // reads whole.
    assert_eq!(r["warnings"], serde_json::json!([]), "{:#}", r["warnings"]);
}

#[test]
fn net9_signal_sampler_embedded_pdb() {
    record_lines(
        &app_embedded_pdb_on("Scenarios", Runtime::Net9),
        "signal",
        "net9-signal-embedded",
    );
}

#[test]
fn net10_suspend_sampler_embedded_pdb() {
    let (trace, _) = record_lines(
        &app_embedded_pdb_on("Scenarios", Runtime::Net10),
        "suspend",
        "net10-suspend-embedded",
    );
    // speedscope names the method's source file and first line.
    let out = trace.with_extension("speedscope.json");
    convert_with(&trace, &["-f", "speedscope", "-o", out.to_str().unwrap()]);
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let busy = v["shared"]["frames"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "Scenarios.Lines.Busy")
        .unwrap_or_else(|| panic!("{v:#}"));
    let line = marked_line("busy line");
    assert!(
        busy["file"]
            .as_str()
            .is_some_and(|f| f.ends_with("Lines.cs"))
            && busy["line"]
                .as_u64()
                .is_some_and(|l| l < line && l + 5 > line),
        "{busy:#}"
    );
}

/// .NET 10, signal sampler, PDB beside the DLL; then the PDB moved to another folder: the
/// trace still shows the same lines (`record` appended them), in place and copied
/// elsewhere; the report lists the module with where it looked, `--source` needs the PDB
/// and finds it again with `--pdb-dir`.
#[test]
fn net10_signal_sampler_pdb_moved_and_found_with_pdb_dir() {
    let dir = scratch("lines-net10-app");
    let app = copy_app(&app_on("Scenarios", Runtime::Net10), &dir.join("app"));
    let (trace, r) = record_lines(&app, "signal", "net10-signal");
    let pdbs = dir.join("pdbs");
    std::fs::create_dir_all(&pdbs).unwrap();
    std::fs::rename(app.dir.join("Scenarios.pdb"), pdbs.join("Scenarios.pdb")).unwrap();

    let gone = report_json(&trace);
    let missing = gone["missing_pdbs"].as_array().unwrap();
    let dll = app.dll.display().to_string();
    let ours = missing
        .iter()
        .find(|m| m["module"] == dll.as_str())
        .unwrap_or_else(|| panic!("{dll} not listed as without a PDB: {missing:#?}"));
    let reason = ours["reason"].as_str().unwrap();
    assert!(
        reason.contains("no PDB found; looked at")
            && reason.contains(&app.dir.join("Scenarios.pdb").display().to_string()),
        "{reason}"
    );
    // The trace carries its lines (`record` appended them from the PDB): the same lines
    // with the PDB gone, and in a copy of the trace elsewhere.
    assert_eq!(gone["lines"], r["lines"], "the trace's own lines");
    // `convert --lines`: the busy loop's frame is `Scenarios.Lines.Busy:<line>`, and it
    // holds at least 90 % of the weight of Busy's leaf frames.
    let folded = dir.join("lines.folded");
    convert_with(
        &trace,
        &["--lines", "-f", "folded", "-o", folded.to_str().unwrap()],
    );
    let folded = std::fs::read_to_string(&folded).unwrap();
    let leaf_weight = |leaf: &str| -> u64 {
        folded
            .lines()
            .filter_map(|l| l.rsplit_once(' '))
            .filter(|(stack, _)| {
                stack
                    .rsplit(';')
                    .next()
                    .is_some_and(|f| f.starts_with(leaf))
            })
            .map(|(_, w)| w.parse::<u64>().unwrap())
            .sum()
    };
    let busy_leaf = format!("Scenarios.Lines.Busy:{}", marked_line("busy line"));
    let (on_line, all) = (
        leaf_weight(&busy_leaf),
        leaf_weight("Scenarios.Lines.Busy:"),
    );
    assert!(
        all > 0 && on_line * 10 >= all * 9,
        "{on_line} of {all}: {folded}"
    );
    let copy = scratch("lines-net10-copy").join("copied.clrprof");
    std::fs::copy(&trace, &copy).unwrap();
    assert_eq!(
        report_json(&copy)["lines"],
        r["lines"],
        "a copied trace's lines"
    );

    // `--source`: the method's lines with the figures beside them, the busy line's text
    // and its samples on the same row.
    let pdb_dir = pdbs.to_str().unwrap();
    let out = clrprof()
        .args(["report", "--source", "*Lines.Busy", "--pdb-dir", pdb_dir])
        .arg(&trace)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listing = String::from_utf8(out.stdout).unwrap();
    let busy_line = marked_line("busy line");
    let row = listing
        .lines()
        .find(|l| l.ends_with("// busy line"))
        .unwrap_or_else(|| panic!("{listing}"));
    assert!(row.contains(&format!(" {busy_line}  ")), "{row}");
    assert!(
        row.split_whitespace().next() != Some("."),
        "the busy line has self samples: {listing}"
    );
    assert!(
        listing
            .lines()
            .any(|l| l.contains("while (Stopwatch.GetTimestamp() < deadline)"))
    );
    // Without the PDB: no listing, and the reason.
    let out = clrprof()
        .args(["report", "--source", "*Lines.Busy"])
        .arg(&trace)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("without a readable PDB"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let found = report_json_with(&trace, &["--pdb-dir", pdb_dir]);
    assert_eq!(found["lines"], r["lines"], "--pdb-dir gives the same lines");
    assert!(
        !found["missing_pdbs"]
            .as_array()
            .is_some_and(|m| m.iter().any(|m| m["module"] == dll.as_str())),
        "{:#}",
        found["missing_pdbs"]
    );
}

/// `record --pid`: an attached recording's trace gains its line table too (read from the
/// PDBs while the target still runs), so it keeps its lines once the PDB is gone. .NET
/// 10, signal sampler, attached to the `lines` scenario during its busy loop.
#[test]
fn net10_attached_recording_keeps_its_lines() {
    let dir = scratch("lines-attach-app");
    let app = copy_app(&app_on("Scenarios", Runtime::Net10), &dir.join("app"));
    let _timing = timing_lock();
    let mut target = app
        // Long enough for a starved machine: the app is killed once recorded.
        .command(&["lines", "60"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = target.id();
    // Busy says where its caller's frame is, by the runtime's own stack trace, as it
    // starts: the oracle of the call-site line below.
    // (The pipe stays open until the end: the app writes its results to it.)
    let mut stdout =
        std::io::BufRead::lines(std::io::BufReader::new(target.stdout.take().unwrap()));
    let call_line = stdout
        .by_ref()
        .map_while(Result::ok)
        .find_map(|l| clrprof_testkit::parse_results(&l).remove("busy_call_line"))
        .expect("busy_call_line");
    wait_for_diagnostics(pid);
    let trace = dir.join("attached.clrprof");
    let out = clrprof()
        .args(["record", "--pid", &pid.to_string(), "--duration", "2"])
        .args(["--sampler", "signal", "--rate", "499", "-o"])
        .arg(&trace)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}; the app: {:?}",
        String::from_utf8_lossy(&out.stderr),
        target.try_wait()
    );
    let _ = target.kill();
    let _ = target.wait();
    drop(stdout);
    let r = report_json(&trace);
    assert_on_marked_line(&r, "Scenarios.Lines.Busy", "busy line", "net10-attached");
    // `report --function`: the call of Busy is made on the line of Run the runtime's own
    // stack trace names. (That is the line before the call's own when the IL stack still
    // holds a value of the earlier statement: the runtime maps code to IL only at
    // stack-empty points; docs/source-lines.md.)
    let b = report_json_with(&trace, &["--function", "Scenarios.Lines.Busy"]);
    let busy = &b["butterfly"]["functions"][0];
    let run = busy["callers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "Scenarios.Lines.Run")
        .unwrap_or_else(|| panic!("{busy:#}"));
    assert_eq!(run["call_site"]["line"].to_string(), call_line, "{run:#}");
    assert!(
        run["call_site"]["file"]
            .as_str()
            .is_some_and(|f| f.ends_with("Lines.cs")),
        "{run:#}"
    );
    std::fs::remove_file(app.dir.join("Scenarios.pdb")).unwrap();
    assert_eq!(
        report_json(&trace)["lines"],
        r["lines"],
        "the attached trace's own lines, with the PDB gone"
    );
}

/// Records the `alloc-lines` scenario with `--alloc` and checks that its allocation
/// samples carry lines: the allocating frame's line and its caller's are those the
/// runtime's own `StackTrace(true)` gives at those points (the scenario prints them), in
/// `report --json`'s `allocation_samples.lines`, in the text report and in `convert
/// --weight alloc-bytes --lines`. Returns the trace and its report.
fn record_alloc_lines(app: &BuiltApp, what: &str) -> (std::path::PathBuf, Value) {
    let dir = scratch(&format!("alloc-lines-{what}"));
    let trace = dir.join("t.clrprof");
    let out = record_app(
        app,
        &trace,
        // (The default event groups: the modules' loads say where their PDBs are.)
        &["--alloc", "--mode", "events"],
        &["alloc-lines", "mb=200"],
    );
    let facts = results(&out);
    let alloc_line: u64 = facts["alloc_line"].parse().unwrap();
    let call_line: u64 = facts["fill_call_line"].parse().unwrap();
    assert_eq!(alloc_line, marked_line("alloc line"), "{what}");
    let r = report_json(&trace);
    let runtime = r["trace"]["runtime_version"].as_str().unwrap_or("");
    assert!(
        runtime.starts_with(&format!("{}.", app.runtime.major())),
        "{what}: ran on {runtime}"
    );
    let a = &r["allocation_samples"];
    let rows = a["lines"]
        .as_array()
        .unwrap_or_else(|| panic!("{what}: no allocation lines in {a:#}"));
    let of = |function: &str| -> Vec<&Value> {
        rows.iter().filter(|l| l["function"] == function).collect()
    };
    let sum =
        |rows: &[&Value], key: &str| -> u64 { rows.iter().map(|l| l[key].as_u64().unwrap()).sum() };
    fn on<'a>(rows: &[&'a Value], line: u64) -> Vec<&'a Value> {
        rows.iter()
            .filter(|l| {
                l["line"] == line && l["file"].as_str().is_some_and(|f| f.ends_with("Lines.cs"))
            })
            .copied()
            .collect()
    }
    // The allocating method's samples: nearly all on the allocating line (as self: it is
    // the nearest app frame of its samples).
    let fill = of("Scenarios.AllocLines.Fill");
    let fill_self = sum(&fill, "self_bytes");
    let fill_on_line = sum(&on(&fill, alloc_line), "self_bytes");
    let est = a["estimated_bytes"].as_u64().unwrap();
    assert!(
        fill_self * 10 >= est * 8 && fill_on_line * 10 >= fill_self * 9,
        "{what}: {fill_on_line} of Fill's {fill_self} self bytes (of {est}) on Lines.cs:{alloc_line}: {rows:#?}"
    );
    // Its caller's frame is on the line of the call, for the same samples.
    let run_on_line = sum(
        &on(&of("Scenarios.AllocLines.Run"), call_line),
        "total_bytes",
    );
    assert!(
        run_on_line * 10 >= fill_on_line * 9,
        "{what}: Run on Lines.cs:{call_line} has {run_on_line} bytes, Fill's line {fill_on_line}: {rows:#?}"
    );
    // The text report's table names the line.
    let text = report_text(&trace);
    assert!(
        text.contains(&format!(
            "Lines.cs:{alloc_line}  (Scenarios.AllocLines.Fill)"
        )),
        "{what}: {text}"
    );
    // The allocation flame graph with lines: Fill's frame on the allocating line, under
    // Run's on the call's line.
    let folded = dir.join("alloc.folded");
    convert_with(
        &trace,
        &[
            "--lines",
            "--weight",
            "alloc-bytes",
            "-f",
            "folded",
            "-o",
            folded.to_str().unwrap(),
        ],
    );
    let folded = std::fs::read_to_string(&folded).unwrap();
    let weight = |tail: &str| -> u64 {
        folded
            .lines()
            .filter_map(|l| l.rsplit_once(' '))
            .filter(|(stack, _)| stack.ends_with(tail) || stack.contains(&format!("{tail};")))
            .map(|(_, w)| w.parse::<u64>().unwrap())
            .sum()
    };
    let fill_frame = format!("Scenarios.AllocLines.Fill:{alloc_line}");
    let (under_run, at_line) = (
        weight(&format!(
            "Scenarios.AllocLines.Run:{call_line};{fill_frame}"
        )),
        weight(&fill_frame),
    );
    assert!(
        at_line > 0 && under_run * 10 >= at_line * 9 && at_line * 10 >= fill_self * 9,
        "{what}: {under_run} under Run of {at_line} at {fill_frame} ({fill_self} self): {folded}"
    );
    (trace, r)
}

/// .NET 10 (`AllocationSampled`), the PDB beside the DLL; then moved away: the trace
/// carries the allocation samples' lines (`record` appended them), so the report shows
/// the same ones.
#[test]
fn net10_allocation_samples_carry_lines_that_travel() {
    let dir = scratch("alloc-lines-net10-app");
    let app = copy_app(&app_on("Scenarios", Runtime::Net10), &dir.join("app"));
    let (trace, r) = record_alloc_lines(&app, "net10");
    std::fs::remove_file(app.dir.join("Scenarios.pdb")).unwrap();
    let gone = report_json(&trace);
    assert_eq!(
        gone["allocation_samples"]["lines"], r["allocation_samples"]["lines"],
        "the trace's own lines, with the PDB gone"
    );
    // `report --no-lines` (the cost bench's baseline) maps nothing, not even from the
    // trace's own line table, and leaves the rest as it was.
    let none = report_json_with(&trace, &["--no-lines"]);
    let a = &none["allocation_samples"];
    assert!(a.get("lines").is_none(), "{a:#}");
    assert_eq!(
        a["estimated_bytes"], r["allocation_samples"]["estimated_bytes"],
        "{a:#}"
    );
}

/// .NET 8 (`GCAllocationTick`, fired inside the GC's allocator), the PDB embedded: the
/// runtime refuses the IL map calls on the allocating thread
/// (`CORPROF_E_UNSUPPORTED_CALL_SEQUENCE`: it may not trigger a GC), so the agent's own
/// thread maps the code the shared maps did not know yet; the lines are the same as on
/// .NET 10, checked the same way.
#[test]
fn net8_allocation_samples_carry_lines_mapped_off_the_allocating_thread() {
    let app = app_embedded_pdb_on("Scenarios", Runtime::Net8);
    let (trace, r) = record_alloc_lines(&app, "net8");
    assert_eq!(r["allocation_samples"]["source"], "AllocationTick");
    // The agent's mapping queue: what it mapped, and the samples it had to leave without
    // lines (none here), counted in the trace.
    let later = &r["allocation_samples"]["positions_mapped_later"];
    assert_eq!(later["queue_full"], 0, "{later:#}");
    assert_eq!(later["left_at_end"], 0, "{later:#}");
    assert!(later["queued"].as_u64().unwrap() > 0, "{later:#}");
    assert_eq!(later["mapped"], later["queued"], "{later:#}");
    assert!(
        !report_text(&trace).contains("allocation samples without lines"),
        "said only when there are some"
    );
}

/// A VB `Async Function`: VB names its state machine `VB$StateMachine_N_BusyAsync`, which
/// C#'s naming rule does not read; the kickoff name comes from the `AsyncStateMachine`
/// attribute of the module (no PDB involved: it is read from the DLL). .NET 10, signal
/// sampler.
#[test]
fn net10_vb_async_method_is_named_after_its_kickoff_from_the_attribute() {
    let app = app_on("VbAsync", Runtime::Net10);
    let _timing = timing_lock();
    let trace = scratch("lines-vb").join("t.clrprof");
    let out = record_app(&app, &trace, &["--rate", "499"], &["2"]);
    assert_eq!(results(&out)["vb_seconds"], "2");
    let r = report_json(&trace);
    let f = function(&r, "BusyAsync");
    assert_eq!(f["name"], "VbAsync.Program.BusyAsync (MoveNext)", "{f:#}");
    assert!(f["self_samples"].as_u64().unwrap() >= 5, "{f:#}");
    // Its lines are its body's, in Program.vb.
    assert!(
        r["lines"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l["function"] == f["name"]
                && l["file"]
                    .as_str()
                    .is_some_and(|p| p.ends_with("Program.vb"))),
        "{:#}",
        r["lines"]
    );
}
