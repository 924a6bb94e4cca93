//! Builds apps/Scenarios once and checks what its scenarios say about themselves when run
//! without a profiler.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Output, Stdio};

use clrprof_testkit::{BuiltApp, app, parse_results};

fn scenarios() -> BuiltApp {
    app("Scenarios")
}

fn run(args: &[&str]) -> (Output, BTreeMap<String, String>) {
    let out = scenarios().command(args).output().expect("run Scenarios");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "Scenarios {args:?} exited {}\nstdout:\n{stdout}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    (out, parse_results(&stdout))
}

fn results(args: &[&str]) -> BTreeMap<String, String> {
    run(args).1
}

fn num(r: &BTreeMap<String, String>, key: &str) -> i64 {
    r.get(key)
        .unwrap_or_else(|| panic!("no {key} in {r:?}"))
        .parse()
        .unwrap_or_else(|e| panic!("{key}={} is not a number: {e}", r[key]))
}

#[test]
fn the_build_lands_in_the_target_dir_and_is_reused() {
    let first = scenarios();
    assert!(first.dll.is_file(), "{first:?}");
    assert!(
        first.dir.join("Plugin.dll").is_file(),
        "Plugin.dll ships next to Scenarios"
    );
    assert!(first.dll.starts_with(clrprof_testkit::target_dir()));
    let artifacts = clrprof_testkit::target_dir().join("testapps/.artifacts/Scenarios");
    assert!(
        artifacts.join("obj").is_dir(),
        "intermediate files go under {artifacts:?}"
    );
    assert_eq!(first, scenarios());
}

#[test]
fn exceptions_throws_exactly_n() {
    let r = results(&["exceptions"]);
    assert_eq!(r["exceptions"], "7");
    assert_eq!(r["caught"], "7");
    assert_eq!(r["messages_ok"], "7");
    assert_eq!(r["exception_type"], "System.InvalidOperationException");
    assert_eq!(results(&["exceptions", "3"])["exceptions"], "3");
    assert_eq!(results(&["exceptions", "n=2"])["caught"], "2");
}

#[test]
fn fib_counts_its_calls() {
    let r = results(&["fib"]);
    assert_eq!(r["fib_calls"], "242785");
    assert_eq!(r["fib"], "75025");
    let r = results(&["fib", "10"]);
    assert_eq!((num(&r, "fib_calls"), num(&r, "fib")), (177, 55));
    // threads=N is named only: `fib 10` must not mean ten threads.
    let r = results(&["fib", "20", "threads=3"]);
    assert_eq!((num(&r, "fib"), num(&r, "threads")), (6765, 3));
    assert!(!r.contains_key("fib_calls"));
}

#[test]
fn threads_are_named() {
    let r = results(&["threads"]);
    assert_eq!(r["threads"], "5");
    assert_eq!(
        r["thread_names"],
        "clrprof-worker-1,clrprof-worker-2,clrprof-worker-3,clrprof-worker-4,clrprof-worker-5"
    );
    assert_eq!(
        r["worker_tids"]
            .split(',')
            .filter(|t| t.parse::<u32>().is_ok())
            .count(),
        5
    );
    assert_eq!(r["work_ok"], "1");
}

#[test]
fn gc_induces_exactly_n_collections() {
    let r = results(&["gc"]);
    assert_eq!(r["gc_induced"], "3");
    assert_eq!(r["gen2_collections"], "3");
    let r = results(&["gc", "5"]);
    assert_eq!(r["gen2_collections"], "5");
}

#[test]
fn abi_is_deterministic() {
    let (a, ra) = run(&["abi"]);
    let (b, _) = run(&["abi"]);
    assert_eq!(a.stdout, b.stdout);
    assert_eq!(ra["abi"].len(), 16, "{ra:?}");
    assert_eq!(ra["abi_int"], "42");
    assert_eq!(ra["abi_s24"], "20,30,100");
    assert_eq!(ra["abi_many_ints"], "385");
    assert_eq!(ra["abi_seven_prims"], "4001048889");
    assert_eq!(ra["abi_many_mixed"], "67.5");
}

#[test]
fn classes_alloc_and_calls_report_exact_facts() {
    let r = results(&["classes"]);
    assert_eq!(r["gamma"], "Scenarios.Known.Gamma<System.Int32>");
    assert_eq!(r["inner"], "Scenarios.Known.Outer+Inner");

    let r = results(&["alloc"]);
    assert_eq!((num(&r, "allocated"), num(&r, "alive")), (10_000, 10_000));
    assert_eq!(r["class"], "Scenarios.Known.Allocated");

    let r = results(&["calls"]);
    for (key, want) in [
        ("is_even", 51),
        ("is_odd", 50),
        ("echo_int", 3),
        ("echo_string", 5),
        ("echo_struct", 7),
        ("area_circle", 6),
        ("area_square", 9),
        ("greet_english", 2),
        ("greet_french", 3),
        ("lambda", 11),
        ("step_async_calls", 4),
        ("step_async_resumes", 4),
    ] {
        assert_eq!(num(&r, key), want, "{key} in {r:?}");
    }
}

#[test]
fn deep_exceptions_and_threads64_count_exactly() {
    let r = results(&["deep-exceptions"]);
    for (key, want) in [
        ("deep_throws", 20),
        ("finally_runs", 80),
        ("filter_false", 20),
        ("filter_true", 20),
        ("inner_catches", 0),
        ("catches", 20),
    ] {
        assert_eq!(num(&r, key), want, "{key} in {r:?}");
    }
    let r = results(&["threads64", "calls=500"]);
    assert_eq!(num(&r, "work_calls"), 64 * 500);
}

#[test]
fn timed_scenarios_measure_themselves() {
    let r = results(&["hot", "1"]);
    let share: f64 = r["hota_share"].parse().unwrap();
    assert!(
        (0.6..=0.9).contains(&share),
        "hota_share {share} is far from 0.75: {r:?}"
    );
    assert!(num(&r, "hota_calls") > 0 && num(&r, "hota_calls") == num(&r, "hotb_calls"));

    let r = results(&["sleeper", "1"]);
    assert!(num(&r, "sleepy_cpu_ms") < num(&r, "spinny_cpu_ms"), "{r:?}");

    let r = results(&["churn", "1"]);
    assert_eq!(r["churn_ok"], "1", "{r:?}");
    // Threads come and go for the second: how many depends on the machine's load (85 on
    // a starved host), so only that they churned is checked.
    assert!(num(&r, "threads_started") >= 10, "{r:?}");
    assert_eq!(r["threads_started"], r["threads_completed"], "{r:?}");
}

#[test]
fn wait_runs_until_stdin_closes() {
    let mut child = scenarios()
        .command(&["wait"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    let pid: u32 = line
        .trim()
        .strip_prefix("READY ")
        .expect("READY line")
        .parse()
        .unwrap();
    assert_eq!(pid, child.id());
    drop(child.stdin.take());
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    assert!(child.wait().unwrap().success());
    assert_eq!(parse_results(&rest)["wait_exit"], "eof");
}

#[test]
fn serve_loads_the_plugin_on_request() {
    let mut child = scenarios()
        .command(&["serve"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut next_line = || {
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        line.trim().to_owned()
    };
    assert!(next_line().starts_with("READY "));
    std::thread::sleep(std::time::Duration::from_millis(200));
    writeln!(stdin, "load").unwrap();
    assert_eq!(next_line(), "LOADED");
    writeln!(stdin, "result").unwrap();
    let r = parse_results(&next_line());
    assert!(num(&r, "work_items") > 0, "{r:?}");
    writeln!(stdin, "quit").unwrap();
    assert!(child.wait().unwrap().success());
}

#[test]
fn unknown_scenarios_are_usage_errors() {
    let out = scenarios().command(&["no-such-scenario"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown scenario"));
}
