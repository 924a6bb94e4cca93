//! Vtable layout tests.
//!
//! The expected (slot, name) lists below were extracted from an independent copy of the headers
//! (dotnet/diagnostics `src/shared/inc/corprof.idl` and `src/shared/inc/cor.h`, synced from
//! dotnet/runtime), not from this crate's sources. Each interface is checked two ways:
//! (a) `METHODS` / `FIRST_SLOT` / `SLOT_COUNT` equal the list, and (b) `offset_of!` of every
//! named field is `slot * size_of::<usize>()` and the vtable is exactly `total` pointers long.
//! The most-derived interfaces are also checked through their nested `base` chains.
#![allow(non_snake_case)]

use core::mem::{offset_of, size_of};

use corprof_sys::*;

const PTR: usize = size_of::<usize>();

/// Checks one vtable. `$parent` is the vtable nested as `base` (or `-` for IUnknown).
macro_rules! check_vtbl {
    ($vtbl:ident : $parent:tt, total = $total:expr, [$($slot:literal $name:ident),* $(,)?]) => {{
        let expected: &[(usize, &str)] = &[$(($slot, stringify!($name))),*];
        let first = expected[0].0;
        for (i, (s, _)) in expected.iter().enumerate() {
            assert_eq!(*s, first + i, "expected list must be contiguous");
        }
        assert_eq!(first + expected.len(), $total);
        // (a) the declared slot data
        assert_eq!($vtbl::FIRST_SLOT, first, "FIRST_SLOT of {}", stringify!($vtbl));
        assert_eq!($vtbl::SLOT_COUNT, $total, "SLOT_COUNT of {}", stringify!($vtbl));
        let got: Vec<(usize, &str)> = $vtbl::METHODS
            .iter()
            .enumerate()
            .map(|(i, n)| ($vtbl::FIRST_SLOT + i, *n))
            .collect();
        assert_eq!(got, expected, "METHODS of {}", stringify!($vtbl));
        // (b) the actual struct layout
        $(
            assert_eq!(
                offset_of!($vtbl, $name),
                at($slot),
                "offset of {}::{}",
                stringify!($vtbl),
                stringify!($name)
            );
        )*
        assert_eq!(size_of::<$vtbl>(), at($total), "size of {}", stringify!($vtbl));
        check_vtbl!(@base $vtbl : $parent, first);
    }};
    (@base $vtbl:ident : -, $first:expr) => {{
        assert_eq!($first, 0);
    }};
    (@base $vtbl:ident : $parent:ident, $first:expr) => {{
        // `base` is the parent vtable, at offset 0, and fills exactly the inherited slots.
        let _typed: fn(&$vtbl) -> &$parent = |v| &v.base;
        assert_eq!(offset_of!($vtbl, base), 0);
        assert_eq!(size_of::<$parent>(), at($first));
    }};
}

/// Checks `offset_of!(Vtbl, base.base...Method)` for every slot reachable from a most-derived
/// vtable (walking the nested `base` structs).
macro_rules! check_nested {
    ($vtbl:ident; $($slot:literal $($path:ident).+;)*) => {{
        $(
            assert_eq!(
                offset_of!($vtbl, $($path).+),
                at($slot),
                "offset of {}::{}",
                stringify!($vtbl),
                stringify!($($path).+)
            );
        )*
    }};
}

/// Byte offset of vtable slot `slot`.
const fn at(slot: usize) -> usize {
    slot * PTR
}

#[test]
fn vtbl_IUnknown() {
    check_vtbl!(IUnknownVtbl : -, total = 3, [
        0 QueryInterface,
        1 AddRef,
        2 Release,
    ]);
}

#[test]
fn vtbl_IClassFactory() {
    check_vtbl!(IClassFactoryVtbl : IUnknownVtbl, total = 5, [
        3 CreateInstance,
        4 LockServer,
    ]);
}

#[test]
fn vtbl_ICorProfilerCallback() {
    check_vtbl!(ICorProfilerCallbackVtbl : IUnknownVtbl, total = 72, [
        3 Initialize,
        4 Shutdown,
        5 AppDomainCreationStarted,
        6 AppDomainCreationFinished,
        7 AppDomainShutdownStarted,
        8 AppDomainShutdownFinished,
        9 AssemblyLoadStarted,
        10 AssemblyLoadFinished,
        11 AssemblyUnloadStarted,
        12 AssemblyUnloadFinished,
        13 ModuleLoadStarted,
        14 ModuleLoadFinished,
        15 ModuleUnloadStarted,
        16 ModuleUnloadFinished,
        17 ModuleAttachedToAssembly,
        18 ClassLoadStarted,
        19 ClassLoadFinished,
        20 ClassUnloadStarted,
        21 ClassUnloadFinished,
        22 FunctionUnloadStarted,
        23 JITCompilationStarted,
        24 JITCompilationFinished,
        25 JITCachedFunctionSearchStarted,
        26 JITCachedFunctionSearchFinished,
        27 JITFunctionPitched,
        28 JITInlining,
        29 ThreadCreated,
        30 ThreadDestroyed,
        31 ThreadAssignedToOSThread,
        32 RemotingClientInvocationStarted,
        33 RemotingClientSendingMessage,
        34 RemotingClientReceivingReply,
        35 RemotingClientInvocationFinished,
        36 RemotingServerReceivingMessage,
        37 RemotingServerInvocationStarted,
        38 RemotingServerInvocationReturned,
        39 RemotingServerSendingReply,
        40 UnmanagedToManagedTransition,
        41 ManagedToUnmanagedTransition,
        42 RuntimeSuspendStarted,
        43 RuntimeSuspendFinished,
        44 RuntimeSuspendAborted,
        45 RuntimeResumeStarted,
        46 RuntimeResumeFinished,
        47 RuntimeThreadSuspended,
        48 RuntimeThreadResumed,
        49 MovedReferences,
        50 ObjectAllocated,
        51 ObjectsAllocatedByClass,
        52 ObjectReferences,
        53 RootReferences,
        54 ExceptionThrown,
        55 ExceptionSearchFunctionEnter,
        56 ExceptionSearchFunctionLeave,
        57 ExceptionSearchFilterEnter,
        58 ExceptionSearchFilterLeave,
        59 ExceptionSearchCatcherFound,
        60 ExceptionOSHandlerEnter,
        61 ExceptionOSHandlerLeave,
        62 ExceptionUnwindFunctionEnter,
        63 ExceptionUnwindFunctionLeave,
        64 ExceptionUnwindFinallyEnter,
        65 ExceptionUnwindFinallyLeave,
        66 ExceptionCatcherEnter,
        67 ExceptionCatcherLeave,
        68 COMClassicVTableCreated,
        69 COMClassicVTableDestroyed,
        70 ExceptionCLRCatcherFound,
        71 ExceptionCLRCatcherExecute,
    ]);
}

#[test]
fn vtbl_ICorProfilerCallback2() {
    check_vtbl!(ICorProfilerCallback2Vtbl : ICorProfilerCallbackVtbl, total = 80, [
        72 ThreadNameChanged,
        73 GarbageCollectionStarted,
        74 SurvivingReferences,
        75 GarbageCollectionFinished,
        76 FinalizeableObjectQueued,
        77 RootReferences2,
        78 HandleCreated,
        79 HandleDestroyed,
    ]);
}

#[test]
fn vtbl_ICorProfilerCallback3() {
    check_vtbl!(ICorProfilerCallback3Vtbl : ICorProfilerCallback2Vtbl, total = 83, [
        80 InitializeForAttach,
        81 ProfilerAttachComplete,
        82 ProfilerDetachSucceeded,
    ]);
}

#[test]
fn vtbl_ICorProfilerCallback4() {
    check_vtbl!(ICorProfilerCallback4Vtbl : ICorProfilerCallback3Vtbl, total = 89, [
        83 ReJITCompilationStarted,
        84 GetReJITParameters,
        85 ReJITCompilationFinished,
        86 ReJITError,
        87 MovedReferences2,
        88 SurvivingReferences2,
    ]);
}

#[test]
fn vtbl_ICorProfilerCallback5() {
    check_vtbl!(ICorProfilerCallback5Vtbl : ICorProfilerCallback4Vtbl, total = 90, [
        89 ConditionalWeakTableElementReferences,
    ]);
}

#[test]
fn vtbl_ICorProfilerCallback6() {
    check_vtbl!(ICorProfilerCallback6Vtbl : ICorProfilerCallback5Vtbl, total = 91, [
        90 GetAssemblyReferences,
    ]);
}

#[test]
fn vtbl_ICorProfilerCallback7() {
    check_vtbl!(ICorProfilerCallback7Vtbl : ICorProfilerCallback6Vtbl, total = 92, [
        91 ModuleInMemorySymbolsUpdated,
    ]);
}

#[test]
fn vtbl_ICorProfilerCallback8() {
    check_vtbl!(ICorProfilerCallback8Vtbl : ICorProfilerCallback7Vtbl, total = 94, [
        92 DynamicMethodJITCompilationStarted,
        93 DynamicMethodJITCompilationFinished,
    ]);
}

#[test]
fn vtbl_ICorProfilerCallback9() {
    check_vtbl!(ICorProfilerCallback9Vtbl : ICorProfilerCallback8Vtbl, total = 95, [
        94 DynamicMethodUnloaded,
    ]);
}

#[test]
fn vtbl_ICorProfilerCallback10() {
    check_vtbl!(ICorProfilerCallback10Vtbl : ICorProfilerCallback9Vtbl, total = 97, [
        95 EventPipeEventDelivered,
        96 EventPipeProviderCreated,
    ]);
}

#[test]
fn vtbl_ICorProfilerCallback11() {
    check_vtbl!(ICorProfilerCallback11Vtbl : ICorProfilerCallback10Vtbl, total = 98, [
        97 LoadAsNotificationOnly,
    ]);
}

#[test]
fn vtbl_ICorProfilerInfo() {
    check_vtbl!(ICorProfilerInfoVtbl : IUnknownVtbl, total = 36, [
        3 GetClassFromObject,
        4 GetClassFromToken,
        5 GetCodeInfo,
        6 GetEventMask,
        7 GetFunctionFromIP,
        8 GetFunctionFromToken,
        9 GetHandleFromThread,
        10 GetObjectSize,
        11 IsArrayClass,
        12 GetThreadInfo,
        13 GetCurrentThreadID,
        14 GetClassIDInfo,
        15 GetFunctionInfo,
        16 SetEventMask,
        17 SetEnterLeaveFunctionHooks,
        18 SetFunctionIDMapper,
        19 GetTokenAndMetaDataFromFunction,
        20 GetModuleInfo,
        21 GetModuleMetaData,
        22 GetILFunctionBody,
        23 GetILFunctionBodyAllocator,
        24 SetILFunctionBody,
        25 GetAppDomainInfo,
        26 GetAssemblyInfo,
        27 SetFunctionReJIT,
        28 ForceGC,
        29 SetILInstrumentedCodeMap,
        30 GetInprocInspectionInterface,
        31 GetInprocInspectionIThisThread,
        32 GetThreadContext,
        33 BeginInprocDebugging,
        34 EndInprocDebugging,
        35 GetILToNativeMapping,
    ]);
}

#[test]
fn vtbl_ICorProfilerInfo2() {
    check_vtbl!(ICorProfilerInfo2Vtbl : ICorProfilerInfoVtbl, total = 57, [
        36 DoStackSnapshot,
        37 SetEnterLeaveFunctionHooks2,
        38 GetFunctionInfo2,
        39 GetStringLayout,
        40 GetClassLayout,
        41 GetClassIDInfo2,
        42 GetCodeInfo2,
        43 GetClassFromTokenAndTypeArgs,
        44 GetFunctionFromTokenAndTypeArgs,
        45 EnumModuleFrozenObjects,
        46 GetArrayObjectInfo,
        47 GetBoxClassLayout,
        48 GetThreadAppDomain,
        49 GetRVAStaticAddress,
        50 GetAppDomainStaticAddress,
        51 GetThreadStaticAddress,
        52 GetContextStaticAddress,
        53 GetStaticFieldInfo,
        54 GetGenerationBounds,
        55 GetObjectGeneration,
        56 GetNotifiedExceptionClauseInfo,
    ]);
}

#[test]
fn vtbl_ICorProfilerInfo3() {
    check_vtbl!(ICorProfilerInfo3Vtbl : ICorProfilerInfo2Vtbl, total = 71, [
        57 EnumJITedFunctions,
        58 RequestProfilerDetach,
        59 SetFunctionIDMapper2,
        60 GetStringLayout2,
        61 SetEnterLeaveFunctionHooks3,
        62 SetEnterLeaveFunctionHooks3WithInfo,
        63 GetFunctionEnter3Info,
        64 GetFunctionLeave3Info,
        65 GetFunctionTailcall3Info,
        66 EnumModules,
        67 GetRuntimeInformation,
        68 GetThreadStaticAddress2,
        69 GetAppDomainsContainingModule,
        70 GetModuleInfo2,
    ]);
}

#[test]
fn vtbl_ICorProfilerObjectEnum() {
    check_vtbl!(ICorProfilerObjectEnumVtbl : IUnknownVtbl, total = 8, [
        3 Skip,
        4 Reset,
        5 Clone,
        6 GetCount,
        7 Next,
    ]);
}

#[test]
fn vtbl_ICorProfilerFunctionEnum() {
    check_vtbl!(ICorProfilerFunctionEnumVtbl : IUnknownVtbl, total = 8, [
        3 Skip,
        4 Reset,
        5 Clone,
        6 GetCount,
        7 Next,
    ]);
}

#[test]
fn vtbl_ICorProfilerModuleEnum() {
    check_vtbl!(ICorProfilerModuleEnumVtbl : IUnknownVtbl, total = 8, [
        3 Skip,
        4 Reset,
        5 Clone,
        6 GetCount,
        7 Next,
    ]);
}

#[test]
fn vtbl_IMethodMalloc() {
    check_vtbl!(IMethodMallocVtbl : IUnknownVtbl, total = 4, [
        3 Alloc,
    ]);
}

#[test]
fn vtbl_ICorProfilerFunctionControl() {
    check_vtbl!(ICorProfilerFunctionControlVtbl : IUnknownVtbl, total = 6, [
        3 SetCodegenFlags,
        4 SetILFunctionBody,
        5 SetILInstrumentedCodeMap,
    ]);
}

#[test]
fn vtbl_ICorProfilerInfo4() {
    check_vtbl!(ICorProfilerInfo4Vtbl : ICorProfilerInfo3Vtbl, total = 81, [
        71 EnumThreads,
        72 InitializeCurrentThread,
        73 RequestReJIT,
        74 RequestRevert,
        75 GetCodeInfo3,
        76 GetFunctionFromIP2,
        77 GetReJITIDs,
        78 GetILToNativeMapping2,
        79 EnumJITedFunctions2,
        80 GetObjectSize2,
    ]);
}

#[test]
fn vtbl_ICorProfilerInfo5() {
    check_vtbl!(ICorProfilerInfo5Vtbl : ICorProfilerInfo4Vtbl, total = 83, [
        81 GetEventMask2,
        82 SetEventMask2,
    ]);
}

#[test]
fn vtbl_ICorProfilerInfo6() {
    check_vtbl!(ICorProfilerInfo6Vtbl : ICorProfilerInfo5Vtbl, total = 84, [
        83 EnumNgenModuleMethodsInliningThisMethod,
    ]);
}

#[test]
fn vtbl_ICorProfilerInfo7() {
    check_vtbl!(ICorProfilerInfo7Vtbl : ICorProfilerInfo6Vtbl, total = 87, [
        84 ApplyMetaData,
        85 GetInMemorySymbolsLength,
        86 ReadInMemorySymbols,
    ]);
}

#[test]
fn vtbl_ICorProfilerInfo8() {
    check_vtbl!(ICorProfilerInfo8Vtbl : ICorProfilerInfo7Vtbl, total = 90, [
        87 IsFunctionDynamic,
        88 GetFunctionFromIP3,
        89 GetDynamicFunctionInfo,
    ]);
}

#[test]
fn vtbl_ICorProfilerInfo9() {
    check_vtbl!(ICorProfilerInfo9Vtbl : ICorProfilerInfo8Vtbl, total = 93, [
        90 GetNativeCodeStartAddresses,
        91 GetILToNativeMapping3,
        92 GetCodeInfo4,
    ]);
}

#[test]
fn vtbl_ICorProfilerInfo10() {
    check_vtbl!(ICorProfilerInfo10Vtbl : ICorProfilerInfo9Vtbl, total = 99, [
        93 EnumerateObjectReferences,
        94 IsFrozenObject,
        95 GetLOHObjectSizeThreshold,
        96 RequestReJITWithInliners,
        97 SuspendRuntime,
        98 ResumeRuntime,
    ]);
}

#[test]
fn vtbl_ICorProfilerInfo11() {
    check_vtbl!(ICorProfilerInfo11Vtbl : ICorProfilerInfo10Vtbl, total = 101, [
        99 GetEnvironmentVariable,
        100 SetEnvironmentVariable,
    ]);
}

#[test]
fn vtbl_ICorProfilerInfo12() {
    check_vtbl!(ICorProfilerInfo12Vtbl : ICorProfilerInfo11Vtbl, total = 108, [
        101 EventPipeStartSession,
        102 EventPipeAddProviderToSession,
        103 EventPipeStopSession,
        104 EventPipeCreateProvider,
        105 EventPipeGetProviderInfo,
        106 EventPipeDefineEvent,
        107 EventPipeWriteEvent,
    ]);
}

#[test]
fn vtbl_ICorProfilerInfo13() {
    check_vtbl!(ICorProfilerInfo13Vtbl : ICorProfilerInfo12Vtbl, total = 111, [
        108 CreateHandle,
        109 DestroyHandle,
        110 GetObjectIDFromHandle,
    ]);
}

#[test]
fn vtbl_ICorProfilerInfo14() {
    check_vtbl!(ICorProfilerInfo14Vtbl : ICorProfilerInfo13Vtbl, total = 114, [
        111 EnumerateNonGCObjects,
        112 GetNonGCHeapBounds,
        113 EventPipeCreateProvider2,
    ]);
}

#[test]
fn vtbl_ICorProfilerInfo15() {
    check_vtbl!(ICorProfilerInfo15Vtbl : ICorProfilerInfo14Vtbl, total = 115, [
        114 EnumerateGCHeapObjects,
    ]);
}

#[test]
fn vtbl_ICorProfilerMethodEnum() {
    check_vtbl!(ICorProfilerMethodEnumVtbl : IUnknownVtbl, total = 8, [
        3 Skip,
        4 Reset,
        5 Clone,
        6 GetCount,
        7 Next,
    ]);
}

#[test]
fn vtbl_ICorProfilerThreadEnum() {
    check_vtbl!(ICorProfilerThreadEnumVtbl : IUnknownVtbl, total = 8, [
        3 Skip,
        4 Reset,
        5 Clone,
        6 GetCount,
        7 Next,
    ]);
}

#[test]
fn vtbl_ICorProfilerAssemblyReferenceProvider() {
    check_vtbl!(ICorProfilerAssemblyReferenceProviderVtbl : IUnknownVtbl, total = 4, [
        3 AddAssemblyReference,
    ]);
}

#[test]
fn vtbl_IMetaDataImport() {
    check_vtbl!(IMetaDataImportVtbl : IUnknownVtbl, total = 65, [
        3 CloseEnum,
        4 CountEnum,
        5 ResetEnum,
        6 EnumTypeDefs,
        7 EnumInterfaceImpls,
        8 EnumTypeRefs,
        9 FindTypeDefByName,
        10 GetScopeProps,
        11 GetModuleFromScope,
        12 GetTypeDefProps,
        13 GetInterfaceImplProps,
        14 GetTypeRefProps,
        15 ResolveTypeRef,
        16 EnumMembers,
        17 EnumMembersWithName,
        18 EnumMethods,
        19 EnumMethodsWithName,
        20 EnumFields,
        21 EnumFieldsWithName,
        22 EnumParams,
        23 EnumMemberRefs,
        24 EnumMethodImpls,
        25 EnumPermissionSets,
        26 FindMember,
        27 FindMethod,
        28 FindField,
        29 FindMemberRef,
        30 GetMethodProps,
        31 GetMemberRefProps,
        32 EnumProperties,
        33 EnumEvents,
        34 GetEventProps,
        35 EnumMethodSemantics,
        36 GetMethodSemantics,
        37 GetClassLayout,
        38 GetFieldMarshal,
        39 GetRVA,
        40 GetPermissionSetProps,
        41 GetSigFromToken,
        42 GetModuleRefProps,
        43 EnumModuleRefs,
        44 GetTypeSpecFromToken,
        45 GetNameFromToken,
        46 EnumUnresolvedMethods,
        47 GetUserString,
        48 GetPinvokeMap,
        49 EnumSignatures,
        50 EnumTypeSpecs,
        51 EnumUserStrings,
        52 GetParamForMethodIndex,
        53 EnumCustomAttributes,
        54 GetCustomAttributeProps,
        55 FindTypeRef,
        56 GetMemberProps,
        57 GetFieldProps,
        58 GetPropertyProps,
        59 GetParamProps,
        60 GetCustomAttributeByName,
        61 IsValidToken,
        62 GetNestedClassProps,
        63 GetNativeCallConvFromSig,
        64 IsGlobal,
    ]);
}

#[test]
fn vtbl_IMetaDataImport2() {
    check_vtbl!(IMetaDataImport2Vtbl : IMetaDataImportVtbl, total = 73, [
        65 EnumGenericParams,
        66 GetGenericParamProps,
        67 GetMethodSpecProps,
        68 EnumGenericParamConstraints,
        69 GetGenericParamConstraintProps,
        70 GetPEKind,
        71 GetVersionString,
        72 EnumMethodSpecs,
    ]);
}

#[test]
fn vtbl_IMetaDataEmit() {
    check_vtbl!(IMetaDataEmitVtbl : IUnknownVtbl, total = 52, [
        3 SetModuleProps,
        4 Save,
        5 SaveToStream,
        6 GetSaveSize,
        7 DefineTypeDef,
        8 DefineNestedType,
        9 SetHandler,
        10 DefineMethod,
        11 DefineMethodImpl,
        12 DefineTypeRefByName,
        13 DefineImportType,
        14 DefineMemberRef,
        15 DefineImportMember,
        16 DefineEvent,
        17 SetClassLayout,
        18 DeleteClassLayout,
        19 SetFieldMarshal,
        20 DeleteFieldMarshal,
        21 DefinePermissionSet,
        22 SetRVA,
        23 GetTokenFromSig,
        24 DefineModuleRef,
        25 SetParent,
        26 GetTokenFromTypeSpec,
        27 SaveToMemory,
        28 DefineUserString,
        29 DeleteToken,
        30 SetMethodProps,
        31 SetTypeDefProps,
        32 SetEventProps,
        33 SetPermissionSetProps,
        34 DefinePinvokeMap,
        35 SetPinvokeMap,
        36 DeletePinvokeMap,
        37 DefineCustomAttribute,
        38 SetCustomAttributeValue,
        39 DefineField,
        40 DefineProperty,
        41 DefineParam,
        42 SetFieldProps,
        43 SetPropertyProps,
        44 SetParamProps,
        45 DefineSecurityAttributeSet,
        46 ApplyEditAndContinue,
        47 TranslateSigWithScope,
        48 SetMethodImplFlags,
        49 SetFieldRVA,
        50 Merge,
        51 MergeEnd,
    ]);
}

#[test]
fn vtbl_IMetaDataAssemblyImport() {
    check_vtbl!(IMetaDataAssemblyImportVtbl : IUnknownVtbl, total = 17, [
        3 GetAssemblyProps,
        4 GetAssemblyRefProps,
        5 GetFileProps,
        6 GetExportedTypeProps,
        7 GetManifestResourceProps,
        8 EnumAssemblyRefs,
        9 EnumFiles,
        10 EnumExportedTypes,
        11 EnumManifestResources,
        12 GetAssemblyFromScope,
        13 FindExportedTypeByName,
        14 FindManifestResourceByName,
        15 CloseEnum,
        16 FindAssembliesByName,
    ]);
}

#[test]
fn nested_base_chain_ICorProfilerCallback11() {
    check_nested! { ICorProfilerCallback11Vtbl;
        97 LoadAsNotificationOnly;
        95 base.EventPipeEventDelivered;
        96 base.EventPipeProviderCreated;
        94 base.base.DynamicMethodUnloaded;
        92 base.base.base.DynamicMethodJITCompilationStarted;
        93 base.base.base.DynamicMethodJITCompilationFinished;
        91 base.base.base.base.ModuleInMemorySymbolsUpdated;
        90 base.base.base.base.base.GetAssemblyReferences;
        89 base.base.base.base.base.base.ConditionalWeakTableElementReferences;
        83 base.base.base.base.base.base.base.ReJITCompilationStarted;
        84 base.base.base.base.base.base.base.GetReJITParameters;
        85 base.base.base.base.base.base.base.ReJITCompilationFinished;
        86 base.base.base.base.base.base.base.ReJITError;
        87 base.base.base.base.base.base.base.MovedReferences2;
        88 base.base.base.base.base.base.base.SurvivingReferences2;
        80 base.base.base.base.base.base.base.base.InitializeForAttach;
        81 base.base.base.base.base.base.base.base.ProfilerAttachComplete;
        82 base.base.base.base.base.base.base.base.ProfilerDetachSucceeded;
        72 base.base.base.base.base.base.base.base.base.ThreadNameChanged;
        73 base.base.base.base.base.base.base.base.base.GarbageCollectionStarted;
        74 base.base.base.base.base.base.base.base.base.SurvivingReferences;
        75 base.base.base.base.base.base.base.base.base.GarbageCollectionFinished;
        76 base.base.base.base.base.base.base.base.base.FinalizeableObjectQueued;
        77 base.base.base.base.base.base.base.base.base.RootReferences2;
        78 base.base.base.base.base.base.base.base.base.HandleCreated;
        79 base.base.base.base.base.base.base.base.base.HandleDestroyed;
        3 base.base.base.base.base.base.base.base.base.base.Initialize;
        4 base.base.base.base.base.base.base.base.base.base.Shutdown;
        5 base.base.base.base.base.base.base.base.base.base.AppDomainCreationStarted;
        6 base.base.base.base.base.base.base.base.base.base.AppDomainCreationFinished;
        7 base.base.base.base.base.base.base.base.base.base.AppDomainShutdownStarted;
        8 base.base.base.base.base.base.base.base.base.base.AppDomainShutdownFinished;
        9 base.base.base.base.base.base.base.base.base.base.AssemblyLoadStarted;
        10 base.base.base.base.base.base.base.base.base.base.AssemblyLoadFinished;
        11 base.base.base.base.base.base.base.base.base.base.AssemblyUnloadStarted;
        12 base.base.base.base.base.base.base.base.base.base.AssemblyUnloadFinished;
        13 base.base.base.base.base.base.base.base.base.base.ModuleLoadStarted;
        14 base.base.base.base.base.base.base.base.base.base.ModuleLoadFinished;
        15 base.base.base.base.base.base.base.base.base.base.ModuleUnloadStarted;
        16 base.base.base.base.base.base.base.base.base.base.ModuleUnloadFinished;
        17 base.base.base.base.base.base.base.base.base.base.ModuleAttachedToAssembly;
        18 base.base.base.base.base.base.base.base.base.base.ClassLoadStarted;
        19 base.base.base.base.base.base.base.base.base.base.ClassLoadFinished;
        20 base.base.base.base.base.base.base.base.base.base.ClassUnloadStarted;
        21 base.base.base.base.base.base.base.base.base.base.ClassUnloadFinished;
        22 base.base.base.base.base.base.base.base.base.base.FunctionUnloadStarted;
        23 base.base.base.base.base.base.base.base.base.base.JITCompilationStarted;
        24 base.base.base.base.base.base.base.base.base.base.JITCompilationFinished;
        25 base.base.base.base.base.base.base.base.base.base.JITCachedFunctionSearchStarted;
        26 base.base.base.base.base.base.base.base.base.base.JITCachedFunctionSearchFinished;
        27 base.base.base.base.base.base.base.base.base.base.JITFunctionPitched;
        28 base.base.base.base.base.base.base.base.base.base.JITInlining;
        29 base.base.base.base.base.base.base.base.base.base.ThreadCreated;
        30 base.base.base.base.base.base.base.base.base.base.ThreadDestroyed;
        31 base.base.base.base.base.base.base.base.base.base.ThreadAssignedToOSThread;
        32 base.base.base.base.base.base.base.base.base.base.RemotingClientInvocationStarted;
        33 base.base.base.base.base.base.base.base.base.base.RemotingClientSendingMessage;
        34 base.base.base.base.base.base.base.base.base.base.RemotingClientReceivingReply;
        35 base.base.base.base.base.base.base.base.base.base.RemotingClientInvocationFinished;
        36 base.base.base.base.base.base.base.base.base.base.RemotingServerReceivingMessage;
        37 base.base.base.base.base.base.base.base.base.base.RemotingServerInvocationStarted;
        38 base.base.base.base.base.base.base.base.base.base.RemotingServerInvocationReturned;
        39 base.base.base.base.base.base.base.base.base.base.RemotingServerSendingReply;
        40 base.base.base.base.base.base.base.base.base.base.UnmanagedToManagedTransition;
        41 base.base.base.base.base.base.base.base.base.base.ManagedToUnmanagedTransition;
        42 base.base.base.base.base.base.base.base.base.base.RuntimeSuspendStarted;
        43 base.base.base.base.base.base.base.base.base.base.RuntimeSuspendFinished;
        44 base.base.base.base.base.base.base.base.base.base.RuntimeSuspendAborted;
        45 base.base.base.base.base.base.base.base.base.base.RuntimeResumeStarted;
        46 base.base.base.base.base.base.base.base.base.base.RuntimeResumeFinished;
        47 base.base.base.base.base.base.base.base.base.base.RuntimeThreadSuspended;
        48 base.base.base.base.base.base.base.base.base.base.RuntimeThreadResumed;
        49 base.base.base.base.base.base.base.base.base.base.MovedReferences;
        50 base.base.base.base.base.base.base.base.base.base.ObjectAllocated;
        51 base.base.base.base.base.base.base.base.base.base.ObjectsAllocatedByClass;
        52 base.base.base.base.base.base.base.base.base.base.ObjectReferences;
        53 base.base.base.base.base.base.base.base.base.base.RootReferences;
        54 base.base.base.base.base.base.base.base.base.base.ExceptionThrown;
        55 base.base.base.base.base.base.base.base.base.base.ExceptionSearchFunctionEnter;
        56 base.base.base.base.base.base.base.base.base.base.ExceptionSearchFunctionLeave;
        57 base.base.base.base.base.base.base.base.base.base.ExceptionSearchFilterEnter;
        58 base.base.base.base.base.base.base.base.base.base.ExceptionSearchFilterLeave;
        59 base.base.base.base.base.base.base.base.base.base.ExceptionSearchCatcherFound;
        60 base.base.base.base.base.base.base.base.base.base.ExceptionOSHandlerEnter;
        61 base.base.base.base.base.base.base.base.base.base.ExceptionOSHandlerLeave;
        62 base.base.base.base.base.base.base.base.base.base.ExceptionUnwindFunctionEnter;
        63 base.base.base.base.base.base.base.base.base.base.ExceptionUnwindFunctionLeave;
        64 base.base.base.base.base.base.base.base.base.base.ExceptionUnwindFinallyEnter;
        65 base.base.base.base.base.base.base.base.base.base.ExceptionUnwindFinallyLeave;
        66 base.base.base.base.base.base.base.base.base.base.ExceptionCatcherEnter;
        67 base.base.base.base.base.base.base.base.base.base.ExceptionCatcherLeave;
        68 base.base.base.base.base.base.base.base.base.base.COMClassicVTableCreated;
        69 base.base.base.base.base.base.base.base.base.base.COMClassicVTableDestroyed;
        70 base.base.base.base.base.base.base.base.base.base.ExceptionCLRCatcherFound;
        71 base.base.base.base.base.base.base.base.base.base.ExceptionCLRCatcherExecute;
        0 base.base.base.base.base.base.base.base.base.base.base.QueryInterface;
        1 base.base.base.base.base.base.base.base.base.base.base.AddRef;
        2 base.base.base.base.base.base.base.base.base.base.base.Release;
    }
}

#[test]
fn nested_base_chain_ICorProfilerInfo15() {
    check_nested! { ICorProfilerInfo15Vtbl;
        114 EnumerateGCHeapObjects;
        111 base.EnumerateNonGCObjects;
        112 base.GetNonGCHeapBounds;
        113 base.EventPipeCreateProvider2;
        108 base.base.CreateHandle;
        109 base.base.DestroyHandle;
        110 base.base.GetObjectIDFromHandle;
        101 base.base.base.EventPipeStartSession;
        102 base.base.base.EventPipeAddProviderToSession;
        103 base.base.base.EventPipeStopSession;
        104 base.base.base.EventPipeCreateProvider;
        105 base.base.base.EventPipeGetProviderInfo;
        106 base.base.base.EventPipeDefineEvent;
        107 base.base.base.EventPipeWriteEvent;
        99 base.base.base.base.GetEnvironmentVariable;
        100 base.base.base.base.SetEnvironmentVariable;
        93 base.base.base.base.base.EnumerateObjectReferences;
        94 base.base.base.base.base.IsFrozenObject;
        95 base.base.base.base.base.GetLOHObjectSizeThreshold;
        96 base.base.base.base.base.RequestReJITWithInliners;
        97 base.base.base.base.base.SuspendRuntime;
        98 base.base.base.base.base.ResumeRuntime;
        90 base.base.base.base.base.base.GetNativeCodeStartAddresses;
        91 base.base.base.base.base.base.GetILToNativeMapping3;
        92 base.base.base.base.base.base.GetCodeInfo4;
        87 base.base.base.base.base.base.base.IsFunctionDynamic;
        88 base.base.base.base.base.base.base.GetFunctionFromIP3;
        89 base.base.base.base.base.base.base.GetDynamicFunctionInfo;
        84 base.base.base.base.base.base.base.base.ApplyMetaData;
        85 base.base.base.base.base.base.base.base.GetInMemorySymbolsLength;
        86 base.base.base.base.base.base.base.base.ReadInMemorySymbols;
        83 base.base.base.base.base.base.base.base.base.EnumNgenModuleMethodsInliningThisMethod;
        81 base.base.base.base.base.base.base.base.base.base.GetEventMask2;
        82 base.base.base.base.base.base.base.base.base.base.SetEventMask2;
        71 base.base.base.base.base.base.base.base.base.base.base.EnumThreads;
        72 base.base.base.base.base.base.base.base.base.base.base.InitializeCurrentThread;
        73 base.base.base.base.base.base.base.base.base.base.base.RequestReJIT;
        74 base.base.base.base.base.base.base.base.base.base.base.RequestRevert;
        75 base.base.base.base.base.base.base.base.base.base.base.GetCodeInfo3;
        76 base.base.base.base.base.base.base.base.base.base.base.GetFunctionFromIP2;
        77 base.base.base.base.base.base.base.base.base.base.base.GetReJITIDs;
        78 base.base.base.base.base.base.base.base.base.base.base.GetILToNativeMapping2;
        79 base.base.base.base.base.base.base.base.base.base.base.EnumJITedFunctions2;
        80 base.base.base.base.base.base.base.base.base.base.base.GetObjectSize2;
        57 base.base.base.base.base.base.base.base.base.base.base.base.EnumJITedFunctions;
        58 base.base.base.base.base.base.base.base.base.base.base.base.RequestProfilerDetach;
        59 base.base.base.base.base.base.base.base.base.base.base.base.SetFunctionIDMapper2;
        60 base.base.base.base.base.base.base.base.base.base.base.base.GetStringLayout2;
        61 base.base.base.base.base.base.base.base.base.base.base.base.SetEnterLeaveFunctionHooks3;
        62 base.base.base.base.base.base.base.base.base.base.base.base.SetEnterLeaveFunctionHooks3WithInfo;
        63 base.base.base.base.base.base.base.base.base.base.base.base.GetFunctionEnter3Info;
        64 base.base.base.base.base.base.base.base.base.base.base.base.GetFunctionLeave3Info;
        65 base.base.base.base.base.base.base.base.base.base.base.base.GetFunctionTailcall3Info;
        66 base.base.base.base.base.base.base.base.base.base.base.base.EnumModules;
        67 base.base.base.base.base.base.base.base.base.base.base.base.GetRuntimeInformation;
        68 base.base.base.base.base.base.base.base.base.base.base.base.GetThreadStaticAddress2;
        69 base.base.base.base.base.base.base.base.base.base.base.base.GetAppDomainsContainingModule;
        70 base.base.base.base.base.base.base.base.base.base.base.base.GetModuleInfo2;
        36 base.base.base.base.base.base.base.base.base.base.base.base.base.DoStackSnapshot;
        37 base.base.base.base.base.base.base.base.base.base.base.base.base.SetEnterLeaveFunctionHooks2;
        38 base.base.base.base.base.base.base.base.base.base.base.base.base.GetFunctionInfo2;
        39 base.base.base.base.base.base.base.base.base.base.base.base.base.GetStringLayout;
        40 base.base.base.base.base.base.base.base.base.base.base.base.base.GetClassLayout;
        41 base.base.base.base.base.base.base.base.base.base.base.base.base.GetClassIDInfo2;
        42 base.base.base.base.base.base.base.base.base.base.base.base.base.GetCodeInfo2;
        43 base.base.base.base.base.base.base.base.base.base.base.base.base.GetClassFromTokenAndTypeArgs;
        44 base.base.base.base.base.base.base.base.base.base.base.base.base.GetFunctionFromTokenAndTypeArgs;
        45 base.base.base.base.base.base.base.base.base.base.base.base.base.EnumModuleFrozenObjects;
        46 base.base.base.base.base.base.base.base.base.base.base.base.base.GetArrayObjectInfo;
        47 base.base.base.base.base.base.base.base.base.base.base.base.base.GetBoxClassLayout;
        48 base.base.base.base.base.base.base.base.base.base.base.base.base.GetThreadAppDomain;
        49 base.base.base.base.base.base.base.base.base.base.base.base.base.GetRVAStaticAddress;
        50 base.base.base.base.base.base.base.base.base.base.base.base.base.GetAppDomainStaticAddress;
        51 base.base.base.base.base.base.base.base.base.base.base.base.base.GetThreadStaticAddress;
        52 base.base.base.base.base.base.base.base.base.base.base.base.base.GetContextStaticAddress;
        53 base.base.base.base.base.base.base.base.base.base.base.base.base.GetStaticFieldInfo;
        54 base.base.base.base.base.base.base.base.base.base.base.base.base.GetGenerationBounds;
        55 base.base.base.base.base.base.base.base.base.base.base.base.base.GetObjectGeneration;
        56 base.base.base.base.base.base.base.base.base.base.base.base.base.GetNotifiedExceptionClauseInfo;
        3 base.base.base.base.base.base.base.base.base.base.base.base.base.base.GetClassFromObject;
        4 base.base.base.base.base.base.base.base.base.base.base.base.base.base.GetClassFromToken;
        5 base.base.base.base.base.base.base.base.base.base.base.base.base.base.GetCodeInfo;
        6 base.base.base.base.base.base.base.base.base.base.base.base.base.base.GetEventMask;
        7 base.base.base.base.base.base.base.base.base.base.base.base.base.base.GetFunctionFromIP;
        8 base.base.base.base.base.base.base.base.base.base.base.base.base.base.GetFunctionFromToken;
        9 base.base.base.base.base.base.base.base.base.base.base.base.base.base.GetHandleFromThread;
        10 base.base.base.base.base.base.base.base.base.base.base.base.base.base.GetObjectSize;
        11 base.base.base.base.base.base.base.base.base.base.base.base.base.base.IsArrayClass;
        12 base.base.base.base.base.base.base.base.base.base.base.base.base.base.GetThreadInfo;
        13 base.base.base.base.base.base.base.base.base.base.base.base.base.base.GetCurrentThreadID;
        14 base.base.base.base.base.base.base.base.base.base.base.base.base.base.GetClassIDInfo;
        15 base.base.base.base.base.base.base.base.base.base.base.base.base.base.GetFunctionInfo;
        16 base.base.base.base.base.base.base.base.base.base.base.base.base.base.SetEventMask;
        17 base.base.base.base.base.base.base.base.base.base.base.base.base.base.SetEnterLeaveFunctionHooks;
        18 base.base.base.base.base.base.base.base.base.base.base.base.base.base.SetFunctionIDMapper;
        19 base.base.base.base.base.base.base.base.base.base.base.base.base.base.GetTokenAndMetaDataFromFunction;
        20 base.base.base.base.base.base.base.base.base.base.base.base.base.base.GetModuleInfo;
        21 base.base.base.base.base.base.base.base.base.base.base.base.base.base.GetModuleMetaData;
        22 base.base.base.base.base.base.base.base.base.base.base.base.base.base.GetILFunctionBody;
        23 base.base.base.base.base.base.base.base.base.base.base.base.base.base.GetILFunctionBodyAllocator;
        24 base.base.base.base.base.base.base.base.base.base.base.base.base.base.SetILFunctionBody;
        25 base.base.base.base.base.base.base.base.base.base.base.base.base.base.GetAppDomainInfo;
        26 base.base.base.base.base.base.base.base.base.base.base.base.base.base.GetAssemblyInfo;
        27 base.base.base.base.base.base.base.base.base.base.base.base.base.base.SetFunctionReJIT;
        28 base.base.base.base.base.base.base.base.base.base.base.base.base.base.ForceGC;
        29 base.base.base.base.base.base.base.base.base.base.base.base.base.base.SetILInstrumentedCodeMap;
        30 base.base.base.base.base.base.base.base.base.base.base.base.base.base.GetInprocInspectionInterface;
        31 base.base.base.base.base.base.base.base.base.base.base.base.base.base.GetInprocInspectionIThisThread;
        32 base.base.base.base.base.base.base.base.base.base.base.base.base.base.GetThreadContext;
        33 base.base.base.base.base.base.base.base.base.base.base.base.base.base.BeginInprocDebugging;
        34 base.base.base.base.base.base.base.base.base.base.base.base.base.base.EndInprocDebugging;
        35 base.base.base.base.base.base.base.base.base.base.base.base.base.base.GetILToNativeMapping;
        0 base.base.base.base.base.base.base.base.base.base.base.base.base.base.base.QueryInterface;
        1 base.base.base.base.base.base.base.base.base.base.base.base.base.base.base.AddRef;
        2 base.base.base.base.base.base.base.base.base.base.base.base.base.base.base.Release;
    }
}

#[test]
fn nested_base_chain_IMetaDataImport2() {
    check_nested! { IMetaDataImport2Vtbl;
        65 EnumGenericParams;
        66 GetGenericParamProps;
        67 GetMethodSpecProps;
        68 EnumGenericParamConstraints;
        69 GetGenericParamConstraintProps;
        70 GetPEKind;
        71 GetVersionString;
        72 EnumMethodSpecs;
        3 base.CloseEnum;
        4 base.CountEnum;
        5 base.ResetEnum;
        6 base.EnumTypeDefs;
        7 base.EnumInterfaceImpls;
        8 base.EnumTypeRefs;
        9 base.FindTypeDefByName;
        10 base.GetScopeProps;
        11 base.GetModuleFromScope;
        12 base.GetTypeDefProps;
        13 base.GetInterfaceImplProps;
        14 base.GetTypeRefProps;
        15 base.ResolveTypeRef;
        16 base.EnumMembers;
        17 base.EnumMembersWithName;
        18 base.EnumMethods;
        19 base.EnumMethodsWithName;
        20 base.EnumFields;
        21 base.EnumFieldsWithName;
        22 base.EnumParams;
        23 base.EnumMemberRefs;
        24 base.EnumMethodImpls;
        25 base.EnumPermissionSets;
        26 base.FindMember;
        27 base.FindMethod;
        28 base.FindField;
        29 base.FindMemberRef;
        30 base.GetMethodProps;
        31 base.GetMemberRefProps;
        32 base.EnumProperties;
        33 base.EnumEvents;
        34 base.GetEventProps;
        35 base.EnumMethodSemantics;
        36 base.GetMethodSemantics;
        37 base.GetClassLayout;
        38 base.GetFieldMarshal;
        39 base.GetRVA;
        40 base.GetPermissionSetProps;
        41 base.GetSigFromToken;
        42 base.GetModuleRefProps;
        43 base.EnumModuleRefs;
        44 base.GetTypeSpecFromToken;
        45 base.GetNameFromToken;
        46 base.EnumUnresolvedMethods;
        47 base.GetUserString;
        48 base.GetPinvokeMap;
        49 base.EnumSignatures;
        50 base.EnumTypeSpecs;
        51 base.EnumUserStrings;
        52 base.GetParamForMethodIndex;
        53 base.EnumCustomAttributes;
        54 base.GetCustomAttributeProps;
        55 base.FindTypeRef;
        56 base.GetMemberProps;
        57 base.GetFieldProps;
        58 base.GetPropertyProps;
        59 base.GetParamProps;
        60 base.GetCustomAttributeByName;
        61 base.IsValidToken;
        62 base.GetNestedClassProps;
        63 base.GetNativeCallConvFromSig;
        64 base.IsGlobal;
        0 base.base.QueryInterface;
        1 base.base.AddRef;
        2 base.base.Release;
    }
}

#[test]
fn nested_base_chain_IMetaDataAssemblyImport() {
    check_nested! { IMetaDataAssemblyImportVtbl;
        3 GetAssemblyProps;
        4 GetAssemblyRefProps;
        5 GetFileProps;
        6 GetExportedTypeProps;
        7 GetManifestResourceProps;
        8 EnumAssemblyRefs;
        9 EnumFiles;
        10 EnumExportedTypes;
        11 EnumManifestResources;
        12 GetAssemblyFromScope;
        13 FindExportedTypeByName;
        14 FindManifestResourceByName;
        15 CloseEnum;
        16 FindAssembliesByName;
        0 base.QueryInterface;
        1 base.AddRef;
        2 base.Release;
    }
}

#[test]
fn nested_base_chain_IClassFactory() {
    check_nested! { IClassFactoryVtbl;
        3 CreateInstance;
        4 LockServer;
        0 base.QueryInterface;
        1 base.AddRef;
        2 base.Release;
    }
}

#[test]
fn iids_match_idl_strings() {
    let cases: &[(GUID, &str)] = &[
        (IID_IUnknown, "{00000000-0000-0000-C000-000000000046}"),
        (IID_IClassFactory, "{00000001-0000-0000-C000-000000000046}"),
        (
            IID_ICorProfilerCallback,
            "{176FBED1-A55C-4796-98CA-A9DA0EF883E7}",
        ),
        (
            IID_ICorProfilerCallback2,
            "{8A8CC829-CCF2-49fe-BBAE-0F022228071A}",
        ),
        (
            IID_ICorProfilerCallback3,
            "{4FD2ED52-7731-4b8d-9469-03D2CC3086C5}",
        ),
        (
            IID_ICorProfilerCallback4,
            "{7B63B2E3-107D-4d48-B2F6-F61E229470D2}",
        ),
        (
            IID_ICorProfilerCallback5,
            "{8DFBA405-8C9F-45F8-BFFA-83B14CEF78B5}",
        ),
        (
            IID_ICorProfilerCallback6,
            "{FC13DF4B-4448-4F4F-950C-BA8D19D00C36}",
        ),
        (
            IID_ICorProfilerCallback7,
            "{F76A2DBA-1D52-4539-866C-2AA518F9EFC3}",
        ),
        (
            IID_ICorProfilerCallback8,
            "{5BED9B15-C079-4D47-BFE2-215A140C07E0}",
        ),
        (
            IID_ICorProfilerCallback9,
            "{27583EC3-C8F5-482F-8052-194B8CE4705A}",
        ),
        (
            IID_ICorProfilerCallback10,
            "{CEC5B60E-C69C-495F-87F6-84D28EE16FFB}",
        ),
        (
            IID_ICorProfilerCallback11,
            "{42350846-AAED-47F7-B128-FD0C98881CDE}",
        ),
        (
            IID_ICorProfilerInfo,
            "{28B5557D-3F3F-48b4-90B2-5F9EEA2F6C48}",
        ),
        (
            IID_ICorProfilerInfo2,
            "{CC0935CD-A518-487d-B0BB-A93214E65478}",
        ),
        (
            IID_ICorProfilerInfo3,
            "{B555ED4F-452A-4E54-8B39-B5360BAD32A0}",
        ),
        (
            IID_ICorProfilerObjectEnum,
            "{2C6269BD-2D13-4321-AE12-6686365FD6AF}",
        ),
        (
            IID_ICorProfilerFunctionEnum,
            "{FF71301A-B994-429D-A10B-B345A65280EF}",
        ),
        (
            IID_ICorProfilerModuleEnum,
            "{b0266d75-2081-4493-af7f-028ba34db891}",
        ),
        (IID_IMethodMalloc, "{A0EFB28B-6EE2-4d7b-B983-A75EF7BEEDB8}"),
        (
            IID_ICorProfilerFunctionControl,
            "{F0963021-E1EA-4732-8581-E01B0BD3C0C6}",
        ),
        (
            IID_ICorProfilerInfo4,
            "{0d8fdcaa-6257-47bf-b1bf-94dac88466ee}",
        ),
        (
            IID_ICorProfilerInfo5,
            "{07602928-CE38-4B83-81E7-74ADAF781214}",
        ),
        (
            IID_ICorProfilerInfo6,
            "{F30A070D-BFFB-46A7-B1D8-8781EF7B698A}",
        ),
        (
            IID_ICorProfilerInfo7,
            "{9AEECC0D-63E0-4187-8C00-E312F503F663}",
        ),
        (
            IID_ICorProfilerInfo8,
            "{C5AC80A6-782E-4716-8044-39598C60CFBF}",
        ),
        (
            IID_ICorProfilerInfo9,
            "{008170DB-F8CC-4796-9A51-DC8AA0B47012}",
        ),
        (
            IID_ICorProfilerInfo10,
            "{2F1B5152-C869-40C9-AA5F-3ABE026BD720}",
        ),
        (
            IID_ICorProfilerInfo11,
            "{06398876-8987-4154-B621-40A00D6E4D04}",
        ),
        (
            IID_ICorProfilerInfo12,
            "{27b24ccd-1cb1-47c5-96ee-98190dc30959}",
        ),
        (
            IID_ICorProfilerInfo13,
            "{6E6C7EE2-0701-4EC2-9D29-2E8733B66934}",
        ),
        (
            IID_ICorProfilerInfo14,
            "{F460E352-D76D-4FE9-835F-F6AF9D6E862D}",
        ),
        (
            IID_ICorProfilerInfo15,
            "{B446462D-BD22-41DD-872D-DC714C49EB56}",
        ),
        (
            IID_ICorProfilerMethodEnum,
            "{FCCEE788-0088-454B-A811-C99F298D1942}",
        ),
        (
            IID_ICorProfilerThreadEnum,
            "{571194f7-25ed-419f-aa8b-7016b3159701}",
        ),
        (
            IID_ICorProfilerAssemblyReferenceProvider,
            "{66A78C24-2EEF-4F65-B45F-DD1D8038BF3C}",
        ),
        (
            IID_IMetaDataImport,
            "{7DAC8207-D3AE-4C75-9B67-92801A497D44}",
        ),
        (
            IID_IMetaDataImport2,
            "{FCE5EFA0-8BBA-4F8E-A036-8F2022B08466}",
        ),
        (
            IID_IMetaDataAssemblyImport,
            "{EE62470B-E94B-424E-9B7C-2F00C9249F93}",
        ),
    ];
    for (iid, text) in cases {
        assert_eq!(Some(*iid), GUID::parse(text), "{text}");
        assert_eq!(iid.to_string(), text.to_ascii_uppercase(), "{text}");
    }
}

#[test]
fn interface_trait_consts() {
    assert_eq!(<IUnknown as Interface>::IID, IID_IUnknown);
    assert_eq!(<IUnknown as Interface>::NAME, "IUnknown");
    assert_eq!(<IClassFactory as Interface>::IID, IID_IClassFactory);
    assert_eq!(<IClassFactory as Interface>::NAME, "IClassFactory");
    assert_eq!(
        <ICorProfilerCallback as Interface>::IID,
        IID_ICorProfilerCallback
    );
    assert_eq!(
        <ICorProfilerCallback as Interface>::NAME,
        "ICorProfilerCallback"
    );
    assert_eq!(
        <ICorProfilerCallback2 as Interface>::IID,
        IID_ICorProfilerCallback2
    );
    assert_eq!(
        <ICorProfilerCallback2 as Interface>::NAME,
        "ICorProfilerCallback2"
    );
    assert_eq!(
        <ICorProfilerCallback3 as Interface>::IID,
        IID_ICorProfilerCallback3
    );
    assert_eq!(
        <ICorProfilerCallback3 as Interface>::NAME,
        "ICorProfilerCallback3"
    );
    assert_eq!(
        <ICorProfilerCallback4 as Interface>::IID,
        IID_ICorProfilerCallback4
    );
    assert_eq!(
        <ICorProfilerCallback4 as Interface>::NAME,
        "ICorProfilerCallback4"
    );
    assert_eq!(
        <ICorProfilerCallback5 as Interface>::IID,
        IID_ICorProfilerCallback5
    );
    assert_eq!(
        <ICorProfilerCallback5 as Interface>::NAME,
        "ICorProfilerCallback5"
    );
    assert_eq!(
        <ICorProfilerCallback6 as Interface>::IID,
        IID_ICorProfilerCallback6
    );
    assert_eq!(
        <ICorProfilerCallback6 as Interface>::NAME,
        "ICorProfilerCallback6"
    );
    assert_eq!(
        <ICorProfilerCallback7 as Interface>::IID,
        IID_ICorProfilerCallback7
    );
    assert_eq!(
        <ICorProfilerCallback7 as Interface>::NAME,
        "ICorProfilerCallback7"
    );
    assert_eq!(
        <ICorProfilerCallback8 as Interface>::IID,
        IID_ICorProfilerCallback8
    );
    assert_eq!(
        <ICorProfilerCallback8 as Interface>::NAME,
        "ICorProfilerCallback8"
    );
    assert_eq!(
        <ICorProfilerCallback9 as Interface>::IID,
        IID_ICorProfilerCallback9
    );
    assert_eq!(
        <ICorProfilerCallback9 as Interface>::NAME,
        "ICorProfilerCallback9"
    );
    assert_eq!(
        <ICorProfilerCallback10 as Interface>::IID,
        IID_ICorProfilerCallback10
    );
    assert_eq!(
        <ICorProfilerCallback10 as Interface>::NAME,
        "ICorProfilerCallback10"
    );
    assert_eq!(
        <ICorProfilerCallback11 as Interface>::IID,
        IID_ICorProfilerCallback11
    );
    assert_eq!(
        <ICorProfilerCallback11 as Interface>::NAME,
        "ICorProfilerCallback11"
    );
    assert_eq!(<ICorProfilerInfo as Interface>::IID, IID_ICorProfilerInfo);
    assert_eq!(<ICorProfilerInfo as Interface>::NAME, "ICorProfilerInfo");
    assert_eq!(<ICorProfilerInfo2 as Interface>::IID, IID_ICorProfilerInfo2);
    assert_eq!(<ICorProfilerInfo2 as Interface>::NAME, "ICorProfilerInfo2");
    assert_eq!(<ICorProfilerInfo3 as Interface>::IID, IID_ICorProfilerInfo3);
    assert_eq!(<ICorProfilerInfo3 as Interface>::NAME, "ICorProfilerInfo3");
    assert_eq!(
        <ICorProfilerObjectEnum as Interface>::IID,
        IID_ICorProfilerObjectEnum
    );
    assert_eq!(
        <ICorProfilerObjectEnum as Interface>::NAME,
        "ICorProfilerObjectEnum"
    );
    assert_eq!(
        <ICorProfilerFunctionEnum as Interface>::IID,
        IID_ICorProfilerFunctionEnum
    );
    assert_eq!(
        <ICorProfilerFunctionEnum as Interface>::NAME,
        "ICorProfilerFunctionEnum"
    );
    assert_eq!(
        <ICorProfilerModuleEnum as Interface>::IID,
        IID_ICorProfilerModuleEnum
    );
    assert_eq!(
        <ICorProfilerModuleEnum as Interface>::NAME,
        "ICorProfilerModuleEnum"
    );
    assert_eq!(<IMethodMalloc as Interface>::IID, IID_IMethodMalloc);
    assert_eq!(<IMethodMalloc as Interface>::NAME, "IMethodMalloc");
    assert_eq!(
        <ICorProfilerFunctionControl as Interface>::IID,
        IID_ICorProfilerFunctionControl
    );
    assert_eq!(
        <ICorProfilerFunctionControl as Interface>::NAME,
        "ICorProfilerFunctionControl"
    );
    assert_eq!(<ICorProfilerInfo4 as Interface>::IID, IID_ICorProfilerInfo4);
    assert_eq!(<ICorProfilerInfo4 as Interface>::NAME, "ICorProfilerInfo4");
    assert_eq!(<ICorProfilerInfo5 as Interface>::IID, IID_ICorProfilerInfo5);
    assert_eq!(<ICorProfilerInfo5 as Interface>::NAME, "ICorProfilerInfo5");
    assert_eq!(<ICorProfilerInfo6 as Interface>::IID, IID_ICorProfilerInfo6);
    assert_eq!(<ICorProfilerInfo6 as Interface>::NAME, "ICorProfilerInfo6");
    assert_eq!(<ICorProfilerInfo7 as Interface>::IID, IID_ICorProfilerInfo7);
    assert_eq!(<ICorProfilerInfo7 as Interface>::NAME, "ICorProfilerInfo7");
    assert_eq!(<ICorProfilerInfo8 as Interface>::IID, IID_ICorProfilerInfo8);
    assert_eq!(<ICorProfilerInfo8 as Interface>::NAME, "ICorProfilerInfo8");
    assert_eq!(<ICorProfilerInfo9 as Interface>::IID, IID_ICorProfilerInfo9);
    assert_eq!(<ICorProfilerInfo9 as Interface>::NAME, "ICorProfilerInfo9");
    assert_eq!(
        <ICorProfilerInfo10 as Interface>::IID,
        IID_ICorProfilerInfo10
    );
    assert_eq!(
        <ICorProfilerInfo10 as Interface>::NAME,
        "ICorProfilerInfo10"
    );
    assert_eq!(
        <ICorProfilerInfo11 as Interface>::IID,
        IID_ICorProfilerInfo11
    );
    assert_eq!(
        <ICorProfilerInfo11 as Interface>::NAME,
        "ICorProfilerInfo11"
    );
    assert_eq!(
        <ICorProfilerInfo12 as Interface>::IID,
        IID_ICorProfilerInfo12
    );
    assert_eq!(
        <ICorProfilerInfo12 as Interface>::NAME,
        "ICorProfilerInfo12"
    );
    assert_eq!(
        <ICorProfilerInfo13 as Interface>::IID,
        IID_ICorProfilerInfo13
    );
    assert_eq!(
        <ICorProfilerInfo13 as Interface>::NAME,
        "ICorProfilerInfo13"
    );
    assert_eq!(
        <ICorProfilerInfo14 as Interface>::IID,
        IID_ICorProfilerInfo14
    );
    assert_eq!(
        <ICorProfilerInfo14 as Interface>::NAME,
        "ICorProfilerInfo14"
    );
    assert_eq!(
        <ICorProfilerInfo15 as Interface>::IID,
        IID_ICorProfilerInfo15
    );
    assert_eq!(
        <ICorProfilerInfo15 as Interface>::NAME,
        "ICorProfilerInfo15"
    );
    assert_eq!(
        <ICorProfilerMethodEnum as Interface>::IID,
        IID_ICorProfilerMethodEnum
    );
    assert_eq!(
        <ICorProfilerMethodEnum as Interface>::NAME,
        "ICorProfilerMethodEnum"
    );
    assert_eq!(
        <ICorProfilerThreadEnum as Interface>::IID,
        IID_ICorProfilerThreadEnum
    );
    assert_eq!(
        <ICorProfilerThreadEnum as Interface>::NAME,
        "ICorProfilerThreadEnum"
    );
    assert_eq!(
        <ICorProfilerAssemblyReferenceProvider as Interface>::IID,
        IID_ICorProfilerAssemblyReferenceProvider
    );
    assert_eq!(
        <ICorProfilerAssemblyReferenceProvider as Interface>::NAME,
        "ICorProfilerAssemblyReferenceProvider"
    );
    assert_eq!(<IMetaDataImport as Interface>::IID, IID_IMetaDataImport);
    assert_eq!(<IMetaDataImport as Interface>::NAME, "IMetaDataImport");
    assert_eq!(<IMetaDataImport2 as Interface>::IID, IID_IMetaDataImport2);
    assert_eq!(<IMetaDataImport2 as Interface>::NAME, "IMetaDataImport2");
    assert_eq!(
        <IMetaDataAssemblyImport as Interface>::IID,
        IID_IMetaDataAssemblyImport
    );
    assert_eq!(
        <IMetaDataAssemblyImport as Interface>::NAME,
        "IMetaDataAssemblyImport"
    );
}

/// Compile-time spot checks of exact method signatures, including the `this` type (the
/// interface that introduced the method) and return types that are not `HRESULT`.
#[test]
fn signature_spot_checks() {
    use core::ffi::c_void;

    fn callback(v: &ICorProfilerCallback11Vtbl) {
        let c3 = &v.base.base.base.base.base.base.base.base;
        let c1 = &c3.base.base;
        let _: unsafe extern "system" fn(*mut ICorProfilerCallback, *mut IUnknown) -> HRESULT =
            c1.Initialize;
        let _: unsafe extern "system" fn(
            *mut ICorProfilerCallback,
            ULONG,
            *mut ClassID,
            *mut ULONG,
        ) -> HRESULT = c1.ObjectsAllocatedByClass;
        let _: unsafe extern "system" fn(*mut ICorProfilerCallback, FunctionID, BOOL) -> HRESULT =
            c1.JITCompilationStarted;
        let _: unsafe extern "system" fn(
            *mut ICorProfilerCallback3,
            *mut IUnknown,
            *mut c_void,
            UINT,
        ) -> HRESULT = c3.InitializeForAttach;
        let _: unsafe extern "system" fn(*mut ICorProfilerCallback11, *mut BOOL) -> HRESULT =
            v.LoadAsNotificationOnly;
    }
    fn info(v: &ICorProfilerInfo15Vtbl) {
        let i5 = &v.base.base.base.base.base.base.base.base.base.base;
        let i3 = &i5.base.base;
        let _: unsafe extern "system" fn(
            *mut ICorProfilerInfo3,
            Option<FunctionEnter3>,
            Option<FunctionLeave3>,
            Option<FunctionTailcall3>,
        ) -> HRESULT = i3.SetEnterLeaveFunctionHooks3;
        let _: unsafe extern "system" fn(
            *mut ICorProfilerInfo2,
            FunctionID,
            COR_PRF_FRAME_INFO,
            *mut ClassID,
            *mut ModuleID,
            *mut mdToken,
            ULONG32,
            *mut ULONG32,
            *mut ClassID,
        ) -> HRESULT = i3.base.GetFunctionInfo2;
        let _: unsafe extern "system" fn(*mut ICorProfilerInfo5, DWORD, DWORD) -> HRESULT =
            i5.SetEventMask2;
        let _: unsafe extern "system" fn(
            *mut ICorProfilerInfo15,
            Option<ObjectCallback>,
            *mut c_void,
        ) -> HRESULT = v.EnumerateGCHeapObjects;
    }
    fn metadata(v: &IMetaDataImport2Vtbl) {
        let _: unsafe extern "system" fn(*mut IMetaDataImport, HCORENUM) = v.base.CloseEnum;
        let _: unsafe extern "system" fn(*mut IMetaDataImport, mdToken) -> BOOL =
            v.base.IsValidToken;
        let _: unsafe extern "system" fn(*mut IMetaDataImport2, *mut DWORD, *mut DWORD) -> HRESULT =
            v.GetPEKind;
    }
    fn malloc(v: &IMethodMallocVtbl) {
        let _: unsafe extern "system" fn(*mut IMethodMalloc, ULONG) -> PVOID = v.Alloc;
    }
    let _ = (callback, info, metadata, malloc);
}
