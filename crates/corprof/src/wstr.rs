//! UTF-16 (`WCHAR`) helpers. The profiling and metadata APIs use UTF-16 on every platform
//! (the PAL's `WCHAR` is `char16_t`, never the 4-byte Linux `wchar_t`).

use crate::hresult::{HResult, Result};

/// Converts UTF-16 code units to a `String`, replacing unpaired surrogates with U+FFFD.
/// Stops at the first NUL if there is one.
pub fn utf16_lossy(units: &[u16]) -> String {
    let end = units.iter().position(|&c| c == 0).unwrap_or(units.len());
    String::from_utf16_lossy(&units[..end])
}

/// Units of the first call's buffer, on the stack. Most names fit.
const STACK_UNITS: usize = 256;
/// Refuse sizes beyond this (1 Mi units): a runtime string is never that long.
const MAX_UNITS: usize = 1 << 20;

/// Reads a string through the usual `(cch, pcch, buffer)` protocol of the profiling and
/// metadata APIs. `call(buffer, capacity, &mut needed)` makes the FFI call with a buffer of
/// `capacity` units and returns its HRESULT; `needed` receives the runtime's `*pcch`.
///
/// Handles the three ways a too-small buffer is reported: `ERROR_INSUFFICIENT_BUFFER`
/// (GetModuleInfo2), silent truncation with the true length in `*pcch` (GetAssemblyInfo,
/// GetAppDomainInfo, GetRuntimeInformation) and `CLDB_S_TRUNCATION` (metadata). `*pcch`
/// counts the terminating NUL except for GetEnvironmentVariable on success; the result is
/// cut at the first NUL in either case. The last successful call's other out-parameters
/// are the ones the caller sees, since `call` runs again on retry.
pub(crate) fn read_string<F>(mut call: F) -> Result<String>
where
    F: FnMut(*mut u16, u32, &mut u32) -> i32,
{
    let mut stack = [0u16; STACK_UNITS];
    let mut needed = 0u32;
    let hr = call(stack.as_mut_ptr(), STACK_UNITS as u32, &mut needed);
    match outcome(hr, needed, STACK_UNITS)? {
        None => return Ok(finish(&stack, needed)),
        Some(grow_to) => {
            let mut cap = grow_to;
            for _ in 0..4 {
                if cap > MAX_UNITS {
                    return Err(HResult::E_UNEXPECTED);
                }
                let mut heap = vec![0u16; cap];
                needed = 0;
                let hr = call(heap.as_mut_ptr(), cap as u32, &mut needed);
                match outcome(hr, needed, cap)? {
                    None => return Ok(finish(&heap, needed)),
                    Some(next) => cap = next,
                }
            }
        }
    }
    Err(HResult::ERROR_INSUFFICIENT_BUFFER)
}

/// `Ok(None)`: the string fit. `Ok(Some(n))`: retry with `n` units. `Err`: a real failure.
fn outcome(hr: i32, needed: u32, cap: usize) -> Result<Option<usize>> {
    let needed = needed as usize;
    let too_small = hr == HResult::ERROR_INSUFFICIENT_BUFFER.0 || (hr >= 0 && needed > cap);
    if too_small {
        return Ok(Some(needed.max(cap.saturating_mul(2))));
    }
    HResult(hr).ok()?;
    Ok(None)
}

fn finish(buf: &[u16], needed: u32) -> String {
    let n = (needed as usize).min(buf.len());
    utf16_lossy(&buf[..n])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn to_utf16z(s: &str) -> Vec<u16> {
        s.encode_utf16().chain(core::iter::once(0)).collect()
    }

    fn fake(text: &str, truncating: bool) -> impl FnMut(*mut u16, u32, &mut u32) -> i32 {
        let units = to_utf16z(text);
        move |buf, cap, needed| {
            *needed = units.len() as u32;
            let n = units.len().min(cap as usize);
            if !truncating && n < units.len() {
                return HResult::ERROR_INSUFFICIENT_BUFFER.0;
            }
            // SAFETY: test double writing at most `cap` units into a buffer of `cap` units
            // (safety.md R5).
            unsafe { core::ptr::copy_nonoverlapping(units.as_ptr(), buf, n) };
            0
        }
    }

    #[test]
    fn short_and_long_strings() {
        assert_eq!(read_string(fake("abc", false)).unwrap(), "abc");
        let long = "x".repeat(1000);
        assert_eq!(read_string(fake(&long, false)).unwrap(), long);
        assert_eq!(read_string(fake(&long, true)).unwrap(), long);
        assert_eq!(read_string(fake("", true)).unwrap(), "");
    }

    #[test]
    fn failure_is_reported() {
        let r = read_string(|_, _, _| HResult::E_FAIL.0);
        assert_eq!(r, Err(HResult::E_FAIL));
    }

    #[test]
    fn lossy_stops_at_nul() {
        assert_eq!(utf16_lossy(&[0x41, 0, 0x42]), "A");
        assert_eq!(utf16_lossy(&[0xD800, 0x41]), "\u{FFFD}A");
    }
}
