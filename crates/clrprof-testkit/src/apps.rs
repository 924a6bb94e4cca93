//! Building the .NET test apps under `apps/`, once per source change.
//!
//! `app("Scenarios")` runs `dotnet build -c Release -o <target>/testapps/Scenarios` (with
//! intermediate files under `<target>/testapps/.artifacts/Scenarios`, never in the source
//! tree). `app_on("Scenarios", Runtime::Net8)` builds with `-p:AppFramework=net8.0` into
//! `<target>/testapps/Scenarios.net8.0` and runs it with the provisioned .NET 8 (see
//! `runtimes.rs`). A fingerprint of the app's sources is stored next to the output after a successful
//! build; later calls, from this process or any other, skip the build while it matches. An
//! `app_single_file("Scenarios")` publishes it as a self-contained single-file executable
//! into `<target>/testapps/Scenarios.single-file`. An
//! `app_embedded_pdb("Scenarios")` builds the same app with its portable PDB embedded in
//! the DLL (`-p:DebugType=embedded`) into `<target>/testapps/Scenarios.embedded-pdb`. An
//! exclusive file lock (`<target>/testapps/<name>.lock`) makes concurrently running test
//! binaries wait for each other instead of building the same app at once, and within one
//! process each app is checked only once.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use crate::paths::{dotnet, target_dir, workspace_root};
use crate::runtimes::Runtime;
use crate::source_hash;

/// A built test app.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuiltApp {
    /// The app's main assembly, e.g. `<target>/testapps/Scenarios/Scenarios.dll`.
    pub dll: PathBuf,
    /// The build output directory holding `dll` and everything it ships with.
    pub dir: PathBuf,
    /// The runtime the app was built for and runs on.
    pub runtime: Runtime,
    /// The `dotnet` muxer that runs it on that runtime.
    pub dotnet: PathBuf,
    /// The `DOTNET_ROOT` the muxer needs (`None`: the installed SDK's).
    pub dotnet_root: Option<PathBuf>,
}

impl BuiltApp {
    /// `dotnet <dll> <args…>`, ready to be adjusted (env, stdin, …) and run.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(&self.dotnet);
        cmd.arg(&self.dll).args(args);
        cmd.env("DOTNET_CLI_TELEMETRY_OPTOUT", "1")
            .env("DOTNET_NOLOGO", "1");
        self.env(&mut cmd);
        cmd
    }

    /// Sets what a command that starts this app (directly or through `clrprof record --`)
    /// needs in its environment: `DOTNET_ROOT` for .NET 8 and 9.
    pub fn env<'c>(&self, cmd: &'c mut Command) -> &'c mut Command {
        if let Some(root) = &self.dotnet_root {
            cmd.env("DOTNET_ROOT", root);
        }
        cmd
    }
}

/// The extra arguments of every build; part of the fingerprint, so changing them rebuilds.
const BUILD_ARGS: &[&str] = &[
    "-c",
    "Release",
    "-nologo",
    "-nodeReuse:false",
    // No compiler server left running after the build.
    "-p:UseSharedCompilation=false",
];

/// A build still running after this long is killed and reported as failed.
const BUILD_TIMEOUT: Duration = Duration::from_secs(600);

/// Builds `apps/<name>` for .NET 10 if its sources changed since the last successful build
/// (by any test process) and returns where it is. Panics with the build's output when the
/// build fails.
pub fn app(name: &str) -> BuiltApp {
    app_on(name, Runtime::Net10)
}

/// [`app`] for a chosen runtime; .NET 8 and 9 are provisioned on first use (see
/// `scripts/provision-runtimes.sh`).
pub fn app_on(name: &str, runtime: Runtime) -> BuiltApp {
    app_variant(name, runtime, Variant::Plain)
}

/// [`app`] with the portable PDB embedded in the DLL (debug directory entry type 17)
/// instead of beside it: no `.pdb` file in the output.
pub fn app_embedded_pdb(name: &str) -> BuiltApp {
    app_embedded_pdb_on(name, Runtime::Net10)
}

/// [`app_embedded_pdb`] for a chosen runtime.
pub fn app_embedded_pdb_on(name: &str, runtime: Runtime) -> BuiltApp {
    app_variant(name, runtime, Variant::EmbeddedPdb)
}

/// `apps/<name>` published as one self-contained single-file executable for .NET 10
/// (`dotnet publish -r linux-x64 --self-contained -p:PublishSingleFile=true`) into
/// `<target>/testapps/<name>.single-file`; its `dll` is that executable, run as itself
/// (not through `dotnet`). Its assemblies are bundled in the file, the runtime maps them
/// from inside it.
pub fn app_single_file(name: &str) -> BuiltApp {
    app_variant(name, Runtime::Net10, Variant::SingleFile)
}

/// `apps/<name>` published framework-dependent for .NET 10 with its assemblies' code
/// precompiled into one composite ReadyToRun image (`dotnet publish -r linux-x64
/// --self-contained false -p:PublishReadyToRun=true -p:PublishReadyToRunComposite=true`)
/// into `<target>/testapps/<name>.composite`: `<name>.r2r.dll` holds the code, each
/// assembly only its IL and metadata.
pub fn app_composite(name: &str) -> BuiltApp {
    app_variant(name, Runtime::Net10, Variant::Composite)
}

/// How an app is built.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Variant {
    Plain,
    EmbeddedPdb,
    SingleFile,
    Composite,
}

fn app_variant(name: &str, runtime: Runtime, variant: Variant) -> BuiltApp {
    type Cell = Arc<OnceLock<Result<BuiltApp, String>>>;
    static CELLS: Mutex<BTreeMap<(String, Runtime, Variant), Cell>> = Mutex::new(BTreeMap::new());
    let cell = CELLS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .entry((name.to_owned(), runtime, variant))
        .or_default()
        .clone();
    // Other threads asking for the same app wait here; a failure is remembered, so every
    // test that needs the app fails fast with the same message.
    match cell.get_or_init(|| build_if_changed(name, runtime, variant)) {
        Ok(app) => app.clone(),
        Err(message) => panic!("{message}"),
    }
}

/// The output folder's name: the app's for .NET 10 (as before), `<name>.net8.0` otherwise;
/// `.embedded-pdb` or `.single-file` appended for those variants.
fn output_name(name: &str, runtime: Runtime, variant: Variant) -> String {
    let base = match runtime {
        Runtime::Net10 => name.to_owned(),
        other => format!("{name}.{}", other.tfm()),
    };
    match variant {
        Variant::Plain => base,
        Variant::EmbeddedPdb => format!("{base}.embedded-pdb"),
        Variant::SingleFile => format!("{base}.single-file"),
        Variant::Composite => format!("{base}.composite"),
    }
}

fn build_if_changed(name: &str, runtime: Runtime, variant: Variant) -> Result<BuiltApp, String> {
    let fail = |what: &str, err: &dyn std::fmt::Display| {
        format!("clrprof-testkit: apps/{name}: {what}: {err}")
    };
    if name.is_empty() || name.contains(['/', '\\']) || name.starts_with('.') {
        return Err(format!("clrprof-testkit: bad app name {name:?}"));
    }
    let apps_dir = workspace_root().join("apps");
    let app_dir = apps_dir.join(name);
    let project = project_file(&app_dir)?;
    let assembly = assembly_name(&project);

    let testapps = target_dir().join("testapps");
    let out_name = output_name(name, runtime, variant);
    let out = testapps.join(&out_name);
    let artifacts = testapps.join(".artifacts").join(&out_name);
    let stamp = testapps.join(format!("{out_name}.stamp"));
    let log = testapps.join(format!("{out_name}.build.log"));
    let (host, dotnet_root) = runtime.host();
    let built = BuiltApp {
        dll: if variant == Variant::SingleFile {
            out.join(&assembly)
        } else {
            out.join(format!("{assembly}.dll"))
        },
        dir: out.clone(),
        runtime,
        dotnet: host,
        dotnet_root,
    };
    fs::create_dir_all(&testapps).map_err(|e| fail("create the output directory", &e))?;

    // Held until this function returns: one build of an app at a time, across processes.
    let lock_path = testapps.join(format!("{out_name}.lock"));
    let lock = File::options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&lock_path)
        .map_err(|e| fail(&format!("open {}", lock_path.display()), &e))?;
    lock.lock()
        .map_err(|e| fail(&format!("lock {}", lock_path.display()), &e))?;

    let mut properties = vec![format!("-p:AppFramework={}", runtime.tfm())];
    match variant {
        Variant::Plain => {}
        Variant::EmbeddedPdb => properties.push("-p:DebugType=embedded".to_owned()),
        Variant::SingleFile => properties.extend(
            [
                "-r",
                "linux-x64",
                "--self-contained",
                "-p:PublishSingleFile=true",
            ]
            .map(String::from),
        ),
        Variant::Composite => properties.extend(
            [
                "-r",
                "linux-x64",
                "--self-contained",
                "false",
                "-p:PublishReadyToRun=true",
                "-p:PublishReadyToRunComposite=true",
            ]
            .map(String::from),
        ),
    }
    // The same recipe as before for the usual variant, so existing builds stay valid.
    let recipe = format!(
        "{BUILD_ARGS:?} {} {}",
        properties.join(" "),
        dotnet().display()
    );
    let fingerprint = source_hash::fingerprint(&apps_dir, name, &recipe)
        .map_err(|e| fail("read the sources", &e))?;
    if fs::read_to_string(&stamp).is_ok_and(|s| s.trim() == fingerprint) && built.dll.is_file() {
        return Ok(built);
    }
    let _ = fs::remove_file(&stamp);

    run_build(
        name,
        &properties,
        &app_dir,
        &project,
        &out,
        &artifacts,
        &log,
    )?;
    if !built.dll.is_file() {
        return Err(format!(
            "clrprof-testkit: apps/{name} built, but {} does not exist (see {})",
            built.dll.display(),
            log.display()
        ));
    }
    let tmp = stamp.with_extension(format!("stamp.{}", std::process::id()));
    fs::write(&tmp, &fingerprint)
        .and_then(|()| fs::rename(&tmp, &stamp))
        .map_err(|e| fail("write the build stamp", &e))?;
    drop(lock);
    Ok(built)
}

/// `apps/<name>/<name>.csproj` (or `.fsproj`, `.vbproj`), else the only project file there.
fn project_file(app_dir: &Path) -> Result<PathBuf, String> {
    let name = app_dir.file_name().unwrap_or_default().to_string_lossy();
    for ext in ["csproj", "fsproj", "vbproj"] {
        let candidate = app_dir.join(format!("{name}.{ext}"));
        if candidate.is_file() {
            return Ok(candidate);
        }
    }
    let projects: Vec<PathBuf> = fs::read_dir(app_dir)
        .map_err(|e| format!("clrprof-testkit: no test app at {}: {e}", app_dir.display()))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension()
                .is_some_and(|e| e.to_string_lossy().ends_with("proj"))
        })
        .collect();
    match projects.as_slice() {
        [one] => Ok(one.clone()),
        _ => Err(format!(
            "clrprof-testkit: expected one project file in {}, found {projects:?}",
            app_dir.display()
        )),
    }
}

/// The project's `<AssemblyName>`, else the project file's name.
fn assembly_name(project: &Path) -> String {
    let stem = project
        .file_stem()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    let Ok(text) = fs::read_to_string(project) else {
        return stem;
    };
    text.split_once("<AssemblyName>")
        .and_then(|(_, rest)| rest.split_once("</AssemblyName>"))
        .map(|(value, _)| value.trim().to_owned())
        .filter(|value| !value.is_empty() && !value.contains('$'))
        .unwrap_or(stem)
}

fn run_build(
    name: &str,
    properties: &[String],
    app_dir: &Path,
    project: &Path,
    out: &Path,
    artifacts: &Path,
    log: &Path,
) -> Result<(), String> {
    let log_file =
        File::create(log).map_err(|e| format!("clrprof-testkit: create {}: {e}", log.display()))?;
    let log_err = log_file
        .try_clone()
        .map_err(|e| format!("clrprof-testkit: {e}"))?;
    let mut cmd = Command::new(dotnet());
    // A single-file or ReadyToRun app is published (those properties take effect only there).
    let verb = if properties.iter().any(|p| p.starts_with("-p:Publish")) {
        "publish"
    } else {
        "build"
    };
    cmd.arg(verb)
        .arg(project)
        .args(BUILD_ARGS)
        .args(properties)
        .arg("-o")
        .arg(out)
        .arg("--artifacts-path")
        .arg(artifacts)
        .current_dir(app_dir)
        .env("DOTNET_CLI_TELEMETRY_OPTOUT", "1")
        .env("DOTNET_NOLOGO", "1")
        .env("DOTNET_SKIP_FIRST_TIME_EXPERIENCE", "1")
        .env("MSBUILDDISABLENODEREUSE", "1")
        .env("DOTNET_CLI_USE_MSBUILD_SERVER", "0")
        // Output goes to a file, not a pipe: a helper process that outlives the build
        // cannot keep us waiting for end of file.
        .stdin(Stdio::null())
        .stdout(log_file)
        .stderr(log_err);
    // A profiler configured for the tests must not load into the build itself.
    for (key, _) in std::env::vars_os() {
        let key_text = key.to_string_lossy();
        if key_text.starts_with("CORECLR_") || key_text.starts_with("CLRPROF_") {
            cmd.env_remove(&key);
        }
    }

    let framework = properties.join(" ");
    eprintln!(
        "clrprof-testkit: building apps/{name} {framework} (log: {})",
        log.display()
    );
    let started = Instant::now();
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("clrprof-testkit: could not start {cmd:?}: {e}"))?;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if started.elapsed() > BUILD_TIMEOUT => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => return Err(format!("clrprof-testkit: waiting for {cmd:?}: {e}")),
        }
    };
    let took = started.elapsed();
    match status {
        Some(status) if status.success() => {
            eprintln!(
                "clrprof-testkit: built apps/{name} {framework} in {:.1}s",
                took.as_secs_f64()
            );
            Ok(())
        }
        _ => {
            let what = status.map_or_else(
                || format!("timed out after {}s", BUILD_TIMEOUT.as_secs()),
                |s| format!("failed ({s})"),
            );
            Err(format!(
                "clrprof-testkit: building apps/{name} {framework} {what} after {:.1}s\ncommand: {cmd:?}\n\
                 --- build output ({}) ---\n{}",
                took.as_secs_f64(),
                log.display(),
                tail(log, 200)
            ))
        }
    }
}

/// The last `lines` lines of a file.
fn tail(path: &Path, lines: usize) -> String {
    let text = fs::read_to_string(path).unwrap_or_else(|e| format!("(cannot read: {e})"));
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_assembly_name() {
        let root = workspace_root();
        assert_eq!(
            assembly_name(&root.join("apps/Scenarios/Scenarios.csproj")),
            "Scenarios"
        );
        assert_eq!(
            project_file(&root.join("apps/TailCalls")).unwrap(),
            root.join("apps/TailCalls/TailCalls.fsproj")
        );
        assert!(project_file(&root.join("apps/NoSuchApp")).is_err());
    }
}
