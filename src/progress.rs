//! A progress bar on standard error for long commands (`compare` over several instances,
//! `reproduce`, `max-batch`): only when standard error is a terminal and the output is the human
//! table, so `--json` / `--csv` output and piped runs never see it.

use std::io::IsTerminal;

/// A bar, or nothing when progress is not shown.
pub struct Progress(Option<indicatif::ProgressBar>);

impl Progress {
    /// A bar over `total` steps of `what`, shown when `table` output goes with a terminal on
    /// standard error.
    pub fn new(total: usize, what: &str, table: bool) -> Progress {
        if !table || !std::io::stderr().is_terminal() || total < 2 {
            return Progress(None);
        }
        let bar = indicatif::ProgressBar::new(total as u64);
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "{msg} [{bar:30}] {pos}/{len} {elapsed_precise} (eta {eta})",
        ) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_message(what.to_string());
        Progress(Some(bar))
    }

    /// Whether the bar is shown.
    pub fn shown(&self) -> bool {
        self.0.is_some()
    }

    /// One step done (from any thread).
    pub fn tick(&self) {
        if let Some(b) = &self.0 {
            b.inc(1);
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(b) = &self.0 {
            b.finish_and_clear();
        }
    }
}
