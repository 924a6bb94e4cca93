//! [`RawMetadata`]: a module's metadata read straight from its bytes (ECMA-335 §II.24),
//! for names, without the runtime's importer.
//!
//! Why: `GetModuleMetaData` (and `GetTokenAndMetaDataFromFunction`) hand out the module's
//! public importer, and CoreCLR opens it with `PEAssembly::OpenImporter`, which first
//! converts the module's internal metadata from its read-only form to the read-write one
//! (`ConvertMDInternalToReadWrite`). From then on every metadata access of the runtime
//! itself in that module — type loads, the JIT's queries, reflection — goes through the
//! read-write importer, for the rest of the process. A profiler that only wants names pays
//! that on the application's time; reading the tables here does not touch the runtime.
//!
//! Only what naming needs: the `#~` tables stream (not the uncompressed `#-` one, which
//! edit-and-continue and some emitters write; those modules stay with the runtime's
//! importer), the `#Strings` and `#Blob` heaps. Pure and safe: it reads a byte slice;
//! `corprof::ProfilerInfo::module_raw_metadata` finds
//! that slice in a loaded module.

pub mod pe;
mod schema;

use corprof_sys as sys;

use crate::hresult::{HResult, Result};
use crate::mdread::MetadataRead;
use crate::props::{FieldProps, MemberRefProps, MethodProps, TypeDefProps, TypeRefProps};
use schema::{Coded, TABLES, Widths};

/// Why a module's metadata could not be read here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RawError {
    /// The PE image around it (see [`pe::locate`]).
    Image(&'static str),
    /// The metadata itself.
    Metadata(&'static str),
    /// Well-formed, but a form this reader leaves to the runtime's importer.
    Unsupported(&'static str),
}

impl core::fmt::Display for RawError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            RawError::Image(w) => write!(f, "PE image: {w}"),
            RawError::Metadata(w) => write!(f, "metadata: {w}"),
            RawError::Unsupported(w) => write!(f, "metadata not read here: {w}"),
        }
    }
}

impl std::error::Error for RawError {}

/// One table: where its rows start, how wide a row is, where each column lies in it.
#[derive(Clone, Copy, Debug, Default)]
struct Table {
    start: usize,
    rows: u32,
    row_size: usize,
    /// (offset in the row, width) per column.
    cols: [(u8, u8); 9],
}

/// A module's metadata tables and heaps, over the metadata bytes (`'a`).
#[derive(Clone, Debug)]
pub struct RawMetadata<'a> {
    md: &'a [u8],
    strings: &'a [u8],
    blobs: &'a [u8],
    tables: [Table; TABLES],
    widths: Widths,
    sorted: u64,
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn not_found() -> HResult {
    HResult(sys::CLDB_E_RECORD_NOTFOUND)
}

fn corrupt() -> HResult {
    HResult(sys::CLDB_E_FILE_CORRUPT)
}

/// `Namespace.Name`, or `Name` without a namespace (as `IMetaDataImport` joins them).
fn join_name(namespace: &str, name: &str) -> String {
    if namespace.is_empty() {
        name.to_owned()
    } else {
        format!("{namespace}.{name}")
    }
}

impl<'a> RawMetadata<'a> {
    /// Reads the metadata root, the stream headers and the `#~` stream's header.
    pub fn parse(md: &'a [u8]) -> core::result::Result<RawMetadata<'a>, RawError> {
        let bad = RawError::Metadata;
        if u32_at(md, 0) != Some(0x424A_5342) {
            return Err(bad("no BSJB signature"));
        }
        let version_len = u32_at(md, 12).ok_or(bad("short root"))? as usize;
        let flags_at = 16usize
            .checked_add(version_len)
            .ok_or(bad("version length"))?;
        let streams = u16_at(md, flags_at + 2).ok_or(bad("short root"))?;
        let mut at = flags_at + 4;
        let (mut tables_stream, mut strings, mut blobs) = (None, &md[..0], &md[..0]);
        for _ in 0..streams {
            let offset = u32_at(md, at).ok_or(bad("short stream header"))? as usize;
            let size = u32_at(md, at + 4).ok_or(bad("short stream header"))? as usize;
            let name_at = at + 8;
            let name_len = md
                .get(name_at..)
                .and_then(|r| r.iter().take(32).position(|&b| b == 0))
                .ok_or(bad("stream name"))?;
            let name = &md[name_at..name_at + name_len];
            let data = offset
                .checked_add(size)
                .and_then(|end| md.get(offset..end))
                .ok_or(bad("stream outside the metadata"))?;
            match name {
                b"#~" => tables_stream = Some(data),
                b"#-" => return Err(RawError::Unsupported("uncompressed tables (#-)")),
                b"#Strings" => strings = data,
                b"#Blob" => blobs = data,
                _ => {}
            }
            at = name_at + (name_len + 4) / 4 * 4;
        }
        let ts = tables_stream.ok_or(bad("no #~ stream"))?;
        let heap_sizes = *ts.get(6).ok_or(bad("short #~ header"))?;
        let valid = u64::from_le_bytes(
            ts.get(8..16)
                .and_then(|b| b.try_into().ok())
                .ok_or(bad("short #~ header"))?,
        );
        let sorted = u64::from_le_bytes(
            ts.get(16..24)
                .and_then(|b| b.try_into().ok())
                .ok_or(bad("short #~ header"))?,
        );
        if valid >> TABLES != 0 {
            return Err(RawError::Unsupported("tables past 0x2C"));
        }
        let mut widths = Widths {
            strings: if heap_sizes & 1 != 0 { 4 } else { 2 },
            guids: if heap_sizes & 2 != 0 { 4 } else { 2 },
            blobs: if heap_sizes & 4 != 0 { 4 } else { 2 },
            rows: [0; TABLES],
        };
        let mut at = 24;
        for t in 0..TABLES {
            if valid & (1 << t) != 0 {
                widths.rows[t] = u32_at(ts, at).ok_or(bad("short row counts"))?;
                at += 4;
            }
        }
        // CoreCLR's writer may add four bytes of extra data after the row counts.
        if heap_sizes & 0x40 != 0 {
            at += 4;
        }
        let base = ts.as_ptr() as usize - md.as_ptr() as usize;
        let mut tables = [Table::default(); TABLES];
        let mut start = base + at;
        for (t, table) in tables.iter_mut().enumerate() {
            let cols = schema::columns(t as u8).ok_or(bad("unknown table"))?;
            let mut offset = 0usize;
            for (i, &c) in cols.iter().enumerate() {
                let w = widths.of(c);
                table.cols[i] = (offset as u8, w as u8);
                offset += w;
            }
            table.start = start;
            table.rows = widths.rows[t];
            table.row_size = offset;
            start = start
                .checked_add(offset * widths.rows[t] as usize)
                .ok_or(bad("table sizes"))?;
        }
        if start > base + ts.len() {
            return Err(bad("tables run past the #~ stream"));
        }
        Ok(RawMetadata {
            md,
            strings,
            blobs,
            tables,
            widths,
            sorted,
        })
    }

    /// The number of rows of table `t` (the high byte of its tokens).
    pub fn rows(&self, t: u8) -> u32 {
        self.tables.get(t as usize).map_or(0, |x| x.rows)
    }

    /// The signature blob of a `StandAloneSig` token (a `calli` site's or a body's locals).
    pub fn standalone_sig(&self, token: u32) -> Result<&'a [u8]> {
        let t = schema::STANDALONE_SIG;
        self.blob(self.cell(t, Self::row_of(token, t)?, 0)?)
    }

    /// The MethodDef rows of TypeDef `type_def` (its `MethodList` up to the next type's).
    pub fn type_methods(&self, type_def: u32) -> Result<core::ops::Range<u32>> {
        let t = schema::TYPE_DEF;
        let row = Self::row_of(type_def, t)?;
        let methods = self.rows(schema::METHOD_DEF) + 1;
        let start = self.cell(t, row, 5)?.clamp(1, methods);
        let end = if row < self.rows(t) {
            self.cell(t, row + 1, 5)?.clamp(start, methods)
        } else {
            methods
        };
        Ok(start..end)
    }

    /// Every `AssemblyRef`'s name, in table order (an unreadable one as "").
    pub fn assembly_ref_names(&self) -> Vec<String> {
        let t = schema::ASSEMBLY_REF;
        (1..=self.rows(t))
            .map(|row| {
                self.cell(t, row, 6)
                    .and_then(|at| self.string(at))
                    .unwrap_or_default()
            })
            .collect()
    }

    /// The first `AssemblyRef` token whose name is one of `names` (tried in their order).
    pub fn find_assembly_ref(&self, names: &[&str]) -> Option<u32> {
        let t = schema::ASSEMBLY_REF;
        let refs: Vec<(u32, String)> = (1..=self.rows(t))
            .filter_map(|row| Some((row, self.string(self.cell(t, row, 6).ok()?).ok()?)))
            .collect();
        names.iter().find_map(|want| {
            refs.iter()
                .find(|(_, name)| name == want)
                .map(|(row, _)| (u32::from(t) << 24) | row)
        })
    }

    /// The generic method (a MethodDef or MemberRef token) a `MethodSpec` instantiates.
    pub fn method_spec_method(&self, token: u32) -> Result<u32> {
        let t = schema::METHOD_SPEC;
        self.decode(
            Coded::MethodDefOrRef,
            self.cell(t, Self::row_of(token, t)?, 0)?,
        )
    }

    /// Column `col` of row `row` (1-based) of table `t`, zero-extended.
    fn cell(&self, t: u8, row: u32, col: usize) -> Result<u32> {
        let table = &self.tables[t as usize];
        if row == 0 || row > table.rows {
            return Err(not_found());
        }
        let (offset, width) = table.cols[col];
        let at = table.start + (row as usize - 1) * table.row_size + offset as usize;
        let b = self.md.get(at..at + width as usize).ok_or(corrupt())?;
        Ok(match width {
            1 => u32::from(b[0]),
            2 => u32::from(u16::from_le_bytes([b[0], b[1]])),
            _ => u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
        })
    }

    /// A `#Strings` entry (UTF-8 up to its NUL; invalid UTF-8 replaced).
    fn string(&self, index: u32) -> Result<String> {
        let s = self.strings.get(index as usize..).ok_or(corrupt())?;
        let end = s.iter().position(|&b| b == 0).ok_or(corrupt())?;
        Ok(String::from_utf8_lossy(&s[..end]).into_owned())
    }

    /// A `#Blob` entry, after its compressed length.
    fn blob(&self, index: u32) -> Result<&'a [u8]> {
        let b = self.blobs.get(index as usize..).ok_or(corrupt())?;
        let (len, skip) = match *b.first().ok_or(corrupt())? {
            x if x & 0x80 == 0 => (usize::from(x), 1),
            x if x & 0xC0 == 0x80 => {
                let y = *b.get(1).ok_or(corrupt())?;
                ((usize::from(x & 0x3F) << 8) | usize::from(y), 2)
            }
            x if x & 0xE0 == 0xC0 => {
                let r = b.get(1..4).ok_or(corrupt())?;
                (
                    (usize::from(x & 0x1F) << 24)
                        | (usize::from(r[0]) << 16)
                        | (usize::from(r[1]) << 8)
                        | usize::from(r[2]),
                    4,
                )
            }
            _ => return Err(corrupt()),
        };
        b.get(skip..skip + len).ok_or(corrupt())
    }

    /// A coded index's token (nil tokens keep their table: `0x02000000`).
    fn decode(&self, coded: Coded, value: u32) -> Result<u32> {
        let bits = coded.tag_bits();
        let tag = (value & ((1 << bits) - 1)) as usize;
        let table = coded
            .tables()
            .get(tag)
            .copied()
            .flatten()
            .ok_or(corrupt())?;
        Ok((u32::from(table) << 24) | (value >> bits))
    }

    /// The row of `token` if it is of table `t`.
    fn row_of(token: u32, t: u8) -> Result<u32> {
        if token >> 24 != u32::from(t) {
            return Err(HResult::E_INVALIDARG);
        }
        Ok(token & 0x00FF_FFFF)
    }

    /// The owner of member `row` of a list column (`TypeDef.MethodList` / `FieldList`):
    /// the last TypeDef whose list starts at or before it (lists are in row order).
    fn owner_type(&self, list_col: usize, row: u32) -> Result<u32> {
        let n = self.rows(schema::TYPE_DEF);
        let (mut lo, mut hi) = (1u32, n + 1);
        // The first TypeDef whose list starts after `row`; its predecessor owns it.
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.cell(schema::TYPE_DEF, mid, list_col)? <= row {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        if lo <= 1 {
            return Err(not_found());
        }
        Ok((u32::from(schema::TYPE_DEF) << 24) | (lo - 1))
    }

    /// The first row of table `t` whose column `col` equals `key`: a binary search when
    /// the table is sorted (§II.22 keeps these sorted), a scan when it is not.
    fn find(&self, t: u8, col: usize, key: u32) -> Result<Option<u32>> {
        let n = self.rows(t);
        if self.sorted & (1 << t) == 0 {
            for row in 1..=n {
                if self.cell(t, row, col)? == key {
                    return Ok(Some(row));
                }
            }
            return Ok(None);
        }
        let (mut lo, mut hi) = (1u32, n + 1);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.cell(t, mid, col)? < key {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        Ok((lo <= n && self.cell(t, lo, col)? == key).then_some(lo))
    }

    /// The module's async and iterator state machines, from the attributes the compiler
    /// puts on each kickoff method (`AsyncStateMachineAttribute`,
    /// `IteratorStateMachineAttribute`, `AsyncIteratorStateMachineAttribute`, all of
    /// `System.Runtime.CompilerServices`), whose one argument is the state machine's type:
    /// per attribute, that type's name as the attribute's blob holds it (a `System.Type`
    /// is serialized as its name, `Namespace.Outer+Machine`) and the kickoff method's
    /// MethodDef token. No PDB is needed, and no compiler's naming rule: C#'s `<M>d__3`,
    /// VB's `VB$StateMachine_3_M` alike. Attributes whose blob is not that are skipped.
    pub fn state_machine_kickoffs(&self) -> Result<Vec<(String, u32)>> {
        const NAMES: [&str; 3] = [
            "System.Runtime.CompilerServices.AsyncStateMachineAttribute",
            "System.Runtime.CompilerServices.IteratorStateMachineAttribute",
            "System.Runtime.CompilerServices.AsyncIteratorStateMachineAttribute",
        ];
        let t = schema::CUSTOM_ATTRIBUTE;
        let parent_bits = Coded::HasCustomAttribute.tag_bits();
        // Per attribute constructor token: whether it is one of those (asked once each).
        let mut ctors: Vec<(u32, bool)> = Vec::new();
        let mut out = Vec::new();
        for row in 1..=self.rows(t) {
            let parent = self.cell(t, row, 0)?;
            // HasCustomAttribute: MethodDef is tag 0.
            if parent & ((1 << parent_bits) - 1) != 0 {
                continue;
            }
            let ctor = self.decode(Coded::CustomAttributeType, self.cell(t, row, 1)?)?;
            let wanted = match ctors.iter().find(|c| c.0 == ctor) {
                Some(c) => c.1,
                None => {
                    let name = self.attribute_type_name(ctor);
                    let w = name.is_some_and(|n| NAMES.contains(&n.as_str()));
                    ctors.push((ctor, w));
                    w
                }
            };
            if !wanted {
                continue;
            }
            let Some(machine) = type_argument(self.blob(self.cell(t, row, 2)?)?) else {
                continue;
            };
            let kickoff = (u32::from(schema::METHOD_DEF) << 24) | (parent >> parent_bits);
            out.push((machine, kickoff));
        }
        Ok(out)
    }

    /// The full name of the type whose constructor `ctor` (a MethodDef or a MemberRef) is.
    fn attribute_type_name(&self, ctor: u32) -> Option<String> {
        let class = match (ctor >> 24) as u8 {
            schema::METHOD_DEF => self.get_method_props(ctor).ok()?.class,
            schema::MEMBER_REF => self.get_member_ref_props(ctor).ok()?.parent,
            _ => return None,
        };
        match (class >> 24) as u8 {
            schema::TYPE_REF => Some(self.type_ref_full_name(class)),
            schema::TYPE_DEF => Some(self.type_full_name(class)),
            _ => None,
        }
    }

    /// Heap index widths and row counts, for tests and diagnostics.
    pub fn summary(&self) -> String {
        format!(
            "strings {} guids {} blobs {}; {} typedefs, {} methods, {} fields",
            self.widths.strings,
            self.widths.guids,
            self.widths.blobs,
            self.rows(schema::TYPE_DEF),
            self.rows(schema::METHOD_DEF),
            self.rows(schema::FIELD)
        )
    }
}

/// The `System.Type` argument of a custom attribute's value blob whose constructor takes
/// one: the prolog `01 00`, then the type's name as a SerString (a compressed length and
/// UTF-8; `FF` is null). `None` for any other blob.
fn type_argument(blob: &[u8]) -> Option<String> {
    let rest = blob.strip_prefix(&[0x01, 0x00])?;
    let (len, skip): (usize, usize) = match *rest.first()? {
        0xFF => return None,
        x if x & 0x80 == 0 => (usize::from(x), 1),
        x if x & 0xC0 == 0x80 => ((usize::from(x & 0x3F) << 8) | usize::from(*rest.get(1)?), 2),
        _ => return None,
    };
    let name = std::str::from_utf8(rest.get(skip..skip.checked_add(len)?)?).ok()?;
    (!name.is_empty()).then(|| name.to_owned())
}

/// Reads an integral constant of element type `ctype` from its blob.
fn integral_constant(ctype: u32, b: &[u8]) -> Option<i64> {
    let get = |n: usize| b.get(..n);
    Some(match ctype {
        0x02 | 0x05 => i64::from(*b.first()?),
        0x04 => i64::from(*b.first()? as i8),
        0x03 | 0x07 => i64::from(u16::from_le_bytes(get(2)?.try_into().ok()?)),
        0x06 => i64::from(i16::from_le_bytes(get(2)?.try_into().ok()?)),
        0x08 => i64::from(i32::from_le_bytes(get(4)?.try_into().ok()?)),
        0x09 => i64::from(u32::from_le_bytes(get(4)?.try_into().ok()?)),
        0x0A | 0x0B => i64::from_le_bytes(get(8)?.try_into().ok()?),
        _ => return None,
    })
}

impl MetadataRead for RawMetadata<'_> {
    fn get_method_props(&self, method: u32) -> Result<MethodProps> {
        let t = schema::METHOD_DEF;
        let row = Self::row_of(method, t)?;
        Ok(MethodProps {
            code_rva: self.cell(t, row, 0)?,
            impl_flags: self.cell(t, row, 1)?,
            attributes: self.cell(t, row, 2)?,
            name: self.string(self.cell(t, row, 3)?)?,
            sig: self.blob(self.cell(t, row, 4)?)?.to_vec(),
            class: self.owner_type(5, row)?,
        })
    }

    fn get_type_def_props(&self, type_def: u32) -> Result<TypeDefProps> {
        let t = schema::TYPE_DEF;
        let row = Self::row_of(type_def, t)?;
        let name = self.string(self.cell(t, row, 1)?)?;
        let namespace = self.string(self.cell(t, row, 2)?)?;
        Ok(TypeDefProps {
            name: join_name(&namespace, &name),
            flags: self.cell(t, row, 0)?,
            extends: self.decode(Coded::TypeDefOrRef, self.cell(t, row, 3)?)?,
        })
    }

    fn get_nested_class_props(&self, type_def: u32) -> Result<Option<u32>> {
        let row = Self::row_of(type_def, schema::TYPE_DEF)?;
        if row == 0 || row > self.rows(schema::TYPE_DEF) {
            return Err(not_found());
        }
        Ok(match self.find(schema::NESTED_CLASS, 0, row)? {
            Some(n) => {
                let outer = self.cell(schema::NESTED_CLASS, n, 1)?;
                (outer != 0).then_some((u32::from(schema::TYPE_DEF) << 24) | outer)
            }
            None => None,
        })
    }

    fn get_type_ref_props(&self, type_ref: u32) -> Result<TypeRefProps> {
        let t = schema::TYPE_REF;
        let row = Self::row_of(type_ref, t)?;
        let name = self.string(self.cell(t, row, 1)?)?;
        let namespace = self.string(self.cell(t, row, 2)?)?;
        Ok(TypeRefProps {
            resolution_scope: self.decode(Coded::ResolutionScope, self.cell(t, row, 0)?)?,
            name: join_name(&namespace, &name),
        })
    }

    fn get_member_ref_props(&self, member_ref: u32) -> Result<MemberRefProps> {
        let t = schema::MEMBER_REF;
        let row = Self::row_of(member_ref, t)?;
        Ok(MemberRefProps {
            parent: self.decode(Coded::MemberRefParent, self.cell(t, row, 0)?)?,
            name: self.string(self.cell(t, row, 1)?)?,
            sig: self.blob(self.cell(t, row, 2)?)?.to_vec(),
        })
    }

    fn get_field_props(&self, field: u32) -> Result<FieldProps> {
        let t = schema::FIELD;
        let row = Self::row_of(field, t)?;
        // Constant.Parent is a HasConstant coded index: Field is tag 0.
        let key = row << Coded::HasConstant.tag_bits();
        let (constant_type, constant) = match self.find(schema::CONSTANT, 2, key)? {
            Some(c) => {
                let ctype = self.cell(schema::CONSTANT, c, 0)?;
                let value = self.blob(self.cell(schema::CONSTANT, c, 3)?)?;
                (ctype, integral_constant(ctype, value))
            }
            None => (0, None),
        };
        Ok(FieldProps {
            attributes: self.cell(t, row, 0)?,
            name: self.string(self.cell(t, row, 1)?)?,
            sig: self.blob(self.cell(t, row, 2)?)?.to_vec(),
            class: self.owner_type(4, row)?,
            constant_type,
            constant,
        })
    }

    fn get_type_spec_from_token(&self, type_spec: u32) -> Result<Vec<u8>> {
        let t = schema::TYPE_SPEC;
        let row = Self::row_of(type_spec, t)?;
        Ok(self.blob(self.cell(t, row, 0)?)?.to_vec())
    }
}

#[cfg(test)]
mod tests;
