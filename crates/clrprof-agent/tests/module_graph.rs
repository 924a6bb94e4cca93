//! The agent's rooms (the top-level modules and folders of `src/`, ARCHITECTURE.md "Inside
//! the agent") import each other without a circle, in the order of the layers that
//! document describes, and only `os` calls libc.
//!
//! The graph is read from the source: an edge A → B for every `crate::B…` path (including
//! `use crate::{B, …}` groups, `$crate::B` in macros and `sym crate::B…` in assembly), every
//! `super::…` path that climbs out of room A into B, and every use of the `log!` macro (an
//! edge to `log`). Comments, string and character literals and `#[cfg(test)]` modules are
//! left out: a unit-test module is a leaf that nothing imports, so its reaching into
//! another room closes no circle. `lib.rs` is the crate root, not a room. Then every
//! strongly connected component must be a single room, except the circles listed in
//! `ALLOWED`. The one circle the agent needs is the ELT assembly and its Rust half (the
//! trampolines call `tracing::hooks`, `tracing::install` hands the trampolines to the
//! runtime), and both live in the `tracing` room, so at room level there is none.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Circles allowed between rooms (each a sorted list of room names).
const ALLOWED: &[&[&str]] = &[];

/// The layers ARCHITECTURE.md describes: a room imports only rooms of later layers.
const LAYERS: &[&[&str]] = &[
    &["callbacks"],
    &["session"],
    &["control", "sampling", "tracing", "heap", "alloc"],
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

/// The `.rs` files under `dir`, recursively, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut entries: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            out.extend(rust_files(&p));
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
    out
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

/// The module path of a file: `src/a.rs` and `src/a/mod.rs` → [a], `src/a/b.rs` → [a, b].
fn module_path(file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src()).unwrap();
    let mut parts: Vec<String> = rel
        .iter()
        .map(|c| c.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap();
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" {
        parts.push(stem.to_string());
    }
    parts
}

/// The source with comments, string literals and character literals blanked out (so
/// that nothing in them reads as a path), lines kept.
fn code_only(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    let blank = |out: &mut Vec<u8>, s: &[u8]| {
        out.extend(s.iter().map(|&c| if c == b'\n' { b'\n' } else { b' ' }));
    };
    while i < b.len() {
        let rest = &b[i..];
        if rest.starts_with(b"//") {
            let end = rest.iter().position(|&c| c == b'\n').unwrap_or(rest.len());
            blank(&mut out, &rest[..end]);
            i += end;
        } else if rest.starts_with(b"/*") {
            let mut depth = 0;
            let mut j = 0;
            while j < rest.len() {
                if rest[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if rest[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blank(&mut out, &rest[..j]);
            i += j;
        } else if rest[0] == b'r'
            && rest.len() > 1
            && (rest[1] == b'"' || rest[1] == b'#')
            && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_'))
        {
            // Raw string: r"…", r#"…"#.
            let hashes = rest[1..].iter().take_while(|&&c| c == b'#').count();
            if rest.get(1 + hashes) != Some(&b'"') {
                out.push(rest[0]);
                i += 1;
                continue;
            }
            let mut close = vec![b'"'];
            close.extend(std::iter::repeat_n(b'#', hashes));
            let body = 2 + hashes;
            let end = rest[body..]
                .windows(close.len())
                .position(|w| w == close.as_slice())
                .map(|p| body + p + close.len())
                .unwrap_or(rest.len());
            blank(&mut out, &rest[..end]);
            i += end;
        } else if rest[0] == b'"' {
            let mut j = 1;
            while j < rest.len() && rest[j] != b'"' {
                j += if rest[j] == b'\\' { 2 } else { 1 };
            }
            let end = (j + 1).min(rest.len());
            blank(&mut out, &rest[..end]);
            i += end;
        } else if rest[0] == b'\'' {
            // A character literal ('x', '\n', '\''), else a lifetime or label.
            let len = if rest.get(1) == Some(&b'\\') {
                // '\n', '\'', '\u{…}': the quote after the escaped character.
                rest.get(3..)
                    .and_then(|r| r.iter().position(|&c| c == b'\''))
                    .map(|p| p + 4)
            } else {
                // `i + 1` is a character boundary: `'` is ASCII.
                text[i + 1..].chars().next().and_then(|c| {
                    let after = 1 + c.len_utf8();
                    (rest.get(after) == Some(&b'\'')).then_some(after + 1)
                })
            };
            match len {
                Some(n) => {
                    blank(&mut out, &rest[..n]);
                    i += n;
                }
                None => {
                    out.push(b'\'');
                    i += 1;
                }
            }
        } else {
            out.push(rest[0]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// The code with every `#[cfg(test)]` (or `#[cfg(all(test, …))]`) module removed.
fn without_test_modules(code: &str) -> String {
    let b = code.as_bytes();
    let mut out = String::with_capacity(code.len());
    let mut i = 0;
    while let Some(at) = code[i..].find("#[cfg(") {
        let start = i + at;
        out.push_str(&code[i..start]);
        // The attribute's end.
        let mut depth = 0;
        let mut j = start + 1;
        while j < b.len() {
            match b[j] {
                b'[' => depth += 1,
                b']' => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                _ => {}
            }
            j += 1;
        }
        let attr = &code[start..=j.min(b.len() - 1)];
        let tests_only = attr.contains("(test") && !attr.contains("not(test");
        let after = code[j + 1..].trim_start();
        let item_at = b.len() - after.len();
        if tests_only
            && after.starts_with("mod ")
            && let Some(open) = code[item_at..].find('{')
        {
            let mut depth = 0;
            let mut k = item_at + open;
            while k < b.len() {
                match b[k] {
                    b'{' => depth += 1,
                    b'}' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    _ => {}
                }
                k += 1;
            }
            i = k + 1;
            continue;
        }
        out.push_str(&code[start..=j]);
        i = j + 1;
    }
    out.push_str(&code[i..]);
    out
}

/// The identifier starting at `at`, if any.
fn ident_at(code: &str, at: usize) -> Option<&str> {
    let b = code.as_bytes();
    let len = b[at..].iter().take_while(|&&c| is_ident(c)).count();
    (len > 0).then(|| &code[at..at + len])
}

/// The first path segments that `crate::` at `at` (just past the `::`) reaches: one
/// identifier, or the top-level identifiers of a `{…}` group.
fn crate_targets(code: &str, at: usize) -> Vec<String> {
    let b = code.as_bytes();
    let mut k = at;
    while k < b.len() && b[k].is_ascii_whitespace() {
        k += 1;
    }
    if k < b.len() && b[k] == b'{' {
        let mut out = Vec::new();
        let mut depth = 0;
        let mut expect_ident = true;
        while k < b.len() {
            match b[k] {
                b'{' => {
                    depth += 1;
                    expect_ident = depth == 1;
                }
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                b',' if depth == 1 => expect_ident = true,
                c if is_ident(c) && depth == 1 && expect_ident => {
                    let id = ident_at(code, k).unwrap();
                    out.push(id.to_string());
                    k += id.len();
                    expect_ident = false;
                    continue;
                }
                _ => {}
            }
            k += 1;
        }
        out
    } else {
        ident_at(code, k)
            .map(|s| vec![s.to_string()])
            .unwrap_or_default()
    }
}

/// The rooms one file refers to (its own included, when it does).
fn references(file: &Path, rooms: &BTreeSet<String>) -> BTreeSet<String> {
    let text = fs::read_to_string(file).unwrap();
    let code = without_test_modules(&code_only(&text));
    let b = code.as_bytes();
    let here = module_path(file);
    let mut out = BTreeSet::new();
    let mut i = 0;
    while i < b.len() {
        if !is_ident(b[i]) || (i > 0 && is_ident(b[i - 1])) {
            i += 1;
            continue;
        }
        let word = ident_at(&code, i).unwrap();
        let next = i + word.len();
        let follows_path = code[next..].starts_with("::");
        let preceded_by_path = i >= 2 && &code[i - 2..i] == "::";
        match word {
            // `crate::x`, `$crate::x`.
            "crate" if follows_path && !preceded_by_path => {
                out.extend(crate_targets(&code, next + 2));
            }
            // `super::super::x` from a file inside a room.
            "super" if follows_path && !preceded_by_path => {
                let mut ups = 0;
                let mut k = i;
                while code[k..].starts_with("super::") {
                    ups += 1;
                    k += "super::".len();
                }
                if ups <= here.len() {
                    let base = &here[..here.len() - ups];
                    match base.first() {
                        Some(room) => {
                            out.insert(room.clone());
                        }
                        // Climbed to the crate root: the next segment is the room.
                        None => out.extend(crate_targets(&code, k)),
                    }
                }
                i = k;
                continue;
            }
            "log" if code[next..].starts_with('!') && !preceded_by_path => {
                out.insert("log".into());
            }
            _ => {}
        }
        i = next;
    }
    out.retain(|r| rooms.contains(r));
    out
}

/// Room → the other rooms it refers to.
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let rooms = rooms();
    let names: BTreeSet<String> = rooms.keys().cloned().collect();
    rooms
        .iter()
        .map(|(room, files)| {
            let mut to = BTreeSet::new();
            for f in files {
                to.extend(references(f, &names));
            }
            to.remove(room);
            (room.clone(), to)
        })
        .collect()
}

/// Strongly connected components (Tarjan), each sorted.
fn components(g: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct State<'a> {
        g: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        next: usize,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        s.index.insert(v, s.next);
        s.low.insert(v, s.next);
        s.next += 1;
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in &s.g[v] {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if s.on_stack.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = Vec::new();
            loop {
                let w = s.stack.pop().unwrap();
                s.on_stack.remove(w);
                comp.push(w.to_string());
                if w == v {
                    break;
                }
            }
            comp.sort();
            s.out.push(comp);
        }
    }
    let mut s = State {
        g,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in g.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.out
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
    let allowed: Vec<Vec<String>> = ALLOWED
        .iter()
        .map(|c| c.iter().map(|s| s.to_string()).collect())
        .collect();
    let circles: Vec<Vec<String>> = components(&g)
        .into_iter()
        .filter(|c| c.len() > 1 && !allowed.contains(c))
        .collect();
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
    let mut t = crate_targets("{a, b::{c, d}, e::f}", 0);
    t.sort();
    assert_eq!(t, ["a", "b", "e"]);
}
