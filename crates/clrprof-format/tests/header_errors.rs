//! Files that are not readable traces fail with messages that say what is wrong and what
//! to do.

mod common;

use clrprof_format::*;
use common::fixed_header;

fn error(bytes: &[u8]) -> String {
    match TraceReader::new(bytes) {
        Ok(_) => panic!("{bytes:?} was accepted"),
        Err(e) => e.to_string(),
    }
}

fn header_with(major: u16, json: &[u8], declared: Option<u32>) -> Vec<u8> {
    let mut b = FILE_MAGIC.to_vec();
    b.extend_from_slice(&major.to_le_bytes());
    b.extend_from_slice(&0u16.to_le_bytes());
    b.extend_from_slice(&declared.unwrap_or(json.len() as u32).to_le_bytes());
    b.extend_from_slice(json);
    b
}

#[test]
fn empty_file() {
    assert_eq!(
        error(&[]),
        "the trace file is empty (0 bytes): the profiler never wrote to it; check that the agent \
         was loaded (its log says why not) and record again"
    );
}

#[test]
fn wrong_magic() {
    assert_eq!(
        error(b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0"),
        "not a clrprof trace (magic \"\\x7fELF\\x02\\x01\\x01\\0\", expected \"CLRPROF\\0\"): \
         pass a file written by `clrprof record` or the clrprof agent"
    );
    // Shorter than the magic and not a prefix of it.
    assert!(error(b"{}").starts_with("not a clrprof trace (magic \"{}\""));
}

#[test]
fn truncated_fixed_header() {
    assert_eq!(
        error(b"CLRPROF\0\x01\0"),
        "the trace header is truncated (10 of 16 bytes): the recording stopped before the header \
         was written; record again"
    );
    assert!(error(b"CLR").starts_with("the trace header is truncated (3 of 16 bytes)"));
}

#[test]
fn unsupported_major_version() {
    assert_eq!(
        error(&header_with(3, b"{}", None)),
        "trace format version 3.0 is not supported (this reader reads versions 1.x and 2.x): open \
         the file with the clrprof release that recorded it"
    );
}

#[test]
fn truncated_json() {
    let full = fixed_header().to_bytes().unwrap();
    let cut = &full[..full.len() - 10];
    assert_eq!(
        error(cut),
        format!(
            "the trace header's JSON metadata is truncated ({} of {} bytes): the recording \
             stopped before the header was written; record again",
            full.len() - 30,
            full.len() - 20
        )
    );
}

#[test]
fn invalid_json() {
    let msg = error(&header_with(1, b"{\"pid\": \"x\"}", None));
    assert!(
        msg.starts_with("the trace header's JSON metadata is invalid (invalid type: string"),
        "{msg}"
    );
    assert!(msg.ends_with("): the file is damaged or was not written by clrprof; record again"));
    assert!(error(&header_with(1, b"\xff\xfe", None)).contains("JSON metadata is invalid"));
}

#[test]
fn oversized_json_length() {
    assert_eq!(
        error(&header_with(1, b"{}", Some(u32::MAX))),
        "the trace header declares 4294967295 bytes of JSON metadata, more than the 16 MiB \
         limit: the file is damaged; record again"
    );
}

#[test]
fn minimal_header_is_accepted() {
    let bytes = header_with(1, b"{}", None);
    let reader = TraceReader::new(&bytes).unwrap();
    assert_eq!(reader.header().meta, TraceMeta::default());
    assert_eq!(reader.body_offset(), 18);
    // Format 2 has a CRC after the length: 20 fixed bytes.
    let v2 = Header::new(TraceMeta::default()).to_bytes().unwrap();
    assert_eq!(TraceReader::new(&v2).unwrap().body_offset(), v2.len());
    assert!(error(&v2[..19]).starts_with("the trace header is truncated (19 of 20 bytes)"));
}
