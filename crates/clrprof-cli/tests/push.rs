//! `record --push`: profiles POSTed to a stand-in Pyroscope server on loopback while a
//! real app runs under the profiler.

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::time::Duration;

use clrprof_export::pprof::proto;
use common::pyroscope::*;
use common::*;
use prost::Message;

fn record_pushing(
    dir: &std::path::Path,
    url: &str,
    flags: &[&str],
    env: &[(&str, &str)],
) -> std::process::Output {
    record_pushing_app(dir, url, flags, env, &["hot", "4"])
}

fn record_pushing_app(
    dir: &std::path::Path,
    url: &str,
    flags: &[&str],
    env: &[(&str, &str)],
    scenario: &[&str],
) -> std::process::Output {
    pushing_command(dir, url, flags, env, scenario)
        .output()
        .expect("run clrprof record --push")
}

/// `clrprof record --push URL … -- Scenarios SCENARIO`, ready to run.
fn pushing_command(
    dir: &std::path::Path,
    url: &str,
    flags: &[&str],
    env: &[(&str, &str)],
    scenario: &[&str],
) -> std::process::Command {
    let app = scenarios();
    let mut cmd = clrprof();
    cmd.arg("record");
    if !flags.contains(&"--no-trace") {
        cmd.arg("-o").arg(dir.join("t.clrprof"));
    }
    cmd.args(["--push", url, "--push-every", "1", "--rate", "199"])
        .args(flags)
        .arg("--")
        .arg(&app.dotnet)
        .arg(&app.dll)
        .args(scenario)
        .envs(env.iter().copied());
    app.env(&mut cmd);
    cmd
}

/// The processes whose parent is `pid` (from `/proc/*/stat`).
fn children_of(pid: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/stat")).is_ok_and(|stat| {
                // The fields after the command's closing parenthesis: state, ppid, ….
                stat.rsplit_once(')')
                    .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok())
                    == Some(pid)
            })
        })
        .collect()
}

#[test]
fn pushes_contiguous_pprof_profiles_with_the_hot_method() {
    let _serial = timing_lock();
    let dir = scratch("push-ok");
    let (port, seen) = serve(200);
    let out = record_pushing(
        &dir,
        &format!("http://127.0.0.1:{port}"),
        &["--app-name", "scenarios", "--labels", "env=test,team=perf"],
        &[("CLRPROF_PUSH_TOKEN", "s3cret")],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}\n{stderr}", out.status);
    assert!(
        dir.join("t.clrprof").exists(),
        "the trace is still written:\n{stderr}"
    );
    let reqs = seen.lock().unwrap().clone();
    assert!(reqs.len() >= 2, "{} requests:\n{stderr}", reqs.len());
    assert!(
        stderr.contains(&format!(
            "pushed {} profiles to http://127.0.0.1:{port}",
            reqs.len()
        )),
        "{stderr}"
    );
    let mut hot = false;
    let mut pid = None;
    for (i, r) in reqs.iter().enumerate() {
        assert_eq!((r.method.as_str(), r.path.as_str()), ("POST", "/ingest"));
        assert_eq!(r.q("format"), "pprof");
        assert_eq!(r.q("spyName"), "clrprof");
        assert_eq!(r.q("sampleRate"), "199");
        let name = r.q("name");
        assert!(
            name.starts_with("scenarios{") && name.ends_with('}'),
            "{name}"
        );
        let labels: Vec<(&str, &str)> = name["scenarios{".len()..name.len() - 1]
            .split(',')
            .map(|kv| kv.split_once('=').unwrap())
            .collect();
        let label = |k: &str| labels.iter().find(|(lk, _)| *lk == k).map(|(_, v)| *v);
        assert_eq!(label("env"), Some("test"), "{name}");
        assert_eq!(label("team"), Some("perf"), "{name}");
        assert!(label("host").is_some_and(|h| !h.is_empty()), "{name}");
        assert!(
            label("runtime_version").is_some_and(|v| v.chars().next().unwrap().is_ascii_digit()),
            "{name}"
        );
        let p = label("pid").unwrap();
        assert_eq!(*pid.get_or_insert(p.to_string()), p, "one process, one pid");
        let (from, until): (u64, u64) =
            (r.q("from").parse().unwrap(), r.q("until").parse().unwrap());
        assert!(from < until, "{from}..{until}");
        if i > 0 {
            assert_eq!(reqs[i - 1].q("until"), r.q("from"), "contiguous ranges");
        }
        assert!(
            r.headers
                .iter()
                .any(|(k, v)| k == "authorization" && v == "Bearer s3cret")
        );
        // gzip'd pprof.
        let mut raw = Vec::new();
        flate2::read::GzDecoder::new(&r.body[..])
            .read_to_end(&mut raw)
            .expect("gzip body");
        let p = proto::Profile::decode(&raw[..]).expect("pprof body");
        let s = |i: i64| p.string_table[i as usize].as_str();
        let types: Vec<(&str, &str)> = p
            .sample_type
            .iter()
            .map(|t| (s(t.r#type), s(t.unit)))
            .collect();
        // One profile family per pprof (Pyroscope files a pprof with a `wall` type
        // under `wall`, whatever else it holds).
        assert_eq!(types, [("samples", "count"), ("cpu", "nanoseconds")]);
        let period = p.period_type.as_ref().unwrap();
        assert_eq!((s(period.r#type), s(period.unit)), ("cpu", "nanoseconds"));
        assert_eq!(p.time_nanos as u64, from * 1_000_000_000);
        let cpu = types.iter().position(|t| t.0 == "cpu").unwrap();
        let hot_fn: Vec<u64> = p
            .function
            .iter()
            .filter(|f| s(f.name).starts_with("Scenarios.Hot.HotA"))
            .map(|f| f.id)
            .collect();
        hot |= p.sample.iter().any(|smp| {
            smp.value[cpu] > 0
                && smp.location_id.iter().any(|l| {
                    p.location.iter().any(|loc| {
                        loc.id == *l && loc.line.iter().any(|ln| hot_fn.contains(&ln.function_id))
                    })
                })
        });
    }
    assert!(hot, "no upload had CPU in Scenarios.Hot.HotA:\n{stderr}");
    // The trace says what was pushed.
    let text = clrprof()
        .arg("report")
        .arg(dir.join("t.clrprof"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    let n = reqs.len();
    assert!(
        text.contains(&format!(
            "push:     {n} of {n} profiles sent to http://127.0.0.1:{port}\n"
        )),
        "{text}"
    );
}

/// `--alloc`: each interval also sends a memory profile (its own pprof, the types Go's heap
/// profiles and Pyroscope's `memory` family name), in which the allocating methods are,
/// and whose live heap at the end holds what the app kept and not what it dropped.
#[test]
fn alloc_pushes_memory_profiles_with_the_allocating_methods() {
    let _serial = timing_lock();
    let dir = scratch("push-alloc");
    let (port, seen) = serve(200);
    let out = record_pushing_app(
        &dir,
        &format!("http://127.0.0.1:{port}"),
        &["--alloc", "--app-name", "scenarios"],
        &[],
        &["alloc-live", "mb=64"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}\n{stderr}", out.status);
    let kept: f64 = results(&out)["kept_bytes"].parse().unwrap();
    let reqs = seen.lock().unwrap().clone();
    assert!(
        stderr.contains(&format!("pushed {} profiles", reqs.len())),
        "{stderr}"
    );
    let memory_types: Vec<(String, String)> = [
        ("alloc_objects", "count"),
        ("alloc_space", "bytes"),
        ("inuse_objects", "count"),
        ("inuse_space", "bytes"),
    ]
    .iter()
    .map(|(t, u)| (t.to_string(), u.to_string()))
    .collect();
    let mut ranges = Vec::new();
    let (mut cpu, mut memory) = (0, Vec::new());
    for r in &reqs {
        // The same series name for both: Pyroscope takes the type from the pprof.
        assert!(r.q("name").starts_with("scenarios{"), "{}", r.q("name"));
        let range = (r.q("from").to_string(), r.q("until").to_string());
        if ranges.last() != Some(&range) {
            ranges.push(range);
        }
        let p = profile_of(r);
        let (types, sums) = by_function(&p);
        if types.iter().any(|(t, _)| t == "cpu") {
            cpu += 1;
            continue;
        }
        assert_eq!(types, memory_types);
        let s = |i: i64| p.string_table[i as usize].as_str();
        let period = p.period_type.as_ref().unwrap();
        assert_eq!((s(period.r#type), s(period.unit)), ("space", "bytes"));
        assert!(p.period > 0);
        memory.push(sums);
    }
    // A CPU and a memory profile per interval, the intervals contiguous.
    assert_eq!(cpu, memory.len(), "{reqs:?}");
    assert_eq!(ranges.len(), cpu, "{ranges:?}");
    for w in ranges.windows(2) {
        assert_eq!(w[0].1, w[1].0, "contiguous ranges: {ranges:?}");
    }
    let value = |sums: &Sums, f: &str, i: usize| -> i64 {
        sums.iter()
            .filter(|(n, _)| n.starts_with(f))
            .map(|(_, v)| v[i])
            .sum()
    };
    let allocated = |f: &str| -> i64 { memory.iter().map(|m| value(m, f, 1)).sum() };
    // Every allocating method is in the allocations; the dropped site allocated 4x the
    // kept one.
    let (keep, drop) = (
        allocated("Scenarios.AllocLive.Keep"),
        allocated("Scenarios.AllocLive.Drop"),
    );
    assert!(keep > 0 && drop > 2 * keep, "keep {keep} drop {drop}");
    // The last memory profile's live heap: the kept arrays, not the dropped ones.
    let last = memory.last().unwrap();
    let live_keep = value(last, "Scenarios.AllocLive.Keep", 3) as f64;
    assert!(
        (live_keep - kept).abs() / kept < 0.25,
        "live {live_keep} vs kept {kept}"
    );
    assert_eq!(value(last, "Scenarios.AllocLive.Drop", 3), 0);
}

#[test]
fn a_failing_server_costs_uploads_not_the_recording() {
    let _serial = timing_lock();
    let dir = scratch("push-500");
    let (port, seen) = serve(500);
    build_first();
    let started = std::time::Instant::now();
    let out = record_pushing(&dir, &format!("http://127.0.0.1:{port}"), &[], &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}\n{stderr}", out.status);
    assert!(dir.join("t.clrprof").exists(), "{stderr}");
    assert!(stderr.contains("an upload to"), "{stderr}");
    let n = seen.lock().unwrap().len();
    assert!(n >= 3, "each upload is retried: {n} requests");
    assert!(
        stderr.contains("pushed 0 of ")
            && stderr.contains("dropped: ")
            && stderr.contains("HTTP 500"),
        "{stderr}"
    );
    // The end waits for the last uploads, boundedly.
    assert!(started.elapsed().as_secs() < 60, "{:?}", started.elapsed());
    // The drops are in the trace too, for its reader.
    let profiles: u64 = stderr
        .split("pushed 0 of ")
        .nth(1)
        .and_then(|t| t.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{stderr}"));
    let trace = dir.join("t.clrprof");
    let r = report_json(&trace);
    let push = &r["push"];
    assert_eq!(push["profiles"], profiles, "{push}");
    assert_eq!(push["sent"], 0, "{push}");
    assert_eq!(
        push["failed"].as_u64().unwrap() + push["queue_full"].as_u64().unwrap(),
        profiles,
        "{push}"
    );
    assert_eq!(push["last_error"], "HTTP 500", "{push}");
    let text = clrprof().arg("report").arg(&trace).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains(&format!(
            "push:     0 of {profiles} profiles sent to http://127.0.0.1:{port}, {profiles} dropped ("
        )) && text.contains("failed after 3 tries, last: HTTP 500"),
        "{text}"
    );
}

#[test]
fn a_server_that_hangs_delays_the_end_boundedly() {
    let serial = timing_lock();
    let dir = scratch("push-hang");
    // Accepts connections and never answers.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for c in listener.incoming() {
            held.push(c);
        }
    });
    build_first();
    let started = std::time::Instant::now();
    let mut cli = pushing_command(
        &dir,
        &format!("http://127.0.0.1:{port}"),
        &[],
        &[],
        &["hot", "4"],
    )
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .expect("run clrprof record --push");
    // The app's 4 s of CPU are what the other timing tests must not share; the CLI's wait
    // for the hung uploads after it (up to 15 s) is idle, and the lock goes with the app.
    let mut seen = false;
    while started.elapsed() < Duration::from_secs(60) {
        let running = !children_of(cli.id()).is_empty();
        if (seen && !running) || cli.try_wait().ok().flatten().is_some() {
            break;
        }
        seen |= running;
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(serial);
    eprintln!("the app ended {:?} into the recording", started.elapsed());
    let out = cli
        .wait_with_output()
        .expect("wait for clrprof record --push");
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}\n{stderr}", out.status);
    assert!(dir.join("t.clrprof").exists(), "{stderr}");
    assert!(
        stderr.contains("pushed 0 of ") && stderr.contains("dropped: "),
        "{stderr}"
    );
    // The app runs 4 s; the last uploads get 15 s more at most.
    assert!(took.as_secs() < 60, "{took:?}\n{stderr}");
}

#[test]
fn an_attached_recording_pushes_too() {
    let _serial = timing_lock();
    let dir = scratch("push-attach");
    let (port, seen) = serve(200);
    let app = scenarios();
    let mut target = app
        .command(&["serve"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(target.stdout.take().unwrap()).lines();
    let ready = lines.next().unwrap().unwrap();
    let pid: u32 = ready
        .trim()
        .strip_prefix("READY ")
        .unwrap()
        .parse()
        .unwrap();
    let trace = dir.join("t.clrprof");
    let out = clrprof()
        .args(["record", "--pid", &pid.to_string(), "-o"])
        .arg(&trace)
        .args([
            "--duration",
            "3",
            "--push",
            &format!("http://127.0.0.1:{port}"),
        ])
        .args(["--push-every", "1"])
        .output()
        .unwrap();
    let _ = writeln!(target.stdin.as_mut().unwrap(), "quit");
    let _ = target.wait();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}\n{stderr}", out.status);
    assert!(trace.exists(), "{stderr}");
    let reqs = seen.lock().unwrap().clone();
    assert!(reqs.len() >= 2, "{} requests:\n{stderr}", reqs.len());
    assert!(
        stderr.contains(&format!("pushed {} profiles", reqs.len())),
        "{stderr}"
    );
    for (i, r) in reqs.iter().enumerate() {
        let name = r.q("name");
        // The default application name is the program's (`dotnet Scenarios.dll`).
        assert!(name.starts_with("Scenarios{"), "{name}");
        assert!(name.contains(&format!("pid={pid}")), "{name}");
        if i > 0 {
            assert_eq!(reqs[i - 1].q("until"), r.q("from"), "contiguous ranges");
        }
        let mut raw = Vec::new();
        flate2::read::GzDecoder::new(&r.body[..])
            .read_to_end(&mut raw)
            .expect("gzip body");
        proto::Profile::decode(&raw[..]).expect("pprof body");
    }
}

#[test]
fn no_trace_pushes_and_leaves_no_file() {
    let _serial = timing_lock();
    let dir = scratch("push-no-trace");
    let tmp = dir.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let (port, seen) = serve(200);
    let out = record_pushing(
        &dir,
        &format!("http://127.0.0.1:{port}"),
        &["--no-trace"],
        &[("TMPDIR", tmp.to_str().unwrap())],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}\n{stderr}", out.status);
    assert!(seen.lock().unwrap().len() >= 2, "{stderr}");
    assert!(!stderr.contains("trace written"), "{stderr}");
    let left: Vec<_> = std::fs::read_dir(&tmp)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    assert!(!dir.join("t.clrprof").exists());
}

#[test]
fn an_unreachable_server_is_refused_before_the_app_starts() {
    let dir = scratch("push-unreachable");
    // A port nobody listens on: bound, then closed.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    // The command would leave a mark if it ran.
    let mark = dir.join("ran");
    build_first();
    let started = std::time::Instant::now();
    let out = clrprof()
        .args([
            "record",
            "--push",
            &format!("http://127.0.0.1:{port}"),
            "--",
        ])
        .args(["sh", "-c", &format!("touch {}", mark.display())])
        .output()
        .unwrap();
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "cannot reach the Pyroscope server http://127.0.0.1:{port}"
        )) && stderr.contains("Nothing was started"),
        "{stderr}"
    );
    assert!(!mark.exists(), "the command must not start");
    assert!(
        took.as_secs() < 10,
        "refused at once, not after a while: {took:?}"
    );
}

#[test]
fn bad_push_options_are_refused_with_the_fix() {
    for (flags, says) in [
        (&["--push", "localhost:4040"][..], "has no scheme"),
        (&["--push", "http://h:70000"], "bad port `70000`"),
        (
            &["--push", "http://h:4040", "--push-every", "0"],
            "--push-every 1 or more",
        ),
        (
            &["--push", "http://h:4040", "--labels", "env"],
            "is not KEY=VALUE",
        ),
        (&["--push-every", "5"], "--push"),
        (
            &["--push", "http://h:4040", "--no-trace", "--pid", "1"],
            "--no-trace with --pid is not supported yet",
        ),
    ] {
        let out = clrprof()
            .arg("record")
            .args(flags)
            .args(if flags.contains(&"--pid") {
                &[][..]
            } else {
                &["--", "/bin/true"][..]
            })
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {stderr}");
        assert!(stderr.contains(says), "{flags:?}: {stderr}");
    }
}
