//! Reading values (inside the hook only): the argument and return ranges, and the objects
//! they reference, decoded by the plan's [`Kind`]s into a [`ValueWriter`].

use clrprof_format::values::{PrimValue, ValueWriter};

use std::sync::Arc;
use std::sync::atomic::Ordering;

use corprof::ClassId;

use super::State;
use super::plan::{ClassDesc, FieldDesc, Kind, Prim, Shape, class_desc, is_inline};

/// Reads a `T` at `addr`.
///
/// # Safety
/// `addr` must be readable for `size_of::<T>()` bytes: an argument range the runtime
/// gave for this hook, or a field or element of an object that is live during it.
unsafe fn read<T: Copy>(addr: usize) -> T {
    // SAFETY: (A7) per the contract.
    unsafe { std::ptr::read_unaligned(addr as *const T) }
}

/// Writes the primitive `p` stored at `addr`.
///
/// # Safety
/// `addr` must be readable for `p.size()` bytes during this call: an argument or return
/// range the runtime gave for this hook (or our copy of it), or a field or element of an
/// object that is live during it, whose declared type is `p`. (Any bit pattern of those
/// bytes is a valid `p`: a `bool` is read as a byte.)
pub(super) unsafe fn write_prim(w: &mut ValueWriter<'_>, p: Prim, addr: usize) {
    // SAFETY: (A7) `addr` holds a `p` (this function's contract is read_prim's).
    w.prim(unsafe { read_prim(p, addr) });
}

/// The primitive `p` stored at `addr`, for [`put_param_prim`]
/// (clrprof_format::values::put_param_prim): what [`write_prim`] writes.
///
/// # Safety
/// As for [`write_prim`].
#[inline(always)]
pub(super) unsafe fn read_prim(p: Prim, addr: usize) -> PrimValue {
    // SAFETY: (A7) each read is of `p.size()` bytes at `addr`, readable per the contract.
    unsafe {
        match p {
            Prim::Bool => PrimValue::Bool(read::<u8>(addr) != 0),
            Prim::Char => PrimValue::Char(read::<u16>(addr)),
            Prim::I1 => PrimValue::Int(i64::from(read::<i8>(addr))),
            Prim::U1 => PrimValue::UInt(u64::from(read::<u8>(addr))),
            Prim::I2 => PrimValue::Int(i64::from(read::<i16>(addr))),
            Prim::U2 => PrimValue::UInt(u64::from(read::<u16>(addr))),
            Prim::I4 => PrimValue::Int(i64::from(read::<i32>(addr))),
            Prim::U4 => PrimValue::UInt(u64::from(read::<u32>(addr))),
            Prim::I8 | Prim::I => PrimValue::Int(read::<i64>(addr)),
            Prim::U8 | Prim::U => PrimValue::UInt(read::<u64>(addr)),
            Prim::R4 => PrimValue::F32(read::<f32>(addr)),
            Prim::R8 => PrimValue::F64(read::<f64>(addr)),
        }
    }
}

/// The integral primitive `p` stored at `addr` (an enum's underlying value), widened.
///
/// # Safety
/// As for [`write_prim`]: `addr` is readable for `p.size()` bytes.
unsafe fn read_integral(p: Prim, addr: usize) -> i64 {
    // SAFETY: (A7) each read is of `p.size()` bytes at `addr`, readable per the contract.
    unsafe {
        match p {
            Prim::Bool | Prim::U1 => i64::from(read::<u8>(addr)),
            Prim::I1 => i64::from(read::<i8>(addr)),
            Prim::Char | Prim::U2 => i64::from(read::<u16>(addr)),
            Prim::I2 => i64::from(read::<i16>(addr)),
            Prim::I4 => i64::from(read::<i32>(addr)),
            Prim::U4 => i64::from(read::<u32>(addr)),
            _ => read::<i64>(addr),
        }
    }
}

/// Writes the value of kind `kind` stored at `addr`; `level` is the object depth.
///
/// # Safety
/// Called inside an `--args` hook (no GC can move an object meanwhile, A7). `addr` must be
/// readable for `kind.size()` bytes and hold a value of `kind` as the plan describes it:
/// an argument or return range the runtime gave for this hook, a slot of the stub's frame
/// the runtime's answers agreed on, our copy of the registers it saved, or a field or
/// element of an object live during the hook. So a reference holds null or a live
/// ObjectID, a managed pointer null or the address of a live value of its inner kind, and
/// an inline value the fields at the offsets its [`ClassDesc`] gives.
pub(super) unsafe fn write_value(
    s: &State,
    w: &mut ValueWriter<'_>,
    kind: &Kind,
    addr: usize,
    level: u32,
) {
    match kind {
        // SAFETY: (A7) `addr` holds a value of this primitive (contract).
        Kind::Prim(p) => unsafe { write_prim(w, *p, addr) },
        Kind::Ref => {
            // SAFETY: (A7) a reference-typed slot holds an ObjectID (or null) (contract).
            let obj = unsafe { read::<usize>(addr) };
            // SAFETY: (A7) that ObjectID is null or a live object during the hook.
            unsafe { write_object(s, w, obj, level) }
        }
        Kind::Str => {
            // SAFETY: (A7) a `string`-typed slot holds a System.String's ObjectID (or null).
            let obj = unsafe { read::<usize>(addr) };
            // SAFETY: (A7) the declared type makes it null or a live System.String.
            unsafe { write_declared_string(s, w, obj) }
        }
        // SAFETY: (A7) `addr` holds the inline value `d` describes (contract).
        Kind::Inline(d) => unsafe { write_inline(s, w, d, addr, level) },
        Kind::ByRef(inner) => {
            // SAFETY: (A7) a BYREF slot holds a managed pointer (or null).
            let target = unsafe { read::<usize>(addr) };
            if target == 0 {
                w.null();
            } else if !(0x1_0000..1 << 47).contains(&target) {
                // No stack or heap address: never dereferenced.
                w.address("not a pointer", target as u64);
            } else if matches!(
                **inner,
                Kind::Unknown(_) | Kind::ByRef(_) | Kind::TypedByRef
            ) {
                w.address("byref", target as u64);
            } else {
                w.byref(target as u64);
                // SAFETY: (A7) a managed pointer points into a live frame or object during
                // the hook (no GC can run), at a value of its declared kind; `out` targets
                // were zero-initialised by the JIT.
                unsafe { write_value(s, w, inner, target, level) };
            }
        }
        // SAFETY: (A7) a pointer-typed slot is pointer-sized.
        Kind::Ptr => w.address("ptr", unsafe { read::<u64>(addr) }),
        // SAFETY: (A7) a function-pointer slot is pointer-sized.
        Kind::FnPtr => w.address("fnptr", unsafe { read::<u64>(addr) }),
        Kind::TypedByRef => {
            // SAFETY: (A7) a TypedReference is a managed pointer then a type handle.
            let (ptr, _ty) = unsafe { (read::<u64>(addr), read::<u64>(addr + 8)) };
            w.typed_ref("System.TypedReference", ptr);
        }
        Kind::Unknown(why) => w.unreadable(why),
    }
}

/// Writes the value type `d` stored inline at `addr`.
///
/// # Safety
/// As for [`write_value`]: `addr` holds a value of the class `d` describes (its `size`
/// bytes, its fields at their offsets, an enum's or primitive's value at `addr`).
unsafe fn write_inline(s: &State, w: &mut ValueWriter<'_>, d: &ClassDesc, addr: usize, level: u32) {
    match &d.shape {
        Shape::Struct { fields, number, .. } => {
            let n = number.load(Ordering::Relaxed);
            if n != 0 {
                // Its name and its fields' names are in its `ValueClass` record.
                w.structure_of(n);
                for f in fields {
                    // SAFETY: (A7) the field's offset is the runtime's (GetClassLayout),
                    // its kind from its signature (contract).
                    unsafe { write_value(s, w, &f.kind, addr + f.offset as usize, level + 1) };
                }
            } else {
                w.structure(&d.name);
                // SAFETY: (A7) the struct's fields lie at their offsets from `addr`
                // (contract).
                unsafe { write_fields(s, w, fields, addr, level) };
            }
            w.end();
        }
        Shape::Enum {
            underlying,
            members,
            ..
        } => {
            // SAFETY: (A7) an enum is stored as its underlying primitive (contract).
            let v = unsafe { read_integral(*underlying, addr) };
            let member = members
                .iter()
                .find(|(m, _)| *m == v)
                .map(|(_, n)| n.as_str())
                .unwrap_or("");
            w.enumeration(&d.name, member, v);
        }
        // SAFETY: (A7) a boxable primitive is stored as that primitive (contract).
        Shape::Primitive { prim, .. } => unsafe { write_prim(w, *prim, addr) },
        Shape::Unknown(why) => w.unreadable(why),
        Shape::String | Shape::Array { .. } | Shape::Object(_) => {
            w.unreadable("reference type where a value type was expected")
        }
    }
}

/// Writes `fields`, each at its offset from `base`.
///
/// # Safety
/// As for [`write_value`]: `base + f.offset` holds a value of `f.kind` for each field
/// (the fields are the runtime's layout of a value or object live during the hook).
unsafe fn write_fields(
    s: &State,
    w: &mut ValueWriter<'_>,
    fields: &[FieldDesc],
    base: usize,
    level: u32,
) {
    for f in fields {
        w.item(&f.name, None);
        // SAFETY: (A7) the field's offset is the runtime's (GetClassLayout), its kind from
        // its signature (contract).
        unsafe { write_value(s, w, &f.kind, base + f.offset as usize, level + 1) };
    }
}

/// Writes the object `obj`, described by its own class.
///
/// # Safety
/// Called inside an `--args` hook; `obj` is 0 or the ObjectID of an object live during it
/// (read from a reference-typed slot). A value that cannot be an ObjectID is refused
/// before it is read or the runtime is asked ([`plausible_object`]), but a plausible one
/// that is no object would be read as one.
unsafe fn write_object(s: &State, w: &mut ValueWriter<'_>, obj: usize, level: u32) {
    if obj == 0 {
        return w.null();
    }
    if !plausible_object(obj) {
        // Never read or hand the runtime an address that cannot be an object.
        return w.address("not an object", obj as u64);
    }
    if super::fast_path() {
        // Outside a runtime callback the runtime refuses GetClassFromObject: the object's
        // first word is its method table, which is its ClassID in CoreCLR (the low bits
        // masked, as the GC does), and the table holds the classes described so far.
        // SAFETY: (A7) a live object (contract) starts with its method table pointer.
        let class = unsafe { read::<usize>(obj) } & !7;
        let Some(d) = described(s, class, 0) else {
            s.undescribed
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            return w.unreadable(NOT_DESCRIBED);
        };
        // SAFETY: (A7) `d` describes the live object's own class (its method table).
        return unsafe { write_described(s, w, obj, d, level, true) };
    }
    let class = match s.info.get_class_from_object(corprof::ObjectId(obj)) {
        Ok(c) => c,
        Err(e) => return w.unreadable(&format!("GetClassFromObject: {e}")),
    };
    let d = class_desc(s, class);
    // SAFETY: (A7) `d` describes the class the runtime says the live object has.
    unsafe { write_described(s, w, obj, &d, level, false) }
}

/// What an object whose class the table does not describe reads as (assembly hooks).
pub(super) const NOT_DESCRIBED: &str = "class not described yet";

/// The description of the class `class` (an object's method table) from the table the
/// callbacks fill. Arrays get no ClassLoadFinished: the first time one is met, its
/// element class and rank come from `IsArrayClass` (one of the runtime's asynchronous
/// methods, allowed on any thread: no lock, no GC) and its description is added.
fn described(s: &State, class: usize, depth: u32) -> Option<&'static ClassDesc> {
    let t = super::table::existing()?;
    if let Some(d) = t.get(class) {
        return Some(d);
    }
    // A method table lies where objects may (loaded runtime memory); anything else is
    // never handed to the runtime.
    if depth > 4 || !plausible_object(class) {
        return None;
    }
    let a = s.info.is_array_class(ClassId(class)).ok()??;
    let element_class = a.element_class.0;
    let known = element_class != 0 && described(s, element_class, depth + 1).is_some();
    let (element, kind) = match Prim::from_element_type(a.element_type) {
        _ if known => {
            let ed = t.get_arc(element_class)?;
            let kind = match &ed.shape {
                Shape::Unknown(why) => Kind::Unknown(why),
                _ if is_inline(&ed) => Kind::Inline(ed.clone()),
                _ => Kind::Ref,
            };
            (ed.name.clone(), kind)
        }
        // A primitive element whose class was loaded before the profiler: the value
        // reads the same either way.
        Some(p) => (p.corelib_name().to_string(), Kind::Prim(p)),
        // ELEMENT_TYPE_STRING
        None if a.element_type == 0x0e => ("System.String".to_string(), Kind::Str),
        None => return None,
    };
    let commas = ",".repeat(a.rank.saturating_sub(1) as usize);
    let d = Arc::new(ClassDesc {
        name: format!("{element}[{commas}]"),
        size: 0,
        shape: Shape::Array {
            element,
            kind,
            rank: a.rank,
        },
    });
    t.insert(class, &d);
    t.get(class)
}

/// Writes the object `obj` whose class `d` describes; `header` reads an array's length
/// and data from the object itself (assembly hooks) rather than `GetArrayObjectInfo`.
///
/// # Safety
/// As for [`write_object`], and `d` describes `obj`'s own class.
unsafe fn write_described(
    s: &State,
    w: &mut ValueWriter<'_>,
    obj: usize,
    d: &ClassDesc,
    level: u32,
    header: bool,
) {
    match &d.shape {
        // SAFETY: (A7) the live object `obj` is a System.String (its class says so).
        Shape::String => unsafe { write_string(s, w, obj) },
        Shape::Array {
            element,
            kind,
            rank,
        } => {
            if level > s.limits.depth {
                return w.object_ref(&d.name, obj as u64);
            }
            let (length, data) = if header {
                // SAFETY: (A7) `obj` is a live array of this class (contract).
                match unsafe { array_header(obj, *rank) } {
                    Some(h) => h,
                    None => return w.unreadable("array layout not as expected"),
                }
            } else {
                match s.info.get_array_object_info(corprof::ObjectId(obj), *rank) {
                    Ok(a) => (
                        a.dimensions.iter().map(|(n, _)| u64::from(*n)).product(),
                        a.data,
                    ),
                    Err(e) => return w.unreadable(&format!("GetArrayObjectInfo: {e}")),
                }
            };
            w.array(element, *rank, length);
            let size = kind.size();
            for i in 0..length.min(u64::from(s.limits.items)) {
                // SAFETY: (A7) the array's `length` elements of `size` bytes lie from its
                // data address (the runtime's, or the layout `array_header` reads);
                // `i < length`.
                unsafe { write_value(s, w, kind, data + i as usize * size, level + 1) };
            }
            w.end();
        }
        Shape::Object(fields) => {
            if level >= s.limits.depth {
                return w.object_ref(&d.name, obj as u64);
            }
            w.object(&d.name, obj as u64);
            // SAFETY: (A7) the fields' offsets are the runtime's layout of `obj`'s class.
            unsafe { write_fields(s, w, fields, obj, level) };
            w.end();
        }
        Shape::Struct { box_offset, .. }
        | Shape::Enum { box_offset, .. }
        | Shape::Primitive { box_offset, .. } => {
            w.boxed(&d.name, obj as u64);
            // SAFETY: (A7) a boxed value lies at the runtime's box offset (GetBoxClassLayout)
            // inside the live object.
            unsafe { write_inline(s, w, d, obj + *box_offset as usize, level) };
        }
        Shape::Unknown(why) => {
            w.object_ref(&d.name, obj as u64);
            let _ = why;
        }
    }
}

/// An array's element count and the address of its first element, from the object and
/// its method table: CoreCLR's `ArrayBase` is the method table and a 32-bit count (the
/// product of the lengths, as `GetArrayObjectInfo` gives them), and the data starts at
/// the class's base size less the 8-byte object header (`ArrayBase::GetDataPtrOffset`):
/// 16 bytes in for a one-dimensional array, after the `rank` lengths and lower bounds
/// (32 bits each) for a multi-dimensional one, `T[*]` included. `None` when the base size
/// is not one of those.
///
/// # Safety
/// `obj` is a live array of rank `rank`.
unsafe fn array_header(obj: usize, rank: u32) -> Option<(u64, usize)> {
    // SAFETY: (A7) a live object starts with its method table pointer, loaded runtime
    // memory whose second 32 bits are the base size (as the heap walk reads them).
    let mt = unsafe { read::<usize>(obj) } & !7;
    // SAFETY: (A7) as above.
    let base = unsafe { read::<u32>(mt + 4) } as usize;
    let bounds = 8 * rank as usize;
    // One-dimensional: 24 (`T[]`) or 32 (`T[*]`); else 24 and the lengths and bounds.
    if base != 24 + bounds && !(rank == 1 && base == 24) {
        return None;
    }
    // SAFETY: (A7) the count lies right after the method table, within the 24 bytes
    // every object has.
    let count = unsafe { read::<u32>(obj + 8) };
    Some((u64::from(count), obj + base - 8))
}

/// A value whose declared type is `string`: a `System.String` or null, so its class need
/// not be asked.
///
/// # Safety
/// Called inside an `--args` hook; `obj` is 0 or a `System.String` live during it.
unsafe fn write_declared_string(s: &State, w: &mut ValueWriter<'_>, obj: usize) {
    if obj == 0 {
        return w.null();
    }
    if !plausible_object(obj) {
        return w.address("not an object", obj as u64);
    }
    // SAFETY: (A7) a live System.String (contract).
    unsafe { write_string(s, w, obj) }
}

/// The text of the live `System.String` `obj`.
///
/// # Safety
/// `obj` is a `System.String` live during this call.
unsafe fn write_string(s: &State, w: &mut ValueWriter<'_>, obj: usize) {
    let Some((len_off, buf_off)) = s.string_layout else {
        return w.unreadable("no string layout");
    };
    // SAFETY: (A7) `obj` is a live System.String; the offsets are the runtime's.
    let len = unsafe { read::<i32>(obj + len_off as usize) }.max(0) as usize;
    let n = len.min(s.limits.max_len as usize);
    let base = obj + buf_off as usize;
    // SAFETY: (A7) the string holds `len` UTF-16 units at `base`; we read `n <= len`.
    let units = unsafe { std::slice::from_raw_parts(base as *const u16, n) };
    w.string_utf16_units(len as u64, units);
}

/// Whether `obj` can be an ObjectID at all: objects are pointer-aligned, and the GC heap
/// lies above the first 64 KiB (never mapped on Linux) and below the top of the user
/// address space (47 bits on x86-64 and arm64 with 4-level page tables). A value that
/// fails is no object, whatever the planner thought.
fn plausible_object(obj: usize) -> bool {
    obj.is_multiple_of(std::mem::size_of::<usize>()) && obj >= 0x1_0000 && (obj as u64) < (1 << 47)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn implausible_object_ids_are_refused() {
        assert!(!plausible_object(0xb));
        assert!(!plausible_object(0x1_0004));
        assert!(!plausible_object(0x8000));
        assert!(!plausible_object(1 << 47));
        assert!(plausible_object(0x7f12_3456_7000));
    }

    /// An array's count and data come from the object and its method table's base size:
    /// 24 for `T[]` (data 16 bytes in), 24 plus 8 a dimension for multi-dimensional
    /// arrays and `T[*]`; any other base size is refused.
    #[test]
    fn array_data_follows_the_base_size() {
        // A method table (32 bits of flags, then the base size) and an array object whose
        // first word points at it and whose count is 5.
        let header = |base: u64, rank: u32| {
            let mt = [base << 32, 0u64];
            let obj = [mt.as_ptr() as u64, 5, 0, 0, 0, 0, 0, 0];
            let at = obj.as_ptr() as usize;
            // SAFETY: (A7) `obj` is a live local laid out as an array object whose first
            // word points at the live local method table `mt`.
            let got = unsafe { array_header(at, rank) };
            got.map(|(n, data)| (n, data - at))
        };
        assert_eq!(header(24, 1), Some((5, 16)));
        assert_eq!(header(32, 1), Some((5, 24)));
        assert_eq!(header(40, 2), Some((5, 32)));
        assert_eq!(header(48, 2), None);
        assert_eq!(header(24, 2), None);
    }

    /// Each primitive is read at an unaligned address, as the width its type names.
    #[test]
    fn primitives_are_read_as_their_width() {
        use clrprof_format::values::{Value, decode_items};
        // One spare byte first so every value sits at an odd address; bytes after it
        // would show through a read that is too wide.
        let mut bytes = [0xAAu8; 17];
        let cases: [(Prim, &[u8], Value); 6] = [
            (Prim::Bool, &[1], Value::Bool(true)),
            (Prim::I1, &[0xFE], Value::Int(-2)),
            (Prim::Char, &[0x41, 0x00], Value::Char(0x41)),
            (Prim::I4, &(-7i32).to_le_bytes(), Value::Int(-7)),
            (Prim::U8, &u64::MAX.to_le_bytes(), Value::UInt(u64::MAX)),
            (Prim::R8, &1.5f64.to_le_bytes(), Value::F64(1.5)),
        ];
        for (p, raw, want) in cases {
            bytes[1..1 + raw.len()].copy_from_slice(raw);
            let addr = bytes[1..].as_ptr() as usize;
            let mut buf = [0u8; 64];
            let mut w = ValueWriter::new(&mut buf);
            w.item("v", Some("t"));
            // SAFETY: (A7) `addr` is a live local array with at least `p.size()` bytes.
            unsafe { write_prim(&mut w, p, addr) };
            let (items, cut) = decode_items(w.finish().0).unwrap();
            assert!(!cut);
            assert_eq!(items[0].value, want, "{p:?}");
            if p != Prim::R8 && p != Prim::Bool {
                // SAFETY: (A7) as above.
                let v = unsafe { read_integral(p, addr) };
                assert_eq!(Value::Int(v), want_int(&want), "{p:?}");
            }
        }
        fn want_int(v: &Value) -> Value {
            match v {
                Value::Char(c) => Value::Int(i64::from(*c)),
                Value::UInt(u) => Value::Int(*u as i64),
                other => other.clone(),
            }
        }
    }
}
