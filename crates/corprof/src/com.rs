//! The COM objects the runtime talks to: the callback object (one static
//! `ICorProfilerCallback11` vtable per implementation type), the class factory and
//! [`dll_get_class_object`]; every entry point goes through the panic boundary
//! (`boundary`).

use core::ffi::c_void;
use core::ptr::{self, NonNull};
use core::sync::atomic::{AtomicU32, Ordering, fence};

use corprof_sys as sys;
use corprof_sys::{BOOL, GUID, HRESULT};

use crate::boundary::{borrowed, catch};
use crate::callback::ProfilerCallback;
use crate::hresult::{HResult, Result, to_hresult};

#[inline(always)]
fn guard(place: &str, f: impl FnOnce() -> Result<()>) -> HRESULT {
    to_hresult(catch(place, f))
}

// ---------------------------------------------------------------------------------------
// Reference counting (safety.md R2)
// ---------------------------------------------------------------------------------------

/// An atomic COM reference count that saturates instead of overflowing (a saturated
/// object is leaked, never freed early).
struct RefCount(AtomicU32);

impl RefCount {
    const fn new(n: u32) -> RefCount {
        RefCount(AtomicU32::new(n))
    }

    fn add_ref(&self) -> u32 {
        let mut cur = self.0.load(Ordering::Relaxed);
        loop {
            if cur == u32::MAX {
                return cur;
            }
            match self
                .0
                .compare_exchange_weak(cur, cur + 1, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return cur + 1,
                Err(actual) => cur = actual,
            }
        }
    }

    /// Returns the new count; `0` means the caller must free the object.
    fn release(&self) -> u32 {
        if self.0.load(Ordering::Relaxed) == u32::MAX {
            return u32::MAX;
        }
        let prev = self.0.fetch_sub(1, Ordering::Release);
        if prev == 1 {
            // Synchronizes with every earlier Release so the drop sees all their writes.
            fence(Ordering::Acquire);
        }
        prev.wrapping_sub(1)
    }
}

// ---------------------------------------------------------------------------------------
// The callback object
// ---------------------------------------------------------------------------------------

/// What a callback COM pointer points to: the vtable pointer first (every
/// `ICorProfilerCallbackN` shares the prefix, so one vtable serves all eleven), then the
/// count and the implementation.
#[repr(C)]
struct CallbackObject<T: ProfilerCallback> {
    vtbl: *const sys::ICorProfilerCallback11Vtbl,
    refs: RefCount,
    callback: T,
}

/// Creates the COM object for `callback` with one reference, owned by the caller. The
/// pointer answers `QueryInterface` for `IUnknown` and `ICorProfilerCallback` through
/// `ICorProfilerCallback11`; the object (and `callback`) is dropped on the last
/// `Release`.
pub fn new_callback_object<T: ProfilerCallback>(callback: T) -> *mut sys::ICorProfilerCallback11 {
    let obj = Box::new(CallbackObject {
        vtbl: &CallbackObject::<T>::VTBL,
        refs: RefCount::new(1),
        callback,
    });
    Box::into_raw(obj).cast()
}

/// The interfaces the callback object answers.
const CALLBACK_IIDS: [GUID; 12] = [
    sys::IID_IUnknown,
    sys::IID_ICorProfilerCallback,
    sys::IID_ICorProfilerCallback2,
    sys::IID_ICorProfilerCallback3,
    sys::IID_ICorProfilerCallback4,
    sys::IID_ICorProfilerCallback5,
    sys::IID_ICorProfilerCallback6,
    sys::IID_ICorProfilerCallback7,
    sys::IID_ICorProfilerCallback8,
    sys::IID_ICorProfilerCallback9,
    sys::IID_ICorProfilerCallback10,
    sys::IID_ICorProfilerCallback11,
];

/// # Safety
/// `this` must point to a live `CallbackObject<T>` for `'a` (safety.md R2).
unsafe fn callback_of<'a, T: ProfilerCallback>(this: *mut c_void) -> &'a T {
    // SAFETY: guaranteed by the caller.
    unsafe { &(*this.cast::<CallbackObject<T>>()).callback }
}

/// # Safety
/// `this` must point to a live `CallbackObject<T>`.
unsafe fn refs_of<'a, T: ProfilerCallback>(this: *mut c_void) -> &'a RefCount {
    // SAFETY: guaranteed by the caller.
    unsafe { &(*this.cast::<CallbackObject<T>>()).refs }
}

/// Length of a NUL-terminated UTF-16 string, capped at `max` units.
///
/// # Safety
/// `p` must be null or point to a NUL-terminated string, or to at least `max` units.
unsafe fn wcslen(p: *const u16, max: usize) -> usize {
    if p.is_null() {
        return 0;
    }
    let mut n = 0;
    // SAFETY: every unit read is before the terminator (or within `max`), per the contract.
    while n < max && unsafe { *p.add(n) } != 0 {
        n += 1;
    }
    n
}

/// The one table of callback shims, in vtable order: each group names an
/// `ICorProfilerCallbackN` and its vtable struct (which nests the group before it as `base`);
/// each entry is one method, its raw arguments and a body that sees the implementation as
/// `$cb`. From it come one `extern "system"` shim per method, each running its body inside
/// [`guard`], and `shim::vtbl`, the `ICorProfilerCallback11` vtable pointing at them. The
/// vtable literals do not compile if a slot is missing, misnamed or in the wrong interface,
/// so this table cannot drift from `corprof-sys` (whose order `tests/vtable_order.rs` checks
/// against corprof.idl).
macro_rules! callback_table {
    ($(
        $iface:ident($vtbl:ident) {
            $( fn $name:ident($($arg:ident: $ty:ty),* $(,)?) => |$cb:ident| $body:expr; )*
        }
    )*) => {
        $($(
            #[allow(non_snake_case)]
            pub(super) unsafe extern "system" fn $name<T: ProfilerCallback>(
                this: *mut sys::$iface $(, $arg: $ty)*
            ) -> HRESULT {
                // A closed door (`quiesce`): the profiler is between sessions, and the
                // callback touches nothing of it. Not the initialisations: those answer
                // for themselves (a second profiler object is refused by its state).
                let initialisation = matches!(stringify!($name), "Initialize" | "InitializeForAttach");
                let _inside = if initialisation {
                    None
                } else {
                    match crate::quiesce::enter() {
                        Ok(inside) => inside,
                        Err(_) => return sys::S_OK,
                    }
                };
                guard(concat!(stringify!($iface), "::", stringify!($name)), || {
                    // SAFETY: the runtime calls a method only through a reference it holds,
                    // so `this` is our live CallbackObject<T> (safety.md R2).
                    let $cb: &T = unsafe { callback_of::<T>(this.cast()) };
                    $body
                })
            }
        )*)*

        /// The vtable for `T`: `IUnknown`, then every group above, each nesting the last.
        pub(super) const fn vtbl<T: ProfilerCallback>() -> sys::ICorProfilerCallback11Vtbl {
            let v = sys::IUnknownVtbl {
                QueryInterface: QueryInterface::<T>,
                AddRef: AddRef::<T>,
                Release: Release::<T>,
            };
            $( let v = sys::$vtbl { base: v, $($name: $name::<T>,)* }; )*
            v
        }
    };
}

mod shim {
    use super::*;
    use crate::callback::{AssemblyReferenceProvider, EventPipeEvent, FunctionControl};
    use crate::ids::*;
    use crate::info::ProfilerInfo;
    use core::ffi::c_int;
    use sys::{
        AppDomainID, AssemblyID, ClassID, DWORD, FunctionID, GCHandleID, IUnknown, LPCBYTE,
        LPCGUID, ModuleID, ObjectID, ReJITID, SIZE_T, ThreadID, UINT, UINT_PTR, ULONG, WCHAR,
    };

    fn hr(v: HRESULT) -> HResult {
        HResult(v)
    }

    // ---- IUnknown ----------------------------------------------------------------------

    #[allow(non_snake_case)]
    pub(super) unsafe extern "system" fn QueryInterface<T: ProfilerCallback>(
        this: *mut IUnknown,
        riid: *const GUID,
        ppv: *mut *mut c_void,
    ) -> HRESULT {
        guard("ICorProfilerCallback::QueryInterface", || {
            if ppv.is_null() {
                return Err(HResult::E_POINTER);
            }
            // SAFETY: `ppv` is a non-null out-pointer from the caller (R5).
            unsafe { *ppv = ptr::null_mut() };
            if riid.is_null() {
                return Err(HResult::E_POINTER);
            }
            // SAFETY: a non-null REFIID points to a GUID for the call (R4).
            let iid = unsafe { *riid };
            if !CALLBACK_IIDS.contains(&iid) {
                return Err(HResult::E_NOINTERFACE);
            }
            // SAFETY: `this` is live (R2): the caller holds a reference.
            unsafe { refs_of::<T>(this.cast()) }.add_ref();
            // SAFETY: as above.
            unsafe { *ppv = this.cast() };
            Ok(())
        })
    }

    #[allow(non_snake_case)]
    pub(super) unsafe extern "system" fn AddRef<T: ProfilerCallback>(this: *mut IUnknown) -> u32 {
        // SAFETY: the caller holds a reference, so `this` is live (R2).
        unsafe { refs_of::<T>(this.cast()) }.add_ref()
    }

    #[allow(non_snake_case)]
    pub(super) unsafe extern "system" fn Release<T: ProfilerCallback>(this: *mut IUnknown) -> u32 {
        // SAFETY: the caller gives up a reference it holds, so `this` is live until the
        // count reaches 0 (R2).
        let left = unsafe { refs_of::<T>(this.cast()) }.release();
        if left == 0 {
            let _ = catch("ICorProfilerCallback::Release (drop)", || {
                // SAFETY: the count reached 0: no reference remains, and the object came
                // from Box::into_raw in new_callback_object (R2).
                drop(unsafe { Box::from_raw(this.cast::<CallbackObject<T>>()) });
                Ok(())
            });
        }
        left
    }

    // ---- ICorProfilerCallback ----------------------------------------------------------

    callback_table! {
        ICorProfilerCallback(ICorProfilerCallbackVtbl) {
            fn Initialize(unk: *mut IUnknown) => |cb| {
                // SAFETY: the runtime passes its live info object (R3).
                let info = unsafe { ProfilerInfo::from_unknown(unk) }?;
                cb.initialize(info)
            };
            fn Shutdown() => |cb| cb.shutdown();
            fn AppDomainCreationStarted(id: AppDomainID) =>
                |cb| cb.app_domain_creation_started(AppDomainId(id));
            fn AppDomainCreationFinished(id: AppDomainID, status: HRESULT) =>
                |cb| cb.app_domain_creation_finished(AppDomainId(id), hr(status));
            fn AppDomainShutdownStarted(id: AppDomainID) =>
                |cb| cb.app_domain_shutdown_started(AppDomainId(id));
            fn AppDomainShutdownFinished(id: AppDomainID, status: HRESULT) =>
                |cb| cb.app_domain_shutdown_finished(AppDomainId(id), hr(status));
            fn AssemblyLoadStarted(id: AssemblyID) =>
                |cb| cb.assembly_load_started(AssemblyId(id));
            fn AssemblyLoadFinished(id: AssemblyID, status: HRESULT) =>
                |cb| cb.assembly_load_finished(AssemblyId(id), hr(status));
            fn AssemblyUnloadStarted(id: AssemblyID) =>
                |cb| cb.assembly_unload_started(AssemblyId(id));
            fn AssemblyUnloadFinished(id: AssemblyID, status: HRESULT) =>
                |cb| cb.assembly_unload_finished(AssemblyId(id), hr(status));
            fn ModuleLoadStarted(id: ModuleID) =>
                |cb| cb.module_load_started(ModuleId(id));
            fn ModuleLoadFinished(id: ModuleID, status: HRESULT) =>
                |cb| cb.module_load_finished(ModuleId(id), hr(status));
            fn ModuleUnloadStarted(id: ModuleID) =>
                |cb| cb.module_unload_started(ModuleId(id));
            fn ModuleUnloadFinished(id: ModuleID, status: HRESULT) =>
                |cb| cb.module_unload_finished(ModuleId(id), hr(status));
            fn ModuleAttachedToAssembly(module: ModuleID, assembly: AssemblyID) =>
                |cb| cb.module_attached_to_assembly(ModuleId(module), AssemblyId(assembly));
            fn ClassLoadStarted(id: ClassID) =>
                |cb| cb.class_load_started(ClassId(id));
            fn ClassLoadFinished(id: ClassID, status: HRESULT) =>
                |cb| cb.class_load_finished(ClassId(id), hr(status));
            fn ClassUnloadStarted(id: ClassID) =>
                |cb| cb.class_unload_started(ClassId(id));
            fn ClassUnloadFinished(id: ClassID, status: HRESULT) =>
                |cb| cb.class_unload_finished(ClassId(id), hr(status));
            fn FunctionUnloadStarted(id: FunctionID) =>
                |cb| cb.function_unload_started(FunctionId(id));
            fn JITCompilationStarted(id: FunctionID, safe: BOOL) =>
                |cb| cb.jit_compilation_started(FunctionId(id), safe != 0);
            fn JITCompilationFinished(id: FunctionID, status: HRESULT, safe: BOOL) =>
                |cb| cb.jit_compilation_finished(FunctionId(id), hr(status), safe != 0);
            fn JITCachedFunctionSearchStarted(id: FunctionID, use_cached: *mut BOOL) => |cb| {
                // SAFETY: a non-null out-pointer from the runtime, valid for the call (R4).
                let mut flag = use_cached.is_null() || unsafe { *use_cached } != 0;
                let r = cb.jit_cached_function_search_started(FunctionId(id), &mut flag);
                if !use_cached.is_null() {
                    // SAFETY: as above.
                    unsafe { *use_cached = BOOL::from(flag) };
                }
                r
            };
            fn JITCachedFunctionSearchFinished(id: FunctionID, result: u32) =>
                |cb| cb.jit_cached_function_search_finished(FunctionId(id), result);
            fn JITFunctionPitched(id: FunctionID) =>
                |cb| cb.jit_function_pitched(FunctionId(id));
            fn JITInlining(caller: FunctionID, callee: FunctionID, should: *mut BOOL) => |cb| {
                // SAFETY: a non-null out-pointer from the runtime, valid for the call (R4).
                let mut flag = should.is_null() || unsafe { *should } != 0;
                let r = cb.jit_inlining(FunctionId(caller), FunctionId(callee), &mut flag);
                if !should.is_null() {
                    // SAFETY: as above.
                    unsafe { *should = BOOL::from(flag) };
                }
                r
            };
            fn ThreadCreated(id: ThreadID) =>
                |cb| cb.thread_created(ThreadId(id));
            fn ThreadDestroyed(id: ThreadID) =>
                |cb| cb.thread_destroyed(ThreadId(id));
            fn ThreadAssignedToOSThread(id: ThreadID, os: DWORD) =>
                |cb| cb.thread_assigned_to_os_thread(ThreadId(id), os);
            fn RemotingClientInvocationStarted() =>
                |cb| cb.remoting_client_invocation_started();
            fn RemotingClientSendingMessage(cookie: *mut GUID, is_async: BOOL) =>
                // SAFETY: null or a GUID valid for the call (R4).
                |cb| cb.remoting_client_sending_message(unsafe { cookie.as_ref() }, is_async != 0);
            fn RemotingClientReceivingReply(cookie: *mut GUID, is_async: BOOL) =>
                // SAFETY: null or a GUID valid for the call (R4).
                |cb| cb.remoting_client_receiving_reply(unsafe { cookie.as_ref() }, is_async != 0);
            fn RemotingClientInvocationFinished() =>
                |cb| cb.remoting_client_invocation_finished();
            fn RemotingServerReceivingMessage(cookie: *mut GUID, is_async: BOOL) =>
                // SAFETY: null or a GUID valid for the call (R4).
                |cb| cb.remoting_server_receiving_message(unsafe { cookie.as_ref() }, is_async != 0);
            fn RemotingServerInvocationStarted() =>
                |cb| cb.remoting_server_invocation_started();
            fn RemotingServerInvocationReturned() =>
                |cb| cb.remoting_server_invocation_returned();
            fn RemotingServerSendingReply(cookie: *mut GUID, is_async: BOOL) =>
                // SAFETY: null or a GUID valid for the call (R4).
                |cb| cb.remoting_server_sending_reply(unsafe { cookie.as_ref() }, is_async != 0);
            fn UnmanagedToManagedTransition(id: FunctionID, reason: u32) =>
                |cb| cb.unmanaged_to_managed_transition(FunctionId(id), reason);
            fn ManagedToUnmanagedTransition(id: FunctionID, reason: u32) =>
                |cb| cb.managed_to_unmanaged_transition(FunctionId(id), reason);
            fn RuntimeSuspendStarted(reason: u32) =>
                |cb| cb.runtime_suspend_started(reason);
            fn RuntimeSuspendFinished() => |cb| cb.runtime_suspend_finished();
            fn RuntimeSuspendAborted() => |cb| cb.runtime_suspend_aborted();
            fn RuntimeResumeStarted() => |cb| cb.runtime_resume_started();
            fn RuntimeResumeFinished() => |cb| cb.runtime_resume_finished();
            fn RuntimeThreadSuspended(id: ThreadID) =>
                |cb| cb.runtime_thread_suspended(ThreadId(id));
            fn RuntimeThreadResumed(id: ThreadID) =>
                |cb| cb.runtime_thread_resumed(ThreadId(id));
            fn MovedReferences(n: ULONG, old: *mut ObjectID, new: *mut ObjectID, len: *mut ULONG) => |cb| {
                let n = n as usize;
                // SAFETY: three runtime arrays of `n` elements, valid for the call (R4);
                // ObjectId is a transparent ObjectID.
                let (old, new, len) = unsafe {
                    (borrowed(old.cast::<ObjectId>(), n), borrowed(new.cast::<ObjectId>(), n), borrowed(len, n))
                };
                cb.moved_references(old, new, len)
            };
            fn ObjectAllocated(object: ObjectID, class: ClassID) =>
                |cb| cb.object_allocated(ObjectId(object), ClassId(class));
            fn ObjectsAllocatedByClass(n: ULONG, classes: *mut ClassID, counts: *mut ULONG) => |cb| {
                let n = n as usize;
                // SAFETY: two runtime arrays of `n` elements, valid for the call (R4).
                let (classes, counts) = unsafe { (borrowed(classes.cast::<ClassId>(), n), borrowed(counts, n)) };
                cb.objects_allocated_by_class(classes, counts)
            };
            fn ObjectReferences(object: ObjectID, class: ClassID, n: ULONG, refs: *mut ObjectID) => |cb| {
                // SAFETY: a runtime array of `n` elements, valid for the call (R4).
                let refs = unsafe { borrowed(refs.cast::<ObjectId>(), n as usize) };
                cb.object_references(ObjectId(object), ClassId(class), refs)
            };
            fn RootReferences(n: ULONG, roots: *mut ObjectID) => |cb| {
                // SAFETY: a runtime array of `n` elements, valid for the call (R4).
                let roots = unsafe { borrowed(roots.cast::<ObjectId>(), n as usize) };
                cb.root_references(roots)
            };
            fn ExceptionThrown(object: ObjectID) =>
                |cb| cb.exception_thrown(ObjectId(object));
            fn ExceptionSearchFunctionEnter(id: FunctionID) =>
                |cb| cb.exception_search_function_enter(FunctionId(id));
            fn ExceptionSearchFunctionLeave() =>
                |cb| cb.exception_search_function_leave();
            fn ExceptionSearchFilterEnter(id: FunctionID) =>
                |cb| cb.exception_search_filter_enter(FunctionId(id));
            fn ExceptionSearchFilterLeave() =>
                |cb| cb.exception_search_filter_leave();
            fn ExceptionSearchCatcherFound(id: FunctionID) =>
                |cb| cb.exception_search_catcher_found(FunctionId(id));
            fn ExceptionOSHandlerEnter(unused: UINT_PTR) =>
                |cb| cb.exception_os_handler_enter(unused);
            fn ExceptionOSHandlerLeave(unused: UINT_PTR) =>
                |cb| cb.exception_os_handler_leave(unused);
            fn ExceptionUnwindFunctionEnter(id: FunctionID) =>
                |cb| cb.exception_unwind_function_enter(FunctionId(id));
            fn ExceptionUnwindFunctionLeave() =>
                |cb| cb.exception_unwind_function_leave();
            fn ExceptionUnwindFinallyEnter(id: FunctionID) =>
                |cb| cb.exception_unwind_finally_enter(FunctionId(id));
            fn ExceptionUnwindFinallyLeave() =>
                |cb| cb.exception_unwind_finally_leave();
            fn ExceptionCatcherEnter(id: FunctionID, object: ObjectID) =>
                |cb| cb.exception_catcher_enter(FunctionId(id), ObjectId(object));
            fn ExceptionCatcherLeave() => |cb| cb.exception_catcher_leave();
            fn COMClassicVTableCreated(class: ClassID, iid: *const GUID, vtable: *mut c_void, slots: ULONG) => |cb| {
                // SAFETY: null or a GUID valid for the call (R4).
                let iid = unsafe { iid.as_ref() }.unwrap_or(&GUID::NULL);
                cb.com_classic_vtable_created(ClassId(class), iid, vtable, slots)
            };
            fn COMClassicVTableDestroyed(class: ClassID, iid: *const GUID, vtable: *mut c_void) => |cb| {
                // SAFETY: null or a GUID valid for the call (R4).
                let iid = unsafe { iid.as_ref() }.unwrap_or(&GUID::NULL);
                cb.com_classic_vtable_destroyed(ClassId(class), iid, vtable)
            };
            fn ExceptionCLRCatcherFound() => |cb| cb.exception_clr_catcher_found();
            fn ExceptionCLRCatcherExecute() => |cb| cb.exception_clr_catcher_execute();
        }

        ICorProfilerCallback2(ICorProfilerCallback2Vtbl) {
            fn ThreadNameChanged(id: ThreadID, cch: ULONG, name: *mut WCHAR) => |cb| {
                // SAFETY: `cch` UTF-16 units (no NUL) valid for the call, or null (R4).
                let name = unsafe { borrowed(name.cast_const(), cch as usize) };
                cb.thread_name_changed(ThreadId(id), name)
            };
            fn GarbageCollectionStarted(n: c_int, collected: *mut BOOL, reason: u32) => |cb| {
                let n = usize::try_from(n).unwrap_or(0);
                // SAFETY: a runtime array of `n` BOOLs, valid for the call (R4).
                let raw = unsafe { borrowed(collected.cast_const(), n) };
                let mut small = [false; 8];
                let heap: Vec<bool>;
                let flags: &[bool] = if raw.len() <= small.len() {
                    for (dst, src) in small.iter_mut().zip(raw) {
                        *dst = *src != 0;
                    }
                    &small[..raw.len()]
                } else {
                    heap = raw.iter().map(|b| *b != 0).collect();
                    &heap
                };
                cb.garbage_collection_started(flags, reason)
            };
            fn SurvivingReferences(n: ULONG, starts: *mut ObjectID, len: *mut ULONG) => |cb| {
                let n = n as usize;
                // SAFETY: two runtime arrays of `n` elements, valid for the call (R4).
                let (starts, len) = unsafe { (borrowed(starts.cast::<ObjectId>(), n), borrowed(len, n)) };
                cb.surviving_references(starts, len)
            };
            fn GarbageCollectionFinished() => |cb| cb.garbage_collection_finished();
            fn FinalizeableObjectQueued(flags: DWORD, object: ObjectID) =>
                |cb| cb.finalizeable_object_queued(flags, ObjectId(object));
            fn RootReferences2(n: ULONG, roots: *mut ObjectID, kinds: *mut u32, flags: *mut u32, ids: *mut UINT_PTR) => |cb| {
                let n = n as usize;
                // SAFETY: four runtime arrays of `n` elements, valid for the call (R4).
                let (roots, kinds, flags, ids) = unsafe {
                    (borrowed(roots.cast::<ObjectId>(), n), borrowed(kinds, n), borrowed(flags, n), borrowed(ids, n))
                };
                cb.root_references2(roots, kinds, flags, ids)
            };
            fn HandleCreated(handle: GCHandleID, object: ObjectID) =>
                |cb| cb.handle_created(GcHandleId(handle), ObjectId(object));
            fn HandleDestroyed(handle: GCHandleID) =>
                |cb| cb.handle_destroyed(GcHandleId(handle));
        }

        ICorProfilerCallback3(ICorProfilerCallback3Vtbl) {
            fn InitializeForAttach(unk: *mut IUnknown, data: *mut c_void, len: UINT) => |cb| {
                // SAFETY: the runtime passes its live info object (R3).
                let info = unsafe { ProfilerInfo::from_unknown(unk) }?;
                // SAFETY: `len` bytes of client data valid for the call, or null (R4).
                let data = unsafe { borrowed(data.cast_const().cast::<u8>(), len as usize) };
                cb.initialize_for_attach(info, data)
            };
            fn ProfilerAttachComplete() => |cb| cb.profiler_attach_complete();
            fn ProfilerDetachSucceeded() => |cb| cb.profiler_detach_succeeded();
        }

        ICorProfilerCallback4(ICorProfilerCallback4Vtbl) {
            fn ReJITCompilationStarted(id: FunctionID, rejit: ReJITID, safe: BOOL) =>
                |cb| cb.rejit_compilation_started(FunctionId(id), ReJitId(rejit), safe != 0);
            fn GetReJITParameters(module: ModuleID, method: u32, control: *mut sys::ICorProfilerFunctionControl) => |cb| {
                let control = NonNull::new(control).ok_or(HResult::E_POINTER)?;
                // SAFETY: the runtime's function-control object lives for the call (R4).
                let control = unsafe { FunctionControl::new(control) };
                cb.get_rejit_parameters(ModuleId(module), method, control)
            };
            fn ReJITCompilationFinished(id: FunctionID, rejit: ReJITID, status: HRESULT, safe: BOOL) =>
                |cb| cb.rejit_compilation_finished(FunctionId(id), ReJitId(rejit), hr(status), safe != 0);
            fn ReJITError(module: ModuleID, method: u32, id: FunctionID, status: HRESULT) =>
                |cb| cb.rejit_error(ModuleId(module), method, FunctionId(id), hr(status));
            fn MovedReferences2(n: ULONG, old: *mut ObjectID, new: *mut ObjectID, len: *mut SIZE_T) => |cb| {
                let n = n as usize;
                // SAFETY: three runtime arrays of `n` elements, valid for the call (R4).
                let (old, new, len) = unsafe {
                    (borrowed(old.cast::<ObjectId>(), n), borrowed(new.cast::<ObjectId>(), n), borrowed(len, n))
                };
                cb.moved_references2(old, new, len)
            };
            fn SurvivingReferences2(n: ULONG, starts: *mut ObjectID, len: *mut SIZE_T) => |cb| {
                let n = n as usize;
                // SAFETY: two runtime arrays of `n` elements, valid for the call (R4).
                let (starts, len) = unsafe { (borrowed(starts.cast::<ObjectId>(), n), borrowed(len, n)) };
                cb.surviving_references2(starts, len)
            };
        }

        ICorProfilerCallback5(ICorProfilerCallback5Vtbl) {
            fn ConditionalWeakTableElementReferences(n: ULONG, keys: *mut ObjectID, values: *mut ObjectID, ids: *mut GCHandleID) => |cb| {
                let n = n as usize;
                // SAFETY: three runtime arrays of `n` elements, valid for the call (R4).
                let (keys, values, ids) = unsafe {
                    (borrowed(keys.cast::<ObjectId>(), n), borrowed(values.cast::<ObjectId>(), n), borrowed(ids.cast::<GcHandleId>(), n))
                };
                cb.conditional_weak_table_element_references(keys, values, ids)
            };
        }

        ICorProfilerCallback6(ICorProfilerCallback6Vtbl) {
            fn GetAssemblyReferences(path: *const WCHAR, provider: *mut sys::ICorProfilerAssemblyReferenceProvider) => |cb| {
                let provider = NonNull::new(provider).ok_or(HResult::E_POINTER)?;
                // SAFETY: a NUL-terminated path valid for the call, or null (R4).
                let path = unsafe { borrowed(path, wcslen(path, 32 * 1024)) };
                // SAFETY: the runtime's provider lives for the call (R4).
                let provider = unsafe { AssemblyReferenceProvider::new(provider) };
                cb.get_assembly_references(path, provider)
            };
        }

        ICorProfilerCallback7(ICorProfilerCallback7Vtbl) {
            fn ModuleInMemorySymbolsUpdated(module: ModuleID) =>
                |cb| cb.module_in_memory_symbols_updated(ModuleId(module));
        }

        ICorProfilerCallback8(ICorProfilerCallback8Vtbl) {
            fn DynamicMethodJITCompilationStarted(id: FunctionID, safe: BOOL, il: LPCBYTE, len: ULONG) => |cb| {
                // SAFETY: `len` bytes of IL header valid for the call, or null (R4).
                let il = unsafe { borrowed(il, len as usize) };
                cb.dynamic_method_jit_compilation_started(FunctionId(id), safe != 0, il)
            };
            fn DynamicMethodJITCompilationFinished(id: FunctionID, status: HRESULT, safe: BOOL) =>
                |cb| cb.dynamic_method_jit_compilation_finished(FunctionId(id), hr(status), safe != 0);
        }

        ICorProfilerCallback9(ICorProfilerCallback9Vtbl) {
            fn DynamicMethodUnloaded(id: FunctionID) =>
                |cb| cb.dynamic_method_unloaded(FunctionId(id));
        }

        ICorProfilerCallback10(ICorProfilerCallback10Vtbl) {
            fn EventPipeEventDelivered(
                provider: UINT_PTR,
                event_id: DWORD,
                event_version: DWORD,
                metadata_len: ULONG,
                metadata: LPCBYTE,
                data_len: ULONG,
                data: LPCBYTE,
                activity: LPCGUID,
                related: LPCGUID,
                thread: ThreadID,
                frames: ULONG,
                stack: *mut UINT_PTR,
            ) => |cb| {
                // SAFETY: every pointer is null or valid for its count during the call (R4).
                let event = unsafe {
                    EventPipeEvent {
                        provider,
                        event_id,
                        event_version,
                        metadata: borrowed(metadata, metadata_len as usize),
                        data: borrowed(data, data_len as usize),
                        activity_id: activity.as_ref(),
                        related_activity_id: related.as_ref(),
                        thread: ThreadId(thread),
                        stack: borrowed(stack.cast_const(), frames as usize),
                    }
                };
                cb.event_pipe_event_delivered(&event)
            };
            fn EventPipeProviderCreated(provider: UINT_PTR) =>
                |cb| cb.event_pipe_provider_created(provider);
        }

        ICorProfilerCallback11(ICorProfilerCallback11Vtbl) {
            fn LoadAsNotificationOnly(only: *mut BOOL) => |cb| {
                // SAFETY: a non-null out-pointer from the runtime, valid for the call (R4).
                let mut flag = !only.is_null() && unsafe { *only } != 0;
                let r = cb.load_as_notification_only(&mut flag);
                if !only.is_null() {
                    // SAFETY: as above.
                    unsafe { *only = BOOL::from(flag) };
                }
                r
            };
        }
    }
}

impl<T: ProfilerCallback> CallbackObject<T> {
    /// The one vtable for `T`: a promoted constant, so `&Self::VTBL` is `'static` (R10).
    const VTBL: sys::ICorProfilerCallback11Vtbl = shim::vtbl::<T>();
}

// ---------------------------------------------------------------------------------------
// The class factory and DllGetClassObject
// ---------------------------------------------------------------------------------------

#[repr(C)]
struct ClassFactory<T: ProfilerCallback> {
    vtbl: *const sys::IClassFactoryVtbl,
    refs: RefCount,
    make: fn() -> Result<T>,
}

/// Creates an `IClassFactory` (one reference, owned by the caller) whose `CreateInstance`
/// calls `make` and wraps the result with [`new_callback_object`]. An `Err` from `make`
/// is returned to the runtime as is (`CORPROF_E_PROFILER_CANCEL_ACTIVATION` declines
/// loading quietly).
pub fn new_class_factory<T: ProfilerCallback>(make: fn() -> Result<T>) -> *mut sys::IClassFactory {
    let obj = Box::new(ClassFactory {
        vtbl: &ClassFactory::<T>::VTBL,
        refs: RefCount::new(1),
        make,
    });
    Box::into_raw(obj).cast()
}

impl<T: ProfilerCallback> ClassFactory<T> {
    const VTBL: sys::IClassFactoryVtbl = sys::IClassFactoryVtbl {
        base: sys::IUnknownVtbl {
            QueryInterface: factory::QueryInterface::<T>,
            AddRef: factory::AddRef::<T>,
            Release: factory::Release::<T>,
        },
        CreateInstance: factory::CreateInstance::<T>,
        LockServer: factory::LockServer,
    };
}

#[allow(non_snake_case)]
mod factory {
    use super::*;
    use sys::{IClassFactory, IUnknown};

    /// # Safety
    /// `this` must point to a live `ClassFactory<T>` (R2).
    unsafe fn refs<'a, T: ProfilerCallback>(this: *mut c_void) -> &'a RefCount {
        // SAFETY: guaranteed by the caller.
        unsafe { &(*this.cast::<ClassFactory<T>>()).refs }
    }

    pub(super) unsafe extern "system" fn QueryInterface<T: ProfilerCallback>(
        this: *mut IUnknown,
        riid: *const GUID,
        ppv: *mut *mut c_void,
    ) -> HRESULT {
        guard("IClassFactory::QueryInterface", || {
            if ppv.is_null() {
                return Err(HResult::E_POINTER);
            }
            // SAFETY: a non-null out-pointer from the caller (R5).
            unsafe { *ppv = ptr::null_mut() };
            if riid.is_null() {
                return Err(HResult::E_POINTER);
            }
            // SAFETY: a non-null REFIID points to a GUID for the call (R4).
            let iid = unsafe { *riid };
            if iid != sys::IID_IUnknown && iid != sys::IID_IClassFactory {
                return Err(HResult::E_NOINTERFACE);
            }
            // SAFETY: the caller holds a reference, so `this` is live (R2).
            unsafe { refs::<T>(this.cast()) }.add_ref();
            // SAFETY: as above.
            unsafe { *ppv = this.cast() };
            Ok(())
        })
    }

    pub(super) unsafe extern "system" fn AddRef<T: ProfilerCallback>(this: *mut IUnknown) -> u32 {
        // SAFETY: the caller holds a reference (R2).
        unsafe { refs::<T>(this.cast()) }.add_ref()
    }

    pub(super) unsafe extern "system" fn Release<T: ProfilerCallback>(this: *mut IUnknown) -> u32 {
        // SAFETY: the caller gives up a reference it holds (R2).
        let left = unsafe { refs::<T>(this.cast()) }.release();
        if left == 0 {
            // SAFETY: no reference remains; the object came from Box::into_raw (R2).
            drop(unsafe { Box::from_raw(this.cast::<ClassFactory<T>>()) });
        }
        left
    }

    pub(super) unsafe extern "system" fn CreateInstance<T: ProfilerCallback>(
        this: *mut IClassFactory,
        outer: *mut IUnknown,
        riid: *const GUID,
        ppv: *mut *mut c_void,
    ) -> HRESULT {
        guard("IClassFactory::CreateInstance", || {
            if ppv.is_null() {
                return Err(HResult::E_POINTER);
            }
            // SAFETY: a non-null out-pointer from the caller (R5).
            unsafe { *ppv = ptr::null_mut() };
            if !outer.is_null() {
                return Err(HResult::CLASS_E_NOAGGREGATION);
            }
            // SAFETY: the caller holds a reference to the factory (R2).
            let make = unsafe { (*this.cast::<ClassFactory<T>>()).make };
            let obj = new_callback_object(make()?);
            // SAFETY: `obj` is the live object just created, with our one reference; QI
            // checks `riid` and writes `ppv` (R2, R5).
            unsafe {
                let unknown = obj.cast::<IUnknown>();
                let hr = ((*(*unknown).vtbl).QueryInterface)(unknown, riid, ppv);
                ((*(*unknown).vtbl).Release)(unknown);
                HResult(hr).ok()
            }
        })
    }

    pub(super) unsafe extern "system" fn LockServer(
        _this: *mut IClassFactory,
        _lock: BOOL,
    ) -> HRESULT {
        sys::S_OK
    }
}

/// The body of a profiler library's exported `DllGetClassObject`.
///
/// Answers `CLASS_E_CLASSNOTAVAILABLE` unless `*rclsid == *our_clsid`, `E_POINTER` for
/// null pointers, and otherwise hands out a class factory (for `IID_IClassFactory` or
/// `IID_IUnknown`) that creates the profiler with `make`. The runtime then asks the
/// factory for `ICorProfilerCallback2` and queries from `ICorProfilerCallback11` down.
///
/// ```no_run
/// # use core::ffi::c_void;
/// # use corprof::sys::{GUID, HRESULT};
/// # #[derive(Default)] struct MyProfiler;
/// # impl corprof::ProfilerCallback for MyProfiler {}
/// const CLSID: GUID = GUID::from_u128(0x8C1D2E1B_6B1A_4C3E_9F5E_2A8E0C6D7B11);
///
/// #[unsafe(no_mangle)]
/// pub unsafe extern "system" fn DllGetClassObject(
///     rclsid: *const GUID,
///     riid: *const GUID,
///     ppv: *mut *mut c_void,
/// ) -> HRESULT {
///     // SAFETY: the runtime's pointers are forwarded unchanged; null is checked.
///     unsafe { corprof::dll_get_class_object(rclsid, riid, ppv, &CLSID, || Ok(MyProfiler)) }
/// }
/// ```
///
/// # Safety
/// Each pointer must be null or valid as `DllGetClassObject` requires: `rclsid` and `riid`
/// point to GUIDs, `ppv` to writable storage for one pointer.
pub unsafe fn dll_get_class_object<T: ProfilerCallback>(
    rclsid: *const GUID,
    riid: *const GUID,
    ppv: *mut *mut c_void,
    our_clsid: &GUID,
    make: fn() -> Result<T>,
) -> HRESULT {
    guard("DllGetClassObject", || {
        if ppv.is_null() {
            return Err(HResult::E_POINTER);
        }
        // SAFETY: non-null and writable per the contract.
        unsafe { *ppv = ptr::null_mut() };
        if rclsid.is_null() || riid.is_null() {
            return Err(HResult::E_POINTER);
        }
        // SAFETY: non-null GUID pointers per the contract.
        if unsafe { *rclsid } != *our_clsid {
            return Err(HResult::CLASS_E_CLASSNOTAVAILABLE);
        }
        let factory = new_class_factory(make).cast::<sys::IUnknown>();
        // SAFETY: `factory` is live with our one reference; QI checks `riid` and writes
        // `ppv` (R2, R5).
        unsafe {
            let hr = ((*(*factory).vtbl).QueryInterface)(factory, riid, ppv);
            ((*(*factory).vtbl).Release)(factory);
            HResult(hr).ok()
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refcount_saturates_and_reports_zero_once() {
        let r = RefCount::new(1);
        assert_eq!(r.add_ref(), 2);
        assert_eq!(r.release(), 1);
        assert_eq!(r.release(), 0);
        let s = RefCount::new(u32::MAX - 1);
        assert_eq!(s.add_ref(), u32::MAX);
        assert_eq!(s.add_ref(), u32::MAX);
        assert_eq!(s.release(), u32::MAX);
    }
}
