use super::*;

fn decode(blob: &[u8], document: u32) -> Result<Vec<SequencePoint>, &'static str> {
    decode_sequence_points(blob, document, 3).map(|m| m.points)
}

fn sp(il: u32, doc: u32, sl: u32, sc: u32, el: u32, ec: u32) -> SequencePoint {
    SequencePoint {
        il_offset: il,
        document: doc,
        start_line: sl,
        start_column: sc,
        end_line: el,
        end_column: ec,
    }
}

#[test]
fn signed_compressed_integers_rotate_the_sign_bit() {
    // ECMA-335 §II.23.2's examples.
    let cases: &[(&[u8], i32)] = &[
        (&[0x06], 3),
        (&[0x7B], -3),
        (&[0x80, 0x80], 64),
        (&[0x01], -64),
        (&[0xC0, 0x00, 0x40, 0x00], 8192),
        (&[0x80, 0x01], -8192),
        (&[0xDF, 0xFF, 0xFF, 0xFE], 268_435_455),
        (&[0xC0, 0x00, 0x00, 0x01], -268_435_456),
    ];
    for &(bytes, want) in cases {
        let mut c = Cursor { b: bytes, at: 0 };
        assert_eq!(c.signed(), Some(want), "{bytes:x?}");
        assert!(c.done());
    }
    assert_eq!(Cursor { b: &[0xFF], at: 0 }.signed(), None);
    assert_eq!(
        Cursor {
            b: &[0xC0, 0x00],
            at: 0
        }
        .unsigned(),
        None
    );
}

#[test]
fn sequence_points_first_record_hidden_points_and_document_changes() {
    let blob = [
        0x05, // local signature 5
        // IL 0: lines 10..10, columns 5..9 (first non-hidden: absolute)
        0x00, 0x00, 0x04, 0x0A, 0x05, // IL +3 = 3: hidden
        0x03, 0x00, 0x00,
        // IL +4 = 7: ΔLines 1, ΔColumns signed -2 (0x7D), start line 10 + 2 (0x04),
        // start column 5 + 4 (0x08): lines 12..13, columns 9..7
        0x04, 0x01, 0x7D, 0x04, 0x08, // document record: document 2
        0x00, 0x02,
        // IL +1 = 8: ΔColumns 1, start line 12 - 2 (0x7D), start column 9 - 1 (0x7F)
        0x01, 0x00, 0x01, 0x7D, 0x7F,
    ];
    assert_eq!(
        decode(&blob, 1).unwrap(),
        vec![
            sp(0, 1, 10, 5, 10, 9),
            sp(3, 1, HIDDEN_LINE, 0, HIDDEN_LINE, 0),
            sp(7, 1, 12, 9, 13, 7),
            sp(8, 2, 10, 8, 10, 9),
        ]
    );
}

#[test]
fn a_method_over_several_documents_names_its_first_in_the_header() {
    // Document column 0: the header carries the initial document (3).
    let blob = [0x00, 0x03, 0x02, 0x00, 0x01, 0x07, 0x01];
    assert_eq!(decode(&blob, 0).unwrap(), vec![sp(2, 3, 7, 1, 7, 2)]);
}

#[test]
fn bad_blobs_are_errors() {
    // Truncated header, record, out-of-range document, IL overflow, negative line.
    assert!(decode(&[], 1).is_err());
    assert!(decode(&[0x00, 0x00, 0x00], 1).is_err());
    assert!(decode(&[0x00, 0x00, 0x00, 0x01, 0x01, 0x01], 9).is_err());
    assert!(decode(&[0x00, 0x00, 0x07, 0x00], 0).is_err());
    let last_il = [0x00, 0xDF, 0xFF, 0xFF, 0xFF, 0x00, 0x01, 0x01, 0x01];
    assert!(decode(&last_il, 1).is_ok());
    assert!(decode(&[&last_il[..], &[0x01, 0x00, 0x00]].concat(), 1).is_err());
    // Second point's start line 1 - 2 < 0.
    assert!(
        decode(
            &[
                0x00, 0x00, 0x00, 0x01, 0x01, 0x01, 0x01, 0x00, 0x01, 0x7D, 0x00
            ],
            1
        )
        .is_err()
    );
}

#[test]
fn lines_of_il_offsets_skip_hidden_points() {
    let m = MethodLines {
        points: vec![
            sp(2, 1, 10, 5, 10, 9),
            sp(6, 1, HIDDEN_LINE, 0, HIDDEN_LINE, 0),
            sp(9, 1, 12, 1, 12, 4),
        ],
    };
    assert_eq!(m.point_at(0), None);
    assert_eq!(m.line_at(1), None);
    assert_eq!(m.line_at(2).unwrap().start_line, 10);
    assert!(m.point_at(7).unwrap().is_hidden());
    assert_eq!(m.line_at(7).unwrap().start_line, 10);
    assert_eq!(m.line_at(100).unwrap().start_line, 12);
    assert_eq!(m.first_line().unwrap().start_line, 10);
}

#[test]
fn a_windows_pdb_is_named_as_such() {
    let mut bytes = MSF_MAGIC.to_vec();
    bytes.extend_from_slice(b"\r\n\x1aDS\0\0\0");
    let err = PortablePdb::parse(bytes).unwrap_err();
    assert!(matches!(err, PdbError::WindowsPdb { .. }));
    assert!(err.to_string().contains("<DebugType>portable</DebugType>"));
}

#[test]
fn not_a_pdb_is_an_error() {
    assert!(PortablePdb::parse(Vec::new()).is_err());
    assert!(PortablePdb::parse(vec![0x42, 0x53, 0x4A, 0x42]).is_err());
}

mod fuzz {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn any_sequence_points_blob_decodes_or_errs(
            blob in proptest::collection::vec(any::<u8>(), 0..256),
            document in 0u32..5,
        ) {
            if let Ok(m) = decode_sequence_points(&blob, document, 3) {
                // What decodes keeps the spec's invariants.
                for w in m.points.windows(2) {
                    prop_assert!(w[0].il_offset < w[1].il_offset);
                }
                for p in &m.points {
                    prop_assert!((1..=3).contains(&p.document));
                    prop_assert!(p.is_hidden() || p.end_line >= p.start_line);
                }
            }
        }

        #[test]
        fn any_bytes_after_a_metadata_root_parse_or_err(
            tail in proptest::collection::vec(any::<u8>(), 0..512),
        ) {
            let mut bytes = vec![0x42, 0x53, 0x4A, 0x42, 1, 0, 1, 0, 0, 0, 0, 0, 4, 0, 0, 0];
            bytes.extend_from_slice(&tail);
            if let Ok(pdb) = PortablePdb::parse(bytes) {
                for row in 1..=pdb.method_count().min(64) {
                    let _ = pdb.sequence_points(0x0600_0000 | row);
                    let _ = pdb.kickoff_method(0x0600_0000 | row);
                }
                for d in 1..=pdb.document_count().min(64) {
                    let _ = pdb.document(d);
                }
            }
        }
    }
}
