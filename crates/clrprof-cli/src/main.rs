//! `clrprof`: the command-line front end. Each subcommand lives in its own module; this
//! file only parses arguments and maps errors to exit codes.
//!
//! The few `unsafe` blocks are OS calls (mapping the trace, `kill`, `getuid`); each says
//! why it is sound.

mod attach;
mod cli;
mod completions;
mod convert;
mod coverage;
mod diff;
mod dump;
mod heap;
mod input;
mod libcopy;
mod live;
mod locate;
mod namespaces;
mod output;
mod progress;
mod ps;
mod push;
mod push_args;
mod record;
mod record_rate;
mod report;
mod setting_args;
mod settings;
mod signals;
mod stdout;
mod style;
mod top;
mod travel;

use clap::Parser;

fn main() {
    let args = cli::Cli::parse();
    let result = match args.command {
        cli::Command::Record(r) => match r.pid {
            Some(pid) if r.no_trace => Err(anyhow::anyhow!(
                "--no-trace with --pid is not supported yet (pid {pid} is left untouched): leave out --no-trace \
                 (the trace is written beside the pushes), or start the program under the profiler: \
                 clrprof record --push URL --no-trace -- <command>"
            )),
            // An unreachable server is refused before the attach is sent.
            Some(pid) => r
                .push
                .as_deref()
                .map_or(Ok(()), push::probe)
                .and_then(|()| {
                    attach::record(r, pid, &|args, pid, trace, rate_hz| {
                        push::Attached::start(args, pid, trace, rate_hz)
                            .map(|p| Box::new(p) as Box<dyn std::any::Any>)
                    })
                }),
            None => record::run(r),
        },
        cli::Command::Report(r) => report::run(r),
        cli::Command::Convert(c) => convert::run(c),
        cli::Command::Heap(h) => heap::run(h),
        cli::Command::Diff(d) => diff::diff(d),
        cli::Command::Detach(d) => attach::detach(d.pid, d.profiler.as_deref()),
        cli::Command::Ps => ps::run(),
        cli::Command::Completions { shell } => completions::completions(shell),
        cli::Command::Man => completions::man(),
        cli::Command::Top(t) => top::run(t),
        cli::Command::Dump(d) => dump::run(d),
        cli::Command::Coverage(c) => coverage::run(c),
    };
    match result {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("clrprof: {} {e:#}", style::error("error:"));
            std::process::exit(2);
        }
    }
}
