//! Argument and return values (`--args`): a typed, compact encoding of what a call was
//! given or returned, carried by the `values` field of `CallArgs` / `CallReturn`.
//!
//! The agent writes it with [`ValueWriter`] into a fixed buffer (the per-call bound: no
//! allocation in the hook); what does not fit is cut: the writer goes back to the last
//! complete value, writes a [`CUT`] marker and closes the containers still open, so a
//! cut list still decodes. [`decode_items`] reads it back into [`Item`]s.
//!
//! ```text
//! list   := item* [CUT]
//! item   := ITEM name:str type:str value
//!         | PARAM index:uleb value                     (name and type from the function's
//!                                                       `ArgNames` record; since 1.2)
//! value  := NULL | BOOL u8 | CHAR uleb | INT zigzag | UINT uleb | F32 4 bytes | F64 8 bytes
//!         | STR full_length:uleb text:str            (text may be cut: full_length says)
//!         | ENUM type:str member:str zigzag            (member "" when none matches)
//!         | OBJECT type:str id:uleb fields              (a class instance, fields read)
//!         | OBJREF type:str id:uleb                     (fields not read: depth limit)
//!         | BOXED type:str id:uleb value
//!         | ARRAY element_type:str rank:uleb length:uleb value* END
//!         | STRUCT type:str fields
//!         | CLASS_STRUCT class:uleb value* END         (a struct of a `ValueClass` record:
//!                                                       its name and its fields' names
//!                                                       there, the values in their order;
//!                                                       since 2.6)
//!         | ADDRESS kind:str address:uleb               (ptr, fnptr, byref, …)
//!         | BYREF address:uleb value                    (a managed pointer and its target)
//!         | TYPEDREF type:str address:uleb
//!         | UNREADABLE reason:str
//!         | CUT                                         (the bound was reached here)
//! fields := (ITEM name:str value)* END
//! str    := uleb length, UTF-8 bytes
//! names  := (name:str type:str)*                      (an `ArgNames` record's pairs)
//! fnames := name:str*                                 (a `ValueClass` record's fields)
//! ```

use std::collections::HashMap;

use crate::leb128;

pub const NULL: u8 = 0;
pub const BOOL: u8 = 1;
pub const CHAR: u8 = 2;
pub const INT: u8 = 3;
pub const UINT: u8 = 4;
pub const F32: u8 = 5;
pub const F64: u8 = 6;
pub const STR: u8 = 7;
pub const ENUM: u8 = 8;
pub const OBJECT: u8 = 9;
pub const OBJREF: u8 = 10;
pub const BOXED: u8 = 11;
pub const ARRAY: u8 = 12;
pub const STRUCT: u8 = 13;
pub const ADDRESS: u8 = 14;
pub const BYREF: u8 = 15;
pub const TYPEDREF: u8 = 16;
pub const UNREADABLE: u8 = 17;
pub const CLASS_STRUCT: u8 = 18;
pub const ITEM: u8 = 0x40;
pub const PARAM: u8 = 0x41;
pub const END: u8 = 0x7e;
pub const CUT: u8 = 0x7f;

/// Deepest nesting the writer opens (containers beyond are not entered).
pub const MAX_NESTING: u32 = 16;
/// Bytes kept free for the cut marker and the END of every open container.
const RESERVE: usize = MAX_NESTING as usize + 2;

/// Writes a value list into a fixed buffer, cutting at its end.
pub struct ValueWriter<'b> {
    buf: &'b mut [u8],
    pos: usize,
    /// `n` more bytes fit while `pos + n < end`: the buffer's length less the reserve,
    /// plus one; 0 once cut (and for a buffer no larger than the reserve), so that one
    /// compare answers.
    end: usize,
    depth: u32,
    /// Position and depth after the last complete value or container opening.
    safe: (usize, u32),
    cut: bool,
}

impl<'b> ValueWriter<'b> {
    /// A writer bounded by `buf`'s length (which must exceed the reserve, ~20 bytes, to
    /// hold anything).
    #[inline]
    pub fn new(buf: &'b mut [u8]) -> ValueWriter<'b> {
        let end = (buf.len() + 1).saturating_sub(RESERVE);
        ValueWriter {
            buf,
            pos: 0,
            end,
            depth: 0,
            safe: (0, 0),
            cut: false,
        }
    }

    /// Whether something was cut.
    #[inline]
    pub fn was_cut(&self) -> bool {
        self.cut
    }

    /// Current nesting depth (open containers).
    #[inline]
    pub fn depth(&self) -> u32 {
        self.depth
    }

    #[inline(always)]
    fn room(&self, n: usize) -> bool {
        self.pos + n < self.end
    }

    /// Nothing more is written (the bound, or the nesting limit, was reached).
    #[inline]
    fn cut_here(&mut self) {
        self.cut = true;
        self.end = 0;
    }

    /// `tag` then `v` as LEB128, in one room check when `v` takes at most 5 bytes (the
    /// same bytes as [`byte`](Self::byte) then [`uleb`](Self::uleb)).
    #[inline(always)]
    fn tagged_uleb(&mut self, tag: u8, v: u64) {
        if v < 0x80 && self.room(2) {
            // Most indices, lengths and small integers: two plain stores.
            let p = self.pos;
            self.buf[p] = tag;
            self.buf[p + 1] = v as u8;
            self.pos = p + 2;
            return;
        }
        if v < 1 << 35 && self.room(6) {
            // The reserve leaves the wide store's 8 bytes after the tag inside the buffer.
            let p = self.pos;
            self.buf[p] = tag;
            self.pos = p + 1 + leb128::put_u35_wide(&mut self.buf[p + 1..p + 9], v);
            return;
        }
        self.byte(tag);
        self.uleb(v);
    }

    #[inline]
    fn bytes(&mut self, b: &[u8]) {
        if self.room(b.len()) {
            copy_short(&mut self.buf[self.pos..self.pos + b.len()], b);
            self.pos += b.len();
        } else {
            self.cut_here();
        }
    }

    #[inline]
    fn byte(&mut self, b: u8) {
        if self.room(1) {
            self.buf[self.pos] = b;
            self.pos += 1;
        } else {
            self.cut_here();
        }
    }

    #[inline(always)]
    fn uleb(&mut self, v: u64) {
        // One byte (small ints, indices, lengths) inline, without the copy below; up to 5
        // in one store.
        if v < 0x80 {
            return self.byte(v as u8);
        }
        if v < 1 << 35 && self.room(5) {
            // The reserve leaves the wide store's 8 bytes inside the buffer.
            let p = self.pos;
            self.pos = p + leb128::put_u35_wide(&mut self.buf[p..p + 8], v);
            return;
        }
        self.uleb_long(v);
    }

    #[inline(never)]
    fn uleb_long(&mut self, v: u64) {
        if !self.room(leb128::len_u64(v)) {
            self.cut_here();
            return;
        }
        self.pos += leb128::write_u64(&mut self.buf[self.pos..], v);
    }

    #[inline]
    fn str(&mut self, s: &str) {
        self.uleb(s.len() as u64);
        self.bytes(s.as_bytes());
    }

    #[inline]
    fn done(&mut self) {
        if !self.cut {
            self.safe = (self.pos, self.depth);
        }
    }

    #[inline]
    fn open(&mut self) {
        if self.depth >= MAX_NESTING {
            self.cut_here();
        }
        self.depth += 1;
        self.done();
    }

    /// Starts a top-level argument or a field: the value must follow.
    #[inline]
    pub fn item(&mut self, name: &str, ty: Option<&str>) {
        self.byte(ITEM);
        self.str(name);
        if let Some(t) = ty {
            self.str(t);
        }
    }

    /// Starts a top-level value whose name and type are the function's `index`-th
    /// [`ArgNames`](crate::Event::ArgNames) pair: the value must follow.
    #[inline]
    pub fn param(&mut self, index: u32) {
        self.tagged_uleb(PARAM, u64::from(index));
    }

    #[inline]
    pub fn null(&mut self) {
        self.byte(NULL);
        self.done();
    }
    #[inline]
    pub fn bool(&mut self, v: bool) {
        self.bytes(&[BOOL, u8::from(v)]);
        self.done();
    }
    #[inline]
    pub fn char(&mut self, v: u16) {
        self.tagged_uleb(CHAR, u64::from(v));
        self.done();
    }
    #[inline]
    pub fn int(&mut self, v: i64) {
        self.tagged_uleb(INT, zigzag(v));
        self.done();
    }
    #[inline]
    pub fn uint(&mut self, v: u64) {
        self.tagged_uleb(UINT, v);
        self.done();
    }
    #[inline]
    pub fn f32(&mut self, v: f32) {
        let mut b = [F32, 0, 0, 0, 0];
        b[1..].copy_from_slice(&v.to_le_bytes());
        self.bytes(&b);
        self.done();
    }
    #[inline]
    pub fn f64(&mut self, v: f64) {
        let mut b = [F64, 0, 0, 0, 0, 0, 0, 0, 0];
        b[1..].copy_from_slice(&v.to_le_bytes());
        self.bytes(&b);
        self.done();
    }
    /// The primitive `v`, by its kind's method.
    #[inline]
    pub fn prim(&mut self, v: PrimValue) {
        match v {
            PrimValue::Bool(b) => self.bool(b),
            PrimValue::Char(c) => self.char(c),
            PrimValue::Int(x) => self.int(x),
            PrimValue::UInt(x) => self.uint(x),
            PrimValue::F32(x) => self.f32(x),
            PrimValue::F64(x) => self.f64(x),
        }
    }
    /// A string of `full_len` UTF-16 units of which `units` (a prefix) are given.
    #[inline]
    pub fn string_utf16(&mut self, full_len: u64, units: impl Iterator<Item = u16> + Clone) {
        self.byte(STR);
        self.uleb(full_len);
        let utf8_len: usize = char::decode_utf16(units.clone())
            .map(|c| c.unwrap_or('\u{fffd}').len_utf8())
            .sum();
        self.uleb(utf8_len as u64);
        if !self.room(utf8_len) {
            self.cut_here();
            return;
        }
        for c in char::decode_utf16(units) {
            let c = c.unwrap_or('\u{fffd}');
            let n = c.encode_utf8(&mut self.buf[self.pos..]).len();
            self.pos += n;
        }
        self.done();
    }
    /// [`string_utf16`](Self::string_utf16) of units held in memory: ASCII text (most
    /// strings an app passes) is copied a unit per byte in one pass, the same bytes.
    #[inline]
    pub fn string_utf16_units(&mut self, full_len: u64, units: &[u16]) {
        // One pass without an early exit (so it vectorises): ASCII if no unit has a bit
        // above the seventh.
        if units.iter().fold(0u16, |a, u| a | u) >= 0x80 {
            return self.string_utf16(full_len, units.iter().copied());
        }
        self.tagged_uleb(STR, full_len);
        self.uleb(units.len() as u64);
        let n = units.len();
        if !self.room(n) {
            self.cut_here();
            return;
        }
        let p = self.pos;
        for (b, u) in self.buf[p..p + n].iter_mut().zip(&units[..n]) {
            *b = *u as u8;
        }
        self.pos = p + n;
        self.done();
    }
    #[inline]
    pub fn string(&mut self, s: &str) {
        self.byte(STR);
        self.uleb(s.chars().map(|c| c.len_utf16() as u64).sum());
        self.str(s);
        self.done();
    }
    #[inline]
    pub fn enumeration(&mut self, ty: &str, member: &str, v: i64) {
        self.byte(ENUM);
        self.str(ty);
        self.str(member);
        self.uleb(zigzag(v));
        self.done();
    }
    /// Opens an object's field list; close it with [`end`](Self::end).
    #[inline]
    pub fn object(&mut self, ty: &str, id: u64) {
        self.byte(OBJECT);
        self.str(ty);
        self.uleb(id);
        self.open();
    }
    #[inline]
    pub fn object_ref(&mut self, ty: &str, id: u64) {
        self.byte(OBJREF);
        self.str(ty);
        self.uleb(id);
        self.done();
    }
    /// A boxed value: the inner value must follow.
    #[inline]
    pub fn boxed(&mut self, ty: &str, id: u64) {
        self.byte(BOXED);
        self.str(ty);
        self.uleb(id);
    }
    /// Opens an array's item list; close it with [`end`](Self::end).
    #[inline]
    pub fn array(&mut self, element: &str, rank: u32, length: u64) {
        self.byte(ARRAY);
        self.str(element);
        self.uleb(u64::from(rank));
        self.uleb(length);
        self.open();
    }
    /// Opens a value type's field list; close it with [`end`](Self::end).
    #[inline]
    pub fn structure(&mut self, ty: &str) {
        self.byte(STRUCT);
        self.str(ty);
        self.open();
    }
    /// Opens the field values of a value type whose name and field names the
    /// [`ValueClass`](crate::Event::ValueClass) record numbered `class` gives: each field
    /// is its value alone (no [`item`](Self::item)), in the record's order; close it with
    /// [`end`](Self::end).
    #[inline]
    pub fn structure_of(&mut self, class: u32) {
        self.tagged_uleb(CLASS_STRUCT, u64::from(class));
        self.open();
    }
    #[inline]
    pub fn address(&mut self, kind: &str, address: u64) {
        self.byte(ADDRESS);
        self.str(kind);
        self.uleb(address);
        self.done();
    }
    /// A managed pointer: the target's value must follow.
    #[inline]
    pub fn byref(&mut self, address: u64) {
        self.byte(BYREF);
        self.uleb(address);
    }
    #[inline]
    pub fn typed_ref(&mut self, ty: &str, address: u64) {
        self.byte(TYPEDREF);
        self.str(ty);
        self.uleb(address);
        self.done();
    }
    #[inline]
    pub fn unreadable(&mut self, reason: &str) {
        self.byte(UNREADABLE);
        self.str(reason);
        self.done();
    }
    /// Closes the innermost open container.
    #[inline]
    pub fn end(&mut self) {
        if self.depth == 0 {
            return;
        }
        if self.cut {
            // finish() closes what is still open at the safe point.
            self.depth -= 1;
            return;
        }
        // The reserve guarantees room for this byte.
        self.buf[self.pos] = END;
        self.pos += 1;
        self.depth -= 1;
        self.done();
    }

    /// The encoded list (cut and closed if the bound was reached).
    #[inline]
    pub fn finish(self) -> (&'b [u8], bool) {
        let cut = self.cut;
        let mut pos = self.pos;
        if cut {
            let (p, depth) = self.safe;
            pos = p;
            self.buf[pos] = CUT;
            pos += 1;
            for _ in 0..depth {
                self.buf[pos] = END;
                pos += 1;
            }
        }
        (&self.buf[..pos], cut)
    }
}

/// A primitive value for [`put_param_prim`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PrimValue {
    Bool(bool),
    Char(u16),
    Int(i64),
    UInt(u64),
    F32(f32),
    F64(f64),
}

/// The room [`put_param_prim`] needs after its start: a parameter tag and a one-byte
/// index, a value tag, a 10-byte LEB128 (its short form stores 8 bytes).
pub const PARAM_PRIM_ROOM: usize = 13;

/// Writes a top-level value `index` (below 128) holding `v` at the start of `out`, which
/// has [`PARAM_PRIM_ROOM`] bytes or more: the bytes [`ValueWriter::param`] then the
/// value's method write, without the writer's room checks (the `--args` hooks' short path
/// for methods taking and returning only primitives). Returns how many it wrote.
#[inline(always)]
pub fn put_param_prim(out: &mut [u8], index: u8, v: PrimValue) -> usize {
    debug_assert!(index < 0x80);
    let out = &mut out[..PARAM_PRIM_ROOM];
    out[0] = PARAM;
    out[1] = index;
    let tagged = |out: &mut [u8], tag: u8, v: u64| {
        out[2] = tag;
        if v < 1 << 35 {
            3 + leb128::put_u35_wide(&mut out[3..11], v)
        } else {
            3 + leb128::write_u64(&mut out[3..13], v)
        }
    };
    match v {
        PrimValue::Bool(b) => {
            out[2] = BOOL;
            out[3] = u8::from(b);
            4
        }
        PrimValue::Char(c) => tagged(out, CHAR, u64::from(c)),
        PrimValue::Int(i) => tagged(out, INT, zigzag(i)),
        PrimValue::UInt(u) => tagged(out, UINT, u),
        PrimValue::F32(f) => {
            out[2] = F32;
            out[3..7].copy_from_slice(&f.to_le_bytes());
            7
        }
        PrimValue::F64(f) => {
            out[2] = F64;
            out[3..11].copy_from_slice(&f.to_le_bytes());
            11
        }
    }
}

/// `dst.copy_from_slice(src)` (equal lengths) without a call to `memcpy` for the short
/// names and values most lists hold: two overlapping 8- or 4-byte moves, or bytes.
#[inline(always)]
fn copy_short(dst: &mut [u8], src: &[u8]) {
    let n = src.len();
    if n > 16 || dst.len() != n {
        dst.copy_from_slice(src);
    } else if n >= 8 {
        dst[..8].copy_from_slice(&src[..8]);
        dst[n - 8..].copy_from_slice(&src[n - 8..]);
    } else if n >= 4 {
        dst[..4].copy_from_slice(&src[..4]);
        dst[n - 4..].copy_from_slice(&src[n - 4..]);
    } else {
        for (d, s) in dst.iter_mut().zip(src) {
            *d = *s;
        }
    }
}

#[inline]
fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// A decoded value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Char(u16),
    Int(i64),
    UInt(u64),
    F32(f32),
    F64(f64),
    Str {
        full_length: u64,
        text: String,
    },
    Enum {
        ty: String,
        member: String,
        value: i64,
    },
    Object {
        ty: String,
        id: u64,
        /// `None`: not read (depth limit).
        fields: Option<Vec<(String, Value)>>,
        truncated: bool,
    },
    Boxed {
        ty: String,
        id: u64,
        value: Box<Value>,
    },
    Array {
        element: String,
        rank: u32,
        length: u64,
        items: Vec<Value>,
        truncated: bool,
    },
    Struct {
        ty: String,
        fields: Vec<(String, Value)>,
        truncated: bool,
    },
    Address {
        kind: String,
        address: u64,
    },
    ByRef {
        address: u64,
        target: Box<Value>,
    },
    TypedRef {
        ty: String,
        address: u64,
    },
    Unreadable(String),
    /// The per-call bound was reached here.
    Cut,
}

/// A value type described once by a [`ValueClass`](crate::Event::ValueClass) record: its
/// name and its fields' names, which `CLASS_STRUCT` values refer to by its number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValueClass {
    pub name: String,
    pub fields: Vec<String>,
}

/// A trace's [`ValueClass`]es by number.
pub type ValueClasses = HashMap<u64, ValueClass>;

/// One argument (or the return value).
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    pub name: String,
    pub ty: String,
    pub value: Value,
}

struct R<'a> {
    b: &'a [u8],
    pos: usize,
    /// A CUT marker was read somewhere.
    cut: bool,
    /// The classes `CLASS_STRUCT` values name.
    classes: Option<&'a ValueClasses>,
}

type Res<T> = Result<T, String>;

impl R<'_> {
    fn byte(&mut self) -> Res<u8> {
        let v = *self.b.get(self.pos).ok_or("value list ends early")?;
        self.pos += 1;
        Ok(v)
    }
    fn peek(&self) -> Option<u8> {
        self.b.get(self.pos).copied()
    }
    fn uleb(&mut self) -> Res<u64> {
        leb128::read_u64(self.b, &mut self.pos).map_err(|e| format!("{e:?}"))
    }
    fn str(&mut self) -> Res<String> {
        let n = self.uleb()? as usize;
        let s = self
            .b
            .get(self.pos..self.pos.saturating_add(n))
            .ok_or("string runs past the value list")?;
        self.pos += n;
        Ok(String::from_utf8_lossy(s).into_owned())
    }
    fn fixed<const N: usize>(&mut self) -> Res<[u8; N]> {
        let s = self
            .b
            .get(self.pos..self.pos + N)
            .ok_or("value list ends early")?;
        self.pos += N;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    fn fields(&mut self, depth: u32) -> Res<(Vec<(String, Value)>, bool)> {
        let mut v = Vec::new();
        let mut cut = false;
        loop {
            match self.byte()? {
                END => return Ok((v, cut)),
                CUT => {
                    cut = true;
                    self.cut = true;
                }
                ITEM => {
                    let name = self.str()?;
                    let value = self.value(depth + 1)?;
                    cut |= value == Value::Cut;
                    v.push((name, value));
                }
                t => return Err(format!("unexpected tag {t:#x} in a field list")),
            }
        }
    }

    /// A `CLASS_STRUCT`'s values up to its END, each named by the field of its place.
    fn field_values(&mut self, depth: u32, names: &[String]) -> Res<(Vec<(String, Value)>, bool)> {
        let mut v = Vec::new();
        let mut cut = false;
        loop {
            match self.peek() {
                Some(END) => {
                    self.pos += 1;
                    return Ok((v, cut));
                }
                Some(CUT) => {
                    self.pos += 1;
                    cut = true;
                    self.cut = true;
                }
                _ => {
                    let name = names
                        .get(v.len())
                        .ok_or("a struct holds more values than its class has fields")?
                        .clone();
                    let value = self.value(depth + 1)?;
                    cut |= value == Value::Cut;
                    v.push((name, value));
                }
            }
        }
    }

    fn value(&mut self, depth: u32) -> Res<Value> {
        if depth > MAX_NESTING + 2 {
            return Err("values nested too deeply".into());
        }
        Ok(match self.byte()? {
            NULL => Value::Null,
            BOOL => Value::Bool(self.byte()? != 0),
            CHAR => Value::Char(self.uleb()? as u16),
            INT => Value::Int(unzigzag(self.uleb()?)),
            UINT => Value::UInt(self.uleb()?),
            F32 => Value::F32(f32::from_le_bytes(self.fixed()?)),
            F64 => Value::F64(f64::from_le_bytes(self.fixed()?)),
            STR => {
                let full_length = self.uleb()?;
                Value::Str {
                    full_length,
                    text: self.str()?,
                }
            }
            ENUM => Value::Enum {
                ty: self.str()?,
                member: self.str()?,
                value: unzigzag(self.uleb()?),
            },
            OBJECT => {
                let ty = self.str()?;
                let id = self.uleb()?;
                let (fields, truncated) = self.fields(depth)?;
                Value::Object {
                    ty,
                    id,
                    fields: Some(fields),
                    truncated,
                }
            }
            OBJREF => Value::Object {
                ty: self.str()?,
                id: self.uleb()?,
                fields: None,
                truncated: true,
            },
            BOXED => Value::Boxed {
                ty: self.str()?,
                id: self.uleb()?,
                value: Box::new(self.value(depth + 1)?),
            },
            ARRAY => {
                let element = self.str()?;
                let rank = self.uleb()? as u32;
                let length = self.uleb()?;
                let mut items = Vec::new();
                let mut truncated = false;
                loop {
                    match self.peek() {
                        Some(END) => {
                            self.pos += 1;
                            break;
                        }
                        Some(CUT) => {
                            self.pos += 1;
                            truncated = true;
                            self.cut = true;
                        }
                        _ => items.push(self.value(depth + 1)?),
                    }
                }
                truncated |= (items.len() as u64) < length;
                Value::Array {
                    element,
                    rank,
                    length,
                    items,
                    truncated,
                }
            }
            STRUCT => {
                let ty = self.str()?;
                let (fields, truncated) = self.fields(depth)?;
                Value::Struct {
                    ty,
                    fields,
                    truncated,
                }
            }
            CLASS_STRUCT => {
                let class = self.uleb()?;
                let c = self
                    .classes
                    .and_then(|m| m.get(&class))
                    .ok_or_else(|| format!("struct class {class} is not in the trace's classes"))?;
                let (fields, truncated) = self.field_values(depth, &c.fields)?;
                Value::Struct {
                    ty: c.name.clone(),
                    fields,
                    truncated,
                }
            }
            ADDRESS => Value::Address {
                kind: self.str()?,
                address: self.uleb()?,
            },
            BYREF => Value::ByRef {
                address: self.uleb()?,
                target: Box::new(self.value(depth + 1)?),
            },
            TYPEDREF => Value::TypedRef {
                ty: self.str()?,
                address: self.uleb()?,
            },
            UNREADABLE => Value::Unreadable(self.str()?),
            CUT => {
                self.cut = true;
                Value::Cut
            }
            t => return Err(format!("unknown value tag {t:#x}")),
        })
    }
}

/// Decodes a value list; the bool says whether it was cut. Errors describe the problem
/// (a damaged record); the items before it are lost.
pub fn decode_items(bytes: &[u8]) -> Result<(Vec<Item>, bool), String> {
    decode_items_named(bytes, &[])
}

/// [`decode_items`] for a list whose `PARAM` items name pairs of `names` (the function's
/// [`ArgNames`](crate::Event::ArgNames), see [`decode_names`]).
pub fn decode_items_named(
    bytes: &[u8],
    names: &[(String, String)],
) -> Result<(Vec<Item>, bool), String> {
    decode_items_with(bytes, names, None)
}

/// [`decode_items_named`] for a list whose `CLASS_STRUCT` values name `classes` (the
/// trace's [`ValueClass`] records, see [`decode_field_names`]).
pub fn decode_items_with(
    bytes: &[u8],
    names: &[(String, String)],
    classes: Option<&ValueClasses>,
) -> Result<(Vec<Item>, bool), String> {
    let mut r = R {
        b: bytes,
        pos: 0,
        cut: false,
        classes,
    };
    let mut items = Vec::new();
    let mut cut = false;
    while r.pos < bytes.len() {
        match r.byte()? {
            CUT => cut = true,
            END => {}
            ITEM => {
                let name = r.str()?;
                let ty = r.str()?;
                let value = r.value(0)?;
                cut |= value == Value::Cut;
                items.push(Item { name, ty, value });
            }
            PARAM => {
                let index = r.uleb()?;
                let (name, ty) = usize::try_from(index)
                    .ok()
                    .and_then(|i| names.get(i))
                    .cloned()
                    .ok_or_else(|| format!("parameter {index} is not in the function's names"))?;
                let value = r.value(0)?;
                cut |= value == Value::Cut;
                items.push(Item { name, ty, value });
            }
            t => return Err(format!("unexpected tag {t:#x} in a value list")),
        }
    }
    Ok((items, cut || r.cut))
}

/// Encodes an `ArgNames` record's pairs (name, declared type).
pub fn encode_names<'n>(pairs: impl IntoIterator<Item = (&'n str, &'n str)>) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, ty) in pairs {
        for s in [name, ty] {
            let mut tmp = [0u8; leb128::MAX_LEN];
            let n = leb128::write_u64(&mut tmp, s.len() as u64);
            out.extend_from_slice(&tmp[..n]);
            out.extend_from_slice(s.as_bytes());
        }
    }
    out
}

/// Encodes a `ValueClass` record's field names.
pub fn encode_field_names<'n>(names: impl IntoIterator<Item = &'n str>) -> Vec<u8> {
    let mut out = Vec::new();
    for s in names {
        let mut tmp = [0u8; leb128::MAX_LEN];
        let n = leb128::write_u64(&mut tmp, s.len() as u64);
        out.extend_from_slice(&tmp[..n]);
        out.extend_from_slice(s.as_bytes());
    }
    out
}

/// Decodes a `ValueClass` record's field names.
pub fn decode_field_names(bytes: &[u8]) -> Result<Vec<String>, String> {
    let mut r = R {
        b: bytes,
        pos: 0,
        cut: false,
        classes: None,
    };
    let mut names = Vec::new();
    while r.pos < bytes.len() {
        names.push(r.str()?);
    }
    Ok(names)
}

/// Decodes an `ArgNames` record's pairs.
pub fn decode_names(bytes: &[u8]) -> Result<Vec<(String, String)>, String> {
    let mut r = R {
        b: bytes,
        pos: 0,
        cut: false,
        classes: None,
    };
    let mut pairs = Vec::new();
    while r.pos < bytes.len() {
        let name = r.str()?;
        let ty = r.str()?;
        pairs.push((name, ty));
    }
    Ok(pairs)
}

#[cfg(test)]
mod tests {
    use super::{PARAM_PRIM_ROOM, PrimValue, ValueWriter, put_param_prim};
    use proptest::prelude::*;

    fn prim_value() -> impl Strategy<Value = PrimValue> {
        prop_oneof![
            any::<bool>().prop_map(PrimValue::Bool),
            any::<u16>().prop_map(PrimValue::Char),
            any::<i64>().prop_map(PrimValue::Int),
            (-300i64..300).prop_map(PrimValue::Int),
            any::<u64>().prop_map(PrimValue::UInt),
            (0u64..1 << 36).prop_map(PrimValue::UInt),
            any::<f32>().prop_map(PrimValue::F32),
            any::<f64>().prop_map(PrimValue::F64),
        ]
    }

    proptest! {
        /// The hooks' short path writes what the value writer writes.
        #[test]
        fn param_prims_encode_as_the_value_writer_does(
            values in proptest::collection::vec((0u8..0x80, prim_value()), 0..8)
        ) {
            let mut want = [0u8; 256];
            let mut w = ValueWriter::new(&mut want);
            for &(i, v) in &values {
                w.param(u32::from(i));
                w.prim(v);
            }
            let (want, cut) = w.finish();
            prop_assert!(!cut);
            let mut got = [0xa5u8; 8 * PARAM_PRIM_ROOM];
            let mut n = 0;
            for &(i, v) in &values {
                n += put_param_prim(&mut got[n..], i, v);
            }
            prop_assert_eq!(&got[..n], want);
        }
    }

    #[test]
    fn short_copies_copy_every_length() {
        let src: Vec<u8> = (1..=40).collect();
        for n in 0..=40 {
            let mut dst = [0u8; 48];
            super::copy_short(&mut dst[3..3 + n], &src[..n]);
            assert_eq!(&dst[3..3 + n], &src[..n], "{n}");
            assert!(dst[..3].iter().chain(&dst[3 + n..]).all(|b| *b == 0), "{n}");
        }
    }

    #[test]
    fn strings_from_units_encode_as_from_an_iterator() {
        let texts: [&[u16]; 4] = [
            &[],
            &[
                b'o' as u16,
                b'r' as u16,
                b'd' as u16,
                b'-' as u16,
                b'1' as u16,
            ],
            &[0x48, 0xe9, 0x20ac, 0xd83d, 0xde00],
            &[0xd800, 0x41],
        ];
        for units in texts {
            for cap in [4usize, 64] {
                let (mut a, mut b) = (vec![0u8; cap], vec![0u8; cap]);
                let mut wa = super::ValueWriter::new(&mut a);
                wa.string_utf16_units(units.len() as u64 + 3, units);
                let mut wb = super::ValueWriter::new(&mut b);
                wb.string_utf16(units.len() as u64 + 3, units.iter().copied());
                let (ra, ca) = wa.finish();
                let (rb, cb) = wb.finish();
                assert_eq!((ra, ca), (rb, cb), "{units:?} in {cap} bytes");
            }
        }
    }

    use super::*;

    #[test]
    fn params_take_their_names_from_the_function() {
        let names = decode_names(&encode_names([("n", "int"), ("return", "int")])).unwrap();
        assert_eq!(names[1], ("return".to_string(), "int".to_string()));
        let mut buf = [0u8; 64];
        let mut w = ValueWriter::new(&mut buf);
        w.param(0);
        w.int(27);
        let (bytes, cut) = w.finish();
        assert!(!cut);
        assert_eq!(bytes.len(), 4, "PARAM, index, INT, zigzag: {bytes:?}");
        let (items, _) = decode_items_named(bytes, &names).unwrap();
        assert_eq!(
            items,
            vec![Item {
                name: "n".into(),
                ty: "int".into(),
                value: Value::Int(27)
            }]
        );
        assert!(decode_items(bytes).is_err(), "a PARAM needs the names");
    }

    /// A struct of a numbered class decodes as the struct named in full did, in fewer
    /// bytes; cut inside, it keeps the fields written before the cut.
    #[test]
    fn class_structs_decode_as_named_structs() {
        let classes: ValueClasses = [(
            3,
            ValueClass {
                name: "Scenarios.ID".into(),
                fields: decode_field_names(&encode_field_names(["I", "D"])).unwrap(),
            },
        )]
        .into();
        let write = |w: &mut ValueWriter<'_>, indexed: bool| {
            w.param(0);
            if indexed {
                w.structure_of(3);
            } else {
                w.structure("Scenarios.ID");
                w.item("I", None);
            }
            w.int(7);
            if !indexed {
                w.item("D", None);
            }
            w.f64(0.5);
            w.end();
        };
        let names = [("v".to_string(), "Scenarios.ID".to_string())];
        let (mut a, mut b) = ([0u8; 64], [0u8; 64]);
        let mut wa = ValueWriter::new(&mut a);
        write(&mut wa, false);
        let mut wb = ValueWriter::new(&mut b);
        write(&mut wb, true);
        let (named, _) = wa.finish();
        let (indexed, _) = wb.finish();
        assert_eq!(indexed.len(), 16, "{indexed:?}");
        assert!(named.len() > indexed.len() + 12);
        let want = decode_items_named(named, &names).unwrap();
        assert_eq!(
            decode_items_with(indexed, &names, Some(&classes)).unwrap(),
            want
        );
        assert!(
            decode_items_named(indexed, &names).is_err(),
            "needs the classes"
        );
        // Cut after the first field: the struct keeps it, marked truncated.
        let mut c = [0u8; 32];
        let mut w = ValueWriter::new(&mut c[..RESERVE + 8]);
        write(&mut w, true);
        let (cut_bytes, cut) = w.finish();
        assert!(cut);
        let (items, was_cut) = decode_items_with(cut_bytes, &names, Some(&classes)).unwrap();
        assert!(was_cut);
        assert_eq!(
            items[0].value,
            Value::Struct {
                ty: "Scenarios.ID".into(),
                fields: vec![("I".into(), Value::Int(7))],
                truncated: true,
            }
        );
        // More values than the class has fields: damaged.
        let mut d = [0u8; 64];
        let mut w = ValueWriter::new(&mut d);
        w.param(0);
        w.structure_of(3);
        for _ in 0..3 {
            w.int(1);
        }
        w.end();
        assert!(decode_items_with(w.finish().0, &names, Some(&classes)).is_err());
    }

    /// Whatever the bound, a list is the unbounded list's bytes up to a complete value,
    /// then the cut marker and the ENDs of the containers open there: the one-store paths
    /// (integers of up to 5 LEB128 bytes, tags with them, ASCII strings) cut where the
    /// byte-by-byte ones would.
    #[test]
    fn bounded_lists_are_prefixes_of_the_whole_list() {
        let write = |w: &mut ValueWriter<'_>| {
            for (i, v) in [
                0i64,
                63,
                -64,
                64,
                8191,
                1 << 20,
                -(1 << 33),
                1 << 40,
                i64::MIN,
            ]
            .into_iter()
            .enumerate()
            {
                w.param(i as u32 * 40);
                w.int(v);
                w.uint(v as u64);
                w.char(v as u16);
                w.structure_of(i as u32 * 300);
                w.string_utf16_units(1 << (i * 4), &[0x6f, 0x72, 0x64, 0x65, 0x72]);
                w.f64(0.5);
                w.end();
            }
        };
        let mut big = [0u8; 1024];
        let mut w = ValueWriter::new(&mut big);
        write(&mut w);
        let (whole, cut) = w.finish();
        assert!(!cut);
        let whole = whole.to_vec();
        for size in RESERVE + 1..whole.len() + RESERVE + 2 {
            let mut buf = vec![0u8; size];
            let mut w = ValueWriter::new(&mut buf);
            write(&mut w);
            let (bytes, cut) = w.finish();
            if !cut {
                assert_eq!(bytes, &whole[..], "{size}");
                continue;
            }
            let ends = bytes.iter().rev().take_while(|b| **b == END).count();
            let kept = bytes.len() - ends - 1;
            assert_eq!(bytes[kept], CUT, "{size}");
            assert_eq!(&bytes[..kept], &whole[..kept], "{size}");
            assert!(
                kept + RESERVE >= size.saturating_sub(20),
                "{size}: kept {kept}"
            );
        }
    }

    #[test]
    fn round_trip_of_every_kind() {
        let mut buf = [0u8; 1024];
        let mut w = ValueWriter::new(&mut buf);
        w.item("this", Some("Shop.Cart"));
        w.object("Shop.Cart", 0x3f2a);
        w.item("Count", None);
        w.int(-3);
        w.item("Owner", None);
        w.string("Ann");
        w.end();
        w.item("xs", Some("int[]"));
        w.array("int", 1, 3);
        w.int(1);
        w.int(2);
        w.end();
        w.item("p", Some("Point"));
        w.structure("Point");
        w.item("X", None);
        w.f32(1.5);
        w.item("Y", None);
        w.f64(-2.25);
        w.end();
        w.item("r", Some("int&"));
        w.byref(0x1000);
        w.uint(7);
        w.item("o", Some("object"));
        w.boxed("System.Int32", 9);
        w.int(42);
        w.item("c", Some("Color"));
        w.enumeration("Color", "Red", 1);
        w.item("n", Some("string"));
        w.null();
        w.item("u", Some("char*"));
        w.unreadable("no type");
        let (bytes, cut) = w.finish();
        assert!(!cut);
        let (items, cut) = decode_items(bytes).unwrap();
        assert!(!cut);
        assert_eq!(items.len(), 8);
        assert_eq!(
            items[0].value,
            Value::Object {
                ty: "Shop.Cart".into(),
                id: 0x3f2a,
                fields: Some(vec![
                    ("Count".into(), Value::Int(-3)),
                    (
                        "Owner".into(),
                        Value::Str {
                            full_length: 3,
                            text: "Ann".into()
                        }
                    ),
                ]),
                truncated: false,
            }
        );
        assert!(
            matches!(&items[1].value, Value::Array { items, truncated: true, length: 3, .. } if items.len() == 2)
        );
        assert_eq!(
            items[3].value,
            Value::ByRef {
                address: 0x1000,
                target: Box::new(Value::UInt(7))
            }
        );
        assert_eq!(
            items[5].value,
            Value::Enum {
                ty: "Color".into(),
                member: "Red".into(),
                value: 1
            }
        );
    }

    #[test]
    fn a_cut_list_still_decodes() {
        for size in 20..200 {
            let mut buf = vec![0u8; size];
            let mut w = ValueWriter::new(&mut buf);
            for i in 0..10 {
                w.item("a", Some("Thing"));
                w.object("Thing", i);
                w.item("s", None);
                w.string("a fairly long string value");
                w.item("xs", None);
                w.array("int", 1, 5);
                for k in 0..5 {
                    w.int(k);
                }
                w.end();
                w.end();
            }
            let (bytes, cut) = w.finish();
            assert!(bytes.len() <= size);
            let (items, was_cut) = decode_items(bytes).unwrap();
            assert_eq!(cut, was_cut, "size {size}");
            assert!(items.len() <= 10);
        }
    }

    #[test]
    fn utf16_strings_and_zigzag() {
        let mut buf = [0u8; 64];
        let mut w = ValueWriter::new(&mut buf);
        w.item("s", Some("string"));
        let units: Vec<u16> = "héllo".encode_utf16().collect();
        w.string_utf16(12, units.iter().copied());
        w.item("m", Some("long"));
        w.int(i64::MIN);
        let (bytes, _) = w.finish();
        let (items, _) = decode_items(bytes).unwrap();
        assert_eq!(
            items[0].value,
            Value::Str {
                full_length: 12,
                text: "héllo".into()
            }
        );
        assert_eq!(items[1].value, Value::Int(i64::MIN));
    }
}
