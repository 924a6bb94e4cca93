//! One timeline: every record of every block, ordered by time, timestamps in ns since
//! the trace began. Call records (trace mode's Enter/Leave/Tailcall, millions per
//! second) are not held on it: [`Trace::for_each_call`] decodes them again from the file
//! when they are needed, so that memory does not grow with the number of calls. The
//! exception records (throws, their stacks, and the unwind phases: several per throw, a
//! million throws are tens of millions of records) are not held either:
//! [`Trace::for_each_exception`] decodes them again, and the report counts them in the
//! same pass as the calls.

use rustc_hash::FxHashMap as HashMap;

use clrprof_format::{
    CheckedBlocks, ClockConverter, DecodedCall, DecodedEvent, EltKind, Event, ExceptionPhase,
    FormatError, Header, SplitSink, TraceReader,
};

/// An event with its thread and its time in nanoseconds since the trace started.
#[derive(Debug, Clone)]
pub struct TimedEvent<'a> {
    pub ns: u64,
    pub os_tid: u64,
    pub event: Event<'a>,
}

/// A call record (Enter, Leave or Tailcall) with its thread and its time in nanoseconds:
/// plain numbers, what the call-tree builder takes per call (trace mode has tens of
/// millions of them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimedCall {
    pub ns: u64,
    pub os_tid: u64,
    pub kind: EltKind,
    pub function: u64,
    pub sp: u64,
}

impl TimedCall {
    /// The call of an Enter, Leave or Tailcall event.
    #[inline]
    pub fn of(e: &TimedEvent<'_>) -> Option<TimedCall> {
        let (kind, function, sp) = match e.event {
            Event::Enter { function, sp } => (EltKind::Enter, function, sp),
            Event::Leave { function, sp } => (EltKind::Leave, function, sp),
            Event::Tailcall { function, sp } => (EltKind::Tailcall, function, sp),
            _ => return None,
        };
        Some(TimedCall {
            ns: e.ns,
            os_tid: e.os_tid,
            kind,
            function,
            sp,
        })
    }

    /// The same call as an event.
    pub fn event(&self) -> TimedEvent<'static> {
        let (function, sp) = (self.function, self.sp);
        TimedEvent {
            ns: self.ns,
            os_tid: self.os_tid,
            event: match self.kind {
                EltKind::Enter => Event::Enter { function, sp },
                EltKind::Leave => Event::Leave { function, sp },
                EltKind::Tailcall => Event::Tailcall { function, sp },
            },
        }
    }
}

/// Where [`Trace::for_each_streamed_into`] hands the records: the calls apart, as
/// [`TimedCall`]s, in their place among the others.
pub trait StreamSink<'a> {
    /// An Enter, Leave or Tailcall.
    fn call(&mut self, c: &TimedCall);
    /// Any other record asked for.
    fn event(&mut self, e: &TimedEvent<'a>);
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
    /// The compact blocks `load` checked: the later passes do not check them again.
    checked: CheckedBlocks,
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

/// Files this large have their pages mapped ahead of the first pass ([`map_ahead`]).
const MAP_AHEAD_MIN: usize = 32 << 20;

/// Reads a byte of every page of `bytes`, in order: a mapped file's page faults taken on
/// this thread instead of the one that reads the file.
fn map_ahead(bytes: &[u8]) {
    let mut x = 0u8;
    for i in (0..bytes.len()).step_by(4096) {
        x ^= bytes[i];
    }
    std::hint::black_box(x);
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
        std::thread::scope(|s| {
            // With a CPU to spare, another thread maps the file's pages ahead of this pass
            // (the page faults of a mapped file; the later passes find them mapped).
            if bytes.len() >= MAP_AHEAD_MIN && clrprof_format::read_workers() >= 2 {
                let _ = std::thread::Builder::new()
                    .name("clrprof-map".into())
                    .spawn_scoped(s, || map_ahead(bytes));
            }
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
        });
        let st = reader.stats();
        call_records += st.skipped_calls;
        if st.skipped_calls > 0 {
            first = first.min(st.calls_first_ts);
            last = last.max(st.calls_last_ts);
        }
        let warnings = reader.warnings().iter().map(|w| w.to_string()).collect();
        let checked = reader.checked_blocks().clone();
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
            checked,
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
    pub fn for_each_streamed(&self, which: Streamed, f: impl FnMut(&TimedEvent<'a>)) {
        struct One<F>(F);
        impl<'a, F: FnMut(&TimedEvent<'a>)> StreamSink<'a> for One<F> {
            #[inline(always)]
            fn call(&mut self, c: &TimedCall) {
                (self.0)(&c.event())
            }
            #[inline(always)]
            fn event(&mut self, e: &TimedEvent<'a>) {
                (self.0)(e)
            }
        }
        self.for_each_streamed_into(which, &mut One(f));
    }

    /// [`for_each_streamed`](Self::for_each_streamed) with the calls apart: each Enter,
    /// Leave and Tailcall goes to `sink.call` as a [`TimedCall`] straight from the
    /// decoding loop, the other records to `sink.event`, all in the same order.
    pub fn for_each_streamed_into(&self, which: Streamed, sink: &mut impl StreamSink<'a>) {
        let calls = which.calls && self.call_records > 0;
        let exceptions = which.exceptions && self.exception_records > 0;
        if !calls && !exceptions {
            return;
        }
        self.stream(which, sink, None);
    }

    /// The calls and the exception catches (what [`for_each_call`](Self::for_each_call)
    /// hands over) on up to [`read_workers`](clrprof_format::read_workers) threads: the
    /// trace's threads are shared out among them by their call records (the heaviest
    /// first, each to the worker with the fewest so far), and each worker reads only its
    /// threads' blocks into a sink `make` made for it, in each thread's recorded order.
    /// Returns the workers' sinks; the threads of one are none of another's, and the
    /// records of threads that hold no call blocks (the writer's `CallCounts`) all go to
    /// the first. `None`, with nothing read, where one thread does it all: one worker,
    /// fewer than two threads with calls, or a pass that needs the records of all
    /// threads in file order (the exceptions, in a trace that has some; the values of
    /// `--args`).
    pub fn calls_on_workers<S, F>(&self, which: Streamed, make: F) -> Option<Vec<S>>
    where
        S: StreamSink<'a> + Send,
        F: Fn() -> S + Sync,
    {
        if !which.calls
            || self.call_records == 0
            || which.call_values
            || (which.exceptions && self.exception_records > 0)
        {
            return None;
        }
        let workers = clrprof_format::read_workers();
        let threads = self.checked.records_by_thread();
        if workers < 2 || threads.iter().filter(|t| t.1 > 0).count() < 2 {
            return None;
        }
        let workers = workers.min(threads.len());
        // Longest first, each to the least loaded worker.
        let mut heaviest: Vec<(u64, u64)> = threads;
        heaviest.sort_by_key(|&(tid, n)| (std::cmp::Reverse(n), tid));
        let mut load = vec![0u64; workers];
        let mut owner: HashMap<u64, usize> = HashMap::default();
        for (tid, n) in heaviest {
            let w = (0..workers).min_by_key(|&w| (load[w], w)).unwrap_or(0);
            load[w] += n;
            owner.insert(tid, w);
        }
        // One thread with nearly all the calls (the others' few records): not worth a
        // worker of its own.
        let (total, most) = (load.iter().sum::<u64>(), load.iter().max().copied());
        if most.is_none_or(|m| (total - m) * 20 < total) {
            return None;
        }
        let owner = &owner;
        let make = &make;
        let which = Streamed {
            exceptions: false,
            ..which
        };
        let sinks = std::thread::scope(|s| {
            let handles: Vec<_> = (1..workers)
                .map(|w| {
                    std::thread::Builder::new()
                        .name("clrprof-read".into())
                        .spawn_scoped(s, move || {
                            let keep = move |tid: u64| owner.get(&tid).copied().unwrap_or(0) == w;
                            let mut sink = make();
                            self.stream(which, &mut sink, Some(&keep));
                            sink
                        })
                })
                .collect();
            // Threads that could not be started: their share is read here.
            let here: Vec<usize> = handles
                .iter()
                .enumerate()
                .filter(|(_, h)| h.is_err())
                .map(|(i, _)| i + 1)
                .chain([0])
                .collect();
            let keep = |tid: u64| here.contains(&owner.get(&tid).copied().unwrap_or(0));
            let mut first = make();
            self.stream(which, &mut first, Some(&keep));
            let mut sinks = vec![first];
            for h in handles.into_iter().flatten() {
                // A worker that panicked: the caller's thread panics with it, as a pass on
                // one thread would have.
                match h.join() {
                    Ok(sink) => sinks.push(sink),
                    Err(p) => std::panic::resume_unwind(p),
                }
            }
            sinks
        });
        Some(sinks)
    }

    /// One pass over the file into `sink`, of the blocks of the threads `threads` keeps
    /// (all without it).
    fn stream(
        &self,
        which: Streamed,
        sink: &mut impl StreamSink<'a>,
        threads: Option<&(dyn Fn(u64) -> bool + Sync)>,
    ) {
        let calls = which.calls && self.call_records > 0;
        let exceptions = which.exceptions && self.exception_records > 0;
        let Ok(mut reader) = TraceReader::new(self.bytes) else {
            return;
        };
        reader.trust(self.checked.clone());
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
        // Out of line: the other records are few in trace mode, and each is a
        // 112-byte event that would make the decoding loop's frame larger.
        #[inline(never)]
        fn hand<'a, S: StreamSink<'a>>(sink: &mut S, e: &TimedEvent<'a>) {
            sink.event(e)
        }
        struct Split<'s, S, W> {
            sink: &'s mut S,
            clock: &'s ClockConverter,
            calls: bool,
            wanted: W,
        }
        impl<'a, S: StreamSink<'a>, W: Fn(&Event<'_>) -> bool> SplitSink<'a> for Split<'_, S, W> {
            #[inline(always)]
            fn call(&mut self, c: DecodedCall) {
                if self.calls {
                    self.sink.call(&TimedCall {
                        ns: self.clock.to_ns(c.ts),
                        os_tid: c.os_tid,
                        kind: c.kind,
                        function: c.function,
                        sp: c.sp,
                    });
                }
            }
            #[inline(always)]
            fn event(&mut self, d: DecodedEvent<'a>) {
                if (self.wanted)(&d.event) {
                    hand(
                        self.sink,
                        &TimedEvent {
                            ns: self.clock.to_ns(d.ts),
                            os_tid: d.os_tid,
                            event: d.event,
                        },
                    );
                }
            }
        }
        let mut split = Split {
            sink,
            clock: &self.clock,
            calls,
            wanted,
        };
        let events = if calls {
            reader.events()
        } else {
            reader.events_without_calls()
        };
        match threads {
            Some(keep) => events.of_threads(keep).for_each_split(&mut split),
            None => events.for_each_split_ahead(&mut split),
        }
    }
}
