//! How each field type of an event is written and read. One trait implementation per
//! Rust type; the event table (`events.rs`) is built from these, so the encoder, the
//! decoder and the self-description in the header cannot disagree.

use std::borrow::Cow;

use crate::leb128::{self, LebError};

/// Longest string the encoder writes, in bytes; longer strings are cut at a character
/// boundary. Keeps every record well inside the 64 MiB block limit.
pub const MAX_STRING_BYTES: usize = 16 << 20;
/// Longest `u64` list the encoder writes; longer lists keep their first items.
pub const MAX_LIST_ITEMS: usize = 1 << 20;

/// Why a field could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldError {
    /// The record ended inside the field.
    Truncated,
    /// An integer too large for its type.
    Overflow,
    /// A bool that is neither 0 nor 1.
    BadBool(u8),
    /// An enum value this reader does not know (written by a newer version).
    UnknownValue { ty: &'static str, value: u8 },
    /// A length that exceeds the rest of the record.
    BadLength(u64),
}

impl From<LebError> for FieldError {
    fn from(e: LebError) -> FieldError {
        match e {
            LebError::Truncated => FieldError::Truncated,
            LebError::Overflow => FieldError::Overflow,
        }
    }
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FieldError::Truncated => f.write_str("the record ends inside it"),
            FieldError::Overflow => f.write_str("integer too large for its type"),
            FieldError::BadBool(b) => write!(f, "bool byte {b} is neither 0 nor 1"),
            FieldError::UnknownValue { ty, value } => {
                write!(
                    f,
                    "unknown {ty} value {value} (written by a newer version?)"
                )
            }
            FieldError::BadLength(n) => write!(f, "length {n} exceeds the record"),
        }
    }
}

/// Reading position inside one record's payload.
pub struct Cursor<'a> {
    pub bytes: &'a [u8],
    pub pos: usize,
    /// Strings that were not valid UTF-8 and were replaced lossily.
    pub lossy_strings: u32,
}

impl<'a> Cursor<'a> {
    pub fn new(bytes: &'a [u8]) -> Cursor<'a> {
        Cursor {
            bytes,
            pos: 0,
            lossy_strings: 0,
        }
    }

    #[inline]
    pub fn u64(&mut self) -> Result<u64, FieldError> {
        Ok(leb128::read_u64(self.bytes, &mut self.pos)?)
    }

    #[inline]
    pub fn byte(&mut self) -> Result<u8, FieldError> {
        let b = *self.bytes.get(self.pos).ok_or(FieldError::Truncated)?;
        self.pos += 1;
        Ok(b)
    }

    /// `n` raw bytes, `n` having been read from the input (so checked, not trusted).
    fn take(&mut self, n: u64) -> Result<&'a [u8], FieldError> {
        let rest = self.bytes.get(self.pos..).unwrap_or(&[]);
        match usize::try_from(n) {
            Ok(n) if n <= rest.len() => {
                self.pos += n;
                Ok(&rest[..n])
            }
            _ => Err(FieldError::BadLength(n)),
        }
    }
}

/// A field type: its name in the self-description, its encoding and its decoding.
pub trait Wire<'a>: Sized {
    /// Wire type name, as written in the header's `event_kinds` and in docs/trace-format.md.
    const TY: &'static str;
    fn put(&self, out: &mut Vec<u8>);
    fn get(r: &mut Cursor<'a>) -> Result<Self, FieldError>;
}

impl Wire<'_> for u64 {
    const TY: &'static str = "u64";
    #[inline]
    fn put(&self, out: &mut Vec<u8>) {
        leb128::put_u64(out, *self);
    }
    #[inline]
    fn get(r: &mut Cursor<'_>) -> Result<u64, FieldError> {
        r.u64()
    }
}

impl Wire<'_> for u32 {
    const TY: &'static str = "u32";
    #[inline]
    fn put(&self, out: &mut Vec<u8>) {
        leb128::put_u64(out, u64::from(*self));
    }
    #[inline]
    fn get(r: &mut Cursor<'_>) -> Result<u32, FieldError> {
        u32::try_from(r.u64()?).map_err(|_| FieldError::Overflow)
    }
}

/// HRESULTs: the 32-bit pattern as an unsigned LEB128 (`S_OK` = 1 byte, failures 5).
impl Wire<'_> for i32 {
    const TY: &'static str = "i32";
    #[inline]
    fn put(&self, out: &mut Vec<u8>) {
        leb128::put_u64(out, u64::from(*self as u32));
    }
    #[inline]
    fn get(r: &mut Cursor<'_>) -> Result<i32, FieldError> {
        Ok(u32::get(r)? as i32)
    }
}

impl Wire<'_> for u8 {
    const TY: &'static str = "u8";
    #[inline]
    fn put(&self, out: &mut Vec<u8>) {
        out.push(*self);
    }
    #[inline]
    fn get(r: &mut Cursor<'_>) -> Result<u8, FieldError> {
        r.byte()
    }
}

impl Wire<'_> for bool {
    const TY: &'static str = "bool";
    #[inline]
    fn put(&self, out: &mut Vec<u8>) {
        out.push(u8::from(*self));
    }
    #[inline]
    fn get(r: &mut Cursor<'_>) -> Result<bool, FieldError> {
        match r.byte()? {
            0 => Ok(false),
            1 => Ok(true),
            b => Err(FieldError::BadBool(b)),
        }
    }
}

impl<'a> Wire<'a> for Cow<'a, str> {
    const TY: &'static str = "str";
    #[inline]
    fn put(&self, out: &mut Vec<u8>) {
        let s = truncate_str(self, MAX_STRING_BYTES);
        leb128::put_u64(out, s.len() as u64);
        out.extend_from_slice(s.as_bytes());
    }
    fn get(r: &mut Cursor<'a>) -> Result<Cow<'a, str>, FieldError> {
        let n = r.u64()?;
        let bytes = r.take(n)?;
        match std::str::from_utf8(bytes) {
            Ok(s) => Ok(Cow::Borrowed(s)),
            Err(_) => {
                r.lossy_strings = r.lossy_strings.saturating_add(1);
                Ok(Cow::Owned(String::from_utf8_lossy(bytes).into_owned()))
            }
        }
    }
}

impl<'a> Wire<'a> for Cow<'a, [u64]> {
    const TY: &'static str = "[u64]";
    #[inline]
    fn put(&self, out: &mut Vec<u8>) {
        put_u64_list(out, self);
    }
    fn get(r: &mut Cursor<'a>) -> Result<Cow<'a, [u64]>, FieldError> {
        let n = r.u64()?;
        // Every item takes at least one byte: bound the allocation by what is left.
        let left = r.bytes.len().saturating_sub(r.pos) as u64;
        if n > left {
            return Err(FieldError::BadLength(n));
        }
        let mut items = Vec::with_capacity(n as usize);
        for _ in 0..n {
            items.push(r.u64()?);
        }
        Ok(Cow::Owned(items))
    }
}

impl<'a> Wire<'a> for Cow<'a, [u8]> {
    const TY: &'static str = "bytes";
    #[inline]
    fn put(&self, out: &mut Vec<u8>) {
        let b = &self[..self.len().min(MAX_STRING_BYTES)];
        leb128::put_u64(out, b.len() as u64);
        out.extend_from_slice(b);
    }
    fn get(r: &mut Cursor<'a>) -> Result<Cow<'a, [u8]>, FieldError> {
        let n = r.u64()?;
        Ok(Cow::Borrowed(r.take(n)?))
    }
}

/// A `u64` list: LEB128 count, then each item as LEB128.
#[inline]
pub fn put_u64_list(out: &mut Vec<u8>, items: &[u64]) {
    let items = &items[..items.len().min(MAX_LIST_ITEMS)];
    leb128::put_u64(out, items.len() as u64);
    for &v in items {
        leb128::put_u64(out, v);
    }
}

/// `s` cut to at most `max` bytes at a character boundary.
fn truncate_str(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Converts a decoded value that may borrow the input into one that does not.
pub trait IntoStatic {
    type Static;
    fn into_static(self) -> Self::Static;
}

macro_rules! plain_into_static {
    ($($t:ty),*) => {$(
        impl IntoStatic for $t {
            type Static = $t;
            #[inline]
            fn into_static(self) -> $t {
                self
            }
        }
    )*};
}
plain_into_static!(u64, u32, i32, u8, bool);

impl IntoStatic for Cow<'_, str> {
    type Static = Cow<'static, str>;
    fn into_static(self) -> Cow<'static, str> {
        Cow::Owned(self.into_owned())
    }
}

impl IntoStatic for Cow<'_, [u8]> {
    type Static = Cow<'static, [u8]>;
    fn into_static(self) -> Cow<'static, [u8]> {
        Cow::Owned(self.into_owned())
    }
}

impl IntoStatic for Cow<'_, [u64]> {
    type Static = Cow<'static, [u64]>;
    fn into_static(self) -> Cow<'static, [u64]> {
        Cow::Owned(self.into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncates_strings_at_char_boundaries() {
        assert_eq!(truncate_str("héllo", 2), "h");
        assert_eq!(truncate_str("héllo", 3), "hé");
        assert_eq!(truncate_str("abc", 10), "abc");
    }

    #[test]
    fn bad_lengths_are_errors() {
        let mut r = Cursor::new(&[0xff, 0xff, 0xff, 0xff, 0x0f, b'a']);
        assert!(matches!(
            <Cow<'_, str>>::get(&mut r),
            Err(FieldError::BadLength(_))
        ));
        let mut r = Cursor::new(&[5, 1, 2]);
        assert!(matches!(
            <Cow<'_, [u64]>>::get(&mut r),
            Err(FieldError::BadLength(5))
        ));
    }

    #[test]
    fn invalid_utf8_is_replaced_and_counted() {
        let mut r = Cursor::new(&[2, 0xff, b'a']);
        let s = <Cow<'_, str>>::get(&mut r).unwrap();
        assert_eq!(s, "\u{fffd}a");
        assert_eq!(r.lossy_strings, 1);
    }

    #[test]
    fn hresults_keep_their_bit_pattern() {
        let mut out = Vec::new();
        (0x8007_000Eu32 as i32).put(&mut out);
        assert_eq!(out.len(), 5);
        let v = i32::get(&mut Cursor::new(&out)).unwrap();
        assert_eq!(v as u32, 0x8007_000E);
    }
}
