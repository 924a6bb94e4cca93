//! `clrprof coverage` on the real runtime (docs/coverage.md): apps/Coverage's lines say
//! what one run executes (`// hit`, `// miss`, `br COVERED/TOTAL`), and the report must say
//! exactly that; the app computes and prints the same with and without coverage; its files
//! are the same bytes after the run; a crash keeps what was counted; bad input gets a
//! clear word.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;

use common::{clrprof, coverage_app, scratch};
use serde_json::Value;

/// Line → (hit, Some((covered, total)) branches) from the source's markers.
fn expected(source: &Path) -> BTreeMap<u64, LineState> {
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
fn measured(report: &Value, suffix: &str) -> BTreeMap<u64, LineState> {
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

/// One Cobertura file's class-level lines: (file name, line) → (hit, branches (covered,
/// total)), merged over the classes that share a file.
/// A line's state: covered, and its branches (covered, total) if any.
type LineState = (bool, Option<(u64, u64)>);

fn cobertura_lines(xml: &str) -> BTreeMap<(String, u64), LineState> {
    fn attr<'a>(line: &'a str, name: &str) -> Option<&'a str> {
        let at = line.find(&format!(" {name}=\""))? + name.len() + 3;
        let rest = &line[at..];
        Some(&rest[..rest.find('"')?])
    }
    let mut out: BTreeMap<(String, u64), LineState> = BTreeMap::new();
    let (mut file, mut in_methods) = (String::new(), false);
    for line in xml.lines() {
        let l = line.trim_start();
        if l.starts_with("<class ") {
            let f = attr(l, "filename").unwrap();
            file = f.rsplit(['/', '\\']).next().unwrap().to_string();
        } else if l.starts_with("<methods") {
            in_methods = !l.ends_with("/>");
        } else if l.starts_with("</methods>") {
            in_methods = false;
        } else if l.starts_with("<line ") && !in_methods {
            let n: u64 = attr(l, "number").unwrap().parse().unwrap();
            let hits: u64 = attr(l, "hits").unwrap().parse().unwrap();
            let br = attr(l, "condition-coverage").map(|c| {
                let inner = &c[c.find('(').unwrap() + 1..c.len() - 1];
                let (a, b) = inner.split_once('/').unwrap();
                (a.parse::<u64>().unwrap(), b.parse::<u64>().unwrap())
            });
            let e = out.entry((file.clone(), n)).or_insert((false, None));
            e.0 |= hits > 0;
            if let Some((a, b)) = br {
                let (c, t) = e.1.unwrap_or((0, 0));
                e.1 = Some((c + a, t + b));
            }
        }
    }
    out
}

/// Every file under `dir`, with its bytes.
fn tree_of(dir: &Path) -> BTreeMap<std::path::PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                todo.push(p);
            } else {
                out.insert(p.clone(), std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// Where the offline NuGet packages are (xunit, Microsoft.NET.Test.Sdk, coverlet.collector):
/// `CLRPROF_NUGET_SOURCE`, else the machine's folder.
fn nuget_source() -> String {
    std::env::var("CLRPROF_NUGET_SOURCE").unwrap_or_else(|_| "/opt/nuget/packages".into())
}

/// The lines where `clrprof coverage` and coverlet are known to differ, and why
/// (docs/coverage.md, "Compared with coverlet").
const KNOWN_DIFFERENCES: &[(&str, u64, &str)] = &[(
    "Cart.cs",
    71,
    "`await Task.Yield()`: coverlet counts the YieldAwaiter's IsCompleted test as a branch \
     (its list of compiler-made awaiter tests names the Task and ValueTask awaiters only); \
     clrprof leaves every awaiter's IsCompleted test out",
)];

#[test]
fn agrees_with_coverlet_on_an_xunit_project() {
    let root = clrprof_testkit::workspace_root();
    let dir = scratch("coverage-oracle");
    // A copy: the build's bin/obj stay out of the source tree.
    for (p, bytes) in tree_of(&root.join("apps/CoverageOracle")) {
        let rel = p.strip_prefix(root.join("apps")).unwrap();
        if rel
            .components()
            .any(|c| c.as_os_str() == "bin" || c.as_os_str() == "obj")
        {
            continue;
        }
        std::fs::create_dir_all(dir.join(rel).parent().unwrap()).unwrap();
        std::fs::write(dir.join(rel), bytes).unwrap();
    }
    std::fs::copy(
        root.join("apps/Directory.Build.props"),
        dir.join("Directory.Build.props"),
    )
    .unwrap();
    let project = dir.join("CoverageOracle/Tests");
    let dotnet = clrprof_testkit::dotnet();
    let quiet = |cmd: &mut std::process::Command| {
        cmd.env("DOTNET_CLI_TELEMETRY_OPTOUT", "1")
            .env("DOTNET_NOLOGO", "1")
            .env("MSBUILDDISABLENODEREUSE", "1");
    };
    let mut build = std::process::Command::new(&dotnet);
    build.arg("build").arg(&project).args([
        "-c",
        "Release",
        "--source",
        &nuget_source(),
        "-nodeReuse:false",
        "-p:UseSharedCompilation=false",
    ]);
    quiet(&mut build);
    let out = build.output().unwrap();
    assert!(
        out.status.success(),
        "build of the xunit project (packages from {}):\n{}",
        nuget_source(),
        String::from_utf8_lossy(&out.stdout)
    );
    let bin = project.join("bin");
    let before = tree_of(&bin);

    let ours = dir.join("ours.xml");
    let mut cmd = clrprof();
    cmd.arg("coverage")
        .arg("-o")
        .arg(&ours)
        .arg("--")
        .arg(&dotnet)
        .arg("test")
        .arg(&project)
        .args(["--no-build", "-c", "Release"]);
    quiet(&mut cmd);
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("assemblies not measured"), "{stderr}");
    // No byte of the test binaries changed.
    assert!(
        tree_of(&bin) == before,
        "clrprof coverage changed the test project's binaries"
    );

    let results = dir.join("coverlet");
    let mut cmd = std::process::Command::new(&dotnet);
    cmd.arg("test")
        .arg(&project)
        .args([
            "--no-build",
            "-c",
            "Release",
            "--collect:XPlat Code Coverage",
        ])
        .arg("--results-directory")
        .arg(&results);
    quiet(&mut cmd);
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let theirs = tree_of(&results)
        .into_iter()
        .find(|(p, _)| p.ends_with("coverage.cobertura.xml"))
        .expect("coverlet's report")
        .1;

    let ours = cobertura_lines(&std::fs::read_to_string(&ours).unwrap());
    let theirs = cobertura_lines(&String::from_utf8(theirs).unwrap());
    assert!(ours.len() > 30, "{ours:?}");
    let mut differences = Vec::new();
    for key in ours
        .keys()
        .chain(theirs.keys())
        .collect::<std::collections::BTreeSet<_>>()
    {
        let (a, b) = (ours.get(key), theirs.get(key));
        // The same instrumented lines, the same covered ones.
        assert_eq!(
            a.map(|x| x.0),
            b.map(|x| x.0),
            "{key:?}: instrumented or covered differently"
        );
        if a != b {
            differences.push((key.0.clone(), key.1, a.cloned(), b.cloned()));
        }
    }
    let known: Vec<(&str, u64)> = KNOWN_DIFFERENCES.iter().map(|k| (k.0, k.1)).collect();
    let found: Vec<(&str, u64)> = differences.iter().map(|d| (d.0.as_str(), d.1)).collect();
    assert_eq!(found, known, "branch differences: {differences:?}");
}

#[test]
fn attached_coverage_reports_the_lines_run_while_attached() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;
    let app = clrprof_testkit::app("Coverage");
    let dir = scratch("coverage-attach");
    let mut target = app
        .command(&["serve"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(target.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let pid: u32 = line.trim().strip_prefix("READY ").unwrap().parse().unwrap();
    let report_path = dir.join("attached.json");
    let mut cov = clrprof()
        .arg("coverage")
        .arg("--pid")
        .arg(pid.to_string())
        .args(["--duration", "8", "-o"])
        .arg(&report_path)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(cov.stderr.take().unwrap());
    let mut said = String::new();
    loop {
        let mut l = String::new();
        assert!(err.read_line(&mut l).unwrap() > 0, "clrprof ended: {said}");
        said.push_str(&l);
        if l.contains("measuring pid") {
            break;
        }
    }
    let mut stdin = target.stdin.take().unwrap();
    writeln!(stdin, "work").unwrap();
    line.clear();
    out.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "DONE three1");
    let status = cov.wait().unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
    assert!(status.success(), "{said}{rest}");
    // The app goes on, unharmed, and computes the same after the measurement.
    writeln!(stdin, "work").unwrap();
    line.clear();
    out.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "DONE three1");
    writeln!(stdin, "quit").unwrap();
    assert!(target.wait().unwrap().success());

    let report = common::json_file(&report_path);
    assert_eq!(report["ended_normally"], true, "{rest}");
    let hit: Vec<u64> = measured(&report, "apps/Coverage/Program.cs")
        .into_iter()
        .filter(|(_, (h, _))| *h)
        .map(|(l, _)| l)
        .collect();
    let source =
        std::fs::read_to_string(clrprof_testkit::workspace_root().join("apps/Coverage/Program.cs"))
            .unwrap();
    let lines = source.lines().collect::<Vec<_>>();
    let line_of = |needle: &str| lines.iter().position(|l| l.contains(needle)).unwrap() as u64 + 1;
    // Exactly what `work` ran while attached: Switch(3) and Loops(2); not what ran before
    // the attach (Main), nor the rest.
    let want: Vec<u64> = [
        "return \"three\"",
        "int total = 0;",
        "for (int i = 0; i < n; i++) // hit br 2/2",
        "total += i;",
        "while (total > 100)",
        "return total;",
    ]
    .iter()
    .map(|n| line_of(n))
    .collect::<std::collections::BTreeSet<_>>()
    .into_iter()
    .collect();
    assert_eq!(hit, want, "{report:#}");
}

#[test]
fn readytorun_code_is_measured_like_jitted_code() {
    // The same app published ReadyToRun (its methods precompiled): the agent refuses the
    // precompiled code of measured methods (JITCachedFunctionSearchStarted), so the lines
    // are exactly those of the JIT-compiled build.
    let app = clrprof_testkit::app("Coverage");
    let dir = scratch("coverage-r2r");
    let root = clrprof_testkit::workspace_root();
    let out = std::process::Command::new(&app.dotnet)
        .arg("publish")
        .arg(root.join("apps/Coverage/Coverage.csproj"))
        .args([
            "-c",
            "Release",
            "-r",
            "linux-x64",
            "--self-contained",
            "false",
        ])
        .args(["-p:PublishReadyToRun=true", "-nodeReuse:false"])
        .args(["-p:UseSharedCompilation=false", "-o"])
        .arg(dir.join("out"))
        .arg("--artifacts-path")
        .arg(dir.join("artifacts"))
        .env("DOTNET_CLI_TELEMETRY_OPTOUT", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "ReadyToRun publish (needs the microsoft.netcore.app.crossgen2 package from the NuGet source):\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let dll = dir.join("out/Coverage.dll");
    let image = std::fs::read(&dll).unwrap();
    assert!(
        image.windows(4).any(|w| w == b"RTR\0"),
        "no ReadyToRun header in {}",
        dll.display()
    );
    let r2r = clrprof_testkit::BuiltApp {
        dll,
        dir: dir.join("out"),
        ..app.clone()
    };
    let (out, report) = coverage_app(&r2r, &dir, &[], &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let source = clrprof_testkit::workspace_root().join("apps/Coverage/Program.cs");
    assert_eq!(
        measured(&report, "apps/Coverage/Program.cs"),
        expected(&source)
    );
}

#[test]
fn a_killed_process_loses_nothing_it_counted() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;
    let app = clrprof_testkit::app("Coverage");
    let dir = scratch("coverage-sigkill");
    let report_path = dir.join("killed.json");
    let mut cmd = clrprof();
    cmd.arg("coverage")
        .args(["-f", "json", "-o"])
        .arg(&report_path)
        .arg("--")
        .arg(&app.dotnet)
        .arg(&app.dll)
        .arg("serve")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    app.env(&mut cmd);
    let mut cov = cmd.spawn().unwrap();
    let mut out = BufReader::new(cov.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let pid: u32 = line.trim().strip_prefix("READY ").unwrap().parse().unwrap();
    let mut stdin = cov.stdin.take().unwrap();
    writeln!(stdin, "work").unwrap();
    line.clear();
    out.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "DONE three1");
    // SIGKILL: no shutdown callback, no flush; the counters are already in the file.
    let killed = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let done = cov.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert_eq!(done.status.code(), Some(128 + 9), "{stderr}");
    assert!(stderr.contains("ended abnormally"), "{stderr}");
    let report = common::json_file(&report_path);
    assert_eq!(report["ended_normally"], false);
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
    assert!(got[&line_of("return \"three\"")].0, "{got:?}");
    assert!(got[&line_of("total += i;")].0, "{got:?}");
    assert!(!got[&line_of("return \"two\"")].0, "{got:?}");
}

#[test]
fn the_processes_of_one_command_are_merged() {
    // Two .NET processes in one command: the default run and a `serve` run with one
    // `work`; each counts its own lines, the report has their union.
    let app = clrprof_testkit::app("Coverage");
    let dir = scratch("coverage-merge");
    let report_path = dir.join("merged.json");
    let script = format!(
        "'{d}' '{dll}' > /dev/null && printf 'work\\nquit\\n' | '{d}' '{dll}' serve > /dev/null",
        d = app.dotnet.display(),
        dll = app.dll.display()
    );
    let mut cmd = clrprof();
    cmd.arg("coverage")
        .args(["-f", "json", "-o"])
        .arg(&report_path)
        .args(["--", "sh", "-c", &script]);
    app.env(&mut cmd);
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let report = common::json_file(&report_path);
    assert_eq!(
        report["processes"].as_array().unwrap().len(),
        2,
        "{report:#}"
    );
    assert_eq!(report["ended_normally"], true);
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
    // Only the serve run returns "three", only the default run adds "big".
    assert!(got[&line_of("return \"three\"")].0, "{got:?}");
    assert!(got[&line_of("sink.Add(\"big\")")].0, "{got:?}");
    assert!(got[&line_of("return Serve.Run(args)")].0, "{got:?}");
    // Both ran Loops: its lines count both runs.
    let file = report["assemblies"][0]["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"].as_str().unwrap().ends_with("Program.cs"))
        .unwrap();
    let total = file["lines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["line"].as_u64() == Some(line_of("int total = 0;")))
        .unwrap();
    assert_eq!(total["hits"], 2);
}

#[test]
fn reportgenerator_reads_our_cobertura() {
    // ReportGenerator (the .NET tool, installed from the NuGet source into the target dir
    // once) reads our Cobertura and counts what we count.
    let app = clrprof_testkit::app("Coverage");
    let dir = scratch("coverage-reportgenerator");
    let tools = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("tools");
    let rg = tools.join("reportgenerator");
    if !rg.exists() {
        let out = std::process::Command::new(&app.dotnet)
            .args(["tool", "install", "dotnet-reportgenerator-globaltool"])
            .args(["--version", "5.5.12", "--tool-path"])
            .arg(&tools)
            .env("DOTNET_CLI_TELEMETRY_OPTOUT", "1")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "installing ReportGenerator (dotnet-reportgenerator-globaltool 5.5.12 from the NuGet source): {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let xml = dir.join("coverage.xml");
    let mut cmd = clrprof();
    cmd.arg("coverage")
        .arg("-o")
        .arg(&xml)
        .arg("--")
        .arg(&app.dotnet)
        .arg(&app.dll);
    app.env(&mut cmd);
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&xml).unwrap();
    let attr = |name: &str| -> u64 {
        let at = text.find(&format!(" {name}=\"")).unwrap() + name.len() + 3;
        text[at..at + text[at..].find('"').unwrap()]
            .parse()
            .unwrap()
    };
    let html = dir.join("html");
    let out = std::process::Command::new(&rg)
        .arg(format!("-reports:{}", xml.display()))
        .arg(format!("-targetdir:{}", html.display()))
        .arg("-reporttypes:Html;TextSummary")
        .env(
            "DOTNET_ROOT",
            app.dotnet_root.clone().unwrap_or_else(|| {
                std::fs::canonicalize(&app.dotnet)
                    .unwrap()
                    .parent()
                    .unwrap()
                    .to_path_buf()
            }),
        )
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let summary = std::fs::read_to_string(html.join("Summary.txt")).unwrap();
    let field = |name: &str| -> u64 {
        let line = summary
            .lines()
            .find(|l| l.trim_start().starts_with(name))
            .unwrap_or_else(|| panic!("no {name} in {summary}"));
        line.rsplit(':').next().unwrap().trim().parse().unwrap()
    };
    assert_eq!(field("Covered lines:"), attr("lines-covered"), "{summary}");
    assert_eq!(field("Coverable lines:"), attr("lines-valid"), "{summary}");
    assert_eq!(
        field("Covered branches:"),
        attr("branches-covered"),
        "{summary}"
    );
    assert_eq!(
        field("Total branches:"),
        attr("branches-valid"),
        "{summary}"
    );
    assert!(html.join("index.html").is_file());
}
