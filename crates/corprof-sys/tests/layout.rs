//! Struct layouts, GUID formatting, HRESULT names and flag values.

use core::mem::{align_of, offset_of, size_of};

use corprof_sys::*;

#[cfg(target_pointer_width = "64")]
#[test]
fn struct_sizes_and_offsets_lp64() {
    assert_eq!(size_of::<GUID>(), 16);
    assert_eq!(size_of::<COR_IL_MAP>(), 12);
    assert_eq!(size_of::<COR_DEBUG_IL_TO_NATIVE_MAP>(), 12);
    assert_eq!(size_of::<COR_FIELD_OFFSET>(), 8);

    assert_eq!(size_of::<COR_PRF_FUNCTION_ARGUMENT_RANGE>(), 16);
    assert_eq!(offset_of!(COR_PRF_FUNCTION_ARGUMENT_RANGE, length), 8);

    assert_eq!(size_of::<COR_PRF_FUNCTION_ARGUMENT_INFO>(), 24);
    assert_eq!(
        offset_of!(COR_PRF_FUNCTION_ARGUMENT_INFO, total_argument_size),
        4
    );
    assert_eq!(offset_of!(COR_PRF_FUNCTION_ARGUMENT_INFO, ranges), 8);

    assert_eq!(size_of::<COR_PRF_CODE_INFO>(), 16);
    assert_eq!(size_of::<COR_PRF_FUNCTION>(), 16);
    assert_eq!(size_of::<COR_PRF_METHOD>(), 16);
    assert_eq!(offset_of!(COR_PRF_METHOD, method_id), 8);

    assert_eq!(size_of::<COR_PRF_ASSEMBLY_REFERENCE_INFO>(), 48);
    assert_eq!(offset_of!(COR_PRF_ASSEMBLY_REFERENCE_INFO, sz_name), 16);
    assert_eq!(offset_of!(COR_PRF_ASSEMBLY_REFERENCE_INFO, p_meta_data), 24);
    assert_eq!(
        offset_of!(COR_PRF_ASSEMBLY_REFERENCE_INFO, cb_hash_value),
        40
    );
    assert_eq!(
        offset_of!(COR_PRF_ASSEMBLY_REFERENCE_INFO, dw_assembly_ref_flags),
        44
    );

    assert_eq!(size_of::<COR_PRF_GC_GENERATION_RANGE>(), 32);
    assert_eq!(offset_of!(COR_PRF_GC_GENERATION_RANGE, range_start), 8);
    assert_eq!(
        offset_of!(COR_PRF_GC_GENERATION_RANGE, range_length_reserved),
        24
    );
    assert_eq!(size_of::<COR_PRF_NONGC_HEAP_RANGE>(), 24);

    assert_eq!(size_of::<COR_PRF_EX_CLAUSE_INFO>(), 32);
    assert_eq!(offset_of!(COR_PRF_EX_CLAUSE_INFO, program_counter), 8);

    assert_eq!(size_of::<COR_PRF_EVENTPIPE_PROVIDER_CONFIG>(), 32);
    assert_eq!(offset_of!(COR_PRF_EVENTPIPE_PROVIDER_CONFIG, keywords), 8);
    assert_eq!(
        offset_of!(COR_PRF_EVENTPIPE_PROVIDER_CONFIG, logging_level),
        16
    );
    assert_eq!(
        offset_of!(COR_PRF_EVENTPIPE_PROVIDER_CONFIG, filter_data),
        24
    );
    assert_eq!(size_of::<COR_PRF_EVENTPIPE_PARAM_DESC>(), 16);
    assert_eq!(offset_of!(COR_PRF_EVENTPIPE_PARAM_DESC, name), 8);
    assert_eq!(size_of::<COR_PRF_EVENT_DATA>(), 16);
    assert_eq!(size_of::<COR_PRF_FILTER_DATA>(), 16);

    assert_eq!(size_of::<OSINFO>(), 12);
    assert_eq!(size_of::<ASSEMBLYMETADATA>(), 56);
    assert_eq!(offset_of!(ASSEMBLYMETADATA, sz_locale), 8);
    assert_eq!(offset_of!(ASSEMBLYMETADATA, cb_locale), 16);
    assert_eq!(offset_of!(ASSEMBLYMETADATA, r_processor), 24);
    assert_eq!(offset_of!(ASSEMBLYMETADATA, r_os), 40);
    assert_eq!(offset_of!(ASSEMBLYMETADATA, ul_os), 48);

    assert_eq!(size_of::<FunctionIDOrClientID>(), 8);
    assert_eq!(align_of::<FunctionIDOrClientID>(), 8);
    assert_eq!(size_of::<Option<FunctionEnter3>>(), 8);
}

#[test]
fn scalar_sizes() {
    assert_eq!(size_of::<WCHAR>(), 2);
    assert_eq!(size_of::<ULONG>(), 4);
    assert_eq!(size_of::<LONG>(), 4);
    assert_eq!(size_of::<BOOL>(), 4);
    assert_eq!(size_of::<HRESULT>(), 4);
    assert_eq!(size_of::<mdToken>(), 4);
    assert_eq!(size_of::<EVENTPIPE_SESSION>(), 8);
    assert_eq!(size_of::<FunctionID>(), size_of::<*const u8>());
    assert_eq!(size_of::<ObjectHandleID>(), size_of::<*const u8>());
    // Interface structs are a single vtable pointer.
    assert_eq!(size_of::<ICorProfilerInfo15>(), size_of::<usize>());
    assert_eq!(size_of::<IUnknown>(), size_of::<usize>());
}

#[test]
fn guid_from_u128_fields() {
    let g = GUID::from_u128(0x00000001_0000_0000_C000_000000000046);
    assert_eq!(g.data1, 1);
    assert_eq!(g.data2, 0);
    assert_eq!(g.data3, 0);
    assert_eq!(g.data4, [0xC0, 0, 0, 0, 0, 0, 0, 0x46]);
    assert_eq!(g, IID_IClassFactory);
    assert_eq!(g.to_u128(), 0x00000001_0000_0000_C000_000000000046);

    let i3 = IID_ICorProfilerInfo3; // {B555ED4F-452A-4E54-8B39-B5360BAD32A0}
    assert_eq!(i3.data1, 0xB555ED4F);
    assert_eq!(i3.data2, 0x452A);
    assert_eq!(i3.data3, 0x4E54);
    assert_eq!(i3.data4, [0x8B, 0x39, 0xB5, 0x36, 0x0B, 0xAD, 0x32, 0xA0]);
}

#[test]
fn guid_parse_display_round_trip() {
    let s = "{28B5557D-3F3F-48B4-90B2-5F9EEA2F6C48}";
    let g = GUID::parse(s).unwrap();
    assert_eq!(g, IID_ICorProfilerInfo);
    assert_eq!(g.to_string(), s);
    assert_eq!(GUID::parse(&s[1..s.len() - 1]), Some(g));
    assert_eq!(GUID::parse(&s.to_ascii_lowercase()), Some(g));
    assert_eq!(GUID::parse(&g.to_string()), Some(g));
    assert_eq!(
        GUID::NULL.to_string(),
        "{00000000-0000-0000-0000-000000000000}"
    );

    for bad in [
        "",
        "{}",
        "28B5557D-3F3F-48B4-90B2-5F9EEA2F6C4",
        "28B5557D-3F3F-48B4-90B2-5F9EEA2F6C480",
        "28B5557D_3F3F-48B4-90B2-5F9EEA2F6C48",
        "28B5557D-3F3F-48B4-90B2-5F9EEA2F6CXG",
        "{28B5557D-3F3F-48B4-90B2-5F9EEA2F6C48",
        "28B5557D-3F3F-48B4-90B2-5F9EEA2F6C48}",
        "+8B5557D-3F3F-48B4-90B2-5F9EEA2F6C48",
    ] {
        assert_eq!(GUID::parse(bad), None, "{bad:?}");
    }
}

#[test]
fn guid_byte_order() {
    let g = IID_ICorProfilerCallback; // {176FBED1-A55C-4796-98CA-A9DA0EF883E7}
    let b = g.to_bytes_le();
    assert_eq!(
        b,
        [
            0xD1, 0xBE, 0x6F, 0x17, 0x5C, 0xA5, 0x96, 0x47, 0x98, 0xCA, 0xA9, 0xDA, 0x0E, 0xF8,
            0x83, 0xE7
        ]
    );
    assert_eq!(GUID::from_bytes_le(b), g);
    // In-memory representation equals to_bytes_le on little-endian targets.
    #[cfg(target_endian = "little")]
    {
        // SAFETY: GUID is repr(C), 16 bytes, no padding.
        let raw: [u8; 16] = unsafe { core::mem::transmute(g) };
        assert_eq!(raw, b);
    }
}

#[test]
fn hresult_names_and_values() {
    assert_eq!(
        hresult_name(CORPROF_E_PROFILER_ALREADY_ACTIVE),
        Some("CORPROF_E_PROFILER_ALREADY_ACTIVE")
    );
    assert_eq!(CORPROF_E_PROFILER_ALREADY_ACTIVE as u32, 0x8013136A);
    assert_eq!(CORPROF_E_PROFILER_CANCEL_ACTIVATION as u32, 0x80131375);
    assert_eq!(CORPROF_E_UNSUPPORTED_CALL_SEQUENCE as u32, 0x80131363);
    assert_eq!(CORPROF_E_MODULE_IS_ENC as u32, 0x8013138A);
    assert_eq!(ERROR_INSUFFICIENT_BUFFER as u32, 0x8007007A);
    assert_eq!(ERROR_INSUFFICIENT_BUFFER, hresult_from_win32(122));
    assert_eq!(E_INVALIDARG, hresult_from_win32(87));
    assert_eq!(hresult_from_win32(0), S_OK);
    assert_eq!(E_FAIL as u32, 0x80004005);
    assert_eq!(E_OUTOFMEMORY as u32, 0x8007000E);
    assert_eq!(CLASS_E_CLASSNOTAVAILABLE as u32, 0x80040111);
    assert_eq!(CLDB_E_RECORD_NOTFOUND as u32, 0x80131130);

    // DS_IPC aliases resolve to the corerror / winerror names.
    assert_eq!(hresult_name(DS_IPC_E_FAIL), Some("E_FAIL"));
    assert_eq!(hresult_name(DS_IPC_E_INVALIDARG), Some("E_INVALIDARG"));
    assert_eq!(
        hresult_name(DS_IPC_E_RUNTIME_UNINITIALIZED),
        Some("CORPROF_E_RUNTIME_UNINITIALIZED")
    );
    assert_eq!(
        hresult_name(DS_IPC_E_NOT_YET_AVAILABLE),
        Some("CORPROF_E_NOT_YET_AVAILABLE")
    );
    assert_eq!(
        hresult_name(DS_IPC_E_INSUFFICIENT_BUFFER),
        Some("ERROR_INSUFFICIENT_BUFFER")
    );
    assert_eq!(
        hresult_name(DS_IPC_E_NOTSUPPORTED),
        Some("COR_E_NOTSUPPORTED")
    );
    assert_eq!(
        hresult_name(DS_IPC_E_BAD_ENCODING),
        Some("CORDIAGIPC_E_BAD_ENCODING")
    );
    assert_eq!(
        hresult_name(DS_IPC_E_ENVVAR_NOT_FOUND),
        Some("DS_IPC_E_ENVVAR_NOT_FOUND")
    );
    assert_eq!(hresult_name(0x1234_5678), None);

    assert!(succeeded(S_OK) && succeeded(S_FALSE) && succeeded(CLDB_S_TRUNCATION));
    assert!(failed(E_FAIL) && !failed(S_FALSE));

    // Every CORPROF_E value is in facility URT (0x13) and named after itself.
    for (hr, name) in HRESULT_NAMES {
        if name.starts_with("CORPROF_E_") {
            assert_eq!((*hr as u32) & 0xFFFF_0000, 0x8013_0000, "{name}");
            assert_eq!(hresult_name(*hr), Some(*name));
        }
    }
}

#[test]
fn event_mask_values() {
    assert_eq!(COR_PRF_MONITOR_REMOTING_COOKIE, 0x4400);
    assert_eq!(COR_PRF_MONITOR_REMOTING_ASYNC, 0x8400);
    assert_eq!(COR_PRF_REQUIRE_PROFILE_IMAGE, 0x2000_1800);
    assert_eq!(COR_PRF_ALLOWABLE_AFTER_ATTACH, 0x1065_02FE);
    assert_eq!(COR_PRF_MONITOR_IMMUTABLE, 0xEE98_CC00);
    assert_eq!(COR_PRF_ALLOWABLE_NOTIFICATION_PROFILER, 0xB1E3_2B7F);
    assert_eq!(COR_PRF_HIGH_ALLOWABLE_AFTER_ATTACH, 0xF6);
    assert_eq!(COR_PRF_HIGH_ALLOWABLE_NOTIFICATION_PROFILER, 0xFE);
    assert_eq!(COR_PRF_HIGH_MONITOR_IMMUTABLE, 0x8);
    // Immutable flags are never allowed after attach.
    assert_eq!(
        COR_PRF_MONITOR_IMMUTABLE & COR_PRF_ALLOWABLE_AFTER_ATTACH,
        0
    );
    assert_eq!(COR_PRF_ALL & COR_PRF_MONITOR_ALL, COR_PRF_MONITOR_ALL);
    assert_eq!(NO_MAPPING, 0xFFFF_FFFF);
    assert_eq!(EPILOG, 0xFFFF_FFFD);
}

#[test]
fn token_helpers() {
    let tk: mdToken = 0x0600_0012;
    assert_eq!(TypeFromToken(tk), mdtMethodDef);
    assert_eq!(RidFromToken(tk), 0x12);
    assert_eq!(TokenFromRid(0x12, mdtMethodDef), tk);
    assert!(!IsNilToken(tk));
    assert!(IsNilToken(mdTypeDefNil));
    assert_eq!(mdTypeDefNil, 0x0200_0000);
    assert_eq!(ofRead, 0);
    assert!(IsTdNested(tdNestedPrivate) && !IsTdNested(tdPublic));
    assert!(IsTdInterface(tdInterface | tdAbstract));
    assert_eq!(ELEMENT_TYPE_PINNED, 0x45);
    assert_eq!(IMAGE_CEE_CS_CALLCONV_DEFAULT_HASTHIS, 0x20);
}

#[test]
fn function_id_or_client_id() {
    let v = FunctionIDOrClientID::from_raw(0x1234);
    assert_eq!(v.raw(), 0x1234);
    // SAFETY: both members are usize.
    assert_eq!(unsafe { v.function_id }, 0x1234);
    assert_eq!(FunctionIDOrClientID::default().raw(), 0);
    assert_eq!(format!("{v:?}"), "FunctionIDOrClientID(0x1234)");
}
