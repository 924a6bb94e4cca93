//! `record --push`: what the pushing did for this trace's process, from the `Meta` record
//! `push` the CLI appends when the recording ends (docs/exports.md).

use serde::{Deserialize, Serialize};

use clrprof_format::Event;

/// The `Meta` key of the record.
pub const META_KEY: &str = "push";

/// The pushing's figures for one process.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PushOutcome {
    /// The server's URL (without credentials).
    pub endpoint: String,
    /// Profiles cut (one per profile family and interval).
    pub profiles: u64,
    pub sent: u64,
    /// Dropped after their last try failed, or still unsent when the end's wait was over.
    pub failed: u64,
    /// Dropped because the upload queue was full.
    pub queue_full: u64,
    /// How many tries an upload got.
    pub attempts: u32,
    /// The upload queue's length.
    pub queue: u64,
    /// The last failure (e.g. `HTTP 500`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// Samples left out of a cut over its bound.
    pub samples_dropped: u64,
    /// A cut's bound.
    pub samples_max: u64,
}

impl PushOutcome {
    /// The record's figures; `None` for any other event, or JSON that does not parse.
    pub fn from_event(e: &Event<'_>) -> Option<PushOutcome> {
        match e {
            Event::Meta { key, json } if key == META_KEY => serde_json::from_str(json).ok(),
            _ => None,
        }
    }

    pub fn dropped(&self) -> u64 {
        self.failed + self.queue_full
    }

    /// `S of N profiles sent to URL, D dropped (…); K samples left out (…)`.
    pub fn summary(&self) -> String {
        let mut s = format!(
            "{} of {} profiles sent to {}",
            self.sent, self.profiles, self.endpoint
        );
        if self.dropped() > 0 {
            let mut why = Vec::new();
            if self.failed > 0 {
                why.push(format!(
                    "{} failed after {} tries{}",
                    self.failed,
                    self.attempts,
                    self.last_error
                        .as_ref()
                        .map(|e| format!(", last: {e}"))
                        .unwrap_or_default()
                ));
            }
            if self.queue_full > 0 {
                why.push(format!(
                    "{} found the upload queue ({} profiles) full",
                    self.queue_full, self.queue
                ));
            }
            s.push_str(&format!(
                ", {} dropped ({})",
                self.dropped(),
                why.join("; ")
            ));
        }
        if self.samples_dropped > 0 {
            s.push_str(&format!(
                "; {} samples left out (more than {} in one interval)",
                self.samples_dropped, self.samples_max
            ));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_back_and_said() {
        let o = PushOutcome {
            endpoint: "http://h:4040".into(),
            profiles: 10,
            sent: 7,
            failed: 2,
            queue_full: 1,
            attempts: 3,
            queue: 16,
            last_error: Some("HTTP 500".into()),
            samples_dropped: 0,
            samples_max: 200_000,
        };
        let json = serde_json::to_string(&o).unwrap();
        let e = Event::Meta {
            key: META_KEY.into(),
            json: json.into(),
        };
        assert_eq!(PushOutcome::from_event(&e), Some(o.clone()));
        assert_eq!(
            o.summary(),
            "7 of 10 profiles sent to http://h:4040, 3 dropped (2 failed after 3 tries, last: HTTP 500; \
             1 found the upload queue (16 profiles) full)"
        );
        let other = Event::Meta {
            key: "other".into(),
            json: "{}".into(),
        };
        assert_eq!(PushOutcome::from_event(&other), None);
    }
}
