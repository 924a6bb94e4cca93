//! `clrprof coverage -- <command…>` (docs/coverage.md): starts the command with the
//! agent in coverage mode (`clrprof_settings::coverage`), waits, reads each .NET
//! process's counters and map from the run directory (`model`) and writes the report
//! (`formats`). The assemblies' files are only read, never written.

mod attach;
mod formats;
mod model;

use std::path::PathBuf;
use std::process::Command;

use anyhow::{Context, Result, bail};
use clrprof_settings::coverage::CoverageSettings;

pub use formats::Format;

#[derive(clap::Args, Debug)]
pub struct CoverageArgs {
    /// Report format [default: from the -o file's extension (.xml cobertura, .info lcov,
    /// .json json), else text]
    #[arg(short, long, value_enum)]
    pub format: Option<Format>,
    /// Write the report to this file instead of stdout
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Measure only the assemblies whose simple name (file name without .dll) matches;
    /// `*` and `?` wildcards; repeatable or comma separated [default: every assembly with
    /// a PDB outside the runtime's own directory]
    #[arg(long, value_delimiter = ',')]
    pub include: Vec<String>,
    /// Leave out the assemblies whose simple name matches (wins over --include)
    #[arg(long, value_delimiter = ',')]
    pub exclude: Vec<String>,
    /// Count sequence points only, no branch edges
    #[arg(long)]
    pub no_branches: bool,
    /// The profiler library [default: CLRPROF_PROFILER_PATH, else beside clrprof]
    #[arg(long)]
    pub profiler: Option<PathBuf>,
    /// Measure a running process instead: the lines it executes from the attach on
    /// (through ReJIT), until --duration is over or Ctrl-C
    #[arg(long, conflicts_with = "command")]
    pub pid: Option<u32>,
    /// With --pid: how long to measure, in seconds
    #[arg(long, requires = "pid", value_parser = parse_duration, value_name = "SECONDS")]
    pub duration: Option<f64>,
    /// The command to run, e.g. `dotnet test` or `dotnet app.dll`
    #[arg(last = true, required_unless_present = "pid")]
    pub command: Vec<String>,
}

pub fn run(args: CoverageArgs) -> Result<i32> {
    let library = crate::locate::profiler_library(args.profiler.as_deref())?;
    let format = args
        .format
        .or_else(|| args.output.as_deref().and_then(Format::from_path))
        .unwrap_or(Format::Text);
    let run = crate::output::RunDir::create()?;
    let settings = CoverageSettings {
        dir: run.path().to_path_buf(),
        include: args.include.clone(),
        exclude: args.exclude.clone(),
        branches: !args.no_branches,
    };
    let (code, program) = match args.pid {
        Some(pid) => {
            attach::measure(pid, &library, run.path(), &settings, args.duration)?;
            (0, format!("pid {pid}"))
        }
        None => (
            run_command(&args.command, &library, &settings)?,
            args.command[0].clone(),
        ),
    };
    let mut report = model::read_run(run.path())?;
    if let Some(pid) = args.pid {
        // Still running: measured until now, not ended abnormally.
        for p in &mut report.processes {
            p.ended |= p.pid == pid;
        }
    }
    if report.processes.is_empty() {
        bail!(
            "no .NET process ran under coverage: `{program}` started none that loaded the profiler \
             (exit status {code}). Is it a .NET (CoreCLR) program? Run the app through the host \
             (`clrprof coverage -- dotnet app.dll`), its own executable, or `dotnet test`; the .NET \
             SDK's own processes (dotnet build, MSBuild) are never measured"
        );
    }
    let timestamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let text = formats::render(&report, format, timestamp);
    match &args.output {
        Some(p) => std::fs::write(p, &text).with_context(|| format!("writing {}", p.display()))?,
        None => {
            if format == Format::Text {
                crate::stdout::write_text(&text)?;
            } else {
                crate::stdout::write_stdout(text.as_bytes())?;
            }
        }
    }
    // A refused PDB is always said; the rest (packages without PDB or sources, the test
    // assembly) one by one only when few, else counted: the report lists each.
    let (refused, others): (Vec<_>, Vec<_>) = report
        .unmeasured
        .iter()
        .partition(|(_, why)| why.starts_with("PDB refused"));
    let shown = if others.len() <= 3 { others.len() } else { 0 };
    for (p, why) in refused.iter().chain(&others[..shown]) {
        eprintln!("clrprof: not measured: {p}: {why}");
    }
    if others.len() > shown {
        eprintln!(
            "clrprof: {} assemblies not measured (no PDB, no source file here, or the test assembly); the report lists each with the reason",
            others.len()
        );
    }
    for (p, tok, why) in &report.failed {
        eprintln!("clrprof: method {tok:#010x} of {p} not measured: {why}");
    }
    if report.dropped > 0 {
        eprintln!(
            "clrprof: {} methods not measured: a process used all its {} counters",
            report.dropped,
            clrprof_settings::coverage::MAX_COUNTERS
        );
    }
    for p in report.processes.iter().filter(|p| !p.ended) {
        eprintln!(
            "clrprof: {} pid {} ({}) ended abnormally (killed or crashed): its lines counted until then are reported",
            crate::style::warning("warning:"),
            p.pid,
            p.command
        );
    }
    if let Some(p) = &args.output {
        let t = report.totals();
        eprintln!(
            "clrprof: coverage written to {} ({} of {} lines, {} of {} branches covered)",
            p.display(),
            t.lines_covered,
            t.lines_valid,
            t.branches_covered,
            t.branches_valid
        );
    }
    Ok(code)
}

/// `--duration`: seconds, more than 0 and at most a year (as `record --duration`; its own
/// copy, `cli` naming this module's arguments).
fn parse_duration(s: &str) -> Result<f64, String> {
    let max = clrprof_settings::MAX_DURATION_S;
    match s.trim().parse::<f64>() {
        Ok(d) if d > 0.0 && d <= max => Ok(d),
        _ => Err(format!(
            "expected a number of seconds, more than 0 and at most {max} (a year)"
        )),
    }
}

/// Starts the command with the agent in coverage mode and waits for it: its exit code.
fn run_command(
    command: &[String],
    library: &std::path::Path,
    settings: &CoverageSettings,
) -> Result<i32> {
    let (program, rest) = command.split_first().context("no command given")?;
    let mut cmd = Command::new(program);
    cmd.args(rest)
        .envs(clrprof_settings::startup_env(library))
        .envs(settings.to_env())
        // `dotnet test` / `dotnet run`: no build node or compiler server may outlive the
        // command with the profiler loaded (the SDK's processes decline anyway).
        .env("MSBUILDDISABLENODEREUSE", "1")
        .env("DOTNET_CLI_USE_MSBUILD_SERVER", "0")
        .env("UseSharedCompilation", "false");
    let mut child = cmd
        .spawn()
        .with_context(|| format!("cannot start `{program}`"))?;
    crate::signals::forward_to(child.id());
    let status = child.wait().context("waiting for the command")?;
    Ok(exit_code(status))
}

fn exit_code(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => c,
        (None, Some(sig)) => 128 + sig,
        _ => 1,
    }
}
