//! Name tables rebuilt from the trace: the agent writes each name once per id. Stacks keep
//! frame ids; these tables give a frame its name, its kind and its module.

use std::collections::HashMap;

use clrprof_export::FrameKind;
use clrprof_format::{Event, NATIVE_MODULE_FRAME, is_native_frame};

use crate::timeline::TimedEvent;

/// The name given to a run of native frames of unknown module (frame id 0).
pub const NATIVE: &str = "[native]";

#[derive(Debug, Clone, Default)]
pub struct FunctionName {
    pub name: String,
    pub signature: String,
    /// The runtime's ModuleID of the function's module (0 when unknown).
    pub module: u64,
    /// Its MethodDef token (0 when unknown).
    pub token: u32,
}

/// A module a frame belongs to: a managed assembly's file or a native library.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ModuleFile {
    /// The file name, e.g. `libcoreclr.so` or `Scenarios.dll`.
    pub name: String,
    /// The full path, when the trace recorded it (traces before format 1.2 named native
    /// modules by file name only).
    pub path: Option<String>,
}

impl ModuleFile {
    fn from_path(path: &str) -> ModuleFile {
        ModuleFile {
            name: path.rsplit('/').next().unwrap_or(path).to_string(),
            path: Some(path.to_string()),
        }
    }
}

#[derive(Debug, Default)]
pub struct Names {
    pub functions: HashMap<u64, FunctionName>,
    pub classes: HashMap<u64, String>,
    /// Managed modules by ModuleID, from `ModuleLoaded`.
    pub modules: HashMap<u64, ModuleFile>,
    /// Native modules by frame id ([`NATIVE_MODULE_FRAME`] set), from `NativeModule`
    /// (format 1.2) or the `FunctionInfo` `[file]` that 1.1 wrote instead.
    pub native_modules: HashMap<u64, ModuleFile>,
    /// Source lines the trace carries (`SourceLine`, appended by `clrprof record`): per
    /// (function, `SamplePositions` item), the file and line.
    pub source_lines: HashMap<(u64, u64), (std::sync::Arc<str>, u32)>,
    /// OS thread names by OS thread id, from the sampler's `thread_os_name` records: what
    /// the runtime's own threads are called (they never get a `ThreadName`), full length
    /// where [`full_thread_name`] knows the 15-byte form.
    pub thread_os_names: HashMap<u64, String>,
    /// Async and iterator `MoveNext` functions by id → the name of the method that
    /// started the state machine, read from the module's `AsyncStateMachine`-style
    /// attributes ([`Names::collect`], when the module's file is readable here).
    pub kickoffs: HashMap<u64, String>,
}

impl Names {
    pub fn collect(events: &[TimedEvent<'_>]) -> Names {
        let mut n = Names::default();
        for e in events {
            n.add(e);
        }
        n.kickoffs = kickoffs(&n);
        n
    }

    /// Takes in the names one event gives (a live view adds them as they are read).
    pub fn add(&mut self, e: &TimedEvent<'_>) {
        let n = self;
        match &e.event {
            Event::FunctionInfo { function, name, .. } if *function & NATIVE_MODULE_FRAME != 0 => {
                // Format 1.1: a native module named `[file]`, without its path.
                let file = name.trim_start_matches('[').trim_end_matches(']');
                n.native_modules.entry(*function).or_insert(ModuleFile {
                    name: file.to_string(),
                    path: None,
                });
            }
            Event::FunctionInfo {
                function,
                module,
                token,
                name,
                signature,
                ..
            } => {
                n.functions.insert(
                    *function,
                    FunctionName {
                        name: name.to_string(),
                        signature: signature.to_string(),
                        module: *module,
                        token: *token,
                    },
                );
            }
            Event::SourceLine {
                function,
                position,
                file,
                line,
            } => {
                n.source_lines
                    .insert((*function, *position), (file.as_ref().into(), *line));
            }
            Event::NativeModule { frame, path } => {
                n.native_modules.insert(*frame, ModuleFile::from_path(path));
            }
            Event::ModuleLoaded { id, path, .. } if !path.is_empty() => {
                n.modules.insert(*id, ModuleFile::from_path(path));
            }
            Event::ClassLoaded { id, name, .. } | Event::ClassName { class: id, name } => {
                n.classes.insert(*id, name.to_string());
            }
            Event::Meta { key, json } if key == "thread_os_name" => {
                if let Ok(v) = serde_json::from_str::<serde_json::Value>(json)
                    && let (Some(tid), Some(name)) = (v["os_tid"].as_u64(), v["name"].as_str())
                {
                    n.thread_os_names
                        .insert(tid, full_thread_name(name).to_string());
                }
            }
            Event::Meta { key, json } if key == "class_name" => {
                // Format 1.1's form of `ClassName`.
                if let Ok(v) = serde_json::from_str::<serde_json::Value>(json)
                    && let (Some(id), Some(name)) = (v["id"].as_u64(), v["name"].as_str())
                {
                    n.classes.insert(id, name.to_string());
                }
            }
            _ => {}
        }
    }

    /// A function's name as the sampled views show it: an async or iterator state
    /// machine's `MoveNext` is named after the method that started it
    /// ([`state_machine_name`]), a lambda or local function after the method it is
    /// written in ([`lambda_name`]); other names as [`function`](Self::function).
    pub fn display(&self, id: u64) -> String {
        if let Some(k) = self.kickoffs.get(&id) {
            return format!("{k} (MoveNext)");
        }
        let name = self.function(id);
        state_machine_name(&name)
            .or_else(|| lambda_name(&name))
            .unwrap_or(name)
    }

    pub fn function(&self, id: u64) -> String {
        match self.functions.get(&id) {
            Some(f) => f.name.clone(),
            None => format!("function@{id:#x}"),
        }
    }

    pub fn class(&self, id: u64) -> String {
        match self.classes.get(&id) {
            Some(c) => c.clone(),
            None => format!("class@{id:#x}"),
        }
    }

    /// A stack frame's name: the function's, `[libc.so.6]` for a native module's run of
    /// frames, [`NATIVE`] for native code of unknown module.
    pub fn frame_name(&self, id: u64) -> String {
        if !is_native_frame(id) {
            return self.function(id);
        }
        match self.native_modules.get(&id) {
            Some(m) => format!("[{}]", m.name),
            None => NATIVE.to_string(),
        }
    }

    /// Managed code, the runtime itself (its VM, GC and JIT libraries) or other native
    /// code.
    pub fn frame_kind(&self, id: u64) -> FrameKind {
        if !is_native_frame(id) {
            return FrameKind::Managed;
        }
        match self.native_modules.get(&id) {
            Some(m) if is_runtime_library(&m.name) => FrameKind::Runtime,
            _ => FrameKind::Native,
        }
    }

    /// The module a frame's code belongs to, when the trace says.
    pub fn frame_module(&self, id: u64) -> Option<&ModuleFile> {
        if is_native_frame(id) {
            self.native_modules.get(&id)
        } else {
            let f = self.functions.get(&id)?;
            self.modules.get(&f.module)
        }
    }
}

/// The kickoff method of every async or iterator `MoveNext` of `n`, from the
/// `AsyncStateMachine`, `IteratorStateMachine` and `AsyncIteratorStateMachine` attributes
/// of its module (read from the module's file, when it is readable here; no PDB and no
/// compiler's naming rule: VB's `VB$StateMachine_1_M` as C#'s `<M>d__1`). The kickoff's
/// type is named as the runtime names the machine's enclosing type when the machine is
/// nested in it (always, for C# and VB), else from the metadata. Modules are read once.
fn kickoffs(n: &Names) -> HashMap<u64, String> {
    use clrprof_metadata::{MetadataRead, RawMetadata};
    let mut out = HashMap::new();
    let mut by_module: HashMap<u64, Vec<(u64, &FunctionName)>> = HashMap::new();
    for (&id, f) in &n.functions {
        if f.token != 0 && f.name.ends_with(".MoveNext") {
            by_module.entry(f.module).or_default().push((id, f));
        }
    }
    for (module, functions) in by_module {
        let Some(path) = n.modules.get(&module).and_then(|m| m.path.as_deref()) else {
            continue;
        };
        let Some(metadata) = metadata_of(path) else {
            continue;
        };
        let Ok(md) = RawMetadata::parse(&metadata) else {
            continue;
        };
        let machines: HashMap<String, u32> = md
            .state_machine_kickoffs()
            .unwrap_or_default()
            .into_iter()
            .collect();
        if machines.is_empty() {
            continue;
        }
        for (id, f) in functions {
            let Ok(move_next) = md.get_method_props(f.token) else {
                continue;
            };
            let Some(&kickoff) = machines.get(&md.type_full_name(move_next.class)) else {
                continue;
            };
            let Ok(k) = md.get_method_props(kickoff) else {
                continue;
            };
            let outer = f.name.strip_suffix(".MoveNext").and_then(enclosing_type);
            let name = match outer {
                Some(outer)
                    if md.get_nested_class_props(move_next.class).ok().flatten()
                        == Some(k.class) =>
                {
                    format!("{outer}.{}", k.name)
                }
                _ => match md.method_full_name(kickoff) {
                    Ok(n) => n,
                    Err(_) => continue,
                },
            };
            out.insert(id, name);
        }
    }
    out
}

/// The metadata of the module at `path`, read from its file alone: the headers, then
/// the metadata's own range (System.Private.CoreLib is 15 MB, its metadata 3 MB).
fn metadata_of(path: &str) -> Option<Vec<u8>> {
    use clrprof_metadata::rawmd::pe;
    use std::io::{Read, Seek, SeekFrom};
    let mut file = std::fs::File::open(path).ok()?;
    let len = usize::try_from(file.metadata().ok()?.len()).ok()?;
    // The DOS, PE and section headers and the CLI header lie in the first pages of every
    // image the compilers and crossgen write; an image laid out otherwise is read whole.
    let mut head = vec![0u8; len.min(64 << 10)];
    file.read_exact(&mut head).ok()?;
    let located = {
        let read = |o: usize, n: usize| head.get(o..o.checked_add(n)?);
        pe::locate(&read, true)
    };
    let (at, size) = match located {
        Ok(found) => found,
        Err(_) if head.len() < len => {
            let whole = std::fs::read(path).ok()?;
            let read = |o: usize, n: usize| whole.get(o..o.checked_add(n)?);
            let (at, size) = pe::locate(&read, true).ok()?;
            return whole.get(at..at.checked_add(size)?).map(<[u8]>::to_vec);
        }
        Err(_) => return None,
    };
    if at.checked_add(size)? > len {
        return None;
    }
    let mut metadata = vec![0u8; size];
    file.seek(SeekFrom::Start(u64::try_from(at).ok()?)).ok()?;
    file.read_exact(&mut metadata).ok()?;
    Some(metadata)
}

/// `A.B+C` of a nested type's name `A.B+C+D<X+Y>`: the part before its last `+` outside
/// angle brackets.
fn enclosing_type(name: &str) -> Option<&str> {
    let mut depth = 0i32;
    let mut split = None;
    for (i, c) in name.char_indices() {
        match c {
            '<' | '[' => depth += 1,
            '>' | ']' => depth -= 1,
            '+' if depth == 0 => split = Some(i),
            _ => {}
        }
    }
    split.map(|i| &name[..i])
}

/// The name of a C# async or iterator state machine's `MoveNext` after its kickoff
/// method: the compiler names the machine `<Method>d__N`, nested in the method's type, so
/// `Shop.Cart+<CheckoutAsync>d__3.MoveNext` is the body of `Shop.Cart.CheckoutAsync`,
/// shown as `Shop.Cart.CheckoutAsync (MoveNext)`: the suffix keeps it apart from the
/// kickoff method's own frame (a row of its own, as before). `None` for other names.
pub fn state_machine_name(name: &str) -> Option<String> {
    let body = name.strip_suffix(".MoveNext")?;
    let (outer, machine) = body.rsplit_once('+')?;
    let inner = machine.strip_prefix('<')?;
    let (method, rest) = inner.split_once(">d__")?;
    let generic_ok = rest
        .split('<')
        .next()
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    (generic_ok && !method.is_empty()).then(|| format!("{outer}.{method} (MoveNext)"))
}

/// The name of a C# lambda or local function after the method it is written in. The
/// compiler names a lambda `<Method>b__N_M` (`N_M`: the method's and the lambda's
/// ordinals) on a cache class `<>c`, a closure class `<>c__DisplayClassN_M` nested in
/// the method's type, or the type itself; a local function `<Method>g__Name|N_M`. So
/// `Shop.Cart+<>c.<Checkout>b__3_0` is shown as `Shop.Cart.Checkout (lambda 3_0)` and
/// `Shop.Cart.<Checkout>g__Total|3_1` as `Shop.Cart.Checkout.Total (local function)`.
/// The ordinals keep two lambdas of one method apart. `None` for other names.
pub fn lambda_name(name: &str) -> Option<String> {
    // The method's own name is the part after the last `.` outside angle brackets.
    let mut depth = 0i32;
    let mut split = None;
    for (i, c) in name.char_indices() {
        match c {
            '<' => depth += 1,
            '>' => depth -= 1,
            '.' if depth == 0 => split = Some(i),
            _ => {}
        }
    }
    let (ty, method) = name.split_at(split?);
    let method = &method[1..];
    let inner = method.strip_prefix('<')?;
    let (host, rest) = inner.split_once('>')?;
    if host.is_empty() || host.contains(['<', '>']) {
        return None;
    }
    // The type the method is written in: without the compiler's `<>c…` class.
    let outer = match ty.rsplit_once('+') {
        Some((outer, nested)) if nested.starts_with("<>c") => outer,
        _ => ty,
    };
    if let Some(ordinals) = rest.strip_prefix("b__") {
        let ordinals: String = ordinals
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '_')
            .collect();
        (!ordinals.is_empty()).then(|| format!("{outer}.{host} (lambda {ordinals})"))
    } else if let Some(local) = rest.strip_prefix("g__") {
        let (local, _) = local.split_once('|')?;
        (!local.is_empty()).then(|| format!("{outer}.{host}.{local} (local function)"))
    } else {
        None
    }
}

/// The runtime's thread names as the kernel keeps them (15 bytes) and in full.
const RUNTIME_THREADS: &[(&str, &str)] = &[
    (".NET Tiered Com", ".NET Tiered Compilation Worker"),
    (".NET TP Worker", ".NET TP Worker"),
    (".NET Long Runni", ".NET Long Running Task"),
    (".NET SynchManag", ".NET SynchManager"),
    (".NET SigHandler", ".NET SigHandler"),
    (".NET EventPipe", ".NET EventPipe"),
    (".NET Server GC", ".NET Server GC"),
    (".NET Background", ".NET Background GC"),
    (".NET BGC", ".NET BGC"),
    (".NET Finalizer", ".NET Finalizer"),
    (".NET Counter Po", ".NET Counter Poller"),
    (".NET Timer", ".NET Timer"),
];

/// An OS thread name in full when it is one of the runtime's, cut to 15 bytes by the
/// kernel; other names as they are.
pub fn full_thread_name(name: &str) -> &str {
    RUNTIME_THREADS
        .iter()
        .find(|(short, _)| *short == name)
        .map_or(name, |(_, full)| full)
}

/// Whether a native library is the runtime itself: the VM (with the GC) or the JIT.
pub fn is_runtime_library(file_name: &str) -> bool {
    matches!(file_name, "libcoreclr.so" | "libclrjit.so")
}

/// Name prefixes of the framework's namespaces, for methods whose module the trace does
/// not name.
const FRAMEWORK: &[&str] = &["System.", "Microsoft.", "Internal.", "Interop", "<Crt"];

/// Whether a method's name is in one of the framework's namespaces (the one list of
/// them: the app-code table and the wait search of `waits` use it).
pub fn is_framework_name(name: &str) -> bool {
    FRAMEWORK.iter().any(|p| name.starts_with(p))
}

/// Whether a managed frame is the app's own code.
pub fn is_app_frame(names: &Names, f: u64) -> bool {
    if clrprof_format::is_native_frame(f) {
        return false;
    }
    match names.frame_module(f).and_then(|m| m.path.as_deref()) {
        // The shared framework: …/shared/Microsoft.NETCore.App/<version>/….
        Some(path) => !path.contains("/shared/Microsoft."),
        None => !is_framework_name(&names.function(f)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::borrow::Cow;

    fn ev(event: Event<'static>) -> TimedEvent<'static> {
        TimedEvent {
            ns: 0,
            os_tid: 1,
            event,
        }
    }

    #[test]
    fn the_enclosing_type_of_a_nested_name() {
        assert_eq!(
            enclosing_type("Scenarios.Lines+<BusyAsync>d__3"),
            Some("Scenarios.Lines")
        );
        assert_eq!(
            enclosing_type("VbAsync.Program+VB$StateMachine_1_BusyAsync"),
            Some("VbAsync.Program")
        );
        assert_eq!(
            enclosing_type("A.B+C<X+Y>+<Items>d__12<A+B>"),
            Some("A.B+C<X+Y>")
        );
        assert_eq!(enclosing_type("A.B"), None);
    }

    #[test]
    fn lambdas_and_local_functions_are_named_after_their_method() {
        for (raw, shown) in [
            (
                "Shop.Cart+<>c.<Checkout>b__3_0",
                "Shop.Cart.Checkout (lambda 3_0)",
            ),
            (
                "Shop.Cart+<>c__DisplayClass3_0.<Checkout>b__1",
                "Shop.Cart.Checkout (lambda 1)",
            ),
            (
                "Shop.Cart.<Checkout>b__3_2",
                "Shop.Cart.Checkout (lambda 3_2)",
            ),
            (
                "Shop.Cart+<>c__4<System.Int32>.<Sum>b__4_0",
                "Shop.Cart.Sum (lambda 4_0)",
            ),
            (
                "Shop.Cart.<Checkout>g__Total|3_1",
                "Shop.Cart.Checkout.Total (local function)",
            ),
            (
                "Shop.Cart+<>c__DisplayClass3_0.<Checkout>g__Total|1",
                "Shop.Cart.Checkout.Total (local function)",
            ),
        ] {
            assert_eq!(lambda_name(raw).as_deref(), Some(shown), "{raw}");
        }
        for other in [
            "Shop.Cart.Checkout",
            "Shop.Cart+<Items>d__12.MoveNext",
            "Shop.Cart.<Checkout>",
            "Shop.Cart.<>b__0",
            "System.Collections.Generic.List<System.Int32>.Add",
            "<Module>.Init",
        ] {
            assert_eq!(lambda_name(other), None, "{other}");
        }
    }

    #[test]
    fn state_machines_are_named_after_their_kickoff_method() {
        assert_eq!(
            state_machine_name("Scenarios.Lines+<BusyAsync>d__3.MoveNext").as_deref(),
            Some("Scenarios.Lines.BusyAsync (MoveNext)")
        );
        assert_eq!(
            state_machine_name("A.B+C+<Items>d__12<System.Int32>.MoveNext").as_deref(),
            Some("A.B+C.Items (MoveNext)")
        );
        for other in [
            "Scenarios.Lines.Busy",
            "A.B+<>c.<Run>b__0_0",
            "A.B+<Run>d__x.MoveNext",
            "A.B+<>d__1.MoveNext",
            "System.Collections.Generic.List`1+Enumerator.MoveNext",
        ] {
            assert_eq!(state_machine_name(other), None, "{other}");
        }
    }

    #[test]
    fn frames_get_names_kinds_and_modules_from_typed_records() {
        let coreclr = NATIVE_MODULE_FRAME | 1;
        let libc = NATIVE_MODULE_FRAME | 2;
        let n = Names::collect(&[
            ev(Event::ModuleLoaded {
                id: 7,
                assembly: 1,
                base_address: 0,
                path: Cow::Borrowed("/app/App.dll"),
                hr: 0,
            }),
            ev(Event::FunctionInfo {
                function: 0x100,
                module: 7,
                class: 0,
                token: 0,
                name: Cow::Borrowed("App.Main"),
                signature: Cow::Borrowed(""),
            }),
            ev(Event::NativeModule {
                frame: coreclr,
                path: Cow::Borrowed("/dotnet/libcoreclr.so"),
            }),
            // Format 1.1's forms.
            ev(Event::FunctionInfo {
                function: libc,
                module: 0,
                class: 0,
                token: 0,
                name: Cow::Borrowed("[libc.so.6]"),
                signature: Cow::Borrowed(""),
            }),
            ev(Event::ClassName {
                class: 5,
                name: Cow::Borrowed("App.Thing"),
            }),
            ev(Event::Meta {
                key: Cow::Borrowed("class_name"),
                json: Cow::Borrowed(r#"{"id":6,"name":"App.Other"}"#),
            }),
        ]);
        assert_eq!(n.frame_name(0x100), "App.Main");
        assert_eq!(n.frame_kind(0x100), FrameKind::Managed);
        assert_eq!(
            n.frame_module(0x100),
            Some(&ModuleFile {
                name: "App.dll".into(),
                path: Some("/app/App.dll".into())
            })
        );
        assert_eq!(n.frame_name(coreclr), "[libcoreclr.so]");
        assert_eq!(n.frame_kind(coreclr), FrameKind::Runtime);
        assert_eq!(
            n.frame_module(coreclr).and_then(|m| m.path.as_deref()),
            Some("/dotnet/libcoreclr.so")
        );
        assert_eq!(n.frame_name(libc), "[libc.so.6]");
        assert_eq!(n.frame_kind(libc), FrameKind::Native);
        assert_eq!(n.frame_module(libc).map(|m| m.path.is_none()), Some(true));
        assert_eq!(n.frame_name(0), NATIVE);
        assert_eq!(n.frame_module(0), None);
        assert_eq!(n.frame_name(NATIVE_MODULE_FRAME | 9), NATIVE);
        assert_eq!(
            (n.class(5), n.class(6)),
            ("App.Thing".into(), "App.Other".into())
        );
    }
}
