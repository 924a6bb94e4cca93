//! [`HResult`]: an `HRESULT` that prints its name, and the crate's [`Result`].

use core::fmt;

use corprof_sys as sys;

/// A COM status code. Negative values are failures.
///
/// `Debug` and `Display` print the symbolic name when it is known, then the value in hex:
/// `CORPROF_E_PROFILER_ALREADY_ACTIVE (0x8013136A)`.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct HResult(pub i32);

/// `Result<T, HResult>`: what every fallible call of this crate returns.
pub type Result<T> = core::result::Result<T, HResult>;

impl HResult {
    pub const S_OK: HResult = HResult(sys::S_OK);
    pub const S_FALSE: HResult = HResult(sys::S_FALSE);
    pub const E_FAIL: HResult = HResult(sys::E_FAIL);
    pub const E_NOTIMPL: HResult = HResult(sys::E_NOTIMPL);
    pub const E_NOINTERFACE: HResult = HResult(sys::E_NOINTERFACE);
    pub const E_POINTER: HResult = HResult(sys::E_POINTER);
    pub const E_INVALIDARG: HResult = HResult(sys::E_INVALIDARG);
    pub const E_OUTOFMEMORY: HResult = HResult(sys::E_OUTOFMEMORY);
    pub const E_UNEXPECTED: HResult = HResult(sys::E_UNEXPECTED);
    pub const CLASS_E_NOAGGREGATION: HResult = HResult(sys::CLASS_E_NOAGGREGATION);
    pub const CLASS_E_CLASSNOTAVAILABLE: HResult = HResult(sys::CLASS_E_CLASSNOTAVAILABLE);
    /// `HRESULT_FROM_WIN32(ERROR_INSUFFICIENT_BUFFER)`.
    pub const ERROR_INSUFFICIENT_BUFFER: HResult = HResult(sys::ERROR_INSUFFICIENT_BUFFER);
    pub const CORPROF_E_DATAINCOMPLETE: HResult = HResult(sys::CORPROF_E_DATAINCOMPLETE);
    pub const CORPROF_E_NOT_MANAGED_THREAD: HResult = HResult(sys::CORPROF_E_NOT_MANAGED_THREAD);
    pub const CORPROF_E_CALL_ONLY_FROM_INIT: HResult = HResult(sys::CORPROF_E_CALL_ONLY_FROM_INIT);
    pub const CORPROF_E_NOT_YET_AVAILABLE: HResult = HResult(sys::CORPROF_E_NOT_YET_AVAILABLE);
    pub const CORPROF_E_UNSUPPORTED_CALL_SEQUENCE: HResult =
        HResult(sys::CORPROF_E_UNSUPPORTED_CALL_SEQUENCE);
    pub const CORPROF_E_ASYNCHRONOUS_UNSAFE: HResult = HResult(sys::CORPROF_E_ASYNCHRONOUS_UNSAFE);
    pub const CORPROF_E_STACKSNAPSHOT_UNSAFE: HResult =
        HResult(sys::CORPROF_E_STACKSNAPSHOT_UNSAFE);
    pub const CORPROF_E_STACKSNAPSHOT_ABORTED: HResult =
        HResult(sys::CORPROF_E_STACKSNAPSHOT_ABORTED);
    pub const CORPROF_E_PROFILER_DETACHING: HResult = HResult(sys::CORPROF_E_PROFILER_DETACHING);
    pub const CORPROF_E_PROFILER_NOT_ATTACHABLE: HResult =
        HResult(sys::CORPROF_E_PROFILER_NOT_ATTACHABLE);
    pub const CORPROF_E_PROFILER_ALREADY_ACTIVE: HResult =
        HResult(sys::CORPROF_E_PROFILER_ALREADY_ACTIVE);
    pub const CORPROF_E_UNSUPPORTED_FOR_ATTACHING_PROFILER: HResult =
        HResult(sys::CORPROF_E_UNSUPPORTED_FOR_ATTACHING_PROFILER);
    pub const CORPROF_E_IRREVERSIBLE_INSTRUMENTATION_PRESENT: HResult =
        HResult(sys::CORPROF_E_IRREVERSIBLE_INSTRUMENTATION_PRESENT);
    pub const CORPROF_E_IMMUTABLE_FLAGS_SET: HResult = HResult(sys::CORPROF_E_IMMUTABLE_FLAGS_SET);
    pub const CORPROF_E_INCONSISTENT_WITH_FLAGS: HResult =
        HResult(sys::CORPROF_E_INCONSISTENT_WITH_FLAGS);
    /// Return this from `initialize` to decline loading quietly (the runtime logs it as
    /// information, not as an error).
    pub const CORPROF_E_PROFILER_CANCEL_ACTIVATION: HResult =
        HResult(sys::CORPROF_E_PROFILER_CANCEL_ACTIVATION);
    pub const CORPROF_E_SUSPENSION_IN_PROGRESS: HResult =
        HResult(sys::CORPROF_E_SUSPENSION_IN_PROGRESS);

    /// `SUCCEEDED(hr)`: non-negative.
    pub const fn succeeded(self) -> bool {
        self.0 >= 0
    }

    /// `FAILED(hr)`: negative.
    pub const fn failed(self) -> bool {
        self.0 < 0
    }

    /// The symbolic name, if `corprof-sys` knows it.
    pub fn name(self) -> Option<&'static str> {
        sys::hresult_name(self.0)
    }

    /// `HRESULT_FROM_WIN32(code)`.
    pub const fn from_win32(code: u32) -> HResult {
        HResult(sys::hresult_from_win32(code))
    }

    /// `Ok(())` for success codes (S_OK, S_FALSE and every other non-negative value),
    /// `Err(self)` for failures.
    pub const fn ok(self) -> Result<()> {
        if self.0 >= 0 { Ok(()) } else { Err(self) }
    }

    /// The raw value, e.g. to return from an `extern "system"` function.
    pub const fn code(self) -> i32 {
        self.0
    }
}

/// Turns a raw `HRESULT` into a [`Result`]: any success code (`S_OK`, `S_FALSE`, …) is
/// `Ok(())`, any failure is `Err`.
pub const fn check(hr: i32) -> Result<()> {
    HResult(hr).ok()
}

impl fmt::Display for HResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "{name} ({:#010X})", self.0 as u32),
            None => write!(f, "HRESULT {:#010X}", self.0 as u32),
        }
    }
}

impl fmt::Debug for HResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for HResult {}

impl From<HResult> for i32 {
    fn from(hr: HResult) -> i32 {
        hr.0
    }
}

impl From<i32> for HResult {
    fn from(hr: i32) -> HResult {
        HResult(hr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_name_and_hex() {
        let hr = HResult::CORPROF_E_PROFILER_ALREADY_ACTIVE;
        assert_eq!(
            hr.to_string(),
            "CORPROF_E_PROFILER_ALREADY_ACTIVE (0x8013136A)"
        );
        assert_eq!(
            format!("{hr:?}"),
            "CORPROF_E_PROFILER_ALREADY_ACTIVE (0x8013136A)"
        );
        assert_eq!(HResult::S_OK.to_string(), "S_OK (0x00000000)");
        assert_eq!(HResult::E_FAIL.to_string(), "E_FAIL (0x80004005)");
    }

    #[test]
    fn unknown_value_prints_hex() {
        assert_eq!(
            HResult(0x8123_4567_u32 as i32).to_string(),
            "HRESULT 0x81234567"
        );
    }

    #[test]
    fn check_accepts_success_codes() {
        assert_eq!(check(0), Ok(()));
        assert_eq!(check(1), Ok(()));
        assert_eq!(check(sys::CLDB_S_TRUNCATION), Ok(()));
        assert_eq!(check(sys::E_FAIL), Err(HResult::E_FAIL));
        assert!(HResult::E_FAIL.failed());
        assert!(HResult::S_FALSE.succeeded());
    }

    #[test]
    fn win32_conversion() {
        assert_eq!(HResult::from_win32(122), HResult::ERROR_INSUFFICIENT_BUFFER);
        assert_eq!(HResult::from_win32(0), HResult::S_OK);
    }

    #[test]
    fn is_an_error() {
        fn takes(_: &dyn std::error::Error) {}
        takes(&HResult::E_FAIL);
    }
}
