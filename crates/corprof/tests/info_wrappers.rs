//! The `ProfilerInfo` wrappers that the agent does not call yet (argument capture, heap
//! inspection and statics will), checked without a runtime: a fake info object whose vtable
//! slots are found by name in `corprof-sys`'s per-interface method lists, with the few
//! methods a test needs implemented the way the runtime documents them. Each test checks
//! what the wrapper passes in and how it turns what comes back into Rust values.

use std::ffi::c_void;

use corprof::sys::{self, GUID, HRESULT};
use corprof::{AppDomainId, ClassId, FunctionId, HResult, ObjectId, ProfilerInfo, ThreadId};

// ---- The fake info object --------------------------------------------------------------------

/// Every `ICorProfilerInfoN` vtable's own methods, with the slot of the first.
fn info_methods() -> Vec<(usize, &'static [&'static str])> {
    vec![
        (
            sys::ICorProfilerInfoVtbl::FIRST_SLOT,
            sys::ICorProfilerInfoVtbl::METHODS,
        ),
        (
            sys::ICorProfilerInfo2Vtbl::FIRST_SLOT,
            sys::ICorProfilerInfo2Vtbl::METHODS,
        ),
        (
            sys::ICorProfilerInfo3Vtbl::FIRST_SLOT,
            sys::ICorProfilerInfo3Vtbl::METHODS,
        ),
        (
            sys::ICorProfilerInfo4Vtbl::FIRST_SLOT,
            sys::ICorProfilerInfo4Vtbl::METHODS,
        ),
        (
            sys::ICorProfilerInfo5Vtbl::FIRST_SLOT,
            sys::ICorProfilerInfo5Vtbl::METHODS,
        ),
        (
            sys::ICorProfilerInfo6Vtbl::FIRST_SLOT,
            sys::ICorProfilerInfo6Vtbl::METHODS,
        ),
        (
            sys::ICorProfilerInfo7Vtbl::FIRST_SLOT,
            sys::ICorProfilerInfo7Vtbl::METHODS,
        ),
        (
            sys::ICorProfilerInfo8Vtbl::FIRST_SLOT,
            sys::ICorProfilerInfo8Vtbl::METHODS,
        ),
        (
            sys::ICorProfilerInfo9Vtbl::FIRST_SLOT,
            sys::ICorProfilerInfo9Vtbl::METHODS,
        ),
        (
            sys::ICorProfilerInfo10Vtbl::FIRST_SLOT,
            sys::ICorProfilerInfo10Vtbl::METHODS,
        ),
        (
            sys::ICorProfilerInfo11Vtbl::FIRST_SLOT,
            sys::ICorProfilerInfo11Vtbl::METHODS,
        ),
        (
            sys::ICorProfilerInfo12Vtbl::FIRST_SLOT,
            sys::ICorProfilerInfo12Vtbl::METHODS,
        ),
        (
            sys::ICorProfilerInfo13Vtbl::FIRST_SLOT,
            sys::ICorProfilerInfo13Vtbl::METHODS,
        ),
        (
            sys::ICorProfilerInfo14Vtbl::FIRST_SLOT,
            sys::ICorProfilerInfo14Vtbl::METHODS,
        ),
        (
            sys::ICorProfilerInfo15Vtbl::FIRST_SLOT,
            sys::ICorProfilerInfo15Vtbl::METHODS,
        ),
    ]
}

fn slot_of(name: &str) -> usize {
    info_methods()
        .into_iter()
        .find_map(|(first, methods)| methods.iter().position(|m| *m == name).map(|i| first + i))
        .unwrap_or_else(|| panic!("no info method {name}"))
}

/// The object: a vtable pointer, as COM lays it out.
#[repr(C)]
struct FakeInfo {
    vtbl: *const usize,
}

unsafe extern "system" fn qi(
    this: *mut c_void,
    _riid: *const GUID,
    ppv: *mut *mut c_void,
) -> HRESULT {
    // SAFETY: called by corprof with a writable out-pointer (it answers every info IID).
    unsafe { *ppv = this };
    sys::S_OK
}

unsafe extern "system" fn add_ref(_this: *mut c_void) -> u32 {
    2
}

unsafe extern "system" fn release(_this: *mut c_void) -> u32 {
    1
}

/// Fills the slots no test implements; never called (a test that reached it would fail on
/// the missing value, not crash, since every wrapper checks the HRESULT first).
unsafe extern "system" fn not_implemented(_this: *mut c_void) -> HRESULT {
    sys::E_NOTIMPL
}

/// Builds a `ProfilerInfo` (version 15) over a vtable with `methods` put in their slots.
/// The vtable and object are leaked: a test's worth of memory.
fn info_with(methods: &[(&str, usize)]) -> ProfilerInfo {
    let mut vtbl =
        vec![not_implemented as *const () as usize; sys::ICorProfilerInfo15Vtbl::SLOT_COUNT];
    vtbl[0] = qi as *const () as usize;
    vtbl[1] = add_ref as *const () as usize;
    vtbl[2] = release as *const () as usize;
    for (name, f) in methods {
        vtbl[slot_of(name)] = *f;
    }
    let vtbl: &'static [usize] = Vec::leak(vtbl);
    let obj: &'static mut FakeInfo = Box::leak(Box::new(FakeInfo {
        vtbl: vtbl.as_ptr(),
    }));
    // SAFETY: `obj` is a live object with an IUnknown-shaped vtable of Info15's length,
    // whose implemented slots have the signatures `corprof-sys` declares (leaked: 'static).
    let info = unsafe { ProfilerInfo::from_unknown((obj as *mut FakeInfo).cast()) }.unwrap();
    assert_eq!(info.version(), 15);
    info
}

const CLASS: usize = 0x1000;
const OBJECT: usize = 0x2000;
const FIELD: u32 = 0x0400_0007;
const DOMAIN: usize = 0x3000;
const THREAD: usize = 0x4000;
const FUNCTION: usize = 0x5000;
const ELT: usize = 0x6000;

// ---- Statics ------------------------------------------------------------------------------

unsafe extern "system" fn app_domain_static(
    _this: *mut c_void,
    class: usize,
    field: u32,
    domain: usize,
    out: *mut *mut c_void,
) -> HRESULT {
    if (class, field, domain) != (CLASS, FIELD, DOMAIN) {
        return sys::E_INVALIDARG;
    }
    // SAFETY: the wrapper passes a writable out-pointer.
    unsafe { *out = 0xABC0 as *mut c_void };
    sys::S_OK
}

unsafe extern "system" fn thread_static2(
    _this: *mut c_void,
    class: usize,
    field: u32,
    domain: usize,
    thread: usize,
    out: *mut *mut c_void,
) -> HRESULT {
    if (class, field, domain, thread) != (CLASS, FIELD, DOMAIN, THREAD) {
        return sys::E_INVALIDARG;
    }
    // SAFETY: as above.
    unsafe { *out = 0xDEF0 as *mut c_void };
    sys::S_OK
}

#[test]
fn static_addresses() {
    let info = info_with(&[
        (
            "GetAppDomainStaticAddress",
            app_domain_static as *const () as usize,
        ),
        (
            "GetThreadStaticAddress2",
            thread_static2 as *const () as usize,
        ),
    ]);
    let (class, domain) = (ClassId(CLASS), AppDomainId(DOMAIN));
    assert_eq!(
        info.get_app_domain_static_address(class, FIELD, domain),
        Ok(0xABC0)
    );
    assert_eq!(
        info.get_thread_static_address2(class, FIELD, domain, ThreadId(THREAD)),
        Ok(0xDEF0)
    );
    assert_eq!(
        info.get_app_domain_static_address(ClassId(1), FIELD, domain),
        Err(HResult::E_INVALIDARG)
    );
}

// ---- Objects and layouts ------------------------------------------------------------------

unsafe extern "system" fn object_size2(
    _this: *mut c_void,
    object: usize,
    size: *mut usize,
) -> HRESULT {
    // SAFETY: a writable out-pointer.
    unsafe { *size = if object == OBJECT { 48 } else { 0 } };
    sys::S_OK
}

unsafe extern "system" fn object_generation(
    _this: *mut c_void,
    _object: usize,
    range: *mut sys::COR_PRF_GC_GENERATION_RANGE,
) -> HRESULT {
    // SAFETY: a writable out-pointer.
    unsafe {
        *range = sys::COR_PRF_GC_GENERATION_RANGE {
            generation: 2,
            range_start: 0x10_0000,
            range_length: 0x2000,
            range_length_reserved: 0x4000,
        }
    };
    sys::S_OK
}

unsafe extern "system" fn array_object_info(
    _this: *mut c_void,
    _object: usize,
    dims: u32,
    sizes: *mut u32,
    lows: *mut i32,
    data: *mut *mut u8,
) -> HRESULT {
    // SAFETY: the wrapper passes `dims` entries in each array and a writable data pointer.
    unsafe {
        for i in 0..dims as usize {
            *sizes.add(i) = 3 + i as u32;
            *lows.add(i) = -(i as i32);
        }
        *data = 0x7000 as *mut u8;
    }
    sys::S_OK
}

unsafe extern "system" fn box_class_layout(
    _this: *mut c_void,
    _class: usize,
    offset: *mut u32,
) -> HRESULT {
    // SAFETY: a writable out-pointer.
    unsafe { *offset = 8 };
    sys::S_OK
}

unsafe extern "system" fn string_layout2(
    _this: *mut c_void,
    len: *mut u32,
    buf: *mut u32,
) -> HRESULT {
    // SAFETY: writable out-pointers.
    unsafe { (*len, *buf) = (8, 12) };
    sys::S_OK
}

/// `GetClassLayout`: two fields, reported with the count-then-fill protocol.
unsafe extern "system" fn class_layout(
    _this: *mut c_void,
    _class: usize,
    fields: *mut sys::COR_FIELD_OFFSET,
    cap: u32,
    needed: *mut u32,
    size: *mut u32,
) -> HRESULT {
    let all = [(0x0400_0001, 8), (0x0400_0002, 16)];
    // SAFETY: writable out-pointers; `fields` holds `cap` entries.
    unsafe {
        *needed = all.len() as u32;
        *size = 24;
        for (i, (rid, off)) in all.iter().enumerate().take(cap as *const () as usize) {
            *fields.add(i) = sys::COR_FIELD_OFFSET {
                rid_of_field: *rid,
                ul_offset: *off,
            };
        }
    }
    sys::S_OK
}

/// `GetClassIDInfo2`: a generic class with two type arguments.
unsafe extern "system" fn class_id_info2(
    _this: *mut c_void,
    _class: usize,
    module: *mut usize,
    token: *mut u32,
    parent: *mut usize,
    cap: u32,
    needed: *mut u32,
    args: *mut usize,
) -> HRESULT {
    let all = [0xA1, 0xA2];
    // SAFETY: writable out-pointers; `args` holds `cap` entries.
    unsafe {
        (*module, *token, *parent, *needed) = (0x9000, 0x0200_0005, 0x9100, all.len() as u32);
        for (i, a) in all.iter().enumerate().take(cap as *const () as usize) {
            *args.add(i) = *a;
        }
    }
    sys::S_OK
}

#[test]
fn objects_and_layouts() {
    let info = info_with(&[
        ("GetObjectSize2", object_size2 as *const () as usize),
        (
            "GetObjectGeneration",
            object_generation as *const () as usize,
        ),
        (
            "GetArrayObjectInfo",
            array_object_info as *const () as usize,
        ),
        ("GetBoxClassLayout", box_class_layout as *const () as usize),
        ("GetStringLayout2", string_layout2 as *const () as usize),
        ("GetClassLayout", class_layout as *const () as usize),
        ("GetClassIDInfo2", class_id_info2 as *const () as usize),
    ]);
    let object = ObjectId(OBJECT);
    assert_eq!(info.get_object_size2(object), Ok(48));
    let g = info.get_object_generation(object).unwrap();
    assert_eq!(
        (g.generation, g.start, g.length, g.reserved_length),
        (2, 0x10_0000, 0x2000, 0x4000)
    );
    let a = info.get_array_object_info(object, 2).unwrap();
    assert_eq!(a.dimensions, vec![(3, 0), (4, -1)]);
    assert_eq!(a.data, 0x7000);
    assert_eq!(info.get_box_class_layout(ClassId(CLASS)), Ok(8));
    assert_eq!(info.get_string_layout2(), Ok((8, 12)));
    assert_eq!(
        info.get_class_layout(ClassId(CLASS)),
        Ok((vec![(0x0400_0001, 8), (0x0400_0002, 16)], 24))
    );
    let c = info.get_class_id_info2(ClassId(CLASS)).unwrap();
    assert_eq!(
        (c.module.0, c.token, c.parent),
        (0x9000, 0x0200_0005, ClassId(0x9100))
    );
    assert_eq!(c.type_args, vec![ClassId(0xA1), ClassId(0xA2)]);
}

// ---- Event mask, GC ---------------------------------------------------------------------------

unsafe extern "system" fn event_mask2(
    _this: *mut c_void,
    low: *mut u32,
    high: *mut u32,
) -> HRESULT {
    // SAFETY: writable out-pointers.
    unsafe { (*low, *high) = (0x10, 0x20) };
    sys::S_OK
}

unsafe extern "system" fn force_gc(_this: *mut c_void) -> HRESULT {
    // What the runtime answers when called from a thread it does not allow (a callback).
    sys::CORPROF_E_UNSUPPORTED_CALL_SEQUENCE
}

#[test]
fn event_mask_and_force_gc() {
    let info = info_with(&[
        ("GetEventMask2", event_mask2 as *const () as usize),
        ("ForceGC", force_gc as *const () as usize),
    ]);
    assert_eq!(info.get_event_mask2(), Ok((0x10, 0x20)));
    assert_eq!(
        info.force_gc(),
        Err(HResult::CORPROF_E_UNSUPPORTED_CALL_SEQUENCE)
    );
}

// ---- Enter3 / Leave3 info ---------------------------------------------------------------------

const RANGES: usize = 20;

/// `GetFunctionEnter3Info` with 20 argument ranges: more than the wrapper's inline buffer,
/// so the first call answers `ERROR_INSUFFICIENT_BUFFER` with the size needed.
unsafe extern "system" fn enter3_info(
    _this: *mut c_void,
    function: usize,
    elt: usize,
    frame: *mut usize,
    bytes: *mut u32,
    out: *mut sys::COR_PRF_FUNCTION_ARGUMENT_INFO,
) -> HRESULT {
    if (function, elt) != (FUNCTION, ELT) {
        return sys::E_INVALIDARG;
    }
    let header = core::mem::offset_of!(sys::COR_PRF_FUNCTION_ARGUMENT_INFO, ranges);
    let range = size_of::<sys::COR_PRF_FUNCTION_ARGUMENT_RANGE>();
    let need = header + RANGES * range;
    // SAFETY: writable out-pointers; `out` holds `*bytes` bytes, checked before writing.
    unsafe {
        *frame = 0xF00;
        if (*bytes as *const () as usize) < need {
            *bytes = need as u32;
            return sys::ERROR_INSUFFICIENT_BUFFER;
        }
        (*out).num_ranges = RANGES as u32;
        (*out).total_argument_size = (RANGES * 8) as u32;
        let first = (&raw mut (*out).ranges).cast::<sys::COR_PRF_FUNCTION_ARGUMENT_RANGE>();
        for i in 0..RANGES {
            *first.add(i) = sys::COR_PRF_FUNCTION_ARGUMENT_RANGE {
                start_address: 0x8000 + 8 * i,
                length: 8,
            };
        }
    }
    sys::S_OK
}

unsafe extern "system" fn leave3_info(
    _this: *mut c_void,
    _function: usize,
    _elt: usize,
    frame: *mut usize,
    retval: *mut sys::COR_PRF_FUNCTION_ARGUMENT_RANGE,
) -> HRESULT {
    // SAFETY: writable out-pointers.
    unsafe {
        *frame = 0xF01;
        *retval = sys::COR_PRF_FUNCTION_ARGUMENT_RANGE {
            start_address: 0x9990,
            length: 4,
        };
    }
    sys::S_OK
}

#[test]
fn enter3_info_grows_its_buffer_and_leave3_info_reads_the_return_value() {
    let info = info_with(&[
        ("GetFunctionEnter3Info", enter3_info as *const () as usize),
        ("GetFunctionLeave3Info", leave3_info as *const () as usize),
    ]);
    let e = info
        .get_function_enter3_info(FunctionId(FUNCTION), ELT)
        .unwrap();
    assert_eq!(e.frame_info, 0xF00);
    assert_eq!(e.total_argument_size, (RANGES * 8) as u32);
    assert_eq!(e.ranges.len(), RANGES);
    assert_eq!(
        (e.ranges[19].start, e.ranges[19].length),
        (0x8000 + 8 * 19, 8)
    );
    assert_eq!(
        info.get_function_enter3_info(FunctionId(1), ELT)
            .unwrap_err(),
        HResult::E_INVALIDARG
    );
    let l = info
        .get_function_leave3_info(FunctionId(FUNCTION), ELT)
        .unwrap();
    assert_eq!(
        (l.frame_info, l.retval.start, l.retval.length),
        (0xF01, 0x9990, 4)
    );
}

// ---- Slow-path ELT hooks --------------------------------------------------------------------

static HOOKS: [std::sync::atomic::AtomicUsize; 3] =
    [const { std::sync::atomic::AtomicUsize::new(1) }; 3];

unsafe extern "system" fn set_hooks3_with_info(
    _this: *mut c_void,
    enter: Option<sys::FunctionEnter3WithInfo>,
    leave: Option<sys::FunctionLeave3WithInfo>,
    tailcall: Option<sys::FunctionTailcall3WithInfo>,
) -> HRESULT {
    use std::sync::atomic::Ordering::SeqCst;
    HOOKS[0].store(enter.map_or(0, |f| f as usize), SeqCst);
    HOOKS[1].store(leave.map_or(0, |f| f as usize), SeqCst);
    HOOKS[2].store(tailcall.map_or(0, |f| f as usize), SeqCst);
    sys::S_OK
}

unsafe extern "system" fn enter_hook(_f: sys::FunctionIDOrClientID, _elt: sys::COR_PRF_ELT_INFO) {}
unsafe extern "system" fn leave_hook(_f: sys::FunctionIDOrClientID, _elt: sys::COR_PRF_ELT_INFO) {}

#[test]
fn slow_path_hooks_reach_the_runtime_as_given() {
    use std::sync::atomic::Ordering::SeqCst;
    let info = info_with(&[(
        "SetEnterLeaveFunctionHooks3WithInfo",
        set_hooks3_with_info as *const () as usize,
    )]);
    // SAFETY: the hooks do nothing, so they are sound to call with any arguments; the
    // fake runtime only stores them.
    let r = unsafe {
        info.set_enter_leave_function_hooks3_with_info(Some(enter_hook), Some(leave_hook), None)
    };
    assert_eq!(r, Ok(()));
    assert_eq!(HOOKS[0].load(SeqCst), enter_hook as *const () as usize);
    assert_eq!(HOOKS[1].load(SeqCst), leave_hook as *const () as usize);
    assert_eq!(HOOKS[2].load(SeqCst), 0, "no tail-call hook");
}

// ---- Non-GC heap ------------------------------------------------------------------------------

/// 150 frozen objects: more than one `Next` batch of the wrapper (64), so it pages.
const FROZEN: usize = 150;

/// An `ICorProfilerObjectEnum` over ids 0x8000, 0x8010, …: a vtable pointer, a cursor and
/// a release counter.
#[repr(C)]
struct FakeObjectEnum {
    vtbl: *const usize,
    next: usize,
    released: usize,
}

unsafe extern "system" fn enum_release(this: *mut c_void) -> u32 {
    // SAFETY: `this` is the leaked FakeObjectEnum the fake handed out.
    let e = unsafe { &mut *this.cast::<FakeObjectEnum>() };
    e.released += 1;
    0
}

/// `Next`: up to `celt` ids; `S_FALSE` once fewer than asked for are left.
unsafe extern "system" fn enum_next(
    this: *mut c_void,
    celt: u32,
    out: *mut usize,
    fetched: *mut u32,
) -> HRESULT {
    // SAFETY: as above; the wrapper passes `celt` writable slots and a writable count.
    unsafe {
        let e = &mut *this.cast::<FakeObjectEnum>();
        let n = (celt as usize).min(FROZEN - e.next);
        for i in 0..n {
            *out.add(i) = 0x8000 + (e.next + i) * 0x10;
        }
        e.next += n;
        *fetched = n as u32;
        if n == celt as usize {
            sys::S_OK
        } else {
            sys::S_FALSE
        }
    }
}

static mut LAST_ENUM: *mut FakeObjectEnum = std::ptr::null_mut();

unsafe extern "system" fn enumerate_non_gc(_this: *mut c_void, out: *mut *mut c_void) -> HRESULT {
    let mut vtbl = vec![not_implemented as *const () as usize; 8];
    vtbl[0] = qi as *const () as usize;
    vtbl[1] = add_ref as *const () as usize;
    vtbl[2] = enum_release as *const () as usize;
    vtbl[7] = enum_next as *const () as usize;
    let vtbl: &'static [usize] = Vec::leak(vtbl);
    let e = Box::leak(Box::new(FakeObjectEnum {
        vtbl: vtbl.as_ptr(),
        next: 0,
        released: 0,
    }));
    // SAFETY: a writable out-pointer; one test thread writes LAST_ENUM.
    unsafe {
        LAST_ENUM = &raw mut *e;
        *out = (e as *mut FakeObjectEnum).cast();
    }
    sys::S_OK
}

/// `EnumerateObjectReferences` over an "object" that is a `[usize; 4]` at `object`:
/// slots 1..4 are fields, 0 = null; one callback per field, as `DiagWalkObject2` does.
unsafe extern "system" fn object_references(
    _this: *mut c_void,
    object: usize,
    callback: Option<sys::ObjectReferenceCallback>,
    client: *mut c_void,
) -> HRESULT {
    // SAFETY: `object` is the test's live array; the callback is the wrapper's.
    unsafe {
        let fields = object as *mut usize;
        if *fields.add(1) == usize::MAX {
            return sys::S_FALSE;
        }
        for i in 1..4 {
            if callback.unwrap()(object, fields.add(i), client) == sys::FALSE {
                break;
            }
        }
    }
    sys::S_OK
}

#[test]
fn non_gc_objects_are_read_in_batches_and_their_references_with_their_slots() {
    let info = info_with(&[
        (
            "EnumerateNonGCObjects",
            enumerate_non_gc as *const () as usize,
        ),
        (
            "EnumerateObjectReferences",
            object_references as *const () as usize,
        ),
    ]);
    let ids = info.enumerate_non_gc_objects().unwrap();
    assert_eq!(ids.len(), FROZEN);
    assert_eq!(ids[0], ObjectId(0x8000));
    assert_eq!(ids[FROZEN - 1], ObjectId(0x8000 + (FROZEN - 1) * 0x10));
    // SAFETY: set by the fake during the call above, on this thread.
    let released = unsafe { (*LAST_ENUM).released };
    assert_eq!(released, 1, "the enumerator is released once");

    // Fields 1 and 3 hold references, field 2 is null.
    let mut obj: [usize; 4] = [0xaaaa, 0x9000, 0, 0x9100];
    let base = obj.as_mut_ptr() as usize;
    let mut seen = Vec::new();
    let r = info.enumerate_object_references(ObjectId(base), &mut |slot, t| {
        seen.push((slot - base, t.0));
        true
    });
    assert_eq!(r, Ok(true));
    assert_eq!(seen, vec![(8, 0x9000), (24, 0x9100)]);
    // Stopping after the first.
    let mut n = 0;
    let r = info.enumerate_object_references(ObjectId(base), &mut |_, _| {
        n += 1;
        false
    });
    assert_eq!((r, n), (Ok(true), 1));
    // A panic ends the walk with E_FAIL.
    let r = info.enumerate_object_references(ObjectId(base), &mut |_, _| panic!("boom"));
    assert_eq!(r, Err(HResult::E_FAIL));
    // No reference fields: S_FALSE.
    obj[1] = usize::MAX;
    std::hint::black_box(&obj);
    let r = info.enumerate_object_references(ObjectId(base), &mut |_, _| true);
    assert_eq!(r, Ok(false));
}
