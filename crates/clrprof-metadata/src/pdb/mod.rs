//! Portable PDBs: the debugging metadata a .NET compiler writes beside (or into) a module,
//! read for source lines.
//!
//! A portable PDB is an ECMA-335 metadata blob (`BSJB` root) whose `#~` stream holds only
//! the debug tables (0x30–0x37) and whose `#Pdb` stream holds the PDB id, the entry point
//! and the row counts of the module's type-system tables the debug tables point into
//! (which size those columns). Read here:
//!
//! - `#Pdb`: [`PortablePdb::id`], [`PortablePdb::entry_point`];
//! - Document (0x30): [`PortablePdb::document`] (its name blob: a separator and parts);
//! - MethodDebugInformation (0x31): [`PortablePdb::sequence_points`] decodes a method's
//!   sequence-points blob (compressed integers; the first record's absolute values, the
//!   signed deltas from the previous non-hidden point, hidden points, document changes);
//!   [`PortablePdb::source_line`] maps an IL offset to its document and line;
//! - StateMachineMethod (0x36): [`PortablePdb::kickoff_method`] (async / iterator
//!   `MoveNext` → the method the user wrote).
//!
//! [`find`] locates the PDB of an image (embedded, beside it, in extra folders) and checks
//! its id. Every read is bounded: a truncated or hostile PDB gives a [`PdbError`], never a
//! panic.

pub mod find;

use std::fmt;
use std::path::PathBuf;

/// The line of a hidden sequence point (code the compiler generated, no source line).
pub const HIDDEN_LINE: u32 = 0x00FE_EFEE;

const MAX_TABLE: u8 = 0x37;
const DOCUMENT: u8 = 0x30;
const METHOD_DEBUG_INFORMATION: u8 = 0x31;
const STATE_MACHINE_METHOD: u8 = 0x36;
const METHOD_DEF: usize = 0x06;

/// A portable PDB's 20-byte id: the CodeView GUID of the image (16 bytes) and the debug
/// directory entry's time stamp (4 bytes, little-endian).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct PdbId(pub [u8; 20]);

impl PdbId {
    /// The GUID part as the usual text (`{d3e1...}` without braces), then the stamp.
    pub fn guid_text(&self) -> String {
        let b = &self.0;
        let d1 = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        let d2 = u16::from_le_bytes([b[4], b[5]]);
        let d3 = u16::from_le_bytes([b[6], b[7]]);
        format!(
            "{d1:08x}-{d2:04x}-{d3:04x}-{:02x}{:02x}-{:02x}{:02x}{:02x}{:02x}{:02x}{:02x}",
            b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]
        )
    }

    /// The time-stamp part.
    pub fn stamp(&self) -> u32 {
        u32::from_le_bytes([self.0[16], self.0[17], self.0[18], self.0[19]])
    }
}

impl fmt::Display for PdbId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} stamp {:08x}", self.guid_text(), self.stamp())
    }
}

impl fmt::Debug for PdbId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Why a PDB could not be found or read. Every message names the file it is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PdbError {
    /// The PDB's bytes are not a well-formed portable PDB (truncated, damaged, hostile).
    Corrupt { what: String },
    /// A Windows ("full", MSF) PDB: not read here.
    WindowsPdb { path: PathBuf },
    /// The PDB found does not belong to this build of the image.
    Mismatch {
        pdb: PathBuf,
        image_id: PdbId,
        pdb_id: PdbId,
    },
    /// The image could not be read as a PE file, or its debug directory is damaged.
    Image { path: PathBuf, what: String },
    /// The image names no PDB (no CodeView entry, no embedded PDB).
    NoDebugDirectory { image: PathBuf },
    /// No PDB in any of the places looked at.
    NotFound {
        image: PathBuf,
        looked: Vec<PathBuf>,
    },
    /// A file could not be read.
    Io { path: PathBuf, error: String },
}

impl fmt::Display for PdbError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PdbError::Corrupt { what } => write!(f, "not a readable portable PDB: {what}"),
            PdbError::WindowsPdb { path } => write!(
                f,
                "{}: a Windows (full, MSF) PDB, a format not read here; build portable PDBs \
                 with <DebugType>portable</DebugType> (or embedded) in the project file",
                path.display()
            ),
            PdbError::Mismatch {
                pdb,
                image_id,
                pdb_id,
            } => write!(
                f,
                "{}: PDB id {pdb_id} does not match the image's {image_id} (a PDB of another build)",
                pdb.display()
            ),
            PdbError::Image { path, what } => write!(f, "{}: {what}", path.display()),
            PdbError::NoDebugDirectory { image } => write!(
                f,
                "{}: the image names no PDB (no CodeView or embedded PDB debug directory entry)",
                image.display()
            ),
            PdbError::NotFound { image, looked } => {
                write!(f, "{}: no PDB found; looked at", image.display())?;
                for (i, p) in looked.iter().enumerate() {
                    write!(f, "{} {}", if i == 0 { "" } else { "," }, p.display())?;
                }
                Ok(())
            }
            PdbError::Io { path, error } => write!(f, "{}: {error}", path.display()),
        }
    }
}

impl std::error::Error for PdbError {}

fn corrupt(what: impl Into<String>) -> PdbError {
    PdbError::Corrupt { what: what.into() }
}

/// A source document of the PDB.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Document {
    /// As the compiler wrote it: usually the full path at build time.
    pub name: String,
    /// The language GUID (C#, VB, F#), all zero when absent.
    pub language: [u8; 16],
}

/// A sequence point: the IL offset where a source span's code starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SequencePoint {
    pub il_offset: u32,
    /// Document row (1-based; see [`PortablePdb::document`]).
    pub document: u32,
    pub start_line: u32,
    pub start_column: u32,
    pub end_line: u32,
    pub end_column: u32,
}

impl SequencePoint {
    /// A hidden point: compiler-generated code with no source line ([`HIDDEN_LINE`]).
    pub fn is_hidden(&self) -> bool {
        self.start_line == HIDDEN_LINE
    }
}

/// Where an IL offset's code came from: a document and the span of its statement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceLine {
    /// The document's name as the compiler wrote it (usually the build-time full path).
    pub document: String,
    pub line: u32,
    pub column: u32,
    pub end_line: u32,
    pub end_column: u32,
}

/// The sequence points of one method, in IL-offset order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MethodLines {
    pub points: Vec<SequencePoint>,
}

impl MethodLines {
    /// The point whose code holds `il_offset`: the last one starting at or before it
    /// (hidden points included).
    pub fn point_at(&self, il_offset: u32) -> Option<&SequencePoint> {
        let n = self.points.partition_point(|p| p.il_offset <= il_offset);
        n.checked_sub(1).map(|i| &self.points[i])
    }

    /// The source line of `il_offset`: the point holding it, or when that one is hidden,
    /// the nearest visible one before it (what a debugger shows for generated code
    /// between statements). `None` before the first visible point.
    pub fn line_at(&self, il_offset: u32) -> Option<&SequencePoint> {
        let n = self.points.partition_point(|p| p.il_offset <= il_offset);
        self.points[..n].iter().rev().find(|p| !p.is_hidden())
    }

    /// The first visible point (the method body's first line).
    pub fn first_line(&self) -> Option<&SequencePoint> {
        self.points.iter().find(|p| !p.is_hidden())
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct Table {
    start: usize,
    rows: u32,
    row_size: usize,
    /// (offset in the row, width) per column.
    cols: [(u8, u8); 6],
}

/// A portable PDB, read from its bytes (which it owns: an embedded PDB is decompressed).
#[derive(Clone)]
pub struct PortablePdb {
    bytes: Vec<u8>,
    id: PdbId,
    entry_point: u32,
    blobs: (usize, usize),
    guids: (usize, usize),
    tables: [Table; (MAX_TABLE - DOCUMENT + 1) as usize],
}

impl fmt::Debug for PortablePdb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PortablePdb")
            .field("id", &self.id)
            .field("bytes", &self.bytes.len())
            .field("documents", &self.document_count())
            .field("methods", &self.method_count())
            .finish()
    }
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(
        b.get(at..at.checked_add(2)?)?.try_into().ok()?,
    ))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(
        b.get(at..at.checked_add(4)?)?.try_into().ok()?,
    ))
}

/// The first bytes of a Windows PDB (MSF 7.00).
pub(crate) const MSF_MAGIC: &[u8] = b"Microsoft C/C++ MSF 7.00";

/// A reader of the compressed integers of ECMA-335 §II.23.2 over a blob.
struct Cursor<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn done(&self) -> bool {
        self.at >= self.b.len()
    }

    /// An unsigned compressed integer and the number of bytes it took.
    fn unsigned_len(&mut self) -> Option<(u32, usize)> {
        let x = *self.b.get(self.at)?;
        let (v, n) = if x & 0x80 == 0 {
            (u32::from(x), 1)
        } else if x & 0xC0 == 0x80 {
            let y = *self.b.get(self.at + 1)?;
            ((u32::from(x & 0x3F) << 8) | u32::from(y), 2)
        } else if x & 0xE0 == 0xC0 {
            let r = self.b.get(self.at + 1..self.at + 4)?;
            (
                (u32::from(x & 0x1F) << 24)
                    | (u32::from(r[0]) << 16)
                    | (u32::from(r[1]) << 8)
                    | u32::from(r[2]),
                4,
            )
        } else {
            return None;
        };
        self.at += n;
        Some((v, n))
    }

    fn unsigned(&mut self) -> Option<u32> {
        self.unsigned_len().map(|(v, _)| v)
    }

    /// A signed compressed integer: the sign bit rotated into bit 0 (§II.23.2).
    fn signed(&mut self) -> Option<i32> {
        let (v, n) = self.unsigned_len()?;
        let magnitude = (v >> 1) as i32;
        if v & 1 == 0 {
            return Some(magnitude);
        }
        let fill: u32 = match n {
            1 => 0xFFFF_FFC0,
            2 => 0xFFFF_E000,
            _ => 0xF000_0000,
        };
        Some((magnitude as u32 | fill) as i32)
    }
}

impl PortablePdb {
    /// Reads a portable PDB's root, its `#Pdb` stream and its tables' layout.
    pub fn parse(bytes: Vec<u8>) -> Result<PortablePdb, PdbError> {
        if bytes.starts_with(MSF_MAGIC) {
            return Err(PdbError::WindowsPdb {
                path: PathBuf::new(),
            });
        }
        let md = &bytes[..];
        if u32_at(md, 0) != Some(0x424A_5342) {
            return Err(corrupt("no BSJB metadata signature"));
        }
        let version_len = u32_at(md, 12).ok_or(corrupt("short root"))? as usize;
        let flags_at = 16usize
            .checked_add(version_len)
            .ok_or(corrupt("version length"))?;
        let streams = u16_at(md, flags_at + 2).ok_or(corrupt("short root"))?;
        let mut at = flags_at + 4;
        let (mut pdb, mut ts) = (None, None);
        let (mut blobs, mut guids) = ((0, 0), (0, 0));
        for _ in 0..streams {
            let offset = u32_at(md, at).ok_or(corrupt("short stream header"))? as usize;
            let size = u32_at(md, at + 4).ok_or(corrupt("short stream header"))? as usize;
            let name_at = at + 8;
            let name_len = md
                .get(name_at..)
                .and_then(|r| r.iter().take(32).position(|&b| b == 0))
                .ok_or(corrupt("stream name"))?;
            let name = &md[name_at..name_at + name_len];
            if offset.checked_add(size).is_none_or(|end| end > md.len()) {
                return Err(corrupt("a stream lies outside the file"));
            }
            match name {
                b"#Pdb" => pdb = Some((offset, size)),
                b"#~" => ts = Some((offset, size)),
                b"#-" => return Err(corrupt("uncompressed tables (#-) in a PDB")),
                b"#Blob" => blobs = (offset, size),
                b"#GUID" => guids = (offset, size),
                _ => {}
            }
            at = name_at + (name_len + 4) / 4 * 4;
        }
        let (pdb_at, pdb_size) =
            pdb.ok_or(corrupt("no #Pdb stream (type-system metadata, not a PDB?)"))?;
        let p = &md[pdb_at..pdb_at + pdb_size];
        let id: [u8; 20] = p
            .get(..20)
            .and_then(|b| b.try_into().ok())
            .ok_or(corrupt("short #Pdb stream"))?;
        let entry_point = u32_at(p, 20).ok_or(corrupt("short #Pdb stream"))?;
        let referenced = p
            .get(24..32)
            .and_then(|b| b.try_into().ok())
            .map(u64::from_le_bytes)
            .ok_or(corrupt("short #Pdb stream"))?;
        // Row counts of every table a column can point to: type-system ones from #Pdb,
        // debug ones from #~.
        let mut rows = [0u32; 64];
        let mut at = 32;
        for (t, r) in rows.iter_mut().enumerate() {
            if referenced & (1 << t) != 0 {
                *r = u32_at(p, at).ok_or(corrupt("short type-system row counts"))?;
                at += 4;
            }
        }
        let (ts_at, ts_size) = ts.ok_or(corrupt("no #~ stream"))?;
        let t = &md[ts_at..ts_at + ts_size];
        let heap_sizes = *t.get(6).ok_or(corrupt("short #~ header"))?;
        let valid = t
            .get(8..16)
            .and_then(|b| b.try_into().ok())
            .map(u64::from_le_bytes)
            .ok_or(corrupt("short #~ header"))?;
        if valid >> (MAX_TABLE + 1) != 0 {
            return Err(corrupt("unknown tables in #~"));
        }
        let mut at = 24;
        for (t_no, r) in rows.iter_mut().enumerate() {
            if valid & (1 << t_no) != 0 {
                *r = u32_at(t, at).ok_or(corrupt("short row counts"))?;
                at += 4;
            }
        }
        if valid & ((1 << DOCUMENT) - 1) != 0 {
            return Err(corrupt("type-system tables in a standalone PDB"));
        }
        if heap_sizes & 0x40 != 0 {
            at += 4;
        }
        let wide = |bit: u8| if heap_sizes & bit != 0 { 4 } else { 2 };
        let (ws, wg, wb) = (wide(1), wide(2), wide(4));
        let index = |t: u8| if rows[t as usize] < 0x1_0000 { 2 } else { 4 };
        // HasCustomDebugInformation: 5 tag bits over these tables.
        let hcdi_max = [
            0x06, 0x04, 0x01, 0x02, 0x08, 0x09, 0x0A, 0x00, 0x0E, 0x17, 0x14, 0x11, 0x1A, 0x1B,
            0x20, 0x23, 0x26, 0x27, 0x28, 0x2A, 0x2C, 0x2B, 0x30, 0x32, 0x33, 0x34, 0x35,
        ]
        .iter()
        .map(|&t| rows[t])
        .max()
        .unwrap_or(0);
        let hcdi = if hcdi_max < (1 << 11) { 2 } else { 4 };
        let md_idx = index(METHOD_DEF as u8);
        let widths: [&[usize]; 8] = [
            &[wb, wg, wb, wg],                                      // Document
            &[index(DOCUMENT), wb],                                 // MethodDebugInformation
            &[md_idx, index(0x35), index(0x33), index(0x34), 4, 4], // LocalScope
            &[2, 2, ws],                                            // LocalVariable
            &[ws, wb],                                              // LocalConstant
            &[index(0x35), wb],                                     // ImportScope
            &[md_idx, md_idx],                                      // StateMachineMethod
            &[hcdi, wg, wb],                                        // CustomDebugInformation
        ];
        let mut tables = [Table::default(); 8];
        let mut start = ts_at + at;
        for (i, table) in tables.iter_mut().enumerate() {
            let mut offset = 0usize;
            for (c, &w) in widths[i].iter().enumerate() {
                table.cols[c] = (offset as u8, w as u8);
                offset += w;
            }
            table.start = start;
            table.rows = rows[DOCUMENT as usize + i];
            table.row_size = offset;
            start = (table.rows as usize)
                .checked_mul(offset)
                .and_then(|n| start.checked_add(n))
                .ok_or(corrupt("table sizes"))?;
        }
        if start > ts_at + ts_size {
            return Err(corrupt("tables run past the #~ stream"));
        }
        let methods = tables[(METHOD_DEBUG_INFORMATION - DOCUMENT) as usize].rows;
        if methods != 0 && methods != rows[METHOD_DEF] {
            return Err(corrupt(format!(
                "MethodDebugInformation has {methods} rows, the module {} methods",
                rows[METHOD_DEF]
            )));
        }
        Ok(PortablePdb {
            id: PdbId(id),
            entry_point,
            blobs,
            guids,
            tables,
            bytes,
        })
    }

    /// The PDB id: matches the image's CodeView entry (GUID + time stamp).
    pub fn id(&self) -> PdbId {
        self.id
    }

    /// The entry point's MethodDef token, if the module has one.
    pub fn entry_point(&self) -> Option<u32> {
        (self.entry_point != 0).then_some(self.entry_point)
    }

    /// The number of documents (rows 1..=n).
    pub fn document_count(&self) -> u32 {
        self.table(DOCUMENT).rows
    }

    /// The number of MethodDebugInformation rows: the module's MethodDef count, or 0.
    pub fn method_count(&self) -> u32 {
        self.table(METHOD_DEBUG_INFORMATION).rows
    }

    fn table(&self, t: u8) -> &Table {
        &self.tables[(t - DOCUMENT) as usize]
    }

    fn cell(&self, t: u8, row: u32, col: usize) -> Result<u32, PdbError> {
        let table = self.table(t);
        if row == 0 || row > table.rows {
            return Err(corrupt(format!(
                "row {row} of table {t:#04x} does not exist"
            )));
        }
        let (offset, width) = table.cols[col];
        let at = table.start + (row as usize - 1) * table.row_size + offset as usize;
        let b = self
            .bytes
            .get(at..at + width as usize)
            .ok_or(corrupt("a row past the end"))?;
        Ok(match width {
            2 => u32::from(u16::from_le_bytes([b[0], b[1]])),
            _ => u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
        })
    }

    fn heap(&self, (at, size): (usize, usize)) -> &[u8] {
        &self.bytes[at..at + size]
    }

    /// A `#Blob` entry, after its compressed length (index 0: empty).
    fn blob(&self, index: u32) -> Result<&[u8], PdbError> {
        let heap = self.heap(self.blobs);
        let b = heap
            .get(index as usize..)
            .ok_or(corrupt("blob index past the #Blob heap"))?;
        let mut c = Cursor { b, at: 0 };
        let len = c.unsigned().ok_or(corrupt("blob length"))? as usize;
        b.get(c.at..c.at + len)
            .ok_or(corrupt("blob runs past the #Blob heap"))
    }

    fn guid(&self, index: u32) -> Result<[u8; 16], PdbError> {
        if index == 0 {
            return Ok([0; 16]);
        }
        let heap = self.heap(self.guids);
        let at = (index as usize - 1) * 16;
        heap.get(at..at + 16)
            .and_then(|b| b.try_into().ok())
            .ok_or(corrupt("GUID index past the #GUID heap"))
    }

    /// Document `row` (1-based): its name joined from the name blob's parts.
    pub fn document(&self, row: u32) -> Result<Document, PdbError> {
        let name_blob = self.blob(self.cell(DOCUMENT, row, 0)?)?;
        let language = self.guid(self.cell(DOCUMENT, row, 3)?)?;
        let (&sep, parts) = name_blob
            .split_first()
            .ok_or(corrupt("empty document name blob"))?;
        if sep >= 0x80 {
            return Err(corrupt("document name separator is not ASCII"));
        }
        let mut name = Vec::new();
        let mut c = Cursor { b: parts, at: 0 };
        let mut first = true;
        while !c.done() {
            let part = c.unsigned().ok_or(corrupt("document name part"))?;
            if !first && sep != 0 {
                name.push(sep);
            }
            name.extend_from_slice(self.blob(part)?);
            first = false;
        }
        Ok(Document {
            name: String::from_utf8_lossy(&name).into_owned(),
            language,
        })
    }

    /// The sequence points of MethodDef `method` (a token, `0x06xxxxxx`); empty when the
    /// method has none (abstract, extern, or compiled without debug information).
    pub fn sequence_points(&self, method: u32) -> Result<MethodLines, PdbError> {
        if method >> 24 != METHOD_DEF as u32 {
            return Err(corrupt(format!("{method:#010x} is not a MethodDef token")));
        }
        let row = method & 0x00FF_FFFF;
        if self.method_count() == 0 {
            return Ok(MethodLines::default());
        }
        let t = METHOD_DEBUG_INFORMATION;
        let document = self.cell(t, row, 0)?;
        let blob_index = self.cell(t, row, 1)?;
        if blob_index == 0 {
            return Ok(MethodLines::default());
        }
        let blob = self.blob(blob_index)?;
        decode_sequence_points(blob, document, self.document_count())
            .map_err(|what| corrupt(format!("sequence points of {method:#010x}: {what}")))
    }

    /// The source line of `il_offset` in MethodDef `method`: the visible sequence point
    /// holding it (see [`MethodLines::line_at`]) with its document's name; `None` when the
    /// method has no visible point at or before it. Decodes the method's points each call:
    /// a caller mapping many offsets keeps [`PortablePdb::sequence_points`]' result.
    pub fn source_line(&self, method: u32, il_offset: u32) -> Result<Option<SourceLine>, PdbError> {
        let lines = self.sequence_points(method)?;
        let Some(p) = lines.line_at(il_offset) else {
            return Ok(None);
        };
        Ok(Some(SourceLine {
            document: self.document(p.document)?.name,
            line: p.start_line,
            column: p.start_column,
            end_line: p.end_line,
            end_column: p.end_column,
        }))
    }

    /// The kickoff method of a state machine's `MoveNext` (both MethodDef tokens): the
    /// async or iterator method the user wrote, whose body the compiler moved.
    pub fn kickoff_method(&self, move_next: u32) -> Result<Option<u32>, PdbError> {
        let t = STATE_MACHINE_METHOD;
        let row = move_next & 0x00FF_FFFF;
        // Sorted by MoveNext: a binary search.
        let (mut lo, mut hi) = (1u32, self.table(t).rows + 1);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.cell(t, mid, 0)? < row {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        if lo <= self.table(t).rows && self.cell(t, lo, 0)? == row {
            return Ok(Some(0x0600_0000 | self.cell(t, lo, 1)?));
        }
        Ok(None)
    }

    /// Every (MoveNext, kickoff) pair of MethodDef tokens.
    pub fn state_machine_methods(&self) -> Result<Vec<(u32, u32)>, PdbError> {
        let t = STATE_MACHINE_METHOD;
        (1..=self.table(t).rows)
            .map(|r| {
                Ok((
                    0x0600_0000 | self.cell(t, r, 0)?,
                    0x0600_0000 | self.cell(t, r, 1)?,
                ))
            })
            .collect()
    }
}

/// Decodes a sequence-points blob (Portable PDB spec, "Sequence Points Blob").
fn decode_sequence_points(
    blob: &[u8],
    document: u32,
    documents: u32,
) -> Result<MethodLines, &'static str> {
    let mut c = Cursor { b: blob, at: 0 };
    let _local_signature = c.unsigned().ok_or("header")?;
    let mut document = if document == 0 {
        c.unsigned().ok_or("initial document")?
    } else {
        document
    };
    let mut points = Vec::new();
    let mut il: u32 = 0;
    // The previous non-hidden point's start line and column.
    let mut previous: Option<(u32, u32)> = None;
    let mut first = true;
    while !c.done() {
        let delta_il = c.unsigned().ok_or("IL offset")?;
        if delta_il == 0 && !first {
            document = c.unsigned().ok_or("document record")?;
            continue;
        }
        il = if first {
            delta_il
        } else {
            il.checked_add(delta_il).ok_or("IL offset overflow")?
        };
        if il >= 0x2000_0000 {
            return Err("IL offset out of range");
        }
        first = false;
        if document == 0 || document > documents {
            return Err("document row out of range");
        }
        let delta_lines = c.unsigned().ok_or("line count")?;
        let delta_columns = if delta_lines == 0 {
            i64::from(c.unsigned().ok_or("column count")?)
        } else {
            i64::from(c.signed().ok_or("column count")?)
        };
        if delta_lines == 0 && delta_columns == 0 {
            points.push(SequencePoint {
                il_offset: il,
                document,
                start_line: HIDDEN_LINE,
                start_column: 0,
                end_line: HIDDEN_LINE,
                end_column: 0,
            });
            continue;
        }
        let (start_line, start_column) = match previous {
            None => (
                i64::from(c.unsigned().ok_or("start line")?),
                i64::from(c.unsigned().ok_or("start column")?),
            ),
            Some((line, column)) => (
                i64::from(line) + i64::from(c.signed().ok_or("start line")?),
                i64::from(column) + i64::from(c.signed().ok_or("start column")?),
            ),
        };
        let end_line = start_line + i64::from(delta_lines);
        let end_column = start_column + delta_columns;
        let line_ok = |l: i64| (0..0x2000_0000).contains(&l) && l != i64::from(HIDDEN_LINE);
        let column_ok = |c: i64| (0..0x1_0000).contains(&c);
        if !line_ok(start_line) || !line_ok(end_line) {
            return Err("line out of range");
        }
        if !column_ok(start_column) || !column_ok(end_column) {
            return Err("column out of range");
        }
        let p = SequencePoint {
            il_offset: il,
            document,
            start_line: start_line as u32,
            start_column: start_column as u32,
            end_line: end_line as u32,
            end_column: end_column as u32,
        };
        previous = Some((p.start_line, p.start_column));
        points.push(p);
    }
    Ok(MethodLines { points })
}

#[cfg(test)]
mod tests;
