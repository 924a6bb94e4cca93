//! The event iterator: every record of every intact block, in file order.

use super::TraceReader;
use crate::decoded::{DecodedCall, DecodedEvent};
use crate::events::{Event, kind_name};
use crate::records::{Record, RecordError, Records};
use crate::scan::{Scanner, Step};
use crate::warning::{Warning, Warnings};

/// Iterator over the events of a trace; see [`TraceReader::events`].
pub struct Events<'r, 'a> {
    reader: &'r mut TraceReader<'a>,
    scanner: Scanner<'a>,
    block: Option<OpenBlock<'a>>,
    /// Decompressed records of the current block, when it is compressed (reused).
    buf: Vec<u8>,
    /// Enter/Leave/Tailcall units of unit and compact blocks are counted (with their
    /// first and last timestamps, in [`ReadStats`](crate::ReadStats)) instead of returned.
    skip_calls: bool,
    finished: bool,
    /// The second event of a record that holds two (`EnterArgs`, `ReturnLeave`), returned
    /// next.
    pending: Option<DecodedEvent<'a>>,
    /// Only the blocks of the OS threads this keeps are read ([`Events::of_threads`]).
    threads: Option<&'r (dyn Fn(u64) -> bool + Sync)>,
}

struct OpenBlock<'a> {
    offset: u64,
    os_tid: u64,
    declared: u32,
    found: u32,
    truncated: bool,
    pos: usize,
    /// Absolute timestamp of the last record read.
    ts: u64,
    /// The records, when stored uncompressed (else they are in `Events::buf`).
    borrowed: Option<&'a [u8]>,
    /// The payload is ring units (trace mode), read as they are: an Enter or Leave unit
    /// becomes its event without being encoded as a record and decoded again.
    units: bool,
    /// The payload is compact ring words (1.3), read as they are with the thread's chain.
    compact: bool,
    chain: crate::compact::Chain,
}

impl<'r, 'a> Events<'r, 'a> {
    pub(crate) fn new(scanner: Scanner<'a>, reader: &'r mut TraceReader<'a>) -> Events<'r, 'a> {
        Events {
            reader,
            scanner,
            block: None,
            buf: Vec::new(),
            skip_calls: false,
            finished: false,
            pending: None,
            threads: None,
        }
    }

    /// Reads only the blocks of the OS threads `keep` keeps, and skips the others without
    /// opening them: a worker's share of a pass that shares the threads out. Each kept
    /// thread's events come as [`Iterator::for_each`] gives them; the warnings and
    /// counters then describe the kept blocks only.
    pub fn of_threads(mut self, keep: &'r (dyn Fn(u64) -> bool + Sync)) -> Self {
        self.threads = Some(keep);
        self
    }

    /// Notes what the end-of-file check needs from an event about to be returned.
    fn observe(&mut self, e: &DecodedEvent<'_>) {
        let end = &mut self.reader.end;
        end.last_ts = Some(end.last_ts.map_or(e.ts, |t| t.max(e.ts)));
        match e.event {
            Event::TraceEnd { .. } => end.end_seen = true,
            Event::ClockSync { mono_ns, .. } => {
                end.first_sync.get_or_insert((e.ts, mono_ns));
                end.last_sync = Some((e.ts, mono_ns));
            }
            _ => {}
        }
    }

    /// At the end of the file: a trace whose writer ends it with a `TraceEnd` record and
    /// that has none was cut short; says so, with the time of its last event. A growing
    /// file's bytes (a partial scan) are not its end: this notes where the scan stopped.
    fn finish(&mut self) {
        if std::mem::replace(&mut self.finished, true) {
            return;
        }
        self.reader.stopped_at = self.scanner.position();
        let end = self.reader.end;
        if self.scanner.is_partial() || end.end_seen || !self.reader.header().meta.end_record {
            return;
        }
        let stats = self.reader.stats;
        let mut last = end.last_ts;
        if stats.skipped_calls > 0 {
            last = Some(last.map_or(stats.calls_last_ts, |t| t.max(stats.calls_last_ts)));
        }
        let syncs: Vec<(u64, u64)> = end.first_sync.into_iter().chain(end.last_sync).collect();
        let clock =
            crate::ClockConverter::from_clock_info(&self.reader.header().meta.clock, &syncs);
        let last_ns = last.map(|t| if syncs.is_empty() { 0 } else { clock.to_ns(t) });
        self.reader.warnings.push(Warning::CutShort { last_ns });
    }

    /// See [`TraceReader::events_without_calls`](crate::TraceReader::events_without_calls).
    pub(crate) fn skipping_calls(mut self) -> Self {
        self.skip_calls = true;
        self
    }

    /// Opens the next intact block; false at the end of the file.
    fn next_block(&mut self) -> bool {
        loop {
            match self.scanner.next_step() {
                Step::End => return false,
                Step::Damage {
                    warning,
                    bytes_skipped,
                    block_skipped,
                } => {
                    self.reader.damage(warning, bytes_skipped, block_skipped);
                }
                Step::Block {
                    offset,
                    mut header,
                    payload,
                } => {
                    if self.threads.is_some_and(|keep| !keep(header.os_tid)) {
                        continue;
                    }
                    if let Ok(inflated) =
                        self.reader
                            .open_block(offset, &mut header, payload, &mut self.buf, true)
                    {
                        self.block = Some(OpenBlock {
                            offset: offset as u64,
                            os_tid: header.os_tid,
                            declared: header.record_count,
                            found: 0,
                            truncated: false,
                            pos: 0,
                            ts: header.base_ts,
                            borrowed: (!inflated).then_some(payload),
                            units: header.units() || header.compact(),
                            compact: header.compact(),
                            chain: self
                                .reader
                                .chains
                                .get(&header.os_tid)
                                .copied()
                                .unwrap_or_default(),
                        });
                        return true;
                    }
                }
            }
        }
    }

    /// The next event of the open unit block, `None` at its end. Enter/Leave/Tailcall
    /// units become events directly; a framed record is decoded as usual.
    fn next_unit(&mut self) -> Option<Result<DecodedEvent<'a>, RecordError>> {
        use crate::units::{Unit, next_unit};
        let skip = self.skip_calls;
        let block = self.block.as_mut()?;
        let warnings = &mut self.reader.warnings;
        let stats = &mut self.reader.stats;
        // Checked when the block was opened (`units::validate`, `compact::validate`): no
        // errors here.
        macro_rules! step {
            ($payload:expr) => {{
                let unit = if skip && block.compact {
                    let mut skipped = crate::compact::SkippedCalls {
                        count: 0,
                        first_ts: stats.calls_first_ts,
                        last_ts: stats.calls_last_ts,
                    };
                    let unit = crate::compact::skip_calls(
                        $payload,
                        &mut block.pos,
                        &mut block.chain,
                        &mut skipped,
                    );
                    stats.skipped_calls += skipped.count;
                    stats.calls_first_ts = skipped.first_ts;
                    stats.calls_last_ts = skipped.last_ts;
                    block.found = block.found.saturating_add(skipped.count as u32);
                    unit?.ok()?
                } else if block.compact {
                    crate::compact::next_unit($payload, &mut block.pos, &mut block.chain)?.ok()?
                } else {
                    next_unit($payload, &mut block.pos)?.ok()?
                };
                if skip && let Unit::Elt { ts, .. } = unit {
                    stats.skipped_calls += 1;
                    stats.calls_first_ts = stats.calls_first_ts.min(ts);
                    stats.calls_last_ts = stats.calls_last_ts.max(ts);
                    block.found = block.found.saturating_add(1);
                    continue;
                }
                unit
            }};
        }
        let decoded = match block.borrowed {
            Some(payload) => loop {
                let unit = step!(payload);
                break unit_event(unit, warnings, block.offset)?;
            },
            None => loop {
                let unit = step!(&self.buf);
                break unit_event(unit, warnings, block.offset)?
                    .map(|(ts, e)| (ts, e.into_owned()));
            },
        };
        let os_tid = block.os_tid;
        Some(decoded.map(|(ts, event)| DecodedEvent { os_tid, ts, event }))
    }

    /// Accounts for a record that could not be decoded.
    fn skip_record(&mut self, err: RecordError) {
        let Some(block) = self.block.as_mut() else {
            return;
        };
        let offset = block.offset;
        let stats = &mut self.reader.stats;
        let warnings = &mut self.reader.warnings;
        stats.records_skipped += 1;
        match err {
            RecordError::Truncated {
                offset: at,
                remaining,
            } => {
                block.truncated = true;
                warnings.push(Warning::RecordTruncated {
                    block_offset: offset,
                    record_offset: at as u64,
                    skipped: remaining as u64,
                });
            }
            RecordError::BadTimestamp {
                offset: at,
                remaining,
            } => {
                block.truncated = true;
                warnings.push(Warning::BadTimestamp {
                    block_offset: offset,
                    record_offset: at as u64,
                    skipped: remaining as u64,
                });
            }
            RecordError::UnknownKind { kind, .. } => {
                block.found = block.found.saturating_add(1);
                let name = self.reader.foreign_kinds.get(&kind).map(String::as_str);
                warnings.unknown_kind(kind, name);
            }
            RecordError::Malformed {
                kind,
                field,
                reason,
                ..
            } => {
                block.found = block.found.saturating_add(1);
                let name = kind_name(kind).unwrap_or("?");
                warnings.malformed(kind, name, offset, format!("field `{field}`: {reason}"));
            }
        }
    }

    /// Ends the current block, checking its record count.
    fn close_block(&mut self) {
        if let Some(b) = &self.block
            && b.compact
        {
            self.reader.chains.insert(b.os_tid, b.chain);
        }
        if let Some(b) = self.block.take()
            && !b.truncated
            && b.found != b.declared
        {
            self.reader.warnings.push(Warning::RecordCountMismatch {
                offset: b.offset,
                declared: b.declared,
                found: b.found,
            });
        }
    }
}

/// Where [`Events::for_each_split`] hands the events: the Enter, Leave and Tailcall events
/// apart from the rest.
pub trait SplitSink<'a> {
    /// An Enter, Leave or Tailcall, as plain numbers.
    fn call(&mut self, c: DecodedCall);
    /// Any other event.
    fn event(&mut self, e: DecodedEvent<'a>);
}

impl<'a> Events<'_, 'a> {
    /// [`for_each`](Iterator::for_each) with the Enter, Leave and Tailcall events apart:
    /// each goes to `sink.call` as a [`DecodedCall`] (no 112-byte event built, stored and
    /// dropped per call), every other event to `sink.event`, in the order `for_each`
    /// gives them.
    pub fn for_each_split(self, sink: &mut impl SplitSink<'a>) {
        struct Calls<'s, S>(&'s mut S);
        impl<'a, S: SplitSink<'a>> SplitSink<'a> for Calls<'_, S> {
            #[inline(always)]
            fn call(&mut self, c: DecodedCall) {
                self.0.call(c)
            }
            #[inline(always)]
            fn event(&mut self, e: DecodedEvent<'a>) {
                match e.call() {
                    Some(c) => self.0.call(c),
                    None => self.0.event(e),
                }
            }
        }
        self.drive(&mut Calls(sink));
    }

    /// Every event to `sink`: the calls of an uncompressed compact block (trace mode's
    /// tens of millions of events) from a tight loop; everything else from
    /// [`next`](Iterator::next), so both see the same events.
    #[inline(always)]
    fn drive(mut self, sink: &mut impl SplitSink<'a>) {
        loop {
            if !self.skip_calls
                && self.pending.is_none()
                && let Some(block) = self.block.as_mut()
                && block.compact
                && let Some(payload) = block.borrowed
            {
                let os_tid = block.os_tid;
                let mut n = 0u32;
                let mut last_ts = None;
                // Up to the first thing that is not a call (a record, the end, damage),
                // which `next` takes from the same place.
                while let Some((ts, kind, value, sp)) =
                    crate::compact::next_call(payload, &mut block.pos, &mut block.chain)
                {
                    n += 1;
                    last_ts = Some(last_ts.map_or(ts, |t: u64| t.max(ts)));
                    sink.call(DecodedCall {
                        os_tid,
                        ts,
                        kind,
                        function: u64::from(value),
                        sp: u64::from(sp),
                    });
                }
                if let Some(ts) = last_ts {
                    let end = &mut self.reader.end;
                    end.last_ts = Some(end.last_ts.map_or(ts, |t| t.max(ts)));
                }
                block.found = block.found.saturating_add(n);
                self.reader.stats.events += u64::from(n);
            }
            match self.next() {
                Some(e) => sink.event(e),
                None => return,
            }
        }
    }
}

impl<'a> Iterator for Events<'_, 'a> {
    type Item = DecodedEvent<'a>;

    /// `for_each`: the calls of an uncompressed compact block (trace mode's tens of
    /// millions of events) go to `f` from a tight loop; everything else comes from
    /// [`next`](Iterator::next), so both see the same events.
    fn for_each<F>(self, f: F)
    where
        F: FnMut(DecodedEvent<'a>),
    {
        struct One<F>(F);
        impl<'a, F: FnMut(DecodedEvent<'a>)> SplitSink<'a> for One<F> {
            #[inline(always)]
            fn call(&mut self, c: DecodedCall) {
                (self.0)(c.event())
            }
            #[inline(always)]
            fn event(&mut self, e: DecodedEvent<'a>) {
                (self.0)(e)
            }
        }
        self.drive(&mut One(f));
    }

    fn next(&mut self) -> Option<DecodedEvent<'a>> {
        if let Some(e) = self.pending.take() {
            self.reader.stats.events += 1;
            return Some(e);
        }
        loop {
            let Some(block) = self.block.as_mut() else {
                if !self.next_block() {
                    self.finish();
                    return None;
                }
                continue;
            };
            let item: Option<Result<DecodedEvent<'a>, RecordError>> = if block.units {
                self.next_unit()
            } else {
                let os_tid = block.os_tid;
                let item = match block.borrowed {
                    Some(payload) => {
                        let mut records = Records::resume(payload, block.pos, block.ts);
                        let item = records.next();
                        (block.pos, block.ts) = (records.position(), records.last_ts());
                        item
                    }
                    None => {
                        let mut records = Records::resume(&self.buf, block.pos, block.ts);
                        let item = records.next().map(|r| {
                            r.map(|rec| Record {
                                offset: rec.offset,
                                ts: rec.ts,
                                event: rec.event.into_owned(),
                                lossy_strings: rec.lossy_strings,
                            })
                        });
                        (block.pos, block.ts) = (records.position(), records.last_ts());
                        item
                    }
                };
                item.map(|r| {
                    r.map(|rec| {
                        if rec.lossy_strings > 0 {
                            self.reader
                                .warnings
                                .invalid_utf8(rec.lossy_strings, block.offset);
                        }
                        DecodedEvent {
                            os_tid,
                            ts: rec.ts,
                            event: rec.event,
                        }
                    })
                })
            };
            match item {
                None => self.close_block(),
                Some(Ok(e)) => {
                    if let Some(b) = self.block.as_mut() {
                        b.found = b.found.saturating_add(1);
                    }
                    if e.event.is_pair() {
                        return self.split(e);
                    }
                    self.reader.stats.events += 1;
                    self.observe(&e);
                    return Some(e);
                }
                Some(Err(err)) => self.skip_record(err),
            }
        }
    }
}

impl<'a> Events<'_, 'a> {
    /// A record that holds two events (one record in the block's count): the first now,
    /// the second next. Without the calls, the Enter or Leave is counted as skipped.
    #[cold]
    fn split(&mut self, e: DecodedEvent<'a>) -> Option<DecodedEvent<'a>> {
        let DecodedEvent { os_tid, ts, event } = e;
        let Ok((first, second)) = event.split_call() else {
            unreachable!("is_pair");
        };
        let (first, second) = (
            DecodedEvent {
                os_tid,
                ts,
                event: first,
            },
            DecodedEvent {
                os_tid,
                ts,
                event: second,
            },
        );
        self.observe(&first);
        if self.skip_calls {
            let stats = &mut self.reader.stats;
            stats.skipped_calls += 1;
            stats.calls_first_ts = stats.calls_first_ts.min(ts);
            stats.calls_last_ts = stats.calls_last_ts.max(ts);
            let values = if first.call().is_some() {
                second
            } else {
                first
            };
            stats.events += 1;
            return Some(values);
        }
        self.reader.stats.events += 1;
        self.pending = Some(second);
        Some(first)
    }
}

/// The event of one unit (with its real timestamp); a framed record is decoded as usual.
fn unit_event<'p>(
    unit: crate::units::Unit<'p>,
    warnings: &mut Warnings,
    block_offset: u64,
) -> Option<Result<(u64, Event<'p>), RecordError>> {
    match unit {
        crate::units::Unit::Elt {
            ts,
            kind,
            value,
            sp,
        } => Some(Ok((ts, elt_event(kind, value, sp)))),
        crate::units::Unit::Other { ts, record } => {
            Some(Records::new(record, 0).next()?.map(|rec| {
                if rec.lossy_strings > 0 {
                    warnings.invalid_utf8(rec.lossy_strings, block_offset);
                }
                (ts, rec.event)
            }))
        }
    }
}

/// The event of an Enter, Leave or Tailcall unit.
fn elt_event(kind: crate::EltKind, value: u32, sp: u32) -> Event<'static> {
    let (function, sp) = (u64::from(value), u64::from(sp));
    match kind {
        crate::EltKind::Enter => Event::Enter { function, sp },
        crate::EltKind::Leave => Event::Leave { function, sp },
        crate::EltKind::Tailcall => Event::Tailcall { function, sp },
    }
}
