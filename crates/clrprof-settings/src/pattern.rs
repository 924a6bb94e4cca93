//! The one pattern syntax of every option that picks functions or types by name
//! (`--include`, `--exclude`, `--args`, `--function`, `--calls`, `--paths-to`,
//! `--statics`; docs/configuration.md, "Patterns"):
//!
//! * `*` matches any run of characters, none included;
//! * `?` matches exactly one character;
//! * every other character matches itself (case-sensitive; there is no escape);
//! * the pattern matches the whole name.
//!
//! The matcher keeps one backtracking point (the last `*`), so it takes at most
//! (pattern length + 1) × (name length + 1) steps, whatever the pattern: `*a*a*a*a*a*b`
//! on a long name is as quick as any other. It allocates nothing.

/// The name patterns of one option (`--include A --include B`), as the settings carry
/// them: a list, none empty. In the environment and in the trace header they are
/// `;`-joined (commas appear in generic names), and an empty list is no value (`null`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Patterns(Vec<String>);

impl Patterns {
    /// The patterns of `list`, each of which may itself hold several `;`-separated ones;
    /// blanks around a pattern are dropped, and so are empty ones.
    pub fn of<S: AsRef<str>>(list: impl IntoIterator<Item = S>) -> Patterns {
        Patterns(
            list.into_iter()
                .flat_map(|p| {
                    p.as_ref()
                        .split(';')
                        .map(str::trim)
                        .filter(|p| !p.is_empty())
                        .map(String::from)
                        .collect::<Vec<_>>()
                })
                .collect(),
        )
    }

    /// `;`-separated patterns, as the environment carries them.
    pub fn parse(joined: &str) -> Patterns {
        Patterns::of([joined])
    }

    /// The `;`-joined form; `None` for no pattern.
    pub fn joined(&self) -> Option<String> {
        (!self.0.is_empty()).then(|| self.0.join(";"))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn as_slice(&self) -> &[String] {
        &self.0
    }

    /// Whether one of the patterns matches `name` ([`matches`]).
    pub fn any_matches(&self, name: &str) -> bool {
        self.0.iter().any(|p| matches(p, name))
    }
}

impl serde::Serialize for Patterns {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.joined().serialize(s)
    }
}

impl<'de> serde::Deserialize<'de> for Patterns {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Patterns, D::Error> {
        let joined: Option<String> = serde::Deserialize::deserialize(d)?;
        Ok(joined.map_or_else(Patterns::default, |j| Patterns::parse(&j)))
    }
}

/// Whether `name` matches `pattern` as a whole.
pub fn matches(pattern: &str, name: &str) -> bool {
    let mut steps = 0;
    matches_counting(pattern, name, &mut steps)
}

/// Whether `name` matches `pattern`, or, for a pattern without a dot, the name's last
/// dot-separated part does (`Node` matches `Shop.Cart.Node`): how the heap options name a
/// type by its short name.
pub fn matches_or_short_name(pattern: &str, name: &str) -> bool {
    if matches(pattern, name) {
        return true;
    }
    !pattern.contains('.')
        && name
            .rsplit('.')
            .next()
            .is_some_and(|short| matches(pattern, short))
}

/// [`matches`], adding the steps it took to `steps` (each one compares or skips one
/// character of the pattern or the name).
pub fn matches_counting(pattern: &str, name: &str, steps: &mut u64) -> bool {
    let (p, n) = (pattern, name);
    let at = |s: &str, i: usize| s[i..].chars().next();
    let (mut pi, mut ni) = (0, 0);
    // After the last `*` seen: where the pattern resumes, and the name position that
    // `*` has swallowed up to.
    let mut star: Option<(usize, usize)> = None;
    loop {
        *steps += 1;
        match at(p, pi) {
            Some('*') => {
                pi += 1;
                star = Some((pi, ni));
                continue;
            }
            Some(pc) => {
                if let Some(nc) = at(n, ni)
                    && (pc == '?' || pc == nc)
                {
                    pi += pc.len_utf8();
                    ni += nc.len_utf8();
                    continue;
                }
            }
            None if ni == n.len() => return true,
            None => {}
        }
        // A mismatch: the last `*` takes one more character, or there is no match.
        match star {
            Some((resume, swallowed)) => match at(n, swallowed) {
                Some(c) => {
                    let swallowed = swallowed + c.len_utf8();
                    star = Some((resume, swallowed));
                    pi = resume;
                    ni = swallowed;
                }
                None => return false,
            },
            None => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_lists_travel_joined() {
        let p = Patterns::of(["A.*", " B.* ;C.*", "", ";"]);
        assert_eq!(p.as_slice(), ["A.*", "B.*", "C.*"]);
        assert_eq!(p.joined().as_deref(), Some("A.*;B.*;C.*"));
        assert_eq!(Patterns::parse("A.*;B.*;C.*"), p);
        assert_eq!(serde_json::to_string(&p).unwrap(), r#""A.*;B.*;C.*""#);
        assert_eq!(serde_json::to_string(&Patterns::default()).unwrap(), "null");
        assert_eq!(
            serde_json::from_str::<Patterns>("null").unwrap(),
            Patterns::default()
        );
        assert_eq!(
            serde_json::from_str::<Patterns>(r#""A.*;B.*;C.*""#).unwrap(),
            p
        );
        assert!(Patterns::parse(" ; ").is_empty());
        assert!(p.any_matches("B.x") && !p.any_matches("D.x"));
    }

    #[test]
    fn the_syntax() {
        assert!(matches("Shop.*", "Shop.Cart.Add"));
        assert!(matches("*.Add", "Shop.Cart.Add"));
        assert!(matches("Shop.Cart.A?d", "Shop.Cart.Add"));
        assert!(matches("*", ""));
        assert!(matches("", ""));
        assert!(matches("a*b*c", "abc"));
        assert!(matches("a*b*c", "a-b-b-c"));
        assert!(matches("*Cart*", "Shop.Cart.Add"));
        assert!(matches("Dictionary`2<*>.Add", "Dictionary`2<K,V>.Add"));
        assert!(matches("N?de", "Nöde"), "? is one character, not one byte");
        assert!(!matches("Shop.*", "Other.Cart"));
        assert!(!matches("shop.*", "Shop.Cart"), "case-sensitive");
        assert!(!matches("Shop", "Shop.Cart"), "the whole name");
        assert!(!matches("?", ""));
        assert!(!matches("a*b", "a-b-c"));
    }

    #[test]
    fn short_names_for_patterns_without_a_dot() {
        assert!(matches_or_short_name(
            "Scenarios.Heap.Node",
            "Scenarios.Heap.Node"
        ));
        assert!(matches_or_short_name("Node", "Scenarios.Heap.Node"));
        assert!(matches_or_short_name("*.Node", "Scenarios.Heap.Node"));
        assert!(matches_or_short_name("No?e", "Scenarios.Heap.Node"));
        assert!(!matches_or_short_name("Heap.Node", "Scenarios.Heap.Node"));
        assert!(!matches_or_short_name("Nod", "Scenarios.Heap.Node"));
    }

    /// A pattern that makes a backtracking matcher try every way of placing its stars
    /// (about n⁵ for five stars) takes at most (pattern + 1) × (name + 1) steps here.
    #[test]
    fn a_pathological_pattern_takes_bounded_steps() {
        let pattern = "*a*a*a*a*a*b";
        for len in [10usize, 1_000, 20_000] {
            let name = "a".repeat(len);
            let mut steps = 0;
            assert!(!matches_counting(pattern, &name, &mut steps));
            let bound = (pattern.len() as u64 + 1) * (len as u64 + 1);
            assert!(steps <= bound, "{len}: {steps} steps, bound {bound}");
            // And a matching name of the same length.
            let name = format!("{}b", "a".repeat(len));
            let mut steps = 0;
            assert!(matches_counting(pattern, &name, &mut steps));
            assert!(steps <= bound + pattern.len() as u64 + 1, "{len}: {steps}");
        }
    }
}
