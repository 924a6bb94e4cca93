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
    // The agent creates the trace in `dir`: a directory it cannot write into would only
    // show as a profiler that never loaded.
    let c_dir = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes())
        .map_err(|_| anyhow::anyhow!("{} holds a NUL byte", dir.display()))?;
    // SAFETY: `c_dir` is a NUL-terminated string that lives across the call; access only
    // reads it.
    if unsafe { libc::access(c_dir.as_ptr(), libc::W_OK | libc::X_OK) } != 0 {
        let e = std::io::Error::last_os_error();
        bail!(
            "cannot write {}: the directory {} is not writable ({e}); choose another -o or make it writable",
            path.display(),
            dir.display()
        );
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
    // And the old trace's note, which would otherwise keep the new one's from being made.
    let note = lost_note_path(path);
    if let Ok(n) = std::fs::symlink_metadata(&note)
        && n.is_file()
        && n.uid() == me
    {
        let _ = std::fs::remove_file(&note);
    }
    Ok(())
}

/// `clrprof record`'s private run directory (`CLRPROF_RUN`): each process that records
/// notes there the trace it writes (`<pid>.trace`) and, at its end, what it lost and why
/// (`<pid>.end`). The run's traces are exactly those: not whatever else matches the name
/// in the output directory (an old file, another run's). Removed when dropped.
pub struct RunDir(PathBuf);

impl RunDir {
    /// A new directory of this user's own, closed to others, under the temp directory.
    pub fn create() -> Result<RunDir> {
        use std::os::unix::fs::DirBuilderExt;
        let base = std::env::temp_dir();
        let nanos = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let mut last = None;
        for attempt in 0..100u32 {
            let dir = base.join(format!(
                "clrprof-run-{}-{nanos:08x}{attempt}",
                std::process::id()
            ));
            match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
                Ok(()) => return Ok(RunDir(dir)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
                Err(e) => {
                    bail!(
                        "cannot create the run directory {} (where the profiled processes name                          their traces): {e}; set TMPDIR to a writable directory",
                        dir.display()
                    )
                }
            }
        }
        bail!(
            "cannot create a run directory in {}: {}",
            base.display(),
            last.map_or_else(String::new, |e| e.to_string())
        )
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    /// The traces the run's processes wrote, by pid, each with its size and how its
    /// recording ended (`None`: it never ended, the process was killed).
    pub fn traces(&self) -> Vec<RunTrace> {
        let mut found = Vec::new();
        let Ok(entries) = std::fs::read_dir(&self.0) else {
            return found;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Some(pid) = name
                .strip_suffix(".trace")
                .and_then(|p| p.parse::<u32>().ok())
            else {
                continue;
            };
            let Ok(text) = std::fs::read_to_string(e.path()) else {
                continue;
            };
            let path = PathBuf::from(text.trim_end_matches('\n'));
            let len = match std::fs::symlink_metadata(&path) {
                Ok(m) if m.is_file() => m.len(),
                _ => continue,
            };
            let end = std::fs::read_to_string(self.0.join(format!("{pid}.end")))
                .ok()
                .map(|t| Note::parse(&t));
            found.push(RunTrace {
                pid,
                path,
                len,
                end,
            });
        }
        found.sort_by(|a, b| a.path.cmp(&b.path));
        found
    }
}

impl RunDir {
    /// The processes of the run that declined as the .NET SDK's own: (what each is,
    /// whether it said so itself on its stderr).
    pub fn declined(&self) -> Vec<(String, bool)> {
        let mut found = Vec::new();
        let Ok(entries) = std::fs::read_dir(&self.0) else {
            return found;
        };
        for e in entries.flatten() {
            if !e.file_name().to_string_lossy().ends_with(".declined") {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(e.path()) else {
                continue;
            };
            let what = text
                .lines()
                .find_map(|l| l.strip_prefix("what "))
                .unwrap_or("a .NET SDK process")
                .to_string();
            let said = text.lines().any(|l| l == "quiet 0");
            found.push((what, said));
        }
        found.sort();
        found
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A trace a run wrote.
pub struct RunTrace {
    pub pid: u32,
    pub path: PathBuf,
    pub len: u64,
    /// The process's note at the end of its recording.
    pub end: Option<Note>,
}

/// A profiler's note on a trace (`<trace>.lost`, or `<pid>.end` in the run directory):
/// `key value` lines.
#[derive(Debug, Default, PartialEq)]
pub struct Note {
    pub pid: u32,
    pub start_unix_ns: u64,
    /// Whether the recording ended (a note still `recording` after the process is gone
    /// means it was killed).
    pub ended: bool,
    pub lost: u64,
    pub write_errors: u64,
    pub write_lost: u64,
    /// The first write error: errno, its name and the system's message.
    pub errno: Option<(i32, String)>,
}

impl Note {
    pub fn parse(text: &str) -> Note {
        let mut n = Note::default();
        for line in text.lines() {
            let Some((key, value)) = line.split_once(' ') else {
                continue;
            };
            let num = || value.trim().parse::<u64>().unwrap_or(0);
            match key {
                "pid" => n.pid = num() as u32,
                "start_unix_ns" => n.start_unix_ns = num(),
                "state" => n.ended = value.trim() == "ended",
                "lost" => n.lost = num(),
                "write_errors" => n.write_errors = num(),
                "write_lost" => n.write_lost = num(),
                "errno" => {
                    if let Some((code, rest)) = value.split_once(' ')
                        && let Ok(code) = code.parse()
                    {
                        n.errno = Some((code, rest.trim().to_string()));
                    }
                }
                _ => {}
            }
        }
        n
    }

    /// What the trace lacks, when writes failed: "incomplete: …".
    pub fn incomplete(&self) -> Option<String> {
        if self.write_errors == 0 {
            return None;
        }
        let why = match &self.errno {
            // "28 ENOSPC No space left on device (os error 28)"
            Some((_, text)) => match text.split_once(' ') {
                Some((name, message)) => format!("{message} ({name})"),
                None => text.clone(),
            },
            None => "write errors".into(),
        };
        Some(format!(
            "incomplete: {} block(s) holding {} events could not be written: {why}; {} events lost in all",
            self.write_errors, self.write_lost, self.lost
        ))
    }
}

/// `<trace>.lost`, the note the profiler leaves beside a trace that could not record its
/// own loss (a full disk at the end), or whose recording never ended.
pub fn lost_note_path(trace: &Path) -> PathBuf {
    let mut name = trace.as_os_str().to_owned();
    name.push(".lost");
    PathBuf::from(name)
}

/// The warnings of the note beside `trace`, if it is this trace's (same pid and start).
pub fn lost_note_warnings(trace: &Path, header: &clrprof_format::Header) -> Vec<String> {
    let note_path = lost_note_path(trace);
    let Ok(text) = std::fs::read_to_string(&note_path) else {
        return Vec::new();
    };
    let note = Note::parse(&text);
    if note.pid != header.meta.pid || note.start_unix_ns != header.meta.start_unix_ns {
        return Vec::new();
    }
    let said = if note.ended {
        note.incomplete()
    } else {
        Some(format!(
            "the recording by pid {} never ended (the process ended without the runtime's \
             shutdown, killed by a signal, or is still running): the trace may lack its last blocks",
            note.pid
        ))
    };
    said.map(|s| format!("{s} (said by {} beside it)", note_path.display()))
        .into_iter()
        .collect()
}

/// [`lost_note_warnings`] of a trace read from its file's header (`record --pid`, which
/// has not decoded the trace).
pub fn lost_note_warnings_of(trace: &Path) -> Vec<String> {
    use std::io::Read;
    let mut buf = vec![0u8; 64 * 1024];
    let Ok(mut f) = std::fs::File::open(trace) else {
        return Vec::new();
    };
    let Ok(n) = f.read(&mut buf) else {
        return Vec::new();
    };
    match clrprof_format::Header::parse(&buf[..n]) {
        Ok((h, _)) => lost_note_warnings(trace, &h),
        Err(_) => Vec::new(),
    }
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
    fn lists_the_traces_the_run_noted_and_how_they_ended() {
        let d = scratch("run");
        let run = RunDir::create().unwrap();
        let mode = std::fs::metadata(run.path()).unwrap().mode();
        assert_eq!(mode & 0o777, 0o700);
        // Only what the run's processes noted: not a matching name that was there.
        for n in ["t.clrprof", "t.123.clrprof", "t.77.clrprof"] {
            std::fs::write(d.join(n), "x").unwrap();
        }
        std::fs::write(
            run.path().join("123.trace"),
            format!("{}\n", d.join("t.123.clrprof").display()),
        )
        .unwrap();
        std::fs::write(
            run.path().join("124.trace"),
            format!("{}\n", d.join("t.clrprof").display()),
        )
        .unwrap();
        std::fs::write(
            run.path().join("123.end"),
            "# clrprof: what t.123.clrprof lacks\npid 123\nstart_unix_ns 5\nstate ended\nlost 9\n\
             write_errors 2\nwrite_lost 7\nerrno 28 ENOSPC No space left on device (os error 28)\n",
        )
        .unwrap();
        let t = run.traces();
        let names: Vec<_> = t
            .iter()
            .map(|t| t.path.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["t.123.clrprof", "t.clrprof"]);
        let end = t[0].end.as_ref().unwrap();
        assert_eq!(
            end.incomplete().unwrap(),
            "incomplete: 2 block(s) holding 7 events could not be written: \
             No space left on device (os error 28) (ENOSPC); 9 events lost in all"
        );
        assert!(t[1].end.is_none());
        let path = run.path().to_path_buf();
        drop(run);
        assert!(!path.exists());
    }
}
