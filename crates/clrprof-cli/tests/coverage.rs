//! `clrprof coverage` on the real runtime (docs/coverage.md): apps/Coverage's lines say
//! what one run executes (`// hit`, `// miss`, `br COVERED/TOTAL`), and the report must say
//! exactly that; the app computes and prints the same with and without coverage; its files
//! are the same bytes after the run; a crash keeps what was counted; bad input gets a
//! clear word.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::{clrprof, coverage_app, scratch};
use serde_json::Value;

/// Line → (hit, Some((covered, total)) branches) from the source's markers.
fn expected(source: &Path) -> BTreeMap<u64, (bool, Option<(u64, u64)>)> {
    let text = std::fs::read_to_string(source).unwrap();
    let mut out = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let Some((_, tag)) = line.rsplit_once("// ") else {
            continue;
        };
        let mut words = tag.split_whitespace();
        let hit = match words.next() {
            Some("hit") => true,
            Some("miss") => false,
            _ => continue,
        };
        let br = match (words.next(), words.next()) {
            (Some("br"), Some(ct)) => {
                let (c, t) = ct.split_once('/').unwrap();
                Some((c.parse().unwrap(), t.parse().unwrap()))
            }
            _ => None,
        };
        out.insert(i as u64 + 1, (hit, br));
    }
    out
}

/// The report's lines of the file ending in `suffix`, in the marker form.
fn measured(report: &Value, suffix: &str) -> BTreeMap<u64, (bool, Option<(u64, u64)>)> {
    let file = report["assemblies"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|a| a["files"].as_array().unwrap())
        .find(|f| f["path"].as_str().unwrap().ends_with(suffix))
        .unwrap_or_else(|| panic!("no file {suffix} in {report:#}"));
    file["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            let br = l["branches"].as_array().unwrap();
            let b = (!br.is_empty()).then(|| {
                (
                    br.iter()
                        .filter(|b| b["hits"].as_u64().unwrap() > 0)
                        .count() as u64,
                    br.len() as u64,
                )
            });
            (
                l["line"].as_u64().unwrap(),
                (l["hits"].as_u64().unwrap() > 0, b),
            )
        })
        .collect()
}

fn files_of(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let p = e.unwrap().path();
            p.is_file().then(|| {
                (
                    p.file_name().unwrap().to_string_lossy().into_owned(),
                    std::fs::read(&p).unwrap(),
                )
            })
        })
        .collect()
}

#[test]
fn startup_coverage_reports_exactly_the_lines_and_branches_run() {
    let app = clrprof_testkit::app("Coverage");
    let dir = scratch("coverage-startup");
    let before = files_of(&app.dir);
    let plain = app.command(&[]).output().unwrap();
    assert!(plain.status.success());
    let (out, report) = coverage_app(&app, &dir, &[], &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // The app computes and prints the same under coverage.
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&plain.stdout)
    );
    let source = clrprof_testkit::workspace_root().join("apps/Coverage/Program.cs");
    let want = expected(&source);
    let got = measured(&report, "apps/Coverage/Program.cs");
    let diff: Vec<String> = want
        .keys()
        .chain(got.keys())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .filter(|l| want.get(l) != got.get(l))
        .map(|l| {
            format!(
                "line {l}: source says {:?}, report {:?}",
                want.get(l),
                got.get(l)
            )
        })
        .collect();
    assert!(diff.is_empty(), "{}\n{stderr}", diff.join("\n"));
    assert_eq!(report["ended_normally"], true);
    assert_eq!(report["processes"].as_array().unwrap().len(), 1);
    // The never-called method is there, with no hit.
    let never = report["assemblies"][0]["methods"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "NeverCalled")
        .unwrap();
    assert_eq!(never["hits"], 0);
    assert_eq!(never["class"], "Coverage.Branches");
    // No file of the app changed.
    assert!(files_of(&app.dir) == before, "the app's files changed");
}

#[test]
fn a_crashed_process_still_reports_its_counted_lines() {
    let app = clrprof_testkit::app("Coverage");
    let dir = scratch("coverage-crash");
    let (out, report) = coverage_app(&app, &dir, &[], &["crash"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "FailFast ends the app: {stderr}");
    assert!(stderr.contains("ended abnormally"), "{stderr}");
    assert_eq!(report["ended_normally"], false, "{stderr}");
    let got = measured(&report, "apps/Coverage/Program.cs");
    let source =
        std::fs::read_to_string(clrprof_testkit::workspace_root().join("apps/Coverage/Program.cs"))
            .unwrap();
    let line_of = |needle: &str| {
        source
            .lines()
            .position(|l| l.contains(needle))
            .map(|i| i as u64 + 1)
            .unwrap()
    };
    // The crash branch ran up to FailFast; the normal end did not.
    assert!(got[&line_of("Console.Out.Flush()")].0, "{got:?}");
    assert!(got[&line_of("Environment.FailFast")].0, "{got:?}");
    assert!(!got[&line_of("return 0;")].0, "{got:?}");
    assert!(got[&line_of("sink.Add(\"big\")")].0, "{got:?}");
}

#[test]
fn a_command_without_dotnet_is_a_clear_error() {
    let dir = scratch("coverage-none");
    let out = clrprof()
        .arg("coverage")
        .arg("-o")
        .arg(dir.join("c.xml"))
        .args(["--", "/bin/true"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("no .NET process ran under coverage"),
        "{stderr}"
    );
    assert!(!dir.join("c.xml").exists());
}

/// A copy of the app in `dir` (its files are never changed in place), whose DLL's CodeView
/// entry names a PDB path that does not exist (so the only PDB the reader can find is the
/// one beside the copy, not the one the build left in its folder).
fn copy_app(app: &clrprof_testkit::BuiltApp, dir: &Path) -> clrprof_testkit::BuiltApp {
    for (name, mut bytes) in files_of(&app.dir) {
        if name == "Coverage.dll" {
            let at = bytes.windows(4).position(|w| w == b"RSDS").unwrap() + 24;
            assert_eq!(bytes[at], b'/', "an absolute CodeView path");
            bytes[at] = b'X';
        }
        std::fs::write(dir.join(name), bytes).unwrap();
    }
    clrprof_testkit::BuiltApp {
        dll: dir.join(app.dll.file_name().unwrap()),
        dir: dir.to_path_buf(),
        ..app.clone()
    }
}

#[test]
fn without_a_pdb_or_with_another_builds_pdb_the_assembly_is_not_measured() {
    let app = clrprof_testkit::app("Coverage");
    let dir = scratch("coverage-no-pdb");
    let copy = copy_app(&app, &dir);
    std::fs::remove_file(dir.join("Coverage.pdb")).unwrap();
    let (out, report) = coverage_app(&copy, &dir, &[], &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        report["assemblies"].as_array().unwrap().len(),
        0,
        "{report:#}"
    );
    let un = &report["unmeasured"][0];
    assert!(
        un["path"].as_str().unwrap().ends_with("Coverage.dll"),
        "{report:#}"
    );
    assert!(
        un["reason"].as_str().unwrap().starts_with("no PDB"),
        "{report:#}"
    );
    assert!(stderr.contains("not measured:"), "{stderr}");

    // Another build's PDB beside it: refused, never read as this one's.
    let dir = scratch("coverage-wrong-pdb");
    let copy = copy_app(&app, &dir);
    let scenarios = common::scenarios();
    std::fs::copy(
        scenarios.dir.join("Scenarios.pdb"),
        dir.join("Coverage.pdb"),
    )
    .unwrap();
    let (out, report) = coverage_app(&copy, &dir, &[], &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        report["assemblies"].as_array().unwrap().len(),
        0,
        "{report:#}"
    );
    let why = report["unmeasured"][0]["reason"].as_str().unwrap();
    assert!(why.starts_with("PDB refused"), "{why}");
}
