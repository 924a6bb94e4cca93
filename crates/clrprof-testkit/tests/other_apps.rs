//! The F# tail-call app and the bundled demo build and report what they should.

use clrprof_testkit::{app, parse_results};

fn results(app_name: &str, args: &[&str]) -> std::collections::BTreeMap<String, String> {
    let out = app(app_name).command(args).output().expect("run the app");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{app_name} {args:?} exited {}\nstdout:\n{stdout}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    parse_results(&stdout)
}

#[test]
fn tailcalls_use_the_tail_prefix_and_count_entries() {
    let r = results("TailCalls", &[]);
    assert_eq!(r["ping"], "501");
    assert_eq!(r["pong"], "500");
    assert_eq!(r["ping_pong_entries"], "1001");
    assert_eq!(r["hop"], "1001");
    assert_eq!(r["wide"], "1000");
    for method in ["ping", "pong", "hop", "wide"] {
        assert_eq!(r[&format!("tail_prefixes_{method}")], "1", "{r:?}");
    }
    // Unprofiled, the tail calls really replace their callers' frames.
    let depth: u32 = r["ping_bottom_depth"].parse().unwrap();
    assert!(depth < 10, "{r:?}");
}

#[test]
fn the_demo_is_deterministic() {
    let r = results("Demo", &["20000"]);
    assert_eq!(r["orders"], "20000");
    assert_eq!(r["rejected"], "4");
    assert_eq!(r["accepted"], "19996");
    assert_eq!(results("Demo", &["20000"]), r);
}
