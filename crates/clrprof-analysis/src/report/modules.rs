//! What the runtime loaded: modules (with when), assemblies and classes (by name).

use serde::Serialize;

use clrprof_format::Event;

use crate::timeline::TimedEvent;

#[derive(Debug, Serialize)]
pub struct ModuleInfo {
    pub id: u64,
    pub path: String,
    pub assembly: u64,
    pub loaded_ns: u64,
}

/// Modules and assemblies in load order, classes sorted by name.
#[derive(Debug, Default)]
pub struct Loaded {
    pub modules: Vec<ModuleInfo>,
    pub assemblies: Vec<String>,
    pub classes: Vec<String>,
}

impl Loaded {
    pub fn observe(&mut self, e: &TimedEvent<'_>) {
        match &e.event {
            Event::AssemblyLoaded { name, .. } => self.assemblies.push(name.to_string()),
            Event::ModuleLoaded {
                id, assembly, path, ..
            } => self.modules.push(ModuleInfo {
                id: *id,
                path: path.to_string(),
                assembly: *assembly,
                loaded_ns: e.ns,
            }),
            Event::ClassLoaded { name, .. } => self.classes.push(name.to_string()),
            _ => {}
        }
    }

    pub fn finish(mut self) -> Loaded {
        self.classes.sort();
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::at;

    #[test]
    fn modules_in_load_order_classes_sorted() {
        let mut l = Loaded::default();
        for e in [
            at(
                5,
                1,
                Event::ModuleLoaded {
                    id: 7,
                    assembly: 3,
                    base_address: 0,
                    path: "/app/B.dll".into(),
                    hr: 0,
                },
            ),
            at(
                6,
                1,
                Event::AssemblyLoaded {
                    id: 3,
                    app_domain: 1,
                    module: 7,
                    name: "B".into(),
                    hr: 0,
                },
            ),
            at(
                7,
                1,
                Event::ModuleLoaded {
                    id: 8,
                    assembly: 4,
                    base_address: 0,
                    path: "/app/A.dll".into(),
                    hr: 0,
                },
            ),
            at(
                8,
                1,
                Event::ClassLoaded {
                    id: 1,
                    module: 7,
                    token: 0,
                    name: "Z".into(),
                    hr: 0,
                },
            ),
            at(
                9,
                1,
                Event::ClassLoaded {
                    id: 2,
                    module: 7,
                    token: 0,
                    name: "A".into(),
                    hr: 0,
                },
            ),
        ] {
            l.observe(&e);
        }
        let l = l.finish();
        let modules: Vec<_> = l
            .modules
            .iter()
            .map(|m| (m.id, m.path.as_str(), m.assembly, m.loaded_ns))
            .collect();
        assert_eq!(modules, [(7, "/app/B.dll", 3, 5), (8, "/app/A.dll", 4, 7)]);
        assert_eq!(l.assemblies, ["B"]);
        assert_eq!(l.classes, ["A", "Z"]);
    }
}
