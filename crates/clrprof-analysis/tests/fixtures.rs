//! Real traces, recorded once from the test apps (tests/fixtures/README.md says what each
//! shows and how to re-record it), through the report and every exporter: the text
//! report, `report --json` and each export format are `insta` snapshots, so a change to
//! analysis or export shows as a diff (`cargo insta review`, or `INSTA_UPDATE=always cargo
//! test -p clrprof-analysis --test fixtures` to re-bless). No .NET SDK needed.
//!
//! The fixtures hold only what was recorded (a pid, a start time, the module paths of the
//! recording machine); nothing here reads the clock or the file system beyond them, so
//! the snapshots are the same on every machine.

use std::io::Read;
use std::path::PathBuf;

use clrprof_analysis::profile::{CallsWanted, build_with as build_profile};
use clrprof_analysis::{Options, Trace, build_with, text};
use clrprof_export::pprof::proto;
use clrprof_export::{Format, Options as ExportOptions, Profile, Weight, export};
use clrprof_testkit::snapshot_json;
use prost::Message;

fn bytes(name: &str) -> Vec<u8> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let path = if name.starts_with("golden-") {
        dir.join("../clrprof-format/tests/fixtures").join(name)
    } else {
        dir.join("tests/fixtures").join(name)
    };
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// What `clrprof report` prints (its defaults: 15 rows, depth 12 in text and 40 in JSON).
fn report_text(trace: &Trace<'_>) -> String {
    text::render(
        &build_with(
            trace,
            Options {
                depth: 12,
                ..Default::default()
            },
        ),
        15,
    )
}

fn report_json(trace: &Trace<'_>) -> String {
    let v = serde_json::to_value(build_with(
        trace,
        Options {
            depth: 40,
            ..Default::default()
        },
    ))
    .unwrap();
    snapshot_json(&v)
}

/// The exporters' model, as `clrprof convert` builds it for `format`.
fn profile(trace: &Trace<'_>, format: Format) -> Profile {
    build_profile(
        trace,
        CallsWanted {
            timeline: format.is_timeline(),
            max_calls: 1_000_000,
        },
    )
    .profile
}

fn exported(trace: &Trace<'_>, format: Format, weight: Weight) -> Vec<u8> {
    let opts = ExportOptions {
        weight,
        ..Default::default()
    };
    let mut out = Vec::new();
    export(&profile(trace, format), format, &opts, &mut out)
        .unwrap_or_else(|e| panic!("{format:?}: {e}"));
    out
}

fn exported_text(trace: &Trace<'_>, format: Format) -> String {
    String::from_utf8(exported(trace, format, Weight::Samples)).expect("UTF-8")
}

fn exported_json(trace: &Trace<'_>, format: Format) -> String {
    snapshot_json(&serde_json::from_slice(&exported(trace, format, Weight::Samples)).expect("JSON"))
}

/// An SVG flamegraph as the frames it draws: each `<title>` (name and count), in order.
fn svg_titles(trace: &Trace<'_>) -> String {
    let svg = exported_text(trace, Format::Svg);
    assert!(svg.starts_with("<?xml"), "an SVG document");
    let mut out = String::new();
    for part in svg.split("<title>").skip(1) {
        let title = part.split("</title>").next().unwrap_or("");
        out.push_str(title);
        out.push('\n');
    }
    out
}

/// A pprof file decoded and printed with its strings resolved: header, mappings,
/// functions, locations, then each sample as values and its stack (leaf first).
fn pprof_text(trace: &Trace<'_>) -> String {
    let gz = exported(trace, Format::Pprof, Weight::Samples);
    let mut raw = Vec::new();
    flate2::read::GzDecoder::new(&gz[..])
        .read_to_end(&mut raw)
        .expect("gzip");
    let p = proto::Profile::decode(&raw[..]).expect("a pprof Profile");
    let s = |i: i64| p.string_table[i as usize].as_str();
    let vt = |v: &proto::ValueType| format!("{}/{}", s(v.r#type), s(v.unit));
    let mut o = String::new();
    let types: Vec<String> = p.sample_type.iter().map(vt).collect();
    o += &format!("sample types: {}\n", types.join(", "));
    o += &format!(
        "default: {}; period: {} {}; time: {}; duration: {}\n",
        s(p.default_sample_type),
        p.period,
        p.period_type.as_ref().map(vt).unwrap_or_default(),
        p.time_nanos,
        p.duration_nanos
    );
    for c in &p.comment {
        o += &format!("comment: {}\n", s(*c));
    }
    for m in &p.mapping {
        o += &format!(
            "mapping {}: {} [{:#x}, {:#x}) functions={}\n",
            m.id,
            s(m.filename),
            m.memory_start,
            m.memory_limit,
            m.has_functions
        );
    }
    for f in &p.function {
        o += &format!(
            "function {}: {} (system {}) file {:?}\n",
            f.id,
            s(f.name),
            s(f.system_name),
            s(f.filename)
        );
    }
    for l in &p.location {
        let lines: Vec<String> = l.line.iter().map(|x| x.function_id.to_string()).collect();
        o += &format!(
            "location {}: mapping {} functions [{}]\n",
            l.id,
            l.mapping_id,
            lines.join(", ")
        );
    }
    for smp in &p.sample {
        let labels: Vec<String> = smp
            .label
            .iter()
            .map(|l| {
                if l.str != 0 {
                    format!("{}={}", s(l.key), s(l.str))
                } else {
                    format!("{}={}", s(l.key), l.num)
                }
            })
            .collect();
        let stack: Vec<String> = smp.location_id.iter().map(u64::to_string).collect();
        o += &format!(
            "sample {:?} [{}] at [{}]\n",
            smp.value,
            labels.join(", "),
            stack.join(" ")
        );
    }
    o
}

/// One test per fixture: `$name` is the file stem, `$exports` whether it has samples or
/// calls to export.
macro_rules! fixture_tests {
    ($($test:ident: $file:literal, exports = $exports:literal;)*) => {$(
        #[test]
        fn $test() {
            let data = bytes($file);
            let trace = Trace::load(&data).expect("a readable trace");
            assert!(trace.warnings.is_empty(), "{:?}", trace.warnings);
            insta::with_settings!({ snapshot_suffix => stringify!($test), prepend_module_to_snapshot => false }, {
                insta::assert_snapshot!("report", report_text(&trace));
                insta::assert_snapshot!("report_json", report_json(&trace));
                if $exports {
                    insta::assert_snapshot!("folded", exported_text(&trace, Format::Folded));
                    insta::assert_snapshot!("svg", svg_titles(&trace));
                    insta::assert_snapshot!("speedscope", exported_json(&trace, Format::Speedscope));
                    insta::assert_snapshot!("firefox", exported_json(&trace, Format::Firefox));
                    insta::assert_snapshot!("chrome", exported_json(&trace, Format::Chrome));
                    insta::assert_snapshot!("pprof", pprof_text(&trace));
                }
            });
        }
    )*};
}

fixture_tests! {
    events_exceptions: "events-exceptions.bin", exports = false;
    events_threads: "events-threads.bin", exports = false;
    events_gc: "events-gc.bin", exports = false;
    events_alloc: "events-alloc.bin", exports = false;
    events_alloc_sampled: "events-alloc-sampled.bin", exports = false;
    sample_hot: "sample-hot.bin", exports = true;
    trace_calls: "trace-calls.bin", exports = true;
    attach_sample: "attach-sample.bin", exports = true;
    trace_args: "trace-args.bin", exports = true;
    trace_counts: "trace-counts.bin", exports = false;
    heap_snapshot: "heap-snapshot.bin", exports = false;
    golden_v1_0: "golden-v1.0.bin", exports = false;
    golden_v1_1_lz4: "golden-v1.1-lz4.bin", exports = false;
    golden_v1_3: "golden-v1.3.bin", exports = true;
}

/// `report --function PATTERN`: the butterfly (callers and callees) of the matching
/// functions, of exact calls (trace mode) and of samples.
#[test]
fn report_function() {
    for (name, file, pattern) in [
        ("trace_calls", "trace-calls.bin", "Scenarios.Calls.IsEven"),
        ("sample_hot", "sample-hot.bin", "Scenarios.Hot.*"),
    ] {
        let data = bytes(file);
        let trace = Trace::load(&data).unwrap();
        let report = build_with(
            &trace,
            Options {
                depth: 12,
                function: Some(pattern.to_string()),
                ..Default::default()
            },
        );
        assert!(report.butterfly.is_some(), "{name}");
        insta::with_settings!({ snapshot_suffix => name, prepend_module_to_snapshot => false }, {
            insta::assert_snapshot!("report_function", text::render_butterfly(&report, 15));
        });
    }
}

/// `clrprof heap FILE` (and `report`'s heap section) of a recorded snapshot: the text and
/// the JSON, and `--paths-to` / `--statics`.
#[test]
fn heap_snapshot_report() {
    use clrprof_analysis::heap::{self, HeapOptions, snapshot};
    let data = bytes("heap-snapshot.bin");
    let list = snapshot::list(&data).unwrap();
    assert_eq!(list.len(), 1);
    let s = snapshot::load_with(&data, list[0].0, true).unwrap();
    let r = heap::build(
        &s,
        &HeapOptions {
            top: 15,
            paths_to: Some("System.String".into()),
            statics: Some("Scenarios.*".into()),
        },
    );
    insta::with_settings!({ prepend_module_to_snapshot => false }, {
        insta::assert_snapshot!("heap_text", clrprof_analysis::text::render_heap(&r));
        insta::assert_snapshot!("heap_json", snapshot_json(&serde_json::to_value(&r).unwrap()));
    });
}

/// `record --alloc`: the allocation flamegraphs (folded, merged threads) of each weight.
#[test]
fn allocation_weights_of_a_recorded_trace() {
    let data = bytes("events-alloc-sampled.bin");
    let trace = Trace::load(&data).unwrap();
    for (name, weight) in [
        ("alloc_bytes", Weight::AllocBytes),
        ("alloc_objects", Weight::AllocObjects),
        ("live_bytes", Weight::LiveBytes),
    ] {
        let opts = ExportOptions {
            weight,
            merge_threads: true,
            ..Default::default()
        };
        let mut out = Vec::new();
        export(
            &profile(&trace, Format::Folded),
            Format::Folded,
            &opts,
            &mut out,
        )
        .unwrap();
        insta::with_settings!({ snapshot_suffix => name, prepend_module_to_snapshot => false }, {
            insta::assert_snapshot!("folded_alloc", String::from_utf8(out).unwrap());
        });
    }
}

/// Exports are pure functions of the trace: the same bytes twice.
#[test]
fn exports_are_deterministic() {
    let data = bytes("sample-hot.bin");
    let trace = Trace::load(&data).unwrap();
    for f in [
        Format::Folded,
        Format::Svg,
        Format::Speedscope,
        Format::Firefox,
        Format::Chrome,
        Format::Pprof,
    ] {
        assert_eq!(
            exported(&trace, f, Weight::Cpu),
            exported(&trace, f, Weight::Cpu),
            "{f:?}"
        );
    }
}

/// Format 1.2 fixtures carry class names and native modules as typed records (1.1 ones
/// as a `Meta` and `FunctionInfo`s, still read: see `attach-sample.bin`), and the
/// exporters' model gets a module, with its path, for every frame that has one.
#[test]
fn typed_class_names_and_native_modules() {
    use clrprof_format::Event;
    let data = bytes("events-alloc.bin");
    let trace = Trace::load(&data).unwrap();
    assert_eq!(trace.header.minor, 2);
    let class_names: Vec<&str> = trace
        .events
        .iter()
        .filter_map(|e| match &e.event {
            Event::ClassName { name, .. } => Some(name.as_ref()),
            _ => None,
        })
        .collect();
    assert!(
        class_names.contains(&"Scenarios.Known.Allocated"),
        "{class_names:?}"
    );
    assert!(
        !trace
            .events
            .iter()
            .any(|e| matches!(&e.event, Event::Meta { key, .. } if key == "class_name"))
    );

    let data = bytes("sample-hot.bin");
    let trace = Trace::load(&data).unwrap();
    let native: Vec<&str> = trace
        .events
        .iter()
        .filter_map(|e| match &e.event {
            Event::NativeModule { path, .. } => Some(path.as_ref()),
            _ => None,
        })
        .collect();
    assert!(
        native
            .iter()
            .any(|p| p.starts_with('/') && p.ends_with("/libcoreclr.so")),
        "{native:?}"
    );
    let p = profile(&trace, Format::Pprof);
    let module = |name: &str| {
        let f = p
            .frames
            .iter()
            .find(|f| f.name == name)
            .unwrap_or_else(|| panic!("{name}"));
        (f.kind, p.module_of(f).cloned())
    };
    let (kind, m) = module("[libcoreclr.so]");
    assert_eq!(kind, clrprof_export::FrameKind::Runtime);
    assert!(m.unwrap().path.unwrap().ends_with("/libcoreclr.so"));
    let (kind, m) = module("Scenarios.Hot.HotA");
    assert_eq!(kind, clrprof_export::FrameKind::Managed);
    let m = m.unwrap();
    assert_eq!(m.name, "Scenarios.dll");
    assert!(m.path.unwrap().ends_with("/Scenarios/Scenarios.dll"));
}
