//! Metadata interfaces from `cor.h`: `IMetaDataImport`, `IMetaDataImport2`,
//! `IMetaDataAssemblyImport` and `IMetaDataEmit` (obtained through
//! `ICorProfilerInfo::GetModuleMetaData`).
//!
//! Quirks kept from cor.h: `CloseEnum` returns nothing, `IsValidToken` returns `BOOL`,
//! `GetEventProps`/`GetPropertyProps` declare their *output* name buffer as `LPCWSTR`, and
//! `IsGlobal` writes an `int`. Name buffers are UTF-16; `cch*`/`pch*` count WCHARs including
//! the terminating NUL; a too-small buffer yields `CLDB_S_TRUNCATION`.

use core::ffi::{c_int, c_void};

use crate::com::{IUnknown, IUnknownVtbl};
use crate::structs::{ASSEMBLYMETADATA, COR_FIELD_OFFSET};
use crate::types::{
    BOOL, DWORD, GUID, HCORENUM, HRESULT, LPCWSTR, LPWSTR, MDUTF8CSTR, PCCOR_SIGNATURE, REFIID,
    ULONG, UVCP_CONSTANT, mdAssembly, mdAssemblyRef, mdCustomAttribute, mdEvent, mdExportedType,
    mdFieldDef, mdFile, mdGenericParam, mdGenericParamConstraint, mdInterfaceImpl,
    mdManifestResource, mdMemberRef, mdMethodDef, mdMethodSpec, mdModule, mdModuleRef, mdParamDef,
    mdPermission, mdProperty, mdSignature, mdString, mdToken, mdTypeDef, mdTypeRef, mdTypeSpec,
};

com_interface! {
    /// Read access to a module's metadata (sealed interface, 62 methods, slots 3..=64).
    interface IMetaDataImport(IMetaDataImportVtbl): IUnknown(IUnknownVtbl),
    IID_IMetaDataImport = 0x7DAC8207_D3AE_4C75_9B67_92801A497D44;
    {
        /// Returns nothing (`STDMETHOD_(void, CloseEnum)`).
        fn CloseEnum(h_enum: HCORENUM);
        fn CountEnum(h_enum: HCORENUM, pul_count: *mut ULONG) -> HRESULT;
        fn ResetEnum(h_enum: HCORENUM, ul_pos: ULONG) -> HRESULT;
        fn EnumTypeDefs(ph_enum: *mut HCORENUM, r_type_defs: *mut mdTypeDef, c_max: ULONG, pc_type_defs: *mut ULONG) -> HRESULT;
        fn EnumInterfaceImpls(ph_enum: *mut HCORENUM, td: mdTypeDef, r_impls: *mut mdInterfaceImpl, c_max: ULONG, pc_impls: *mut ULONG) -> HRESULT;
        fn EnumTypeRefs(ph_enum: *mut HCORENUM, r_type_refs: *mut mdTypeRef, c_max: ULONG, pc_type_refs: *mut ULONG) -> HRESULT;
        fn FindTypeDefByName(sz_type_def: LPCWSTR, tk_enclosing_class: mdToken, ptd: *mut mdTypeDef) -> HRESULT;
        fn GetScopeProps(sz_name: LPWSTR, cch_name: ULONG, pch_name: *mut ULONG, pmvid: *mut GUID) -> HRESULT;
        fn GetModuleFromScope(pmd: *mut mdModule) -> HRESULT;
        fn GetTypeDefProps(
            td: mdTypeDef,
            sz_type_def: LPWSTR,
            cch_type_def: ULONG,
            pch_type_def: *mut ULONG,
            pdw_type_def_flags: *mut DWORD,
            ptk_extends: *mut mdToken,
        ) -> HRESULT;
        fn GetInterfaceImplProps(ii_impl: mdInterfaceImpl, p_class: *mut mdTypeDef, ptk_iface: *mut mdToken) -> HRESULT;
        fn GetTypeRefProps(tr: mdTypeRef, ptk_resolution_scope: *mut mdToken, sz_name: LPWSTR, cch_name: ULONG, pch_name: *mut ULONG) -> HRESULT;
        fn ResolveTypeRef(tr: mdTypeRef, riid: REFIID, pp_iscope: *mut *mut IUnknown, ptd: *mut mdTypeDef) -> HRESULT;
        fn EnumMembers(ph_enum: *mut HCORENUM, cl: mdTypeDef, r_members: *mut mdToken, c_max: ULONG, pc_tokens: *mut ULONG) -> HRESULT;
        fn EnumMembersWithName(ph_enum: *mut HCORENUM, cl: mdTypeDef, sz_name: LPCWSTR, r_members: *mut mdToken, c_max: ULONG, pc_tokens: *mut ULONG) -> HRESULT;
        fn EnumMethods(ph_enum: *mut HCORENUM, cl: mdTypeDef, r_methods: *mut mdMethodDef, c_max: ULONG, pc_tokens: *mut ULONG) -> HRESULT;
        fn EnumMethodsWithName(ph_enum: *mut HCORENUM, cl: mdTypeDef, sz_name: LPCWSTR, r_methods: *mut mdMethodDef, c_max: ULONG, pc_tokens: *mut ULONG) -> HRESULT;
        fn EnumFields(ph_enum: *mut HCORENUM, cl: mdTypeDef, r_fields: *mut mdFieldDef, c_max: ULONG, pc_tokens: *mut ULONG) -> HRESULT;
        fn EnumFieldsWithName(ph_enum: *mut HCORENUM, cl: mdTypeDef, sz_name: LPCWSTR, r_fields: *mut mdFieldDef, c_max: ULONG, pc_tokens: *mut ULONG) -> HRESULT;
        fn EnumParams(ph_enum: *mut HCORENUM, mb: mdMethodDef, r_params: *mut mdParamDef, c_max: ULONG, pc_tokens: *mut ULONG) -> HRESULT;
        fn EnumMemberRefs(ph_enum: *mut HCORENUM, tk_parent: mdToken, r_member_refs: *mut mdMemberRef, c_max: ULONG, pc_tokens: *mut ULONG) -> HRESULT;
        fn EnumMethodImpls(
            ph_enum: *mut HCORENUM,
            td: mdTypeDef,
            r_method_body: *mut mdToken,
            r_method_decl: *mut mdToken,
            c_max: ULONG,
            pc_tokens: *mut ULONG,
        ) -> HRESULT;
        fn EnumPermissionSets(
            ph_enum: *mut HCORENUM,
            tk: mdToken,
            dw_actions: DWORD,
            r_permission: *mut mdPermission,
            c_max: ULONG,
            pc_tokens: *mut ULONG,
        ) -> HRESULT;
        fn FindMember(td: mdTypeDef, sz_name: LPCWSTR, pv_sig_blob: PCCOR_SIGNATURE, cb_sig_blob: ULONG, pmb: *mut mdToken) -> HRESULT;
        fn FindMethod(td: mdTypeDef, sz_name: LPCWSTR, pv_sig_blob: PCCOR_SIGNATURE, cb_sig_blob: ULONG, pmb: *mut mdMethodDef) -> HRESULT;
        fn FindField(td: mdTypeDef, sz_name: LPCWSTR, pv_sig_blob: PCCOR_SIGNATURE, cb_sig_blob: ULONG, pmb: *mut mdFieldDef) -> HRESULT;
        fn FindMemberRef(td: mdTypeRef, sz_name: LPCWSTR, pv_sig_blob: PCCOR_SIGNATURE, cb_sig_blob: ULONG, pmr: *mut mdMemberRef) -> HRESULT;
        fn GetMethodProps(
            mb: mdMethodDef,
            p_class: *mut mdTypeDef,
            sz_method: LPWSTR,
            cch_method: ULONG,
            pch_method: *mut ULONG,
            pdw_attr: *mut DWORD,
            ppv_sig_blob: *mut PCCOR_SIGNATURE,
            pcb_sig_blob: *mut ULONG,
            pul_code_rva: *mut ULONG,
            pdw_impl_flags: *mut DWORD,
        ) -> HRESULT;
        fn GetMemberRefProps(
            mr: mdMemberRef,
            ptk: *mut mdToken,
            sz_member: LPWSTR,
            cch_member: ULONG,
            pch_member: *mut ULONG,
            ppv_sig_blob: *mut PCCOR_SIGNATURE,
            pb_sig: *mut ULONG,
        ) -> HRESULT;
        fn EnumProperties(ph_enum: *mut HCORENUM, td: mdTypeDef, r_properties: *mut mdProperty, c_max: ULONG, pc_properties: *mut ULONG) -> HRESULT;
        fn EnumEvents(ph_enum: *mut HCORENUM, td: mdTypeDef, r_events: *mut mdEvent, c_max: ULONG, pc_events: *mut ULONG) -> HRESULT;
        /// `sz_event` is an output buffer although cor.h types it `LPCWSTR`.
        fn GetEventProps(
            ev: mdEvent,
            p_class: *mut mdTypeDef,
            sz_event: LPCWSTR,
            cch_event: ULONG,
            pch_event: *mut ULONG,
            pdw_event_flags: *mut DWORD,
            ptk_event_type: *mut mdToken,
            pmd_add_on: *mut mdMethodDef,
            pmd_remove_on: *mut mdMethodDef,
            pmd_fire: *mut mdMethodDef,
            rmd_other_method: *mut mdMethodDef,
            c_max: ULONG,
            pc_other_method: *mut ULONG,
        ) -> HRESULT;
        fn EnumMethodSemantics(ph_enum: *mut HCORENUM, mb: mdMethodDef, r_event_prop: *mut mdToken, c_max: ULONG, pc_event_prop: *mut ULONG) -> HRESULT;
        fn GetMethodSemantics(mb: mdMethodDef, tk_event_prop: mdToken, pdw_semantics_flags: *mut DWORD) -> HRESULT;
        fn GetClassLayout(
            td: mdTypeDef,
            pdw_pack_size: *mut DWORD,
            r_field_offset: *mut COR_FIELD_OFFSET,
            c_max: ULONG,
            pc_field_offset: *mut ULONG,
            pul_class_size: *mut ULONG,
        ) -> HRESULT;
        fn GetFieldMarshal(tk: mdToken, ppv_native_type: *mut PCCOR_SIGNATURE, pcb_native_type: *mut ULONG) -> HRESULT;
        fn GetRVA(tk: mdToken, pul_code_rva: *mut ULONG, pdw_impl_flags: *mut DWORD) -> HRESULT;
        fn GetPermissionSetProps(pm: mdPermission, pdw_action: *mut DWORD, ppv_permission: *mut *const c_void, pcb_permission: *mut ULONG) -> HRESULT;
        fn GetSigFromToken(md_sig: mdSignature, ppv_sig: *mut PCCOR_SIGNATURE, pcb_sig: *mut ULONG) -> HRESULT;
        fn GetModuleRefProps(mur: mdModuleRef, sz_name: LPWSTR, cch_name: ULONG, pch_name: *mut ULONG) -> HRESULT;
        fn EnumModuleRefs(ph_enum: *mut HCORENUM, r_module_refs: *mut mdModuleRef, cmax: ULONG, pc_module_refs: *mut ULONG) -> HRESULT;
        fn GetTypeSpecFromToken(typespec: mdTypeSpec, ppv_sig: *mut PCCOR_SIGNATURE, pcb_sig: *mut ULONG) -> HRESULT;
        /// "Not Recommended! May be removed!" (cor.h). Returns a UTF-8 pointer into the heap.
        fn GetNameFromToken(tk: mdToken, psz_utf8_name_ptr: *mut MDUTF8CSTR) -> HRESULT;
        fn EnumUnresolvedMethods(ph_enum: *mut HCORENUM, r_methods: *mut mdToken, c_max: ULONG, pc_tokens: *mut ULONG) -> HRESULT;
        fn GetUserString(stk: mdString, sz_string: LPWSTR, cch_string: ULONG, pch_string: *mut ULONG) -> HRESULT;
        fn GetPinvokeMap(
            tk: mdToken,
            pdw_mapping_flags: *mut DWORD,
            sz_import_name: LPWSTR,
            cch_import_name: ULONG,
            pch_import_name: *mut ULONG,
            pmr_import_dll: *mut mdModuleRef,
        ) -> HRESULT;
        fn EnumSignatures(ph_enum: *mut HCORENUM, r_signatures: *mut mdSignature, cmax: ULONG, pc_signatures: *mut ULONG) -> HRESULT;
        fn EnumTypeSpecs(ph_enum: *mut HCORENUM, r_type_specs: *mut mdTypeSpec, cmax: ULONG, pc_type_specs: *mut ULONG) -> HRESULT;
        fn EnumUserStrings(ph_enum: *mut HCORENUM, r_strings: *mut mdString, cmax: ULONG, pc_strings: *mut ULONG) -> HRESULT;
        fn GetParamForMethodIndex(md: mdMethodDef, ul_param_seq: ULONG, ppd: *mut mdParamDef) -> HRESULT;
        fn EnumCustomAttributes(
            ph_enum: *mut HCORENUM,
            tk: mdToken,
            tk_type: mdToken,
            r_custom_attributes: *mut mdCustomAttribute,
            c_max: ULONG,
            pc_custom_attributes: *mut ULONG,
        ) -> HRESULT;
        fn GetCustomAttributeProps(
            cv: mdCustomAttribute,
            ptk_obj: *mut mdToken,
            ptk_type: *mut mdToken,
            pp_blob: *mut *const c_void,
            pcb_size: *mut ULONG,
        ) -> HRESULT;
        fn FindTypeRef(tk_resolution_scope: mdToken, sz_name: LPCWSTR, ptr: *mut mdTypeRef) -> HRESULT;
        fn GetMemberProps(
            mb: mdToken,
            p_class: *mut mdTypeDef,
            sz_member: LPWSTR,
            cch_member: ULONG,
            pch_member: *mut ULONG,
            pdw_attr: *mut DWORD,
            ppv_sig_blob: *mut PCCOR_SIGNATURE,
            pcb_sig_blob: *mut ULONG,
            pul_code_rva: *mut ULONG,
            pdw_impl_flags: *mut DWORD,
            pdw_cplus_type_flag: *mut DWORD,
            pp_value: *mut UVCP_CONSTANT,
            pcch_value: *mut ULONG,
        ) -> HRESULT;
        fn GetFieldProps(
            mb: mdFieldDef,
            p_class: *mut mdTypeDef,
            sz_field: LPWSTR,
            cch_field: ULONG,
            pch_field: *mut ULONG,
            pdw_attr: *mut DWORD,
            ppv_sig_blob: *mut PCCOR_SIGNATURE,
            pcb_sig_blob: *mut ULONG,
            pdw_cplus_type_flag: *mut DWORD,
            pp_value: *mut UVCP_CONSTANT,
            pcch_value: *mut ULONG,
        ) -> HRESULT;
        /// `sz_property` is an output buffer although cor.h types it `LPCWSTR`.
        fn GetPropertyProps(
            prop: mdProperty,
            p_class: *mut mdTypeDef,
            sz_property: LPCWSTR,
            cch_property: ULONG,
            pch_property: *mut ULONG,
            pdw_prop_flags: *mut DWORD,
            ppv_sig: *mut PCCOR_SIGNATURE,
            pb_sig: *mut ULONG,
            pdw_cplus_type_flag: *mut DWORD,
            pp_default_value: *mut UVCP_CONSTANT,
            pcch_default_value: *mut ULONG,
            pmd_setter: *mut mdMethodDef,
            pmd_getter: *mut mdMethodDef,
            rmd_other_method: *mut mdMethodDef,
            c_max: ULONG,
            pc_other_method: *mut ULONG,
        ) -> HRESULT;
        fn GetParamProps(
            tk: mdParamDef,
            pmd: *mut mdMethodDef,
            pul_sequence: *mut ULONG,
            sz_name: LPWSTR,
            cch_name: ULONG,
            pch_name: *mut ULONG,
            pdw_attr: *mut DWORD,
            pdw_cplus_type_flag: *mut DWORD,
            pp_value: *mut UVCP_CONSTANT,
            pcch_value: *mut ULONG,
        ) -> HRESULT;
        fn GetCustomAttributeByName(tk_obj: mdToken, sz_name: LPCWSTR, pp_data: *mut *const c_void, pcb_data: *mut ULONG) -> HRESULT;
        /// Returns `BOOL`, not `HRESULT`.
        fn IsValidToken(tk: mdToken) -> BOOL;
        fn GetNestedClassProps(td_nested_class: mdTypeDef, ptd_enclosing_class: *mut mdTypeDef) -> HRESULT;
        fn GetNativeCallConvFromSig(pv_sig: *const c_void, cb_sig: ULONG, p_call_conv: *mut ULONG) -> HRESULT;
        /// Writes 1 if global, 0 otherwise (an `int`).
        fn IsGlobal(pd: mdToken, pb_global: *mut c_int) -> HRESULT;
    }
}

com_interface! {
    /// Generics, PE kind and version string.
    interface IMetaDataImport2(IMetaDataImport2Vtbl): IMetaDataImport(IMetaDataImportVtbl),
    IID_IMetaDataImport2 = 0xFCE5EFA0_8BBA_4F8E_A036_8F2022B08466;
    {
        fn EnumGenericParams(ph_enum: *mut HCORENUM, tk: mdToken, r_generic_params: *mut mdGenericParam, c_max: ULONG, pc_generic_params: *mut ULONG) -> HRESULT;
        fn GetGenericParamProps(
            gp: mdGenericParam,
            pul_param_seq: *mut ULONG,
            pdw_param_flags: *mut DWORD,
            pt_owner: *mut mdToken,
            reserved: *mut DWORD,
            wzname: LPWSTR,
            cch_name: ULONG,
            pch_name: *mut ULONG,
        ) -> HRESULT;
        fn GetMethodSpecProps(mi: mdMethodSpec, tk_parent: *mut mdToken, ppv_sig_blob: *mut PCCOR_SIGNATURE, pcb_sig_blob: *mut ULONG) -> HRESULT;
        fn EnumGenericParamConstraints(
            ph_enum: *mut HCORENUM,
            tk: mdGenericParam,
            r_generic_param_constraints: *mut mdGenericParamConstraint,
            c_max: ULONG,
            pc_generic_param_constraints: *mut ULONG,
        ) -> HRESULT;
        fn GetGenericParamConstraintProps(gpc: mdGenericParamConstraint, pt_generic_param: *mut mdGenericParam, ptk_constraint_type: *mut mdToken) -> HRESULT;
        fn GetPEKind(pdw_pe_kind: *mut DWORD, pdw_machine: *mut DWORD) -> HRESULT;
        /// `cc_buf_size` / `*pcc_buf_size` are `DWORD`s (wide chars, including NUL).
        fn GetVersionString(pwz_buf: LPWSTR, cc_buf_size: DWORD, pcc_buf_size: *mut DWORD) -> HRESULT;
        fn EnumMethodSpecs(ph_enum: *mut HCORENUM, tk: mdToken, r_method_specs: *mut mdMethodSpec, c_max: ULONG, pc_method_specs: *mut ULONG) -> HRESULT;
    }
}

com_interface! {
    /// Assembly manifest access. Note `CloseEnum` is slot 15 here (not 3 as in IMetaDataImport).
    interface IMetaDataAssemblyImport(IMetaDataAssemblyImportVtbl): IUnknown(IUnknownVtbl),
    IID_IMetaDataAssemblyImport = 0xEE62470B_E94B_424E_9B7C_2F00C9249F93;
    {
        fn GetAssemblyProps(
            mda: mdAssembly,
            ppb_public_key: *mut *const c_void,
            pcb_public_key: *mut ULONG,
            pul_hash_alg_id: *mut ULONG,
            sz_name: LPWSTR,
            cch_name: ULONG,
            pch_name: *mut ULONG,
            p_meta_data: *mut ASSEMBLYMETADATA,
            pdw_assembly_flags: *mut DWORD,
        ) -> HRESULT;
        fn GetAssemblyRefProps(
            mdar: mdAssemblyRef,
            ppb_public_key_or_token: *mut *const c_void,
            pcb_public_key_or_token: *mut ULONG,
            sz_name: LPWSTR,
            cch_name: ULONG,
            pch_name: *mut ULONG,
            p_meta_data: *mut ASSEMBLYMETADATA,
            ppb_hash_value: *mut *const c_void,
            pcb_hash_value: *mut ULONG,
            pdw_assembly_ref_flags: *mut DWORD,
        ) -> HRESULT;
        fn GetFileProps(
            mdf: mdFile,
            sz_name: LPWSTR,
            cch_name: ULONG,
            pch_name: *mut ULONG,
            ppb_hash_value: *mut *const c_void,
            pcb_hash_value: *mut ULONG,
            pdw_file_flags: *mut DWORD,
        ) -> HRESULT;
        fn GetExportedTypeProps(
            mdct: mdExportedType,
            sz_name: LPWSTR,
            cch_name: ULONG,
            pch_name: *mut ULONG,
            ptk_implementation: *mut mdToken,
            ptk_type_def: *mut mdTypeDef,
            pdw_exported_type_flags: *mut DWORD,
        ) -> HRESULT;
        fn GetManifestResourceProps(
            mdmr: mdManifestResource,
            sz_name: LPWSTR,
            cch_name: ULONG,
            pch_name: *mut ULONG,
            ptk_implementation: *mut mdToken,
            pdw_offset: *mut DWORD,
            pdw_resource_flags: *mut DWORD,
        ) -> HRESULT;
        fn EnumAssemblyRefs(ph_enum: *mut HCORENUM, r_assembly_refs: *mut mdAssemblyRef, c_max: ULONG, pc_tokens: *mut ULONG) -> HRESULT;
        fn EnumFiles(ph_enum: *mut HCORENUM, r_files: *mut mdFile, c_max: ULONG, pc_tokens: *mut ULONG) -> HRESULT;
        fn EnumExportedTypes(ph_enum: *mut HCORENUM, r_exported_types: *mut mdExportedType, c_max: ULONG, pc_tokens: *mut ULONG) -> HRESULT;
        fn EnumManifestResources(ph_enum: *mut HCORENUM, r_manifest_resources: *mut mdManifestResource, c_max: ULONG, pc_tokens: *mut ULONG) -> HRESULT;
        fn GetAssemblyFromScope(ptk_assembly: *mut mdAssembly) -> HRESULT;
        fn FindExportedTypeByName(sz_name: LPCWSTR, mdt_exported_type: mdToken, ptk_exported_type: *mut mdExportedType) -> HRESULT;
        fn FindManifestResourceByName(sz_name: LPCWSTR, ptk_manifest_resource: *mut mdManifestResource) -> HRESULT;
        /// Returns nothing.
        fn CloseEnum(h_enum: HCORENUM);
        fn FindAssembliesByName(
            sz_app_base: LPCWSTR,
            sz_private_bin: LPCWSTR,
            sz_assembly_name: LPCWSTR,
            pp_iunk: *mut *mut IUnknown,
            c_max: ULONG,
            pc_assemblies: *mut ULONG,
        ) -> HRESULT;
    }
}

com_interface! {
    /// Write access to a module's metadata (`GetModuleMetaData(ofRead | ofWrite,
    /// IID_IMetaDataEmit)`), 49 methods in cor.h order, slots 3..=51. Interfaces it takes
    /// that this crate does not declare (`IStream`, `IMapToken`, the assembly import/emit
    /// pair of the import methods) are `*mut c_void`; `CorSaveSize` is a `DWORD`;
    /// `COR_SECATTR` arrays are `*mut c_void`.
    interface IMetaDataEmit(IMetaDataEmitVtbl): IUnknown(IUnknownVtbl),
    IID_IMetaDataEmit = 0xBA3FEE4C_ECB9_4E41_83B7_183FA41CD859;
    {
        fn SetModuleProps(sz_name: LPCWSTR) -> HRESULT;
        fn Save(sz_file: LPCWSTR, dw_save_flags: DWORD) -> HRESULT;
        fn SaveToStream(p_istream: *mut c_void, dw_save_flags: DWORD) -> HRESULT;
        fn GetSaveSize(f_save: DWORD, pdw_save_size: *mut DWORD) -> HRESULT;
        fn DefineTypeDef(sz_type_def: LPCWSTR, dw_type_def_flags: DWORD, tk_extends: mdToken, rtk_implements: *mut mdToken, ptd: *mut mdTypeDef) -> HRESULT;
        fn DefineNestedType(sz_type_def: LPCWSTR, dw_type_def_flags: DWORD, tk_extends: mdToken, rtk_implements: *mut mdToken, td_encloser: mdTypeDef, ptd: *mut mdTypeDef) -> HRESULT;
        fn SetHandler(p_unk: *mut IUnknown) -> HRESULT;
        fn DefineMethod(td: mdTypeDef, sz_name: LPCWSTR, dw_method_flags: DWORD, pv_sig_blob: PCCOR_SIGNATURE, cb_sig_blob: ULONG, ul_code_rva: ULONG, dw_impl_flags: DWORD, pmd: *mut mdMethodDef) -> HRESULT;
        fn DefineMethodImpl(td: mdTypeDef, tk_body: mdToken, tk_decl: mdToken) -> HRESULT;
        fn DefineTypeRefByName(tk_resolution_scope: mdToken, sz_name: LPCWSTR, ptr: *mut mdTypeRef) -> HRESULT;
        fn DefineImportType(p_assem_import: *mut c_void, pb_hash_value: *const c_void, cb_hash_value: ULONG, p_import: *mut IMetaDataImport, td_import: mdTypeDef, p_assem_emit: *mut c_void, ptr: *mut mdTypeRef) -> HRESULT;
        fn DefineMemberRef(tk_import: mdToken, sz_name: LPCWSTR, pv_sig_blob: PCCOR_SIGNATURE, cb_sig_blob: ULONG, pmr: *mut mdMemberRef) -> HRESULT;
        fn DefineImportMember(p_assem_import: *mut c_void, pb_hash_value: *const c_void, cb_hash_value: ULONG, p_import: *mut IMetaDataImport, mb_member: mdToken, p_assem_emit: *mut c_void, tk_parent: mdToken, pmr: *mut mdMemberRef) -> HRESULT;
        fn DefineEvent(td: mdTypeDef, sz_event: LPCWSTR, dw_event_flags: DWORD, tk_event_type: mdToken, md_add_on: mdMethodDef, md_remove_on: mdMethodDef, md_fire: mdMethodDef, rmd_other_methods: *mut mdMethodDef, pmd_event: *mut mdEvent) -> HRESULT;
        fn SetClassLayout(td: mdTypeDef, dw_pack_size: DWORD, r_field_offsets: *mut COR_FIELD_OFFSET, ul_class_size: ULONG) -> HRESULT;
        fn DeleteClassLayout(td: mdTypeDef) -> HRESULT;
        fn SetFieldMarshal(tk: mdToken, pv_native_type: PCCOR_SIGNATURE, cb_native_type: ULONG) -> HRESULT;
        fn DeleteFieldMarshal(tk: mdToken) -> HRESULT;
        fn DefinePermissionSet(tk: mdToken, dw_action: DWORD, pv_permission: *const c_void, cb_permission: ULONG, ppm: *mut mdPermission) -> HRESULT;
        fn SetRVA(md: mdMethodDef, ul_rva: ULONG) -> HRESULT;
        /// A `StandAloneSig` token for the signature blob (an existing one if equal).
        fn GetTokenFromSig(pv_sig: PCCOR_SIGNATURE, cb_sig: ULONG, pmsig: *mut mdSignature) -> HRESULT;
        fn DefineModuleRef(sz_name: LPCWSTR, pmur: *mut mdModuleRef) -> HRESULT;
        fn SetParent(mr: mdMemberRef, tk: mdToken) -> HRESULT;
        fn GetTokenFromTypeSpec(pv_sig: PCCOR_SIGNATURE, cb_sig: ULONG, ptypespec: *mut mdTypeSpec) -> HRESULT;
        fn SaveToMemory(pb_data: *mut c_void, cb_data: ULONG) -> HRESULT;
        fn DefineUserString(sz_string: LPCWSTR, cch_string: ULONG, pstk: *mut mdString) -> HRESULT;
        fn DeleteToken(tk_obj: mdToken) -> HRESULT;
        fn SetMethodProps(md: mdMethodDef, dw_method_flags: DWORD, ul_code_rva: ULONG, dw_impl_flags: DWORD) -> HRESULT;
        fn SetTypeDefProps(td: mdTypeDef, dw_type_def_flags: DWORD, tk_extends: mdToken, rtk_implements: *mut mdToken) -> HRESULT;
        fn SetEventProps(ev: mdEvent, dw_event_flags: DWORD, tk_event_type: mdToken, md_add_on: mdMethodDef, md_remove_on: mdMethodDef, md_fire: mdMethodDef, rmd_other_methods: *mut mdMethodDef) -> HRESULT;
        fn SetPermissionSetProps(tk: mdToken, dw_action: DWORD, pv_permission: *const c_void, cb_permission: ULONG, ppm: *mut mdPermission) -> HRESULT;
        fn DefinePinvokeMap(tk: mdToken, dw_mapping_flags: DWORD, sz_import_name: LPCWSTR, mr_import_dll: mdModuleRef) -> HRESULT;
        fn SetPinvokeMap(tk: mdToken, dw_mapping_flags: DWORD, sz_import_name: LPCWSTR, mr_import_dll: mdModuleRef) -> HRESULT;
        fn DeletePinvokeMap(tk: mdToken) -> HRESULT;
        fn DefineCustomAttribute(tk_obj: mdToken, tk_type: mdToken, p_custom_attribute: *const c_void, cb_custom_attribute: ULONG, pcv: *mut mdCustomAttribute) -> HRESULT;
        fn SetCustomAttributeValue(pcv: mdCustomAttribute, p_custom_attribute: *const c_void, cb_custom_attribute: ULONG) -> HRESULT;
        fn DefineField(td: mdTypeDef, sz_name: LPCWSTR, dw_field_flags: DWORD, pv_sig_blob: PCCOR_SIGNATURE, cb_sig_blob: ULONG, dw_cplus_type_flag: DWORD, p_value: *const c_void, cch_value: ULONG, pmd: *mut mdFieldDef) -> HRESULT;
        fn DefineProperty(td: mdTypeDef, sz_property: LPCWSTR, dw_prop_flags: DWORD, pv_sig: PCCOR_SIGNATURE, cb_sig: ULONG, dw_cplus_type_flag: DWORD, p_value: *const c_void, cch_value: ULONG, md_setter: mdMethodDef, md_getter: mdMethodDef, rmd_other_methods: *mut mdMethodDef, pmd_prop: *mut mdProperty) -> HRESULT;
        fn DefineParam(md: mdMethodDef, ul_param_seq: ULONG, sz_name: LPCWSTR, dw_param_flags: DWORD, dw_cplus_type_flag: DWORD, p_value: *const c_void, cch_value: ULONG, ppd: *mut mdParamDef) -> HRESULT;
        fn SetFieldProps(fd: mdFieldDef, dw_field_flags: DWORD, dw_cplus_type_flag: DWORD, p_value: *const c_void, cch_value: ULONG) -> HRESULT;
        fn SetPropertyProps(pr: mdProperty, dw_prop_flags: DWORD, dw_cplus_type_flag: DWORD, p_value: *const c_void, cch_value: ULONG, md_setter: mdMethodDef, md_getter: mdMethodDef, rmd_other_methods: *mut mdMethodDef) -> HRESULT;
        fn SetParamProps(pd: mdParamDef, sz_name: LPCWSTR, dw_param_flags: DWORD, dw_cplus_type_flag: DWORD, p_value: *const c_void, cch_value: ULONG) -> HRESULT;
        fn DefineSecurityAttributeSet(tk_obj: mdToken, r_sec_attrs: *mut c_void, c_sec_attrs: ULONG, pul_error_attr: *mut ULONG) -> HRESULT;
        fn ApplyEditAndContinue(p_import: *mut IUnknown) -> HRESULT;
        fn TranslateSigWithScope(p_assem_import: *mut c_void, pb_hash_value: *const c_void, cb_hash_value: ULONG, import: *mut IMetaDataImport, pb_sig_blob: PCCOR_SIGNATURE, cb_sig_blob: ULONG, p_assem_emit: *mut c_void, emit: *mut IMetaDataEmit, pv_translated_sig: *mut u8, cb_translated_sig_max: ULONG, pcb_translated_sig: *mut ULONG) -> HRESULT;
        fn SetMethodImplFlags(md: mdMethodDef, dw_impl_flags: DWORD) -> HRESULT;
        fn SetFieldRVA(fd: mdFieldDef, ul_rva: ULONG) -> HRESULT;
        fn Merge(p_import: *mut IMetaDataImport, p_host_map_token: *mut c_void, p_handler: *mut IUnknown) -> HRESULT;
        fn MergeEnd() -> HRESULT;
    }
}
