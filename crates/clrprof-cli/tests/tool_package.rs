//! clrprof as a .NET tool: `scripts/pack-tool.sh` packs the debug build the tests use, the
//! package installs into a scratch tool path from that folder, the installed command
//! records and reports an app with nothing from the checkout (no CLRPROF_PROFILER_PATH:
//! it finds the agent inside its own package), and uninstalls.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::*;

fn dotnet_cli(home: &Path) -> Command {
    let mut cmd = Command::new(clrprof_testkit::dotnet());
    // A private NuGet cache: an earlier package of the same version is never reused.
    cmd.env("NUGET_PACKAGES", home.join("nuget-packages"))
        .env("DOTNET_CLI_TELEMETRY_OPTOUT", "1")
        .env("DOTNET_NOLOGO", "1")
        .env("DOTNET_SKIP_FIRST_TIME_EXPERIENCE", "1");
    cmd
}

fn ok(what: &str, out: &std::process::Output) {
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_dotnet_tool_package_installs_records_reports_and_uninstalls() {
    let dir = scratch("tool-package");
    let feed = dir.join("feed");
    let tools = dir.join("tools");
    // Both halves of the debug build exist before packing.
    let agent = clrprof_testkit::profiler_library();
    let target = clrprof_testkit::target_dir();
    assert_eq!(agent.parent(), Some(target.join("debug").as_path()));
    let pack = Command::new(clrprof_testkit::workspace_root().join("scripts/pack-tool.sh"))
        .arg(&feed)
        .arg("--debug")
        .env("CARGO_TARGET_DIR", &target)
        .env("NUGET_PACKAGES", dir.join("nuget-packages"))
        .output()
        .unwrap();
    ok("scripts/pack-tool.sh", &pack);
    let install = dotnet_cli(&dir)
        .args(["tool", "install", "clrprof", "--tool-path"])
        .arg(&tools)
        .arg("--add-source")
        .arg(&feed)
        .output()
        .unwrap();
    ok("dotnet tool install", &install);
    let installed = tools.join("clrprof");

    let version = Command::new(&installed).arg("--version").output().unwrap();
    ok("clrprof --version", &version);
    let v = String::from_utf8_lossy(&version.stdout);
    assert!(
        v.starts_with(&format!("clrprof {} (", env!("CARGO_PKG_VERSION"))),
        "{v}"
    );

    let trace = dir.join("t.clrprof");
    let app = scenarios();
    let rec = Command::new(&installed)
        .env_remove("CLRPROF_PROFILER_PATH")
        .args(["record", "-q", "-o"])
        .arg(&trace)
        .arg("--")
        .arg(&app.dotnet)
        .arg(&app.dll)
        .args(["hot", "1"])
        .output()
        .unwrap();
    ok("the installed clrprof record", &rec);
    let report = Command::new(&installed)
        .env_remove("CLRPROF_PROFILER_PATH")
        .args(["report", "--json"])
        .arg(&trace)
        .output()
        .unwrap();
    ok("the installed clrprof report", &report);
    let r: serde_json::Value = serde_json::from_slice(&report.stdout).unwrap();
    let hot = r["functions"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["name"] == "Scenarios.Hot.HotA");
    assert!(hot, "HotA not sampled through the installed tool");

    let uninstall = dotnet_cli(&dir)
        .args(["tool", "uninstall", "clrprof", "--tool-path"])
        .arg(&tools)
        .output()
        .unwrap();
    ok("dotnet tool uninstall", &uninstall);
    assert!(!installed.exists(), "the command is still installed");
}
