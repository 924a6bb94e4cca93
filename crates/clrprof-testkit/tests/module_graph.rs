//! No crate of the workspace has modules that import each other in a circle (the reader
//! and what counts as a circle: `clrprof_testkit::module_graph`). There is no allow-list:
//! a helper two modules share goes in a leaf module of its own, and a type split over two
//! files becomes a parent and its child.

use std::path::Path;

use clrprof_testkit::module_graph::crate_graph;

#[test]
fn no_import_circle_in_any_crate() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut dirs: Vec<_> = std::fs::read_dir(&crates)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("src").is_dir())
        .collect();
    dirs.sort();
    assert!(dirs.len() >= 10, "the workspace's crates: {dirs:?}");
    let mut found = Vec::new();
    for dir in dirs {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        for circle in crate_graph(&dir.join("src")).circles() {
            found.push(format!("{name}: {}", circle.join(" ↔ ")));
        }
    }
    assert!(
        found.is_empty(),
        "modules that import each other in a circle:\n{}",
        found.join("\n")
    );
}
