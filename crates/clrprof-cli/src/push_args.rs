//! `record --push`'s options, checked as they are parsed (clap calls these), so that a
//! bad URL, label or interval is refused before anything starts, with the fix named.

use std::fmt;

/// Where profiles go: a Pyroscope server's base URL, without its credentials.
#[derive(Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// `scheme://host[:port][/path]`, no trailing slash; `/ingest` is appended.
    pub base: String,
    pub host: String,
    pub port: u16,
    /// `user:password@` of the URL, sent as basic authentication.
    pub basic: Option<(String, String)>,
}

impl fmt::Debug for Endpoint {
    // Never print the password.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Endpoint({})", self.base)
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.base)
    }
}

/// `http[s]://[user[:password]@]host[:port][/path]`.
pub fn parse_url(s: &str) -> Result<Endpoint, String> {
    let example = "e.g. http://localhost:4040 (Pyroscope's default port)";
    let Some((scheme, rest)) = s.split_once("://") else {
        return Err(format!(
            "`{s}` has no scheme: write http://HOST:PORT or https://HOST, {example}"
        ));
    };
    let scheme = scheme.to_ascii_lowercase();
    let default_port = match scheme.as_str() {
        "http" => 80,
        "https" => 443,
        _ => {
            return Err(format!(
                "scheme `{scheme}://` is not supported: use http:// or https://, {example}"
            ));
        }
    };
    if rest.contains(['?', '#']) {
        return Err(format!(
            "`{s}` has a query or fragment: give the server's base URL only (clrprof adds /ingest?name=…), {example}"
        ));
    }
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], rest[i..].trim_end_matches('/')),
        None => (rest, ""),
    };
    let (basic, hostport) = match authority.rsplit_once('@') {
        Some((user, hp)) => {
            let (u, p) = user.split_once(':').unwrap_or((user, ""));
            (Some((u.to_string(), p.to_string())), hp)
        }
        None => (None, authority),
    };
    // `[v6]:port`, `[v6]`, `host:port`, `host`.
    let (host, port) = if let Some(v6) = hostport.strip_prefix('[') {
        let Some((h, after)) = v6.split_once(']') else {
            return Err(format!(
                "`{s}`: an IPv6 address needs its closing `]`, e.g. http://[::1]:4040"
            ));
        };
        (format!("[{h}]"), after.strip_prefix(':'))
    } else {
        match hostport.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), Some(p)),
            None => (hostport.to_string(), None),
        }
    };
    if host.is_empty() || host == "[]" {
        return Err(format!("`{s}` names no host, {example}"));
    }
    let port = match port {
        None => default_port,
        Some(p) => match p.parse::<u16>() {
            Ok(n) if n > 0 => n,
            _ => {
                return Err(format!(
                    "bad port `{p}` in `{s}`: a port is a number from 1 to 65535, {example}"
                ));
            }
        },
    };
    Ok(Endpoint {
        base: format!("{scheme}://{host}:{port}{path}"),
        host,
        port,
        basic,
    })
}

/// [`parse_url`] for clap (boxed: the record options stay small).
pub fn parse_url_arg(s: &str) -> Result<Box<Endpoint>, String> {
    parse_url(s).map(Box::new)
}

/// `--push-every`: whole seconds, at least 1 (Pyroscope's time ranges are whole seconds).
pub fn parse_every(s: &str) -> Result<u64, String> {
    match s.trim().parse::<u64>() {
        Ok(n) if n >= 1 => Ok(n),
        Ok(_) => Err(format!(
            "{s} s is too short: profiles are cut at whole seconds; use --push-every 1 or more (default 15)"
        )),
        Err(_) => Err(format!(
            "`{s}` is not a whole number of seconds: use e.g. --push-every 15 (at least 1)"
        )),
    }
}

/// Characters that would break Pyroscope's `name{k=v,…}` syntax.
const SYNTAX: [char; 6] = ['{', '}', ',', '=', '"', '&'];

/// `--app-name`: the series name, before `.cpu`.
pub fn parse_app_name(s: &str) -> Result<String, String> {
    if s.is_empty() || s.contains(SYNTAX) || s.chars().any(char::is_whitespace) {
        return Err(format!(
            "`{s}` cannot be an application name: use letters, digits and `.-_/`, e.g. --app-name shop.checkout"
        ));
    }
    Ok(s.to_string())
}

/// `--labels k=v,…`, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Labels(pub Vec<(String, String)>);

pub fn parse_labels(s: &str) -> Result<Labels, String> {
    let fix = "write --labels KEY=VALUE,KEY=VALUE, e.g. --labels env=prod,region=eu-west";
    let mut out: Vec<(String, String)> = Vec::new();
    for item in s.split(',') {
        let Some((k, v)) = item.split_once('=') else {
            return Err(format!("label `{item}` is not KEY=VALUE: {fix}"));
        };
        let (k, v) = (k.trim(), v.trim());
        let key_ok = k
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && k.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
            && !k.starts_with("__");
        if !key_ok {
            return Err(format!(
                "label key `{k}` is not valid: a key is a letter or `_` followed by letters, digits, `_` or `.` (not starting with `__`); {fix}"
            ));
        }
        if v.is_empty() || v.contains(SYNTAX) || v.chars().any(char::is_whitespace) {
            return Err(format!(
                "label `{k}` has the value `{v}`, which is empty or holds a space or one of {{ }} , = \" &: {fix}"
            ));
        }
        if out.iter().any(|(seen, _)| seen == k) {
            return Err(format!("label `{k}` is given twice: {fix}"));
        }
        out.push((k.to_string(), v.to_string()));
    }
    Ok(Labels(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let e = parse_url("http://localhost:4040").unwrap();
        assert_eq!(
            (e.base.as_str(), e.host.as_str(), e.port),
            ("http://localhost:4040", "localhost", 4040)
        );
        let e = parse_url("HTTPS://u:p@pyro.example/base/").unwrap();
        assert_eq!(e.base, "https://pyro.example:443/base");
        assert_eq!(e.basic, Some(("u".into(), "p".into())));
        assert_eq!(format!("{e:?}"), "Endpoint(https://pyro.example:443/base)");
        assert_eq!(parse_url("http://[::1]:9").unwrap().base, "http://[::1]:9");
        for (bad, says) in [
            ("localhost:4040", "has no scheme"),
            ("ftp://h", "not supported"),
            ("http://h:0", "bad port `0`"),
            ("http://h:99999", "bad port `99999`"),
            ("http://h:x", "bad port `x`"),
            ("http://:4040", "names no host"),
            ("http://h/ingest?name=a", "query"),
        ] {
            let e = parse_url(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn intervals_names_and_labels() {
        assert_eq!(parse_every("15"), Ok(15));
        assert!(
            parse_every("0")
                .unwrap_err()
                .contains("--push-every 1 or more")
        );
        assert!(parse_every("0.5").unwrap_err().contains("whole number"));
        assert!(parse_app_name("shop.checkout").is_ok());
        assert!(parse_app_name("a{b}").is_err());
        assert!(parse_app_name("").is_err());
        assert_eq!(
            parse_labels("env=prod, region=eu-west").unwrap().0,
            [
                ("env".into(), "prod".into()),
                ("region".into(), "eu-west".into())
            ]
        );
        for bad in [
            "env",
            "env=",
            "1x=a",
            "__name__=a",
            "a=b,a=c",
            "a=b{",
            "a b=c",
        ] {
            assert!(parse_labels(bad).is_err(), "{bad}");
        }
    }
}
