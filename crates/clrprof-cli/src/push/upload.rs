//! The uploads, on a thread of their own: the cutting loop hands each profile over a
//! bounded queue and never waits for the network. Each upload is tried up to
//! [`ATTEMPTS`] times with a growing pause; one that still fails, or that finds the
//! queue full, is dropped and counted.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::args::Endpoint;

/// Profiles waiting to be sent at most; more are dropped (the server is too slow).
pub const QUEUE: usize = 16;
/// Tries per upload.
pub const ATTEMPTS: u32 = 3;
/// The pause before the second try; it doubles for each next one.
const FIRST_PAUSE: Duration = Duration::from_millis(500);
/// One request's limit, connecting and answering included (a server that hangs).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// One profile to send: the query after `/ingest?` and the gzip'd body, of the followed
/// trace `source`.
pub struct Upload {
    pub query: String,
    pub body: Vec<u8>,
    pub source: usize,
}

/// Per followed trace: profiles sent, and dropped because the queue was full.
#[derive(Debug, Clone, Copy, Default)]
pub struct SourceCounts {
    pub sent: u64,
    pub queue_full: u64,
}

#[derive(Default)]
pub struct Counts {
    pub sent: AtomicU64,
    /// Dropped after their last try failed.
    pub failed: AtomicU64,
    /// Dropped because the queue was full.
    pub queue_full: AtomicU64,
    /// Queued or being sent.
    pub pending: AtomicU64,
    /// Said on stderr once: the first failure.
    pub warned: AtomicBool,
    pub last_error: Mutex<Option<String>>,
    /// Set when the recording ends: no more pauses between tries.
    pub closing: AtomicBool,
    /// The same per followed trace (by `Upload::source`), for the note each trace gets.
    pub by_source: Mutex<Vec<SourceCounts>>,
}

impl Counts {
    fn count(&self, source: usize, f: impl FnOnce(&mut SourceCounts)) {
        if let Ok(mut v) = self.by_source.lock() {
            if v.len() <= source {
                v.resize(source + 1, SourceCounts::default());
            }
            f(&mut v[source]);
        }
    }

    /// The figures of followed trace `source`.
    pub fn of(&self, source: usize) -> SourceCounts {
        self.by_source
            .lock()
            .ok()
            .and_then(|v| v.get(source).copied())
            .unwrap_or_default()
    }
}

pub struct Uploader {
    tx: Option<SyncSender<Upload>>,
    thread: Option<JoinHandle<()>>,
    pub counts: Arc<Counts>,
}

impl Uploader {
    pub fn start(endpoint: &Endpoint, auth: Option<String>) -> Uploader {
        let (tx, rx) = sync_channel(QUEUE);
        let counts = Arc::new(Counts::default());
        let c = Arc::clone(&counts);
        let base = endpoint.base.clone();
        let thread = std::thread::Builder::new()
            .name("clrprof-push".into())
            .spawn(move || run(rx, &base, auth.as_deref(), &c))
            .ok();
        Uploader {
            tx: Some(tx),
            thread,
            counts,
        }
    }

    /// Queues `u`, or drops and counts it when the queue is full.
    pub fn send(&self, u: Upload) {
        let Some(tx) = &self.tx else { return };
        let source = u.source;
        self.counts.pending.fetch_add(1, Ordering::SeqCst);
        match tx.try_send(u) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                self.counts.pending.fetch_sub(1, Ordering::SeqCst);
                self.counts.queue_full.fetch_add(1, Ordering::SeqCst);
                self.counts.count(source, |c| c.queue_full += 1);
            }
            Err(TrySendError::Disconnected(_)) => {
                self.counts.pending.fetch_sub(1, Ordering::SeqCst);
                self.counts.failed.fetch_add(1, Ordering::SeqCst);
            }
        }
    }

    /// Sends what is queued, for at most `within`; what is still pending then is
    /// counted as failed.
    pub fn finish(mut self, within: Duration) -> Arc<Counts> {
        self.counts.closing.store(true, Ordering::SeqCst);
        drop(self.tx.take());
        let end = Instant::now() + within;
        if let Some(t) = self.thread.take() {
            while !t.is_finished() && Instant::now() < end {
                std::thread::sleep(Duration::from_millis(20));
            }
            if t.is_finished() {
                let _ = t.join();
            }
        }
        let left = self.counts.pending.swap(0, Ordering::SeqCst);
        self.counts.failed.fetch_add(left, Ordering::SeqCst);
        Arc::clone(&self.counts)
    }
}

fn run(rx: Receiver<Upload>, base: &str, auth: Option<&str>, counts: &Counts) {
    let config = ureq::Agent::config_builder()
        .timeout_global(Some(REQUEST_TIMEOUT))
        .http_status_as_error(false)
        .user_agent(concat!("clrprof/", env!("CARGO_PKG_VERSION")))
        .build();
    let agent: ureq::Agent = config.into();
    for u in rx {
        let url = format!("{base}/ingest?{}", u.query);
        let mut pause = FIRST_PAUSE;
        let mut outcome = Err(String::new());
        for attempt in 1..=ATTEMPTS {
            outcome = post(&agent, &url, auth, &u.body);
            match &outcome {
                Ok(()) => break,
                // The server refused this profile itself: another try would be too.
                Err(e) if e.starts_with("refused") => break,
                Err(_) if attempt < ATTEMPTS && !counts.closing.load(Ordering::SeqCst) => {
                    std::thread::sleep(pause);
                    pause *= 2;
                }
                Err(_) => {}
            }
        }
        match outcome {
            Ok(()) => {
                counts.sent.fetch_add(1, Ordering::SeqCst);
                counts.count(u.source, |c| c.sent += 1);
            }
            Err(e) => {
                counts.failed.fetch_add(1, Ordering::SeqCst);
                if !counts.warned.swap(true, Ordering::SeqCst) {
                    eprintln!(
                        "clrprof: {} an upload to {base} failed ({e}); recording goes on, uploads that fail are counted",
                        crate::style::warning("warning:")
                    );
                }
                if let Ok(mut last) = counts.last_error.lock() {
                    *last = Some(e);
                }
            }
        }
        counts.pending.fetch_sub(1, Ordering::SeqCst);
    }
}

fn post(agent: &ureq::Agent, url: &str, auth: Option<&str>, body: &[u8]) -> Result<(), String> {
    let mut req = agent
        .post(url)
        .header("Content-Type", "application/octet-stream");
    if let Some(a) = auth {
        req = req.header("Authorization", a);
    }
    match req.send(body) {
        Ok(resp) => {
            let status = resp.status().as_u16();
            match status {
                200..=299 => Ok(()),
                // Too many requests and the server's own errors pass; others are final.
                429 | 500..=599 => Err(format!("HTTP {status}")),
                _ => Err(format!("refused: HTTP {status}")),
            }
        }
        Err(e) => Err(e.to_string()),
    }
}
