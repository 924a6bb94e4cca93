//! Finding the portable PDB of an image, in this order:
//!
//! 1. an embedded PDB (debug directory entry type 17: `MPDB`, the uncompressed size,
//!    then the PDB compressed with Deflate);
//! 2. beside the image: the file name of the path in the image's CodeView entry (`RSDS`:
//!    GUID, age, path), then `<image stem>.pdb`;
//! 3. the same names in each extra folder, in the order given;
//! 4. the CodeView path itself (where the compiler wrote the PDB, often a build folder).
//!
//! A PDB file found is checked against the CodeView entry: its `#Pdb` id must equal the
//! entry's GUID and the debug directory entry's time stamp. A mismatch is remembered and
//! the search goes on; if nothing matches, the mismatch is the error (naming both ids).

use std::io::Read;
use std::path::{Path, PathBuf};

use super::{MSF_MAGIC, PdbError, PdbId, PortablePdb};
use crate::rawmd::pe::{self, DebugEntry};

/// Debug directory entry types.
const CODEVIEW: u32 = 2;
const EMBEDDED_PORTABLE_PDB: u32 = 17;

/// The largest PDB read (file or decompressed): far above real ones (tens of MiB).
pub const MAX_PDB_BYTES: usize = 512 << 20;

/// An image's CodeView (`RSDS`) debug directory entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodeView {
    pub guid: [u8; 16],
    pub age: u32,
    /// The PDB path as the compiler wrote it (often the build machine's).
    pub path: String,
    /// The debug directory entry's time stamp: with the GUID, the PDB id.
    pub stamp: u32,
    /// Minor version `0x504D` ("PM"): the entry points at a portable PDB.
    pub portable: bool,
}

impl CodeView {
    /// The PDB id a matching portable PDB carries.
    pub fn pdb_id(&self) -> PdbId {
        let mut id = [0u8; 20];
        id[..16].copy_from_slice(&self.guid);
        id[16..].copy_from_slice(&self.stamp.to_le_bytes());
        PdbId(id)
    }
}

/// What an image's debug directory says about its PDB.
#[derive(Clone, Debug, Default)]
pub struct DebugInfo {
    pub codeview: Option<CodeView>,
    /// The embedded PDB, decompressed.
    pub embedded: Option<Vec<u8>>,
}

/// Where a PDB came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PdbSource {
    /// Embedded in the image.
    Embedded,
    /// A file.
    File(PathBuf),
}

/// A PDB found for an image, with where it came from.
#[derive(Debug)]
pub struct FoundPdb {
    pub pdb: PortablePdb,
    pub source: PdbSource,
}

fn image_error(path: &Path, what: impl Into<String>) -> PdbError {
    PdbError::Image {
        path: path.to_path_buf(),
        what: what.into(),
    }
}

/// Reads the debug directory of a PE image laid out as its file (`image`), decompressing
/// an embedded PDB. `path` only names the image in errors.
pub fn debug_info(image: &[u8], path: &Path) -> Result<DebugInfo, PdbError> {
    let read = |o: usize, n: usize| image.get(o..o.checked_add(n)?);
    let entries = pe::debug_directory(&read, true).map_err(|e| image_error(path, e.to_string()))?;
    let mut info = DebugInfo::default();
    for e in entries {
        let data = || {
            read(e.data_at, e.size).ok_or_else(|| {
                image_error(path, "a debug directory entry's data lies past the end")
            })
        };
        match e.kind {
            CODEVIEW if info.codeview.is_none() => info.codeview = codeview(&e, data()?),
            EMBEDDED_PORTABLE_PDB if info.embedded.is_none() => {
                info.embedded =
                    Some(inflate(data()?).map_err(|what| {
                        image_error(path, format!("embedded portable PDB: {what}"))
                    })?);
            }
            _ => {}
        }
    }
    Ok(info)
}

/// An `RSDS` record; `None` for other CodeView forms (`NB10`, …).
fn codeview(e: &DebugEntry, data: &[u8]) -> Option<CodeView> {
    if data.get(..4)? != b"RSDS" {
        return None;
    }
    let guid = data.get(4..20)?.try_into().ok()?;
    let age = u32::from_le_bytes(data.get(20..24)?.try_into().ok()?);
    let rest = data.get(24..)?;
    let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
    Some(CodeView {
        guid,
        age,
        path: String::from_utf8_lossy(&rest[..end]).into_owned(),
        stamp: e.stamp,
        portable: e.minor == 0x504D,
    })
}

/// An embedded PDB's data: `MPDB`, the uncompressed size, Deflate data.
fn inflate(data: &[u8]) -> Result<Vec<u8>, String> {
    if data.get(..4) != Some(b"MPDB") {
        return Err("no MPDB signature".into());
    }
    let size = data
        .get(4..8)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
        .ok_or("no uncompressed size")?;
    if size > MAX_PDB_BYTES {
        return Err(format!(
            "uncompressed size {size} is over the {MAX_PDB_BYTES}-byte limit"
        ));
    }
    // Reserve what the data can plausibly inflate to, not what a hostile header claims.
    let mut out = Vec::with_capacity(size.min(data.len().saturating_mul(16)));
    flate2::read::DeflateDecoder::new(&data[8..])
        .take(size as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| format!("Deflate data: {e}"))?;
    if out.len() != size {
        return Err(format!(
            "decompressed to {} bytes, the header says {size}",
            out.len()
        ));
    }
    Ok(out)
}

/// Reads a PDB file: a portable PDB, or the error a Windows PDB or a damaged file gets.
pub fn read_pdb_file(path: &Path) -> Result<PortablePdb, PdbError> {
    let io = |e: std::io::Error| PdbError::Io {
        path: path.to_path_buf(),
        error: e.to_string(),
    };
    let file = std::fs::File::open(path).map_err(io)?;
    let mut bytes = Vec::new();
    file.take(MAX_PDB_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() > MAX_PDB_BYTES {
        return Err(PdbError::Corrupt {
            what: format!("{}: over {MAX_PDB_BYTES} bytes", path.display()),
        });
    }
    if bytes.starts_with(MSF_MAGIC) {
        return Err(PdbError::WindowsPdb {
            path: path.to_path_buf(),
        });
    }
    PortablePdb::parse(bytes).map_err(|e| match e {
        PdbError::Corrupt { what } => PdbError::Corrupt {
            what: format!("{}: {what}", path.display()),
        },
        other => other,
    })
}

/// The last component of a path written on any OS (`C:\b\x.pdb` or `/b/x.pdb`).
fn file_name_of(path: &str) -> Option<&str> {
    let name = path.rsplit(['/', '\\']).next()?;
    (!name.is_empty()).then_some(name)
}

/// Finds and reads the portable PDB of the image at `image_path` (see the module docs for
/// the order), looking in `extra_dirs` after the image's own folder.
pub fn find_pdb(image_path: &Path, extra_dirs: &[PathBuf]) -> Result<FoundPdb, PdbError> {
    let io = |e: std::io::Error| PdbError::Io {
        path: image_path.to_path_buf(),
        error: e.to_string(),
    };
    let mut file = std::fs::File::open(image_path).map_err(io)?;
    let image = debug_parts(&mut file).map_err(io)?;
    find_pdb_for_image(&image, image_path, extra_dirs)
}

/// The parts of an image [`debug_info`] reads, at their offsets in a buffer of the file's
/// length whose other bytes are zeros (allocated zeroed: untouched pages cost no memory):
/// the headers and the debug directory, which lie in the first pages of the images
/// compilers and crossgen write, and each entry's data. A framework assembly of 15 MB is
/// then read for a few pages. An image laid out otherwise is read whole.
fn debug_parts(file: &mut std::fs::File) -> std::io::Result<Vec<u8>> {
    use std::io::{Seek, SeekFrom};
    const HEAD: usize = 64 << 10;
    let len = usize::try_from(file.metadata()?.len().min(2 << 30)).unwrap_or(usize::MAX);
    let whole = |file: &mut std::fs::File| -> std::io::Result<Vec<u8>> {
        let mut image = Vec::new();
        file.seek(SeekFrom::Start(0))?;
        file.take(2 << 30).read_to_end(&mut image)?;
        Ok(image)
    };
    if len <= 4 * HEAD {
        return whole(file);
    }
    let mut image = vec![0u8; len];
    file.read_exact(&mut image[..HEAD])?;
    let entries = {
        let head = &image[..HEAD];
        let read = |o: usize, n: usize| head.get(o..o.checked_add(n)?);
        pe::debug_directory(&read, true)
    };
    let Ok(entries) = entries else {
        return whole(file);
    };
    if entries.is_empty() {
        // No debug directory, or one past the first pages.
        return whole(file);
    }
    for e in entries {
        let Some(end) = e.data_at.checked_add(e.size).filter(|&end| end <= len) else {
            continue;
        };
        if e.size > 0 && e.data_at >= HEAD {
            file.seek(SeekFrom::Start(e.data_at as u64))?;
            file.read_exact(&mut image[e.data_at..end])?;
        } else if end > HEAD {
            return whole(file);
        }
    }
    Ok(image)
}

/// [`find_pdb`] over an image's bytes already read (`image_path` names it and gives the
/// folder to look beside).
pub fn find_pdb_for_image(
    image: &[u8],
    image_path: &Path,
    extra_dirs: &[PathBuf],
) -> Result<FoundPdb, PdbError> {
    let info = debug_info(image, image_path)?;
    let expected = info.codeview.as_ref().map(CodeView::pdb_id);
    if let Some(bytes) = info.embedded {
        let pdb = PortablePdb::parse(bytes).map_err(|e| PdbError::Corrupt {
            what: format!("{}: embedded PDB: {e}", image_path.display()),
        })?;
        return Ok(FoundPdb {
            pdb,
            source: PdbSource::Embedded,
        });
    }
    let mut candidates: Vec<PathBuf> = Vec::new();
    let mut names: Vec<String> = Vec::new();
    if let Some(n) = info.codeview.as_ref().and_then(|cv| file_name_of(&cv.path)) {
        names.push(n.to_owned());
    }
    if let Some(stem) = image_path.file_stem() {
        let n = format!("{}.pdb", stem.to_string_lossy());
        if !names.contains(&n) {
            names.push(n);
        }
    }
    let beside = image_path
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    for dir in std::iter::once(&beside).chain(extra_dirs) {
        for n in &names {
            let p = dir.join(n);
            if !candidates.contains(&p) {
                candidates.push(p);
            }
        }
    }
    if let Some(cv) = info.codeview.as_ref().filter(|cv| !cv.path.is_empty()) {
        let p = PathBuf::from(&cv.path);
        if !candidates.contains(&p) {
            candidates.push(p);
        }
    }
    let mut first_error = None;
    let mut looked = Vec::new();
    for p in candidates {
        if !p.is_file() {
            looked.push(p);
            continue;
        }
        let outcome = read_pdb_file(&p).and_then(|pdb| match expected {
            Some(id) if pdb.id() != id => Err(PdbError::Mismatch {
                pdb: p.clone(),
                image_id: id,
                pdb_id: pdb.id(),
            }),
            _ => Ok(pdb),
        });
        match outcome {
            Ok(pdb) => {
                return Ok(FoundPdb {
                    pdb,
                    source: PdbSource::File(p),
                });
            }
            Err(e) => {
                looked.push(p);
                first_error.get_or_insert(e);
            }
        }
    }
    if let Some(e) = first_error {
        return Err(e);
    }
    if info.codeview.is_none() {
        return Err(PdbError::NoDebugDirectory {
            image: image_path.to_path_buf(),
        });
    }
    Err(PdbError::NotFound {
        image: image_path.to_path_buf(),
        looked,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The installed runtime's large framework assemblies (when there is one): what
    /// [`debug_parts`] reads says what the whole file says.
    #[test]
    fn an_image_read_in_parts_has_the_debug_info_of_the_whole_file() {
        let Ok(versions) = std::fs::read_dir("/usr/share/dotnet/shared/Microsoft.NETCore.App")
        else {
            return;
        };
        let mut checked = 0;
        for v in versions.flatten() {
            for name in ["System.Private.CoreLib.dll", "System.Linq.dll"] {
                let path = v.path().join(name);
                let Ok(whole) = std::fs::read(&path) else {
                    continue;
                };
                let parts = debug_parts(&mut std::fs::File::open(&path).unwrap()).unwrap();
                assert_eq!(parts.len(), whole.len());
                let (a, b) = (
                    debug_info(&whole, &path).unwrap(),
                    debug_info(&parts, &path).unwrap(),
                );
                assert!(a.codeview.is_some(), "{}", path.display());
                assert_eq!(a.codeview, b.codeview, "{}", path.display());
                assert_eq!(a.embedded, b.embedded, "{}", path.display());
                checked += 1;
            }
        }
        eprintln!("{checked} images checked");
    }
}
