//! Acceptance tests of attach and detach against a real long-running .NET app.

use crate::common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::serve::Serve;
use common::*;

fn attach_record(pid: u32, trace: &Path, extra: &[&str]) -> std::process::Output {
    clrprof()
        .args(["record", "--pid", &pid.to_string(), "-o"])
        .arg(trace)
        .args(extra)
        .output()
        .unwrap()
}

fn assert_ok(out: &std::process::Output) {
    assert!(
        out.status.success(),
        "clrprof failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn attach_sample_detach_leaves_no_trace_of_the_profiler() {
    let dir = scratch("attach-basic");
    let trace = dir.join("t.clrprof");
    let mut t = Serve::start(&scenarios(), &[]);
    let before: u64 = t
        .ask("result", "RESULT")
        .split('=')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let out = attach_record(t.pid, &trace, &["--duration", "2"]);
    assert_ok(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("attached to pid"), "{stderr}");
    assert!(says_detached(&stderr), "{stderr}");
    // The library is gone and none of its threads remain.
    assert!(agent_gone(t.pid), "still active after detach");
    let names = t.thread_names();
    assert!(
        !names.iter().any(|n| n.starts_with("clrprof")),
        "profiler threads remain: {names:?}"
    );
    // The app kept working.
    let after: u64 = t
        .ask("result", "RESULT")
        .split('=')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    assert!(after > before);
    let r = report_json(&trace);
    assert_eq!(r["trace"]["attached"], true);
    let threads: Vec<&str> = r["samples"]["threads"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        threads.contains(&"serve-worker-1") && threads.contains(&"serve-worker-2"),
        "{threads:?}"
    );
    let served = r["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "Scenarios.Serve.ServeWork");
    assert!(served.is_some(), "ServeWork never sampled");
    t.quit();
}

/// Ten sessions in one process: the library is loaded once (the first attach's copy, named
/// again by every later one) and each session starts from fresh state: its samples, its
/// threads' names, every function it met named in its own trace, and nothing of an
/// earlier session (whose data would stretch the trace's span over the earlier cycles).
/// Half way the copy's file is removed from disk, and the process still maps one copy.
#[test]
fn ten_attach_detach_cycles_on_one_process() {
    let dir = scratch("attach-cycles");
    let t = Serve::start(&scenarios(), &[]);
    for i in 0..10 {
        if i == 5 {
            // A cleaner of old files in /tmp removes the copy: the process still has it
            // loaded under its name, and the next attach names it again.
            for copy in agent_copy_paths(t.pid) {
                std::fs::remove_file(&copy).unwrap();
            }
        }
        let trace = dir.join(format!("t{i}.clrprof"));
        let out = attach_record(t.pid, &trace, &["--duration", "0.3", "-q"]);
        assert_ok(&out);
        assert!(agent_gone(t.pid), "cycle {i}: still active");
        assert_eq!(
            agent_copies(t.pid),
            1,
            "cycle {i}: the process maps one copy of the library, the first attach's"
        );
        let r = report_json(&trace);
        assert!(
            r["samples"]["total"].as_u64().unwrap_or(0) > 0,
            "cycle {i}: no samples"
        );
        let threads: Vec<&str> = r["samples"]["threads"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t["name"].as_str())
            .collect();
        assert!(
            threads.iter().any(|n| n.starts_with("serve-worker-")),
            "cycle {i}: worker threads unnamed: {threads:?}"
        );
        // Every function the session met is named in its own trace: a name cache left
        // from an earlier session would leave `function@0x…` here. (Which functions a
        // 0.3 s recording on a busy machine samples varies.)
        let unnamed: Vec<&str> = r["functions"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|f| f["name"].as_str())
            .filter(|n| n.starts_with("function@"))
            .collect();
        assert!(
            unnamed.is_empty(),
            "cycle {i}: functions not named in this session's trace: {unnamed:?}"
        );
        let span = r["trace"]["duration_ns"].as_u64().unwrap_or(u64::MAX);
        assert!(
            span < 5_000_000_000,
            "cycle {i}: the trace spans {span} ns for a 0.3 s recording: data of an earlier session?"
        );
    }
    t.quit();
}

#[test]
fn modules_loaded_before_and_during_the_attach_appear_once() {
    let dir = scratch("attach-modules");
    let trace = dir.join("t.clrprof");
    let mut t = Serve::start(&scenarios(), &[]);
    let pid = t.pid;
    let tr = trace.clone();
    let rec = std::thread::spawn(move || attach_record(pid, &tr, &["--duration", "3"]));
    // Load the plugin while the recording runs.
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    let sock = Path::new(&std::env::var("TMPDIR").unwrap_or("/tmp".into()))
        .join(format!("clrprof-{uid}"))
        .join(format!("{pid}.sock"));
    for _ in 0..200 {
        if sock.exists() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    t.ask("load", "LOADED");
    let out = rec.join().unwrap();
    assert_ok(&out);
    let r = report_json(&trace);
    let paths: Vec<&str> = r["modules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["path"].as_str().unwrap())
        .collect();
    for p in &paths {
        assert_eq!(
            paths.iter().filter(|x| *x == p).count(),
            1,
            "{p} appears more than once"
        );
    }
    assert!(
        paths.iter().any(|p| p.ends_with("/Scenarios.dll")),
        "{paths:?}"
    );
    assert!(
        paths
            .iter()
            .any(|p| p.ends_with("/System.Private.CoreLib.dll")),
        "{paths:?}"
    );
    assert!(
        paths.iter().any(|p| p.ends_with("/Plugin.dll")),
        "{paths:?}"
    );
    t.quit();
}

/// Every option of `record` reaches an attached agent, typed and equal: one attach with
/// each set to a value other than the one attaching without it sends, checked against
/// the settings the agent wrote into the trace header. The list is checked against
/// `record --help`, so a new option must be added here.
#[test]
fn every_option_reaches_the_attached_agent() {
    use clrprof_settings::{
        ArgLimits, EventGroup, EventGroups, Mode, OnFull, Patterns, SamplerKind, Settings,
    };
    let (other_sampler, other) = match SamplerKind::DEFAULT {
        SamplerKind::Signal => ("suspend", SamplerKind::Suspend),
        SamplerKind::Suspend => ("signal", SamplerKind::Signal),
    };
    let options: &[(&str, Option<&str>)] = &[
        ("--mode", Some("events")),
        ("--events", Some("threads,exceptions,gc,jit")),
        ("--buffer-kb", Some("64")),
        ("--on-full", Some("drop")),
        ("--rate", Some("250")),
        ("--sampler", Some(other_sampler)),
        ("--max-depth", Some("64")),
        ("--duration", Some("2.5")),
        ("--include", Some("Scenarios.*")),
        ("--exclude", Some("System.*")),
        ("--allow-inlining", None),
        ("--arg-max-len", Some("10")),
        ("--arg-depth", Some("2")),
        ("--arg-items", Some("3")),
        ("--heap", Some("0.5")),
        ("--alloc", None),
        ("--alloc-interval", Some("204800")),
        ("--max-size", Some("64M")),
        // Adds the `waits` and `suspends` groups to the `--events` given.
        ("--waits", None),
    ];
    // Options that are not agent settings, or that cannot attach (`--args` and `--counts`
    // are refused: reading arguments and counting calls need ELT hooks, which only a
    // profiler loaded at startup gets; `counts.rs` checks the refusal).
    let not_settings = [
        "--output",
        "--force",
        "--profiler",
        "--quiet",
        "--pid",
        "--args",
        "--counts",
        // Startup's choice of probes over ELT hooks: after attach trace mode has only them.
        "--probes",
        "--help",
        // The CLI's own: the line table appended after the recording, and the uploads.
        "--no-lines",
        "--pdb-dir",
        "--push",
        "--push-every",
        "--app-name",
        "--labels",
        "--no-trace",
        // The agent's log target is not in the trace's header: the third session of
        // `an_attached_session_keeps_its_figures_out_of_the_target_s_stderr` logs to a
        // file with it.
        "--agent-log",
    ];
    let help = clrprof().args(["record", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    let listed: Vec<&str> = help
        .lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with('-'))
        .filter_map(|l| l.split_whitespace().find(|w| w.starts_with("--")))
        .map(|w| w.trim_end_matches(|c: char| !c.is_ascii_alphanumeric()))
        .filter(|w| *w != "--")
        .collect();
    assert!(listed.contains(&"--on-full"), "{help}");
    for o in &listed {
        assert!(
            not_settings.contains(o) || options.iter().any(|(n, _)| n == o),
            "record option {o} is not covered by this test"
        );
    }

    let dir = scratch("attach-every-option");
    let trace = dir.join("t.clrprof");
    let t = Serve::start(&scenarios(), &[]);
    let mut cmd = clrprof();
    cmd.args(["record", "-q", "--pid", &t.pid.to_string(), "-o"])
        .arg(&trace);
    for (name, value) in options {
        cmd.arg(name).args(value);
    }
    let rec = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let owner = rec.id();
    let out = rec.wait_with_output().unwrap();
    assert_ok(&out);
    t.quit();

    let bytes = std::fs::read(&trace).unwrap();
    let (header, _) = clrprof_format::Header::parse(&bytes).unwrap();
    assert!(header.meta.attached);
    assert_eq!(header.meta.settings.mode, Mode::Events);
    let got = header.meta.settings;
    let expected = Settings {
        mode: Mode::Events,
        events: EventGroups::of(&[
            EventGroup::Threads,
            EventGroup::Exceptions,
            EventGroup::Gc,
            EventGroup::Jit,
            EventGroup::Waits,
            EventGroup::Suspends,
        ]),
        buffer_bytes: 64 * 1024,
        on_full: OnFull::Drop,
        rate_hz: 250,
        sampler: other,
        max_depth: 64,
        duration_s: Some(2.5),
        include: Patterns::parse("Scenarios.*"),
        exclude: Patterns::parse("System.*"),
        allow_inlining: true,
        arg_limits: ArgLimits {
            max_len: 10,
            depth: 2,
            items: 3,
            ..ArgLimits::DEFAULT
        },
        heap_at: vec![0.5],
        heap: true,
        alloc_interval: Some(204_800),
        max_size: Some(64 << 20),
        owner_pid: Some(owner),
        // Not in the header: the trace's own path, the log target, the owner's start.
        ..Settings::unrecorded()
    };
    assert_eq!(got, expected);
    // Each option changed its own setting: compared with an attach without options
    // (sample mode, every default), exactly these members differ.
    let plain = serde_json::to_value(Settings::for_mode(Mode::Sample)).unwrap();
    let got = serde_json::to_value(&got).unwrap();
    let mut changed: Vec<&str> = got
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, v)| plain[k.as_str()] != **v)
        .map(|(k, _)| k.as_str())
        .collect();
    changed.sort();
    assert_eq!(
        changed,
        [
            "alloc_interval",
            "allow_inlining",
            "arg_depth",
            "arg_items",
            "arg_max_len",
            "buffer_bytes",
            "duration_s",
            "events",
            "exclude",
            "heap",
            "heap_at",
            "include",
            "max_depth",
            "max_size",
            "mode",
            "on_full",
            "owner_pid",
            "rate_hz",
            "sampler",
        ]
    );
}

fn fails_with(out: &std::process::Output, needle: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "should fail: {stderr}");
    assert!(stderr.contains(needle), "expected {needle:?} in: {stderr}");
}

/// A target whose stderr is a pipe nobody reads (a supervisor that piped it and stalled):
/// the agent logs from InitializeForAttach, on the runtime's diagnostics server thread, and a
/// blocking write there hung the attach (and every later diagnostics client) for good. The
/// dump and an attached recording must go through, the app run on, and the lines the pipe
/// did not take be counted once it has room again.
#[test]
fn a_target_whose_stderr_nobody_reads_is_attached_all_the_same() {
    use std::io::Read;
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    let dir = scratch("attach-stderr-full");
    let (reader, writer) = std::io::pipe().unwrap();
    // Filled through a non-blocking descriptor of its own: the app's stays blocking.
    let mut filler = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(format!("/proc/self/fd/{}", writer.as_raw_fd()))
        .unwrap();
    while filler.write(&[b'x'; 4096]).is_ok() {}
    drop(filler);
    let mut t = Serve::start_with_stderr(&scenarios(), &[], writer.into());
    let pid = t.pid.to_string();

    let dump = clrprof().args(["dump", "--pid", &pid]).output().unwrap();
    assert_ok(&dump);
    let stacks = String::from_utf8_lossy(&dump.stdout);
    assert!(stacks.contains("Scenarios.Serve"), "{stacks}");
    let trace = dir.join("t.clrprof");
    let out = attach_record(t.pid, &trace, &["--duration", "1"]);
    assert_ok(&out);
    let r = report_json(&trace);
    assert!(
        r["functions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["name"] == "Scenarios.Serve.ServeWork"),
        "ServeWork never sampled"
    );
    t.burst(10);

    // Room again: the next session's first line is preceded by the count of those dropped.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut reader = reader;
        let mut buf = vec![0u8; 1 << 16];
        while let Ok(n @ 1..) = reader.read(&mut buf) {
            let _ = tx.send(String::from_utf8_lossy(&buf[..n]).into_owned());
        }
    });
    let dump = clrprof().args(["dump", "--pid", &pid]).output().unwrap();
    assert_ok(&dump);
    let mut seen = String::new();
    let end = std::time::Instant::now() + Duration::from_secs(30);
    let counted = loop {
        if let Ok(s) = rx.recv_timeout(Duration::from_millis(200)) {
            seen.push_str(&s);
        }
        if let Some(at) = seen.find("earlier log line(s) not written: stderr was full") {
            break seen[..at]
                .rsplit(": ")
                .next()
                .unwrap_or("")
                .trim()
                .to_string();
        }
        assert!(
            std::time::Instant::now() < end,
            "no count of the dropped lines: {:?}",
            seen.trim_start_matches('x')
        );
    };
    let dropped: u64 = counted
        .parse()
        .unwrap_or_else(|_| panic!("{counted:?} in {:?}", seen.trim_start_matches('x')));
    assert!(dropped >= 2, "{dropped}");
    t.quit();
}

#[test]
fn attach_errors_say_what_to_do() {
    let dir = scratch("attach-errors");
    let trace = dir.join("t.clrprof");
    // No such process.
    fails_with(
        &attach_record(999_999_999, &trace, &["--duration", "1"]),
        "no process with pid 999999999",
    );
    // Not a .NET process.
    let mut sleeper = Command::new("sleep").arg("30").spawn().unwrap();
    fails_with(
        &attach_record(sleeper.id(), &trace, &["--duration", "1"]),
        "is not a .NET (CoreCLR) process",
    );
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    // Trace mode cannot attach.
    let t = Serve::start(&scenarios(), &[]);
    fails_with(&attach_record(t.pid, &trace, &["--mode", "trace"]), "ELT");
    // Already attached: a second attach while the first records.
    let pid = t.pid;
    let tr = dir.join("first.clrprof");
    let first = std::thread::spawn(move || attach_record(pid, &tr, &["--duration", "3", "-q"]));
    std::thread::sleep(Duration::from_millis(1500));
    fails_with(
        &attach_record(t.pid, &trace, &["--duration", "1"]),
        "already attached",
    );
    assert_ok(&first.join().unwrap());
    t.quit();
    // Diagnostics turned off in the target.
    let off = Serve::start(&scenarios(), &[("DOTNET_EnableDiagnostics", "0")]);
    fails_with(
        &attach_record(off.pid, &trace, &["--duration", "1"]),
        "DOTNET_EnableDiagnostics",
    );
    off.quit();
    // Detach when nothing is attached.
    let t = Serve::start(&scenarios(), &[]);
    let out = clrprof()
        .args(["detach", "--pid", &t.pid.to_string()])
        .output()
        .unwrap();
    fails_with(&out, "no clrprof profiler is attached");
    t.quit();
}

#[test]
fn target_exiting_during_the_recording_leaves_a_readable_trace() {
    let dir = scratch("attach-exit");
    let trace = dir.join("t.clrprof");
    let mut t = Serve::start(&scenarios(), &[]);
    let pid = t.pid;
    let tr = trace.clone();
    let rec = std::thread::spawn(move || attach_record(pid, &tr, &["--duration", "20"]));
    // Quit once the recording runs (its sampler thread is up), however long a loaded
    // machine takes to attach, and after a few samples.
    let sampling = (0..600).any(|_| {
        std::thread::sleep(Duration::from_millis(50));
        agent_threads(pid).iter().any(|n| n == "clrprof-sampler")
    });
    assert!(sampling, "the recording did not start within 30 s");
    std::thread::sleep(Duration::from_millis(300));
    let _ = writeln!(t.stdin, "quit");
    let _ = t.child.wait();
    let out = rec.join().unwrap();
    assert_ok(&out);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("exited during the recording"), "{said}");
    let r = report_json(&trace);
    assert!(r["samples"]["total"].as_u64().unwrap_or(0) > 0);
}

/// Runs the CLI as the unprivileged `nobody` against a process of root's, which needs
/// root: ignored by a plain `cargo test`, run by `.ci/run` when it is root (`cargo test -p
/// clrprof-cli --test cli -- --ignored attach::`).
#[test]
#[ignore = "needs root and setpriv (runs the CLI as `nobody`); .ci/run runs it as root"]
fn another_users_process_is_refused_with_a_permission_message() {
    assert_eq!(
        // SAFETY: getuid has no preconditions.
        unsafe { libc::getuid() },
        0,
        "run this test as root: it runs the CLI as `nobody` with setpriv"
    );
    assert!(
        Command::new("setpriv").arg("--version").output().is_ok(),
        "setpriv (util-linux) is needed"
    );
    let dir = scratch("attach-perm");
    let t = Serve::start(&scenarios(), &[]);
    let out = Command::new("setpriv")
        .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"])
        .arg(env!("CARGO_BIN_EXE_clrprof"))
        .env("CLRPROF_PROFILER_PATH", clrprof_testkit::profiler_library())
        .args([
            "record",
            "--pid",
            &t.pid.to_string(),
            "--duration",
            "1",
            "-o",
        ])
        .arg(dir.join("t.clrprof"))
        .env("TMPDIR", "/tmp")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("same user") || stderr.contains("permission"),
        "{stderr}"
    );
    t.quit();
}

#[test]
fn ps_lists_the_running_app_with_its_runtime_version() {
    let t = Serve::start(&scenarios(), &[]);
    let out = clrprof().arg("ps").output().unwrap();
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find(|l| l.split_whitespace().next() == Some(&t.pid.to_string()))
        .unwrap_or_else(|| panic!("pid {} not in:\n{stdout}", t.pid));
    assert!(
        line.contains(" 10.") && line.contains("Scenarios.dll"),
        "{line}"
    );
    t.quit();
}

/// `record --pid --waits`: the runtime opens the wait sessions after an attach too; the
/// lock phase of `Scenarios waits rounds=60` (several seconds) is under way when the
/// recording starts, and its contention is recorded with the waiter and the lock's type.
#[test]
fn attach_records_waits() {
    // The CLI (and the profiler library it names) first: on a fresh build that builds the
    // library, which can take longer than the app's lock phase on a loaded machine.
    let mut record = clrprof();
    let mut child = scenarios()
        .command(&["waits", "rounds=60"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let trace = scratch("attach-waits").join("t.clrprof");
    let out = record
        .args(["record", "--waits", "--duration", "1.5", "--pid"])
        .arg(child.id().to_string())
        .arg("-o")
        .arg(&trace)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(child.wait().unwrap().success());
    let r = report_json(&trace);
    assert_eq!(r["trace"]["attached"], true);
    let ledger = r["contention"]["locks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["type"] == "Scenarios.Ledger")
        .cloned()
        .unwrap_or_else(|| panic!("{:#}", r["contention"]));
    assert!(ledger["count"].as_u64().unwrap() >= 10, "{ledger:#}");
    assert_eq!(
        ledger["waiters"][0]["function"],
        "Scenarios.Waits.TakeLedger"
    );
}

/// Sessions of different kinds one after another in one process (one loaded copy of the
/// library): what one mode set up must not leak into the next. Events mode, then sample
/// mode, then `--alloc --waits --heap`, then sample mode again, which must have neither
/// allocation samples nor a heap snapshot nor samples from before its start. (Trace mode
/// with `--args` cannot come first: an attach refuses `--args`, and trace mode after
/// attach enables ReJIT, after which the runtime keeps the agent dormant for good.)
#[test]
fn sessions_of_different_modes_share_nothing() {
    let dir = scratch("attach-modes");
    let mut t = Serve::start(&scenarios(), &[]);
    let pid = t.pid;
    let run = |name: &str, extra: &[&str]| {
        let trace = dir.join(format!("{name}.clrprof"));
        let mut args = vec!["-q"];
        args.extend_from_slice(extra);
        let out = attach_record(pid, &trace, &args);
        assert_ok(&out);
        assert!(agent_gone(pid), "{name}: still active");
        assert_eq!(agent_copies(pid), 1, "{name}: one copy of the library");
        report_json(&trace)
    };
    let events = run(
        "events",
        &[
            "--mode",
            "events",
            "--events",
            "threads,gc,jit",
            "--duration",
            "0.5",
        ],
    );
    assert_eq!(events["samples"]["total"].as_u64().unwrap_or(0), 0);
    assert!(events["allocation_samples"].is_null());

    let sample = run("sample", &["--duration", "0.5"]);
    assert!(sample["samples"]["total"].as_u64().unwrap_or(0) > 0);
    assert!(
        sample["allocation_samples"].is_null(),
        "{}",
        sample["allocation_samples"]
    );
    assert!(sample["heap"].is_null(), "{}", sample["heap"]);

    let alloc = run(
        "alloc",
        &["--alloc", "--waits", "--heap", "0.3", "--duration", "1"],
    );
    assert!(
        alloc["allocation_samples"].is_object(),
        "--alloc recorded no allocation configuration: {alloc:#}"
    );
    assert!(!alloc["heap"].is_null(), "--heap 0.3 took no snapshot");

    let again = run("again", &["--duration", "0.5"]);
    assert!(again["samples"]["total"].as_u64().unwrap_or(0) > 0);
    assert!(
        again["allocation_samples"].is_null(),
        "the --alloc session's state leaked into the next: {}",
        again["allocation_samples"]
    );
    assert!(
        again["heap"].is_null(),
        "a heap snapshot leaked: {}",
        again["heap"]
    );
    let span = again["trace"]["duration_ns"].as_u64().unwrap_or(u64::MAX);
    assert!(span < 5_000_000_000, "the last trace spans {span} ns");
    t.ask("result", "RESULT");
    t.quit();
}

/// An attached session writes its start, its end and its problems on the target's
/// stderr (a running service's own log), not the dozen lines of figures a session
/// started with the app ends with; the trace still holds the sampler's.
/// `--agent-log` in a directory that does not exist is refused before the attach: the
/// agent would fall back to the app's stderr, where the attaching user would not see why.
#[test]
fn an_agent_log_in_a_missing_directory_is_refused_before_attaching() {
    let t = Serve::start(&scenarios(), &[]);
    let out = clrprof()
        .args(["record", "--pid", &t.pid.to_string(), "--duration", "1"])
        .args(["--agent-log", "/nonexistent-clrprof-dir/agent.log"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--agent-log /nonexistent-clrprof-dir/agent.log: /nonexistent-clrprof-dir is not a directory"),
        "{err}"
    );
    // Nothing reached the app: no session started, so no line of ours on its stderr.
    let mut lines = Vec::new();
    while let Ok(l) = t.err.recv_timeout(Duration::from_millis(300)) {
        lines.push(l);
    }
    t.quit();
    assert!(
        !lines.iter().any(|l| l.starts_with("clrprof[")),
        "{lines:#?}"
    );
}

#[test]
fn an_attached_session_keeps_its_figures_out_of_the_target_s_stderr() {
    let dir = scratch("attach-quiet-log");
    let trace = dir.join("t.clrprof");
    let t = Serve::start(&scenarios(), &[]);
    let out = attach_record(t.pid, &trace, &["--duration", "1"]);
    assert_ok(&out);
    let dump = clrprof()
        .args(["dump", "--pid", &t.pid.to_string()])
        .output()
        .unwrap();
    assert_ok(&dump);
    // Both sessions' lines, up to the second one's last.
    let pid = t.pid;
    let mut lines = Vec::new();
    let end = std::time::Instant::now() + Duration::from_secs(30);
    while lines
        .iter()
        .filter(|l: &&String| l.contains("detached;"))
        .count()
        < 2
    {
        assert!(
            std::time::Instant::now() < end,
            "two sessions did not say they detached: {lines:#?}"
        );
        if let Ok(l) = t.err.recv_timeout(Duration::from_millis(200)) {
            lines.push(l);
        }
    }
    // A third session asks for its log in a file (`--agent-log`, relative to clrprof's
    // directory, not the app's): every line goes there, figures included, none to stderr.
    let agent_log = dir.join("agent.log");
    let third = clrprof()
        .current_dir(&dir)
        .args(["record", "--pid", &t.pid.to_string(), "-o", "t3.clrprof"])
        .args(["--duration", "1", "--agent-log", "agent.log"])
        .output()
        .unwrap();
    assert_ok(&third);
    let end = std::time::Instant::now() + Duration::from_secs(30);
    let logged = loop {
        let text = std::fs::read_to_string(&agent_log).unwrap_or_default();
        if text.contains("detached;") {
            break text;
        }
        assert!(
            std::time::Instant::now() < end,
            "the third session did not log its detach in {}: {text}",
            agent_log.display()
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut late = Vec::new();
    while let Ok(l) = t.err.recv_timeout(Duration::from_millis(500)) {
        late.push(l);
    }
    t.quit();
    for figure in ["recording", "sampler timing:", "names: metadata read"] {
        assert!(logged.contains(figure), "{figure:?} not in {logged}");
    }
    assert!(
        !late
            .iter()
            .any(|l| l.starts_with(&format!("clrprof[{pid}]"))),
        "the third session wrote to the app's stderr: {late:#?}"
    );
    for figure in [
        "sampler (",
        "sampler timing:",
        "signal sampler skips:",
        "stack copies:",
        "ReadyToRun guard:",
        "source positions:",
        "dynamic code:",
        "names: metadata read",
    ] {
        assert!(
            !lines.iter().any(|l| l.contains(figure)),
            "{figure:?} on the target's stderr: {lines:#?}"
        );
    }
    let ours: Vec<&String> = lines
        .iter()
        .filter(|l| l.starts_with(&format!("clrprof[{pid}]")))
        .collect();
    // Each session: what it records and where, what it wrote, that it detached.
    assert_eq!(ours.len(), 6, "{ours:#?}");
    // The figures of the sampler are in the trace.
    let r = report_json(&trace);
    assert!(
        r["sampler"]["timing"]["due_ticks"].as_u64() > Some(0),
        "{:#}",
        r["sampler"]
    );
}
