//! The one copy of the profiler library each process loads: made by the first attach,
//! named again by every later one.
//!
//! The runtime loads the library a profiler names with `dlopen`. Each library loaded takes
//! a thread-local storage module id, and unloading one is unsafe on glibc 2.34-2.36 (the
//! freed id is reused and libcoreclr's thread-locals can come back zeroed), so the agent
//! marks itself `RTLD_NODELETE` and stays mapped between sessions. A fresh file per attach
//! therefore added a module id per attach, and past a thread's spare room in its TLS
//! vector every thread grew it, which once aborted a target in glibc's `realloc`
//! (docs/attach.md, step 7). So the first attach to a process copies the library into
//! the target user's control directory (0700, theirs), named
//! `libclrprof_profiler.<pid>.<nonce>.so`, readable by the target, and leaves it there
//! while the process lives; every later attach finds it in the target's `/proc/PID/maps`
//! ([`resident`]: the kernel's own record of what is mapped, checked against the file
//! on disk: our naming, this pid, a regular file of the target's user in such a
//! directory, the same device and inode) and names that path again, so `dlopen` returns
//! the loaded object (by name, and by inode while the file exists). The agent starts
//! each session afresh in it (`session::state` in the agent). A killed `clrprof`, a
//! planted file or another `TMPDIR` change nothing: only what the target has mapped
//! counts; and a copy whose file was removed is still named (`dlopen` matches the name
//! first). A copy that is not mapped once the attach is answered is removed at once;
//! copies of processes that are gone, and unmapped ones older than [`STALE`], by the
//! next attach.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

pub struct LibraryCopy {
    path: PathBuf,
    pid: u32,
}

impl LibraryCopy {
    /// Copies `library` into `dir` (created 0700 for `uid` when missing) for the first
    /// attach to `pid`. None when `dir` is on a `noexec` mount, where the runtime could not
    /// map a copy: the attach then names the library itself (the same path each time, so
    /// that too is loaded once).
    pub fn create(library: &Path, dir: &Path, uid: u32, pid: u32) -> Result<Option<LibraryCopy>> {
        ensure_dir(dir, uid)?;
        if on_noexec_mount(dir) {
            return Ok(None);
        }
        remove_stale(dir);
        let stem = library
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "libclrprof_profiler".into());
        let ext = library
            .extension()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "so".into());
        let image = std::fs::read(library)
            .with_context(|| format!("cannot read the profiler library {}", library.display()))?;
        let image = loadable_part(&image);
        for attempt in 0..16u32 {
            let path = dir.join(format!("{stem}.{pid}.{:016x}.{ext}", nonce(attempt)));
            let mut dst = match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o644)
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                .open(&path)
            {
                Ok(f) => f,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(e).with_context(|| {
                        format!(
                            "cannot copy the profiler library to {} for the attach",
                            path.display()
                        )
                    });
                }
            };
            let copy = LibraryCopy { path, pid };
            dst.write_all(&image)
                .and_then(|_| dst.flush())
                .with_context(|| format!("cannot write {}", copy.path.display()))?;
            if own_uid() == 0 && uid != 0 {
                std::os::unix::fs::fchown(&dst, Some(uid), None)
                    .with_context(|| format!("cannot give {} to uid {uid}", copy.path.display()))?;
            }
            return Ok(Some(copy));
        }
        bail!(
            "cannot find a free name for the library copy in {}",
            dir.display()
        )
    }

    /// The path the runtime is asked to load, and the name the target's maps show.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for LibraryCopy {
    /// The attach is answered: a copy the target mapped stays (the resident copy, named by
    /// every later attach); any other goes.
    fn drop(&mut self) {
        if !mapped_by(self.pid, &self.path) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Whether `pid` maps the file at `path` (by its name in `/proc/PID/maps`, not deleted).
fn mapped_by(pid: u32, path: &Path) -> bool {
    let Ok(maps) = std::fs::read_to_string(format!("/proc/{pid}/maps")) else {
        return false;
    };
    let want = path.as_os_str().to_string_lossy();
    maps.lines()
        .filter_map(map_entry)
        .any(|e| !e.deleted && e.path == want.as_ref())
}

/// One file-backed line of `/proc/PID/maps`.
struct MapEntry<'a> {
    /// `start-end`, the name of the mapping in `/proc/PID/map_files`.
    range: &'a str,
    major: u32,
    minor: u32,
    inode: u64,
    path: &'a str,
    /// The file was removed since it was mapped (`… (deleted)`; `path` without that).
    deleted: bool,
}

fn map_entry(line: &str) -> Option<MapEntry<'_>> {
    // address perms offset dev inode path (the path may hold spaces)
    let mut rest = line;
    let mut fields = [""; 5];
    for f in &mut fields {
        rest = rest.trim_start_matches(' ');
        let end = rest.find(' ')?;
        *f = &rest[..end];
        rest = &rest[end..];
    }
    let path = rest.trim_start_matches(' ');
    if !path.starts_with('/') {
        return None;
    }
    let (path, deleted) = match path.strip_suffix(" (deleted)") {
        Some(p) => (p, true),
        None => (path, false),
    };
    let (major, minor) = fields[3].split_once(':')?;
    Some(MapEntry {
        range: fields[0],
        deleted,
        major: u32::from_str_radix(major, 16).ok()?,
        minor: u32::from_str_radix(minor, 16).ok()?,
        inode: fields[4].parse().ok()?,
        path,
    })
}

/// The copy of the library that `pid` has loaded already, to be named again: found in
/// the process's maps, and only if the file there now is that mapping (same device and
/// inode), a regular file (not a link) of `uid` that no one else may write, named
/// `libclrprof_profiler.<pid>.<nonce>.so` for this pid, in a 0700 directory of `uid`, and
/// holds what `library` would be copied as (a copy made by another build of clrprof is
/// not named again: its agent may not read this one's settings). None: the next attach
/// makes the first copy.
pub fn resident(pid: u32, uid: u32, library: &Path) -> Option<PathBuf> {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).ok()?;
    let image = std::fs::read(library).ok()?;
    let want = loadable_part(&image);
    let mut seen = std::collections::HashSet::new();
    let entries: Vec<MapEntry<'_>> = maps
        .lines()
        .filter_map(map_entry)
        .filter(|e| seen.insert((e.path, e.deleted)))
        .collect();
    entries
        .iter()
        .filter(|e| !e.deleted)
        .find(|e| resident_ok(e, pid, uid, &want))
        .or_else(|| {
            // Removed before the maps were read, or between that and the checks above.
            entries
                .iter()
                .filter(|e| e.deleted || std::fs::symlink_metadata(e.path).is_err())
                .find(|e| removed_resident_ok(e, pid, uid, &want))
        })
        .map(|e| PathBuf::from(e.path))
}

/// Our copy for this pid in a 0700 directory of `uid`, whose name `pid` maps.
fn named_for(e: &MapEntry<'_>, pid: u32, uid: u32) -> bool {
    let path = Path::new(e.path);
    let name_ok = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .is_some_and(|n| copy_pid(&n) == Some(pid));
    name_ok
        && path.parent().is_some_and(|dir| {
            std::fs::symlink_metadata(dir)
                .is_ok_and(|m| m.is_dir() && m.uid() == uid && m.mode() & 0o077 == 0)
        })
}

/// A resident copy whose file someone removed (a cleaner of old files in /tmp, an older
/// `clrprof` that removed copies by age): `dlopen` matches a loaded object by the name it
/// was loaded under before it opens any file, so the same name still returns it, and the
/// process keeps one copy. Its bytes are read through `/proc/PID/map_files` where this
/// user may (root): another build's copy is not named again. Where that is refused, the
/// name alone says it is ours (it is in the target user's own 0700 directory, and only
/// their own process could have loaded something else under it).
fn removed_resident_ok(e: &MapEntry<'_>, pid: u32, uid: u32, want: &[u8]) -> bool {
    if !named_for(e, pid, uid) {
        return false;
    }
    match std::fs::File::open(format!("/proc/{pid}/map_files/{}", e.range)) {
        Ok(f) => same_bytes(f, want),
        Err(_) => true,
    }
}

/// Whether `f` holds exactly `want` (read at most one byte more).
fn same_bytes(mut f: std::fs::File, want: &[u8]) -> bool {
    let mut buf = Vec::with_capacity(want.len());
    std::io::Read::read_to_end(
        &mut std::io::Read::take(&mut f, want.len() as u64 + 1),
        &mut buf,
    )
    .is_ok()
        && buf == want
}

fn resident_ok(e: &MapEntry<'_>, pid: u32, uid: u32, want: &[u8]) -> bool {
    if !named_for(e, pid, uid) {
        return false;
    }
    let path = Path::new(e.path);
    let Ok(m) = std::fs::symlink_metadata(path) else {
        return false;
    };
    let dev = m.dev();
    let file_ok = m.is_file()
        && m.uid() == uid
        && m.mode() & 0o022 == 0
        && m.ino() == e.inode
        && libc::major(dev) == e.major
        && libc::minor(dev) == e.minor;
    // Read without following a link and without blocking (it is a regular file here).
    file_ok
        && std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(path)
            .ok()
            .filter(|f| f.metadata().is_ok_and(|fm| fm.ino() == e.inode))
            .is_some_and(|f| same_bytes(f, want))
}

/// Creates the control directory as the agent expects it (0700, the target's user) when
/// it does not exist yet; an existing one was checked by the caller.
fn ensure_dir(dir: &Path, uid: u32) -> Result<()> {
    if std::fs::symlink_metadata(dir).is_ok() {
        return Ok(());
    }
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(dir)
        .or_else(|e| {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                Ok(())
            } else {
                Err(e)
            }
        })
        .with_context(|| format!("cannot create the control directory {}", dir.display()))?;
    let m = std::fs::symlink_metadata(dir)?;
    if m.uid() != uid && own_uid() == 0 {
        std::os::unix::fs::lchown(dir, Some(uid), None)
            .with_context(|| format!("cannot give {} to uid {uid}", dir.display()))?;
    }
    Ok(())
}

/// Whether `dir` lies on a file system mounted `noexec` (the last matching mount point in
/// `/proc/self/mounts` wins, as the kernel stacks them).
fn on_noexec_mount(dir: &Path) -> bool {
    let Ok(dir) = std::fs::canonicalize(dir) else {
        return false;
    };
    let Ok(mounts) = std::fs::read_to_string("/proc/self/mounts") else {
        return false;
    };
    noexec_in(&mounts, &dir)
}

fn noexec_in(mounts: &str, dir: &Path) -> bool {
    let mut best: Option<(usize, bool)> = None;
    for line in mounts.lines() {
        let mut f = line.split(' ');
        let (Some(_), Some(point), Some(_), Some(options)) =
            (f.next(), f.next(), f.next(), f.next())
        else {
            continue;
        };
        // /proc/mounts escapes spaces and the like as octal (\040).
        let point = point.replace("\\040", " ");
        if !dir.starts_with(&point) {
            continue;
        }
        let noexec = options.split(',').any(|o| o == "noexec");
        if best.is_none_or(|(len, _)| point.len() >= len) {
            best = Some((point.len(), noexec));
        }
    }
    best.is_some_and(|(_, noexec)| noexec)
}

/// What the dynamic loader needs of an ELF64 shared object: the file up to the end of the
/// last segment its program headers describe, without the section headers (the loader
/// reads only program headers; `.eh_frame`, the dynamic symbols and the build id are in
/// loaded segments). A copy is what an attach leaves on disk, and where glibc cannot
/// unload a library safely each attach's copy stays, as a deleted file, until the target
/// exits (docs/attach.md): a debug build's 25 MB, most of it debug information, become
/// about 2 MB. Anything that is not a well-formed little-endian ELF64 is copied whole.
pub fn loadable_part(image: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    use std::borrow::Cow;
    let bytes_at = |o: u64, n: u64| {
        let start = usize::try_from(o).ok()?;
        let end = usize::try_from(o.checked_add(n)?).ok()?;
        image.get(start..end)
    };
    let u16_at = |o: u64| bytes_at(o, 2).map(|b| u16::from_le_bytes([b[0], b[1]]));
    let u64_at =
        |o: u64| bytes_at(o, 8).map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])));
    // e_ident: magic, ELFCLASS64, ELFDATA2LSB.
    if image.len() < 64 || image[..4] != *b"\x7fELF" || image[4] != 2 || image[5] != 1 {
        return Cow::Borrowed(image);
    }
    let (Some(phoff), Some(phentsize), Some(phnum)) = (u64_at(0x20), u16_at(0x36), u16_at(0x38))
    else {
        return Cow::Borrowed(image);
    };
    if phentsize < 56 || phnum == 0 {
        return Cow::Borrowed(image);
    }
    let mut end = 64u64;
    for i in 0..u64::from(phnum) {
        let Some(at) = phoff.checked_add(i * u64::from(phentsize)) else {
            return Cow::Borrowed(image);
        };
        let (Some(offset), Some(filesz), Some(header_end)) = (
            at.checked_add(8).and_then(u64_at),
            at.checked_add(32).and_then(u64_at),
            at.checked_add(u64::from(phentsize)),
        ) else {
            return Cow::Borrowed(image);
        };
        let Some(seg_end) = offset.checked_add(filesz) else {
            return Cow::Borrowed(image);
        };
        end = end.max(seg_end).max(header_end);
    }
    let Ok(end) = usize::try_from(end) else {
        return Cow::Borrowed(image);
    };
    if end >= image.len() {
        return Cow::Borrowed(image);
    }
    let mut out = image[..end].to_vec();
    // e_shoff = 0, e_shentsize = e_shnum = e_shstrndx = 0: no section headers.
    out[0x28..0x30].fill(0);
    out[0x3A..0x40].fill(0);
    Cow::Owned(out)
}

/// Removes copies no process loads: those of processes that no longer exist (whose
/// resident copy this was), and unmapped ones older than [`STALE`] (a `clrprof` killed
/// between the copy and the attach's answer: an attach is answered, or given up, within
/// seconds); and the detached notes of processes that no longer exist. A copy its live
/// process maps stays: it is that process's resident copy.
fn remove_stale(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        // The note an inert agent left at its detach (attach.rs, `detached_note`).
        if let Some(pid) = name.strip_suffix(".detached")
            && pid.parse::<u32>().is_ok()
        {
            if !Path::new(&format!("/proc/{pid}")).exists() {
                let _ = std::fs::remove_file(e.path());
            }
            continue;
        }
        let Some(pid) = copy_pid(&name) else { continue };
        // The resident copy of a live process: kept while the process lives.
        if mapped_by(pid, &e.path()) {
            continue;
        }
        let old = e
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > STALE);
        if old || !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// Past this age an unmapped copy belongs to no attach still under way.
const STALE: std::time::Duration = std::time::Duration::from_secs(120);

/// The pid in `libclrprof_profiler.<pid>.<nonce>.so`.
fn copy_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix("libclrprof_profiler.")?;
    let mut parts = rest.split('.');
    let pid = parts.next()?.parse().ok()?;
    let nonce = parts.next()?;
    (nonce.len() == 16 && nonce.chars().all(|c| c.is_ascii_hexdigit())).then_some(pid)
}

fn nonce(attempt: u32) -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    h.write_u32(attempt);
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    h.finish()
}

/// This process's effective uid (the owner of `/proc/self`).
pub(crate) fn own_uid() -> u32 {
    std::fs::metadata("/proc/self")
        .map(|m| m.uid())
        .unwrap_or(u32::MAX)
}

#[cfg(test)]
mod loadable_tests {
    use super::loadable_part;

    #[test]
    fn the_built_agent_keeps_its_segments_and_loses_its_debug_information() {
        let lib = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../target/debug/libclrprof_profiler.so");
        let Ok(image) = std::fs::read(&lib) else {
            return; // not built yet in this checkout; the attach tests load real copies
        };
        let part = loadable_part(&image);
        assert!(part.len() < image.len(), "nothing dropped");
        assert_eq!(&part[..0x28], &image[..0x28]);
        assert_eq!(&part[0x28..0x30], &[0u8; 8]);
    }

    #[test]
    fn anything_else_is_copied_whole() {
        for bytes in [
            &b""[..],
            b"\x7fELF",
            b"not an elf at all, just text",
            &[0x7f, b'E', b'L', b'F', 1, 1][..],
        ] {
            assert_eq!(&*loadable_part(bytes), bytes);
        }
        // Program headers pointing past the end or overflowing: copied whole.
        let mut h = vec![0u8; 64];
        h[..6].copy_from_slice(&[0x7f, b'E', b'L', b'F', 2, 1]);
        h[0x20..0x28].copy_from_slice(&u64::MAX.to_le_bytes());
        h[0x36..0x38].copy_from_slice(&56u16.to_le_bytes());
        h[0x38..0x3A].copy_from_slice(&3u16.to_le_bytes());
        assert_eq!(&*loadable_part(&h), &h[..]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_are_named_for_their_pid_and_removed_when_dropped() {
        let dir = std::env::temp_dir().join(format!("clrprof-libcopy-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let lib = dir.join("libclrprof_profiler.so");
        std::fs::write(&lib, b"not really a library").unwrap();
        let ctl = dir.join("ctl");
        if on_noexec_mount(&dir) {
            return;
        }
        // A live pid (ours): the second create must not take the first copy for stale.
        let pid = std::process::id();
        let a = LibraryCopy::create(&lib, &ctl, own_uid(), pid)
            .unwrap()
            .unwrap();
        let b = LibraryCopy::create(&lib, &ctl, own_uid(), pid)
            .unwrap()
            .unwrap();
        assert_ne!(a.path(), b.path());
        let name = a.path().file_name().unwrap().to_string_lossy().into_owned();
        assert_eq!(copy_pid(&name), Some(pid), "{name}");
        assert_eq!(std::fs::read(a.path()).unwrap(), b"not really a library");
        let mode = std::fs::metadata(&ctl).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o700);
        let (pa, pb) = (a.path().to_path_buf(), b.path().to_path_buf());
        drop(a);
        assert!(!pa.exists() && pb.exists());
        drop(b);
        assert!(!pb.exists());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_noexec_mount_is_found_by_its_longest_mount_point() {
        let mounts = "/dev/vda / ext4 rw,relatime 0 0\n\
                      tmpfs /tmp tmpfs rw,nosuid,nodev,noexec 0 0\n\
                      tmpfs /tmp/x\\040y tmpfs rw 0 0\n";
        assert!(!noexec_in(mounts, Path::new("/home/u")));
        assert!(noexec_in(mounts, Path::new("/tmp/clrprof-0")));
        assert!(!noexec_in(mounts, Path::new("/tmp/x y/clrprof-0")));
        assert!(!noexec_in(mounts, Path::new("/tmpfoo")));
    }

    #[test]
    fn stale_copies_of_gone_processes_are_removed() {
        let dir = std::env::temp_dir().join(format!("clrprof-libstale-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        // pid_max is at most 2^22: this pid does not exist.
        let gone = dir.join("libclrprof_profiler.99999999.00000000deadbeef.so");
        let live = dir.join(format!(
            "libclrprof_profiler.{}.00000000deadbeef.so",
            std::process::id()
        ));
        let other = dir.join("1234.sock");
        for p in [&gone, &live, &other] {
            std::fs::write(p, b"x").unwrap();
        }
        remove_stale(&dir);
        assert!(!gone.exists());
        assert!(live.exists() && other.exists());
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[cfg(test)]
mod resident_tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// Maps `path` into this process (as the runtime's `dlopen` would map the copy).
    fn map(path: &Path) -> (*mut libc::c_void, usize) {
        let f = std::fs::File::open(path).unwrap();
        let len = f.metadata().unwrap().len() as usize;
        // SAFETY: a fresh private read-only mapping of a file we own, unmapped by `unmap`.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_PRIVATE,
                std::os::fd::AsRawFd::as_raw_fd(&f),
                0,
            )
        };
        assert_ne!(p, libc::MAP_FAILED);
        (p, len)
    }

    fn unmap((p, len): (*mut libc::c_void, usize)) {
        // SAFETY: exactly the pointer and length one `map` returned, once.
        unsafe { libc::munmap(p, len) };
    }

    #[test]
    fn the_resident_copy_is_the_mapped_one_and_only_if_it_checks_out() {
        let pid = std::process::id();
        let dir = std::env::temp_dir().join(format!("clrprof-resident-{pid}"));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let ctl = dir.join("ctl");
        std::fs::DirBuilder::new().mode(0o700).create(&ctl).unwrap();
        if on_noexec_mount(&dir) {
            return;
        }
        let lib = dir.join("libclrprof_profiler.so");
        std::fs::write(&lib, vec![7u8; 8192]).unwrap();
        let uid = own_uid();
        let copy = ctl.join(format!("libclrprof_profiler.{pid}.00000000deadbeef.so"));
        std::fs::write(&copy, vec![7u8; 8192]).unwrap();
        std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o644)).unwrap();
        // A planted file with the right name that the process does not map: never named.
        let planted = ctl.join(format!("libclrprof_profiler.{pid}.00000000cafebabe.so"));
        std::fs::write(&planted, vec![7u8; 8192]).unwrap();
        assert_eq!(resident(pid, uid, &lib), None, "nothing mapped yet");

        let m = map(&copy);
        assert_eq!(resident(pid, uid, &lib), Some(copy.clone()));
        // Not a copy for this pid, another owner, or another build's library: not named.
        assert_eq!(resident(pid + 1, uid, &lib), None);
        assert_eq!(resident(pid, uid + 1, &lib), None);
        std::fs::write(dir.join("other.so"), vec![8u8; 8192]).unwrap();
        assert_eq!(resident(pid, uid, &dir.join("other.so")), None);
        // Writable by others: not trusted.
        std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o666)).unwrap();
        assert_eq!(resident(pid, uid, &lib), None);
        std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o644)).unwrap();
        // Removed from disk (a cleaner of /tmp): still named, by the name the process
        // loaded it under (`dlopen` matches that before it opens a file).
        std::fs::remove_file(&copy).unwrap();
        assert_eq!(resident(pid, uid, &lib), Some(copy.clone()));
        assert_eq!(
            resident(pid, uid, &dir.join("other.so")),
            None,
            "another build's bytes, read through map_files"
        );
        // Replaced on disk (another inode under the mapped name): the file is not the
        // mapped object; the removed mapping is still named.
        std::fs::write(&copy, vec![9u8; 8192]).unwrap();
        assert_eq!(resident(pid, uid, &lib), Some(copy.clone()));
        unmap(m);
        assert_eq!(resident(pid, uid, &lib), None, "no longer mapped");

        // While mapped, a stale sweep keeps it; the unmapped planted file goes once old
        // or its process is gone (here: alive, fresh, so it stays too).
        let m = map(&copy);
        remove_stale(&ctl);
        assert!(copy.exists());
        unmap(m);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn maps_lines_are_read_with_their_device_inode_and_path() {
        let e = map_entry(
            "7f00-7f10 r-xp 00000000 fd:01 1234567    /tmp/clrprof-1000/libclrprof_profiler.9.00000000deadbeef.so",
        )
        .unwrap();
        assert_eq!((e.major, e.minor, e.inode), (0xfd, 1, 1234567));
        assert_eq!(
            e.path,
            "/tmp/clrprof-1000/libclrprof_profiler.9.00000000deadbeef.so"
        );
        let gone = map_entry("7f00-7f10 r-xp 00000000 fd:01 12 /tmp/x.so (deleted)").unwrap();
        assert!(gone.deleted && gone.path == "/tmp/x.so" && gone.range == "7f00-7f10");
        assert!(map_entry("7f00-7f10 rw-p 00000000 00:00 0 ").is_none());
        assert!(map_entry("7f00-7f10 rw-p 00000000 00:00 0    [stack]").is_none());
        let spaced = map_entry("7f00-7f10 r--p 00000000 08:02 5 /tmp/a b/c.so").unwrap();
        assert_eq!(spaced.path, "/tmp/a b/c.so");
    }
}
