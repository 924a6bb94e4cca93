//! The Modules section: the paths of the modules loaded.

use std::fmt::Write;

use crate::report::ModuleInfo;

pub fn render(o: &mut String, modules: &[ModuleInfo], top: usize) {
    if modules.is_empty() {
        return;
    }
    let _ = writeln!(o, "\nModules ({})", modules.len());
    for m in modules.iter().take(top) {
        let _ = writeln!(o, "  {}", m.path);
    }
    if modules.len() > top {
        let _ = writeln!(o, "  … {} more", modules.len() - top);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_then_how_many_more() {
        let module = |path: &str| ModuleInfo {
            id: 1,
            path: path.into(),
            assembly: 2,
            loaded_ns: 3,
        };
        let modules = [module("/a.dll"), module("/b.dll"), module("/c.dll")];
        let mut o = String::new();
        render(&mut o, &[], 5);
        assert_eq!(o, "");
        render(&mut o, &modules, 2);
        assert_eq!(o, "\nModules (3)\n  /a.dll\n  /b.dll\n  … 1 more\n");
    }
}
