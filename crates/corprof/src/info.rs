//! [`ProfilerInfo`]: the runtime's `ICorProfilerInfo*` object, with safe methods.
//!
//! # When a method may be called
//!
//! Each method's documentation ends with a line such as
//! **Info2 · async · after attach**, read from the runtime's own entry-point checks
//! (`proftoeeinterfaceimpl.cpp`):
//!
//! * **InfoN**: the interface version that introduced the method. With a lower
//!   [`ProfilerInfo::version`] the method returns `Err(HResult::E_NOINTERFACE)`.
//! * **async**: callable from any thread at any time.
//! * **sync**: callable from inside a callback, or from a thread the profiler created
//!   (one that has never run managed code). Elsewhere the runtime answers
//!   `CORPROF_E_UNSUPPORTED_CALL_SEQUENCE`.
//! * **object inspection**: reads a managed object; additionally needs either a GC in
//!   progress or a managed thread in cooperative mode (a callback that was handed an
//!   `ObjectId`), else `CORPROF_E_UNSUPPORTED_CALL_SEQUENCE` / `CORPROF_E_NOT_MANAGED_THREAD`.
//! * **init only**: only inside `initialize` (`CORPROF_E_CALL_ONLY_FROM_INIT`).
//! * **after attach** / **startup only**: whether a profiler loaded by attach may call it
//!   (`CORPROF_E_UNSUPPORTED_FOR_ATTACHING_PROFILER` otherwise).
//!
//! The runtime enforces these rules itself; breaking them gives an error, not undefined
//! behaviour. Passing ids that are not (or no longer) valid is a different matter: see
//! `docs/safety.md` (R7).

use core::ffi::c_void;
use core::mem::offset_of;
use core::ptr::{self, NonNull};

use corprof_sys as sys;
use corprof_sys::Interface;

use crate::boundary::{borrowed, catch};
use crate::hresult::{HResult, Result, check};
use crate::ids::{
    AppDomainId, AssemblyId, ClassId, FunctionId, ModuleId, ObjectId, ReJitId, ThreadId,
};
use crate::metadata::{MetaDataEmit, MetaDataImport};
use crate::rawmd::{RawError, RawMetadata};
use crate::wstr::{read_string, to_utf16z};

/// The lowest `ICorProfilerInfo` version [`ProfilerInfo`] accepts. Info3 (.NET Framework 4,
/// every CoreCLR) brings attach/detach, `EnumModules`, `GetModuleInfo2`,
/// `GetRuntimeInformation` and ELT3; CoreCLR 8 offers Info14, 9 and 10 Info15.
pub const MIN_INFO_VERSION: u32 = 3;
/// The highest version this crate asks for.
pub const MAX_INFO_VERSION: u32 = 15;

mod sealed {
    pub trait Sealed {}
}

/// `ICorProfilerInfo` … `ICorProfilerInfo15` and their version numbers.
pub trait InfoInterface: sealed::Sealed + Interface {
    /// `N` in `ICorProfilerInfoN` (1 for `ICorProfilerInfo`).
    const VERSION: u32;
}

macro_rules! info_versions {
    ($($iface:ident = $v:literal),* $(,)?) => {
        $(
            impl sealed::Sealed for sys::$iface {}
            impl InfoInterface for sys::$iface {
                const VERSION: u32 = $v;
            }
        )*
        /// `(version, IID)` from the highest down.
        const INFO_IIDS: &[(u32, sys::GUID)] = &[$(($v, <sys::$iface as Interface>::IID)),*];
    };
}

info_versions! {
    ICorProfilerInfo15 = 15,
    ICorProfilerInfo14 = 14,
    ICorProfilerInfo13 = 13,
    ICorProfilerInfo12 = 12,
    ICorProfilerInfo11 = 11,
    ICorProfilerInfo10 = 10,
    ICorProfilerInfo9 = 9,
    ICorProfilerInfo8 = 8,
    ICorProfilerInfo7 = 7,
    ICorProfilerInfo6 = 6,
    ICorProfilerInfo5 = 5,
    ICorProfilerInfo4 = 4,
    ICorProfilerInfo3 = 3,
    ICorProfilerInfo2 = 2,
    ICorProfilerInfo = 1,
}

/// Calls `$method`, introduced by `$iface`, on the info object (see safety.md R3, R5).
macro_rules! vcall {
    ($self:ident, $iface:ident :: $method:ident ( $($arg:expr),* $(,)? )) => {{
        let p: *mut sys::$iface = $self.iface::<sys::$iface>()?;
        // SAFETY: `p` is the runtime's live info object, which implements `$iface` because
        // its version is at least `$iface`'s and each version's vtable extends the previous
        // one (R3). The arguments are values, live locals or buffers passed with their true
        // lengths (R5).
        unsafe { ((*(*p).vtbl).$method)(p $(, $arg)*) }
    }};
}

/// The runtime's profiler-info object (`ICorProfilerInfo3` or higher), handed to
/// [`initialize`](crate::ProfilerCallback::initialize) and
/// [`initialize_for_attach`](crate::ProfilerCallback::initialize_for_attach).
///
/// Cheap to clone, usable from any thread (`Send + Sync`; the runtime's object is
/// free-threaded). The runtime owns the object; it stays valid until the profiler is
/// released (after `profiler_detach_succeeded` or at shutdown). Do not use it after
/// `profiler_detach_succeeded` returns.
pub struct ProfilerInfo {
    ptr: NonNull<sys::ICorProfilerInfo>,
    version: u32,
}

// SAFETY: the runtime's ICorProfilerInfo implementation has no thread affinity; every
// method may be called from any thread and checks its own threading rules (R6, R8).
unsafe impl Send for ProfilerInfo {}
// SAFETY: as above; `&ProfilerInfo` only exposes calls into that free-threaded object.
unsafe impl Sync for ProfilerInfo {}

impl Clone for ProfilerInfo {
    fn clone(&self) -> ProfilerInfo {
        let p = self.ptr.as_ptr();
        // SAFETY: `p` is live (we hold a reference); AddRef keeps the COM rules (R3).
        unsafe { ((*(*p).vtbl).base.AddRef)(p.cast()) };
        ProfilerInfo {
            ptr: self.ptr,
            version: self.version,
        }
    }
}

impl Drop for ProfilerInfo {
    fn drop(&mut self) {
        let p = self.ptr.as_ptr();
        // SAFETY: we own one reference to a live object (R3).
        unsafe { ((*(*p).vtbl).base.Release)(p.cast()) };
    }
}

impl core::fmt::Debug for ProfilerInfo {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "ProfilerInfo(ICorProfilerInfo{} @ {:p})",
            self.version, self.ptr
        )
    }
}

/// `GetRuntimeInformation`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeInfo {
    pub clr_instance_id: u16,
    /// `COR_PRF_CORE_CLR` (2) or `COR_PRF_DESKTOP_CLR` (1).
    pub runtime_type: u32,
    pub major: u16,
    pub minor: u16,
    pub build: u16,
    pub qfe: u16,
    /// The product version string, e.g. `8.0.11`.
    pub version: String,
}

/// `GetFunctionInfo2`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionInfo2 {
    /// The exact class when the runtime can tell (null when it cannot).
    pub class: ClassId,
    pub module: ModuleId,
    /// The `mdMethodDef`.
    pub token: u32,
    /// The method's own generic arguments (not the class's).
    pub type_args: Vec<ClassId>,
}

/// `GetModuleInfo` / `GetModuleInfo2`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleInfo {
    /// Load address (0 for dynamic modules).
    pub base_address: usize,
    /// The file path, or for modules without a file the metadata scope name.
    pub name: String,
    pub assembly: AssemblyId,
    /// `COR_PRF_MODULE_FLAGS` (always 0 from `get_module_info`).
    pub flags: u32,
}

/// `GetAssemblyInfo`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssemblyInfo {
    /// The simple name (`System.Private.CoreLib`).
    pub name: String,
    pub app_domain: AppDomainId,
    /// The manifest module.
    pub module: ModuleId,
}

/// `GetAppDomainInfo`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppDomainInfo {
    pub name: String,
    pub process_id: usize,
}

/// `GetClassIDInfo2`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassInfo {
    pub module: ModuleId,
    /// The `mdTypeDef`.
    pub token: u32,
    /// The base class; null for `System.Object` and interfaces.
    pub parent: ClassId,
    pub type_args: Vec<ClassId>,
}

/// `IsArrayClass` for an array type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArrayClass {
    /// `CorElementType` of the elements (`ELEMENT_TYPE_I4`, `ELEMENT_TYPE_CLASS`, …).
    pub element_type: u32,
    /// The element class (null for element types without one).
    pub element_class: ClassId,
    pub rank: u32,
}

/// `GetArrayObjectInfo`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArrayObject {
    /// Per dimension: `(length, lower bound)`.
    pub dimensions: Vec<(u32, i32)>,
    /// Address of the first element.
    pub data: usize,
}

/// `GetGenerationBounds` / `GetObjectGeneration`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GenerationRange {
    pub start: usize,
    pub length: usize,
    pub reserved_length: usize,
    /// `COR_PRF_GC_GENERATION`: 0, 1, 2, 3 (LOH), 4 (POH).
    pub generation: u32,
}

/// One contiguous chunk of a function's native code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodeRange {
    pub start: usize,
    pub size: usize,
}

/// One entry of an IL → native map: native offsets `[native_start, native_end)` from the
/// code version's start run the IL at `il_offset` (−1 no mapping, −2 prolog, −3 epilog).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IlToNative {
    pub il_offset: i32,
    pub native_start: u32,
    pub native_end: u32,
}

/// A run of argument (or return value) bytes handed to a slow-path ELT hook.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ArgumentRange {
    pub start: usize,
    pub length: u32,
}

/// `GetFunctionEnter3Info`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Enter3Info {
    /// `COR_PRF_FRAME_INFO` (0 unless `COR_PRF_ENABLE_FRAME_INFO`); valid during the hook.
    pub frame_info: usize,
    pub total_argument_size: u32,
    /// Left to right, `this` first (as a range pointing at the pointer). Empty unless
    /// `COR_PRF_ENABLE_FUNCTION_ARGS`.
    pub ranges: Vec<ArgumentRange>,
}

/// `GetFunctionLeave3Info`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Leave3Info {
    pub frame_info: usize,
    /// The return value (length 0 for `void` or without `COR_PRF_ENABLE_FUNCTION_RETVAL`).
    pub retval: ArgumentRange,
}

/// A raw COM enumerator of the profiling API.
trait RawEnum {
    type Item: Copy + Default;
    /// # Safety
    /// `this` must be live and `out` valid for `n` items.
    unsafe fn next(this: *mut Self, n: u32, out: *mut Self::Item, fetched: *mut u32) -> i32;
    /// # Safety
    /// `this` must be live; gives up one reference.
    unsafe fn release(this: *mut Self);
}

macro_rules! raw_enum {
    ($($iface:ident => $item:ty),* $(,)?) => {$(
        impl RawEnum for sys::$iface {
            type Item = $item;
            unsafe fn next(this: *mut Self, n: u32, out: *mut $item, fetched: *mut u32) -> i32 {
                // SAFETY: forwarded from the caller's contract.
                unsafe { ((*(*this).vtbl).Next)(this, n, out, fetched) }
            }
            unsafe fn release(this: *mut Self) {
                // SAFETY: forwarded from the caller's contract.
                unsafe { ((*(*this).vtbl).base.Release)(this.cast()) };
            }
        }
    )*};
}

raw_enum! {
    ICorProfilerModuleEnum => sys::ModuleID,
    ICorProfilerThreadEnum => sys::ThreadID,
    ICorProfilerFunctionEnum => sys::COR_PRF_FUNCTION,
    ICorProfilerObjectEnum => sys::ObjectID,
}

/// Drains an enumerator the runtime just returned (one reference, ours) and releases it.
///
/// # Safety
/// `e` must be null or a live enumerator whose reference the caller transfers.
unsafe fn drain<E: RawEnum>(e: *mut E) -> Result<Vec<E::Item>> {
    struct Releaser<E: RawEnum>(*mut E);
    impl<E: RawEnum> Drop for Releaser<E> {
        fn drop(&mut self) {
            // SAFETY: we own the one reference the runtime gave us (R3).
            unsafe { E::release(self.0) };
        }
    }
    if e.is_null() {
        return Err(HResult::E_POINTER);
    }
    let _release = Releaser(e);
    let mut out = Vec::new();
    let mut batch = [E::Item::default(); 64];
    loop {
        let mut fetched = 0u32;
        // SAFETY: `e` is live; `batch` holds 64 items (R5).
        let hr = unsafe { E::next(e, batch.len() as u32, batch.as_mut_ptr(), &mut fetched) };
        check(hr)?;
        let n = (fetched as usize).min(batch.len());
        out.extend_from_slice(&batch[..n]);
        if n == 0 || hr != sys::S_OK {
            return Ok(out);
        }
    }
}

/// Calls a `(count, &mut needed, buffer)` style method twice: once for the size, once for
/// the data. `call(capacity, buffer, &mut needed)`; capacity 0 comes with a null buffer.
fn read_array<T: Copy + Default>(
    mut call: impl FnMut(u32, *mut T, &mut u32) -> i32,
) -> Result<Vec<T>> {
    let mut needed = 0u32;
    check(call(0, ptr::null_mut(), &mut needed))?;
    for _ in 0..4 {
        if needed == 0 {
            return Ok(Vec::new());
        }
        let mut buf = vec![T::default(); needed as usize];
        let mut got = 0u32;
        let hr = call(needed, buf.as_mut_ptr(), &mut got);
        if hr != HResult::ERROR_INSUFFICIENT_BUFFER.0 {
            check(hr)?;
        }
        if got <= needed && hr != HResult::ERROR_INSUFFICIENT_BUFFER.0 {
            buf.truncate(got as usize);
            return Ok(buf);
        }
        needed = got.max(needed.saturating_mul(2));
    }
    Err(HResult::ERROR_INSUFFICIENT_BUFFER)
}

impl ProfilerInfo {
    /// Wraps the `IUnknown` the runtime passes to `Initialize` / `InitializeForAttach`:
    /// queries `ICorProfilerInfo15` down to [`MIN_INFO_VERSION`] and keeps the highest.
    /// `E_POINTER` for null, `E_NOINTERFACE` if not even Info3 is offered.
    ///
    /// # Safety
    /// `unk` must be null or a live `IUnknown` of the runtime's info object (R3).
    pub unsafe fn from_unknown(unk: *mut sys::IUnknown) -> Result<ProfilerInfo> {
        if unk.is_null() {
            return Err(HResult::E_POINTER);
        }
        for &(version, iid) in INFO_IIDS {
            if version < MIN_INFO_VERSION {
                break;
            }
            let mut out: *mut c_void = ptr::null_mut();
            // SAFETY: `unk` is live per the contract; `out` is a local (R5).
            let hr = unsafe { ((*(*unk).vtbl).QueryInterface)(unk, &iid, &mut out) };
            if hr >= 0
                && let Some(ptr) = NonNull::new(out.cast::<sys::ICorProfilerInfo>())
            {
                return Ok(ProfilerInfo { ptr, version });
            }
        }
        Err(HResult::E_NOINTERFACE)
    }

    /// The `ICorProfilerInfoN` version obtained (3 ..= 15).
    pub fn version(&self) -> u32 {
        self.version
    }

    /// The object as `I` if its version allows, for calls this wrapper does not cover.
    /// The pointer is valid as long as this `ProfilerInfo` (R3).
    pub fn as_raw<I: InfoInterface>(&self) -> Option<*mut I> {
        (self.version >= I::VERSION).then(|| self.ptr.as_ptr().cast())
    }

    fn iface<I: InfoInterface>(&self) -> Result<*mut I> {
        self.as_raw::<I>().ok_or(HResult::E_NOINTERFACE)
    }

    // ---- Event mask ------------------------------------------------------------------------

    /// `SetEventMask`: `COR_PRF_MONITOR_*` bits (the high word is cleared).
    /// **Info1 · async · after attach** (only `COR_PRF_ALLOWABLE_AFTER_ATTACH` flags then;
    /// immutable flags only in `initialize`).
    pub fn set_event_mask(&self, low: u32) -> Result<()> {
        check(vcall!(self, ICorProfilerInfo::SetEventMask(low)))
    }

    /// `SetEventMask2`: `COR_PRF_MONITOR_*` and `COR_PRF_HIGH_*` bits.
    /// **Info5 · async · after attach** (with the attach restrictions of `set_event_mask`).
    pub fn set_event_mask2(&self, low: u32, high: u32) -> Result<()> {
        check(vcall!(self, ICorProfilerInfo5::SetEventMask2(low, high)))
    }

    /// `GetEventMask2`: `(low, high)`. **Info5 · async · after attach**
    pub fn get_event_mask2(&self) -> Result<(u32, u32)> {
        let (mut low, mut high) = (0, 0);
        check(vcall!(
            self,
            ICorProfilerInfo5::GetEventMask2(&mut low, &mut high)
        ))?;
        Ok((low, high))
    }

    // ---- Runtime, threads, app domains ---------------------------------------------------

    /// `GetRuntimeInformation`. **Info3 · sync · after attach**
    pub fn get_runtime_information(&self) -> Result<RuntimeInfo> {
        let (mut id, mut kind, mut major, mut minor, mut build, mut qfe) = (0, 0, 0, 0, 0, 0);
        let version = read_string(|buf, cap, needed| {
            vcall_or_hr(self.iface::<sys::ICorProfilerInfo3>(), |p| {
                // SAFETY: see `vcall!` (R3, R5): `buf` holds `cap` units.
                unsafe {
                    ((*(*p).vtbl).GetRuntimeInformation)(
                        p, &mut id, &mut kind, &mut major, &mut minor, &mut build, &mut qfe, cap,
                        needed, buf,
                    )
                }
            })
        })?;
        Ok(RuntimeInfo {
            clr_instance_id: id,
            runtime_type: kind,
            major,
            minor,
            build,
            qfe,
            version,
        })
    }

    /// `GetThreadInfo`: the OS thread id (`gettid()` on Linux). **Info1 · sync · after attach**
    pub fn get_thread_info(&self, thread: ThreadId) -> Result<u32> {
        let mut os = 0;
        check(vcall!(
            self,
            ICorProfilerInfo::GetThreadInfo(thread.0, &mut os)
        ))?;
        Ok(os)
    }

    /// `GetAppDomainInfo`. **Info1 · sync (may trigger a GC) · after attach**
    pub fn get_app_domain_info(&self, app_domain: AppDomainId) -> Result<AppDomainInfo> {
        let mut pid = 0;
        let name = read_string(|buf, cap, needed| {
            vcall_or_hr(self.iface::<sys::ICorProfilerInfo>(), |p| {
                // SAFETY: see `vcall!` (R3, R5).
                unsafe {
                    ((*(*p).vtbl).GetAppDomainInfo)(p, app_domain.0, cap, needed, buf, &mut pid)
                }
            })
        })?;
        Ok(AppDomainInfo {
            name,
            process_id: pid,
        })
    }

    // ---- Modules and assemblies ------------------------------------------------------------

    /// `GetModuleInfo`: `CORPROF_E_DATAINCOMPLETE` until the module is loaded far enough
    /// (e.g. in `module_load_started`). **Info1 · async · after attach**
    pub fn get_module_info(&self, module: ModuleId) -> Result<ModuleInfo> {
        let (mut base, mut assembly) = (ptr::null(), 0);
        let name = read_string(|buf, cap, needed| {
            vcall_or_hr(self.iface::<sys::ICorProfilerInfo>(), |p| {
                // SAFETY: see `vcall!` (R3, R5).
                unsafe {
                    ((*(*p).vtbl).GetModuleInfo)(
                        p,
                        module.0,
                        &mut base,
                        cap,
                        needed,
                        buf,
                        &mut assembly,
                    )
                }
            })
        })?;
        Ok(ModuleInfo {
            base_address: base as usize,
            name,
            assembly: AssemblyId(assembly),
            flags: 0,
        })
    }

    /// `GetModuleInfo2`: as [`get_module_info`](Self::get_module_info), with the
    /// `COR_PRF_MODULE_FLAGS` (dynamic, collectible, flat layout, …). **Info3 · async ·
    /// after attach**
    pub fn get_module_info2(&self, module: ModuleId) -> Result<ModuleInfo> {
        let (mut base, mut assembly, mut flags) = (ptr::null(), 0, 0);
        let name = read_string(|buf, cap, needed| {
            vcall_or_hr(self.iface::<sys::ICorProfilerInfo3>(), |p| {
                // SAFETY: see `vcall!` (R3, R5).
                unsafe {
                    ((*(*p).vtbl).GetModuleInfo2)(
                        p,
                        module.0,
                        &mut base,
                        cap,
                        needed,
                        buf,
                        &mut assembly,
                        &mut flags,
                    )
                }
            })
        })?;
        Ok(ModuleInfo {
            base_address: base as usize,
            name,
            assembly: AssemblyId(assembly),
            flags,
        })
    }

    /// The module's metadata read from its loaded image, without the runtime's importer
    /// (see [`RawMetadata`] for why). Only for modules whose image stays mapped until the
    /// process exits: not dynamic (no image), not collectible (unloaded with their
    /// context), not resource-only; those are `Err(Unsupported)`, as are metadata forms
    /// `RawMetadata` leaves to the runtime. **Info3 · async · after attach**
    pub fn module_raw_metadata(
        &self,
        module: ModuleId,
    ) -> core::result::Result<RawMetadata<'static>, RawError> {
        let info = self
            .get_module_info2(module)
            .map_err(|_| RawError::Unsupported("GetModuleInfo2 failed"))?;
        let skip = sys::COR_PRF_MODULE_DYNAMIC
            | sys::COR_PRF_MODULE_COLLECTIBLE
            | sys::COR_PRF_MODULE_RESOURCE;
        if info.flags & skip != 0 || info.base_address == 0 {
            return Err(RawError::Unsupported(
                "dynamic, collectible or resource module",
            ));
        }
        let base = info.base_address;
        let read = |offset: usize, len: usize| -> Option<&'static [u8]> {
            let at = base.checked_add(offset)?;
            at.checked_add(len)?;
            // SAFETY: (R11) `base` is the load address the runtime gave for a module that
            // is neither dynamic nor collectible, so its image stays mapped, unchanged, until
            // the process exits; `pe::locate` asks only for ranges its headers say the
            // image holds, each checked against the previous header's bounds.
            Some(unsafe { core::slice::from_raw_parts(at as *const u8, len) })
        };
        let flat = info.flags & sys::COR_PRF_MODULE_FLAT_LAYOUT != 0;
        let (at, size) = crate::rawmd::pe::locate(&read, flat)?;
        let md = read(at, size).ok_or(RawError::Image("metadata range"))?;
        RawMetadata::parse(md)
    }

    /// `GetAssemblyInfo`. **Info1 · sync · after attach**
    pub fn get_assembly_info(&self, assembly: AssemblyId) -> Result<AssemblyInfo> {
        let (mut domain, mut module) = (0, 0);
        let name = read_string(|buf, cap, needed| {
            vcall_or_hr(self.iface::<sys::ICorProfilerInfo>(), |p| {
                // SAFETY: see `vcall!` (R3, R5).
                unsafe {
                    ((*(*p).vtbl).GetAssemblyInfo)(
                        p,
                        assembly.0,
                        cap,
                        needed,
                        buf,
                        &mut domain,
                        &mut module,
                    )
                }
            })
        })?;
        Ok(AssemblyInfo {
            name,
            app_domain: AppDomainId(domain),
            module: ModuleId(module),
        })
    }

    /// `GetModuleMetaData`: the module's `IMetaDataImport2` (or `IMetaDataImport`).
    /// `open_flags`: `ofRead` (0) normally. Modules without metadata (resource modules,
    /// where the runtime answers `S_FALSE`) give `Err(E_NOINTERFACE)`.
    /// **Info1 · sync · after attach**
    pub fn get_module_metadata(&self, module: ModuleId, open_flags: u32) -> Result<MetaDataImport> {
        let mut last = HResult::E_NOINTERFACE;
        for iid in [sys::IID_IMetaDataImport2, sys::IID_IMetaDataImport] {
            let mut out: *mut sys::IUnknown = ptr::null_mut();
            let hr = vcall!(
                self,
                ICorProfilerInfo::GetModuleMetaData(module.0, open_flags, &iid, &mut out)
            );
            if hr >= 0 && !out.is_null() {
                // SAFETY: the runtime returned an interface of type `iid` with one
                // reference for us (R3).
                return unsafe {
                    MetaDataImport::from_owned(out, iid == sys::IID_IMetaDataImport2)
                };
            }
            if hr < 0 && hr != sys::E_NOINTERFACE {
                return Err(HResult(hr));
            }
            if hr >= 0 {
                // S_FALSE: no metadata at all.
                return Err(HResult::E_NOINTERFACE);
            }
            last = HResult(hr);
        }
        Err(last)
    }

    /// `GetTokenAndMetaDataFromFunction`: the function's module metadata and its
    /// `mdMethodDef`. **Info1 · sync · after attach**
    pub fn get_token_and_metadata_from_function(
        &self,
        function: FunctionId,
    ) -> Result<(MetaDataImport, u32)> {
        let mut last = HResult::E_NOINTERFACE;
        for iid in [sys::IID_IMetaDataImport2, sys::IID_IMetaDataImport] {
            let mut out: *mut sys::IUnknown = ptr::null_mut();
            let mut token = 0;
            let hr = vcall!(
                self,
                ICorProfilerInfo::GetTokenAndMetaDataFromFunction(
                    function.0, &iid, &mut out, &mut token
                )
            );
            if hr >= 0 && !out.is_null() {
                // SAFETY: as in `get_module_metadata` (R3).
                let md =
                    unsafe { MetaDataImport::from_owned(out, iid == sys::IID_IMetaDataImport2) }?;
                return Ok((md, token));
            }
            if hr < 0 && hr != sys::E_NOINTERFACE {
                return Err(HResult(hr));
            }
            last = if hr < 0 {
                HResult(hr)
            } else {
                HResult::E_NOINTERFACE
            };
        }
        Err(last)
    }

    /// `EnumModules`: every loaded module (e.g. in `profiler_attach_complete`).
    /// **Info3 · sync · after attach**
    pub fn enum_modules(&self) -> Result<Vec<ModuleId>> {
        let mut e = ptr::null_mut();
        check(vcall!(self, ICorProfilerInfo3::EnumModules(&mut e)))?;
        // SAFETY: the runtime handed us a live enumerator with one reference (R3).
        Ok(unsafe { drain(e) }?.into_iter().map(ModuleId).collect())
    }

    // ---- ReJIT ------------------------------------------------------------------------------

    /// `GetModuleMetaData(ofRead | ofWrite, IID_IMetaDataEmit)`: the module's metadata
    /// emitter. Asking for write access makes the runtime convert the module's metadata to
    /// its read-write form for the rest of the process (see [`RawMetadata`]).
    /// **Info1 · sync · after attach**
    pub fn get_module_metadata_emit(&self, module: ModuleId) -> Result<MetaDataEmit> {
        let mut out: *mut sys::IUnknown = ptr::null_mut();
        let hr = vcall!(
            self,
            ICorProfilerInfo::GetModuleMetaData(
                module.0,
                sys::ofRead | sys::ofWrite,
                &sys::IID_IMetaDataEmit,
                &mut out
            )
        );
        check(hr)?;
        // SAFETY: the runtime returned an `IMetaDataEmit` with one reference for us (R3);
        // `from_owned` refuses null (S_FALSE: no metadata).
        unsafe { MetaDataEmit::from_owned(out) }
    }

    /// `GetILFunctionBody`: a copy of the method's IL body (header, code, exception
    /// sections) as the module holds it. **Info1 · sync · after attach**
    pub fn get_il_function_body(&self, module: ModuleId, method: u32) -> Result<Vec<u8>> {
        let (mut body, mut size): (*const u8, u32) = (ptr::null(), 0);
        check(vcall!(
            self,
            ICorProfilerInfo::GetILFunctionBody(module.0, method, &mut body, &mut size)
        ))?;
        if body.is_null() {
            return Err(HResult::E_POINTER);
        }
        // SAFETY: (R4) the runtime gave a pointer to `size` bytes of the module's body,
        // valid while the module is loaded, which it is during this call; copied at once.
        Ok(unsafe { core::slice::from_raw_parts(body, size as usize) }.to_vec())
    }

    /// `GetILFunctionBodyAllocator` + `IMethodMalloc::Alloc` + `SetILFunctionBody`: the
    /// method's new body (header, code, exception sections), used from its next JIT
    /// compilation on (e.g. inside `jit_compilation_started`). The body is copied into
    /// memory the module's allocator gives (the runtime keeps it for the module's
    /// lifetime; it is never freed). **Info1 · sync · startup only**
    pub fn set_il_function_body(&self, module: ModuleId, method: u32, body: &[u8]) -> Result<()> {
        let len = u32::try_from(body.len()).map_err(|_| HResult::E_INVALIDARG)?;
        let mut malloc: *mut sys::IMethodMalloc = ptr::null_mut();
        check(vcall!(
            self,
            ICorProfilerInfo::GetILFunctionBodyAllocator(module.0, &mut malloc)
        ))?;
        if malloc.is_null() {
            return Err(HResult::E_POINTER);
        }
        // SAFETY: `malloc` is the live allocator the runtime just handed us with one
        // reference (R3); `Alloc` takes a size and returns a block of at least that many
        // bytes or null.
        let block = unsafe { ((*(*malloc).vtbl).Alloc)(malloc, len) } as *mut u8;
        // SAFETY: we own the one reference the runtime gave (R3); released once.
        unsafe { ((*(*malloc).vtbl).base.Release)(malloc.cast()) };
        if block.is_null() {
            return Err(HResult::E_OUTOFMEMORY);
        }
        // SAFETY: `block` is `len` fresh bytes the allocator gave us, aliased by nothing
        // yet (R5); `body` is a live slice of `len` bytes.
        unsafe { ptr::copy_nonoverlapping(body.as_ptr(), block, body.len()) };
        check(vcall!(
            self,
            ICorProfilerInfo::SetILFunctionBody(module.0, method, block)
        ))
    }

    /// `RequestReJITWithInliners`: ReJIT these methods (and, with
    /// `COR_PRF_REJIT_BLOCK_INLINING`, the methods they were inlined into, and keep them
    /// from being inlined again); the runtime asks for each body through
    /// [`get_rejit_parameters`](crate::ProfilerCallback::get_rejit_parameters).
    /// Needs `COR_PRF_ENABLE_REJIT`. **Info10 · after attach**
    pub fn request_rejit_with_inliners(
        &self,
        flags: u32,
        methods: &[(ModuleId, u32)],
    ) -> Result<()> {
        let len = u32::try_from(methods.len()).map_err(|_| HResult::E_INVALIDARG)?;
        let mut modules: Vec<usize> = methods.iter().map(|m| m.0.0).collect();
        let mut tokens: Vec<u32> = methods.iter().map(|m| m.1).collect();
        check(vcall!(
            self,
            ICorProfilerInfo10::RequestReJITWithInliners(
                flags,
                len,
                modules.as_mut_ptr(),
                tokens.as_mut_ptr()
            )
        ))
    }

    /// `RequestRevert`: back to the original code of these methods; one status each.
    /// **Info4 · after attach**
    pub fn request_revert(&self, methods: &[(ModuleId, u32)]) -> Result<Vec<HResult>> {
        let len = u32::try_from(methods.len()).map_err(|_| HResult::E_INVALIDARG)?;
        let mut modules: Vec<usize> = methods.iter().map(|m| m.0.0).collect();
        let mut tokens: Vec<u32> = methods.iter().map(|m| m.1).collect();
        let mut status = vec![0i32; methods.len()];
        check(vcall!(
            self,
            ICorProfilerInfo4::RequestRevert(
                len,
                modules.as_mut_ptr(),
                tokens.as_mut_ptr(),
                status.as_mut_ptr()
            )
        ))?;
        Ok(status.into_iter().map(HResult).collect())
    }

    // ---- Functions ----------------------------------------------------------------------------

    /// `GetFunctionInfo2`: with the exact class and the method's generic arguments.
    /// `frame_info` is a `COR_PRF_FRAME_INFO` from the current callback or hook, or 0.
    /// **Info2 · async · after attach**
    pub fn get_function_info2(
        &self,
        function: FunctionId,
        frame_info: usize,
    ) -> Result<FunctionInfo2> {
        let (mut class, mut module, mut token) = (0, 0, 0);
        let args = read_array(|cap, buf: *mut sys::ClassID, needed| {
            vcall_or_hr(self.iface::<sys::ICorProfilerInfo2>(), |p| {
                // SAFETY: see `vcall!` (R3, R5): `buf` is null with `cap` 0 or holds `cap`.
                unsafe {
                    ((*(*p).vtbl).GetFunctionInfo2)(
                        p,
                        function.0,
                        frame_info,
                        &mut class,
                        &mut module,
                        &mut token,
                        cap,
                        needed,
                        buf,
                    )
                }
            })
        })?;
        Ok(FunctionInfo2 {
            class: ClassId(class),
            module: ModuleId(module),
            token,
            type_args: args.into_iter().map(ClassId).collect(),
        })
    }

    /// `GetFunctionFromToken`: the function a MethodDef token of `module` names, if the
    /// runtime has created it (`Module::LookupMethodDef`, a table read that takes no lock
    /// and loads nothing: a method whose type never loaded gives an error, or function 0).
    /// **Info1 · sync · after attach**
    pub fn get_function_from_token(&self, module: ModuleId, token: u32) -> Result<FunctionId> {
        let mut id = 0;
        check(vcall!(
            self,
            ICorProfilerInfo::GetFunctionFromToken(module.0, token, &mut id)
        ))?;
        Ok(FunctionId(id))
    }

    /// `GetFunctionFromIP`: the managed function containing `ip` (error for native code).
    /// Not async-signal-safe. **Info1 · async · after attach**
    pub fn get_function_from_ip(&self, ip: usize) -> Result<FunctionId> {
        let mut id = 0;
        check(vcall!(
            self,
            ICorProfilerInfo::GetFunctionFromIP(ip as sys::LPCBYTE, &mut id)
        ))?;
        Ok(FunctionId(id))
    }

    /// `GetFunctionFromIP3`: the function containing `ip`, dynamic methods (LCG, IL stubs)
    /// included, which `GetFunctionFromIP` refuses; may take the runtime's code-version
    /// lock. Not async-signal-safe. **Info8 · async · after attach**
    pub fn get_function_from_ip3(&self, ip: usize) -> Result<FunctionId> {
        let (mut id, mut rejit) = (0, 0);
        check(vcall!(
            self,
            ICorProfilerInfo8::GetFunctionFromIP3(ip as sys::LPCBYTE, &mut id, &mut rejit)
        ))?;
        Ok(FunctionId(id))
    }

    /// `GetDynamicFunctionInfo`: a dynamic method's module and name (`lambda_method3`,
    /// `IL_STUB_PInvoke`); its signature is not read. **Info8 · async · after attach**
    pub fn get_dynamic_function_info(&self, function: FunctionId) -> Result<(ModuleId, String)> {
        let mut module = 0;
        let name = read_string(|buf, cap, needed| {
            vcall_or_hr(self.iface::<sys::ICorProfilerInfo8>(), |p| {
                let (mut sig, mut sig_len) = (ptr::null(), 0);
                // SAFETY: see `vcall!` (R3, R5): `buf` holds `cap` units; the signature
                // pointer and length are live locals, not read after the call.
                unsafe {
                    ((*(*p).vtbl).GetDynamicFunctionInfo)(
                        p,
                        function.0,
                        &mut module,
                        &mut sig,
                        &mut sig_len,
                        cap,
                        needed,
                        buf,
                    )
                }
            })
        })?;
        Ok((ModuleId(module), name))
    }

    /// `GetNativeCodeStartAddresses`: where each native code version of a function
    /// starts (every tier, OSR versions included). **Info9 · sync · after attach**
    pub fn get_native_code_start_addresses(
        &self,
        function: FunctionId,
        rejit: ReJitId,
    ) -> Result<Vec<usize>> {
        let mut starts = [0usize; 16];
        let mut n = 0u32;
        check(vcall!(
            self,
            ICorProfilerInfo9::GetNativeCodeStartAddresses(
                function.0,
                rejit.0,
                starts.len() as u32,
                &mut n,
                starts.as_mut_ptr()
            )
        ))?;
        Ok(starts[..(n as usize).min(starts.len())].to_vec())
    }

    /// `GetCodeInfo4`: the code ranges of the native code version that starts at
    /// `start` (from [`get_native_code_start_addresses`](Self::get_native_code_start_addresses)).
    /// **Info9 · sync · after attach**
    pub fn get_code_info4(&self, start: usize) -> Result<Vec<CodeRange>> {
        let mut infos = [sys::COR_PRF_CODE_INFO::default(); 4];
        let mut n = 0;
        check(vcall!(
            self,
            ICorProfilerInfo9::GetCodeInfo4(start, infos.len() as u32, &mut n, infos.as_mut_ptr())
        ))?;
        Ok(code_ranges(&infos, n))
    }

    /// `GetILToNativeMapping3`: the IL → native map of the native code version that starts
    /// at `start` (from [`get_native_code_start_addresses`](Self::get_native_code_start_addresses)),
    /// in the runtime's order. `il_offset` may be negative: −1 no mapping, −2 prolog,
    /// −3 epilog. **Info9 · sync · after attach**
    pub fn get_il_to_native_mapping3(&self, start: usize) -> Result<Vec<IlToNative>> {
        let map = read_array(|cap, buf: *mut sys::COR_DEBUG_IL_TO_NATIVE_MAP, needed| {
            vcall_or_hr(self.iface::<sys::ICorProfilerInfo9>(), |p| {
                // SAFETY: see `vcall!` (R3, R5): `buf` is null with `cap` 0 or holds `cap`.
                unsafe { ((*(*p).vtbl).GetILToNativeMapping3)(p, start, cap, needed, buf) }
            })
        })?;
        Ok(map
            .into_iter()
            .map(|m| IlToNative {
                il_offset: m.il_offset as i32,
                native_start: m.native_start_offset,
                native_end: m.native_end_offset,
            })
            .collect())
    }

    /// `EnumJITedFunctions`: functions compiled so far. **Info3 · sync · after attach**
    pub fn enum_jited_functions(&self) -> Result<Vec<FunctionId>> {
        let mut e = ptr::null_mut();
        check(vcall!(self, ICorProfilerInfo3::EnumJITedFunctions(&mut e)))?;
        // SAFETY: a live enumerator with one reference for us (R3).
        Ok(unsafe { drain(e) }?
            .into_iter()
            .map(|f| FunctionId(f.function_id))
            .collect())
    }

    // ---- Classes and objects ---------------------------------------------------------------

    /// `GetClassIDInfo2`: `CORPROF_E_CLASSID_IS_ARRAY` for arrays (use `is_array_class`).
    /// **Info2 · async · after attach**
    pub fn get_class_id_info2(&self, class: ClassId) -> Result<ClassInfo> {
        let (mut module, mut token, mut parent) = (0, 0, 0);
        let args = read_array(|cap, buf: *mut sys::ClassID, needed| {
            vcall_or_hr(self.iface::<sys::ICorProfilerInfo2>(), |p| {
                // SAFETY: see `vcall!` (R3, R5).
                unsafe {
                    ((*(*p).vtbl).GetClassIDInfo2)(
                        p,
                        class.0,
                        &mut module,
                        &mut token,
                        &mut parent,
                        cap,
                        needed,
                        buf,
                    )
                }
            })
        })?;
        Ok(ClassInfo {
            module: ModuleId(module),
            token,
            parent: ClassId(parent),
            type_args: args.into_iter().map(ClassId).collect(),
        })
    }

    /// `GetClassFromToken`: the ClassID of a non-generic TypeDef of `module` (loaded).
    /// **Info1 · async · after attach**
    pub fn get_class_from_token(&self, module: ModuleId, type_def: u32) -> Result<ClassId> {
        let mut class = 0;
        check(vcall!(
            self,
            ICorProfilerInfo::GetClassFromToken(module.0, type_def, &mut class)
        ))?;
        Ok(ClassId(class))
    }

    /// `GetClassFromTokenAndTypeArgs`: the ClassID of an instantiation of a generic
    /// TypeDef of `module`. **Info2 · sync · after attach**
    pub fn get_class_from_token_and_type_args(
        &self,
        module: ModuleId,
        type_def: u32,
        type_args: &[ClassId],
    ) -> Result<ClassId> {
        let mut args: Vec<usize> = type_args.iter().map(|c| c.0).collect();
        let mut class = 0;
        check(vcall!(
            self,
            ICorProfilerInfo2::GetClassFromTokenAndTypeArgs(
                module.0,
                type_def,
                args.len() as u32,
                args.as_mut_ptr(),
                &mut class
            )
        ))?;
        Ok(ClassId(class))
    }

    /// `GetClassFromObject`. **Info1 · sync · object inspection · after attach**
    pub fn get_class_from_object(&self, object: ObjectId) -> Result<ClassId> {
        let mut class = 0;
        check(vcall!(
            self,
            ICorProfilerInfo::GetClassFromObject(object.0, &mut class)
        ))?;
        Ok(ClassId(class))
    }

    /// `GetObjectSize2`. **Info4 · sync · object inspection · after attach**
    pub fn get_object_size2(&self, object: ObjectId) -> Result<usize> {
        let mut size = 0;
        check(vcall!(
            self,
            ICorProfilerInfo4::GetObjectSize2(object.0, &mut size)
        ))?;
        Ok(size)
    }

    /// `IsArrayClass`: `None` if `class` is not an array type.
    /// **Info1 · async · after attach**
    pub fn is_array_class(&self, class: ClassId) -> Result<Option<ArrayClass>> {
        let (mut elem, mut elem_class, mut rank) = (0, 0, 0);
        let hr = vcall!(
            self,
            ICorProfilerInfo::IsArrayClass(class.0, &mut elem, &mut elem_class, &mut rank)
        );
        check(hr)?;
        Ok((hr == sys::S_OK).then_some(ArrayClass {
            element_type: elem,
            element_class: ClassId(elem_class),
            rank,
        }))
    }

    /// `GetArrayObjectInfo`: `rank` from [`is_array_class`](Self::is_array_class).
    /// **Info2 · sync · object inspection · after attach**
    pub fn get_array_object_info(&self, object: ObjectId, rank: u32) -> Result<ArrayObject> {
        let n = rank.max(1) as usize;
        let mut sizes = vec![0u32; n];
        let mut lows = vec![0i32; n];
        let mut data = ptr::null_mut();
        check(vcall!(
            self,
            ICorProfilerInfo2::GetArrayObjectInfo(
                object.0,
                n as u32,
                sizes.as_mut_ptr(),
                lows.as_mut_ptr(),
                &mut data
            )
        ))?;
        let dims = sizes.into_iter().zip(lows).take(rank as usize).collect();
        Ok(ArrayObject {
            dimensions: dims,
            data: data as usize,
        })
    }

    /// `GetStringLayout2`: `(length offset, buffer offset)` from the object start; the
    /// length is an `i32`, the buffer UTF-16. **Info3 · sync · after attach**
    pub fn get_string_layout2(&self) -> Result<(u32, u32)> {
        let (mut len, mut buf) = (0, 0);
        check(vcall!(
            self,
            ICorProfilerInfo3::GetStringLayout2(&mut len, &mut buf)
        ))?;
        Ok((len, buf))
    }

    /// `GetClassLayout`: `(fields, size)`. Only fields the class itself declares, as
    /// `(mdFieldDef, offset from the object start)`; `size` is the base instance size of a
    /// reference type, the unboxed size of a value type. Not for arrays or strings.
    /// **Info2 · async · after attach**
    pub fn get_class_layout(&self, class: ClassId) -> Result<(Vec<(u32, u32)>, u32)> {
        let mut size = 0;
        let fields = read_array(|cap, buf: *mut sys::COR_FIELD_OFFSET, needed| {
            vcall_or_hr(self.iface::<sys::ICorProfilerInfo2>(), |p| {
                // SAFETY: see `vcall!` (R3, R5).
                unsafe { ((*(*p).vtbl).GetClassLayout)(p, class.0, buf, cap, needed, &mut size) }
            })
        })?;
        Ok((
            fields
                .into_iter()
                .map(|f| (f.rid_of_field, f.ul_offset))
                .collect(),
            size,
        ))
    }

    /// `GetBoxClassLayout`: offset of the value inside a boxed object.
    /// **Info2 · sync · after attach**
    pub fn get_box_class_layout(&self, class: ClassId) -> Result<u32> {
        let mut offset = 0;
        check(vcall!(
            self,
            ICorProfilerInfo2::GetBoxClassLayout(class.0, &mut offset)
        ))?;
        Ok(offset)
    }

    // ---- Statics -------------------------------------------------------------------------------

    /// `GetStaticFieldInfo`: `COR_PRF_STATIC_TYPE` bits (`COR_PRF_FIELD_APP_DOMAIN_STATIC`, …).
    /// **Info2 · sync · after attach**
    pub fn get_static_field_info(&self, class: ClassId, field: u32) -> Result<u32> {
        let mut kind = 0;
        check(vcall!(
            self,
            ICorProfilerInfo2::GetStaticFieldInfo(class.0, field, &mut kind)
        ))?;
        Ok(kind)
    }

    /// `GetAppDomainStaticAddress`: `CORPROF_E_DATAINCOMPLETE` before the class
    /// constructor ran. **Info2 · sync · after attach**
    pub fn get_app_domain_static_address(
        &self,
        class: ClassId,
        field: u32,
        app_domain: AppDomainId,
    ) -> Result<usize> {
        let mut addr = ptr::null_mut();
        check(vcall!(
            self,
            ICorProfilerInfo2::GetAppDomainStaticAddress(class.0, field, app_domain.0, &mut addr)
        ))?;
        Ok(addr as usize)
    }

    /// `GetThreadStaticAddress2` (null thread = current). **Info3 · sync · after attach**
    pub fn get_thread_static_address2(
        &self,
        class: ClassId,
        field: u32,
        app_domain: AppDomainId,
        thread: ThreadId,
    ) -> Result<usize> {
        let mut addr = ptr::null_mut();
        check(vcall!(
            self,
            ICorProfilerInfo3::GetThreadStaticAddress2(
                class.0,
                field,
                app_domain.0,
                thread.0,
                &mut addr
            )
        ))?;
        Ok(addr as usize)
    }

    /// `GetRVAStaticAddress`: needs a managed thread. **Info2 · sync · after attach**
    pub fn get_rva_static_address(&self, class: ClassId, field: u32) -> Result<usize> {
        let mut addr = ptr::null_mut();
        check(vcall!(
            self,
            ICorProfilerInfo2::GetRVAStaticAddress(class.0, field, &mut addr)
        ))?;
        Ok(addr as usize)
    }

    // ---- GC ---------------------------------------------------------------------------------------

    /// `GetGenerationBounds`: the heap's ranges as of the last GC (`E_FAIL` before the first
    /// GC or without GC monitoring). **Info2 · sync · after attach**
    pub fn get_generation_bounds(&self) -> Result<Vec<GenerationRange>> {
        let mut small = [sys::COR_PRF_GC_GENERATION_RANGE::default(); 16];
        let mut n = 0u32;
        check(vcall!(
            self,
            ICorProfilerInfo2::GetGenerationBounds(small.len() as u32, &mut n, small.as_mut_ptr())
        ))?;
        let ranges = if n as usize <= small.len() {
            small[..n as usize].to_vec()
        } else {
            let mut big = vec![sys::COR_PRF_GC_GENERATION_RANGE::default(); n as usize];
            let mut m = 0u32;
            check(vcall!(
                self,
                ICorProfilerInfo2::GetGenerationBounds(n, &mut m, big.as_mut_ptr())
            ))?;
            big.truncate((m as usize).min(n as usize));
            big
        };
        Ok(ranges.into_iter().map(generation_range).collect())
    }

    /// `GetObjectGeneration`. **Info2 · sync · after attach**
    pub fn get_object_generation(&self, object: ObjectId) -> Result<GenerationRange> {
        let mut r = sys::COR_PRF_GC_GENERATION_RANGE::default();
        check(vcall!(
            self,
            ICorProfilerInfo2::GetObjectGeneration(object.0, &mut r)
        ))?;
        Ok(generation_range(r))
    }

    /// `EnumerateNonGCObjects`: every object of the non-GC (frozen) heap — string literals,
    /// `RuntimeType` objects, other objects the runtime preallocates and never collects or
    /// moves. The runtime copies the ids of all its frozen segments under the frozen heap's
    /// lock when it makes the enumerator (`ProfilerObjectEnum::Init`), so the list is that
    /// moment's; it is read with `Next` in batches and the enumerator released. The list
    /// needs no suspension, but reading the objects (class, size) is object inspection:
    /// the runtime's own test calls it from `garbage_collection_finished`.
    /// **Info14 · sync · after attach**
    pub fn enumerate_non_gc_objects(&self) -> Result<Vec<ObjectId>> {
        let mut e = ptr::null_mut();
        check(vcall!(
            self,
            ICorProfilerInfo14::EnumerateNonGCObjects(&mut e)
        ))?;
        // SAFETY: a live enumerator with one reference for us (R3).
        Ok(unsafe { drain(e) }?.into_iter().map(ObjectId).collect())
    }

    /// `EnumerateObjectReferences`: calls `f(slot, target)` for each non-null reference
    /// field of `object`, `slot` being the field's address inside the object; return
    /// `false` to stop. `Ok(false)` when the object's type has no reference fields
    /// (`S_FALSE`). The runtime reads the fields as they are now (`DiagWalkObject2`), so
    /// the object must not move meanwhile: call it during a GC or for a non-GC object
    /// (R7). A panic in `f` stops the walk and gives `Err(E_FAIL)`.
    /// **Info10 · sync · after attach**
    pub fn enumerate_object_references(
        &self,
        object: ObjectId,
        f: &mut dyn FnMut(usize, ObjectId) -> bool,
    ) -> Result<bool> {
        struct Walk<'a> {
            f: &'a mut dyn FnMut(usize, ObjectId) -> bool,
            stopped: bool,
            panicked: bool,
        }

        unsafe extern "system" fn each(
            _object: sys::ObjectID,
            slot: *mut sys::ObjectID,
            client: *mut c_void,
        ) -> sys::BOOL {
            // SAFETY: `client` is the `Walk` on the stack of `enumerate_object_references`,
            // which is still running: the runtime calls back synchronously, on the calling
            // thread, before EnumerateObjectReferences returns (R4, R5).
            let walk = unsafe { &mut *client.cast::<Walk<'_>>() };
            if walk.stopped || walk.panicked {
                return sys::FALSE;
            }
            if slot.is_null() {
                return sys::TRUE;
            }
            // SAFETY: `slot` is a pointer-sized field of the object being walked, valid
            // and unchanged during this call (R4).
            let target = unsafe { slot.read() };
            if target == 0 {
                return sys::TRUE;
            }
            match catch("EnumerateObjectReferences callback", || {
                Ok((walk.f)(slot as usize, ObjectId(target)))
            }) {
                Ok(true) => sys::TRUE,
                Ok(false) => {
                    walk.stopped = true;
                    sys::FALSE
                }
                Err(_) => {
                    walk.panicked = true;
                    sys::FALSE
                }
            }
        }

        let mut walk = Walk {
            f,
            stopped: false,
            panicked: false,
        };
        let client = (&raw mut walk).cast::<c_void>();
        let hr = vcall!(
            self,
            ICorProfilerInfo10::EnumerateObjectReferences(object.0, Some(each), client)
        );
        if walk.panicked {
            return Err(HResult::E_FAIL);
        }
        check(hr)?;
        Ok(hr == sys::S_OK)
    }

    /// `ForceGC`: from a thread the profiler created, never from a callback.
    /// **Info1 · after attach**
    pub fn force_gc(&self) -> Result<()> {
        check(vcall!(self, ICorProfilerInfo::ForceGC()))
    }

    // ---- Threads, stacks, suspension -------------------------------------------------------

    /// `EnumThreads`: every managed thread. **Info4 · sync · after attach**
    pub fn enum_threads(&self) -> Result<Vec<ThreadId>> {
        let mut e = ptr::null_mut();
        check(vcall!(self, ICorProfilerInfo4::EnumThreads(&mut e)))?;
        // SAFETY: a live enumerator with one reference for us (R3).
        Ok(unsafe { drain(e) }?.into_iter().map(ThreadId).collect())
    }

    /// `InitializeCurrentThread`: call on a profiler thread before it suspends anyone.
    /// **Info4 · sync · after attach**
    pub fn initialize_current_thread(&self) -> Result<()> {
        check(vcall!(self, ICorProfilerInfo4::InitializeCurrentThread()))
    }

    /// `DoStackSnapshot`: calls `f(function, ip, context)` for each managed frame, leaf
    /// first, and once per run of native frames (`function` null); return `false` to stop
    /// (the walk then still returns `Ok`). `thread` `None` walks the current thread; on
    /// Linux another thread can be walked only while the runtime is suspended by
    /// [`suspend_runtime`](Self::suspend_runtime) (else `E_NOTIMPL`). `flags`:
    /// `COR_PRF_SNAPSHOT_*`; `context`: a seed `CONTEXT` (with
    /// `COR_PRF_SNAPSHOT_REGISTER_CONTEXT`) that the runtime trusts (R7). A panic in `f`
    /// ends the walk and gives `Err(E_FAIL)`. Needs `COR_PRF_ENABLE_STACK_SNAPSHOT`.
    /// **Info2 · async · after attach**
    pub fn do_stack_snapshot(
        &self,
        thread: Option<ThreadId>,
        flags: u32,
        context: Option<&mut [u8]>,
        f: &mut dyn FnMut(FunctionId, usize, &[u8]) -> bool,
    ) -> Result<()> {
        struct Walk<'a> {
            f: &'a mut dyn FnMut(FunctionId, usize, &[u8]) -> bool,
            stopped: bool,
            panicked: bool,
        }

        unsafe extern "system" fn frame(
            function: sys::FunctionID,
            ip: sys::UINT_PTR,
            _frame_info: sys::COR_PRF_FRAME_INFO,
            context_size: u32,
            context: *mut u8,
            client: *mut c_void,
        ) -> sys::HRESULT {
            // SAFETY: `client` is the `Walk` on the stack of `do_stack_snapshot`, which is
            // still running: the runtime calls back synchronously during DoStackSnapshot
            // on the calling thread (R4, R5).
            let walk = unsafe { &mut *client.cast::<Walk<'_>>() };
            if walk.stopped || walk.panicked {
                return sys::S_FALSE;
            }
            // SAFETY: `context_size` bytes of register context valid during this call, or
            // null (R4).
            let context = unsafe { borrowed(context.cast_const(), context_size as usize) };
            match catch("DoStackSnapshot callback", || {
                Ok((walk.f)(FunctionId(function), ip, context))
            }) {
                Ok(true) => sys::S_OK,
                Ok(false) => {
                    walk.stopped = true;
                    sys::S_FALSE
                }
                Err(_) => {
                    walk.panicked = true;
                    sys::S_FALSE
                }
            }
        }

        let mut walk = Walk {
            f,
            stopped: false,
            panicked: false,
        };
        let (ctx, ctx_len) = match context {
            Some(c) => (
                c.as_mut_ptr(),
                u32::try_from(c.len()).map_err(|_| HResult::E_INVALIDARG)?,
            ),
            None => (ptr::null_mut(), 0),
        };
        let client = (&raw mut walk).cast::<c_void>();
        let hr = vcall!(
            self,
            ICorProfilerInfo2::DoStackSnapshot(
                thread.map_or(0, |t| t.0),
                Some(frame),
                flags,
                client,
                ctx,
                ctx_len,
            )
        );
        if walk.panicked {
            return Err(HResult::E_FAIL);
        }
        if walk.stopped && (hr == sys::CORPROF_E_STACKSNAPSHOT_ABORTED || hr >= 0) {
            return Ok(());
        }
        check(hr)
    }

    /// `SuspendRuntime`: stops every managed thread at a safe point; call from a thread the
    /// profiler created, then `resume_runtime`. **Info10 · sync (may trigger a GC) ·
    /// after attach**
    pub fn suspend_runtime(&self) -> Result<()> {
        check(vcall!(self, ICorProfilerInfo10::SuspendRuntime()))
    }

    /// `ResumeRuntime`: `CORPROF_E_UNSUPPORTED_CALL_SEQUENCE` unless the profiler suspended
    /// the runtime. **Info10 · sync · after attach**
    pub fn resume_runtime(&self) -> Result<()> {
        check(vcall!(self, ICorProfilerInfo10::ResumeRuntime()))
    }

    /// `RequestProfilerDetach`: asks the runtime to detach once no thread is inside the
    /// profiler (`expected_ms` 0 = 2500 ms). Refused after immutable flags, ELT hooks or IL
    /// rewriting. Stop your own threads first. **Info3 · async · after attach**
    pub fn request_profiler_detach(&self, expected_ms: u32) -> Result<()> {
        check(vcall!(
            self,
            ICorProfilerInfo3::RequestProfilerDetach(expected_ms)
        ))
    }

    // ---- In-process EventPipe sessions, GC handles ------------------------------------------

    /// `EventPipeStartSession`: a session whose events the runtime delivers to
    /// [`event_pipe_event_delivered`](crate::ProfilerCallback::event_pipe_event_delivered),
    /// synchronously on the thread that writes each event. `providers` are
    /// `(name, keywords, level)`. Returns the `EVENTPIPE_SESSION` handle.
    /// **Info12 · after attach**
    pub fn event_pipe_start_session(
        &self,
        providers: &[(&str, u64, u32)],
        request_rundown: bool,
    ) -> Result<u64> {
        let names: Vec<Vec<u16>> = providers.iter().map(|p| to_utf16z(p.0)).collect();
        let mut configs: Vec<sys::COR_PRF_EVENTPIPE_PROVIDER_CONFIG> = providers
            .iter()
            .zip(&names)
            .map(|(p, n)| sys::COR_PRF_EVENTPIPE_PROVIDER_CONFIG {
                provider_name: n.as_ptr(),
                keywords: p.1,
                logging_level: p.2,
                filter_data: ptr::null(),
            })
            .collect();
        let mut session = 0u64;
        check(vcall!(
            self,
            ICorProfilerInfo12::EventPipeStartSession(
                configs.len() as u32,
                configs.as_mut_ptr(),
                i32::from(request_rundown),
                &mut session
            )
        ))?;
        Ok(session)
    }

    /// `EventPipeStopSession`. **Info12**
    pub fn event_pipe_stop_session(&self, session: u64) -> Result<()> {
        check(vcall!(
            self,
            ICorProfilerInfo12::EventPipeStopSession(session)
        ))
    }

    /// `CreateHandle`: a GC handle of `kind` (`COR_PRF_HANDLE_TYPE_*`) to `object`,
    /// returned as its address (never 0 on success). The object must be a live object
    /// the runtime handed out (R7). **Info13 · after attach**
    pub fn create_handle(&self, object: ObjectId, kind: u32) -> Result<usize> {
        let mut handle: sys::ObjectHandleID = ptr::null_mut();
        check(vcall!(
            self,
            ICorProfilerInfo13::CreateHandle(object.0, kind, &mut handle)
        ))?;
        Ok(handle as usize)
    }

    /// `DestroyHandle` of a handle [`create_handle`](Self::create_handle) returned (R7).
    /// **Info13**
    pub fn destroy_handle(&self, handle: usize) -> Result<()> {
        check(vcall!(
            self,
            ICorProfilerInfo13::DestroyHandle(handle as sys::ObjectHandleID)
        ))
    }

    /// `GetObjectIDFromHandle`: the object a handle refers to; `ObjectId(0)` once a weak
    /// handle's object was collected. **Info13**
    pub fn get_object_id_from_handle(&self, handle: usize) -> Result<ObjectId> {
        let mut object = 0;
        check(vcall!(
            self,
            ICorProfilerInfo13::GetObjectIDFromHandle(handle as sys::ObjectHandleID, &mut object)
        ))?;
        Ok(ObjectId(object))
    }

    // ---- ELT hooks ------------------------------------------------------------------------------

    /// `SetEnterLeaveFunctionHooks3`: the fast-path hooks. Needs
    /// `COR_PRF_MONITOR_ENTERLEAVE`. **Info3 · init only · startup only**
    ///
    /// # Safety
    /// The JIT calls these with its own convention, not the C ABI (Linux x64: the id in R14
    /// on enter, argument and return registers live and to be preserved). Each hook must be
    /// a trampoline written for that convention (see `docs/safety.md` R9).
    pub unsafe fn set_enter_leave_function_hooks3(
        &self,
        enter: Option<sys::FunctionEnter3>,
        leave: Option<sys::FunctionLeave3>,
        tailcall: Option<sys::FunctionTailcall3>,
    ) -> Result<()> {
        check(vcall!(
            self,
            ICorProfilerInfo3::SetEnterLeaveFunctionHooks3(enter, leave, tailcall)
        ))
    }

    /// `SetEnterLeaveFunctionHooks3WithInfo`: the slow-path hooks (plain C ABI). Needs
    /// `COR_PRF_MONITOR_ENTERLEAVE` and one of `COR_PRF_ENABLE_FUNCTION_ARGS`,
    /// `…_RETVAL`, `…_FRAME_INFO`. **Info3 · init only · startup only**
    ///
    /// # Safety
    /// Each hook must be sound to call with any `FunctionIDOrClientID` and the runtime's
    /// `COR_PRF_ELT_INFO`, on any managed thread, and must not unwind (R1, R9).
    pub unsafe fn set_enter_leave_function_hooks3_with_info(
        &self,
        enter: Option<sys::FunctionEnter3WithInfo>,
        leave: Option<sys::FunctionLeave3WithInfo>,
        tailcall: Option<sys::FunctionTailcall3WithInfo>,
    ) -> Result<()> {
        check(vcall!(
            self,
            ICorProfilerInfo3::SetEnterLeaveFunctionHooks3WithInfo(enter, leave, tailcall)
        ))
    }

    /// `SetFunctionIDMapper2`: the runtime calls `mapper(function, client_data, &mut hook)`
    /// once per function before JIT; its result reaches the ELT hooks instead of the
    /// FunctionID (0 = keep the FunctionID). **Info3 · async · startup only**
    ///
    /// # Safety
    /// `mapper` must be sound to call from any thread with any FunctionID, `client_data`
    /// and a valid `BOOL*`, and must not unwind (R1, R9).
    pub unsafe fn set_function_id_mapper2(
        &self,
        mapper: Option<sys::FunctionIDMapper2>,
        client_data: *mut c_void,
    ) -> Result<()> {
        check(vcall!(
            self,
            ICorProfilerInfo3::SetFunctionIDMapper2(mapper, client_data)
        ))
    }

    /// `GetFunctionEnter3Info`: arguments of the function being entered, from inside a
    /// slow-path enter hook (`elt_info` is the hook's second argument; `function` the real
    /// FunctionID). **Info3 · sync · startup only**
    pub fn get_function_enter3_info(
        &self,
        function: FunctionId,
        elt_info: usize,
    ) -> Result<Enter3Info> {
        const HEADER: usize = offset_of!(sys::COR_PRF_FUNCTION_ARGUMENT_INFO, ranges);
        const RANGE: usize = size_of::<sys::COR_PRF_FUNCTION_ARGUMENT_RANGE>();
        // u64 words keep the buffer aligned for the struct (its alignment is at most 8).
        const INLINE_WORDS: usize = (HEADER + 16 * RANGE).div_ceil(8);
        let mut stack = [0u64; INLINE_WORDS];
        let mut heap: Vec<u64> = Vec::new();
        let mut frame = 0;
        for _ in 0..8 {
            let words: &mut [u64] = if heap.is_empty() {
                &mut stack
            } else {
                &mut heap
            };
            let capacity = words.len() * 8;
            let mut bytes = capacity as u32;
            let info = words
                .as_mut_ptr()
                .cast::<sys::COR_PRF_FUNCTION_ARGUMENT_INFO>();
            let hr = vcall!(
                self,
                ICorProfilerInfo3::GetFunctionEnter3Info(
                    function.0, elt_info, &mut frame, &mut bytes, info
                )
            );
            if hr == sys::ERROR_INSUFFICIENT_BUFFER {
                // The size the runtime asks for, or twice ours when it names none larger
                // (bounded: 64 KiB is 4,000 ranges).
                let want = (bytes as usize).max(capacity * 2);
                if want > 64 << 10 {
                    break;
                }
                heap = vec![0u64; want.div_ceil(8)];
                continue;
            }
            check(hr)?;
            let buf = words.as_ptr().cast::<u8>();
            // SAFETY: `words` is an aligned buffer larger than the struct's header; the
            // fields are plain integers the runtime wrote (or our zeros) (R5).
            let (num, total) = unsafe {
                let info = buf.cast::<sys::COR_PRF_FUNCTION_ARGUMENT_INFO>();
                ((*info).num_ranges as usize, (*info).total_argument_size)
            };
            let fit = (capacity - HEADER) / RANGE;
            let mut ranges = Vec::with_capacity(num.min(fit));
            for i in 0..num.min(fit) {
                // SAFETY: entry `i` lies inside `words` (i < fit) and is aligned like the
                // struct's `ranges` array (R5).
                let r = unsafe {
                    *buf.add(HEADER + i * RANGE)
                        .cast::<sys::COR_PRF_FUNCTION_ARGUMENT_RANGE>()
                };
                ranges.push(ArgumentRange {
                    start: r.start_address,
                    length: r.length,
                });
            }
            return Ok(Enter3Info {
                frame_info: frame,
                total_argument_size: total,
                ranges,
            });
        }
        Err(HResult::ERROR_INSUFFICIENT_BUFFER)
    }

    /// `GetFunctionEnter3Info` without allocating: fills `out` with the first ranges and
    /// returns how many arguments there are (more than `out.len()` when they did not all
    /// fit). For hooks on every call. **Info3 · sync · startup only**
    pub fn get_function_enter3_ranges(
        &self,
        function: FunctionId,
        elt_info: usize,
        out: &mut [ArgumentRange],
    ) -> Result<usize> {
        const HEADER: usize = offset_of!(sys::COR_PRF_FUNCTION_ARGUMENT_INFO, ranges);
        const RANGE: usize = size_of::<sys::COR_PRF_FUNCTION_ARGUMENT_RANGE>();
        const WORDS: usize = (HEADER + 16 * RANGE).div_ceil(8);
        let mut words = [0u64; WORDS];
        let mut frame = 0;
        let mut bytes = (WORDS * 8) as u32;
        let info = words
            .as_mut_ptr()
            .cast::<sys::COR_PRF_FUNCTION_ARGUMENT_INFO>();
        let hr = vcall!(
            self,
            ICorProfilerInfo3::GetFunctionEnter3Info(
                function.0, elt_info, &mut frame, &mut bytes, info
            )
        );
        check(hr)?;
        let buf = words.as_ptr().cast::<u8>();
        // SAFETY: `words` is aligned and larger than the header the runtime wrote (R5).
        let num =
            unsafe { (*buf.cast::<sys::COR_PRF_FUNCTION_ARGUMENT_INFO>()).num_ranges as usize };
        let fit = num.min(16).min(out.len());
        for (i, slot) in out.iter_mut().enumerate().take(fit) {
            // SAFETY: entry `i` < 16 lies inside `words`, aligned like `ranges` (R5).
            let r = unsafe {
                *buf.add(HEADER + i * RANGE)
                    .cast::<sys::COR_PRF_FUNCTION_ARGUMENT_RANGE>()
            };
            *slot = ArgumentRange {
                start: r.start_address,
                length: r.length,
            };
        }
        Ok(num)
    }

    /// `GetFunctionLeave3Info`: the return value, from inside a slow-path leave hook.
    /// **Info3 · sync · startup only**
    pub fn get_function_leave3_info(
        &self,
        function: FunctionId,
        elt_info: usize,
    ) -> Result<Leave3Info> {
        let mut frame = 0;
        let mut range = sys::COR_PRF_FUNCTION_ARGUMENT_RANGE::default();
        check(vcall!(
            self,
            ICorProfilerInfo3::GetFunctionLeave3Info(function.0, elt_info, &mut frame, &mut range)
        ))?;
        Ok(Leave3Info {
            frame_info: frame,
            retval: ArgumentRange {
                start: range.start_address,
                length: range.length,
            },
        })
    }

    // ---- Environment ------------------------------------------------------------------------------
}

/// Runs `f` on the interface pointer, or returns the error as a raw HRESULT (for the
/// closures given to `read_string` / `read_array`).
fn vcall_or_hr<I>(p: Result<*mut I>, f: impl FnOnce(*mut I) -> i32) -> i32 {
    match p {
        Ok(p) => f(p),
        Err(e) => e.0,
    }
}

fn code_ranges(infos: &[sys::COR_PRF_CODE_INFO], n: u32) -> Vec<CodeRange> {
    infos[..(n as usize).min(infos.len())]
        .iter()
        .map(|c| CodeRange {
            start: c.start_address,
            size: c.size,
        })
        .collect()
}

fn generation_range(r: sys::COR_PRF_GC_GENERATION_RANGE) -> GenerationRange {
    GenerationRange {
        start: r.range_start,
        length: r.range_length,
        reserved_length: r.range_length_reserved,
        generation: r.generation,
    }
}
