//! The agent's rooms (the top-level modules and folders of `src/`, ARCHITECTURE.md "Inside
//! the agent") import each other without a circle, in the order of the layers that
//! document describes, and only `os` calls libc.
//!
//! The graph is read from the source by `clrprof_testkit::module_graph` (which keeps every
//! crate of the workspace free of circles between sibling modules, the agent's rooms
//! included): an edge A → B for every path from room A that names B (`crate::B…`, `use`
//! groups, `$crate::B` in macros, `sym crate::B…` in assembly, `super::…` climbing out of
//! A, a macro such as `log!` defined in B), comments, literals and `#[cfg(test)]` modules
//! left out. `lib.rs` is the crate root, not a room. Then every
//! strongly connected component must be a single room (there is no allow-list). The one circle the agent needs is the ELT assembly and its Rust half (the
//! trampolines call `tracing::hooks`, `tracing::install` hands the trampolines to the
//! runtime), and both live in the `tracing` room, so at room level there is none.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use clrprof_testkit::module_graph::{
    code_only, components, crate_graph, ident_at, rust_files, without_test_modules,
};

/// The layers ARCHITECTURE.md describes: a room imports only rooms of later layers.
const LAYERS: &[&[&str]] = &[
    &["callbacks"],
    &["session"],
    &[
        "control", "sampling", "tracing", "heap", "alloc", "coverage",
    ],
    &["names", "inspect", "log", "stackwalk"],
    &["config", "output"],
    &["os"],
];

/// The rooms ARCHITECTURE.md names; the test fails if one disappears or is renamed
/// without the document (and this list) following.
const EXPECTED: &[&str] = &[
    "alloc",
    "callbacks",
    "config",
    "control",
    "coverage",
    "heap",
    "inspect",
    "log",
    "names",
    "os",
    "output",
    "sampling",
    "session",
    "stackwalk",
    "tracing",
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Room name → its files (a top-level `x.rs` or everything under `x/`).
fn rooms() -> BTreeMap<String, Vec<PathBuf>> {
    let mut rooms = BTreeMap::new();
    for entry in fs::read_dir(src()).unwrap() {
        let p = entry.unwrap().path();
        let name = p.file_stem().unwrap().to_string_lossy().into_owned();
        if p.is_dir() {
            rooms.insert(name, rust_files(&p));
        } else if p.extension().is_some_and(|e| e == "rs") && name != "lib" {
            rooms.insert(name, vec![p]);
        }
    }
    rooms
}

/// Room → the other rooms it refers to: the crate's module graph
/// (`clrprof_testkit::module_graph`) seen from the top-level modules.
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let crate_graph = crate_graph(&src());
    let mut g: BTreeMap<String, BTreeSet<String>> =
        rooms().into_keys().map(|r| (r, BTreeSet::new())).collect();
    for (from, tos) in &crate_graph.edges {
        let Some(room) = from.first() else { continue };
        for to in tos {
            if let Some(t) = to.first()
                && t != room
            {
                g.get_mut(room).unwrap().insert(t.clone());
            }
        }
    }
    g
}

#[test]
fn the_rooms_are_the_documented_ones() {
    let names: Vec<String> = rooms().into_keys().collect();
    assert_eq!(
        names, EXPECTED,
        "the agent's rooms changed: update ARCHITECTURE.md"
    );
}

#[test]
fn the_graph_reader_sees_known_edges() {
    let g = graph();
    for (from, to) in [
        ("callbacks", "session"),
        ("session", "output"),
        ("tracing", "output"),
        ("sampling", "names"),
        ("sampling", "log"),
        ("log", "config"),
        ("output", "os"),
    ] {
        assert!(g[from].contains(to), "{from} → {to} not found: {g:#?}");
    }
    assert!(g["os"].is_empty(), "os depends on nothing: {:?}", g["os"]);
}

#[test]
fn no_import_circle_between_rooms() {
    let g = graph();
    let circles: Vec<Vec<String>> = components(&g).into_iter().filter(|c| c.len() > 1).collect();
    assert!(
        circles.is_empty(),
        "rooms that import each other in a circle: {circles:?}\nthe graph: {g:#?}"
    );
}

#[test]
fn rooms_import_only_later_layers() {
    let layer = |room: &str| {
        LAYERS
            .iter()
            .position(|l| l.contains(&room))
            .unwrap_or_else(|| panic!("room {room} is in no layer of LAYERS"))
    };
    let mut upward = Vec::new();
    for (from, to) in graph() {
        for t in to {
            if layer(&t) <= layer(&from) {
                upward.push(format!("{from} → {t}"));
            }
        }
    }
    assert!(
        upward.is_empty(),
        "imports against the documented layers (ARCHITECTURE.md): {upward:?}"
    );
}

#[test]
fn only_os_calls_libc() {
    let mut calls = Vec::new();
    for (room, files) in rooms() {
        if room == "os" {
            continue;
        }
        for f in files {
            let text = fs::read_to_string(&f).unwrap();
            let code = without_test_modules(&code_only(&text));
            let mut at = 0;
            while let Some(p) = code[at..].find("libc::") {
                let start = at + p + "libc::".len();
                let name = ident_at(&code, start).unwrap_or("");
                let after = code[start + name.len()..].trim_start();
                if name.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
                    && after.starts_with('(')
                {
                    calls.push(format!("{}: libc::{name}", f.display()));
                }
                at = start;
            }
        }
    }
    assert!(calls.is_empty(), "libc called outside os/: {calls:#?}");
}

#[test]
fn the_reader_skips_comments_strings_and_tests() {
    let code = code_only(
        "let a = \"crate::x\"; // crate::y\n/* crate::z */ let c = '\"'; let q = '\\''; let e = '\\n'; let l: &'static str = r#\"crate::w\"#; crate::v::f();",
    );
    assert!(!code.contains("crate::x") && !code.contains("crate::y"));
    assert!(!code.contains("crate::z") && !code.contains("crate::w"));
    assert!(
        !code.contains('\\'),
        "escaped characters are blanked: {code}"
    );
    assert!(code.contains("'static") && code.contains("crate::v::f()"));
    let code = without_test_modules(
        "use crate::a;\n#[cfg(test)]\nmod tests {\n    use crate::b;\n    fn f() { {} }\n}\nuse crate::c;\n",
    );
    assert!(code.contains("crate::a") && code.contains("crate::c") && !code.contains("crate::b"));
}
