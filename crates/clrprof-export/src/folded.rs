//! Collapsed ("folded") stacks, the plain-text format of flamegraph.pl and inferno:
//! one line per distinct stack, `thread;root;…;leaf N`.

use std::collections::BTreeMap;
use std::io::Write;

use crate::model::{Profile, Weight};
use crate::stacks::{validate, weighted};
use crate::{ExportError, Options};

/// Makes a name safe for a folded line: `;` separates frames and a line ends the record,
/// so `;` becomes `:` and line breaks become spaces.
pub fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| match c {
            ';' => ':',
            '\n' | '\r' => ' ',
            c => c,
        })
        .collect()
}

/// The folded lines of `profile`, sorted, without line ends. `N` counts
/// `opts.weight`: samples, or nanoseconds of wall or CPU time. Each line starts with the
/// thread's name, threads of one name merged (with `opts.per_thread`, each thread apart:
/// [`ThreadProfile::label`](crate::ThreadProfile::label)), unless `opts.merge_threads`.
/// Empty stacks and stacks whose count is 0 are left out.
pub fn lines(profile: &Profile, opts: &Options) -> Result<Vec<String>, ExportError> {
    validate(profile)?;
    let names: Vec<String> = profile.frames.iter().map(|f| sanitize(&f.name)).collect();
    let labels: Vec<String> = profile
        .threads
        .iter()
        .map(|t| {
            sanitize(&if opts.per_thread {
                t.label()
            } else {
                t.group_label()
            })
        })
        .collect();
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    let mut key = String::new();
    for w in weighted(profile) {
        let value = w.value(opts.weight);
        if value == 0 {
            continue;
        }
        key.clear();
        if !opts.merge_threads {
            key.push_str(&labels[w.thread]);
        }
        for &f in w.stack.iter() {
            if !key.is_empty() {
                key.push(';');
            }
            key.push_str(&names[f.0 as usize]);
        }
        match counts.get_mut(key.as_str()) {
            Some(n) => *n += value,
            None => {
                counts.insert(key.clone(), value);
            }
        }
    }
    Ok(counts
        .into_iter()
        .map(|(stack, n)| format!("{stack} {n}"))
        .collect())
}

/// Writes the folded stacks of `profile` (see [`lines`]), one per line.
pub fn write(profile: &Profile, opts: &Options, mut out: impl Write) -> Result<(), ExportError> {
    for line in lines(profile, opts)? {
        writeln!(out, "{line}")?;
    }
    Ok(())
}

/// What the counts of [`lines`] are, for a flamegraph's legend: `samples`, `calls` (a
/// trace counted by calls) or `ns`.
pub(crate) fn count_name(profile: &Profile, weight: Weight) -> &'static str {
    match weight {
        Weight::Wall | Weight::Cpu | Weight::Wait | Weight::Lock => "ns",
        Weight::Samples if profile.threads.iter().all(crate::stacks::counts_calls) => "calls",
        Weight::Samples => "samples",
        Weight::AllocBytes | Weight::LiveBytes => "bytes",
        Weight::AllocObjects => "objects",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitizes_separators() {
        assert_eq!(sanitize("A;B\nC\r"), "A:B C ");
    }
}
