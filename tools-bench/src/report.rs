// SPDX-License-Identifier: GPL-2.0
//! `migbench report`: compares the runs of several configurations (one JSON
//! file each, as `migbench run --json` writes them) against a baseline, and
//! writes the table, a Markdown report, the merged JSON and a PNG plot.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::fs;

use plotters::prelude::*;
use plotters::style::{register_font, FontStyle};

use crate::args::format_size;
use crate::output::{MemcpyPoint, Point, RunReport};

const USAGE: &str = "\
usage: migbench report [--baseline LABEL] [--meta FILE] [--out DIR] RUN.json...
  --baseline LABEL  the run the ratios are against (default: 'vanilla' if
                    present, else the first)
  --meta FILE       'key: value' lines describing the setup, for the report
  --out DIR         write DIR/report.md, DIR/results.json and DIR/plot.png
  --font FILE       TrueType font for the plot (default: DejaVu Sans)";

/// Line colours that stay apart on white, in matrix order.
const LINE_COLORS: [RGBColor; 8] = [
    RGBColor(0, 0, 0),
    RGBColor(214, 39, 40),
    RGBColor(31, 119, 180),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(23, 190, 207),
];

const DEFAULT_FONT: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";

struct Options {
    baseline: Option<String>,
    meta: Option<String>,
    out: Option<String>,
    font: String,
    runs: Vec<String>,
}

fn parse(argv: &[String]) -> Result<Options, String> {
    let mut o = Options {
        baseline: None,
        meta: None,
        out: None,
        font: DEFAULT_FONT.into(),
        runs: vec![],
    };
    let mut it = argv.iter();
    while let Some(a) = it.next() {
        let mut value = || {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{a} needs a value\n{USAGE}"))
        };
        match a.as_str() {
            "--baseline" => o.baseline = Some(value()?),
            "--meta" => o.meta = Some(value()?),
            "--out" => o.out = Some(value()?),
            "--font" => o.font = value()?,
            "-h" | "--help" => return Err(USAGE.into()),
            s if s.starts_with("--") => return Err(format!("unknown option '{s}'\n{USAGE}")),
            _ => o.runs.push(a.clone()),
        }
    }
    if o.runs.is_empty() {
        return Err(format!("no runs given\n{USAGE}"));
    }
    Ok(o)
}

/// Whether a point's numbers can be read as "the migrator copied this":
/// a run with a migrator whose counters show folios left to the CPU.
fn offload_note(run: &RunReport, p: &Point) -> Option<String> {
    let m = run.migrator.as_deref()?;
    if m == "none" {
        return None;
    }
    let all = p.folios * run.iterations as u64;
    match p.migrator_copied {
        Some(c) if c == all => None,
        Some(c) => Some(format!(
            "{m} copied {c} of {all} folios at {}",
            format_size(p.folio_bytes)
        )),
        None => Some(format!(
            "no offload counters at {}",
            format_size(p.folio_bytes)
        )),
    }
}

/// The comparison: one row per run, one column per folio size; each cell
/// "mean ± sd (ratio to the baseline)". Cells whose offload did not fully
/// happen carry a '*'.
pub fn comparison(runs: &[RunReport], baseline: usize) -> (Vec<u64>, Vec<Vec<String>>) {
    let sizes: Vec<u64> = runs
        .iter()
        .flat_map(|r| r.points.iter().map(|p| p.folio_bytes))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let base = &runs[baseline];
    let parallel = parallel_threads(runs).is_some();
    let rows = runs
        .iter()
        .map(|r| {
            let mut row = vec![r.label.clone()];
            for &s in &sizes {
                let cell = match r.points.iter().find(|p| p.folio_bytes == s) {
                    None => "-".to_string(),
                    Some(p) => {
                        let ratio = base
                            .points
                            .iter()
                            .find(|b| b.folio_bytes == s && b.gbps.mean > 0.0)
                            .map_or(String::new(), |b| {
                                format!(" ({:.2}x)", p.gbps.mean / b.gbps.mean)
                            });
                        let star = if offload_note(r, p).is_some() {
                            "*"
                        } else {
                            ""
                        };
                        format!("{:.3} ± {:.3}{ratio}{star}", p.gbps.mean, p.gbps.sd)
                    }
                };
                row.push(cell);
            }
            row.push(memcpy_cell(&r.memcpy));
            if parallel {
                row.push(memcpy_cell(&r.memcpy_parallel));
            }
            row
        })
        .collect();
    (sizes, rows)
}

fn memcpy_cell(m: &Option<MemcpyPoint>) -> String {
    m.as_ref()
        .map_or("-".into(), |m| format!("{:.3}", m.gbps.mean))
}

/// The thread count of the runs' parallel memcpy reference, if any has one.
fn parallel_threads(runs: &[RunReport]) -> Option<usize> {
    runs.iter()
        .find_map(|r| r.memcpy_parallel.as_ref().map(|m| m.threads))
}

fn header(sizes: &[u64], runs: &[RunReport]) -> Vec<String> {
    let mut h = vec!["configuration".to_string()];
    h.extend(sizes.iter().map(|&s| format_size(s)));
    h.push("memcpy".into());
    if let Some(t) = parallel_threads(runs) {
        h.push(format!("memcpy {t}t"));
    }
    h
}

/// Text table with aligned columns.
pub fn text_table(head: &[String], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = head.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: &[String]| {
        let mut s = String::new();
        for (i, (c, w)) in cells.iter().zip(&widths).enumerate() {
            let pad = w - c.chars().count();
            if i == 0 {
                let _ = write!(s, "{c}{}", " ".repeat(pad));
            } else {
                let _ = write!(s, "  {}{c}", " ".repeat(pad));
            }
        }
        s.trim_end().to_string() + "\n"
    };
    let mut s = line(head);
    for r in rows {
        s += &line(r);
    }
    s
}

pub fn markdown_table(head: &[String], rows: &[Vec<String>]) -> String {
    let mut s = format!("| {} |\n", head.join(" | "));
    s += &format!("|{}\n", "---|".repeat(head.len()));
    for r in rows {
        s += &format!("| {} |\n", r.join(" | "));
    }
    s
}

fn markdown(runs: &[RunReport], baseline: usize, meta: &str, table: &str) -> String {
    let base = &runs[baseline];
    let mut s = String::from("# migbench report\n\n");
    s += "QEMU/TCG (or any virtual machine) numbers are for comparing the configurations \
          of this report with each other, measured in the same run on the same host; they \
          are not hardware figures. Each run allocates fresh memory on the source node, \
          checks through pagemap and kpageflags that it is backed by folios of the size \
          asked for, moves it with move_pages() (one address per folio), then checks every \
          page's node and every byte.\n\n";
    let _ = writeln!(
        s,
        "GB/s (10^9 bytes/s), mean ± sd over {} runs of {} per folio size, node {} -> {}; \
         in brackets the ratio to '{}'. The memcpy column is the guest's memcpy() bandwidth \
         between the same two nodes, the limit any CPU copy works against (with 'memcpy \
         Nt': split over N threads, the limit of a copy on N CPUs). A '*' marks a \
         cell where the migrator did not copy every folio (see below).\n",
        base.iterations,
        format_size(base.total_bytes),
        base.from,
        base.to,
        base.label
    );
    s += table;
    s += "\n## Setup\n\n";
    for l in meta.lines().filter(|l| !l.trim().is_empty()) {
        let _ = writeln!(s, "- {l}");
    }
    let _ = writeln!(s, "- guest machine: {}", base.machine);
    s += "\n## Runs\n\n";
    for r in runs {
        let _ = writeln!(
            s,
            "- **{}**: kernel `{}`, migrator {}",
            r.label,
            r.kernel,
            r.migrator
                .as_deref()
                .map_or("(kernel without copy offload)".into(), |m| format!("`{m}`"))
        );
        for p in &r.points {
            if let (Some(c), Some(f)) = (p.migrator_copied, p.migrator_fallback) {
                if c + f > 0 {
                    let _ = writeln!(
                        s,
                        "  - {}: {} folios copied by the migrator, {} fell back to the CPU, in {} offloaded batches",
                        format_size(p.folio_bytes),
                        c,
                        f,
                        p.offload_batches.unwrap_or(0)
                    );
                }
            }
            if let Some(n) = offload_note(r, p) {
                let _ = writeln!(s, "  - * {n}");
            }
        }
        for l in &r.latency {
            let (head, calls) = l.lines();
            let _ = writeln!(s, "  - {head}");
            for c in calls {
                let _ = writeln!(s, "    - {c}");
            }
        }
    }
    s
}

fn plot(runs: &[RunReport], sizes: &[u64], font: &str, path: &str) -> Result<(), String> {
    let bytes = fs::read(font)
        .map_err(|e| format!("read font {font}: {e} (install fonts-dejavu-core, or --font)"))?;
    // plotters keeps registered fonts for the life of the process.
    let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
    register_font("sans-serif", FontStyle::Normal, bytes)
        .map_err(|_| format!("{font}: not a usable font"))?;

    let ymax = runs
        .iter()
        .flat_map(|r| r.points.iter().map(|p| p.gbps.mean + p.gbps.sd))
        .chain(
            runs.iter()
                .filter_map(|r| r.memcpy.as_ref().map(|m| m.gbps.mean)),
        )
        .fold(0.1f64, f64::max)
        * 1.15;
    let root = BitMapBackend::new(path, (1000, 620)).into_drawing_area();
    let e = |e: DrawingAreaErrorKind<_>| format!("plot: {e}");
    root.fill(&WHITE).map_err(e)?;
    let n = sizes.len();
    let mut chart = ChartBuilder::on(&root)
        .caption("move_pages() throughput by folio size", ("sans-serif", 24))
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(60)
        .build_cartesian_2d(-0.3f64..(n as f64 - 0.7), 0f64..ymax)
        .map_err(e)?;
    chart
        .configure_mesh()
        .x_labels(n)
        .x_label_formatter(&|x| {
            let i = x.round();
            if (x - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < n {
                format_size(sizes[i as usize])
            } else {
                String::new()
            }
        })
        .x_desc("folio size")
        .y_desc("GB/s (mean of the runs; bars: sd)")
        .draw()
        .map_err(e)?;
    for (k, r) in runs.iter().enumerate() {
        let color = LINE_COLORS[k % LINE_COLORS.len()].to_rgba();
        let pts: Vec<(f64, f64, f64)> = sizes
            .iter()
            .enumerate()
            .filter_map(|(i, s)| {
                r.points
                    .iter()
                    .find(|p| p.folio_bytes == *s)
                    .map(|p| (i as f64, p.gbps.mean, p.gbps.sd))
            })
            .collect();
        chart
            .draw_series(LineSeries::new(
                pts.iter().map(|&(x, y, _)| (x, y)),
                color.stroke_width(2),
            ))
            .map_err(e)?
            .label(r.label.clone())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
        chart
            .draw_series(
                pts.iter()
                    .map(|&(x, y, _)| Circle::new((x, y), 3, color.filled())),
            )
            .map_err(e)?;
        chart
            .draw_series(pts.iter().map(|&(x, y, sd)| {
                PathElement::new(
                    vec![(x, (y - sd).max(0.0)), (x, y + sd)],
                    color.stroke_width(1),
                )
            }))
            .map_err(e)?;
    }
    if let Some(m) = runs.iter().find_map(|r| r.memcpy.as_ref()) {
        let grey = RGBColor(120, 120, 120);
        chart
            .draw_series(LineSeries::new(
                vec![(-0.3, m.gbps.mean), (n as f64 - 0.7, m.gbps.mean)],
                grey.stroke_width(1),
            ))
            .map_err(e)?
            .label("memcpy between the nodes")
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], grey.stroke_width(1))
            });
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(e)?;
    root.present().map_err(e)?;
    Ok(())
}

/// Merges runs with the same label (the rounds of `make bench`, each from
/// its own boot) into one: their measurements pooled, their counters added.
pub fn merge_rounds(runs: Vec<RunReport>) -> Result<Vec<RunReport>, String> {
    let mut merged: Vec<RunReport> = Vec::new();
    for r in runs {
        let Some(m) = merged.iter_mut().find(|m| m.label == r.label) else {
            merged.push(r);
            continue;
        };
        if (m.total_bytes, m.from, m.to) != (r.total_bytes, r.from, r.to) {
            return Err(format!("runs of '{}' measured different things", r.label));
        }
        m.iterations += r.iterations;
        for p in r.points {
            match m.points.iter_mut().find(|q| q.folio_bytes == p.folio_bytes) {
                None => m.points.push(p),
                Some(q) => {
                    q.gbps_runs.extend(&p.gbps_runs);
                    q.gbps = crate::stats::MeanSd::of(&q.gbps_runs);
                    q.thp_migrated += p.thp_migrated;
                    q.add_offload(p.offload_batches, p.migrator_copied, p.migrator_fallback);
                }
            }
        }
        m.latency.extend(r.latency);
        for (a, b) in [
            (&mut m.memcpy, r.memcpy),
            (&mut m.memcpy_parallel, r.memcpy_parallel),
        ] {
            match (a, b) {
                (Some(a), Some(b)) => {
                    a.gbps_runs.extend(&b.gbps_runs);
                    a.gbps = crate::stats::MeanSd::of(&a.gbps_runs);
                }
                (a @ None, b) => *a = b,
                _ => {}
            }
        }
    }
    Ok(merged)
}

pub fn main(argv: &[String]) -> Result<(), String> {
    let o = parse(argv)?;
    let runs: Vec<RunReport> = o
        .runs
        .iter()
        .map(|p| {
            let text = fs::read_to_string(p).map_err(|e| format!("read {p}: {e}"))?;
            serde_json::from_str(&text).map_err(|e| format!("{p}: not a migbench run: {e}"))
        })
        .collect::<Result<_, String>>()?;
    let runs = merge_rounds(runs)?;
    let baseline = match &o.baseline {
        Some(b) => runs
            .iter()
            .position(|r| &r.label == b)
            .ok_or_else(|| format!("--baseline {b}: no run has that label"))?,
        None => runs.iter().position(|r| r.label == "vanilla").unwrap_or(0),
    };
    let (sizes, rows) = comparison(&runs, baseline);
    let head = header(&sizes, &runs);
    print!("{}", text_table(&head, &rows));
    let Some(out) = &o.out else { return Ok(()) };
    let meta = match &o.meta {
        Some(m) => fs::read_to_string(m).map_err(|e| format!("read {m}: {e}"))?,
        None => String::new(),
    };
    fs::create_dir_all(out).map_err(|e| format!("create {out}: {e}"))?;
    let md = markdown(&runs, baseline, &meta, &markdown_table(&head, &rows));
    fs::write(format!("{out}/report.md"), md).map_err(|e| format!("write {out}/report.md: {e}"))?;
    let json = serde_json::to_string_pretty(&runs).map_err(|e| e.to_string())?;
    fs::write(format!("{out}/results.json"), json + "\n")
        .map_err(|e| format!("write {out}/results.json: {e}"))?;
    plot(&runs, &sizes, &o.font, &format!("{out}/plot.png"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::MeanSd;

    fn run(label: &str, migrator: Option<&str>, points: &[(u64, f64, Option<u64>)]) -> RunReport {
        RunReport {
            label: label.into(),
            kernel: "k".into(),
            machine: "m".into(),
            from: 0,
            to: 1,
            total_bytes: 4 << 20,
            iterations: 2,
            migrator: migrator.map(String::from),
            points: points
                .iter()
                .map(|&(size, mean, copied)| {
                    let mut p = Point::new(size, (4 << 20) / size);
                    p.gbps = MeanSd {
                        mean,
                        sd: 0.1,
                        n: 2,
                    };
                    p.migrator_copied = copied;
                    p.migrator_fallback = copied.map(|c| p.folios * 2 - c);
                    p
                })
                .collect(),
            latency: vec![],
            memcpy: None,
            memcpy_parallel: None,
        }
    }

    #[test]
    fn ratios_against_the_baseline_and_offload_marks() {
        let runs = vec![
            run("vanilla", None, &[(4096, 1.0, None), (2 << 20, 2.0, None)]),
            // Every folio copied at 4K (2 runs of 1024); 1 of 4 at 2M.
            run(
                "dcbm",
                Some("dcbm"),
                &[(4096, 0.5, Some(2048)), (2 << 20, 4.0, Some(1))],
            ),
            run("partial", Some("none"), &[(2 << 20, 2.0, Some(0))]),
        ];
        let (sizes, rows) = comparison(&runs, 0);
        assert_eq!(sizes, vec![4096, 2 << 20]);
        assert_eq!(rows[0][1], "1.000 ± 0.100 (1.00x)");
        assert_eq!(rows[1][1], "0.500 ± 0.100 (0.50x)");
        assert_eq!(rows[1][2], "4.000 ± 0.100 (2.00x)*");
        assert_eq!(rows[2][1], "-");
        assert_eq!(rows[2][2], "2.000 ± 0.100 (1.00x)");
        assert_eq!(rows[0][3], "-");
        assert_eq!(rows[0].len(), 4);
    }

    fn memcpy(threads: usize, runs: &[f64]) -> MemcpyPoint {
        MemcpyPoint {
            bytes: 4 << 20,
            threads,
            gbps_runs: runs.to_vec(),
            gbps: MeanSd::of(runs),
        }
    }

    #[test]
    fn parallel_memcpy_gets_its_own_column() {
        let mut a = run("serial", None, &[(4096, 1.0, None)]);
        a.memcpy = Some(memcpy(1, &[2.0]));
        a.memcpy_parallel = Some(memcpy(2, &[3.5]));
        let b = run("other", None, &[(4096, 1.0, None)]);
        let (sizes, rows) = comparison(&[a.clone(), b.clone()], 0);
        let runs = [a, b];
        assert_eq!(
            header(&sizes, &runs),
            ["configuration", "4K", "memcpy", "memcpy 2t"]
        );
        assert_eq!(rows[0][2..], ["2.000", "3.500"]);
        assert_eq!(rows[1][2..], ["-", "-"]);
    }

    #[test]
    fn rounds_pool_their_measurements() {
        let mut a = run("dcbm", Some("dcbm"), &[(4096, 1.0, Some(2048))]);
        a.points[0].gbps_runs = vec![1.0, 2.0];
        a.memcpy_parallel = Some(memcpy(2, &[1.0]));
        let mut b = a.clone();
        b.points[0].gbps_runs = vec![3.0, 4.0];
        b.memcpy_parallel = Some(memcpy(2, &[3.0]));
        let other = run("vanilla", None, &[(4096, 1.0, None)]);
        let m = merge_rounds(vec![a, other, b]).unwrap();
        assert_eq!(m.len(), 2);
        assert_eq!(
            (m[0].label.as_str(), m[1].label.as_str()),
            ("dcbm", "vanilla")
        );
        let p = &m[0].points[0];
        assert_eq!(p.gbps_runs, vec![1.0, 2.0, 3.0, 4.0]);
        assert!((p.gbps.mean - 2.5).abs() < 1e-12 && p.gbps.n == 4);
        let mp = m[0].memcpy_parallel.as_ref().unwrap();
        assert_eq!((mp.threads, &mp.gbps_runs[..]), (2, &[1.0, 3.0][..]));
        assert!((mp.gbps.mean - 2.0).abs() < 1e-12);
        assert_eq!((m[0].iterations, p.migrator_copied), (4, Some(4096)));
        // Every folio of the 4 runs was copied: no '*'.
        assert!(offload_note(&m[0], p).is_none());
        let mut c = run("dcbm", None, &[]);
        c.total_bytes = 1;
        assert!(merge_rounds(vec![m[0].clone(), c]).is_err());
    }

    #[test]
    fn tables_line_up() {
        let head = vec!["a".to_string(), "bb".to_string()];
        let rows = vec![vec!["long".to_string(), "1".to_string()]];
        assert_eq!(text_table(&head, &rows), "a     bb\nlong   1\n");
        assert_eq!(
            markdown_table(&head, &rows),
            "| a | bb |\n|---|---|\n| long | 1 |\n"
        );
    }

    #[test]
    fn options() {
        let a = |s: &str| s.split_whitespace().map(String::from).collect::<Vec<_>>();
        assert!(parse(&a("")).is_err());
        assert!(parse(&a("--bogus x.json")).is_err());
        let o = parse(&a("--baseline v --out d x.json y.json")).unwrap();
        assert_eq!(
            (o.baseline.as_deref(), o.out.as_deref(), o.runs.len()),
            (Some("v"), Some("d"), 2)
        );
    }
}
