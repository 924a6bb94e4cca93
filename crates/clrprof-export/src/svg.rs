//! An interactive SVG flamegraph, drawn by inferno from the folded lines.

use std::io::Write;

use inferno::flamegraph::{self, Direction};

use crate::folded;
use crate::model::{Profile, Weight};
use crate::{ExportError, Options};

/// Writes a flamegraph of `profile` counting `opts.weight`, one tower per thread unless
/// `opts.merge_threads`. With `opts.reverse`, the stacks are reversed (the leaf functions
/// form the first row, their callers hang below them) and drawn top-down as an icicle.
///
/// Fails with [`ExportError::Empty`] when no stack has a nonzero weight.
pub fn write(profile: &Profile, opts: &Options, out: impl Write) -> Result<(), ExportError> {
    let lines = folded::lines(profile, opts)?;
    if lines.is_empty() {
        return Err(ExportError::Empty {
            weight: opts.weight,
        });
    }
    let what = match opts.weight {
        Weight::Samples => "samples",
        Weight::Wall => "wall time",
        Weight::Cpu => "CPU time",
        Weight::AllocBytes => "bytes allocated, estimated",
        Weight::AllocObjects => "objects allocated, estimated",
        Weight::LiveBytes => "bytes alive at the end, estimated",
        Weight::Wait => "time waiting (the runtime's wait events)",
        Weight::Lock => "time waiting for contended locks",
    };
    let name = if profile.name.is_empty() {
        "clrprof"
    } else {
        &profile.name
    };
    let mut fg = flamegraph::Options::default();
    fg.title = format!("{name} ({what})");
    fg.count_name = folded::count_name(profile, opts.weight).to_string();
    // Colours from a hash of the name: the same input draws the same picture.
    fg.hash = true;
    if opts.reverse {
        fg.reverse_stack_order = true;
        fg.direction = Direction::Inverted;
    }
    flamegraph::from_lines(&mut fg, lines.iter().map(String::as_str), out)?;
    Ok(())
}
