//! Name tables rebuilt from the trace: the agent writes each name once per id.

use std::collections::{HashMap, HashSet};

use clrprof_format::Event;

use crate::timeline::TimedEvent;

#[derive(Debug, Clone, Default)]
pub struct FunctionName {
    pub name: String,
    pub signature: String,
}

#[derive(Debug, Default)]
pub struct Names {
    pub functions: HashMap<u64, FunctionName>,
    pub classes: HashMap<u64, String>,
    /// Names of native modules' frames (`[libc.so.6]`), from their frame ids
    /// ([`clrprof_format::NATIVE_MODULE_FRAME`]).
    pub native_modules: HashSet<String>,
}

impl Names {
    pub fn collect(events: &[TimedEvent<'_>]) -> Names {
        let mut n = Names::default();
        for e in events {
            match &e.event {
                Event::FunctionInfo {
                    function,
                    name,
                    signature,
                    ..
                } => {
                    if *function & clrprof_format::NATIVE_MODULE_FRAME != 0 {
                        n.native_modules.insert(name.to_string());
                    }
                    n.functions.insert(
                        *function,
                        FunctionName {
                            name: name.to_string(),
                            signature: signature.to_string(),
                        },
                    );
                }
                Event::ClassLoaded { id, name, .. } => {
                    n.classes.insert(*id, name.to_string());
                }
                Event::Meta { key, json } if key == "class_name" => {
                    if let Ok(v) = serde_json::from_str::<serde_json::Value>(json)
                        && let (Some(id), Some(name)) = (v["id"].as_u64(), v["name"].as_str())
                    {
                        n.classes.insert(id, name.to_string());
                    }
                }
                _ => {}
            }
        }
        n
    }

    /// Whether a frame name stands for native code: `[native]` or a native module.
    pub fn is_native(&self, name: &str) -> bool {
        name == crate::samples::NATIVE || self.native_modules.contains(name)
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
}
