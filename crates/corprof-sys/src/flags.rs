//! Enumerations of corprof.idl, as `u32` constants with their full IDL names.
//!
//! C enums are 4 bytes on every supported ABI; each enum type name is also a `u32` alias so
//! vtable signatures can use the IDL's type names (e.g. `COR_PRF_SUSPEND_REASON`).

// --- COR_PRF_SNAPSHOT_INFO (DoStackSnapshot infoFlags) ------------------------------------------

pub type COR_PRF_SNAPSHOT_INFO = u32;
pub const COR_PRF_SNAPSHOT_DEFAULT: u32 = 0x0;
/// Return a register context for each frame.
pub const COR_PRF_SNAPSHOT_REGISTER_CONTEXT: u32 = 0x1;
/// EBP-chain walk, x86 only.
pub const COR_PRF_SNAPSHOT_X86_OPTIMIZED: u32 = 0x2;

// --- COR_PRF_STATIC_TYPE (GetStaticFieldInfo) ---------------------------------------------------

pub type COR_PRF_STATIC_TYPE = u32;
pub const COR_PRF_FIELD_NOT_A_STATIC: u32 = 0x0;
pub const COR_PRF_FIELD_APP_DOMAIN_STATIC: u32 = 0x1;
pub const COR_PRF_FIELD_THREAD_STATIC: u32 = 0x2;
pub const COR_PRF_FIELD_CONTEXT_STATIC: u32 = 0x4;
pub const COR_PRF_FIELD_RVA_STATIC: u32 = 0x8;

// --- COR_PRF_MONITOR (SetEventMask / SetEventMask2 low word) ------------------------------------

pub type COR_PRF_MONITOR = u32;
pub const COR_PRF_MONITOR_NONE: u32 = 0x0000_0000;
pub const COR_PRF_MONITOR_FUNCTION_UNLOADS: u32 = 0x0000_0001;
pub const COR_PRF_MONITOR_CLASS_LOADS: u32 = 0x0000_0002;
pub const COR_PRF_MONITOR_MODULE_LOADS: u32 = 0x0000_0004;
pub const COR_PRF_MONITOR_ASSEMBLY_LOADS: u32 = 0x0000_0008;
pub const COR_PRF_MONITOR_APPDOMAIN_LOADS: u32 = 0x0000_0010;
pub const COR_PRF_MONITOR_JIT_COMPILATION: u32 = 0x0000_0020;
pub const COR_PRF_MONITOR_EXCEPTIONS: u32 = 0x0000_0040;
pub const COR_PRF_MONITOR_GC: u32 = 0x0000_0080;
pub const COR_PRF_MONITOR_OBJECT_ALLOCATED: u32 = 0x0000_0100;
pub const COR_PRF_MONITOR_THREADS: u32 = 0x0000_0200;
/// Remoting does not exist in CoreCLR.
pub const COR_PRF_MONITOR_REMOTING: u32 = 0x0000_0400;
pub const COR_PRF_MONITOR_CODE_TRANSITIONS: u32 = 0x0000_0800;
pub const COR_PRF_MONITOR_ENTERLEAVE: u32 = 0x0000_1000;
pub const COR_PRF_MONITOR_CCW: u32 = 0x0000_2000;
/// Includes the `COR_PRF_MONITOR_REMOTING` bit (= 0x4400).
pub const COR_PRF_MONITOR_REMOTING_COOKIE: u32 = 0x0000_4000 | COR_PRF_MONITOR_REMOTING;
/// Includes the `COR_PRF_MONITOR_REMOTING` bit (= 0x8400).
pub const COR_PRF_MONITOR_REMOTING_ASYNC: u32 = 0x0000_8000 | COR_PRF_MONITOR_REMOTING;
pub const COR_PRF_MONITOR_SUSPENDS: u32 = 0x0001_0000;
pub const COR_PRF_MONITOR_CACHE_SEARCHES: u32 = 0x0002_0000;
pub const COR_PRF_ENABLE_REJIT: u32 = 0x0004_0000;
pub const COR_PRF_ENABLE_INPROC_DEBUGGING: u32 = 0x0008_0000;
pub const COR_PRF_ENABLE_JIT_MAPS: u32 = 0x0010_0000;
pub const COR_PRF_DISABLE_INLINING: u32 = 0x0020_0000;
pub const COR_PRF_DISABLE_OPTIMIZATIONS: u32 = 0x0040_0000;
pub const COR_PRF_ENABLE_OBJECT_ALLOCATED: u32 = 0x0080_0000;
pub const COR_PRF_MONITOR_CLR_EXCEPTIONS: u32 = 0x0100_0000;
/// All callback events (0x0107FFFF).
pub const COR_PRF_MONITOR_ALL: u32 = 0x0107_FFFF;
pub const COR_PRF_ENABLE_FUNCTION_ARGS: u32 = 0x0200_0000;
pub const COR_PRF_ENABLE_FUNCTION_RETVAL: u32 = 0x0400_0000;
pub const COR_PRF_ENABLE_FRAME_INFO: u32 = 0x0800_0000;
pub const COR_PRF_ENABLE_STACK_SNAPSHOT: u32 = 0x1000_0000;
pub const COR_PRF_USE_PROFILE_IMAGES: u32 = 0x2000_0000;
pub const COR_PRF_DISABLE_TRANSPARENCY_CHECKS_UNDER_FULL_TRUST: u32 = 0x4000_0000;
pub const COR_PRF_DISABLE_ALL_NGEN_IMAGES: u32 = 0x8000_0000;
/// The mask for valid mask bits.
pub const COR_PRF_ALL: u32 = 0x8FFF_FFFF;
pub const COR_PRF_REQUIRE_PROFILE_IMAGE: u32 =
    COR_PRF_USE_PROFILE_IMAGES | COR_PRF_MONITOR_CODE_TRANSITIONS | COR_PRF_MONITOR_ENTERLEAVE;
/// Flags an attaching (non-startup) profiler may set. The current runtime IDL includes
/// `COR_PRF_DISABLE_INLINING` and `COR_PRF_DISABLE_OPTIMIZATIONS` here (older copies did not).
pub const COR_PRF_ALLOWABLE_AFTER_ATTACH: u32 = COR_PRF_MONITOR_THREADS
    | COR_PRF_MONITOR_MODULE_LOADS
    | COR_PRF_MONITOR_ASSEMBLY_LOADS
    | COR_PRF_MONITOR_APPDOMAIN_LOADS
    | COR_PRF_ENABLE_STACK_SNAPSHOT
    | COR_PRF_MONITOR_GC
    | COR_PRF_MONITOR_SUSPENDS
    | COR_PRF_MONITOR_CLASS_LOADS
    | COR_PRF_MONITOR_EXCEPTIONS
    | COR_PRF_MONITOR_JIT_COMPILATION
    | COR_PRF_DISABLE_INLINING
    | COR_PRF_DISABLE_OPTIMIZATIONS
    | COR_PRF_ENABLE_REJIT;
/// Flags a notification-only profiler (ICorProfilerCallback11::LoadAsNotificationOnly) may set.
pub const COR_PRF_ALLOWABLE_NOTIFICATION_PROFILER: u32 = COR_PRF_MONITOR_FUNCTION_UNLOADS
    | COR_PRF_MONITOR_CLASS_LOADS
    | COR_PRF_MONITOR_MODULE_LOADS
    | COR_PRF_MONITOR_ASSEMBLY_LOADS
    | COR_PRF_MONITOR_APPDOMAIN_LOADS
    | COR_PRF_MONITOR_JIT_COMPILATION
    | COR_PRF_MONITOR_EXCEPTIONS
    | COR_PRF_MONITOR_OBJECT_ALLOCATED
    | COR_PRF_MONITOR_THREADS
    | COR_PRF_MONITOR_CODE_TRANSITIONS
    | COR_PRF_MONITOR_CCW
    | COR_PRF_MONITOR_SUSPENDS
    | COR_PRF_MONITOR_CACHE_SEARCHES
    | COR_PRF_DISABLE_INLINING
    | COR_PRF_DISABLE_OPTIMIZATIONS
    | COR_PRF_ENABLE_OBJECT_ALLOCATED
    | COR_PRF_MONITOR_CLR_EXCEPTIONS
    | COR_PRF_ENABLE_STACK_SNAPSHOT
    | COR_PRF_USE_PROFILE_IMAGES
    | COR_PRF_DISABLE_ALL_NGEN_IMAGES;
/// Flags that may only be set during initialization. The current runtime IDL no longer lists
/// `COR_PRF_DISABLE_INLINING` / `COR_PRF_DISABLE_OPTIMIZATIONS` here (older copies did).
pub const COR_PRF_MONITOR_IMMUTABLE: u32 = COR_PRF_MONITOR_CODE_TRANSITIONS
    | COR_PRF_MONITOR_REMOTING
    | COR_PRF_MONITOR_REMOTING_COOKIE
    | COR_PRF_MONITOR_REMOTING_ASYNC
    | COR_PRF_ENABLE_INPROC_DEBUGGING
    | COR_PRF_ENABLE_JIT_MAPS
    | COR_PRF_ENABLE_OBJECT_ALLOCATED
    | COR_PRF_ENABLE_FUNCTION_ARGS
    | COR_PRF_ENABLE_FUNCTION_RETVAL
    | COR_PRF_ENABLE_FRAME_INFO
    | COR_PRF_USE_PROFILE_IMAGES
    | COR_PRF_DISABLE_TRANSPARENCY_CHECKS_UNDER_FULL_TRUST
    | COR_PRF_DISABLE_ALL_NGEN_IMAGES;

// --- COR_PRF_HIGH_MONITOR (SetEventMask2 high word) ---------------------------------------------

pub type COR_PRF_HIGH_MONITOR = u32;
pub const COR_PRF_HIGH_MONITOR_NONE: u32 = 0x0000_0000;
/// No longer checked by CoreCLR.
pub const COR_PRF_HIGH_ADD_ASSEMBLY_REFERENCES: u32 = 0x0000_0001;
pub const COR_PRF_HIGH_IN_MEMORY_SYMBOLS_UPDATED: u32 = 0x0000_0002;
pub const COR_PRF_HIGH_MONITOR_DYNAMIC_FUNCTION_UNLOADS: u32 = 0x0000_0004;
pub const COR_PRF_HIGH_DISABLE_TIERED_COMPILATION: u32 = 0x0000_0008;
pub const COR_PRF_HIGH_BASIC_GC: u32 = 0x0000_0010;
/// MovedReferences(2) for compacting GCs only.
pub const COR_PRF_HIGH_MONITOR_GC_MOVED_OBJECTS: u32 = 0x0000_0020;
pub const COR_PRF_HIGH_REQUIRE_PROFILE_IMAGE: u32 = 0;
pub const COR_PRF_HIGH_MONITOR_LARGEOBJECT_ALLOCATED: u32 = 0x0000_0040;
pub const COR_PRF_HIGH_MONITOR_EVENT_PIPE: u32 = 0x0000_0080;
pub const COR_PRF_HIGH_MONITOR_PINNEDOBJECT_ALLOCATED: u32 = 0x0000_0100;
pub const COR_PRF_HIGH_ALLOWABLE_AFTER_ATTACH: u32 = COR_PRF_HIGH_IN_MEMORY_SYMBOLS_UPDATED
    | COR_PRF_HIGH_MONITOR_DYNAMIC_FUNCTION_UNLOADS
    | COR_PRF_HIGH_BASIC_GC
    | COR_PRF_HIGH_MONITOR_GC_MOVED_OBJECTS
    | COR_PRF_HIGH_MONITOR_LARGEOBJECT_ALLOCATED
    | COR_PRF_HIGH_MONITOR_EVENT_PIPE;
pub const COR_PRF_HIGH_ALLOWABLE_NOTIFICATION_PROFILER: u32 = COR_PRF_HIGH_IN_MEMORY_SYMBOLS_UPDATED
    | COR_PRF_HIGH_MONITOR_DYNAMIC_FUNCTION_UNLOADS
    | COR_PRF_HIGH_DISABLE_TIERED_COMPILATION
    | COR_PRF_HIGH_BASIC_GC
    | COR_PRF_HIGH_MONITOR_GC_MOVED_OBJECTS
    | COR_PRF_HIGH_MONITOR_LARGEOBJECT_ALLOCATED
    | COR_PRF_HIGH_MONITOR_EVENT_PIPE;
pub const COR_PRF_HIGH_MONITOR_IMMUTABLE: u32 = COR_PRF_HIGH_DISABLE_TIERED_COMPILATION;

// --- COR_PRF_MISC --------------------------------------------------------------------------------

/// Special ID constants. The enum is 32-bit: on LP64 Linux the runtime's
/// `(AssemblyID)PROFILER_PARENT_UNKNOWN` zero-extends (`0x0000_0000_FFFF_FFFD`), while MSVC
/// (signed enums) sign-extends it on Windows. Compare with `as u32` truncation of the ID, or
/// with `PROFILER_PARENT_UNKNOWN as usize` on Linux.
pub type COR_PRF_MISC = u32;
/// AssemblyID reported by GetModuleInfo before the module is attached to an assembly.
pub const PROFILER_PARENT_UNKNOWN: u32 = 0xFFFF_FFFD;
pub const PROFILER_GLOBAL_CLASS: u32 = 0xFFFF_FFFE;
pub const PROFILER_GLOBAL_MODULE: u32 = 0xFFFF_FFFF;

// --- COR_PRF_JIT_CACHE (JITCachedFunctionSearchFinished) ---------------------------------------

pub type COR_PRF_JIT_CACHE = u32;
/// Note: FOUND is 0.
pub const COR_PRF_CACHED_FUNCTION_FOUND: u32 = 0;
pub const COR_PRF_CACHED_FUNCTION_NOT_FOUND: u32 = 1;

// --- COR_PRF_TRANSITION_REASON ---------------------------------------------------------------------

pub type COR_PRF_TRANSITION_REASON = u32;
pub const COR_PRF_TRANSITION_CALL: u32 = 0;
pub const COR_PRF_TRANSITION_RETURN: u32 = 1;

// --- COR_PRF_SUSPEND_REASON ----------------------------------------------------------------------

pub type COR_PRF_SUSPEND_REASON = u32;
pub const COR_PRF_SUSPEND_OTHER: u32 = 0;
pub const COR_PRF_SUSPEND_FOR_GC: u32 = 1;
pub const COR_PRF_SUSPEND_FOR_APPDOMAIN_SHUTDOWN: u32 = 2;
pub const COR_PRF_SUSPEND_FOR_CODE_PITCHING: u32 = 3;
pub const COR_PRF_SUSPEND_FOR_SHUTDOWN: u32 = 4;
pub const COR_PRF_SUSPEND_FOR_INPROC_DEBUGGER: u32 = 6;
pub const COR_PRF_SUSPEND_FOR_GC_PREP: u32 = 7;
pub const COR_PRF_SUSPEND_FOR_REJIT: u32 = 8;
/// ICorProfilerInfo10::SuspendRuntime.
pub const COR_PRF_SUSPEND_FOR_PROFILER: u32 = 9;

// --- COR_PRF_RUNTIME_TYPE (GetRuntimeInformation) -------------------------------------------------

pub type COR_PRF_RUNTIME_TYPE = u32;
pub const COR_PRF_DESKTOP_CLR: u32 = 0x1;
pub const COR_PRF_CORE_CLR: u32 = 0x2;

// --- COR_PRF_REJIT_FLAGS (RequestReJITWithInliners) ------------------------------------------------

pub type COR_PRF_REJIT_FLAGS = u32;
pub const COR_PRF_REJIT_BLOCK_INLINING: u32 = 0x1;
pub const COR_PRF_REJIT_INLINING_CALLBACKS: u32 = 0x2;

// --- COR_PRF_EVENTPIPE_PARAM_TYPE ------------------------------------------------------------------

pub type COR_PRF_EVENTPIPE_PARAM_TYPE = u32;
pub const COR_PRF_EVENTPIPE_OBJECT: u32 = 1;
pub const COR_PRF_EVENTPIPE_BOOLEAN: u32 = 3;
pub const COR_PRF_EVENTPIPE_CHAR: u32 = 4;
pub const COR_PRF_EVENTPIPE_SBYTE: u32 = 5;
pub const COR_PRF_EVENTPIPE_BYTE: u32 = 6;
pub const COR_PRF_EVENTPIPE_INT16: u32 = 7;
pub const COR_PRF_EVENTPIPE_UINT16: u32 = 8;
pub const COR_PRF_EVENTPIPE_INT32: u32 = 9;
pub const COR_PRF_EVENTPIPE_UINT32: u32 = 10;
pub const COR_PRF_EVENTPIPE_INT64: u32 = 11;
pub const COR_PRF_EVENTPIPE_UINT64: u32 = 12;
pub const COR_PRF_EVENTPIPE_SINGLE: u32 = 13;
pub const COR_PRF_EVENTPIPE_DOUBLE: u32 = 14;
pub const COR_PRF_EVENTPIPE_DECIMAL: u32 = 15;
pub const COR_PRF_EVENTPIPE_DATETIME: u32 = 16;
pub const COR_PRF_EVENTPIPE_GUID: u32 = 17;
pub const COR_PRF_EVENTPIPE_STRING: u32 = 18;
pub const COR_PRF_EVENTPIPE_ARRAY: u32 = 19;

// --- COR_PRF_EVENTPIPE_LEVEL -------------------------------------------------------------------------

pub type COR_PRF_EVENTPIPE_LEVEL = u32;
pub const COR_PRF_EVENTPIPE_LOGALWAYS: u32 = 0;
pub const COR_PRF_EVENTPIPE_CRITICAL: u32 = 1;
pub const COR_PRF_EVENTPIPE_ERROR: u32 = 2;
pub const COR_PRF_EVENTPIPE_WARNING: u32 = 3;
pub const COR_PRF_EVENTPIPE_INFORMATIONAL: u32 = 4;
pub const COR_PRF_EVENTPIPE_VERBOSE: u32 = 5;

// --- COR_PRF_HANDLE_TYPE (ICorProfilerInfo13::CreateHandle) -------------------------------------

pub type COR_PRF_HANDLE_TYPE = u32;
pub const COR_PRF_HANDLE_TYPE_WEAK: u32 = 0x1;
pub const COR_PRF_HANDLE_TYPE_STRONG: u32 = 0x2;
pub const COR_PRF_HANDLE_TYPE_PINNED: u32 = 0x3;

// --- COR_PRF_GC_ROOT_KIND / COR_PRF_GC_ROOT_FLAGS (RootReferences2) ------------------------------

pub type COR_PRF_GC_ROOT_KIND = u32;
pub const COR_PRF_GC_ROOT_STACK: u32 = 1;
pub const COR_PRF_GC_ROOT_FINALIZER: u32 = 2;
pub const COR_PRF_GC_ROOT_HANDLE: u32 = 3;
pub const COR_PRF_GC_ROOT_OTHER: u32 = 0;

pub type COR_PRF_GC_ROOT_FLAGS = u32;
pub const COR_PRF_GC_ROOT_PINNING: u32 = 0x1;
pub const COR_PRF_GC_ROOT_WEAKREF: u32 = 0x2;
pub const COR_PRF_GC_ROOT_INTERIOR: u32 = 0x4;
pub const COR_PRF_GC_ROOT_REFCOUNTED: u32 = 0x8;

// --- COR_PRF_FINALIZER_FLAGS (FinalizeableObjectQueued) ------------------------------------------

pub type COR_PRF_FINALIZER_FLAGS = u32;
pub const COR_PRF_FINALIZER_CRITICAL: u32 = 0x1;

// --- COR_PRF_GC_GENERATION -----------------------------------------------------------------------------

pub type COR_PRF_GC_GENERATION = u32;
pub const COR_PRF_GC_GEN_0: u32 = 0;
pub const COR_PRF_GC_GEN_1: u32 = 1;
pub const COR_PRF_GC_GEN_2: u32 = 2;
pub const COR_PRF_GC_LARGE_OBJECT_HEAP: u32 = 3;
pub const COR_PRF_GC_PINNED_OBJECT_HEAP: u32 = 4;

// --- COR_PRF_CLAUSE_TYPE ---------------------------------------------------------------------------------

pub type COR_PRF_CLAUSE_TYPE = u32;
pub const COR_PRF_CLAUSE_NONE: u32 = 0;
pub const COR_PRF_CLAUSE_FILTER: u32 = 1;
pub const COR_PRF_CLAUSE_CATCH: u32 = 2;
pub const COR_PRF_CLAUSE_FINALLY: u32 = 3;

// --- COR_PRF_GC_REASON ------------------------------------------------------------------------------------

pub type COR_PRF_GC_REASON = u32;
/// Induced by GC.Collect.
pub const COR_PRF_GC_INDUCED: u32 = 1;
pub const COR_PRF_GC_OTHER: u32 = 0;

// --- COR_PRF_MODULE_FLAGS (GetModuleInfo2) -----------------------------------------------------------------

pub type COR_PRF_MODULE_FLAGS = u32;
pub const COR_PRF_MODULE_DISK: u32 = 0x0000_0001;
pub const COR_PRF_MODULE_NGEN: u32 = 0x0000_0002;
pub const COR_PRF_MODULE_DYNAMIC: u32 = 0x0000_0004;
pub const COR_PRF_MODULE_COLLECTIBLE: u32 = 0x0000_0008;
pub const COR_PRF_MODULE_RESOURCE: u32 = 0x0000_0010;
pub const COR_PRF_MODULE_FLAT_LAYOUT: u32 = 0x0000_0020;
pub const COR_PRF_MODULE_WINDOWS_RUNTIME: u32 = 0x0000_0040;

// --- COR_PRF_CODEGEN_FLAGS (ICorProfilerFunctionControl::SetCodegenFlags) -------------------------

pub type COR_PRF_CODEGEN_FLAGS = u32;
pub const COR_PRF_CODEGEN_DISABLE_INLINING: u32 = 0x0001;
pub const COR_PRF_CODEGEN_DISABLE_ALL_OPTIMIZATIONS: u32 = 0x0002;
/// Note: 0x0003, i.e. both bits above (as the IDL declares it).
pub const COR_PRF_CODEGEN_DEBUG_INFO: u32 = 0x0003;

// --- CorDebugIlToNativeMappingTypes (special COR_DEBUG_IL_TO_NATIVE_MAP::ilOffset values) -------

/// The IDL values are -1/-2/-3; `ilOffset` is a `ULONG32`, so they are given here as `u32`.
pub type CorDebugIlToNativeMappingTypes = u32;
pub const NO_MAPPING: u32 = -1_i32 as u32;
pub const PROLOG: u32 = -2_i32 as u32;
pub const EPILOG: u32 = -3_i32 as u32;
