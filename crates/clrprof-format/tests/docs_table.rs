//! docs/trace-format.md's event table lists exactly the kinds and fields the codec uses.

use clrprof_format::{ExceptionPhase, SuspendPhase, event_kind_table};

fn doc() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/trace-format.md");
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Rows `| id | `Name` | `field: ty`, … | meaning |` of the section "## Event kinds".
fn doc_rows(doc: &str) -> Vec<(u8, String, String)> {
    let start = doc
        .find("\n## Event kinds")
        .expect("an \"## Event kinds\" section");
    let section = &doc[start + 1..];
    let section = &section[..section.find("\n## ").unwrap_or(section.len())];
    section
        .lines()
        .filter_map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            let id = cells.get(1)?.parse::<u8>().ok()?;
            Some((id, cells[2].replace('`', ""), cells[3].replace('`', "")))
        })
        .collect()
}

#[test]
fn event_table_matches_the_codec() {
    let expected: Vec<(u8, String, String)> = event_kind_table()
        .into_iter()
        .map(|k| {
            let fields: Vec<String> = k
                .fields
                .iter()
                .map(|f| format!("{}: {}", f.name, f.ty))
                .collect();
            let fields = if fields.is_empty() {
                "—".to_string()
            } else {
                fields.join(", ")
            };
            (k.id, k.name, fields)
        })
        .collect();
    let found = doc_rows(&doc());
    if found != expected {
        let rows: Vec<String> = expected
            .iter()
            .map(|(id, name, fields)| {
                let fields = fields
                    .split(", ")
                    .map(|f| {
                        if f == "—" {
                            f.to_string()
                        } else {
                            format!("`{f}`")
                        }
                    })
                    .collect::<Vec<_>>()
                    .join(", ");
                format!("| {id} | `{name}` | {fields} | |")
            })
            .collect();
        panic!(
            "docs/trace-format.md's event table is out of date; its rows should be:\n{}",
            rows.join("\n")
        );
    }
}

#[test]
fn enum_values_are_documented() {
    let doc = doc();
    for p in ExceptionPhase::ALL {
        let row = format!("| {} | `{}` |", *p as u8, p.name());
        assert!(doc.contains(&row), "missing row {row}");
    }
    for p in SuspendPhase::ALL {
        let row = format!("| {} | `{}` |", *p as u8, p.name());
        assert!(doc.contains(&row), "missing row {row}");
    }
}

/// The versions a document lists in the first parentheses after `anchor`, e.g.
/// "golden files of every version (1.0, 1.1, 2.0; …)" gives `["1.0", "1.1", "2.0"]`.
fn listed_versions(path: &str, anchor: &str) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let at = text
        .find(anchor)
        .unwrap_or_else(|| panic!("{path}: no \"{anchor}\""));
    let rest = &text[at..];
    let open = rest.find('(').expect("a parenthesised version list") + 1;
    let close = open + rest[open..].find([')', ';']).expect("the list's end");
    rest[open..close]
        .split(',')
        .map(|v| v.trim().to_string())
        .collect()
}

/// ARCHITECTURE.md and the analysis fixtures' README list the format's golden files by
/// version: every listed version has its files, every file is listed, and the version
/// this crate writes is among them.
#[test]
fn docs_list_every_golden_file() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
    let mut on_disk: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter_map(|n| {
            let v = n.strip_prefix("golden-v")?.strip_suffix(".bin")?;
            Some(v.trim_end_matches("-lz4").to_string())
        })
        .collect();
    on_disk.sort();
    on_disk.dedup();
    let current = format!(
        "{}.{}",
        clrprof_format::FORMAT_MAJOR,
        clrprof_format::FORMAT_MINOR
    );
    assert!(on_disk.contains(&current), "no golden file of {current}");
    for (doc, anchor) in [
        ("ARCHITECTURE.md", "golden files of every version"),
        (
            "crates/clrprof-analysis/tests/fixtures/README.md",
            "own golden files",
        ),
    ] {
        let listed = listed_versions(&format!("{root}/{doc}"), anchor);
        for v in &listed {
            for name in [format!("golden-v{v}.bin"), format!("golden-v{v}-lz4.bin")] {
                assert!(
                    std::path::Path::new(dir).join(&name).is_file(),
                    "{doc} lists format {v}, but tests/fixtures/{name} does not exist"
                );
            }
        }
        let mut sorted = listed.clone();
        sorted.sort();
        assert_eq!(
            sorted, on_disk,
            "{doc} lists {listed:?}; golden files exist for {on_disk:?}"
        );
    }
}
