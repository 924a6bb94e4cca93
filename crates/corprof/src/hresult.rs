//! [`HResult`] and the crate's [`Result`] (defined in `clrprof-metadata`, whose pure
//! readers return them too), and what a callback result becomes at the COM boundary.

use corprof_sys as sys;

pub use clrprof_metadata::hresult::{HResult, Result, check};

/// What a fallible callback result becomes at the COM boundary.
#[inline]
pub(crate) fn to_hresult(r: Result<()>) -> i32 {
    match r {
        Ok(()) => sys::S_OK,
        Err(e) => e.0,
    }
}
