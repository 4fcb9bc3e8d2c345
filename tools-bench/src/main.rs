// SPDX-License-Identifier: GPL-2.0
//! migbench: move_pages() throughput of page migration by folio size.
//!
//! `migbench run` measures on the machine it runs on (as root, with two
//! NUMA nodes); `migbench report` turns the JSON of several runs into the
//! comparison table, a Markdown report and a plot.

mod args;
mod bench;
mod output;
mod progress;
#[cfg(feature = "report")]
mod report;
mod stats;
mod sys;

use std::process::ExitCode;

const USAGE: &str = "\
usage: migbench run [options]        measure here (--help for the options)
       migbench report [options] RUN.json...
                                     compare runs (built with the 'report' feature)";

fn write_out(path: &str, text: &str) -> Result<(), String> {
    if path == "-" {
        print!("{text}");
        Ok(())
    } else {
        std::fs::write(path, text).map_err(|e| format!("write {path}: {e}"))
    }
}

fn run(argv: &[String]) -> Result<(), String> {
    if argv.iter().any(|a| a == "--help" || a == "-h") {
        println!("{}", args::RUN_USAGE);
        return Ok(());
    }
    let o = args::parse_run(argv).map_err(|e| format!("{e}\n{}", args::RUN_USAGE))?;
    let report = bench::run(&o)?;
    // The table goes to stderr when stdout carries JSON or CSV.
    let to_stdout = o.json.as_deref() != Some("-") && o.csv.as_deref() != Some("-");
    if to_stdout {
        print!("{}", report.table());
    } else {
        eprint!("{}", report.table());
    }
    if let Some(path) = &o.json {
        let text = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
        write_out(path, &(text + "\n"))?;
    }
    if let Some(path) = &o.csv {
        write_out(path, &report.csv())?;
    }
    Ok(())
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let result = match argv.first().map(String::as_str) {
        Some("run") => run(&argv[1..]),
        #[cfg(feature = "report")]
        Some("report") => report::main(&argv[1..]),
        _ => Err(USAGE.to_string()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("migbench: {e}");
            ExitCode::FAILURE
        }
    }
}
