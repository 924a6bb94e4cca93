//! The control protocol between `clrprof` and an attached agent's control socket
//! (docs/ipc.md, "The agent's control socket"): one JSON line per request, one per answer,
//! both sides typed by this module.
//!
//! ```text
//! → {"version":1,"request":"status"}
//! ← {"version":1,"answer":{"status":{"pid":4242,"mode":"sample",…}}}
//! → {"version":1,"request":"nope"}
//! ← {"version":1,"answer":{"error":{"unknown_request":{"request":"nope"}}}}
//! ```
//!
//! A request of another version is answered with [`ControlError::Version`]. An agent that
//! predates this protocol answered plain text lines (`ok …`, `error …`): [`parse_answer`]
//! recognises them, so a newer `clrprof` tells its user that the agent is older instead of
//! failing on unreadable JSON.

use std::fmt;
use std::path::PathBuf;

use clrprof_settings::Mode;
use serde::{Deserialize, Serialize};

/// The protocol version this crate speaks.
pub const CONTROL_VERSION: u32 = 1;

/// What the CLI asks an attached agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Request {
    /// Is the profiler there, and what is it recording? Answered with [`Response::Status`].
    Status,
    /// Take a heap snapshot into the trace (docs/heap.md). Answered with
    /// [`Response::Heap`] once the snapshot is in the trace.
    Heap,
    /// Stop recording, flush the trace and ask the runtime to unload the profiler.
    /// Answered with [`Response::Detaching`] before the runtime unloads it.
    Detach,
    /// Start a new recording in a dormant agent (one the runtime keeps loaded after ReJIT,
    /// which no attach can reach: the runtime allows one profiler at a time). `settings`
    /// is the JSON the attach would carry as its client data (`clrprof_settings::attach`,
    /// after its header). Answered with [`Response::Status`] once the recording runs.
    Start {
        /// The client data's JSON.
        settings: String,
    },
}

/// The names of the requests, for messages.
pub const REQUESTS: &str = "status, heap, detach or start";

/// One request line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestLine {
    /// [`CONTROL_VERSION`] of the sender.
    pub version: u32,
    /// What it asks.
    pub request: Request,
}

impl Request {
    /// The request as sent: one JSON line, newline included.
    pub fn to_line(self) -> String {
        let line = RequestLine {
            version: CONTROL_VERSION,
            request: self,
        };
        // A struct of a number and a request of strings always serializes.
        format!("{}\n", serde_json::to_string(&line).unwrap_or_default())
    }

    /// Reads one request line (the agent's side): a line of another version, or one that
    /// is no request of this version, is the error to answer with.
    pub fn parse(line: &str) -> Result<Request, ControlError> {
        let shown = |s: &str| s.chars().take(64).collect::<String>();
        let value: serde_json::Value =
            serde_json::from_str(line.trim()).map_err(|_| ControlError::UnknownRequest {
                request: shown(line.trim()),
            })?;
        match value.get("version").and_then(serde_json::Value::as_u64) {
            Some(v) if v == u64::from(CONTROL_VERSION) => {}
            other => {
                return Err(ControlError::Version {
                    client: other.and_then(|v| u32::try_from(v).ok()),
                    agent: CONTROL_VERSION,
                });
            }
        }
        let request = value.get("request").cloned().unwrap_or_default();
        serde_json::from_value(request.clone()).map_err(|_| ControlError::UnknownRequest {
            request: shown(&match request {
                serde_json::Value::String(s) => s,
                other => other.to_string(),
            }),
        })
    }
}

/// The agent's answer to one request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Response {
    /// The answer to [`Request::Status`].
    Status(Status),
    /// The answer to [`Request::Heap`]: the snapshot is in the trace.
    Heap(HeapTaken),
    /// The profiler stopped recording and asked the runtime to unload it.
    Detaching {
        /// The trace, complete.
        trace: PathBuf,
    },
    /// The profiler stopped recording, and the runtime keeps it loaded until the process
    /// exits (it used ReJIT: `CORPROF_E_IRREVERSIBLE_INSTRUMENTATION_PRESENT`); its
    /// threads are stopped and its probes reverted.
    Dormant {
        /// The trace, complete.
        trace: PathBuf,
        /// The runtime's refusal, as the agent read it.
        reason: String,
    },
    /// The request was not carried out.
    Error(ControlError),
}

/// One answer line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResponseLine {
    /// [`CONTROL_VERSION`] of the agent.
    pub version: u32,
    /// Its answer.
    pub answer: Response,
}

impl Response {
    /// The answer as sent: one JSON line, newline included.
    pub fn to_line(&self) -> String {
        let line = ResponseLine {
            version: CONTROL_VERSION,
            answer: self.clone(),
        };
        match serde_json::to_string(&line) {
            Ok(s) => format!("{s}\n"),
            // Only a non-finite pause could fail (JSON has no NaN); say so, typed.
            Err(e) => format!(
                "{}\n",
                serde_json::to_string(&ResponseLine {
                    version: CONTROL_VERSION,
                    answer: Response::Error(ControlError::Failed {
                        reason: format!("the answer could not be written: {e}"),
                    }),
                })
                .unwrap_or_default()
            ),
        }
    }
}

/// What `status` says about the recording.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Status {
    /// The target's process id, as the target sees it.
    pub pid: u32,
    /// What the agent records; on the wire `events`, `sample` or `trace` (a new mode would
    /// be a new [`CONTROL_VERSION`]).
    pub mode: Mode,
    /// The trace file the agent writes.
    pub output: PathBuf,
    /// Whether the writer still runs (false once a detach or the end stopped it).
    pub recording: bool,
    /// The profiler library the target maps (the per-attach copy), when the agent knows it.
    pub library: Option<PathBuf>,
    /// Samples taken so far (sample mode; `None` when no sampler runs).
    pub samples: Option<u64>,
    /// Trace mode after attach: the IL probes, once installed (`None` before, and in every
    /// other mode).
    #[serde(default)]
    pub probes: Option<Probes>,
    /// The agent is dormant: the runtime keeps it loaded after ReJIT, it records nothing,
    /// and a [`Request::Start`] starts its next recording.
    #[serde(default)]
    pub dormant: bool,
}

/// What the agent's IL probes (trace mode after attach) could and could not instrument.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Probes {
    /// Methods probed.
    pub installed: u64,
    /// Methods selected but not probed: (name, reason).
    pub not_probed: Vec<(String, String)>,
    /// Why no probe could be installed at all.
    pub error: Option<String>,
}

/// What one heap snapshot recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeapTaken {
    /// The snapshot's number in the trace (1, 2, …).
    pub snapshot: u64,
    /// Objects recorded.
    pub objects: u64,
    /// References between them.
    pub references: u64,
    /// GC roots.
    pub roots: u64,
    /// Objects the walk could not record.
    pub lost: u64,
    /// How long the target was paused (the forced GC and the walk).
    pub pause_ms: f64,
    /// Of `objects`, those of the non-GC heap.
    pub nongc_objects: u64,
}

/// A request the agent did not carry out, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ControlError {
    /// A line that is no request this agent knows (shown cut to 64 characters).
    UnknownRequest {
        /// The request as received.
        request: String,
    },
    /// A request of another protocol version (`client`: the version it named, if any).
    Version {
        /// The version the request named.
        client: Option<u32>,
        /// The agent's [`CONTROL_VERSION`].
        agent: u32,
    },
    /// A request line longer than the agent reads.
    TooLong {
        /// The longest line read, in bytes.
        max: usize,
    },
    /// No whole request line within the time a client has.
    Timeout {
        /// The time a client has for its line.
        seconds: u64,
    },
    /// Too many connections at once.
    Busy {
        /// Connections served at once.
        clients: usize,
    },
    /// The peer is another user (only the target's user or root may control it).
    PeerRefused {
        /// The peer's user.
        uid: u32,
        /// The target's user.
        owner: u32,
    },
    /// The peer's credentials could not be read.
    PeerUnknown {
        /// Why (the errno's text).
        reason: String,
    },
    /// The request was understood and failed (a snapshot refused, a detach under way).
    Failed {
        /// The agent's reason.
        reason: String,
    },
}

impl fmt::Display for ControlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ControlError::UnknownRequest { request } => {
                write!(f, "unknown request {request:?} (expected {REQUESTS})")
            }
            ControlError::Version { client, agent } => write!(
                f,
                "this profiler speaks control protocol {agent}, the request {}: use the clrprof \
                 of the profiler's version",
                match client {
                    Some(v) => format!("version {v}"),
                    None => "no version".to_string(),
                }
            ),
            ControlError::TooLong { max } => write!(f, "request too long (more than {max} bytes)"),
            ControlError::Timeout { seconds } => {
                write!(f, "no whole request line within {seconds} s")
            }
            ControlError::Busy { clients } => {
                write!(f, "busy: {clients} requests are being read; try again")
            }
            ControlError::PeerRefused { uid, owner } => write!(
                f,
                "uid {uid} may not control this profiler (only uid {owner} or root)"
            ),
            ControlError::PeerUnknown { reason } => {
                write!(f, "cannot read the peer's credentials: {reason}")
            }
            ControlError::Failed { reason } => f.write_str(reason),
        }
    }
}

impl std::error::Error for ControlError {}

/// An answer line that is not an answer of this protocol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AnswerError {
    /// The plain-text answer of an agent older than this protocol (`ok …`, `error …`).
    OlderAgent {
        /// Its line, cut to 200 characters.
        said: String,
    },
    /// Anything else (cut to 200 characters).
    Unreadable {
        /// The line, cut to 200 characters.
        said: String,
    },
}

/// Reads one answer line (the CLI's side).
pub fn parse_answer(line: &str) -> Result<Response, AnswerError> {
    let line = line.trim_end();
    match serde_json::from_str::<ResponseLine>(line) {
        Ok(r) => Ok(r.answer),
        Err(_) if line.starts_with("ok ") || line.starts_with("error ") => {
            Err(AnswerError::OlderAgent {
                said: line.chars().take(200).collect(),
            })
        }
        Err(_) => Err(AnswerError::Unreadable {
            said: line.chars().take(200).collect(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_round_trip_and_strangers_are_named() {
        for r in [
            Request::Status,
            Request::Heap,
            Request::Detach,
            Request::Start {
                settings: "{\"version\":1}".into(),
            },
        ] {
            assert_eq!(Request::parse(&r.clone().to_line()), Ok(r));
        }
        assert_eq!(
            Request::Status.to_line(),
            "{\"version\":1,\"request\":\"status\"}\n"
        );
        assert_eq!(
            Request::parse("{\"version\":1,\"request\":\"nope\"}"),
            Err(ControlError::UnknownRequest {
                request: "nope".into()
            })
        );
        // The plain word an older clrprof sends.
        let e = Request::parse("status").unwrap_err();
        assert_eq!(
            e,
            ControlError::UnknownRequest {
                request: "status".into()
            }
        );
        assert_eq!(
            Request::parse("{\"version\":2,\"request\":\"status\"}"),
            Err(ControlError::Version {
                client: Some(2),
                agent: 1
            })
        );
        assert_eq!(
            Request::parse("{\"request\":\"status\"}"),
            Err(ControlError::Version {
                client: None,
                agent: 1
            })
        );
        let long = format!("{{\"version\":1,\"request\":\"{}\"}}", "x".repeat(500));
        match Request::parse(&long) {
            Err(ControlError::UnknownRequest { request }) => assert_eq!(request.len(), 64),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn answers_round_trip() {
        let answers = [
            Response::Status(Status {
                pid: 42,
                mode: Mode::Sample,
                output: "/tmp/t.clrprof".into(),
                recording: true,
                library: Some("/tmp/clrprof-1000/libclrprof_profiler.so.x".into()),
                samples: Some(1234),
                probes: Some(Probes {
                    installed: 3,
                    not_probed: vec![("A.B".into(), "abstract".into())],
                    error: None,
                }),
                dormant: false,
            }),
            Response::Dormant {
                trace: "/tmp/t.clrprof".into(),
                reason: "CORPROF_E_IRREVERSIBLE_INSTRUMENTATION_PRESENT (0x80131373)".into(),
            },
            Response::Heap(HeapTaken {
                snapshot: 2,
                objects: 10,
                references: 9,
                roots: 3,
                lost: 0,
                pause_ms: 12.5,
                nongc_objects: 1,
            }),
            Response::Detaching {
                trace: "/tmp/t.clrprof".into(),
            },
            Response::Error(ControlError::Busy { clients: 16 }),
        ];
        for a in answers {
            let line = a.to_line();
            assert!(line.ends_with('\n') && !line[..line.len() - 1].contains('\n'));
            assert_eq!(parse_answer(&line), Ok(a));
        }
        let line = Response::Error(ControlError::UnknownRequest {
            request: "nope".into(),
        })
        .to_line();
        assert_eq!(
            line,
            "{\"version\":1,\"answer\":{\"error\":{\"unknown_request\":{\"request\":\"nope\"}}}}\n"
        );
    }

    /// The status answer's mode is typed and spelled on the wire as before the type.
    #[test]
    fn the_status_mode_keeps_its_wire_form() {
        let line = "{\"version\":1,\"answer\":{\"status\":{\"pid\":4242,\"mode\":\"trace\",\
                    \"output\":\"/tmp/t.clrprof\",\"recording\":true,\"library\":null,\
                    \"samples\":null}}}\n";
        let Ok(Response::Status(status)) = parse_answer(line) else {
            panic!("{line}")
        };
        assert_eq!(status.mode, Mode::Trace);
        for mode in Mode::ALL {
            let line = Response::Status(Status {
                mode,
                ..status.clone()
            })
            .to_line();
            assert!(
                line.contains(&format!("\"mode\":\"{}\"", mode.as_str())),
                "{line}"
            );
        }
    }

    #[test]
    fn an_older_agents_answers_are_recognised() {
        assert!(matches!(
            parse_answer(
                "error unknown request \"{\\\"version\\\":1\" (expected status, heap or detach)\n"
            ),
            Err(AnswerError::OlderAgent { .. })
        ));
        assert!(matches!(
            parse_answer("ok detaching; trace written to /tmp/t\n"),
            Err(AnswerError::OlderAgent { .. })
        ));
        assert!(matches!(
            parse_answer("garbage"),
            Err(AnswerError::Unreadable { .. })
        ));
    }

    #[test]
    fn errors_read_as_before() {
        assert_eq!(
            ControlError::PeerRefused {
                uid: 65534,
                owner: 1000
            }
            .to_string(),
            "uid 65534 may not control this profiler (only uid 1000 or root)"
        );
        assert_eq!(
            ControlError::UnknownRequest {
                request: "nope".into()
            }
            .to_string(),
            "unknown request \"nope\" (expected status, heap, detach or start)"
        );
    }
}
