//! Reading values (inside the hook only): the argument and return ranges, and the objects
//! they reference, decoded by the plan's [`Kind`]s into a [`ValueWriter`].

use clrprof_format::values::ValueWriter;

use super::State;
use super::plan::{ClassDesc, FieldDesc, Kind, Prim, Shape, class_desc};

/// Reads a `T` at `addr`.
///
/// # Safety
/// `addr` must be readable for `size_of::<T>()` bytes: an argument range the runtime
/// gave for this hook, or a field or element of an object that is live during it.
unsafe fn read<T: Copy>(addr: usize) -> T {
    // SAFETY: (A7) per the contract.
    unsafe { std::ptr::read_unaligned(addr as *const T) }
}

fn write_prim(w: &mut ValueWriter<'_>, p: Prim, addr: usize) {
    // SAFETY: (A7) `addr` holds a value of this primitive type (callers' contract: an argument
    // range, or a field/element whose declared type is `p`).
    unsafe {
        match p {
            Prim::Bool => w.bool(read::<u8>(addr) != 0),
            Prim::Char => w.char(read::<u16>(addr)),
            Prim::I1 => w.int(i64::from(read::<i8>(addr))),
            Prim::U1 => w.uint(u64::from(read::<u8>(addr))),
            Prim::I2 => w.int(i64::from(read::<i16>(addr))),
            Prim::U2 => w.uint(u64::from(read::<u16>(addr))),
            Prim::I4 => w.int(i64::from(read::<i32>(addr))),
            Prim::U4 => w.uint(u64::from(read::<u32>(addr))),
            Prim::I8 | Prim::I => w.int(read::<i64>(addr)),
            Prim::U8 | Prim::U => w.uint(read::<u64>(addr)),
            Prim::R4 => w.f32(read::<f32>(addr)),
            Prim::R8 => w.f64(read::<f64>(addr)),
        }
    }
}

fn read_integral(p: Prim, addr: usize) -> i64 {
    // SAFETY: (A7) as in write_prim.
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
pub(super) fn write_value(
    s: &State,
    w: &mut ValueWriter<'_>,
    kind: &Kind,
    addr: usize,
    level: u32,
) {
    match kind {
        Kind::Prim(p) => write_prim(w, *p, addr),
        // SAFETY: (A7) a reference-typed slot holds an ObjectID (or null).
        Kind::Ref => write_object(s, w, unsafe { read::<usize>(addr) }, level),
        // SAFETY: (A7) a `string`-typed slot holds a System.String's ObjectID (or null).
        Kind::Str => write_declared_string(s, w, unsafe { read::<usize>(addr) }),
        Kind::Inline(d) => write_inline(s, w, d, addr, level),
        Kind::ByRef(inner) => {
            // SAFETY: (A7) a BYREF slot holds a managed pointer (or null).
            let target = unsafe { read::<usize>(addr) };
            if target == 0 {
                w.null();
            } else if matches!(
                **inner,
                Kind::Unknown(_) | Kind::ByRef(_) | Kind::TypedByRef
            ) {
                w.address("byref", target as u64);
            } else {
                // A managed pointer points into a live frame or object during the hook
                // (no GC can run); `out` targets were zero-initialised by the JIT.
                w.byref(target as u64);
                write_value(s, w, inner, target, level);
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

fn write_inline(s: &State, w: &mut ValueWriter<'_>, d: &ClassDesc, addr: usize, level: u32) {
    match &d.shape {
        Shape::Struct { fields, .. } => {
            w.structure(&d.name);
            write_fields(s, w, fields, addr, level);
            w.end();
        }
        Shape::Enum {
            underlying,
            members,
            ..
        } => {
            let v = read_integral(*underlying, addr);
            let member = members
                .iter()
                .find(|(m, _)| *m == v)
                .map(|(_, n)| n.as_str())
                .unwrap_or("");
            w.enumeration(&d.name, member, v);
        }
        Shape::Primitive { prim, .. } => write_prim(w, *prim, addr),
        Shape::Unknown(why) => w.unreadable(why),
        Shape::String | Shape::Array { .. } | Shape::Object(_) => {
            w.unreadable("reference type where a value type was expected")
        }
    }
}

fn write_fields(s: &State, w: &mut ValueWriter<'_>, fields: &[FieldDesc], base: usize, level: u32) {
    for f in fields {
        w.item(&f.name, None);
        write_value(s, w, &f.kind, base + f.offset as usize, level + 1);
    }
}

fn write_object(s: &State, w: &mut ValueWriter<'_>, obj: usize, level: u32) {
    if obj == 0 {
        return w.null();
    }
    if !plausible_object(obj) {
        // Never hand the runtime an address that cannot be an object.
        return w.address("not an object", obj as u64);
    }
    let class = match s.info.get_class_from_object(corprof::ObjectId(obj)) {
        Ok(c) => c,
        Err(e) => return w.unreadable(&format!("GetClassFromObject: {e}")),
    };
    let d = class_desc(s, class);
    match &d.shape {
        Shape::String => write_string(s, w, obj),
        Shape::Array {
            element,
            kind,
            rank,
        } => {
            if level > s.limits.depth {
                return w.object_ref(&d.name, obj as u64);
            }
            let a = match s.info.get_array_object_info(corprof::ObjectId(obj), *rank) {
                Ok(a) => a,
                Err(e) => return w.unreadable(&format!("GetArrayObjectInfo: {e}")),
            };
            let length: u64 = a.dimensions.iter().map(|(n, _)| u64::from(*n)).product();
            w.array(element, *rank, length);
            let size = kind.size();
            for i in 0..length.min(u64::from(s.limits.items)) {
                write_value(s, w, kind, a.data + i as usize * size, level + 1);
            }
            w.end();
        }
        Shape::Object(fields) => {
            if level >= s.limits.depth {
                return w.object_ref(&d.name, obj as u64);
            }
            w.object(&d.name, obj as u64);
            write_fields(s, w, fields, obj, level);
            w.end();
        }
        Shape::Struct { box_offset, .. }
        | Shape::Enum { box_offset, .. }
        | Shape::Primitive { box_offset, .. } => {
            w.boxed(&d.name, obj as u64);
            write_inline(s, w, &d, obj + *box_offset as usize, level);
        }
        Shape::Unknown(why) => {
            w.object_ref(&d.name, obj as u64);
            let _ = why;
        }
    }
}

/// A value whose declared type is `string`: a `System.String` or null, so its class need
/// not be asked.
fn write_declared_string(s: &State, w: &mut ValueWriter<'_>, obj: usize) {
    if obj == 0 {
        return w.null();
    }
    if !plausible_object(obj) {
        return w.address("not an object", obj as u64);
    }
    write_string(s, w, obj)
}

/// The text of the live `System.String` `obj`.
fn write_string(s: &State, w: &mut ValueWriter<'_>, obj: usize) {
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
}
