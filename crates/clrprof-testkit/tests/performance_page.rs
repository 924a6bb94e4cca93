//! docs/performance.md stays a reference page: at most 300 lines (the history of each
//! figure is in git, not on the page), and every row of its table of current figures says
//! which commit recorded it and when.

use std::path::Path;

fn page() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/performance.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn performance_page_is_at_most_300_lines() {
    let lines = page().lines().count();
    assert!(
        lines <= 300,
        "docs/performance.md has {lines} lines: keep the current figures and their method, \
         the history belongs in git"
    );
}

#[test]
fn every_current_figure_names_its_commit_and_date() {
    let page = page();
    let start = page
        .find("\n## Current figures")
        .expect("a \"## Current figures\" section");
    let section = &page[start + 1..];
    let section = &section[..section[1..].find("\n## ").map_or(section.len(), |i| i + 1)];
    let rows: Vec<&str> = section
        .lines()
        .filter(|l| l.starts_with('|') && !l.starts_with("|---") && !l.starts_with("| capability"))
        .collect();
    assert!(rows.len() >= 10, "the table's rows: {rows:#?}");
    for row in rows {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        // `| capability | target | figure | command | recorded in |`: the last cell.
        let recorded = cells[cells.len() - 2];
        let (commit, date) = recorded
            .split_once(", ")
            .unwrap_or_else(|| panic!("no \"commit, date\" in {row}"));
        assert!(
            commit.len() >= 7 && commit.chars().all(|c| c.is_ascii_hexdigit()),
            "not a commit: {commit:?} in {row}"
        );
        let d: Vec<&str> = date.split('-').collect();
        assert!(
            d.len() == 3 && d.iter().all(|p| p.chars().all(|c| c.is_ascii_digit())),
            "not a date: {date:?} in {row}"
        );
    }
}
