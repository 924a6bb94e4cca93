//! `clrprof top --pid PID` / `clrprof top -- <command…>`: a live view of the hottest
//! functions. The agent samples in the target (attached, or loaded at the command's
//! start) into a trace file that this process follows (`live::follow`); `window` turns the
//! last seconds of samples into CPU percentages, `view` draws them every `--interval`.
//! Keys: q, Esc or Ctrl-C quit and detach (SIGINT/SIGTERM/SIGHUP too); s, t, n sort; f
//! steps through the threads, a shows all again; p pauses. `--once` prints one plain
//! snapshot and detaches.

mod allocs;
mod view;
mod waits;
mod window;

use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};

use crate::cli::{TopArgs, TopSort};
use crate::live::target::{Live, LiveOptions};
use view::Status;
use window::{Snapshot, Window};

/// How often the trace is read and keys are looked at.
const TICK: Duration = Duration::from_millis(50);

pub fn run(args: TopArgs) -> Result<i32> {
    use std::io::IsTerminal;
    if !args.once && !std::io::stdout().is_terminal() {
        bail!(
            "`clrprof top` draws on a terminal and stdout is not one: use `clrprof top --once` in scripts"
        );
    }
    let opts = LiveOptions {
        rate_hz: args.sampling.settings.rate_hz,
        sampler: args.sampling.sampler(),
        profiler: args.profiler.as_deref(),
        keep: args.output.as_deref(),
        alloc: args.alloc,
        waits: args.waits,
    };
    let mut live = match args.pid {
        Some(pid) => Live::attach(pid, "top", &opts)?,
        None => {
            let log =
                std::env::current_dir()?.join(format!("clrprof-top-{}.log", std::process::id()));
            let live = Live::launch(&args.command, &log, "top", &opts)?;
            eprintln!(
                "clrprof: started pid {}; its output goes to {}",
                live.pid,
                log.display()
            );
            live
        }
    };
    let command = command_line(live.pid);
    let mut window = Window::new(Duration::from_secs_f64(args.window));
    window.pid = Some(live.pid);
    let interval = Duration::from_secs_f64(args.interval);
    crate::signals::catch();
    let outcome = if args.once {
        once(&mut live, window, interval, &args, &command)
    } else {
        interactive(&mut live, window, interval, &args, &command)
    };
    let pid = live.pid;
    let launched = live.launched();
    let stopped = live.stop();
    let ended = outcome?;
    match stopped? {
        Some(took) => eprintln!(
            "clrprof: detached from pid {pid} in {:.0} ms; the profiler library stays mapped, inert, for the next attach",
            took.as_secs_f64() * 1e3
        ),
        None if ended => eprintln!("clrprof: pid {pid} exited"),
        None if launched => eprintln!("clrprof: stopped pid {pid}"),
        None => {}
    }
    if let Some(kept) = &live.kept {
        eprintln!(
            "clrprof: the samples are in {}; see them with `clrprof report {}`",
            kept.display(),
            kept.display()
        );
    }
    Ok(0)
}

fn command_line(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| {
            String::from_utf8_lossy(&b)
                .split('\0')
                .filter(|s| !s.is_empty())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}

/// `--once`: samples for one interval, prints, returns whether the target ended.
fn once(
    live: &mut Live,
    mut window: Window,
    interval: Duration,
    args: &TopArgs,
    command: &str,
) -> Result<bool> {
    let end = Instant::now() + interval;
    let mut ended = false;
    while Instant::now() < end && crate::signals::received().is_none() {
        window.add(live.follow.poll()?, Instant::now());
        if !live.running() {
            ended = true;
            break;
        }
        std::thread::sleep(TICK);
    }
    window.add(live.follow.poll()?, Instant::now());
    let snap = window.snapshot(Instant::now(), args.thread.as_deref(), args.sort);
    let status = Status {
        pid: live.pid,
        command,
        sort: args.sort,
        filter: args.thread.as_deref(),
        paused: false,
        total_samples: window.total_samples,
        lost: window.lost,
        unreadable_bytes: live.follow.skipped_bytes,
    };
    crate::stdout::write_text(&view::plain(&snap, &status, args.top))?;
    Ok(ended)
}

/// The terminal view until a quit key or signal, or the target's end (then `true`).
fn interactive(
    live: &mut Live,
    mut window: Window,
    interval: Duration,
    args: &TopArgs,
    command: &str,
) -> Result<bool> {
    // Restores the terminal on a panic too.
    let mut terminal = ratatui::try_init()?;
    let result = (|| -> Result<bool> {
        let mut sort = args.sort;
        let mut filter: Option<String> = args.thread.clone();
        let mut filter_label: Option<String> = filter.clone();
        let mut paused = false;
        let mut snap = Snapshot::default();
        let mut threads: Vec<(u64, String)> = Vec::new();
        let mut last_refresh: Option<Instant> = None;
        let mut dirty = true;
        loop {
            if crate::signals::received().is_some() {
                return Ok(false);
            }
            let now = Instant::now();
            window.add(live.follow.poll()?, now);
            if !live.running() {
                return Ok(true);
            }
            if !paused && last_refresh.is_none_or(|t| now.duration_since(t) >= interval) {
                snap = window.snapshot(now, filter.as_deref(), sort);
                threads = window
                    .snapshot(now, None, sort)
                    .threads
                    .iter()
                    .map(|t| (t.os_tid, t.name.clone()))
                    .collect();
                last_refresh = Some(now);
                dirty = true;
            }
            if dirty {
                let status = Status {
                    pid: live.pid,
                    command,
                    sort,
                    filter: filter_label.as_deref(),
                    paused,
                    total_samples: window.total_samples,
                    lost: window.lost,
                    unreadable_bytes: live.follow.skipped_bytes,
                };
                terminal.draw(|f| view::draw(f, &snap, &status))?;
                dirty = false;
            }
            if !event::poll(TICK)? {
                continue;
            }
            let Event::Key(k) = event::read()? else {
                dirty = true; // a resize
                continue;
            };
            if k.kind != KeyEventKind::Press {
                continue;
            }
            match k.code {
                KeyCode::Char('q') | KeyCode::Esc => return Ok(false),
                KeyCode::Char('c') if k.modifiers.contains(KeyModifiers::CONTROL) => {
                    return Ok(false);
                }
                KeyCode::Char('s') => sort = TopSort::Own,
                KeyCode::Char('t') => sort = TopSort::Total,
                KeyCode::Char('n') => sort = TopSort::Name,
                KeyCode::Char('p') => paused = !paused,
                KeyCode::Char('a') => {
                    filter = None;
                    filter_label = None;
                }
                KeyCode::Char('f') if !threads.is_empty() => {
                    // The next thread after the one shown, by CPU order.
                    let at = filter
                        .as_deref()
                        .and_then(|f| threads.iter().position(|t| t.0.to_string() == f));
                    let (tid, name) = &threads[at.map_or(0, |i| (i + 1) % threads.len())];
                    filter = Some(tid.to_string());
                    filter_label = Some(format!("{name} ({tid})"));
                }
                _ => continue,
            }
            // A key changes what is shown: redraw now (a paused view is recomputed once,
            // sorted or filtered the new way, and stays so).
            if !paused {
                last_refresh = None;
            } else {
                snap = window.snapshot(now, filter.as_deref(), sort);
            }
            dirty = true;
        }
    })();
    ratatui::restore();
    result
}
