//! pprof's `profile.proto`, gzip-compressed, for `go tool pprof` and the continuous
//! profilers that read it.
//!
//! Every sample carries three values: `samples/count`, `wall/nanoseconds` and
//! `cpu/nanoseconds`, and with allocation samples also `alloc_objects/count`,
//! `alloc_space/bytes`, `inuse_objects/count` and `inuse_space/bytes` (the names of Go's
//! and Pyroscope's heap profiles); `default_sample_type` names the one `opts.weight` picks. Each
//! frame is one function and one location (ids = frame index + 1); frames with a module
//! point to one mapping per module. Identical stacks of a thread are summed into one
//! sample, labelled with the thread's name and id.

use std::collections::{BTreeMap, HashMap};
#[cfg(test)]
use std::io::Read as _;
use std::io::Write;

use flate2::Compression;
use flate2::write::GzEncoder;
use prost::Message;

use crate::model::{FrameId, Profile};
use crate::stacks::{validate, weighted};
use crate::{ExportError, Options};

/// The messages of google/pprof's `proto/profile.proto` (package `perftools.profiles`),
/// written by hand with the same field numbers. Fields clrprof never sets (`drop_frames`,
/// `keep_frames`, `Breakdown`, `LabelSet`) are left out; decoders skip them. What each
/// field means is documented in `profile.proto` itself.
#[allow(missing_docs)]
pub mod proto {
    /// The whole profile. `string_table[0]` is always `""`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Profile {
        #[prost(message, repeated, tag = "1")]
        pub sample_type: Vec<ValueType>,
        #[prost(message, repeated, tag = "2")]
        pub sample: Vec<Sample>,
        #[prost(message, repeated, tag = "3")]
        pub mapping: Vec<Mapping>,
        #[prost(message, repeated, tag = "4")]
        pub location: Vec<Location>,
        #[prost(message, repeated, tag = "5")]
        pub function: Vec<Function>,
        #[prost(string, repeated, tag = "6")]
        pub string_table: Vec<String>,
        #[prost(int64, tag = "9")]
        pub time_nanos: i64,
        #[prost(int64, tag = "10")]
        pub duration_nanos: i64,
        #[prost(message, optional, tag = "11")]
        pub period_type: Option<ValueType>,
        #[prost(int64, tag = "12")]
        pub period: i64,
        #[prost(int64, repeated, tag = "13")]
        pub comment: Vec<i64>,
        #[prost(int64, tag = "14")]
        pub default_sample_type: i64,
    }

    /// A value's type and unit, as string-table indices.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ValueType {
        #[prost(int64, tag = "1")]
        pub r#type: i64,
        #[prost(int64, tag = "2")]
        pub unit: i64,
    }

    /// One stack (leaf first) with one value per sample type.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Sample {
        #[prost(uint64, repeated, tag = "1")]
        pub location_id: Vec<u64>,
        #[prost(int64, repeated, tag = "2")]
        pub value: Vec<i64>,
        #[prost(message, repeated, tag = "3")]
        pub label: Vec<Label>,
    }

    /// A key with a string or a number.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Label {
        #[prost(int64, tag = "1")]
        pub key: i64,
        #[prost(int64, tag = "2")]
        pub str: i64,
        #[prost(int64, tag = "3")]
        pub num: i64,
        #[prost(int64, tag = "4")]
        pub num_unit: i64,
    }

    /// A binary (here: a module) the locations belong to.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Mapping {
        #[prost(uint64, tag = "1")]
        pub id: u64,
        #[prost(uint64, tag = "2")]
        pub memory_start: u64,
        #[prost(uint64, tag = "3")]
        pub memory_limit: u64,
        #[prost(uint64, tag = "4")]
        pub file_offset: u64,
        #[prost(int64, tag = "5")]
        pub filename: i64,
        #[prost(int64, tag = "6")]
        pub build_id: i64,
        #[prost(bool, tag = "7")]
        pub has_functions: bool,
        #[prost(bool, tag = "8")]
        pub has_filenames: bool,
        #[prost(bool, tag = "9")]
        pub has_line_numbers: bool,
        #[prost(bool, tag = "10")]
        pub has_inline_frames: bool,
    }

    /// A program location: here one per frame, with one line naming its function.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Location {
        #[prost(uint64, tag = "1")]
        pub id: u64,
        #[prost(uint64, tag = "2")]
        pub mapping_id: u64,
        #[prost(uint64, tag = "3")]
        pub address: u64,
        #[prost(message, repeated, tag = "4")]
        pub line: Vec<Line>,
        #[prost(bool, tag = "5")]
        pub is_folded: bool,
    }

    /// A function and a line in it.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Line {
        #[prost(uint64, tag = "1")]
        pub function_id: u64,
        #[prost(int64, tag = "2")]
        pub line: i64,
    }

    /// A function's names and source file.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Function {
        #[prost(uint64, tag = "1")]
        pub id: u64,
        #[prost(int64, tag = "2")]
        pub name: i64,
        #[prost(int64, tag = "3")]
        pub system_name: i64,
        #[prost(int64, tag = "4")]
        pub filename: i64,
        #[prost(int64, tag = "5")]
        pub start_line: i64,
    }
}

/// The string table under construction.
struct Strings {
    table: Vec<String>,
    index: HashMap<String, i64>,
}

impl Strings {
    fn new() -> Self {
        let mut s = Strings {
            table: Vec::new(),
            index: HashMap::new(),
        };
        s.get("");
        s
    }

    fn get(&mut self, s: &str) -> i64 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.table.len() as i64;
        self.table.push(s.to_string());
        self.index.insert(s.to_string(), i);
        i
    }
}

fn value_type(strings: &mut Strings, t: &str, u: &str) -> proto::ValueType {
    proto::ValueType {
        r#type: strings.get(t),
        unit: strings.get(u),
    }
}

fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// Builds the pprof message for `profile` (see the module docs).
pub fn build(profile: &Profile, opts: &Options) -> Result<proto::Profile, ExportError> {
    validate(profile)?;
    let mut strings = Strings::new();
    let mut sample_type = vec![
        value_type(&mut strings, "samples", "count"),
        value_type(&mut strings, "wall", "nanoseconds"),
        value_type(&mut strings, "cpu", "nanoseconds"),
    ];
    // Allocation samples (`record --alloc`): the types Go and Pyroscope name them by.
    let allocs = profile.threads.iter().any(|t| !t.allocations.is_empty());
    if allocs {
        sample_type.extend([
            value_type(&mut strings, "alloc_objects", "count"),
            value_type(&mut strings, "alloc_space", "bytes"),
            value_type(&mut strings, "inuse_objects", "count"),
            value_type(&mut strings, "inuse_space", "bytes"),
        ]);
    }
    // Waits (`record --waits`): nanoseconds waited, and of those for contended locks.
    let waits = profile.threads.iter().any(|t| !t.waits.is_empty());
    if waits {
        if !allocs {
            sample_type.extend([
                value_type(&mut strings, "alloc_objects", "count"),
                value_type(&mut strings, "alloc_space", "bytes"),
                value_type(&mut strings, "inuse_objects", "count"),
                value_type(&mut strings, "inuse_space", "bytes"),
            ]);
        }
        sample_type.extend([
            value_type(&mut strings, "wait", "nanoseconds"),
            value_type(&mut strings, "lock_wait", "nanoseconds"),
        ]);
    }
    let period_type = Some(value_type(&mut strings, "wall", "nanoseconds"));

    let mut mapping: Vec<proto::Mapping> = Vec::new();
    let mut mapping_ids: HashMap<crate::ModuleId, u64> = HashMap::new();
    let mut location = Vec::with_capacity(profile.frames.len());
    let mut function = Vec::with_capacity(profile.frames.len());
    for (i, f) in profile.frames.iter().enumerate() {
        let id = i as u64 + 1;
        let name = strings.get(&f.name);
        // From the PDB: the method's file and first line, and for a frame that stands
        // for one line (`convert --lines`) that line.
        let source = profile.source(FrameId(i as u32));
        function.push(proto::Function {
            id,
            name,
            system_name: name,
            filename: source.map_or(0, |s| strings.get(&s.file)),
            start_line: source.map_or(0, |s| i64::from(s.start_line)),
        });
        let mapping_id = match f.module.zip(profile.module_of(f)) {
            None => 0,
            Some((handle, m)) => *mapping_ids.entry(handle).or_insert_with(|| {
                let id = mapping.len() as u64 + 1;
                mapping.push(proto::Mapping {
                    id,
                    filename: strings.get(m.path.as_deref().unwrap_or(&m.name)),
                    has_functions: true,
                    ..Default::default()
                });
                id
            }),
        };
        location.push(proto::Location {
            id,
            mapping_id,
            address: 0,
            line: vec![proto::Line {
                function_id: id,
                line: source.and_then(|s| s.line).map_or(0, i64::from),
            }],
            is_folded: false,
        });
    }

    // Sum identical stacks per thread (or over all threads when merging).
    let mut sums: BTreeMap<(Option<usize>, Vec<FrameId>), [u64; 9]> = BTreeMap::new();
    for w in weighted(profile) {
        let thread = (!opts.merge_threads).then_some(w.thread);
        let v = sums.entry((thread, w.stack)).or_default();
        v[0] += w.count;
        v[1] += w.wall_ns;
        v[2] += w.cpu_ns;
        v[3] += w.alloc_objects;
        v[4] += w.alloc_bytes;
        v[5] += w.live_objects;
        v[6] += w.live_bytes;
        v[7] += w.wait_ns;
        v[8] += w.lock_ns;
    }
    let values = if waits {
        9
    } else if allocs {
        7
    } else {
        3
    };
    let name_key = strings.get("thread name");
    let id_key = strings.get("thread id");
    let sample = sums
        .into_iter()
        .map(|((thread, stack), v)| {
            let label = match thread {
                None => Vec::new(),
                Some(t) => {
                    let t = &profile.threads[t];
                    vec![
                        proto::Label {
                            key: name_key,
                            str: strings.get(&t.name),
                            ..Default::default()
                        },
                        proto::Label {
                            key: id_key,
                            num: to_i64(t.os_tid),
                            ..Default::default()
                        },
                    ]
                }
            };
            proto::Sample {
                location_id: stack.iter().rev().map(|f| u64::from(f.0) + 1).collect(),
                value: v[..values].iter().map(|&x| to_i64(x)).collect(),
                label,
            }
        })
        .collect();

    let end_ns = profile
        .threads
        .iter()
        .flat_map(|t| {
            let samples = t.samples.iter().map(|s| s.time_ns + s.wall_ns);
            samples.chain(t.calls.iter().map(|c| c.end_ns))
        })
        .max()
        .unwrap_or(0)
        .max(profile.duration_ns);
    let comment = if profile.name.is_empty() {
        Vec::new()
    } else {
        vec![strings.get(&profile.name)]
    };
    let default_sample_type = strings.get(opts.weight.as_str());
    Ok(proto::Profile {
        sample_type,
        sample,
        mapping,
        location,
        function,
        string_table: strings.table,
        time_nanos: to_i64(profile.start_unix_ns),
        duration_nanos: to_i64(end_ns),
        period_type,
        period: to_i64(profile.interval_ns),
        comment,
        default_sample_type,
    })
}

/// `profile` narrowed to the sample types named in `types` (in that order; one it lacks
/// is added, 0 in every sample), with the period type and period given; samples whose kept values are
/// all 0 are left out, and `default_sample_type` is the first kept type. Grafana Pyroscope
/// files a whole pprof under one profile family, picked from its sample types (`cpu` makes
/// it `process_cpu`, `alloc_*`/`inuse_*` `memory`, a `wall` type anywhere `wall`), so
/// `record --push` sends each family as a profile of its own.
pub fn only(
    mut profile: proto::Profile,
    types: &[&str],
    period: (&str, &str, i64),
) -> proto::Profile {
    let name = |p: &proto::Profile, i: i64| -> String {
        p.string_table
            .get(usize::try_from(i).unwrap_or(usize::MAX))
            .cloned()
            .unwrap_or_default()
    };
    let index = |p: &mut proto::Profile, s: &str| -> i64 {
        match p.string_table.iter().position(|x| x == s) {
            Some(i) => i as i64,
            None => {
                p.string_table.push(s.to_string());
                p.string_table.len() as i64 - 1
            }
        }
    };
    let mut columns: Vec<Option<usize>> = Vec::new();
    let mut sample_type = Vec::new();
    for t in types {
        let c = profile
            .sample_type
            .iter()
            .position(|st| name(&profile, st.r#type) == *t);
        let vt = match c {
            Some(c) => profile.sample_type[c].clone(),
            None => proto::ValueType {
                r#type: index(&mut profile, t),
                unit: index(&mut profile, unit_of(t)),
            },
        };
        columns.push(c);
        sample_type.push(vt);
    }
    let samples = std::mem::take(&mut profile.sample);
    profile.sample = samples
        .into_iter()
        .filter_map(|mut s| {
            let v: Vec<i64> = columns
                .iter()
                .map(|c| c.and_then(|c| s.value.get(c).copied()).unwrap_or(0))
                .collect();
            if v.iter().all(|&x| x == 0) {
                return None;
            }
            s.value = v;
            Some(s)
        })
        .collect();
    profile.default_sample_type = sample_type.first().map_or(0, |t| t.r#type);
    profile.sample_type = sample_type;
    let (t, u, value) = period;
    let period_type = proto::ValueType {
        r#type: index(&mut profile, t),
        unit: index(&mut profile, u),
    };
    profile.period_type = Some(period_type);
    profile.period = value;
    profile
}

/// `profile` (from [`only`]) with its sample types renamed, in order, to `names`
/// (`(type, unit)` each; types past the end of `names` keep theirs), and
/// `default_sample_type` the first: for a family whose values [`build`] writes under
/// other names (`record --push --waits`: the count and the time of waits, built as
/// `samples` and `wall`, are sent as `contentions/count` and `delay/nanoseconds`).
pub fn renamed(mut profile: proto::Profile, names: &[(&str, &str)]) -> proto::Profile {
    let mut index = |s: &str| -> i64 {
        match profile.string_table.iter().position(|x| x == s) {
            Some(i) => i as i64,
            None => {
                profile.string_table.push(s.to_string());
                profile.string_table.len() as i64 - 1
            }
        }
    };
    let renamed: Vec<proto::ValueType> = names
        .iter()
        .map(|(t, u)| proto::ValueType {
            r#type: index(t),
            unit: index(u),
        })
        .collect();
    for (st, vt) in profile.sample_type.iter_mut().zip(renamed) {
        *st = vt;
    }
    profile.default_sample_type = profile.sample_type.first().map_or(0, |t| t.r#type);
    profile
}

/// The unit of a sample type [`build`] writes.
fn unit_of(t: &str) -> &'static str {
    match t {
        "samples" | "alloc_objects" | "inuse_objects" => "count",
        "alloc_space" | "inuse_space" => "bytes",
        _ => "nanoseconds",
    }
}

/// `profile` encoded and gzip-compressed.
pub fn gzip(profile: &proto::Profile) -> Vec<u8> {
    let mut gz = GzEncoder::new(Vec::new(), Compression::default());
    // Writing to memory cannot fail.
    let _ = gz.write_all(&profile.encode_to_vec());
    gz.finish().unwrap_or_default()
}

/// Writes `profile` as a gzip-compressed pprof profile (see the module docs). Empty
/// stacks are left out; a traced thread counts calls, self time as wall time, and no CPU
/// time.
pub fn write(profile: &Profile, opts: &Options, out: impl Write) -> Result<(), ExportError> {
    let bytes = build(profile, opts)?.encode_to_vec();
    let mut gz = GzEncoder::new(out, Compression::default());
    gz.write_all(&bytes)?;
    gz.finish()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_keeps_the_named_types_and_the_samples_that_count_in_them() {
        let strings = [
            "",
            "samples",
            "count",
            "cpu",
            "nanoseconds",
            "alloc_space",
            "bytes",
        ];
        let vt = |t: i64, u: i64| proto::ValueType { r#type: t, unit: u };
        let sample = |v: [i64; 3]| proto::Sample {
            location_id: vec![1],
            value: v.to_vec(),
            label: Vec::new(),
        };
        let p = proto::Profile {
            sample_type: vec![vt(1, 2), vt(3, 4), vt(5, 6)],
            sample: vec![sample([1, 10, 0]), sample([0, 0, 4096]), sample([2, 0, 0])],
            string_table: strings.iter().map(|s| s.to_string()).collect(),
            period_type: Some(vt(3, 4)),
            ..Default::default()
        };
        let mem = only(
            p.clone(),
            &["alloc_space", "inuse_space"],
            ("space", "bytes", 512),
        );
        let s = |i: i64| mem.string_table[i as usize].as_str();
        assert_eq!(mem.sample_type.len(), 2);
        assert_eq!(s(mem.sample_type[0].r#type), "alloc_space");
        assert_eq!(s(mem.sample_type[1].unit), "bytes");
        assert_eq!(s(mem.default_sample_type), "alloc_space");
        assert_eq!(mem.sample.len(), 1, "only the sample that allocated");
        assert_eq!(mem.sample[0].value, vec![4096, 0]);
        let pt = mem.period_type.as_ref().unwrap();
        assert_eq!(
            (s(pt.r#type), s(pt.unit), mem.period),
            ("space", "bytes", 512)
        );
        // A type the profile lacks is there, 0 in every sample.
        let mem = only(
            p.clone(),
            &["alloc_objects", "alloc_space"],
            ("space", "bytes", 1),
        );
        let s = |i: i64| mem.string_table[i as usize].as_str();
        let types: Vec<_> = mem
            .sample_type
            .iter()
            .map(|t| (s(t.r#type), s(t.unit)))
            .collect();
        assert_eq!(
            types,
            [("alloc_objects", "count"), ("alloc_space", "bytes")]
        );
        assert_eq!(mem.sample[0].value, vec![0, 4096]);
        let cpu = only(p, &["samples", "cpu"], ("cpu", "nanoseconds", 10));
        assert_eq!(
            cpu.sample.len(),
            2,
            "the allocation-only sample is left out"
        );
        assert_eq!(cpu.sample[1].value, vec![2, 0]);
        let mut raw = Vec::new();
        flate2::read::GzDecoder::new(&gzip(&cpu)[..])
            .read_to_end(&mut raw)
            .unwrap();
        let back = proto::Profile::decode(&raw[..]).unwrap();
        assert_eq!(back, cpu);
    }

    #[test]
    fn renamed_gives_the_kept_columns_new_names_and_keeps_the_values() {
        let strings = ["", "samples", "count", "wall", "nanoseconds"];
        let p = proto::Profile {
            sample_type: vec![
                proto::ValueType { r#type: 1, unit: 2 },
                proto::ValueType { r#type: 3, unit: 4 },
            ],
            sample: vec![proto::Sample {
                location_id: vec![1],
                value: vec![3, 2_000],
                label: Vec::new(),
            }],
            string_table: strings.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        };
        let waits = only(p, &["samples", "wall"], ("contentions", "count", 1));
        let waits = renamed(waits, &[("contentions", "count"), ("delay", "nanoseconds")]);
        let s = |i: i64| waits.string_table[i as usize].as_str();
        let types: Vec<_> = waits
            .sample_type
            .iter()
            .map(|t| (s(t.r#type), s(t.unit)))
            .collect();
        assert_eq!(types, [("contentions", "count"), ("delay", "nanoseconds")]);
        assert_eq!(s(waits.default_sample_type), "contentions");
        assert_eq!(waits.sample[0].value, vec![3, 2_000]);
        let pt = waits.period_type.as_ref().unwrap();
        assert_eq!(
            (s(pt.r#type), s(pt.unit), waits.period),
            ("contentions", "count", 1)
        );
    }
}
