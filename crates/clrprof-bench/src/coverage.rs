//! `clrprof-bench coverage`: the cost of `clrprof coverage` (docs/coverage.md).
//!
//! 1. The same xunit suite (`apps/CoverageOracle`, built once into a scratch folder) run
//!    by `dotnet test` alone, under `clrprof coverage`, and with coverlet's collector,
//!    in interleaved rounds: wall and CPU time, medians and spreads.
//! 2. ns per counted hit: `Coverage.dll hot N` (the app's own stopwatch around N calls of
//!    a three-line method) with and without coverage, alternating; the extra time over
//!    the counters the report says were incremented in that file.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::rounds::{interleaved, print_cpu_table, spread};

const NUGET: &str = "/opt/nuget/packages";

fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from)? {
        let p = e?.path();
        let name = p.file_name().unwrap();
        if name == "bin" || name == "obj" {
            continue;
        }
        if p.is_dir() {
            copy_tree(&p, &to.join(name))?;
        } else {
            std::fs::copy(&p, to.join(name))?;
        }
    }
    Ok(())
}

/// Builds the oracle's xunit project in `dir`; returns the test project's folder.
fn build_suite(dir: &Path) -> Result<PathBuf> {
    let root = clrprof_testkit::workspace_root();
    let _ = std::fs::remove_dir_all(dir);
    copy_tree(
        &root.join("apps/CoverageOracle"),
        &dir.join("CoverageOracle"),
    )?;
    std::fs::copy(
        root.join("apps/Directory.Build.props"),
        dir.join("Directory.Build.props"),
    )?;
    let project = dir.join("CoverageOracle/Tests");
    let source = std::env::var("CLRPROF_NUGET_SOURCE").unwrap_or_else(|_| NUGET.into());
    let out = Command::new(clrprof_testkit::dotnet())
        .arg("build")
        .arg(&project)
        .args([
            "-c",
            "Release",
            "--source",
            &source,
            "-nodeReuse:false",
            "-p:UseSharedCompilation=false",
        ])
        .output()?;
    if !out.status.success() {
        bail!(
            "building the xunit suite failed:\n{}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
    Ok(project)
}

pub fn run(clrprof: &Path, runs: usize) -> Result<()> {
    let dir = crate::scratch().join("coverage");
    let project = build_suite(&dir)?;
    let dotnet = clrprof_testkit::dotnet();
    let test = |extra: &[&str]| {
        let mut c = Command::new(&dotnet);
        c.arg("test")
            .arg(&project)
            .args(["--no-build", "-c", "Release"])
            .args(extra)
            .env("DOTNET_CLI_TELEMETRY_OPTOUT", "1")
            .env("DOTNET_NOLOGO", "1");
        c
    };
    let report = dir.join("clrprof.xml");
    let results = dir.join("coverlet");
    let plain = || test(&[]);
    let ours = || {
        let mut c = Command::new(clrprof);
        c.arg("coverage")
            .arg("-o")
            .arg(&report)
            .arg("--")
            .arg(&dotnet)
            .arg("test")
            .arg(&project)
            .args(["--no-build", "-c", "Release"]);
        c
    };
    let coverlet = || {
        let mut c = test(&["--collect:XPlat Code Coverage", "--results-directory"]);
        c.arg(&results);
        c
    };
    let configs: [(&str, &dyn Fn() -> Command); 3] = [
        ("dotnet test", &plain),
        ("clrprof coverage -- dotnet test", &ours),
        (
            "dotnet test --collect:\"XPlat Code Coverage\" (coverlet)",
            &coverlet,
        ),
    ];
    println!(
        "{}\nthe xunit suite of apps/CoverageOracle, {runs} interleaved rounds after a warm-up:",
        crate::machine::describe(Some(clrprof))
    );
    let measured = interleaved(runs, &configs, None)?;
    print_cpu_table(&configs, &measured);
    let wall = |i: usize| -> Vec<f64> {
        measured[i]
            .iter()
            .map(|r| r.wall.as_secs_f64() * 1e3)
            .collect()
    };
    let (ours_wall, coverlet_wall) = (spread(&wall(1)), spread(&wall(2)));
    println!(
        "suite wall time: clrprof coverage {:.0} ms (p25–p75 {:.0}–{:.0}), coverlet {:.0} ms ({:.0}–{:.0})",
        ours_wall.0, ours_wall.1, ours_wall.2, coverlet_wall.0, coverlet_wall.1, coverlet_wall.2
    );

    // ns per counted hit.
    let app = clrprof_testkit::app("Coverage");
    let n: u64 = 100_000_000;
    let hot_json = dir.join("hot.json");
    let hot_plain = || {
        let mut c = app.command(&["hot", &n.to_string()]);
        c.env("DOTNET_TieredPGO", "1");
        c
    };
    let hot_cov = || {
        let mut c = Command::new(clrprof);
        c.arg("coverage")
            .args(["-f", "json", "-o"])
            .arg(&hot_json)
            .arg("--")
            .arg(&app.dotnet)
            .arg(&app.dll)
            .args(["hot", &n.to_string()]);
        app.env(&mut c);
        c
    };
    let hot: [(&str, &dyn Fn() -> Command); 2] = [
        ("hot loop", &hot_plain),
        ("hot loop under coverage", &hot_cov),
    ];
    let measured = interleaved(runs, &hot, Some("hot_us"))?;
    let app_ms = |i: usize| -> Vec<f64> {
        measured[i]
            .iter()
            .map(|r| r.app.unwrap().as_secs_f64() * 1e3)
            .collect()
    };
    let (p, c) = (spread(&app_ms(0)), spread(&app_ms(1)));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&hot_json)?)?;
    let file = v["assemblies"][0]["files"]
        .as_array()
        .context("no files in the hot loop's report")?
        .iter()
        .find(|f| f["path"].as_str().is_some_and(|p| p.ends_with("Hot.cs")))
        .context("no Hot.cs in the report")?;
    let mut hits: u64 = 0;
    for l in file["lines"].as_array().unwrap() {
        hits += l["hits"].as_u64().unwrap_or(0);
        for b in l["branches"].as_array().unwrap() {
            hits += b["hits"].as_u64().unwrap_or(0);
        }
    }
    println!(
        "hot loop ({n} calls): {:.0} ms without, {:.0} ms with coverage (p25–p75 {:.0}–{:.0} / {:.0}–{:.0}); \
         {hits} counted hits ({:.1} per call): {:.2} ns per counted hit (the measured method is also never inlined)",
        p.0,
        c.0,
        p.1,
        p.2,
        c.1,
        c.2,
        hits as f64 / n as f64,
        (c.0 - p.0) * 1e6 / hits as f64
    );
    Ok(())
}
