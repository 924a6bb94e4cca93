//! Decoding the records of one block payload. Each record's timestamp field is a tick
//! delta from the record before it (the first from the block's `base_ts`); the decoder
//! turns them back into absolute ticks.

use thiserror::Error;

use crate::events::{Event, kind_name};
use crate::fields::Cursor;
use crate::leb128;

/// One decoded record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record<'p> {
    /// Where the record starts in the payload.
    pub offset: usize,
    /// Absolute raw clock ticks (deltas resolved).
    pub ts: u64,
    pub event: Event<'p>,
    /// Strings that were not valid UTF-8 and were replaced lossily.
    pub lossy_strings: u32,
}

/// A record that could not be decoded. After `Truncated` and `BadTimestamp` the rest of
/// the payload is skipped; after the others decoding continues with the next record
/// (each record carries its length, and its timestamp delta is still applied).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RecordError {
    #[error(
        "record at payload byte {offset} runs past the end of the block ({remaining} bytes left)"
    )]
    Truncated { offset: usize, remaining: usize },
    #[error(
        "record at payload byte {offset} has no valid timestamp, so the timestamps of the \
         {remaining} bytes from there are unknown"
    )]
    BadTimestamp { offset: usize, remaining: usize },
    #[error("record at payload byte {offset} has unknown kind {kind} ({len} bytes skipped)")]
    UnknownKind { offset: usize, kind: u8, len: usize },
    #[error("malformed {} record at payload byte {offset}: field `{field}`: {reason}",
        kind_name(*.kind).unwrap_or("?"))]
    Malformed {
        offset: usize,
        kind: u8,
        field: &'static str,
        reason: String,
    },
}

/// The records of a payload, in order.
#[derive(Debug, Clone)]
pub struct Records<'p> {
    payload: &'p [u8],
    pos: usize,
    ts: u64,
    done: bool,
}

impl<'p> Records<'p> {
    /// The records of a block whose header says `base_ts`.
    pub fn new(payload: &'p [u8], base_ts: u64) -> Records<'p> {
        Records::resume(payload, 0, base_ts)
    }

    /// Continues at payload byte `pos` (from [`position`](Self::position)) with the
    /// running timestamp `ts` (from [`last_ts`](Self::last_ts)).
    pub fn resume(payload: &'p [u8], pos: usize, ts: u64) -> Records<'p> {
        Records {
            payload,
            pos,
            ts,
            done: false,
        }
    }

    /// Payload offset of the next record.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Absolute timestamp of the last record read (the base before the first).
    pub fn last_ts(&self) -> u64 {
        self.ts
    }
}

impl<'p> Iterator for Records<'p> {
    type Item = Result<Record<'p>, RecordError>;

    fn next(&mut self) -> Option<Self::Item> {
        let payload = self.payload;
        let start = self.pos;
        if self.done || start >= payload.len() {
            return None;
        }
        let kind = payload[start];
        let mut p = start + 1;
        let end = leb128::read_u64(payload, &mut p)
            .ok()
            .and_then(|len| usize::try_from(len).ok())
            .and_then(|len| p.checked_add(len))
            .filter(|&end| end <= payload.len());
        let Some(end) = end else {
            self.done = true;
            self.pos = payload.len();
            return Some(Err(RecordError::Truncated {
                offset: start,
                remaining: payload.len() - start,
            }));
        };
        self.pos = end;
        let mut r = Cursor::new(&payload[p..end]);
        let Ok(delta) = r.u64() else {
            self.done = true;
            self.pos = payload.len();
            return Some(Err(RecordError::BadTimestamp {
                offset: start,
                remaining: payload.len() - start,
            }));
        };
        self.ts = self.ts.wrapping_add(delta);
        Some(decode_fields(kind, start, self.ts, r))
    }
}

fn decode_fields<'p>(
    kind: u8,
    offset: usize,
    ts: u64,
    mut r: Cursor<'p>,
) -> Result<Record<'p>, RecordError> {
    match Event::get_fields(kind, &mut r) {
        // Bytes after the known fields are fields added by a newer minor version.
        Some(Ok(event)) => Ok(Record {
            offset,
            ts,
            event,
            lossy_strings: r.lossy_strings,
        }),
        Some(Err((field, e))) => Err(RecordError::Malformed {
            offset,
            kind,
            field,
            reason: e.to_string(),
        }),
        None => Err(RecordError::UnknownKind {
            offset,
            kind,
            len: r.bytes.len(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode;

    #[test]
    fn skips_unknown_and_malformed_records_but_not_their_neighbours() {
        let mut p = Vec::new();
        encode(&mut p, 1, &Event::ThreadCreated { thread: 1 });
        p.extend_from_slice(&[200, 3, 1, 2, 3]); // unknown kind 200
        p.extend_from_slice(&[12, 2, 5, 5]); // JitStarted without its bool
        p.extend_from_slice(&[12, 3, 5, 5, 9]); // JitStarted with bool byte 9
        encode(&mut p, 2, &Event::ThreadDestroyed { thread: 1 });
        let items: Vec<_> = Records::new(&p, 100).collect();
        assert_eq!(items.len(), 5);
        assert!(matches!(&items[0], Ok(r) if r.event == Event::ThreadCreated { thread: 1 }));
        assert!(matches!(&items[0], Ok(r) if r.ts == 101));
        assert_eq!(
            items[1],
            Err(RecordError::UnknownKind {
                offset: 4,
                kind: 200,
                len: 3
            })
        );
        assert!(matches!(
            &items[2],
            Err(RecordError::Malformed {
                field: "safe_to_block",
                ..
            })
        ));
        assert_eq!(
            items[3].as_ref().unwrap_err().to_string(),
            "malformed JitStarted record at payload byte 13: field `safe_to_block`: bool byte 9 \
             is neither 0 nor 1"
        );
        // The skipped records' deltas (1, 5, 5) still count.
        assert!(matches!(&items[4], Ok(r) if r.ts == 114));
    }

    #[test]
    fn extra_trailing_fields_are_ignored() {
        // A ThreadCreated from a future minor version with one more field appended.
        let p = [16, 3, 7, 1, 42];
        let r = Records::new(&p, 0).next().unwrap().unwrap();
        assert_eq!((r.ts, r.event), (7, Event::ThreadCreated { thread: 1 }));
    }

    #[test]
    fn truncation_ends_the_payload() {
        let mut p = Vec::new();
        encode(&mut p, 1, &Event::ThreadCreated { thread: 1 });
        encode(&mut p, 1, &Event::ThreadCreated { thread: 2 });
        p.pop();
        let items: Vec<_> = Records::new(&p, 0).collect();
        assert_eq!(items.len(), 2);
        assert_eq!(
            items[1],
            Err(RecordError::Truncated {
                offset: 4,
                remaining: 3
            })
        );
    }

    #[test]
    fn a_missing_timestamp_ends_the_payload() {
        let mut p = vec![3, 0]; // Shutdown with an empty body
        encode(&mut p, 1, &Event::Shutdown {});
        let items: Vec<_> = Records::new(&p, 0).collect();
        assert_eq!(
            items,
            [Err(RecordError::BadTimestamp {
                offset: 0,
                remaining: 5
            })]
        );
    }

    #[test]
    fn deltas_wrap() {
        let mut p = Vec::new();
        encode(&mut p, 10, &Event::Shutdown {});
        encode(&mut p, u64::MAX, &Event::Shutdown {}); // one tick back
        let ts: Vec<u64> = Records::new(&p, u64::MAX - 4)
            .map(|r| r.unwrap().ts)
            .collect();
        assert_eq!(ts, [5, 4]);
    }
}
