//! Creating the files the agent writes (the trace, its log, an attach error note) without
//! trusting the directory they go in: `O_CREAT|O_EXCL|O_NOFOLLOW`, mode 0600. An existing
//! name (a file, a symbolic link, a directory) is never opened, so a link planted in a
//! world-writable directory cannot redirect the write, and a file someone else created
//! beforehand is never written into. The CLI removes a file of the user's own when asked
//! to (`--force`); the agent itself never replaces anything.

use std::fs::{File, OpenOptions};
use std::io::ErrorKind;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Creates `path` as a new owner-only file. With `siblings` (several processes of one
/// `clrprof record` run share the name), an existing `path` falls back to
/// `<stem>.<pid>.<ext>` beside it, so each process writes its own trace.
pub fn create_new(path: &Path, siblings: bool, pid: u32) -> Result<(File, PathBuf), String> {
    match open_excl(path) {
        Ok(f) => Ok((f, path.to_path_buf())),
        Err(e) if e.kind() == ErrorKind::AlreadyExists && siblings => {
            let alt = with_pid(path, pid);
            open_excl(&alt)
                .map(|f| (f, alt.clone()))
                .map_err(|e| describe(&alt, &e))
        }
        Err(e) => Err(describe(path, &e)),
    }
}

fn open_excl(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .mode(0o600)
        .open(path)
}

/// `dir/name.ext` → `dir/name.<pid>.ext` (no extension: `dir/name.<pid>`).
pub fn with_pid(path: &Path, pid: u32) -> PathBuf {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = match path.extension() {
        Some(ext) => format!("{stem}.{pid}.{}", ext.to_string_lossy()),
        None => format!("{stem}.{pid}"),
    };
    path.with_file_name(name)
}

fn describe(path: &Path, e: &std::io::Error) -> String {
    match e.kind() {
        ErrorKind::AlreadyExists => {
            // `--force` replaces only a regular file of the user's own: never suggest it
            // for a link or a directory, which it refuses.
            let (what, remedy) = match std::fs::symlink_metadata(path) {
                Ok(m) if m.file_type().is_symlink() => (
                    "a symbolic link",
                    "remove the link or choose another path (clrprof never follows one, --force included)",
                ),
                Ok(m) if m.is_dir() => ("a directory", "choose another path"),
                _ => (
                    "a file",
                    "remove it, or use `clrprof record --force` to replace a trace of yours",
                ),
            };
            format!(
                "cannot create trace file {}: {what} of that name already exists and clrprof never \
                 writes through or over one ({remedy})",
                path.display()
            )
        }
        _ => format!("cannot create trace file {}: {e}", path.display()),
    }
}

/// Opens the agent's log file for appending: never through a symbolic link, created 0600,
/// and only if it is a regular file this user owns. `O_NONBLOCK`: a FIFO planted at the
/// path (another user can, in `/tmp`) would otherwise block the opening thread, the
/// runtime's, until someone reads it; without a reader the open fails at once (`ENXIO`),
/// with one it is refused by its type. The error says what the path is.
pub fn open_log(path: &Path) -> std::io::Result<File> {
    let f = OpenOptions::new()
        .append(true)
        .create(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK | libc::O_NOCTTY)
        .mode(0o600)
        .open(path)
        .map_err(|e| {
            let what = match e.raw_os_error() {
                Some(libc::ELOOP) => "it is a symbolic link".to_string(),
                Some(libc::ENXIO) => "it is a FIFO or socket nobody reads".to_string(),
                _ => e.to_string(),
            };
            std::io::Error::new(e.kind(), format!("cannot open {}: {what}", path.display()))
        })?;
    let me = crate::os::process::euid();
    let m = f.metadata()?;
    if !m.is_file() {
        return Err(std::io::Error::new(
            ErrorKind::PermissionDenied,
            format!("{} is not a regular file", path.display()),
        ));
    }
    if m.uid() != me {
        return Err(std::io::Error::new(
            ErrorKind::PermissionDenied,
            format!(
                "{} belongs to uid {}, not to uid {me}",
                path.display(),
                m.uid()
            ),
        ));
    }
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("clrprof-outfile-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_new_file_is_owner_only() {
        let d = scratch("new");
        let (_, p) = create_new(&d.join("t.clrprof"), false, 1).unwrap();
        let mode = std::fs::metadata(&p).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn a_symlink_is_never_followed() {
        let d = scratch("link");
        let victim = d.join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let link = d.join("t.clrprof");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let e = create_new(&link, false, 1).unwrap_err();
        assert!(e.contains("symbolic link"), "{e}");
        // --force refuses links: the remedy is to remove it or choose another path.
        assert!(
            e.contains("remove the link or choose another path") && !e.contains("use `clrprof"),
            "{e}"
        );
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        // A dangling link is refused too (O_EXCL does not create through it).
        std::fs::remove_file(&victim).unwrap();
        assert!(create_new(&link, false, 1).is_err());
        assert!(!victim.exists());
    }

    #[test]
    fn an_existing_file_is_refused_or_gets_a_sibling() {
        let d = scratch("exists");
        let p = d.join("t.clrprof");
        std::fs::write(&p, "old").unwrap();
        assert!(create_new(&p, false, 7).unwrap_err().contains("--force"));
        let (_, alt) = create_new(&p, true, 7).unwrap();
        assert_eq!(alt, d.join("t.7.clrprof"));
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "old");
    }

    #[test]
    fn a_log_that_is_a_fifo_or_a_link_is_refused_without_blocking() {
        let d = scratch("log");
        let ok = d.join("ok.log");
        assert!(open_log(&ok).is_ok());
        assert!(
            open_log(&ok).is_ok(),
            "appending to an existing log of ours"
        );
        let fifo = d.join("fifo.log");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: (A8) `c` is a live NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let t = std::time::Instant::now();
        let e = open_log(&fifo).unwrap_err().to_string();
        assert!(e.contains("FIFO"), "{e}");
        // With a reader the open succeeds, and the type refuses it.
        let reader = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&fifo)
            .unwrap();
        let e = open_log(&fifo).unwrap_err().to_string();
        assert!(e.contains("not a regular file"), "{e}");
        drop(reader);
        assert!(t.elapsed() < std::time::Duration::from_secs(1));
        let link = d.join("link.log");
        std::os::unix::fs::symlink(&ok, &link).unwrap();
        let e = open_log(&link).unwrap_err().to_string();
        assert!(e.contains("symbolic link"), "{e}");
    }

    #[test]
    fn pid_names() {
        assert_eq!(with_pid(Path::new("/a/b.x"), 3), Path::new("/a/b.3.x"));
        assert_eq!(with_pid(Path::new("/a/b"), 3), Path::new("/a/b.3"));
    }
}
