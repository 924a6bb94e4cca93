//! Metadata enumerations and token helpers from `corhdr.h`, as `u32` constants with their C names.

use crate::types::{RID, ULONG32, mdToken};

// --- CorElementType ------------------------------------------------------------------------------

/// Element type codes of signatures. `ICorProfilerInfo::IsArrayClass` writes one as a 4-byte enum.
pub type CorElementType = u32;
pub const ELEMENT_TYPE_END: u32 = 0x00;
pub const ELEMENT_TYPE_VOID: u32 = 0x01;
pub const ELEMENT_TYPE_BOOLEAN: u32 = 0x02;
pub const ELEMENT_TYPE_CHAR: u32 = 0x03;
pub const ELEMENT_TYPE_I1: u32 = 0x04;
pub const ELEMENT_TYPE_U1: u32 = 0x05;
pub const ELEMENT_TYPE_I2: u32 = 0x06;
pub const ELEMENT_TYPE_U2: u32 = 0x07;
pub const ELEMENT_TYPE_I4: u32 = 0x08;
pub const ELEMENT_TYPE_U4: u32 = 0x09;
pub const ELEMENT_TYPE_I8: u32 = 0x0a;
pub const ELEMENT_TYPE_U8: u32 = 0x0b;
pub const ELEMENT_TYPE_R4: u32 = 0x0c;
pub const ELEMENT_TYPE_R8: u32 = 0x0d;
pub const ELEMENT_TYPE_STRING: u32 = 0x0e;
pub const ELEMENT_TYPE_PTR: u32 = 0x0f;
pub const ELEMENT_TYPE_BYREF: u32 = 0x10;
pub const ELEMENT_TYPE_VALUETYPE: u32 = 0x11;
pub const ELEMENT_TYPE_CLASS: u32 = 0x12;
pub const ELEMENT_TYPE_VAR: u32 = 0x13;
pub const ELEMENT_TYPE_ARRAY: u32 = 0x14;
pub const ELEMENT_TYPE_GENERICINST: u32 = 0x15;
pub const ELEMENT_TYPE_TYPEDBYREF: u32 = 0x16;
pub const ELEMENT_TYPE_I: u32 = 0x18;
pub const ELEMENT_TYPE_U: u32 = 0x19;
pub const ELEMENT_TYPE_FNPTR: u32 = 0x1b;
pub const ELEMENT_TYPE_OBJECT: u32 = 0x1c;
pub const ELEMENT_TYPE_SZARRAY: u32 = 0x1d;
pub const ELEMENT_TYPE_MVAR: u32 = 0x1e;
pub const ELEMENT_TYPE_CMOD_REQD: u32 = 0x1f;
pub const ELEMENT_TYPE_CMOD_OPT: u32 = 0x20;
pub const ELEMENT_TYPE_INTERNAL: u32 = 0x21;
pub const ELEMENT_TYPE_MAX: u32 = 0x22;
pub const ELEMENT_TYPE_MODIFIER: u32 = 0x40;
pub const ELEMENT_TYPE_SENTINEL: u32 = 0x01 | ELEMENT_TYPE_MODIFIER;
pub const ELEMENT_TYPE_PINNED: u32 = 0x05 | ELEMENT_TYPE_MODIFIER;

// --- CorUnmanagedCallingConvention / CorCallingConvention -------------------------------------------

pub type CorUnmanagedCallingConvention = u32;
pub const IMAGE_CEE_UNMANAGED_CALLCONV_C: u32 = 0x1;
pub const IMAGE_CEE_UNMANAGED_CALLCONV_STDCALL: u32 = 0x2;
pub const IMAGE_CEE_UNMANAGED_CALLCONV_THISCALL: u32 = 0x3;
pub const IMAGE_CEE_UNMANAGED_CALLCONV_FASTCALL: u32 = 0x4;

/// First byte of a signature blob.
pub type CorCallingConvention = u32;
pub const IMAGE_CEE_CS_CALLCONV_DEFAULT: u32 = 0x0;
pub const IMAGE_CEE_CS_CALLCONV_C: u32 = IMAGE_CEE_UNMANAGED_CALLCONV_C;
pub const IMAGE_CEE_CS_CALLCONV_STDCALL: u32 = IMAGE_CEE_UNMANAGED_CALLCONV_STDCALL;
pub const IMAGE_CEE_CS_CALLCONV_THISCALL: u32 = IMAGE_CEE_UNMANAGED_CALLCONV_THISCALL;
pub const IMAGE_CEE_CS_CALLCONV_FASTCALL: u32 = IMAGE_CEE_UNMANAGED_CALLCONV_FASTCALL;
pub const IMAGE_CEE_CS_CALLCONV_VARARG: u32 = 0x5;
pub const IMAGE_CEE_CS_CALLCONV_FIELD: u32 = 0x6;
pub const IMAGE_CEE_CS_CALLCONV_LOCAL_SIG: u32 = 0x7;
pub const IMAGE_CEE_CS_CALLCONV_PROPERTY: u32 = 0x8;
pub const IMAGE_CEE_CS_CALLCONV_UNMANAGED: u32 = 0x9;
pub const IMAGE_CEE_CS_CALLCONV_GENERICINST: u32 = 0xa;
pub const IMAGE_CEE_CS_CALLCONV_NATIVEVARARG: u32 = 0xb;
pub const IMAGE_CEE_CS_CALLCONV_MAX: u32 = 0xc;
/// Calling convention is the bottom 4 bits.
pub const IMAGE_CEE_CS_CALLCONV_MASK: u32 = 0x0f;
pub const IMAGE_CEE_CS_CALLCONV_HASTHIS: u32 = 0x20;
pub const IMAGE_CEE_CS_CALLCONV_EXPLICITTHIS: u32 = 0x40;
/// Generic method signature: a generic-parameter count precedes the parameter count.
pub const IMAGE_CEE_CS_CALLCONV_GENERIC: u32 = 0x10;
pub const IMAGE_CEE_CS_CALLCONV_INSTANTIATION: u32 = IMAGE_CEE_CS_CALLCONV_GENERICINST;
pub const IMAGE_CEE_CS_CALLCONV_DEFAULT_HASTHIS: u32 =
    IMAGE_CEE_CS_CALLCONV_DEFAULT | IMAGE_CEE_CS_CALLCONV_HASTHIS;

// --- CorTypeAttr (GetTypeDefProps pdwTypeDefFlags) ----------------------------------------------------

pub type CorTypeAttr = u32;
pub const tdVisibilityMask: u32 = 0x0000_0007;
pub const tdNotPublic: u32 = 0x0000_0000;
pub const tdPublic: u32 = 0x0000_0001;
pub const tdNestedPublic: u32 = 0x0000_0002;
pub const tdNestedPrivate: u32 = 0x0000_0003;
pub const tdNestedFamily: u32 = 0x0000_0004;
pub const tdNestedAssembly: u32 = 0x0000_0005;
pub const tdNestedFamANDAssem: u32 = 0x0000_0006;
pub const tdNestedFamORAssem: u32 = 0x0000_0007;
pub const tdLayoutMask: u32 = 0x0000_0018;
pub const tdAutoLayout: u32 = 0x0000_0000;
pub const tdSequentialLayout: u32 = 0x0000_0008;
pub const tdExplicitLayout: u32 = 0x0000_0010;
pub const tdClassSemanticsMask: u32 = 0x0000_0020;
pub const tdClass: u32 = 0x0000_0000;
pub const tdInterface: u32 = 0x0000_0020;
pub const tdAbstract: u32 = 0x0000_0080;
pub const tdSealed: u32 = 0x0000_0100;
pub const tdSpecialName: u32 = 0x0000_0400;
pub const tdImport: u32 = 0x0000_1000;
pub const tdSerializable: u32 = 0x0000_2000;
pub const tdWindowsRuntime: u32 = 0x0000_4000;
pub const tdStringFormatMask: u32 = 0x0003_0000;
pub const tdAnsiClass: u32 = 0x0000_0000;
pub const tdUnicodeClass: u32 = 0x0001_0000;
pub const tdAutoClass: u32 = 0x0002_0000;
pub const tdCustomFormatClass: u32 = 0x0003_0000;
pub const tdCustomFormatMask: u32 = 0x00C0_0000;
pub const tdBeforeFieldInit: u32 = 0x0010_0000;
pub const tdForwarder: u32 = 0x0020_0000;
pub const tdReservedMask: u32 = 0x0004_0800;
pub const tdRTSpecialName: u32 = 0x0000_0800;
pub const tdHasSecurity: u32 = 0x0004_0000;

/// `IsTdNested(x)`: visibility is one of the nested kinds.
pub const fn IsTdNested(x: u32) -> bool {
    (x & tdVisibilityMask) >= tdNestedPublic
}

/// `IsTdInterface(x)`.
pub const fn IsTdInterface(x: u32) -> bool {
    (x & tdClassSemanticsMask) == tdInterface
}

// --- CorMethodAttr (GetMethodProps pdwAttr) -------------------------------------------------------------

pub type CorMethodAttr = u32;
pub const mdMemberAccessMask: u32 = 0x0007;
pub const mdPrivateScope: u32 = 0x0000;
pub const mdPrivate: u32 = 0x0001;
pub const mdFamANDAssem: u32 = 0x0002;
pub const mdAssem: u32 = 0x0003;
pub const mdFamily: u32 = 0x0004;
pub const mdFamORAssem: u32 = 0x0005;
pub const mdPublic: u32 = 0x0006;
pub const mdStatic: u32 = 0x0010;
pub const mdFinal: u32 = 0x0020;
pub const mdVirtual: u32 = 0x0040;
pub const mdHideBySig: u32 = 0x0080;
pub const mdVtableLayoutMask: u32 = 0x0100;
pub const mdReuseSlot: u32 = 0x0000;
pub const mdNewSlot: u32 = 0x0100;
pub const mdCheckAccessOnOverride: u32 = 0x0200;
pub const mdAbstract: u32 = 0x0400;
pub const mdSpecialName: u32 = 0x0800;
pub const mdPinvokeImpl: u32 = 0x2000;
pub const mdUnmanagedExport: u32 = 0x0008;
pub const mdReservedMask: u32 = 0xd000;
pub const mdRTSpecialName: u32 = 0x1000;
pub const mdHasSecurity: u32 = 0x4000;
pub const mdRequireSecObject: u32 = 0x8000;

// --- CorFieldAttr (GetFieldProps pdwAttr) -----------------------------------------------------------------

pub type CorFieldAttr = u32;
pub const fdFieldAccessMask: u32 = 0x0007;
pub const fdPrivateScope: u32 = 0x0000;
pub const fdPrivate: u32 = 0x0001;
pub const fdFamANDAssem: u32 = 0x0002;
pub const fdAssembly: u32 = 0x0003;
pub const fdFamily: u32 = 0x0004;
pub const fdFamORAssem: u32 = 0x0005;
pub const fdPublic: u32 = 0x0006;
pub const fdStatic: u32 = 0x0010;
pub const fdInitOnly: u32 = 0x0020;
pub const fdLiteral: u32 = 0x0040;
pub const fdNotSerialized: u32 = 0x0080;
pub const fdSpecialName: u32 = 0x0200;
pub const fdPinvokeImpl: u32 = 0x2000;
pub const fdReservedMask: u32 = 0x9500;
pub const fdRTSpecialName: u32 = 0x0400;
pub const fdHasFieldMarshal: u32 = 0x1000;
pub const fdHasDefault: u32 = 0x8000;
pub const fdHasFieldRVA: u32 = 0x0100;

// --- CorParamAttr -------------------------------------------------------------------------------------------

pub type CorParamAttr = u32;
pub const pdIn: u32 = 0x0001;
pub const pdOut: u32 = 0x0002;
pub const pdOptional: u32 = 0x0010;
pub const pdReservedMask: u32 = 0xf000;
pub const pdHasDefault: u32 = 0x1000;
pub const pdHasFieldMarshal: u32 = 0x2000;
pub const pdUnused: u32 = 0xcfe0;

// --- CorOpenFlags (ICorProfilerInfo::GetModuleMetaData dwOpenFlags: only ofRead / ofWrite) --------

pub type CorOpenFlags = u32;
pub const ofRead: u32 = 0x0000_0000;
pub const ofWrite: u32 = 0x0000_0001;
pub const ofReadWriteMask: u32 = 0x0000_0001;
pub const ofCopyMemory: u32 = 0x0000_0002;
pub const ofReadOnly: u32 = 0x0000_0010;
pub const ofTakeOwnership: u32 = 0x0000_0020;
pub const ofNoTypeLib: u32 = 0x0000_0080;
pub const ofNoTransform: u32 = 0x0000_1000;
pub const ofReserved1: u32 = 0x0000_0100;
pub const ofReserved2: u32 = 0x0000_0200;
pub const ofReserved3: u32 = 0x0000_0400;
pub const ofReserved: u32 = 0xffff_ef40;

// --- CorTokenType -----------------------------------------------------------------------------------------------

pub type CorTokenType = u32;
pub const mdtModule: u32 = 0x0000_0000;
pub const mdtTypeRef: u32 = 0x0100_0000;
pub const mdtTypeDef: u32 = 0x0200_0000;
pub const mdtFieldDef: u32 = 0x0400_0000;
pub const mdtMethodDef: u32 = 0x0600_0000;
pub const mdtParamDef: u32 = 0x0800_0000;
pub const mdtInterfaceImpl: u32 = 0x0900_0000;
pub const mdtMemberRef: u32 = 0x0a00_0000;
pub const mdtCustomAttribute: u32 = 0x0c00_0000;
pub const mdtPermission: u32 = 0x0e00_0000;
pub const mdtSignature: u32 = 0x1100_0000;
pub const mdtEvent: u32 = 0x1400_0000;
pub const mdtProperty: u32 = 0x1700_0000;
pub const mdtMethodImpl: u32 = 0x1900_0000;
pub const mdtModuleRef: u32 = 0x1a00_0000;
pub const mdtTypeSpec: u32 = 0x1b00_0000;
pub const mdtAssembly: u32 = 0x2000_0000;
pub const mdtAssemblyRef: u32 = 0x2300_0000;
pub const mdtFile: u32 = 0x2600_0000;
pub const mdtExportedType: u32 = 0x2700_0000;
pub const mdtManifestResource: u32 = 0x2800_0000;
pub const mdtGenericParam: u32 = 0x2a00_0000;
pub const mdtMethodSpec: u32 = 0x2b00_0000;
pub const mdtGenericParamConstraint: u32 = 0x2c00_0000;
pub const mdtString: u32 = 0x7000_0000;
pub const mdtName: u32 = 0x7100_0000;
pub const mdtBaseType: u32 = 0x7200_0000;

// --- nil tokens ---------------------------------------------------------------------------------------------------

pub const mdTokenNil: mdToken = 0;
pub const mdModuleNil: mdToken = mdtModule;
pub const mdTypeRefNil: mdToken = mdtTypeRef;
pub const mdTypeDefNil: mdToken = mdtTypeDef;
pub const mdFieldDefNil: mdToken = mdtFieldDef;
pub const mdMethodDefNil: mdToken = mdtMethodDef;
pub const mdParamDefNil: mdToken = mdtParamDef;
pub const mdInterfaceImplNil: mdToken = mdtInterfaceImpl;
pub const mdMemberRefNil: mdToken = mdtMemberRef;
pub const mdCustomAttributeNil: mdToken = mdtCustomAttribute;
pub const mdPermissionNil: mdToken = mdtPermission;
pub const mdSignatureNil: mdToken = mdtSignature;
pub const mdEventNil: mdToken = mdtEvent;
pub const mdPropertyNil: mdToken = mdtProperty;
pub const mdModuleRefNil: mdToken = mdtModuleRef;
pub const mdTypeSpecNil: mdToken = mdtTypeSpec;
pub const mdAssemblyNil: mdToken = mdtAssembly;
pub const mdAssemblyRefNil: mdToken = mdtAssemblyRef;
pub const mdFileNil: mdToken = mdtFile;
pub const mdExportedTypeNil: mdToken = mdtExportedType;
pub const mdManifestResourceNil: mdToken = mdtManifestResource;
pub const mdGenericParamNil: mdToken = mdtGenericParam;
pub const mdGenericParamConstraintNil: mdToken = mdtGenericParamConstraint;
pub const mdMethodSpecNil: mdToken = mdtMethodSpec;
pub const mdStringNil: mdToken = mdtString;

// --- token helpers (corhdr.h macros) ---------------------------------------------------------------------------

/// `RidFromToken(tk)`: low 24 bits.
pub const fn RidFromToken(tk: mdToken) -> RID {
    tk & 0x00ff_ffff
}

/// `TypeFromToken(tk)`: high byte, still shifted (compare with `mdt*`).
pub const fn TypeFromToken(tk: mdToken) -> ULONG32 {
    tk & 0xff00_0000
}

/// `TokenFromRid(rid, tktype)`.
pub const fn TokenFromRid(rid: RID, tktype: CorTokenType) -> mdToken {
    rid | tktype
}

/// `IsNilToken(tk)`: the row id is 0.
pub const fn IsNilToken(tk: mdToken) -> bool {
    RidFromToken(tk) == 0
}
