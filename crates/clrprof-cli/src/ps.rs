//! `clrprof ps`: the current user's .NET processes, with runtime versions.

use std::time::Duration;

use anyhow::Result;
use clrprof_analysis::text::escape_controls;
use clrprof_ipc::DiagnosticsClient;

pub fn run() -> Result<i32> {
    let procs = clrprof_ipc::list_dotnet_processes();
    if procs.is_empty() {
        eprintln!(
            "clrprof: no .NET processes found (only processes whose diagnostics socket this user can see are listed)"
        );
        return Ok(0);
    }
    use std::fmt::Write;
    let mut out = format!(
        "{:>8}  {:<10}  {:<8}  command\n",
        "pid", "runtime", "attached"
    );
    for p in procs.iter().filter(|p| p.alive) {
        let info = DiagnosticsClient::with_socket(p.pid, p.socket_path.clone())
            .with_timeout(Duration::from_secs(2))
            .process_info()
            .ok();
        let version = info
            .as_ref()
            .and_then(|i| i.clr_product_version.clone())
            .unwrap_or_else(|| "?".into());
        let attached = if crate::attach::dormant(p.pid) {
            // After a trace-mode recording: loaded for good, recording nothing until the
            // next `record --pid` starts a session in it.
            "dormant"
        } else if crate::attach::control_socket(p.pid).exists() {
            "clrprof"
        } else {
            ""
        };
        let cmd = if p.command_line.is_empty() {
            info.map(|i| i.command_line).unwrap_or_default()
        } else {
            p.command_line.clone()
        };
        let _ = writeln!(
            out,
            "{:>8}  {:<10}  {:<8}  {}",
            p.pid,
            escape_controls(&version),
            attached,
            escape_controls(&cmd)
        );
    }
    crate::stdout::write_text(&out)
}
