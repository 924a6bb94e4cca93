//! The COM objects without a runtime: the tests call the vtables the way CoreCLR does.

use std::ffi::c_void;
use std::ptr;
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use corprof::sys::{self, GUID, HRESULT};
use corprof::{
    ClassId, FunctionId, HResult, ObjectId, ProfilerCallback, ProfilerInfo, Result, ThreadId,
};

// ---- A probe implementation ---------------------------------------------------------------

#[derive(Default)]
struct Probe {
    dropped: Arc<AtomicUsize>,
    log: Arc<Mutex<Vec<String>>>,
}

impl Probe {
    fn new() -> (Probe, Arc<AtomicUsize>, Arc<Mutex<Vec<String>>>) {
        let p = Probe::default();
        let (d, l) = (p.dropped.clone(), p.log.clone());
        (p, d, l)
    }

    fn note(&self, s: String) {
        self.log.lock().unwrap().push(s);
    }
}

impl Drop for Probe {
    fn drop(&mut self) {
        self.dropped.fetch_add(1, Ordering::SeqCst);
    }
}

impl ProfilerCallback for Probe {
    fn initialize(&self, info: ProfilerInfo) -> Result<()> {
        self.note(format!("initialize v{}", info.version()));
        // Info3 cannot do SetEventMask2 (Info5): refused before touching the vtable.
        if info.version() < 5 {
            assert_eq!(info.set_event_mask2(0, 0), Err(HResult::E_NOINTERFACE));
            assert!(info.as_raw::<sys::ICorProfilerInfo5>().is_none());
        }
        assert!(info.as_raw::<sys::ICorProfilerInfo3>().is_some());
        let copy = info.clone();
        drop(copy);
        Ok(())
    }

    fn jit_compilation_started(&self, function: FunctionId, safe: bool) -> Result<()> {
        if function.0 == 0xDEAD {
            panic!("probe panics for {function:?}");
        }
        if function.0 == 0xBAD {
            return Err(HResult::CORPROF_E_DATAINCOMPLETE);
        }
        self.note(format!("jit {function:?} {safe}"));
        Ok(())
    }

    fn jit_inlining(
        &self,
        _caller: FunctionId,
        callee: FunctionId,
        should_inline: &mut bool,
    ) -> Result<()> {
        *should_inline = callee.0 != 7;
        Ok(())
    }

    fn objects_allocated_by_class(&self, classes: &[ClassId], counts: &[u32]) -> Result<()> {
        self.note(format!("alloc {classes:?} {counts:?}"));
        Ok(())
    }

    fn garbage_collection_started(&self, generation_collected: &[bool], reason: u32) -> Result<()> {
        self.note(format!("gc {generation_collected:?} {reason}"));
        Ok(())
    }

    fn thread_name_changed(&self, thread: ThreadId, name: &[u16]) -> Result<()> {
        self.note(format!("name {thread:?} {}", corprof::utf16_lossy(name)));
        Ok(())
    }

    fn moved_references2(
        &self,
        old: &[ObjectId],
        new: &[ObjectId],
        lengths: &[usize],
    ) -> Result<()> {
        self.note(format!("moved {old:?} {new:?} {lengths:?}"));
        Ok(())
    }
}

// ---- Vtable access -------------------------------------------------------------------------

type Obj = *mut sys::ICorProfilerCallback11;

fn v11(obj: Obj) -> &'static sys::ICorProfilerCallback11Vtbl {
    // SAFETY: `obj` is a live callback object; its vtable is a 'static constant.
    unsafe { &*(*obj).vtbl }
}

fn v1(obj: Obj) -> &'static sys::ICorProfilerCallbackVtbl {
    &v11(obj).base.base.base.base.base.base.base.base.base.base
}

fn v2(obj: Obj) -> &'static sys::ICorProfilerCallback2Vtbl {
    &v11(obj).base.base.base.base.base.base.base.base.base
}

fn v3(obj: Obj) -> &'static sys::ICorProfilerCallback3Vtbl {
    &v11(obj).base.base.base.base.base.base.base.base
}

fn v4(obj: Obj) -> &'static sys::ICorProfilerCallback4Vtbl {
    &v11(obj).base.base.base.base.base.base.base
}

fn add_ref(obj: Obj) -> u32 {
    // SAFETY: the test holds a reference to `obj`.
    unsafe { (v1(obj).base.AddRef)(obj.cast()) }
}

fn release(obj: Obj) -> u32 {
    // SAFETY: the test gives up a reference it holds.
    unsafe { (v1(obj).base.Release)(obj.cast()) }
}

fn qi(obj: *mut sys::IUnknown, iid: &GUID) -> (HRESULT, *mut c_void) {
    let mut out = ptr::dangling_mut::<c_void>(); // garbage: QI must overwrite it
    // SAFETY: the test holds a reference to `obj`; `out` is a local.
    let hr = unsafe { ((*(*obj).vtbl).QueryInterface)(obj, iid, &mut out) };
    (hr, out)
}

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

// ---- QueryInterface and reference counting -------------------------------------------------

#[test]
fn query_interface_answers_every_callback_iid() {
    let (probe, dropped, _) = Probe::new();
    let obj = corprof::new_callback_object(probe);
    for iid in &CALLBACK_IIDS {
        let (hr, out) = qi(obj.cast(), iid);
        assert_eq!(hr, sys::S_OK, "{iid}");
        assert_eq!(out, obj.cast(), "{iid}");
        assert_eq!(release(obj), 1);
    }
    assert_eq!(release(obj), 0);
    assert_eq!(dropped.load(Ordering::SeqCst), 1);
}

#[test]
fn query_interface_refuses_other_iids() {
    let (probe, dropped, _) = Probe::new();
    let obj = corprof::new_callback_object(probe);
    for iid in [
        sys::IID_IClassFactory,
        sys::IID_ICorProfilerInfo,
        sys::IID_IMetaDataImport,
        GUID::from_u128(0x12345678_1234_1234_1234_123456789ABC),
    ] {
        let (hr, out) = qi(obj.cast(), &iid);
        assert_eq!(hr, sys::E_NOINTERFACE, "{iid}");
        assert!(out.is_null(), "out pointer must be nulled for {iid}");
    }
    // Null out-pointer and null IID.
    // SAFETY: live object; the null pointers are what is being tested.
    let hr =
        unsafe { (v1(obj).base.QueryInterface)(obj.cast(), &sys::IID_IUnknown, ptr::null_mut()) };
    assert_eq!(hr, sys::E_POINTER);
    let mut out = ptr::null_mut();
    // SAFETY: as above.
    let hr = unsafe { (v1(obj).base.QueryInterface)(obj.cast(), ptr::null(), &mut out) };
    assert_eq!(hr, sys::E_POINTER);
    assert_eq!(release(obj), 0);
    assert_eq!(dropped.load(Ordering::SeqCst), 1);
}

#[test]
fn refcount_frees_exactly_once() {
    let (probe, dropped, _) = Probe::new();
    let obj = corprof::new_callback_object(probe);
    assert_eq!(add_ref(obj), 2);
    assert_eq!(add_ref(obj), 3);
    assert_eq!(release(obj), 2);
    assert_eq!(release(obj), 1);
    assert_eq!(dropped.load(Ordering::SeqCst), 0);
    assert_eq!(release(obj), 0);
    assert_eq!(dropped.load(Ordering::SeqCst), 1);
}

#[test]
fn refcount_is_thread_safe() {
    let (probe, dropped, _) = Probe::new();
    let obj = corprof::new_callback_object(probe) as usize;
    let threads: Vec<_> = (0..8)
        .map(|_| {
            std::thread::spawn(move || {
                for _ in 0..1000 {
                    add_ref(obj as Obj);
                    release(obj as Obj);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(dropped.load(Ordering::SeqCst), 0);
    assert_eq!(release(obj as Obj), 0);
    assert_eq!(dropped.load(Ordering::SeqCst), 1);
}

#[test]
fn vtable_has_every_slot_filled() {
    let (probe, _, _) = Probe::new();
    let obj = corprof::new_callback_object(probe);
    let slots = sys::ICorProfilerCallback11Vtbl::SLOT_COUNT;
    assert_eq!(slots, 98);
    assert_eq!(
        size_of::<sys::ICorProfilerCallback11Vtbl>(),
        slots * size_of::<usize>()
    );
    let table = v11(obj) as *const sys::ICorProfilerCallback11Vtbl as *const usize;
    for i in 0..slots {
        // SAFETY: the vtable is `slots` pointer-sized function pointers (size checked above).
        let entry = unsafe { *table.add(i) };
        assert_ne!(entry, 0, "slot {i}");
    }
    // One static vtable per type: a second object shares it.
    let (probe2, _, _) = Probe::new();
    let obj2 = corprof::new_callback_object(probe2);
    assert!(ptr::eq(v11(obj), v11(obj2)));
    release(obj);
    release(obj2);
}

// ---- Panics and results ----------------------------------------------------------------------

static HOOK_LINES: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn record_hook(line: &str) {
    HOOK_LINES.lock().unwrap().push(line.to_string());
}

#[test]
fn panicking_callback_returns_e_fail_and_reports() {
    corprof::set_panic_hook(record_hook);
    let (probe, dropped, log) = Probe::new();
    let obj = corprof::new_callback_object(probe);
    // SAFETY: live object, arguments as the runtime passes them.
    let hr = unsafe { (v1(obj).JITCompilationStarted)(obj.cast(), 0xDEAD, 1) };
    assert_eq!(hr, sys::E_FAIL);
    let lines = HOOK_LINES.lock().unwrap().clone();
    let mine: Vec<_> = lines
        .iter()
        .filter(|l| l.contains("probe panics"))
        .collect();
    assert_eq!(mine.len(), 1, "reported once: {lines:?}");
    assert!(
        mine[0].contains("ICorProfilerCallback::JITCompilationStarted"),
        "{}",
        mine[0]
    );
    // The object still works afterwards.
    // SAFETY: as above.
    let hr = unsafe { (v1(obj).JITCompilationStarted)(obj.cast(), 0x10, 0) };
    assert_eq!(hr, sys::S_OK);
    assert_eq!(
        log.lock().unwrap().last().unwrap(),
        "jit FunctionId(0x10) false"
    );
    release(obj);
    assert_eq!(dropped.load(Ordering::SeqCst), 1);
}

#[test]
fn callback_error_is_returned_as_is() {
    let (probe, _, _) = Probe::new();
    let obj = corprof::new_callback_object(probe);
    // SAFETY: live object.
    let hr = unsafe { (v1(obj).JITCompilationStarted)(obj.cast(), 0xBAD, 1) };
    assert_eq!(hr, sys::CORPROF_E_DATAINCOMPLETE);
    // Defaults answer S_OK.
    // SAFETY: live object.
    let hr = unsafe { (v1(obj).Shutdown)(obj.cast()) };
    assert_eq!(hr, sys::S_OK);
    // SAFETY: live object.
    let hr = unsafe { (v3(obj).ProfilerAttachComplete)(obj.cast()) };
    assert_eq!(hr, sys::S_OK);
    release(obj);
}

// ---- Parameter conversion ------------------------------------------------------------------

#[test]
fn arrays_strings_and_out_parameters_are_converted() {
    let (probe, _, log) = Probe::new();
    let obj = corprof::new_callback_object(probe);
    let mut classes = [0x100usize, 0x200];
    let mut counts = [3u32, 4];
    let mut collected = [1i32, 1, 0, 0, 0];
    let mut name: Vec<u16> = "worker".encode_utf16().collect();
    let mut old = [0x1000usize];
    let mut new = [0x2000usize];
    let mut len = [64usize];
    let mut inline: sys::BOOL = 1;
    // SAFETY: live object; every array is passed with its length, as the runtime does.
    unsafe {
        let v = v1(obj);
        assert_eq!(
            (v.ObjectsAllocatedByClass)(obj.cast(), 2, classes.as_mut_ptr(), counts.as_mut_ptr()),
            0
        );
        assert_eq!(
            (v.ObjectsAllocatedByClass)(obj.cast(), 0, ptr::null_mut(), ptr::null_mut()),
            0
        );
        assert_eq!(
            (v2(obj).GarbageCollectionStarted)(obj.cast(), 5, collected.as_mut_ptr(), 1),
            0
        );
        assert_eq!(
            (v2(obj).ThreadNameChanged)(obj.cast(), 9, name.len() as u32, name.as_mut_ptr()),
            0
        );
        assert_eq!(
            (v2(obj).ThreadNameChanged)(obj.cast(), 9, 0, ptr::null_mut()),
            0
        );
        assert_eq!(
            (v4(obj).MovedReferences2)(
                obj.cast(),
                1,
                old.as_mut_ptr(),
                new.as_mut_ptr(),
                len.as_mut_ptr()
            ),
            0
        );
        assert_eq!((v.JITInlining)(obj.cast(), 1, 7, &mut inline), 0);
    }
    assert_eq!(inline, 0);
    let log = log.lock().unwrap().clone();
    assert_eq!(
        log,
        vec![
            "alloc [ClassId(0x100), ClassId(0x200)] [3, 4]",
            "alloc [] []",
            "gc [true, true, false, false, false] 1",
            "name ThreadId(0x9) worker",
            "name ThreadId(0x9) ",
            "moved [ObjectId(0x1000)] [ObjectId(0x2000)] [64]",
        ]
    );
    release(obj);
}

// ---- Initialize with a fake info object ---------------------------------------------------------

/// A stand-in for the runtime's info object: only its IUnknown part is real, and it answers
/// QueryInterface for ICorProfilerInfo1..=max.
#[repr(C)]
struct FakeInfo {
    vtbl: *const sys::IUnknownVtbl,
    max_version: u32,
    refs: AtomicI32,
}

const INFO_IIDS: [GUID; 15] = [
    sys::IID_ICorProfilerInfo,
    sys::IID_ICorProfilerInfo2,
    sys::IID_ICorProfilerInfo3,
    sys::IID_ICorProfilerInfo4,
    sys::IID_ICorProfilerInfo5,
    sys::IID_ICorProfilerInfo6,
    sys::IID_ICorProfilerInfo7,
    sys::IID_ICorProfilerInfo8,
    sys::IID_ICorProfilerInfo9,
    sys::IID_ICorProfilerInfo10,
    sys::IID_ICorProfilerInfo11,
    sys::IID_ICorProfilerInfo12,
    sys::IID_ICorProfilerInfo13,
    sys::IID_ICorProfilerInfo14,
    sys::IID_ICorProfilerInfo15,
];

unsafe extern "system" fn fake_qi(
    this: *mut sys::IUnknown,
    riid: *const GUID,
    ppv: *mut *mut c_void,
) -> HRESULT {
    // SAFETY: called by corprof with our object and valid pointers.
    unsafe {
        let me = &*this.cast::<FakeInfo>();
        let n = me.max_version as usize;
        if *riid == sys::IID_IUnknown || INFO_IIDS[..n].contains(&*riid) {
            me.refs.fetch_add(1, Ordering::SeqCst);
            *ppv = this.cast();
            sys::S_OK
        } else {
            *ppv = ptr::null_mut();
            sys::E_NOINTERFACE
        }
    }
}

unsafe extern "system" fn fake_add_ref(this: *mut sys::IUnknown) -> u32 {
    // SAFETY: called with our live object.
    unsafe {
        (*this.cast::<FakeInfo>())
            .refs
            .fetch_add(1, Ordering::SeqCst) as u32
            + 1
    }
}

unsafe extern "system" fn fake_release(this: *mut sys::IUnknown) -> u32 {
    // SAFETY: called with our live object.
    unsafe {
        (*this.cast::<FakeInfo>())
            .refs
            .fetch_sub(1, Ordering::SeqCst) as u32
            - 1
    }
}

static FAKE_VTBL: sys::IUnknownVtbl = sys::IUnknownVtbl {
    QueryInterface: fake_qi,
    AddRef: fake_add_ref,
    Release: fake_release,
};

fn fake_info(max_version: u32) -> FakeInfo {
    FakeInfo {
        vtbl: &FAKE_VTBL,
        max_version,
        refs: AtomicI32::new(1),
    }
}

#[test]
fn initialize_wraps_the_highest_info_version() {
    let (probe, _, log) = Probe::new();
    let obj = corprof::new_callback_object(probe);
    for max in [3, 4, 15] {
        let mut fake = fake_info(max);
        // SAFETY: live object; the fake stays alive across the call.
        let hr = unsafe { (v1(obj).Initialize)(obj.cast(), (&raw mut fake).cast()) };
        assert_eq!(hr, sys::S_OK);
        // Every AddRef (QI, clone) was matched by a Release.
        assert_eq!(fake.refs.load(Ordering::SeqCst), 1, "max {max}");
    }
    assert_eq!(
        *log.lock().unwrap(),
        vec!["initialize v3", "initialize v4", "initialize v15"]
    );
    release(obj);
}

#[test]
fn initialize_fails_without_info3() {
    let (probe, _, log) = Probe::new();
    let obj = corprof::new_callback_object(probe);
    let mut fake = fake_info(2);
    // SAFETY: live object and fake.
    let hr = unsafe { (v1(obj).Initialize)(obj.cast(), (&raw mut fake).cast()) };
    assert_eq!(hr, sys::E_NOINTERFACE);
    // SAFETY: live object; null is what is being tested.
    let hr = unsafe { (v1(obj).Initialize)(obj.cast(), ptr::null_mut()) };
    assert_eq!(hr, sys::E_POINTER);
    assert!(log.lock().unwrap().is_empty(), "the callback must not run");
    assert_eq!(fake.refs.load(Ordering::SeqCst), 1);
    release(obj);
}

#[test]
fn attach_is_refused_by_default() {
    let (probe, _, _) = Probe::new();
    let obj = corprof::new_callback_object(probe);
    let mut fake = fake_info(15);
    let mut data = *b"client";
    // SAFETY: live object and fake; `data` passed with its length.
    let hr = unsafe {
        (v3(obj).InitializeForAttach)(
            obj.cast(),
            (&raw mut fake).cast(),
            data.as_mut_ptr().cast(),
            data.len() as u32,
        )
    };
    assert_eq!(hr, sys::E_NOTIMPL);
    assert_eq!(fake.refs.load(Ordering::SeqCst), 1);
    release(obj);
}

// ---- Class factory and DllGetClassObject ---------------------------------------------------------

const CLSID: GUID = GUID::from_u128(0x8C1D2E1B_6B1A_4C3E_9F5E_2A8E0C6D7B11);

static FACTORY_DROPS: AtomicUsize = AtomicUsize::new(0);

struct Counted;

impl Drop for Counted {
    fn drop(&mut self) {
        FACTORY_DROPS.fetch_add(1, Ordering::SeqCst);
    }
}

impl ProfilerCallback for Counted {}

struct Cancelling;

impl ProfilerCallback for Cancelling {}

fn get_class_object<T: ProfilerCallback>(
    clsid: &GUID,
    iid: &GUID,
    make: fn() -> Result<T>,
) -> (HRESULT, *mut c_void) {
    let mut out = ptr::dangling_mut::<c_void>();
    // SAFETY: valid pointers to locals.
    let hr = unsafe { corprof::dll_get_class_object(clsid, iid, &mut out, &CLSID, make) };
    (hr, out)
}

#[test]
fn dll_get_class_object_refuses_other_clsids_and_null() {
    let other = GUID::from_u128(0x00000000_0000_0000_0000_000000000001);
    let (hr, out) = get_class_object(&other, &sys::IID_IClassFactory, || Ok(Counted));
    assert_eq!(hr, sys::CLASS_E_CLASSNOTAVAILABLE);
    assert!(out.is_null());
    let (hr, out) = get_class_object(&CLSID, &sys::IID_ICorProfilerCallback, || Ok(Counted));
    assert_eq!(hr, sys::E_NOINTERFACE);
    assert!(out.is_null());
    // SAFETY: null pointers are what is being tested.
    let hr = unsafe {
        corprof::dll_get_class_object(
            &CLSID,
            &sys::IID_IClassFactory,
            ptr::null_mut(),
            &CLSID,
            || Ok(Counted),
        )
    };
    assert_eq!(hr, sys::E_POINTER);
    let mut out = ptr::null_mut();
    // SAFETY: as above.
    let hr = unsafe {
        corprof::dll_get_class_object(
            ptr::null(),
            &sys::IID_IClassFactory,
            &mut out,
            &CLSID,
            || Ok(Counted),
        )
    };
    assert_eq!(hr, sys::E_POINTER);
}

#[test]
fn class_factory_creates_the_profiler_like_coreclr() {
    let before = FACTORY_DROPS.load(Ordering::SeqCst);
    let (hr, factory) = get_class_object(&CLSID, &sys::IID_IClassFactory, || Ok(Counted));
    assert_eq!(hr, sys::S_OK);
    let factory = factory.cast::<sys::IClassFactory>();
    // SAFETY: `factory` is live with one reference held by the test.
    let vt = unsafe { &*(*factory).vtbl };

    // Aggregation is refused.
    let mut out = ptr::null_mut();
    let outer = 0x10usize as *mut sys::IUnknown;
    // SAFETY: live factory; `outer` is never dereferenced (refused first).
    let hr =
        unsafe { (vt.CreateInstance)(factory, outer, &sys::IID_ICorProfilerCallback2, &mut out) };
    assert_eq!(hr, sys::CLASS_E_NOAGGREGATION);
    assert!(out.is_null());
    // SAFETY: live factory.
    assert_eq!(unsafe { (vt.LockServer)(factory, 1) }, sys::S_OK);

    // CoreCLR asks for ICorProfilerCallback2, then queries 11.
    // SAFETY: live factory, valid out-pointer.
    let hr = unsafe {
        (vt.CreateInstance)(
            factory,
            ptr::null_mut(),
            &sys::IID_ICorProfilerCallback2,
            &mut out,
        )
    };
    assert_eq!(hr, sys::S_OK);
    let cb = out as Obj;
    let (hr, cb11) = qi(cb.cast(), &sys::IID_ICorProfilerCallback11);
    assert_eq!(hr, sys::S_OK);
    assert_eq!(cb11, cb.cast());
    // SAFETY: live factory; the test gives up its reference.
    assert_eq!(unsafe { (vt.base.Release)(factory.cast()) }, 0);
    assert_eq!(release(cb), 1);
    assert_eq!(FACTORY_DROPS.load(Ordering::SeqCst), before);
    assert_eq!(release(cb), 0);
    assert_eq!(FACTORY_DROPS.load(Ordering::SeqCst), before + 1);
}

#[test]
fn class_factory_passes_make_errors_through() {
    let (hr, factory) = get_class_object(&CLSID, &sys::IID_IUnknown, || {
        Err::<Cancelling, _>(HResult::CORPROF_E_PROFILER_CANCEL_ACTIVATION)
    });
    assert_eq!(hr, sys::S_OK);
    let factory = factory.cast::<sys::IClassFactory>();
    // SAFETY: live factory with one reference held by the test.
    let vt = unsafe { &*(*factory).vtbl };
    let mut out = ptr::null_mut();
    // SAFETY: live factory, valid out-pointer.
    let hr = unsafe {
        (vt.CreateInstance)(
            factory,
            ptr::null_mut(),
            &sys::IID_ICorProfilerCallback2,
            &mut out,
        )
    };
    assert_eq!(hr, sys::CORPROF_E_PROFILER_CANCEL_ACTIVATION);
    assert!(out.is_null());
    // SAFETY: the test gives up its reference.
    assert_eq!(unsafe { (vt.base.Release)(factory.cast()) }, 0);
}
