//! Planning (once per function, once per class): a method's signature becomes one
//! [`Kind`] per argument, a loaded class a [`ClassDesc`] (its fields' offsets and kinds),
//! and a struct passed in registers the SysV registers predicted for it.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use corprof::sig::{self, Type};
use corprof::{ClassId, FunctionId, MetaDataImport, MetadataRead, ModuleId};

use super::State;
use crate::tracing::arg_slots::{self, Placer, Registers, ReturnSlot, Returned, Slot};

pub(super) struct FnPlan {
    /// `this` first (when the method has one), then the parameters.
    pub(super) args: Vec<Param>,
    pub(super) ret: Option<Param>,
    /// Where each argument lies when the assembly enter hook runs (`None`: not placed),
    /// one per `args` entry ([`place`]).
    pub(super) places: Vec<Option<Slot>>,
    /// Where the return value lies when the assembly leave hook runs.
    pub(super) ret_place: Option<ReturnSlot>,
    /// The arguments, and apart from them the return value, when they are primitives the
    /// assembly hooks find in a saved register or a stack slot (`int Fib(int)`, the
    /// `int` of `int Describe(string, ID)`): those slots and kinds, for the hooks' short
    /// paths ([`PrimPlan`]).
    pub(super) prims: PrimPlan,
}

/// The values of a [`FnPlan`] that are primitives in known slots, entry and return apart:
/// the hooks write them without the general value writer's dispatch on kinds and places
/// (the same bytes).
pub(super) struct PrimPlan {
    /// Every argument, when each is such a primitive and there are at most seven (so that
    /// every value's number takes a byte, and a record's lengths too).
    pub(super) args: Option<Box<[(Slot, Prim)]>>,
    /// The return value when it is such a primitive (`Some(Some(..))`) or there is none
    /// (`Some(None)`), for at most 127 arguments (its number takes a byte).
    pub(super) ret: Option<Option<(Slot, Prim)>>,
}

impl PrimPlan {
    /// The short plans of `args`/`ret` placed at `places`/`ret_place`.
    pub(super) fn of(
        args: &[Param],
        ret: Option<&Param>,
        places: &[Option<Slot>],
        ret_place: Option<ReturnSlot>,
    ) -> PrimPlan {
        let simple = |slot: Slot| matches!(slot, Slot::Saved(_) | Slot::Stack(_));
        let all_args = (args.len() <= 7 && places.len() == args.len())
            .then(|| {
                args.iter()
                    .zip(places)
                    .map(|(a, place)| match (&a.kind, *place) {
                        (Kind::Prim(p), Some(slot)) if simple(slot) => Some((slot, *p)),
                        _ => None,
                    })
                    .collect::<Option<Box<[_]>>>()
            })
            .flatten();
        let ret = match (ret.map(|r| &r.kind), ret_place) {
            _ if args.len() >= 0x80 => None,
            (None, _) => Some(None),
            (Some(Kind::Prim(p)), Some(ReturnSlot::At(slot))) if simple(slot) => {
                Some(Some((slot, *p)))
            }
            _ => None,
        };
        PrimPlan {
            args: all_args,
            ret,
        }
    }
}

pub(super) struct Param {
    pub(super) name: String,
    pub(super) ty: String,
    pub(super) kind: Kind,
    /// For a struct passed in registers: the saved registers the SysV convention
    /// predicts for its eightbytes, and the bytes its fields cover ([`arg_slots`]).
    pub(super) regs: Option<(Vec<u16>, u16)>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Prim {
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
    I,
    U,
}

impl Prim {
    pub(super) fn size(self) -> usize {
        match self {
            Prim::Bool | Prim::I1 | Prim::U1 => 1,
            Prim::Char | Prim::I2 | Prim::U2 => 2,
            Prim::I4 | Prim::U4 | Prim::R4 => 4,
            _ => 8,
        }
    }

    pub(super) fn from_element_type(et: u32) -> Option<Prim> {
        Some(match et {
            0x02 => Prim::Bool,
            0x03 => Prim::Char,
            0x04 => Prim::I1,
            0x05 => Prim::U1,
            0x06 => Prim::I2,
            0x07 => Prim::U2,
            0x08 => Prim::I4,
            0x09 => Prim::U4,
            0x0A => Prim::I8,
            0x0B => Prim::U8,
            0x0C => Prim::R4,
            0x0D => Prim::R8,
            0x18 => Prim::I,
            0x19 => Prim::U,
            _ => return None,
        })
    }

    pub(super) fn from_name(name: &str) -> Option<Prim> {
        Some(match name {
            "System.Boolean" => Prim::Bool,
            "System.Char" => Prim::Char,
            "System.SByte" => Prim::I1,
            "System.Byte" => Prim::U1,
            "System.Int16" => Prim::I2,
            "System.UInt16" => Prim::U2,
            "System.Int32" => Prim::I4,
            "System.UInt32" => Prim::U4,
            "System.Int64" => Prim::I8,
            "System.UInt64" => Prim::U8,
            "System.Single" => Prim::R4,
            "System.Double" => Prim::R8,
            "System.IntPtr" => Prim::I,
            "System.UIntPtr" => Prim::U,
            _ => return None,
        })
    }

    pub(super) fn corelib_name(self) -> &'static str {
        match self {
            Prim::Bool => "System.Boolean",
            Prim::Char => "System.Char",
            Prim::I1 => "System.SByte",
            Prim::U1 => "System.Byte",
            Prim::I2 => "System.Int16",
            Prim::U2 => "System.UInt16",
            Prim::I4 => "System.Int32",
            Prim::U4 => "System.UInt32",
            Prim::I8 => "System.Int64",
            Prim::U8 => "System.UInt64",
            Prim::R4 => "System.Single",
            Prim::R8 => "System.Double",
            Prim::I => "System.IntPtr",
            Prim::U => "System.UIntPtr",
        }
    }
}

/// How a value at an address is read.
#[derive(Clone)]
pub(super) enum Kind {
    Prim(Prim),
    /// An object reference (class, string, array, object, boxed): described by the
    /// object's own class.
    Ref,
    /// A reference declared `string` (a sealed class): read as a string without asking
    /// the runtime for the object's class.
    Str,
    /// A value type stored inline (struct, enum).
    Inline(Arc<ClassDesc>),
    /// A managed pointer to a value of the inner kind.
    ByRef(Box<Kind>),
    Ptr,
    FnPtr,
    TypedByRef,
    Unknown(&'static str),
}

impl Kind {
    pub(super) fn size(&self) -> usize {
        match self {
            Kind::Prim(p) => p.size(),
            Kind::Inline(d) => d.size as usize,
            Kind::TypedByRef => 16,
            _ => 8,
        }
    }
}

/// A loaded class, as decoding needs it.
pub(super) struct ClassDesc {
    pub(super) name: String,
    /// Unboxed size of a value type; 0 for reference types.
    pub(super) size: u32,
    pub(super) shape: Shape,
}

pub(super) enum Shape {
    String,
    Array {
        element: String,
        kind: Kind,
        rank: u32,
    },
    /// A reference type: instance fields (inherited first), offsets from the object.
    Object(Vec<FieldDesc>),
    /// A value type: fields with offsets from the value; `box_offset` inside a box.
    Struct {
        fields: Vec<FieldDesc>,
        box_offset: u32,
        /// The number of its `ValueClass` record once written ([`announce_plan`]): its
        /// values then write the number and the fields' values only; 0 before (they
        /// write its name and its fields' names).
        number: AtomicU32,
    },
    Enum {
        underlying: Prim,
        members: Vec<(i64, String)>,
        box_offset: u32,
    },
    /// A boxable primitive (`System.Int32`…).
    Primitive {
        prim: Prim,
        box_offset: u32,
    },
    Unknown(&'static str),
}

pub(super) struct FieldDesc {
    pub(super) name: String,
    pub(super) offset: u32,
    pub(super) kind: Kind,
}

/// (module, typedef) → [(type args, ClassID)].
pub(super) type LoadedClasses = HashMap<(usize, u32), Vec<(Vec<ClassId>, ClassId)>>;

pub(super) fn class_desc(s: &State, class: ClassId) -> Arc<ClassDesc> {
    if let Some(d) = s.classes.read().ok().and_then(|m| m.get(&class.0).cloned()) {
        return d;
    }
    let d = Arc::new(build_class(s, class, 0));
    let mut m = s.classes.write().unwrap_or_else(|p| p.into_inner());
    let d = m.entry(class.0).or_insert(d).clone();
    drop(m);
    super::publish(class, &d);
    d
}

/// Class loads a description of a pending class waits for before it is kept as it is.
const PENDING_TRIES: u8 = 16;
/// Classes waiting at most (the oldest are kept as they are beyond that).
const PENDING_MAX: usize = 1024;

/// ClassLoadFinished with the assembly hooks: describes `class` for the class table they
/// read objects' classes from. The runtime may report a class loaded before a value type
/// among its fields; such a description is not kept but built again at the next class
/// loads (up to [`PENDING_TRIES`] of them, then kept as it is: that field reads
/// `value type not resolved`), so that no guess is ever published.
pub(super) fn describe_loaded(s: &State, class: ClassId) {
    let mut retry = std::mem::take(&mut *s.pending.lock().unwrap_or_else(|p| p.into_inner()));
    retry.push((class, 0));
    let mut still = Vec::new();
    for (c, tries) in retry {
        if s.classes.read().ok().is_some_and(|m| m.contains_key(&c.0)) {
            class_desc(s, c);
            continue;
        }
        let d = Arc::new(build_class(s, c, 0));
        if unresolved(&d, 0) && tries < PENDING_TRIES {
            still.push((c, tries + 1));
            continue;
        }
        let mut m = s.classes.write().unwrap_or_else(|p| p.into_inner());
        let d = m.entry(c.0).or_insert(d).clone();
        drop(m);
        super::publish(c, &d);
    }
    let mut p = s.pending.lock().unwrap_or_else(|p| p.into_inner());
    p.extend(still);
    while p.len() > PENDING_MAX {
        let (c, _) = p.remove(0);
        drop(p);
        let d = Arc::new(build_class(s, c, 0));
        let mut m = s.classes.write().unwrap_or_else(|p| p.into_inner());
        let d = m.entry(c.0).or_insert(d).clone();
        drop(m);
        super::publish(c, &d);
        p = s.pending.lock().unwrap_or_else(|p| p.into_inner());
    }
}

pub(super) fn md_of(s: &State, module: ModuleId) -> Option<MetaDataImport> {
    s.info.get_module_metadata(module, corprof_sys::ofRead).ok()
}

/// `<Name>k__BackingField` → `Name`.
pub(super) fn field_name(raw: &str) -> String {
    raw.strip_prefix('<')
        .and_then(|r| r.split_once(">k__BackingField"))
        .map(|(n, _)| n.to_string())
        .unwrap_or_else(|| raw.to_string())
}

pub(super) fn build_class(s: &State, class: ClassId, depth: u32) -> ClassDesc {
    let info = &s.info;
    let name = crate::names::class_name(info, class);
    let unknown = |name: String, why| ClassDesc {
        name,
        size: 0,
        shape: Shape::Unknown(why),
    };
    if depth > MAX_DEPTH {
        return unknown(name, TOO_DEEP);
    }
    if let Ok(Some(a)) = info.is_array_class(class) {
        let (element, kind) = if a.element_class.0 != 0 {
            let ed = class_desc_nested(s, a.element_class, depth + 1);
            let kind = match &ed.shape {
                Shape::Unknown(why) => Kind::Unknown(why),
                _ if is_inline(&ed) => Kind::Inline(ed.clone()),
                _ => Kind::Ref,
            };
            (ed.name.clone(), kind)
        } else {
            match Prim::from_element_type(a.element_type) {
                Some(p) => (p.corelib_name().to_string(), Kind::Prim(p)),
                None => ("?".into(), Kind::Unknown("array element type")),
            }
        };
        return ClassDesc {
            name,
            size: 0,
            shape: Shape::Array {
                element,
                kind,
                rank: a.rank,
            },
        };
    }
    if name == "System.String" {
        return ClassDesc {
            name,
            size: 0,
            shape: Shape::String,
        };
    }
    let Ok(ci) = info.get_class_id_info2(class) else {
        return unknown(name, "GetClassIDInfo2 failed");
    };
    let parent_name = if ci.parent.0 != 0 {
        crate::names::class_name(info, ci.parent)
    } else {
        String::new()
    };
    let value_type = (parent_name == "System.ValueType" || parent_name == "System.Enum")
        && name != "System.Enum";
    if !value_type {
        // A reference type: fields of every ancestor, base first.
        let mut chain = Vec::new();
        let mut c = class;
        for _ in 0..32 {
            if c.0 == 0 {
                break;
            }
            chain.push(c);
            c = info
                .get_class_id_info2(c)
                .map(|i| i.parent)
                .unwrap_or(ClassId(0));
        }
        let mut fields = Vec::new();
        for c in chain.into_iter().rev() {
            fields.extend(own_fields(s, c, depth));
        }
        return ClassDesc {
            name,
            size: 0,
            shape: Shape::Object(fields),
        };
    }
    let box_offset = info.get_box_class_layout(class).unwrap_or(8);
    let size = info.get_class_layout(class).map(|(_, n)| n).unwrap_or(0);
    if let Some(prim) = Prim::from_name(&name) {
        return ClassDesc {
            name,
            size: prim.size() as u32,
            shape: Shape::Primitive { prim, box_offset },
        };
    }
    if parent_name == "System.Enum" {
        let Some(md) = md_of(s, ci.module) else {
            return unknown(name, "no metadata");
        };
        let mut underlying = Prim::I4;
        let mut members = Vec::new();
        for f in md.enum_fields(ci.token).unwrap_or_default() {
            let Ok(p) = md.get_field_props(f) else {
                continue;
            };
            if p.attributes & 0x10 == 0 {
                // The instance field `value__` has the underlying type.
                if let Ok(t) = sig::parse_field(&p.sig)
                    && let Kind::Prim(u) = prim_kind(&t)
                {
                    underlying = u;
                }
            } else if let Some(v) = p.constant {
                members.push((v, p.name));
            }
        }
        return ClassDesc {
            name,
            size: underlying.size() as u32,
            shape: Shape::Enum {
                underlying,
                members,
                box_offset,
            },
        };
    }
    ClassDesc {
        name,
        size,
        shape: Shape::Struct {
            fields: own_fields(s, class, depth),
            box_offset,
            number: AtomicU32::new(0),
        },
    }
}

/// The next `ValueClass` number (per process: `--args` records one session).
static NEXT_NUMBER: AtomicU32 = AtomicU32::new(1);

/// Writes a `ValueClass` record for each struct the plan's values hold inline (their
/// own inline fields' first) that has none yet, and numbers it, so that the hooks write
/// its values by number: the struct's name and its fields' names once per class instead
/// of in every call. Once per function, outside the hooks (the FunctionIDMapper, or the
/// slow path's first call before its record); a class whose record could not be written
/// keeps writing its names.
pub(super) fn announce_plan(plan: &FnPlan) {
    for p in plan.args.iter().chain(&plan.ret) {
        announce_kind(&p.kind, 0);
    }
}

fn announce_kind(k: &Kind, level: u32) {
    match k {
        Kind::Inline(d) => announce(d, level),
        Kind::ByRef(inner) => announce_kind(inner, level),
        _ => {}
    }
}

fn announce(d: &ClassDesc, level: u32) {
    let Shape::Struct { fields, number, .. } = &d.shape else {
        return;
    };
    if level > 16 || number.load(Ordering::Relaxed) != 0 {
        return;
    }
    for f in fields {
        announce_kind(&f.kind, level + 1);
    }
    let n = NEXT_NUMBER.fetch_add(1, Ordering::Relaxed);
    let names = clrprof_format::values::encode_field_names(fields.iter().map(|f| &*f.name));
    let written = crate::output::buffers::emit_waiting(&clrprof_format::Event::ValueClass {
        class: u64::from(n),
        name: Cow::Borrowed(&d.name),
        fields: Cow::Owned(names),
    });
    if written {
        // Another thread may have numbered it meanwhile: either record names it.
        let _ = number.compare_exchange(0, n, Ordering::Relaxed, Ordering::Relaxed);
    }
}

/// The depth below which no value type is described ([`build_class`]).
const MAX_DEPTH: u32 = 6;

/// How many levels of value types nest inside `d`'s values (its inline fields', or an
/// array's inline elements', recursively).
fn height(d: &ClassDesc, level: u32) -> u32 {
    fn of(k: &Kind, level: u32) -> u32 {
        match k {
            Kind::Inline(d) => 1 + height(d, level + 1),
            Kind::ByRef(inner) => of(inner, level),
            _ => 0,
        }
    }
    if level > 16 {
        return level;
    }
    match &d.shape {
        Shape::Struct { fields, .. } | Shape::Object(fields) => {
            fields.iter().map(|f| of(&f.kind, level)).max().unwrap_or(0)
        }
        Shape::Array { kind, .. } => of(kind, level),
        _ => 0,
    }
}

/// A class met while describing another (element, field type): cached like any, unless
/// the depth limit cut its description short (met again nearer the top, it is described
/// further) or a value type in it was not reported loaded yet.
pub(super) fn class_desc_nested(s: &State, class: ClassId, depth: u32) -> Arc<ClassDesc> {
    if let Some(d) = s.classes.read().ok().and_then(|m| m.get(&class.0).cloned())
        // The kept description (made at depth 0) fits below `depth`; else it is made
        // again, cut where the depth limit cuts it, whichever class was described first.
        && depth + height(&d, 0) <= MAX_DEPTH
    {
        return d;
    }
    let d = Arc::new(build_class(s, class, depth));
    if incomplete(&d, 0) {
        return d;
    }
    let mut m = s.classes.write().unwrap_or_else(|p| p.into_inner());
    let d = m.entry(class.0).or_insert(d).clone();
    drop(m);
    super::publish(class, &d);
    d
}

pub(super) const TOO_DEEP: &str = "types nested too deeply";
pub(super) const UNRESOLVED: &str = "value type not resolved";

/// Whether the depth limit, or a value type not reported loaded yet, left part of `d`
/// undescribed: a description to build again later rather than keep.
pub(super) fn incomplete(d: &ClassDesc, level: u32) -> bool {
    missing(d, level, &[TOO_DEEP, UNRESOLVED])
}

/// Whether a value type in `d` was not reported loaded yet.
pub(super) fn unresolved(d: &ClassDesc, level: u32) -> bool {
    missing(d, level, &[UNRESOLVED])
}

/// Whether part of `d` is unreadable for one of `reasons`.
fn missing(d: &ClassDesc, level: u32, reasons: &[&str]) -> bool {
    fn kind_cut(k: &Kind, level: u32, reasons: &[&str]) -> bool {
        match k {
            Kind::Unknown(why) => reasons.contains(why),
            Kind::Inline(d) => missing(d, level + 1, reasons),
            Kind::ByRef(inner) => kind_cut(inner, level, reasons),
            _ => false,
        }
    }
    if level > 16 {
        return true;
    }
    match &d.shape {
        Shape::Unknown(why) => reasons.contains(why),
        Shape::Struct { fields, .. } | Shape::Object(fields) => {
            fields.iter().any(|f| kind_cut(&f.kind, level, reasons))
        }
        Shape::Array { kind, .. } => kind_cut(kind, level, reasons),
        _ => false,
    }
}

/// How a value of the class `d` describes is stored where a signature names it. A class
/// the planner could not describe is unreadable, never guessed to be a reference: its
/// first word read as an ObjectID once crashed the runtime in GetClassFromObject.
pub(super) fn kind_for_desc(d: Arc<ClassDesc>) -> Kind {
    match &d.shape {
        Shape::Primitive { prim, .. } => Kind::Prim(*prim),
        Shape::String => Kind::Str,
        Shape::Unknown(why) => Kind::Unknown(why),
        _ if is_inline(&d) => Kind::Inline(d),
        _ => Kind::Ref,
    }
}

pub(super) fn is_inline(d: &ClassDesc) -> bool {
    matches!(
        d.shape,
        Shape::Struct { .. } | Shape::Enum { .. } | Shape::Primitive { .. }
    )
}

pub(super) fn own_fields(s: &State, class: ClassId, depth: u32) -> Vec<FieldDesc> {
    let info = &s.info;
    let Ok(ci) = info.get_class_id_info2(class) else {
        return Vec::new();
    };
    let Some(md) = md_of(s, ci.module) else {
        return Vec::new();
    };
    let Ok((layout, _)) = info.get_class_layout(class) else {
        return Vec::new();
    };
    let cx = Cx {
        s,
        md: &md,
        module: ci.module,
        class_args: &ci.type_args,
        method_args: &[],
        depth: depth + 1,
    };
    layout
        .into_iter()
        .filter_map(|(tok, offset)| {
            let p = md.get_field_props(tok).ok()?;
            let kind = sig::parse_field(&p.sig)
                .map(|t| cx.kind(&t))
                .unwrap_or(Kind::Unknown("field signature"));
            Some(FieldDesc {
                name: field_name(&p.name),
                offset,
                kind,
            })
        })
        .collect()
}

pub(super) fn prim_kind(t: &Type) -> Kind {
    Kind::Prim(match t {
        Type::Bool => Prim::Bool,
        Type::Char => Prim::Char,
        Type::I1 => Prim::I1,
        Type::U1 => Prim::U1,
        Type::I2 => Prim::I2,
        Type::U2 => Prim::U2,
        Type::I4 => Prim::I4,
        Type::U4 => Prim::U4,
        Type::I8 => Prim::I8,
        Type::U8 => Prim::U8,
        Type::R4 => Prim::R4,
        Type::R8 => Prim::R8,
        Type::I => Prim::I,
        Type::U => Prim::U,
        _ => return Kind::Unknown("not a primitive"),
    })
}

/// Resolution context: a signature's module and the generic arguments in scope.
pub(super) struct Cx<'a> {
    pub(super) s: &'a State,
    pub(super) md: &'a MetaDataImport,
    pub(super) module: ModuleId,
    pub(super) class_args: &'a [ClassId],
    pub(super) method_args: &'a [ClassId],
    pub(super) depth: u32,
}

impl Cx<'_> {
    fn kind(&self, t: &Type) -> Kind {
        match t {
            Type::String => Kind::Str,
            Type::Object
            | Type::Class(_)
            | Type::SzArray(_)
            | Type::Array { .. }
            | Type::GenericInst {
                value_type: false, ..
            } => Kind::Ref,
            Type::ValueType(_)
            | Type::GenericInst {
                value_type: true, ..
            } => match self.class_of(t) {
                Some(c) => self.kind_of_class(c),
                None => Kind::Unknown(UNRESOLVED),
            },
            Type::Var(n) => self
                .class_args
                .get(*n as usize)
                .map(|c| self.kind_of_class(*c))
                .unwrap_or(Kind::Unknown("generic argument not known")),
            Type::MVar(n) => self
                .method_args
                .get(*n as usize)
                .map(|c| self.kind_of_class(*c))
                .unwrap_or(Kind::Unknown("generic argument not known")),
            Type::ByRef(inner) => Kind::ByRef(Box::new(self.kind(inner))),
            Type::Ptr(_) => Kind::Ptr,
            Type::FnPtr(_) => Kind::FnPtr,
            Type::TypedByRef => Kind::TypedByRef,
            Type::Modified { inner, .. } | Type::Pinned(inner) => self.kind(inner),
            Type::InternalModified { inner, .. } => self.kind(inner),
            other => match prim_kind(other) {
                Kind::Unknown(_) => Kind::Unknown("unsupported type"),
                k => k,
            },
        }
    }

    fn kind_of_class(&self, c: ClassId) -> Kind {
        kind_for_desc(class_desc_nested(self.s, c, self.depth))
    }

    /// The loaded class of a type in this signature.
    fn class_of(&self, t: &Type) -> Option<ClassId> {
        match t {
            Type::ValueType(tok) | Type::Class(tok) => self.class_of_token(*tok, &[]),
            Type::GenericInst { token, args, .. } => {
                let args: Option<Vec<ClassId>> = args.iter().map(|a| self.class_of(a)).collect();
                self.class_of_token(*token, &args?)
            }
            Type::Var(n) => self.class_args.get(*n as usize).copied(),
            Type::MVar(n) => self.method_args.get(*n as usize).copied(),
            Type::String => self.corelib_class("System.String"),
            Type::Object => self.corelib_class("System.Object"),
            other => match prim_kind(other) {
                Kind::Prim(p) => self.corelib_class(p.corelib_name()),
                _ => None,
            },
        }
    }

    fn class_of_token(&self, tok: u32, args: &[ClassId]) -> Option<ClassId> {
        match tok >> 24 {
            0x02 => loaded_class(self.s, self.module, tok, args),
            0x01 => {
                // A type of another assembly: looked up by name in CoreLib (where the
                // framework's value types live).
                let name = self.md.type_ref_full_name(tok);
                let (module, md) = corelib(self.s)?;
                let td = md.find_type_def_by_name(&name).ok()?;
                loaded_class(self.s, *module, td, args)
            }
            0x1B => {
                let blob = self.md.get_type_spec_from_token(tok).ok()?;
                let t = sig::parse_type(&blob).ok()?;
                self.class_of(&t)
            }
            _ => None,
        }
    }

    fn corelib_class(&self, name: &str) -> Option<ClassId> {
        let (module, md) = corelib(self.s)?;
        let td = md.find_type_def_by_name(name).ok()?;
        loaded_class(self.s, *module, td, &[])
    }
}

/// The ClassID of a loaded type `(module, typedef, type args)`, as ClassLoadFinished
/// reported it. (`GetClassFromToken` answers CORPROF_E_UNSUPPORTED_CALL_SEQUENCE inside
/// the ELT hooks, as it may load types; a type a method takes by value is loaded before
/// the method runs, so the map knows it.)
pub(super) fn loaded_class(
    s: &State,
    module: ModuleId,
    token: u32,
    args: &[ClassId],
) -> Option<ClassId> {
    let m = s.loaded.lock().unwrap_or_else(|p| p.into_inner());
    m.get(&(module.0, token))?
        .iter()
        .find(|(a, _)| a.as_slice() == args)
        .map(|(_, c)| *c)
}

/// CoreLib's module, found as the module of `System.Object` (the root of any class).
pub(super) fn corelib(s: &State) -> Option<&(ModuleId, MetaDataImport)> {
    s.corelib.get()?.as_ref()
}

pub(super) fn find_corelib(s: &State, mut class: ClassId) {
    if s.corelib.get().is_some() || class.0 == 0 {
        return;
    }
    for _ in 0..32 {
        let Ok(ci) = s.info.get_class_id_info2(class) else {
            return;
        };
        if ci.parent.0 == 0 {
            let found = md_of(s, ci.module).map(|md| (ci.module, md));
            let _ = s.corelib.set(found);
            return;
        }
        class = ci.parent;
    }
}

pub(super) fn build_plan(s: &State, function: FunctionId) -> Option<FnPlan> {
    let info = &s.info;
    let fi = info.get_function_info2(function, 0).ok()?;
    find_corelib(s, fi.class);
    let md = md_of(s, fi.module)?;
    let props = md.get_method_props(fi.token).ok()?;
    let msig = sig::parse_method(&props.sig).ok()?;
    let names = md.param_names(fi.token).unwrap_or_default();
    let class_args = if fi.class.0 != 0 {
        info.get_class_id_info2(fi.class)
            .map(|c| c.type_args)
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    let cx = Cx {
        s,
        md: &md,
        module: fi.module,
        class_args: &class_args,
        method_args: &fi.type_args,
        depth: 0,
    };
    let resolve = |tok: u32| md.token_name(tok);
    let mut args = Vec::with_capacity(msig.params.len() + 1);
    if msig.has_this && !msig.explicit_this {
        let (ty, kind) = if fi.class.0 != 0 {
            let d = class_desc(s, fi.class);
            let kind = match &d.shape {
                Shape::Unknown(why) => Kind::Unknown(why),
                // `this` of a value type's method is a managed pointer to the value.
                _ if is_inline(&d) => Kind::ByRef(Box::new(Kind::Inline(d.clone()))),
                _ => Kind::Ref,
            };
            (d.name.clone(), kind)
        } else {
            ("?".into(), Kind::Ref)
        };
        args.push(Param {
            name: "this".into(),
            ty,
            kind,
            regs: None,
        });
    }
    for (i, t) in msig.params.iter().enumerate() {
        let seq = i as u32 + 1;
        let name = names
            .iter()
            .find(|(n, _)| *n == seq)
            .map(|(_, n)| n.clone())
            .unwrap_or_else(|| format!("arg{i}"));
        args.push(Param {
            name,
            ty: t.format(&resolve),
            kind: cx.kind(t),
            regs: None,
        });
    }
    let ret = (msig.ret != Type::Void).then(|| Param {
        name: "return".into(),
        ty: msig.ret.format(&resolve),
        kind: cx.kind(&msig.ret),
        regs: None,
    });
    let has_this = msig.has_this && !msig.explicit_this;
    // Shared generic code takes a hidden argument whose register is not predicted.
    if class_args.is_empty() && fi.type_args.is_empty() {
        predict_registers(&mut args, ret.as_ref(), has_this);
    }
    // Code shared by instantiations over reference types (`__Canon`) takes the generic
    // context as a hidden argument after `this` and the return buffer when it is a generic
    // method, a static method or a value type's method (dotnet/runtime
    // `MethodDesc::RequiresInstArg`); an instance method of a class finds it in `this`.
    let canon = |c: &ClassId| crate::names::class_name(info, *c).contains("System.__Canon");
    let shared = class_args.iter().chain(&fi.type_args).any(canon);
    let value_type_method =
        matches!(args.first().map(|p| &p.kind), Some(Kind::ByRef(_)) if has_this);
    let context = shared && (!fi.type_args.is_empty() || !has_this || value_type_method);
    let (places, ret_place) = place(&args, ret.as_ref(), has_this, context);
    let prims = PrimPlan::of(&args, ret.as_ref(), &places, ret_place);
    Some(FnPlan {
        args,
        ret,
        places,
        ret_place,
        prims,
    })
}

/// Where each argument lies at the method's entry and the return value at its return, as
/// the SysV convention and the runtime's hidden arguments put them: `this`, the address
/// of the buffer a struct over 16 bytes is returned through, the generic context
/// (`context`), then the parameters ([`Placer`]).
pub(super) fn place(
    args: &[Param],
    ret: Option<&Param>,
    has_this: bool,
    context: bool,
) -> (Vec<Option<Slot>>, Option<ReturnSlot>) {
    let mut p = Placer::default();
    let ret_place = match ret.map(|r| &r.kind) {
        None => None,
        Some(k) => return_place_of(k),
    };
    let buffer = ret_place == Some(ReturnSlot::Buffer);
    if ret.is_some() && ret_place.is_none() {
        // A result of unknown shape may take a hidden buffer: nothing can be placed.
        p.unknown();
    }
    let mut places = Vec::with_capacity(args.len());
    for (i, a) in args.iter().enumerate() {
        if i == usize::from(has_this) {
            // Hidden arguments come right after `this` (or first).
            if buffer {
                p.integer();
            }
            if context {
                p.integer();
            }
        }
        places.push(place_one(&mut p, &a.kind));
    }
    (places, ret_place)
}

fn place_one(p: &mut Placer, kind: &Kind) -> Option<Slot> {
    match kind {
        Kind::Prim(Prim::R4 | Prim::R8) => p.float(),
        Kind::Prim(_) | Kind::Ref | Kind::Str | Kind::ByRef(_) | Kind::Ptr | Kind::FnPtr => {
            p.integer()
        }
        Kind::Inline(d) => match &d.shape {
            Shape::Primitive {
                prim: Prim::R4 | Prim::R8,
                ..
            } => p.float(),
            Shape::Enum { .. } | Shape::Primitive { .. } => p.integer(),
            Shape::Struct { .. } if special_abi(d) => p.unknown(),
            Shape::Struct { .. } => {
                let classes = struct_classes(d).map(|(c, _)| c);
                p.structure(d.size, classes.as_deref())
            }
            _ => p.unknown(),
        },
        Kind::TypedByRef | Kind::Unknown(_) => p.unknown(),
    }
}

/// Structs the runtime passes by rules of their own rather than by their fields' classes
/// (SIMD vectors, 128-bit integers): not placed rather than guessed.
fn special_abi(d: &ClassDesc) -> bool {
    d.name.starts_with("System.Runtime.Intrinsics.Vector")
        || d.name.starts_with("System.Numerics.Vector")
        || d.name == "System.Int128"
        || d.name == "System.UInt128"
}

fn return_place_of(kind: &Kind) -> Option<ReturnSlot> {
    match kind {
        Kind::Prim(Prim::R4 | Prim::R8) => arg_slots::return_place(Returned::Float, 8, None),
        Kind::Prim(_) | Kind::Ref | Kind::Str | Kind::ByRef(_) | Kind::Ptr | Kind::FnPtr => {
            arg_slots::return_place(Returned::Integer, 8, None)
        }
        Kind::Inline(d) => match &d.shape {
            Shape::Primitive {
                prim: Prim::R4 | Prim::R8,
                ..
            } => arg_slots::return_place(Returned::Float, 8, None),
            Shape::Enum { .. } | Shape::Primitive { .. } => {
                arg_slots::return_place(Returned::Integer, 8, None)
            }
            Shape::Struct { .. } if special_abi(d) => None,
            Shape::Struct { .. } => {
                let classes = struct_classes(d).map(|(c, _)| c);
                arg_slots::return_place(Returned::Other, d.size, classes.as_deref())
            }
            _ => None,
        },
        Kind::TypedByRef | Kind::Unknown(_) => None,
    }
}

/// The SysV registers of each struct argument passed in registers ([`Param::regs`]),
/// handing out registers in argument order: `this`, the return buffer of a struct
/// returned through memory, then the parameters. Stops at the first value whose
/// registers it cannot tell; the runtime's answers check every prediction.
pub(super) fn predict_registers(args: &mut [Param], ret: Option<&Param>, has_this: bool) {
    let mut r = Registers::default();
    let ret_buffer = match ret.map(|p| &p.kind) {
        Some(Kind::Inline(d)) if matches!(d.shape, Shape::Struct { .. }) => {
            match struct_classes(d) {
                Some(_) => false,
                None if d.size > 16 => true,
                None => return,
            }
        }
        Some(Kind::TypedByRef | Kind::Unknown(_)) => return,
        _ => false,
    };
    for (i, p) in args.iter_mut().enumerate() {
        if i == usize::from(has_this) && ret_buffer {
            r.integer();
        }
        match &p.kind {
            Kind::Prim(Prim::R4 | Prim::R8) => r.float(),
            Kind::Prim(_) | Kind::Ref | Kind::Str | Kind::ByRef(_) | Kind::Ptr | Kind::FnPtr => {
                r.integer()
            }
            Kind::Inline(d) => match &d.shape {
                Shape::Enum { .. } => r.integer(),
                Shape::Primitive {
                    prim: Prim::R4 | Prim::R8,
                    ..
                } => r.float(),
                Shape::Primitive { .. } => r.integer(),
                Shape::Struct { .. } => match struct_classes(d) {
                    Some((classes, covered)) => {
                        p.regs = r.structure(&classes).map(|regs| (regs, covered));
                    }
                    // Larger than 16 bytes: on the stack, no register.
                    None if d.size > 16 => {}
                    None => return,
                },
                _ => return,
            },
            Kind::TypedByRef | Kind::Unknown(_) => return,
        }
    }
}

/// The SysV classes of a struct's eightbytes and the bytes its fields cover, when it is
/// passed in registers.
pub(super) fn struct_classes(d: &ClassDesc) -> Option<(Vec<arg_slots::Class>, u16)> {
    let mut fields = Vec::new();
    flat_fields(d, 0, &mut fields, 0)?;
    let classes = arg_slots::classify(d.size, &fields)?;
    Some((classes, arg_slots::field_bytes(&fields)))
}

/// A struct's fields with nested structs flattened, offsets from the outer value.
pub(super) fn flat_fields(
    d: &ClassDesc,
    base: u32,
    out: &mut Vec<arg_slots::Field>,
    level: u32,
) -> Option<()> {
    fn prim(out: &mut Vec<arg_slots::Field>, offset: u32, p: Prim) {
        out.push(arg_slots::Field {
            offset,
            size: p.size() as u32,
            float: matches!(p, Prim::R4 | Prim::R8),
        });
    }
    match &d.shape {
        Shape::Enum { underlying, .. } => prim(out, base, *underlying),
        Shape::Primitive { prim: p, .. } => prim(out, base, *p),
        Shape::Struct { fields, .. } if level < 8 => {
            for f in fields {
                let at = base.checked_add(f.offset)?;
                match &f.kind {
                    Kind::Prim(p) => prim(out, at, *p),
                    Kind::Ref | Kind::Str | Kind::ByRef(_) | Kind::Ptr | Kind::FnPtr => {
                        prim(out, at, Prim::I)
                    }
                    Kind::Inline(inner) => flat_fields(inner, at, out, level + 1)?,
                    Kind::TypedByRef | Kind::Unknown(_) => return None,
                }
            }
        }
        _ => return None,
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backing_field_names_are_the_property_names() {
        assert_eq!(field_name("<Sku>k__BackingField"), "Sku");
        assert_eq!(field_name("_count"), "_count");
    }

    fn param(kind: Kind) -> Param {
        Param {
            name: String::new(),
            ty: String::new(),
            kind,
            regs: None,
        }
    }

    fn longs(name: &str, n: u32) -> Kind {
        Kind::Inline(Arc::new(ClassDesc {
            name: name.into(),
            size: 8 * n,
            shape: Shape::Struct {
                fields: (0..n)
                    .map(|i| FieldDesc {
                        name: format!("F{i}"),
                        offset: 8 * i,
                        kind: Kind::Prim(Prim::I8),
                    })
                    .collect(),
                box_offset: 8,
                number: AtomicU32::new(0),
            },
        }))
    }

    /// The hooks' short paths take an entry whose arguments are all primitives the
    /// convention places, seven at most, and a return of such a primitive (or none);
    /// anything else keeps the general path.
    #[test]
    fn only_placed_primitives_take_the_short_path() {
        let short = |args: &[Kind], ret: Option<Kind>| {
            let args: Vec<Param> = args.iter().cloned().map(param).collect();
            let ret = ret.map(param);
            let (places, ret_place) = place(&args, ret.as_ref(), false, false);
            PrimPlan::of(&args, ret.as_ref(), &places, ret_place)
        };
        let p = short(&[Kind::Prim(Prim::I4)], Some(Kind::Prim(Prim::I4)));
        assert_eq!(p.args.unwrap().len(), 1);
        assert!(matches!(p.ret, Some(Some((Slot::Saved(_), Prim::I4)))));
        // Seven integers: the seventh on the stack.
        let p = short(&vec![Kind::Prim(Prim::I8); 7], Some(Kind::Prim(Prim::R8)));
        let args = p.args.unwrap();
        assert!(
            matches!(args[6], (Slot::Stack(_), Prim::I8)),
            "{:?}",
            args[6]
        );
        let p = short(&[], None);
        assert!(p.args.is_some_and(|a| a.is_empty()) && p.ret == Some(None));
        // Eight arguments and more, a string, a struct: the general path for the entry,
        // the return value apart.
        let p = short(&vec![Kind::Prim(Prim::I4); 8], Some(Kind::Prim(Prim::U1)));
        assert!(p.args.is_none() && matches!(p.ret, Some(Some((_, Prim::U1)))));
        let p = short(&[Kind::Str], Some(Kind::Prim(Prim::I4)));
        assert!(p.args.is_none() && matches!(p.ret, Some(Some((_, Prim::I4)))));
        assert!(short(&[longs("S16", 2)], None).args.is_none());
        // A struct result: the general path for the return.
        let p = short(&[Kind::Prim(Prim::I4)], Some(longs("S16", 2)));
        assert!(p.args.is_some() && p.ret.is_none());
        // A return value numbered 128 or more does not take a byte.
        assert!(
            short(&vec![Kind::Prim(Prim::I4); 128], Some(Kind::Prim(Prim::I4)))
                .ret
                .is_none()
        );
    }

    #[test]
    fn hidden_arguments_come_first_then_the_parameters() {
        // An instance method returning a 24-byte struct, shared generic code of a value
        // type (so with a generic context): this = RDI, buffer = RSI, context = RDX, then
        // (double, S16, long) in XMM0, RCX + R8, R9.
        let this = param(Kind::ByRef(Box::new(longs("S16", 2))));
        let args = [
            this,
            param(Kind::Prim(Prim::R8)),
            param(longs("S16", 2)),
            param(Kind::Prim(Prim::I8)),
            param(Kind::Str),
        ];
        let ret = param(longs("S24", 3));
        let (places, ret_place) = place(&args, Some(&ret), true, true);
        assert_eq!(ret_place, Some(ReturnSlot::Buffer));
        assert_eq!(
            places,
            vec![
                Some(Slot::Saved(120)),
                Some(Slot::Saved(56)),
                Some(Slot::Struct {
                    regs: [144, 152],
                    count: 2,
                    copy: 0
                }),
                Some(Slot::Saved(160)),
                // The general registers are used up: the string is on the stack.
                Some(Slot::Stack(0)),
            ]
        );
        // A static method without hidden arguments: the first parameter is RDI.
        let (places, ret_place) = place(&args[1..], None, false, false);
        assert_eq!(ret_place, None);
        assert_eq!(
            places[1],
            Some(Slot::Struct {
                regs: [120, 128],
                count: 2,
                copy: 0
            })
        );
        // A value of unknown kind: it and every later one are unplaced.
        let args = [param(Kind::Unknown("?")), param(Kind::Prim(Prim::I4))];
        assert_eq!(place(&args, None, false, false).0, vec![None, None]);
        // A result of unknown shape may take a buffer: nothing is placed.
        let args = [param(Kind::Prim(Prim::I4))];
        let ret = param(Kind::Unknown("?"));
        assert_eq!(place(&args, Some(&ret), false, false), (vec![None], None));
    }

    #[test]
    fn primitive_names_round_trip() {
        for p in [Prim::Bool, Prim::Char, Prim::I4, Prim::R8, Prim::U] {
            assert_eq!(Prim::from_name(p.corelib_name()), Some(p));
        }
    }
}
