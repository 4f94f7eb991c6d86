//! Printing results: JSON or human text on stdout, progress on stderr only when it is
//! a terminal.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use anyhow::Result;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Serialize;

/// Where results go, and in which form.
pub struct Output {
    json: bool,
}

impl Output {
    pub fn new(json: bool) -> Output {
        Output { json }
    }

    pub fn is_json(&self) -> bool {
        self.json
    }

    /// Print `value` as JSON, or `human()` as text.
    pub fn value<T: Serialize>(&self, value: &T, human: impl FnOnce() -> String) -> Result<()> {
        let mut stdout = std::io::stdout().lock();
        if self.json {
            serde_json::to_writer(&mut stdout, value)?;
            writeln!(stdout)?;
        } else {
            let text = human();
            if !text.is_empty() {
                writeln!(stdout, "{}", text.trim_end_matches('\n'))?;
            }
        }
        Ok(())
    }

    /// A progress bar of `len` steps on stderr; invisible when stderr is not a
    /// terminal or JSON was asked for.
    pub fn bar(&self, message: &str) -> ProgressBar {
        let pb = if std::io::stderr().is_terminal() && !self.json {
            ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr())
        } else {
            ProgressBar::hidden()
        };
        pb.set_style(
            ProgressStyle::with_template(
                "{msg} [{bar:30}] {pos}/{len} files ({elapsed}, eta {eta})",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        pb.set_message(message.to_string());
        pb
    }

    /// A spinner on stderr while long work runs; invisible when stderr is not a
    /// terminal (piped, CI) or JSON was asked for.
    pub fn spinner(&self, message: &str) -> ProgressBar {
        let pb = if std::io::stderr().is_terminal() && !self.json {
            ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr())
        } else {
            ProgressBar::hidden()
        };
        pb.set_style(
            ProgressStyle::with_template("{spinner} {msg} ({elapsed})")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        pb.set_message(message.to_string());
        pb.enable_steady_tick(Duration::from_millis(120));
        pb
    }
}
