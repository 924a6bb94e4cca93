//! The FFI edge every wrapper shares: the panic boundary every entry point from the runtime
//! goes through (safety.md R1), and borrowing what the runtime lends for the duration of a
//! call (R4). A leaf: the COM objects, the info and the metadata wrappers all use it.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::RwLock;

use crate::hresult::{HResult, Result};

// ---------------------------------------------------------------------------------------
// Panic boundary (safety.md R1)
// ---------------------------------------------------------------------------------------

static PANIC_HOOK: RwLock<Option<fn(&str)>> = RwLock::new(None);

/// Sets the function that reports a panic caught at the runtime boundary (a callback, a
/// stack-snapshot closure, a `Drop` run by `Release`). It receives one line, e.g.
/// `panic in ICorProfilerCallback::JITCompilationStarted: index out of bounds`, once per
/// caught panic. The default writes `clrprof: <line>` to stderr.
///
/// The standard panic hook (`std::panic::set_hook`) still runs first; this hook only adds
/// where the panic was stopped.
pub fn set_panic_hook(hook: fn(&str)) {
    let mut slot = PANIC_HOOK.write().unwrap_or_else(|e| e.into_inner());
    *slot = Some(hook);
}

fn default_panic_hook(line: &str) {
    use std::io::Write;
    // Never `eprintln!`: it panics when stderr is closed.
    let _ = writeln!(std::io::stderr(), "clrprof: {line}");
}

fn report_panic(place: &str, payload: &(dyn core::any::Any + Send)) {
    let what = if let Some(s) = payload.downcast_ref::<&'static str>() {
        s
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.as_str()
    } else {
        "(non-string panic payload)"
    };
    let line = format!("panic in {place}: {what}");
    let hook = match PANIC_HOOK.read() {
        Ok(g) => *g,
        Err(e) => *e.into_inner(),
    };
    let hook = hook.unwrap_or(default_panic_hook);
    // A panicking hook must not unwind either.
    let _ = catch_unwind(AssertUnwindSafe(|| hook(&line)));
}

/// Drops a panic payload without letting a panicking `Drop` escape.
fn drop_payload(payload: Box<dyn core::any::Any + Send>) {
    if let Err(again) = catch_unwind(AssertUnwindSafe(move || drop(payload))) {
        core::mem::forget(again);
    }
}

/// Runs `f`; a panic becomes `Err(E_FAIL)` after being reported once.
///
/// Inlined into each entry point (a callback the runtime makes once per object of a heap
/// walk included): without a panic it costs the call of `f`; the report is out of line.
#[inline(always)]
pub(crate) fn catch<R>(place: &str, f: impl FnOnce() -> Result<R>) -> Result<R> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) => Err(caught(place, payload)),
    }
}

/// A panic stopped at `place`: reported once, its payload dropped.
#[cold]
#[inline(never)]
fn caught(place: &str, payload: Box<dyn core::any::Any + Send>) -> HResult {
    report_panic(place, &*payload);
    drop_payload(payload);
    HResult::E_FAIL
}

/// Borrows `len` elements at `ptr` for the duration of a callback; null or empty gives an
/// empty slice.
///
/// # Safety
/// Unless `ptr` is null or `len` is 0, `ptr` must point to `len` initialized `T`s that stay
/// valid and unmodified for `'a` (safety.md R4).
pub(crate) unsafe fn borrowed<'a, T>(ptr: *const T, len: usize) -> &'a [T] {
    if ptr.is_null() || len == 0 {
        &[]
    } else {
        // SAFETY: guaranteed by the caller.
        unsafe { core::slice::from_raw_parts(ptr, len) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catch_turns_panics_into_e_fail() {
        let r: Result<()> = catch("test", || panic!("boom"));
        assert_eq!(r, Err(HResult::E_FAIL));
        assert_eq!(catch("test", || Ok(5)), Ok(5));
    }
}
