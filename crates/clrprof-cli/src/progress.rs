//! The spinner of long `report` and `convert` runs: drawn on stderr only when stderr is
//! a terminal (indicatif hides it otherwise, so a pipe or a log file gets none), cleared
//! when the work is done.

use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

pub struct Progress(ProgressBar);

impl Progress {
    pub fn start(first: impl Into<String>) -> Progress {
        let bar = ProgressBar::new_spinner();
        bar.set_style(
            ProgressStyle::with_template("{spinner} {msg} [{elapsed}]")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        bar.enable_steady_tick(Duration::from_millis(100));
        let p = Progress(bar);
        p.step(first);
        p
    }

    /// The next step's message, drawn at once.
    pub fn step(&self, msg: impl Into<String>) {
        self.0.set_message(msg.into());
        self.0.tick();
    }

    /// Prints a line above the spinner.
    pub fn println(&self, line: &str) {
        self.0.suspend(|| eprintln!("{line}"));
    }

    pub fn done(&self) {
        self.0.finish_and_clear();
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.0.finish_and_clear();
    }
}
