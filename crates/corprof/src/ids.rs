//! Newtypes for the runtime's pointer-sized ids.
//!
//! Each id is the runtime's value unchanged (`.0`), so ids round-trip through
//! `ICorProfilerInfo` calls and can be stored in traces. An id is valid only while the
//! runtime says so (for example a `ThreadId` until `thread_destroyed`, an `ObjectId` until
//! the next GC moves the object); the runtime does not validate the ids it is given,
//! see `docs/safety.md` (R7).

use core::fmt;

macro_rules! id_newtype {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[repr(transparent)]
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
        pub struct $name(pub usize);

        impl $name {
            /// The null id (`0`), which the runtime uses for "none".
            pub const NULL: $name = $name(0);

            /// Whether this is the null id.
            pub const fn is_null(self) -> bool {
                self.0 == 0
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!(stringify!($name), "({:#x})"), self.0)
            }
        }

        impl fmt::LowerHex for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::LowerHex::fmt(&self.0, f)
            }
        }

        impl From<usize> for $name {
            fn from(v: usize) -> $name {
                $name(v)
            }
        }

        impl From<$name> for usize {
            fn from(v: $name) -> usize {
                v.0
            }
        }
    };
}

id_newtype!(
    /// `FunctionID`: a method instantiation (a `MethodDesc*` in CoreCLR).
    FunctionId
);
id_newtype!(
    /// `ClassID`: a loaded type (a `TypeHandle` in CoreCLR).
    ClassId
);
id_newtype!(
    /// `ModuleID`.
    ModuleId
);
id_newtype!(
    /// `AssemblyID`.
    AssemblyId
);
id_newtype!(
    /// `AppDomainID`.
    AppDomainId
);
id_newtype!(
    /// `ThreadID`: a managed thread (a `Thread*` in CoreCLR), not an OS thread id.
    ThreadId
);
id_newtype!(
    /// `ObjectID`: the address of a managed object; valid until the next GC moves it.
    ObjectId
);
id_newtype!(
    /// `ReJITID`: a ReJIT version of a function (0 = the original code).
    ReJitId
);
id_newtype!(
    /// `GCHandleID`.
    GcHandleId
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_is_hex() {
        assert_eq!(
            format!("{:?}", FunctionId(0x7f00_1234)),
            "FunctionId(0x7f001234)"
        );
        assert_eq!(format!("{:x}", ClassId(255)), "ff");
        assert!(ThreadId::NULL.is_null());
        assert_eq!(usize::from(ModuleId::from(5)), 5);
    }

    #[test]
    fn transparent_layout() {
        assert_eq!(size_of::<ObjectId>(), size_of::<usize>());
        assert_eq!(align_of::<ObjectId>(), align_of::<usize>());
    }
}
