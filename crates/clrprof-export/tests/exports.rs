//! Every exporter on the hand-built fixture (`tests/common`): snapshots of the text
//! formats (`cargo insta review`, or `INSTA_UPDATE=always cargo test` to re-bless),
//! structural checks of the others, determinism.

mod common;

use std::io::Read;

use clrprof_export::pprof::proto;
use clrprof_export::*;
use clrprof_testkit::snapshot_json;
use common::*;
use prost::Message;
use serde_json::Value;

fn run(profile: &Profile, format: Format, opts: Options) -> Vec<u8> {
    let mut out = Vec::new();
    export(profile, format, &opts, &mut out).unwrap_or_else(|e| panic!("{format:?}: {e}"));
    out
}

fn text(profile: &Profile, format: Format, opts: Options) -> String {
    String::from_utf8(run(profile, format, opts)).expect("UTF-8")
}

fn json(profile: &Profile, format: Format, opts: Options) -> Value {
    serde_json::from_slice(&run(profile, format, opts)).expect("valid JSON")
}

fn weight(weight: Weight) -> Options {
    Options {
        weight,
        ..Default::default()
    }
}

// ---------------------------------------------------------------------------------------
// folded

#[test]
fn folded_counts_samples() {
    insta::assert_snapshot!(text(&fixture(), Format::Folded, weight(Weight::Samples)));
}

#[test]
fn folded_counts_wall_time() {
    insta::assert_snapshot!(text(&fixture(), Format::Folded, weight(Weight::Wall)));
}

#[test]
fn folded_counts_cpu_time() {
    insta::assert_snapshot!(text(&fixture(), Format::Folded, weight(Weight::Cpu)));
}

#[test]
fn folded_merges_threads() {
    let opts = Options {
        merge_threads: true,
        ..Default::default()
    };
    insta::assert_snapshot!(text(&fixture(), Format::Folded, opts));
}

/// The traced thread's calls aggregated by path, as the analysis hands them over when no
/// timeline is asked for: every aggregated format gives the same output.
#[test]
fn call_paths_give_the_flamegraphs_of_the_calls_they_aggregate() {
    let mut paths = fixture();
    let mut path = |stack: &[FrameId], calls, self_ns| CallPath {
        stack: paths.intern_stack_frames(stack.iter().copied()).unwrap(),
        calls,
        self_ns,
    };
    // OUTER 0–100 (INNER 10–40, INNER 50–60 (LIST_ADD 52–55)); OUTER 200–300 (NATIVE 210–220).
    let call_paths = vec![
        path(&[OUTER], 2, (60 + 90) * US),
        path(&[OUTER, INNER], 2, (30 + 7) * US),
        path(&[OUTER, INNER, LIST_ADD], 1, 3 * US),
        path(&[OUTER, NATIVE], 1, 10 * US),
    ];
    let t = &mut paths.threads[2];
    t.call_paths = call_paths;
    t.calls.clear();
    for w in [Weight::Samples, Weight::Wall] {
        for merge_threads in [false, true] {
            let opts = Options {
                weight: w,
                merge_threads,
                ..Default::default()
            };
            for format in [Format::Folded, Format::Pprof] {
                assert_eq!(
                    run(&paths, format, opts),
                    run(&fixture(), format, opts),
                    "{format:?} {opts:?}"
                );
            }
        }
    }
}

#[test]
fn folded_lines_are_sorted_and_parse_as_inferno_input() {
    let out = text(&fixture(), Format::Folded, weight(Weight::Wall));
    let lines: Vec<&str> = out.lines().collect();
    let mut sorted = lines.clone();
    sorted.sort_unstable();
    assert_eq!(lines, sorted);
    for line in lines {
        let (stack, n) = line.rsplit_once(' ').expect("`stack N`");
        assert!(n.parse::<u64>().expect("a count") > 0, "{line}");
        assert!(
            !stack.contains('\n') && stack.split(';').all(|f| !f.is_empty()),
            "{line}"
        );
    }
    assert!(out.contains("Worker;Demo.Worker.Run;Demo.Weird:Name With breaks 1000000\n"));
}

/// A thread pool's workers share a name: by default their stacks are one tree, so the
/// hot path shows once; `per_thread` keeps each worker apart.
#[test]
fn folded_merges_threads_of_one_name_unless_per_thread() {
    let mut p = fixture();
    let mut twin = p.threads[1].clone();
    twin.os_tid = 201;
    p.threads.push(twin);
    let merged = text(&p, Format::Folded, weight(Weight::Samples));
    let per_thread = text(
        &p,
        Format::Folded,
        Options {
            per_thread: true,
            ..weight(Weight::Samples)
        },
    );
    let worker = |out: &str| -> Vec<String> {
        out.lines()
            .filter(|l| l.starts_with("Worker"))
            .map(String::from)
            .collect()
    };
    let (m, t) = (worker(&merged), worker(&per_thread));
    assert!(m.iter().all(|l| l.starts_with("Worker;")), "{merged}");
    assert_eq!(t.len(), 2 * m.len(), "{per_thread}");
    assert!(
        t.iter().any(|l| l.starts_with("Worker (101);")),
        "{per_thread}"
    );
    assert!(
        t.iter().any(|l| l.starts_with("Worker (201);")),
        "{per_thread}"
    );
    // Merged counts are the sum of the two workers'.
    let total = |lines: &[String]| -> u64 {
        lines
            .iter()
            .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
            .sum()
    };
    assert_eq!(total(&m), total(&t));
    assert!(m.iter().any(|l| l.ends_with(" 2")), "{merged}");
}

// ---------------------------------------------------------------------------------------
// svg

/// Parses the whole document (quick-xml checks that end tags match) and returns it.
fn well_formed_svg(bytes: &[u8]) -> String {
    let svg = String::from_utf8(bytes.to_vec()).expect("UTF-8");
    let mut reader = quick_xml::Reader::from_str(&svg);
    let mut depth = 0i32;
    let mut root = None;
    loop {
        match reader.read_event() {
            Ok(quick_xml::events::Event::Start(e)) => {
                if depth == 0 {
                    root = Some(e.name().as_ref().to_owned());
                }
                depth += 1;
            }
            Ok(quick_xml::events::Event::End(_)) => depth -= 1,
            Ok(quick_xml::events::Event::Eof) => break,
            Ok(_) => {}
            Err(e) => panic!("not well-formed at {}: {e}", reader.buffer_position()),
        }
    }
    assert_eq!(depth, 0, "unclosed elements");
    assert_eq!(root.as_deref(), Some("svg"));
    svg
}

#[test]
fn svg_is_well_formed_and_names_every_frame() {
    for reverse in [false, true] {
        let opts = Options {
            reverse,
            ..Default::default()
        };
        let svg = well_formed_svg(&run(&fixture(), Format::Svg, opts));
        for name in [
            "Main Thread",
            "Demo.Program.Main",
            "Demo.Worker.Compute",
            "System.Collections.Generic.List&lt;int&gt;.Add",
            "[native]",
            "[gc]",
            "Demo.Traced.Inner",
        ] {
            assert!(svg.contains(name), "reverse={reverse}: {name} missing");
        }
        assert!(svg.contains("(samples)"), "the title names the weight");
    }
}

#[test]
fn svg_counts_nanoseconds_for_time_weights() {
    let svg = well_formed_svg(&run(&fixture(), Format::Svg, weight(Weight::Cpu)));
    assert!(svg.contains("(CPU time)"));
    assert!(svg.contains(" ns, "), "counts are in ns");
}

#[test]
fn svg_of_nothing_is_an_error_that_says_why() {
    let mut out = Vec::new();
    let err = export(&traced_only(), Format::Svg, &weight(Weight::Cpu), &mut out).unwrap_err();
    assert!(matches!(
        err,
        ExportError::Empty {
            weight: Weight::Cpu
        }
    ));
    assert!(err.to_string().contains("--weight wall"), "{err}");
}

// ---------------------------------------------------------------------------------------
// speedscope

fn speedscope_validator() -> jsonschema::Validator {
    let schema: Value = serde_json::from_str(include_str!("speedscope.schema.json")).unwrap();
    jsonschema::validator_for(&schema).expect("a valid schema")
}

/// The schema, then what it cannot say: lengths, indices, balance and order of events.
fn check_speedscope(file: &Value) {
    let validator = speedscope_validator();
    let errors: Vec<String> = validator
        .iter_errors(file)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    let frames = file["shared"]["frames"].as_array().unwrap().len() as u64;
    for p in file["profiles"].as_array().unwrap() {
        assert!(p["endValue"].as_u64() >= p["startValue"].as_u64());
        if p["type"] == "sampled" {
            let samples = p["samples"].as_array().unwrap();
            assert_eq!(samples.len(), p["weights"].as_array().unwrap().len());
            for f in samples.iter().flat_map(|s| s.as_array().unwrap()) {
                assert!(f.as_u64().unwrap() < frames);
            }
        } else {
            let mut open = Vec::new();
            let mut last = 0;
            for e in p["events"].as_array().unwrap() {
                let (at, frame) = (e["at"].as_u64().unwrap(), e["frame"].as_u64().unwrap());
                assert!(at >= last && frame < frames);
                last = at;
                if e["type"] == "O" {
                    open.push(frame);
                } else {
                    assert_eq!(open.pop(), Some(frame), "unbalanced close at {at}");
                }
            }
            assert!(open.is_empty());
            assert!(p["endValue"].as_u64().unwrap() >= last);
        }
    }
}

#[test]
fn speedscope_snapshot() {
    let file = json(&fixture(), Format::Speedscope, weight(Weight::Wall));
    check_speedscope(&file);
    insta::assert_snapshot!(snapshot_json(&file));
}

#[test]
fn speedscope_is_valid_for_every_option() {
    let mut profiles = vec![fixture(), traced_only(), Profile::default()];
    // A thread with both samples and calls.
    let mut both = fixture();
    let calls = both.threads.pop().unwrap().calls;
    both.threads[0].calls = calls;
    profiles.push(both);
    for profile in &profiles {
        for w in [Weight::Samples, Weight::Wall, Weight::Cpu] {
            for merge_threads in [false, true] {
                let opts = Options {
                    weight: w,
                    merge_threads,
                    ..Default::default()
                };
                check_speedscope(&json(profile, Format::Speedscope, opts));
            }
        }
    }
}

#[test]
fn speedscope_units_follow_the_weight() {
    let f = json(&fixture(), Format::Speedscope, weight(Weight::Samples));
    assert_eq!(f["profiles"][0]["unit"], "none");
    assert_eq!(
        f["profiles"][0]["weights"],
        serde_json::json!([1, 1, 1, 1, 1, 1])
    );
    assert_eq!(
        f["profiles"][0]["samples"][2],
        serde_json::json!([MAIN.0, RUN.0, LIST_ADD.0])
    );
    assert_eq!(f["profiles"][2]["type"], "evented");
    assert_eq!(f["profiles"][2]["unit"], "nanoseconds");
    let merged = json(
        &fixture(),
        Format::Speedscope,
        Options {
            merge_threads: true,
            ..weight(Weight::Cpu)
        },
    );
    assert_eq!(merged["profiles"][0]["name"], "all threads");
    assert_eq!(
        merged["profiles"][0]["samples"].as_array().unwrap().len(),
        8
    );
    assert_eq!(merged["profiles"][0]["unit"], "nanoseconds");
}

#[test]
fn speedscope_opens_on_the_busiest_profile_not_the_one_with_most_samples() {
    // The main thread keeps its samples but spends no CPU in them (it waits); the worker
    // has fewer samples and all the CPU.
    let mut p = fixture();
    for s in &mut p.threads[0].samples {
        s.cpu_ns = 0;
    }
    for s in &mut p.threads[1].samples {
        s.cpu_ns = 5 * MS;
    }
    assert!(p.threads[0].samples.len() > p.threads[1].samples.len());
    let f = json(&p, Format::Speedscope, weight(Weight::Cpu));
    let active = f["activeProfileIndex"].as_u64().unwrap() as usize;
    assert_eq!(f["profiles"][active]["name"], p.threads[1].label(), "{f:#}");
}

// ---------------------------------------------------------------------------------------
// firefox

#[test]
fn firefox_has_the_threads_samples_and_markers() {
    let f = json(&fixture(), Format::Firefox, Options::default());
    assert_eq!(f["meta"]["product"], "dotnet Demo.dll \"a&b\" <in.txt>");
    assert_eq!(f["meta"]["interval"], 1.0);
    let categories: Vec<&str> = f["meta"]["categories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(categories, ["Other", "Managed", "Native", "Runtime"]);
    let threads = f["threads"].as_array().unwrap();
    let mut names: Vec<(&str, &str)> = threads
        .iter()
        .map(|t| (t["name"].as_str().unwrap(), t["tid"].as_str().unwrap()))
        .collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            (".NET TP Worker", "102"),
            ("Main Thread", "100"),
            ("Worker", "101")
        ]
    );
    let by_name = |n: &str| threads.iter().find(|t| t["name"] == n).unwrap();
    assert_eq!(by_name("Main Thread")["samples"]["length"], 6);
    assert_eq!(by_name("Worker")["samples"]["length"], 2);
    let traced = by_name(".NET TP Worker");
    assert_eq!(traced["markers"]["length"], 6, "one marker per call");
    assert!(
        traced["samples"]["length"].as_u64().unwrap() > 0,
        "samples rebuilt from the calls"
    );
    assert!(
        f["meta"]["markerSchema"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["name"] == "ClrprofCall")
    );
}

#[test]
fn firefox_rebuilds_samples_from_calls_in_microseconds() {
    let f = json(&traced_only(), Format::Firefox, Options::default());
    assert_eq!(f["meta"]["interval"], 0.001, "1 µs for a call trace");
    let s = &f["threads"][0]["samples"];
    let stacks = s["stack"].as_array().unwrap();
    let weights = s["weight"].as_array().unwrap();
    // One sample per distinct boundary time; weights in µs up to the next boundary.
    let running: i64 = stacks
        .iter()
        .zip(weights)
        .filter(|(st, _)| !st.is_null())
        .map(|(_, w)| w.as_i64().unwrap())
        .sum();
    assert_eq!(running, 200, "two 100 µs calls of Outer");
    assert_eq!(
        weights.iter().map(|w| w.as_i64().unwrap()).sum::<i64>(),
        300,
        "with the idle gap"
    );
}

#[test]
fn firefox_start_time_is_the_profile_start() {
    let f = json(&fixture(), Format::Firefox, Options::default());
    let ms = f["meta"]["startTime"].as_f64().unwrap();
    assert!((ms - 1_700_000_000_123.456_8).abs() < 0.001, "{ms}");
}

// ---------------------------------------------------------------------------------------
// chrome

#[test]
fn chrome_snapshot() {
    insta::assert_snapshot!(snapshot_json(&json(
        &fixture(),
        Format::Chrome,
        Options::default()
    )));
}

#[test]
fn chrome_calls_are_exact_and_samples_merge() {
    let f = json(&fixture(), Format::Chrome, Options::default());
    let events = f["traceEvents"].as_array().unwrap();
    let thread_names: Vec<&str> = events
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
        .map(|e| e["args"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(thread_names, ["Main Thread", "Worker", ".NET TP Worker"]);
    let x = |tid: u64, name: &str| -> Vec<(f64, f64)> {
        events
            .iter()
            .filter(|e| e["ph"] == "X" && e["tid"] == tid && e["name"] == name)
            .map(|e| (e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap()))
            .collect()
    };
    // Calls: exact, in microseconds.
    assert_eq!(x(102, "Demo.Traced.Inner"), [(10.0, 30.0), (50.0, 10.0)]);
    assert_eq!(
        x(102, "System.Collections.Generic.List<int>.Add"),
        [(52.0, 3.0)]
    );
    // Samples: Main spans 0..4 ms, then restarts after the gap; Compute is split by the
    // List.Add and native samples.
    assert_eq!(
        x(100, "Demo.Program.Main"),
        [(0.0, 4000.0), (6000.0, 1000.0)]
    );
    assert_eq!(
        x(100, "Demo.Worker.Compute"),
        [(0.0, 2000.0), (6000.0, 1000.0)]
    );
    assert_eq!(x(100, "[native]"), [(3000.0, 1000.0)]);
}

// ---------------------------------------------------------------------------------------
// pprof

fn decode_pprof(bytes: &[u8]) -> proto::Profile {
    let mut raw = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .read_to_end(&mut raw)
        .expect("gzip");
    proto::Profile::decode(raw.as_slice()).expect("profile.proto")
}

/// Each sample as (thread label, stack names root first, values).
fn pprof_samples(p: &proto::Profile) -> Vec<(String, Vec<String>, Vec<i64>)> {
    let s = |i: i64| p.string_table[i as usize].clone();
    let function_of = |loc: u64| {
        let l = p.location.iter().find(|l| l.id == loc).expect("location");
        let f = p
            .function
            .iter()
            .find(|f| f.id == l.line[0].function_id)
            .expect("function");
        s(f.name)
    };
    let mut out: Vec<_> = p
        .sample
        .iter()
        .map(|x| {
            let thread = x
                .label
                .iter()
                .find(|l| s(l.key) == "thread name")
                .map_or(String::new(), |l| s(l.str));
            let stack = x
                .location_id
                .iter()
                .rev()
                .map(|&l| function_of(l))
                .collect();
            (thread, stack, x.value.clone())
        })
        .collect();
    out.sort();
    out
}

#[test]
fn pprof_round_trips() {
    let p = decode_pprof(&run(&fixture(), Format::Pprof, weight(Weight::Cpu)));
    assert_eq!(p.string_table[0], "");
    let types: Vec<(String, String)> = p
        .sample_type
        .iter()
        .map(|t| {
            (
                p.string_table[t.r#type as usize].clone(),
                p.string_table[t.unit as usize].clone(),
            )
        })
        .collect();
    assert_eq!(
        types,
        [
            ("samples".into(), "count".into()),
            ("wall".into(), "nanoseconds".into()),
            ("cpu".into(), "nanoseconds".into())
        ]
    );
    assert_eq!(p.string_table[p.default_sample_type as usize], "cpu");
    assert_eq!(p.time_nanos, 1_700_000_000_123_456_789);
    assert_eq!(p.period, 1_000_000);
    let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let samples = pprof_samples(&p);
    let main = |stack: &[&str]| {
        samples
            .iter()
            .find(|(t, s, _)| t == "Main Thread" && *s == names(stack))
            .map(|x| x.2.clone())
    };
    assert_eq!(
        main(&[
            "Demo.Program.Main",
            "Demo.Worker.Run",
            "Demo.Worker.Compute"
        ]),
        Some(vec![3, 3 * MS as i64, 2_900_000])
    );
    assert_eq!(
        main(&["Demo.Program.Main", "[native]"]),
        Some(vec![1, MS as i64, 200_000])
    );
    // Traced calls: one count per call, self time as wall time, no CPU time.
    let outer = samples
        .iter()
        .find(|(t, s, _)| t == ".NET TP Worker" && *s == names(&["Demo.Traced.Outer"]));
    assert_eq!(
        outer.map(|x| x.2.clone()),
        Some(vec![2, (60 + 90) * US as i64, 0])
    );
    // Empty stacks are left out: 5 + 2 non-empty samples, 6 calls.
    let count: i64 = samples.iter().map(|x| x.2[0]).sum();
    assert_eq!(count, 5 + 2 + 6);
    // Every frame with a module points to a mapping of that module, named by its path
    // when the profile has one.
    let profile = fixture();
    for (l, f) in p.location.iter().zip(&profile.frames) {
        let m = p
            .mapping
            .iter()
            .find(|m| m.id == l.mapping_id)
            .map(|m| p.string_table[m.filename as usize].clone());
        let want = profile
            .module_of(f)
            .map(|m| m.path.clone().unwrap_or(m.name.clone()));
        assert_eq!(m, want);
    }
    assert_eq!(p.mapping.len(), 3);
}

#[test]
fn pprof_merged_threads_have_no_thread_labels() {
    let opts = Options {
        merge_threads: true,
        ..Default::default()
    };
    let p = decode_pprof(&run(&fixture(), Format::Pprof, opts));
    assert!(p.sample.iter().all(|s| s.label.is_empty()));
    let samples = pprof_samples(&p);
    let run_gc = samples
        .iter()
        .find(|(_, s, _)| *s == ["Demo.Worker.Run", "[gc]"])
        .unwrap();
    assert_eq!(run_gc.2, [1, MS as i64, 0]);
}

// ---------------------------------------------------------------------------------------
// every format

#[test]
fn same_input_gives_the_same_bytes() {
    let opts = [
        Options::default(),
        Options {
            weight: Weight::Wall,
            merge_threads: true,
            per_thread: false,
            reverse: true,
        },
        Options {
            per_thread: true,
            ..Default::default()
        },
        Options {
            weight: Weight::Cpu,
            ..Default::default()
        },
    ];
    for format in Format::ALL {
        for o in opts {
            let a = run(&fixture(), format, o);
            let b = run(&fixture().clone(), format, o);
            assert!(!a.is_empty(), "{format:?}");
            assert!(a == b, "{format:?} with {o:?} differs between runs");
        }
    }
}

#[test]
fn every_format_exports_a_trace_only_profile() {
    for format in Format::ALL {
        let out = run(&traced_only(), format, Options::default());
        assert!(!out.is_empty(), "{format:?}");
    }
}

#[test]
fn a_bad_frame_index_is_an_error_not_a_panic() {
    let mut p = fixture();
    let parent = p.threads[1].samples[0].stack;
    p.threads[1].samples[0].stack = Some(p.intern_stack(parent, FrameId(99)));
    for format in Format::ALL {
        let mut out = Vec::new();
        let err = export(&p, format, &Options::default(), &mut out).unwrap_err();
        assert!(
            matches!(
                err,
                ExportError::BadFrame {
                    index: 99,
                    frames: 9,
                    ..
                }
            ),
            "{format:?}: {err}"
        );
    }
}

#[test]
fn a_bad_stack_handle_is_an_error_not_a_panic() {
    let mut p = fixture();
    let stacks = p.stacks.len();
    p.threads[1].samples[0].stack = Some(StackId(stacks as u32));
    for format in Format::ALL {
        let mut out = Vec::new();
        let err = export(&p, format, &Options::default(), &mut out).unwrap_err();
        assert!(
            matches!(err, ExportError::BadStack { index, stacks: n, .. } if index as usize == n && n == stacks),
            "{format:?}: {err}"
        );
    }
}

#[test]
fn extensions() {
    let ext: Vec<&str> = Format::ALL.iter().map(|f| f.extension()).collect();
    assert_eq!(
        ext,
        [
            ".folded",
            ".svg",
            ".speedscope.json",
            ".firefox.json",
            ".chrome.json",
            ".pb.gz"
        ]
    );
}

// ---------------------------------------------------------------------------------------
// allocation samples (`record --alloc`)

/// The fixture with two allocation samples on the main thread: 3000 bytes in 3 objects
/// from Main;Run;List<int>.Add (1000 still alive), 500 bytes in 1 object from Main;Compute.
fn with_allocations() -> Profile {
    let mut p = fixture();
    let add = p.intern_stack_frames([MAIN, RUN, LIST_ADD]);
    let compute = p.intern_stack_frames([MAIN, COMPUTE]);
    p.threads[0].allocations = vec![
        AllocationSample {
            time_ns: 0,
            stack: add,
            bytes: 3000,
            objects: 3,
            live_bytes: 1000,
            live_objects: 1,
            followed: true,
            freed_ns: None,
        },
        AllocationSample {
            time_ns: MS,
            stack: compute,
            bytes: 500,
            objects: 1,
            live_bytes: 0,
            live_objects: 0,
            followed: true,
            freed_ns: Some(2 * MS),
        },
    ];
    p
}

/// Allocation samples are the process's native allocations, on its first thread, with a
/// deallocation where a GC collected a followed sample; the memory track climbs by each
/// followed sample and drops at that GC.
#[test]
fn firefox_has_native_allocations_and_a_live_heap_track() {
    let f = json(&with_allocations(), Format::Firefox, Options::default());
    let threads = f["threads"].as_array().unwrap();
    let holders: Vec<&Value> = threads
        .iter()
        .filter(|t| t.get("nativeAllocations").is_some())
        .collect();
    assert_eq!(
        holders.len(),
        1,
        "one thread holds the process's allocations"
    );
    let na = &holders[0]["nativeAllocations"];
    assert_eq!(na["length"], 3, "{na:#}");
    assert_eq!(na["weight"], serde_json::json!([3000, 500, -500]), "{na:#}");
    let addresses = na["memoryAddress"].as_array().unwrap();
    assert_eq!(
        addresses[1], addresses[2],
        "the deallocation is of the same sample"
    );
    assert_eq!(na["stack"][2], Value::Null);
    assert!(na["stack"][0].is_u64() && na["stack"][1].is_u64());
    let counters = f["counters"].as_array().unwrap();
    assert_eq!(counters.len(), 1);
    assert_eq!(counters[0]["name"], "Live sampled heap (estimated)");
    let samples = &counters[0]["samples"];
    assert_eq!(
        samples["count"],
        serde_json::json!([3000.0, 500.0, -500.0]),
        "{samples:#}"
    );
}

/// The live heap is a counter of the process in Chrome's format: up by each followed
/// sample, down at the GC that collected it.
#[test]
fn chrome_has_a_live_heap_counter() {
    let c = json(&with_allocations(), Format::Chrome, Options::default());
    let counter: Vec<(f64, u64)> = c["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "C")
        .map(|e| {
            (
                e["ts"].as_f64().unwrap(),
                e["args"]["bytes"].as_u64().unwrap(),
            )
        })
        .collect();
    let ms = MS as f64 / 1000.0;
    assert_eq!(counter, [(0.0, 3000), (ms, 3500), (2.0 * ms, 3000)]);
}

#[test]
fn folded_counts_allocation_weights() {
    let p = with_allocations();
    let lines = |w| {
        let opts = Options {
            weight: w,
            merge_threads: true,
            ..Default::default()
        };
        text(&p, Format::Folded, opts)
    };
    let bytes = lines(Weight::AllocBytes);
    assert!(
        bytes.contains(";System.Collections.Generic.List<int>.Add 3000\n"),
        "{bytes}"
    );
    assert_eq!(bytes.lines().count(), 2, "{bytes}");
    assert!(lines(Weight::AllocObjects).contains("List<int>.Add 3\n"));
    let live = lines(Weight::LiveBytes);
    assert_eq!(live.lines().count(), 1, "{live}");
    assert!(live.ends_with(" 1000\n"), "{live}");
    // The CPU weights are those of the fixture without allocations.
    assert_eq!(
        lines(Weight::Cpu),
        text(
            &fixture(),
            Format::Folded,
            Options {
                weight: Weight::Cpu,
                merge_threads: true,
                ..Default::default()
            }
        )
    );
}

#[test]
fn pprof_names_the_allocation_types_as_go_does() {
    let p = decode_pprof(&run(
        &with_allocations(),
        Format::Pprof,
        weight(Weight::AllocBytes),
    ));
    let s = |i: i64| p.string_table[i as usize].clone();
    let types: Vec<String> = p
        .sample_type
        .iter()
        .map(|t| format!("{}/{}", s(t.r#type), s(t.unit)))
        .collect();
    assert_eq!(
        types,
        [
            "samples/count",
            "wall/nanoseconds",
            "cpu/nanoseconds",
            "alloc_objects/count",
            "alloc_space/bytes",
            "inuse_objects/count",
            "inuse_space/bytes"
        ]
    );
    assert_eq!(s(p.default_sample_type), "alloc_space");
    let add = pprof_samples(&p)
        .into_iter()
        .find(|(thread, stack, _)| {
            thread == "Main Thread" && stack.last().is_some_and(|f| f.ends_with("List<int>.Add"))
        })
        .unwrap();
    assert_eq!(add.2[3..], [3, 3000, 1, 1000]);
    // Without allocations: the three time types only (older profiles stay as they were).
    let plain = decode_pprof(&run(&fixture(), Format::Pprof, weight(Weight::Cpu)));
    assert_eq!(plain.sample_type.len(), 3);
}

#[test]
fn speedscope_weighs_allocations_in_bytes() {
    let v = json(
        &with_allocations(),
        Format::Speedscope,
        weight(Weight::AllocBytes),
    );
    check_speedscope(&v);
    let main = v["profiles"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"].as_str().unwrap().starts_with("Main Thread"))
        .unwrap();
    assert_eq!(main["unit"], "bytes");
    assert_eq!(main["weights"], serde_json::json!([3000, 500]));
}

/// Frames with a known source (from the PDB): pprof's `Function` gets the file and first
/// line, a line frame's `Line` its line; speedscope's frame its file and line, still
/// valid against the schema.
#[test]
fn source_lines_reach_pprof_and_speedscope() {
    let mut p = fixture();
    p.sources = vec![None; p.frames.len()];
    p.sources[0] = Some(Source {
        file: "/src/App/Program.cs".into(),
        start_line: 40,
        line: Some(42),
    });
    let decoded = decode_pprof(&run(&p, Format::Pprof, weight(Weight::Cpu)));
    let s = |i: i64| decoded.string_table[i as usize].clone();
    let f = &decoded.function[0];
    assert_eq!(
        (s(f.filename), f.start_line),
        ("/src/App/Program.cs".into(), 40)
    );
    assert_eq!(decoded.location[0].line[0].line, 42);
    // Frames without a source keep 0s.
    assert_eq!(decoded.function[1].start_line, 0);
    assert_eq!(decoded.location[1].line[0].line, 0);

    let v = json(&p, Format::Speedscope, weight(Weight::Cpu));
    check_speedscope(&v);
    let frame = &v["shared"]["frames"][0];
    assert_eq!(frame["file"], "/src/App/Program.cs");
    assert_eq!(frame["line"], 42);
    assert!(v["shared"]["frames"][1].get("line").is_none());

    // Firefox: the function's file (an index into its thread's strings) and first line,
    // the frame's line; other functions keep nulls.
    let name = p.frames[0].name.clone();
    let v = json(&p, Format::Firefox, weight(Weight::Cpu));
    let mut found = 0;
    for t in v["threads"].as_array().unwrap() {
        let strings = t["stringArray"].as_array().unwrap();
        let funcs = &t["funcTable"];
        let n = funcs["length"].as_u64().unwrap() as usize;
        assert_eq!(funcs["fileName"].as_array().unwrap().len(), n);
        for i in 0..n {
            let fname = strings[funcs["name"][i].as_u64().unwrap() as usize]
                .as_str()
                .unwrap();
            if fname == name {
                found += 1;
                let file = funcs["fileName"][i].as_u64().unwrap() as usize;
                assert_eq!(strings[file], "/src/App/Program.cs");
                assert_eq!(funcs["lineNumber"][i], 40);
                let frames = &t["frameTable"];
                let at = frames["func"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .position(|f| f.as_u64() == Some(i as u64))
                    .unwrap();
                assert_eq!(frames["line"][at], 42);
            } else {
                assert!(funcs["fileName"][i].is_null(), "{fname}");
            }
        }
    }
    assert!(found > 0, "{name} in no thread's funcTable");

    // Chrome: the slices of that frame name its file and line in their args.
    let v = json(&p, Format::Chrome, weight(Weight::Cpu));
    let slices: Vec<&serde_json::Value> = v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X" && e["name"] == name.as_str())
        .collect();
    assert!(!slices.is_empty(), "no slice of {name}");
    for e in slices {
        assert_eq!(e["args"]["file"], "/src/App/Program.cs", "{e:#}");
        assert_eq!(e["args"]["line"], 42, "{e:#}");
    }
}

/// A call's recorded values (`record --args`) travel with the call: Chrome puts them in
/// its slice's `args`, Firefox in its marker's data, each its own call's (two nested
/// calls of one function here).
#[test]
fn call_values_are_each_calls_own() {
    let mut p = traced_only();
    let values = |n: i64| {
        let v = serde_json::json!({"args": [{"name": "n", "type": "int", "value": n}], "return": {"type": "int", "value": n * 10}});
        v.as_object().unwrap().clone()
    };
    let t = &mut p.threads[0];
    // The two calls of Inner (10–40 µs and 50–60 µs) and the first Outer.
    t.call_values = vec![values(1), values(2), values(3)];
    t.calls[0].values = Some(0);
    t.calls[3].values = Some(1);
    t.calls[1].values = Some(2);
    let chrome = json(&p, Format::Chrome, Options::default());
    let got: Vec<(f64, &str, Option<i64>)> = chrome["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X")
        .map(|e| {
            (
                e["ts"].as_f64().unwrap(),
                e["name"].as_str().unwrap(),
                e["args"]["args"][0]["value"].as_i64(),
            )
        })
        .collect();
    assert!(
        got.contains(&(10.0, "Demo.Traced.Inner", Some(1))),
        "{got:?}"
    );
    assert!(
        got.contains(&(50.0, "Demo.Traced.Inner", Some(2))),
        "{got:?}"
    );
    assert!(
        got.contains(&(0.0, "Demo.Traced.Outer", Some(3))),
        "{got:?}"
    );
    assert!(got.contains(&(200.0, "Demo.Traced.Outer", None)), "{got:?}");

    let f = json(&p, Format::Firefox, Options::default());
    let m = &f["threads"][0]["markers"];
    let mut got: Vec<(f64, Option<i64>)> = (0..m["length"].as_u64().unwrap() as usize)
        .map(|i| {
            let v = m["data"][i]["values"]
                .as_str()
                .map(|s| serde_json::from_str::<Value>(s).unwrap());
            (
                m["startTime"][i].as_f64().unwrap(),
                v.and_then(|v| v["args"][0]["value"].as_i64()),
            )
        })
        .collect();
    got.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap());
    assert_eq!(
        got,
        [
            (0.0, Some(3)),
            (0.01, Some(1)),
            (0.05, Some(2)),
            (0.052, None),
            (0.2, None),
            (0.21, None)
        ]
    );
    assert!(
        f["meta"]["markerSchema"][0]["fields"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["key"] == "values")
    );
}
