//! Small enumerations stored as one byte: exception and suspension phases, why a heap
//! snapshot was taken, and the three ELT record kinds. Their numeric values are part of the
//! format and never reused.

use crate::fields::{Cursor, FieldError, IntoStatic, Wire};

macro_rules! byte_enum {
    // The wire type's name in the header's `event_kinds`: `u8 <Name>`, or the one given
    // (`as "u8"`: a field that was a plain byte before it was typed keeps its name, so
    // headers, and the golden files, stay as they were).
    (@ty $name:ident) => { concat!("u8 ", stringify!($name)) };
    (@ty $name:ident $ty:literal) => { $ty };
    (
        $(#[$doc:meta])*
        $name:ident $(as $ty:literal)? { $( $(#[$vdoc:meta])* $variant:ident = $value:literal ),* $(,)? }
    ) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u8)]
        pub enum $name {
            $( $(#[$vdoc])* $variant = $value ),*
        }

        impl $name {
            /// Every value, in numeric order.
            pub const ALL: &'static [$name] = &[$($name::$variant),*];

            /// The value for a byte, if this version knows it.
            pub fn from_u8(v: u8) -> Option<$name> {
                match v {
                    $( $value => Some($name::$variant), )*
                    _ => None,
                }
            }

            /// The variant's name.
            pub fn name(self) -> &'static str {
                match self {
                    $( $name::$variant => stringify!($variant), )*
                }
            }
        }

        impl Wire<'_> for $name {
            const TY: &'static str = byte_enum!(@ty $name $($ty)?);
            #[inline]
            fn put(&self, out: &mut Vec<u8>) {
                out.push(*self as u8);
            }
            fn get(r: &mut Cursor<'_>) -> Result<$name, FieldError> {
                let v = r.byte()?;
                $name::from_u8(v).ok_or(FieldError::UnknownValue { ty: stringify!($name), value: v })
            }
        }

        impl IntoStatic for $name {
            type Static = $name;
            #[inline]
            fn into_static(self) -> $name {
                self
            }
        }
    };
}

byte_enum! {
    /// Which exception callback an [`Event::ExceptionPhase`](crate::Event::ExceptionPhase) records.
    ExceptionPhase {
        SearchFunctionEnter = 0,
        SearchFunctionLeave = 1,
        SearchFilterEnter = 2,
        SearchFilterLeave = 3,
        SearchCatcherFound = 4,
        UnwindFunctionEnter = 5,
        UnwindFunctionLeave = 6,
        UnwindFinallyEnter = 7,
        UnwindFinallyLeave = 8,
        CatcherEnter = 9,
        CatcherLeave = 10,
    }
}

byte_enum! {
    /// Which suspension callback an [`Event::RuntimeSuspend`](crate::Event::RuntimeSuspend) records.
    SuspendPhase {
        SuspendStarted = 0,
        SuspendFinished = 1,
        SuspendAborted = 2,
        ResumeStarted = 3,
        ResumeFinished = 4,
    }
}

byte_enum! {
    /// Why a heap snapshot ([`Event::HeapStart`](crate::Event::HeapStart)) was taken.
    HeapReason as "u8" {
        /// Asked for over the control socket (`clrprof heap --pid`).
        Requested = 0,
        /// The `--heap SECONDS` timer (`CLRPROF_HEAP_AT`).
        Timer = 1,
    }
}

/// The three ELT record kinds, for [`encode_elt`](crate::encode_elt). The values are the
/// event kind ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum EltKind {
    Enter = 28,
    Leave = 29,
    Tailcall = 30,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip() {
        for &p in ExceptionPhase::ALL {
            assert_eq!(ExceptionPhase::from_u8(p as u8), Some(p));
        }
        for &p in SuspendPhase::ALL {
            assert_eq!(SuspendPhase::from_u8(p as u8), Some(p));
        }
        assert_eq!(ExceptionPhase::from_u8(11), None);
        assert_eq!(SuspendPhase::from_u8(5), None);
        for &r in HeapReason::ALL {
            assert_eq!(HeapReason::from_u8(r as u8), Some(r));
        }
        assert_eq!(HeapReason::from_u8(2), None);
        assert_eq!(
            (HeapReason::Requested as u8, HeapReason::Timer as u8),
            (0, 1)
        );
        assert_eq!(ExceptionPhase::CatcherLeave.name(), "CatcherLeave");
    }
}
