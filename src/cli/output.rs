//! Printing results: JSON or human text on stdout, progress on stderr only when it is
//! a terminal. Times are Unix milliseconds in JSON and ISO 8601 (UTC) for people.

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
            // No length until the walk has counted the files: an empty bar, not a full one.
            ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr())
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

/// `ms` (Unix milliseconds) as ISO 8601 in UTC to the second, e.g.
/// `2026-11-28T07:00:04Z`: what people read where JSON keeps the milliseconds.
pub fn iso_ms(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest / 60 % 60,
        rest % 60
    )
}

/// The proleptic Gregorian date `days` after 1970-01-01 (Howard Hinnant's
/// `civil_from_days`, for days on or after the epoch).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::iso_ms;

    #[test]
    fn iso_ms_matches_known_instants() {
        assert_eq!(iso_ms(0), "1970-01-01T00:00:00Z");
        // Checked with `date -u -d @SECONDS`: both ends of a leap day, a late-year date.
        assert_eq!(iso_ms(951_782_400_000), "2000-02-29T00:00:00Z");
        assert_eq!(iso_ms(951_868_799_999), "2000-02-29T23:59:59Z");
        assert_eq!(iso_ms(1_795_849_204_123), "2026-11-28T07:00:04Z");
    }
}
