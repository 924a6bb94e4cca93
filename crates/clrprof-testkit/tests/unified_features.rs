//! The profiler library built alone (`cargo build -p clrprof-agent`, which the acceptance
//! tests run to get the `.so`) has the features `cargo test --workspace` gave it, down to
//! every dependency: otherwise that build compiles the agent and its dependencies a
//! second time. `clrprof-workspace-hack`'s Cargo.toml says why; this names what to add
//! there when a new dependency breaks it.

use std::collections::BTreeMap;
use std::process::Command;

use clrprof_testkit::workspace_root;

/// `name version` → its features, as `cargo tree` resolves them for `selection`.
fn features(selection: &[&str]) -> BTreeMap<String, String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .arg("tree")
        .args(selection)
        .args(["-f", "{p} [{f}]", "--prefix", "none"])
        .current_dir(workspace_root())
        .output()
        .expect("cargo tree runs");
    assert!(
        out.status.success(),
        "cargo tree {selection:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut map = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let line = line.trim_end_matches(" (*)");
        let (Some(open), true) = (line.rfind(" ["), line.ends_with(']')) else {
            continue;
        };
        // "name vX.Y.Z (path)" — the name and version identify the package.
        let mut words = line[..open].split_whitespace();
        let (Some(name), Some(version)) = (words.next(), words.next()) else {
            continue;
        };
        map.insert(
            format!("{name} {version}"),
            line[open + 2..line.len() - 1].to_string(),
        );
    }
    map
}

#[test]
fn the_agent_alone_builds_with_the_workspaces_features() {
    let alone = features(&["-p", "clrprof-agent", "-e", "normal,build"]);
    let all = features(&["--workspace", "-e", "normal,build,dev"]);
    assert!(alone.len() > 10, "the agent's dependencies: {alone:?}");
    let differ: Vec<String> = alone
        .iter()
        .filter_map(|(pkg, f)| {
            let w = all.get(pkg)?;
            (w != f).then(|| format!("{pkg}: alone [{f}], in the workspace [{w}]"))
        })
        .collect();
    assert!(
        differ.is_empty(),
        "`cargo build -p clrprof-agent` would compile these with other features than \
         `cargo test --workspace` (and so compile the agent twice); ask for the workspace's \
         features in crates/clrprof-workspace-hack/Cargo.toml:\n{}",
        differ.join("\n")
    );
}
