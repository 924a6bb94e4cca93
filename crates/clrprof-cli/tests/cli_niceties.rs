//! What people expect from a CLI: completions, a man page, progress on a terminal only,
//! colour on terminals only with NO_COLOR honoured, and a trace from a newer clrprof
//! answered with the fix.

use crate::common;

use std::process::Command;

use common::*;

#[test]
fn completions_and_the_man_page_generate() {
    for (shell, marker) in [
        ("bash", "_clrprof()"),
        ("zsh", "#compdef clrprof"),
        ("fish", "complete -c clrprof"),
    ] {
        let out = clrprof().args(["completions", shell]).output().unwrap();
        assert!(out.status.success());
        let s = String::from_utf8_lossy(&out.stdout);
        assert!(s.contains(marker), "{shell}: {s}");
        assert!(s.contains("report"), "{shell}");
    }
    let out = clrprof().arg("man").output().unwrap();
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && s.contains(".TH clrprof 1"), "{s}");
}

/// A small real trace (the sample fixture) reported through `script`, which gives the
/// command a terminal: the spinner is drawn there, never into a pipe.
#[test]
fn progress_on_a_terminal_and_none_in_a_pipe() {
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../clrprof-analysis/tests/fixtures/sample-hot.bin");
    let piped = clrprof().arg("report").arg(&fixture).output().unwrap();
    assert!(piped.status.success());
    assert!(
        piped.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&piped.stderr)
    );
    let line = format!(
        "{} report {} >/dev/null",
        env!("CARGO_BIN_EXE_clrprof"),
        fixture.display()
    );
    let tty = Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .output()
        .expect("script(1) from util-linux");
    let seen = String::from_utf8_lossy(&tty.stdout);
    assert!(
        seen.contains("decoding") || seen.contains("reading"),
        "{seen:?}"
    );
}

#[test]
fn colour_on_terminals_only_and_no_color_honoured() {
    let line = format!(
        "{} report /nonexistent.clrprof",
        env!("CARGO_BIN_EXE_clrprof")
    );
    let run = |no_color: bool| {
        let mut c = Command::new("script");
        c.args(["-qec", &line, "/dev/null"]).env_remove("NO_COLOR");
        if no_color {
            c.env("NO_COLOR", "1");
        }
        String::from_utf8_lossy(&c.output().unwrap().stdout).into_owned()
    };
    // Red (SGR 31) on `error:`; the spinner's own line clearing is not colour.
    assert!(run(false).contains("\u{1b}[31m"), "colour on a terminal");
    assert!(!run(true).contains("\u{1b}[31m"), "NO_COLOR");
    let piped = clrprof()
        .arg("report")
        .arg("/nonexistent.clrprof")
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&piped.stderr).contains('\u{1b}'));
}

#[test]
fn a_trace_from_a_newer_clrprof_names_the_fix() {
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../clrprof-analysis/tests/fixtures/sample-hot.bin");
    let mut bytes = std::fs::read(&fixture).unwrap();
    // The header's major version (u16 LE after the 8-byte magic): a future one, past the
    // current format's (clrprof_format::FORMAT_MAJOR).
    let future = clrprof_format::FORMAT_MAJOR + 1;
    bytes[8..10].copy_from_slice(&future.to_le_bytes());
    let dir = scratch("newer-trace");
    let path = dir.join("newer.clrprof");
    std::fs::write(&path, &bytes).unwrap();
    let out = clrprof().arg("report").arg(&path).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        e.contains(&format!("version {future}.")) && e.contains("is not supported"),
        "{e}"
    );
    assert!(e.contains("clrprof release that recorded it"), "{e}");
}

/// A target in another container (here: its own mount namespace with a private /tmp,
/// made with unshare(1)) is refused before anything is sent to it, with the fix, and
/// the profiler is never loaded into it.
#[test]
#[ignore = "needs root (unshare a mount namespace); .ci/run runs it as root"]
fn a_target_in_another_container_is_refused_with_the_fix() {
    let app = scenarios();
    let script = format!(
        "mount -t tmpfs none /tmp && exec {} {} sleeper 60",
        clrprof_testkit::dotnet().display(),
        app.dll.display()
    );
    let mut child = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c", &script])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("unshare(1)");
    // `exec` keeps the pid: the child is the .NET process once its runtime is up.
    let pid = child.id();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let dir = scratch("other-container");
    let out = clrprof()
        .args(["record", "--pid", &pid.to_string(), "--duration", "1", "-o"])
        .arg(dir.join("t.clrprof"))
        .output()
        .unwrap();
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
    let _ = child.kill();
    let _ = child.wait();
    let e = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{e}");
    assert!(e.contains("runs in another container"), "{e}");
    assert!(e.contains("nsenter -t"), "{e}");
    assert!(
        !maps.contains("clrprof_profiler"),
        "the profiler was loaded"
    );
}

/// `clrprof --version` names the commit checked out, also in a linked worktree (whose
/// `.git` is a file: the build script watches the git directory git names, so a new
/// commit rebuilds the version).
#[test]
fn version_names_the_commit_checked_out() {
    let head = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output();
    let Some(head) = head
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    else {
        // A source tree without git: `unknown`, nothing to compare.
        return;
    };
    let out = clrprof().arg("--version").output().unwrap();
    let v = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        v.trim(),
        format!("clrprof {} ({head})", env!("CARGO_PKG_VERSION"))
    );
}
