//! The settings table's rows as command-line options: `SettingArgs` makes one clap option
//! per variable with a [`Flag`] (its name, value, help, default and parser from the table)
//! and reads them back as typed settings. A leaf: `cli` flattens it into its commands, and
//! `settings` turns `record`'s into the settings a run starts with.

use std::path::Path;
use std::sync::OnceLock;

use anyhow::Result;
use clap::builder::{PossibleValuesParser, TypedValueParser, ValueParser};
use clap::parser::ValueSource;
use clap::{Arg, ArgAction, ArgMatches};
use clrprof_settings::{Flag, Mode, Settings, TABLE, Takes, Variable, var};

/// `--alloc` without `--alloc-interval`: the runtime's own mean (100 KiB).
pub const DEFAULT_ALLOC_INTERVAL: u64 = 100 * 1024;

/// `record`'s mode when `--mode` is not given (the agent alone defaults to events).
pub const RECORD_MODE: Mode = Mode::Sample;

/// Which of the table's options a command takes.
pub trait Selection: Clone + std::fmt::Debug + Send + Sync + 'static {
    /// The variables whose options it takes; `None`: every variable with a [`Flag`].
    const ONLY: Option<&'static [&'static str]>;
}

/// `record`: every option of the table.
#[derive(Clone, Debug)]
pub struct Record;

impl Selection for Record {
    const ONLY: Option<&'static [&'static str]> = None;
}

/// `top`: how it samples.
#[derive(Clone, Debug)]
pub struct Sampling;

impl Selection for Sampling {
    const ONLY: Option<&'static [&'static str]> = Some(&[var::RATE_HZ, var::SAMPLER]);
}

/// `dump`: how it captures stacks.
#[derive(Clone, Debug)]
pub struct Stacks;

impl Selection for Stacks {
    const ONLY: Option<&'static [&'static str]> = Some(&[var::SAMPLER]);
}

/// The options that are agent settings: one `clap` argument per row of the settings
/// table with a [`Flag`] (of those `S` selects; `clap::Args` by hand, which the commands
/// flatten).
#[derive(Clone, Debug)]
pub struct SettingArgs<S: Selection = Record> {
    /// What the options ask for, over the defaults of the mode given (or
    /// [`RECORD_MODE`]).
    pub settings: Settings,
    /// The variables of the options given on the command line, in the table's order.
    pub given: Vec<&'static str>,
    selection: std::marker::PhantomData<S>,
}

impl<S: Selection> SettingArgs<S> {
    /// Whether the option of variable `name` was given.
    pub fn has(&self, name: &str) -> bool {
        self.given.contains(&name)
    }

    /// `--sampler`, if given.
    pub fn sampler(&self) -> Option<clrprof_settings::SamplerKind> {
        self.has(var::SAMPLER).then_some(self.settings.sampler)
    }

    /// `--output`, if given.
    pub fn output(&self) -> Option<&Path> {
        self.has(var::OUTPUT)
            .then_some(self.settings.output.as_path())
    }
}

/// The table's rows that are options.
fn options() -> impl Iterator<Item = (&'static Variable, Flag)> {
    TABLE.iter().filter_map(|v| Some((v, v.flag?)))
}

/// The table's rows that are options of `S`.
fn selected<S: Selection>() -> impl Iterator<Item = (&'static Variable, Flag)> {
    options().filter(|(v, _)| S::ONLY.is_none_or(|only| only.contains(&v.name)))
}

/// The value `record` gives an option's setting when it is not given (the options whose
/// help shows it): the table's default for [`RECORD_MODE`]. Made once per process.
fn shown_default(name: &str) -> Option<&'static str> {
    static DEFAULTS: OnceLock<Vec<(&'static str, &'static str)>> = OnceLock::new();
    let defaults = DEFAULTS.get_or_init(|| {
        Settings::for_mode(RECORD_MODE)
            .to_env()
            .into_iter()
            .filter(|(k, _)| options().any(|(v, f)| v.name == *k && f.shows_default))
            // `clap` keeps `'static` defaults; these few live as long as the process.
            .map(|(k, v)| (k, &*Box::leak(v.into_boxed_str())))
            .collect()
    });
    defaults.iter().find(|(k, _)| *k == name).map(|(_, v)| *v)
}

/// The `clap` argument of a table row. Its id is the long form.
fn argument(v: &'static Variable, f: Flag) -> Arg {
    let mut arg = Arg::new(f.long).long(f.long).help(f.help);
    if let Some(c) = f.short {
        arg = arg.short(c);
    }
    if f.takes == Takes::Switch {
        return arg.action(ArgAction::SetTrue);
    }
    // The variable's own reader checks each value, after the option's conversion.
    let parser = match f.values {
        Some(values) => ValueParser::new(
            PossibleValuesParser::new(values()).try_map(move |text: String| v.option_value(&text)),
        ),
        None => ValueParser::new(TableValue(v)),
    };
    arg = arg.value_name(f.value_name).value_parser(parser);
    arg = match f.takes {
        Takes::Many(_) => arg.action(ArgAction::Append),
        _ => arg.action(ArgAction::Set),
    };
    match shown_default(v.name) {
        Some(d) if f.shows_default => arg.default_value(d),
        _ => arg,
    }
}

/// A value of a table option: UTF-8 (settings travel to the agent as text), then what
/// its variable accepts.
#[derive(Clone)]
struct TableValue(&'static Variable);

impl TypedValueParser for TableValue {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        if value.to_str().is_none() {
            let option = arg.and_then(Arg::get_long).unwrap_or_default();
            return Err(clap::Error::raw(
                clap::error::ErrorKind::InvalidUtf8,
                format!(
                    "invalid value {:?} for '--{option}': not valid UTF-8, which the settings \
                     (and the trace header) hold; choose another\n",
                    value.to_string_lossy()
                ),
            )
            .with_cmd(cmd));
        }
        let v = self.0;
        (move |text: &str| v.option_value(text)).parse_ref(cmd, arg, value)
    }
}

impl<S: Selection> clap::Args for SettingArgs<S> {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        selected::<S>().fold(cmd, |cmd, (v, f)| cmd.arg(argument(v, f)))
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

impl<S: Selection> clap::FromArgMatches for SettingArgs<S> {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        // The variable's text of each option given, in the table's order.
        let mut given = Vec::new();
        for (v, f) in selected::<S>() {
            if m.value_source(f.long) != Some(ValueSource::CommandLine) {
                continue;
            }
            let text = match f.takes {
                Takes::Switch => "1".to_string(),
                Takes::One => m.get_one::<String>(f.long).cloned().unwrap_or_default(),
                Takes::Many(separator) => m
                    .get_many::<String>(f.long)
                    .map(|values| values.cloned().collect::<Vec<_>>().join(separator))
                    .unwrap_or_default(),
            };
            given.push((v, f, text));
        }
        // Each value was checked as it was parsed; over the mode's defaults it reads the
        // same, except `--events default`, which means the mode's groups.
        let read = |settings: &mut Settings, v: &Variable, f: &Flag, text: &str| {
            v.read(settings, text).map_err(|e| {
                clap::Error::raw(
                    clap::error::ErrorKind::ValueValidation,
                    format!("invalid value '{text}' for '--{}': expected {e}\n", f.long),
                )
            })
        };
        // The mode first: the other defaults depend on it (as the agent reads its
        // variables).
        let mut settings = Settings::for_mode(RECORD_MODE);
        if let Some((v, f, text)) = given.iter().find(|(v, _, _)| v.name == var::MODE) {
            read(&mut settings, v, f, text)?;
            settings = Settings::for_mode(settings.mode);
        }
        for (v, f, text) in &given {
            read(&mut settings, v, f, text)?;
        }
        Ok(SettingArgs {
            settings,
            given: given.iter().map(|(v, _, _)| v.name).collect(),
            selection: std::marker::PhantomData,
        })
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}
