//! The CLI's acceptance tests, one binary: every file beside this one is a module of it.
//!
//! One binary rather than one per file: a fresh build links and compiles the shared
//! helpers once instead of two dozen times, and the test harness keeps both cores busy
//! across files instead of idling one while a file's last long test runs. Tests that
//! time the target take `common::timing_lock()`, which now spans every file.
//!
//! Cargo does not discover the files on their own (`autotests = false` in Cargo.toml):
//! `every_test_file_is_a_module` below fails when a file is added without its `mod` line.

mod common;

mod alloc;
mod args;
mod attach;
mod cli_niceties;
mod counts;
mod coverage;
mod crafted;
mod cut_short;
mod events;
mod heap;
mod lines;
mod live;
mod navigation;
mod probes;
mod push;
mod read_ahead;
mod reliability;
mod robustness;
mod runtimes;
mod sample;
mod scale;
mod security;
mod tool_package;
mod trace;
mod webapp;

#[test]
fn every_test_file_is_a_module() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let main = std::fs::read_to_string(dir.join("main.rs")).unwrap();
    let mut missing = Vec::new();
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(m) = name.strip_suffix(".rs")
            && m != "main"
            && !main.lines().any(|l| l == format!("mod {m};"))
        {
            missing.push(name);
        }
    }
    assert!(
        missing.is_empty(),
        "tests/{missing:?} not declared in tests/main.rs: add `mod NAME;` there, or cargo never builds it"
    );
}
