//! What several exporters share: checking handles, turning a thread's calls into
//! properly nested spans, the weighted stacks the aggregated formats count, and the live
//! heap's changes over time that the timeline formats draw as a counter.

use std::collections::HashMap;

use crate::ExportError;
use crate::model::{Call, FrameId, Profile, StackId, ThreadProfile, Weight};

/// What is wrong with a stack: the first bad handle on its way from the root.
#[derive(Debug, Clone, Copy)]
enum Bad {
    Frame(u32),
    Stack(u32),
}

/// Checks that every sample and call path refers to an existing stack whose entries, up
/// to the root, have existing frames and parents that come before them, and that every
/// call refers to an existing frame. Entries of the stack table no thread refers to are
/// not checked.
pub(crate) fn validate(profile: &Profile) -> Result<(), ExportError> {
    let frames = profile.frames.len();
    let stacks = profile.stacks.len();
    // Per entry, in table order (a good parent comes first): the first bad handle walking
    // from the root down to it, like the first bad index of a root-first frame list.
    let mut bad: Vec<Option<Bad>> = Vec::with_capacity(stacks);
    for (i, s) in profile.stacks.iter().enumerate() {
        let above = match s.parent {
            None => None,
            Some(p) if (p.0 as usize) < i => bad[p.0 as usize],
            Some(p) => Some(Bad::Stack(p.0)),
        };
        let own = (s.frame.0 as usize >= frames).then_some(Bad::Frame(s.frame.0));
        bad.push(above.or(own));
    }
    let check = |id: StackId| match bad.get(id.0 as usize) {
        None => Some(Bad::Stack(id.0)),
        Some(b) => *b,
    };
    for t in &profile.threads {
        let samples = t.samples.iter().filter_map(|s| s.stack).filter_map(check);
        let calls = t
            .calls
            .iter()
            .filter(|c| c.frame.0 as usize >= frames)
            .map(|c| Bad::Frame(c.frame.0));
        let paths = t.call_paths.iter().filter_map(|p| check(p.stack));
        match samples.chain(calls).chain(paths).next() {
            None => {}
            Some(Bad::Frame(index)) => {
                return Err(ExportError::BadFrame {
                    thread: t.label(),
                    index,
                    frames,
                });
            }
            Some(Bad::Stack(index)) => {
                return Err(ExportError::BadStack {
                    thread: t.label(),
                    index,
                    stacks,
                });
            }
        }
    }
    Ok(())
}

/// A call after nesting: it lies within its parent, and its siblings do not overlap it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    pub frame: FrameId,
    pub start_ns: u64,
    pub end_ns: u64,
    /// Index of the enclosing span in the same list.
    pub parent: Option<usize>,
    /// The nesting depth as rebuilt here (0 = no enclosing span).
    pub depth: u32,
    /// The call's recorded values ([`Call::values`]).
    pub values: Option<u32>,
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
            values: c.values,
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
/// The writers walk [`events_iter`] instead; this list is for the tests' reference writers.
#[cfg(test)]
pub(crate) fn events(spans: &[Span]) -> Vec<SpanEvent> {
    let mut out = Vec::with_capacity(spans.len() * 2);
    out.extend(events_iter(spans));
    out
}

/// [`events`] one at a time, without the list (a writer that walks them holds only
/// the open spans).
pub(crate) fn events_iter(spans: &[Span]) -> impl Iterator<Item = SpanEvent> + '_ {
    let mut open: Vec<usize> = Vec::new();
    let mut next = 0;
    std::iter::from_fn(move || {
        if let Some(s) = spans.get(next) {
            if let Some(&top) = open.last()
                && Some(top) != s.parent
            {
                open.pop();
                return Some(SpanEvent::Close(top));
            }
            open.push(next);
            next += 1;
            return Some(SpanEvent::Open(next - 1));
        }
        open.pop().map(SpanEvent::Close)
    })
}

/// The frames of a span's stack, root first.
pub(crate) fn span_stack(spans: &[Span], mut i: usize) -> Vec<FrameId> {
    let mut stack = vec![spans[i].frame];
    while let Some(p) = spans[i].parent {
        stack.push(spans[p].frame);
        i = p;
    }
    stack.reverse();
    stack
}

/// One stack with all the values the aggregated formats can count.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Weighted {
    /// Index into [`Profile::threads`].
    pub thread: usize,
    /// The frames, root first; never empty.
    pub stack: Vec<FrameId>,
    /// Samples (or calls, for traced threads).
    pub count: u64,
    /// Wall nanoseconds (self time, for traced threads).
    pub wall_ns: u64,
    /// CPU nanoseconds (0 for traced threads).
    pub cpu_ns: u64,
    /// Estimated bytes and objects allocated, and bytes alive at the end.
    pub alloc_bytes: u64,
    pub alloc_objects: u64,
    pub live_bytes: u64,
    pub live_objects: u64,
    /// Nanoseconds waited (`record --waits`), and of those for contended locks.
    pub wait_ns: u64,
    pub lock_ns: u64,
}

impl Weighted {
    pub fn value(&self, weight: Weight) -> u64 {
        match weight {
            Weight::Samples => self.count,
            Weight::Wall => self.wall_ns,
            Weight::Cpu => self.cpu_ns,
            Weight::AllocBytes => self.alloc_bytes,
            Weight::AllocObjects => self.alloc_objects,
            Weight::LiveBytes => self.live_bytes,
            Weight::Wait => self.wait_ns,
            Weight::Lock => self.lock_ns,
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
///
/// Samples and call paths of one thread are summed per stack handle (equal stacks share
/// one) before their frames are looked up, in the order each stack first occurs; calls
/// come one per call.
pub(crate) fn weighted(profile: &Profile) -> Vec<Weighted> {
    let mut out = Vec::new();
    for (thread, t) in profile.threads.iter().enumerate() {
        let mut sums = Summed::default();
        if !counts_calls(t) {
            for s in &t.samples {
                if let Some(stack) = s.stack {
                    sums.add(stack, [1, s.wall_ns, s.cpu_ns, 0, 0, 0, 0, 0, 0]);
                }
            }
        } else if !t.call_paths.is_empty() {
            for p in &t.call_paths {
                sums.add(p.stack, [p.calls, p.self_ns, 0, 0, 0, 0, 0, 0, 0]);
            }
        } else {
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
                    stack: span_stack(&spans, i),
                    count: 1,
                    wall_ns: (s.end_ns - s.start_ns).saturating_sub(child_ns[i]),
                    cpu_ns: 0,
                    ..Weighted::default()
                });
            }
        }
        for a in &t.allocations {
            if let Some(stack) = a.stack {
                let v = [a.bytes, a.objects, a.live_bytes, a.live_objects];
                sums.add(stack, [0, 0, 0, v[0], v[1], v[2], v[3], 0, 0]);
            }
        }
        for w in &t.waits {
            if let Some(stack) = w.stack {
                let lock = if w.lock { w.wait_ns } else { 0 };
                sums.add(stack, [0, 0, 0, 0, 0, 0, 0, w.wait_ns, lock]);
            }
        }
        out.extend(sums.order.into_iter().map(
            |(
                stack,
                [
                    count,
                    wall_ns,
                    cpu_ns,
                    alloc_bytes,
                    alloc_objects,
                    live_bytes,
                    live_objects,
                    wait_ns,
                    lock_ns,
                ],
            )| {
                Weighted {
                    thread,
                    stack: profile.stack_frames(stack),
                    count,
                    wall_ns,
                    cpu_ns,
                    alloc_bytes,
                    alloc_objects,
                    live_bytes,
                    live_objects,
                    wait_ns,
                    lock_ns,
                }
            },
        ));
    }
    out
}

/// Count, wall and CPU time summed per stack, in the order the stacks first occur.
#[derive(Default)]
struct Summed {
    index: HashMap<StackId, usize>,
    order: Vec<(StackId, [u64; 9])>,
}

impl Summed {
    fn add(&mut self, stack: StackId, values: [u64; 9]) {
        let i = *self.index.entry(stack).or_insert_with(|| {
            self.order.push((stack, [0; 9]));
            self.order.len() - 1
        });
        for (sum, v) in self.order[i].1.iter_mut().zip(values) {
            *sum += v;
        }
    }
}

/// The estimated live bytes of the followed allocation samples over time, as changes: per
/// instant (ns since the profile start, in order), the bytes added (allocations) less
/// those removed (the GC that found them collected), and how many samples changed.
pub(crate) fn live_heap_changes(profile: &Profile) -> Vec<(u64, i64, u32)> {
    let mut changes: Vec<(u64, i64)> = Vec::new();
    for a in profile.threads.iter().flat_map(|t| t.allocations.iter()) {
        if !a.followed {
            continue;
        }
        let size = i64::try_from(a.bytes).unwrap_or(i64::MAX);
        changes.push((a.time_ns, size));
        if let Some(freed) = a.freed_ns {
            changes.push((freed, -size));
        }
    }
    changes.sort_by_key(|c| c.0);
    let mut merged: Vec<(u64, i64, u32)> = Vec::new();
    for (at, delta) in changes {
        match merged.last_mut() {
            Some(last) if last.0 == at => {
                last.1 += delta;
                last.2 += 1;
            }
            _ => merged.push((at, delta, 1)),
        }
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(frame: u32, start_ns: u64, end_ns: u64, depth: u32) -> Call {
        Call {
            frame: FrameId(frame),
            start_ns,
            end_ns,
            depth,
            values: None,
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
        let frames: Vec<_> = s.iter().map(|s| (s.frame.0, s.depth, s.parent)).collect();
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
            .map(|w| (frame_ids(&w.stack), w.wall_ns))
            .collect();
        assert_eq!(w, [(vec![0], 60), (vec![0, 1], 30), (vec![0, 2], 10)]);
    }

    fn frame_ids(stack: &[FrameId]) -> Vec<u32> {
        stack.iter().map(|f| f.0).collect()
    }

    /// A profile of `frames` frames and one thread, with `stacks` interned.
    fn with_stacks(frames: usize, stacks: &[&[u32]]) -> (Profile, Vec<StackId>) {
        let mut profile = Profile {
            frames: vec![Default::default(); frames],
            threads: vec![ThreadProfile::default()],
            ..Default::default()
        };
        let ids = stacks
            .iter()
            .map(|s| {
                profile
                    .intern_stack_frames(s.iter().map(|&f| FrameId(f)))
                    .unwrap()
            })
            .collect();
        (profile, ids)
    }

    #[test]
    fn call_paths_stand_in_for_calls() {
        use crate::model::CallPath;
        let path = |stack, calls, self_ns| CallPath {
            stack,
            calls,
            self_ns,
        };
        let (mut profile, s) = with_stacks(3, &[&[0], &[0, 1], &[0, 3]]);
        profile.threads[0].call_paths = vec![path(s[0], 1, 60), path(s[1], 7, 30)];
        assert!(counts_calls(&profile.threads[0]));
        let w: Vec<_> = weighted(&profile)
            .into_iter()
            .map(|w| (frame_ids(&w.stack), w.count, w.wall_ns, w.cpu_ns))
            .collect();
        assert_eq!(w, [(vec![0], 1, 60, 0), (vec![0, 1], 7, 30, 0)]);
        let mut bad = profile.clone();
        bad.threads[0].call_paths.push(path(s[2], 1, 1));
        assert!(matches!(
            validate(&bad),
            Err(ExportError::BadFrame { index: 3, .. })
        ));
    }

    #[test]
    fn samples_of_one_stack_are_summed_in_first_occurrence_order() {
        use crate::model::Sample;
        let (mut profile, s) = with_stacks(3, &[&[0, 1], &[0, 2]]);
        let sample = |stack, wall_ns| Sample {
            stack,
            wall_ns,
            cpu_ns: 1,
            ..Default::default()
        };
        profile.threads[0].samples = vec![
            sample(Some(s[1]), 10),
            sample(None, 5),
            sample(Some(s[0]), 20),
            sample(Some(s[1]), 30),
        ];
        let w: Vec<_> = weighted(&profile)
            .into_iter()
            .map(|w| (frame_ids(&w.stack), w.count, w.wall_ns, w.cpu_ns))
            .collect();
        assert_eq!(w, [(vec![0, 2], 2, 40, 2), (vec![0, 1], 1, 20, 1)]);
    }

    #[test]
    fn bad_stack_handles_are_errors() {
        use crate::model::{Sample, Stack};
        let (mut profile, _) = with_stacks(3, &[&[0, 1]]);
        let stack = |i| Sample {
            stack: Some(StackId(i)),
            ..Default::default()
        };
        profile.threads[0].samples = vec![stack(1)];
        assert!(validate(&profile).is_ok());
        profile.threads[0].samples.push(stack(2));
        assert!(matches!(
            validate(&profile),
            Err(ExportError::BadStack {
                index: 2,
                stacks: 2,
                ..
            })
        ));
        // A parent after its child would make a loop: rejected, not walked.
        profile.threads[0].samples.pop();
        profile.stacks[0] = Stack {
            frame: FrameId(0),
            parent: Some(StackId(1)),
        };
        assert!(matches!(
            validate(&profile),
            Err(ExportError::BadStack { index: 1, .. })
        ));
    }
}
