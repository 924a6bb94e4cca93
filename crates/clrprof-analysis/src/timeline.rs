//! One timeline: every record of every block, ordered by time, timestamps in ns since
//! the trace began. Call records (trace mode's Enter/Leave/Tailcall, millions per
//! second) are not held on it: [`Trace::for_each_call`] decodes them again from the file
//! when they are needed, so that memory does not grow with the number of calls.

use clrprof_format::{
    ClockConverter, DecodedEvent, Event, ExceptionPhase, FormatError, Header, TraceReader,
};

/// An event with its thread and its time in nanoseconds since the trace started.
#[derive(Debug, Clone)]
pub struct TimedEvent<'a> {
    pub ns: u64,
    pub os_tid: u64,
    pub event: Event<'a>,
}

/// A decoded trace.
pub struct Trace<'a> {
    pub header: Header,
    /// Every record except the call records, ordered by time.
    pub events: Vec<TimedEvent<'a>>,
    /// Problems met while reading (truncation, corruption); the events before them are kept.
    pub warnings: Vec<String>,
    /// Span of the trace in ns (first to last event, calls included).
    pub duration_ns: u64,
    /// Call records (Enter, Leave, Tailcall) in the file; see [`Trace::for_each_call`].
    pub call_records: u64,
    bytes: &'a [u8],
    clock: ClockConverter,
}

fn is_call(e: &Event<'_>) -> bool {
    matches!(
        e,
        Event::Enter { .. }
            | Event::Leave { .. }
            | Event::Tailcall { .. }
            | Event::CallCounts { .. }
    )
}

impl<'a> Trace<'a> {
    /// Decodes `bytes`; fails only when the file is not a readable clrprof trace at all.
    pub fn load(bytes: &'a [u8]) -> Result<Trace<'a>, FormatError> {
        let mut reader = TraceReader::new(bytes)?;
        let header = reader.header().clone();
        let mut kept: Vec<DecodedEvent<'a>> = Vec::new();
        let mut syncs: Vec<(u64, u64)> = Vec::new();
        let (mut first, mut last) = (u64::MAX, 0u64);
        let mut call_records = 0u64;
        // Trace mode's call units are only counted here (with their first and last
        // timestamps); `for_each_call` decodes them in a pass of their own.
        for d in reader.events_without_calls() {
            first = first.min(d.ts);
            last = last.max(d.ts);
            if is_call(&d.event) {
                call_records += 1;
                continue;
            }
            // Heap snapshot batches are read on their own (`heap::snapshot::load`).
            if matches!(d.event, Event::HeapObjects { .. } | Event::HeapRoots { .. }) {
                continue;
            }
            if let Event::ClockSync { mono_ns, .. } = &d.event {
                syncs.push((d.ts, *mono_ns));
            }
            kept.push(d);
        }
        let st = reader.stats();
        call_records += st.skipped_calls;
        if st.skipped_calls > 0 {
            first = first.min(st.calls_first_ts);
            last = last.max(st.calls_last_ts);
        }
        let warnings = reader.warnings().iter().map(|w| w.to_string()).collect();
        let earliest = if first == u64::MAX { 0 } else { first };
        let clock =
            ClockConverter::from_clock_info(&header.meta.clock, &syncs).with_origin_ticks(earliest);
        let mut events: Vec<TimedEvent<'a>> = kept
            .into_iter()
            .map(|d| TimedEvent {
                ns: clock.to_ns(d.ts),
                os_tid: d.os_tid,
                event: d.event,
            })
            .collect();
        // Stable: events of one thread keep their recorded order on equal timestamps.
        events.sort_by_key(|e| e.ns);
        let duration_ns = if first == u64::MAX {
            0
        } else {
            clock.to_ns(last) - clock.to_ns(first)
        };
        Ok(Trace {
            header,
            events,
            warnings,
            duration_ns,
            call_records,
            bytes,
            clock,
        })
    }

    /// Calls `f` with every call record and every exception catch (what the call-tree
    /// rebuild needs), decoded again from the file: each thread's in recorded order,
    /// threads interleaved as the file holds them. Problems in the file were reported by
    /// [`Trace::load`] already.
    pub fn for_each_call(&self, mut f: impl FnMut(&TimedEvent<'a>)) {
        if self.call_records == 0 {
            return;
        }
        let Ok(mut reader) = TraceReader::new(self.bytes) else {
            return;
        };
        // `for_each`, not `for`: the reader hands a block's calls over in a tight loop.
        reader.events().for_each(|d| {
            let wanted = is_call(&d.event)
                || matches!(
                    d.event,
                    Event::ExceptionPhase {
                        phase: ExceptionPhase::CatcherEnter,
                        ..
                    }
                );
            if wanted {
                f(&TimedEvent {
                    ns: self.clock.to_ns(d.ts),
                    os_tid: d.os_tid,
                    event: d.event,
                });
            }
        });
    }
}
