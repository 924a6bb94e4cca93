//! `clrprof coverage --pid P [--duration S]`: attaches the agent in coverage mode (client
//! data `clrprof_settings::coverage::encode_attach`, no control socket), which gives the
//! measured assemblies' methods their instrumented bodies through ReJIT; the counters are
//! read when the duration is over or at Ctrl-C. Leaving removes the run directory, which
//! the agent watches: it reverts the methods and stays loaded, dormant (docs/coverage.md).

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use clrprof_ipc::{DiagnosticsClient, Uuid};
use clrprof_settings::coverage::{CoverageSettings, encode_attach};

/// Attaches, waits until the agent says its methods are requested, then for the duration
/// (or until Ctrl-C, or the process ends).
pub fn measure(
    pid: u32,
    library: &Path,
    run: &Path,
    settings: &CoverageSettings,
    duration_s: Option<f64>,
) -> Result<()> {
    crate::namespaces::check_same(pid)?;
    let client = DiagnosticsClient::connect(pid).map_err(|e| anyhow::anyhow!("{e}"))?;
    let copy = crate::libcopy::LibraryCopy::create(library, run, crate::libcopy::own_uid(), pid)?;
    let mapped = copy
        .as_ref()
        .map_or_else(|| library.to_path_buf(), |c| c.path().to_path_buf());
    // The agent stops on its own a little after the CLI's own end, if the CLI is killed.
    let data = encode_attach(settings, duration_s.map(|d| d + 5.0));
    client
        .attach_profiler(
            Duration::from_secs(10),
            Uuid::from_u128(clrprof_settings::CLSID),
            &mapped,
            &data,
        )
        .map_err(|e| {
            anyhow::anyhow!(
                "{e}; coverage of pid {pid} did not start (a profiler already attached, \
                 or the dormant agent of an earlier ReJIT, refuses a second one)"
            )
        })?;
    crate::signals::catch();
    let map = run.join(format!("coverage-{pid}.map"));
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let text = std::fs::read_to_string(&map).unwrap_or_default();
        if let Some(l) = text.lines().find(|l| l.starts_with("ready\t")) {
            eprintln!(
                "clrprof: measuring pid {pid}: {} methods instrumented{}",
                l.trim_start_matches("ready\t"),
                match duration_s {
                    Some(d) => format!(" for {d} s"),
                    None => "; Ctrl-C ends".into(),
                }
            );
            break;
        }
        if let Some(l) = text.lines().find(|l| l.starts_with("error\t")) {
            bail!(
                "the agent in pid {pid}: {}",
                l.trim_start_matches("error\t")
            );
        }
        if !alive(pid) {
            bail!("pid {pid} ended during the attach");
        }
        if Instant::now() > deadline || crate::signals::received().is_some() {
            bail!("the agent in pid {pid} did not start measuring within 60 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let until = duration_s.map(|d| Instant::now() + Duration::from_secs_f64(d));
    while until.is_none_or(|u| Instant::now() < u)
        && crate::signals::received().is_none()
        && alive(pid)
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}
