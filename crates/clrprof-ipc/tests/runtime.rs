//! Against a real .NET 10 process.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use clrprof_ipc::{DiagnosticsClient, DisabledCause, IpcError, ProcessInfoKind, Uuid};
use common::{APP_NAME, start_app, start_sleep, unused_pid, wait_until};

const CLSID: Uuid = uuid::uuid!("cf0d821e-299b-5307-a3d8-b283c03916dd");

#[test]
fn process_info_describes_the_app() {
    let app = start_app(&[]);
    let client = DiagnosticsClient::connect(app.pid).expect("connect");
    let info = client.process_info().expect("process info");
    assert_eq!(info.pid, u64::from(app.pid));
    assert!(
        info.command_line.contains(&format!("{APP_NAME}.dll")),
        "{info:?}"
    );
    assert_eq!(info.os, "Linux");
    assert!(!info.arch.is_empty());
    let version = info.clr_product_version.as_deref().unwrap_or_default();
    assert!(version.starts_with("10.0."), "{info:?}");
    assert_eq!(info.entrypoint_assembly.as_deref(), Some(APP_NAME));
    // .NET 10 answers ProcessInfo3 (payload version 1, with a runtime identifier).
    assert_eq!(info.kind, ProcessInfoKind::V3);
    assert!(
        info.runtime_identifier
            .as_deref()
            .is_some_and(|rid| rid.starts_with("linux-")),
        "{info:?}"
    );
    assert!(!info.runtime_cookie.is_nil());
    let file = client.socket_path().file_name().unwrap().to_string_lossy();
    assert!(
        file.starts_with(&format!("dotnet-diagnostic-{}-", app.pid)),
        "{file}"
    );
}

#[test]
fn list_includes_the_app() {
    let app = start_app(&[]);
    let list = clrprof_ipc::list_dotnet_processes();
    let entry = list
        .iter()
        .find(|e| e.pid == app.pid)
        .unwrap_or_else(|| panic!("pid {} not in {list:#?}", app.pid));
    assert!(entry.alive);
    assert!(
        entry.command_line.contains(&format!("{APP_NAME}.dll")),
        "{entry:?}"
    );
    assert!(entry.socket_path.exists());
}

#[test]
fn stale_socket_of_a_killed_process_is_skipped() {
    let mut app = start_app(&[]);
    let pid = app.pid;
    let socket = DiagnosticsClient::connect(pid)
        .expect("connect")
        .socket_path()
        .to_path_buf();
    app.kill(); // SIGKILL: the runtime cannot remove its socket.
    assert!(socket.exists(), "a killed runtime leaves its socket behind");
    assert!(
        clrprof_ipc::list_dotnet_processes()
            .iter()
            .all(|e| e.pid != pid)
    );
    assert!(matches!(
        DiagnosticsClient::connect(pid),
        Err(IpcError::NoSuchProcess(p)) if p == pid
    ));
}

#[test]
fn no_such_process() {
    let pid = unused_pid();
    let err = DiagnosticsClient::connect(pid).unwrap_err();
    assert!(
        matches!(err, IpcError::NoSuchProcess(p) if p == pid),
        "{err:?}"
    );
    assert_eq!(err.to_string(), format!("no process with pid {pid}"));
}

#[test]
fn not_dotnet() {
    let sleep = start_sleep();
    let err = DiagnosticsClient::connect(sleep.pid).unwrap_err();
    assert!(
        matches!(err, IpcError::NotDotnet(p) if p == sleep.pid),
        "{err:?}"
    );
    assert!(err.to_string().contains("is not a .NET (CoreCLR) process"));
}

#[test]
fn diagnostics_disabled() {
    for var in ["DOTNET_EnableDiagnostics", "DOTNET_EnableDiagnostics_IPC"] {
        let app = start_app(&[(var, "0")]);
        let err = DiagnosticsClient::connect(app.pid).unwrap_err();
        match &err {
            IpcError::DiagnosticsDisabled {
                pid,
                cause: DisabledCause::Environment { name, value },
                ..
            } => {
                assert_eq!(*pid, app.pid);
                assert_eq!(name, var);
                assert_eq!(value, "0");
            }
            other => panic!("{var}: {other:?}"),
        }
        let msg = err.to_string();
        assert!(msg.contains(&format!("{var}=0")), "{msg}");
    }
}

#[test]
fn attach_missing_profiler_fails_and_target_survives() {
    let mut app = start_app(&[]);
    let client = DiagnosticsClient::connect(app.pid).expect("connect");
    let err = client
        .attach_profiler(
            Duration::from_secs(5),
            CLSID,
            Path::new("/nonexistent/clrprof/libnope.so"),
            b"client data",
        )
        .unwrap_err();
    match &err {
        IpcError::RuntimeError {
            pid,
            command,
            hresult,
            name,
        } => {
            assert_eq!(*pid, app.pid);
            assert_eq!(*command, clrprof_ipc::Command::AttachProfiler);
            assert!(*hresult < 0, "{err}");
            // Observed on .NET 10.0.12: HRESULT_FROM_WIN32(ERROR_MOD_NOT_FOUND).
            assert_eq!(*hresult as u32, 0x8007_007E, "{err}");
            assert_eq!(*name, Some("HRESULT_FROM_WIN32(ERROR_MOD_NOT_FOUND)"));
        }
        other => panic!("{other:?}"),
    }
    eprintln!("attach with a missing library: {err}");
    assert!(app.is_running());
    // The runtime still answers.
    client
        .process_info()
        .expect("process info after failed attach");
    assert!(app.is_running());
}

#[test]
fn attach_library_without_dllgetclassobject() {
    let Some(lib) = [
        "/lib/x86_64-linux-gnu/libz.so.1",
        "/usr/lib/x86_64-linux-gnu/libz.so.1",
    ]
    .into_iter()
    .map(Path::new)
    .find(|p| p.exists()) else {
        eprintln!("no libz to try; skipped");
        return;
    };
    let mut app = start_app(&[]);
    let client = DiagnosticsClient::connect(app.pid).expect("connect");
    let err = client
        .attach_profiler(Duration::from_secs(5), CLSID, lib, b"")
        .unwrap_err();
    eprintln!("attach with a non-profiler library: {err}");
    assert!(
        matches!(err, IpcError::RuntimeError { hresult, .. } if hresult as u32 == 0x8007_007F),
        "{err:?}"
    );
    assert!(app.is_running());
}

#[test]
fn resume_runtime_on_a_running_runtime_is_ok() {
    let app = start_app(&[]);
    DiagnosticsClient::connect(app.pid)
        .expect("connect")
        .resume_runtime()
        .expect("resume");
}

#[test]
fn startup_profiler_then_resume_a_suspended_runtime() {
    let mut app = common::spawn_app(&[("DOTNET_DefaultDiagnosticPortSuspend", "1")]);
    let pid = app.pid;
    // The runtime waits for ResumeRuntime before running Main, but its socket is up.
    let mut client = None;
    assert!(
        wait_until(Duration::from_secs(20), || {
            client = DiagnosticsClient::connect(pid).ok();
            client.is_some()
        }),
        "no diagnostics socket for suspended pid {pid}"
    );
    let client = client.unwrap();
    client
        .set_startup_profiler(CLSID, Path::new("/nonexistent/clrprof/libnope.so"))
        .expect("startup profiler");
    client.resume_runtime().expect("resume");
    // The profiler fails to load; the runtime logs that and carries on into Main.
    app.wait_for_line("READY", Duration::from_secs(20));
    assert!(app.is_running());
}

/// Run as root: re-runs this test binary as `nobody` to connect to a root-owned socket.
#[test]
fn permission_denied_for_another_users_socket() {
    if std::env::var_os("CLRPROF_IPC_TARGET_PID").is_some() {
        return; // this is the child run of the test below
    }
    let euid = clrprof_ipc::endpoint::current_euid();
    let setpriv = Path::new("/usr/bin/setpriv");
    if euid != Some(0) || !setpriv.exists() {
        eprintln!("needs root and setpriv; skipped");
        return;
    }
    let app = start_app(&[]);
    let exe = std::env::current_exe().unwrap();
    let out = Command::new(setpriv)
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--inh-caps=-all",
        ])
        .arg(&exe)
        .args([
            "permission_denied_child",
            "--exact",
            "--ignored",
            "--nocapture",
        ])
        .env("CLRPROF_IPC_TARGET_PID", app.pid.to_string())
        .output()
        .expect("run setpriv");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "child failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
}

#[test]
#[ignore = "run by permission_denied_for_another_users_socket as another user"]
fn permission_denied_child() {
    let pid: u32 = std::env::var("CLRPROF_IPC_TARGET_PID")
        .expect("CLRPROF_IPC_TARGET_PID")
        .parse()
        .unwrap();
    let err = DiagnosticsClient::connect(pid).unwrap_err();
    eprintln!("{err}");
    assert!(
        matches!(
            err,
            IpcError::PermissionDenied { pid: p, owner_uid: 0, our_uid: 65534 } if p == pid
        ),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .contains("run clrprof as the same user as the target or as root")
    );
}
