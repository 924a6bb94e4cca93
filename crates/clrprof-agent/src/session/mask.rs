//! Event-mask bits for the configured groups and mode. What each costs the target is
//! documented in docs/events.md; the comments here say why each bit is chosen.

use corprof_sys as sys;

use crate::config::{EventGroup, Mode, SamplerKind, Settings};

/// Whether the JIT callbacks' own events (`JitStarted`, `JitFinished`) are recorded: with
/// the `jit` group, and for trace mode's startup probes, which asked for them first. The
/// signal sampler turns the JIT callbacks on for dynamic methods' code ranges only.
pub fn jit_events(s: &Settings) -> bool {
    s.events.contains(EventGroup::Jit) || (s.mode == Mode::Trace && s.probes)
}

/// (low COR_PRF_MONITOR bits, high COR_PRF_HIGH_MONITOR bits).
pub fn for_settings(s: &Settings) -> (u32, u32) {
    let mut low = 0u32;
    let mut high = 0u32;
    for g in s.events.iter() {
        match g {
            EventGroup::AppDomains => low |= sys::COR_PRF_MONITOR_APPDOMAIN_LOADS,
            EventGroup::Assemblies => low |= sys::COR_PRF_MONITOR_ASSEMBLY_LOADS,
            EventGroup::Modules => low |= sys::COR_PRF_MONITOR_MODULE_LOADS,
            EventGroup::Classes => low |= sys::COR_PRF_MONITOR_CLASS_LOADS,
            // Also disables multicore JIT for the process.
            EventGroup::Jit => low |= sys::COR_PRF_MONITOR_JIT_COMPILATION,
            EventGroup::CacheSearches => low |= sys::COR_PRF_MONITOR_CACHE_SEARCHES,
            EventGroup::Threads => low |= sys::COR_PRF_MONITOR_THREADS,
            EventGroup::Exceptions => low |= sys::COR_PRF_MONITOR_EXCEPTIONS,
            EventGroup::Suspends => low |= sys::COR_PRF_MONITOR_SUSPENDS,
            // BASIC_GC gives GarbageCollectionStarted/Finished without the object-movement
            // callbacks, and unlike COR_PRF_MONITOR_GC it keeps background GC on.
            EventGroup::Gc => high |= sys::COR_PRF_HIGH_BASIC_GC,
            // ObjectsAllocatedByClass needs the full GC monitor (turns background GC off)
            // and allocation tracking (immutable, startup only).
            EventGroup::Alloc => {
                low |= sys::COR_PRF_MONITOR_GC
                    | sys::COR_PRF_MONITOR_OBJECT_ALLOCATED
                    | sys::COR_PRF_ENABLE_OBJECT_ALLOCATED
            }
            // Immutable flag: a callback on every managed/unmanaged boundary crossing.
            EventGroup::Transitions => low |= sys::COR_PRF_MONITOR_CODE_TRANSITIONS,
            // --waits: the runtime's contention, thread-pool and wait-handle events come
            // through an in-process EventPipe session, on the waiting thread, whose stack
            // is a synchronous DoStackSnapshot (or the stack cache's).
            EventGroup::Waits => {
                high |= sys::COR_PRF_HIGH_MONITOR_EVENT_PIPE;
                low |= sys::COR_PRF_ENABLE_STACK_SNAPSHOT;
            }
        }
    }
    match s.mode {
        Mode::Events => {}
        // Threads: ThreadDestroyed must wait for an in-flight stack walk of the dying
        // thread.
        Mode::Sample => {
            low |= sys::COR_PRF_ENABLE_STACK_SNAPSHOT | sys::COR_PRF_MONITOR_THREADS;
            // The signal sampler names dynamic methods (LCG, IL stubs) from their code
            // ranges, which DynamicMethodJITCompilationFinished gives (it comes with the
            // JIT callbacks; their events are recorded only with the `jit` group,
            // `jit_events`), and forgets them at DynamicMethodUnloaded, before the runtime
            // frees their code: it never asks the runtime about dynamic code
            // (`stackwalk/dyncode.rs`). Both allowed after attach.
            if s.sampler == SamplerKind::Signal {
                low |= sys::COR_PRF_MONITOR_JIT_COMPILATION;
                high |= sys::COR_PRF_HIGH_MONITOR_DYNAMIC_FUNCTION_UNLOADS;
            }
            // --counts: exact call counts beside the samples, from the ELT hooks.
            if s.counts {
                low |= sys::COR_PRF_MONITOR_ENTERLEAVE;
                if !s.allow_inlining {
                    low |= sys::COR_PRF_DISABLE_INLINING;
                }
            }
        }
        // --probes at startup: IL probes through ReJIT on the modules as they load.
        Mode::Trace if s.probes => {
            low |= sys::COR_PRF_ENABLE_REJIT
                | sys::COR_PRF_MONITOR_MODULE_LOADS
                | sys::COR_PRF_MONITOR_JIT_COMPILATION;
        }
        Mode::Trace => {
            low |= sys::COR_PRF_MONITOR_ENTERLEAVE;
            // Inlined methods get no hooks: exact counts need inlining off (immutable).
            if !s.allow_inlining {
                low |= sys::COR_PRF_DISABLE_INLINING;
            }
            if !s.args.is_empty() {
                // Exceptions end calls: the unwind callbacks close their invocations.
                // Class loads map typedefs to ClassIDs for value-type arguments.
                low |= sys::COR_PRF_MONITOR_EXCEPTIONS | sys::COR_PRF_MONITOR_CLASS_LOADS;
                // --args through the runtime: the slow-path hooks with argument and
                // return-value ranges (immutable; GetFunctionEnter3Info/Leave3Info answer
                // only with these). The assembly hooks (the default) read the
                // registers themselves and need none of them (the runtime refuses them
                // beside fast-path hooks).
                if !crate::tracing::args::fast_path() {
                    low |= sys::COR_PRF_ENABLE_FUNCTION_ARGS
                        | sys::COR_PRF_ENABLE_FUNCTION_RETVAL
                        | sys::COR_PRF_ENABLE_FRAME_INFO;
                }
            }
        }
    }
    // Heap snapshots: the runtime lets COR_PRF_MONITOR_GC be turned on only in
    // Initialize or InitializeForAttach (it turns background GC off then); later it
    // answers CORPROF_E_CONCURRENT_GC_NOT_PROFILABLE. Asked for here, dropped again right
    // after (see `heap::monitor_between_snapshots`), turned on again per snapshot.
    if s.heap {
        low |= sys::COR_PRF_MONITOR_GC;
    }
    // --alloc: the runtime's allocation events come through an in-process EventPipe
    // session; BASIC_GC's GarbageCollectionFinished checks which sampled objects died
    // (without turning background GC off).
    if s.alloc_interval.is_some() {
        high |= sys::COR_PRF_HIGH_MONITOR_EVENT_PIPE | sys::COR_PRF_HIGH_BASIC_GC;
        // Each sample's stack: a synchronous DoStackSnapshot on the allocating thread.
        low |= sys::COR_PRF_ENABLE_STACK_SNAPSHOT;
    }
    if s.exception_stacks && s.events.contains(EventGroup::Exceptions) {
        low |= sys::COR_PRF_ENABLE_STACK_SNAPSHOT;
    }
    (low, high)
}
