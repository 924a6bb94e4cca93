//! [`MetaDataImport`]: a module's `IMetaDataImport` / `IMetaDataImport2`, with safe
//! methods that return owned data.

use core::ptr::{self, NonNull};

use corprof_sys as sys;
use corprof_sys::GUID;

use crate::MetadataRead;
use crate::hresult::{HResult, Result, check};
use crate::wstr::{read_string, to_utf16z};
pub use clrprof_metadata::props::{
    FieldProps, MemberRefProps, MethodProps, TypeDefProps, TypeRefProps,
};

/// One reference to a module's metadata importer (from
/// [`ProfilerInfo::get_module_metadata`](crate::ProfilerInfo::get_module_metadata)).
///
/// `Clone` adds a reference, `Drop` releases one. `Send + Sync`: CoreCLR's importer
/// (`RegMeta`) has no thread affinity (there are no COM apartments in CoreCLR) and guards
/// its tables with its own reader/writer lock, so it may be used and released from any
/// thread (safety.md R8). Every method copies what it returns, so nothing borrowed from
/// the metadata outlives the call.
pub struct MetaDataImport {
    ptr: NonNull<sys::IMetaDataImport>,
    /// `ptr` is really an `IMetaDataImport2` (whose vtable extends `IMetaDataImport`).
    import2: bool,
}

// SAFETY: see the type's documentation (R8).
unsafe impl Send for MetaDataImport {}
// SAFETY: see the type's documentation (R8).
unsafe impl Sync for MetaDataImport {}

impl Clone for MetaDataImport {
    fn clone(&self) -> MetaDataImport {
        let p = self.ptr.as_ptr();
        // SAFETY: `p` is live: we hold a reference (R3).
        unsafe { ((*(*p).vtbl).base.AddRef)(p.cast()) };
        MetaDataImport {
            ptr: self.ptr,
            import2: self.import2,
        }
    }
}

impl Drop for MetaDataImport {
    fn drop(&mut self) {
        let p = self.ptr.as_ptr();
        // SAFETY: we own one reference to a live object (R3).
        unsafe { ((*(*p).vtbl).base.Release)(p.cast()) };
    }
}

impl core::fmt::Debug for MetaDataImport {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "MetaDataImport({:p}, import2: {})",
            self.ptr, self.import2
        )
    }
}

/// `GetGenericParamProps`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenericParamProps {
    /// Position in the owner's parameter list.
    pub index: u32,
    /// `CorGenericParamAttr` bits.
    pub flags: u32,
    /// The owning TypeDef or MethodDef.
    pub owner: u32,
    pub name: String,
}

/// `GetScopeProps`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopeProps {
    /// The module name (`System.Private.CoreLib.dll`).
    pub name: String,
    pub mvid: GUID,
}

/// Calls an `IMetaDataImport` method (safety.md R3, R5).
macro_rules! mdcall {
    ($self:ident . $method:ident ( $($arg:expr),* $(,)? )) => {{
        let p = $self.ptr.as_ptr();
        // SAFETY: `p` is a live IMetaDataImport we hold a reference to (R3); the arguments
        // are values, live locals, or buffers passed with their true lengths (R5).
        unsafe { ((*(*p).vtbl).$method)(p $(, $arg)*) }
    }};
}

/// Copies a signature blob the importer returned.
///
/// # Safety
/// `blob` must be null or point to `len` bytes inside the live metadata (R4).
unsafe fn copy_blob(blob: *const u8, len: u32) -> Vec<u8> {
    // SAFETY: guaranteed by the caller.
    unsafe { crate::boundary::borrowed(blob, len as usize) }.to_vec()
}

/// Reads an integral metadata constant of element type `ctype` at `value`.
///
/// # Safety
/// `value` must be null or point to a constant of `ctype`'s size (R4).
unsafe fn integral_constant(ctype: u32, value: *const u8) -> Option<i64> {
    if value.is_null() {
        return None;
    }
    // SAFETY: guaranteed by the caller for each size read.
    unsafe {
        Some(match ctype {
            0x02 | 0x05 => i64::from(value.read()),
            0x04 => i64::from(value.cast::<i8>().read()),
            0x03 | 0x07 => i64::from(value.cast::<u16>().read_unaligned()),
            0x06 => i64::from(value.cast::<i16>().read_unaligned()),
            0x08 => i64::from(value.cast::<i32>().read_unaligned()),
            0x09 => i64::from(value.cast::<u32>().read_unaligned()),
            0x0A | 0x0B => value.cast::<i64>().read_unaligned(),
            _ => return None,
        })
    }
}

impl MetaDataImport {
    /// Takes over one reference the runtime returned for `IID_IMetaDataImport2`
    /// (`import2`) or `IID_IMetaDataImport`.
    ///
    /// # Safety
    /// `unk` must be a live pointer to the interface named by `import2`, with one
    /// reference that the caller transfers.
    pub(crate) unsafe fn from_owned(
        unk: *mut sys::IUnknown,
        import2: bool,
    ) -> Result<MetaDataImport> {
        let ptr = NonNull::new(unk.cast::<sys::IMetaDataImport>()).ok_or(HResult::E_POINTER)?;
        Ok(MetaDataImport { ptr, import2 })
    }

    /// Wraps an `IMetaDataImport` obtained elsewhere, taking over one reference. Queries
    /// `IMetaDataImport2` so that the `Import2` methods work when the object has it.
    ///
    /// # Safety
    /// `ptr` must be null or a live `IMetaDataImport` whose reference the caller transfers.
    pub unsafe fn from_raw(ptr: *mut sys::IMetaDataImport) -> Option<MetaDataImport> {
        let ptr = NonNull::new(ptr)?;
        let p = ptr.as_ptr();
        let mut two: *mut core::ffi::c_void = ptr::null_mut();
        // SAFETY: `p` is live per the contract; `two` is a local out-pointer (R3, R5).
        let hr = unsafe {
            ((*(*p).vtbl).base.QueryInterface)(p.cast(), &sys::IID_IMetaDataImport2, &mut two)
        };
        match NonNull::new(two.cast::<sys::IMetaDataImport>()) {
            Some(two) if hr >= 0 => {
                // SAFETY: we hold the QI's reference to the same object; give back the
                // caller's (R3).
                unsafe { ((*(*p).vtbl).base.Release)(p.cast()) };
                Some(MetaDataImport {
                    ptr: two,
                    import2: true,
                })
            }
            _ => Some(MetaDataImport {
                ptr,
                import2: false,
            }),
        }
    }

    /// Whether `IMetaDataImport2` methods are available (always with CoreCLR).
    pub fn has_import2(&self) -> bool {
        self.import2
    }

    /// The raw interface, valid as long as `self`.
    pub fn as_raw(&self) -> *mut sys::IMetaDataImport {
        self.ptr.as_ptr()
    }

    /// The raw `IMetaDataImport2`, if available; valid as long as `self`.
    pub fn as_raw2(&self) -> Option<*mut sys::IMetaDataImport2> {
        self.import2.then(|| self.ptr.as_ptr().cast())
    }

    /// `GetMethodProps` for an `mdMethodDef`.
    pub fn get_method_props(&self, method: u32) -> Result<MethodProps> {
        let (mut class, mut attr, mut sig, mut sig_len, mut rva, mut impl_flags) =
            (0, 0, ptr::null(), 0, 0, 0);
        let name = read_string(|buf, cap, needed| {
            mdcall!(self.GetMethodProps(
                method,
                &mut class,
                buf,
                cap,
                needed,
                &mut attr,
                &mut sig,
                &mut sig_len,
                &mut rva,
                &mut impl_flags,
            ))
        })?;
        Ok(MethodProps {
            class,
            name,
            attributes: attr,
            // SAFETY: the blob the last successful call returned, inside the metadata (R4).
            sig: unsafe { copy_blob(sig, sig_len) },
            code_rva: rva,
            impl_flags,
        })
    }

    /// `GetTypeDefProps`.
    pub fn get_type_def_props(&self, type_def: u32) -> Result<TypeDefProps> {
        let (mut flags, mut extends) = (0, 0);
        let name = read_string(|buf, cap, needed| {
            mdcall!(self.GetTypeDefProps(type_def, buf, cap, needed, &mut flags, &mut extends))
        })?;
        Ok(TypeDefProps {
            name,
            flags,
            extends,
        })
    }

    /// `GetNestedClassProps`: the enclosing `mdTypeDef`, or `None` for a top-level type.
    pub fn get_nested_class_props(&self, type_def: u32) -> Result<Option<u32>> {
        let mut outer = 0;
        let hr = mdcall!(self.GetNestedClassProps(type_def, &mut outer));
        if hr == sys::CLDB_E_RECORD_NOTFOUND {
            return Ok(None);
        }
        check(hr)?;
        Ok((!sys::IsNilToken(outer)).then_some(outer))
    }

    /// `GetTypeRefProps`.
    pub fn get_type_ref_props(&self, type_ref: u32) -> Result<TypeRefProps> {
        let mut scope = 0;
        let name = read_string(|buf, cap, needed| {
            mdcall!(self.GetTypeRefProps(type_ref, &mut scope, buf, cap, needed))
        })?;
        Ok(TypeRefProps {
            resolution_scope: scope,
            name,
        })
    }

    /// `GetMemberRefProps`.
    pub fn get_member_ref_props(&self, member_ref: u32) -> Result<MemberRefProps> {
        let (mut parent, mut sig, mut sig_len) = (0, ptr::null(), 0);
        let name = read_string(|buf, cap, needed| {
            mdcall!(self.GetMemberRefProps(
                member_ref,
                &mut parent,
                buf,
                cap,
                needed,
                &mut sig,
                &mut sig_len
            ))
        })?;
        Ok(MemberRefProps {
            parent,
            name,
            // SAFETY: the blob the last successful call returned (R4).
            sig: unsafe { copy_blob(sig, sig_len) },
        })
    }

    /// `GetFieldProps`.
    pub fn get_field_props(&self, field: u32) -> Result<FieldProps> {
        let (mut class, mut attr, mut sig, mut sig_len, mut ctype, mut value, mut value_len) =
            (0, 0, ptr::null(), 0, 0, ptr::null(), 0);
        let name = read_string(|buf, cap, needed| {
            mdcall!(self.GetFieldProps(
                field,
                &mut class,
                buf,
                cap,
                needed,
                &mut attr,
                &mut sig,
                &mut sig_len,
                &mut ctype,
                &mut value,
                &mut value_len,
            ))
        })?;
        Ok(FieldProps {
            class,
            name,
            attributes: attr,
            // SAFETY: the blob the last successful call returned (R4).
            sig: unsafe { copy_blob(sig, sig_len) },
            constant_type: ctype,
            // SAFETY: for these element types the importer's value points to a constant
            // of that size inside the live metadata (R4); unaligned reads.
            constant: unsafe { integral_constant(ctype, value.cast::<u8>()) },
        })
    }

    /// `GetGenericParamProps` (`IMetaDataImport2`).
    pub fn get_generic_param_props(&self, param: u32) -> Result<GenericParamProps> {
        let (mut index, mut flags, mut owner, mut reserved) = (0, 0, 0, 0);
        let p2 = self.as_raw2().ok_or(HResult::E_NOINTERFACE)?;
        let name = read_string(|buf, cap, needed| {
            // SAFETY: `p2` is a live IMetaDataImport2 (R3); the buffers are locals or
            // `cap` units (R5).
            unsafe {
                ((*(*p2).vtbl).GetGenericParamProps)(
                    p2,
                    param,
                    &mut index,
                    &mut flags,
                    &mut owner,
                    &mut reserved,
                    buf,
                    cap,
                    needed,
                )
            }
        })?;
        Ok(GenericParamProps {
            index,
            flags,
            owner,
            name,
        })
    }

    /// `GetTypeSpecFromToken`: the TypeSpec's signature blob (see [`sig::parse_type`]).
    pub fn get_type_spec_from_token(&self, type_spec: u32) -> Result<Vec<u8>> {
        let (mut blob, mut len) = (ptr::null(), 0);
        check(mdcall!(
            self.GetTypeSpecFromToken(type_spec, &mut blob, &mut len)
        ))?;
        // SAFETY: the blob the call returned (R4).
        Ok(unsafe { copy_blob(blob, len) })
    }

    /// `GetSigFromToken`: a StandAloneSig's blob (local variables, `calli` sites).
    pub fn get_sig_from_token(&self, signature: u32) -> Result<Vec<u8>> {
        let (mut blob, mut len) = (ptr::null(), 0);
        check(mdcall!(
            self.GetSigFromToken(signature, &mut blob, &mut len)
        ))?;
        // SAFETY: the blob the call returned (R4).
        Ok(unsafe { copy_blob(blob, len) })
    }

    /// `GetModuleFromScope`: the `mdModule` token.
    pub fn get_module_from_scope(&self) -> Result<u32> {
        let mut module = 0;
        check(mdcall!(self.GetModuleFromScope(&mut module)))?;
        Ok(module)
    }

    /// `GetScopeProps`: the module's name and MVID.
    pub fn get_scope_props(&self) -> Result<ScopeProps> {
        let mut mvid = GUID::NULL;
        let name = read_string(|buf, cap, needed| {
            mdcall!(self.GetScopeProps(buf, cap, needed, &mut mvid))
        })?;
        Ok(ScopeProps { name, mvid })
    }

    /// Drives an `Enum*` method to the end and closes the enumeration.
    fn enum_tokens(
        &self,
        mut call: impl FnMut(*mut sys::HCORENUM, *mut u32, u32, *mut u32) -> i32,
    ) -> Result<Vec<u32>> {
        struct Close<'a>(&'a MetaDataImport, sys::HCORENUM);
        impl Drop for Close<'_> {
            fn drop(&mut self) {
                if !self.1.is_null() {
                    let me = self.0;
                    mdcall!(me.CloseEnum(self.1));
                }
            }
        }
        let mut close = Close(self, ptr::null_mut());
        let mut out = Vec::new();
        let mut batch = [0u32; 64];
        loop {
            let mut n = 0u32;
            let hr = call(&mut close.1, batch.as_mut_ptr(), batch.len() as u32, &mut n);
            check(hr)?;
            let n = (n as usize).min(batch.len());
            out.extend_from_slice(&batch[..n]);
            if n == 0 || hr != sys::S_OK {
                return Ok(out);
            }
        }
    }

    /// `EnumTypeDefs`: every `mdTypeDef` of the module (not `<Module>`).
    pub fn enum_type_defs(&self) -> Result<Vec<u32>> {
        self.enum_tokens(|e, buf, cap, n| mdcall!(self.EnumTypeDefs(e, buf, cap, n)))
    }

    /// `EnumFields`: the `mdFieldDef`s of a type.
    pub fn enum_fields(&self, type_def: u32) -> Result<Vec<u32>> {
        self.enum_tokens(|e, buf, cap, n| mdcall!(self.EnumFields(e, type_def, buf, cap, n)))
    }

    /// `FindTypeDefByName`: the TypeDef of a top-level type `Namespace.Name` in this scope.
    pub fn find_type_def_by_name(&self, name: &str) -> Result<u32> {
        let wide = to_utf16z(name);
        let mut td = 0;
        check(mdcall!(self.FindTypeDefByName(wide.as_ptr(), 0, &mut td)))?;
        Ok(td)
    }

    /// The names of a method's parameters by sequence number (1 = first, 0 = return
    /// value), from `EnumParams` and `GetParamProps`.
    pub fn param_names(&self, method: u32) -> Result<Vec<(u32, String)>> {
        let params =
            self.enum_tokens(|e, buf, cap, n| mdcall!(self.EnumParams(e, method, buf, cap, n)))?;
        let mut out = Vec::with_capacity(params.len());
        for p in params {
            let (mut md, mut seq, mut attr, mut flag, mut value, mut value_len) =
                (0, 0, 0, 0, ptr::null(), 0);
            let name = read_string(|buf, cap, needed| {
                mdcall!(self.GetParamProps(
                    p,
                    &mut md,
                    &mut seq,
                    buf,
                    cap,
                    needed,
                    &mut attr,
                    &mut flag,
                    &mut value,
                    &mut value_len,
                ))
            })?;
            out.push((seq, name));
        }
        Ok(out)
    }

    /// `EnumMethods`: the `mdMethodDef`s of a type.
    pub fn enum_methods(&self, type_def: u32) -> Result<Vec<u32>> {
        self.enum_tokens(|e, buf, cap, n| mdcall!(self.EnumMethods(e, type_def, buf, cap, n)))
    }

    /// `EnumGenericParams` (`IMetaDataImport2`): of a TypeDef or MethodDef, in order.
    pub fn enum_generic_params(&self, owner: u32) -> Result<Vec<u32>> {
        let p2 = self.as_raw2().ok_or(HResult::E_NOINTERFACE)?;
        self.enum_tokens(|e, buf, cap, n| {
            // SAFETY: `p2` is a live IMetaDataImport2 (R3); `buf` holds `cap` tokens (R5).
            unsafe { ((*(*p2).vtbl).EnumGenericParams)(p2, e, owner, buf, cap, n) }
        })
    }

    /// Generic parameter names of a TypeDef or MethodDef (`T`, `TKey`, …), in order.
    pub fn generic_param_names(&self, owner: u32) -> Result<Vec<String>> {
        let mut params = self
            .enum_generic_params(owner)?
            .into_iter()
            .map(|p| self.get_generic_param_props(p))
            .collect::<Result<Vec<_>>>()?;
        params.sort_by_key(|p| p.index);
        Ok(params.into_iter().map(|p| p.name).collect())
    }
}

impl MetadataRead for MetaDataImport {
    fn get_method_props(&self, method: u32) -> Result<MethodProps> {
        MetaDataImport::get_method_props(self, method)
    }
    fn get_type_def_props(&self, type_def: u32) -> Result<TypeDefProps> {
        MetaDataImport::get_type_def_props(self, type_def)
    }
    fn get_nested_class_props(&self, type_def: u32) -> Result<Option<u32>> {
        MetaDataImport::get_nested_class_props(self, type_def)
    }
    fn get_type_ref_props(&self, type_ref: u32) -> Result<TypeRefProps> {
        MetaDataImport::get_type_ref_props(self, type_ref)
    }
    fn get_member_ref_props(&self, member_ref: u32) -> Result<MemberRefProps> {
        MetaDataImport::get_member_ref_props(self, member_ref)
    }
    fn get_field_props(&self, field: u32) -> Result<FieldProps> {
        MetaDataImport::get_field_props(self, field)
    }
    fn get_type_spec_from_token(&self, type_spec: u32) -> Result<Vec<u8>> {
        MetaDataImport::get_type_spec_from_token(self, type_spec)
    }
}

/// One reference to a module's metadata emitter (from
/// [`ProfilerInfo::get_module_metadata_emit`](crate::ProfilerInfo::get_module_metadata_emit)):
/// only what the ReJIT probes need of it. `Drop` releases the reference; `Send + Sync`
/// for the reasons [`MetaDataImport`] is (the same `RegMeta` object, safety.md R8).
pub struct MetaDataEmit {
    ptr: NonNull<sys::IMetaDataEmit>,
}

// SAFETY: see the type's documentation (R8).
unsafe impl Send for MetaDataEmit {}
// SAFETY: see the type's documentation (R8).
unsafe impl Sync for MetaDataEmit {}

impl Drop for MetaDataEmit {
    fn drop(&mut self) {
        let p = self.ptr.as_ptr();
        // SAFETY: we own one reference to a live object (R3).
        unsafe { ((*(*p).vtbl).base.Release)(p.cast()) };
    }
}

impl core::fmt::Debug for MetaDataEmit {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "MetaDataEmit({:p})", self.ptr)
    }
}

impl MetaDataEmit {
    /// # Safety
    /// `ptr` must be a live `IMetaDataEmit` whose one reference the caller hands over.
    pub(crate) unsafe fn from_owned(ptr: *mut sys::IUnknown) -> Result<MetaDataEmit> {
        NonNull::new(ptr.cast::<sys::IMetaDataEmit>())
            .map(|ptr| MetaDataEmit { ptr })
            .ok_or(HResult::E_POINTER)
    }

    /// `GetTokenFromSig`: the `StandAloneSig` token of `sig` in this module (the existing
    /// one when the module has the same blob already).
    pub fn get_token_from_sig(&self, sig: &[u8]) -> Result<u32> {
        let len = u32::try_from(sig.len()).map_err(|_| HResult::E_INVALIDARG)?;
        let p = self.ptr.as_ptr();
        let mut token = 0;
        // SAFETY: `p` is live while we hold our reference (R3); `sig` is valid for `len`
        // bytes and `token` is a live local during the call (R5).
        check(unsafe { ((*(*p).vtbl).GetTokenFromSig)(p, sig.as_ptr(), len, &mut token) })?;
        Ok(token)
    }

    /// `DefineTypeRefByName`: a `TypeRef` token for the type `name` (namespace and name,
    /// dot-separated) in `scope` (an `AssemblyRef`, `ModuleRef` or `TypeRef` token); the
    /// existing one when the module has it already.
    pub fn define_type_ref_by_name(&self, scope: u32, name: &str) -> Result<u32> {
        let wide = to_utf16z(name);
        let p = self.ptr.as_ptr();
        let mut token = 0;
        // SAFETY: `p` is live while we hold our reference (R3); `wide` is a NUL-terminated
        // UTF-16 string and `token` a live local, both for the duration of the call (R5).
        check(unsafe { ((*(*p).vtbl).DefineTypeRefByName)(p, scope, wide.as_ptr(), &mut token) })?;
        Ok(token)
    }
}
