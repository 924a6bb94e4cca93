//! What several exporters share: checking frame indices, turning a thread's calls into
//! properly nested spans, and the weighted stacks the aggregated formats count.

use crate::ExportError;
use std::borrow::Cow;

use crate::model::{Call, Profile, ThreadProfile, Weight};

/// Checks that every stack and call refers to an existing frame.
pub(crate) fn validate(profile: &Profile) -> Result<(), ExportError> {
    let frames = profile.frames.len();
    for t in &profile.threads {
        let samples = t.samples.iter().flat_map(|s| s.stack.iter().copied());
        let calls = t.calls.iter().map(|c| c.frame);
        let paths = t.call_paths.iter().flat_map(|p| p.stack.iter().copied());
        if let Some(index) = samples
            .chain(calls)
            .chain(paths)
            .find(|&i| i as usize >= frames)
        {
            return Err(ExportError::BadFrame {
                thread: t.label(),
                index,
                frames,
            });
        }
    }
    Ok(())
}

/// A call after nesting: it lies within its parent, and its siblings do not overlap it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    pub frame: u32,
    pub start_ns: u64,
    pub end_ns: u64,
    /// Index of the enclosing span in the same list.
    pub parent: Option<usize>,
    /// The nesting depth as rebuilt here (0 = no enclosing span).
    pub depth: u32,
}

/// Nests `calls` by their intervals, in pre-order (each span after its parent, siblings
/// by start time). Ties in start time put the longer call, then the shallower one, first;
/// a call that outlives its caller is cut at the caller's end.
///
/// Walking the result with a stack gives balanced open/close events whose times never
/// decrease: see [`events`].
pub(crate) fn spans(calls: &[Call]) -> Vec<Span> {
    let mut order: Vec<&Call> = calls.iter().collect();
    order.sort_by_key(|c| (c.start_ns, std::cmp::Reverse(c.end_ns), c.depth, c.frame));
    let mut out: Vec<Span> = Vec::with_capacity(order.len());
    let mut open: Vec<usize> = Vec::new();
    for c in order {
        while open
            .last()
            .is_some_and(|&top| out[top].end_ns <= c.start_ns)
        {
            open.pop();
        }
        let parent = open.last().copied();
        let mut end_ns = c.end_ns.max(c.start_ns);
        if let Some(p) = parent {
            end_ns = end_ns.min(out[p].end_ns);
        }
        out.push(Span {
            frame: c.frame,
            start_ns: c.start_ns,
            end_ns,
            parent,
            depth: open.len() as u32,
        });
        open.push(out.len() - 1);
    }
    out
}

/// An open or close of a span, for evented formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SpanEvent {
    Open(usize),
    Close(usize),
}

impl SpanEvent {
    /// When the event happens.
    pub fn at(self, spans: &[Span]) -> u64 {
        match self {
            SpanEvent::Open(i) => spans[i].start_ns,
            SpanEvent::Close(i) => spans[i].end_ns,
        }
    }
}

/// Balanced open/close events of `spans` (as made by [`spans`]), in non-decreasing time.
pub(crate) fn events(spans: &[Span]) -> Vec<SpanEvent> {
    let mut out = Vec::with_capacity(spans.len() * 2);
    let mut open: Vec<usize> = Vec::new();
    for (i, s) in spans.iter().enumerate() {
        while let Some(&top) = open.last() {
            if Some(top) == s.parent {
                break;
            }
            out.push(SpanEvent::Close(top));
            open.pop();
        }
        out.push(SpanEvent::Open(i));
        open.push(i);
    }
    while let Some(top) = open.pop() {
        out.push(SpanEvent::Close(top));
    }
    out
}

/// The frames of a span's stack, root first.
pub(crate) fn span_stack(spans: &[Span], mut i: usize) -> Vec<u32> {
    let mut stack = vec![spans[i].frame];
    while let Some(p) = spans[i].parent {
        stack.push(spans[p].frame);
        i = p;
    }
    stack.reverse();
    stack
}

/// One stack with all the values the aggregated formats can count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Weighted<'a> {
    /// Index into [`Profile::threads`].
    pub thread: usize,
    /// Frame indices, root first; never empty.
    pub stack: Cow<'a, [u32]>,
    /// Samples (or calls, for traced threads).
    pub count: u64,
    /// Wall nanoseconds (self time, for traced threads).
    pub wall_ns: u64,
    /// CPU nanoseconds (0 for traced threads).
    pub cpu_ns: u64,
}

impl Weighted<'_> {
    pub fn value(&self, weight: Weight) -> u64 {
        match weight {
            Weight::Samples => self.count,
            Weight::Wall => self.wall_ns,
            Weight::Cpu => self.cpu_ns,
        }
    }
}

/// Whether a thread's aggregated weights come from its calls (it has no samples).
pub(crate) fn counts_calls(t: &ThreadProfile) -> bool {
    t.samples.is_empty() && (!t.calls.is_empty() || !t.call_paths.is_empty())
}

/// Every non-empty stack of the profile with its values: a thread's samples when it has
/// any, else its calls (one count per call, self time as wall time, no CPU time), taken
/// from its call paths when it has them.
pub(crate) fn weighted(profile: &Profile) -> Vec<Weighted<'_>> {
    let mut out = Vec::new();
    for (thread, t) in profile.threads.iter().enumerate() {
        if !counts_calls(t) {
            out.extend(
                t.samples
                    .iter()
                    .filter(|s| !s.stack.is_empty())
                    .map(|s| Weighted {
                        thread,
                        stack: Cow::Borrowed(&s.stack),
                        count: 1,
                        wall_ns: s.wall_ns,
                        cpu_ns: s.cpu_ns,
                    }),
            );
            continue;
        }
        if !t.call_paths.is_empty() {
            out.extend(
                t.call_paths
                    .iter()
                    .filter(|p| !p.stack.is_empty())
                    .map(|p| Weighted {
                        thread,
                        stack: Cow::Borrowed(&p.stack),
                        count: p.calls,
                        wall_ns: p.self_ns,
                        cpu_ns: 0,
                    }),
            );
            continue;
        }
        let spans = spans(&t.calls);
        let mut child_ns = vec![0u64; spans.len()];
        for s in &spans {
            if let Some(p) = s.parent {
                child_ns[p] += s.end_ns - s.start_ns;
            }
        }
        for (i, s) in spans.iter().enumerate() {
            out.push(Weighted {
                thread,
                stack: Cow::Owned(span_stack(&spans, i)),
                count: 1,
                wall_ns: (s.end_ns - s.start_ns).saturating_sub(child_ns[i]),
                cpu_ns: 0,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(frame: u32, start_ns: u64, end_ns: u64, depth: u32) -> Call {
        Call {
            frame,
            start_ns,
            end_ns,
            depth,
        }
    }

    fn check_balanced(spans: &[Span]) {
        let mut open = Vec::new();
        let mut last = 0;
        for e in events(spans) {
            let at = e.at(spans);
            assert!(at >= last, "time went back at {e:?}");
            last = at;
            match e {
                SpanEvent::Open(i) => open.push(i),
                SpanEvent::Close(i) => assert_eq!(open.pop(), Some(i)),
            }
        }
        assert!(open.is_empty());
    }

    #[test]
    fn nests_by_interval_and_breaks_ties_by_depth() {
        let calls = [
            call(2, 10, 20, 1),
            call(1, 0, 100, 0),
            call(3, 10, 20, 2),
            call(4, 20, 20, 1),
        ];
        let s = spans(&calls);
        let frames: Vec<_> = s.iter().map(|s| (s.frame, s.depth, s.parent)).collect();
        assert_eq!(
            frames,
            [
                (1, 0, None),
                (2, 1, Some(0)),
                (3, 2, Some(1)),
                (4, 1, Some(0))
            ]
        );
        check_balanced(&s);
    }

    #[test]
    fn cuts_a_callee_that_outlives_its_caller() {
        let calls = [call(1, 0, 10, 0), call(2, 5, 15, 1), call(3, 12, 14, 0)];
        let s = spans(&calls);
        assert_eq!((s[1].end_ns, s[1].parent), (10, Some(0)));
        assert_eq!((s[2].parent, s[2].depth), (None, 0));
        check_balanced(&s);
    }

    #[test]
    fn self_time_excludes_callees() {
        let profile = Profile {
            frames: vec![Default::default(); 3],
            threads: vec![ThreadProfile {
                calls: vec![call(0, 0, 100, 0), call(1, 10, 40, 1), call(2, 50, 60, 1)],
                ..Default::default()
            }],
            ..Default::default()
        };
        let w: Vec<_> = weighted(&profile)
            .into_iter()
            .map(|w| (w.stack.into_owned(), w.wall_ns))
            .collect();
        assert_eq!(w, [(vec![0], 60), (vec![0, 1], 30), (vec![0, 2], 10)]);
    }

    #[test]
    fn call_paths_stand_in_for_calls() {
        use crate::model::CallPath;
        let path = |stack: Vec<u32>, calls, self_ns| CallPath {
            stack,
            calls,
            self_ns,
        };
        let profile = Profile {
            frames: vec![Default::default(); 3],
            threads: vec![ThreadProfile {
                call_paths: vec![path(vec![0], 1, 60), path(vec![0, 1], 7, 30)],
                ..Default::default()
            }],
            ..Default::default()
        };
        assert!(counts_calls(&profile.threads[0]));
        let w: Vec<_> = weighted(&profile)
            .into_iter()
            .map(|w| (w.stack.into_owned(), w.count, w.wall_ns, w.cpu_ns))
            .collect();
        assert_eq!(w, [(vec![0], 1, 60, 0), (vec![0, 1], 7, 30, 0)]);
        let mut bad = profile.clone();
        bad.threads[0].call_paths.push(path(vec![0, 3], 1, 1));
        assert!(matches!(
            validate(&bad),
            Err(ExportError::BadFrame { index: 3, .. })
        ));
    }
}
