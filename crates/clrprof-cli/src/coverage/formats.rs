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

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::super::model::{Assembly, Branch, Class, Line, Method, Process, Report};
    use super::*;

    fn line(hits: u64, branches: &[(u32, u32, u64)]) -> Line {
        Line {
            hits,
            branches: branches
                .iter()
                .map(|&(offset, path, hits)| Branch { offset, path, hits })
                .collect(),
        }
    }

    /// Shop: `Cart.Add` ran (line 10 covered, its `if` at 11 taken one way, line 12
    /// not), `Cart.Clear` never ran; one assembly not measured.
    fn report() -> Report {
        let file = "/src/shop/Cart.cs".to_string();
        let add = Method {
            name: "Add".into(),
            signature: "(int)".into(),
            token: 0x0600_0001,
            hits: 3,
            lines: BTreeMap::from([(
                file.clone(),
                BTreeMap::from([
                    (10, line(3, &[])),
                    (11, line(3, &[(4, 0, 3), (4, 1, 0)])),
                    (12, line(0, &[])),
                ]),
            )]),
        };
        let clear = Method {
            name: "Clear".into(),
            signature: "()".into(),
            token: 0x0600_0002,
            hits: 0,
            lines: BTreeMap::from([(file.clone(), BTreeMap::from([(20, line(0, &[]))]))]),
        };
        Report {
            assemblies: vec![Assembly {
                name: "Shop".into(),
                path: "/app/Shop.dll".into(),
                classes: vec![Class {
                    name: "Shop.Cart".into(),
                    file,
                    methods: vec![add, clear],
                }],
            }],
            unmeasured: vec![("/app/Lib.dll".into(), "no PDB: none found".into())],
            failed: vec![],
            dropped: 0,
            processes: vec![Process {
                pid: 7,
                command: "dotnet Shop.dll".into(),
                ended: true,
            }],
        }
    }

    #[test]
    fn cobertura_golden() {
        let want = r#"<?xml version="1.0" encoding="utf-8"?>
<coverage line-rate="0.5" branch-rate="0.5" version="1.9" timestamp="1700000000" lines-covered="2" lines-valid="4" branches-covered="1" branches-valid="2">
  <sources>
    <source>/src/shop/</source>
  </sources>
  <packages>
    <package name="Shop" line-rate="0.5" branch-rate="0.5" complexity="3">
      <classes>
        <class name="Shop.Cart" filename="Cart.cs" line-rate="0.5" branch-rate="0.5" complexity="2">
          <methods>
            <method name="Add" signature="(int)" line-rate="0.6667" branch-rate="0.5" complexity="2">
              <lines>
                <line number="10" hits="3" branch="False" />
                <line number="11" hits="3" branch="True" condition-coverage="50% (1/2)">
                  <conditions>
                    <condition number="4" type="jump" coverage="50%" />
                  </conditions>
                </line>
                <line number="12" hits="0" branch="False" />
              </lines>
            </method>
            <method name="Clear" signature="()" line-rate="0" branch-rate="1" complexity="1">
              <lines>
                <line number="20" hits="0" branch="False" />
              </lines>
            </method>
          </methods>
          <lines>
            <line number="10" hits="3" branch="False" />
            <line number="11" hits="3" branch="True" condition-coverage="50% (1/2)">
              <conditions>
                <condition number="4" type="jump" coverage="50%" />
              </conditions>
            </line>
            <line number="12" hits="0" branch="False" />
            <line number="20" hits="0" branch="False" />
          </lines>
        </class>
      </classes>
    </package>
  </packages>
</coverage>
"#;
        assert_eq!(cobertura(&report(), 1_700_000_000), want);
    }

    #[test]
    fn lcov_golden() {
        let want = "SF:/src/shop/Cart.cs
FN:10,Shop.Cart::Add(int)
FNDA:3,Shop.Cart::Add(int)
FN:20,Shop.Cart::Clear()
FNDA:0,Shop.Cart::Clear()
FNF:2
FNH:1
DA:10,3
DA:11,3
DA:12,0
DA:20,0
BRDA:11,4,0,3
BRDA:11,4,1,0
LF:4
LH:2
BRF:2
BRH:1
end_of_record
";
        assert_eq!(lcov(&report()), want);
    }

    #[test]
    fn text_golden() {
        let t = text(&report());
        let rows: Vec<Vec<&str>> = t.lines().map(|l| l.split_whitespace().collect()).collect();
        assert_eq!(rows[1], ["Shop", "50.0%", "2/4", "50.0%", "1/2"]);
        assert_eq!(
            rows[2],
            ["/src/shop/Cart.cs", "50.0%", "2/4", "50.0%", "1/2"]
        );
        assert_eq!(rows[3], ["total", "50.0%", "2/4", "50.0%", "1/2"]);
        assert_eq!(
            t.lines().nth(4),
            Some("not measured: /app/Lib.dll: no PDB: none found")
        );
    }

    #[test]
    fn json_golden() {
        let v: serde_json::Value = serde_json::from_str(&json(&report())).unwrap();
        assert_eq!(v["lines_valid"], 4);
        assert_eq!(v["lines_covered"], 2);
        assert_eq!(v["branches_valid"], 2);
        assert_eq!(v["ended_normally"], true);
        let f = &v["assemblies"][0]["files"][0];
        assert_eq!(f["path"], "/src/shop/Cart.cs");
        assert_eq!(f["lines"][1]["line"], 11);
        assert_eq!(f["lines"][1]["branches"][1]["hits"], 0);
        let m = &v["assemblies"][0]["methods"][1];
        assert_eq!(
            (
                m["class"].as_str(),
                m["name"].as_str(),
                m["line"].as_u64(),
                m["hits"].as_u64()
            ),
            (Some("Shop.Cart"), Some("Clear"), Some(20), Some(0))
        );
        assert_eq!(v["unmeasured"][0]["path"], "/app/Lib.dll");
    }

    #[test]
    fn xml_escaped_and_rates() {
        assert_eq!(xml("List<T>&\"'"), "List&lt;T&gt;&amp;&quot;&apos;");
        assert_eq!(r(1.0), "1");
        assert_eq!(r(0.0), "0");
        assert_eq!(r(2.0 / 3.0), "0.6667");
        assert_eq!(
            common_root(["/a/b/c.cs", "/a/b/d/e.cs"].into_iter()),
            "/a/b/"
        );
        assert_eq!(common_root(["/x.cs"].into_iter()), "");
    }
}
