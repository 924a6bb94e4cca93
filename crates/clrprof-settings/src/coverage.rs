//! `clrprof coverage`'s settings (docs/coverage.md): the CLI sets them in the command's
//! environment, the agent reads them in Initialize. Coverage is a run of its own: with
//! `CLRPROF_COVERAGE` set, the agent records no trace and reads none of the other
//! `CLRPROF_*` variables.

use std::path::PathBuf;

/// The run directory (the CLI's 0700 directory) where each process writes its counters
/// and its map (`coverage-<pid>.counters`, `coverage-<pid>.map`).
pub const DIR: &str = "CLRPROF_COVERAGE";
/// Assemblies measured: comma-separated patterns on the assembly's simple name (the file
/// name without `.dll`/`.exe`); unset: every assembly with a PDB outside the runtime's
/// own directories.
pub const INCLUDE: &str = "CLRPROF_COVERAGE_INCLUDE";
/// Assemblies left out, same form; wins over `INCLUDE`.
pub const EXCLUDE: &str = "CLRPROF_COVERAGE_EXCLUDE";
/// `0`: sequence points only, no branch counters.
pub const BRANCHES: &str = "CLRPROF_COVERAGE_BRANCHES";

/// Every variable of this module, for the CLI and the docs.
pub const VARIABLES: &[&str] = &[DIR, INCLUDE, EXCLUDE, BRANCHES];

/// The counters one process may allocate (each 8 bytes of a sparse file): 8 Mi.
pub const MAX_COUNTERS: u32 = 8 << 20;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoverageSettings {
    pub dir: PathBuf,
    pub include: Vec<String>,
    pub exclude: Vec<String>,
    pub branches: bool,
}

fn list(v: Option<String>) -> Vec<String> {
    v.map(|s| {
        s.split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(str::to_owned)
            .collect()
    })
    .unwrap_or_default()
}

impl CoverageSettings {
    /// `None` when `CLRPROF_COVERAGE` is unset or empty (not a coverage run); an error
    /// for a value the agent cannot use.
    pub fn from_env(get: impl Fn(&str) -> Option<String>) -> Result<Option<Self>, String> {
        let Some(dir) = get(DIR).filter(|d| !d.is_empty()) else {
            return Ok(None);
        };
        let dir = PathBuf::from(dir);
        if !dir.is_absolute() {
            return Err(format!("{DIR}={}: not an absolute path", dir.display()));
        }
        let branches = match get(BRANCHES).as_deref() {
            None | Some("") | Some("1") => true,
            Some("0") => false,
            Some(v) => return Err(format!("{BRANCHES}={v}: expected 0 or 1")),
        };
        Ok(Some(CoverageSettings {
            dir,
            include: list(get(INCLUDE)),
            exclude: list(get(EXCLUDE)),
            branches,
        }))
    }

    /// The variables that give these settings to a child process.
    pub fn to_env(&self) -> Vec<(&'static str, String)> {
        let mut v = vec![(DIR, self.dir.display().to_string())];
        if !self.include.is_empty() {
            v.push((INCLUDE, self.include.join(",")));
        }
        if !self.exclude.is_empty() {
            v.push((EXCLUDE, self.exclude.join(",")));
        }
        v.push((BRANCHES, if self.branches { "1" } else { "0" }.into()));
        v
    }

    /// Whether the assembly `name` (simple name) is measured.
    pub fn selects(&self, name: &str) -> bool {
        let m = |ps: &[String]| ps.iter().any(|p| crate::pattern::matches(p, name));
        (self.include.is_empty() || m(&self.include)) && !m(&self.exclude)
    }
}

/// The first line of the client data `clrprof coverage --pid` sends with AttachProfiler.
pub const ATTACH_MAGIC: &str = "clrprof-coverage-attach 1";

/// The client data of a coverage attach: the magic line, then `VAR=value` lines; with
/// `duration_s`, a `DURATION=<seconds>` line (the agent stops measuring after it).
pub fn encode_attach(settings: &CoverageSettings, duration_s: Option<f64>) -> Vec<u8> {
    let mut s = format!("{ATTACH_MAGIC}\n");
    for (k, v) in settings.to_env() {
        s.push_str(&format!("{k}={v}\n"));
    }
    if let Some(d) = duration_s {
        s.push_str(&format!("DURATION={d}\n"));
    }
    s.into_bytes()
}

/// [`encode_attach`]'s settings and duration back; `Ok(None)` when the data is not a
/// coverage attach.
pub fn decode_attach(data: &[u8]) -> Result<Option<(CoverageSettings, Option<f64>)>, String> {
    let Ok(text) = std::str::from_utf8(data) else {
        return Ok(None);
    };
    let Some(rest) = text.strip_prefix(ATTACH_MAGIC) else {
        return Ok(None);
    };
    let pairs: Vec<(&str, &str)> = rest.lines().filter_map(|l| l.split_once('=')).collect();
    let get = |k: &str| {
        pairs
            .iter()
            .find(|(n, _)| *n == k)
            .map(|(_, v)| v.to_string())
    };
    let duration = match get("DURATION") {
        Some(d) => Some(
            d.parse::<f64>()
                .ok()
                .filter(|d| d.is_finite() && *d > 0.0)
                .ok_or_else(|| format!("coverage attach: DURATION={d} is not a positive number"))?,
        ),
        None => None,
    };
    match CoverageSettings::from_env(get)? {
        Some(s) => Ok(Some((s, duration))),
        None => Err(format!("coverage attach without {DIR}")),
    }
}

#[cfg(test)]
mod attach_tests {
    use super::*;

    #[test]
    fn attach_data_round_trip() {
        let s = CoverageSettings {
            dir: "/tmp/r".into(),
            include: vec!["Shop".into()],
            exclude: vec![],
            branches: false,
        };
        let data = encode_attach(&s, Some(2.5));
        assert_eq!(decode_attach(&data).unwrap(), Some((s.clone(), Some(2.5))));
        assert_eq!(
            decode_attach(&encode_attach(&s, None)).unwrap(),
            Some((s, None))
        );
        assert_eq!(decode_attach(b"{\"settings\":1}").unwrap(), None);
        assert!(decode_attach(format!("{ATTACH_MAGIC}\n").as_bytes()).is_err());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| m.get(k).cloned()
    }

    #[test]
    fn round_trip_and_selection() {
        assert_eq!(CoverageSettings::from_env(env(&[])).unwrap(), None);
        let s = CoverageSettings::from_env(env(&[
            (DIR, "/tmp/run"),
            (INCLUDE, "Shop*, Cart"),
            (EXCLUDE, "Shop.Tests"),
        ]))
        .unwrap()
        .unwrap();
        assert!(s.branches);
        assert!(s.selects("Shop.Core") && s.selects("Cart"));
        assert!(!s.selects("Shop.Tests") && !s.selects("xunit.core"));
        let back: Vec<(String, String)> = s
            .to_env()
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        let get = |k: &str| back.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        assert_eq!(CoverageSettings::from_env(get).unwrap().unwrap(), s);
        assert!(CoverageSettings::from_env(env(&[(DIR, "rel")])).is_err());
        assert!(CoverageSettings::from_env(env(&[(DIR, "/x"), (BRANCHES, "yes")])).is_err());
    }
}
