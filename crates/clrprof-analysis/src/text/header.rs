//! The report's heading: the process, how it was recorded, and what went wrong while
//! recording or reading.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::escape::escape_controls;
use super::units::ns;
use crate::report::{SamplerStats, SamplerTiming, TraceInfo, WriteFailure};

/// The process, the recording mode, the runtime and the duration.
pub fn trace(o: &mut String, t: &TraceInfo) {
    let _ = writeln!(
        o,
        "clrprof report — pid {} ({} mode{})",
        t.pid,
        t.mode.as_str(),
        if t.attached { ", attached" } else { "" }
    );
    // Each argument escaped on its own: a line break inside one stays visible as `\n`.
    let command: Vec<_> = t.command_line.iter().map(|a| escape_controls(a)).collect();
    let _ = writeln!(o, "  command:  {}", command.join(" "));
    let _ = writeln!(
        o,
        "  runtime:  {}",
        escape_controls(t.runtime_version.as_deref().unwrap_or("unknown"))
    );
    let _ = writeln!(o, "  duration: {}", ns(t.duration_ns));
}

/// Events lost, and why; nothing when none were.
pub fn lost(
    o: &mut String,
    lost_events: u64,
    by_reason: &BTreeMap<String, u64>,
    write_failures: &[WriteFailure],
) {
    if lost_events == 0 {
        return;
    }
    let why: Vec<String> = by_reason
        .iter()
        .map(|(reason, n)| {
            let text = match reason.as_str() {
                "buffer_full" => "a thread's buffer was full (--on-full drop)".to_string(),
                "write_failed" => match write_failures.first() {
                    Some(w) => format!("the trace file refused writes: {}", w.error),
                    None => "the trace file refused writes".to_string(),
                },
                "stopping" => "they arrived while the recording was stopping".to_string(),
                "max_size" => "the trace reached --max-size and recording stopped (the app ran on)"
                    .to_string(),
                _ => "reason not recorded".to_string(),
            };
            format!("{n} because {text}")
        })
        .collect();
    let _ = writeln!(
        o,
        "  LOST:     {} events could not be recorded: {}",
        lost_events,
        why.join("; ")
    );
}

/// The sampler's shortcomings; nothing when it had none.
pub fn sampler(o: &mut String, s: Option<&SamplerStats>) {
    if let Some(s) = s
        && (s.truncated_stacks > 0
            || s.missed_ticks > 0
            || s.signal_timeouts > 0
            || s.rejected_walks.unwrap_or(0) > 0
            || s.skipped.is_some_and(|k| k.any()))
    {
        let _ = write!(
            o,
            "  sampler:  {} ticks, {} missed (the sampler fell behind), {} threads did not answer in time, \
             {} stacks truncated at {} frames (--max-depth)",
            s.ticks, s.missed_ticks, s.signal_timeouts, s.truncated_stacks, s.max_depth
        );
        if let Some(n) = s.rejected_walks
            && n > 0
        {
            let _ = write!(
                o,
                ", {} walks met a frame record whose return address follows no call (that \
                 frame is shown as native code, not as a method)",
                n
            );
        }
        if let Some(k) = s.skipped.filter(|k| k.any()) {
            let _ = write!(
                o,
                "; threads left out of a tick: {} whose previous signal's handler had not run yet \
                 (no free core since, or SIGPROF blocked; that sample came when it ran), {} for \
                 want of a free capture slot, {} signals lost (the thread exited first)",
                k.handler_pending, k.no_free_slot, k.signals_lost
            );
        }
        let _ = writeln!(o);
    }
    if let Some(t) = s.and_then(|s| s.timing.as_ref()) {
        rate(o, t);
    }
}

/// The rate the sampler kept, when it kept less than 99 % of it: what took the rest.
fn rate(o: &mut String, t: &SamplerTiming) {
    let missed = t.missed_own_work + t.missed_not_scheduled;
    if t.achieved_ratio >= 0.99 && missed == 0 {
        return;
    }
    let _ = write!(
        o,
        "  rate:     {:.0} Hz asked, {:.0} Hz achieved ({:.1} % of {} ticks due)",
        t.asked_hz,
        t.achieved_hz,
        t.achieved_ratio * 100.0,
        t.due_ticks
    );
    if missed == 0 {
        let _ = writeln!(o);
        return;
    }
    let mut why = Vec::new();
    if t.missed_own_work > 0 {
        why.push(format!(
            "{} ticks missed because the ticks' own work ran past the next deadlines: a tick \
             took {} on average against an interval of {} (longest {}), {} of it stopping the \
             threads and copying their stacks (in signal mode, signalling the threads and \
             collecting the captures whose handlers had run)",
            t.missed_own_work,
            ns(t.tick_ns),
            ns((1e9 / t.asked_hz) as u64),
            ns(t.longest_tick_ns),
            ns(t.capture_ns),
        ));
    }
    if t.missed_not_scheduled > 0 {
        why.push(format!(
            "{} because the sampler thread was not scheduled in time (longest wake-up delay \
             {}: the cores were busy)",
            t.missed_not_scheduled,
            ns(t.longest_wake_delay_ns),
        ));
    }
    let _ = writeln!(o, "; {}", why.join("; "));
}

/// Problems met while reading the file.
pub fn warnings(o: &mut String, warnings: &[String]) {
    for w in warnings {
        let _ = writeln!(o, "  warning:  {w}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_process_and_its_recording() {
        let t = TraceInfo {
            pid: 42,
            command_line: vec!["dotnet".into(), "app.dll".into()],
            mode: clrprof_settings::Mode::Sample,
            runtime_version: None,
            agent_version: "0.1.0".into(),
            format_version: "1.2".into(),
            attached: true,
            duration_ns: 25_000_000,
            settings: clrprof_settings::Settings::unrecorded(),
        };
        let mut o = String::new();
        trace(&mut o, &t);
        assert_eq!(
            o,
            "clrprof report — pid 42 (sample mode, attached)\n  command:  dotnet app.dll\n  \
             runtime:  unknown\n  duration: 25.0 ms\n"
        );
    }

    #[test]
    fn lost_events_say_why() {
        let mut o = String::new();
        lost(&mut o, 0, &BTreeMap::new(), &[]);
        assert_eq!(o, "");
        let by_reason = BTreeMap::from([
            ("buffer_full".to_string(), 3),
            ("write_failed".to_string(), 4),
        ]);
        let failure = WriteFailure {
            errno: 28,
            error: "ENOSPC (No space left on device)".into(),
            blocks: 1,
            events: 4,
        };
        lost(&mut o, 7, &by_reason, &[failure]);
        assert_eq!(
            o,
            "  LOST:     7 events could not be recorded: 3 because a thread's buffer was full \
             (--on-full drop); 4 because the trace file refused writes: ENOSPC (No space left on \
             device)\n"
        );
    }

    #[test]
    fn the_sampler_only_when_it_fell_short() {
        let mut o = String::new();
        let mut s = SamplerStats {
            ticks: 100,
            samples: 300,
            max_depth: 64,
            ..Default::default()
        };
        sampler(&mut o, None);
        sampler(&mut o, Some(&s));
        assert_eq!(o, "");
        s.missed_ticks = 2;
        sampler(&mut o, Some(&s));
        assert_eq!(
            o,
            "  sampler:  100 ticks, 2 missed (the sampler fell behind), 0 threads did not answer \
             in time, 0 stacks truncated at 64 frames (--max-depth)\n"
        );
    }

    #[test]
    fn the_rate_says_why_ticks_were_missed() {
        let mut t = SamplerTiming {
            asked_hz: 999.0,
            achieved_hz: 990.0,
            due_ticks: 9990,
            achieved_ratio: 0.991,
            ..Default::default()
        };
        let mut o = String::new();
        rate(&mut o, &t);
        assert_eq!(o, "", "99 % kept, none missed: nothing to say");
        t.achieved_hz = 750.0;
        t.achieved_ratio = 0.75;
        t.missed_own_work = 2000;
        t.missed_not_scheduled = 497;
        t.longest_tick_ns = 12_500_000;
        t.longest_wake_delay_ns = 31_000_000;
        t.tick_ns = 1_200_000;
        t.capture_ns = 900_000;
        rate(&mut o, &t);
        assert!(
            o.starts_with(
                "  rate:     999 Hz asked, 750 Hz achieved (75.0 % of 9990 ticks due); 2000 \
                 ticks missed because the ticks' own work ran past the next deadlines: a tick \
                 took 1200.0 µs on average against an interval of 1001.0 µs (longest 12.5 ms), \
                 900.0 µs of it stopping"
            ),
            "{o}"
        );
        assert!(
            o.ends_with(
                "; 497 because the sampler thread was not scheduled in time (longest wake-up \
                 delay 31.0 ms: the cores were busy)\n"
            ),
            "{o}"
        );
    }

    #[test]
    fn one_line_per_warning() {
        let mut o = String::new();
        warnings(&mut o, &["truncated block".into(), "bad record".into()]);
        assert_eq!(o, "  warning:  truncated block\n  warning:  bad record\n");
    }
}
