//! The human-readable report: short sections, biggest first, numbers with units. One
//! renderer per section; [`render`] lists them in the order they print.

mod alloc_diff;
mod alloc_samples;
mod allocations;
mod butterfly;
mod calls;
mod escape;
mod events;
mod exceptions;
mod gcs;
mod header;
mod heap;
mod heap_diff;
mod jit;
mod lines;
mod modules;
mod samples;
mod threads;
mod waits;

pub use crate::units::{bytes, ns};
pub use escape::{escape_controls, escape_output, is_control};

// The renderers reach the units as `super::units`.
use crate::units;
pub use lines::render_listings;

use crate::report::{Functions, Report};

/// The text of `clrprof diff` for allocations; `top` bounds each list.
pub fn render_alloc_diff(d: &crate::diff::alloc::AllocDiff, top: usize) -> String {
    alloc_diff::render(d, top)
}

/// A heap snapshot's report (`clrprof heap`, `report` of a trace with one).
pub fn render_heap(r: &crate::heap::report::HeapReport) -> String {
    heap::render(r)
}

/// The text of `clrprof diff` for heap snapshots: the `top` types that changed most.
pub fn render_heap_diff(d: &crate::diff::heap::HeapDiff, top: usize) -> String {
    heap_diff::render(d, top)
}

/// The butterfly of `report --function` alone, after the trace's first lines.
pub fn render_butterfly(r: &Report, top: usize) -> String {
    let mut o = String::new();
    header::trace(&mut o, &r.trace);
    header::warnings(&mut o, &r.warnings);
    if let Some(b) = &r.butterfly {
        butterfly::render(&mut o, b, top);
    }
    o
}

/// What the text report holds beyond the defaults.
#[derive(Debug, Clone, Copy, Default)]
pub struct Layout<'a> {
    /// Every section in full (`report --all`): each GC even when its pause was not
    /// recorded, threads the trace knows nothing of but their id.
    pub all: bool,
    /// A heap snapshot's own report, already rendered: what a snapshot measured, so it
    /// leads.
    pub heap: Option<&'a str>,
}

/// Renders the report as text; `top` bounds every list.
pub fn render(r: &Report, top: usize) -> String {
    render_with(r, top, Layout::default())
}

/// Renders the report as text: the header, then what the recording's mode measured (a
/// heap snapshot; the CPU tables of sample mode; the calls of trace mode; `--alloc`'s
/// allocations; `--waits`' waits), then the exceptions, then the rest (event counts, GCs,
/// threads, JIT, the allocation events, modules), shortened unless `layout.all`.
pub fn render_with(r: &Report, top: usize, layout: Layout<'_>) -> String {
    let mut o = String::new();
    header::trace(&mut o, &r.trace);
    header::lost(&mut o, r.lost_events, &r.lost_by_reason, &r.write_failures);
    header::sampler(&mut o, r.sampler.as_ref());
    if let Some(p) = &r.push {
        o.push_str(&format!("  push:     {}\n", p.summary()));
    }
    header::warnings(&mut o, &r.warnings);
    if let Some(h) = layout.heap {
        o.push('\n');
        o.push_str(h);
    }
    let (sampled, traced) = match &r.functions {
        Some(Functions::Sampled(f)) => (Some(&f[..]), None),
        Some(Functions::Traced(f)) => (None, Some(&f[..])),
        None => (None, None),
    };
    if let Some(st) = &r.samples {
        samples::render(&mut o, st, r.app_functions.as_deref(), sampled, top);
        if let Some(l) = &r.lines {
            lines::render(&mut o, st, l, &r.missing_pdbs, top);
        }
    }
    if let Some(fs) = traced {
        if r.trace.settings.counts {
            calls::counts(&mut o, fs, r.trace_stats.as_ref(), top);
        } else {
            calls::functions(&mut o, fs, r.trace_stats.as_ref(), top);
        }
    }
    if let Some(tree) = &r.call_tree {
        calls::tree(&mut o, tree, top);
    }
    alloc_samples::render(&mut o, r.allocation_samples.as_ref(), top);
    alloc_samples::render_unavailable(&mut o, r.allocation_samples_unavailable.as_deref());
    waits::render(&mut o, r, top);
    exceptions::render(
        &mut o,
        &r.exceptions,
        &r.exception_messages,
        &r.exception_messages_other,
        top,
    );
    events::render(&mut o, &r.events);
    let pauses_recorded = r.events.runtime_suspensions > 0;
    gcs::render(
        &mut o,
        &r.gcs,
        &r.gc_summary,
        pauses_recorded,
        top,
        layout.all,
    );
    threads::render(&mut o, &r.threads, top, layout.all);
    jit::render(&mut o, &r.jit, top);
    allocations::render(&mut o, &r.allocations, top);
    modules::render(&mut o, &r.modules, top);
    o
}
