//! Turning runtime ids into names a person reads: `Namespace.Outer+Inner<Arg>` for
//! classes, `Namespace.Type.Method` plus a C#-like signature for functions. Ids come from
//! ICorProfilerInfo; the names from the module's metadata, read from its loaded image
//! (`corprof::RawMetadata`) rather than through the runtime's importer, because opening
//! the importer converts the module's metadata to the runtime's slower read-write form
//! for the rest of the process (docs/performance.md, "Names without the importer").
//! Dynamic and collectible modules, and `#-` tables, go through the importer.
//! `CLRPROF_NAMES=importer` always uses the importer; `CLRPROF_NAMES=compare` names each
//! id both ways and counts the differences (the acceptance tests' oracle). Callers make
//! sure a name is written once per id (see `Seen`). The name writers (`emit_*`) put the
//! names into the trace for the callbacks, the sampler, trace mode's mapper and heap
//! snapshots.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use clrprof_format::Event;
use corprof::{
    ClassId, FunctionId, MetaDataImport, MetadataRead, ModuleId, ProfilerInfo, RawMetadata,
};

use crate::output::buffers::emit;

/// Strips the generic arity suffix: `List`1` → `List`.
fn strip_arity(name: &str) -> &str {
    match name.find('`') {
        Some(i) => &name[..i],
        None => name,
    }
}

/// Where names come from (`CLRPROF_NAMES`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    /// The module's image, the importer where there is none: the default.
    Image,
    /// The runtime's importer only (`importer`).
    Importer,
    /// Both, compared (`compare`); the names written are the image's.
    Compare,
}

fn mode() -> Mode {
    // Process-wide on purpose: read from the process's environment, which no session
    // changes.
    static MODE: OnceLock<Mode> = OnceLock::new();
    *MODE.get_or_init(|| match std::env::var("CLRPROF_NAMES").as_deref() {
        Err(_) | Ok("image") => Mode::Image,
        Ok("importer") => Mode::Importer,
        Ok("compare") => Mode::Compare,
        Ok(other) => {
            note(format!(
                "CLRPROF_NAMES={other:?}: expected image, importer or compare; image it is"
            ));
            Mode::Image
        }
    })
}

/// Modules whose metadata was read from the image, by ModuleId (`None`: it could not be,
/// the importer stands in). One entry per module the names touched, each leaked: a module
/// read here is neither dynamic nor collectible, so it lives as long as the process.
struct Images {
    shards: [Mutex<HashMap<usize, Option<&'static RawMetadata<'static>>>>; 16],
}

static IMAGES: OnceLock<Images> = OnceLock::new();

/// Names written, by where their metadata came from, and `compare`'s counts.
static FROM_IMAGE: AtomicU64 = AtomicU64::new(0);
static FROM_IMPORTER: AtomicU64 = AtomicU64::new(0);
static COMPARED: AtomicU64 = AtomicU64::new(0);
static DIFFERED: AtomicU64 = AtomicU64::new(0);

/// What the end-of-recording summary should say besides the counts (this room sits below
/// `log`): the first few notes, the rest counted.
static NOTES: Mutex<Vec<String>> = Mutex::new(Vec::new());
const MAX_NOTES: usize = 8;

fn note(line: String) {
    let mut notes = NOTES.lock().unwrap_or_else(|p| p.into_inner());
    if notes.len() < MAX_NOTES {
        notes.push(line);
    }
}

/// At a session's start: its own counts and notes.
pub fn reset_for_session() {
    for c in [&FROM_IMAGE, &FROM_IMPORTER, &COMPARED, &DIFFERED] {
        c.store(0, Ordering::Relaxed);
    }
    NOTES.lock().unwrap_or_else(|p| p.into_inner()).clear();
}

/// After a detach (`ProfilerDetachSucceeded`, when no code of ours runs any more and
/// none will): frees what the names kept for the recording, which the runtime's unload of
/// the library would otherwise leave in the target's heap for good: the modules' parsed
/// metadata and the notes. Statics are never dropped by `dlclose`.
pub fn release_at_detach() {
    if let Some(images) = IMAGES.get() {
        for shard in &images.shards {
            let map = std::mem::take(&mut *shard.lock().unwrap_or_else(|p| p.into_inner()));
            for md in map.into_values().flatten() {
                // SAFETY: (A3) each entry came from Box::leak in `image_metadata` and is
                // freed once (the map was taken); no callback or thread of ours runs after
                // ProfilerDetachSucceeded, so no reference to it is live.
                drop(unsafe { Box::from_raw(std::ptr::from_ref(md).cast_mut()) });
            }
        }
    }
    *NOTES.lock().unwrap_or_else(|p| p.into_inner()) = Vec::new();
}

fn image_metadata(info: &ProfilerInfo, module: ModuleId) -> Option<&'static RawMetadata<'static>> {
    let images = IMAGES.get_or_init(|| Images {
        shards: std::array::from_fn(|_| Mutex::new(HashMap::new())),
    });
    let shard = &images.shards[(module.0 >> 4) & 15];
    let mut map = shard.lock().unwrap_or_else(|p| p.into_inner());
    *map.entry(module.0)
        .or_insert_with(|| match info.module_raw_metadata(module) {
            Ok(md) => Some(&*Box::leak(Box::new(md))),
            Err(e) => {
                if !matches!(e, corprof::RawError::Unsupported(_)) {
                    note(format!(
                        "module {:#x}: {e}; its names come from the runtime's importer",
                        module.0
                    ));
                }
                None
            }
        })
}

/// A module's metadata, from where `source` says.
enum Md {
    Image(&'static RawMetadata<'static>),
    Importer(MetaDataImport),
}

impl Md {
    fn read(&self) -> &dyn MetadataRead {
        match self {
            Md::Image(m) => *m,
            Md::Importer(m) => m,
        }
    }
}

fn metadata(info: &ProfilerInfo, module: ModuleId, source: Mode) -> Option<Md> {
    if source != Mode::Importer
        && let Some(md) = image_metadata(info, module)
    {
        FROM_IMAGE.fetch_add(1, Ordering::Relaxed);
        return Some(Md::Image(md));
    }
    FROM_IMPORTER.fetch_add(1, Ordering::Relaxed);
    info.get_module_metadata(module, corprof_sys::ofRead)
        .ok()
        .map(Md::Importer)
}

/// `compare`: counts a difference between the image's name and the importer's, and logs
/// the first few.
fn compared(what: &str, image: &str, importer: &str) {
    COMPARED.fetch_add(1, Ordering::Relaxed);
    if image != importer {
        let k = DIFFERED.fetch_add(1, Ordering::Relaxed);
        if k < 5 {
            note(format!(
                "{what} names differ: image {image:?}, importer {importer:?}"
            ));
        }
    }
}

/// Where names came from (and `compare`'s result), for the log at the end of a
/// recording: the notes first, then the counts; nothing if no name was looked up.
pub fn summary() -> Vec<String> {
    let mut lines = std::mem::take(&mut *NOTES.lock().unwrap_or_else(|p| p.into_inner()));
    let (image, importer) = (
        FROM_IMAGE.load(Ordering::Relaxed),
        FROM_IMPORTER.load(Ordering::Relaxed),
    );
    if image + importer > 0 {
        lines.push(format!(
            "names: metadata read {image} times from module images, {importer} through the runtime's importer{}",
            if mode() == Mode::Compare {
                format!(
                    "; compared with the importer: {} of {} differ",
                    DIFFERED.load(Ordering::Relaxed),
                    COMPARED.load(Ordering::Relaxed)
                )
            } else {
                String::new()
            }
        ));
    }
    lines
}

/// Full name of a loaded class, with generic arguments and array ranks.
pub fn class_name(info: &ProfilerInfo, class: ClassId) -> String {
    match mode() {
        Mode::Compare => {
            let image = class_name_depth(info, class, 0, Mode::Image);
            let importer = class_name_depth(info, class, 0, Mode::Importer);
            compared("class", &image, &importer);
            image
        }
        source => class_name_depth(info, class, 0, source),
    }
}

fn class_name_depth(info: &ProfilerInfo, class: ClassId, depth: u32, source: Mode) -> String {
    if depth > 8 {
        return "…".into();
    }
    if let Ok(Some(array)) = info.is_array_class(class) {
        let elem = if array.element_class.0 != 0 {
            class_name_depth(info, array.element_class, depth + 1, source)
        } else {
            element_type_name(array.element_type).to_string()
        };
        let commas = ",".repeat(array.rank.saturating_sub(1) as usize);
        return format!("{elem}[{commas}]");
    }
    let Ok(ci) = info.get_class_id_info2(class) else {
        return format!("class@{:#x}", class.0);
    };
    let base = metadata(info, ci.module, source)
        .map(|md| md.read().type_full_name(ci.token))
        .unwrap_or_else(|| format!("type@{:#x}", ci.token));
    if ci.type_args.is_empty() {
        return base;
    }
    let args: Vec<String> = ci
        .type_args
        .iter()
        .map(|a| class_name_depth(info, *a, depth + 1, source))
        .collect();
    format!("{}<{}>", strip_arity_nested(&base), args.join(", "))
}

/// `Outer`1+Inner`1` → `Outer+Inner` (arity markers go; arguments are appended once).
fn strip_arity_nested(name: &str) -> String {
    name.split('+')
        .map(strip_arity)
        .collect::<Vec<_>>()
        .join("+")
}

fn element_type_name(et: u32) -> &'static str {
    match et {
        0x02 => "System.Boolean",
        0x03 => "System.Char",
        0x04 => "System.SByte",
        0x05 => "System.Byte",
        0x06 => "System.Int16",
        0x07 => "System.UInt16",
        0x08 => "System.Int32",
        0x09 => "System.UInt32",
        0x0a => "System.Int64",
        0x0b => "System.UInt64",
        0x0c => "System.Single",
        0x0d => "System.Double",
        0x0e => "System.String",
        0x18 => "System.IntPtr",
        0x19 => "System.UIntPtr",
        0x1c => "System.Object",
        _ => "?",
    }
}

/// What the trace records about a function.
pub struct FunctionNames {
    pub module: ModuleId,
    pub class: ClassId,
    pub token: u32,
    pub name: String,
    pub signature: String,
}

/// `Namespace.Type.Method` (nested types joined by `+`, generic arguments appended) and
/// the parameter list.
pub fn function_names(info: &ProfilerInfo, function: FunctionId) -> Option<FunctionNames> {
    match mode() {
        Mode::Compare => {
            let image = function_names_from(info, function, Mode::Image);
            let importer = function_names_from(info, function, Mode::Importer);
            let show = |n: &Option<FunctionNames>| {
                n.as_ref().map_or_else(
                    || "(none)".into(),
                    |n| format!("{}({})", n.name, n.signature),
                )
            };
            compared("function", &show(&image), &show(&importer));
            image
        }
        source => function_names_from(info, function, source),
    }
}

fn function_names_from(
    info: &ProfilerInfo,
    function: FunctionId,
    source: Mode,
) -> Option<FunctionNames> {
    metadata_names(info, function, source).or_else(|| dynamic_names(info, function))
}

/// A dynamic method's names: it has no metadata, only the name its creator gave it,
/// `[dynamic] lambda_method3` for LCG (`DynamicMethod`, `Expression.Compile()`) and
/// `[stub] IL_STUB_PInvoke` for the runtime's IL stubs (marshalling, delegates).
fn dynamic_names(info: &ProfilerInfo, function: FunctionId) -> Option<FunctionNames> {
    let (module, name) = info.get_dynamic_function_info(function).ok()?;
    Some(FunctionNames {
        module,
        class: ClassId(0),
        token: 0,
        name: dynamic_label(&name),
        signature: String::new(),
    })
}

/// The frame name of a dynamic method called `name`.
fn dynamic_label(name: &str) -> String {
    if name.starts_with("IL_STUB") {
        format!("[stub] {name}")
    } else {
        format!("[dynamic] {name}")
    }
}

fn metadata_names(
    info: &ProfilerInfo,
    function: FunctionId,
    source: Mode,
) -> Option<FunctionNames> {
    let fi = info.get_function_info2(function, 0).ok()?;
    let md = metadata(info, fi.module, source)?;
    let md = md.read();
    let props = md.get_method_props(fi.token).ok()?;
    let type_name = if fi.class.0 != 0 {
        class_name_depth(info, fi.class, 0, source)
    } else {
        md.type_full_name(props.class)
    };
    let mut name = format!("{type_name}.{}", props.name);
    if !fi.type_args.is_empty() {
        let args: Vec<String> = fi
            .type_args
            .iter()
            .map(|a| class_name_depth(info, *a, 0, source))
            .collect();
        name = format!("{name}<{}>", args.join(", "));
    }
    let signature = corprof::sig::parse_method(&props.sig)
        .map(|s| corprof::sig::format_method_params(&s, &|tok| md.token_name(tok)))
        .unwrap_or_default();
    Some(FunctionNames {
        module: fi.module,
        class: fi.class,
        token: fi.token,
        name,
        signature,
    })
}

/// A concurrent "seen" set, sharded so that threads rarely meet on one lock; used to
/// write each name once per id. (Name lookups happen on JIT and load callbacks, which
/// already take runtime locks; this is not on the per-call path.)
pub struct Seen {
    shards: [Mutex<HashSet<usize>>; 16],
}

impl Seen {
    pub fn new() -> Self {
        Seen {
            shards: std::array::from_fn(|_| Mutex::new(HashSet::new())),
        }
    }

    /// True the first time `id` is inserted.
    pub fn first(&self, id: usize) -> bool {
        let shard = &self.shards[(id >> 4) & 15];
        match shard.lock() {
            Ok(mut s) => s.insert(id),
            Err(p) => p.into_inner().insert(id),
        }
    }
}

impl Default for Seen {
    fn default() -> Self {
        Self::new()
    }
}

// The name writers: each records one name record on the calling thread. Callers
// decide whether a name was already written (see `Seen`).

/// Writes the names of `function` (no de-duplication: callers decide).
pub fn emit_function_info(info: &ProfilerInfo, function: FunctionId) {
    if let Some(n) = function_names(info, function) {
        emit_names(function.0 as u64, n);
    }
}

/// Writes names under a trace-mode index instead of the FunctionID.
pub fn emit_function_info_as(names: Option<FunctionNames>, index: u64) {
    if let Some(n) = names {
        emit_names(index, n);
    }
}

/// Names a native module's frame id (from the signal sampler) with the module's path.
pub fn emit_native_module(frame: u64, path: String) {
    emit(&Event::NativeModule {
        frame,
        path: Cow::Owned(path),
    });
}

/// Names a pseudo frame id (bit 63 set, e.g. `TRUNCATED_FRAME`) with a bracketed label;
/// readers take it as a native-module-style frame.
pub fn emit_frame_name(id: u64, name: String) {
    emit(&Event::FunctionInfo {
        function: id,
        module: 0,
        class: 0,
        token: 0,
        name: Cow::Owned(name),
        signature: Cow::Borrowed(""),
    });
}

fn emit_names(id: u64, n: FunctionNames) {
    emit(&Event::FunctionInfo {
        function: id,
        module: n.module.0 as u64,
        class: n.class.0 as u64,
        token: n.token,
        name: Cow::Owned(n.name),
        signature: Cow::Owned(n.signature),
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arity_is_stripped_per_nesting_level() {
        assert_eq!(
            strip_arity_nested("System.Collections.Generic.List`1"),
            "System.Collections.Generic.List"
        );
        assert_eq!(strip_arity_nested("A.Outer`1+Inner`2"), "A.Outer+Inner");
    }

    #[test]
    fn dynamic_methods_are_named_by_kind() {
        assert_eq!(dynamic_label("lambda_method3"), "[dynamic] lambda_method3");
        assert_eq!(dynamic_label("IL_STUB_PInvoke"), "[stub] IL_STUB_PInvoke");
    }

    #[test]
    fn seen_is_first_once() {
        let s = Seen::new();
        assert!(s.first(0x1000));
        assert!(!s.first(0x1000));
        assert!(s.first(0x1010));
    }
}
