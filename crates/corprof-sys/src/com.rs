//! COM plumbing: the declaration macro, `IUnknown`, `IClassFactory` and the [`Interface`] trait.
//!
//! Layout convention (identical for every interface `IFoo` in this crate):
//!
//! * `#[repr(C)] pub struct IFoo { pub vtbl: *const IFooVtbl }` — what a COM pointer points to.
//! * `#[repr(C)] pub struct IFooVtbl { pub base: IParentVtbl, pub Method: unsafe extern "system"
//!   fn(this: *mut IFoo, ...) -> HRESULT, ... }` — the parent's vtable is nested first as
//!   `base`, then this interface's own methods in IDL order, named exactly like the IDL
//!   methods. `this` is typed as the interface that *introduced* the method. Only
//!   `IUnknownVtbl` has no `base`.
//! * `IFooVtbl::METHODS` (own methods, in order), `IFooVtbl::FIRST_SLOT` (vtable index of the
//!   first own method), `IFooVtbl::SLOT_COUNT` (total slots including inherited ones).
//! * `IID_IFoo: GUID`, and `impl Interface for IFoo`.

use core::ffi::c_void;

use crate::types::{BOOL, GUID, HRESULT, REFIID, ULONG};

/// Implemented by every interface struct of this crate.
///
/// # Safety
///
/// Implementors must be `#[repr(C)]` structs whose only field is a pointer to a vtable of type
/// `Self::Vtbl`, laid out as the COM interface identified by `Self::IID`.
pub unsafe trait Interface {
    /// The interface identifier (for QueryInterface).
    const IID: GUID;
    /// The interface name, e.g. `"ICorProfilerInfo3"`.
    const NAME: &'static str;
    /// The vtable struct (`IFooVtbl`).
    type Vtbl;
}

/// Declares one COM interface (see the module documentation for what is emitted).
macro_rules! com_interface {
    (
        $(#[$doc:meta])*
        interface $iface:ident ($vtbl:ident) : $parent:ident ($pvtbl:ident),
        $iid_name:ident = $iid:literal;
        {
            $(
                $(#[$mdoc:meta])*
                fn $method:ident ( $($arg:ident : $argty:ty),* $(,)? ) $(-> $ret:ty)? ;
            )*
        }
    ) => {
        #[doc = concat!("IID of `", stringify!($iface), "`.")]
        pub const $iid_name: $crate::GUID = $crate::GUID::from_u128($iid);

        $(#[$doc])*
        #[doc = ""]
        #[doc = concat!("Derives from `", stringify!($parent), "`; vtable: [`", stringify!($vtbl), "`].")]
        #[repr(C)]
        pub struct $iface {
            pub vtbl: *const $vtbl,
        }

        #[doc = concat!("Vtable of `", stringify!($iface), "`: `base` (the `",
            stringify!($parent), "` slots) followed by the methods `", stringify!($iface),
            "` introduces, in IDL order.")]
        #[repr(C)]
        pub struct $vtbl {
            pub base: $pvtbl,
            $(
                $(#[$mdoc])*
                pub $method: unsafe extern "system" fn(this: *mut $iface $(, $arg: $argty)*) $(-> $ret)?,
            )*
        }

        impl $vtbl {
            /// Names of the methods this interface introduces, in vtable order.
            pub const METHODS: &'static [&'static str] = &[$(stringify!($method)),*];
            /// Vtable index of the first method this interface introduces.
            pub const FIRST_SLOT: usize = <$pvtbl>::SLOT_COUNT;
            /// Total number of vtable slots, inherited ones included.
            pub const SLOT_COUNT: usize = Self::FIRST_SLOT + Self::METHODS.len();
        }

        // SAFETY: `#[repr(C)]` struct holding only the vtable pointer, declared just above.
        unsafe impl $crate::Interface for $iface {
            const IID: $crate::GUID = $iid_name;
            const NAME: &'static str = stringify!($iface);
            type Vtbl = $vtbl;
        }
    };
}

/// IID of `IUnknown`: `{00000000-0000-0000-C000-000000000046}`.
pub const IID_IUnknown: GUID = GUID::from_u128(0x00000000_0000_0000_C000_000000000046);

/// `IUnknown`, the root of every interface.
#[repr(C)]
pub struct IUnknown {
    pub vtbl: *const IUnknownVtbl,
}

/// Vtable of `IUnknown` (slots 0..3, no base).
#[repr(C)]
pub struct IUnknownVtbl {
    pub QueryInterface: unsafe extern "system" fn(
        this: *mut IUnknown,
        riid: REFIID,
        ppv_object: *mut *mut c_void,
    ) -> HRESULT,
    pub AddRef: unsafe extern "system" fn(this: *mut IUnknown) -> ULONG,
    pub Release: unsafe extern "system" fn(this: *mut IUnknown) -> ULONG,
}

impl IUnknownVtbl {
    /// Names of the methods this interface introduces, in vtable order.
    pub const METHODS: &'static [&'static str] = &["QueryInterface", "AddRef", "Release"];
    /// Vtable index of the first method this interface introduces.
    pub const FIRST_SLOT: usize = 0;
    /// Total number of vtable slots.
    pub const SLOT_COUNT: usize = 3;
}

// SAFETY: `#[repr(C)]` struct holding only the vtable pointer.
unsafe impl Interface for IUnknown {
    const IID: GUID = IID_IUnknown;
    const NAME: &'static str = "IUnknown";
    type Vtbl = IUnknownVtbl;
}

com_interface! {
    /// `IClassFactory` — what `DllGetClassObject` hands to the runtime.
    interface IClassFactory(IClassFactoryVtbl): IUnknown(IUnknownVtbl),
    IID_IClassFactory = 0x00000001_0000_0000_C000_000000000046;
    {
        fn CreateInstance(p_unk_outer: *mut IUnknown, riid: REFIID, ppv_object: *mut *mut c_void) -> HRESULT;
        fn LockServer(f_lock: BOOL) -> HRESULT;
    }
}
