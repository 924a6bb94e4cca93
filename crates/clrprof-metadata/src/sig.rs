//! ECMA-335 signature blobs (II.23.2): decoding into a small AST and C#-like formatting.
//!
//! Pure code: no `unsafe`, no I/O, never panics on any input (property-tested). Tokens in
//! signatures are left as tokens; formatting asks a caller-supplied resolver for their
//! names, e.g. [`MetadataRead::token_name`](crate::MetadataRead::token_name).
//!
//! ```
//! use clrprof_metadata::sig;
//! // instance !!0 M<T>(string, List<int>) — List`1 is TypeRef row 5.
//! let blob = [0x30, 0x01, 0x02, 0x1E, 0x00, 0x0E, 0x15, 0x12, 0x15, 0x01, 0x08];
//! let m = sig::parse_method(&blob).unwrap();
//! let names = |t: u32| if t == 0x0100_0005 { "System.Collections.Generic.List`1".to_string() } else { format!("{t:#x}") };
//! assert_eq!(sig::format_method_params(&m, &names), "string, System.Collections.Generic.List`1<int>");
//! assert_eq!(m.ret.format(&names), "!!0");
//! ```

use core::fmt;

/// Nesting limit for types inside types (pointers to arrays of generic instances …);
/// deeper blobs are rejected rather than risking the stack.
pub const MAX_DEPTH: u32 = 64;

/// Why a blob could not be decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SigError {
    /// The blob ended in the middle of an item.
    UnexpectedEnd,
    /// A compressed integer starting with `111xxxxx`.
    BadCompressedInt,
    /// A TypeDefOrRefOrSpec with tag 3.
    BadToken,
    /// An element type byte this parser does not know (or not allowed here).
    UnknownElementType(u8),
    /// The first byte is not the calling convention the parser expected.
    BadCallingConvention(u8),
    /// Types nested deeper than [`MAX_DEPTH`].
    TooDeep,
    /// A value too large to encode as a compressed integer.
    ValueTooLarge,
}

impl fmt::Display for SigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SigError::UnexpectedEnd => write!(f, "signature ends early"),
            SigError::BadCompressedInt => write!(f, "invalid compressed integer"),
            SigError::BadToken => write!(f, "invalid TypeDefOrRef token encoding"),
            SigError::UnknownElementType(b) => write!(f, "unknown element type {b:#04x}"),
            SigError::BadCallingConvention(b) => {
                write!(f, "unexpected calling convention {b:#04x}")
            }
            SigError::TooDeep => write!(f, "signature nested deeper than {MAX_DEPTH}"),
            SigError::ValueTooLarge => write!(f, "value too large for a compressed integer"),
        }
    }
}

impl std::error::Error for SigError {}

// ---------------------------------------------------------------------------------------
// Compressed integers (II.23.2)
// ---------------------------------------------------------------------------------------

/// Decodes an unsigned compressed integer: `(value, bytes used)`.
/// `0xxxxxxx` is 1 byte, `10xxxxxx` 2 bytes, `110xxxxx` 4 bytes (big-endian payload).
pub fn decode_compressed_u32(bytes: &[u8]) -> Result<(u32, usize), SigError> {
    let b0 = *bytes.first().ok_or(SigError::UnexpectedEnd)?;
    if b0 & 0x80 == 0 {
        Ok((u32::from(b0), 1))
    } else if b0 & 0xC0 == 0x80 {
        let b1 = *bytes.get(1).ok_or(SigError::UnexpectedEnd)?;
        Ok(((u32::from(b0 & 0x3F) << 8) | u32::from(b1), 2))
    } else if b0 & 0xE0 == 0xC0 {
        let rest = bytes.get(1..4).ok_or(SigError::UnexpectedEnd)?;
        let v = (u32::from(b0 & 0x1F) << 24)
            | (u32::from(rest[0]) << 16)
            | (u32::from(rest[1]) << 8)
            | u32::from(rest[2]);
        Ok((v, 4))
    } else {
        Err(SigError::BadCompressedInt)
    }
}

/// Decodes a signed compressed integer (array lower bounds): the unsigned encoding of the
/// value rotated left by one within 7, 14 or 29 bits, sign bit last.
pub fn decode_compressed_i32(bytes: &[u8]) -> Result<(i32, usize), SigError> {
    let (u, n) = decode_compressed_u32(bytes)?;
    let magnitude = (u >> 1) as i32;
    let value = if u & 1 == 0 {
        magnitude
    } else {
        let sign_fill: u32 = match n {
            1 => 0xFFFF_FFC0,
            2 => 0xFFFF_E000,
            _ => 0xF000_0000,
        };
        (sign_fill | (u >> 1)) as i32
    };
    Ok((value, n))
}

/// Appends the compressed encoding of `v` (at most `0x1FFF_FFFF`).
pub fn encode_compressed_u32(v: u32, out: &mut Vec<u8>) -> Result<(), SigError> {
    match v {
        0..=0x7F => out.push(v as u8),
        0x80..=0x3FFF => out.extend_from_slice(&[0x80 | (v >> 8) as u8, v as u8]),
        0x4000..=0x1FFF_FFFF => out.extend_from_slice(&[
            0xC0 | (v >> 24) as u8,
            (v >> 16) as u8,
            (v >> 8) as u8,
            v as u8,
        ]),
        _ => return Err(SigError::ValueTooLarge),
    }
    Ok(())
}

/// Decodes a compressed TypeDefOrRefOrSpec (II.23.2.8) into a full token:
/// tag 0 TypeDef (`0x02…`), 1 TypeRef (`0x01…`), 2 TypeSpec (`0x1B…`).
pub fn decode_type_def_or_ref(bytes: &[u8]) -> Result<(u32, usize), SigError> {
    let (v, n) = decode_compressed_u32(bytes)?;
    let table = match v & 3 {
        0 => 0x0200_0000,
        1 => 0x0100_0000,
        2 => 0x1B00_0000,
        _ => return Err(SigError::BadToken),
    };
    Ok((table | (v >> 2), n))
}

// ---------------------------------------------------------------------------------------
// The AST
// ---------------------------------------------------------------------------------------

/// A type in a signature.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Type {
    Void,
    Bool,
    Char,
    I1,
    U1,
    I2,
    U2,
    I4,
    U4,
    I8,
    U8,
    R4,
    R8,
    String,
    /// `native int`.
    I,
    /// `native unsigned int`.
    U,
    Object,
    TypedByRef,
    /// `VALUETYPE` with its TypeDef / TypeRef / TypeSpec token.
    ValueType(u32),
    /// `CLASS` with its token.
    Class(u32),
    /// A type's generic parameter (`!n`).
    Var(u32),
    /// A method's generic parameter (`!!n`).
    MVar(u32),
    Ptr(Box<Type>),
    ByRef(Box<Type>),
    /// A pinned local.
    Pinned(Box<Type>),
    /// Single-dimension, zero-based array (`T[]`).
    SzArray(Box<Type>),
    /// General array: rank, then the sizes and lower bounds given (possibly fewer than rank).
    Array {
        element: Box<Type>,
        rank: u32,
        sizes: Vec<u32>,
        lower_bounds: Vec<i32>,
    },
    /// `GENERICINST (CLASS | VALUETYPE) token args`.
    GenericInst {
        value_type: bool,
        token: u32,
        args: Vec<Type>,
    },
    /// A function pointer type.
    FnPtr(Box<MethodSig>),
    /// `CMOD_REQD` (`required`) or `CMOD_OPT` applied to `inner`.
    Modified {
        required: bool,
        modifier: u32,
        inner: Box<Type>,
    },
    /// `ELEMENT_TYPE_INTERNAL`: a runtime type handle (only in runtime-made signatures).
    Internal(u64),
    /// `ELEMENT_TYPE_CMOD_INTERNAL`: a custom modifier given as a runtime type handle
    /// (only in runtime-made signatures).
    InternalModified {
        required: bool,
        handle: u64,
        inner: Box<Type>,
    },
}

/// The calling convention kind (low nibble of the first byte).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallKind {
    Default,
    C,
    StdCall,
    ThisCall,
    FastCall,
    VarArg,
    Unmanaged,
    NativeVarArg,
}

/// A method (MethodDefSig, MethodRefSig or StandAloneMethodSig).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MethodSig {
    /// `HASTHIS`: an instance method.
    pub has_this: bool,
    /// `EXPLICITTHIS`: `this` is the first entry of `params`.
    pub explicit_this: bool,
    pub kind: CallKind,
    /// Number of the method's own generic parameters (0 if not generic).
    pub generic_params: u32,
    pub ret: Type,
    pub params: Vec<Type>,
    /// For vararg call sites: the index in `params` where the `SENTINEL` stood.
    pub sentinel: Option<usize>,
}

/// A PropertySig.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PropertySig {
    pub has_this: bool,
    pub ty: Type,
    pub params: Vec<Type>,
}

/// Any signature blob, classified by its first byte.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Signature {
    Method(MethodSig),
    /// A FieldSig's type.
    Field(Type),
    Property(PropertySig),
    /// A LocalVarSig.
    Locals(Vec<Type>),
    /// A MethodSpec's generic arguments.
    MethodSpec(Vec<Type>),
}

// ---------------------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------------------

const CALLCONV_MASK: u8 = 0x0F;
const GENERIC: u8 = 0x10;
const HASTHIS: u8 = 0x20;
const EXPLICITTHIS: u8 = 0x40;
const FIELD: u8 = 0x06;
const LOCAL_SIG: u8 = 0x07;
const PROPERTY: u8 = 0x08;
const GENERICINST: u8 = 0x0A;
const SENTINEL: u8 = 0x41;

struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn remaining(&self) -> usize {
        self.data.len().saturating_sub(self.pos)
    }

    fn peek(&self) -> Option<u8> {
        self.data.get(self.pos).copied()
    }

    fn byte(&mut self) -> Result<u8, SigError> {
        let b = self.peek().ok_or(SigError::UnexpectedEnd)?;
        self.pos += 1;
        Ok(b)
    }

    fn rest(&self) -> &[u8] {
        self.data.get(self.pos..).unwrap_or(&[])
    }

    fn compressed(&mut self) -> Result<u32, SigError> {
        let (v, n) = decode_compressed_u32(self.rest())?;
        self.pos += n;
        Ok(v)
    }

    fn signed(&mut self) -> Result<i32, SigError> {
        let (v, n) = decode_compressed_i32(self.rest())?;
        self.pos += n;
        Ok(v)
    }

    fn token(&mut self) -> Result<u32, SigError> {
        let (v, n) = decode_type_def_or_ref(self.rest())?;
        self.pos += n;
        Ok(v)
    }

    /// A pointer-sized runtime handle (little-endian, this target's pointer size).
    fn handle(&mut self) -> Result<u64, SigError> {
        const N: usize = size_of::<usize>();
        let raw = self.rest().get(..N).ok_or(SigError::UnexpectedEnd)?;
        let mut le = [0u8; 8];
        le[..N].copy_from_slice(raw);
        self.pos += N;
        Ok(u64::from_le_bytes(le))
    }

    /// A count of items that each take at least one byte: capacity is capped by what is
    /// left, so a bogus count cannot allocate much.
    fn capacity(&self, count: u32) -> usize {
        (count as usize).min(self.remaining())
    }

    fn types(&mut self, count: u32, depth: u32) -> Result<Vec<Type>, SigError> {
        let mut v = Vec::with_capacity(self.capacity(count));
        for _ in 0..count {
            v.push(self.ty(depth)?);
        }
        Ok(v)
    }

    fn ty(&mut self, depth: u32) -> Result<Type, SigError> {
        if depth > MAX_DEPTH {
            return Err(SigError::TooDeep);
        }
        let d = depth + 1;
        let b = self.byte()?;
        Ok(match b {
            0x01 => Type::Void,
            0x02 => Type::Bool,
            0x03 => Type::Char,
            0x04 => Type::I1,
            0x05 => Type::U1,
            0x06 => Type::I2,
            0x07 => Type::U2,
            0x08 => Type::I4,
            0x09 => Type::U4,
            0x0A => Type::I8,
            0x0B => Type::U8,
            0x0C => Type::R4,
            0x0D => Type::R8,
            0x0E => Type::String,
            0x0F => Type::Ptr(Box::new(self.ty(d)?)),
            0x10 => Type::ByRef(Box::new(self.ty(d)?)),
            0x11 => Type::ValueType(self.token()?),
            0x12 => Type::Class(self.token()?),
            0x13 => Type::Var(self.compressed()?),
            0x14 => {
                let element = Box::new(self.ty(d)?);
                let rank = self.compressed()?;
                let n_sizes = self.compressed()?;
                let mut sizes = Vec::with_capacity(self.capacity(n_sizes));
                for _ in 0..n_sizes {
                    sizes.push(self.compressed()?);
                }
                let n_bounds = self.compressed()?;
                let mut lower_bounds = Vec::with_capacity(self.capacity(n_bounds));
                for _ in 0..n_bounds {
                    lower_bounds.push(self.signed()?);
                }
                Type::Array {
                    element,
                    rank,
                    sizes,
                    lower_bounds,
                }
            }
            0x15 => {
                let value_type = match self.byte()? {
                    0x11 => true,
                    0x12 => false,
                    other => return Err(SigError::UnknownElementType(other)),
                };
                let token = self.token()?;
                let count = self.compressed()?;
                let args = self.types(count, d)?;
                Type::GenericInst {
                    value_type,
                    token,
                    args,
                }
            }
            0x16 => Type::TypedByRef,
            0x18 => Type::I,
            0x19 => Type::U,
            0x1B => Type::FnPtr(Box::new(self.method(d)?)),
            0x1C => Type::Object,
            0x1D => Type::SzArray(Box::new(self.ty(d)?)),
            0x1E => Type::MVar(self.compressed()?),
            0x1F | 0x20 => {
                let modifier = self.token()?;
                let inner = Box::new(self.ty(d)?);
                Type::Modified {
                    required: b == 0x1F,
                    modifier,
                    inner,
                }
            }
            0x21 => Type::Internal(self.handle()?),
            0x22 => {
                let required = self.byte()? != 0;
                let handle = self.handle()?;
                let inner = Box::new(self.ty(d)?);
                Type::InternalModified {
                    required,
                    handle,
                    inner,
                }
            }
            0x45 => Type::Pinned(Box::new(self.ty(d)?)),
            other => return Err(SigError::UnknownElementType(other)),
        })
    }

    /// A method signature, from its calling-convention byte.
    fn method(&mut self, depth: u32) -> Result<MethodSig, SigError> {
        if depth > MAX_DEPTH {
            return Err(SigError::TooDeep);
        }
        let b = self.byte()?;
        let kind = match b & CALLCONV_MASK {
            0x0 => CallKind::Default,
            0x1 => CallKind::C,
            0x2 => CallKind::StdCall,
            0x3 => CallKind::ThisCall,
            0x4 => CallKind::FastCall,
            0x5 => CallKind::VarArg,
            0x9 => CallKind::Unmanaged,
            0xB => CallKind::NativeVarArg,
            _ => return Err(SigError::BadCallingConvention(b)),
        };
        let generic_params = if b & GENERIC != 0 {
            self.compressed()?
        } else {
            0
        };
        let count = self.compressed()?;
        let ret = self.ty(depth + 1)?;
        let mut params = Vec::with_capacity(self.capacity(count));
        let mut sentinel = None;
        for i in 0..count as usize {
            if self.peek() == Some(SENTINEL) && sentinel.is_none() {
                self.pos += 1;
                sentinel = Some(i);
            }
            params.push(self.ty(depth + 1)?);
        }
        Ok(MethodSig {
            has_this: b & HASTHIS != 0,
            explicit_this: b & EXPLICITTHIS != 0,
            kind,
            generic_params,
            ret,
            params,
            sentinel,
        })
    }
}

/// Parses a method signature (MethodDefSig / MethodRefSig / StandAloneMethodSig).
pub fn parse_method(blob: &[u8]) -> Result<MethodSig, SigError> {
    Reader { data: blob, pos: 0 }.method(0)
}

/// Parses a FieldSig (`0x06` then the type, custom modifiers included).
pub fn parse_field(blob: &[u8]) -> Result<Type, SigError> {
    let mut r = Reader { data: blob, pos: 0 };
    let b = r.byte()?;
    if b & CALLCONV_MASK != FIELD {
        return Err(SigError::BadCallingConvention(b));
    }
    r.ty(0)
}

/// Parses a TypeSpec blob (a single type).
pub fn parse_type(blob: &[u8]) -> Result<Type, SigError> {
    Reader { data: blob, pos: 0 }.ty(0)
}

/// Parses any signature blob, classified by its first byte.
pub fn parse(blob: &[u8]) -> Result<Signature, SigError> {
    let mut r = Reader { data: blob, pos: 0 };
    let b = r.peek().ok_or(SigError::UnexpectedEnd)?;
    match b & CALLCONV_MASK {
        FIELD => parse_field(blob).map(Signature::Field),
        LOCAL_SIG => {
            r.pos += 1;
            let count = r.compressed()?;
            r.types(count, 0).map(Signature::Locals)
        }
        PROPERTY => {
            r.pos += 1;
            let count = r.compressed()?;
            let ty = r.ty(0)?;
            let params = r.types(count, 0)?;
            Ok(Signature::Property(PropertySig {
                has_this: b & HASTHIS != 0,
                ty,
                params,
            }))
        }
        GENERICINST => {
            r.pos += 1;
            let count = r.compressed()?;
            r.types(count, 0).map(Signature::MethodSpec)
        }
        _ => r.method(0).map(Signature::Method),
    }
}

// ---------------------------------------------------------------------------------------
// Formatting
// ---------------------------------------------------------------------------------------

/// Resolves a TypeDef / TypeRef / TypeSpec token to a name.
pub type Resolver<'a> = &'a dyn Fn(u32) -> String;

impl Type {
    /// C#-like text: `int`, `string[]`, `ref long`, ``System.Collections.Generic.List`1<int>``,
    /// `!0` (type parameter), `!!0` (method parameter), `void*`, `int[,]` (`[*]` for a rank-1 general array).
    pub fn format(&self, resolve: Resolver<'_>) -> String {
        let mut s = String::new();
        self.write(&mut s, resolve);
        s
    }

    fn write(&self, out: &mut String, resolve: Resolver<'_>) {
        let simple = match self {
            Type::Void => "void",
            Type::Bool => "bool",
            Type::Char => "char",
            Type::I1 => "sbyte",
            Type::U1 => "byte",
            Type::I2 => "short",
            Type::U2 => "ushort",
            Type::I4 => "int",
            Type::U4 => "uint",
            Type::I8 => "long",
            Type::U8 => "ulong",
            Type::R4 => "float",
            Type::R8 => "double",
            Type::String => "string",
            Type::I => "nint",
            Type::U => "nuint",
            Type::Object => "object",
            Type::TypedByRef => "TypedReference",
            _ => "",
        };
        if !simple.is_empty() {
            out.push_str(simple);
            return;
        }
        match self {
            Type::ValueType(t) | Type::Class(t) => out.push_str(&resolve(*t)),
            Type::Var(n) => out.push_str(&format!("!{n}")),
            Type::MVar(n) => out.push_str(&format!("!!{n}")),
            Type::Ptr(t) => {
                t.write(out, resolve);
                out.push('*');
            }
            Type::ByRef(t) => {
                out.push_str("ref ");
                t.write(out, resolve);
            }
            Type::Pinned(t) => {
                t.write(out, resolve);
                out.push_str(" pinned");
            }
            Type::SzArray(t) => {
                t.write(out, resolve);
                out.push_str("[]");
            }
            Type::Array { element, rank, .. } => {
                element.write(out, resolve);
                out.push('[');
                if *rank <= 1 {
                    out.push('*');
                } else {
                    // Rank is attacker-sized in a bogus blob: cap the commas.
                    for _ in 1..(*rank).min(32) {
                        out.push(',');
                    }
                }
                out.push(']');
            }
            Type::GenericInst { token, args, .. } => {
                out.push_str(&resolve(*token));
                out.push('<');
                write_list(out, args, resolve);
                out.push('>');
            }
            Type::FnPtr(m) => {
                out.push_str("delegate*");
                if !matches!(m.kind, CallKind::Default | CallKind::VarArg) {
                    out.push_str(" unmanaged");
                }
                out.push('<');
                for p in &m.params {
                    p.write(out, resolve);
                    out.push_str(", ");
                }
                m.ret.write(out, resolve);
                out.push('>');
            }
            Type::Modified {
                required,
                modifier,
                inner,
            } => {
                inner.write(out, resolve);
                out.push_str(if *required { " modreq(" } else { " modopt(" });
                out.push_str(&resolve(*modifier));
                out.push(')');
            }
            Type::Internal(handle) => out.push_str(&format!("internal@{handle:#x}")),
            Type::InternalModified {
                required,
                handle,
                inner,
            } => {
                inner.write(out, resolve);
                out.push_str(if *required { " modreq(" } else { " modopt(" });
                out.push_str(&format!("internal@{handle:#x})"));
            }
            _ => {}
        }
    }
}

fn write_list(out: &mut String, types: &[Type], resolve: Resolver<'_>) {
    for (i, t) in types.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        t.write(out, resolve);
    }
}

impl MethodSig {
    /// The parameter list without parentheses: `int, string, !!0`; a vararg sentinel shows
    /// as `...`.
    pub fn format_params(&self, resolve: Resolver<'_>) -> String {
        let mut out = String::new();
        for (i, p) in self.params.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            if self.sentinel == Some(i) {
                out.push_str("..., ");
            }
            p.write(&mut out, resolve);
        }
        if self.sentinel == Some(self.params.len())
            || (self.kind == CallKind::VarArg && self.sentinel.is_none())
        {
            if !self.params.is_empty() {
                out.push_str(", ");
            }
            out.push_str("...");
        }
        out
    }

    /// `ret name(params)`, with `<!!0, !!1>` after the name for generic methods.
    pub fn format(&self, name: &str, resolve: Resolver<'_>) -> String {
        let mut out = self.ret.format(resolve);
        out.push(' ');
        out.push_str(name);
        if self.generic_params > 0 {
            out.push('<');
            for i in 0..self.generic_params.min(64) {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&format!("!!{i}"));
            }
            out.push('>');
        }
        out.push('(');
        out.push_str(&self.format_params(resolve));
        out.push(')');
        out
    }
}

/// Same as [`MethodSig::format_params`].
pub fn format_method_params(sig: &MethodSig, resolve: Resolver<'_>) -> String {
    sig.format_params(resolve)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(t: u32) -> String {
        match t {
            0x0100_0005 => "System.Collections.Generic.List`1".into(),
            0x0200_0002 => "MyApp.Point".into(),
            0x0100_0007 => "System.Runtime.CompilerServices.IsVolatile".into(),
            _ => format!("tok{t:08x}"),
        }
    }

    fn tok(table_tag: u32, row: u32) -> u8 {
        ((row << 2) | table_tag) as u8
    }

    #[test]
    fn compressed_unsigned_examples_from_ecma() {
        let cases: &[(&[u8], u32)] = &[
            (&[0x03], 0x03),
            (&[0x7F], 0x7F),
            (&[0x80, 0x80], 0x80),
            (&[0xAE, 0x57], 0x2E57),
            (&[0xBF, 0xFF], 0x3FFF),
            (&[0xC0, 0x00, 0x40, 0x00], 0x4000),
            (&[0xDF, 0xFF, 0xFF, 0xFF], 0x1FFF_FFFF),
        ];
        for (bytes, v) in cases {
            assert_eq!(
                decode_compressed_u32(bytes),
                Ok((*v, bytes.len())),
                "{bytes:x?}"
            );
            let mut enc = Vec::new();
            encode_compressed_u32(*v, &mut enc).unwrap();
            assert_eq!(&enc[..], *bytes);
        }
        assert_eq!(
            decode_compressed_u32(&[0xE0]),
            Err(SigError::BadCompressedInt)
        );
        assert_eq!(
            decode_compressed_u32(&[0xC0, 0]),
            Err(SigError::UnexpectedEnd)
        );
        assert_eq!(decode_compressed_u32(&[]), Err(SigError::UnexpectedEnd));
        assert_eq!(
            encode_compressed_u32(0x2000_0000, &mut Vec::new()),
            Err(SigError::ValueTooLarge)
        );
    }

    #[test]
    fn compressed_signed_examples_from_ecma() {
        let cases: &[(&[u8], i32)] = &[
            (&[0x06], 3),
            (&[0x7B], -3),
            (&[0x80, 0x80], 64),
            (&[0x01], -64),
            (&[0xC0, 0x00, 0x40, 0x00], 8192),
            (&[0x80, 0x01], -8192),
            (&[0xDF, 0xFF, 0xFF, 0xFE], 268_435_455),
            (&[0xC0, 0x00, 0x00, 0x01], -268_435_456),
        ];
        for (bytes, v) in cases {
            assert_eq!(
                decode_compressed_i32(bytes),
                Ok((*v, bytes.len())),
                "{bytes:x?}"
            );
        }
    }

    #[test]
    fn type_def_or_ref_tokens() {
        assert_eq!(decode_type_def_or_ref(&[0x49]), Ok((0x0100_0012, 1)));
        assert_eq!(decode_type_def_or_ref(&[0x08]), Ok((0x0200_0002, 1)));
        assert_eq!(decode_type_def_or_ref(&[0x0A]), Ok((0x1B00_0002, 1)));
        assert_eq!(decode_type_def_or_ref(&[0x0B]), Err(SigError::BadToken));
    }

    #[test]
    fn static_main() {
        // static void Main(string[] args)
        let m = parse_method(&[0x00, 0x01, 0x01, 0x1D, 0x0E]).unwrap();
        assert!(!m.has_this);
        assert_eq!(m.kind, CallKind::Default);
        assert_eq!(m.ret, Type::Void);
        assert_eq!(m.params, vec![Type::SzArray(Box::new(Type::String))]);
        assert_eq!(m.format("Main", &names), "void Main(string[])");
    }

    #[test]
    fn generic_instance_method() {
        // instance int M<T>(string, List<int>, !!0)
        let blob = [
            0x30,
            0x01,
            0x03,
            0x08,
            0x0E,
            0x15,
            0x12,
            tok(1, 5),
            0x01,
            0x08,
            0x1E,
            0x00,
        ];
        let m = parse_method(&blob).unwrap();
        assert!(m.has_this);
        assert_eq!(m.generic_params, 1);
        assert_eq!(
            format_method_params(&m, &names),
            "string, System.Collections.Generic.List`1<int>, !!0"
        );
        assert_eq!(
            m.format("M", &names),
            "int M<!!0>(string, System.Collections.Generic.List`1<int>, !!0)"
        );
    }

    #[test]
    fn vararg_sentinel() {
        // vararg int f(int, ..., string)
        let m = parse_method(&[0x05, 0x02, 0x08, 0x08, 0x41, 0x0E]).unwrap();
        assert_eq!(m.kind, CallKind::VarArg);
        assert_eq!(m.sentinel, Some(1));
        assert_eq!(m.format_params(&names), "int, ..., string");
    }

    #[test]
    fn arrays_pointers_byref_valuetype() {
        // void f(int[,], void*, ref long, MyApp.Point, TypedReference, nint, object, char)
        let blob = [
            0x00,
            0x08,
            0x01,
            0x14,
            0x08,
            0x02,
            0x00,
            0x00,
            0x0F,
            0x01,
            0x10,
            0x0A,
            0x11,
            tok(0, 2),
            0x16,
            0x18,
            0x1C,
            0x03,
        ];
        let m = parse_method(&blob).unwrap();
        assert_eq!(
            m.format_params(&names),
            "int[,], void*, ref long, MyApp.Point, TypedReference, nint, object, char"
        );
    }

    #[test]
    fn array_with_sizes_and_bounds() {
        // int32[-3...,5] : rank 2, 1 size (5 at dim 1? sizes apply in order), 1 lower bound -3
        let t = parse_type(&[0x14, 0x08, 0x02, 0x01, 0x05, 0x01, 0x7B]).unwrap();
        assert_eq!(
            t,
            Type::Array {
                element: Box::new(Type::I4),
                rank: 2,
                sizes: vec![5],
                lower_bounds: vec![-3]
            }
        );
    }

    #[test]
    fn field_with_custom_modifier() {
        // volatile int field: FIELD CMOD_REQD IsVolatile I4
        let t = parse_field(&[0x06, 0x1F, tok(1, 7), 0x08]).unwrap();
        assert_eq!(
            t.format(&names),
            "int modreq(System.Runtime.CompilerServices.IsVolatile)"
        );
        assert_eq!(
            parse_field(&[0x00, 0x08]),
            Err(SigError::BadCallingConvention(0))
        );
    }

    #[test]
    fn function_pointer() {
        // delegate*<int, void>
        let t = parse_type(&[0x1B, 0x00, 0x01, 0x01, 0x08]).unwrap();
        assert_eq!(t.format(&names), "delegate*<int, void>");
        // delegate* unmanaged<void> (C)
        let t = parse_type(&[0x1B, 0x01, 0x00, 0x01]).unwrap();
        assert_eq!(t.format(&names), "delegate* unmanaged<void>");
    }

    #[test]
    fn other_signature_kinds() {
        // locals: pinned ref int, string
        assert_eq!(
            parse(&[0x07, 0x02, 0x45, 0x10, 0x08, 0x0E]).unwrap(),
            Signature::Locals(vec![
                Type::Pinned(Box::new(Type::ByRef(Box::new(Type::I4)))),
                Type::String
            ])
        );
        // instance property int Item[string]
        assert_eq!(
            parse(&[0x28, 0x01, 0x08, 0x0E]).unwrap(),
            Signature::Property(PropertySig {
                has_this: true,
                ty: Type::I4,
                params: vec![Type::String]
            })
        );
        // method spec <int, !0>
        assert_eq!(
            parse(&[0x0A, 0x02, 0x08, 0x13, 0x00]).unwrap(),
            Signature::MethodSpec(vec![Type::I4, Type::Var(0)])
        );
        assert!(matches!(
            parse(&[0x06, 0x0E]).unwrap(),
            Signature::Field(Type::String)
        ));
        assert!(matches!(
            parse(&[0x20, 0x00, 0x01]).unwrap(),
            Signature::Method(_)
        ));
    }

    #[test]
    fn generic_valuetype_instance_and_type_var() {
        // KeyValuePair`2<!0, string> as a valuetype generic inst with TypeDef row 2
        let t = parse_type(&[0x15, 0x11, tok(0, 2), 0x02, 0x13, 0x00, 0x0E]).unwrap();
        assert_eq!(t.format(&names), "MyApp.Point<!0, string>");
        assert_eq!(
            parse_type(&[0x15, 0x08]),
            Err(SigError::UnknownElementType(0x08))
        );
    }

    #[test]
    #[cfg(target_pointer_width = "64")]
    fn runtime_internal_elements() {
        let mut blob = vec![0x21];
        blob.extend_from_slice(&0x1234_5678_9ABC_u64.to_le_bytes());
        assert_eq!(parse_type(&blob).unwrap(), Type::Internal(0x1234_5678_9ABC));
        let mut blob = vec![0x22, 0x01];
        blob.extend_from_slice(&0x10_u64.to_le_bytes());
        blob.push(0x08);
        let t = parse_type(&blob).unwrap();
        assert_eq!(t.format(&names), "int modreq(internal@0x10)");
        assert_eq!(parse_type(&[0x21, 1, 2]), Err(SigError::UnexpectedEnd));
    }

    #[test]
    fn errors() {
        assert_eq!(parse_method(&[]), Err(SigError::UnexpectedEnd));
        assert_eq!(
            parse_method(&[0x00, 0x01, 0x08]),
            Err(SigError::UnexpectedEnd)
        );
        assert_eq!(
            parse_method(&[0x06, 0x00, 0x01]),
            Err(SigError::BadCallingConvention(6))
        );
        assert_eq!(parse_type(&[0x17]), Err(SigError::UnknownElementType(0x17)));
        assert_eq!(parse_type(&[0x41]), Err(SigError::UnknownElementType(0x41)));
        let deep = vec![0x0F; 10_000];
        assert_eq!(parse_type(&deep), Err(SigError::TooDeep));
        // A huge count with no data behind it fails without a huge allocation.
        assert_eq!(
            parse_method(&[0x00, 0xDF, 0xFF, 0xFF, 0xFF, 0x01]),
            Err(SigError::UnexpectedEnd)
        );
    }

    mod props {
        use super::super::*;
        use proptest::prelude::*;

        fn any_name(t: u32) -> String {
            format!("T{t:x}")
        }

        proptest! {
            #[test]
            fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
                let _ = parse(&bytes);
                let _ = parse_field(&bytes);
                let _ = parse_type(&bytes);
                if let Ok(m) = parse_method(&bytes) {
                    let _ = m.format("f", &any_name);
                }
                if let Ok(t) = parse_type(&bytes) {
                    let _ = t.format(&any_name);
                }
                let _ = decode_compressed_i32(&bytes);
                let _ = decode_type_def_or_ref(&bytes);
            }

            #[test]
            fn structured_prefixes_never_panic(
                head in prop::sample::select(vec![0x00u8, 0x05, 0x06, 0x07, 0x08, 0x0A, 0x10, 0x20, 0x30]),
                tail in proptest::collection::vec(
                    prop::sample::select(vec![
                        0x00u8, 0x01, 0x08, 0x0E, 0x0F, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x1B,
                        0x1D, 0x1E, 0x1F, 0x20, 0x21, 0x22, 0x41, 0x45, 0x80, 0xC0, 0xFF,
                    ]),
                    0..64,
                ),
            ) {
                let mut bytes = vec![head];
                bytes.extend(tail);
                if let Ok(Signature::Method(m)) = parse(&bytes) {
                    let _ = m.format("f", &any_name);
                }
            }

            #[test]
            fn compressed_roundtrip(v in 0u32..=0x1FFF_FFFF) {
                let mut enc = Vec::new();
                encode_compressed_u32(v, &mut enc).unwrap();
                prop_assert_eq!(decode_compressed_u32(&enc), Ok((v, enc.len())));
            }
        }
    }
}
