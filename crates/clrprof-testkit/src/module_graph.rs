//! A crate's module graph, read from its source, for the tests that keep every crate of the
//! workspace free of import circles (`tests/module_graph.rs`) and the agent's rooms in
//! their layers (`clrprof-agent/tests/module_graph.rs`).
//!
//! Each file under `src/` is a module (`a.rs` and `a/mod.rs` are `a`, `a/b.rs` is `a::b`;
//! `lib.rs` and `main.rs` are the crate root). A module refers to another through every
//! path that names it: `crate::…` (also `$crate::…` in macros and `sym crate::…` in
//! assembly), `super::…`, `self::…`, a child module's name, the groups of a `use` tree, and
//! a macro defined with `macro_rules!` in another module. A path is resolved to the longest
//! module it names; an item that module re-exports (`pub use`) is followed to the module it
//! comes from. Comments, string and character literals, `#[cfg(test)]` modules and files
//! (`#[cfg(test)] mod tests;`) are left out: a unit-test module is a leaf that nothing
//! imports, so its reaching into another module closes no circle.
//!
//! A circle is between siblings: an edge from `a::x` to `b::y` is an edge `a` → `b` between
//! the children of their common parent, and an edge between a module and its own ancestor
//! or descendant is none (a child module is part of its parent).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// A module's path inside its crate (`[]` is the crate root).
pub type ModPath = Vec<String>;

/// What one crate's source says about its modules.
#[derive(Debug, Default)]
pub struct CrateGraph {
    /// Every module with a file of its own.
    pub modules: BTreeSet<ModPath>,
    /// Module → the modules it refers to (itself left out).
    pub edges: BTreeMap<ModPath, BTreeSet<ModPath>>,
}

impl CrateGraph {
    /// The modules `from` refers to, as `a::b` strings.
    pub fn targets(&self, from: &str) -> BTreeSet<String> {
        let from: ModPath = split(from);
        self.edges
            .get(&from)
            .map(|t| t.iter().map(|p| p.join("::")).collect())
            .unwrap_or_default()
    }

    /// Sibling → siblings it refers to, directly or through a descendant, under every parent.
    pub fn sibling_edges(&self) -> BTreeMap<String, BTreeSet<String>> {
        let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for m in &self.modules {
            g.entry(m.join("::")).or_default();
        }
        for (from, tos) in &self.edges {
            for to in tos {
                let common = from.iter().zip(to).take_while(|(a, b)| a == b).count();
                if common == from.len() || common == to.len() {
                    continue; // an ancestor or a descendant
                }
                let a = from[..=common].join("::");
                let b = to[..=common].join("::");
                g.entry(b.clone()).or_default();
                g.entry(a).or_default().insert(b);
            }
        }
        g
    }

    /// Every circle between sibling modules, each sorted (`a::b` strings).
    pub fn circles(&self) -> Vec<Vec<String>> {
        components(&self.sibling_edges())
            .into_iter()
            .filter(|c| c.len() > 1)
            .collect()
    }
}

fn split(p: &str) -> ModPath {
    p.split("::")
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// The `.rs` files under `dir`, recursively, sorted.
pub fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut entries: Vec<_> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
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

/// The module path of `file` under `src`: `a.rs` and `a/mod.rs` → [a], `a/b.rs` → [a, b].
pub fn module_path(src: &Path, file: &Path) -> ModPath {
    let rel = file.strip_prefix(src).unwrap();
    let mut parts: Vec<String> = rel
        .iter()
        .map(|c| c.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap();
    let stem = last.trim_end_matches(".rs");
    if parts.is_empty() && (stem == "lib" || stem == "main") {
        return parts;
    }
    if stem != "mod" {
        parts.push(stem.to_string());
    }
    parts
}

/// The module graph of the crate whose source is `src`.
pub fn crate_graph(src: &Path) -> CrateGraph {
    // Each module's code, without comments, literals and test modules.
    let mut code: BTreeMap<ModPath, String> = BTreeMap::new();
    for f in rust_files(src) {
        let text = fs::read_to_string(&f).unwrap();
        let m = module_path(src, &f);
        let c = without_test_modules(&code_only(&text));
        code.entry(m).or_default().push_str(&c);
    }
    // Files that are `#[cfg(test)] mod x;` of their parent.
    let mut test_files = BTreeSet::new();
    for (m, c) in &code {
        for name in test_module_files(c) {
            let mut p = m.clone();
            p.push(name);
            test_files.insert(p);
        }
    }
    code.retain(|m, _| !test_files.iter().any(|t| m.starts_with(t)));
    let modules: BTreeSet<ModPath> = code.keys().cloned().collect();

    // Macros defined with `macro_rules!`, by name (only names defined once).
    let mut macros: BTreeMap<String, Vec<ModPath>> = BTreeMap::new();
    for (m, c) in &code {
        let mut at = 0;
        while let Some(p) = c[at..].find("macro_rules!") {
            let start = at + p + "macro_rules!".len();
            let name_at = start + c[start..].len() - c[start..].trim_start().len();
            if let Some(name) = ident_at(c, name_at) {
                macros.entry(name.to_string()).or_default().push(m.clone());
            }
            at = start;
        }
    }

    // Re-exports: module → name → the path it stands for.
    let mut reexports: BTreeMap<ModPath, BTreeMap<String, ModPath>> = BTreeMap::new();
    for (m, c) in &code {
        for path in pub_use_paths(c) {
            if let Some(abs) = absolute(m, &path, &modules)
                && let Some(name) = path.last()
                && name != "*"
                && name != "self"
            {
                reexports
                    .entry(m.clone())
                    .or_default()
                    .insert(name.clone(), abs);
            }
        }
    }

    let mut edges = BTreeMap::new();
    for (m, c) in &code {
        let mut to = BTreeSet::new();
        for path in paths_in(c, m, &modules) {
            if let Some(abs) = absolute(m, &path, &modules) {
                to.insert(resolve(&abs, &modules, &reexports));
            }
        }
        for (name, defs) in &macros {
            if defs.len() == 1 && &defs[0] != m && uses_macro(c, name) {
                to.insert(defs[0].clone());
            }
        }
        to.remove(m);
        edges.insert(m.clone(), to);
    }
    CrateGraph { modules, edges }
}

/// The longest module `path` names, following re-exports.
fn resolve(
    path: &[String],
    modules: &BTreeSet<ModPath>,
    reexports: &BTreeMap<ModPath, BTreeMap<String, ModPath>>,
) -> ModPath {
    let mut path = path.to_vec();
    for _ in 0..8 {
        let len = (0..=path.len())
            .rev()
            .find(|&n| modules.contains(&path[..n].to_vec()))
            .unwrap_or(0);
        let module = path[..len].to_vec();
        let Some(next) = path.get(len) else {
            return module;
        };
        match reexports.get(&module).and_then(|r| r.get(next)) {
            Some(target) if !target.starts_with(&path) => {
                let mut p = target.clone();
                p.extend_from_slice(&path[len + 1..]);
                path = p;
            }
            _ => return module,
        }
    }
    path
}

/// A path as written (`crate::a::b`, `super::x`, `self::y`, `child::z`) made absolute in
/// the crate, or `None` for another crate's path.
fn absolute(here: &[String], path: &[String], modules: &BTreeSet<ModPath>) -> Option<ModPath> {
    let first = path.first()?;
    match first.as_str() {
        "crate" => Some(path[1..].to_vec()),
        "super" => {
            let ups = path.iter().take_while(|s| *s == "super").count();
            if ups > here.len() {
                return None;
            }
            let mut p = here[..here.len() - ups].to_vec();
            p.extend_from_slice(&path[ups..]);
            Some(p)
        }
        "self" => {
            let mut p = here.to_vec();
            p.extend_from_slice(&path[1..]);
            Some(p)
        }
        _ => {
            let mut p = here.to_vec();
            p.push(first.clone());
            modules.contains(&p).then(|| {
                p.extend_from_slice(&path[1..]);
                p
            })
        }
    }
}

/// Every path in the code that starts with `crate`, `super`, `self` or the name of one of
/// `here`'s child modules, with `use` groups expanded.
fn paths_in(code: &str, here: &[String], modules: &BTreeSet<ModPath>) -> Vec<ModPath> {
    let children: BTreeSet<&str> = modules
        .iter()
        .filter(|m| m.len() == here.len() + 1 && m.starts_with(here))
        .map(|m| m.last().unwrap().as_str())
        .collect();
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if !is_ident(b[i]) || (i > 0 && is_ident(b[i - 1])) {
            i += 1;
            continue;
        }
        let word = ident_at(code, i).unwrap();
        let next = i + word.len();
        let preceded_by_path = i >= 2 && &code[i - 2..i] == "::";
        let preceded_by_field = i >= 1 && b[i - 1] == b'.';
        let starts = matches!(word, "crate" | "super" | "self") || children.contains(word);
        if starts && !preceded_by_path && !preceded_by_field && code[next..].starts_with("::") {
            out.extend(use_tree(code, i, Vec::new()).0);
        }
        i = next;
    }
    out
}

/// The paths of the `use` tree (or plain path) at `at`, each prefixed with `prefix`, and
/// where the tree ends.
fn use_tree(code: &str, at: usize, prefix: ModPath) -> (Vec<ModPath>, usize) {
    let b = code.as_bytes();
    let mut k = at;
    while k < b.len() && b[k].is_ascii_whitespace() {
        k += 1;
    }
    if k < b.len() && b[k] == b'{' {
        let mut out = Vec::new();
        k += 1;
        loop {
            while k < b.len() && (b[k].is_ascii_whitespace() || b[k] == b',') {
                k += 1;
            }
            if k >= b.len() || b[k] == b'}' {
                return (out, k + 1);
            }
            let before = k;
            let (paths, end) = use_tree(code, k, prefix.clone());
            out.extend(paths);
            k = end;
            // Skip `as alias` and anything else up to the next `,` or `}` at this depth.
            while k < b.len() && b[k] != b',' && b[k] != b'}' {
                if b[k] == b'{' {
                    // A group the inner tree did not take (should not happen): skip it.
                    let (_, end) = use_tree(code, k, Vec::new());
                    k = end;
                } else {
                    k += 1;
                }
            }
            if k == before {
                k += 1;
            }
        }
    } else if k < b.len() && b[k] == b'*' {
        let mut p = prefix;
        p.push("*".into());
        (vec![p], k + 1)
    } else if let Some(id) = ident_at(code, k) {
        let mut p = prefix;
        let end = k + id.len();
        if id == "self" && !p.is_empty() {
            // `a::{self, …}`: the prefix itself.
        } else {
            p.push(id.to_string());
        }
        let rest = &code[end..];
        let ws = rest.len() - rest.trim_start().len();
        if rest[ws..].starts_with("::") {
            use_tree(code, end + ws + 2, p)
        } else {
            (vec![p], end)
        }
    } else {
        (
            if prefix.is_empty() {
                vec![]
            } else {
                vec![prefix]
            },
            k,
        )
    }
}

/// The paths of every `pub use` (any visibility) tree in the code.
fn pub_use_paths(code: &str) -> Vec<ModPath> {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(p) = code[at..].find("pub") {
        let start = at + p;
        at = start + 3;
        let b = code.as_bytes();
        if (start > 0 && is_ident(b[start - 1])) || b.get(at).is_some_and(|&c| is_ident(c)) {
            continue;
        }
        let mut rest = code[at..].trim_start();
        if rest.starts_with('(') {
            let Some(close) = rest.find(')') else {
                continue;
            };
            rest = rest[close + 1..].trim_start();
        }
        if let Some(tree) = rest.strip_prefix("use")
            && tree.starts_with(|c: char| c.is_ascii_whitespace())
        {
            let tree_at = code.len() - tree.len();
            out.extend(use_tree(code, tree_at, Vec::new()).0);
        }
    }
    out
}

/// The names of `#[cfg(test)] mod NAME;` declarations (unit tests in a file of their own).
fn test_module_files(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(p) = code[at..].find("#[cfg(test)]") {
        let start = at + p + "#[cfg(test)]".len();
        at = start;
        let rest = code[start..].trim_start();
        let rest = rest.strip_prefix("pub ").unwrap_or(rest).trim_start();
        if let Some(decl) = rest.strip_prefix("mod ") {
            let decl = decl.trim_start();
            let at_name = code.len() - decl.len();
            if let Some(name) = ident_at(code, at_name)
                && decl[name.len()..].trim_start().starts_with(';')
            {
                out.push(name.to_string());
            }
        }
    }
    out
}

/// Whether the code invokes `name!` (not as another path's last segment).
fn uses_macro(code: &str, name: &str) -> bool {
    let b = code.as_bytes();
    let mut at = 0;
    while let Some(p) = code[at..].find(name) {
        let start = at + p;
        let end = start + name.len();
        at = end;
        let before_ok = start == 0 || !is_ident(b[start - 1]);
        let after = b.get(end).copied();
        let defining = code[..start].trim_end().ends_with("macro_rules!");
        if before_ok && after == Some(b'!') && !defining {
            return true;
        }
    }
    false
}

/// The source with comments, string literals and character literals blanked out (so
/// that nothing in them reads as a path), lines kept.
pub fn code_only(text: &str) -> String {
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
        } else if (rest[0] == b'r' || rest[0] == b'b')
            && rest.len() > 1
            && (rest[1] == b'"' || rest[1] == b'#' || (rest[0] == b'b' && rest[1] == b'r'))
            && (i == 0 || !is_ident(b[i - 1]))
        {
            // Raw string: r"…", r#"…"#, br"…"; a byte string b"…" is the plain case below.
            let skip = if rest.starts_with(b"br") { 2 } else { 1 };
            if rest[0] == b'b' && skip == 1 {
                out.push(rest[0]);
                i += 1;
                continue;
            }
            let hashes = rest[skip..].iter().take_while(|&&c| c == b'#').count();
            if rest.get(skip + hashes) != Some(&b'"') {
                out.push(rest[0]);
                i += 1;
                continue;
            }
            let mut close = vec![b'"'];
            close.extend(std::iter::repeat_n(b'#', hashes));
            let body = skip + 1 + hashes;
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

/// The code with every `#[cfg(test)]` (or `#[cfg(all(test, …))]`) inline module removed.
pub fn without_test_modules(code: &str) -> String {
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
            && let Some(open) = code[item_at..].find(['{', ';'])
            && code.as_bytes()[item_at + open] == b'{'
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
pub fn ident_at(code: &str, at: usize) -> Option<&str> {
    let b = code.as_bytes();
    let len = b.get(at..)?.iter().take_while(|&&c| is_ident(c)).count();
    (len > 0).then(|| &code[at..at + len])
}

/// Strongly connected components (Tarjan), each sorted.
pub fn components(g: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
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
        for w in s.g.get(v).into_iter().flatten() {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, files: &[(&str, &str)]) {
        for (path, text) in files {
            let p = dir.join(path);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, text).unwrap();
        }
    }

    fn temp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("modgraph-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn sees_the_ways_a_module_names_another() {
        let d = temp("ways");
        write(
            &d,
            &[
                ("lib.rs", "mod a; mod b; mod c; mod d; mod e; mod out;"),
                (
                    "a.rs",
                    "use crate::{b::{self, X}, c};\nfn f() { self::g(); }",
                ),
                ("b.rs", "pub fn h() { super::d::k(); }"),
                ("c.rs", "macro_rules! m { () => {} }"),
                ("d.rs", "fn k() { m!(); crate::out::Slot::new(); }"),
                (
                    "e.rs",
                    "fn f() { let s = \"crate::a\"; } // crate::b\n#[cfg(test)]\nmod tests { use crate::c; }",
                ),
                ("out/mod.rs", "mod ring; mod slot; pub use slot::Slot;"),
                ("out/ring.rs", "use super::Slot;"),
                ("out/slot.rs", "pub struct Slot;"),
            ],
        );
        let g = crate_graph(&d);
        assert_eq!(g.targets("a"), ["b", "c"].map(String::from).into());
        assert_eq!(g.targets("b"), ["d"].map(String::from).into());
        assert_eq!(g.targets("d"), ["c", "out::slot"].map(String::from).into());
        assert!(g.targets("e").is_empty(), "{:?}", g.targets("e"));
        assert_eq!(
            g.targets("out::ring"),
            ["out::slot"].map(String::from).into()
        );
        assert!(g.circles().is_empty());
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn finds_circles_between_siblings_only() {
        let d = temp("circles");
        write(
            &d,
            &[
                ("lib.rs", "mod a; mod b; mod p;"),
                ("a.rs", "use crate::b::x;"),
                ("b/mod.rs", "mod x;"),
                ("b/x.rs", "fn f() { crate::a::g(); super::super::p::h(); }"),
                ("p/mod.rs", "mod q; mod r; fn h() { q::f(); }"),
                ("p/q.rs", "use super::r;\nuse super::h;"),
                ("p/r.rs", "#[cfg(test)]\nmod tests;"),
                ("p/r/tests.rs", "use super::super::q;"),
            ],
        );
        let g = crate_graph(&d);
        assert_eq!(g.circles(), vec![vec!["a".to_string(), "b".to_string()]]);
        let _ = fs::remove_dir_all(&d);
    }
}
