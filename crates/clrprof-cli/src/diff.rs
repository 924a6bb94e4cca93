//! `clrprof diff BEFORE [AFTER]`: two heap snapshots by type (of one trace or two), or two
//! traces' allocation samples (`record --alloc`).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clrprof_analysis::heap::{self, snapshot};

use crate::cli::DiffArgs;
use crate::heap as heap_cmd;

/// `clrprof diff A B` of two traces recorded with `--alloc`.
fn alloc_diff(fa: &Path, bytes_a: &[u8], fb: &Path, args: &DiffArgs) -> Result<i32> {
    let bytes_b = crate::input::open(fb)?;
    let section = |file: &Path, bytes: &[u8]| -> Result<_> {
        let trace = clrprof_analysis::Trace::load(bytes)
            .with_context(|| format!("{} is not a readable clrprof trace", file.display()))?;
        // A damaged trace's figures are not the run's: say so beside them, as `report` does.
        crate::input::print_warnings(file, &trace.warnings);
        crate::input::print_warnings(
            file,
            &crate::output::lost_note_warnings(file, &trace.header),
        );
        Ok(clrprof_analysis::report::allocation_samples(&trace))
    };
    let Some(a) = section(fa, bytes_a)? else {
        bail!(
            "{} holds neither a heap snapshot nor allocation samples: `clrprof diff` compares two \
             traces' heap snapshots (`clrprof record --heap SECONDS`, `clrprof heap --pid PID`) or their \
             allocation samples (`clrprof record --alloc`)",
            fa.display()
        );
    };
    let Some(b) = section(fb, &bytes_b)? else {
        bail!(
            "{} has no allocation samples to compare with those of {} (record it with `clrprof record --alloc`)",
            fb.display(),
            fa.display()
        );
    };
    let mut d = clrprof_analysis::diff::alloc::diff(&a, &b);
    if args.json {
        d.types.truncate(args.top);
        d.app_functions.truncate(args.top);
        println!("{}", serde_json::to_string_pretty(&d)?);
    } else {
        crate::stdout::write_text(&clrprof_analysis::text::render_alloc_diff(&d, args.top))?;
    }
    Ok(0)
}

/// `FILE` or `FILE:N`.
fn split_spec(spec: &str) -> (PathBuf, Option<u64>) {
    if let Some((f, n)) = spec.rsplit_once(':')
        && let Ok(n) = n.parse::<u64>()
        && !Path::new(spec).exists()
    {
        return (PathBuf::from(f), Some(n));
    }
    (PathBuf::from(spec), None)
}

pub fn diff(args: DiffArgs) -> Result<i32> {
    let (fa, na) = split_spec(&args.before);
    let bytes_a = crate::input::open(&fa)?;
    // Two traces without heap snapshots: their allocation samples (`record --alloc`),
    // whose own full read warns about damage.
    if let Some(after) = &args.after
        && na.is_none()
        && snapshot::list(&bytes_a).is_ok_and(|l| l.is_empty())
    {
        return alloc_diff(&fa, &bytes_a, Path::new(after), &args);
    }
    let list_a = heap_cmd::list(&fa, &bytes_a, true)?;
    let (a, b) = match &args.after {
        Some(after) => {
            let (fb, nb) = split_spec(after);
            let bytes_b = crate::input::open(&fb)?;
            let list_b = heap_cmd::list(&fb, &bytes_b, true)?;
            (
                heap_cmd::load(&fa, &bytes_a, &list_a, na, false, &|| bytes_a.release())?,
                heap_cmd::load(&fb, &bytes_b, &list_b, nb, false, &|| bytes_b.release())?,
            )
        }
        None => {
            let list = list_a;
            if list.len() < 2 {
                bail!(
                    "{} holds {} heap snapshot(s): give two files, or one with at least two snapshots",
                    fa.display(),
                    list.len()
                );
            }
            let first = na.unwrap_or(list[0].0);
            (
                heap_cmd::load(&fa, &bytes_a, &list, Some(first), false, &|| {
                    bytes_a.release()
                })?,
                heap_cmd::load(
                    &fa,
                    &bytes_a,
                    &list,
                    Some(list[list.len() - 1].0),
                    false,
                    &|| bytes_a.release(),
                )?,
            )
        }
    };
    let types_of = |s: &snapshot::HeapSnapshot| heap::report::types(&heap::model::Model::build(s));
    let d = clrprof_analysis::diff::heap::diff(&types_of(&a), &types_of(&b));
    if args.json {
        let mut d = d;
        d.types.truncate(args.top);
        println!("{}", serde_json::to_string_pretty(&d)?);
    } else {
        crate::stdout::write_text(&clrprof_analysis::text::render_heap_diff(&d, args.top))?;
    }
    Ok(0)
}
