//! ReadyToRun images as the runtime's code lookup sees them, read from our own memory so
//! that the sampler can tell which guessed return addresses the runtime may be asked about.
//!
//! Why: `GetFunctionFromIP` on an address inside a ReadyToRun image ends in
//! `ReadyToRunJitManager::JitCodeToMethodInfo` (dotnet/runtime `vm/codeman.cpp`), which
//! finds the method-table entry (`RUNTIME_FUNCTION`) at or below the address and then
//! walks *down* the table to the nearest method whose entry point the runtime has handed
//! out (`GetMethodDescForEntryPoint`), with no lower bound. For an address in an image none
//! of whose methods at or below it has run, the walk reads past the start of the table
//! until it faults: a segfault in libcoreclr on the thread that asked, the sampler's. The
//! image's whole mapping is its code range there, so an address in its headers, metadata
//! or tables after the last method (all in the executable `.text` section of an image
//! crossgen2 wrote) takes the same path from the last method down.
//!
//! So for an address in a ReadyToRun image the sampler finds the method-table entry
//! itself (the `RuntimeFunctions` section, through the PE and ReadyToRun headers) and asks
//! the runtime only when the address lies inside a method's code and either the address is
//! a live frame's return address, or a method at or below it is known to have run (one
//! the runtime already answered for: the walk down stops there). Every read goes through
//! `process_vm_readv` ([`copy_own_memory`]), so a header that lies or an image that went
//! away gives "no", never a fault.

use crate::os::process::copy_own_memory;

/// `RUNTIME_FUNCTION` on x64: BeginAddress, EndAddress, UnwindData (RVAs).
const ENTRY: u64 = 12;
/// ReadyToRun section types (dotnet/runtime `inc/readytorun.h`).
const SECTION_RUNTIME_FUNCTIONS: u32 = 102;
const SECTION_HOT_COLD_MAP: u32 = 120;
/// `READYTORUN_SIGNATURE`: "RTR".
const R2R_SIGNATURE: u32 = 0x0052_5452;

/// What a mapped PE image (or any file mapping) is to the runtime's code lookup.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Image {
    /// Not a ReadyToRun image (an ELF library, an IL-only assembly): the runtime has no
    /// code range here, or one whose lookup is bounded.
    Other,
    /// A ReadyToRun image whose method table could not be read: only live frames' return
    /// addresses are asked about.
    Opaque,
    ReadyToRun(R2r),
}

/// A ReadyToRun image's method table, as mapped (RVA = address − base).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct R2r {
    pub base: u64,
    /// Address of the first `RUNTIME_FUNCTION`, and how many there are.
    pub table: u64,
    pub count: u32,
    /// The image splits methods into hot and cold parts; the runtime maps a cold part to
    /// its hot part's index before walking down, so a bound known for one index says
    /// nothing safe about another: guesses are never asked about.
    pub hot_cold: bool,
    /// A method at or below this index has run (the runtime answered for an address in it):
    /// its walk down from any index at or above stops there.
    pub proven: Option<u32>,
}

/// Where an address lies in a ReadyToRun image's method table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// Inside the code of the method-table entry `index` (a method or one of its funclets).
    Code(u32),
    /// Not inside any method's code: before the first, between two, after the last, or
    /// outside the image.
    Outside,
}

impl R2r {
    /// Where `addr` lies; `Outside` also when the table cannot be read.
    pub fn place(&self, pid: u32, addr: u64) -> Place {
        let Some(rva) = addr
            .checked_sub(self.base)
            .and_then(|r| u32::try_from(r).ok())
        else {
            return Place::Outside;
        };
        // The last entry whose BeginAddress ≤ rva (entries are sorted by it).
        let (mut lo, mut hi) = (0u32, self.count);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let Some((begin, _)) = self.entry(pid, mid) else {
                return Place::Outside;
            };
            if begin <= rva {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        let Some(index) = lo.checked_sub(1) else {
            return Place::Outside;
        };
        match self.entry(pid, index) {
            Some((begin, end)) if begin <= rva && rva < end => Place::Code(index),
            _ => Place::Outside,
        }
    }

    /// Whether the runtime may be asked about an address inside method-table entry
    /// `index` that is only a guess (not a live frame's return address): a method at or
    /// below it is known to have run.
    pub fn may_ask_guess(&self, index: u32) -> bool {
        !self.hot_cold && self.proven.is_some_and(|p| p <= index)
    }

    /// The runtime answered for an address inside entry `index`: a method at or below it
    /// has run.
    pub fn prove(&mut self, index: u32) {
        self.proven = Some(self.proven.map_or(index, |p| p.min(index)));
    }

    /// Entry `i`'s BeginAddress and EndAddress.
    fn entry(&self, pid: u32, i: u32) -> Option<(u32, u32)> {
        if i >= self.count {
            return None;
        }
        let at = self.table.checked_add(u64::from(i) * ENTRY)?;
        Some((read_u32(pid, at)?, read_u32(pid, at + 4)?))
    }
}

impl Image {
    /// Reads the image mapped at `base` (the start of the file's mapping at offset 0, which
    /// for a PE image the runtime mapped is its load address) from our own memory.
    pub fn read(pid: u32, base: u64) -> Image {
        match read_r2r(pid, base) {
            Ok(Some(r)) => Image::ReadyToRun(r),
            Ok(None) => Image::Other,
            Err(Unreadable) => Image::Opaque,
        }
    }
}

/// A ReadyToRun header was found, but not a method table the sampler can use.
struct Unreadable;

/// `Ok(None)`: not a ReadyToRun image. `Err`: a ReadyToRun image whose method table could
/// not be read or lies outside the image.
fn read_r2r(pid: u32, base: u64) -> Result<Option<R2r>, Unreadable> {
    // DOS header "MZ", then the PE header at e_lfanew.
    if read_u16(pid, base) != Some(0x5A4D) {
        return Ok(None);
    }
    let Some(lfanew) = read_u32(pid, base + 0x3C) else {
        return Ok(None);
    };
    let pe = base + u64::from(lfanew);
    if lfanew > 0x1000 || read_u32(pid, pe) != Some(0x0000_4550) {
        return Ok(None);
    }
    // The optional header (PE32+ only: 64-bit images) and its data directories.
    let opt = pe + 24;
    if read_u16(pid, opt) != Some(0x20B) {
        return Ok(None);
    }
    let size_of_image = u64::from(read_u32(pid, opt + 56).unwrap_or(0));
    let dirs = read_u32(pid, opt + 108).unwrap_or(0);
    // Directory 14: the CLI header.
    if dirs <= 14 {
        return Ok(None);
    }
    let cli = u64::from(read_u32(pid, opt + 112 + 14 * 8).unwrap_or(0));
    if cli == 0 || cli + 72 > size_of_image {
        return Ok(None);
    }
    // IMAGE_COR20_HEADER.ManagedNativeHeader (offset 64): the ReadyToRun header.
    let header = u64::from(read_u32(pid, base + cli + 64).unwrap_or(0));
    if header == 0 {
        return Ok(None);
    }
    if header + 16 > size_of_image || read_u32(pid, base + header) != Some(R2R_SIGNATURE) {
        return Err(Unreadable);
    }
    // READYTORUN_HEADER: signature, major, minor, flags, number of sections, then the
    // sections (type, RVA, size).
    let sections = read_u32(pid, base + header + 12).ok_or(Unreadable)?;
    if sections > 256 {
        return Err(Unreadable);
    }
    let mut functions = None;
    let mut hot_cold = false;
    for i in 0..u64::from(sections) {
        let s = base + header + 16 + i * 12;
        let (Some(kind), Some(rva), Some(size)) =
            (read_u32(pid, s), read_u32(pid, s + 4), read_u32(pid, s + 8))
        else {
            return Err(Unreadable);
        };
        match kind {
            SECTION_RUNTIME_FUNCTIONS => functions = Some((u64::from(rva), u64::from(size))),
            SECTION_HOT_COLD_MAP => hot_cold = size > 0,
            _ => {}
        }
    }
    let (rva, size) = functions.ok_or(Unreadable)?;
    let count = size / ENTRY;
    if rva == 0 || count == 0 || rva + size > size_of_image {
        return Err(Unreadable);
    }
    Ok(Some(R2r {
        base,
        table: base + rva,
        count: u32::try_from(count).map_err(|_| Unreadable)?,
        hot_cold,
        proven: None,
    }))
}

fn read_u32(pid: u32, at: u64) -> Option<u32> {
    let mut b = [0u8; 4];
    // SAFETY: (A8) `b` is a local buffer of the 4 bytes asked for.
    (unsafe { copy_own_memory(pid, b.as_mut_ptr(), at, 4) } == 4).then(|| u32::from_le_bytes(b))
}

fn read_u16(pid: u32, at: u64) -> Option<u16> {
    let mut b = [0u8; 2];
    // SAFETY: (A8) `b` is a local buffer of the 2 bytes asked for.
    (unsafe { copy_own_memory(pid, b.as_mut_ptr(), at, 2) } == 2).then(|| u16::from_le_bytes(b))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A minimal ReadyToRun image in our own memory: DOS and PE headers, a CLI header whose
    /// ManagedNativeHeader points at a ReadyToRun header with a RuntimeFunctions section of
    /// `methods` (begin, end) RVAs (and a HotColdMap section when `hot_cold`).
    pub(crate) fn fake_image(methods: &[(u32, u32)], hot_cold: bool) -> Vec<u8> {
        let mut img = vec![0u8; 0x4000];
        let put16 = |img: &mut Vec<u8>, at: usize, v: u16| {
            img[at..at + 2].copy_from_slice(&v.to_le_bytes())
        };
        let put32 = |img: &mut Vec<u8>, at: usize, v: u32| {
            img[at..at + 4].copy_from_slice(&v.to_le_bytes())
        };
        put16(&mut img, 0, 0x5A4D);
        put32(&mut img, 0x3C, 0x80);
        put32(&mut img, 0x80, 0x4550);
        let opt = 0x80 + 24;
        put16(&mut img, opt, 0x20B);
        put32(&mut img, opt + 56, 0x4000);
        put32(&mut img, opt + 108, 16);
        let cli = 0x200;
        put32(&mut img, opt + 112 + 14 * 8, cli as u32);
        put32(&mut img, opt + 112 + 14 * 8 + 4, 72);
        let header = 0x300;
        put32(&mut img, cli + 64, header as u32);
        put32(&mut img, header, R2R_SIGNATURE);
        put32(&mut img, header + 12, if hot_cold { 2 } else { 1 });
        let table = 0x400;
        put32(&mut img, header + 16, SECTION_RUNTIME_FUNCTIONS);
        put32(&mut img, header + 20, table as u32);
        put32(&mut img, header + 24, (methods.len() * 12) as u32);
        if hot_cold {
            put32(&mut img, header + 28, SECTION_HOT_COLD_MAP);
            put32(&mut img, header + 32, 0x380);
            put32(&mut img, header + 36, 8);
        }
        for (i, &(b, e)) in methods.iter().enumerate() {
            put32(&mut img, table + i * 12, b);
            put32(&mut img, table + i * 12 + 4, e);
        }
        img
    }

    #[test]
    fn the_method_table_is_found_and_searched() {
        let pid = crate::os::process::pid();
        let img = fake_image(
            &[(0x1000, 0x1040), (0x1040, 0x1100), (0x1200, 0x1210)],
            false,
        );
        let base = img.as_ptr() as u64;
        let Image::ReadyToRun(r) = Image::read(pid, base) else {
            panic!("not read as ReadyToRun");
        };
        assert_eq!((r.table, r.count, r.hot_cold), (base + 0x400, 3, false));
        // Headers before the first method, a gap between two, past the last: not code.
        assert_eq!(r.place(pid, base + 0x300), Place::Outside);
        assert_eq!(r.place(pid, base + 0x1000), Place::Code(0));
        assert_eq!(r.place(pid, base + 0x103F), Place::Code(0));
        assert_eq!(r.place(pid, base + 0x1040), Place::Code(1));
        assert_eq!(r.place(pid, base + 0x1150), Place::Outside);
        assert_eq!(r.place(pid, base + 0x120F), Place::Code(2));
        assert_eq!(r.place(pid, base + 0x1210), Place::Outside);
        assert_eq!(r.place(pid, base + 0x3F00), Place::Outside);
        assert_eq!(r.place(pid, base.wrapping_sub(8)), Place::Outside);
    }

    #[test]
    fn guesses_are_asked_only_above_a_method_that_ran() {
        let pid = crate::os::process::pid();
        let img = fake_image(
            &[(0x1000, 0x1040), (0x1040, 0x1100), (0x1200, 0x1210)],
            false,
        );
        let Image::ReadyToRun(mut r) = Image::read(pid, img.as_ptr() as u64) else {
            panic!("not read as ReadyToRun");
        };
        assert!(!r.may_ask_guess(0) && !r.may_ask_guess(2));
        r.prove(1);
        assert!(!r.may_ask_guess(0));
        assert!(r.may_ask_guess(1) && r.may_ask_guess(2));
        // A lower index proven later lowers the bound; a higher one does not raise it.
        r.prove(2);
        assert!(r.may_ask_guess(1));
        r.prove(0);
        assert!(r.may_ask_guess(0));
        // With hot and cold parts, never.
        let img = fake_image(&[(0x1000, 0x1040)], true);
        let Image::ReadyToRun(mut r) = Image::read(pid, img.as_ptr() as u64) else {
            panic!("not read as ReadyToRun");
        };
        assert!(r.hot_cold);
        r.prove(0);
        assert!(!r.may_ask_guess(0));
    }

    #[test]
    fn other_images_and_damaged_headers() {
        let pid = crate::os::process::pid();
        // Not a PE image (an ELF library starts with \x7fELF).
        let elf = b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0".to_vec();
        assert_eq!(Image::read(pid, elf.as_ptr() as u64), Image::Other);
        // An IL-only assembly: no ManagedNativeHeader.
        let mut il = fake_image(&[(0x1000, 0x1040)], false);
        il[0x200 + 64..0x200 + 68].copy_from_slice(&[0; 4]);
        assert_eq!(Image::read(pid, il.as_ptr() as u64), Image::Other);
        // A ReadyToRun header without a RuntimeFunctions section, or one outside the image.
        let mut none = fake_image(&[(0x1000, 0x1040)], false);
        none[0x300 + 16..0x300 + 20].copy_from_slice(&7u32.to_le_bytes());
        assert_eq!(Image::read(pid, none.as_ptr() as u64), Image::Opaque);
        let mut outside = fake_image(&[(0x1000, 0x1040)], false);
        outside[0x300 + 20..0x300 + 24].copy_from_slice(&0x3FF8u32.to_le_bytes());
        assert_eq!(Image::read(pid, outside.as_ptr() as u64), Image::Opaque);
        // Unmapped memory: nothing to read, not an image.
        assert_eq!(Image::read(pid, 0x1000), Image::Other);
    }
}
