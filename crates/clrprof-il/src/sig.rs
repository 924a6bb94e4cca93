//! The few signature blobs (ECMA-335 §II.23.2) the probe wrap needs: a method's return
//! type, a locals signature with one more local, and the probe's own `calli` signature.

use crate::error::IlError;

/// The probe's `calli` signature: an unmanaged cdecl `void (int64, native int)` (calling
/// convention `C`, two parameters, `VOID`, `I8`, `I`): the method's cookie and the address
/// of its frame local. The runtime turns it into a token through
/// `IMetaDataEmit::GetTokenFromSig` for [`crate::wrap::Probe::sig_token`].
pub const PROBE_SIG: [u8; 5] = [0x01, 0x02, 0x01, 0x0A, 0x18];

/// The probe's `calli` signature without the GC-mode transitions: calling convention
/// `UNMANAGED` (0x9, the platform's C convention), two parameters, the return type
/// `modopt(CallConvSuppressGCTransition) void`, then `I8`, `I`, exactly as C# encodes
/// `delegate* unmanaged[SuppressGCTransition]<long, nint, void>`. `call_conv_type` is a
/// `TypeRef` token of `System.Runtime.CompilerServices.CallConvSuppressGCTransition` in
/// the probed module. The JIT then calls the probe directly, the thread staying in
/// cooperative mode, as it calls an ELT hook.
pub fn probe_sig_suppress_gc_transition(call_conv_type: u32) -> Result<Vec<u8>, IlError> {
    if call_conv_type >> 24 != 0x01 {
        return Err(IlError::invalid(
            "the calling convention type is not a TypeRef",
        ));
    }
    let mut out = vec![0x09, 0x02, 0x20];
    // TypeDefOrRefOrSpecEncoded: the row shifted by two, tag 1 for a TypeRef.
    compress(((call_conv_type & 0x00FF_FFFF) << 2) | 1, &mut out)?;
    out.extend_from_slice(&[0x01, 0x0A, 0x18]);
    Ok(out)
}

/// The type of the local the wrap adds: the method's return type (it carries the value
/// across the `leave`), or `native int` for a method that returns nothing.
pub fn frame_local_type(method_sig: &[u8]) -> Result<Vec<u8>, IlError> {
    Ok(return_type(method_sig)?.map_or_else(|| vec![0x18], <[u8]>::to_vec))
}

/// Nesting of types (arrays of pointers of generic instances…) this reader follows.
const MAX_DEPTH: u32 = 64;

fn bad(at: usize, what: &'static str) -> IlError {
    IlError::malformed(at, what)
}

/// A compressed unsigned integer at `*at`, advancing it.
fn uncompress(b: &[u8], at: &mut usize) -> Result<u32, IlError> {
    let first = *b.get(*at).ok_or(bad(*at, "signature ends early"))?;
    let (len, v) = match first {
        x if x & 0x80 == 0 => (1, u32::from(x)),
        x if x & 0xC0 == 0x80 => (2, u32::from(x & 0x3F)),
        x if x & 0xE0 == 0xC0 => (4, u32::from(x & 0x1F)),
        _ => return Err(bad(*at, "bad compressed integer")),
    };
    let rest = b
        .get(*at + 1..*at + len)
        .ok_or(bad(*at, "signature ends early"))?;
    *at += len;
    Ok(rest.iter().fold(v, |acc, &x| (acc << 8) | u32::from(x)))
}

/// `v` compressed (ECMA-335 §II.23.2), for values up to `0x1FFF_FFFF`.
fn compress(v: u32, out: &mut Vec<u8>) -> Result<(), IlError> {
    match v {
        0..=0x7F => out.push(v as u8),
        0x80..=0x3FFF => out.extend_from_slice(&((v as u16) | 0x8000).to_be_bytes()),
        0x4000..=0x1FFF_FFFF => out.extend_from_slice(&(v | 0xC000_0000).to_be_bytes()),
        _ => return Err(IlError::invalid("a count too large for a signature")),
    }
    Ok(())
}

/// Skips one `Type` (custom modifiers before it included) at `*at`.
fn skip_type(b: &[u8], at: &mut usize, depth: u32) -> Result<(), IlError> {
    if depth > MAX_DEPTH {
        return Err(IlError::unsupported_at(*at, "a type nested too deeply"));
    }
    let start = *at;
    let e = *b.get(*at).ok_or(bad(*at, "signature ends early"))?;
    *at += 1;
    match e {
        0x01..=0x0E | 0x16 | 0x18 | 0x19 | 0x1C => {}
        // PTR, BYREF, SZARRAY, PINNED: a type follows.
        0x0F | 0x10 | 0x1D | 0x45 => skip_type(b, at, depth + 1)?,
        // VALUETYPE, CLASS: a TypeDefOrRef; VAR, MVAR: a number.
        0x11 | 0x12 | 0x13 | 0x1E => {
            uncompress(b, at)?;
        }
        // CMOD_REQD, CMOD_OPT: a token, then the modified type.
        0x1F | 0x20 => {
            uncompress(b, at)?;
            skip_type(b, at, depth + 1)?;
        }
        0x14 => {
            skip_type(b, at, depth + 1)?;
            uncompress(b, at)?; // rank
            for _ in 0..2 {
                // sizes, then lower bounds (signed, same length rules)
                let n = uncompress(b, at)?;
                if n as usize > b.len() {
                    return Err(bad(start, "array shape longer than the signature"));
                }
                for _ in 0..n {
                    uncompress(b, at)?;
                }
            }
        }
        0x15 => {
            match b.get(*at) {
                Some(0x11 | 0x12) => *at += 1,
                _ => return Err(bad(*at, "generic instance of neither class nor value type")),
            }
            uncompress(b, at)?;
            let n = uncompress(b, at)?;
            if n == 0 || n as usize > b.len() {
                return Err(bad(start, "bad generic argument count"));
            }
            for _ in 0..n {
                skip_type(b, at, depth + 1)?;
            }
        }
        0x1B => skip_method(b, at, depth + 1)?,
        _ => return Err(bad(start, "unknown element type")),
    }
    Ok(())
}

/// Skips a method signature (a `FNPTR`'s).
fn skip_method(b: &[u8], at: &mut usize, depth: u32) -> Result<(), IlError> {
    let conv = *b.get(*at).ok_or(bad(*at, "signature ends early"))?;
    *at += 1;
    if conv & 0x10 != 0 {
        uncompress(b, at)?;
    }
    let n = uncompress(b, at)?;
    if n as usize > b.len() {
        return Err(bad(*at, "more parameters than the signature has bytes"));
    }
    skip_type(b, at, depth)?;
    let mut i = 0;
    while i < n {
        if b.get(*at) == Some(&0x41) {
            *at += 1; // SENTINEL: the vararg part starts
            continue;
        }
        skip_type(b, at, depth)?;
        i += 1;
    }
    Ok(())
}

/// What a method signature says about a call: its `this`, its parameters (vararg ones
/// of a call site's signature included) and its return type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MethodShape<'a> {
    /// `HASTHIS` without `EXPLICITTHIS`: `this` is passed besides the parameters.
    pub implicit_this: bool,
    pub params: u32,
    /// The return type's bytes, `None` for `void` (as [`return_type`]).
    pub returns: Option<&'a [u8]>,
}

impl MethodShape<'_> {
    /// What a call through this signature pops and pushes: `newobj` does not pop `this`
    /// and pushes the new object, `calli` also pops the function pointer.
    pub fn stack_effect(&self, op: crate::OpCode) -> (u32, u32) {
        let this = u32::from(self.implicit_this);
        let pushes = u32::from(self.returns.is_some());
        match op {
            crate::OpCode::NEWOBJ => (self.params, 1),
            crate::OpCode::CALLI => (self.params + this + 1, pushes),
            _ => (self.params + this, pushes),
        }
    }
}

/// Reads a method signature's calling convention, parameter count and return type.
pub fn method_shape(method_sig: &[u8]) -> Result<MethodShape<'_>, IlError> {
    let conv = *method_sig.first().ok_or(bad(0, "empty method signature"))?;
    let mut at = 1;
    if conv & 0x10 != 0 {
        uncompress(method_sig, &mut at)?;
    }
    let params = uncompress(method_sig, &mut at)?;
    Ok(MethodShape {
        implicit_this: conv & 0x20 != 0 && conv & 0x40 == 0,
        params,
        returns: return_type(method_sig)?,
    })
}

/// The bytes of a method signature's return type, without its custom modifiers; `None`
/// when it returns `void`.
pub fn return_type(method_sig: &[u8]) -> Result<Option<&[u8]>, IlError> {
    let b = method_sig;
    let mut at = 0;
    let conv = *b.first().ok_or(bad(0, "empty method signature"))?;
    at += 1;
    if conv & 0x10 != 0 {
        uncompress(b, &mut at)?;
    }
    uncompress(b, &mut at)?;
    while matches!(b.get(at), Some(0x1F | 0x20)) {
        at += 1;
        uncompress(b, &mut at)?;
    }
    if b.get(at) == Some(&0x01) {
        return Ok(None);
    }
    let start = at;
    skip_type(b, &mut at, 0)?;
    Ok(Some(&b[start..at]))
}

/// A locals signature holding the locals of `original` (a `LOCAL_SIG` blob, `None` for
/// a method without locals) and one more of type `extra` (one `Type`'s bytes, as
/// [`return_type`] gives them), and that new local's index.
pub fn locals_with(original: Option<&[u8]>, extra: &[u8]) -> Result<(Vec<u8>, u16), IlError> {
    let mut check = 0;
    skip_type(extra, &mut check, 0)?;
    if check != extra.len() {
        return Err(bad(check, "more than one type"));
    }
    let (count, rest): (u32, &[u8]) = match original {
        None => (0, &[]),
        Some(b) => {
            if b.first() != Some(&0x07) {
                return Err(bad(0, "not a locals signature"));
            }
            let mut at = 1;
            let n = uncompress(b, &mut at)?;
            // The types themselves, checked so the new one lands after them.
            let body = at;
            for _ in 0..n {
                skip_type(b, &mut at, 0)?;
            }
            if at != b.len() {
                return Err(bad(at, "bytes after the last local"));
            }
            (n, &b[body..])
        }
    };
    let index = u16::try_from(count)
        .ok()
        .filter(|&i| i < u16::MAX - 1)
        .ok_or(IlError::invalid(
            "a method with 65,534 locals has no room for one more",
        ))?;
    let mut out = vec![0x07];
    compress(count + 1, &mut out)?;
    out.extend_from_slice(rest);
    out.extend_from_slice(extra);
    Ok((out, index))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn return_types_skip_modifiers_and_stop_before_the_parameters() {
        // instance int32 (string): HASTHIS, 1 param, I4, STRING
        assert_eq!(
            return_type(&[0x20, 0x01, 0x08, 0x0E]).unwrap(),
            Some(&[0x08][..])
        );
        // void ()
        assert_eq!(return_type(&[0x00, 0x00, 0x01]).unwrap(), None);
        // generic <1> !!0[] (!!0): GENERIC, 1 generic, 1 param, SZARRAY MVAR 0, MVAR 0
        assert_eq!(
            return_type(&[0x10, 0x01, 0x01, 0x1D, 0x1E, 0x00, 0x1E, 0x00]).unwrap(),
            Some(&[0x1D, 0x1E, 0x00][..])
        );
        // modreq(InAttribute) ref int32 (): CMOD_REQD token, BYREF I4
        assert_eq!(
            return_type(&[0x00, 0x00, 0x1F, 0x49, 0x10, 0x08]).unwrap(),
            Some(&[0x10, 0x08][..])
        );
        // List<int32>: GENERICINST CLASS token 1 I4
        assert_eq!(
            return_type(&[0x00, 0x00, 0x15, 0x12, 0x10, 0x01, 0x08]).unwrap(),
            Some(&[0x15, 0x12, 0x10, 0x01, 0x08][..])
        );
        // int32[0...,0...] : ARRAY I4 rank 2, 0 sizes, 2 lower bounds 0 0
        assert_eq!(
            return_type(&[0x00, 0x00, 0x14, 0x08, 0x02, 0x00, 0x02, 0x00, 0x00]).unwrap(),
            Some(&[0x14, 0x08, 0x02, 0x00, 0x02, 0x00, 0x00][..])
        );
    }

    #[test]
    fn bad_signatures_are_errors() {
        assert!(return_type(&[]).is_err());
        assert!(return_type(&[0x00]).is_err());
        assert!(return_type(&[0x00, 0x00]).is_err());
        assert!(return_type(&[0x00, 0x00, 0x15, 0x12]).is_err());
        assert!(return_type(&[0x00, 0x00, 0x77]).is_err());
        // A deeply nested type is refused, not a stack overflow.
        let mut deep = vec![0x00, 0x00];
        deep.extend(std::iter::repeat_n(0x1D, 10_000));
        deep.push(0x08);
        assert!(return_type(&deep).is_err());
    }

    #[test]
    fn the_probe_signature_without_transitions_is_what_csharp_writes() {
        // C#'s `delegate* unmanaged[SuppressGCTransition]<long, nint, void>` with the
        // calling convention type at TypeRef row 0x11: `09 02 20 45 01 0A 18`.
        assert_eq!(
            probe_sig_suppress_gc_transition(0x0100_0011).unwrap(),
            vec![0x09, 0x02, 0x20, 0x45, 0x01, 0x0A, 0x18]
        );
        // A row past 0x1F needs the two-byte encoding.
        assert_eq!(
            probe_sig_suppress_gc_transition(0x0100_0123).unwrap(),
            vec![0x09, 0x02, 0x20, 0x84, 0x8D, 0x01, 0x0A, 0x18]
        );
        assert!(probe_sig_suppress_gc_transition(0x0200_0001).is_err());
        // The wrap's own reader takes it for what it is: two parameters, `void`.
        let sig = probe_sig_suppress_gc_transition(0x0100_0011).unwrap();
        let shape = method_shape(&sig).unwrap();
        assert_eq!((shape.params, shape.returns), (2, None));
    }

    #[test]
    fn a_local_is_appended_to_the_locals() {
        assert_eq!(
            locals_with(None, &[0x08]).unwrap(),
            (vec![0x07, 0x01, 0x08], 0)
        );
        // (string, valuetype T) + int64
        assert_eq!(
            locals_with(Some(&[0x07, 0x02, 0x0E, 0x11, 0x08]), &[0x0A]).unwrap(),
            (vec![0x07, 0x03, 0x0E, 0x11, 0x08, 0x0A], 2)
        );
        // 127 locals → 128 needs the two-byte count.
        let mut many = vec![0x07, 0x7F];
        many.extend(std::iter::repeat_n(0x08, 127));
        let (sig, index) = locals_with(Some(&many), &[0x08]).unwrap();
        assert_eq!(index, 127);
        assert_eq!(&sig[..3], &[0x07, 0x80, 0x80]);
        assert_eq!(sig.len(), 3 + 128);
        assert!(locals_with(Some(&[0x06, 0x00]), &[0x08]).is_err());
        assert!(locals_with(Some(&[0x07, 0x02, 0x08]), &[0x08]).is_err());
        assert!(locals_with(None, &[0x08, 0x08]).is_err());
    }
}
