//! `clrprof completions SHELL` and `clrprof man`: generated from the clap definitions in
//! `cli.rs` at run time, so that they never drift from the commands.

use anyhow::Result;
use clap::CommandFactory;

use crate::cli::{Cli, Shell};

pub fn completions(shell: Shell) -> Result<i32> {
    let mut cmd = Cli::command();
    let mut out = Vec::new();
    let shell = match shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
    };
    clap_complete::generate(shell, &mut cmd, "clrprof", &mut out);
    crate::stdout::write_stdout(&out)
}

pub fn man() -> Result<i32> {
    let mut out = Vec::new();
    clap_mangen::Man::new(Cli::command()).render(&mut out)?;
    crate::stdout::write_stdout(&out)
}
