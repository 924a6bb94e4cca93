//! `top`'s terminal view (ratatui on crossterm): a header with the process and its CPU, the
//! functions table, with `--alloc` the allocation rates by type and by the app's methods,
//! and a line of keys. Drawing only; the loop is in `mod.rs`.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Cell, Paragraph, Row, Table};

use super::allocs::AllocView;
use super::window::Snapshot;
use crate::cli::TopSort;

/// What the header says besides the figures.
pub struct Status<'a> {
    pub pid: u32,
    pub command: &'a str,
    pub sort: TopSort,
    pub filter: Option<&'a str>,
    pub paused: bool,
    pub total_samples: u64,
    /// Events the agent dropped and trace bytes that could not be read (normally 0).
    pub lost: u64,
    pub unreadable_bytes: u64,
}

pub fn sort_name(sort: TopSort) -> &'static str {
    match sort {
        TopSort::Own => "self",
        TopSort::Total => "total",
        TopSort::Name => "name",
    }
}

pub fn draw(f: &mut Frame<'_>, snap: &Snapshot, st: &Status<'_>) {
    let [head, table, keys] = Layout::vertical([
        Constraint::Length(3),
        Constraint::Min(3),
        Constraint::Length(1),
    ])
    .areas(f.area());
    let busiest: Vec<String> = snap
        .threads
        .iter()
        .take(4)
        .map(|t| format!("{} {:.0}%", t.name, t.cpu_pct))
        .collect();
    let header = vec![
        Line::from(format!("clrprof top — pid {}  {}", st.pid, st.command)),
        Line::from(format!(
            "CPU {:.0}% of one core over the last {:.1} s · {} samples ({} in all) · sort: {} · thread: {}{}",
            snap.cpu_pct,
            snap.span_s,
            snap.samples,
            st.total_samples,
            sort_name(st.sort),
            st.filter.unwrap_or("all"),
            if st.paused { " · PAUSED" } else { "" }
        )),
        Line::from(format!("threads: {}{}", busiest.join(", "), losses(st))),
    ];
    f.render_widget(Paragraph::new(header), head);
    let table = match &snap.alloc {
        Some(a) => {
            let [functions, allocs] =
                Layout::vertical([Constraint::Percentage(55), Constraint::Percentage(45)])
                    .areas(table);
            draw_allocs(f, a, allocs);
            functions
        }
        None => table,
    };
    let table = match &snap.waits {
        Some(w) => {
            let [functions, waits] =
                Layout::vertical([Constraint::Percentage(65), Constraint::Percentage(35)])
                    .areas(table);
            draw_waits(f, w, waits);
            functions
        }
        None => table,
    };
    let rows = snap.rows.iter().map(|r| {
        Row::new(vec![
            Cell::from(format!("{:6.1}", r.self_pct)),
            Cell::from(format!("{:6.1}", r.total_pct)),
            Cell::from(r.name.clone()),
        ])
    });
    let t = Table::new(
        rows,
        [
            Constraint::Length(7),
            Constraint::Length(7),
            Constraint::Min(10),
        ],
    )
    .header(
        Row::new(vec!["%SELF", "%TOTAL", "FUNCTION"])
            .style(Style::default().add_modifier(Modifier::REVERSED)),
    );
    f.render_widget(t, table);
    f.render_widget(
        Paragraph::new(
            "q quit (detach) · s self · t total · n name · f next thread · a all threads · p pause",
        ),
        keys,
    );
}

/// `--waits`' line: what the table shows, or why there is none.
fn waits_summary(w: &super::waits::WaitView) -> String {
    if let Some(why) = &w.unavailable {
        return format!("WAITS: none, --waits could not start: {why}");
    }
    let dropped = if w.dropped > 0 {
        format!(" ({} waits not kept: over the bound)", w.dropped)
    } else {
        String::new()
    };
    format!("WAITS the runtime reported in the window, by lock type{dropped}")
}

fn ms_per_s(ns_per_s: f64) -> String {
    format!("{:.1} ms/s", ns_per_s / 1e6)
}

/// `--waits`: the wait table, one line per lock type or kind.
fn draw_waits(f: &mut Frame<'_>, w: &super::waits::WaitView, area: ratatui::layout::Rect) {
    let mut lines = vec![Line::from(waits_summary(w))];
    for r in &w.rows {
        lines.push(Line::from(format!(
            "{:>8} {:>10}  {:<40} {}",
            r.waits,
            ms_per_s(r.ns_per_s),
            r.what,
            r.waiter
        )));
    }
    f.render_widget(Paragraph::new(lines), area);
}

/// `--alloc`: a line of totals, then by type and by the app's methods side by side.
fn draw_allocs(f: &mut Frame<'_>, a: &AllocView, area: ratatui::layout::Rect) {
    let [line, tables] = Layout::vertical([Constraint::Length(1), Constraint::Min(2)]).areas(area);
    f.render_widget(Paragraph::new(alloc_summary(a)), line);
    if a.unavailable.is_some() {
        return;
    }
    let [types, methods] =
        Layout::horizontal([Constraint::Percentage(40), Constraint::Percentage(60)]).areas(tables);
    let header = |cols: Vec<&'static str>| {
        Row::new(cols).style(Style::default().add_modifier(Modifier::REVERSED))
    };
    let t = Table::new(
        a.types.iter().map(|r| {
            Row::new(vec![
                Cell::from(format!("{:>11}", per_s(r.self_per_s))),
                Cell::from(r.name.clone()),
            ])
        }),
        [Constraint::Length(12), Constraint::Min(10)],
    )
    .header(header(vec!["     BYTES/S", "TYPE"]));
    f.render_widget(t, types);
    let m = Table::new(
        a.methods.iter().map(|r| {
            Row::new(vec![
                Cell::from(format!("{:>11}", per_s(r.self_per_s))),
                Cell::from(format!("{:>11}", per_s(r.total_per_s))),
                Cell::from(r.name.clone()),
            ])
        }),
        [
            Constraint::Length(12),
            Constraint::Length(12),
            Constraint::Min(10),
        ],
    )
    .header(header(vec![
        "     BYTES/S",
        "     TOTAL/S",
        "APP METHOD (with the framework code it calls)",
    ]));
    f.render_widget(m, methods);
}

/// The allocations' line: the rate, the samples it is estimated from, the live bytes.
fn alloc_summary(a: &AllocView) -> String {
    if let Some(why) = &a.unavailable {
        return format!("ALLOCATIONS: none, --alloc could not start: {why}");
    }
    format!(
        "ALLOCATIONS ~{}, ~{:.0} objects/s (estimated from {} samples){}",
        per_s(a.bytes_per_s),
        a.objects_per_s,
        a.samples,
        match a.live_bytes {
            Some(b) => format!(" · sampled objects no GC has collected ~{}", size(b)),
            None => " · live objects not followed on this runtime".to_string(),
        }
    )
}

/// Bytes per second, in the report's units.
fn per_s(b: f64) -> String {
    format!("{}/s", size(b))
}

fn size(b: f64) -> String {
    clrprof_analysis::text::bytes(b.max(0.0).round() as u64)
}

/// What was lost on the way, when anything was.
fn losses(st: &Status<'_>) -> String {
    let mut s = String::new();
    if st.lost > 0 {
        s += &format!(" · {} events lost (the agent's buffers were full)", st.lost);
    }
    if st.unreadable_bytes > 0 {
        s += &format!(" · {} trace bytes unreadable", st.unreadable_bytes);
    }
    s
}

/// `--once`: the same figures as plain text.
pub fn plain(snap: &Snapshot, st: &Status<'_>, rows: usize) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "pid {} ({}): CPU {:.0}% of one core over {:.1} s, {} samples; sorted by {}{}",
        st.pid,
        st.command,
        snap.cpu_pct,
        snap.span_s,
        snap.samples,
        sort_name(st.sort),
        st.filter
            .map(|f| format!(", thread {f}"))
            .unwrap_or_default()
    );
    let _ = writeln!(out, "{:>6} {:>6}  FUNCTION", "%SELF", "%TOTAL");
    for r in snap.rows.iter().take(rows) {
        let _ = writeln!(out, "{:6.1} {:6.1}  {}", r.self_pct, r.total_pct, r.name);
    }
    if !snap.threads.is_empty() {
        let _ = writeln!(out, "\n{:>6}  THREAD", "%CPU");
        for t in &snap.threads {
            let _ = writeln!(out, "{:6.1}  {} ({})", t.cpu_pct, t.name, t.os_tid);
        }
    }
    if let Some(w) = &snap.waits {
        let _ = writeln!(out, "\n{}", waits_summary(w));
        if w.unavailable.is_none() {
            let _ = writeln!(
                out,
                "{:>8} {:>10}  {:<40} WAITED MOST IN",
                "WAITS", "WAITED/S", "LOCK TYPE / KIND"
            );
            for r in w.rows.iter().take(rows) {
                let _ = writeln!(
                    out,
                    "{:>8} {:>10}  {:<40} {}",
                    r.waits,
                    ms_per_s(r.ns_per_s),
                    r.what,
                    r.waiter
                );
            }
        }
    }
    if let Some(a) = &snap.alloc {
        let _ = writeln!(out, "\n{}", alloc_summary(a));
        if a.unavailable.is_none() {
            let _ = writeln!(out, "{:>12}  TYPE", "BYTES/S");
            for r in a.types.iter().take(rows) {
                let _ = writeln!(out, "{:>12}  {}", per_s(r.self_per_s), r.name);
            }
            let _ = writeln!(
                out,
                "\n{:>12} {:>12}  APP METHOD (with the framework code it calls)",
                "BYTES/S", "TOTAL/S"
            );
            for r in a.methods.iter().take(rows) {
                let _ = writeln!(
                    out,
                    "{:>12} {:>12}  {}",
                    per_s(r.self_per_s),
                    per_s(r.total_per_s),
                    r.name
                );
            }
            if a.outside_per_s > 0.0 {
                let _ = writeln!(
                    out,
                    "{:>12} {:>12}  (no app frame: the runtime's and framework's own code)",
                    per_s(a.outside_per_s),
                    ""
                );
            }
        }
    }
    out
}
