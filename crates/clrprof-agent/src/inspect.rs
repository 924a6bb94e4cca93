//! Reading managed objects from inside a callback: field offsets come from
//! GetClassLayout (own fields only, so parents are walked with GetClassIDInfo2), field
//! names from metadata, string contents through GetStringLayout2. The reads are raw
//! memory reads of objects the runtime just handed us; they are valid for the duration of
//! the callback because the GC cannot move objects while a callback holds them.

use std::sync::atomic::{AtomicU32, Ordering};

use corprof::{ClassId, MetadataRead, ObjectId, ProfilerInfo};

/// Offset of `System.Exception._message` from the object start, once found (0 = unknown).
static MESSAGE_OFFSET: AtomicU32 = AtomicU32::new(0);

/// Finds the offset of field `field` declared by the ancestor of `class` named `declaring`.
pub fn field_offset(
    info: &ProfilerInfo,
    class: ClassId,
    declaring: &str,
    field: &str,
) -> Option<u32> {
    let mut c = class;
    for _ in 0..32 {
        if c.0 == 0 {
            return None;
        }
        let ci = info.get_class_id_info2(c).ok()?;
        let md = info
            .get_module_metadata(ci.module, corprof_sys::ofRead)
            .ok()?;
        if md.type_full_name(ci.token) == declaring {
            let (fields, _size) = info.get_class_layout(c).ok()?;
            return fields.iter().find_map(|(tok, off)| {
                let props = md.get_field_props(*tok).ok()?;
                (props.name == field).then_some(*off)
            });
        }
        c = ci.parent;
    }
    None
}

/// Reads a pointer-sized field of an object.
///
/// # Safety
/// `object` must be a live object and `offset` the offset of a reference field in it.
unsafe fn read_ref(object: ObjectId, offset: u32) -> usize {
    // SAFETY: (A7) per the function contract the address is inside a live object.
    unsafe { std::ptr::read_unaligned((object.0 + offset as usize) as *const usize) }
}

/// Reads a `System.String` object's contents (at most `max` UTF-16 units).
pub fn read_string(info: &ProfilerInfo, string: ObjectId, max: usize) -> Option<String> {
    if string.0 == 0 {
        return None;
    }
    let (len_off, buf_off) = info.get_string_layout2().ok()?;
    // SAFETY: (A7) `string` is a live System.String (the caller got it from a reference field
    // typed string) and the offsets come from the runtime's own layout description.
    let len = unsafe { std::ptr::read_unaligned((string.0 + len_off as usize) as *const i32) };
    if len < 0 {
        return None;
    }
    let n = (len as usize).min(max);
    // SAFETY: (A7) the buffer holds `len` UTF-16 units starting at `buf_off`; we read `n <= len`.
    let units =
        unsafe { std::slice::from_raw_parts((string.0 + buf_off as usize) as *const u16, n) };
    Some(String::from_utf16_lossy(units))
}

/// The `Message` an exception was constructed with (the `_message` field), if any.
pub fn exception_message(info: &ProfilerInfo, exception: ObjectId) -> Option<String> {
    let mut off = MESSAGE_OFFSET.load(Ordering::Relaxed);
    if off == 0 {
        let class = info.get_class_from_object(exception).ok()?;
        off = field_offset(info, class, "System.Exception", "_message")?;
        MESSAGE_OFFSET.store(off, Ordering::Relaxed);
    }
    // SAFETY: (A7) `exception` derives from System.Exception, whose `_message` reference field
    // is at `off` (layout is per class and inherited fields keep their offsets).
    let msg = unsafe { read_ref(exception, off) };
    read_string(info, ObjectId(msg), 1024)
}
