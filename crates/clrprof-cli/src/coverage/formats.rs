//! The coverage report's formats: Cobertura (the structure coverlet writes, which
//! ReportGenerator reads), lcov, JSON and a text summary. Pure: the model in, text out.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::model::{Line, Report, Totals, file_lines, rate};

/// `Format` of `-f`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Cobertura,
    Lcov,
    Json,
    Text,
}

impl Format {
    /// The format an output file's name suggests (`.xml`, `.info`/`.lcov`, `.json`).
    pub fn from_path(p: &std::path::Path) -> Option<Format> {
        match p.extension()?.to_str()? {
            "xml" => Some(Format::Cobertura),
            "info" | "lcov" => Some(Format::Lcov),
            "json" => Some(Format::Json),
            "txt" => Some(Format::Text),
            _ => None,
        }
    }
}

pub fn render(report: &Report, format: Format, timestamp: u64) -> String {
    match format {
        Format::Cobertura => cobertura(report, timestamp),
        Format::Lcov => lcov(report),
        Format::Json => json(report),
        Format::Text => text(report),
    }
}

fn xml(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            c => o.push(c),
        }
    }
    o
}

/// Rates as coverlet writes them (invariant culture, up to 4 decimals, no trailing zeros).
fn r(v: f64) -> String {
    let s = format!("{:.4}", v);
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s.is_empty() { "0".into() } else { s.into() }
}

/// The directory every document lies in (with a trailing `/`), "" when they share none.
fn common_root<'a>(files: impl Iterator<Item = &'a str>) -> String {
    let mut root: Option<Vec<&str>> = None;
    for f in files {
        let dirs: Vec<&str> = f.split('/').collect();
        let dirs = &dirs[..dirs.len().saturating_sub(1)];
        root = Some(match root {
            None => dirs.to_vec(),
            Some(r) => r
                .iter()
                .zip(dirs)
                .take_while(|(a, b)| a == b)
                .map(|(a, _)| *a)
                .collect(),
        });
    }
    match root {
        Some(r) if r.len() > 1 => format!("{}/", r.join("/")),
        _ => String::new(),
    }
}

fn lines_xml(out: &mut String, indent: &str, lines: &BTreeMap<u32, Line>) {
    let _ = writeln!(out, "{indent}<lines>");
    for (n, l) in lines {
        if l.branches.is_empty() {
            let _ = writeln!(
                out,
                "{indent}  <line number=\"{n}\" hits=\"{}\" branch=\"False\" />",
                l.hits
            );
            continue;
        }
        let covered = l.branches.iter().filter(|b| b.hits > 0).count();
        let total = l.branches.len();
        let pct = (100 * covered) / total;
        let _ = writeln!(
            out,
            "{indent}  <line number=\"{n}\" hits=\"{}\" branch=\"True\" condition-coverage=\"{pct}% ({covered}/{total})\">",
            l.hits
        );
        let _ = writeln!(out, "{indent}    <conditions>");
        let mut sites: BTreeMap<u32, (usize, usize)> = BTreeMap::new();
        for b in &l.branches {
            let e = sites.entry(b.offset).or_default();
            e.0 += (b.hits > 0) as usize;
            e.1 += 1;
        }
        for (offset, (c, t)) in sites {
            let _ = writeln!(
                out,
                "{indent}      <condition number=\"{offset}\" type=\"{}\" coverage=\"{}%\" />",
                if t > 2 { "switch" } else { "jump" },
                (100 * c) / t
            );
        }
        let _ = writeln!(out, "{indent}    </conditions>");
        let _ = writeln!(out, "{indent}  </line>");
    }
    let _ = writeln!(out, "{indent}</lines>");
}

fn totals_of(lines: &BTreeMap<u32, Line>) -> Totals {
    let mut t = Totals::default();
    lines.values().for_each(|l| t.add_line(l));
    t
}

/// Cyclomatic complexity from the branch edges: decisions + 1.
fn complexity(lines: &BTreeMap<u32, Line>) -> usize {
    let mut sites = std::collections::BTreeSet::new();
    let mut edges = 0;
    for l in lines.values() {
        for b in &l.branches {
            sites.insert(b.offset);
            edges += 1;
        }
    }
    edges - sites.len() + 1
}

pub fn cobertura(report: &Report, timestamp: u64) -> String {
    let t = report.totals();
    let root = common_root(
        report
            .assemblies
            .iter()
            .flat_map(|a| a.classes.iter().map(|c| c.file.as_str())),
    );
    let rel = |f: &str| f.strip_prefix(root.as_str()).unwrap_or(f).to_string();
    let mut o = String::new();
    o.push_str("<?xml version=\"1.0\" encoding=\"utf-8\"?>\n");
    let _ = writeln!(
        o,
        "<coverage line-rate=\"{}\" branch-rate=\"{}\" version=\"1.9\" timestamp=\"{timestamp}\" lines-covered=\"{}\" lines-valid=\"{}\" branches-covered=\"{}\" branches-valid=\"{}\">",
        r(t.line_rate()),
        r(t.branch_rate()),
        t.lines_covered,
        t.lines_valid,
        t.branches_covered,
        t.branches_valid
    );
    o.push_str("  <sources>\n");
    let _ = writeln!(o, "    <source>{}</source>", xml(&root));
    o.push_str("  </sources>\n  <packages>\n");
    for a in &report.assemblies {
        let mut at = Totals::default();
        for lines in file_lines(a.classes.iter().flat_map(|c| &c.methods)).values() {
            lines.values().for_each(|l| at.add_line(l));
        }
        let _ = writeln!(
            o,
            "    <package name=\"{}\" line-rate=\"{}\" branch-rate=\"{}\" complexity=\"{}\">",
            xml(&a.name),
            r(at.line_rate()),
            r(at.branch_rate()),
            a.classes
                .iter()
                .flat_map(|c| &c.methods)
                .map(|m| m.lines.values().map(complexity).sum::<usize>())
                .sum::<usize>()
        );
        o.push_str("      <classes>\n");
        for c in &a.classes {
            let class_lines = file_lines(c.methods.iter());
            let own = class_lines.get(&c.file).cloned().unwrap_or_default();
            let ct = totals_of(&own);
            let _ = writeln!(
                o,
                "        <class name=\"{}\" filename=\"{}\" line-rate=\"{}\" branch-rate=\"{}\" complexity=\"{}\">",
                xml(&c.name),
                xml(&rel(&c.file)),
                r(ct.line_rate()),
                r(ct.branch_rate()),
                complexity(&own)
            );
            o.push_str("          <methods>\n");
            for m in &c.methods {
                let ml = m.lines.get(&c.file).cloned().unwrap_or_default();
                let mt = totals_of(&ml);
                let _ = writeln!(
                    o,
                    "            <method name=\"{}\" signature=\"{}\" line-rate=\"{}\" branch-rate=\"{}\" complexity=\"{}\">",
                    xml(&m.name),
                    xml(&m.signature),
                    r(mt.line_rate()),
                    r(mt.branch_rate()),
                    complexity(&ml)
                );
                lines_xml(&mut o, "              ", &ml);
                o.push_str("            </method>\n");
            }
            o.push_str("          </methods>\n");
            lines_xml(&mut o, "          ", &own);
            o.push_str("        </class>\n");
        }
        o.push_str("      </classes>\n    </package>\n");
    }
    o.push_str("  </packages>\n</coverage>\n");
    o
}

pub fn lcov(report: &Report) -> String {
    let mut o = String::new();
    for a in &report.assemblies {
        let methods: Vec<_> = a
            .classes
            .iter()
            .flat_map(|c| c.methods.iter().map(move |m| (c, m)))
            .collect();
        let files = file_lines(methods.iter().map(|(_, m)| *m));
        for (file, lines) in &files {
            let _ = writeln!(o, "SF:{file}");
            let mut fnf = 0;
            let mut fnh = 0;
            for (c, m) in &methods {
                if !m.lines.contains_key(file) || c.file != *file {
                    continue;
                }
                let name = format!("{}::{}{}", c.name, m.name, m.signature);
                let _ = writeln!(o, "FN:{},{name}", m.first_line(file));
                let _ = writeln!(o, "FNDA:{},{name}", m.hits);
                fnf += 1;
                fnh += (m.hits > 0) as u32;
            }
            let _ = writeln!(o, "FNF:{fnf}\nFNH:{fnh}");
            let t = totals_of(lines);
            for (n, l) in lines {
                let _ = writeln!(o, "DA:{n},{}", l.hits);
            }
            for (n, l) in lines {
                for b in &l.branches {
                    let taken = if l.hits == 0 {
                        "-".to_string()
                    } else {
                        b.hits.to_string()
                    };
                    let _ = writeln!(o, "BRDA:{n},{},{},{taken}", b.offset, b.path);
                }
            }
            let _ = writeln!(
                o,
                "LF:{}\nLH:{}\nBRF:{}\nBRH:{}\nend_of_record",
                t.lines_valid, t.lines_covered, t.branches_valid, t.branches_covered
            );
        }
    }
    o
}

pub fn json(report: &Report) -> String {
    use serde_json::{Value, json};
    let t = report.totals();
    let assemblies: Vec<Value> = report
        .assemblies
        .iter()
        .map(|a| {
            let files = file_lines(a.classes.iter().flat_map(|c| &c.methods));
            let files: Vec<Value> = files
                .iter()
                .map(|(f, lines)| {
                    let ft = totals_of(lines);
                    json!({
                        "path": f,
                        "lines_valid": ft.lines_valid,
                        "lines_covered": ft.lines_covered,
                        "branches_valid": ft.branches_valid,
                        "branches_covered": ft.branches_covered,
                        "lines": lines.iter().map(|(n, l)| json!({
                            "line": n,
                            "hits": l.hits,
                            "branches": l.branches.iter().map(|b| json!({
                                "offset": b.offset, "path": b.path, "hits": b.hits
                            })).collect::<Vec<_>>(),
                        })).collect::<Vec<_>>(),
                    })
                })
                .collect();
            let methods: Vec<Value> = a
                .classes
                .iter()
                .flat_map(|c| {
                    c.methods.iter().map(move |m| {
                        json!({
                            "class": c.name,
                            "name": m.name,
                            "signature": m.signature,
                            "token": format!("{:#010x}", m.token),
                            "file": c.file,
                            "line": m.first_line(&c.file),
                            "hits": m.hits,
                        })
                    })
                })
                .collect();
            json!({ "name": a.name, "path": a.path, "files": files, "methods": methods })
        })
        .collect();
    let v = json!({
        "format": "clrprof-coverage",
        "version": 1,
        "ended_normally": report.ended_normally(),
        "lines_valid": t.lines_valid,
        "lines_covered": t.lines_covered,
        "branches_valid": t.branches_valid,
        "branches_covered": t.branches_covered,
        "assemblies": assemblies,
        "unmeasured": report.unmeasured.iter().map(|(p, w)| json!({"path": p, "reason": w})).collect::<Vec<_>>(),
        "failed_methods": report.failed.iter().map(|(p, t, w)| json!({"assembly": p, "token": format!("{t:#010x}"), "reason": w})).collect::<Vec<_>>(),
        "dropped_methods": report.dropped,
        "processes": report.processes.iter().map(|p| json!({"pid": p.pid, "command": p.command, "ended_normally": p.ended})).collect::<Vec<_>>(),
    });
    let mut s = serde_json::to_string_pretty(&v).unwrap_or_default();
    s.push('\n');
    s
}

fn pct(covered: u64, valid: u64) -> String {
    format!("{:.1}%", 100.0 * rate(covered, valid))
}

pub fn text(report: &Report) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{:<60} {:>16} {:>16}",
        "assembly / file", "lines", "branches"
    );
    for a in &report.assemblies {
        let files = file_lines(a.classes.iter().flat_map(|c| &c.methods));
        let mut at = Totals::default();
        for lines in files.values() {
            lines.values().for_each(|l| at.add_line(l));
        }
        let cell = |c: u64, v: u64| format!("{} {c}/{v}", pct(c, v));
        let _ = writeln!(
            o,
            "{:<60} {:>16} {:>16}",
            a.name,
            cell(at.lines_covered, at.lines_valid),
            cell(at.branches_covered, at.branches_valid)
        );
        for (f, lines) in &files {
            let t = totals_of(lines);
            let _ = writeln!(
                o,
                "  {:<58} {:>16} {:>16}",
                f,
                cell(t.lines_covered, t.lines_valid),
                cell(t.branches_covered, t.branches_valid)
            );
        }
    }
    let t = report.totals();
    let _ = writeln!(
        o,
        "{:<60} {:>16} {:>16}",
        "total",
        format!(
            "{} {}/{}",
            pct(t.lines_covered, t.lines_valid),
            t.lines_covered,
            t.lines_valid
        ),
        format!(
            "{} {}/{}",
            pct(t.branches_covered, t.branches_valid),
            t.branches_covered,
            t.branches_valid
        )
    );
    for (p, why) in &report.unmeasured {
        let _ = writeln!(o, "not measured: {p}: {why}");
    }
    o
}
