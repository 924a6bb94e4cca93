//! Checking the `-o` path before anything runs, so that a bad one is refused up front with
//! its reason instead of being found out inside the target. The agent creates the file
//! itself (`O_CREAT|O_EXCL|O_NOFOLLOW`, 0600: see the agent's `outfile.rs`); here clrprof
//! refuses what the agent would refuse, and with `--force` removes an old trace of the
//! user's own first — never through a symbolic link, never a file another user owns.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use anyhow::{Result, bail};

/// Validates `path` (a template when it holds `{pid}`) for a new trace.
pub fn prepare(path: &Path, force: bool) -> Result<()> {
    if path.to_str().is_none() {
        bail!(
            "the output path {:?} is not valid UTF-8; choose a name the trace header can hold",
            path.to_string_lossy()
        );
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => bail!(
            "cannot write {}: {} is not a directory",
            path.display(),
            dir.display()
        ),
        Err(e) => bail!(
            "cannot write {}: directory {}: {e}",
            path.display(),
            dir.display()
        ),
    }
    if path.to_string_lossy().contains("{pid}") {
        return Ok(());
    }
    let m = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(_) => return Ok(()),
    };
    if m.file_type().is_symlink() {
        bail!(
            "{} is a symbolic link: clrprof never writes through one (someone may have planted it); \
             remove it or choose another -o",
            path.display()
        );
    }
    if m.is_dir() {
        bail!("{} is a directory; give -o a file name", path.display());
    }
    if !force {
        bail!(
            "{} already exists; clrprof does not overwrite files (use --force to replace a trace of yours)",
            path.display()
        );
    }
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if !m.is_file() || m.uid() != me {
        bail!(
            "{} belongs to uid {} (or is not a regular file): --force replaces only your own files",
            path.display(),
            m.uid()
        );
    }
    std::fs::remove_file(path)
        .map_err(|e| anyhow::anyhow!("cannot remove the old {}: {e}", path.display()))?;
    Ok(())
}

/// The traces this run wrote: for `-o name.ext`, `name.ext` and `name.<pid>.ext`; for a
/// `{pid}` template, every name it matches. Only files modified since `since`.
pub fn written(template: &Path, since: SystemTime) -> Vec<(PathBuf, u64)> {
    let dir = template.parent().unwrap_or(Path::new("."));
    let name = template
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let (prefix, suffix, exact) = match name.split_once("{pid}") {
        Some((p, s)) => (p.to_string(), s.to_string(), None),
        None => {
            let stem = template
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            let ext = template
                .extension()
                .map(|e| format!(".{}", e.to_string_lossy()))
                .unwrap_or_default();
            (format!("{stem}."), ext, Some(name.clone()))
        }
    };
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for e in entries.flatten() {
        let n = e.file_name().to_string_lossy().into_owned();
        let matches = exact.as_deref() == Some(n.as_str())
            || n.strip_prefix(&prefix)
                .and_then(|r| r.strip_suffix(&suffix))
                .is_some_and(|mid| !mid.is_empty() && mid.bytes().all(|b| b.is_ascii_digit()));
        if !matches {
            continue;
        }
        if let Ok(m) = std::fs::symlink_metadata(e.path())
            && m.is_file()
            && m.len() > 0
            && m.modified().is_ok_and(|t| t >= since)
        {
            found.push((e.path(), m.len()));
        }
    }
    found.sort();
    found
}

/// `pid N: command line` from a trace's header, to tell the traces of one run apart.
pub fn describe(path: &Path) -> Option<String> {
    use std::io::Read;
    let mut buf = vec![0u8; 64 * 1024];
    let mut f = std::fs::File::open(path).ok()?;
    let n = f.read(&mut buf).ok()?;
    let (h, _) = clrprof_format::Header::parse(&buf[..n]).ok()?;
    let command: Vec<_> = h
        .meta
        .command_line
        .iter()
        .map(|a| clrprof_analysis::text::escape_controls(a))
        .collect();
    Some(format!("pid {}: {}", h.meta.pid, command.join(" ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("clrprof-out-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn refuses_links_dirs_and_existing_files() {
        let d = scratch("refuse");
        let victim = d.join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let link = d.join("t.clrprof");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let e = prepare(&link, true).unwrap_err().to_string();
        assert!(e.contains("symbolic link"), "{e}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        assert!(
            prepare(&d, false)
                .unwrap_err()
                .to_string()
                .contains("is a directory")
        );
        let e = prepare(&victim, false).unwrap_err().to_string();
        assert!(e.contains("already exists") && e.contains("--force"), "{e}");
        prepare(&victim, true).unwrap();
        assert!(!victim.exists());
        assert!(prepare(&d.join("no/such/t.clrprof"), false).is_err());
        assert!(prepare(&d.join("x-{pid}.clrprof"), false).is_ok());
    }

    #[test]
    fn lists_the_traces_of_a_run() {
        let d = scratch("list");
        let since = SystemTime::now() - std::time::Duration::from_secs(1);
        for n in [
            "t.clrprof",
            "t.123.clrprof",
            "t.x.clrprof",
            "u.clrprof",
            "t.clrprof.9",
        ] {
            std::fs::write(d.join(n), "x").unwrap();
        }
        let names = |v: Vec<(PathBuf, u64)>| {
            v.into_iter()
                .map(|(p, _)| p.file_name().unwrap().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            names(written(&d.join("t.clrprof"), since)),
            ["t.123.clrprof", "t.clrprof"]
        );
        std::fs::write(d.join("c-77.trace"), "x").unwrap();
        assert_eq!(
            names(written(&d.join("c-{pid}.trace"), since)),
            ["c-77.trace"]
        );
        let later = SystemTime::now() + std::time::Duration::from_secs(60);
        assert!(written(&d.join("t.clrprof"), later).is_empty());
    }
}
