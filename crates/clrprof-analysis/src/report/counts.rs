//! The Events section: how many events of each kind were recorded.

use serde::Serialize;

use clrprof_format::{Event, ExceptionPhase, SuspendPhase};

#[derive(Debug, Default, Serialize)]
pub struct EventCounts {
    pub runtime_shutdowns: u64,
    pub app_domains_created: u64,
    pub app_domains_shutdown: u64,
    pub assemblies_loaded: u64,
    pub assemblies_unloaded: u64,
    pub modules_loaded: u64,
    pub modules_unloaded: u64,
    pub classes_loaded: u64,
    pub classes_unloaded: u64,
    pub jit_compilations: u64,
    pub jit_cache_searches: u64,
    pub jit_cache_hits: u64,
    pub threads_created: u64,
    pub threads_destroyed: u64,
    pub thread_renames: u64,
    pub exceptions_thrown: u64,
    pub exception_catches: u64,
    pub exception_unwound_frames: u64,
    pub exception_finally_blocks: u64,
    pub exception_filters: u64,
    pub runtime_suspensions: u64,
    pub gcs: u64,
    pub allocation_reports: u64,
    pub transitions: u64,
}

impl EventCounts {
    /// Counts one event; kinds without a counter are ignored.
    pub fn observe(&mut self, event: &Event<'_>) {
        match event {
            Event::Shutdown {} => self.runtime_shutdowns += 1,
            Event::AppDomainCreated { .. } => self.app_domains_created += 1,
            Event::AppDomainShutdown { .. } => self.app_domains_shutdown += 1,
            Event::AssemblyLoaded { .. } => self.assemblies_loaded += 1,
            Event::AssemblyUnloaded { .. } => self.assemblies_unloaded += 1,
            Event::ModuleLoaded { .. } => self.modules_loaded += 1,
            Event::ModuleUnloaded { .. } => self.modules_unloaded += 1,
            Event::ClassLoaded { .. } => self.classes_loaded += 1,
            Event::ClassUnloaded { .. } => self.classes_unloaded += 1,
            Event::JitStarted { .. } => self.jit_compilations += 1,
            Event::JitCacheSearch { found, .. } => {
                self.jit_cache_searches += 1;
                if *found {
                    self.jit_cache_hits += 1;
                }
            }
            Event::ThreadCreated { .. } => self.threads_created += 1,
            Event::ThreadDestroyed { .. } => self.threads_destroyed += 1,
            Event::ThreadName { .. } => self.thread_renames += 1,
            Event::ExceptionThrown { .. } => self.exceptions_thrown += 1,
            Event::ExceptionPhase { phase, .. } => match phase {
                ExceptionPhase::CatcherEnter => self.exception_catches += 1,
                ExceptionPhase::UnwindFunctionEnter => self.exception_unwound_frames += 1,
                ExceptionPhase::UnwindFinallyEnter => self.exception_finally_blocks += 1,
                ExceptionPhase::SearchFilterEnter => self.exception_filters += 1,
                _ => {}
            },
            Event::RuntimeSuspend {
                phase: SuspendPhase::SuspendStarted,
                ..
            } => self.runtime_suspensions += 1,
            Event::GcStarted { .. } => self.gcs += 1,
            Event::Allocations { .. } => self.allocation_reports += 1,
            Event::Transition { .. } => self.transitions += 1,
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_each_kind_and_phase() {
        let mut c = EventCounts::default();
        for e in [
            Event::ThreadCreated { thread: 1 },
            Event::ThreadCreated { thread: 2 },
            Event::JitCacheSearch {
                function: 1,
                found: true,
            },
            Event::JitCacheSearch {
                function: 2,
                found: false,
            },
            Event::ExceptionPhase {
                phase: ExceptionPhase::CatcherEnter,
                function: 1,
            },
            Event::ExceptionPhase {
                phase: ExceptionPhase::UnwindFunctionEnter,
                function: 1,
            },
            Event::RuntimeSuspend {
                phase: SuspendPhase::SuspendStarted,
                reason: 1,
            },
            Event::RuntimeSuspend {
                phase: SuspendPhase::ResumeFinished,
                reason: 0,
            },
            Event::Lost {
                count: 5,
                reason: 0,
            },
        ] {
            c.observe(&e);
        }
        assert_eq!(c.threads_created, 2);
        assert_eq!((c.jit_cache_searches, c.jit_cache_hits), (2, 1));
        assert_eq!((c.exception_catches, c.exception_unwound_frames), (1, 1));
        assert_eq!(c.exception_finally_blocks, 0);
        assert_eq!(c.runtime_suspensions, 1);
        assert_eq!(c.exceptions_thrown, 0);
    }
}
