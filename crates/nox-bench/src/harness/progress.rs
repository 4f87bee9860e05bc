//! Progress for long `nox bench` runs, on stderr (stdout stays for results).
//!
//! On a terminal: one bar redrawn in place. Elsewhere (CI logs, pipes): a
//! plain line at every quarter, so logs stay short. A dependency such as
//! `indicatif` would bring a terminal stack for what is one line of output.

use std::{
    io::{IsTerminal, Write},
    time::Instant,
};

/// A progress bar over `total` steps.
pub struct Progress {
    label: String,
    total: u64,
    done: u64,
    started: Instant,
    terminal: bool,
    last_quarter: u64,
}

impl Progress {
    /// Starts a bar for `label` with `total` steps (at least 1).
    pub fn new(label: impl Into<String>, total: u64) -> Self {
        let bar = Self {
            label: label.into(),
            total: total.max(1),
            done: 0,
            started: Instant::now(),
            terminal: std::io::stderr().is_terminal(),
            last_quarter: 0,
        };
        bar.draw();
        bar
    }

    /// Advances by `steps`.
    pub fn advance(&mut self, steps: u64) {
        self.done = (self.done + steps).min(self.total);
        if self.terminal {
            self.draw();
        } else {
            let quarter = self.done * 4 / self.total;
            if quarter > self.last_quarter {
                self.last_quarter = quarter;
                self.draw();
            }
        }
    }

    /// Marks the bar complete and ends its line.
    pub fn finish(mut self) {
        self.done = self.total;
        self.draw();
        if self.terminal {
            eprintln!();
        }
    }

    fn draw(&self) {
        const WIDTH: u64 = 30;
        let filled = (self.done * WIDTH / self.total) as usize;
        let bar = format!("{}{}", "#".repeat(filled), "-".repeat(WIDTH as usize - filled));
        let line = format!(
            "{} [{bar}] {}/{} ({:.0} s)",
            self.label,
            self.done,
            self.total,
            self.started.elapsed().as_secs_f64()
        );
        let mut err = std::io::stderr().lock();
        let _ = if self.terminal { write!(err, "\r{line}") } else { writeln!(err, "{line}") };
        let _ = err.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::Progress;

    #[test]
    fn counts_are_clamped_to_the_total() {
        let mut bar = Progress::new("test", 4);
        bar.advance(3);
        bar.advance(3);
        assert_eq!(bar.done, 4);
        let empty = Progress::new("empty", 0);
        assert_eq!(empty.total, 1);
        bar.finish();
    }
}
