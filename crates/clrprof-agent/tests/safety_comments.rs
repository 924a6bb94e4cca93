//! Every `// SAFETY:` comment of the agent names the rule it relies on, one of the agent's
//! rules in docs/safety.md (`### A1 — …`), as `// SAFETY: (A3) …`; and every rule there is
//! cited somewhere, so the list and the code stay one.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The agent's rules: the `N` of each `### AN — …` heading.
fn rules() -> BTreeSet<u32> {
    let doc = fs::read_to_string(crate_dir().join("../../docs/safety.md")).unwrap();
    doc.lines()
        .filter_map(|l| l.strip_prefix("### A"))
        .filter_map(|l| l.split_whitespace().next()?.parse().ok())
        .collect()
}

/// The rule a `// SAFETY: (AN) …` line cites.
fn cited(line: &str) -> Option<u32> {
    let rest = line.trim_start().strip_prefix("// SAFETY: (A")?;
    rest[..rest.find(')')?].parse().ok()
}

#[test]
fn every_safety_comment_cites_an_agent_rule() {
    let rules = rules();
    assert_eq!(
        rules,
        (1..=rules.len() as u32).collect(),
        "docs/safety.md numbers the agent's rules A1, A2, … in order"
    );
    let mut files = Vec::new();
    rust_files(&crate_dir().join("src"), &mut files);
    rust_files(&crate_dir().join("tests"), &mut files);
    files.sort();
    let mut bad = Vec::new();
    let mut used = BTreeSet::new();
    for f in &files {
        let text = fs::read_to_string(f).unwrap();
        for (n, line) in text.lines().enumerate() {
            if !line.trim_start().starts_with("// SAFETY:") {
                continue;
            }
            match cited(line) {
                Some(r) if rules.contains(&r) => {
                    used.insert(r);
                }
                _ => bad.push(format!("{}:{}: {}", f.display(), n + 1, line.trim())),
            }
        }
    }
    assert!(
        bad.is_empty(),
        "SAFETY comments that cite no rule of docs/safety.md (write `// SAFETY: (AN) …`):\n{}",
        bad.join("\n")
    );
    let unused: Vec<_> = rules.difference(&used).collect();
    assert!(
        unused.is_empty(),
        "rules no SAFETY comment cites: {unused:?}"
    );
}
