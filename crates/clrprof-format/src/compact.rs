//! Compact unit payloads (format 1.3): blocks flagged [`FLAG_COMPACT`](crate::FLAG_COMPACT)
//! hold the agent's per-thread ring memory as it is, in 8-byte words, so that a traced
//! call (an Enter and a Leave) costs 16 bytes of ring, page cache and file instead of 32.
//!
//! Every word is a `u64` LE; its high half is the *tag*, its low half `lo`. The top two
//! bits of the tag say what the word is:
//!
//! ```text
//! tag bits 30–31 = 0, 1, 2: a short Enter, Leave or Tailcall (one word)
//!     bits 12–29  function index (18 bits)
//!     bits  0–11  caller-SP delta: (sp − previous sp) / 8 + 2048
//!     lo          low 32 bits of the timestamp
//! tag bits 30–31 = 3, bits 0–29 = value:
//!     PAD (2^30 − 1)          the rest of the payload is unused
//!     TIME (2^30 − 2)         lo = the high 32 bits of the following timestamps
//!     LONG_* (2^30 − 3 … − 5) an Enter, Leave or Tailcall that does not fit a short word:
//!                             lo = low 32 bits of its timestamp; the next word holds the
//!                             function index (low half) and the caller SP's low 32 bits
//!                             (high half)
//!     n (any other)           a record of n bytes: the next word is its absolute
//!                             timestamp, then the record (encoded with a placeholder
//!                             timestamp) padded to whole words
//! ```
//!
//! ELT words are relative to a per-thread *chain*: the high half of the timestamp (set by
//! `TIME`) and the last caller SP (set by every ELT word). The chain runs on across a
//! thread's blocks, in file order; the agent writes a `TIME` word and a long word at least
//! every half ring, so a reader that lost a block is back in step soon after.

use crate::encode::ELT_RECORD_MAX;
use crate::phases::EltKind;

/// Size of a word.
pub const WORD: usize = 8;
/// Tag kinds (top two bits of the high half).
pub const TAG_ENTER: u32 = 0;
pub const TAG_LEAVE: u32 = 1 << 30;
pub const TAG_TAILCALL: u32 = 2 << 30;
pub const TAG_OTHER: u32 = 3 << 30;
/// Largest value of an "other" tag.
pub const VALUE_MAX: u32 = (1 << 30) - 1;
/// Padding: the rest of the payload is unused.
pub const PAD: u32 = VALUE_MAX;
/// `lo` holds the high 32 bits of the timestamps that follow.
pub const TIME: u32 = VALUE_MAX - 1;
/// Long Enter, Leave and Tailcall (two words).
pub const LONG_ENTER: u32 = VALUE_MAX - 2;
pub const LONG_LEAVE: u32 = VALUE_MAX - 3;
pub const LONG_TAILCALL: u32 = VALUE_MAX - 4;
/// Records are shorter than this.
pub const RECORD_LEN_LIMIT: u32 = VALUE_MAX - 4;
/// Bits of a short word's function index, and the largest index it holds.
pub const FUNCTION_BITS: u32 = 18;
pub const SHORT_FUNCTION_MAX: u32 = (1 << FUNCTION_BITS) - 1;
/// Bits of a short word's SP delta, its bias and scale (SP deltas are in 8-byte steps).
pub const SP_BITS: u32 = 12;
pub const SP_BIAS: i32 = 1 << (SP_BITS - 1);
pub const SP_SHIFT: u32 = 3;

/// A thread's decoding state, carried from one of its blocks to the next.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Chain {
    /// High 32 bits of ELT timestamps.
    pub hi: u32,
    /// Low 32 bits of the last ELT event's caller SP.
    pub sp: u32,
}

/// The tag of a short word, or `None` when the event needs a long one.
#[inline]
pub fn short_tag(kind: EltKind, function: u32, sp: u32, chain_sp: u32) -> Option<u32> {
    let delta = sp.wrapping_sub(chain_sp) as i32;
    if delta & ((1 << SP_SHIFT) - 1) != 0 || function > SHORT_FUNCTION_MAX {
        return None;
    }
    let biased = (delta >> SP_SHIFT).wrapping_add(SP_BIAS);
    if !(0..(1 << SP_BITS)).contains(&biased) {
        return None;
    }
    Some(kind_tag(kind) | (function << SP_BITS) | biased as u32)
}

/// The tag kind bits of an ELT kind.
#[inline]
pub fn kind_tag(kind: EltKind) -> u32 {
    match kind {
        EltKind::Enter => TAG_ENTER,
        EltKind::Leave => TAG_LEAVE,
        EltKind::Tailcall => TAG_TAILCALL,
    }
}

/// The "other" value of a long ELT word of `kind`.
#[inline]
pub fn long_value(kind: EltKind) -> u32 {
    match kind {
        EltKind::Enter => LONG_ENTER,
        EltKind::Leave => LONG_LEAVE,
        EltKind::Tailcall => LONG_TAILCALL,
    }
}

/// Words taken by a record of `len` bytes (its two header words included).
#[inline]
pub fn words_for_record(len: usize) -> usize {
    2 + len.div_ceil(WORD)
}

/// Builds one word.
#[inline]
pub fn word(tag: u32, lo: u32) -> u64 {
    (u64::from(tag) << 32) | u64::from(lo)
}

#[inline]
fn word_at(p: &[u8], i: usize) -> Option<u64> {
    Some(u64::from_le_bytes(p.get(i..i + WORD)?.try_into().ok()?))
}

/// The call a short word's tag holds (top two bits 0, 1 or 2), or `None` for an "other"
/// word (3): one decoding for [`next_unit`] and [`next_call`].
#[inline(always)]
fn short_kind(tag: u32) -> Option<EltKind> {
    match tag >> 30 {
        0 => Some(EltKind::Enter),
        1 => Some(EltKind::Leave),
        2 => Some(EltKind::Tailcall),
        _ => None,
    }
}

/// The call of a long word's value (one of `LONG_TAILCALL..=LONG_ENTER`).
#[inline(always)]
fn long_kind(value: u32) -> EltKind {
    match value {
        LONG_ENTER => EltKind::Enter,
        LONG_LEAVE => EltKind::Leave,
        _ => EltKind::Tailcall,
    }
}

/// A short word's `(ts, function index, sp)`, the chain's SP moved by its delta.
#[inline(always)]
fn short_call(tag: u32, lo: u32, chain: &mut Chain) -> (u64, u32, u32) {
    let delta = ((tag & ((1 << SP_BITS) - 1)) as i32 - SP_BIAS) << SP_SHIFT;
    chain.sp = chain.sp.wrapping_add(delta as u32);
    let ts = (u64::from(chain.hi) << 32) | u64::from(lo);
    (ts, (tag >> SP_BITS) & SHORT_FUNCTION_MAX, chain.sp)
}

/// A long word's `(ts, function index, sp)` from its `lo` and its second word, the chain's
/// SP set from it.
#[inline(always)]
fn long_call(lo: u32, second: u64, chain: &mut Chain) -> (u64, u32, u32) {
    chain.sp = (second >> 32) as u32;
    let ts = (u64::from(chain.hi) << 32) | u64::from(lo);
    (ts, second as u32, chain.sp)
}

/// Reads the event at `*pos`, advancing the chain, and moves past it. `None` at the end
/// of the payload or at a pad word. Reuses [`units::Unit`](crate::units::Unit).
#[inline]
pub fn next_unit<'a>(
    p: &'a [u8],
    pos: &mut usize,
    chain: &mut Chain,
) -> Option<Result<crate::units::Unit<'a>, String>> {
    use crate::units::Unit;
    loop {
        let i = *pos;
        let w = word_at(p, i)?;
        let (tag, lo) = ((w >> 32) as u32, w as u32);
        let kind = match short_kind(tag) {
            Some(kind) => kind,
            None => {
                let value = tag & VALUE_MAX;
                match value {
                    PAD => {
                        *pos = p.len();
                        return None;
                    }
                    TIME => {
                        chain.hi = lo;
                        *pos = i + WORD;
                        continue;
                    }
                    LONG_TAILCALL..=LONG_ENTER => {
                        let Some(second) = word_at(p, i + WORD) else {
                            *pos = p.len();
                            return Some(Err(format!(
                                "word {}: a long call event runs past the payload's end",
                                i / WORD
                            )));
                        };
                        let (ts, function, sp) = long_call(lo, second, chain);
                        *pos = i + 2 * WORD;
                        return Some(Ok(Unit::Elt {
                            ts,
                            kind: long_kind(value),
                            value: function,
                            sp,
                        }));
                    }
                    len => {
                        let len = len as usize;
                        let end = i + 2 * WORD + len;
                        let ts = word_at(p, i + WORD);
                        let (Some(ts), true) = (ts, end <= p.len()) else {
                            *pos = p.len();
                            return Some(Err(format!(
                                "word {}: a {len}-byte record runs past the payload's end",
                                i / WORD
                            )));
                        };
                        *pos = i + words_for_record(len) * WORD;
                        return Some(Ok(Unit::Other {
                            ts,
                            record: &p[i + 2 * WORD..end],
                        }));
                    }
                }
            }
        };
        let (ts, function, sp) = short_call(tag, lo, chain);
        *pos = i + WORD;
        return Some(Ok(Unit::Elt {
            ts,
            kind,
            value: function,
            sp,
        }));
    }
}

/// [`next_unit`] for the calls alone, for a reader's tight loop: the Enter, Leave or
/// Tailcall at `*pos` as `(ts, kind, function index, sp)` (after any `TIME` words), or
/// `None`, with `*pos` left at the word, when the next thing there is not one (a record,
/// a pad, damage, the end): [`next_unit`] takes it from there.
#[inline(always)]
pub fn next_call(p: &[u8], pos: &mut usize, chain: &mut Chain) -> Option<(u64, EltKind, u32, u32)> {
    loop {
        let i = *pos;
        let w = word_at(p, i)?;
        let (tag, lo) = ((w >> 32) as u32, w as u32);
        let kind = match short_kind(tag) {
            Some(kind) => kind,
            None => {
                let value = tag & VALUE_MAX;
                match value {
                    TIME => {
                        chain.hi = lo;
                        *pos = i + WORD;
                        continue;
                    }
                    LONG_TAILCALL..=LONG_ENTER => {
                        let second = word_at(p, i + WORD)?;
                        let (ts, function, sp) = long_call(lo, second, chain);
                        *pos = i + 2 * WORD;
                        return Some((ts, long_kind(value), function, sp));
                    }
                    _ => return None,
                }
            }
        };
        let (ts, function, sp) = short_call(tag, lo, chain);
        *pos = i + WORD;
        return Some((ts, kind, function, sp));
    }
}

/// Calls seen by [`skip_calls`]: how many, and the first and last of their timestamps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SkippedCalls {
    pub count: u64,
    pub first_ts: u64,
    pub last_ts: u64,
}

/// [`next_unit`] for a reader that does not want the calls: moves past Enter, Leave and
/// Tailcall words (counting them in `skipped`) to the next record, with a tight loop
/// that decodes only what a record's timestamp needs (the chain's high half; SPs are
/// not followed, so `chain.sp` is stale afterwards).
#[inline]
pub fn skip_calls<'a>(
    p: &'a [u8],
    pos: &mut usize,
    chain: &mut Chain,
    skipped: &mut SkippedCalls,
) -> Option<Result<crate::units::Unit<'a>, String>> {
    let (mut n, mut last_lo, mut seen) = (0u64, 0u32, false);
    let mut i = *pos;
    let flush = |n: u64, seen: bool, hi: u32, lo: u32, skipped: &mut SkippedCalls| {
        if seen {
            let ts = (u64::from(hi) << 32) | u64::from(lo);
            skipped.count += n;
            skipped.last_ts = skipped.last_ts.max(ts);
        }
    };
    while let Some(w) = word_at(p, i) {
        let tag = (w >> 32) as u32;
        if tag >> 30 != 3 {
            let lo = w as u32;
            if !seen {
                let ts = (u64::from(chain.hi) << 32) | u64::from(lo);
                skipped.first_ts = skipped.first_ts.min(ts);
                seen = true;
            }
            last_lo = lo;
            n += 1;
            i += WORD;
            continue;
        }
        match tag & VALUE_MAX {
            TIME => {
                flush(n, seen, chain.hi, last_lo, skipped);
                (n, seen) = (0, false);
                chain.hi = w as u32;
                i += WORD;
            }
            LONG_TAILCALL..=LONG_ENTER => {
                let lo = w as u32;
                let ts = (u64::from(chain.hi) << 32) | u64::from(lo);
                skipped.first_ts = skipped.first_ts.min(ts);
                seen = true;
                last_lo = lo;
                n += 1;
                i += 2 * WORD;
            }
            _ => {
                flush(n, seen, chain.hi, last_lo, skipped);
                *pos = i;
                return next_unit(p, pos, chain);
            }
        }
    }
    flush(n, seen, chain.hi, last_lo, skipped);
    *pos = p.len();
    None
}

fn whole_words(p: &[u8]) -> Result<(), String> {
    if p.len().is_multiple_of(WORD) {
        Ok(())
    } else {
        Err(format!(
            "compact payload of {} bytes is not a whole number of {WORD}-byte words",
            p.len()
        ))
    }
}

/// Checks a compact payload's structure as [`to_records`] would and counts its events,
/// without converting it (the chain is not needed for that; call words are only counted).
pub fn validate(p: &[u8]) -> Result<u32, String> {
    whole_words(p)?;
    let (mut i, mut count) = (0, 0u32);
    while let Some(w) = word_at(p, i) {
        let tag = (w >> 32) as u32;
        if tag >> 30 != 3 {
            count += 1;
            i += WORD;
            continue;
        }
        match tag & VALUE_MAX {
            PAD => break,
            TIME => i += WORD,
            LONG_TAILCALL..=LONG_ENTER => {
                if i + 2 * WORD > p.len() {
                    return Err(format!(
                        "word {}: a long call event runs past the payload's end",
                        i / WORD
                    ));
                }
                count += 1;
                i += 2 * WORD;
            }
            len => {
                let len = len as usize;
                let end = i + 2 * WORD + len;
                if end > p.len() {
                    return Err(format!(
                        "word {}: a {len}-byte record runs past the payload's end",
                        i / WORD
                    ));
                }
                if !crate::encode::is_one_record(&p[i + 2 * WORD..end]) {
                    return Err(format!("word {}: malformed {len}-byte record", i / WORD));
                }
                count += 1;
                i += words_for_record(len) * WORD;
            }
        }
    }
    Ok(count)
}

/// Appends the records of a compact payload to `out`, with timestamp deltas from
/// `*running_ts` (left at the last record's timestamp), advancing `chain`. Returns the
/// number of records; a malformed payload is an error (records before it stay in `out`).
pub fn to_records(
    p: &[u8],
    chain: &mut Chain,
    running_ts: &mut u64,
    out: &mut Vec<u8>,
) -> Result<u32, String> {
    whole_words(p)?;
    out.reserve(p.len() / WORD * crate::units::ELT_OUT_MAX + ELT_RECORD_MAX);
    let (mut pos, mut count) = (0, 0u32);
    while let Some(u) = next_unit(p, &mut pos, chain) {
        if let Err(len) = crate::units::append_record(u?, running_ts, out) {
            return Err(format!(
                "malformed {len}-byte record before word {}",
                pos / WORD
            ));
        }
        count += 1;
    }
    Ok(count)
}

/// Builds compact payloads the way the agent's ring does (tests, golden files, tools):
/// short words when they fit, long ones otherwise, `TIME` words when the high half of the
/// timestamp changes.
#[derive(Debug, Default)]
pub struct CompactWriter {
    pub bytes: Vec<u8>,
    pub chain: Chain,
    started: bool,
}

impl CompactWriter {
    pub fn new() -> CompactWriter {
        CompactWriter::default()
    }

    fn push(&mut self, w: u64) {
        self.bytes.extend_from_slice(&w.to_le_bytes());
    }

    fn time(&mut self, ts: u64) {
        let hi = (ts >> 32) as u32;
        if !self.started || hi != self.chain.hi {
            self.push(word(TAG_OTHER | TIME, hi));
            self.chain.hi = hi;
            self.started = true;
        }
    }

    /// One Enter, Leave or Tailcall.
    pub fn elt(&mut self, ts: u64, kind: EltKind, function: u32, sp: u32) {
        self.time(ts);
        match short_tag(kind, function, sp, self.chain.sp) {
            Some(tag) => self.push(word(tag, ts as u32)),
            None => {
                self.push(word(TAG_OTHER | long_value(kind), ts as u32));
                self.push(word(sp, function));
            }
        }
        self.chain.sp = sp;
    }

    /// One record, encoded by [`encode`](crate::encode) with any timestamp delta (it is
    /// replaced by `ts`).
    pub fn record(&mut self, ts: u64, record: &[u8]) {
        self.push(word(TAG_OTHER | record.len() as u32, 0));
        self.push(ts);
        self.bytes.extend_from_slice(record);
        let pad = record.len().div_ceil(WORD) * WORD - record.len();
        self.bytes.extend(std::iter::repeat_n(0, pad));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Event, Records, encode};

    #[test]
    fn compact_words_become_the_same_records_as_direct_encoding() {
        let name = Event::ThreadName {
            thread: 3,
            name: "a thread with a longer name".into(),
        };
        let mut rec = Vec::new();
        encode(&mut rec, 0, &name);
        let mut w = CompactWriter::new();
        let calls = [
            (1000u64, EltKind::Enter, 5u32, 0x7fff_0010u32),
            (1100, EltKind::Enter, 6, 0x7fff_0010 - 48),
            (1200, EltKind::Leave, 6, 0x7fff_0010 - 48),
            (
                1300,
                EltKind::Enter,
                SHORT_FUNCTION_MAX + 1,
                0x7fff_0010 - 48,
            ), // long: index
            (1400, EltKind::Leave, 7, 0x7fff_0010 - 40_000), // long: SP far
            (1500, EltKind::Leave, 7, 0x7fff_0010 - 40_004), // long: unaligned
            ((5 << 32) + 1, EltKind::Tailcall, 5, 0x7fff_0010), // new high half
        ];
        let mut want = Vec::new();
        for (i, &(ts, kind, f, sp)) in calls.iter().enumerate() {
            w.elt(ts, kind, f, sp);
            let (function, sp) = (u64::from(f), u64::from(sp));
            want.push((
                ts,
                match kind {
                    EltKind::Enter => Event::Enter { function, sp },
                    EltKind::Leave => Event::Leave { function, sp },
                    EltKind::Tailcall => Event::Tailcall { function, sp },
                },
            ));
            if i == 1 {
                w.record(1150, &rec);
                want.push((1150, name.clone().into_owned()));
            }
        }
        let short = w.bytes.len();
        w.bytes
            .extend_from_slice(&word(TAG_OTHER | PAD, 0).to_le_bytes());
        w.bytes.extend_from_slice(&word(TAG_ENTER, 1).to_le_bytes()); // after the pad
        assert_eq!(validate(&w.bytes), Ok(want.len() as u32));

        let (mut out, mut ts, mut chain) = (Vec::new(), 900, Chain::default());
        assert_eq!(
            to_records(&w.bytes, &mut chain, &mut ts, &mut out),
            Ok(want.len() as u32)
        );
        let got: Vec<_> = Records::new(&out, 900)
            .map(|r| {
                let r = r.unwrap();
                (r.ts, r.event.into_owned())
            })
            .collect();
        assert_eq!(got, want);
        // TIME, long (first SP), 2 short, the record (2 + 4 words), 3 long, TIME, long
        // (back from an unaligned SP).
        assert_eq!(short, (1 + 2 + 2 + 6 + 6 + 1 + 2) * WORD);
    }

    #[test]
    fn skipping_calls_counts_them_and_keeps_the_records() {
        let mut w = CompactWriter::new();
        let mut rec = Vec::new();
        encode(&mut rec, 0, &Event::ThreadCreated { thread: 9 });
        w.elt(100, EltKind::Enter, 1, 0x1000);
        w.elt(110, EltKind::Enter, 2, 0x0f00);
        w.record(120, &rec);
        w.elt(130, EltKind::Leave, SHORT_FUNCTION_MAX + 5, 0x0f00); // long
        w.elt((7 << 32) + 5, EltKind::Leave, 1, 0x1000); // after a TIME word
        w.record((7 << 32) + 6, &rec);
        let (mut pos, mut chain) = (0, Chain::default());
        let mut s = SkippedCalls {
            count: 0,
            first_ts: u64::MAX,
            last_ts: 0,
        };
        let mut records = Vec::new();
        while let Some(u) = skip_calls(&w.bytes, &mut pos, &mut chain, &mut s) {
            if let crate::units::Unit::Other { ts, .. } = u.unwrap() {
                records.push(ts);
            }
        }
        assert_eq!(records, [120, (7 << 32) + 6]);
        assert_eq!(
            s,
            SkippedCalls {
                count: 4,
                first_ts: 100,
                last_ts: (7 << 32) + 5
            }
        );
    }

    #[test]
    fn next_call_reads_the_calls_and_stops_before_anything_else() {
        let mut rec = Vec::new();
        encode(&mut rec, 0, &Event::ThreadCreated { thread: 9 });
        let mut w = CompactWriter::new();
        w.elt(100, EltKind::Enter, 1, 0x1000);
        w.elt(110, EltKind::Enter, SHORT_FUNCTION_MAX + 3, 0x0f00); // long
        w.elt((7 << 32) + 5, EltKind::Leave, 1, 0x1000); // after a TIME word
        w.record(120, &rec);
        w.elt((7 << 32) + 9, EltKind::Tailcall, 2, 0x1000);
        let long_at = w.bytes.len();
        w.elt(
            (7 << 32) + 10,
            EltKind::Enter,
            SHORT_FUNCTION_MAX + 4,
            0x0f00,
        );
        let (mut pos, mut chain) = (0, Chain::default());
        let mut got = Vec::new();
        while let Some(c) = next_call(&w.bytes, &mut pos, &mut chain) {
            got.push(c);
        }
        assert_eq!(
            got,
            [
                (100, EltKind::Enter, 1, 0x1000),
                (110, EltKind::Enter, SHORT_FUNCTION_MAX + 3, 0x0f00),
                ((7 << 32) + 5, EltKind::Leave, 1, 0x1000),
            ]
        );
        // At the record: `next_unit` reads it from the same place and chain.
        let at = pos;
        assert!(matches!(
            next_unit(&w.bytes, &mut pos, &mut chain),
            Some(Ok(crate::units::Unit::Other { ts: 120, .. }))
        ));
        assert!(pos > at);
        assert_eq!(
            next_call(&w.bytes, &mut pos, &mut chain),
            Some(((7 << 32) + 9, EltKind::Tailcall, 2, 0x1000))
        );
        // A long word cut in half is left to `next_unit`, which reports it.
        let mut cut = w.bytes[..long_at + WORD].to_vec();
        let before = pos;
        assert_eq!(next_call(&cut, &mut pos, &mut chain), None);
        assert_eq!(pos, before);
        assert!(matches!(
            next_unit(&cut, &mut pos, &mut chain),
            Some(Err(e)) if e.contains("past the payload")
        ));
        cut.clear();
        assert_eq!(next_call(&cut, &mut 0, &mut chain), None);
    }

    #[test]
    fn malformed_compact_payloads_are_errors() {
        let (mut out, mut ts, mut chain) = (Vec::new(), 0, Chain::default());
        assert!(
            to_records(&[0; 9], &mut chain, &mut ts, &mut out)
                .unwrap_err()
                .contains("whole number")
        );
        let past_end = word(TAG_OTHER | 40, 0).to_le_bytes();
        assert!(
            validate(&past_end)
                .unwrap_err()
                .contains("past the payload")
        );
        let long = word(TAG_OTHER | LONG_ENTER, 0).to_le_bytes();
        assert!(validate(&long).unwrap_err().contains("past the payload"));
    }
}
