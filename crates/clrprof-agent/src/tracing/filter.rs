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
}
