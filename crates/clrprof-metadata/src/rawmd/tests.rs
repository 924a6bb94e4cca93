//! Against the real framework assemblies of the installed runtime (read from disk: the
//! flat layout). The agent's acceptance test (`names_from_images_match_the_runtime_importer`
//! in clrprof-cli's tests) checks every name against the runtime's own importer.

use super::*;
use crate::mdread::MetadataRead;

/// `shared/Microsoft.NETCore.App/<newest>/` of the `dotnet` on PATH (or DOTNET_ROOT).
fn framework_dir() -> std::path::PathBuf {
    let roots: Vec<std::path::PathBuf> = std::env::var_os("DOTNET_ROOT")
        .map(std::path::PathBuf::from)
        .into_iter()
        .chain(std::env::var_os("PATH").into_iter().flat_map(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join("dotnet"))
                .filter(|d| d.exists())
                .filter_map(|d| std::fs::canonicalize(d).ok())
                .filter_map(|d| d.parent().map(|p| p.to_path_buf()))
                .collect::<Vec<_>>()
        }))
        .chain([std::path::PathBuf::from("/usr/share/dotnet")])
        .collect();
    for root in roots {
        let shared = root.join("shared/Microsoft.NETCore.App");
        if let Ok(dirs) = std::fs::read_dir(&shared) {
            let mut versions: Vec<_> = dirs.filter_map(|d| d.ok()).map(|d| d.path()).collect();
            versions.sort();
            if let Some(v) = versions.pop() {
                return v;
            }
        }
    }
    panic!(
        "these tests read the installed .NET runtime's assemblies: no `dotnet` found (PATH, DOTNET_ROOT)"
    );
}

fn read_assembly(name: &str) -> Vec<u8> {
    let path = framework_dir().join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn metadata_of(file: &[u8]) -> RawMetadata<'_> {
    let read = |o: usize, n: usize| file.get(o..o.checked_add(n)?);
    let (at, size) = pe::locate(&read, true).expect("a managed image");
    RawMetadata::parse(&file[at..at + size]).expect("readable metadata")
}

fn type_def_named(md: &RawMetadata<'_>, full: &str) -> u32 {
    (1..=md.rows(schema::TYPE_DEF))
        .map(|r| 0x0200_0000 | r)
        .find(|&t| md.type_full_name(t) == full)
        .unwrap_or_else(|| panic!("no TypeDef {full}"))
}

#[test]
fn corelib_types_methods_and_nesting() {
    let file = read_assembly("System.Private.CoreLib.dll");
    let md = metadata_of(&file);
    assert!(md.rows(schema::TYPE_DEF) > 2000, "{}", md.summary());
    let string = type_def_named(&md, "System.String");
    let props = md.get_type_def_props(string).unwrap();
    assert_ne!(props.flags & 0x100, 0, "String is sealed");
    assert_eq!(md.token_name(props.extends), "System.Object");
    // Methods map back to their declaring type.
    let concat = (1..=md.rows(schema::METHOD_DEF))
        .map(|r| 0x0600_0000 | r)
        .filter(|&m| md.get_method_props(m).unwrap().name == "Concat")
        .map(|m| md.get_method_props(m).unwrap().class)
        .collect::<Vec<_>>();
    assert!(!concat.is_empty());
    assert!(concat.iter().all(|&c| c == string));
    assert_eq!(
        md.method_full_name(0x0600_0001).map(|n| n.contains('.')),
        Ok(true)
    );
    // A nested type, named through NestedClass.
    let e = type_def_named(&md, "System.Collections.Generic.Dictionary`2+Enumerator");
    let outer = md.get_nested_class_props(e).unwrap().unwrap();
    assert_eq!(
        md.type_full_name(outer),
        "System.Collections.Generic.Dictionary`2"
    );
    assert_eq!(md.get_nested_class_props(string), Ok(None));
}

#[test]
fn corelib_literal_fields_have_their_constants() {
    let file = read_assembly("System.Private.CoreLib.dll");
    let md = metadata_of(&file);
    let int32 = type_def_named(&md, "System.Int32");
    let max = (1..=md.rows(schema::FIELD))
        .map(|r| 0x0400_0000 | r)
        .map(|f| md.get_field_props(f).unwrap())
        .find(|f| f.class == int32 && f.name == "MaxValue")
        .expect("Int32.MaxValue");
    assert_eq!(max.constant_type, 0x08);
    assert_eq!(max.constant, Some(i64::from(i32::MAX)));
    assert!(crate::sig::parse_field(&max.sig).is_ok());
}

#[test]
fn references_to_other_assemblies_resolve_to_names() {
    let file = read_assembly("System.Text.Json.dll");
    let md = metadata_of(&file);
    let refs: Vec<String> = (1..=md.rows(schema::TYPE_REF))
        .map(|r| md.token_name(0x0100_0000 | r))
        .collect();
    assert!(refs.iter().any(|n| n == "System.Object"), "{refs:?}");
    // Every member reference gets a readable parent.
    for r in 1..=md.rows(schema::MEMBER_REF) {
        let name = md.token_name(0x0A00_0000 | r);
        assert!(!name.contains("token@"), "{name}");
    }
    // Every method's signature parses and formats without unresolved tokens.
    for r in 1..=md.rows(schema::METHOD_DEF) {
        let p = md.get_method_props(0x0600_0000 | r).unwrap();
        let sig = crate::sig::parse_method(&p.sig).expect("a method signature");
        let params = crate::sig::format_method_params(&sig, &|t| md.token_name(t));
        assert!(!params.contains("token@"), "{} {params}", p.name);
    }
}

#[test]
fn each_method_lies_in_its_types_range() {
    let file = read_assembly("System.Text.Json.dll");
    let md = metadata_of(&file);
    let mut covered = 0;
    for t in 1..=md.rows(schema::TYPE_DEF) {
        let token = 0x0200_0000 | t;
        for m in md.type_methods(token).unwrap() {
            let p = md.get_method_props(0x0600_0000 | m).unwrap();
            assert_eq!(p.class, token);
            covered += 1;
        }
    }
    assert_eq!(covered, md.rows(schema::METHOD_DEF));
    assert!(md.type_methods(0x0600_0001).is_err());
}

#[test]
fn assembly_references_are_found_by_name() {
    let file = read_assembly("System.Text.Json.dll");
    let md = metadata_of(&file);
    let core = md
        .find_assembly_ref(&["NoSuchAssembly", "System.Runtime"])
        .expect("System.Text.Json references System.Runtime");
    assert_eq!(core >> 24, 0x23);
    assert!(core & 0xFF_FFFF >= 1 && core & 0xFF_FFFF <= md.rows(schema::ASSEMBLY_REF));
    assert_eq!(md.find_assembly_ref(&["NoSuchAssembly"]), None);
}

#[test]
fn damaged_metadata_is_an_error_not_a_panic() {
    let file = read_assembly("System.Text.Json.dll");
    let read = |o: usize, n: usize| file.get(o..o.checked_add(n)?);
    let (at, size) = pe::locate(&read, true).unwrap();
    let md = &file[at..at + size];
    // Every truncation either parses (and then every lookup stays in bounds) or errors.
    for cut in (0..md.len()).step_by(md.len() / 97 + 1) {
        if let Ok(m) = RawMetadata::parse(&md[..cut]) {
            for r in 1..=m.rows(schema::METHOD_DEF).min(50) {
                let _ = m.get_method_props(0x0600_0000 | r);
            }
        }
    }
    // Flipped bytes in the table stream's header.
    let mut bad = md.to_vec();
    for i in 0..bad.len().min(4096) {
        bad[i] ^= 0x5A;
        if let Ok(m) = RawMetadata::parse(&bad) {
            for r in 1..=m.rows(schema::TYPE_DEF).min(20) {
                let _ = m.type_full_name(0x0200_0000 | r);
            }
        }
        bad[i] ^= 0x5A;
    }
}

/// CoreLib's async and iterator methods: every attribute names a state machine type of
/// the module nested in its kickoff method's type, whose `MoveNext` is the body.
#[test]
fn corelib_state_machines_from_their_attributes() {
    let file = read_assembly("System.Private.CoreLib.dll");
    let md = metadata_of(&file);
    let kickoffs = md.state_machine_kickoffs().unwrap();
    assert!(kickoffs.len() > 50, "{} state machines", kickoffs.len());
    let types: std::collections::HashMap<String, u32> = (1..=md.rows(schema::TYPE_DEF))
        .map(|r| 0x0200_0000 | r)
        .map(|t| (md.type_full_name(t), t))
        .collect();
    for (machine, kickoff) in &kickoffs {
        let method = md.get_method_props(*kickoff).unwrap();
        let t = *types
            .get(machine)
            .unwrap_or_else(|| panic!("{machine}: no such TypeDef"));
        assert_eq!(
            md.get_nested_class_props(t).unwrap(),
            Some(method.class),
            "{machine} of {}",
            md.method_full_name(*kickoff).unwrap()
        );
    }
    // C# names them `<Method>d__N` (a local function's `<<Host>g__Name|1_0>d`): the
    // kickoff's name is in the machine's.
    for (machine, kickoff) in &kickoffs {
        let name = md.get_method_props(*kickoff).unwrap().name;
        assert!(machine.contains(&format!("<{name}>d")), "{machine}: {name}");
    }
}

#[test]
fn a_type_argument_is_read_from_its_blob_and_anything_else_is_not() {
    assert_eq!(
        type_argument(b"\x01\x00\x0cNs.C+<M>d__3\x00\x00").as_deref(),
        Some("Ns.C+<M>d__3")
    );
    // Null, empty, truncated, a wrong prolog, invalid UTF-8, a two-byte length.
    for bad in [
        &b"\x01\x00\xff\x00\x00"[..],
        b"\x01\x00\x00\x00\x00",
        b"\x01\x00\x0bNs.C",
        b"\x02\x00\x01A",
        b"\x01\x00\x02\xff\xfe",
        b"",
        b"\x01",
        b"\x01\x00\xc0\x00\x00\x01",
    ] {
        assert_eq!(type_argument(bad), None, "{bad:?}");
    }
    let long = format!("N.{}", "x".repeat(200));
    let mut blob = vec![1u8, 0, 0x80, long.len() as u8];
    blob.extend_from_slice(long.as_bytes());
    assert_eq!(type_argument(&blob).as_deref(), Some(long.as_str()));
}
