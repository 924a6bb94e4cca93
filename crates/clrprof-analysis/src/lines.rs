//! Source lines of sampled frames: a frame's IL offset (the trace's `SamplePositions`)
//! → file and line, through its module's portable PDB (`clrprof_metadata::pdb`), read
//! out of process. Modules are found from their `ModuleLoaded` paths, methods from their
//! `FunctionInfo` module and token; a module's PDB is looked for once (embedded, beside
//! the image, in the `--pdb-dir` folders, at the path the compiler wrote), and a module
//! without one is remembered with where it was looked for (docs/source-lines.md).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use clrprof_format::{IlPosition, position_il};
use clrprof_metadata::pdb::{MethodLines, PortablePdb, find};
use serde::Serialize;

use crate::names::Names;

/// A source line: the document's path as the compiler wrote it, and the line (1-based).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SourceLine {
    pub file: Arc<str>,
    pub line: u32,
}

impl std::fmt::Display for SourceLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = self.file.rsplit(['/', '\\']).next().unwrap_or(&self.file);
        write!(f, "{name}:{}", self.line)
    }
}

/// A module whose lines could not be read, and why (no PDB: where it was looked for).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MissingPdb {
    pub module: String,
    pub reason: String,
}

struct ModuleLines {
    pdb: PortablePdb,
    methods: HashMap<u32, Option<MethodLines>>,
    documents: HashMap<u32, Arc<str>>,
}

/// Maps (function, IL position) to source lines, reading each module's PDB on first use.
#[derive(Default)]
pub struct Lines {
    dirs: Vec<PathBuf>,
    modules: HashMap<u64, Option<ModuleLines>>,
    missing: Vec<MissingPdb>,
}

/// The line of `function` at position `item` from the trace's own line table (the
/// `SourceLine` records `record` appended), without reading any PDB.
pub fn traced_line(names: &Names, function: u64, item: u64) -> Option<SourceLine> {
    let (file, line) = names.source_lines.get(&(function, item))?;
    Some(SourceLine {
        file: file.clone(),
        line: *line,
    })
}

impl Lines {
    /// A resolver that also looks for PDBs in `dirs` (`--pdb-dir`).
    pub fn new(dirs: Vec<PathBuf>) -> Lines {
        Lines {
            dirs,
            ..Lines::default()
        }
    }

    /// The line of `function` at `SamplePositions` item `item`, if known: an IL offset
    /// maps to its sequence point's line (a hidden point to the visible one before it),
    /// the prolog to the method's first line, an epilog to its last; native code without
    /// IL, and unknown positions, have none.
    pub fn line(&mut self, names: &Names, function: u64, item: u64) -> Option<SourceLine> {
        let pos = position_il(item)?;
        // The trace's own table first (a trace that travelled without its PDBs).
        if let Some((file, line)) = names.source_lines.get(&(function, item)) {
            return Some(SourceLine {
                file: file.clone(),
                line: *line,
            });
        }
        let f = names.functions.get(&function)?;
        if f.token == 0 {
            return None;
        }
        let m = self.module(names, f.module)?;
        let lines = m
            .methods
            .entry(f.token)
            .or_insert_with(|| m.pdb.sequence_points(f.token).ok())
            .as_ref()?;
        let point = match pos {
            IlPosition::Il(il) => lines.line_at(il).or_else(|| lines.first_line()),
            IlPosition::Prolog => lines.first_line(),
            IlPosition::Epilog => lines.points.iter().rev().find(|p| !p.is_hidden()),
            IlPosition::NoMapping => None,
        }?;
        let (doc, line) = (point.document, point.start_line);
        let file = match m.documents.get(&doc) {
            Some(f) => f.clone(),
            None => {
                let name: Arc<str> = m.pdb.document(doc).ok()?.name.into();
                m.documents.insert(doc, name.clone());
                name
            }
        };
        Some(SourceLine { file, line })
    }

    /// The first line of a function's body (its first visible sequence point).
    pub fn first_line(&mut self, names: &Names, function: u64) -> Option<SourceLine> {
        self.line(
            names,
            function,
            clrprof_format::position_item(Some(IlPosition::Prolog)),
        )
    }

    fn module(&mut self, names: &Names, module: u64) -> Option<&mut ModuleLines> {
        if !self.modules.contains_key(&module) {
            let loaded = self.load(names, module);
            self.modules.insert(module, loaded);
        }
        self.modules.get_mut(&module)?.as_mut()
    }

    fn load(&mut self, names: &Names, module: u64) -> Option<ModuleLines> {
        let path = names.modules.get(&module)?.path.clone()?;
        match find::find_pdb(Path::new(&path), &self.dirs) {
            Ok(found) => Some(ModuleLines {
                pdb: found.pdb,
                methods: HashMap::new(),
                documents: HashMap::new(),
            }),
            Err(e) => {
                self.missing.push(MissingPdb {
                    module: path,
                    reason: e.to_string(),
                });
                None
            }
        }
    }

    /// Modules looked at whose lines could not be read, in the order they were met.
    pub fn missing(&self) -> &[MissingPdb] {
        &self.missing
    }
}

/// One source line's figures in the samples a view counts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LineSamples {
    /// The method the line is in.
    pub function: String,
    /// The document's path as the compiler wrote it.
    pub file: String,
    pub line: u32,
    /// CPU (samples) of the samples whose leaf frame was on this line.
    pub self_cpu_ns: u64,
    pub self_samples: u64,
    /// CPU (samples) of the samples with a frame on this line (counted once a sample).
    pub total_cpu_ns: u64,
    pub total_samples: u64,
}

/// Per source line (of each method), self and total figures of the samples `view`
/// counts, most first (self CPU time in the CPU view, self samples in the wall view).
/// Frames without a known line are left out.
pub fn by_line(
    samples: &[crate::samples::StackSample],
    names: &Names,
    view: crate::samples::View,
    lines: &mut Lines,
) -> Vec<LineSamples> {
    use crate::samples::View;
    // Per (function id, position item): the row, resolved once.
    let mut resolved: HashMap<(u64, u64), Option<usize>> = HashMap::new();
    let mut rows: Vec<LineSamples> = Vec::new();
    let mut row_of: HashMap<(String, SourceLine), usize> = HashMap::new();
    let mut seen: Vec<usize> = Vec::new();
    for s in crate::samples::counted(samples, names, view) {
        if s.positions.len() != s.stack.len() {
            continue;
        }
        seen.clear();
        for (i, (&f, &item)) in s.stack.iter().zip(&s.positions).enumerate() {
            if item == 0 {
                continue;
            }
            let row = *resolved.entry((f, item)).or_insert_with(|| {
                let line = lines.line(names, f, item)?;
                let function = names.display(f);
                let key = (function.clone(), line.clone());
                Some(*row_of.entry(key).or_insert_with(|| {
                    rows.push(LineSamples {
                        function,
                        file: line.file.to_string(),
                        line: line.line,
                        self_cpu_ns: 0,
                        self_samples: 0,
                        total_cpu_ns: 0,
                        total_samples: 0,
                    });
                    rows.len() - 1
                }))
            });
            let Some(row) = row else { continue };
            let r = &mut rows[row];
            if i == 0 {
                r.self_cpu_ns += s.cpu_ns;
                r.self_samples += 1;
            }
            if !seen.contains(&row) {
                seen.push(row);
                r.total_cpu_ns += s.cpu_ns;
                r.total_samples += 1;
            }
        }
    }
    rows.sort_by(|a, b| {
        let key = |r: &LineSamples| match view {
            View::Cpu => (r.self_cpu_ns, r.self_samples, r.total_cpu_ns),
            View::Wall => (r.self_samples, r.self_cpu_ns, r.total_samples),
        };
        key(b)
            .cmp(&key(a))
            .then_with(|| (&a.file, a.line, &a.function).cmp(&(&b.file, b.line, &b.function)))
    });
    rows
}

impl Lines {
    /// The document and the lowest and highest lines of a function's body in it (the
    /// document of its first visible sequence point).
    pub fn span(&mut self, names: &Names, function: u64) -> Option<(Arc<str>, u32, u32)> {
        let first = self.first_line(names, function)?;
        let f = names.functions.get(&function)?;
        let m = self.modules.get(&f.module)?.as_ref()?;
        let lines = m.methods.get(&f.token)?.as_ref()?;
        let doc = lines.first_line()?.document;
        let visible = || {
            lines
                .points
                .iter()
                .filter(move |p| !p.is_hidden() && p.document == doc)
        };
        // Lines in source order: a loop's condition comes after its body in IL.
        let low = visible().map(|p| p.start_line).min()?;
        let high = visible().map(|p| p.end_line.max(p.start_line)).max()?;
        Some((first.file, low, high))
    }
}

/// `report --source`: a method's lines with the figures of each.
#[derive(Debug, Clone, Serialize)]
pub struct Listing {
    pub function: String,
    pub file: String,
    /// Per line from the body's first to its last: (line, self CPU, total CPU, self
    /// samples, total samples).
    pub lines: Vec<(u32, u64, u64, u64, u64)>,
    /// The file's text of those lines, when the file could be read (else empty).
    pub text: Vec<String>,
}

/// The listings of the sampled methods whose name matches `pattern` (`*` and `?`
/// wildcards), from the report's `lines` rows; the source text is read from the
/// document's path when it is readable.
pub fn listings(
    rows: &[LineSamples],
    pattern: &str,
    names: &Names,
    lines: &mut Lines,
) -> Vec<Listing> {
    let mut out: Vec<Listing> = Vec::new();
    let mut done: Vec<String> = Vec::new();
    // Matched by the name the views show (a state machine's after its kickoff method)
    // or the runtime's.
    let mut ids: Vec<(String, u64)> = names
        .functions
        .iter()
        .filter(|(id, f)| {
            clrprof_settings::pattern::matches(pattern, &f.name)
                || clrprof_settings::pattern::matches(pattern, &names.display(**id))
        })
        .map(|(id, _)| (names.display(*id), *id))
        .collect();
    ids.sort();
    for (name, id) in ids {
        if done.contains(&name) || !rows.iter().any(|r| r.function == name) {
            continue;
        }
        let Some((file, first, last)) = lines.span(names, id) else {
            continue;
        };
        done.push(name.clone());
        // A body of more than 2,000 lines is cut there.
        let last = last.min(first.saturating_add(2000));
        let figures = (first..=last)
            .map(|n| {
                rows.iter()
                    .filter(|r| r.function == name && r.line == n && *r.file == *file)
                    .fold((n, 0, 0, 0, 0), |a, r| {
                        (
                            n,
                            a.1 + r.self_cpu_ns,
                            a.2 + r.total_cpu_ns,
                            a.3 + r.self_samples,
                            a.4 + r.total_samples,
                        )
                    })
            })
            .collect();
        let text = std::fs::read_to_string(&*file)
            .map(|t| {
                t.lines()
                    .skip(first.saturating_sub(1) as usize)
                    .take((last - first + 1) as usize)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        out.push(Listing {
            function: name,
            file: file.to_string(),
            lines: figures,
            text,
        });
    }
    out
}

/// Gives each row of a function table its `file` and `line` (the document and the first
/// line of the method's body; null for frames without one, as native code).
pub fn locate_functions(
    rows: &mut [crate::samples::FunctionSamples],
    names: &Names,
    lines: &mut Lines,
) {
    // A name's rows merge the code versions of one method: any of its ids will do.
    let mut by_name: HashMap<String, u64> = HashMap::new();
    for id in names.functions.keys() {
        by_name
            .entry(names.display(*id))
            .and_modify(|k| *k = (*k).min(*id))
            .or_insert(*id);
    }
    for r in rows {
        let span = by_name.get(&r.name).and_then(|&id| lines.span(names, id));
        r.file = Some(span.as_ref().map(|s| s.0.to_string()));
        r.line = Some(span.map(|s| s.1));
    }
}

/// The `SourceLine` records that make a trace's lines travel: for every distinct
/// (function, position) its samples hold, and the `exception` pairs (from its exception
/// stacks: [`ExceptionPositions`]; and its allocation samples'), whose line the PDBs
/// give, the record's fields.
pub fn table(
    samples: &[crate::samples::StackSample],
    exception: &std::collections::BTreeSet<(u64, u64)>,
    names: &Names,
    lines: &mut Lines,
) -> Vec<(u64, u64, SourceLine)> {
    let mut seen: std::collections::HashSet<(u64, u64)> = std::collections::HashSet::new();
    let mut out = Vec::new();
    let mut add = |f: u64, item: u64| {
        if item != 0
            && seen.insert((f, item))
            && let Some(l) = lines.line(names, f, item)
        {
            out.push((f, item, l));
        }
    };
    for s in samples {
        if s.positions.len() != s.stack.len() {
            continue;
        }
        for (&f, &item) in s.stack.iter().zip(&s.positions) {
            add(f, item);
        }
    }
    for &(f, item) in exception {
        add(f, item);
    }
    out.sort_by_key(|a| (a.0, a.1));
    out
}

/// The distinct (function, position) pairs of a trace's exception stacks, gathered from
/// its exception records (`Trace::for_each_exception`): an `ExceptionPositions` belongs
/// to the `ExceptionStack` written just before it on the same thread.
#[derive(Default)]
pub struct ExceptionPositions {
    last: HashMap<u64, Vec<u64>>,
    pub pairs: std::collections::BTreeSet<(u64, u64)>,
}

impl ExceptionPositions {
    pub fn observe(&mut self, e: &crate::timeline::TimedEvent<'_>) {
        use clrprof_format::Event;
        match &e.event {
            Event::ExceptionStack { frames } => {
                self.last.insert(e.os_tid, frames.to_vec());
            }
            Event::ExceptionPositions { positions } => {
                if let Some(frames) = self.last.remove(&e.os_tid)
                    && frames.len() == positions.len()
                {
                    for (&f, &item) in frames.iter().zip(positions.iter()) {
                        if item != 0 {
                            self.pairs.insert((f, item));
                        }
                    }
                }
            }
            _ => {}
        }
    }
}
