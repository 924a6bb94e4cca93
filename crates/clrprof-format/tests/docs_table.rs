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
