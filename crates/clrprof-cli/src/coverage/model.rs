//! The coverage report model: each process's map and counters from the run directory
//! (written by the agent's `coverage` room), merged per assembly file and mapped back to
//! source lines through the assemblies' portable PDBs.
//!
//! Every method the PDB gives visible sequence points is in the report, run or not (a
//! method never compiled has all its lines at 0 hits); its branch sites come from the
//! agent's map when it was instrumented, else from the image's IL (the same sites the
//! agent would have counted).

use std::collections::{BTreeMap, HashMap};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clrprof_il::coverage::{BranchSite, COUNTER_BYTES, branch_sites_in};
use clrprof_metadata::pdb::find::find_pdb;
use clrprof_metadata::rawmd::pe;
use clrprof_metadata::{MetadataRead, RawMetadata};

/// One branch edge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Branch {
    /// The branch instruction's IL offset.
    pub offset: u32,
    /// 0: fall-through, `i`: the `i`-th target.
    pub path: u32,
    pub hits: u64,
}

/// A source line of a method.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Line {
    pub hits: u64,
    pub branches: Vec<Branch>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Method {
    pub name: String,
    /// `(param, …)`.
    pub signature: String,
    pub token: u32,
    /// Whether the method ran (its body was instrumented and any of its counters moved).
    pub hits: u64,
    /// Source file → line → coverage.
    pub lines: BTreeMap<String, BTreeMap<u32, Line>>,
}

impl Method {
    pub fn first_line(&self, file: &str) -> u32 {
        self.lines
            .get(file)
            .and_then(|l| l.keys().next().copied())
            .unwrap_or(0)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Class {
    /// `Namespace.Outer/Inner`, as coverlet names nested types.
    pub name: String,
    /// The file of its methods' first sequence points.
    pub file: String,
    pub methods: Vec<Method>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Assembly {
    pub name: String,
    pub path: String,
    pub classes: Vec<Class>,
}

/// A process of the run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Process {
    pub pid: u32,
    pub command: String,
    /// Its runtime shut down normally (the map's `end` line).
    pub ended: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    pub assemblies: Vec<Assembly>,
    /// Assemblies loaded and not measured: path, reason.
    pub unmeasured: Vec<(String, String)>,
    /// Methods the agent could not instrument: assembly, token, reason.
    pub failed: Vec<(String, u32, String)>,
    /// Methods left uninstrumented because a process's counters ran out.
    pub dropped: u64,
    pub processes: Vec<Process>,
}

/// Line and branch totals.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    pub lines_valid: u64,
    pub lines_covered: u64,
    pub branches_valid: u64,
    pub branches_covered: u64,
}

impl Totals {
    pub fn add_line(&mut self, l: &Line) {
        self.lines_valid += 1;
        self.lines_covered += (l.hits > 0) as u64;
        self.branches_valid += l.branches.len() as u64;
        self.branches_covered += l.branches.iter().filter(|b| b.hits > 0).count() as u64;
    }
    pub fn line_rate(&self) -> f64 {
        rate(self.lines_covered, self.lines_valid)
    }
    pub fn branch_rate(&self) -> f64 {
        rate(self.branches_covered, self.branches_valid)
    }
}

/// `covered / valid`, 1 when nothing is valid (as coverlet writes it).
pub fn rate(covered: u64, valid: u64) -> f64 {
    if valid == 0 {
        1.0
    } else {
        covered as f64 / valid as f64
    }
}

/// Lines merged over methods (lambdas share their enclosing method's lines): per file.
pub fn file_lines<'a>(
    methods: impl Iterator<Item = &'a Method>,
) -> BTreeMap<String, BTreeMap<u32, Line>> {
    let mut out: BTreeMap<String, BTreeMap<u32, Line>> = BTreeMap::new();
    for m in methods {
        for (file, lines) in &m.lines {
            let f = out.entry(file.clone()).or_default();
            for (n, l) in lines {
                let e = f.entry(*n).or_default();
                e.hits += l.hits;
                e.branches.extend(l.branches.iter().cloned());
            }
        }
    }
    out
}

impl Report {
    pub fn totals(&self) -> Totals {
        let mut t = Totals::default();
        for a in &self.assemblies {
            for lines in file_lines(a.classes.iter().flat_map(|c| &c.methods)).values() {
                lines.values().for_each(|l| t.add_line(l));
            }
        }
        t
    }

    /// Whether every process of the run shut down normally.
    pub fn ended_normally(&self) -> bool {
        self.processes.iter().all(|p| p.ended)
    }
}

/// What one process's map says about a method.
#[derive(Clone, Debug)]
struct Instrumented {
    first: u64,
    points: usize,
    sites: Vec<BranchSite>,
}

/// A method's counts: each sequence point's, and each branch site's paths'.
type Counts = (Vec<u64>, Vec<(BranchSite, Vec<u64>)>);

/// Counters merged per assembly path and method token.
#[derive(Default)]
struct Acc {
    methods: HashMap<u32, Counts>,
}

fn parse_sites(s: &str) -> Option<Vec<BranchSite>> {
    if s.is_empty() {
        return Some(Vec::new());
    }
    s.split(',')
        .map(|p| {
            let (o, n) = p.split_once(':')?;
            Some(BranchSite {
                il_offset: o.parse().ok()?,
                paths: n.parse().ok()?,
            })
        })
        .collect()
}

fn token(s: &str) -> Option<u32> {
    u32::from_str_radix(s.trim_start_matches("0x"), 16).ok()
}

/// Reads every `coverage-<pid>.map` of `dir` with its counters.
pub fn read_run(dir: &Path) -> Result<Report> {
    let mut accs: BTreeMap<String, Acc> = BTreeMap::new();
    let mut report = Report::default();
    let mut maps: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("coverage-") && n.ends_with(".map"))
        })
        .collect();
    maps.sort();
    for map in maps {
        let text =
            std::fs::read_to_string(&map).with_context(|| format!("reading {}", map.display()))?;
        let counters_path = map.with_extension("counters");
        let counters = std::fs::File::open(&counters_path)
            .with_context(|| format!("opening {}", counters_path.display()))?;
        let read = |first: u64, n: usize| -> Vec<u64> {
            let mut buf = vec![0u8; n * COUNTER_BYTES as usize];
            if n > 0 {
                let _ = counters.read_exact_at(&mut buf, first * COUNTER_BYTES);
            }
            buf.chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
                .collect()
        };
        let mut modules: HashMap<u32, String> = HashMap::new();
        let mut process = Process {
            pid: 0,
            command: String::new(),
            ended: false,
        };
        for line in text.lines() {
            let f: Vec<&str> = line.split('\t').collect();
            match f.as_slice() {
                ["clrprof-coverage", _, pid, command] => {
                    process.pid = pid.parse().unwrap_or(0);
                    process.command = command.to_string();
                }
                ["module", index, path, _pdb] => {
                    if let Ok(i) = index.parse() {
                        modules.insert(i, path.to_string());
                        accs.entry(path.to_string()).or_default();
                    }
                }
                ["unmeasured", path, why] if !report.unmeasured.iter().any(|(p, _)| p == path) => {
                    report.unmeasured.push((path.to_string(), why.to_string()));
                }
                ["method", index, tok, first, points, sites] => {
                    let (Some(path), Some(tok), Ok(first), Ok(points), Some(sites)) = (
                        index.parse().ok().and_then(|i: u32| modules.get(&i)),
                        token(tok),
                        first.parse::<u64>(),
                        points.parse::<usize>(),
                        parse_sites(sites),
                    ) else {
                        continue;
                    };
                    let ins = Instrumented {
                        first,
                        points,
                        sites,
                    };
                    let point_hits = read(ins.first, ins.points);
                    let mut next = ins.first + ins.points as u64;
                    let mut branch_hits = Vec::new();
                    for s in &ins.sites {
                        branch_hits.push((s.clone(), read(next, s.paths as usize)));
                        next += s.paths as u64;
                    }
                    let acc = accs.entry(path.clone()).or_default();
                    let e = acc
                        .methods
                        .entry(tok)
                        .or_insert_with(|| (vec![0; ins.points], Vec::new()));
                    for (a, b) in e.0.iter_mut().zip(&point_hits) {
                        *a += b;
                    }
                    if e.1.is_empty() {
                        e.1 = branch_hits;
                    } else {
                        for ((_, a), (_, b)) in e.1.iter_mut().zip(&branch_hits) {
                            for (x, y) in a.iter_mut().zip(b) {
                                *x += y;
                            }
                        }
                    }
                }
                ["failed", index, tok, why] => {
                    if let (Some(path), Some(tok)) = (
                        index.parse().ok().and_then(|i: u32| modules.get(&i)),
                        token(tok),
                    ) {
                        report.failed.push((path.clone(), tok, why.to_string()));
                    }
                }
                ["full", _, _] => report.dropped += 1,
                ["end", ..] => process.ended = true,
                _ => {}
            }
        }
        report.processes.push(process);
    }
    for (path, acc) in accs {
        match assembly(Path::new(&path), &acc) {
            Ok(a) => report.assemblies.push(a),
            Err(e) => report
                .unmeasured
                .push((path.clone(), format!("cannot be reported: {e:#}"))),
        }
    }
    report.assemblies.sort_by(|a, b| a.name.cmp(&b.name));
    report.unmeasured.sort();
    Ok(report)
}

/// One assembly's classes, methods and lines.
fn assembly(path: &Path, acc: &Acc) -> Result<Assembly> {
    let image = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let pdb = find_pdb(path, &[]).map_err(|e| anyhow::anyhow!("{e}"))?.pdb;
    let read = |offset: usize, len: usize| -> Option<&[u8]> {
        image.get(offset..offset.checked_add(len)?)
    };
    let (at, size) = pe::locate(&read, true).map_err(|e| anyhow::anyhow!("{e}"))?;
    let md_bytes = read(at, size).context("metadata range")?;
    let md = RawMetadata::parse(md_bytes).map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut docs: HashMap<u32, String> = HashMap::new();
    let mut classes: BTreeMap<(String, String), Vec<Method>> = BTreeMap::new();
    for row in 1..=pdb.method_count() {
        let tok = 0x0600_0000 | row;
        let Ok(ml) = pdb.sequence_points(tok) else {
            continue;
        };
        let visible: Vec<_> = ml.points.iter().filter(|p| !p.is_hidden()).collect();
        if visible.is_empty() {
            continue;
        }
        let Ok(props) = md.get_method_props(tok) else {
            continue;
        };
        let class = md.type_full_name(props.class).replace('+', "/");
        let signature = clrprof_metadata::sig::parse_method(&props.sig)
            .map(|s| format!("({})", s.format_params(&|t| md.token_name(t))))
            .unwrap_or_else(|_| "()".into());
        let (point_hits, sites): Counts = match acc.methods.get(&tok) {
            Some((p, b)) => (p.clone(), b.clone()),
            None => {
                let sites = method_il(&image, props.code_rva)
                    .and_then(|il| branch_sites_in(il).ok())
                    .unwrap_or_default();
                (
                    vec![0; visible.len()],
                    sites
                        .into_iter()
                        .map(|s| {
                            let n = s.paths as usize;
                            (s, vec![0; n])
                        })
                        .collect(),
                )
            }
        };
        let mut doc_name = |d: u32| -> String {
            docs.entry(d)
                .or_insert_with(|| {
                    pdb.document(d)
                        .map(|d| d.name)
                        .unwrap_or_else(|_| format!("document {d}"))
                })
                .clone()
        };
        let mut lines: BTreeMap<String, BTreeMap<u32, Line>> = BTreeMap::new();
        for (i, p) in visible.iter().enumerate() {
            let hits = point_hits.get(i).copied().unwrap_or(0);
            let f = lines.entry(doc_name(p.document)).or_default();
            for n in p.start_line..=p.end_line.max(p.start_line) {
                f.entry(n).or_default().hits += hits;
            }
        }
        let awaits = method_il(&image, props.code_rva)
            .map(|il| compiler_made(il, &md, &ml))
            .unwrap_or_default();
        for (site, hits) in &sites {
            // The branch belongs to the line of the visible sequence point it lies in or
            // follows (a `switch` on strings or a pattern keeps its tests in hidden code
            // after the statement's point). Not reported: a branch before any visible
            // point (a state machine's dispatch on its state), an `await`'s test of
            // `IsCompleted`, and a test in hidden code of a `finally` (`foreach` and
            // `using` disposing only what is not null): compiler-made, and coverlet
            // leaves them out too.
            if awaits.contains(&site.il_offset) {
                continue;
            }
            let Some(p) = ml.line_at(site.il_offset) else {
                continue;
            };
            let f = lines.entry(doc_name(p.document)).or_default();
            let l = f.entry(p.start_line).or_default();
            for (path, h) in hits.iter().enumerate() {
                l.branches.push(Branch {
                    offset: site.il_offset,
                    path: path as u32,
                    hits: *h,
                });
            }
        }
        let file = doc_name(visible[0].document);
        classes.entry((class, file)).or_default().push(Method {
            name: props.name,
            signature,
            token: tok,
            hits: point_hits.iter().copied().max().unwrap_or(0),
            lines,
        });
    }
    let name = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok(Assembly {
        name,
        path: path.display().to_string(),
        classes: classes
            .into_iter()
            .map(|((name, file), methods)| Class {
                name,
                file,
                methods,
            })
            .collect(),
    })
}

/// The IL body of a method at `rva` in an image read as a file.
fn method_il(image: &[u8], rva: u32) -> Option<&[u8]> {
    if rva == 0 {
        return None;
    }
    let read = |offset: usize, len: usize| -> Option<&[u8]> {
        image.get(offset..offset.checked_add(len)?)
    };
    let at = pe::file_offset(&read, rva).ok()?;
    image.get(at..)
}

/// The conditional branches of a body the compiler made for itself: those that test an
/// awaiter's `IsCompleted` (the call right before them is to a method of that name: an
/// `await`'s fast path), and those in hidden code of a `finally` handler (the null test
/// before `Dispose` of `foreach` and `using`).
fn compiler_made(
    il: &[u8],
    md: &RawMetadata,
    lines: &clrprof_metadata::pdb::MethodLines,
) -> std::collections::HashSet<u32> {
    use clrprof_il::opcode::Flow;
    use clrprof_il::{Body, ClauseKind, Label, OpCode, Operand};
    let mut out = std::collections::HashSet::new();
    let Ok((body, _)) = Body::parse_with_len(il) else {
        return out;
    };
    let Ok(offsets) = body.offsets() else {
        return out;
    };
    let at = |l: Label| -> u32 {
        if l == Label::END {
            *offsets.last().unwrap_or(&0)
        } else {
            body.index_of(l).map(|i| offsets[i]).unwrap_or(0)
        }
    };
    let finally: Vec<(u32, u32)> = body
        .clauses
        .iter()
        .filter(|c| c.kind == ClauseKind::Finally)
        .map(|c| (at(c.handler_start), at(c.handler_end)))
        .collect();
    for (i, ins) in body.code.iter().enumerate() {
        let o = offsets[i];
        if ins.op.info().map(|i| i.flow) == Some(Flow::CondBranch)
            && finally.iter().any(|&(s, e)| s <= o && o < e)
            && lines.point_at(o).is_none_or(|p| p.is_hidden())
        {
            out.insert(o);
        }
    }
    for (i, pair) in body.code.windows(2).enumerate() {
        let (call, branch) = (&pair[0], &pair[1]);
        if branch.op.info().map(|i| i.flow) != Some(Flow::CondBranch) {
            continue;
        }
        let (OpCode::CALL | OpCode::CALLVIRT, Operand::Token(t)) = (call.op, &call.operand) else {
            continue;
        };
        let name = match t >> 24 {
            0x06 => md.get_method_props(*t).map(|p| p.name).unwrap_or_default(),
            0x0A => md
                .get_member_ref_props(*t)
                .map(|p| p.name)
                .unwrap_or_default(),
            _ => String::new(),
        };
        if name == "get_IsCompleted" {
            out.insert(offsets[i + 1]);
        }
    }
    out
}
