//! Which functions trace mode hooks: `--include` / `--exclude` patterns on
//! `Namespace.Type.Method` names.

use clrprof_settings::Patterns;

/// Include/exclude patterns on `Namespace.Type.Method` names (`clrprof_settings::pattern`).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Filter {
    pub include: Vec<String>,
    pub exclude: Vec<String>,
}

impl Filter {
    /// Functions `include` names (all when it is empty) and `exclude` does not.
    pub fn new(include: &Patterns, exclude: &Patterns) -> Filter {
        Filter {
            include: include.as_slice().to_vec(),
            exclude: exclude.as_slice().to_vec(),
        }
    }

    /// Whether a method of the type `type_name` (`Namespace.Type`, as in method names) may
    /// be accepted: some include pattern's literal start (up to its first `*` or `?`) and
    /// `type_name.` agree as far as both go. Lets the probes skip a type's methods without
    /// naming each.
    pub fn may_accept_type(&self, type_name: &str) -> bool {
        if self.include.is_empty() {
            return true;
        }
        self.include.iter().any(|p| {
            let literal = &p[..p.find(['*', '?']).unwrap_or(p.len())];
            let prefix = type_name.bytes().chain(std::iter::once(b'.'));
            literal.bytes().zip(prefix).all(|(a, b)| a == b)
        })
    }

    pub fn accepts(&self, name: &str) -> bool {
        let m = |p: &String| clrprof_settings::pattern::matches(p, name);
        (self.include.is_empty() || self.include.iter().any(m)) && !self.exclude.iter().any(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filter_rules() {
        let f = Filter::new(
            &Patterns::parse("Scenarios.*"),
            &Patterns::of(["*.Helper*", "Scenarios.Skip.*"]),
        );
        assert!(f.accepts("Scenarios.Program.Fib"));
        assert!(!f.accepts("System.String.Concat"));
        assert!(!f.accepts("Scenarios.Program.HelperA"));
        assert!(!f.accepts("Scenarios.Skip.Me"));
        assert!(Filter::default().accepts("anything"));
    }

    #[test]
    fn types_whose_methods_cannot_match_are_skipped() {
        let f = Filter::new(
            &Patterns::parse("Scenarios.Serve.Burst*;Plugin.PluginEntry.Run"),
            &Patterns::default(),
        );
        assert!(f.may_accept_type("Scenarios.Serve"));
        assert!(f.may_accept_type("Plugin.PluginEntry"));
        assert!(!f.may_accept_type("Scenarios.Served"));
        assert!(!f.may_accept_type("Scenarios.Program"));
        assert!(!f.may_accept_type("System.String"));
        // A type name longer than the literal start: the rest is the pattern's `*`.
        let g = Filter::new(&Patterns::parse("Scen*"), &Patterns::default());
        assert!(g.may_accept_type("Scenarios.Serve+Inner"));
        assert!(!g.may_accept_type("System.Scen"));
        // A leading wildcard accepts every type.
        assert!(
            Filter::new(&Patterns::parse("*.Run"), &Patterns::default())
                .may_accept_type("Any.Type")
        );
        assert!(Filter::default().may_accept_type("Any.Type"));
        // Whatever the type, every method `accepts` takes is of a type this takes.
        for (p, t, m) in [
            ("A.B.C*", "A.B", "C1"),
            ("A.B?.M", "A.Bx", "M"),
            ("A*", "A", "M"),
        ] {
            let f = Filter::new(&Patterns::parse(p), &Patterns::default());
            assert!(f.accepts(&format!("{t}.{m}")), "{p}");
            assert!(f.may_accept_type(t), "{p} {t}");
        }
    }
}
