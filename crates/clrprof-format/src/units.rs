//! Unit payloads: blocks flagged [`FLAG_UNITS`](crate::FLAG_UNITS) hold the agent's
//! per-thread ring memory as it is, so that in trace mode (tens of millions of events a
//! second) the writer only copies bytes and the reader does the encoding.
//!
//! A payload is a sequence of 16-byte units, all integers little-endian:
//!
//! ```text
//! offset size
//!      0    8  ts: absolute clock ticks
//!      8    4  tag: bits 30–31 = what the unit is, bits 0–29 = its value
//!     12    4  sp: low 32 bits of the caller's stack pointer (ELT units), else 0
//! ```
//!
//! - tag kind 0, 1, 2: an Enter, Leave or Tailcall; the value is the function index.
//! - tag kind 3: another record; the value is its length `n`, and the record follows in
//!   the next `ceil(n / 16)` units as [`encode`](crate::encode) writes it, with a
//!   placeholder timestamp (the unit's `ts` is the real one). Value [`PAD`] ends the
//!   payload (the rest of the agent's ring was unused).
//!
//! [`units_to_records`] turns a unit payload into ordinary records.

use crate::encode::{ELT_RECORD_MAX, encode_elt, rebase_ts};
use crate::phases::EltKind;

/// Size of a unit.
pub const UNIT: usize = 16;
/// Tag kinds (top two bits).
pub const TAG_ENTER: u32 = 0;
pub const TAG_LEAVE: u32 = 1 << 30;
pub const TAG_TAILCALL: u32 = 2 << 30;
pub const TAG_OTHER: u32 = 3 << 30;
/// Largest tag value (function index or record length).
pub const TAG_VALUE_MAX: u32 = (1 << 30) - 1;
/// Value of a padding unit.
pub const PAD: u32 = TAG_VALUE_MAX;
/// Longest record one ELT unit becomes (kind, length, 10-byte delta, two 5-byte values).
pub const ELT_OUT_MAX: usize = 22;

/// Units taken by a non-ELT record of `len` bytes (its header unit included).
pub fn units_for_record(len: usize) -> usize {
    1 + len.div_ceil(UNIT)
}

/// One unit of a payload, or a record framed by units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit<'a> {
    /// An Enter, Leave or Tailcall: function index and the caller SP's low half.
    Elt {
        ts: u64,
        kind: EltKind,
        value: u32,
        sp: u32,
    },
    /// Another record, encoded with a placeholder timestamp; `ts` is the real one.
    Other { ts: u64, record: &'a [u8] },
}

/// Reads the unit at `*pos` and moves past it (and the record it frames). `None` at the
/// end of the payload or at a pad unit.
#[inline]
pub fn next_unit<'a>(units: &'a [u8], pos: &mut usize) -> Option<Result<Unit<'a>, String>> {
    let i = *pos;
    let u = units.get(i..i + UNIT)?;
    let ts = u64::from_le_bytes(u[0..8].try_into().unwrap_or_default());
    let tag = u32::from_le_bytes(u[8..12].try_into().unwrap_or_default());
    let sp = u32::from_le_bytes(u[12..16].try_into().unwrap_or_default());
    let value = tag & TAG_VALUE_MAX;
    let kind = match tag & !TAG_VALUE_MAX {
        TAG_ENTER => EltKind::Enter,
        TAG_LEAVE => EltKind::Leave,
        TAG_TAILCALL => EltKind::Tailcall,
        _ => {
            if value == PAD {
                *pos = units.len();
                return None;
            }
            let len = value as usize;
            let end = i + UNIT + len;
            if end > units.len() {
                *pos = units.len();
                return Some(Err(format!(
                    "unit {}: a {len}-byte record runs past the payload's end",
                    i / UNIT
                )));
            }
            *pos = i + units_for_record(len) * UNIT;
            return Some(Ok(Unit::Other {
                ts,
                record: &units[i + UNIT..end],
            }));
        }
    };
    *pos = i + UNIT;
    Some(Ok(Unit::Elt {
        ts,
        kind,
        value,
        sp,
    }))
}

fn whole_units(units: &[u8]) -> Result<(), String> {
    if units.len().is_multiple_of(UNIT) {
        Ok(())
    } else {
        Err(format!(
            "unit payload of {} bytes is not a whole number of {UNIT}-byte units",
            units.len()
        ))
    }
}

/// Checks a unit payload as [`units_to_records`] would and counts its records, without
/// converting it (for readers that take the units as they are, see [`next_unit`]).
pub fn validate(units: &[u8]) -> Result<u32, String> {
    whole_units(units)?;
    let mut pos = 0;
    let mut count = 0u32;
    while let Some(u) = next_unit(units, &mut pos) {
        if let Unit::Other { record, .. } = u?
            && !crate::encode::is_one_record(record)
        {
            return Err(format!(
                "unit {}: malformed {}-byte record",
                pos / UNIT - units_for_record(record.len()),
                record.len()
            ));
        }
        count += 1;
    }
    Ok(count)
}

/// Appends the records of a unit payload to `out`, with timestamp deltas starting from
/// `*running_ts` (left at the last record's timestamp). Returns the number of records.
/// A malformed payload is an error naming the unit; records before it stay in `out`.
pub fn units_to_records(
    units: &[u8],
    running_ts: &mut u64,
    out: &mut Vec<u8>,
) -> Result<u32, String> {
    whole_units(units)?;
    out.reserve(units.len() / UNIT * ELT_OUT_MAX + ELT_RECORD_MAX);
    let mut pos = 0;
    let mut count = 0u32;
    while let Some(u) = next_unit(units, &mut pos) {
        if let Err(len) = append_record(u?, running_ts, out) {
            return Err(format!(
                "unit {}: malformed {len}-byte record",
                pos / UNIT - units_for_record(len)
            ));
        }
        count += 1;
    }
    Ok(count)
}

/// Appends `unit` to `out` as an ordinary record whose timestamp is the delta from
/// `*running_ts`, then moves `*running_ts` to the unit's. `false` (nothing appended) for a
/// framed record too malformed to rebase. Shared by the 16-byte units and the compact
/// words (`compact::to_records`).
#[inline]
pub(crate) fn append_record(
    unit: Unit<'_>,
    running_ts: &mut u64,
    out: &mut Vec<u8>,
) -> Result<(), usize> {
    match unit {
        Unit::Other { ts, record } => {
            if !rebase_ts(out, record, ts.wrapping_sub(*running_ts)) {
                return Err(record.len());
            }
            *running_ts = ts;
        }
        Unit::Elt {
            ts,
            kind,
            value,
            sp,
        } => {
            let mut buf = [0u8; ELT_RECORD_MAX];
            let n = encode_elt(
                &mut buf,
                kind,
                ts.wrapping_sub(*running_ts),
                u64::from(value),
                u64::from(sp),
            );
            // A fixed-size copy (no memmove call for a handful of bytes), then cut back.
            let len = out.len();
            out.extend_from_slice(&buf);
            out.truncate(len + n);
            *running_ts = ts;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Event, Records, encode};

    fn unit(ts: u64, tag: u32, sp: u32) -> Vec<u8> {
        let mut u = ts.to_le_bytes().to_vec();
        u.extend_from_slice(&tag.to_le_bytes());
        u.extend_from_slice(&sp.to_le_bytes());
        u
    }

    fn other(ts: u64, ev: &Event<'_>) -> Vec<u8> {
        let mut rec = Vec::new();
        encode(&mut rec, 0, ev);
        let mut u = unit(ts, TAG_OTHER | rec.len() as u32, 0);
        let padded = rec.len().div_ceil(UNIT) * UNIT;
        rec.resize(padded, 0xAB);
        u.extend_from_slice(&rec);
        u
    }

    #[test]
    fn units_become_the_same_records_as_direct_encoding() {
        let name = Event::ThreadName {
            thread: 3,
            name: "a thread with a longer name".into(),
        };
        let mut payload = unit(1000, TAG_ENTER | 5, 0x7fff_0010);
        payload.extend(other(1010, &name));
        payload.extend(unit(1300, TAG_LEAVE | 5, 0x7fff_0010));
        payload.extend(unit(1301, TAG_TAILCALL | (TAG_VALUE_MAX - 1), u32::MAX));
        payload.extend(unit(0, TAG_OTHER | PAD, 0));
        payload.extend(unit(9999, TAG_ENTER | 1, 1)); // after the pad: ignored

        let mut out = Vec::new();
        let mut ts = 900;
        assert_eq!(units_to_records(&payload, &mut ts, &mut out), Ok(4));
        assert_eq!(ts, 1301);
        let got: Vec<_> = Records::new(&out, 900)
            .map(|r| {
                let r = r.unwrap();
                (r.ts, r.event.into_owned())
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    1000,
                    Event::Enter {
                        function: 5,
                        sp: 0x7fff_0010
                    }
                ),
                (1010, name.into_owned()),
                (
                    1300,
                    Event::Leave {
                        function: 5,
                        sp: 0x7fff_0010
                    }
                ),
                (
                    1301,
                    Event::Tailcall {
                        function: u64::from(TAG_VALUE_MAX - 1),
                        sp: u64::from(u32::MAX)
                    }
                ),
            ]
        );
    }

    #[test]
    fn malformed_payloads_are_errors() {
        let mut out = Vec::new();
        let mut ts = 0;
        assert!(
            units_to_records(&[0; 17], &mut ts, &mut out)
                .unwrap_err()
                .contains("whole number")
        );
        let past_end = unit(1, TAG_OTHER | 40, 0);
        assert!(
            units_to_records(&past_end, &mut ts, &mut out)
                .unwrap_err()
                .contains("past the payload")
        );
        let mut bad = unit(1, TAG_OTHER | 3, 0);
        bad.extend_from_slice(&[19, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert!(
            units_to_records(&bad, &mut ts, &mut out)
                .unwrap_err()
                .contains("malformed")
        );
    }
}
