//! The app's own code: methods whose module is not part of the .NET runtime's shared
//! framework. The report's first table gives each on-CPU sample's CPU to the app method
//! nearest its leaf, with the framework, runtime and native code it called (like a
//! "just my code" view), so that it opens on the app's hot methods even when the work
//! itself happens in System.Text.Json or in the runtime's allocator. Which frames are the
//! app's is `names`' rule (`is_app_frame`).

use std::collections::HashMap;

use crate::names::{Names, is_app_frame};
use crate::samples::{FunctionSamples, StackSample, View, counted};

/// Per app method, the CPU of the samples whose nearest app frame it is (self) and of
/// those it is anywhere in (total), most self CPU first; and the CPU of samples without
/// any app frame (runtime and framework threads).
pub fn functions(samples: &[StackSample], names: &Names) -> (Vec<FunctionSamples>, u64) {
    let mut app: HashMap<u64, bool> = HashMap::new();
    let mut rows: Vec<FunctionSamples> = Vec::new();
    let mut by_name: HashMap<String, usize> = HashMap::new();
    let mut outside = 0;
    // Per row, the number (from 1) of the last sample that counted it in its total: a
    // recursion counts once per sample, in time linear in the stack's depth.
    let mut counted_in: Vec<usize> = Vec::new();
    for (n, s) in counted(samples, names, View::Cpu).enumerate() {
        let n = n + 1;
        let mut first = true;
        for f in &s.stack {
            if !*app.entry(*f).or_insert_with(|| is_app_frame(names, *f)) {
                continue;
            }
            let name = names.display(*f);
            let row = *by_name.entry(name.clone()).or_insert_with(|| {
                rows.push(FunctionSamples {
                    name,
                    self_samples: 0,
                    total_samples: 0,
                    self_cpu_ns: 0,
                    total_cpu_ns: 0,
                    file: None,
                    line: None,
                });
                rows.len() - 1
            });
            let r = &mut rows[row];
            if first {
                r.self_samples += 1;
                r.self_cpu_ns += s.cpu_ns;
                first = false;
            }
            if counted_in.len() <= row {
                counted_in.resize(row + 1, 0);
            }
            if counted_in[row] != n {
                counted_in[row] = n;
                r.total_samples += 1;
                r.total_cpu_ns += s.cpu_ns;
            }
        }
        if first {
            outside += s.cpu_ns;
        }
    }
    rows.sort_by(|a, b| {
        (b.self_cpu_ns, b.total_cpu_ns)
            .cmp(&(a.self_cpu_ns, a.total_cpu_ns))
            .then_with(|| a.name.cmp(&b.name))
    });
    (rows, outside)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::names::{FunctionName, ModuleFile};
    use clrprof_format::NATIVE_MODULE_FRAME;

    #[test]
    fn cpu_goes_to_the_nearest_app_method() {
        let mut n = Names::default();
        n.modules.insert(
            1,
            ModuleFile {
                name: "App.dll".into(),
                path: Some("/app/App.dll".into()),
            },
        );
        n.modules.insert(
            2,
            ModuleFile {
                name: "System.Text.Json.dll".into(),
                path: Some(
                    "/usr/share/dotnet/shared/Microsoft.NETCore.App/10.0.0/System.Text.Json.dll"
                        .into(),
                ),
            },
        );
        for (id, name, module) in [
            (1, "App.Parse", 1),
            (2, "App.Main", 1),
            (3, "System.Text.Json.Read", 2),
        ] {
            n.functions.insert(
                id,
                FunctionName {
                    name: name.into(),
                    signature: String::new(),
                    module,
                    token: 0,
                },
            );
        }
        let coreclr = NATIVE_MODULE_FRAME | 1;
        let s = |stack: &[u64], cpu| StackSample {
            ns: 0,
            os_tid: 1,
            cpu_ns: cpu,
            state: crate::waits::RunState::Running,
            stack: stack.to_vec(),
            wait: None,
            activity: None,
            positions: Vec::new(),
        };
        let (rows, outside) = functions(
            &[
                s(&[coreclr, 3, 1, 2], 10),
                s(&[3, 1, 2], 5),
                s(&[2], 1),
                s(&[coreclr], 7),
            ],
            &n,
        );
        let got: Vec<_> = rows
            .iter()
            .map(|r| (r.name.as_str(), r.self_cpu_ns, r.total_cpu_ns))
            .collect();
        assert_eq!(got, [("App.Parse", 15, 15), ("App.Main", 1, 16)]);
        assert_eq!(outside, 7);
    }
}
