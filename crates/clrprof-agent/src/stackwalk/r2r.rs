//! ReadyToRun images as the runtime's code lookup sees them, read from our own memory, so
//! that the sampler never hands the runtime an address whose lookup could run off the
//! image's method table.
//!
//! Why: `GetFunctionFromIP` on an address inside a ReadyToRun image ends in
//! `ReadyToRunJitManager::JitCodeToMethodInfo` (dotnet/runtime `vm/codeman.cpp`), which
//! finds the method-table entry (`RUNTIME_FUNCTION`) at or below the address and then
//! walks *down* the table while `ReadyToRunInfo::GetMethodDescForEntryPoint(begin of that
//! entry)` is NULL, with no lower bound. An entry is in that map once the runtime handed
//! the method's precompiled code out (`ReadyToRunInfo::GetEntryPoint` inserts it before
//! returning the code). For a guessed return address in an image none of whose methods at
//! or below it has run, the walk reads past the start of the table until it faults: a
//! segfault in libcoreclr on the sampler thread.
//!
//! So the sampler decides itself ([`R2r::judge`]): it finds the method-table entry holding
//! the address (the `RuntimeFunctions` section, through the PE, CLI and ReadyToRun
//! headers), and the method that starts at or below it from the image's
//! `MethodDefEntryPoints` section (a NativeArray indexed by MethodDef RID − 1, decoded
//! once per image: `vm/nativeformatreader.h`). The method's FunctionID comes from
//! `GetFunctionFromToken` (a table read) and whether the runtime handed its precompiled
//! code out from `GetNativeCodeStartAddresses` (one of the starts is the entry's begin):
//! then it ran, and the runtime's walk from any entry at or above it stops there
//! (`proven`). An address at a method's own entry is answered that way, without the
//! lookup; one in code the table does not explain (funclets, generic instantiations) is
//! asked of the runtime only at or above a proven entry. Every read goes through
//! `process_vm_readv` ([`copy_own_memory`]), so a header that lies or an image that went
//! away gives "no", never a fault.

use crate::os::process::copy_own_memory;

/// `RUNTIME_FUNCTION` on x64: BeginAddress, EndAddress, UnwindData (RVAs).
const ENTRY: u64 = 12;
/// ReadyToRun section types (dotnet/runtime `inc/readytorun.h`).
const SECTION_RUNTIME_FUNCTIONS: u32 = 102;
const SECTION_METHODDEF_ENTRYPOINTS: u32 = 103;
const SECTION_HOT_COLD_MAP: u32 = 120;
const SECTION_MANIFEST_METADATA: u32 = 112;
const SECTION_COMPONENT_ASSEMBLIES: u32 = 115;
/// `READYTORUN_SIGNATURE`: "RTR".
const R2R_SIGNATURE: u32 = 0x0052_5452;
/// The largest `MethodDefEntryPoints` section read (System.Private.CoreLib's is < 1 MiB),
/// and the most methods kept per image (8 bytes each).
const MAX_ENTRY_POINTS_BYTES: u64 = 16 << 20;
const MAX_DEFS: usize = 1 << 20;
/// A composite image's components kept (their index is packed into the tokens of
/// [`R2r::defs`]: the high byte), and the largest manifest metadata read.
const MAX_COMPONENTS: usize = 255;
const MAX_MANIFEST_BYTES: u64 = 16 << 20;

/// What a mapped PE image (or any file mapping) is to the runtime's code lookup.
#[derive(Debug, PartialEq, Eq)]
pub enum Image {
    /// Not a ReadyToRun image (an ELF library, an IL-only assembly): the runtime has no
    /// code range here whose lookup walks a method table.
    Other,
    /// A ReadyToRun image whose method table could not be read: nothing in it is asked.
    Opaque,
    ReadyToRun(Box<R2r>),
}

/// A ReadyToRun image's method table, as mapped (RVA = address − base).
#[derive(Debug, PartialEq, Eq)]
pub struct R2r {
    pub base: u64,
    /// Address of the first `RUNTIME_FUNCTION`, and how many there are.
    pub table: u64,
    pub count: u32,
    /// The image splits methods into hot and cold parts; the runtime maps a cold part to
    /// its hot part's index before walking down, so only a method's own entry is answered,
    /// nothing is asked.
    pub hot_cold: bool,
    /// (method-table entry, MethodDef token) of every method with precompiled code, sorted
    /// by entry; entries two methods share are left out. In a composite image the token's
    /// high byte (the MethodDef table's, 0x06, in a single assembly's image) is the index of
    /// the component the method belongs to ([`R2r::components`]).
    pub defs: Vec<(u32, u32)>,
    /// A composite image's component assemblies (`PublishReadyToRunComposite`: one image
    /// holds the precompiled code of several assemblies, each loaded as a module of its own
    /// whose image holds only its IL and metadata), in the order of its
    /// `ComponentAssemblies` section; empty for a single assembly's image.
    pub components: Vec<Component>,
    /// A method at or below this entry has run (its entry point is in the runtime's map):
    /// the runtime's walk down from any entry at or above stops there.
    pub proven: Option<u32>,
}

/// One assembly of a composite image.
#[derive(Debug, PartialEq, Eq)]
pub struct Component {
    /// Its simple name, from the composite's manifest metadata (the runtime finds a
    /// component's header by it: `NativeImage::GetComponentAssemblyHeader`).
    pub name: String,
    /// Its loaded module, once the module list names it (none: not loaded yet, so none of
    /// its code has run).
    pub module: Option<corprof::ModuleId>,
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

/// What the sampler does with an address in a ReadyToRun image ([`R2r::judge`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Judgement {
    /// Outside every method's code: not a return address into managed code.
    NotCode,
    /// At a method's own entry (`index`): its token, and the code's start (its begin).
    Method { index: u32, token: u32, start: u64 },
    /// Code the method-def table does not explain alone (`index`): a funclet of the method
    /// `token` starting at `start` below it, or another method's code (a generic
    /// instantiation); `None` when no method starts at or below it.
    Inside {
        index: u32,
        parent: Option<(u32, u32, u64)>,
    },
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

    /// What `addr` is: outside methods' code, a method's own entry, or code below which the
    /// nearest method starts (see [`Judgement`]).
    pub fn judge(&self, pid: u32, addr: u64) -> Judgement {
        let Place::Code(index) = self.place(pid, addr) else {
            return Judgement::NotCode;
        };
        let k = self.defs.partition_point(|d| d.0 <= index);
        let parent = k.checked_sub(1).and_then(|k| {
            let (e, token) = self.defs[k];
            let (begin, _) = self.entry(pid, e)?;
            Some((e, token, self.base + u64::from(begin)))
        });
        match parent {
            Some((e, token, start)) if e == index => Judgement::Method {
                index,
                token,
                start,
            },
            _ => Judgement::Inside { index, parent },
        }
    }

    /// Whether the runtime may be asked about an address inside method-table entry
    /// `index` (its walk down is bounded by a method known to have run).
    pub fn may_ask(&self, index: u32) -> bool {
        !self.hot_cold && self.proven.is_some_and(|p| p <= index)
    }

    /// A method at or below entry `index` is known to have run.
    pub fn prove(&mut self, index: u32) {
        self.proven = Some(self.proven.map_or(index, |p| p.min(index)));
    }

    /// The module and MethodDef token a [`R2r::defs`] token stands for: in a single
    /// assembly's image, `module` and the token itself; in a composite, its component's
    /// module (none until loaded) and the token with the MethodDef table's byte back.
    pub fn method_of(
        &self,
        module: corprof::ModuleId,
        token: u32,
    ) -> Option<(corprof::ModuleId, u32)> {
        if self.components.is_empty() {
            return Some((module, token));
        }
        let c = self.components.get((token >> 24) as usize)?;
        Some((c.module?, 0x0600_0000 | (token & 0x00FF_FFFF)))
    }

    /// A composite's components matched to the loaded modules (`modules`: each module's
    /// simple name, lower case, and id); true if any is.
    pub fn resolve(&mut self, modules: &[(String, corprof::ModuleId)]) -> bool {
        for c in &mut self.components {
            c.module = modules
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(&c.name))
                .map(|m| m.1);
        }
        self.components.iter().any(|c| c.module.is_some())
    }

    /// The address entry `e` begins at.
    pub fn start_of(&self, pid: u32, e: u32) -> Option<u64> {
        Some(self.base + u64::from(self.entry(pid, e)?.0))
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
    /// Reads the image whose headers are mapped at `base` (its load address, the base its
    /// RVAs are relative to) from our own memory.
    pub fn read(pid: u32, base: u64) -> Image {
        match read_r2r(pid, base) {
            Ok(Some(r)) => Image::ReadyToRun(Box::new(r)),
            Ok(None) => Image::Other,
            Err(Unreadable) => Image::Opaque,
        }
    }
}

/// `SizeOfImage` of the PE image whose headers are mapped at `base`, if it is one.
pub fn size_of_image(pid: u32, base: u64) -> Option<u64> {
    let (opt, _) = optional_header(pid, base)?;
    Some(u64::from(read_u32(pid, opt + 56)?))
}

/// A ReadyToRun header was found, but not a method table the sampler can use.
struct Unreadable;

/// The PE32+ optional header's address and the PE header's, for an image mapped at `base`.
fn optional_header(pid: u32, base: u64) -> Option<(u64, u64)> {
    // DOS header "MZ", then the PE header at e_lfanew.
    if read_u16(pid, base)? != 0x5A4D {
        return None;
    }
    let lfanew = read_u32(pid, base + 0x3C)?;
    let pe = base + u64::from(lfanew);
    if lfanew > 0x1000 || read_u32(pid, pe)? != 0x0000_4550 {
        return None;
    }
    // The optional header (PE32+ only: 64-bit images) and its data directories.
    let opt = pe + 24;
    (read_u16(pid, opt)? == 0x20B).then_some((opt, pe))
}

/// `Ok(None)`: not a ReadyToRun image. `Err`: a ReadyToRun image whose method table could
/// not be read or lies outside the image. The ReadyToRun header is at the CLI header's
/// `ManagedNativeHeader`, or, in an image without one, exported as `RTR_HEADER` (how the
/// runtime finds a composite's: `NativeImage::Open`); a composite is the image whose
/// header lists `ComponentAssemblies`.
fn read_r2r(pid: u32, base: u64) -> Result<Option<R2r>, Unreadable> {
    let Some((opt, _)) = optional_header(pid, base) else {
        return Ok(None);
    };
    let size_of_image = u64::from(read_u32(pid, opt + 56).unwrap_or(0));
    let dirs = read_u32(pid, opt + 108).unwrap_or(0);
    // Directory 14: the CLI header.
    let cli = if dirs > 14 {
        u64::from(read_u32(pid, opt + 112 + 14 * 8).unwrap_or(0))
    } else {
        0
    };
    let header = if cli != 0 {
        if cli + 72 > size_of_image {
            return Ok(None);
        }
        // IMAGE_COR20_HEADER.ManagedNativeHeader (offset 64): the ReadyToRun header.
        u64::from(read_u32(pid, base + cli + 64).unwrap_or(0))
    } else {
        exported_header(pid, base, opt, dirs, size_of_image)
    };
    if header == 0 {
        return Ok(None);
    }
    if header + 16 > size_of_image || read_u32(pid, base + header) != Some(R2R_SIGNATURE) {
        return Err(Unreadable);
    }
    // READYTORUN_HEADER: signature, major, minor, flags, then the core header: number of
    // sections, the sections (type, RVA, size).
    let listed = sections(pid, base + header + 12)?;
    let find = |kind: u32| listed.iter().find(|s| s.0 == kind).map(|s| (s.1, s.2));
    let hot_cold = find(SECTION_HOT_COLD_MAP).is_some_and(|s| s.1 > 0);
    let (rva, size) = find(SECTION_RUNTIME_FUNCTIONS).ok_or(Unreadable)?;
    let count = size / ENTRY;
    if rva == 0 || count == 0 || rva + size > size_of_image {
        return Err(Unreadable);
    }
    let count = u32::try_from(count).map_err(|_| Unreadable)?;
    let mut components = Vec::new();
    let defs = if let Some((at, size)) = find(SECTION_COMPONENT_ASSEMBLIES) {
        // Each component's own core header holds its MethodDefEntryPoints, whose entries
        // index the composite's one method table; its name is the manifest metadata's
        // AssemblyRef of the same index.
        let n = (size / 16).min(MAX_COMPONENTS as u64);
        let names = manifest_names(pid, base, find(SECTION_MANIFEST_METADATA), size_of_image)
            .ok_or(Unreadable)?;
        let mut defs = Vec::new();
        for i in 0..n {
            let core = read_u32(pid, base + at + i * 16 + 8).ok_or(Unreadable)?;
            let own = sections(pid, base + u64::from(core) + 4)?;
            let mut d = own
                .iter()
                .find(|s| s.0 == SECTION_METHODDEF_ENTRYPOINTS)
                .map(|s| entry_points(pid, base, (s.1, s.2), size_of_image, count))
                .unwrap_or_default();
            d.truncate(MAX_DEFS.saturating_sub(defs.len()));
            defs.extend(
                d.into_iter()
                    .map(|(e, t)| (e, (i as u32) << 24 | (t & 0x00FF_FFFF))),
            );
            components.push(Component {
                name: names.get(i as usize).cloned().unwrap_or_default(),
                module: None,
            });
        }
        defs.sort_unstable();
        defs
    } else {
        find(SECTION_METHODDEF_ENTRYPOINTS)
            .map(|s| entry_points(pid, base, s, size_of_image, count))
            .unwrap_or_default()
    };
    Ok(Some(R2r {
        base,
        table: base + rva,
        count,
        hot_cold,
        defs,
        components,
        proven: None,
    }))
}

/// A core header's sections at `at` (its section count, then (type, RVA, size) each); each
/// is checked against the image's size where it is used.
fn sections(pid: u32, at: u64) -> Result<Vec<(u32, u64, u64)>, Unreadable> {
    let count = read_u32(pid, at).ok_or(Unreadable)?;
    if count > 256 {
        return Err(Unreadable);
    }
    (0..u64::from(count))
        .map(|i| {
            let s = at + 4 + i * 12;
            match (read_u32(pid, s), read_u32(pid, s + 4), read_u32(pid, s + 8)) {
                (Some(kind), Some(rva), Some(size)) => Ok((kind, u64::from(rva), u64::from(size))),
                _ => Err(Unreadable),
            }
        })
        .collect()
}

/// A `MethodDefEntryPoints` section (RVA, size) read and decoded ([`method_defs`]).
fn entry_points(
    pid: u32,
    base: u64,
    (at, size): (u64, u64),
    size_of_image: u64,
    count: u32,
) -> Vec<(u32, u32)> {
    if at + size > size_of_image || size > MAX_ENTRY_POINTS_BYTES {
        return Vec::new();
    }
    let mut bytes = vec![0u8; size as usize];
    if copy_all(pid, &mut bytes, base + at) {
        method_defs(&bytes, at as u32, count)
    } else {
        Vec::new()
    }
}

/// The RVA of the ReadyToRun header a composite image exports as `RTR_HEADER`, or 0.
fn exported_header(pid: u32, base: u64, opt: u64, dirs: u32, size_of_image: u64) -> u64 {
    // Directory 0: the export directory (IMAGE_EXPORT_DIRECTORY).
    if dirs == 0 {
        return 0;
    }
    let Some(dir) = read_u32(pid, opt + 112).map(u64::from) else {
        return 0;
    };
    if dir == 0 || dir + 40 > size_of_image {
        return 0;
    }
    let field = |off: u64| read_u32(pid, base + dir + off).map(u64::from);
    let (Some(functions), Some(names), Some(fns), Some(name_rvas), Some(ordinals)) =
        (field(20), field(24), field(28), field(32), field(36))
    else {
        return 0;
    };
    for i in 0..names.min(64) {
        let Some(name) = read_u32(pid, base + name_rvas + 4 * i).map(u64::from) else {
            return 0;
        };
        let mut text = [0u8; 11];
        // SAFETY: (A8) `text` is a local buffer of the 11 bytes asked for.
        let n = unsafe { copy_own_memory(pid, text.as_mut_ptr(), base + name, 11) };
        if n != 11 || &text != b"RTR_HEADER\0" {
            continue;
        }
        let Some(ordinal) = read_u16(pid, base + ordinals + 2 * i).map(u64::from) else {
            return 0;
        };
        if ordinal >= functions {
            return 0;
        }
        return read_u32(pid, base + fns + 4 * ordinal).map_or(0, u64::from);
    }
    0
}

/// The simple names of a composite's manifest AssemblyRefs, in table order (component `i`
/// is the `i`-th: `NativeImage::Initialize`).
fn manifest_names(
    pid: u32,
    base: u64,
    section: Option<(u64, u64)>,
    size_of_image: u64,
) -> Option<Vec<String>> {
    let (at, size) = section?;
    if at + size > size_of_image || size > MAX_MANIFEST_BYTES {
        return None;
    }
    let mut bytes = vec![0u8; size as usize];
    if !copy_all(pid, &mut bytes, base + at) {
        return None;
    }
    let md = clrprof_metadata::RawMetadata::parse(&bytes).ok()?;
    Some(md.assembly_ref_names())
}

/// Copies `buf.len()` bytes from `from` in our own memory; false on a short read.
fn copy_all(pid: u32, buf: &mut [u8], from: u64) -> bool {
    let mut done = 0;
    while done < buf.len() {
        let rest = &mut buf[done..];
        // SAFETY: (A8) `rest` is a live local buffer of `rest.len()` bytes.
        let n = unsafe { copy_own_memory(pid, rest.as_mut_ptr(), from + done as u64, rest.len()) };
        if n == 0 {
            return false;
        }
        done += n;
    }
    true
}

/// The `MethodDefEntryPoints` section (`bytes`, mapped at RVA `rva`) decoded: (method-table
/// entry, MethodDef token) of every method with precompiled code whose entry is below
/// `count`, sorted by entry, entries two methods share left out. A malformed element is
/// skipped, never trusted (`ReadyToRunInfo::GetEntryPoint` reads the same way).
pub fn method_defs(bytes: &[u8], rva: u32, count: u32) -> Vec<(u32, u32)> {
    let r = Reader { bytes, rva };
    let mut defs = Vec::new();
    let Some((base, header)) = r.unsigned(rva) else {
        return defs;
    };
    let elements = header >> 2;
    let index_size = header & 3;
    for index in 0..elements {
        if defs.len() >= MAX_DEFS {
            break;
        }
        let Some(at) = r.array_at(base, index_size, index) else {
            continue;
        };
        let Some((_, id)) = r.unsigned(at) else {
            continue;
        };
        let entry = if id & 1 != 0 { id >> 2 } else { id >> 1 };
        if entry < count {
            defs.push((entry, 0x0600_0000 | (index + 1)));
        }
    }
    defs.sort_unstable();
    // Entries two methods share say nothing about either.
    let mut kept = Vec::with_capacity(defs.len());
    let mut i = 0;
    while i < defs.len() {
        let mut j = i + 1;
        while j < defs.len() && defs[j].0 == defs[i].0 {
            j += 1;
        }
        if j == i + 1 {
            kept.push(defs[i]);
        }
        i = j;
    }
    kept
}

/// A NativeFormat reader over a section's bytes, addressed by RVA
/// (`vm/nativeformatreader.h`).
struct Reader<'a> {
    bytes: &'a [u8],
    rva: u32,
}

impl Reader<'_> {
    fn byte(&self, at: u32) -> Option<u32> {
        let i = at.checked_sub(self.rva)? as usize;
        self.bytes.get(i).map(|&b| u32::from(b))
    }

    fn le(&self, at: u32, n: u32) -> Option<u32> {
        (0..n).try_fold(0u32, |v, k| {
            Some(v | self.byte(at.checked_add(k)?)? << (8 * k))
        })
    }

    /// `NativeReader::DecodeUnsigned`: (the offset after the value, the value).
    fn unsigned(&self, at: u32) -> Option<(u32, u32)> {
        let b = |k: u32| self.byte(at.checked_add(k)?);
        let v = b(0)?;
        Some(if v & 1 == 0 {
            (at + 1, v >> 1)
        } else if v & 2 == 0 {
            (at + 2, (v >> 2) | b(1)? << 6)
        } else if v & 4 == 0 {
            (at + 3, (v >> 3) | b(1)? << 5 | b(2)? << 13)
        } else if v & 8 == 0 {
            (at + 4, (v >> 4) | b(1)? << 4 | b(2)? << 12 | b(3)? << 20)
        } else if v & 16 == 0 {
            (at + 5, self.le(at.checked_add(1)?, 4)?)
        } else {
            return None;
        })
    }

    /// `NativeArray::TryGetAt`: the offset of element `index`, if present.
    fn array_at(&self, base: u32, index_size: u32, index: u32) -> Option<u32> {
        const BLOCK: u32 = 16;
        let block = index / BLOCK;
        let mut offset = match index_size {
            0 => self.byte(base.checked_add(block)?)?,
            1 => self.le(base.checked_add(2 * block)?, 2)?,
            _ => self.le(base.checked_add(4 * block)?, 4)?,
        }
        .checked_add(base)?;
        let mut bit = BLOCK >> 1;
        while bit > 0 {
            let (next, val) = self.unsigned(offset)?;
            if index & bit != 0 {
                if val & 2 != 0 {
                    offset = offset.checked_add(val >> 2)?;
                    bit >>= 1;
                    continue;
                }
            } else if val & 1 != 0 {
                offset = next;
                bit >>= 1;
                continue;
            }
            // A special leaf: the one element left in this subtree.
            if val & 3 == 0 && (val >> 2) == index & (BLOCK - 1) {
                return Some(next);
            }
            return None;
        }
        Some(offset)
    }
}

/// Methods tried, lowest entry first, when an image is first read, to seed `proven` with
/// the lowest one that ran (most never loaded: `GetFunctionFromToken` says so at once).
const SEED_METHODS: usize = 4096;
/// How soon a method found not to have run is asked about again, and how often the
/// module list is read again while addresses in unknown images turn up.
const RECHECK_NS: u64 = 100_000_000;
const ENUMERATE_NS: u64 = 1_000_000_000;
/// Bounds on what the guard keeps.
const MAX_MODULES: usize = 8192;
const MAX_NOT_RUN: usize = 1 << 16;
const MAX_COMPOSITES: usize = 16;

/// What the guard kept from the runtime, and what it answered itself, for the agent's log.
#[derive(Debug, Default, Clone, Copy)]
pub struct R2rStats {
    /// Return-address candidates answered from an image's method-def table (the method's
    /// own entry, its precompiled code handed out), without `GetFunctionFromIP`.
    pub answered: u64,
    /// Candidates in code the table does not explain, asked of the runtime above a
    /// method known to have run.
    pub asked: u64,
    /// Not asked (dropped): outside every method's code (headers, metadata, tables,
    /// padding).
    pub outside_code: u64,
    /// Not asked (dropped): at a method's own entry whose precompiled code the runtime
    /// never handed out (a stale word, not a frame).
    pub never_ran: u64,
    /// Not asked (dropped): in code no method known to have run bounds the runtime's walk
    /// for, or in an image whose method table could not be read or that no loaded module
    /// names.
    pub unproven: u64,
    /// Asked, but the function the runtime named does not hold the address (its walk went
    /// down past code that never ran): dropped.
    pub unverified: u64,
    /// Debug builds: answers from the table compared with `GetFunctionFromIP`'s, and how
    /// many differed.
    pub compared: u64,
    pub disagreed: u64,
}

/// What the sampler does with a return-address candidate ([`Guard::verdict`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Not in a ReadyToRun image: the runtime's lookup is bounded there; ask as always.
    Ask,
    /// The method `function`, whose code version starting at `start` holds the address.
    Known { function: u64, start: u64 },
    /// Ask the runtime (its walk is bounded), then keep the answer only if it is
    /// `parent` (the method starting below, 0: none) or its code holds the address.
    AskChecked { parent: u64 },
    /// Outside every method's code: not a return address into managed code.
    NotCode,
    /// Not safe to ask about, or a stale word: no frame now (may be one later).
    Drop,
}

/// How many images' read lines debug builds keep for the log.
const MAX_READ_LOG: usize = 64;

/// The loaded modules' ReadyToRun images and what is known of them, on the sampler thread.
#[derive(Default)]
pub struct Guard {
    /// Loaded modules: (load address, end, module), sorted by load address.
    modules: Vec<(u64, u64, corprof::ModuleId)>,
    /// PE images met that no loaded module named at the last enumeration (their headers'
    /// address), and when: the modules are read again at once for a new one (an assembly
    /// just loaded), for one already met at most every [`ENUMERATE_NS`].
    unknown: std::collections::HashMap<u64, u64>,
    /// Images read, by load address.
    /// (Keyed by load address and module: an unloaded assembly's place may be reused.)
    images: std::collections::HashMap<(u64, usize), Image>,
    /// Composite images (no module's load address: their components are modules of their
    /// own), by their headers' address; read once, their components matched to modules
    /// at every enumeration.
    composites: std::collections::HashMap<u64, Image>,
    /// The loaded modules' simple names (lower case) at the last enumeration.
    names: Vec<(String, corprof::ModuleId)>,
    /// Methods found not to have run (image, entry) and when.
    not_run: std::collections::HashMap<(u64, u32), u64>,
    /// Addresses dropped and when: judged again only after [`RECHECK_NS`] (the scans meet
    /// the same stale words at every sample).
    dropped: std::collections::HashMap<u64, u64>,
    pub stats: R2rStats,
    /// Debug builds: one line per image read (at most [`MAX_READ_LOG`]), for the agent's
    /// log at the end (the sampler logs them: this room sits below the log's).
    pub read_log: Vec<String>,
}

impl Guard {
    /// What to do with `addr` (a return address − 1 a `call` precedes, in an executable
    /// mapping of a file or of a PE image in anonymous memory, whose image's headers, if
    /// found, are at `headers`; `native`: an ELF file's own code, no PE image).
    pub fn verdict(
        &mut self,
        info: &corprof::ProfilerInfo,
        pid: u32,
        addr: u64,
        headers: Option<u64>,
        native: bool,
    ) -> Verdict {
        let now = crate::os::clock::monotonic_ns();
        if self
            .dropped
            .get(&addr)
            .is_some_and(|&t| now.saturating_sub(t) < RECHECK_NS)
        {
            return Verdict::Drop;
        }
        let v = self.judge(info, pid, addr, headers, native, now);
        if v == Verdict::Drop {
            if self.dropped.len() > MAX_NOT_RUN {
                self.dropped.clear();
            }
            self.dropped.insert(addr, now);
        }
        v
    }

    fn judge(
        &mut self,
        info: &corprof::ProfilerInfo,
        pid: u32,
        addr: u64,
        headers: Option<u64>,
        native: bool,
        now: u64,
    ) -> Verdict {
        // A PE image's headers ("MZ") found below the address: the image it lies in. A
        // library's own code (`native`: an ELF executable segment) has no method table.
        let pe = headers.filter(|&h| read_u16(pid, h) == Some(0x5A4D));
        // Known where no module was loaded, or a module's range now holding another image
        // (an unloaded assembly's place reused): the module list is stale. So is an
        // address no module holds that is not proven a library's own code: a PE image
        // may lie there whose headers were not found (it is never asked about).
        let stale = |m: Option<(u64, u64, corprof::ModuleId)>| match m {
            None => pe.is_some() || !native,
            Some((base, _, _)) => pe.is_some_and(|h| h != base),
        };
        let mut module = self.module_at(addr);
        if stale(module) {
            let h = pe.or(headers).unwrap_or(0);
            if self
                .unknown
                .get(&h)
                .is_none_or(|&t| now.saturating_sub(t) > ENUMERATE_NS)
            {
                // The runtime may have registered the image's code already, before the
                // module shows in the list: read it again at once for a new image.
                self.enumerate(info, pid);
                if self.unknown.len() > MAX_MODULES {
                    self.unknown.clear();
                }
                self.unknown.insert(h, now);
                module = self.module_at(addr);
            }
            if stale(module) {
                // No module's: a composite image's code, whose methods belong to the
                // modules of its components.
                if module.is_none()
                    && let Some(h) = pe
                {
                    return self.judge_composite(info, pid, addr, h, now);
                }
                self.stats.unproven += 1;
                return Verdict::Drop;
            }
        }
        let Some(module) = module else {
            return Verdict::Ask;
        };
        let (base, _, id) = module;
        let read_log = &mut self.read_log;
        let image = self.images.entry((base, id.0)).or_insert_with(|| {
            let image = Image::read(pid, base);
            seed(info, pid, image, id, base, headers, read_log)
        });
        decide(
            &mut self.stats,
            &mut self.not_run,
            info,
            pid,
            addr,
            (base, id),
            image,
            now,
        )
    }

    /// [`judge`](Self::judge) for an address in the PE image whose headers are at `h` and
    /// that no loaded module is: a composite image's, or dropped.
    fn judge_composite(
        &mut self,
        info: &corprof::ProfilerInfo,
        pid: u32,
        addr: u64,
        h: u64,
        now: u64,
    ) -> Verdict {
        if !self.composites.contains_key(&h) {
            if self.composites.len() >= MAX_COMPOSITES {
                self.stats.unproven += 1;
                return Verdict::Drop;
            }
            let mut image = Image::read(pid, h);
            if let Image::ReadyToRun(r) = &mut image {
                r.resolve(&self.names);
            }
            let image = seed(
                info,
                pid,
                image,
                corprof::ModuleId(0),
                h,
                Some(h),
                &mut self.read_log,
            );
            self.composites.insert(h, image);
        }
        let Some(image) = self.composites.get_mut(&h) else {
            return Verdict::Drop;
        };
        match image {
            Image::ReadyToRun(r) if !r.components.is_empty() => decide(
                &mut self.stats,
                &mut self.not_run,
                info,
                pid,
                addr,
                (h, corprof::ModuleId(0)),
                image,
                now,
            ),
            // Not a composite: an image no loaded module names.
            _ => {
                self.stats.unproven += 1;
                Verdict::Drop
            }
        }
    }

    /// An interrupted IP the runtime named a managed function for: executing code, whose
    /// method's entry point the runtime handed out, so its walk down stopped at or below
    /// the IP's entry; entries at or above it are bounded too.
    pub fn prove_executing(&mut self, pid: u32, ip: u64) {
        let Some((base, _, id)) = self.module_at(ip) else {
            // A composite's code (no module's): its one method table is proven the same.
            for image in self.composites.values_mut() {
                if let Image::ReadyToRun(r) = image
                    && !r.hot_cold
                    && let Place::Code(i) = r.place(pid, ip)
                {
                    r.prove(i);
                }
            }
            return;
        };
        if let Some(Image::ReadyToRun(r)) = self.images.get_mut(&(base, id.0))
            && !r.hot_cold
            && let Place::Code(i) = r.place(pid, ip)
        {
            r.prove(i);
        }
    }

    fn module_at(&self, addr: u64) -> Option<(u64, u64, corprof::ModuleId)> {
        let i = self.modules.partition_point(|m| m.0 <= addr);
        let m = *self.modules.get(i.checked_sub(1)?)?;
        (addr < m.1).then_some(m)
    }

    /// Reads the loaded modules' load addresses again (`EnumModules`, `GetModuleInfo2`);
    /// an image no longer loaded there takes what was known of it along.
    fn enumerate(&mut self, info: &corprof::ProfilerInfo, pid: u32) {
        let Ok(ids) = info.enum_modules() else {
            return;
        };
        let mut names = Vec::new();
        let mut modules: Vec<(u64, u64, corprof::ModuleId)> = ids
            .into_iter()
            .take(MAX_MODULES)
            .filter_map(|id| {
                let m = info.get_module_info2(id).ok()?;
                // A composite's component is found by its simple name: the file's.
                let file = m.name.rsplit(['/', '\\']).next().unwrap_or_default();
                let simple = file
                    .strip_suffix(".dll")
                    .or_else(|| file.strip_suffix(".exe"))
                    .unwrap_or(file);
                names.push((simple.to_ascii_lowercase(), id));
                // A flat layout (the file as it lies on disk) is not where code runs.
                if m.flags & corprof::sys::COR_PRF_MODULE_FLAT_LAYOUT != 0 {
                    return None;
                }
                let base = m.base_address as u64;
                let size = size_of_image(pid, base)?;
                Some((base, base.checked_add(size)?, id))
            })
            .collect();
        modules.sort_unstable_by_key(|m| m.0);
        self.images
            .retain(|k, _| modules.iter().any(|m| (m.0, m.2.0) == *k));
        self.not_run
            .retain(|(b, _), _| modules.iter().any(|m| m.0 == *b));
        self.dropped.clear();
        self.modules = modules;
        // Kept: composites with a component loaded. One whose components all went (an
        // unloaded context's) must not judge another image there, and an image that was
        // no composite is read again if met again (it must not hold a place meanwhile).
        self.composites.retain(|_, image| match image {
            Image::ReadyToRun(r) => r.resolve(&names),
            _ => false,
        });
        self.names = names;
    }
}

/// A just-read image, its `proven` seeded with the lowest of its first [`SEED_METHODS`]
/// methods that ran (`module`: the image's module; a composite's methods name their
/// components'); debug builds log a line of it.
fn seed(
    info: &corprof::ProfilerInfo,
    pid: u32,
    mut image: Image,
    module: corprof::ModuleId,
    base: u64,
    headers: Option<u64>,
    read_log: &mut Vec<String>,
) -> Image {
    let t0 = crate::os::clock::monotonic_ns();
    if let Image::ReadyToRun(r) = &mut image {
        for k in 0..r.defs.len().min(SEED_METHODS) {
            let (e, token) = r.defs[k];
            if let Some((m, t)) = r.method_of(module, token)
                && info.get_function_from_token(m, t).is_ok_and(|f| f.0 != 0)
                && let Some(start) = r.start_of(pid, e)
                && ran(info, m, t, start).is_some()
            {
                r.prove(e);
                break;
            }
        }
        if cfg!(debug_assertions) && read_log.len() < MAX_READ_LOG {
            let name = if r.components.is_empty() {
                info.get_module_info2(module)
                    .map(|m| m.name)
                    .unwrap_or_default()
            } else {
                format!(
                    "(composite of {} assemblies, {} loaded)",
                    r.components.len(),
                    r.components.iter().filter(|c| c.module.is_some()).count()
                )
            };
            read_log.push(format!(
                "ReadyToRun image {name} at {base:#x} (headers mapped at {headers:x?}): {} method-table entries, {} methods with precompiled code, hot/cold {}, proven {:?} at first; read in {} µs",
                r.count,
                r.defs.len(),
                r.hot_cold,
                r.proven,
                crate::os::clock::monotonic_ns().saturating_sub(t0) / 1000
            ));
        }
    }
    image
}

/// The verdict on `addr` in `image` (read at `key.0`; `key.1` its module, or 0 for a
/// composite's, whose methods name their components').
#[allow(clippy::too_many_arguments)]
fn decide(
    stats: &mut R2rStats,
    not_run: &mut std::collections::HashMap<(u64, u32), u64>,
    info: &corprof::ProfilerInfo,
    pid: u32,
    addr: u64,
    (base, id): (u64, corprof::ModuleId),
    image: &mut Image,
    now: u64,
) -> Verdict {
    let r = match image {
        Image::Other => return Verdict::Ask,
        Image::Opaque => {
            stats.unproven += 1;
            return Verdict::Drop;
        }
        Image::ReadyToRun(r) => r,
    };
    if not_run.len() > MAX_NOT_RUN {
        not_run.clear();
    }
    // The method starting at entry `e`, if the runtime handed its code out.
    let mut method = |r: &mut R2r, e: u32, token: u32, start: u64| -> Option<u64> {
        if not_run
            .get(&(base, e))
            .is_some_and(|&t| now.saturating_sub(t) < RECHECK_NS)
        {
            return None;
        }
        // A composite's component not loaded yet: none of its code ran.
        let found = r
            .method_of(id, token)
            .and_then(|(m, t)| ran(info, m, t, start));
        match found {
            Some(f) => {
                not_run.remove(&(base, e));
                r.prove(e);
                Some(f)
            }
            None => {
                not_run.insert((base, e), now);
                None
            }
        }
    };
    match r.judge(pid, addr) {
        Judgement::NotCode => {
            stats.outside_code += 1;
            Verdict::NotCode
        }
        Judgement::Method {
            index,
            token,
            start,
        } => match method(r, index, token, start) {
            Some(function) => {
                stats.answered += 1;
                if cfg!(debug_assertions) && r.may_ask(index) {
                    // The walk is bounded: the runtime's answer must be the same.
                    stats.compared += 1;
                    if info.get_function_from_ip(addr as usize).map(|f| f.0 as u64) != Ok(function)
                    {
                        stats.disagreed += 1;
                    }
                }
                Verdict::Known { function, start }
            }
            None => {
                stats.never_ran += 1;
                Verdict::Drop
            }
        },
        Judgement::Inside { index, parent } => {
            let parent = parent
                .and_then(|(e, token, start)| method(r, e, token, start))
                .unwrap_or(0);
            if r.may_ask(index) {
                stats.asked += 1;
                Verdict::AskChecked { parent }
            } else {
                stats.unproven += 1;
                Verdict::Drop
            }
        }
    }
}

/// The FunctionID of MethodDef `token` in `module`, if the runtime handed out its
/// precompiled code starting at `start` (one of its native code versions starts there).
/// Neither call looks code up by address: `GetFunctionFromToken` reads the module's
/// method table, `GetNativeCodeStartAddresses` the method's code versions.
fn ran(
    info: &corprof::ProfilerInfo,
    module: corprof::ModuleId,
    token: u32,
    start: u64,
) -> Option<u64> {
    let f = info.get_function_from_token(module, token).ok()?;
    if f.0 == 0 {
        return None;
    }
    let starts = info
        .get_native_code_start_addresses(f, corprof::ReJitId(0))
        .ok()?;
    starts.contains(&(start as usize)).then_some(f.0 as u64)
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
        assert!(!r.may_ask(0) && !r.may_ask(2));
        r.prove(1);
        assert!(!r.may_ask(0));
        assert!(r.may_ask(1) && r.may_ask(2));
        // A lower index proven later lowers the bound; a higher one does not raise it.
        r.prove(2);
        assert!(r.may_ask(1));
        r.prove(0);
        assert!(r.may_ask(0));
        // With hot and cold parts, never.
        let img = fake_image(&[(0x1000, 0x1040)], true);
        let Image::ReadyToRun(mut r) = Image::read(pid, img.as_ptr() as u64) else {
            panic!("not read as ReadyToRun");
        };
        assert!(r.hot_cold);
        r.prove(0);
        assert!(!r.may_ask(0));
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

    /// An image without a CLI header whose ReadyToRun header is exported as `RTR_HEADER`
    /// (a composite's way): read through the export; with a `ComponentAssemblies` section
    /// but no readable manifest, opaque (nothing asked); under another export name, not
    /// ReadyToRun.
    #[test]
    fn an_exported_header_is_found_and_a_composite_needs_its_manifest() {
        let pid = crate::os::process::pid();
        let put32 = |img: &mut Vec<u8>, at: usize, v: u32| {
            img[at..at + 4].copy_from_slice(&v.to_le_bytes())
        };
        let mut img = fake_image(&[(0x1000, 0x1040), (0x1040, 0x1100)], false);
        let opt = 0x80 + 24;
        // No CLI header; the export directory at 0x600 names RTR_HEADER → RVA 0x300.
        put32(&mut img, opt + 112 + 14 * 8, 0);
        put32(&mut img, opt + 112, 0x600);
        put32(&mut img, opt + 116, 0x100);
        put32(&mut img, 0x600 + 20, 1);
        put32(&mut img, 0x600 + 24, 1);
        put32(&mut img, 0x600 + 28, 0x640);
        put32(&mut img, 0x600 + 32, 0x650);
        put32(&mut img, 0x600 + 36, 0x660);
        put32(&mut img, 0x640, 0x300);
        put32(&mut img, 0x650, 0x670);
        img[0x670..0x67B].copy_from_slice(b"RTR_HEADER\0");
        let Image::ReadyToRun(r) = Image::read(pid, img.as_ptr() as u64) else {
            panic!("the exported header was not read");
        };
        assert_eq!((r.count, r.components.len()), (2, 0));
        // A composite's section list, without the manifest its names come from.
        let mut composite = img.clone();
        put32(&mut composite, 0x300 + 12, 2);
        put32(&mut composite, 0x300 + 28, SECTION_COMPONENT_ASSEMBLIES);
        put32(&mut composite, 0x300 + 32, 0x700);
        put32(&mut composite, 0x300 + 36, 16);
        assert_eq!(Image::read(pid, composite.as_ptr() as u64), Image::Opaque);
        // Another name exported: no ReadyToRun header here.
        img[0x670] = b'X';
        assert_eq!(Image::read(pid, img.as_ptr() as u64), Image::Other);
    }

    /// `NativeFormat`'s unsigned integers and a NativeArray of 20 elements (two blocks of
    /// 16), encoded as crossgen2 writes them (`NativeFormatWriter`): each block a tree of
    /// nodes over the index's low four bits.
    #[test]
    fn method_def_entry_points_are_decoded() {
        let r = Reader {
            bytes: &[
                0x0A, 0x01, 0x05, 0x03, 0x00, 0x01, 0x0F, 0x78, 0x56, 0x34, 0x12,
            ],
            rva: 0x100,
        };
        assert_eq!(r.unsigned(0x100), Some((0x101, 5)));
        // Two bytes: 0x01 → (0x01 >> 2) | 0x05 << 6.
        assert_eq!(r.unsigned(0x101), Some((0x103, 5 << 6)));
        // Five bytes: 0x0F, then a little-endian u32.
        assert_eq!(r.unsigned(0x106), Some((0x10B, 0x1234_5678)));
        // Past the section: nothing, never a read outside it.
        assert_eq!(r.unsigned(0x10B), None);
        assert_eq!(r.unsigned(0xFF), None);

        // An array of 20 elements of which 5 and 17 are present: each block's root is a
        // special leaf (the one element of its 16), followed by that element's
        // entry-point id.
        let mut b = Vec::new();
        // Header: 20 elements, 1-byte block offsets (relative to the array's base, the
        // byte after the header).
        b.push((20u8 << 2) << 1);
        b.extend([0u8, 0]);
        let block0 = b.len() - 1;
        // Block 0: a special leaf for index 5.
        b.push((5u8 << 2) << 1);
        // Element 5's id: method-table entry 7, no fixups (7 << 1), one byte.
        b.push((7u8 << 1) << 1);
        let block1 = b.len() - 1;
        // Block 1: a special leaf for index 17 (17 & 15 = 1), entry 3 with fixups
        // ((3 << 2) | 1 = 13).
        b.push((1u8 << 2) << 1);
        b.push(13u8 << 1);
        b[1] = block0 as u8;
        b[2] = block1 as u8;
        let defs = method_defs(&b, 0x2000, 8);
        assert_eq!(defs, [(3, 0x0600_0012), (7, 0x0600_0006)]);
        // Entries at or past the method table's end are not trusted.
        assert_eq!(method_defs(&b, 0x2000, 4), [(3, 0x0600_0012)]);
        // A truncated section: what cannot be read is left out (element 5's id is cut).
        assert_eq!(method_defs(&b[..4], 0x2000, 8), []);
    }

    /// The installed runtime's System.Private.CoreLib.dll, laid out as the loader maps it
    /// (each section at its RVA): its method table and MethodDefEntryPoints read as the
    /// sampler reads them from memory. Every method's entry is the start of a method-table
    /// entry, distinct per method; CoreLib has tens of thousands.
    #[test]
    fn corelib_s_method_def_entry_points_are_read() {
        let Some(file) = installed_corelib() else {
            eprintln!("no installed System.Private.CoreLib.dll found; nothing to read");
            return;
        };
        let bytes = std::fs::read(&file).expect("read CoreLib");
        let u16_at = |at: usize| u16::from_le_bytes([bytes[at], bytes[at + 1]]) as usize;
        let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        let pe = u32_at(0x3C);
        let sections = u16_at(pe + 6);
        let opt = pe + 24;
        let size_of_image = u32_at(opt + 56);
        let mut image = vec![0u8; size_of_image];
        let headers = u32_at(opt + 60);
        image[..headers].copy_from_slice(&bytes[..headers]);
        let table = opt + u16_at(pe + 20);
        for k in 0..sections {
            let s = table + k * 40;
            let (vsize, rva, raw_size, raw) = (
                u32_at(s + 8),
                u32_at(s + 12),
                u32_at(s + 16),
                u32_at(s + 20),
            );
            let n = raw_size.min(vsize.max(raw_size)).min(size_of_image - rva);
            image[rva..rva + n].copy_from_slice(&bytes[raw..raw + n]);
        }
        let pid = crate::os::process::pid();
        let base = image.as_ptr() as u64;
        let Image::ReadyToRun(r) = Image::read(pid, base) else {
            panic!("{} not read as ReadyToRun", file.display());
        };
        assert!(!r.hot_cold);
        assert!(r.count > 20_000, "{} method-table entries", r.count);
        assert!(r.defs.len() > 10_000, "{} methods", r.defs.len());
        assert!(r.defs.len() <= r.count as usize);
        let mut tokens: Vec<u32> = r.defs.iter().map(|d| d.1).collect();
        tokens.sort_unstable();
        tokens.dedup();
        assert_eq!(tokens.len(), r.defs.len(), "a token twice");
        for w in r.defs.windows(2) {
            assert!(w[0].0 < w[1].0, "entries not strictly increasing: {w:?}");
        }
        // Each method's entry is answered as that method; an address inside its code too.
        for &(e, token) in r.defs.iter().step_by(97) {
            let start = r.start_of(pid, e).unwrap();
            assert_eq!(
                r.judge(pid, start),
                Judgement::Method {
                    index: e,
                    token,
                    start
                }
            );
        }
        // The headers are not code.
        assert_eq!(r.judge(pid, base + 0x40), Judgement::NotCode);
    }

    /// A System.Private.CoreLib.dll of an installed runtime, if any.
    fn installed_corelib() -> Option<std::path::PathBuf> {
        let roots = [
            std::env::var("DOTNET_ROOT").unwrap_or_default(),
            "/usr/share/dotnet".into(),
            "/usr/lib/dotnet".into(),
        ];
        roots.iter().filter(|r| !r.is_empty()).find_map(|r| {
            let dir = std::path::Path::new(r).join("shared/Microsoft.NETCore.App");
            let mut versions: Vec<_> = std::fs::read_dir(dir).ok()?.flatten().collect();
            versions.sort_by_key(|v| v.file_name());
            versions
                .iter()
                .rev()
                .map(|v| v.path().join("System.Private.CoreLib.dll"))
                .find(|p| p.is_file())
        })
    }
}
