//! Record encoders. These run inside the profiled process on every event: they never
//! allocate when the output has room and never fail.
//!
//! A record is `kind: u8`, `len: LEB128` (bytes that follow), then `ts: LEB128` and the
//! kind's fields. `ts` is what the caller passes: in a trace file, the tick delta from the
//! previous record of the same stream (see [`write_block`](crate::write_block)).

use crate::events::Event;
use crate::fields::put_u64_list;
use crate::leb128;
use crate::phases::EltKind;

/// Longest ELT record: kind, 1-byte length, three 10-byte LEB128s.
pub const ELT_RECORD_MAX: usize = 32;

/// Appends one record for `ev` with timestamp field `ts` (a tick delta) to `out`.
///
/// Does not allocate when `out` has spare capacity for the record (for fixed-size kinds
/// at most 2 + 10 × (fields + 1) bytes; strings and lists add their lengths).
#[inline]
pub fn encode(out: &mut Vec<u8>, ts: u64, ev: &Event<'_>) {
    let start = begin(out, ev.kind(), ts);
    ev.put_fields(out);
    finish(out, start);
}

/// Writes an Enter, Leave or Tailcall record into a fixed buffer and returns its length
/// (at most [`ELT_RECORD_MAX`]). Byte-identical to [`encode`] of the same event.
#[inline]
pub fn encode_elt(out: &mut [u8; 32], kind: EltKind, ts: u64, function: u64, sp: u64) -> usize {
    out[0] = kind as u8;
    let mut n = 2;
    n += leb128::write_u64(&mut out[n..], ts);
    n += leb128::write_u64(&mut out[n..], function);
    n += leb128::write_u64(&mut out[n..], sp);
    // At most 30 payload bytes: the length always fits one LEB128 byte.
    out[1] = (n - 2) as u8;
    n
}

/// Appends `record` (one whole record, as [`encode`] writes it) to `out` with its
/// timestamp field replaced by `ts`. Agents encode a record once with a placeholder
/// timestamp and let the writer fill in the delta; the fields are copied untouched.
/// Returns false (and appends nothing) when `record` is not one well-formed record.
pub fn rebase_ts(out: &mut Vec<u8>, record: &[u8], ts: u64) -> bool {
    let Some((kind, p)) = fields_start(record) else {
        return false;
    };
    let start = begin(out, kind, ts);
    out.extend_from_slice(&record[p..]);
    finish(out, start);
    true
}

/// Whether `record` is exactly one record (kind, length covering the rest, timestamp).
pub(crate) fn is_one_record(record: &[u8]) -> bool {
    fields_start(record).is_some()
}

/// A record's kind and where its fields start (after the timestamp), if `record` is
/// exactly one record.
fn fields_start(record: &[u8]) -> Option<(u8, usize)> {
    let &kind = record.first()?;
    let mut p = 1;
    let len = leb128::read_u64(record, &mut p).ok()?;
    if usize::try_from(len).ok().and_then(|l| p.checked_add(l)) != Some(record.len()) {
        return None;
    }
    leb128::read_u64(record, &mut p).ok()?;
    Some((kind, p))
}

/// Longest header [`encode_call_values_header`] writes: kind, the length, and four
/// LEB128s (timestamp, function, SP, values length).
pub const CALL_VALUES_HEADER_MAX: usize = 1 + 5 * leb128::MAX_LEN;

/// The kinds [`encode_call_values_header`] writes: `CallArgs`, `CallReturn`, `EnterArgs`,
/// `ReturnLeave`.
pub const CALL_VALUES_KINDS: [u8; 4] = [40, 41, 44, 45];

/// Writes the start of a record of kind `kind` whose fields are a function, an SP and a
/// value list (`CallArgs`, `CallReturn`, `EnterArgs` or `ReturnLeave`: [`CALL_VALUES_KINDS`])
/// whose `values` (`values_len` bytes, at most 8192) follow it unchanged: header then
/// values is byte-identical to [`encode`] of the event. Returns the header's length. For
/// `--args`, which writes both parts into the ring without building the record in between.
#[inline]
pub fn encode_call_values_header(
    out: &mut [u8; CALL_VALUES_HEADER_MAX],
    kind: u8,
    ts: u64,
    function: u64,
    sp: u64,
    values_len: usize,
) -> usize {
    let values_len = values_len.min(crate::fields::MAX_STRING_BYTES);
    let mut fields = [0u8; 4 * leb128::MAX_LEN];
    let mut n = leb128::write_u64(&mut fields, ts);
    n += leb128::write_u64(&mut fields[n..], function);
    n += leb128::write_u64(&mut fields[n..], sp);
    n += leb128::write_u64(&mut fields[n..], values_len as u64);
    debug_assert!(CALL_VALUES_KINDS.contains(&kind));
    out[0] = kind;
    let len = leb128::write_u64(&mut out[1..], (n + values_len) as u64);
    out[1 + len..1 + len + n].copy_from_slice(&fields[..n]);
    1 + len + n
}

/// Longest header [`encode_u64_list_header`] writes: kind, the length, and three LEB128s
/// (timestamp, snapshot, item count).
pub const U64_LIST_HEADER_MAX: usize = 1 + 4 * leb128::MAX_LEN;

/// Writes the start of a `HeapObjects` or `HeapRoots` record (`kind` 66 or 67) of
/// snapshot `snapshot` whose `items` values follow it already LEB128-encoded
/// (`items_len` bytes): header then items is byte-identical to [`encode`] of the event
/// (at most [`crate::MAX_LIST_ITEMS`] items, as it writes). Returns the header's length.
/// For the heap walk, which encodes each value once, as it goes.
#[inline]
pub fn encode_u64_list_header(
    out: &mut [u8; U64_LIST_HEADER_MAX],
    kind: u8,
    ts: u64,
    snapshot: u64,
    items: usize,
    items_len: usize,
) -> usize {
    let mut fields = [0u8; 3 * leb128::MAX_LEN];
    let mut n = leb128::write_u64(&mut fields, ts);
    n += leb128::write_u64(&mut fields[n..], snapshot);
    n += leb128::write_u64(&mut fields[n..], items as u64);
    out[0] = kind;
    let len = leb128::write_u64(&mut out[1..], (n + items_len) as u64);
    out[1 + len..1 + len + n].copy_from_slice(&fields[..n]);
    1 + len + n
}

/// Appends a Sample record (kind 31) without building an [`Event`]. Byte-identical to
/// [`encode`] of the same event.
#[inline]
pub fn encode_sample_into(
    out: &mut Vec<u8>,
    ts: u64,
    os_tid: u64,
    thread: u64,
    cpu_ns: u64,
    state: u8,
    frames: &[u64],
) {
    let start = begin(out, 31, ts);
    leb128::put_u64(out, os_tid);
    leb128::put_u64(out, thread);
    leb128::put_u64(out, cpu_ns);
    out.push(state);
    put_u64_list(out, frames);
    finish(out, start);
}

/// Counts the whole records in `records` (stops at a partial one). For
/// [`write_block`](crate::write_block)'s `record_count`.
pub fn count_records(records: &[u8]) -> u32 {
    count_records_with_ts(records, &mut 0)
}

/// Counts the whole records in `records` and adds their timestamp deltas to
/// `running_ts` (wrapping), which then holds the absolute timestamp of the last one: the
/// next block's `base_ts`.
pub fn count_records_with_ts(records: &[u8], running_ts: &mut u64) -> u32 {
    let mut pos = 0;
    let mut n = 0u32;
    while pos < records.len() {
        let mut p = pos + 1;
        let Ok(len) = leb128::read_u64(records, &mut p) else {
            break;
        };
        match usize::try_from(len).ok().and_then(|l| p.checked_add(l)) {
            Some(end) if end <= records.len() => {
                let mut t = p;
                if let Ok(delta) = leb128::read_u64(&records[..end], &mut t) {
                    *running_ts = running_ts.wrapping_add(delta);
                }
                pos = end;
                n = n.saturating_add(1);
            }
            _ => break,
        }
    }
    n
}

/// Writes kind, a one-byte length placeholder and the timestamp; returns the record start.
#[inline]
fn begin(out: &mut Vec<u8>, kind: u8, ts: u64) -> usize {
    let start = out.len();
    out.push(kind);
    out.push(0);
    leb128::put_u64(out, ts);
    start
}

/// Fills in the length of the record that starts at `start`. Payloads under 128 bytes
/// (nearly all) fit the placeholder; longer ones are shifted right to make room.
#[inline]
fn finish(out: &mut Vec<u8>, start: usize) {
    let body = start + 2;
    let len = out.len() - body;
    if len < 0x80 {
        out[start + 1] = len as u8;
        return;
    }
    let mut buf = [0u8; leb128::MAX_LEN];
    let n = leb128::write_u64(&mut buf, len as u64);
    let end = out.len();
    out.resize(end + n - 1, 0);
    out.copy_within(body..end, body + n - 1);
    out[start + 1..start + 1 + n].copy_from_slice(&buf[..n]);
}

#[cfg(test)]
mod call_values_tests {
    use super::*;
    use std::borrow::Cow;

    #[test]
    fn u64_list_header_then_encoded_items_is_the_encoded_record() {
        for (ts, snapshot, items) in [
            (0u64, 1u64, vec![]),
            (123_456_789, 2, vec![0u64, 127, 128, u64::MAX]),
            (u64::MAX, 7, (0..2048u64).map(|i| i * 1_000_003).collect()),
        ] {
            let mut encoded = Vec::new();
            for &v in &items {
                leb128::put_u64(&mut encoded, v);
            }
            for kind in [66u8, 67] {
                let mut head = [0u8; U64_LIST_HEADER_MAX];
                let n = encode_u64_list_header(
                    &mut head,
                    kind,
                    ts,
                    snapshot,
                    items.len(),
                    encoded.len(),
                );
                let mut got = head[..n].to_vec();
                got.extend_from_slice(&encoded);
                let list = Cow::Borrowed(&items[..]);
                let ev = if kind == 66 {
                    Event::HeapObjects {
                        snapshot,
                        objects: list,
                    }
                } else {
                    Event::HeapRoots {
                        snapshot,
                        roots: list,
                    }
                };
                let mut want = Vec::new();
                encode(&mut want, ts, &ev);
                assert_eq!(got, want, "kind {kind}, {} items", items.len());
            }
        }
    }

    #[test]
    fn call_values_header_then_values_is_the_encoded_record() {
        for kind in CALL_VALUES_KINDS {
            for (ts, function, sp, len) in [
                (0, 3, 0x7ffe_1230, 4),
                (123_456_789, 1 << 29, 0xffff_ffff, 0),
                (u64::MAX, u64::MAX, 1, 127),
                (5, 7, 9, 8192),
            ] {
                let values: Vec<u8> = (0..len).map(|i| i as u8).collect();
                let mut head = [0u8; CALL_VALUES_HEADER_MAX];
                let n = encode_call_values_header(&mut head, kind, ts, function, sp, len);
                let mut got = head[..n].to_vec();
                got.extend_from_slice(&values);
                let values = Cow::Borrowed(&values[..]);
                let ev = match kind {
                    40 => Event::CallArgs {
                        function,
                        sp,
                        values,
                    },
                    41 => Event::CallReturn {
                        function,
                        sp,
                        values,
                    },
                    44 => Event::EnterArgs {
                        function,
                        sp,
                        values,
                    },
                    _ => Event::ReturnLeave {
                        function,
                        sp,
                        values,
                    },
                };
                assert_eq!(ev.kind(), kind);
                let mut want = Vec::new();
                encode(&mut want, ts, &ev);
                assert_eq!(got, want, "kind {kind}, {len} value bytes");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::*;

    #[test]
    fn rebase_replaces_only_the_timestamp() {
        let long: Vec<u64> = (0..40).map(|i| i * 1_000_003).collect();
        let events = [
            Event::ThreadCreated { thread: 7 },
            Event::ThreadName {
                thread: 5,
                name: "worker".into(),
            },
            Event::Sample {
                os_tid: 1,
                thread: 2,
                cpu_ns: 3,
                state: 1,
                frames: Cow::Borrowed(&long),
            },
        ];
        for ev in &events {
            let mut placeholder = Vec::new();
            encode(&mut placeholder, 0, ev);
            for ts in [0, 1, 127, 128, 300, u64::MAX] {
                let mut want = Vec::new();
                encode(&mut want, ts, ev);
                let mut got = vec![0xEE];
                assert!(rebase_ts(&mut got, &placeholder, ts));
                assert_eq!(&got[1..], &want[..], "{ev:?} at {ts}");
            }
        }
        let mut out = Vec::new();
        assert!(!rebase_ts(&mut out, &[], 1));
        assert!(!rebase_ts(&mut out, &[19, 9, 0, 1], 1));
        assert!(out.is_empty());
    }

    #[test]
    fn layout_of_a_small_record() {
        let mut out = Vec::new();
        encode(
            &mut out,
            300,
            &Event::ThreadName {
                thread: 5,
                name: "ab".into(),
            },
        );
        assert_eq!(out, [19, 6, 0xac, 0x02, 5, 2, b'a', b'b']);
    }

    #[test]
    fn long_payloads_get_multi_byte_lengths() {
        let name = "x".repeat(200);
        let mut out = vec![0xEE];
        encode(
            &mut out,
            1,
            &Event::ThreadName {
                thread: 2,
                name: Cow::Borrowed(&name),
            },
        );
        // kind, len (2 bytes: 1 + 1 + 2 + 200 = 204), ts, thread, str len (2), bytes
        assert_eq!(&out[..7], &[0xEE, 19, 0xcc, 0x01, 1, 2, 0xc8]);
        assert_eq!(out.len(), 1 + 1 + 2 + 204);
        assert_eq!(count_records(&out[1..]), 1);
    }

    #[test]
    fn encode_does_not_reallocate_with_capacity() {
        let frames: Vec<u64> = (0..200u64).map(|i| i << 40).collect();
        let name = "y".repeat(300);
        let events = [
            Event::Enter {
                function: u64::MAX,
                sp: u64::MAX,
            },
            Event::ClockSync {
                mono_ns: u64::MAX,
                unix_ns: u64::MAX,
            },
            Event::ThreadName {
                thread: 1,
                name: Cow::Borrowed(&name),
            },
            Event::Sample {
                os_tid: 1,
                thread: 2,
                cpu_ns: 3,
                state: 4,
                frames: Cow::Borrowed(&frames),
            },
        ];
        let mut out = Vec::with_capacity(64 * 1024);
        let ptr = out.as_ptr();
        let cap = out.capacity();
        for _ in 0..20 {
            for ev in &events {
                encode(&mut out, u64::MAX, ev);
            }
            encode_sample_into(&mut out, 7, 1, 2, 3, 4, &frames);
        }
        assert!(out.len() < cap);
        assert_eq!(out.as_ptr(), ptr);
        assert_eq!(out.capacity(), cap);
        assert_eq!(count_records(&out), 100);
    }

    #[test]
    fn fast_encoders_match_encode() {
        for (kind, ev) in [
            (
                EltKind::Enter,
                Event::Enter {
                    function: 1 << 60,
                    sp: 0x7ffe_1234,
                },
            ),
            (EltKind::Leave, Event::Leave { function: 0, sp: 0 }),
            (
                EltKind::Tailcall,
                Event::Tailcall {
                    function: 12345,
                    sp: u64::MAX,
                },
            ),
        ] {
            for ts in [0, 127, 128, u64::MAX] {
                let mut buf = [0u8; 32];
                let (function, sp) = ev_fields(&ev);
                let n = encode_elt(&mut buf, kind, ts, function, sp);
                let mut v = Vec::new();
                encode(&mut v, ts, &ev);
                assert_eq!(&buf[..n], &v[..]);
                assert!(n <= ELT_RECORD_MAX);
            }
        }
        let frames = [u64::MAX, 0, 5];
        let mut a = Vec::new();
        encode_sample_into(&mut a, 9, 8, 7, 6, 5, &frames);
        let mut b = Vec::new();
        let ev = Event::Sample {
            os_tid: 8,
            thread: 7,
            cpu_ns: 6,
            state: 5,
            frames: Cow::Borrowed(&frames),
        };
        encode(&mut b, 9, &ev);
        assert_eq!(a, b);
    }

    fn ev_fields(ev: &Event<'_>) -> (u64, u64) {
        match ev {
            Event::Enter { function, sp }
            | Event::Leave { function, sp }
            | Event::Tailcall { function, sp } => (*function, *sp),
            _ => unreachable!(),
        }
    }

    #[test]
    fn counts_stop_at_partial_records() {
        let mut out = Vec::new();
        encode(&mut out, 1, &Event::Shutdown {});
        encode(
            &mut out,
            2,
            &Event::Lost {
                count: 3,
                reason: 1,
            },
        );
        assert_eq!(count_records(&out), 2);
        assert_eq!(count_records(&out[..out.len() - 1]), 1);
        assert_eq!(count_records(&[]), 0);
        assert_eq!(count_records(&[5]), 0);
        let mut ts = 1000;
        assert_eq!(count_records_with_ts(&out, &mut ts), 2);
        assert_eq!(ts, 1003);
        let mut ts = 5;
        encode(&mut out, u64::MAX, &Event::Shutdown {}); // a step back by 1, wrapping
        assert_eq!(count_records_with_ts(&out, &mut ts), 3);
        assert_eq!(ts, 7);
    }
}
