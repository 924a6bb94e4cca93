//! Code addresses from a signal-sampled stack → FunctionIDs, on the sampler thread.
//!
//! GetFunctionFromIP is asynchronous-safe for addresses that really are code (the IPs a
//! sampler sees), but not for arbitrary words: on .NET 10 an address inside a code range
//! that is not code made the runtime's code-map lookup fault (found under gdb with a
//! stack word mistaken for a return address). So every *return address* candidate must
//! first pass two checks before the runtime sees it:
//! - it lies in an executable mapping of this process (`/proc/self/maps`, re-read at most
//!   once a second, and within 20 ms after a sampled IP shows that the JIT mapped new code);
//! - the bytes just before it encode a `call` (`E8 rel32` or `FF /2` in its register and
//!   memory forms), read with `process_vm_readv` so that a mapping that disappeared in the
//!   meantime yields "no" instead of a fault.
//!
//! The interrupted IP itself comes from the signal context: it is executing code.
//!
//! Dynamic methods' code (LCG methods, IL stubs) is never asked about: an address in
//! anonymous memory is first looked up in the callbacks' table of live dynamic code
//! (`dyncode`), before any cache; a live method is named from it, freed dynamic code is
//! dropped, and only what the table does not know goes to the runtime.

use std::collections::HashMap;

use corprof::ProfilerInfo;

use super::addrhash::AddrMap;
use super::dyncode::{Found, TABLE as DYNAMIC};
use super::fpwalk::{Code, FrameKind};
use super::r2r::{Guard, Verdict};

use crate::os::clock;
use crate::os::process::copy_own_memory;

/// Entries kept in the address → FunctionID cache before it is cleared.
const MAX_CACHED: usize = 1 << 16;

/// Bit set in the frame id of a native frame named by its module (`[libc.so.6]`); 0 stays
/// "native, unknown" (see the trace format).
pub use clrprof_format::NATIVE_MODULE_FRAME as NATIVE_MODULE;

/// Executable address ranges, sorted by start, with the file each maps (if any).
#[derive(Debug, Default)]
pub struct ExecMap {
    ranges: Vec<(u64, u64)>,
    /// Per range: the mapped file's name (no directory), empty for anonymous memory.
    files: Vec<String>,
    /// Per range: the load address of the image it belongs to (a PE image's headers, else
    /// its file's first mapping at file offset 0), 0 if none.
    bases: Vec<u64>,
    /// Per range: native code for certain, an ELF file's own executable segment (by its
    /// program headers), not a PE image mapped from inside the file.
    native: Vec<bool>,
}

/// The runtime reserves memory (and so places images) at 64 KiB boundaries.
const PROBE_ALIGN: u64 = 1 << 16;
/// The most 64 KiB boundaries of one anonymous read-only mapping probed for PE headers.
const MAX_PROBES: u64 = 64;
/// The most program headers of an ELF file read.
const MAX_PHDRS: u64 = 64;

/// The process's memory as [`ExecMap::parse_with`] reads it (in the agent, our own,
/// through `process_vm_readv`: an unmapped address is "no", never a fault).
pub trait Memory {
    /// Fills `buf` from `at`; false unless every byte could be read.
    fn read(&self, at: u64, buf: &mut [u8]) -> bool;

    fn u16_at(&self, at: u64) -> Option<u16> {
        let mut b = [0u8; 2];
        self.read(at, &mut b).then(|| u16::from_le_bytes(b))
    }

    fn u32_at(&self, at: u64) -> Option<u32> {
        let mut b = [0u8; 4];
        self.read(at, &mut b).then(|| u32::from_le_bytes(b))
    }

    fn u64_at(&self, at: u64) -> Option<u64> {
        let mut b = [0u8; 8];
        self.read(at, &mut b).then(|| u64::from_le_bytes(b))
    }
}

/// Our own memory, read with `process_vm_readv`.
pub struct OwnMemory(pub u32);

impl Memory for OwnMemory {
    fn read(&self, at: u64, buf: &mut [u8]) -> bool {
        // SAFETY: (A8) `buf` is a live buffer of `buf.len()` bytes.
        let n = unsafe { copy_own_memory(self.0, buf.as_mut_ptr(), at, buf.len()) };
        n == buf.len()
    }
}

/// No memory: nothing is a PE image or an ELF file.
#[cfg(test)]
pub struct NoMemory;

#[cfg(test)]
impl Memory for NoMemory {
    fn read(&self, _: u64, _: &mut [u8]) -> bool {
        false
    }
}

/// The `SizeOfImage` of a PE32+ image whose headers lie at `at`, if they do.
fn pe_size(mem: &impl Memory, at: u64) -> Option<u64> {
    if mem.u16_at(at)? != 0x5A4D {
        return None;
    }
    let lfanew = mem.u32_at(at + 0x3C)?;
    let pe = at + u64::from(lfanew);
    if lfanew > 0x1000 || mem.u32_at(pe)? != 0x0000_4550 || mem.u16_at(pe + 24)? != 0x20B {
        return None;
    }
    Some(u64::from(mem.u32_at(pe + 24 + 56)?)).filter(|&s| s > 0)
}

/// PE headers in the first page of a mapping at `start` (`len` bytes): a single-file
/// bundle's assemblies lie at 16-byte aligned offsets in the app's file, so the runtime
/// maps an image's first page from the page its offset falls in and the headers start
/// that far into the mapping. (their address, the image's end).
fn pe_in_first_page(mem: &impl Memory, start: u64, len: u64) -> Option<(u64, u64)> {
    let mut page = [0u8; 4096];
    let n = len.min(4096) as usize;
    if !mem.read(start, &mut page[..n]) {
        return None;
    }
    (0..n.saturating_sub(1))
        .step_by(16)
        .filter(|&i| page[i] == b'M' && page[i + 1] == b'Z')
        .find_map(|i| {
            let at = start + i as u64;
            Some((at, at.checked_add(pe_size(mem, at)?)?))
        })
}

/// The file offset ranges (page-aligned) of an ELF file's executable `PT_LOAD` segments,
/// from its headers mapped at `base`; empty if `base` holds no 64-bit ELF header.
/// ELF files' executable segments (file ranges) by the address of their header, kept
/// from one read of the map to the next (see [`ExecMap::parse_cached`]).
#[derive(Default)]
pub struct ElfCache(HashMap<u64, ElfFile>);

/// One ELF file's executable segments, with the path and inode it was read for.
struct ElfFile {
    path: String,
    inode: String,
    segments: Vec<(u64, u64)>,
}

/// ELF headers remembered before the cache is cleared.
const MAX_ELF_CACHED: usize = 4096;

impl ElfCache {
    /// The executable segments of the ELF file `path` (inode `inode`) whose header is
    /// mapped at `base`, read from memory unless this file was read there before.
    fn segments(&mut self, mem: &impl Memory, base: u64, path: &str, inode: &str) -> &[(u64, u64)] {
        let known = self
            .0
            .get(&base)
            .is_some_and(|f| f.path == path && f.inode == inode);
        if !known {
            let segments = elf_exec_segments(mem, base);
            let file = ElfFile {
                path: path.to_string(),
                inode: inode.to_string(),
                segments,
            };
            self.0.insert(base, file);
        }
        self.0.get(&base).map_or(&[], |f| f.segments.as_slice())
    }
}

fn elf_exec_segments(mem: &impl Memory, base: u64) -> Vec<(u64, u64)> {
    let mut segments = Vec::new();
    if mem.u32_at(base) != Some(0x464C_457F) {
        return segments;
    }
    let (Some(phoff), Some(size), Some(count)) = (
        mem.u64_at(base + 0x20),
        mem.u16_at(base + 0x36),
        mem.u16_at(base + 0x38),
    ) else {
        return segments;
    };
    if phoff > 1 << 20 || size < 56 {
        return segments;
    }
    for i in 0..u64::from(count).min(MAX_PHDRS) {
        let ph = base + phoff + i * u64::from(size);
        let (Some(kind), Some(flags), Some(offset), Some(filesz)) = (
            mem.u32_at(ph),
            mem.u32_at(ph + 4),
            mem.u64_at(ph + 8),
            mem.u64_at(ph + 32),
        ) else {
            return Vec::new();
        };
        // PT_LOAD, PF_X.
        if kind == 1 && flags & 1 != 0 {
            let end = offset.saturating_add(filesz).next_multiple_of(4096);
            segments.push((offset & !4095, end));
        }
    }
    segments
}

impl ExecMap {
    /// Parses `/proc/PID/maps` text: every range whose permissions include `x`, each with
    /// its file's load address where a mapping at file offset 0 gives it.
    #[cfg(test)]
    pub fn parse(maps: &str) -> ExecMap {
        ExecMap::parse_with(maps, &NoMemory)
    }

    /// [`parse`](Self::parse), also finding, in `mem`, PE images mapped from inside a file
    /// or copied into anonymous memory, and which executable ranges are an ELF file's own
    /// code.
    ///
    /// A single-file app's bundled assemblies are mapped from the app's own file (the
    /// runtime's `MAPMapPEFile` with the assembly's offset): each image's first page on a
    /// read-only mapping at a 64 KiB boundary, its headers as far into it as the
    /// assembly's offset is into its page (the bundler aligns them to 16 bytes), its code
    /// above; the file's offset-0 mapping is the host's ELF header, not theirs. A
    /// compressed bundle's assemblies are copied into anonymous memory (the runtime's
    /// converted layout: the headers on a read-only page at a 64 KiB boundary, each section
    /// at its RVA, the whole image reserved at once). So the first page of a read-only
    /// file mapping at a 64 KiB boundary and a file offset other than 0 is searched for PE
    /// headers, and a read-only anonymous mapping is probed at every 64 KiB boundary (the
    /// runtime's reservation granularity; at most [`MAX_PROBES`] per mapping). The
    /// executable ranges within a found image's `SizeOfImage` above its headers are that
    /// image's, and their load address is the headers'. An executable range that no image
    /// holds and that starts inside an executable `PT_LOAD` segment of the ELF file whose
    /// header is the file's offset-0 mapping is that file's own code (`native`).
    #[cfg(test)]
    pub fn parse_with(maps: &str, mem: &impl Memory) -> ExecMap {
        ExecMap::parse_cached(maps, mem, &mut ElfCache::default())
    }

    /// [`parse_with`](Self::parse_with), taking each ELF file's executable segments from
    /// `elf` when the same file (path and inode) is mapped at the same address as when it
    /// was read: a re-read of the map then reads no ELF headers again (each file's took
    /// some 40 `process_vm_readv` calls; one re-read of the map took ~300 of them).
    pub fn parse_cached(maps: &str, mem: &impl Memory, elf: &mut ElfCache) -> ExecMap {
        if elf.0.len() > MAX_ELF_CACHED {
            elf.0.clear();
        }
        // Per file, the first mapping at file offset 0 (in address order, as the kernel
        // lists them): its load address.
        let mut starts: HashMap<&str, u64> = HashMap::new();
        // Per file ("" for anonymous memory), the last PE headers met inside it: (their
        // address, the image's end).
        let mut images: HashMap<&str, (u64, u64)> = HashMap::new();
        let mut ranges: Vec<((u64, u64), String, u64, bool)> = maps
            .lines()
            .filter_map(|line| {
                let mut parts = line.split_whitespace();
                let range = parts.next()?;
                let perms = parts.next()?;
                let offset = parts.next()?;
                // device, inode, then the path (absent for anonymous memory).
                let inode = parts.nth(1).unwrap_or("0");
                let path = parts.next().unwrap_or("");
                let (a, b) = range.split_once('-')?;
                let start = u64::from_str_radix(a, 16).ok()?;
                let end = u64::from_str_radix(b, 16).ok()?;
                let offset = u64::from_str_radix(offset, 16).ok()?;
                // An executable mapping at offset 0 is the load address only when no
                // headers mapping came before it: the runtime maps a ReadyToRun image's
                // headers (`r--p` at offset 0) and then its code from file offset 0 again
                // at the code's RVA (`r-xp` at offset 0, 64 KiB above on .NET 10's
                // framework images), which is not where its RVAs start.
                if path.starts_with('/')
                    && offset == 0
                    && (!perms.contains('x') || !starts.contains_key(path))
                {
                    starts.insert(path, start);
                }
                if perms == "r--p" && start < end {
                    if path.starts_with('/')
                        && !path.starts_with("/memfd:")
                        && offset != 0
                        && start % PROBE_ALIGN == 0
                    {
                        if let Some(image) = pe_in_first_page(mem, start, end - start) {
                            images.insert(path, image);
                        }
                    } else if path.is_empty() {
                        let first = start.next_multiple_of(PROBE_ALIGN);
                        let mut at = first;
                        while at < end && at - first < MAX_PROBES * PROBE_ALIGN {
                            if let Some(size) = pe_size(mem, at) {
                                images.insert("", (at, at.saturating_add(size)));
                            }
                            at += PROBE_ALIGN;
                        }
                    }
                }
                if !perms.contains('x') || start >= end {
                    return None;
                }
                // The runtime's double-mapped code (`/memfd:doublemapper (deleted)`) holds
                // stubs, not a library: left unnamed like anonymous memory.
                let file = if path.starts_with('/') && !path.starts_with("/memfd:") {
                    path.to_string()
                } else {
                    String::new()
                };
                // The nearest headers below: a PE image's found inside the file (or in
                // anonymous memory) whose image holds this range, else the file's
                // offset-0 mapping.
                let image = if file.is_empty() && !path.is_empty() {
                    None
                } else {
                    images
                        .get(path)
                        .copied()
                        .filter(|&(h, e)| h <= start && end <= e)
                        .map(|(h, _)| h)
                };
                let at_zero = if file.is_empty() {
                    None
                } else {
                    starts.get(path).copied().filter(|&b| b <= start)
                };
                let native = image.is_none()
                    && at_zero.is_some_and(|b| {
                        elf.segments(mem, b, path, inode)
                            .iter()
                            .any(|&(from, to)| from <= offset && offset < to)
                    });
                let base = image.max(at_zero).unwrap_or(0);
                Some(((start, end), file, base, native))
            })
            .collect();
        ranges.sort_unstable();
        let mut map = ExecMap::default();
        for (range, file, base, native) in ranges {
            map.ranges.push(range);
            map.files.push(file);
            map.bases.push(base);
            map.native.push(native);
        }
        map
    }

    /// Whether `addr` lies in an ELF file's own executable segment (see
    /// [`parse_with`](Self::parse_with)): native code, no PE image.
    pub fn native_at(&self, addr: u64) -> bool {
        let i = self.ranges.partition_point(|r| r.0 <= addr);
        i > 0 && addr < self.ranges[i - 1].1 && self.native[i - 1]
    }

    /// The load address of the image mapped at `addr` (executable, and inside a PE image's
    /// `SizeOfImage` above its headers, or file-backed with a mapping at offset 0 at or
    /// below it), if any.
    pub fn image_base(&self, addr: u64) -> Option<u64> {
        let i = self.ranges.partition_point(|r| r.0 <= addr);
        if i == 0 || addr >= self.ranges[i - 1].1 {
            return None;
        }
        Some(self.bases[i - 1]).filter(|&b| b != 0)
    }

    /// The path of the file mapped at `addr`, if it is executable and file-backed.
    pub fn file_at(&self, addr: u64) -> Option<&str> {
        let i = self.ranges.partition_point(|r| r.0 <= addr);
        if i == 0 || addr >= self.ranges[i - 1].1 {
            return None;
        }
        let f = self.files[i - 1].as_str();
        (!f.is_empty()).then_some(f)
    }

    /// Whether all of `[from, to)` lies in executable mappings (adjacent ones count).
    pub fn contains(&self, from: u64, to: u64) -> bool {
        let i = self.ranges.partition_point(|r| r.0 <= from);
        if i == 0 {
            return false;
        }
        let mut end = self.ranges[i - 1].1;
        if from >= end {
            return false;
        }
        // Adjacent executable ranges count as one.
        for &(s, e) in &self.ranges[i..] {
            if end >= to || s != end {
                break;
            }
            end = e;
        }
        end >= to
    }

    /// Whether `addr` lies just past the end (within 1 MiB) of an executable range that
    /// maps no file: where the JIT's code heaps commit their next pages, which a map read
    /// earlier does not show yet.
    pub fn just_past_code(&self, addr: u64) -> bool {
        let i = self.ranges.partition_point(|r| r.0 <= addr);
        i > 0
            && self.files[i - 1].is_empty()
            && addr >= self.ranges[i - 1].1
            && addr - self.ranges[i - 1].1 < 1 << 20
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.ranges.len()
    }
}

/// Whether the 8 bytes before a return address end with a `call` instruction.
pub fn call_precedes(code: &[u8; 8]) -> bool {
    // E8 rel32: 5 bytes.
    if code[3] == 0xE8 {
        return true;
    }
    // FF /2 (call r/m64): ModRM reg field 2, lengths 2 (reg or [reg]), 3 (+SIB or disp8),
    // 4 (SIB+disp8), 6 ([rip+disp32] or disp32), 7 (SIB+disp32); an optional REX prefix
    // only adds a byte before the FF, which these offsets cover as well.
    for len in [2usize, 3, 4, 6, 7] {
        let at = 8 - len;
        if code[at] == 0xFF && (code[at + 1] >> 3) & 7 == 2 {
            return true;
        }
    }
    false
}

/// What an address resolved to: the function, which of its native code versions (tiers,
/// OSR) holds the address (the version's start, 0 when unknown), and how that version
/// builds its frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sym {
    pub function: u64,
    pub body: u64,
    pub frame: FrameKind,
}

impl Sym {
    pub fn code(self) -> Code {
        Code {
            function: self.function,
            frame: self.frame,
        }
    }
}

/// Whether a caller frame `outer` repeats its callee `inner` as another native code
/// version of the same method: what an OSR transition leaves on the stack. The Tier-0
/// frame stays in place under the OSR method's frame (dotnet/runtime
/// docs/design/features/OnStackReplacement.md §3.4), so a frame-pointer walk sees the
/// method twice. Direct recursion runs the same version in both frames and is kept; so is
/// anything whose versions are unknown. The price: recursion that straddles a tier-up
/// (Tier-1 frames above Tier-0 ones) loses one frame at the boundary.
pub fn is_osr_pair(inner: Sym, outer: Sym) -> bool {
    inner.function != 0
        && inner.function == outer.function
        && inner.body != outer.body
        && (inner.body | outer.body) != 0
}

pub struct Symbolizer {
    /// Interrupted IPs (`leaf`).
    cache: AddrMap<u64, Sym>,
    /// Return addresses − 1 (`caller`), with whether a call precedes them.
    returns: AddrMap<u64, (Sym, bool)>,
    /// Module file name → its native frame id ([`NATIVE_MODULE`] | n).
    modules: HashMap<String, u64>,
    /// Modules given an id since the last [`take_new_modules`](Self::take_new_modules).
    new_modules: Vec<(u64, String)>,
    exec: ExecMap,
    /// ELF headers read by earlier reads of the map.
    elf: ElfCache,
    refreshed_ns: u64,
    /// Set when executing managed code was seen outside the known executable ranges.
    stale: bool,
    pid: u32,
    /// What the runtime may be asked about addresses in ReadyToRun images (`r2r.rs`).
    pub guard: Guard,
    /// Dynamic code's frame kinds, by (code start, FunctionID): read once, not per sample.
    dyn_frames: AddrMap<(u64, u64), FrameKind>,
    /// Whether a `call` precedes a return address in dynamic code, by (address, the
    /// method's code start, FunctionID): not cached in `returns`, whose answers outlive
    /// the method, and keyed so that code reused by another method is read again.
    dyn_calls: AddrMap<(u64, u64, u64), bool>,
}

/// What the executable map says of the mapping a return-address candidate lies in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Image {
    /// The load address of the image it belongs to ([`ExecMap::image_base`]).
    pub headers: Option<u64>,
    /// An ELF file's own code ([`ExecMap::native_at`]).
    pub native: bool,
}

/// What became of a return-address candidate a `call` precedes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Answer {
    /// The function holding it (function 0: not managed code).
    Sym(Sym),
    /// Not a return address into code (outside every ReadyToRun method's code).
    NotCode,
    /// Not known now (not safe to ask about yet, or a stale word): not cached.
    NotNow,
    /// The function holding it, as the runtime named a dynamic method the table did not
    /// hold: not cached (its code may be freed and reused).
    Passing(Sym),
}

impl Default for Symbolizer {
    fn default() -> Self {
        Self::new()
    }
}

impl Symbolizer {
    pub fn new() -> Symbolizer {
        Symbolizer {
            cache: AddrMap::with_capacity_and_hasher(4096, Default::default()),
            returns: AddrMap::with_capacity_and_hasher(4096, Default::default()),
            modules: HashMap::new(),
            new_modules: Vec::new(),
            exec: ExecMap::default(),
            elf: ElfCache::default(),
            refreshed_ns: 0,
            stale: true,
            pid: crate::os::process::pid(),
            guard: Guard::default(),
            dyn_frames: AddrMap::default(),
            dyn_calls: AddrMap::default(),
        }
    }

    /// The managed function executing at `ip` (taken from a signal context), or 0.
    pub fn leaf(&mut self, info: &ProfilerInfo, ip: u64) -> Sym {
        if ip < 4096 {
            return Sym::default();
        }
        self.trim();
        let anonymous = self.exec.file_at(ip).is_none();
        if anonymous && let Some(s) = self.table_answer(ip) {
            if s.function != 0 && !self.exec.contains(ip, ip + 1) {
                // Live dynamic code the map does not know yet: a new code heap.
                self.stale = true;
            }
            return s;
        }
        if let Some(&s) = self.cache.get(&ip) {
            return s;
        }
        let (s, lasting) = lookup(info, self.pid, ip, anonymous);
        if !lasting {
            return s;
        }
        if s.function != 0 && !self.exec.contains(ip, ip + 1) {
            // Managed code the map does not know yet: a new code heap. Re-read soon.
            self.stale = true;
        }
        if s.function != 0 && self.exec.image_base(ip).is_some() {
            self.guard.prove_executing(self.pid, ip);
        }
        self.cache.insert(ip, s);
        s
    }

    /// The managed function containing `ret_minus_1` (a return address − 1 found on a
    /// stack), or function 0; checked to be plausible code before the runtime is asked.
    pub fn caller(&mut self, info: &ProfilerInfo, ret_minus_1: u64) -> Sym {
        let pid = self.pid;
        self.caller_lasting(ret_minus_1, |guard, addr, anonymous, image| {
            answer(info, guard, pid, addr, anonymous, image)
        })
        .map(|(s, _)| s)
        .unwrap_or_default()
    }

    /// As [`caller`](Self::caller), but `None` when the answer may change (the address
    /// is not in a known executable mapping yet: the JIT may map a new code heap there;
    /// or it lies in ReadyToRun code not safe to ask about now), which is then not cached.
    /// With it, whether a `call` precedes the address in executable code (a return
    /// address, managed or not). `lookup` (the answer for the address, given the guard,
    /// whether it is in anonymous memory and its file's load address) is asked only for an
    /// address a `call` precedes.
    fn caller_lasting(
        &mut self,
        ret_minus_1: u64,
        lookup: impl FnOnce(&mut Guard, u64, bool, Image) -> Answer,
    ) -> Option<(Sym, bool)> {
        if ret_minus_1 < 4096 {
            return Some((Sym::default(), false));
        }
        self.trim();
        let ret = ret_minus_1 + 1;
        if self.exec.file_at(ret_minus_1).is_none() {
            match DYNAMIC.find(ret_minus_1) {
                Found::Live { function, start } => {
                    if !self.executable(ret - 8, ret) {
                        return None;
                    }
                    let key = (ret_minus_1, start, function);
                    let call = match self.dyn_calls.get(&key) {
                        Some(&c) => c,
                        None => {
                            let c = self.call_before(ret);
                            self.dyn_calls.insert(key, c);
                            c
                        }
                    };
                    if !call {
                        return Some((Sym::default(), false));
                    }
                    DYNAMIC.count_named();
                    return Some((self.dynamic_sym(function, start), true));
                }
                Found::Freed | Found::Busy => {
                    DYNAMIC.count_dropped();
                    return None;
                }
                Found::Unknown => {}
            }
        }
        if let Some(&s) = self.returns.get(&ret_minus_1) {
            return Some(s);
        }
        if !self.executable(ret - 8, ret) {
            // Not cached: the address may become code when the JIT maps a new heap.
            return None;
        }
        let s = if self.call_before(ret) {
            let anonymous = self.exec.file_at(ret).is_none();
            let image = Image {
                headers: self.exec.image_base(ret_minus_1),
                native: self.exec.native_at(ret_minus_1),
            };
            match lookup(&mut self.guard, ret_minus_1, anonymous, image) {
                Answer::Sym(s) => (s, true),
                Answer::NotCode => (Sym::default(), false),
                Answer::NotNow => return None,
                Answer::Passing(s) => return Some((s, true)),
            }
        } else {
            (Sym::default(), false)
        };
        self.returns.insert(ret_minus_1, s);
        Some(s)
    }

    /// Whether `ret_minus_1`, met as a caller, lies in executable memory that no call
    /// instruction precedes: not a return address, so not taken for a managed frame (a
    /// stale or foreign frame record). Only for addresses [`caller`](Self::caller) was asked.
    pub fn rejected_return(&self, ret_minus_1: u64) -> bool {
        matches!(self.returns.get(&ret_minus_1), Some((_, false)))
    }

    /// Whether a walk's addresses (leaf first, as [`fpwalk::walk`](super::fpwalk::walk)
    /// gives them, each caller already asked of [`caller`](Self::caller)) hold a rejected
    /// return address: such a walk is counted (`rejected_walks`). The leaf is the
    /// interrupted IP, executing code, never a return address.
    pub fn rejected_walk(&self, addrs: &[u64]) -> bool {
        addrs.iter().skip(1).any(|&a| self.rejected_return(a))
    }

    /// The frame id for code at `addr` that is not managed: its module's, when `addr` is
    /// in a file-backed executable mapping, else 0 (`[native]`). Only for addresses the
    /// walk already accepted (the IP, or return addresses of frame records).
    pub fn native(&mut self, addr: u64) -> u64 {
        let Some(file) = self.exec.file_at(addr) else {
            return 0;
        };
        if let Some(&id) = self.modules.get(file) {
            return id;
        }
        let id = NATIVE_MODULE | (self.modules.len() as u64 + 1);
        self.modules.insert(file.to_string(), id);
        self.new_modules.push((id, file.to_string()));
        id
    }

    /// Module frames given an id since the last call: (id, the file's path), to be
    /// written once.
    pub fn take_new_modules(&mut self) -> Vec<(u64, String)> {
        std::mem::take(&mut self.new_modules)
    }

    fn trim(&mut self) {
        if self.cache.len() > MAX_CACHED {
            self.cache.clear();
        }
        if self.returns.len() > MAX_CACHED {
            self.returns.clear();
        }
        if self.dyn_frames.len() > MAX_CACHED {
            self.dyn_frames.clear();
        }
        if self.dyn_calls.len() > MAX_CACHED {
            self.dyn_calls.clear();
        }
    }

    /// The table's answer for an interrupted IP in anonymous memory: the live dynamic
    /// method holding it, or nothing (function 0) on freed dynamic code; `None` when the
    /// table does not know the address (the runtime may be asked).
    fn table_answer(&mut self, addr: u64) -> Option<Sym> {
        match DYNAMIC.find(addr) {
            Found::Live { function, start } => {
                DYNAMIC.count_named();
                Some(self.dynamic_sym(function, start))
            }
            Found::Freed | Found::Busy => {
                DYNAMIC.count_dropped();
                Some(Sym::default())
            }
            Found::Unknown => None,
        }
    }

    /// A live dynamic method's frame: its one code version starts at `start` (dynamic
    /// methods are not tiered); the prolog is read from our own memory, once.
    fn dynamic_sym(&mut self, function: u64, start: u64) -> Sym {
        let pid = self.pid;
        let frame = *self
            .dyn_frames
            .entry((start, function))
            .or_insert_with(|| frame_of(pid, start));
        Sym {
            function,
            body: start,
            frame,
        }
    }

    fn executable(&mut self, from: u64, to: u64) -> bool {
        if self.exec.contains(from, to) {
            return true;
        }
        if self.exec.just_past_code(from) {
            // Likely code committed since the map was read.
            self.stale = true;
        }
        self.refresh_if_due() && self.exec.contains(from, to)
    }

    /// Reads the executable map again if it is stale and was read more than 20 ms ago,
    /// or was read more than a second ago; true if it did.
    fn refresh_if_due(&mut self) -> bool {
        // Re-reading /proc/self/maps costs ~0.2 ms (the ELF headers read once): only when a running IP showed the map
        // is stale (new JIT code heap), at most every 20 ms, and otherwise once a second.
        let now = clock::monotonic_ns();
        let age = now.saturating_sub(self.refreshed_ns);
        if (self.stale && age > 20_000_000) || age > 1_000_000_000 {
            self.refreshed_ns = now;
            self.stale = false;
            if let Ok(text) = std::fs::read_to_string("/proc/self/maps") {
                self.exec = ExecMap::parse_cached(&text, &OwnMemory(self.pid), &mut self.elf);
            }
            return true;
        }
        false
    }

    fn call_before(&self, ret: u64) -> bool {
        let mut code = [0u8; 8];
        // SAFETY: (A8) `code` is a local buffer of the 8 bytes asked for.
        let n = unsafe { copy_own_memory(self.pid, code.as_mut_ptr(), ret - 8, 8) };
        n == 8 && call_precedes(&code)
    }
}

/// The answer for a return address − 1 a `call` precedes: in a ReadyToRun image as the
/// guard says (`r2r.rs`), anywhere else the runtime's.
fn answer(
    info: &ProfilerInfo,
    guard: &mut Guard,
    pid: u32,
    addr: u64,
    anonymous: bool,
    image: Image,
) -> Answer {
    let headers = image.headers;
    // Anonymous memory outside every PE image found there: the JIT's code heaps, dynamic
    // methods' and stubs' code. An image copied into anonymous memory (a compressed
    // single-file bundle's) has headers below: the guard judges it like a mapped one.
    if anonymous && headers.is_none() {
        return match lookup(info, pid, addr, true) {
            (s, true) => Answer::Sym(s),
            (s, false) => Answer::Passing(s),
        };
    }
    match guard.verdict(info, pid, addr, headers, image.native) {
        Verdict::Ask => Answer::Sym(lookup(info, pid, addr, false).0),
        Verdict::Known { function, start } => Answer::Sym(Sym {
            function,
            body: start,
            frame: frame_of(pid, start),
        }),
        Verdict::AskChecked { parent } => {
            let (s, _) = lookup(info, pid, addr, false);
            if s.function == 0 || s.function == parent || s.body != 0 {
                Answer::Sym(s)
            } else {
                guard.stats.unverified += 1;
                Answer::NotNow
            }
        }
        Verdict::NotCode => Answer::NotCode,
        Verdict::Drop => Answer::NotNow,
    }
}

/// The function at `addr` and the start of its code version that holds `addr`, and
/// whether the answer lasts (may be cached). Runs once per distinct address (cached):
/// GetFunctionFromIP, then the function's code versions. GetFunctionFromIP refuses dynamic
/// methods (LCG: `DynamicMethod`, compiled expressions; IL stubs); those compiled while
/// the callbacks were on are answered from the `dyncode` table before this is reached,
/// so for code in anonymous memory (`anonymous`: where the JIT puts them, and no library
/// is) GetFunctionFromIP3, which names them too, is asked next only for dynamic methods
/// compiled before (an attach), and that answer is counted and not cached. A lookup in
/// anonymous memory is announced to `dyncode` first (an unload waits for it to end) and
/// refused if the address lies on freed dynamic code's pages.
fn lookup(info: &ProfilerInfo, pid: u32, addr: u64, anonymous: bool) -> (Sym, bool) {
    if anonymous && !DYNAMIC.begin_ask(addr) {
        DYNAMIC.count_dropped();
        return (Sym::default(), false);
    }
    let sym = ask(info, pid, addr, anonymous);
    if anonymous {
        DYNAMIC.end_ask();
    }
    if let Some((s, true)) = sym {
        DYNAMIC.count_asked_dynamic();
        return (s, false);
    }
    (sym.map(|(s, _)| s).unwrap_or_default(), true)
}

/// The runtime's answer for `addr` (see [`lookup`]), and whether only GetFunctionFromIP3
/// named it (a dynamic method).
fn ask(info: &ProfilerInfo, pid: u32, addr: u64, anonymous: bool) -> Option<(Sym, bool)> {
    let mut dynamic = false;
    let found = info.get_function_from_ip(addr as usize).or_else(|e| {
        if anonymous {
            dynamic = true;
            info.get_function_from_ip3(addr as usize)
        } else {
            Err(e)
        }
    });
    let function = found.ok()?;
    let a = addr as usize;
    let body = info
        .get_native_code_start_addresses(function, corprof::ReJitId(0))
        .ok()
        .and_then(|starts| {
            starts.into_iter().find(|&start| {
                info.get_code_info4(start)
                    .is_ok_and(|ranges| ranges.iter().any(|r| a >= r.start && a - r.start < r.size))
            })
        })
        .unwrap_or(0);
    let sym = Sym {
        function: function.0 as u64,
        body: body as u64,
        frame: frame_of(pid, body as u64),
    };
    Some((sym, dynamic))
}

/// How the code version starting at `body` builds its frame (0: unknown).
fn frame_of(pid: u32, body: u64) -> FrameKind {
    let mut prolog = [0u8; 5];
    // SAFETY: (A8) `prolog` is a local buffer of the 5 bytes asked for.
    if body != 0 && unsafe { copy_own_memory(pid, prolog.as_mut_ptr(), body, 5) } == 5 {
        FrameKind::of_prolog(&prolog)
    } else {
        FrameKind::Unknown
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAPS: &str = "\
55d0c0a00000-55d0c0a10000 r--p 00000000 08:01 123 /usr/bin/dotnet
55d0c0a10000-55d0c0a20000 r-xp 00010000 08:01 123 /usr/bin/dotnet
7f0000000000-7f0000001000 rwxp 00000000 00:00 0
7f0000001000-7f0000002000 r-xp 00000000 00:00 0
7f0000005000-7f0000006000 ---p 00000000 00:00 0
7f0000010000-7f0000020000 r-xp 00028000 08:01 456 /usr/lib/x86_64-linux-gnu/libc.so.6
7f0000030000-7f0000040000 r-xp 00000000 00:01 789 /memfd:doublemapper (deleted)
";

    #[test]
    fn exec_ranges_from_maps() {
        let m = ExecMap::parse(MAPS);
        assert_eq!(m.len(), 5);
        assert!(m.contains(0x55d0c0a10000, 0x55d0c0a10008));
        assert!(!m.contains(0x55d0c0a00000, 0x55d0c0a00008));
        // Spanning two adjacent executable ranges.
        assert!(m.contains(0x7f0000000ff8, 0x7f0000001008));
        // Running past the end of the last one.
        assert!(!m.contains(0x7f0000001ffc, 0x7f0000002004));
        assert!(!m.contains(0x7f0000005000, 0x7f0000005008));
        assert!(!m.contains(0x1000, 0x1008));
        // Just past anonymous code, not past a file's.
        assert!(m.just_past_code(0x7f0000002000));
        assert!(m.just_past_code(0x7f0000040010));
        assert!(!m.just_past_code(0x7f0000000800));
        assert!(!m.just_past_code(0x7f0000020010));
        assert!(!m.just_past_code(0x7f0000200000));
    }

    /// .NET 10 maps a framework ReadyToRun image's headers (`r--p`, offset 0) and, 64 KiB
    /// above, its code from file offset 0 again (`r-xp`); a flat copy of the whole file
    /// (`r--s`, offset 0) lies elsewhere. The load address is the headers' mapping; a
    /// library mapped only from further in has none.
    #[test]
    fn a_readytorun_image_s_load_address_is_its_headers_mapping() {
        let maps = "\
7f46e2800000-7f46e36db000 r--s 00000000 fe:00 350922 /d/System.Private.CoreLib.dll
7f52dae60000-7f52dae61000 r--p 00000000 fe:00 350922 /d/System.Private.CoreLib.dll
7f52dae70000-7f52db9bc000 r-xp 00000000 fe:00 350922 /d/System.Private.CoreLib.dll
7f52db9dc000-7f52dbd5e000 rw-p 00b4c000 fe:00 350922 /d/System.Private.CoreLib.dll
7f52dc000000-7f52dc001000 r-xp 00000000 fe:00 350923 /d/only-code.dll
";
        let m = ExecMap::parse(maps);
        assert_eq!(m.image_base(0x7f52dae71234), Some(0x7f52dae60000));
        // An executable mapping at offset 0 with no headers mapping before it is its own.
        assert_eq!(m.image_base(0x7f52dc000010), Some(0x7f52dc000000));
        let m = ExecMap::parse(MAPS);
        assert_eq!(m.image_base(0x55d0c0a10008), Some(0x55d0c0a00000));
        assert_eq!(m.image_base(0x7f0000010008), None);
        assert_eq!(m.image_base(0x7f0000001008), None);
        assert_eq!(m.image_base(0x55d0c0a00008), None);
    }

    /// Memory made of a few byte regions, for [`ExecMap::parse_with`].
    struct FakeMemory(Vec<(u64, Vec<u8>)>);

    impl Memory for FakeMemory {
        fn read(&self, at: u64, buf: &mut [u8]) -> bool {
            self.0.iter().any(|(start, bytes)| {
                let Some(from) = at.checked_sub(*start).map(|o| o as usize) else {
                    return false;
                };
                let Some(src) = bytes.get(from..from + buf.len()) else {
                    return false;
                };
                buf.copy_from_slice(src);
                true
            })
        }
    }

    /// PE32+ headers of an image of `size` bytes.
    fn pe_headers(size: u32) -> Vec<u8> {
        let mut h = vec![0u8; 0x200];
        h[0..2].copy_from_slice(b"MZ");
        h[0x3C..0x40].copy_from_slice(&0x80u32.to_le_bytes());
        h[0x80..0x84].copy_from_slice(b"PE\0\0");
        h[0x98..0x9A].copy_from_slice(&0x20Bu16.to_le_bytes());
        h[0x98 + 56..0x98 + 60].copy_from_slice(&size.to_le_bytes());
        h
    }

    /// An ELF header with one executable PT_LOAD segment over file offsets
    /// [0x30e000, 0xb03000) and one read-only one.
    fn elf_headers() -> Vec<u8> {
        let mut h = vec![0u8; 0x200];
        h[0..4].copy_from_slice(b"\x7fELF");
        h[0x20..0x28].copy_from_slice(&0x40u64.to_le_bytes());
        h[0x36..0x38].copy_from_slice(&56u16.to_le_bytes());
        h[0x38..0x3A].copy_from_slice(&2u16.to_le_bytes());
        for (i, (flags, offset, size)) in [(4u32, 0u64, 0x30e000u64), (5, 0x30e000, 0x7f4a10)]
            .into_iter()
            .enumerate()
        {
            let ph = 0x40 + i * 56;
            h[ph..ph + 4].copy_from_slice(&1u32.to_le_bytes());
            h[ph + 4..ph + 8].copy_from_slice(&flags.to_le_bytes());
            h[ph + 8..ph + 16].copy_from_slice(&offset.to_le_bytes());
            h[ph + 32..ph + 40].copy_from_slice(&size.to_le_bytes());
        }
        h
    }

    /// A single-file app (maps as .NET 10 lays it out): bundled images mapped from inside
    /// the app's file, their headers 16-byte aligned into a read-only first page at a
    /// 64 KiB boundary, the host's own ELF code at the file's offset-0 mapping above; and
    /// a compressed bundle's image copied into anonymous memory. Each image's code has its
    /// headers as load address; the host's code is native, proven by its program headers;
    /// code of the file neither explains is neither.
    #[test]
    fn bundled_and_copied_images_are_found_by_their_headers() {
        let maps = "\
55e14cb10000-55e14cb12000 r--p 01c86000 fe:00 11731688 /app/Scenarios
55e14cb20000-55e14cb3c000 r-xp 01c86000 fe:00 11731688 /app/Scenarios
55e14cb5b000-55e14cb64000 rw-p 01ca1000 fe:00 11731688 /app/Scenarios
55e14cd50000-55e14cd5d000 r-xp 04565000 fe:00 11731688 /app/Scenarios
56458fd40000-56458fd41000 r--p 00000000 00:00 0
56458fd41000-56458fd50000 rw-p 00000000 00:00 0
56458fd50000-56459089c000 r-xp 00000000 00:00 0
5645a0000000-5645a0010000 r-xp 00000000 00:00 0
55e1ca998000-55e1caa95000 r--p 00000000 fe:00 11731688 /app/Scenarios
55e1caa95000-55e1caa96000 r--p 000fd000 fe:00 11731688 /app/Scenarios
55e1caca7000-55e1cb49c000 r-xp 0030e000 fe:00 11731688 /app/Scenarios
";
        let mut first_page = vec![0x11u8; 0x2000];
        first_page[0x140..0x340].copy_from_slice(&pe_headers(0x60000));
        let mem = FakeMemory(vec![
            (0x55e14cb10000, first_page),
            (0x56458fd40000, pe_headers(0xf30000)),
            (0x55e1ca998000, elf_headers()),
        ]);
        let m = ExecMap::parse_with(maps, &mem);
        // The bundled image: its headers 0x140 into the first page.
        assert_eq!(m.image_base(0x55e14cb20100), Some(0x55e14cb10140));
        assert!(!m.native_at(0x55e14cb20100));
        // The copied image in anonymous memory, and JIT code elsewhere.
        assert_eq!(m.image_base(0x56458fd50100), Some(0x56458fd40000));
        assert!(!m.native_at(0x56458fd50100));
        assert_eq!(m.image_base(0x5645a0000100), None);
        assert_eq!(m.file_at(0x56458fd50100), None);
        // The host's own code.
        assert_eq!(m.image_base(0x55e1caca7100), Some(0x55e1ca998000));
        assert!(m.native_at(0x55e1caca7100));
        // Code of the file whose headers were not found (outside the host's segments):
        // not native, so never asked about while no module holds it.
        assert_eq!(m.image_base(0x55e14cd50100), None);
        assert!(!m.native_at(0x55e14cd50100));
        // Without memory to read, nothing is proven.
        let m = ExecMap::parse(maps);
        assert_eq!(m.image_base(0x55e14cb20100), None);
        assert!(!m.native_at(0x55e1caca7100));
        assert_eq!(m.image_base(0x56458fd50100), None);
    }

    /// A re-read of the map reads no ELF header again while the same file stays at the
    /// same address; another file (or inode) there is read afresh.
    #[test]
    fn elf_headers_are_read_once_per_file_and_address() {
        struct Counting<'a>(&'a FakeMemory, std::cell::Cell<usize>);
        impl Memory for Counting<'_> {
            fn read(&self, at: u64, buf: &mut [u8]) -> bool {
                self.1.set(self.1.get() + 1);
                self.0.read(at, buf)
            }
        }
        let maps = |inode: &str| {
            format!(
                "55e1ca998000-55e1caa95000 r--p 00000000 fe:00 {inode} /usr/bin/app\n\
                 55e1caca7000-55e1cb49c000 r-xp 0030e000 fe:00 {inode} /usr/bin/app\n"
            )
        };
        let fake = FakeMemory(vec![(0x55e1ca998000, elf_headers())]);
        let mem = Counting(&fake, std::cell::Cell::new(0));
        let mut elf = ElfCache::default();
        let m = ExecMap::parse_cached(&maps("11"), &mem, &mut elf);
        assert!(m.native_at(0x55e1caca7100));
        let first = mem.1.get();
        assert!(first > 0);
        let m = ExecMap::parse_cached(&maps("11"), &mem, &mut elf);
        assert!(m.native_at(0x55e1caca7100));
        assert_eq!(mem.1.get(), first, "read again");
        let m = ExecMap::parse_cached(&maps("12"), &mem, &mut elf);
        assert!(m.native_at(0x55e1caca7100));
        assert_eq!(mem.1.get(), 2 * first, "another inode is another file");
    }

    #[test]
    fn native_frames_are_named_by_their_file_path() {
        let m = ExecMap::parse(MAPS);
        assert_eq!(
            m.file_at(0x7f0000010000),
            Some("/usr/lib/x86_64-linux-gnu/libc.so.6")
        );
        assert_eq!(
            m.file_at(0x7f000001ffff),
            Some("/usr/lib/x86_64-linux-gnu/libc.so.6")
        );
        assert_eq!(m.file_at(0x7f0000020000), None);
        assert_eq!(m.file_at(0x55d0c0a10008), Some("/usr/bin/dotnet"));
        // Anonymous and double-mapped runtime code, and non-executable ranges: unnamed.
        assert_eq!(m.file_at(0x7f0000000008), None);
        assert_eq!(m.file_at(0x7f0000030008), None);
        assert_eq!(m.file_at(0x55d0c0a00008), None);
        let mut s = Symbolizer::new();
        s.exec = m;
        let libc = s.native(0x7f0000010010);
        assert_eq!(libc & NATIVE_MODULE, NATIVE_MODULE);
        assert_eq!(s.native(0x7f0000018000), libc);
        assert_ne!(s.native(0x55d0c0a10008), libc);
        assert_eq!(s.native(0x7f0000000008), 0);
        let names: Vec<String> = s.take_new_modules().into_iter().map(|m| m.1).collect();
        assert_eq!(
            names,
            ["/usr/lib/x86_64-linux-gnu/libc.so.6", "/usr/bin/dotnet"]
        );
        assert!(s.take_new_modules().is_empty());
    }

    #[test]
    fn osr_pairs() {
        let s = |function, body| Sym {
            function,
            body,
            frame: FrameKind::Unknown,
        };
        // Tier-0 frame under its OSR frame: collapsed.
        assert!(is_osr_pair(s(7, 0x2000), s(7, 0x1000)));
        // OSR version the runtime did not list: still another version.
        assert!(is_osr_pair(s(7, 0), s(7, 0x1000)));
        // Direct recursion in one version, unknown versions, other functions: kept.
        assert!(!is_osr_pair(s(7, 0x1000), s(7, 0x1000)));
        assert!(!is_osr_pair(s(7, 0), s(7, 0)));
        assert!(!is_osr_pair(s(7, 0x2000), s(8, 0x1000)));
        assert!(!is_osr_pair(s(0, 0x2000), s(0, 0x1000)));
    }

    /// The rejection rule: a caller's return address in executable memory is taken (the
    /// runtime is asked which method holds it) only when the bytes before it encode a
    /// `call`; otherwise it is rejected, unasked, and the walk holding it is counted.
    #[test]
    fn a_return_address_is_taken_only_after_a_call() {
        // "Code" in our own memory, which the symbolizer reads with process_vm_readv as it
        // reads the JIT's, declared executable to it by its map.
        let mut code = [0x90u8; 64];
        // call rel32 at 19..24: a return address 24.
        code[19] = 0xE8;
        code[20..24].copy_from_slice(&[1, 2, 3, 4]);
        // call rax (FF D0) at 30..32: a return address 32.
        code[30] = 0xFF;
        code[31] = 0xD0;
        let base = code.as_ptr() as u64;
        let mut s = Symbolizer::new();
        s.exec = ExecMap::parse(&format!(
            "{base:x}-{:x} r-xp 00000000 00:00 0\n",
            base + code.len() as u64
        ));
        let managed = Sym {
            function: 7,
            body: base,
            frame: FrameKind::Record,
        };
        let mut asked = Vec::new();
        let mut ask = |s: &mut Symbolizer, ret: u64| {
            s.caller_lasting(ret - 1, |_, a, anonymous, _| {
                asked.push((a, anonymous));
                Answer::Sym(managed)
            })
        };
        // After a call: taken, the runtime asked once (then the answer is cached).
        assert_eq!(ask(&mut s, base + 24), Some((managed, true)));
        assert_eq!(ask(&mut s, base + 24), Some((managed, true)));
        assert_eq!(ask(&mut s, base + 32), Some((managed, true)));
        // After no-ops, or inside the call's own bytes: rejected, the runtime not asked.
        assert_eq!(ask(&mut s, base + 48), Some((Sym::default(), false)));
        assert_eq!(ask(&mut s, base + 22), Some((Sym::default(), false)));
        // Below the first page: never code, not judged.
        assert_eq!(ask(&mut s, 0x1000), Some((Sym::default(), false)));
        assert_eq!(asked, [(base + 23, true), (base + 31, true)]);
        assert!(!s.rejected_return(base + 23));
        assert!(!s.rejected_return(base + 31));
        assert!(s.rejected_return(base + 47));
        assert!(s.rejected_return(base + 21));
        // A walk is counted when a caller's return address was rejected; the leaf (an
        // interrupted IP) is never judged as one.
        let ip = base + 47;
        assert!(!s.rejected_walk(&[ip, base + 23, base + 31]));
        assert!(s.rejected_walk(&[ip, base + 23, base + 47]));
        assert!(!s.rejected_walk(&[ip]));
        // Never asked, or below the first page: not judged (no entry), not counted.
        assert!(!s.rejected_return(base + 39));
        assert!(!s.rejected_walk(&[ip, 0x0fff]));
    }

    #[test]
    fn call_encodings() {
        // call rel32
        assert!(call_precedes(&[0, 0, 0, 0xE8, 1, 2, 3, 4]));
        // call rax (FF D0)
        assert!(call_precedes(&[0, 0, 0, 0, 0, 0, 0xFF, 0xD0]));
        // call [rip+disp32] (FF 15 disp32)
        assert!(call_precedes(&[0, 0, 0xFF, 0x15, 1, 2, 3, 4]));
        // call [rax+8] (FF 50 08)
        assert!(call_precedes(&[0, 0, 0, 0, 0, 0xFF, 0x50, 0x08]));
        // jmp rax (FF E0) is not a call
        assert!(!call_precedes(&[0, 0, 0, 0, 0, 0, 0xFF, 0xE0]));
        assert!(!call_precedes(&[0x90; 8]));
    }
}
