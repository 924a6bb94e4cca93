//! `clrprof heap --pid PID`: attach (or use the clrprof profiler already attached), take
//! one heap snapshot, detach, and summarise it; `clrprof diff A B`; the heap section of
//! `clrprof report`. The mechanism is in docs/heap.md.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clrprof_analysis::heap::{self, HeapOptions, HeapReport, snapshot};
use clrprof_ipc::DiagnosticsClient;
use clrprof_settings::{EventGroups, Mode, Settings};

use crate::attach;
use crate::cli::{HeapArgs, HeapView};
use crate::locate;

/// The ring of each thread of the attached agent (trace mode's size): the walk's thread
/// fills it while the target is stopped, and with the events mode's 256 KiB it waited
/// for the writer (up to 0.23 s of a 2.8 s pause at 10 M objects on a loaded host). A
/// thread's ring takes pages only as its records pass through, and goes at the detach;
/// the writer's blocks, which `report` reads one at a time, stay within its size.
const HEAP_RING_BYTES: usize = 4 << 20;

/// How long a snapshot may take before the CLI stops waiting (a 10 M-object heap takes
/// seconds; the target keeps going either way).
const SNAPSHOT_TIMEOUT: Duration = Duration::from_secs(600);

pub fn run(args: HeapArgs) -> Result<i32> {
    let pid = args.pid;
    if !attach::alive(pid) {
        bail!("no process with pid {pid}");
    }
    let cwd = std::env::current_dir()?;
    // A dormant agent (after `record --mode trace`) records nothing: the snapshot needs a
    // session of its own, which `attach::start` starts in it.
    let already = attach::control_socket(pid).exists()
        && attach::control_status(pid, Duration::from_secs(2)).is_ok_and(|s| !s.dormant);
    let (output, library) = if already {
        // Use the running session: the snapshot goes into its trace.
        let status = attach::control_status(pid, Duration::from_secs(2))?;
        (status.output, None)
    } else {
        let library = locate::profiler_library(args.profiler.as_deref())?;
        let output = match &args.output {
            Some(p) if p.is_absolute() => p.clone(),
            Some(p) => cwd.join(p),
            None => cwd.join(format!("clrprof-{pid}-heap.clrprof")),
        };
        let client = DiagnosticsClient::connect(pid).map_err(attach::explain)?;
        // No events: the snapshot only.
        let settings = Settings {
            events: EventGroups::default(),
            heap: true,
            output: output.clone(),
            buffer_bytes: HEAP_RING_BYTES,
            // The agent detaches itself if this process is killed meanwhile.
            owner_pid: Some(std::process::id()),
            owner_start: attach::own_start_time(),
            ..Settings::for_mode(Mode::Events)
        };
        // Ctrl-C while attached detaches cleanly (after the snapshot, which cannot be
        // interrupted in the target), never leaving the agent behind.
        crate::signals::catch();
        let library = attach::start(&client, pid, &library, &settings)?;
        if let Some(sig) = crate::signals::received() {
            attach::detach_and_wait(pid, &library, true)?;
            bail!(
                "stopped by signal {sig} during the attach; detached from pid {pid}, no snapshot taken"
            );
        }
        (output, Some(library))
    };
    let taken = attach::control_heap(pid, SNAPSHOT_TIMEOUT);
    let mut detached_elsewhere = false;
    if let Some(library) = &library
        && let Err(e) = attach::detach_and_wait(pid, library, true)
    {
        // Another `clrprof detach` (or the target's exit) got there first: its detach
        // waited for the snapshot, which the control thread finishes before it serves
        // anything else; ours then meets a closed socket.
        if !attach::wait_unloaded(pid, library, Duration::from_secs(15)) {
            return Err(e);
        }
        detached_elsewhere = true;
    }
    // The snapshot's number, and the pause when the answer came.
    let (snapshot, pause_ms) = match taken {
        Ok(t) => (t.snapshot, Some(t.pause_ms)),
        Err(e) if detached_elsewhere || library.is_some() && !attach::alive(pid) => {
            // The answer was lost with the socket; the file tells whether the snapshot is
            // in it.
            let bytes = crate::input::open(&output).ok();
            let last = bytes
                .as_deref()
                .and_then(|b| snapshot::list(b).ok())
                .and_then(|l| l.last().map(|s| s.0));
            match last {
                Some(n) => (n, None),
                None => {
                    return Err(e.context(format!(
                        "the profiler in pid {pid} was detached (another `clrprof detach`, or the \
                         target exited) before the heap snapshot was taken: {} holds none",
                        output.display()
                    )));
                }
            }
        }
        Err(e) => return Err(e.context("taking the heap snapshot")),
    };
    if detached_elsewhere {
        eprintln!(
            "clrprof: the profiler in pid {pid} was detached by another request (`clrprof detach`) \
             while the snapshot was taken; the snapshot is complete in {}",
            output.display()
        );
    }
    if !args.json {
        eprintln!(
            "clrprof: heap snapshot of pid {pid} in {} (target paused {:.1} ms)",
            output.display(),
            pause_ms.unwrap_or(0.0)
        );
    }
    if library.is_none() {
        // The session goes on writing: its file is complete only after it stops.
        eprintln!(
            "clrprof: the snapshot is in the running session's trace {}; report it once that session ends",
            output.display()
        );
        return Ok(0);
    }
    let view = HeapView {
        snapshot: Some(snapshot),
        ..args.view
    };
    print_report(&output, &view, args.top, args.json)?;
    Ok(0)
}

/// The snapshots of `file`; with `warn`, the reader's warnings about it are printed first
/// (`report` prints those of its own pass).
pub(crate) fn list(file: &Path, bytes: &[u8], warn: bool) -> Result<Vec<(u64, snapshot::Totals)>> {
    let (list, warnings) = snapshot::list_checked(bytes)
        .with_context(|| format!("{} is not a readable clrprof trace", file.display()))?;
    if warn {
        crate::input::print_warnings(file, &warnings);
    }
    Ok(list)
}

/// Loads snapshot `which` (default: the last) of `file`, whose snapshots are `list`;
/// `fields`: with the fields of the references (paths show them).
pub(crate) fn load(
    file: &Path,
    bytes: &[u8],
    list: &[(u64, snapshot::Totals)],
    which: Option<u64>,
    fields: bool,
    release: &dyn Fn(),
) -> Result<snapshot::HeapSnapshot> {
    let Some(last) = list.last() else {
        bail!(
            "{} holds no heap snapshot (take one with `clrprof heap --pid PID` or `clrprof record --heap SECONDS`)",
            file.display()
        );
    };
    let n = which.unwrap_or(last.0);
    if !list.iter().any(|s| s.0 == n) {
        bail!(
            "{} has no heap snapshot {n} (it has {})",
            file.display(),
            list.iter()
                .map(|s| s.0.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    Ok(snapshot::load_releasing(bytes, n, fields, release)?)
}

/// The heap section of snapshot `view.snapshot` of `file`; `warn`: print the reader's
/// warnings about the file (a caller that read it whole has printed them already).
/// Each pass over the file gives its pages back when done: the analysis then holds only
/// its own arrays (docs/performance.md, "Heap snapshots").
pub fn report_of(
    file: &Path,
    bytes: &crate::input::TraceBytes,
    view: &HeapView,
    top: usize,
    warn: bool,
) -> Result<HeapReport> {
    bytes.release();
    let snapshots = list(file, bytes, warn)?;
    bytes.release();
    let s = load(
        file,
        bytes,
        &snapshots,
        view.snapshot,
        view.paths_to.is_some(),
        &|| bytes.release(),
    )?;
    bytes.release();
    Ok(heap::report::build_owned(
        s,
        &HeapOptions {
            top,
            paths_to: view.paths_to.clone(),
            statics: view.statics.clone(),
        },
    ))
}

fn print_report(file: &Path, view: &HeapView, top: usize, json: bool) -> Result<()> {
    let bytes = crate::input::open(file)?;
    let r = report_of(file, &bytes, view, top, true)?;
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({ "heap": r }))?
        );
    } else {
        crate::stdout::write_text(&clrprof_analysis::text::render_heap(&r))?;
    }
    Ok(())
}
