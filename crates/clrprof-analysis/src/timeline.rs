//! One timeline: every record of every block, ordered by time, timestamps in ns since
//! the trace began. Call records (trace mode's Enter/Leave/Tailcall, millions per
//! second) are not held on it: [`Trace::for_each_call`] decodes them again from the file
//! when they are needed, so that memory does not grow with the number of calls. The
//! exception records (throws, their stacks, and the unwind phases: several per throw, a
//! million throws are tens of millions of records) are not held either:
//! [`Trace::for_each_exception`] decodes them again, and the report counts them in the
//! same pass as the calls.

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
    /// Exception records (thrown, stack, phase) in the file; see
    /// [`Trace::for_each_exception`].
    pub exception_records: u64,
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

/// The records of exceptions, which the timeline does not hold.
pub fn is_exception(e: &Event<'_>) -> bool {
    matches!(
        e,
        Event::ExceptionThrown { .. }
            | Event::ExceptionStack { .. }
            | Event::ExceptionPositions { .. }
            | Event::ExceptionPhase { .. }
    )
}

/// What [`Trace::for_each_streamed`] hands over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Streamed {
    /// Call records, with the exception catches (what the call-tree rebuild needs).
    pub calls: bool,
    /// Every exception record.
    pub exceptions: bool,
    /// With the call records, the values `--args` recorded (`CallArgs`, `CallReturn`,
    /// `CallUnwound`; also on the timeline), in their place among the calls, so that each
    /// goes to its own call.
    pub call_values: bool,
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
        let mut exception_records = 0u64;
        // Trace mode's call units are only counted here (with their first and last
        // timestamps); `for_each_call` decodes them in a pass of their own.
        for d in reader.events_without_calls() {
            first = first.min(d.ts);
            last = last.max(d.ts);
            if is_call(&d.event) {
                call_records += 1;
                continue;
            }
            if is_exception(&d.event) {
                exception_records += 1;
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
            exception_records,
            bytes,
            clock,
        })
    }

    /// Calls `f` with every call record and every exception catch (what the call-tree
    /// rebuild needs), decoded again from the file: each thread's in recorded order,
    /// threads interleaved as the file holds them. Problems in the file were reported by
    /// [`Trace::load`] already.
    pub fn for_each_call(&self, f: impl FnMut(&TimedEvent<'a>)) {
        self.for_each_streamed(
            Streamed {
                calls: true,
                exceptions: false,
                call_values: false,
            },
            f,
        );
    }

    /// [`Trace::for_each_call`], with the values `--args` recorded among the calls.
    pub fn for_each_call_with_values(&self, f: impl FnMut(&TimedEvent<'a>)) {
        self.for_each_streamed(
            Streamed {
                calls: true,
                exceptions: false,
                call_values: true,
            },
            f,
        );
    }

    /// Calls `f` with every exception record (thrown, stack, positions, phase), decoded again from
    /// the file: each thread's in recorded order, threads interleaved as the file holds
    /// them.
    pub fn for_each_exception(&self, f: impl FnMut(&TimedEvent<'a>)) {
        self.for_each_streamed(
            Streamed {
                calls: false,
                exceptions: true,
                call_values: false,
            },
            f,
        );
    }

    /// The records the timeline does not hold, in one pass over the file: what `which`
    /// asks for. A catch (`CatcherEnter`) is handed over once when both are asked for.
    pub fn for_each_streamed(&self, which: Streamed, mut f: impl FnMut(&TimedEvent<'a>)) {
        let calls = which.calls && self.call_records > 0;
        let exceptions = which.exceptions && self.exception_records > 0;
        if !calls && !exceptions {
            return;
        }
        let Ok(mut reader) = TraceReader::new(self.bytes) else {
            return;
        };
        let values = which.call_values;
        let wanted = |e: &Event<'_>| {
            (exceptions && is_exception(e))
                || (calls
                    && (is_call(e)
                        || (values
                            && matches!(
                                e,
                                Event::CallArgs { .. }
                                    | Event::CallReturn { .. }
                                    | Event::CallUnwound { .. }
                            ))
                        || matches!(
                            e,
                            Event::ExceptionPhase {
                                phase: ExceptionPhase::CatcherEnter,
                                ..
                            }
                        )))
        };
        // The consumer is called out of line, so that this closure stays small enough to be
        // inlined into the decoding loop: a call record then goes from the decoder's
        // registers to `f`'s argument without being stored whole and read back (which
        // stalls on the store buffer, and took half of `report`'s time in trace mode).
        #[inline(never)]
        fn hand<'a, F: FnMut(&TimedEvent<'a>)>(f: &mut F, e: &TimedEvent<'a>) {
            f(e)
        }
        let each = |d: DecodedEvent<'a>| {
            if wanted(&d.event) {
                hand(
                    &mut f,
                    &TimedEvent {
                        ns: self.clock.to_ns(d.ts),
                        os_tid: d.os_tid,
                        event: d.event,
                    },
                );
            }
        };
        // `for_each`, not `for`: the reader hands a block's calls over in a tight loop,
        // on a second core while this one runs `f` (the call tree, the counts).
        // `each` by value: through `&mut each` the decoding loop called it out of line.
        let events = if calls {
            reader.events()
        } else {
            reader.events_without_calls()
        };
        events.for_each_ahead(each);
    }
}
