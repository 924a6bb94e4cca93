//! Which functions trace mode hooks: `--include` / `--exclude` patterns on
//! `Namespace.Type.Method` names.

/// Include/exclude patterns on `Namespace.Type.Method` names (`clrprof_settings::pattern`).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Filter {
    pub include: Vec<String>,
    pub exclude: Vec<String>,
}

impl Filter {
    /// Patterns separated by `;` (commas appear in generic names).
    pub fn parse(include: Option<&str>, exclude: Option<&str>) -> Filter {
        let split = |s: Option<&str>| -> Vec<String> {
            s.map(|s| {
                s.split(';')
                    .map(str::trim)
                    .filter(|p| !p.is_empty())
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default()
        };
        Filter {
            include: split(include),
            exclude: split(exclude),
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
        let f = Filter::parse(Some("Scenarios.*"), Some("*.Helper*;Scenarios.Skip.*"));
        assert!(f.accepts("Scenarios.Program.Fib"));
        assert!(!f.accepts("System.String.Concat"));
        assert!(!f.accepts("Scenarios.Program.HelperA"));
        assert!(!f.accepts("Scenarios.Skip.Me"));
        assert!(Filter::default().accepts("anything"));
    }
}
