//! Recognising the .NET SDK's own processes. `clrprof record -- dotnet run` starts the
//! SDK (`dotnet run` hosts the SDK's `dotnet.dll`), which builds with MSBuild nodes and
//! the compiler server before it starts the app: all of them inherit the profiler
//! variables. Profiling them gives the user traces of the build, not of their app, so by
//! default they decline (`CLRPROF_PROFILE_SDK=1` profiles them too). Pure: the command
//! line in, a description out.

/// Managed programs of the SDK, by file name.
const SDK_DLLS: &[&str] = &[
    "dotnet.dll",
    "msbuild.dll",
    "vbcscompiler.dll",
    "csc.dll",
    "vbc.dll",
    "nuget.build.tasks.console.dll",
    "microsoft.build.tasks.codeanalysis.dll",
];

/// An SDK process recognised by its command line.
#[derive(Debug, PartialEq, Eq)]
pub struct SdkProcess {
    /// E.g. "the .NET SDK command `dotnet run`".
    pub what: String,
    /// A build tool (MSBuild node, compiler) run by MSBuild, which turns every line on
    /// its stderr into a build error: it must decline without a word.
    pub quiet: bool,
}

/// Whether `path` lies in an SDK directory (`…/sdk/<version>/…`).
fn in_sdk_dir(path: &str) -> bool {
    path.split("/sdk/")
        .skip(1)
        .any(|tail| tail.starts_with(|c: char| c.is_ascii_digit()))
}

/// What SDK process `argv` is, or `None` for anything else (an app).
pub fn sdk_process(argv: &[String]) -> Option<SdkProcess> {
    let tool = |what: String| {
        Some(SdkProcess {
            what: format!("the .NET SDK's {what}"),
            quiet: true,
        })
    };
    let (program, rest) = argv.split_first()?;
    let base = program.rsplit('/').next().unwrap_or(program);
    // Apphosts of the SDK's tools (`…/sdk/10.0.100/Roslyn/bincore/csc`).
    let lower_base = base.to_ascii_lowercase();
    if in_sdk_dir(program)
        || ["csc", "vbc", "vbcscompiler", "msbuild"].contains(&lower_base.as_str())
    {
        return tool(base.to_string());
    }
    if base != "dotnet" && base != "dotnet.exe" {
        return None;
    }
    // `dotnet [host options] app.dll …` or `dotnet exec [options] app.dll …`: the first
    // argument naming a .dll is the program. Without one, it is an SDK command.
    let mut i = 0;
    while i < rest.len() {
        let a = rest[i].as_str();
        if a == "exec" && i == 0 {
            i += 1;
            continue;
        }
        if let Some(opt) = a.strip_prefix("--") {
            // Host options that take a value.
            if matches!(
                opt,
                "additionalprobingpath"
                    | "depsfile"
                    | "runtimeconfig"
                    | "fx-version"
                    | "roll-forward"
                    | "additional-deps"
            ) {
                i += 2;
            } else {
                i += 1;
            }
            continue;
        }
        let lower = a.to_ascii_lowercase();
        if lower.ends_with(".dll") || lower.ends_with(".exe") {
            let file = lower.rsplit('/').next().unwrap_or(&lower);
            if SDK_DLLS.contains(&file) || in_sdk_dir(&lower) {
                return tool(a.rsplit('/').next().unwrap_or(a).to_string());
            }
            return None;
        }
        return Some(SdkProcess {
            what: format!("the .NET SDK command `dotnet {a}`"),
            quiet: false,
        });
    }
    Some(SdkProcess {
        what: "the .NET SDK command `dotnet`".into(),
        quiet: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<String> {
        s.split(' ').map(String::from).collect()
    }

    #[test]
    fn apps_are_not_sdk() {
        for cmd in [
            "dotnet app.dll",
            "/usr/share/dotnet/dotnet /home/u/bin/Release/net10.0/App.dll wait",
            "dotnet exec --runtimeconfig x.json app.dll",
            "/home/u/bin/App",
            "dotnet /home/u/src/sdk/tool/bin/Tool.dll",
        ] {
            assert_eq!(sdk_process(&argv(cmd)), None, "{cmd}");
        }
    }

    #[test]
    fn sdk_commands_and_nodes_are_recognised() {
        for cmd in [
            "dotnet run -c Release",
            "dotnet build",
            "/usr/lib/dotnet/dotnet /usr/lib/dotnet/sdk/10.0.100/MSBuild.dll -nologo -nodemode:1",
            "/usr/lib/dotnet/dotnet /usr/lib/dotnet/sdk/10.0.100/Roslyn/bincore/VBCSCompiler.dll -pipename:x",
            "/usr/lib/dotnet/dotnet exec /usr/lib/dotnet/sdk/10.0.100/Roslyn/bincore/csc.dll @x.rsp",
            "/usr/share/dotnet/sdk/10.0.401/Roslyn/bincore/csc /noconfig @/tmp/x.rsp",
            "dotnet",
        ] {
            assert!(sdk_process(&argv(cmd)).is_some(), "{cmd}");
        }
        let run = sdk_process(&argv("dotnet run -c Release")).unwrap();
        assert_eq!(run.what, "the .NET SDK command `dotnet run`");
        assert!(!run.quiet);
        // Tools MSBuild runs decline silently: their stderr becomes build errors.
        let csc = sdk_process(&argv(
            "/usr/share/dotnet/sdk/10.0.401/Roslyn/bincore/csc /noconfig",
        ));
        assert!(csc.unwrap().quiet);
    }
}
