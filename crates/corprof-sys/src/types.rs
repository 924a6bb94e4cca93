//! Scalar type aliases (as the PAL defines them on LP64 Linux and as Windows defines them) and
//! the `GUID` structure.
//!
//! `LONG`/`ULONG` are 32-bit on both platforms (the PAL defines them as `int`/`unsigned int`),
//! `WCHAR` is a UTF-16 code unit on both platforms (`char16_t` in the PAL, never the 4-byte Linux
//! `wchar_t`), and every profiler ID is pointer-sized.

use core::ffi::{c_char, c_int, c_void};
use core::fmt;

// ---------------------------------------------------------------------------------------------
// Win32 / PAL scalar types
// ---------------------------------------------------------------------------------------------

/// COM status code. Negative values are failures (see [`crate::failed`]).
pub type HRESULT = i32;
/// Win32 `BOOL`: 32-bit, `0` is FALSE, anything else is TRUE.
pub type BOOL = i32;
/// `TRUE` as the runtime writes it.
pub const TRUE: BOOL = 1;
/// `FALSE`.
pub const FALSE: BOOL = 0;
pub type ULONG = u32;
pub type ULONG32 = u32;
pub type LONG = i32;
pub type LONG32 = i32;
pub type DWORD = u32;
pub type USHORT = u16;
pub type UINT = u32;
pub type INT = c_int;
pub type BYTE = u8;
pub type UINT8 = u8;
pub type UINT32 = u32;
pub type UINT64 = u64;
/// UTF-16 code unit (2 bytes) on every platform.
pub type WCHAR = u16;
pub type LPWSTR = *mut WCHAR;
pub type LPCWSTR = *const WCHAR;
pub type UINT_PTR = usize;
pub type ULONG_PTR = usize;
pub type SIZE_T = usize;
pub type PVOID = *mut c_void;
pub type LPVOID = *mut c_void;
/// Win32 `HANDLE` (only used by `ICorProfilerInfo::GetHandleFromThread`).
pub type HANDLE = *mut c_void;
pub type LPCBYTE = *const BYTE;
pub type LPBYTE = *mut BYTE;

/// `REFIID` / `REFCLSID` / `REFGUID` are `const GUID&` in C++, i.e. a pointer at the ABI level.
pub type REFIID = *const GUID;
pub type REFCLSID = *const GUID;
pub type REFGUID = *const GUID;
pub type LPCGUID = *const GUID;
pub type IID = GUID;
pub type CLSID = GUID;

// ---------------------------------------------------------------------------------------------
// Profiler IDs (corprof.idl: `typedef UINT_PTR ...`)
// ---------------------------------------------------------------------------------------------

pub type ProcessID = UINT_PTR;
pub type AssemblyID = UINT_PTR;
pub type AppDomainID = UINT_PTR;
pub type ModuleID = UINT_PTR;
pub type ClassID = UINT_PTR;
pub type ThreadID = UINT_PTR;
pub type ContextID = UINT_PTR;
pub type FunctionID = UINT_PTR;
pub type ObjectID = UINT_PTR;
pub type GCHandleID = UINT_PTR;
/// Opaque handle passed to the `*3WithInfo` ELT hooks.
pub type COR_PRF_ELT_INFO = UINT_PTR;
pub type ReJITID = UINT_PTR;
/// Opaque per-frame handle; only valid during the callback it was passed to.
pub type COR_PRF_FRAME_INFO = UINT_PTR;
/// `typedef UINT_PTR EVENTPIPE_PROVIDER;`
pub type EVENTPIPE_PROVIDER = UINT_PTR;
/// `typedef UINT_PTR EVENTPIPE_EVENT;`
pub type EVENTPIPE_EVENT = UINT_PTR;
/// `typedef UINT64 EVENTPIPE_SESSION;` (64-bit even on 32-bit targets).
pub type EVENTPIPE_SESSION = UINT64;
/// `typedef void** ObjectHandleID;` (ICorProfilerInfo13 handles).
pub type ObjectHandleID = *mut *mut c_void;

/// `typedef union {FunctionID functionID; UINT_PTR clientID;} FunctionIDOrClientID;`
///
/// Kept as a `#[repr(C)]` union, exactly as the IDL declares it. Both members are pointer-sized
/// integers, so every bit pattern is valid for both and the value is passed in one integer
/// register, like a `usize`. Use [`FunctionIDOrClientID::raw`] to read it without `unsafe`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union FunctionIDOrClientID {
    /// The real FunctionID (when no FunctionIDMapper remapped it).
    pub function_id: FunctionID,
    /// The value a FunctionIDMapper(2) returned for this function.
    pub client_id: UINT_PTR,
}

impl FunctionIDOrClientID {
    /// Wraps a raw pointer-sized value.
    pub const fn from_raw(v: UINT_PTR) -> Self {
        FunctionIDOrClientID { client_id: v }
    }

    /// The raw pointer-sized value (whichever member was written).
    pub const fn raw(self) -> UINT_PTR {
        // SAFETY: both members are `usize`; every bit pattern is a valid `usize`.
        unsafe { self.client_id }
    }
}

impl Default for FunctionIDOrClientID {
    fn default() -> Self {
        Self::from_raw(0)
    }
}

impl PartialEq for FunctionIDOrClientID {
    fn eq(&self, other: &Self) -> bool {
        self.raw() == other.raw()
    }
}

impl Eq for FunctionIDOrClientID {}

impl core::hash::Hash for FunctionIDOrClientID {
    fn hash<H: core::hash::Hasher>(&self, state: &mut H) {
        self.raw().hash(state)
    }
}

impl fmt::Debug for FunctionIDOrClientID {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FunctionIDOrClientID({:#x})", self.raw())
    }
}

// ---------------------------------------------------------------------------------------------
// Metadata (cor.h / corhdr.h)
// ---------------------------------------------------------------------------------------------

/// Metadata token: table in the high byte, row id in the low 24 bits.
pub type mdToken = u32;
pub type mdModule = mdToken;
pub type mdTypeRef = mdToken;
pub type mdTypeDef = mdToken;
pub type mdFieldDef = mdToken;
pub type mdMethodDef = mdToken;
pub type mdParamDef = mdToken;
pub type mdInterfaceImpl = mdToken;
pub type mdMemberRef = mdToken;
pub type mdCustomAttribute = mdToken;
pub type mdPermission = mdToken;
pub type mdSignature = mdToken;
pub type mdEvent = mdToken;
pub type mdProperty = mdToken;
pub type mdModuleRef = mdToken;
pub type mdTypeSpec = mdToken;
pub type mdAssembly = mdToken;
pub type mdAssemblyRef = mdToken;
pub type mdFile = mdToken;
pub type mdExportedType = mdToken;
pub type mdManifestResource = mdToken;
pub type mdString = mdToken;
pub type mdGenericParam = mdToken;
pub type mdMethodSpec = mdToken;
pub type mdGenericParamConstraint = mdToken;
/// Row id part of a token.
pub type RID = u32;

/// Opaque metadata enumeration handle (`typedef void *HCORENUM;`); close with `CloseEnum`.
pub type HCORENUM = *mut c_void;
pub type COR_SIGNATURE = u8;
pub type PCOR_SIGNATURE = *mut COR_SIGNATURE;
pub type PCCOR_SIGNATURE = *const COR_SIGNATURE;
/// UTF-8, NUL-terminated string pointing into the metadata heap.
pub type MDUTF8CSTR = *const c_char;
pub type MDUTF8STR = *mut c_char;
/// Pointer to a (possibly unaligned) constant value blob in metadata.
pub type UVCP_CONSTANT = *const c_void;

// ---------------------------------------------------------------------------------------------
// GUID
// ---------------------------------------------------------------------------------------------

/// Windows `GUID` (16 bytes; `data1..data3` little-endian in memory on every supported target).
#[repr(C)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct GUID {
    pub data1: u32,
    pub data2: u16,
    pub data3: u16,
    pub data4: [u8; 8],
}

impl GUID {
    /// The all-zero GUID (`GUID_NULL`).
    pub const NULL: GUID = GUID::from_u128(0);

    /// Builds a GUID from its canonical textual form read as one hexadecimal number:
    /// `{00000001-0000-0000-C000-000000000046}` is `0x00000001_0000_0000_C000_000000000046`.
    pub const fn from_u128(v: u128) -> GUID {
        let tail = (v as u64).to_be_bytes();
        GUID {
            data1: (v >> 96) as u32,
            data2: (v >> 80) as u16,
            data3: (v >> 64) as u16,
            data4: tail,
        }
    }

    /// Inverse of [`GUID::from_u128`].
    pub const fn to_u128(&self) -> u128 {
        ((self.data1 as u128) << 96)
            | ((self.data2 as u128) << 80)
            | ((self.data3 as u128) << 64)
            | (u64::from_be_bytes(self.data4) as u128)
    }

    /// Parses `XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX`, with or without surrounding braces,
    /// hex digits in either case. Returns `None` for anything else.
    pub fn parse(s: &str) -> Option<GUID> {
        let b = s.as_bytes();
        let b = match b {
            [b'{', inner @ .., b'}'] => inner,
            _ => b,
        };
        if b.len() != 36 {
            return None;
        }
        let mut v: u128 = 0;
        for (i, &c) in b.iter().enumerate() {
            if matches!(i, 8 | 13 | 18 | 23) {
                if c != b'-' {
                    return None;
                }
                continue;
            }
            let d = match c {
                b'0'..=b'9' => c - b'0',
                b'a'..=b'f' => c - b'a' + 10,
                b'A'..=b'F' => c - b'A' + 10,
                _ => return None,
            };
            v = (v << 4) | d as u128;
        }
        Some(GUID::from_u128(v))
    }

    /// The 16 bytes as they lie in memory (Windows GUID byte order, = .NET `Guid.ToByteArray()`).
    pub const fn to_bytes_le(&self) -> [u8; 16] {
        let a = self.data1.to_le_bytes();
        let b = self.data2.to_le_bytes();
        let c = self.data3.to_le_bytes();
        let d = self.data4;
        [
            a[0], a[1], a[2], a[3], b[0], b[1], c[0], c[1], d[0], d[1], d[2], d[3], d[4], d[5],
            d[6], d[7],
        ]
    }

    /// Inverse of [`GUID::to_bytes_le`].
    pub const fn from_bytes_le(b: [u8; 16]) -> GUID {
        GUID {
            data1: u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
            data2: u16::from_le_bytes([b[4], b[5]]),
            data3: u16::from_le_bytes([b[6], b[7]]),
            data4: [b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]],
        }
    }
}

/// `{XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX}`, upper-case, with braces.
impl fmt::Display for GUID {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = &self.data4;
        write!(
            f,
            "{{{:08X}-{:04X}-{:04X}-{:02X}{:02X}-{:02X}{:02X}{:02X}{:02X}{:02X}{:02X}}}",
            self.data1, self.data2, self.data3, d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]
        )
    }
}
