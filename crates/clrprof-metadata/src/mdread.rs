//! [`MetadataRead`]: what naming asks of a module's metadata, whichever way it is read:
//! through the runtime's importer (`corprof::MetaDataImport`) or straight
//! from the module's image ([`RawMetadata`](crate::RawMetadata)), which spares the runtime
//! converting the module's metadata to its slower read-write form (see `rawmd`).
//!
//! The primitives mirror `IMetaDataImport`'s methods of the same names; the names built on
//! them (`type_full_name`, `token_name`, …) are written once, here.

use corprof_sys as sys;

use crate::hresult::Result;
use crate::props::{FieldProps, MemberRefProps, MethodProps, TypeDefProps, TypeRefProps};
use crate::sig;

const MAX_NESTING: usize = 64;
const MAX_NAME_DEPTH: u32 = 8;

/// A module's metadata, read for names. Every method copies what it returns.
pub trait MetadataRead {
    /// `GetMethodProps` for an `mdMethodDef`.
    fn get_method_props(&self, method: u32) -> Result<MethodProps>;
    /// `GetTypeDefProps`: `name` is `Namespace.Name` when the type has a namespace.
    fn get_type_def_props(&self, type_def: u32) -> Result<TypeDefProps>;
    /// `GetNestedClassProps`: the enclosing `mdTypeDef`, or `None` for a top-level type.
    fn get_nested_class_props(&self, type_def: u32) -> Result<Option<u32>>;
    /// `GetTypeRefProps`.
    fn get_type_ref_props(&self, type_ref: u32) -> Result<TypeRefProps>;
    /// `GetMemberRefProps`.
    fn get_member_ref_props(&self, member_ref: u32) -> Result<MemberRefProps>;
    /// `GetFieldProps`.
    fn get_field_props(&self, field: u32) -> Result<FieldProps>;
    /// `GetTypeSpecFromToken`: the TypeSpec's signature blob.
    fn get_type_spec_from_token(&self, type_spec: u32) -> Result<Vec<u8>>;

    /// `Namespace.Outer+Inner` for a TypeDef (arity suffixes kept: ``Dictionary`2``).
    /// Never fails: unreadable parts become `type@0x…`.
    fn type_full_name(&self, type_def: u32) -> String {
        let mut parts = Vec::new();
        let mut cur = type_def;
        for _ in 0..MAX_NESTING {
            match self.get_type_def_props(cur) {
                Ok(p) => {
                    parts.push(p.name);
                    if !sys::IsTdNested(p.flags) {
                        break;
                    }
                    match self.get_nested_class_props(cur) {
                        Ok(Some(outer)) => cur = outer,
                        _ => break,
                    }
                }
                Err(_) => {
                    parts.push(format!("type@{cur:#010x}"));
                    break;
                }
            }
        }
        parts.reverse();
        parts.join("+")
    }

    /// `Namespace.Outer+Inner` for a TypeRef. Never fails.
    fn type_ref_full_name(&self, type_ref: u32) -> String {
        let mut parts = Vec::new();
        let mut cur = type_ref;
        for _ in 0..MAX_NESTING {
            match self.get_type_ref_props(cur) {
                Ok(p) => {
                    parts.push(p.name);
                    if sys::TypeFromToken(p.resolution_scope) == sys::mdtTypeRef {
                        cur = p.resolution_scope;
                    } else {
                        break;
                    }
                }
                Err(_) => {
                    parts.push(format!("typeref@{cur:#010x}"));
                    break;
                }
            }
        }
        parts.reverse();
        parts.join("+")
    }

    /// `Type.Method` for a MethodDef.
    fn method_full_name(&self, method: u32) -> Result<String> {
        let props = self.get_method_props(method)?;
        Ok(format!(
            "{}.{}",
            self.type_full_name(props.class),
            props.name
        ))
    }

    /// A readable name for any token a signature or IL can hold: TypeDef and TypeRef give
    /// `Namespace.Outer+Inner`, TypeSpec its formatted signature
    /// (``System.Collections.Generic.List`1<int>``), MethodDef / MemberRef / FieldDef
    /// `Type.Member`. Never fails: unknown or unreadable tokens become `token@0x…`.
    /// Meant as the resolver for [`sig::MethodSig::format_params`] and friends.
    fn token_name(&self, token: u32) -> String {
        self.token_name_depth(token, 0)
    }

    #[doc(hidden)]
    fn token_name_depth(&self, token: u32, depth: u32) -> String {
        let fallback = || format!("token@{token:#010x}");
        if depth > MAX_NAME_DEPTH {
            return fallback();
        }
        match sys::TypeFromToken(token) {
            sys::mdtTypeDef => self.type_full_name(token),
            sys::mdtTypeRef => self.type_ref_full_name(token),
            sys::mdtTypeSpec => self
                .get_type_spec_from_token(token)
                .ok()
                .and_then(|blob| sig::parse_type(&blob).ok())
                .map(|t| t.format(&|t| self.token_name_depth(t, depth + 1)))
                .unwrap_or_else(fallback),
            sys::mdtMethodDef => self.method_full_name(token).unwrap_or_else(|_| fallback()),
            sys::mdtMemberRef => match self.get_member_ref_props(token) {
                Ok(m) => format!("{}.{}", self.token_name_depth(m.parent, depth + 1), m.name),
                Err(_) => fallback(),
            },
            sys::mdtFieldDef => match self.get_field_props(token) {
                Ok(f) => format!("{}.{}", self.type_full_name(f.class), f.name),
                Err(_) => fallback(),
            },
            _ => fallback(),
        }
    }
}
