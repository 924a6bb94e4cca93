//! What a trace cannot say about itself, said beside it.
//!
//! - `<trace>.lost`: when the disk is full at the end, the trace cannot take the records of
//!   what it lost (`Lost`, `WriteFailed`); so the room for a note is taken when the trace is
//!   created (a placeholder of [`RESERVED`] bytes, written while there is room) and, at the
//!   end, either removed (every block was written) or overwritten in place with the loss
//!   and its errno (kept even when the disk had room again for the trace's own records:
//!   the agent cannot tell whether that last write made it). Overwriting bytes a file already holds needs no new room. A note left
//!   as its placeholder says the recording never ended (the process was killed). `clrprof
//!   report` prints the note with the trace when its pid and start time match the header.
//! - the run directory of `clrprof record` (`CLRPROF_RUN`, a 0700 directory of the user's
//!   own): `<pid>.trace` names the trace this process writes, `<pid>.end` is the same note
//!   as above, written at every end; `<pid>.declined` says a process declined as the .NET
//!   SDK's own. The CLI lists exactly the traces its processes wrote and tells an
//!   incomplete one, whatever else lies in the output directory.
//!
//! Files are created like the trace (`outfile`: `O_EXCL|O_NOFOLLOW`, 0600). Only at start
//! and stop: never on a hot path.

use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::output::writer::Stats;

/// The room a `.lost` note keeps: far more than a note takes.
pub const RESERVED: usize = 4096;

/// `<trace>.lost`.
pub fn lost_note_path(trace: &Path) -> PathBuf {
    let mut name = trace.as_os_str().to_owned();
    name.push(".lost");
    PathBuf::from(name)
}

/// The note's text: `key value` lines after a comment line, for the CLI to read.
pub fn note_text(trace: &Path, pid: u32, start_unix_ns: u64, end: Option<&Stats>) -> String {
    let mut s = String::new();
    match end {
        None => s.push_str(&format!(
            "# clrprof: {} is being recorded by pid {pid}; if this note is still here after \
             that process ended, the recording never ended (the process ended without the \
             runtime's shutdown: killed by a signal) and the trace may lack its last blocks\n",
            trace.display()
        )),
        Some(_) => s.push_str(&format!(
            "# clrprof: what the recording of {} lost; the trace records it too only if the \
             disk had room again at the end\n",
            trace.display()
        )),
    }
    s.push_str(&format!("pid {pid}\nstart_unix_ns {start_unix_ns}\n"));
    match end {
        None => s.push_str("state recording\n"),
        Some(st) => {
            s.push_str(&format!(
                "state ended\nlost {}\nwrite_errors {}\nwrite_lost {}\n",
                st.lost, st.write_errors, st.write_lost
            ));
            if let Some(errno) = st.write_errno {
                s.push_str(&format!(
                    "errno {errno} {} {}\n",
                    super::summary::errno_name(errno),
                    std::io::Error::from_raw_os_error(errno)
                ));
            }
        }
    }
    s
}

/// The reserved `.lost` note of a trace being recorded.
pub struct LostNote {
    file: Option<File>,
    path: PathBuf,
    trace: PathBuf,
    pid: u32,
    start_unix_ns: u64,
}

impl LostNote {
    /// Takes the room for the note beside `trace`; `None` (logged) when it cannot be
    /// created: the recording goes on, only this fallback is missing.
    pub fn reserve(trace: &Path, pid: u32, start_unix_ns: u64) -> Option<LostNote> {
        let path = lost_note_path(trace);
        let mut file = match crate::output::outfile::create_new(&path, false, pid) {
            Ok((f, _)) => f,
            Err(e) => {
                log!(
                    "{e}; if the disk fills up, the loss is recorded in the trace only if it has room again at the end"
                );
                return None;
            }
        };
        let mut text = note_text(trace, pid, start_unix_ns, None).into_bytes();
        text.resize(RESERVED.max(text.len()), b'\n');
        if let Err(e) = file.write_all(&text).and_then(|()| file.sync_data()) {
            log!(
                "cannot reserve {} for a note of what the trace loses: {e}",
                path.display()
            );
            let _ = std::fs::remove_file(&path);
            return None;
        }
        Some(LostNote {
            file: Some(file),
            path,
            trace: trace.to_path_buf(),
            pid,
            start_unix_ns,
        })
    }

    /// The recording has ended: removes the note if every block was written, otherwise
    /// overwrites it with what was lost and why. Returns whether a note is left.
    pub fn finish(mut self, stats: &Stats) -> bool {
        let Some(mut file) = self.file.take() else {
            return false;
        };
        if stats.write_errors == 0 {
            let _ = std::fs::remove_file(&self.path);
            return false;
        }
        let text = note_text(&self.trace, self.pid, self.start_unix_ns, Some(stats));
        let wrote = file
            .seek(SeekFrom::Start(0))
            .and_then(|_| file.write_all(text.as_bytes()))
            .and_then(|()| file.set_len(text.len() as u64));
        if let Err(e) = wrote {
            log!(
                "cannot write what the trace lost into {}: {e}",
                self.path.display()
            );
        }
        true
    }
}

impl Drop for LostNote {
    /// A recording that failed to start leaves no note (nor trace) behind.
    fn drop(&mut self) {
        if self.file.take().is_some() {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// `clrprof record`'s run directory, if it is one this user may write notes into: a
/// directory (not a link) of the user's own, closed to others.
fn run_dir(run: &Path) -> Option<&Path> {
    let me = crate::os::process::euid();
    match std::fs::symlink_metadata(run) {
        Ok(m) if m.is_dir() && m.uid() == me && m.mode() & 0o077 == 0 => Some(run),
        Ok(_) => {
            log!(
                "CLRPROF_RUN {} is not a directory of uid {me} closed to others: no run notes",
                run.display()
            );
            None
        }
        Err(e) => {
            log!("CLRPROF_RUN {}: {e}: no run notes", run.display());
            None
        }
    }
}

fn write_note(path: &Path, text: &str) {
    let done = crate::output::outfile::create_new(path, false, 0)
        .map_err(|e| e.to_string())
        .and_then(|(mut f, _)| f.write_all(text.as_bytes()).map_err(|e| e.to_string()));
    if let Err(e) = done {
        log!("cannot write the run note {}: {e}", path.display());
    }
}

/// Names the trace this process writes to the CLI that started the run.
pub fn note_trace(run: &Path, pid: u32, trace: &Path) {
    if let Some(dir) = run_dir(run) {
        let mut text = trace.as_os_str().to_string_lossy().into_owned();
        text.push('\n');
        write_note(&dir.join(format!("{pid}.trace")), &text);
    }
}

/// Tells the CLI that started the run how the recording ended.
pub fn note_end(run: &Path, pid: u32, trace: &Path, start_unix_ns: u64, stats: &Stats) {
    if let Some(dir) = run_dir(run) {
        write_note(
            &dir.join(format!("{pid}.end")),
            &note_text(trace, pid, start_unix_ns, Some(stats)),
        );
    }
}

/// Tells the CLI that started the run that this process declined as the .NET SDK's own
/// (`what` it is; `quiet`: a build tool, which said nothing on its stderr).
pub fn note_declined(run: &Path, pid: u32, what: &str, quiet: bool) {
    if let Some(dir) = run_dir(run) {
        write_note(
            &dir.join(format!("{pid}.declined")),
            &format!("quiet {}\nwhat {what}\n", u8::from(quiet)),
        );
    }
}

/// The log of an SDK process profiled on request: `<stem>.<pid>.log` beside its trace.
pub fn sdk_log_path(output: &Path, pid: u32) -> PathBuf {
    crate::output::outfile::with_pid(output, pid).with_extension("log")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("clrprof-notes-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_whole_trace_leaves_no_note_and_a_loss_leaves_its_errno() {
        let d = scratch("lost");
        let trace = d.join("t.clrprof");
        let note = LostNote::reserve(&trace, 7, 99).unwrap();
        let path = lost_note_path(&trace);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), RESERVED as u64);
        assert!(
            std::fs::read_to_string(&path)
                .unwrap()
                .contains("state recording")
        );
        assert!(!note.finish(&Stats::default()));
        assert!(!path.exists());

        let note = LostNote::reserve(&trace, 7, 99).unwrap();
        let st = Stats {
            lost: 5,
            write_errors: 2,
            write_lost: 4,
            write_errno: Some(libc::ENOSPC),
            ..Stats::default()
        };
        assert!(note.finish(&st));
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("pid 7\nstart_unix_ns 99\nstate ended\nlost 5\nwrite_errors 2\nwrite_lost 4\nerrno 28 ENOSPC"), "{text}");
        // A note that was there before is never written into.
        assert!(LostNote::reserve(&trace, 7, 99).is_none());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
        // A start that fails leaves none.
        std::fs::remove_file(&path).unwrap();
        drop(LostNote::reserve(&trace, 7, 99).unwrap());
        assert!(!path.exists());
    }
}
