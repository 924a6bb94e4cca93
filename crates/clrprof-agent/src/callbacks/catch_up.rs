//! What the callbacks record for loads, and after attach for everything that loaded (and
//! every thread that started) before the profiler did.

use std::borrow::Cow;

use clrprof_format::Event;
use corprof::{AssemblyId, HResult, ModuleId};

use super::{Active, Profiler, hr};
use crate::output::buffers::emit;

impl Profiler {
    /// After attach: what loaded before we did. Load callbacks may report the same ids
    /// concurrently; the `*_seen` sets keep one record per id.
    pub(super) fn catch_up(&self, a: &Active) {
        if let Ok(modules) = a.info.enum_modules() {
            for m in modules {
                self.module_loaded(a, m, HResult(0));
            }
        }
        if let Ok(threads) = a.info.enum_threads() {
            for t in threads {
                emit(&Event::ThreadCreated { thread: t.0 as u64 });
                if let Ok(os) = a.info.get_thread_info(t) {
                    emit(&Event::ThreadAssigned {
                        thread: t.0 as u64,
                        os_tid: u64::from(os),
                    });
                    // The runtime names OS threads after Thread.Name (15 bytes on Linux).
                    if let Ok(comm) = std::fs::read_to_string(format!("/proc/self/task/{os}/comm"))
                    {
                        let comm = comm.trim_end();
                        if !comm.is_empty() {
                            emit(&Event::ThreadName {
                                thread: t.0 as u64,
                                name: Cow::Owned(comm.to_string()),
                            });
                        }
                    }
                }
            }
        }
        if let Ok(functions) = a.info.enum_jited_functions() {
            for f in functions {
                self.name_function(a, f);
            }
        }
    }

    pub(super) fn module_loaded(&self, a: &Active, id: ModuleId, status: HResult) {
        if !a.modules_seen.first(id.0) {
            return;
        }
        let (path, assembly, base) = match a.info.get_module_info(id) {
            Ok(m) => (m.name, m.assembly, m.base_address as u64),
            Err(_) => (String::new(), AssemblyId(0), 0),
        };
        if a.attached && assembly.0 != 0 && a.assemblies_seen.first(assembly.0) {
            self.assembly_loaded(a, assembly, HResult(0));
        }
        emit(&Event::ModuleLoaded {
            id: id.0 as u64,
            assembly: assembly.0 as u64,
            base_address: base,
            path: Cow::Owned(path),
            hr: hr(status),
        });
    }

    pub(super) fn assembly_loaded(&self, a: &Active, id: AssemblyId, status: HResult) {
        let (name, app_domain, module) = match a.info.get_assembly_info(id) {
            Ok(i) => (i.name, i.app_domain.0 as u64, i.module.0 as u64),
            Err(_) => (String::new(), 0, 0),
        };
        emit(&Event::AssemblyLoaded {
            id: id.0 as u64,
            app_domain,
            module,
            name: Cow::Owned(name),
            hr: hr(status),
        });
    }
}
