//! A stand-in Grafana Pyroscope server on loopback for `record --push`'s tests: it takes
//! every request, answers it with a fixed status, and keeps it for the test to read (the
//! query, the headers, the body; a `multipart/form-data` body's parts; the pprof in it).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use clrprof_export::pprof::proto;
use prost::Message;

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub query: Vec<(String, String)>,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    pub fn q(&self, k: &str) -> &str {
        self.query
            .iter()
            .find(|(qk, _)| qk == k)
            .map(|(_, v)| v.as_str())
            .unwrap_or_else(|| panic!("no `{k}` in {:?}", self.query))
    }

    /// Whether the query has `k`.
    pub fn has(&self, k: &str) -> bool {
        self.query.iter().any(|(qk, _)| qk == k)
    }

    /// A header's value (names in lower case).
    pub fn header(&self, k: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(hk, _)| hk == k)
            .map(|(_, v)| v.as_str())
    }

    /// The parts of a `multipart/form-data` body, read as Go's `mime/multipart` reads them
    /// (what Pyroscope's ingest uses); empty for another body.
    pub fn parts(&self) -> Vec<Part> {
        let Some(boundary) = self
            .header("content-type")
            .and_then(|ct| ct.strip_prefix("multipart/form-data; boundary="))
        else {
            return Vec::new();
        };
        let delimiter = format!("--{boundary}");
        let mut parts = Vec::new();
        let mut rest = &self.body[..];
        // The preamble, then each part up to the next delimiter; `--` ends the form.
        let find = |hay: &[u8], needle: &[u8]| hay.windows(needle.len()).position(|w| w == needle);
        let Some(at) = find(rest, delimiter.as_bytes()) else {
            return parts;
        };
        rest = &rest[at + delimiter.len()..];
        while !rest.starts_with(b"--") {
            let rest_part = rest.strip_prefix(b"\r\n").expect("CRLF after a boundary");
            let end =
                find(rest_part, format!("\r\n{delimiter}").as_bytes()).expect("a closing boundary");
            let part = &rest_part[..end];
            let head_end = find(part, b"\r\n\r\n").expect("part headers");
            let head = String::from_utf8_lossy(&part[..head_end]).into_owned();
            let header = |k: &str| -> Option<String> {
                head.split("\r\n").find_map(|l| {
                    let (hk, v) = l.split_once(':')?;
                    hk.trim()
                        .eq_ignore_ascii_case(k)
                        .then(|| v.trim().to_string())
                })
            };
            let disposition = header("content-disposition").unwrap_or_default();
            let param = |name: &str| -> Option<String> {
                disposition.split(';').find_map(|p| {
                    p.trim()
                        .strip_prefix(&format!("{name}=\""))
                        .and_then(|v| v.strip_suffix('"'))
                        .map(String::from)
                })
            };
            parts.push(Part {
                name: param("name").unwrap_or_default(),
                filename: param("filename"),
                content_type: header("content-type"),
                body: part[head_end + 4..].to_vec(),
            });
            rest = &rest_part[end + 2 + delimiter.len()..];
        }
        parts
    }

    /// The part named `name` of a form body.
    pub fn part(&self, name: &str) -> Option<Part> {
        self.parts().into_iter().find(|p| p.name == name)
    }
}

/// One part of a `multipart/form-data` body.
#[derive(Debug, Clone)]
pub struct Part {
    pub name: String,
    /// Set for a file part (what Pyroscope's ingest reads).
    pub filename: Option<String>,
    pub content_type: Option<String>,
    pub body: Vec<u8>,
}

/// A pprof, gzip'd or not.
pub fn pprof_of(bytes: &[u8]) -> proto::Profile {
    let raw = if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut raw = Vec::new();
        flate2::read::GzDecoder::new(bytes)
            .read_to_end(&mut raw)
            .expect("gzip pprof");
        raw
    } else {
        bytes.to_vec()
    };
    proto::Profile::decode(&raw[..]).expect("pprof")
}

fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() + 1 {
            out.push(u8::from_str_radix(&s[i + 1..i + 3], 16).unwrap());
            i += 3;
        } else {
            out.push(if b[i] == b'+' { b' ' } else { b[i] });
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

/// A server on a free loopback port that answers every request with `status` and
/// records it.
pub fn serve(status: u16) -> (u16, Arc<Mutex<Vec<Request>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = Arc::clone(&seen);
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(conn) = conn else { continue };
            let s = Arc::clone(&s);
            std::thread::spawn(move || {
                let mut r = BufReader::new(conn);
                loop {
                    let mut line = String::new();
                    if r.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let mut parts = line.split_whitespace();
                    let method = parts.next().unwrap_or_default().to_string();
                    let target = parts.next().unwrap_or_default().to_string();
                    let mut headers = Vec::new();
                    loop {
                        let mut h = String::new();
                        r.read_line(&mut h).unwrap();
                        let h = h.trim_end();
                        if h.is_empty() {
                            break;
                        }
                        let (k, v) = h.split_once(':').unwrap();
                        headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
                    }
                    let len: usize = headers
                        .iter()
                        .find(|(k, _)| k == "content-length")
                        .map_or(0, |(_, v)| v.parse().unwrap());
                    let mut body = vec![0; len];
                    r.read_exact(&mut body).unwrap();
                    let (path, q) = target.split_once('?').unwrap_or((&target, ""));
                    let query = q
                        .split('&')
                        .filter(|p| !p.is_empty())
                        .map(|p| {
                            let (k, v) = p.split_once('=').unwrap_or((p, ""));
                            (decode(k), decode(v))
                        })
                        .collect();
                    s.lock().unwrap().push(Request {
                        method,
                        path: path.to_string(),
                        query,
                        headers,
                        body,
                    });
                    let reason = if status == 200 {
                        "OK"
                    } else {
                        "Internal Server Error"
                    };
                    let _ = write!(
                        r.get_mut(),
                        "HTTP/1.1 {status} {reason}\r\nContent-Length: 0\r\n\r\n"
                    );
                }
            });
        }
    });
    (port, seen)
}

/// The pprof a request carries: its body, or its form's `profile` part.
pub fn profile_of(r: &Request) -> proto::Profile {
    match r.part("profile") {
        Some(p) => pprof_of(&p.body),
        None => pprof_of(&r.body),
    }
}

/// Per function name, its values.
pub type Sums = Vec<(String, Vec<i64>)>;

/// The sample types of `p`, and per function name the sum of each value over the
/// samples whose stack holds that function.
pub fn by_function(p: &proto::Profile) -> (Vec<(String, String)>, Sums) {
    let s = |i: i64| p.string_table[i as usize].clone();
    let types = p
        .sample_type
        .iter()
        .map(|t| (s(t.r#type), s(t.unit)))
        .collect();
    let mut sums: Sums = Vec::new();
    for smp in &p.sample {
        let mut names: Vec<String> = smp
            .location_id
            .iter()
            .filter_map(|l| p.location.iter().find(|loc| loc.id == *l))
            .flat_map(|loc| &loc.line)
            .filter_map(|ln| p.function.iter().find(|f| f.id == ln.function_id))
            .map(|f| s(f.name))
            .collect();
        names.sort();
        names.dedup();
        for n in names {
            let i = match sums.iter().position(|(k, _)| *k == n) {
                Some(i) => i,
                None => {
                    sums.push((n, vec![0; smp.value.len()]));
                    sums.len() - 1
                }
            };
            for (sum, v) in sums[i].1.iter_mut().zip(&smp.value) {
                *sum += v;
            }
        }
    }
    (types, sums)
}
