//! Statics of a heap snapshot (docs/heap.md): for every non-generic class of the
//! application's modules (not the shared framework's) that declares static fields, each
//! field's address from `GetAppDomainStaticAddress`, `GetThreadStaticAddress2` (per
//! managed thread, for `[ThreadStatic]`) or `GetRVAStaticAddress`, and what is there: an
//! object reference (the analysis names the object's root after the field) or a
//! primitive or string value. CoreCLR has no context statics (`GetContextStaticAddress`
//! answers `E_NOTIMPL`).
//!
//! Runs on the snapshot's native thread right after the walked GC, with the GC monitor
//! still on: `heap::take` checks that no other GC moved objects in between.

use std::borrow::Cow;

use clrprof_format::Event;
use corprof::sig::{self, Type};
use corprof::{AppDomainId, ClassId, MetadataRead, ModuleId, ObjectId, ProfilerInfo, ThreadId};
use corprof_sys as sys;

use crate::output::buffers::emit;

/// What was read.
#[derive(Debug, Default, Clone, Copy)]
pub struct Counts {
    pub classes: u64,
    pub fields: u64,
    /// Fields whose class constructor has not run yet (no storage).
    pub uninitialized: u64,
}

/// How a static's value is read.
enum Kind {
    Reference,
    String,
    Primitive(Type),
    Other,
}

fn kind_of(t: &Type) -> Kind {
    match t {
        Type::Modified { inner, .. } => kind_of(inner),
        Type::String => Kind::String,
        Type::Class(_)
        | Type::Object
        | Type::SzArray(_)
        | Type::Array { .. }
        | Type::GenericInst {
            value_type: false, ..
        } => Kind::Reference,
        Type::Bool
        | Type::Char
        | Type::I1
        | Type::U1
        | Type::I2
        | Type::U2
        | Type::I4
        | Type::U4
        | Type::I8
        | Type::U8
        | Type::R4
        | Type::R8
        | Type::I
        | Type::U => Kind::Primitive(t.clone()),
        _ => Kind::Other,
    }
}

/// Reads a primitive of type `t` at `addr` as text.
///
/// # Safety
/// `addr` must be the runtime's address of a live static field of type `t`.
unsafe fn primitive(addr: usize, t: &Type) -> String {
    // SAFETY: (A7) per the contract, `addr` holds a value of type `t` (unaligned reads: the
    // runtime aligns statics, but nothing here depends on it).
    unsafe {
        match t {
            Type::Bool => (std::ptr::read_unaligned(addr as *const u8) != 0).to_string(),
            Type::Char => char::from_u32(u32::from(std::ptr::read_unaligned(addr as *const u16)))
                .map(String::from)
                .unwrap_or_default(),
            Type::I1 => std::ptr::read_unaligned(addr as *const i8).to_string(),
            Type::U1 => std::ptr::read_unaligned(addr as *const u8).to_string(),
            Type::I2 => std::ptr::read_unaligned(addr as *const i16).to_string(),
            Type::U2 => std::ptr::read_unaligned(addr as *const u16).to_string(),
            Type::I4 => std::ptr::read_unaligned(addr as *const i32).to_string(),
            Type::U4 => std::ptr::read_unaligned(addr as *const u32).to_string(),
            Type::I8 | Type::I => std::ptr::read_unaligned(addr as *const i64).to_string(),
            Type::U8 | Type::U => std::ptr::read_unaligned(addr as *const u64).to_string(),
            Type::R4 => std::ptr::read_unaligned(addr as *const f32).to_string(),
            Type::R8 => std::ptr::read_unaligned(addr as *const f64).to_string(),
            _ => String::new(),
        }
    }
}

/// The directory of the shared framework (where System.Private.CoreLib lives).
fn framework_dir(modules: &[(ModuleId, String)]) -> Option<String> {
    modules.iter().find_map(|(_, path)| {
        path.strip_suffix("System.Private.CoreLib.dll")
            .map(str::to_string)
    })
}

pub fn record(info: &ProfilerInfo, snapshot: u64) -> Counts {
    let mut counts = Counts::default();
    // A profiler thread that calls into the runtime should say so first.
    let _ = info.initialize_current_thread();
    let Ok(module_ids) = info.enum_modules() else {
        return counts;
    };
    let modules: Vec<(ModuleId, String)> = module_ids
        .into_iter()
        .filter_map(|m| info.get_module_info(m).ok().map(|i| (m, i.name)))
        .collect();
    let framework = framework_dir(&modules);
    let threads = info.enum_threads().unwrap_or_default();
    for (module, path) in &modules {
        if path.is_empty() || framework.as_deref().is_some_and(|f| path.starts_with(f)) {
            continue;
        }
        module_statics(info, snapshot, *module, &threads, &mut counts);
    }
    counts
}

fn module_statics(
    info: &ProfilerInfo,
    snapshot: u64,
    module: ModuleId,
    threads: &[ThreadId],
    counts: &mut Counts,
) {
    let Ok(m) = info.get_module_info(module) else {
        return;
    };
    let Ok(app_domain) = info.get_assembly_info(m.assembly).map(|a| a.app_domain) else {
        return;
    };
    let Ok(md) = info.get_module_metadata(module, sys::ofRead) else {
        return;
    };
    for td in md.enum_type_defs().unwrap_or_default() {
        let statics: Vec<(u32, corprof::FieldProps)> = md
            .enum_fields(td)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|f| md.get_field_props(f).ok().map(|p| (f, p)))
            .filter(|(_, p)| {
                p.attributes & sys::fdStatic != 0 && p.attributes & sys::fdLiteral == 0
            })
            .collect();
        if statics.is_empty() || md.enum_generic_params(td).is_ok_and(|g| !g.is_empty()) {
            continue;
        }
        let Ok(class) = info.get_class_from_token(module, td) else {
            continue;
        };
        counts.classes += 1;
        let class_name = md.type_full_name(td);
        for (field, props) in statics {
            let Ok(t) = sig::parse_field(&props.sig) else {
                continue;
            };
            let kind = kind_of(&t);
            let storage = info.get_static_field_info(class, field).unwrap_or(0);
            let f = Field {
                snapshot,
                class: &class_name,
                field: &props.name,
                kind: &kind,
            };
            if storage & sys::COR_PRF_FIELD_THREAD_STATIC != 0 {
                for &thread in threads {
                    if let Ok(addr) =
                        info.get_thread_static_address2(class, field, app_domain, thread)
                    {
                        f.emit(info, addr, thread.0 as u64, true);
                    }
                }
                counts.fields += 1;
                continue;
            }
            let addr = if storage & sys::COR_PRF_FIELD_RVA_STATIC != 0 {
                info.get_rva_static_address(class, field)
            } else {
                app_domain_static(info, class, field, app_domain)
            };
            match addr {
                Ok(addr) => {
                    f.emit(info, addr, 0, false);
                    counts.fields += 1;
                }
                Err(_) => counts.uninitialized += 1,
            }
        }
    }
}

fn app_domain_static(
    info: &ProfilerInfo,
    class: ClassId,
    field: u32,
    app_domain: AppDomainId,
) -> corprof::Result<usize> {
    info.get_app_domain_static_address(class, field, app_domain)
}

struct Field<'a> {
    snapshot: u64,
    class: &'a str,
    field: &'a str,
    kind: &'a Kind,
}

impl Field<'_> {
    /// Records the static at `addr`; thread statics only when set.
    fn emit(&self, info: &ProfilerInfo, addr: usize, thread: u64, only_if_set: bool) {
        if addr == 0 {
            return;
        }
        let (object, value) = match self.kind {
            Kind::Reference | Kind::String => {
                // SAFETY: (A7) `addr` is the runtime's address of this reference-typed static:
                // a pointer-sized slot holding an object reference or null.
                let object = unsafe { std::ptr::read_unaligned(addr as *const usize) };
                let value = if matches!(self.kind, Kind::String) && object != 0 {
                    crate::inspect::read_string(info, ObjectId(object), 256).unwrap_or_default()
                } else {
                    String::new()
                };
                (object as u64, value)
            }
            // SAFETY: (A7) `addr` is the runtime's address of this static, of type `t`.
            Kind::Primitive(t) => (0, unsafe { primitive(addr, t) }),
            Kind::Other => (0, "(struct)".to_string()),
        };
        if only_if_set && object == 0 && (value.is_empty() || value == "0" || value == "false") {
            return;
        }
        emit(&Event::HeapStatic {
            snapshot: self.snapshot,
            class: Cow::Borrowed(self.class),
            field: Cow::Borrowed(self.field),
            thread,
            object,
            value: Cow::Owned(value),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_types_decide_how_a_static_is_read() {
        assert!(matches!(kind_of(&Type::String), Kind::String));
        assert!(matches!(
            kind_of(&Type::Class(0x0200_0001)),
            Kind::Reference
        ));
        assert!(matches!(
            kind_of(&Type::SzArray(Box::new(Type::U1))),
            Kind::Reference
        ));
        assert!(matches!(kind_of(&Type::I4), Kind::Primitive(Type::I4)));
        assert!(matches!(
            kind_of(&Type::ValueType(0x0200_0002)),
            Kind::Other
        ));
    }

    #[test]
    fn primitives_read_as_text() {
        let d = 0.25f64;
        let i = -7i32;
        let b = 1u8;
        // SAFETY: (A7) each address is a live local of the type named.
        unsafe {
            assert_eq!(primitive(&d as *const f64 as usize, &Type::R8), "0.25");
            assert_eq!(primitive(&i as *const i32 as usize, &Type::I4), "-7");
            assert_eq!(primitive(&b as *const u8 as usize, &Type::Bool), "true");
        }
    }
}
