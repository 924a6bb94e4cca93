//! Finding a module's metadata in its PE image (ECMA-335 §II.25): the DOS stub's pointer
//! to the PE header, the optional header's CLI data directory, the section table that maps
//! RVAs to file offsets, and the CLI header's metadata directory.

use super::RawError;

/// What [`locate`] reads of an image: `len` bytes at `offset`, if the image has them.
pub type ReadAt<'r, 'a> = &'r dyn Fn(usize, usize) -> Option<&'a [u8]>;

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// A section: where its bytes lie in memory (`va`, `virtual_size`) and in the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Section {
    va: u32,
    virtual_size: u32,
    raw_offset: u32,
    raw_size: u32,
}

/// The image offset of `rva`: itself in a mapped image (sections at their RVAs), or the
/// file offset in a flat one (the file's bytes as they are on disk).
fn offset_of(sections: &[Section], rva: u32, flat: bool) -> Option<usize> {
    if !flat {
        return Some(rva as usize);
    }
    sections.iter().find_map(|s| {
        let size = s.virtual_size.max(s.raw_size);
        (rva >= s.va && rva - s.va < size && rva - s.va < s.raw_size)
            .then(|| (rva - s.va + s.raw_offset) as usize)
    })
}

/// What the headers of an image say: its sections and data directories (RVA, size).
struct Headers {
    sections: Vec<Section>,
    dirs: Vec<(u32, u32)>,
}

/// Reads the DOS, PE and optional headers and the section table, each read bounded.
fn headers(read: ReadAt<'_, '_>) -> Result<Headers, RawError> {
    let bad = |what: &'static str| RawError::Image(what);
    let dos = read(0, 64).ok_or(bad("no DOS header"))?;
    if dos.get(..2) != Some(b"MZ") {
        return Err(bad("no MZ signature"));
    }
    let pe = u32_at(dos, 0x3C).ok_or(bad("no PE offset"))? as usize;
    if pe > 1 << 16 {
        return Err(bad("PE header offset out of range"));
    }
    let coff = read(pe, 24).ok_or(bad("no PE header"))?;
    if coff.get(..4) != Some(b"PE\0\0") {
        return Err(bad("no PE signature"));
    }
    let sections = u16_at(coff, 6).ok_or(bad("no section count"))? as usize;
    let opt_size = u16_at(coff, 20).ok_or(bad("no optional header size"))? as usize;
    let opt = read(pe + 24, opt_size).ok_or(bad("no optional header"))?;
    // The data directories follow the fixed fields: 96 bytes in PE32, 112 in PE32+.
    let dirs_at = match u16_at(opt, 0) {
        Some(0x10B) => 96,
        Some(0x20B) => 112,
        _ => return Err(bad("unknown optional header magic")),
    };
    let count = u32_at(opt, dirs_at - 4).ok_or(bad("no directory count"))? as usize;
    let dirs = (0..count.min(16))
        .map_while(|i| {
            Some((
                u32_at(opt, dirs_at + i * 8)?,
                u32_at(opt, dirs_at + i * 8 + 4)?,
            ))
        })
        .collect();
    let table = read(pe + 24 + opt_size, sections * 40).ok_or(bad("no section table"))?;
    let sections = table
        .chunks_exact(40)
        .filter_map(|s| {
            Some(Section {
                virtual_size: u32_at(s, 8)?,
                va: u32_at(s, 12)?,
                raw_size: u32_at(s, 16)?,
                raw_offset: u32_at(s, 20)?,
            })
        })
        .collect();
    Ok(Headers { sections, dirs })
}

/// The metadata's offset and size in an image laid out `flat` (as the file) or mapped.
/// Reads only what the headers say is there, each read bounded, so a short or damaged
/// image gives an error rather than a read past its end.
pub fn locate(read: ReadAt<'_, '_>, flat: bool) -> Result<(usize, usize), RawError> {
    let bad = |what: &'static str| RawError::Image(what);
    let h = headers(read)?;
    let cli_rva = match h.dirs.get(14) {
        Some(&(rva, _)) => rva,
        None => return Err(bad("no CLI header directory")),
    };
    if cli_rva == 0 {
        return Err(bad("not a managed image"));
    }
    let cli_at = offset_of(&h.sections, cli_rva, flat).ok_or(bad("CLI header outside sections"))?;
    let cli = read(cli_at, 72).ok_or(bad("no CLI header"))?;
    let (md_rva, md_size) = (
        u32_at(cli, 8).ok_or(bad("no metadata directory"))?,
        u32_at(cli, 12).ok_or(bad("no metadata directory"))?,
    );
    if md_rva == 0 || md_size < 32 {
        return Err(bad("no metadata"));
    }
    let md_at = offset_of(&h.sections, md_rva, flat).ok_or(bad("metadata outside sections"))?;
    Ok((md_at, md_size as usize))
}

/// Where `rva` lies in an image laid out as its file (through the section table): for
/// a method's code RVA, where its body starts.
pub fn file_offset(read: ReadAt<'_, '_>, rva: u32) -> Result<usize, RawError> {
    let h = headers(read)?;
    offset_of(&h.sections, rva, true).ok_or(RawError::Image("RVA outside every section"))
}

/// One entry of an image's debug directory (PE/COFF "Debug Directory").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DebugEntry {
    pub stamp: u32,
    pub major: u16,
    pub minor: u16,
    /// 2: CodeView, 16: reproducible, 17: embedded portable PDB, 19: PDB checksum.
    pub kind: u32,
    /// Where its data lies in the image as read (file offset if flat), and its size.
    pub data_at: usize,
    pub size: usize,
}

/// The entries of the image's debug directory (none if it has no such directory).
pub fn debug_directory(read: ReadAt<'_, '_>, flat: bool) -> Result<Vec<DebugEntry>, RawError> {
    let bad = |what: &'static str| RawError::Image(what);
    let h = headers(read)?;
    let (rva, size) = h.dirs.get(6).copied().unwrap_or((0, 0));
    if rva == 0 || size == 0 {
        return Ok(Vec::new());
    }
    let at = offset_of(&h.sections, rva, flat).ok_or(bad("debug directory outside sections"))?;
    // 28 bytes an entry; a real image has a handful.
    let n = (size as usize / 28).min(64);
    let dir = read(at, n * 28).ok_or(bad("debug directory past the end of the image"))?;
    Ok(dir
        .chunks_exact(28)
        .filter_map(|e| {
            let data_rva = u32_at(e, 20)?;
            let raw = u32_at(e, 24)?;
            let data_at = if flat {
                raw as usize
            } else {
                offset_of(&h.sections, data_rva, false)?
            };
            Some(DebugEntry {
                stamp: u32_at(e, 4)?,
                major: u16_at(e, 8)?,
                minor: u16_at(e, 10)?,
                kind: u32_at(e, 12)?,
                data_at,
                size: u32_at(e, 16)? as usize,
            })
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flat_offsets_go_through_the_section_table() {
        let s = [
            Section {
                va: 0x2000,
                virtual_size: 0x1800,
                raw_offset: 0x200,
                raw_size: 0x1A00,
            },
            Section {
                va: 0x4000,
                virtual_size: 0x100,
                raw_offset: 0x1C00,
                raw_size: 0x200,
            },
        ];
        assert_eq!(offset_of(&s, 0x2008, true), Some(0x208));
        assert_eq!(offset_of(&s, 0x4010, true), Some(0x1C10));
        assert_eq!(offset_of(&s, 0x1000, true), None);
        assert_eq!(offset_of(&s, 0x1000, false), Some(0x1000));
    }

    #[test]
    fn not_an_image_is_an_error_not_a_panic() {
        let bytes = vec![0u8; 200];
        let read = |o: usize, n: usize| bytes.get(o..o + n);
        assert!(locate(&read, true).is_err());
        let mut mz = bytes.clone();
        mz[0] = b'M';
        mz[1] = b'Z';
        mz[0x3C] = 0xF0; // past the end
        let read = |o: usize, n: usize| mz.get(o..o + n);
        assert!(matches!(locate(&read, true), Err(RawError::Image(_))));
    }
}
