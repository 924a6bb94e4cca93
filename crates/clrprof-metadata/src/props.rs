//! What [`MetadataRead`](crate::MetadataRead)'s primitives return: the fields of
//! `IMetaDataImport`'s `Get…Props` calls that naming uses.

/// `GetMethodProps`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MethodProps {
    /// The declaring `mdTypeDef`.
    pub class: u32,
    pub name: String,
    /// `CorMethodAttr` bits (`mdStatic`, `mdVirtual`, …).
    pub attributes: u32,
    /// The method signature blob (see [`sig::parse_method`](crate::sig::parse_method)).
    pub sig: Vec<u8>,
    pub code_rva: u32,
    /// `CorMethodImpl` bits.
    pub impl_flags: u32,
}

/// `GetTypeDefProps`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeDefProps {
    /// As metadata stores it: `Namespace.Name` for top-level types, just `Name` for nested
    /// ones, with the generic arity suffix (``List`1``).
    pub name: String,
    /// `CorTypeAttr` bits.
    pub flags: u32,
    /// The base type token (TypeDef, TypeRef or TypeSpec; nil for interfaces and `Object`).
    pub extends: u32,
}

/// `GetTypeRefProps`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeRefProps {
    /// Module, ModuleRef, AssemblyRef or (for nested types) the enclosing TypeRef.
    pub resolution_scope: u32,
    /// `Namespace.Name` (just `Name` when nested).
    pub name: String,
}

/// `GetMemberRefProps`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberRefProps {
    /// TypeRef, TypeDef, TypeSpec, ModuleRef or MethodDef.
    pub parent: u32,
    pub name: String,
    /// Method or field signature blob.
    pub sig: Vec<u8>,
}

/// `GetFieldProps`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldProps {
    /// The declaring `mdTypeDef`.
    pub class: u32,
    pub name: String,
    /// `CorFieldAttr` bits (`fdStatic`, `fdLiteral`, …).
    pub attributes: u32,
    /// The field signature blob (see [`sig::parse_field`](crate::sig::parse_field)).
    pub sig: Vec<u8>,
    /// `ELEMENT_TYPE_*` of the constant value, for literal fields (0 otherwise).
    pub constant_type: u32,
    /// The constant of an integral literal field (enum members), sign-extended.
    pub constant: Option<i64>,
}
