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

/// One profile to send: the query after `/ingest?`, the body (a gzip'd pprof, or a
/// [`multipart`] form) and its `Content-Type`, of the followed trace `source`.
pub struct Upload {
    pub query: String,
    pub body: Vec<u8>,
    pub content_type: String,
    pub source: usize,
}

/// The `Content-Type` of a bare pprof body.
pub const OCTET_STREAM: &str = "application/octet-stream";

/// A `multipart/form-data` body of file parts `(name, filename, content type, bytes)`, as
/// Go's `mime/multipart` `CreateFormFile` writes them (Pyroscope's ingest reads the
/// parts it knows from the form's files: a part without a filename is not read); returns
/// the `Content-Type` header, with the boundary, and the body.
pub fn multipart(parts: &[(&str, &str, &str, &[u8])]) -> (String, Vec<u8>) {
    use std::io::Write as _;
    // A boundary found in no part.
    let mut n: u64 = 0x9e37_79b9_7f4a_7c15;
    let boundary = loop {
        let b = format!("clrprof-form-{n:016x}");
        if !parts
            .iter()
            .any(|p| p.3.windows(b.len()).any(|w| w == b.as_bytes()))
        {
            break b;
        }
        n = n
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
    };
    let mut body = Vec::new();
    for (name, filename, content_type, data) in parts {
        // Writing to memory cannot fail.
        let _ = write!(
            body,
            "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"; filename=\"{filename}\"\r\nContent-Type: {content_type}\r\n\r\n"
        );
        body.extend_from_slice(data);
        body.extend_from_slice(b"\r\n");
    }
    let _ = write!(body, "--{boundary}--\r\n");
    (format!("multipart/form-data; boundary={boundary}"), body)
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
            outcome = post(&agent, &url, auth, &u.content_type, &u.body);
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

fn post(
    agent: &ureq::Agent,
    url: &str,
    auth: Option<&str>,
    content_type: &str,
    body: &[u8],
) -> Result<(), String> {
    let mut req = agent.post(url).header("Content-Type", content_type);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_form_holds_each_part_as_a_file_between_boundaries_found_in_no_part() {
        let (ct, body) = multipart(&[
            (
                "profile",
                "profile.pprof",
                OCTET_STREAM,
                b"\x1f\x8b pprof".as_slice(),
            ),
            (
                "sample_type_config",
                "sample_type_config.json",
                "application/json",
                b"{}".as_slice(),
            ),
        ]);
        let boundary = ct
            .strip_prefix("multipart/form-data; boundary=")
            .unwrap()
            .to_string();
        let text = String::from_utf8_lossy(&body);
        let parts: Vec<&str> = text.split(&format!("--{boundary}")).collect();
        // (before the first, the two parts, and the closing `--`)
        assert_eq!(parts.len(), 4, "{text}");
        assert_eq!(parts[0], "");
        assert!(parts[1].starts_with(
            "\r\nContent-Disposition: form-data; name=\"profile\"; filename=\"profile.pprof\"\r\nContent-Type: application/octet-stream\r\n\r\n"
        ));
        assert!(parts[1].ends_with(" pprof\r\n"), "{:?}", parts[1]);
        assert!(parts[2].contains("name=\"sample_type_config\""));
        assert!(parts[2].ends_with("\r\n\r\n{}\r\n"), "{:?}", parts[2]);
        assert_eq!(parts[3], "--\r\n");
        // A part that holds the first boundary gets another one.
        let first = boundary.clone();
        let (ct, _) = multipart(&[("profile", "p", OCTET_STREAM, first.as_bytes())]);
        assert!(!ct.ends_with(&first), "{ct}");
    }
}
