//! `record --push URL`: continuous profiling into Grafana Pyroscope (docs/exports.md).
//! A thread of this process follows each trace the run's processes write (as `top`
//! does), and every `--push-every` seconds cuts the samples read since the last cut into
//! a pprof profile per process (CPU, with `--alloc` a memory one, with `--waits` the lock
//! waits and the wait-handle waits: Pyroscope files each pprof under one profile family),
//! which `upload` POSTs to `URL/ingest` on a thread of its own. Successive cuts cover
//! contiguous whole-second ranges; a sample belongs to the cut in which it was read (at
//! most one flush interval, 20 ms by default, after it was taken), a wait to the cut in
//! which its end was read.

pub(crate) use crate::push_args as args;
mod cut;
mod upload;

use std::collections::HashSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime};

use anyhow::{Result, bail};

use clrprof_analysis::report::push as push_note;
use clrprof_analysis::report::push::PushOutcome;

use crate::live::follow::Follow;
use args::{Endpoint, Labels};
use cut::{Cut, WaitFamily};
use upload::{OCTET_STREAM, Upload, Uploader};

/// How often the traces are read.
const TICK: Duration = Duration::from_millis(100);
/// How long the end of the recording waits for the last uploads.
const FINISH_WITHIN: Duration = Duration::from_secs(15);

/// What `--push` and its companions asked for.
#[derive(Debug, Clone)]
pub struct PushConfig {
    pub endpoint: Endpoint,
    pub every_s: u64,
    pub app: String,
    pub labels: Labels,
    /// `--no-trace`: unlink each trace once it is open.
    pub no_trace: bool,
    /// `--waits`: push the waits too.
    pub waits: bool,
}

impl PushConfig {
    /// The application name by default: the program's name (`dotnet app.dll`: `app`).
    pub fn default_app_name(command: &[String]) -> String {
        let base = |s: &str| {
            Path::new(s)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| s.to_string())
        };
        let name = match command {
            [dotnet, dll, ..] if base(dotnet) == "dotnet" && dll.ends_with(".dll") => {
                base(dll.trim_end_matches(".dll"))
            }
            [program, ..] => base(program),
            [] => "dotnet".to_string(),
        };
        // Keep it a valid name whatever the program is called.
        let clean: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "._-".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        if clean.is_empty() {
            "dotnet".into()
        } else {
            clean
        }
    }
}

/// Refuses a server that cannot be reached now, before anything starts: one TCP connect
/// (skipped when a proxy is set in the environment: the proxy connects).
pub fn probe(e: &Endpoint) -> Result<()> {
    use std::net::{TcpStream, ToSocketAddrs};
    let proxied = [
        "HTTPS_PROXY",
        "https_proxy",
        "HTTP_PROXY",
        "http_proxy",
        "ALL_PROXY",
        "all_proxy",
    ]
    .iter()
    .any(|v| std::env::var_os(v).is_some_and(|s| !s.is_empty()));
    if proxied {
        return Ok(());
    }
    let host = e.host.trim_start_matches('[').trim_end_matches(']');
    let addrs = match (host, e.port).to_socket_addrs() {
        Ok(a) => a.collect::<Vec<_>>(),
        Err(err) => bail!(
            "cannot resolve the host of the Pyroscope server {}: {err}; check the name in --push",
            e.base
        ),
    };
    let mut last = None;
    for a in &addrs {
        match TcpStream::connect_timeout(a, Duration::from_secs(5)) {
            Ok(_) => return Ok(()),
            Err(err) => last = Some(format!("{a}: {err}")),
        }
    }
    bail!(
        "cannot reach the Pyroscope server {} ({}): is it running and is the URL right? \
         (`curl {}/ready` should answer) Nothing was started.",
        e.base,
        last.unwrap_or_else(|| "no address".into()),
        e.base
    )
}

/// The `Authorization` header: `CLRPROF_PUSH_TOKEN` as a bearer token, else the URL's
/// `user:password` as basic authentication.
fn authorization(e: &Endpoint) -> Option<String> {
    use base64::Engine;
    if let Some(t) = std::env::var("CLRPROF_PUSH_TOKEN")
        .ok()
        .filter(|t| !t.is_empty())
    {
        return Some(format!("Bearer {t}"));
    }
    let (u, p) = e.basic.as_ref()?;
    Some(format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{u}:{p}"))
    ))
}

/// What the pushing did, said at the end.
pub struct Summary {
    pub endpoint: String,
    pub cuts: u64,
    pub sent: u64,
    pub failed: u64,
    pub queue_full: u64,
    pub samples_dropped: u64,
    pub last_error: Option<String>,
    /// Per followed trace, its figures: the note `add_notes` appends to it.
    pub per_trace: Vec<(PathBuf, PushOutcome)>,
}

impl Summary {
    /// Appends to each trace the pushing's figures for its process (a `Meta` record
    /// `push`, in a block after the agent's last, as the line table is), so `clrprof
    /// report` says them too. Not to a trace that is gone (`--no-trace`) or whose recording
    /// did not end well.
    pub fn add_notes(&self, ended_well: impl Fn(&Path) -> bool) {
        for (path, outcome) in &self.per_trace {
            if !path.exists() || !ended_well(path) {
                continue;
            }
            let json = serde_json::to_string(outcome).unwrap_or_default();
            if let Err(e) = crate::travel::append_meta(path, push_note::META_KEY, &json) {
                eprintln!(
                    "clrprof: {} {}: the push figures were not added to it: {e:#}",
                    crate::style::warning("warning:"),
                    path.display()
                );
            }
        }
    }

    pub fn say(&self) {
        let dropped = self.failed + self.queue_full;
        if dropped == 0 && self.samples_dropped == 0 {
            eprintln!(
                "clrprof: pushed {} profile{} to {}",
                self.sent,
                if self.sent == 1 { "" } else { "s" },
                self.endpoint
            );
            return;
        }
        let mut why = Vec::new();
        if self.failed > 0 {
            why.push(format!(
                "{} failed after {} tries{}",
                self.failed,
                upload::ATTEMPTS,
                self.last_error
                    .as_ref()
                    .map(|e| format!(" (last: {e})"))
                    .unwrap_or_default()
            ));
        }
        if self.queue_full > 0 {
            why.push(format!(
                "{} found the upload queue ({} profiles) full",
                self.queue_full,
                upload::QUEUE
            ));
        }
        let mut line = format!(
            "clrprof: {} pushed {} of {} profiles to {}",
            crate::style::warning("warning:"),
            self.sent,
            self.cuts,
            self.endpoint
        );
        if dropped > 0 {
            let _ = write!(line, "; {dropped} dropped: {}", why.join(", "));
        }
        if self.samples_dropped > 0 {
            let _ = write!(
                line,
                "; {} samples left out (more than {} in one interval)",
                self.samples_dropped,
                cut::MAX_SAMPLES
            );
        }
        eprintln!("{line}");
    }
}

/// The pushing thread of a recording.
pub struct Session {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Summary>,
}

impl Session {
    /// Starts following the traces the processes of `run_dir` name.
    pub fn start(cfg: PushConfig, run_dir: PathBuf, rate_hz: u32) -> Result<Session> {
        Session::spawn(cfg, Traces::RunDir(run_dir), rate_hz)
    }

    /// Starts following the trace an attached agent writes for `pid`.
    pub fn start_attached(
        cfg: PushConfig,
        pid: u32,
        trace: PathBuf,
        rate_hz: u32,
    ) -> Result<Session> {
        Session::spawn(cfg, Traces::One(pid, trace), rate_hz)
    }

    fn spawn(cfg: PushConfig, traces: Traces, rate_hz: u32) -> Result<Session> {
        let stop = Arc::new(AtomicBool::new(false));
        let s = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("clrprof-cut".into())
            .spawn(move || cut_loop(&cfg, &traces, rate_hz, &s))?;
        Ok(Session { stop, thread })
    }

    /// After the recording ended: the last cut, the last uploads (bounded), the figures.
    pub fn finish(self) -> Option<Summary> {
        self.stop.store(true, Ordering::SeqCst);
        self.thread.join().ok()
    }
}

/// Which traces to follow.
enum Traces {
    /// Those the processes of a `record -- command` run name.
    RunDir(PathBuf),
    /// The one trace of `record --pid`.
    One(u32, PathBuf),
}

impl Traces {
    fn named(&self) -> Vec<(u32, PathBuf)> {
        match self {
            Traces::RunDir(d) => named_traces(d),
            Traces::One(pid, p) => vec![(*pid, p.clone())],
        }
    }
}

/// `record --pid --push`: pushes while the attached recording runs; the last cut and
/// uploads happen when this is dropped (after the detach), and their figures are said.
pub struct Attached(Option<Session>);

impl Attached {
    pub fn start(
        args: &crate::cli::RecordArgs,
        pid: u32,
        trace: &Path,
        rate_hz: u32,
    ) -> Result<Attached> {
        let Some(endpoint) = &args.push else {
            return Ok(Attached(None));
        };
        let command: Vec<String> = std::fs::read(format!("/proc/{pid}/cmdline"))
            .map(|b| {
                String::from_utf8_lossy(&b)
                    .split('\0')
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default();
        let cfg = PushConfig {
            endpoint: (**endpoint).clone(),
            every_s: args.push_every,
            app: args
                .app_name
                .clone()
                .unwrap_or_else(|| PushConfig::default_app_name(&command)),
            labels: args.labels.clone().unwrap_or_default(),
            no_trace: false,
            waits: args.waits,
        };
        Ok(Attached(Some(Session::start_attached(
            cfg,
            pid,
            trace.to_path_buf(),
            rate_hz,
        )?)))
    }
}

impl Drop for Attached {
    fn drop(&mut self) {
        if let Some(summary) = self.0.take().and_then(Session::finish) {
            summary.say();
            // The attached agent has detached: its trace is complete.
            summary.add_notes(|_| true);
        }
    }
}

struct Source {
    pid: u32,
    path: PathBuf,
    follow: Follow,
    cut: Cut,
    runtime: Option<String>,
    /// Profiles cut of this trace.
    profiles: u64,
}

fn unix_now_s() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// The traces the run's processes named so far (`<pid>.trace` notes in the run
/// directory, see `output::RunDir`).
pub(crate) fn named_traces(run_dir: &Path) -> Vec<(u32, PathBuf)> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(run_dir).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name.strip_suffix(".trace").and_then(|p| p.parse().ok()) else {
            continue;
        };
        if let Ok(text) = std::fs::read_to_string(e.path()) {
            v.push((pid, PathBuf::from(text.trim_end_matches('\n'))));
        }
    }
    v
}

/// `--no-trace`: removes the run's traces (those the pusher has open are gone already);
/// returns how many the run named.
pub fn forget_traces(run_dir: &Path) -> usize {
    let named = named_traces(run_dir);
    for (_, path) in &named {
        let _ = std::fs::remove_file(path);
        let _ = std::fs::remove_file(crate::output::lost_note_path(path));
    }
    named.len()
}

/// `8.0.11.0` from the trace's header, once it is written.
fn runtime_version(path: &Path) -> Option<String> {
    use std::io::Read;
    let mut head = Vec::new();
    std::fs::File::open(path)
        .ok()?
        .take(1 << 20)
        .read_to_end(&mut head)
        .ok()?;
    let (h, _) = clrprof_format::Header::parse(&head).ok()?;
    let v = h.meta.runtime_version?;
    let v = v.split_whitespace().next()?.to_string();
    Some(v)
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

/// Percent-encodes all but the unreserved characters.
fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// `APP{k=v,…}`: the defaults, then `--labels` (which replace a default of the same key).
/// For pprof, Pyroscope takes the name as the application's and the profile type from
/// the pprof's sample types (no `.cpu` suffix: it would become part of `service_name`).
fn series_name(cfg: &PushConfig, defaults: &[(&str, String)]) -> String {
    let mut labels: Vec<(String, String)> = defaults
        .iter()
        .filter(|(k, _)| !cfg.labels.0.iter().any(|(uk, _)| uk == k))
        .map(|(k, v)| (k.to_string(), label_value(v)))
        .collect();
    labels.extend(cfg.labels.0.iter().cloned());
    let inner: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("{}{{{}}}", cfg.app, inner.join(","))
}

/// A value from the machine (host name, runtime version) made safe for the name syntax.
fn label_value(v: &str) -> String {
    v.chars()
        .map(|c| {
            if "{},=\"&".contains(c) || c.is_whitespace() {
                '_'
            } else {
                c
            }
        })
        .collect()
}

fn query(name: &str, from: u64, until: u64, rate_hz: u32) -> String {
    format!(
        "name={}&from={from}&until={until}&format=pprof&sampleRate={rate_hz}&spyName=clrprof",
        encode(name)
    )
}

/// The query of a profile sent as a multipart form (the wait families): no `format`,
/// since Pyroscope's ingest reads the body of a `format=pprof` request as a bare pprof and
/// never looks for the form's `sample_type_config` (`format` absent and a
/// `multipart/form-data` body is its form path); no `sampleRate`, a rate of samples that
/// means nothing for waits.
fn form_query(name: &str, from: u64, until: u64) -> String {
    format!(
        "name={}&from={from}&until={until}&spyName=clrprof",
        encode(name)
    )
}

/// The wait families pushed for a process on runtime `runtime` (`8.0.11.0`): none without
/// `--waits`; the locks' always; the wait handles' once the runtime is known to be .NET 9
/// or later (8 raises no wait-handle events, docs/waits.md: an empty family there would
/// say nothing waited).
fn wait_families(waits: bool, runtime: Option<&str>) -> Vec<WaitFamily> {
    if !waits {
        return Vec::new();
    }
    let major = runtime
        .and_then(|r| r.split('.').next())
        .and_then(|m| m.parse::<u32>().ok());
    let mut v = vec![WaitFamily::Mutex];
    if major.is_some_and(|m| m >= 9) {
        v.push(WaitFamily::Block);
    }
    v
}

fn cut_loop(cfg: &PushConfig, traces: &Traces, rate_hz: u32, stop: &AtomicBool) -> Summary {
    let uploader = Uploader::start(&cfg.endpoint, authorization(&cfg.endpoint));
    let host = hostname();
    let interval_ns = 1_000_000_000 / u64::from(rate_hz.max(1));
    let mut sources: Vec<Source> = Vec::new();
    let mut seen: HashSet<PathBuf> = HashSet::new();
    let mut from = unix_now_s();
    let mut cuts = 0u64;
    loop {
        // Read before the last poll: once set, the processes have ended and their
        // traces are complete.
        let stopping = stop.load(Ordering::SeqCst);
        for (pid, path) in traces.named() {
            if seen.contains(&path) {
                continue;
            }
            if let Ok(follow) = Follow::open(&path) {
                seen.insert(path.clone());
                sources.push(Source {
                    pid,
                    path,
                    follow,
                    cut: Cut::default(),
                    runtime: None,
                    profiles: 0,
                });
            }
        }
        for s in &mut sources {
            // A read error leaves this poll's blocks for the next.
            if let Ok(events) = s.follow.poll() {
                s.cut.add(events);
            }
        }
        let now = unix_now_s();
        if stopping || now >= from + cfg.every_s {
            // Never an empty range, even at a quick end.
            let until = now.max(from + 1);
            for (source, s) in sources.iter_mut().enumerate() {
                if s.runtime.is_none() {
                    s.runtime = runtime_version(&s.path);
                }
                if cfg.no_trace {
                    // Its header was read: from now on only our descriptor holds it.
                    let _ = std::fs::remove_file(&s.path);
                }
                let mut defaults = vec![("host", host.clone()), ("pid", s.pid.to_string())];
                if let Some(r) = &s.runtime {
                    defaults.push(("runtime_version", r.clone()));
                }
                let name = series_name(cfg, &defaults);
                let families = wait_families(cfg.waits, s.runtime.as_deref());
                let profiles = s.cut.cut(from, until, interval_ns, &cfg.app, &families);
                for body in std::iter::once(profiles.cpu).chain(profiles.memory) {
                    uploader.send(Upload {
                        query: query(&name, from, until, rate_hz),
                        body,
                        content_type: OCTET_STREAM.into(),
                        source,
                    });
                    cuts += 1;
                    s.profiles += 1;
                }
                // The wait families need their `sample_type_config`: a form of two parts.
                for (family, pprof) in profiles.waits {
                    let (content_type, body) = upload::multipart(&[
                        ("profile", "profile.pprof", OCTET_STREAM, pprof.as_slice()),
                        (
                            "sample_type_config",
                            "sample_type_config.json",
                            "application/json",
                            family.sample_type_config().as_bytes(),
                        ),
                    ]);
                    uploader.send(Upload {
                        query: form_query(&name, from, until),
                        body,
                        content_type,
                        source,
                    });
                    cuts += 1;
                    s.profiles += 1;
                }
            }
            from = until;
        }
        if stopping {
            break;
        }
        std::thread::sleep(TICK);
    }
    let samples_dropped = sources.iter().map(|s| s.cut.dropped).sum();
    let counts = uploader.finish(FINISH_WITHIN);
    let last_error = counts.last_error.lock().ok().and_then(|e| e.clone());
    let per_trace = sources
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let c = counts.of(i);
            // What was neither sent nor refused by the full queue failed (after its
            // tries, or unsent when the end's wait was over).
            let failed = s.profiles.saturating_sub(c.sent + c.queue_full);
            let outcome = PushOutcome {
                endpoint: cfg.endpoint.base.clone(),
                profiles: s.profiles,
                sent: c.sent,
                failed,
                queue_full: c.queue_full,
                attempts: upload::ATTEMPTS,
                queue: upload::QUEUE as u64,
                last_error: (failed > 0).then(|| last_error.clone()).flatten(),
                samples_dropped: s.cut.dropped,
                samples_max: cut::MAX_SAMPLES as u64,
            };
            (s.path.clone(), outcome)
        })
        .collect();
    Summary {
        endpoint: cfg.endpoint.base.clone(),
        cuts,
        sent: counts.sent.load(Ordering::SeqCst),
        failed: counts.failed.load(Ordering::SeqCst),
        queue_full: counts.queue_full.load(Ordering::SeqCst),
        samples_dropped,
        last_error,
        per_trace,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_queries() {
        let cfg = PushConfig {
            endpoint: args::parse_url("http://h:1").unwrap(),
            every_s: 15,
            app: "shop".into(),
            labels: args::parse_labels("env=prod,host=web1").unwrap(),
            no_trace: false,
            waits: false,
        };
        let name = series_name(&cfg, &[("host", "box".into()), ("pid", "7".into())]);
        assert_eq!(name, "shop{pid=7,env=prod,host=web1}");
        assert_eq!(
            query(&name, 10, 25, 99),
            "name=shop%7Bpid%3D7%2Cenv%3Dprod%2Chost%3Dweb1%7D&from=10&until=25&format=pprof&sampleRate=99&spyName=clrprof"
        );
        let app = |c: &[&str]| {
            PushConfig::default_app_name(&c.iter().map(|s| s.to_string()).collect::<Vec<_>>())
        };
        assert_eq!(
            app(&["/usr/bin/dotnet", "/srv/Shop.Api.dll", "x"]),
            "Shop.Api"
        );
        assert_eq!(app(&["./my app"]), "my_app");
        assert_eq!(
            form_query(&name, 10, 25),
            "name=shop%7Bpid%3D7%2Cenv%3Dprod%2Chost%3Dweb1%7D&from=10&until=25&spyName=clrprof"
        );
    }

    #[test]
    fn wait_families_follow_waits_and_the_runtime() {
        assert_eq!(wait_families(false, Some("10.0.1.0")), []);
        assert_eq!(wait_families(true, None), [WaitFamily::Mutex]);
        assert_eq!(wait_families(true, Some("8.0.11.0")), [WaitFamily::Mutex]);
        assert_eq!(
            wait_families(true, Some("9.0.2.0")),
            [WaitFamily::Mutex, WaitFamily::Block]
        );
    }

    #[test]
    fn basic_authentication_from_the_url() {
        // The bearer token (CLRPROF_PUSH_TOKEN) is checked by tests/push.rs.
        if std::env::var_os("CLRPROF_PUSH_TOKEN").is_some() {
            return;
        }
        let e = args::parse_url("https://user:pa55@pyro.example").unwrap();
        assert_eq!(authorization(&e).as_deref(), Some("Basic dXNlcjpwYTU1"));
        assert_eq!(authorization(&args::parse_url("http://h").unwrap()), None);
    }
}
