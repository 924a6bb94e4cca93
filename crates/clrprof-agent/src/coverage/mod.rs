//! `clrprof coverage` (docs/coverage.md): each method of a measured assembly gets, when the
//! JIT first asks for it, a body with an inline counter increment at each visible
//! sequence point of its PDB and on each branch edge (`clrprof_il::coverage`).
//!
//! The counters are 8-byte cells of a file in the run directory mapped shared
//! (`coverage-<pid>.counters`, sparse, [`MAX_COUNTERS`] cells): an increment is a store
//! into the page cache, so the CLI reads every count even when this process is killed.
//! What each cell means goes to `coverage-<pid>.map` (one line per module and per method,
//! each written with one `write` before the method's new body is handed to the runtime,
//! so no counted cell lacks its line). `end` is its last line after a normal shutdown.
//!
//! After attach (`clrprof coverage --pid`) the bodies go in through ReJIT instead
//! (`attach_complete`, `rejit_body`) and are reverted when the CLI's run directory is gone.
//!
//! ReadyToRun: precompiled code of a measured assembly is refused in
//! JITCachedFunctionSearchStarted, so its methods are JIT-compiled (and instrumented)
//! like the others; the framework keeps its precompiled code. Inlining of a measured
//! method is refused (JITInlining): an inlined copy would be compiled from the original IL
//! and count nothing.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use clrprof_metadata::pdb::find::{PdbSource, find_pdb};
use clrprof_metadata::pdb::{PdbError, PortablePdb};
use clrprof_settings::coverage::{CoverageSettings, MAX_COUNTERS};
use corprof::{FunctionId, ModuleId, ProfilerInfo};
use corprof_sys as sys;

/// A measured module.
struct Module {
    index: u32,
    pdb: PortablePdb,
    /// Methods whose body was already replaced (generic instantiations and tier-1
    /// recompilations JIT a method again, from the replaced body).
    done: Mutex<HashSet<u32>>,
}

/// The coverage run of this process.
pub struct Coverage {
    info: ProfilerInfo,
    settings: CoverageSettings,
    /// Address of the first counter.
    base: u64,
    next: AtomicU32,
    map: Mutex<File>,
    modules: Mutex<HashMap<usize, Arc<Module>>>,
    /// Modules seen and not measured (keys of `modules` never hold these).
    ignored: Mutex<HashSet<usize>>,
    module_count: AtomicU32,
    /// Methods left uninstrumented because the counters ran out.
    dropped: AtomicU64,
    /// In a `dotnet test` host: the test assembly's name (from `--depsfile X.deps.json`),
    /// not measured unless an include pattern names it (as coverlet does).
    test_assembly: Option<String>,
    /// Loaded by attach: bodies go through ReJIT (`rejit_body`), not JITCompilationStarted.
    attached: bool,
    /// After attach: the instrumented bodies by (ModuleID, MethodDef), handed over at each
    /// GetReJITParameters, and the methods whose ReJIT was requested (reverted at the end).
    rejit: Mutex<HashMap<(usize, u32), Vec<u8>>>,
    requested: Mutex<Vec<(ModuleId, u32)>>,
}

/// The test assembly a vstest host runs: `testhost.dll … --depsfile <dir>/X.deps.json`.
pub fn test_assembly(argv: &[String]) -> Option<String> {
    if !argv.iter().any(|a| a.ends_with("testhost.dll")) {
        return None;
    }
    let i = argv.iter().position(|a| a == "--depsfile")?;
    let deps = argv.get(i + 1)?;
    let name = Path::new(deps).file_name()?.to_str()?;
    Some(name.strip_suffix(".deps.json")?.to_string())
}

/// Whether any source document the PDB names is a file here: an assembly built
/// elsewhere (a package) has none, and is not measured by default (coverlet's default too).
fn has_local_source(pdb: &PortablePdb) -> bool {
    (1..=pdb.document_count()).any(|d| {
        pdb.document(d)
            .is_ok_and(|doc| Path::new(&doc.name).is_file())
    })
}

/// The event mask of a coverage run.
pub const MASK: u32 = sys::COR_PRF_MONITOR_JIT_COMPILATION
    | sys::COR_PRF_MONITOR_MODULE_LOADS
    | sys::COR_PRF_MONITOR_CACHE_SEARCHES;

/// After attach: module loads, and ReJIT (the runtime refuses JIT-time body changes to an
/// attached profiler).
pub const MASK_ATTACHED: u32 = sys::COR_PRF_MONITOR_MODULE_LOADS | sys::COR_PRF_ENABLE_REJIT;

fn clean(s: &str) -> String {
    s.replace(['\t', '\n'], " ")
}

/// Whether a module path is the runtime's own (shared framework), measured only when an
/// include pattern names it.
fn in_runtime_dir(path: &str) -> bool {
    path.contains("/shared/Microsoft.")
}

impl Coverage {
    /// Creates the counters and the map in the run directory and sets the event mask.
    pub fn start(
        info: ProfilerInfo,
        settings: CoverageSettings,
        argv: &[String],
        attached: bool,
    ) -> Result<Arc<Coverage>, String> {
        let command = argv.join(" ");
        let pid = crate::os::process::pid();
        let create = |name: String, append: bool| -> Result<File, String> {
            let p = settings.dir.join(name);
            std::fs::OpenOptions::new()
                .read(true)
                .write(!append)
                .append(append)
                .create_new(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                .open(&p)
                .map_err(|e| format!("cannot create {}: {e}", p.display()))
        };
        let counters = create(format!("coverage-{pid}.counters"), false)?;
        let len = MAX_COUNTERS as u64 * clrprof_il::coverage::COUNTER_BYTES;
        counters
            .set_len(len)
            .map_err(|e| format!("cannot size the coverage counters to {len} bytes: {e}"))?;
        let base = crate::os::pages::map_shared(&counters, len as usize)
            .ok_or("cannot map the coverage counters (mmap MAP_SHARED failed)")?;
        let mut map = create(format!("coverage-{pid}.map"), true)?;
        map.write_all(format!("clrprof-coverage\t1\t{pid}\t{}\n", clean(&command)).as_bytes())
            .map_err(|e| format!("cannot write the coverage map: {e}"))?;
        let mask = if attached { MASK_ATTACHED } else { MASK };
        info.set_event_mask(mask)
            .map_err(|e| format!("SetEventMask({mask:#x}) failed: {e}"))?;
        Ok(Arc::new(Coverage {
            info,
            settings,
            base: base.as_ptr() as u64,
            next: AtomicU32::new(0),
            map: Mutex::new(map),
            modules: Mutex::new(HashMap::new()),
            ignored: Mutex::new(HashSet::new()),
            module_count: AtomicU32::new(0),
            dropped: AtomicU64::new(0),
            test_assembly: test_assembly(argv),
            attached,
            rejit: Mutex::new(HashMap::new()),
            requested: Mutex::new(Vec::new()),
        }))
    }

    fn line(&self, s: String) {
        if let Ok(mut f) = self.map.lock() {
            let _ = f.write_all(s.as_bytes());
        }
    }

    /// ModuleLoadFinished: decides whether the module is measured and reads its PDB.
    pub fn module_loaded(&self, module: ModuleId) {
        // After attach a module can be both enumerated and reported loaded: once is enough.
        let seen = self.ignored.lock().is_ok_and(|i| i.contains(&module.0))
            || self.modules.lock().is_ok_and(|m| m.contains_key(&module.0));
        if seen {
            return;
        }
        let Ok(mi) = self.info.get_module_info2(module) else {
            return;
        };
        let path = mi.name;
        let dynamic =
            mi.flags & (sys::COR_PRF_MODULE_DYNAMIC | sys::COR_PRF_MODULE_COLLECTIBLE) != 0;
        let name = Path::new(&path)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let ignore = || {
            if let Ok(mut i) = self.ignored.lock() {
                i.insert(module.0);
            }
        };
        if dynamic
            || !path.starts_with('/')
            || (self.settings.include.is_empty() && in_runtime_dir(&path))
            || !self.settings.selects(&name)
        {
            return ignore();
        }
        let by_default = self.settings.include.is_empty();
        let not_measured = |why: String| {
            self.line(format!("unmeasured\t{}\t{}\n", clean(&path), clean(&why)));
            ignore();
        };
        if by_default && self.test_assembly.as_deref() == Some(name.as_str()) {
            return not_measured("the test assembly (--include it to measure it)".to_string());
        }
        match find_pdb(Path::new(&path), &[]) {
            Ok(found) if by_default && !has_local_source(&found.pdb) => not_measured(
                "no source file its PDB names is on this machine (built elsewhere; --include it to measure it)"
                    .to_string(),
            ),
            Ok(found) => {
                let index = self.module_count.fetch_add(1, Ordering::Relaxed);
                let source = match &found.source {
                    PdbSource::Embedded => "embedded".to_string(),
                    PdbSource::File(p) => p.display().to_string(),
                };
                self.line(format!(
                    "module\t{index}\t{}\t{}\n",
                    clean(&path),
                    clean(&source)
                ));
                if let Ok(mut m) = self.modules.lock() {
                    m.insert(
                        module.0,
                        Arc::new(Module {
                            index,
                            pdb: found.pdb,
                            done: Mutex::new(HashSet::new()),
                        }),
                    );
                }
            }
            Err(e) => {
                let why = match &e {
                    PdbError::NotFound { .. } | PdbError::NoDebugDirectory { .. } => {
                        format!("no PDB: {e}")
                    }
                    PdbError::Mismatch { .. } => format!("PDB refused: {e}"),
                    _ => format!("PDB unreadable: {e}"),
                };
                not_measured(why);
            }
        }
    }

    fn measured(&self, function: FunctionId) -> Option<(ModuleId, u32, Arc<Module>)> {
        let f = self.info.get_function_info2(function, 0).ok()?;
        if self.ignored.lock().ok()?.contains(&f.module.0) {
            return None;
        }
        let m = self.modules.lock().ok()?.get(&f.module.0)?.clone();
        Some((f.module, f.token, m))
    }

    /// JITCachedFunctionSearchStarted: precompiled (ReadyToRun) code of a measured
    /// method is refused, so the JIT compiles it from the instrumented body.
    pub fn cached_search(&self, function: FunctionId, use_cached: &mut bool) {
        if self.measured(function).is_some() {
            *use_cached = false;
        }
    }

    /// JITInlining: a measured method is not inlined (the copy would count nothing).
    pub fn inlining(&self, callee: FunctionId, should_inline: &mut bool) {
        if self.measured(callee).is_some() {
            *should_inline = false;
        }
    }

    /// JITCompilationStarted (startup): replaces the method's body by the instrumented
    /// one, once.
    pub fn jit_started(&self, function: FunctionId) {
        if self.attached {
            return;
        }
        let Some((module, token, m)) = self.measured(function) else {
            return;
        };
        if let Some(body) = self.instrumented(module, token, &m)
            && let Err(e) = self.info.set_il_function_body(module, token, &body)
        {
            self.line(format!(
                "failed\t{}\t{token:#010x}\t{}\n",
                m.index,
                clean(&format!("SetILFunctionBody: {e}"))
            ));
        }
    }

    /// The method's instrumented body (its line written to the map first), once per
    /// method; `None` when it has no visible sequence point, was done already, or failed
    /// (the map says why).
    fn instrumented(&self, module: ModuleId, token: u32, m: &Module) -> Option<Vec<u8>> {
        if !m.done.lock().ok()?.insert(token) {
            return None;
        }
        let fail = |why: String| {
            self.line(format!(
                "failed\t{}\t{token:#010x}\t{}\n",
                m.index,
                clean(&why)
            ))
        };
        let points: Vec<u32> = match m.pdb.sequence_points(token) {
            Ok(l) => l
                .points
                .iter()
                .filter(|p| !p.is_hidden())
                .map(|p| p.il_offset)
                .collect(),
            Err(e) => {
                fail(e.to_string());
                return None;
            }
        };
        if points.is_empty() {
            return None;
        }
        let il = match self.info.get_il_function_body(module, token) {
            Ok(il) => il,
            Err(e) => {
                fail(format!("GetILFunctionBody: {e}"));
                return None;
            }
        };
        let mut first = 0;
        let alloc = |n: u32| {
            let start = self
                .next
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |c| {
                    c.checked_add(n).filter(|&e| e <= MAX_COUNTERS)
                })
                .ok()?;
            first = start;
            Some(self.base + start as u64 * clrprof_il::coverage::COUNTER_BYTES)
        };
        let done =
            match clrprof_il::coverage::instrument(&il, &points, self.settings.branches, alloc) {
                Ok(Some(d)) => d,
                Ok(None) => {
                    self.dropped.fetch_add(1, Ordering::Relaxed);
                    self.line(format!("full\t{}\t{token:#010x}\n", m.index));
                    return None;
                }
                Err(e) => {
                    fail(format!("IL: {e}"));
                    return None;
                }
            };
        let sites: Vec<String> = done
            .branches
            .iter()
            .map(|b| format!("{}:{}", b.il_offset, b.paths))
            .collect();
        self.line(format!(
            "method\t{}\t{token:#010x}\t{first}\t{}\t{}\n",
            m.index,
            points.len(),
            sites.join(",")
        ));
        Some(done.bytes)
    }

    /// ProfilerAttachComplete: every loaded module is looked at, each method with visible
    /// sequence points of the measured ones gets its instrumented body through ReJIT
    /// (its inlining blocked), and a thread stops measuring after `duration_s` or when
    /// the CLI's run directory is gone (the CLI ended), whichever comes first.
    pub fn attach_complete(self: &Arc<Self>, duration_s: Option<f64>) {
        for module in self.info.enum_modules().unwrap_or_default() {
            self.module_loaded(module);
        }
        let modules: Vec<(usize, Arc<Module>)> = match self.modules.lock() {
            Ok(m) => m.iter().map(|(k, v)| (*k, v.clone())).collect(),
            Err(_) => return,
        };
        let mut requests = Vec::new();
        for (id, m) in modules {
            let module = ModuleId(id);
            for row in 1..=m.pdb.method_count() {
                let token = 0x0600_0000 | row;
                if let Some(body) = self.instrumented(module, token, &m) {
                    if let Ok(mut r) = self.rejit.lock() {
                        r.insert((id, token), body);
                    }
                    requests.push((module, token));
                }
            }
        }
        if !requests.is_empty()
            && let Err(e) = self
                .info
                .request_rejit_with_inliners(sys::COR_PRF_REJIT_BLOCK_INLINING, &requests)
        {
            self.line(format!("error\tRequestReJITWithInliners: {e}\n"));
            return;
        }
        self.line(format!("ready\t{}\n", requests.len()));
        if let Ok(mut r) = self.requested.lock() {
            *r = requests;
        }
        let me = self.clone();
        let until = duration_s.map(|d| crate::os::clock::monotonic_ns() + (d * 1e9) as u64);
        let watch = crate::os::thread::spawn("clrprof-cov", move || {
            loop {
                crate::os::clock::sleep_until_ns(crate::os::clock::monotonic_ns() + 100_000_000);
                let over = until.is_some_and(|u| crate::os::clock::monotonic_ns() >= u);
                if over || !me.settings.dir.exists() {
                    break;
                }
            }
            me.stop_attached();
        });
        if let Ok(t) = watch {
            t.detach();
        }
    }

    /// The end of an attached measurement: the methods get their original code back
    /// (`RequestRevert`), the map says it ended. The library stays loaded, dormant: the
    /// runtime keeps a profiler that used ReJIT (docs/coverage.md).
    fn stop_attached(&self) {
        let requested = self
            .requested
            .lock()
            .map(|mut r| std::mem::take(&mut *r))
            .unwrap_or_default();
        if !requested.is_empty()
            && let Err(e) = self.info.request_revert(&requested)
        {
            self.line(format!("error\tRequestRevert: {e}\n"));
        }
        if let Ok(mut r) = self.rejit.lock() {
            r.clear();
        }
        self.shutdown();
    }

    /// GetReJITParameters: the instrumented body of this method, if made after attach.
    pub fn rejit_body(&self, module: ModuleId, method: u32) -> Option<Vec<u8>> {
        self.rejit.lock().ok()?.get(&(module.0, method)).cloned()
    }

    /// Shutdown: the map's last line says the process ended normally.
    pub fn shutdown(&self) {
        self.line(format!(
            "end\t{}\t{}\n",
            self.next.load(Ordering::Relaxed),
            self.dropped.load(Ordering::Relaxed)
        ));
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_test_assembly_of_a_vstest_host() {
        let argv: Vec<String> = [
            "/usr/share/dotnet/dotnet",
            "exec",
            "--runtimeconfig",
            "/t/bin/Shop.Tests.runtimeconfig.json",
            "--depsfile",
            "/t/bin/Shop.Tests.deps.json",
            "/nuget/microsoft.testplatform.testhost/18.0.1/build/netcoreapp3.1/x64/testhost.dll",
            "--port",
            "4242",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(super::test_assembly(&argv).as_deref(), Some("Shop.Tests"));
        assert_eq!(super::test_assembly(&argv[..4]), None);
        assert_eq!(
            super::test_assembly(&["dotnet".into(), "app.dll".into()]),
            None
        );
    }
}
