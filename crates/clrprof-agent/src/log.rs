//! The agent's own log: a line per notable fact, prefixed so an operator can grep it.
//! Rare by design (load, decline, end-of-trace summary, errors), so a mutex is fine here.

use std::io::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::config::LogTarget;

static TARGET: Mutex<Option<LogTarget>> = Mutex::new(None);
/// Whether the log file was refused once already (said once on stderr).
static REFUSED: AtomicBool = AtomicBool::new(false);
/// Lines stderr did not take (a full pipe nobody reads): said with the next line it takes.
static DROPPED: AtomicU64 = AtomicU64::new(0);

/// Set in the .NET SDK's own processes: MSBuild turns every line a tool it runs writes on
/// stderr into a build error, so there the log goes to its file or nowhere.
static NEVER_STDERR: AtomicBool = AtomicBool::new(false);

/// Whether the running session was started by an attach: its target's stderr is a
/// running service's own log, which [`detail`] lines stay out of.
static ATTACHED: AtomicBool = AtomicBool::new(false);

/// At a session's start: a log file refused by the last session is tried (and, if
/// refused again, said) again. `NEVER_STDERR` stays: a process of the SDK remains one.
pub fn reset_for_session() {
    REFUSED.store(false, Ordering::Relaxed);
}

/// At a session's start: whether it was started by an attach (see [`detail`]).
pub fn set_attached(attached: bool) {
    ATTACHED.store(attached, Ordering::Relaxed);
}

/// A line of detail: the statistics a recording's end reports (what the sampler, the
/// ReadyToRun guard, the source positions and the name lookups did). Written as
/// [`line`] writes, except in a session started by an attach with the log on stderr:
/// there stderr belongs to a running app (often a service whose log it is), which gets
/// the session's start, its end and its problems, a few lines a session, not a dozen
/// lines of figures each time someone runs `clrprof dump`. The sampler's figures stay
/// in the trace (`clrprof report` prints its ticks and why any were missed); a session
/// started with the app (the environment variables) writes them all, as does a log file.
pub fn detail(msg: &str) {
    if ATTACHED.load(Ordering::Relaxed) && current_target() == LogTarget::Stderr {
        return;
    }
    line(msg);
}

fn current_target() -> LogTarget {
    TARGET
        .lock()
        .ok()
        .and_then(|g| g.clone())
        .unwrap_or(LogTarget::Stderr)
}

/// From now on, no line goes to stderr (not even when the log file cannot be opened).
pub fn never_stderr() {
    NEVER_STDERR.store(true, Ordering::Relaxed);
}

pub fn set_target(t: LogTarget) {
    if let Ok(mut g) = TARGET.lock() {
        *g = Some(t);
    }
}

/// Writes `clrprof[pid]: message` to the configured target (stderr until configured,
/// except in the SDK's processes: [`never_stderr`]).
pub fn line(msg: &str) {
    let text = format!("clrprof[{}]: {msg}\n", std::process::id());
    let target = current_target();
    let stderr_ok = !NEVER_STDERR.load(Ordering::Relaxed);
    match target {
        LogTarget::Off => {}
        LogTarget::Stderr => {
            if stderr_ok {
                to_stderr(&text);
            }
        }
        LogTarget::File(path) => {
            let ok = crate::output::outfile::open_log(&path)
                .and_then(|mut f| f.write_all(text.as_bytes()));
            if let Err(e) = ok
                && stderr_ok
            {
                // Carry on without that log: its lines go to stderr, and the first says why.
                if !REFUSED.swap(true, Ordering::Relaxed) {
                    let why = format!(
                        "clrprof[{}]: CLRPROF_LOG not used ({e}); logging to stderr\n",
                        std::process::id()
                    );
                    to_stderr(&why);
                }
                to_stderr(&text);
            }
        }
    }
}

/// One line to stderr, never blocking (`os::stderr`): a line a full pipe does not take is
/// counted, and the next line that goes through is preceded by the count.
fn to_stderr(text: &str) {
    #[cfg(unix)]
    {
        use crate::os::stderr::{Outcome, write};
        let dropped = DROPPED.load(Ordering::Relaxed);
        if dropped > 0 {
            let note = format!(
                "clrprof[{}]: {dropped} earlier log line(s) not written: stderr was full (a pipe nobody read)\n",
                std::process::id()
            );
            if write(note.as_bytes()) == Outcome::Dropped {
                DROPPED.fetch_add(1, Ordering::Relaxed);
                return;
            }
            DROPPED.fetch_sub(dropped, Ordering::Relaxed);
        }
        if write(text.as_bytes()) == Outcome::Dropped {
            DROPPED.fetch_add(1, Ordering::Relaxed);
        }
    }
    #[cfg(not(unix))]
    {
        let _ = std::io::stderr().write_all(text.as_bytes());
    }
}

#[macro_export]
macro_rules! log {
    ($($arg:tt)*) => { $crate::log::line(&format!($($arg)*)) };
}

/// A [`detail`](crate::log::detail) line.
#[macro_export]
macro_rules! log_detail {
    ($($arg:tt)*) => { $crate::log::detail(&format!($($arg)*)) };
}
