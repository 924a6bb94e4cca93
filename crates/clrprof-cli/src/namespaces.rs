//! A target in another container: its mount (or pid) namespace is not ours. The runtime
//! would load the profiler library and the agent would write the trace and its control
//! socket inside that container's filesystem, under its own pid, where this process
//! cannot follow; so attaching refuses up front and says where to run clrprof instead.

use anyhow::{Result, bail};

/// The namespaces whose difference breaks an attach: files (mnt) and process ids (pid).
const KINDS: [&str; 2] = ["mnt", "pid"];

/// `mnt:[4026531832]`, or None when it cannot be read (another user's process without
/// root: the diagnostics socket check will say so).
fn namespace(pid: &str, kind: &str) -> Option<String> {
    std::fs::read_link(format!("/proc/{pid}/ns/{kind}"))
        .ok()
        .map(|p| p.to_string_lossy().into_owned())
}

/// Refuses a target whose mount or pid namespace differs from ours.
pub fn check_same(pid: u32) -> Result<()> {
    for kind in KINDS {
        let (Some(theirs), Some(ours)) =
            (namespace(&pid.to_string(), kind), namespace("self", kind))
        else {
            continue;
        };
        if theirs != ours {
            bail!(
                "pid {pid} runs in another container (its {kind} namespace is {theirs}, ours is {ours}): \
                 the profiler would load its library and write its trace and control socket inside that \
                 container, where clrprof here cannot follow. Run clrprof inside the same container, \
                 e.g. `docker exec -it CONTAINER clrprof record --pid PID-IN-CONTAINER`, or enter its \
                 namespaces: `nsenter -t {pid} -m -p -- clrprof record --pid PID-IN-CONTAINER` \
                 (the clrprof binary and libclrprof_profiler.so must exist inside it)"
            );
        }
    }
    Ok(())
}
