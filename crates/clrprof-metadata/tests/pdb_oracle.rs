//! The portable PDB reader against System.Reflection.Metadata (`apps/PdbOracle`), on real
//! PDBs the .NET SDK wrote: a side-by-side one (Scenarios) and an embedded one (PdbOracle
//! itself); then the errors a user meets (no PDB, a PDB of another build, a Windows PDB)
//! and damaged PDBs, which must give errors and never panic.

use std::path::{Path, PathBuf};

use clrprof_metadata::pdb::find::{self, PdbSource};
use clrprof_metadata::pdb::{PdbError, PortablePdb};
use clrprof_testkit::{BuiltApp, app, app_embedded_pdb};

/// What the oracle prints for `dll` (its own embedded PDB when `dll` is `None`).
fn oracle(dll: Option<&Path>) -> String {
    let o = app("PdbOracle");
    let args: Vec<&str> = dll.map(|d| d.to_str().unwrap()).into_iter().collect();
    let out = o.command(&args).output().expect("run PdbOracle");
    assert!(
        out.status.success(),
        "PdbOracle failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The same facts, in the oracle's format, as our reader reads them.
fn ours(pdb: &PortablePdb, source: &PdbSource) -> String {
    let mut o = String::new();
    match source {
        PdbSource::Embedded => o.push_str("source\tembedded\n"),
        PdbSource::File(p) => o.push_str(&format!("source\t{}\n", p.display())),
    }
    let id: String = pdb.id().0.iter().map(|b| format!("{b:02x}")).collect();
    o.push_str(&format!("id\t{id}\n"));
    for row in 1..=pdb.method_count() {
        let token = 0x0600_0000 | row;
        let lines = pdb.sequence_points(token).expect("sequence points");
        for p in &lines.points {
            let doc = pdb.document(p.document).expect("document").name;
            o.push_str(&format!(
                "sp\t{token:#010x}\t{}\t{}\t{}\t{}\t{}\t{}\t{doc}\n",
                p.il_offset,
                p.start_line,
                p.start_column,
                p.end_line,
                p.end_column,
                u8::from(p.is_hidden())
            ));
        }
        if let Some(kickoff) = pdb.kickoff_method(token).expect("state machine table") {
            o.push_str(&format!("sm\t{token:#010x}\t{kickoff:#010x}\n"));
        }
    }
    o
}

/// Compares line by line, so a failure shows the first difference, not two huge strings.
fn assert_same(ours: &str, theirs: &str) {
    for (i, (a, b)) in ours.lines().zip(theirs.lines()).enumerate() {
        assert_eq!(
            a,
            b,
            "line {} differs (ours left, System.Reflection.Metadata right)",
            i + 1
        );
    }
    assert_eq!(ours.lines().count(), theirs.lines().count(), "line counts");
}

fn scenarios() -> BuiltApp {
    app("Scenarios")
}

#[test]
fn side_by_side_pdb_matches_system_reflection_metadata_for_every_method() {
    let s = scenarios();
    let found = find::find_pdb(&s.dll, &[]).expect("Scenarios.pdb");
    assert_eq!(found.source, PdbSource::File(s.dir.join("Scenarios.pdb")));
    let theirs = oracle(Some(&s.dll));
    let ours = ours(&found.pdb, &found.source);
    assert_same(&ours, &theirs);
    // Real content, not two empty listings: every scenario method has lines, and the
    // async StepAsync's MoveNext names its kickoff method.
    assert!(
        ours.lines().filter(|l| l.starts_with("sp\t")).count() > 500,
        "{ours}"
    );
    assert!(
        ours.lines().any(|l| l.starts_with("sm\t")),
        "no state machine in {ours}"
    );
}

#[test]
fn embedded_pdb_matches_system_reflection_metadata_for_every_method() {
    let o = app("PdbOracle");
    let found = find::find_pdb(&o.dll, &[]).expect("the embedded PDB");
    assert_eq!(found.source, PdbSource::Embedded);
    let theirs = oracle(None);
    let ours = ours(&found.pdb, &found.source);
    assert_same(&ours, &theirs);
    // The shapes PdbOracle compiles: two state machines (async Run, iterator Numbers),
    // a method spanning two documents (#line), hidden points.
    assert_eq!(
        ours.lines().filter(|l| l.starts_with("sm\t")).count(),
        2,
        "{ours}"
    );
    assert!(
        ours.contains("\t200\t9\t200\t"),
        "the #line 200 point: {ours}"
    );
    assert!(ours.contains("Elsewhere.cs"), "{ours}");
    assert!(
        ours.lines()
            .any(|l| l.starts_with("sp\t") && l.contains("\t1\t/")),
        "hidden points: {ours}"
    );
}

#[test]
fn embedded_scenarios_pdb_matches_system_reflection_metadata_for_every_method() {
    let e = app_embedded_pdb("Scenarios");
    assert!(
        !e.dir.join("Scenarios.pdb").exists(),
        "an embedded build ships no .pdb"
    );
    let found = find::find_pdb(&e.dll, &[]).expect("the embedded PDB");
    assert_eq!(found.source, PdbSource::Embedded);
    let theirs = oracle(Some(&e.dll));
    let ours = ours(&found.pdb, &found.source);
    assert_same(&ours, &theirs);
    assert!(
        ours.lines().filter(|l| l.starts_with("sp\t")).count() > 500,
        "{ours}"
    );
    assert!(
        ours.lines().any(|l| l.starts_with("sm\t")),
        "no state machine in {ours}"
    );
}

#[test]
fn source_line_of_an_il_offset() {
    let s = scenarios();
    let found = find::find_pdb(&s.dll, &[]).unwrap();
    let pdb = &found.pdb;
    // The first method with a visible point at a non-zero offset: an IL offset inside it
    // maps to that point's line, in the document the oracle names.
    let (token, p) = (1..=pdb.method_count())
        .map(|r| 0x0600_0000 | r)
        .find_map(|t| {
            let lines = pdb.sequence_points(t).unwrap();
            lines
                .points
                .iter()
                .find(|p| !p.is_hidden() && p.il_offset > 0)
                .map(|p| (t, *p))
        })
        .expect("a method with lines");
    let line = pdb
        .source_line(token, p.il_offset)
        .unwrap()
        .expect("a line");
    assert_eq!((line.line, line.column), (p.start_line, p.start_column));
    assert_eq!(line.document, pdb.document(p.document).unwrap().name);
    assert!(line.document.ends_with(".cs"), "{line:?}");
}

/// A copy of Scenarios.dll alone in a fresh folder, as if moved to another machine: the
/// CodeView path (where the compiler wrote the PDB, which still exists here) made to point
/// nowhere.
fn lone_image() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let dll = dir.path().join("Scenarios.dll");
    let mut image = std::fs::read(scenarios().dll).unwrap();
    let cv = find::debug_info(&image, &dll)
        .unwrap()
        .codeview
        .expect("a CodeView entry");
    assert!(cv.portable && cv.path.starts_with('/'), "{cv:?}");
    let at = image
        .windows(cv.path.len())
        .position(|w| w == cv.path.as_bytes())
        .unwrap();
    image[at + 1..at + 4].copy_from_slice(b"\x01\x02\x03");
    std::fs::write(&dll, image).unwrap();
    (dir, dll)
}

#[test]
fn the_build_path_in_the_image_is_the_last_place_looked_at() {
    let s = scenarios();
    let dir = tempfile::tempdir().unwrap();
    let dll = dir.path().join("Scenarios.dll");
    std::fs::copy(&s.dll, &dll).unwrap();
    let image = std::fs::read(&dll).unwrap();
    let cv = find::debug_info(&image, &dll).unwrap().codeview.unwrap();
    let found = find::find_pdb(&dll, &[]).expect("the PDB where the compiler wrote it");
    assert_eq!(found.source, PdbSource::File(PathBuf::from(&cv.path)));
    assert_eq!(found.pdb.id(), cv.pdb_id());
}

#[test]
fn no_pdb_says_where_it_looked_and_extra_folders_are_searched() {
    let (dir, dll) = lone_image();
    let err = find::find_pdb(&dll, &[]).unwrap_err();
    let PdbError::NotFound { looked, .. } = &err else {
        panic!("{err}")
    };
    assert!(looked.contains(&dir.path().join("Scenarios.pdb")), "{err}");
    assert!(err.to_string().contains("no PDB found"), "{err}");

    let extra = tempfile::tempdir().unwrap();
    let pdb = extra.path().join("Scenarios.pdb");
    std::fs::copy(scenarios().dir.join("Scenarios.pdb"), &pdb).unwrap();
    let found =
        find::find_pdb(&dll, &[extra.path().to_path_buf()]).expect("found in the extra folder");
    assert_eq!(found.source, PdbSource::File(pdb));
}

#[test]
fn a_pdb_of_another_build_is_refused_with_both_ids() {
    let (dir, dll) = lone_image();
    let mut bytes = std::fs::read(scenarios().dir.join("Scenarios.pdb")).unwrap();
    let real = PortablePdb::parse(bytes.clone()).unwrap().id();
    let at = bytes
        .windows(20)
        .position(|w| w == real.0)
        .expect("the id in the file");
    bytes[at] ^= 0xFF;
    std::fs::write(dir.path().join("Scenarios.pdb"), &bytes).unwrap();
    let err = find::find_pdb(&dll, &[]).unwrap_err();
    let PdbError::Mismatch {
        image_id, pdb_id, ..
    } = &err
    else {
        panic!("{err}")
    };
    assert_eq!(*image_id, real);
    assert_ne!(*pdb_id, real);
    let text = err.to_string();
    assert!(
        text.contains(&real.to_string()) && text.contains(&pdb_id.to_string()),
        "{text}"
    );
}

#[test]
fn a_windows_pdb_is_refused_with_how_to_build_a_portable_one() {
    let (dir, dll) = lone_image();
    let mut msf = b"Microsoft C/C++ MSF 7.00\r\n\x1aDS\0\0\0".to_vec();
    msf.resize(4096, 0);
    std::fs::write(dir.path().join("Scenarios.pdb"), &msf).unwrap();
    let err = find::find_pdb(&dll, &[]).unwrap_err();
    assert!(matches!(err, PdbError::WindowsPdb { .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains("Scenarios.pdb"), "{text}");
    assert!(text.contains("<DebugType>portable</DebugType>"), "{text}");
}

/// Reads everything a PDB offers; errors are fine, panics are not.
fn read_all(bytes: Vec<u8>) {
    let Ok(pdb) = PortablePdb::parse(bytes) else {
        return;
    };
    let _ = pdb.entry_point();
    for d in 1..=pdb.document_count().min(10_000) {
        let _ = pdb.document(d);
    }
    for row in 1..=pdb.method_count().min(100_000) {
        let _ = pdb.sequence_points(0x0600_0000 | row);
        let _ = pdb.kickoff_method(0x0600_0000 | row);
    }
    let _ = pdb.state_machine_methods();
}

/// A small deterministic generator (xorshift), so a failure replays.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[test]
fn truncated_and_mutated_pdbs_give_errors_never_panics() {
    let side = std::fs::read(scenarios().dir.join("Scenarios.pdb")).unwrap();
    let o = app("PdbOracle");
    let image = std::fs::read(&o.dll).unwrap();
    let embedded = find::debug_info(&image, &o.dll)
        .unwrap()
        .embedded
        .expect("embedded PDB");
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for real in [&side, &embedded] {
        read_all(real.clone());
        // Every truncation length up to the tables, then a stride through the rest.
        for len in (0..real.len().min(2048)).chain((2048..real.len()).step_by(97)) {
            read_all(real[..len].to_vec());
        }
        // Random bytes overwritten (1 to 8 at a time), random values, 3000 times.
        for _ in 0..3000 {
            let mut m = real.clone();
            for _ in 0..1 + rng.below(8) {
                let at = rng.below(m.len());
                m[at] = rng.next() as u8;
            }
            read_all(m);
        }
    }
    // A damaged image around an embedded PDB: truncated and mutated.
    for len in (0..image.len()).step_by(61) {
        let _ = find::find_pdb_for_image(&image[..len], &o.dll, &[]);
    }
    for _ in 0..500 {
        let mut m = image.clone();
        let at = rng.below(m.len());
        m[at] = rng.next() as u8;
        let _ = find::find_pdb_for_image(&m, &o.dll, &[]);
    }
}
