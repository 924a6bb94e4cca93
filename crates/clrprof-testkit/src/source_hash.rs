//! A fingerprint of everything a test app's build reads from the source tree: the app's
//! directory, the projects it references (transitively), and the shared MSBuild files at the
//! top of `apps/` (`Directory.Build.props` and friends, `global.json`, `nuget.config`).

use std::collections::BTreeSet;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// 64-bit FNV-1a; enough to notice that a source file changed.
struct Fnv(u64);

impl Fnv {
    fn new() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

/// Hex fingerprint of the app in `apps_dir/<app>` and everything its build reads, mixed with
/// `recipe` (the build command, so changing how apps are built also rebuilds them).
pub(crate) fn fingerprint(apps_dir: &Path, app: &str, recipe: &str) -> io::Result<String> {
    let mut files = BTreeSet::new();
    for dir in project_dirs(&apps_dir.join(app))? {
        collect_files(&dir, &mut files)?;
    }
    for entry in fs::read_dir(apps_dir)? {
        let path = entry?.path();
        if path.is_file() && is_shared_build_file(&path) {
            files.insert(path);
        }
    }

    let mut hash = Fnv::new();
    hash.write(recipe.as_bytes());
    for file in &files {
        let name = file.strip_prefix(apps_dir).unwrap_or(file);
        let content = fs::read(file)?;
        hash.write(&[0xff]);
        hash.write(name.to_string_lossy().replace('\\', "/").as_bytes());
        hash.write(&[0]);
        hash.write(&(content.len() as u64).to_le_bytes());
        hash.write(&content);
    }
    Ok(format!("{:016x}-{}", hash.0, files.len()))
}

fn is_shared_build_file(path: &Path) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    name.starts_with("directory.") || name == "global.json" || name == "nuget.config"
}

/// `app_dir` and the directories of every project it references, transitively.
fn project_dirs(app_dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut seen = BTreeSet::new();
    let mut pending = vec![fs::canonicalize(app_dir)?];
    while let Some(dir) = pending.pop() {
        if !seen.insert(dir.clone()) {
            continue;
        }
        for entry in fs::read_dir(&dir)? {
            let path = entry?.path();
            if !is_msbuild_file(&path) {
                continue;
            }
            let text = fs::read_to_string(&path)?;
            for reference in project_references(&text) {
                let project = dir.join(reference.replace('\\', "/"));
                if let Some(parent) = project.parent()
                    && let Ok(parent) = fs::canonicalize(parent)
                {
                    pending.push(parent);
                }
            }
        }
    }
    Ok(seen.into_iter().collect())
}

fn is_msbuild_file(path: &Path) -> bool {
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    path.is_file()
        && matches!(
            ext.as_str(),
            "csproj" | "fsproj" | "vbproj" | "props" | "targets"
        )
}

/// The `Include` values of the `<ProjectReference ...>` elements in an MSBuild file.
fn project_references(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("<ProjectReference") {
        rest = &rest[start + "<ProjectReference".len()..];
        let element = &rest[..rest.find('>').unwrap_or(rest.len())];
        if let Some(value) = attribute(element, "Include") {
            found.push(value.to_owned());
        }
    }
    found
}

fn attribute<'a>(element: &'a str, name: &str) -> Option<&'a str> {
    let mut rest = element;
    while let Some(at) = rest.find(name) {
        let before_ok = at == 0 || rest[..at].ends_with(char::is_whitespace);
        let after = rest[at + name.len()..].trim_start();
        if before_ok && let Some(after_eq) = after.strip_prefix('=') {
            let after_eq = after_eq.trim_start();
            let quote = after_eq.chars().next()?;
            if quote == '"' || quote == '\'' {
                let value = &after_eq[1..];
                return value.find(quote).map(|end| &value[..end]);
            }
        }
        rest = &rest[at + name.len()..];
    }
    None
}

/// Every file under `dir`, skipping build output (`bin/`, `obj/`) and hidden entries.
fn collect_files(dir: &Path, files: &mut BTreeSet<PathBuf>) -> io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') {
            continue;
        }
        let kind = entry.file_type()?;
        if kind.is_dir() {
            if name != "bin" && name != "obj" {
                collect_files(&entry.path(), files)?;
            }
        } else if kind.is_file() {
            files.insert(entry.path());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("clrprof-testkit-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn write(path: &Path, text: &str) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    #[test]
    fn finds_project_references() {
        let text = r#"<ItemGroup>
            <ProjectReference Include="../Plugin/Plugin.csproj"
                              ReferenceOutputAssembly="false" />
            <ProjectReference Condition="x" Include='..\Other\Other.fsproj'/>
            <PackageReference Include="NotAProject" />
          </ItemGroup>"#;
        assert_eq!(
            project_references(text),
            ["../Plugin/Plugin.csproj", "..\\Other\\Other.fsproj"]
        );
    }

    #[test]
    fn changes_with_sources_and_references_but_not_with_build_output() {
        let apps = scratch("hash");
        write(&apps.join("Directory.Build.props"), "<Project/>");
        write(&apps.join("README.md"), "docs");
        write(
            &apps.join("App/App.csproj"),
            r#"<Project><ItemGroup><ProjectReference Include="../Lib/Lib.csproj" /></ItemGroup></Project>"#,
        );
        write(&apps.join("App/Program.cs"), "class P {}");
        write(&apps.join("Lib/Lib.csproj"), "<Project/>");
        write(&apps.join("Lib/Lib.cs"), "class L {}");
        write(&apps.join("Unrelated/U.cs"), "class U {}");
        let base = fingerprint(&apps, "App", "r1").unwrap();
        assert_eq!(base, fingerprint(&apps, "App", "r1").unwrap());
        assert!(base.ends_with("-5"), "{base}");

        // Build output, hidden files, unrelated apps and docs do not count.
        write(&apps.join("App/obj/project.assets.json"), "{}");
        write(&apps.join("App/bin/Release/App.dll"), "MZ");
        write(&apps.join("App/.vs/state"), "x");
        write(&apps.join("Unrelated/U.cs"), "class U2 {}");
        write(&apps.join("README.md"), "more docs");
        assert_eq!(base, fingerprint(&apps, "App", "r1").unwrap());

        // The recipe, the app's sources, referenced projects and shared props do.
        assert_ne!(base, fingerprint(&apps, "App", "r2").unwrap());
        let mut seen = vec![base];
        for (file, text) in [
            ("App/Program.cs", "class P { }"),
            ("App/Sub/New.cs", "class N {}"),
            ("Lib/Lib.cs", "class L { }"),
            ("Directory.Build.props", "<Project></Project>"),
        ] {
            write(&apps.join(file), text);
            let now = fingerprint(&apps, "App", "r1").unwrap();
            assert!(
                !seen.contains(&now),
                "changing {file} kept the fingerprint {now}"
            );
            seen.push(now);
        }
        let _ = fs::remove_dir_all(&apps);
    }
}
