//! The target of a live view (`top`, `dump`): a running process the agent is attached to
//! in sample mode, or a command started with the agent, writing samples to a trace file
//! that the view follows. Attaching reuses `record --pid`'s path (its checks, errors and
//! self-detach when this clrprof is gone); stopping detaches and waits until the library
//! is gone from the target's maps.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clrprof_ipc::DiagnosticsClient;
use clrprof_settings::{Mode, SamplerKind, Settings};

use super::follow::Follow;
use crate::{attach, locate};

/// What the agent is asked for.
pub struct LiveOptions<'a> {
    pub rate_hz: u32,
    pub sampler: Option<SamplerKind>,
    pub profiler: Option<&'a Path>,
    /// Keep the samples in this trace file; by default they go to a temporary file that
    /// is deleted as soon as it is open (nothing is left behind, even if clrprof dies).
    pub keep: Option<&'a Path>,
    /// Allocation samples too (`top --alloc`), at the default interval.
    pub alloc: bool,
    /// The runtime's wait events too (`top --waits`).
    pub waits: bool,
}

pub struct Live {
    pub pid: u32,
    library: PathBuf,
    /// Set when the command was started by us (`top -- command`).
    child: Option<Child>,
    pub follow: Follow,
    /// Where the trace is kept, when asked to keep it.
    pub kept: Option<PathBuf>,
    detached: bool,
}

fn settings(opts: &LiveOptions<'_>, output: PathBuf) -> Settings {
    let mut s = Settings {
        output,
        rate_hz: opts.rate_hz,
        // The live views show stacks; exception stacks would only cost the target.
        exception_stacks: false,
        // `top` may run for hours: LZ4 blocks keep the file it grows small.
        compress: true,
        ..Settings::for_mode(Mode::Sample)
    };
    if let Some(k) = opts.sampler {
        s.sampler = k;
    }
    if opts.alloc {
        s.alloc_interval = Some(crate::setting_args::DEFAULT_ALLOC_INTERVAL);
    }
    if opts.waits {
        s.events.insert(clrprof_settings::EventGroup::Waits);
    }
    s
}

/// The trace file: the one asked for, or a fresh temporary name the agent creates
/// (`O_EXCL`, as the target's user, so in a directory every user can write).
fn output_path(opts: &LiveOptions<'_>, what: &str, pid: Option<u32>) -> Result<PathBuf> {
    if let Some(p) = opts.keep {
        let p = if p.is_absolute() {
            p.to_path_buf()
        } else {
            std::env::current_dir()?.join(p)
        };
        crate::output::prepare(&p, false)?;
        return Ok(p);
    }
    let tmp = std::env::var_os("TMPDIR")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .unwrap_or_else(|| PathBuf::from("/tmp"));
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    Ok(tmp.join(format!(
        "clrprof-{what}-{}-{}-{nanos:08x}.clrprof",
        pid.map(|p| p.to_string()).unwrap_or_else(|| "cmd".into()),
        std::process::id()
    )))
}

impl Live {
    /// Attaches the agent to `pid` in sample mode.
    pub fn attach(pid: u32, what: &str, opts: &LiveOptions<'_>) -> Result<Live> {
        if !attach::alive(pid) {
            bail!("no process with pid {pid}");
        }
        if let Some(state @ ('T' | 't')) = attach::process_state(pid) {
            bail!(
                "pid {pid} is stopped (state {state}: SIGSTOP, Ctrl-Z or a debugger) and cannot answer an attach; \
                 resume it (`kill -CONT {pid}`) and try again"
            );
        }
        let library = locate::profiler_library(opts.profiler)?;
        let output = output_path(opts, what, Some(pid))?;
        let mut s = settings(opts, output.clone());
        // The agent detaches itself when this process is gone (killed, terminal closed).
        s.owner_pid = Some(std::process::id());
        s.owner_start = attach::own_start_time();
        let client = DiagnosticsClient::connect(pid).map_err(attach::explain)?;
        let library = attach::start(&client, pid, &library, &s)?;
        // The agent created the file before it answered on its control socket.
        let follow = match open_and_forget(&output, opts.keep.is_none()) {
            Ok(f) => f,
            Err(e) => {
                let _ = attach::detach_and_wait(pid, &library, true);
                return Err(e);
            }
        };
        Ok(Live {
            pid,
            library,
            child: None,
            follow,
            kept: opts.keep.map(|_| output),
            detached: false,
        })
    }

    /// Starts `command` with the agent loaded at startup in sample mode. Its input and
    /// output are not the terminal's (the view owns the terminal): its output goes to
    /// `log`.
    pub fn launch(
        command: &[String],
        log: &Path,
        what: &str,
        opts: &LiveOptions<'_>,
    ) -> Result<Live> {
        let library = locate::profiler_library(opts.profiler)?;
        let output = output_path(opts, what, None)?;
        let s = settings(opts, output.clone());
        let (program, rest) = command.split_first().context("no command given")?;
        let out = std::fs::File::create(log)
            .with_context(|| format!("cannot create {}", log.display()))?;
        let err = out.try_clone()?;
        let mut child = Command::new(program)
            .args(rest)
            .envs(clrprof_settings::startup_env(&library))
            .envs(s.to_env())
            .env("MSBUILDDISABLENODEREUSE", "1")
            .env("DOTNET_CLI_USE_MSBUILD_SERVER", "0")
            .env("UseSharedCompilation", "false")
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .with_context(|| format!("cannot start `{program}`"))?;
        let pid = child.id();
        // The runtime loads the agent as it starts; the agent then creates the file.
        let deadline = Instant::now() + Duration::from_secs(30);
        while !output.exists() {
            if let Some(status) = child.try_wait()? {
                bail!(
                    "`{program}` ended ({status}) before the profiler started: is it a .NET (CoreCLR) program? \
                     Its output is in {}",
                    log.display()
                );
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                bail!(
                    "the profiler did not start in `{program}` within 30 s: is it a .NET (CoreCLR) program? \
                     Its output (with `clrprof[pid]:` lines saying why the profiler declined, if it did) is in {}",
                    log.display()
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let follow = open_and_forget(&output, opts.keep.is_none())?;
        Ok(Live {
            pid,
            library,
            child: Some(child),
            follow,
            kept: opts.keep.map(|_| output),
            detached: false,
        })
    }

    /// Whether the target still runs.
    pub fn running(&mut self) -> bool {
        match &mut self.child {
            Some(c) => matches!(c.try_wait(), Ok(None)),
            None => attach::alive(self.pid),
        }
    }

    /// Whether this view started the command (rather than attaching).
    pub fn launched(&self) -> bool {
        self.child.is_some()
    }

    /// Detaches (waiting until the library is unmapped) and returns how long it took;
    /// a command we started is stopped with SIGTERM (then SIGKILL after 5 s).
    /// Afterwards the trace is complete: poll `follow` once more for its last blocks.
    pub fn stop(&mut self) -> Result<Option<Duration>> {
        let started = Instant::now();
        if let Some(mut child) = self.child.take() {
            if matches!(child.try_wait(), Ok(None)) {
                // SAFETY: kill has no memory-safety preconditions; the pid is our child's,
                // which we have not reaped.
                unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
                let end = Instant::now() + Duration::from_secs(5);
                while matches!(child.try_wait(), Ok(None)) && Instant::now() < end {
                    std::thread::sleep(Duration::from_millis(20));
                }
                let _ = child.kill();
            }
            let _ = child.wait();
            return Ok(None);
        }
        if self.detached || !attach::alive(self.pid) {
            return Ok(None);
        }
        self.detached = true;
        if !attach::control_socket(self.pid).exists() {
            // The agent stopped on its own (another `clrprof detach`).
            return Ok(None);
        }
        attach::detach_and_wait(self.pid, &self.library, true)?;
        Ok(Some(started.elapsed()))
    }
}

/// Opens the trace for following; a temporary one is unlinked at once (the agent keeps
/// writing to its descriptor, we keep reading ours).
fn open_and_forget(path: &Path, temporary: bool) -> Result<Follow> {
    let follow = Follow::open(path)?;
    if temporary {
        let _ = std::fs::remove_file(path);
    }
    Ok(follow)
}

/// Never leave the agent behind: an error or a panic on the way out still detaches (or
/// stops the command we started).
impl Drop for Live {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}
