//! A fresh copy of the profiler library for each attach.
//!
//! The runtime loads the library a profiler names with `dlopen`, and `dlopen` of a file
//! that is already loaded returns the loaded copy, statics and thread-locals included. A
//! detach unloads the library, so the next attach normally starts afresh; but a refused
//! attach (`CORPROF_E_PROFILER_ALREADY_ACTIVE`: another `clrprof` got there first) leaks
//! its reference inside the runtime, and the file then stays loaded after the first
//! recording detaches. An attach of the same file would meet that recording's state, and
//! the runtime's EventPipe thread once wrote through its stale buffer pointer into freed
//! memory. So each attach hands the runtime a copy of its own: `dlopen` maps it afresh, a
//! leaked reference keeps only a copy nobody loads again, and the agent refuses to record
//! twice in one copy anyway (`callbacks::RECORDED_BEFORE`).
//!
//! The copy lives in the target user's control directory (0700, theirs), named
//! `libclrprof_profiler.<pid>.<nonce>.so`, readable by the target; it is unlinked as soon as
//! the runtime has loaded it (a mapped file needs no name) or refused it. Copies that a
//! killed `clrprof` left behind are removed by the next attach to a process that is gone.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

pub struct LibraryCopy {
    path: PathBuf,
}

impl LibraryCopy {
    /// Copies `library` into `dir` (created 0700 for `uid` when missing) for an attach to
    /// `pid`. None when `dir` is on a `noexec` mount, where the runtime could not map a
    /// copy: the attach then names the library itself, and the agent refuses to record
    /// a second time in a copy that a refused attach kept loaded.
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
            let copy = LibraryCopy { path };
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
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
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

/// Removes copies a `clrprof` killed between the copy and the attach's answer left: those
/// of processes that no longer exist, and any older than [`STALE`] (an attach is answered,
/// or given up, within seconds, and a loaded copy needs no name); and the detached notes
/// of processes that no longer exist.
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

/// Past this age a copy belongs to no attach still under way.
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
