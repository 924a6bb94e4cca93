//! One timeline: every record of every block, ordered by time, timestamps in ns since
//! the trace began.

use clrprof_format::{ClockConverter, DecodedEvent, Event, FormatError, Header, TraceReader};

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
    pub events: Vec<TimedEvent<'a>>,
    /// Problems met while reading (truncation, corruption); the events before them are kept.
    pub warnings: Vec<String>,
    /// Span of the trace in ns (first to last event).
    pub duration_ns: u64,
}

impl<'a> Trace<'a> {
    /// Decodes `bytes`; fails only when the file is not a readable clrprof trace at all.
    pub fn load(bytes: &'a [u8]) -> Result<Trace<'a>, FormatError> {
        let mut reader = TraceReader::new(bytes)?;
        let header = reader.header().clone();
        let decoded: Vec<DecodedEvent<'a>> = reader.events().collect();
        let warnings = reader.warnings().iter().map(|w| w.to_string()).collect();
        let syncs: Vec<(u64, u64)> = decoded
            .iter()
            .filter_map(|d| match &d.event {
                Event::ClockSync { mono_ns, .. } => Some((d.ts, *mono_ns)),
                _ => None,
            })
            .collect();
        let earliest = decoded.iter().map(|d| d.ts).min().unwrap_or(0);
        let clock =
            ClockConverter::from_clock_info(&header.meta.clock, &syncs).with_origin_ticks(earliest);
        let mut events: Vec<TimedEvent<'a>> = decoded
            .into_iter()
            .map(|d| TimedEvent {
                ns: clock.to_ns(d.ts),
                os_tid: d.os_tid,
                event: d.event,
            })
            .collect();
        // Stable: events of one thread keep their recorded order on equal timestamps.
        events.sort_by_key(|e| e.ns);
        let start = events.first().map(|e| e.ns).unwrap_or(0);
        let end = events.last().map(|e| e.ns).unwrap_or(0);
        Ok(Trace {
            header,
            events,
            warnings,
            duration_ns: end - start,
        })
    }
}
