//! `clrprof-bench push-soak`: `record --alloc --push` against a stand-in Pyroscope server
//! on loopback for a number of minutes, on an app that allocates steadily
//! (Scenarios `alloc-loop`), printing the CLI's and the target's RSS every minute and the
//! slope of each from the second minute on (the first settles the runtime, the JIT and
//! the CLI's name tables), beside the same app run without the profiler (the baseline:
//! what the runtime's own heap does). Mostly idle CPU: run it in the background.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::soak::rss_kb;

/// A server on a free loopback port that answers every request 200 and counts them and
/// their body bytes.
fn serve() -> Result<(u16, Arc<AtomicU64>, Arc<AtomicU64>)> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    let (requests, bytes) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let (r, b) = (Arc::clone(&requests), Arc::clone(&bytes));
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let (r, b) = (Arc::clone(&r), Arc::clone(&b));
            std::thread::spawn(move || {
                let mut rd = BufReader::new(conn);
                loop {
                    let mut line = String::new();
                    if rd.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let mut len = 0usize;
                    loop {
                        let mut h = String::new();
                        if rd.read_line(&mut h).unwrap_or(0) == 0 {
                            return;
                        }
                        let h = h.trim_end();
                        if h.is_empty() {
                            break;
                        }
                        if let Some((k, v)) = h.split_once(':')
                            && k.eq_ignore_ascii_case("content-length")
                        {
                            len = v.trim().parse().unwrap_or(0);
                        }
                    }
                    let mut body = vec![0; len];
                    if rd.read_exact(&mut body).is_err() {
                        return;
                    }
                    r.fetch_add(1, Ordering::Relaxed);
                    b.fetch_add(len as u64, Ordering::Relaxed);
                    let _ = rd
                        .get_mut()
                        .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
                }
            });
        }
    });
    Ok((port, requests, bytes))
}

/// Least-squares slope of `ys` over `xs`.
fn slope(xs: &[f64], ys: &[f64]) -> f64 {
    let n = xs.len() as f64;
    if n < 2.0 {
        return 0.0;
    }
    let (mx, my) = (xs.iter().sum::<f64>() / n, ys.iter().sum::<f64>() / n);
    let num: f64 = xs.iter().zip(ys).map(|(x, y)| (x - mx) * (y - my)).sum();
    let den: f64 = xs.iter().map(|x| (x - mx) * (x - mx)).sum();
    if den == 0.0 { 0.0 } else { num / den }
}

pub fn run(clrprof: &Path, minutes: u64, every: u64) -> Result<()> {
    let app = clrprof_testkit::app("Scenarios");
    let dir = crate::scratch().join("push-soak");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let (port, requests, bytes) = serve()?;
    let stderr = std::fs::File::create(dir.join("stderr.txt"))?;
    let trace = dir.join("t.clrprof");
    let mut child = Command::new(clrprof)
        .args(["record", "-q", "--alloc", "--push"])
        .arg(format!("http://127.0.0.1:{port}"))
        .args(["--push-every", &every.to_string(), "-o"])
        .arg(&trace)
        .arg("--")
        .arg(clrprof_testkit::dotnet())
        .arg(&app.dll)
        .arg("alloc-loop")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .context("start clrprof record --push")?;
    let cli = child.id();
    let mut line = String::new();
    BufReader::new(child.stdout.take().context("stdout")?).read_line(&mut line)?;
    let target: u32 = line
        .trim()
        .strip_prefix("READY ")
        .with_context(|| format!("no READY line from the app: {line:?}"))?
        .parse()?;
    // The same app without the profiler, for the runtime's own drift.
    let mut plain = crate::dotnet_app(&app, &["alloc-loop"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let mut line = String::new();
    BufReader::new(plain.stdout.take().context("stdout")?).read_line(&mut line)?;
    let baseline: u32 = line
        .trim()
        .strip_prefix("READY ")
        .with_context(|| format!("no READY line from the baseline app: {line:?}"))?
        .parse()?;
    println!(
        "push-soak: record --alloc --push http://127.0.0.1:{port} --push-every {every} -- dotnet Scenarios.dll alloc-loop; \
         clrprof pid {cli}, target pid {target}; {minutes} minutes"
    );
    println!(
        "minute  clrprof RSS KiB  target RSS KiB  baseline RSS KiB  profiles received  bytes received"
    );
    let started = Instant::now();
    let (mut xs, mut cli_rss, mut target_rss, mut base_rss) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for m in 1..=minutes {
        let at = started + Duration::from_secs(60 * m);
        std::thread::sleep(at.saturating_duration_since(Instant::now()));
        let (c, t, b) = (rss_kb(cli), rss_kb(target), rss_kb(baseline));
        println!(
            "{m:>6}  {c:>15}  {t:>14}  {b:>16}  {:>17}  {:>14}",
            requests.load(Ordering::Relaxed),
            bytes.load(Ordering::Relaxed)
        );
        if m >= 2 {
            xs.push(m as f64);
            cli_rss.push(c as f64);
            target_rss.push(t as f64);
            base_rss.push(b as f64);
        }
    }
    if let Some(mut stdin) = child.stdin.take() {
        let _ = writeln!(stdin, "quit");
    }
    let status = child.wait()?;
    if let Some(mut stdin) = plain.stdin.take() {
        let _ = writeln!(stdin, "quit");
    }
    let _ = plain.wait();
    let said = std::fs::read_to_string(dir.join("stderr.txt")).unwrap_or_default();
    println!(
        "slope from minute 2: clrprof {:+.1} KiB/min, target {:+.1} KiB/min, baseline {:+.1} KiB/min; \
         clrprof exited {status}",
        slope(&xs, &cli_rss),
        slope(&xs, &target_rss),
        slope(&xs, &base_rss)
    );
    for l in said.lines().filter(|l| l.contains("push")) {
        println!("  {l}");
    }
    Ok(())
}
