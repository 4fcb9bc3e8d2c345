// SPDX-License-Identifier: GPL-2.0
//! A progress bar on standard error, drawn only when it is a terminal.

use std::io::{IsTerminal, Write};

pub struct Progress {
    enabled: bool,
    total: usize,
    done: usize,
    label: String,
}

impl Progress {
    pub fn new(wanted: bool, total: usize) -> Progress {
        Progress {
            enabled: wanted && std::io::stderr().is_terminal(),
            total,
            done: 0,
            label: String::new(),
        }
    }

    pub fn label(&mut self, label: &str) {
        self.label = label.to_string();
        self.draw();
    }

    pub fn step(&mut self) {
        self.done = (self.done + 1).min(self.total);
        self.draw();
    }

    fn draw(&self) {
        if !self.enabled {
            return;
        }
        eprint!("\r{}\x1b[K", bar(self.done, self.total, 30, &self.label));
        let _ = std::io::stderr().flush();
    }

    pub fn finish(&self) {
        if self.enabled {
            eprint!("\r\x1b[K");
        }
    }
}

/// "[#####.....]  5/10 label"
pub fn bar(done: usize, total: usize, width: usize, label: &str) -> String {
    let filled = (done * width).checked_div(total).unwrap_or(width);
    format!(
        "[{}{}] {done}/{total} {label}",
        "#".repeat(filled),
        ".".repeat(width - filled)
    )
}

#[cfg(test)]
mod tests {
    use super::bar;

    #[test]
    fn bar_fills_in_proportion() {
        assert_eq!(bar(0, 4, 4, "x"), "[....] 0/4 x");
        assert_eq!(bar(2, 4, 4, "x"), "[##..] 2/4 x");
        assert_eq!(bar(4, 4, 4, ""), "[####] 4/4 ");
        assert_eq!(bar(0, 0, 2, ""), "[##] 0/0 ");
    }
}
