// SPDX-License-Identifier: GPL-2.0
//! `migbench report`: compares the runs of several configurations (one JSON
//! file each, as `migbench run --json` writes them) against a baseline, and
//! writes the table, a Markdown report, the merged JSON and a PNG plot.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::fs;

use plotters::prelude::*;
use plotters::style::{register_font, FontStyle};

use crate::args::format_size;
use crate::output::{BatchPoint, CountPoint, MemcpyPoint, Offload, Point, RunReport, TierPoint};
use crate::stats::{holm, MeanSd, NotEstimable, Ratio};

const USAGE: &str = "\
usage: migbench report [--baseline LABEL] [--compare A:B]... [--meta FILE] [--out DIR] RUN.json...
  --baseline LABEL  the run the ratios are against (default: 'vanilla' if
                    present, else the first); runs measured with --age are
                    compared with LABEL-aged (without it, not at all: the
                    report says so); a folio-count sweep with the
                    baseline's, or else with that of LABEL-sweep; the
                    tiered-memory measurements likewise, with LABEL-tiered
  --compare A:B     also the ratios of run A to run B, with their intervals
  --meta FILE       'key: value' lines describing the setup, for the report
  --out DIR         write DIR/report.md, DIR/results.json and DIR/plot.png
  --font FILE       TrueType font for the plot (default: DejaVu Sans)";

/// Line colours that stay apart on white, in matrix order: as many as the
/// default matrix has throughput lines, so that no two share one.
const LINE_COLORS: [RGBColor; 10] = [
    RGBColor(0, 0, 0),
    RGBColor(214, 39, 40),
    RGBColor(31, 119, 180),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(23, 190, 207),
    RGBColor(188, 189, 34),
    RGBColor(227, 119, 194),
];

const DEFAULT_FONT: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";

struct Options {
    baseline: Option<String>,
    compare: Vec<(String, String)>,
    meta: Option<String>,
    out: Option<String>,
    font: String,
    runs: Vec<String>,
}

fn parse(argv: &[String]) -> Result<Options, String> {
    let mut o = Options {
        baseline: None,
        compare: vec![],
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
            "--compare" => {
                let v = value()?;
                let (a, b) = v
                    .split_once(':')
                    .ok_or_else(|| format!("--compare {v}: want A:B\n{USAGE}"))?;
                o.compare.push((a.to_string(), b.to_string()));
            }
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

/// Whether numbers can be read as "the migrator copied this": a note when
/// a run with a migrator has counters that show some of the `all` folios
/// of its measured moves at `what` left to the CPU, or has no counters.
fn offload_note(run: &RunReport, offload: &Offload, all: u64, what: &str) -> Option<String> {
    let m = run.migrator.as_deref()?;
    if m == "none" {
        return None;
    }
    match offload.copied {
        Some(c) if c == all => None,
        Some(c) => Some(format!("{m} copied {c} of {all} folios at {what}")),
        None => Some(format!("no offload counters at {what}")),
    }
}

/// The offload note of a throughput cell.
fn point_note(run: &RunReport, p: &Point) -> Option<String> {
    let all = p.folios * run.iterations as u64;
    offload_note(run, &p.offload, all, &format_size(p.folio_bytes))
}

/// The offload note of a point of the folio-count sweep.
fn count_note(run: &RunReport, c: &CountPoint) -> Option<String> {
    let all = c.folios * c.gbps_runs.len() as u64;
    let what = format!("count sweep {} x {}", c.folios, format_size(c.folio_bytes));
    offload_note(run, &c.offload, all, &what)
}

/// The offload note of a point of the batch-size sweep.
fn batch_note(run: &RunReport, b: &BatchPoint) -> Option<String> {
    let all = run.total_bytes / b.folio_bytes.max(1) * b.whole_runs.len() as u64;
    let what = format!(
        "batch sweep {} at batch_max_pages {}",
        format_size(b.folio_bytes),
        b.batch_pages
    );
    offload_note(run, &b.offload, all, &what)
}

/// The offload note of a tiered-memory point (`what`: "demotion 4K"). Its
/// batches are the kernel's own and may hold other folios than the
/// buffers': the migrator must have copied at least the buffers' folios
/// that moved, and left none to the CPU.
fn tier_note(run: &RunReport, p: &TierPoint, what: &str) -> Option<String> {
    let m = run.migrator.as_deref()?;
    if m == "none" {
        return None;
    }
    let what = format!("{what} {}", format_size(p.folio_bytes));
    match (p.offload.copied, p.offload.fallback) {
        (Some(c), Some(0)) if c >= p.folios_moved => None,
        (Some(c), f) => Some(format!(
            "{m} copied {c} folios at {what}, of which the buffers' {} moved; {} fell back to the CPU",
            p.folios_moved,
            f.map_or("?".into(), |f| f.to_string())
        )),
        (None, _) => Some(format!("no offload counters at {what}")),
    }
}

/// 's' when the kernel split folios of the buffer in some measured run.
fn split_mark(p: &TierPoint) -> &'static str {
    if p.split_runs > 0 {
        "s"
    } else {
        ""
    }
}

/// '*' when a note says the migrator did not copy every folio.
fn star(note: Option<String>) -> &'static str {
    if note.is_some() {
        "*"
    } else {
        ""
    }
}

/// The largest relative sd a cell may have (make bench's target).
pub const MAX_REL_SD: f64 = 0.05;

/// "mean ± sd (rel%)", with a '!' when the spread is above MAX_REL_SD.
fn spread_cell(m: &MeanSd, prec: usize) -> String {
    let bang = if m.rel_sd() > MAX_REL_SD { "!" } else { "" };
    format!(
        "{:.prec$} ± {:.prec$} ({:.1}%){bang}",
        m.mean,
        m.sd,
        m.rel_sd() * 100.0
    )
}

/// A ratio as its table shows it: `None` where a side was not measured.
type RatioCell = Option<Result<Ratio, NotEstimable>>;

/// The familywise error rate of the Holm-Bonferroni marks, and the level of
/// every interval.
const ALPHA: f64 = 0.05;

/// "0.99 [0.97, 1.01]", with a '†' when the interval excludes 1, a '‡' when
/// the difference also survives the Holm-Bonferroni adjustment over its
/// table (`holm`); "[n/e]" when no interval can be estimated, "-" when a
/// side was not measured.
pub fn ratio_cell(r: RatioCell, holm: bool) -> String {
    match r {
        None => "-".into(),
        Some(Err(NotEstimable { ratio: None, .. })) => "n/e".into(),
        Some(Err(NotEstimable { ratio: Some(x), .. })) => format!("{x:.3} [n/e]"),
        Some(Ok(r)) => format!(
            "{:.3} [{:.3}, {:.3}]{}",
            r.ratio,
            r.lo,
            r.hi,
            match (r.significant(), holm) {
                (true, true) => "‡",
                (true, false) => "†",
                _ => "",
            }
        ),
    }
}

/// A row of a ratio table before its marks are known: the leading cells
/// (the label, and for the count table the folio size), then the ratios.
struct RatioRow {
    head: Vec<String>,
    cells: Vec<RatioCell>,
}

/// The rows of one ratio table as text. Each table is one family of
/// comparisons: a '†' for every interval that excludes 1 would, over the
/// dozens of ratios of a table, mark some differences that are not there,
/// so the Holm-Bonferroni adjustment runs over the p-values of all the
/// table's estimable ratios and '‡' marks those that survive it. With
/// `widest`, each row ends with its widest interval as a half width
/// ("±2.1%": every ratio of the row is known that closely).
fn render_ratios(rows: &[RatioRow], widest: bool) -> Vec<Vec<String>> {
    let p: Vec<f64> = rows
        .iter()
        .flat_map(|r| &r.cells)
        .filter_map(|c| match c {
            Some(Ok(r)) => Some(r.p),
            _ => None,
        })
        .collect();
    let mut survives = holm(&p, ALPHA).into_iter();
    rows.iter()
        .map(|row| {
            let mut out = row.head.clone();
            let mut w: Option<f64> = None;
            for &c in &row.cells {
                let h = match c {
                    Some(Ok(r)) => {
                        let x = r.half_width() / r.ratio;
                        w = Some(w.map_or(x, |y| y.max(x)));
                        survives.next().unwrap_or(false)
                    }
                    _ => false,
                };
                out.push(ratio_cell(c, h));
            }
            if widest {
                out.push(w.map_or("-".into(), |w| format!("±{:.1}%", w * 100.0)));
            }
            out
        })
        .collect()
}

/// The folio sizes of the runs' throughput tables, in order.
fn sizes_of(runs: &[RunReport]) -> Vec<u64> {
    runs.iter()
        .flat_map(|r| r.points.iter().map(|p| p.folio_bytes))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

/// The throughput table: one row per run, one column per folio size; each
/// cell "mean ± sd (relative sd)". Cells whose offload did not fully happen
/// carry a '*'.
pub fn comparison(runs: &[RunReport]) -> (Vec<u64>, Vec<Vec<String>>) {
    let sizes = sizes_of(runs);
    let parallel = parallel_threads(runs).is_some();
    let rows = runs
        .iter()
        .filter(|r| !r.points.is_empty())
        .map(|r| {
            let mut row = vec![r.label.clone()];
            for &s in &sizes {
                row.push(match r.points.iter().find(|p| p.folio_bytes == s) {
                    None => "-".to_string(),
                    Some(p) => format!("{}{}", spread_cell(&p.gbps, 3), star(point_note(r, p))),
                });
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

/// The run a run's ratios are against: the baseline, or for a run of aged
/// memory the baseline's aged run ("LABEL-aged"). Without that run, why
/// there is no ratio: against the baseline on fresh memory, the ratio would
/// credit the configuration with what aging the memory costs or saves.
fn baseline_of<'a>(
    runs: &'a [RunReport],
    baseline: usize,
    r: &RunReport,
) -> Result<&'a RunReport, String> {
    let base = &runs[baseline];
    if !r.aged || base.aged {
        return Ok(base);
    }
    let aged = format!("{}-aged", base.label);
    runs.iter().find(|x| x.label == aged).ok_or_else(|| {
        format!(
            "{} (aged memory, --age) has no ratio to the baseline: there is no {aged} run, \
             and {} measured fresh memory",
            r.label, base.label
        )
    })
}

/// The run a run's `what` ratios are against: its baseline (baseline_of())
/// when that has them (`has`), else the baseline's run of the same label
/// with `suffix` (make bench measures the sweeps and the tiered memory in
/// boots of their own, under labels of their own: "LABEL-sweep",
/// "LABEL-tiered"). `has_what` says what a run lacks in the error.
fn twin_baseline_of<'a>(
    runs: &'a [RunReport],
    baseline: usize,
    r: &RunReport,
    (suffix, what, has_what): (&str, &str, &str),
    has: fn(&RunReport) -> bool,
) -> Result<&'a RunReport, String> {
    let b = baseline_of(runs, baseline, r)?;
    if has(b) {
        return Ok(b);
    }
    let twin = format!("{}-{suffix}", b.label);
    runs.iter()
        .find(|x| x.label == twin && has(x))
        .ok_or_else(|| {
            format!(
                "{}'s {what} has no ratio to the baseline: neither {} nor a {twin} \
                 run has {has_what}",
                r.label, b.label
            )
        })
}

/// The run a run's folio-count ratios are against: its baseline, or the
/// baseline's sweep run, "LABEL-sweep".
fn sweep_baseline_of<'a>(
    runs: &'a [RunReport],
    baseline: usize,
    r: &RunReport,
) -> Result<&'a RunReport, String> {
    twin_baseline_of(
        runs,
        baseline,
        r,
        ("sweep", "folio-count sweep", "a count sweep"),
        |x| !x.count_sweep.is_empty(),
    )
}

/// The run a run's tiered-memory ratios are against: its baseline, or the
/// baseline's tiered run, "LABEL-tiered".
fn tiered_baseline_of<'a>(
    runs: &'a [RunReport],
    baseline: usize,
    r: &RunReport,
) -> Result<&'a RunReport, String> {
    twin_baseline_of(
        runs,
        baseline,
        r,
        ("tiered", "tiered memory", "tiered-memory measurements"),
        RunReport::tiered,
    )
}

/// Why runs have no ratio to their baseline, for the report to say (each
/// once).
pub fn missing_baselines(runs: &[RunReport], baseline: usize) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for r in runs {
        let throughput = (!r.points.is_empty()).then(|| baseline_of(runs, baseline, r));
        let count = (!r.count_sweep.is_empty()).then(|| sweep_baseline_of(runs, baseline, r));
        let tiered = r.tiered().then(|| tiered_baseline_of(runs, baseline, r));
        for e in [throughput, count, tiered]
            .into_iter()
            .flatten()
            .filter_map(Result::err)
        {
            if !v.contains(&e) {
                v.push(e);
            }
        }
    }
    v
}

/// What a ratio compares: one value per boot (the mean of its moves), or
/// the boots paired by round. (A ratio over the single moves would count
/// moves of one boot as independent, which the boot ratios show they are
/// not: the report has none.)
type Unit = fn(&Point, &Point) -> Result<Ratio, NotEstimable>;

pub fn boots(a: &Point, b: &Point) -> Result<Ratio, NotEstimable> {
    Ratio::of(&MeanSd::of(&a.boot_means), &MeanSd::of(&b.boot_means))
}

/// The boot means of `a` and `b` from the same rounds, in round order;
/// `None` where a side does not know the round of each of its boots, or
/// has two of one round.
fn round_pairs(a: &Point, b: &Point) -> Option<Vec<(f64, f64)>> {
    let by_round = |p: &Point| -> Option<BTreeMap<u32, f64>> {
        if p.boot_rounds.is_empty() || p.boot_rounds.len() != p.boot_means.len() {
            return None;
        }
        let m: BTreeMap<u32, f64> = p
            .boot_rounds
            .iter()
            .copied()
            .zip(p.boot_means.iter().copied())
            .collect();
        (m.len() == p.boot_means.len()).then_some(m)
    };
    let (ma, mb) = (by_round(a)?, by_round(b)?);
    Some(
        ma.iter()
            .filter_map(|(r, &x)| mb.get(r).map(|&y| (x, y)))
            .collect(),
    )
}

pub fn rounds(a: &Point, b: &Point) -> Result<Ratio, NotEstimable> {
    match round_pairs(a, b) {
        Some(pairs) => Ratio::paired(&pairs),
        None => Err(NotEstimable {
            ratio: None,
            why: "boots without their rounds",
        }),
    }
}

/// Throughput ratio of `a` to `b` at each of `sizes`.
fn ratio_row(label: String, a: &RunReport, b: &RunReport, sizes: &[u64], unit: Unit) -> RatioRow {
    let cells = sizes
        .iter()
        .map(|&s| {
            let pa = a.points.iter().find(|p| p.folio_bytes == s)?;
            let pb = b.points.iter().find(|p| p.folio_bytes == s)?;
            Some(unit(pa, pb))
        })
        .collect();
    RatioRow {
        head: vec![label],
        cells,
    }
}

/// The ratios of every run to its baseline, then those `compare` asks for,
/// in `unit`: with the boot as the unit (`boots`) or with the boots paired
/// by round (`rounds`).
pub fn ratios(
    runs: &[RunReport],
    baseline: usize,
    compare: &[(usize, usize)],
    sizes: &[u64],
    unit: Unit,
) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for r in runs.iter().filter(|r| !r.points.is_empty()) {
        // A run without its baseline is listed by missing_baselines().
        let Ok(b) = baseline_of(runs, baseline, r) else {
            continue;
        };
        if b.label != r.label {
            rows.push(ratio_row(
                format!("{} / {}", r.label, b.label),
                r,
                b,
                sizes,
                unit,
            ));
        }
    }
    for &(a, b) in compare {
        let label = format!("{} / {}", runs[a].label, runs[b].label);
        if rows.iter().any(|r: &RatioRow| r.head[0] == label) {
            continue;
        }
        rows.push(ratio_row(label, &runs[a], &runs[b], sizes, unit));
    }
    render_ratios(&rows, true)
}

/// The first-folio latency table: one row per run, folio size and batch
/// cap.
pub fn batch_table(runs: &[RunReport]) -> (Vec<String>, Vec<Vec<String>>) {
    let head = [
        "configuration",
        "folio",
        "batch_max_pages",
        "first folio (us)",
        "whole call (us)",
        "first / whole",
    ]
    .map(String::from)
    .to_vec();
    let mut rows = Vec::new();
    for r in runs {
        for b in &r.batch_sweep {
            rows.push(vec![
                r.label.clone(),
                format_size(b.folio_bytes),
                b.batch_pages.to_string(),
                first_cell(b, star(batch_note(r, b))),
                format!(
                    "{}{}",
                    spread_cell(&b.whole_call_us, 0),
                    star(batch_note(r, b))
                ),
                if b.first_folio_us.n == 0 {
                    "-".into()
                } else {
                    format!(
                        "{:.3}",
                        b.first_folio_us.mean / b.whole_call_us.mean.max(1e-9)
                    )
                },
            ]);
        }
    }
    (head, rows)
}

/// The first-folio cell of the batch table: over the calls where a poll saw
/// the folio on the destination, with those where none did counted apart.
fn first_cell(b: &BatchPoint, star: &str) -> String {
    let calls = b.first_runs.len() + b.first_missing;
    match (b.first_runs.len(), b.first_missing) {
        (0, _) => format!("not seen ({calls} calls){star}"),
        (_, 0) => format!("{}{star}", spread_cell(&b.first_folio_us, 0)),
        (_, m) => format!(
            "{}{star}, not seen in {m} of {calls}",
            spread_cell(&b.first_folio_us, 0)
        ),
    }
}

/// The ratio rows of the `compared` runs against their baselines
/// (`baseline_of`: the sweep's or the tiered twin), one row per folio size
/// with the `cells` of run and baseline at that size. A run that is its
/// own baseline has none, nor has a run without one (listed by
/// missing_baselines()).
fn twin_ratio_rows<'a>(
    compared: impl Iterator<Item = &'a RunReport>,
    baseline_of: impl Fn(&'a RunReport) -> Result<&'a RunReport, String>,
    sizes: &BTreeSet<u64>,
    cells: impl Fn(&'a RunReport, &'a RunReport, u64) -> Vec<RatioCell>,
) -> Vec<RatioRow> {
    let mut rows = Vec::new();
    for r in compared {
        let Ok(b) = baseline_of(r) else {
            continue;
        };
        if b.label == r.label {
            continue;
        }
        for &size in sizes {
            rows.push(RatioRow {
                head: vec![format!("{} / {}", r.label, b.label), format_size(size)],
                cells: cells(r, b, size),
            });
        }
    }
    rows
}

/// The folio-count table: GB/s of one call by folios per call, one row per
/// run and folio size, then each run's ratio to its baseline.
pub fn count_table<'a>(runs: &'a [RunReport], baseline: usize) -> (Vec<String>, Vec<Vec<String>>) {
    let counts: Vec<(u64, u64)> = runs
        .iter()
        .flat_map(|r| r.count_sweep.iter().map(|c| (c.folio_bytes, c.folios)))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let folio_sizes: BTreeSet<u64> = counts.iter().map(|c| c.0).collect();
    let mut per_call: Vec<u64> = counts.iter().map(|c| c.1).collect();
    per_call.sort_unstable();
    per_call.dedup();
    let mut head = vec!["configuration".to_string(), "folio".to_string()];
    head.extend(per_call.iter().map(|n| format!("{n} per call")));
    let point = |r: &'a RunReport, size: u64, n: u64| -> Option<&'a CountPoint> {
        r.count_sweep
            .iter()
            .find(|c| c.folio_bytes == size && c.folios == n)
    };
    let find = |r: &'a RunReport, size: u64, n: u64| point(r, size, n).map(|c| c.gbps);
    let mut rows = Vec::new();
    for r in runs.iter().filter(|r| !r.count_sweep.is_empty()) {
        for &size in &folio_sizes {
            let mut row = vec![r.label.clone(), format_size(size)];
            row.extend(per_call.iter().map(|&n| {
                point(r, size, n).map_or("-".into(), |c| {
                    format!("{}{}", spread_cell(&c.gbps, 3), star(count_note(r, c)))
                })
            }));
            rows.push(row);
        }
    }
    let ratio_rows = twin_ratio_rows(
        runs.iter().filter(|r| !r.count_sweep.is_empty()),
        |r| sweep_baseline_of(runs, baseline, r),
        &folio_sizes,
        |r, b, size| {
            per_call
                .iter()
                .map(|&n| Some(Ratio::of(&find(r, size, n)?, &find(b, size, n)?)))
                .collect()
        },
    );
    rows.extend(render_ratios(&ratio_rows, false));
    (head, rows)
}

/// The tiered-memory table: one row per run with tiered measurements and
/// folio size, the demotion GB/s and the promotion seconds, each "mean ±
/// sd (relative sd)" with a '*' where the migrator did not copy every
/// folio; then each run's ratios to its baseline's (tiered_baseline_of()),
/// with their intervals and marks as in the other ratio tables (the Holm
/// adjustment over the ratios of this table). A promotion ratio is one of
/// times: below 1, faster than the baseline.
pub fn tiered_table<'a>(runs: &'a [RunReport], baseline: usize) -> (Vec<String>, Vec<Vec<String>>) {
    let head = [
        "configuration",
        "folio",
        "demotion (GB/s)",
        "promotion (s to 90%)",
    ]
    .map(String::from)
    .to_vec();
    type Side = (
        &'static str,
        fn(&RunReport) -> &Vec<TierPoint>,
        fn(&TierPoint) -> MeanSd,
    );
    let sides: [Side; 2] = [
        ("demotion", |r| &r.demotion, |p| p.gbps),
        ("promotion", |r| &r.promotion, |p| p.secs),
    ];
    let point = |r: &'a RunReport, side: &Side, size: u64| -> Option<&'a TierPoint> {
        (side.1)(r).iter().find(|p| p.folio_bytes == size)
    };
    let tiered: Vec<&RunReport> = runs.iter().filter(|r| r.tiered()).collect();
    let sizes: BTreeSet<u64> = tiered
        .iter()
        .flat_map(|r| r.demotion.iter().chain(&r.promotion).map(|p| p.folio_bytes))
        .collect();
    let mut rows = Vec::new();
    for r in &tiered {
        for &size in &sizes {
            let mut row = vec![r.label.clone(), format_size(size)];
            for side in &sides {
                row.push(point(r, side, size).map_or("-".into(), |p| {
                    format!(
                        "{}{}{}",
                        spread_cell(&(side.2)(p), 3),
                        star(tier_note(r, p, side.0)),
                        split_mark(p)
                    )
                }));
            }
            rows.push(row);
        }
    }
    let ratio_rows = twin_ratio_rows(
        tiered.iter().copied(),
        |r| tiered_baseline_of(runs, baseline, r),
        &sizes,
        |r, b, size| {
            sides
                .iter()
                .map(|side| {
                    let a = point(r, side, size)?;
                    let c = point(b, side, size)?;
                    Some(Ratio::of(&(side.2)(a), &(side.2)(c)))
                })
                .collect()
        },
    );
    rows.extend(render_ratios(&ratio_rows, false));
    (head, rows)
}

/// The CPU time per GB moved of every configuration with throughput cells,
/// by folio size: "task / CPUs", the migrating task's own time and every
/// CPU's busy time, milliseconds per GB (10^9 bytes), means over the
/// measurements; "-" where the runs did not measure it.
pub fn cpu_table(runs: &[RunReport], sizes: &[u64]) -> (Vec<String>, Vec<Vec<String>>) {
    let mut head = vec!["CPU ms/GB: task / CPUs".to_string()];
    head.extend(sizes.iter().map(|&s| format_size(s)));
    let mut rows = Vec::new();
    for r in runs {
        let mut row = vec![r.label.clone()];
        let mut any = false;
        for &size in sizes {
            let p = r.points.iter().find(|p| p.folio_bytes == size);
            let cell = p.and_then(|p| {
                let task = Point::cpu_ms_per_gb(&p.task_cpu_runs, r.total_bytes)?;
                let all = Point::cpu_ms_per_gb(&p.machine_cpu_runs, r.total_bytes)?;
                Some(format!("{:.0} / {:.0}", task.mean, all.mean))
            });
            any |= cell.is_some();
            row.push(cell.unwrap_or_else(|| "-".into()));
        }
        if any {
            rows.push(row);
        }
    }
    (head, rows)
}

/// The offload counters of every configuration with a migrator, by folio
/// size: "batches / copied / CPU", the batches the migrator was given, the
/// folios it copied and those it left to the CPU over the measured moves;
/// "-" where a size was not measured or the kernel has no counters.
pub fn counters_table(runs: &[RunReport], sizes: &[u64]) -> (Vec<String>, Vec<Vec<String>>) {
    let mut head = vec!["batches / copied / CPU".to_string()];
    head.extend(sizes.iter().map(|&s| format_size(s)));
    let mut rows = Vec::new();
    for r in runs {
        if r.migrator.as_deref().is_none_or(|m| m == "none") || r.points.is_empty() {
            continue;
        }
        let mut row = vec![r.label.clone()];
        for &size in sizes {
            let o = r
                .points
                .iter()
                .find(|p| p.folio_bytes == size)
                .map(|p| &p.offload);
            row.push(match o.map(|o| (o.batches, o.copied, o.fallback)) {
                Some((Some(b), Some(c), Some(f))) => format!("{b} / {c} / {f}"),
                _ => "-".into(),
            });
        }
        rows.push(row);
    }
    (head, rows)
}

/// What each '*' of the tables stands for: every run's offload notes, as
/// "label: note", in the order of the runs and of their measurements.
pub fn offload_notes(runs: &[RunReport]) -> Vec<String> {
    let mut v = Vec::new();
    for r in runs {
        let notes = r
            .points
            .iter()
            .map(|p| point_note(r, p))
            .chain(r.count_sweep.iter().map(|c| count_note(r, c)))
            .chain(r.batch_sweep.iter().map(|b| batch_note(r, b)))
            .chain(r.demotion.iter().map(|p| tier_note(r, p, "demotion")))
            .chain(r.promotion.iter().map(|p| tier_note(r, p, "promotion")));
        v.extend(notes.flatten().map(|n| format!("{}: {n}", r.label)));
    }
    v
}

/// Cells above the relative-sd target, for the report's summary.
fn noisy_cells(runs: &[RunReport]) -> Vec<String> {
    let mut v = Vec::new();
    for r in runs {
        for p in &r.points {
            if p.gbps.rel_sd() > MAX_REL_SD {
                v.push(format!(
                    "{} {} ({:.1}%)",
                    r.label,
                    format_size(p.folio_bytes),
                    p.gbps.rel_sd() * 100.0
                ));
            }
        }
    }
    v
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

/// The report's tables, as Markdown.
pub struct Tables {
    /// Runs that have no ratio to the baseline, and why.
    pub missing: Vec<String>,
    pub throughput: String,
    pub boot_ratios: String,
    pub round_ratios: String,
    pub batch: Option<String>,
    pub count: Option<String>,
    pub tiered: Option<String>,
    pub cpu: Option<String>,
    pub counters: Option<String>,
}

fn markdown(runs: &[RunReport], baseline: usize, meta: &str, t: &Tables) -> String {
    let base = &runs[baseline];
    let mut s = String::from("# migbench report\n\n");
    s += "QEMU/TCG (or any virtual machine) numbers are for comparing the configurations \
          of this report with each other, measured in the same run on the same host; they \
          are not hardware figures. Each measurement allocates fresh memory on the source \
          node, checks through pagemap and kpageflags that it is backed by folios of the \
          size asked for, moves it with move_pages() (one address per folio), then checks \
          every page's node, every byte and that vmstat counted every page migrated.\n\n";
    s += "## Throughput\n\n";
    let _ = writeln!(
        s,
        "GB/s (10^9 bytes/s), mean ± sd (relative sd) over {} measurements of {} per folio \
         size (after {} discarded warm-up move{} per size and boot), node {} -> {}. A '!' \
         marks a cell whose relative sd is above {:.0}%, a '*' a cell where the migrator \
         did not copy every folio (see Offload counters). The memcpy column is the guest's memcpy() \
         bandwidth between the same two nodes, the limit any CPU copy works against (with \
         'memcpy Nt': split over N threads).\n",
        base.iterations,
        format_size(base.total_bytes),
        base.warmup,
        if base.warmup == 1 { "" } else { "s" },
        base.from,
        base.to,
        MAX_REL_SD * 100.0
    );
    s += &t.throughput;
    let noisy = noisy_cells(runs);
    if noisy.is_empty() {
        let _ = writeln!(
            s,
            "\nEvery cell's relative sd is at most {:.0}%.",
            MAX_REL_SD * 100.0
        );
    } else {
        let _ = writeln!(
            s,
            "\nCells above {:.0}% relative sd: {}.",
            MAX_REL_SD * 100.0,
            noisy.join(", ")
        );
    }
    s += "\n## Ratios\n\n";
    s += "Throughput ratio of each configuration to its baseline (runs of aged memory to \
          the baseline's aged run), then the pairs the comparison asks for, with the boot \
          as the unit: each boot's mean is one value (as many as rounds), so shifts from \
          one boot to the next widen the intervals. In brackets the 95% confidence \
          interval (delta method on the log of the ratio, Welch's t). A '†' marks a ratio \
          whose interval excludes 1.00, taken alone; a '‡' one whose difference also \
          survives the Holm-Bonferroni adjustment over all the ratios of its table \
          (familywise error 5%; the p-values from the same t statistic, the log of the \
          ratio over its standard error at the Welch degrees of freedom). Over the dozens \
          of ratios of a table, some '†' are expected by chance alone: a difference these \
          measurements show is a '‡'; without a mark, they show none. 'n/e': no interval \
          can be estimated (fewer than two values on a side, no spread on either side, or \
          a mean that is not a positive number), so no difference is shown either; '-': \
          not measured on one side.\n\n";
    s += &t.boot_ratios;
    if !t.missing.is_empty() {
        s += "\nNot compared with the baseline:\n\n";
        for m in &t.missing {
            let _ = writeln!(s, "- {m}.");
        }
    }
    s += "\nThe same ratios paired by round: a round boots every kernel once, one after \
          the other, and each round's ratio of the two configurations' boot means is one \
          value (of one kernel, the two ran in the same boot); the ratio is the geometric \
          mean of the rounds' ratios, the interval Student's t over their logs (rounds - 1 \
          degrees of freedom), marked as above. A shift that hits a whole round (the \
          host's slower minutes) cancels; one that hits a single boot does not, and \
          neither does the order, which is the same in every round (the kernels in the \
          order of tools-bench/kernels, a boot's configurations in the order of the \
          matrix). Only rounds both sides have are paired; 'n/e' where the runs do not \
          say their rounds. Of the two tables this is the one for two configurations of \
          one boot; for two kernels, the boot table above.\n\n";
    s += &t.round_ratios;
    if let Some(b) = &t.batch {
        s += "\n## First-folio latency by batch size\n\n";
        s += "One move_pages() call of the whole buffer with debugfs \
              migrate/batch_max_pages at each value (base pages per batch of \
              migrate_pages(); a batch holds at least one folio): the time from the call \
              until its first folio is on the destination node (a second thread polls that \
              page's node, yielding the CPU between polls; the clock starts once it \
              polls), and until the call returns. Mean ± sd (relative sd); a first folio \
              that no poll saw on the destination before the call returned is counted as \
              not seen, not as the whole call; a '*' \
              where the migrator did not copy every folio (see Offload counters). See latency.png.\n\n";
        s += b;
    }
    if let Some(c) = &t.cpu {
        s += "\n## CPU time per GB moved\n\n";
        s += "Milliseconds of CPU time per GB (10^9 bytes) moved, means over the \
              measurements of the throughput table: the migrating task's own time (its \
              thread's CPU clock around its move_pages() calls: the copies it makes itself, \
              or the waiting on a migrator's, kernel and user time alike), then every \
              CPU's busy time over the same calls (the root cgroup's cpu.stat usage, else \
              /proc/stat's busy ticks: the migrators' workers, kworkers and interrupts too, \
              and whatever else the guest ran meanwhile). What an offload frees is the \
              task's time it takes over; what it costs, the difference in the second. The \
              first clock is the scheduler's, the second sampled at the tick: where the \
              task alone ran, the second can come out a few percent below the first.\n\n";
        s += c;
    }
    if let Some(c) = &t.count {
        s += "\n## Throughput by folios per call\n\n";
        s += "GB/s of one move_pages() call of N folios, mean ± sd (relative sd), a '*' \
              where the migrator did not copy every folio (see Offload counters); then the ratios to the \
              baseline's count sweep (make bench measures the sweeps in boots of their \
              own, as LABEL-sweep) with their 95% intervals, marked as above (the Holm \
              adjustment over the ratios of this table).\n\n";
        s += c;
    }
    if let Some(t) = &t.tiered {
        s += "\n## Tiered memory\n\n";
        s += "On the tiered machine (node 1 memory only, a lower memory tier than node 0 \
              through the ACPI HMAT, and node 0's demotion target), at each folio size, \
              fresh memory per measurement (the first of each size a discarded warm-up). \
              Demotion: the memory faulted on node 0 in a memory cgroup, its accessed bits \
              cleared, then one write of its size to the cgroup's memory.reclaim, timed; GB/s \
              are the bytes of its pages on node 1 after over that time (at least half of \
              them, and pgdemote_proactive counting at least as many). Promotion: the \
              memory filled on node 1, then read, one word per page in a tight loop from a \
              CPU of node 0, with NUMA balancing in tiering mode (numa_balancing=2, the \
              scanner every 100 to 200 ms of CPU time), timed until 90% of its folios are on \
              node 0 (checked between passes, at most --promote-check-ms apart, 500 ms by default, \
              more often where a check is cheap; \
              pgpromote_success counting every page promoted); lower is better. Every byte \
              and every folio's size are checked after; an 's' marks a cell where the \
              kernel split folios of the memory in some measured run (7.3.4 split demoted \
              64K mTHPs here; the series keeps them whole), measured all the same. Mean \
              ± sd (relative sd), a '*' \
              where the migrator did not copy at least every folio of the memory that \
              moved, or left some to the CPU (see Offload counters: the kernel's batches may hold other \
              folios too); then the ratios to the baseline's tiered run (a promotion ratio \
              below 1 is faster), with their 95% intervals, marked as above (the Holm \
              adjustment over the ratios of this table).\n\n";
        s += t;
    }
    s += "\n## Setup\n\n";
    for l in meta.lines().filter(|l| !l.trim().is_empty()) {
        let _ = writeln!(s, "- {l}");
    }
    let _ = writeln!(s, "- guest machine: {}", base.machine);
    s += "\n## Configurations\n\n";
    for r in runs {
        let _ = writeln!(
            s,
            "- {}: kernel `{}`, migrator {}{}",
            r.label,
            r.kernel,
            r.migrator
                .as_deref()
                .map_or("(kernel without copy offload)".into(), |m| format!("`{m}`")),
            if r.aged {
                ", accessed bits cleared before each move (clear_refs 1)"
            } else {
                ""
            }
        );
    }
    let notes = offload_notes(runs);
    if t.counters.is_some() || !notes.is_empty() {
        s += "\n## Offload counters\n\n";
    }
    if let Some(c) = &t.counters {
        s += "The offload counters over the measured moves of the throughput table, for \
              each configuration with a migrator: the batches it was given, the folios it \
              copied and the folios it left to the CPU (the counters' rise over each \
              measurement, summed). The sweeps' and the tiered runs' counters are in \
              results.json.\n\n";
        s += c;
    }
    if !notes.is_empty() {
        s += "\nWhere a migrator did not copy every folio (the '*' of the tables):\n\n";
        for n in &notes {
            let _ = writeln!(s, "- {n}");
        }
    }
    let latency: Vec<_> = runs
        .iter()
        .flat_map(|r| r.latency.iter().map(move |l| (r, l)))
        .collect();
    if !latency.is_empty() {
        s += "\n## Call latency\n\n";
        for (r, l) in latency {
            let (head, calls) = l.lines();
            let _ = writeln!(s, "- {}: {head}", r.label);
            for c in calls {
                let _ = writeln!(s, "  - {c}");
            }
        }
    }
    s
}

/// latency.png: first-folio latency against the batch cap, one line per run
/// and folio size, both axes logarithmic.
fn latency_plot(runs: &[RunReport], path: &str) -> Result<(), String> {
    let all: Vec<&BatchPoint> = runs.iter().flat_map(|r| &r.batch_sweep).collect();
    if all.is_empty() {
        return Ok(());
    }
    // A point whose first folio was never seen has no first-folio mean:
    // the filters on first_folio_us.n below leave it out.
    let xmax = all.iter().map(|b| b.batch_pages as f64).fold(2.0, f64::max) * 1.5;
    let ymin = all
        .iter()
        .filter(|b| b.first_folio_us.n > 0)
        .map(|b| b.first_folio_us.mean)
        .fold(f64::MAX, f64::min)
        .max(1.0)
        / 1.5;
    let ymax = all
        .iter()
        .map(|b| b.whole_call_us.mean.max(b.first_folio_us.mean))
        .fold(ymin * 2.0, f64::max)
        * 1.5;
    let root = BitMapBackend::new(path, (1000, 620)).into_drawing_area();
    let e = |e: DrawingAreaErrorKind<_>| format!("plot: {e}");
    root.fill(&WHITE).map_err(e)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "time to the first folio on the destination, by batch size",
            ("sans-serif", 24),
        )
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(70)
        .build_cartesian_2d((0.75f64..xmax).log_scale(), (ymin..ymax).log_scale())
        .map_err(e)?;
    chart
        .configure_mesh()
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y:.0}"))
        .x_desc("batch_max_pages (base pages per migrate_pages() batch)")
        .y_desc("first folio (us; dashed: the whole call)")
        .draw()
        .map_err(e)?;
    let mut k = 0;
    for r in runs {
        let sizes: BTreeSet<u64> = r.batch_sweep.iter().map(|b| b.folio_bytes).collect();
        for size in sizes {
            let color = LINE_COLORS[k % LINE_COLORS.len()].to_rgba();
            k += 1;
            let pts: Vec<&BatchPoint> = r
                .batch_sweep
                .iter()
                .filter(|b| b.folio_bytes == size)
                .collect();
            chart
                .draw_series(LineSeries::new(
                    pts.iter()
                        .filter(|b| b.first_folio_us.n > 0)
                        .map(|b| (b.batch_pages as f64, b.first_folio_us.mean)),
                    color.stroke_width(2),
                ))
                .map_err(e)?
                .label(format!("{} {}", r.label, format_size(size)))
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                });
            chart
                .draw_series(pts.iter().filter(|b| b.first_folio_us.n > 0).map(|b| {
                    Circle::new(
                        (b.batch_pages as f64, b.first_folio_us.mean),
                        3,
                        color.filled(),
                    )
                }))
                .map_err(e)?;
            chart
                .draw_series(DashedLineSeries::new(
                    pts.iter()
                        .map(|b| (b.batch_pages as f64, b.whole_call_us.mean)),
                    6,
                    4,
                    color.stroke_width(1),
                ))
                .map_err(e)?;
        }
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
    // The sweep runs have no throughput points: no line, no legend entry.
    let measured = runs.iter().filter(|r| !r.points.is_empty());
    for (k, r) in measured.enumerate() {
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

/// Adds each item of `from` to the item of `into` with the same key (with
/// `merge`), or appends it.
fn merge_by<T, K: PartialEq>(
    into: &mut Vec<T>,
    from: Vec<T>,
    key: impl Fn(&T) -> K,
    mut merge: impl FnMut(&mut T, T),
) {
    for x in from {
        match into.iter_mut().find(|q| key(q) == key(&x)) {
            Some(q) => merge(q, x),
            None => into.push(x),
        }
    }
}

/// Merges runs with the same label (the rounds of `make bench`, each from
/// its own boot) into one: their measurements pooled, their counters added.
pub fn merge_rounds(runs: Vec<RunReport>) -> Result<Vec<RunReport>, String> {
    let mut merged: Vec<RunReport> = Vec::new();
    for mut r in runs {
        for p in &mut r.points {
            if p.boot_means.is_empty() {
                p.boot_means.push(p.gbps.mean);
            }
        }
        let Some(m) = merged.iter_mut().find(|m| m.label == r.label) else {
            merged.push(r);
            continue;
        };
        if (m.total_bytes, m.from, m.to) != (r.total_bytes, r.from, r.to) {
            return Err(format!("runs of '{}' measured different things", r.label));
        }
        m.iterations += r.iterations;
        merge_by(
            &mut m.points,
            r.points,
            |p| p.folio_bytes,
            |q, p| {
                q.gbps_runs.extend(&p.gbps_runs);
                q.gbps = MeanSd::of(&q.gbps_runs);
                q.task_cpu_runs.extend(&p.task_cpu_runs);
                q.machine_cpu_runs.extend(&p.machine_cpu_runs);
                q.boot_means.extend(&p.boot_means);
                q.boot_rounds.extend(&p.boot_rounds);
                q.thp_migrated += p.thp_migrated;
                q.offload.add(p.offload);
            },
        );
        m.latency.extend(r.latency);
        merge_by(
            &mut m.batch_sweep,
            r.batch_sweep,
            |b| (b.folio_bytes, b.batch_pages),
            |q, b| {
                q.first_runs.extend(&b.first_runs);
                q.first_folio_us = MeanSd::of(&q.first_runs);
                q.first_missing += b.first_missing;
                q.whole_runs.extend(&b.whole_runs);
                q.whole_call_us = MeanSd::of(&q.whole_runs);
                q.offload.add(b.offload);
            },
        );
        for (into, from) in [
            (&mut m.demotion, r.demotion),
            (&mut m.promotion, r.promotion),
        ] {
            merge_by(
                into,
                from,
                |p| p.folio_bytes,
                |q, p| {
                    q.secs_runs.extend(&p.secs_runs);
                    q.secs = MeanSd::of(&q.secs_runs);
                    q.gbps_runs.extend(&p.gbps_runs);
                    q.gbps = MeanSd::of(&q.gbps_runs);
                    q.pages_moved += p.pages_moved;
                    q.folios_moved += p.folios_moved;
                    q.pages_counted += p.pages_counted;
                    q.split_runs += p.split_runs;
                    q.vmstat_runs.extend(p.vmstat_runs.iter().cloned());
                    q.offload.add(p.offload);
                },
            );
        }
        merge_by(
            &mut m.count_sweep,
            r.count_sweep,
            |c| (c.folio_bytes, c.folios),
            |q, c| {
                q.gbps_runs.extend(&c.gbps_runs);
                q.gbps = MeanSd::of(&q.gbps_runs);
                q.offload.add(c.offload);
            },
        );
        for (a, b) in [
            (&mut m.memcpy, r.memcpy),
            (&mut m.memcpy_parallel, r.memcpy_parallel),
        ] {
            match (a, b) {
                (Some(a), Some(b)) => {
                    a.gbps_runs.extend(&b.gbps_runs);
                    a.gbps = MeanSd::of(&a.gbps_runs);
                }
                (a @ None, b) => *a = b,
                _ => {}
            }
        }
    }
    Ok(merged)
}

/// The round of a run from its file's name, as `make bench` writes them:
/// runs/LABEL-ROUND.json.
fn round_of(path: &str, label: &str) -> Option<u32> {
    let name = std::path::Path::new(path).file_name()?.to_str()?;
    let round = name
        .strip_prefix(label)?
        .strip_prefix('-')?
        .strip_suffix(".json")?;
    // Digits only: parse() alone would take "+1" (and refuses "").
    if !round.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    round.parse().ok()
}

/// Gives the points of a single run read from `path` the round its file
/// name says (a run of several boots, or of a file not named by `make
/// bench`, gets none: its boots cannot be paired).
fn set_round(r: &mut RunReport, path: &str) {
    if let Some(round) = round_of(path, &r.label) {
        for q in r.points.iter_mut().filter(|q| q.boot_means.is_empty()) {
            q.boot_rounds = vec![round];
        }
    }
}

pub fn main(argv: &[String]) -> Result<(), String> {
    let o = parse(argv)?;
    let runs: Vec<RunReport> = o
        .runs
        .iter()
        .map(|p| {
            let text = fs::read_to_string(p).map_err(|e| format!("read {p}: {e}"))?;
            let mut r: RunReport =
                serde_json::from_str(&text).map_err(|e| format!("{p}: not a migbench run: {e}"))?;
            set_round(&mut r, p);
            Ok(r)
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
    let position = |l: &str| {
        runs.iter()
            .position(|r| r.label == l)
            .ok_or_else(|| format!("--compare: no run has the label '{l}'"))
    };
    let compare = o
        .compare
        .iter()
        .map(|(a, b)| Ok((position(a)?, position(b)?)))
        .collect::<Result<Vec<_>, String>>()?;
    let (sizes, rows) = comparison(&runs);
    let head = header(&sizes, &runs);
    let boot_rows = ratios(&runs, baseline, &compare, &sizes, boots);
    let round_rows = ratios(&runs, baseline, &compare, &sizes, rounds);
    let mut ratio_head = vec!["ratio".to_string()];
    ratio_head.extend(sizes.iter().map(|&s| format_size(s)));
    ratio_head.push("widest interval".into());
    let (batch_head, batch_rows) = batch_table(&runs);
    let (count_head, count_rows) = count_table(&runs, baseline);
    let (tiered_head, tiered_rows) = tiered_table(&runs, baseline);
    let (cpu_head, cpu_rows) = cpu_table(&runs, &sizes);
    let (counter_head, counter_rows) = counters_table(&runs, &sizes);
    print!("{}", text_table(&head, &rows));
    println!();
    print!("{}", text_table(&ratio_head, &boot_rows));
    let missing = missing_baselines(&runs, baseline);
    for m in &missing {
        println!("not compared with the baseline: {m}");
    }
    println!();
    print!("{}", text_table(&ratio_head, &round_rows));
    if !cpu_rows.is_empty() {
        println!();
        print!("{}", text_table(&cpu_head, &cpu_rows));
    }
    if !batch_rows.is_empty() {
        println!();
        print!("{}", text_table(&batch_head, &batch_rows));
    }
    if !count_rows.is_empty() {
        println!();
        print!("{}", text_table(&count_head, &count_rows));
    }
    if !tiered_rows.is_empty() {
        println!();
        print!("{}", text_table(&tiered_head, &tiered_rows));
    }
    if !counter_rows.is_empty() {
        println!();
        print!("{}", text_table(&counter_head, &counter_rows));
    }
    let Some(out) = &o.out else { return Ok(()) };
    let meta = match &o.meta {
        Some(m) => fs::read_to_string(m).map_err(|e| format!("read {m}: {e}"))?,
        None => String::new(),
    };
    fs::create_dir_all(out).map_err(|e| format!("create {out}: {e}"))?;
    let tables = Tables {
        missing,
        throughput: markdown_table(&head, &rows),
        boot_ratios: markdown_table(&ratio_head, &boot_rows),
        round_ratios: markdown_table(&ratio_head, &round_rows),
        batch: (!batch_rows.is_empty()).then(|| markdown_table(&batch_head, &batch_rows)),
        count: (!count_rows.is_empty()).then(|| markdown_table(&count_head, &count_rows)),
        tiered: (!tiered_rows.is_empty()).then(|| markdown_table(&tiered_head, &tiered_rows)),
        cpu: (!cpu_rows.is_empty()).then(|| markdown_table(&cpu_head, &cpu_rows)),
        counters: (!counter_rows.is_empty()).then(|| markdown_table(&counter_head, &counter_rows)),
    };
    let md = markdown(&runs, baseline, &meta, &tables);
    fs::write(format!("{out}/report.md"), md).map_err(|e| format!("write {out}/report.md: {e}"))?;
    let json = serde_json::to_string_pretty(&runs).map_err(|e| e.to_string())?;
    fs::write(format!("{out}/results.json"), json + "\n")
        .map_err(|e| format!("write {out}/results.json: {e}"))?;
    plot(&runs, &sizes, &o.font, &format!("{out}/plot.png"))?;
    latency_plot(&runs, &format!("{out}/latency.png"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::MeanSd;

    /// A ratio over the single moves, each taken as independent: what the
    /// tests of the ratio tables use, and what the boot ratios are
    /// checked against (the report itself has none).
    fn moves(a: &Point, b: &Point) -> Result<Ratio, NotEstimable> {
        Ratio::of(&a.gbps, &b.gbps)
    }

    #[test]
    fn cpu_time_per_gb() {
        let mut a = run(
            "no-migrator",
            Some("none"),
            &[(4096, 1.0, None), (65536, 1.0, None)],
        );
        let b = run("old", None, &[(4096, 1.0, None)]);
        // 4 MiB per measurement (run()'s total_bytes): 4.194304 GB/1000.
        a.points[0].task_cpu_runs = vec![0.004194304, 0.008388608];
        a.points[0].machine_cpu_runs = vec![0.008388608, 0.008388608];
        let m = Point::cpu_ms_per_gb(&a.points[0].task_cpu_runs, a.total_bytes).expect("some");
        assert!((m.mean - 1500.0).abs() < 1e-9, "{m:?}");
        assert!(Point::cpu_ms_per_gb(&[], 4096).is_none());
        let (head, rows) = cpu_table(&[a, b], &[4096, 65536]);
        assert_eq!(head, ["CPU ms/GB: task / CPUs", "4K", "64K"]);
        // A run that did not measure it has no row; a size without it, "-".
        assert_eq!(rows, [["no-migrator", "1500 / 2000", "-"]]);
    }

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
                    p.offload.copied = copied;
                    p.offload.fallback = copied.map(|c| p.folios * 2 - c);
                    p
                })
                .collect(),
            latency: vec![],
            memcpy: None,
            memcpy_parallel: None,
            warmup: 1,
            aged: false,
            batch_sweep: vec![],
            count_sweep: vec![],
            demotion: vec![],
            promotion: vec![],
        }
    }

    /// No migrator; dcbm copying every folio at 4K (2 runs of 1024) and 1
    /// of 4 at 2M; a run with the offload built in and no migrator.
    fn offload_runs() -> Vec<RunReport> {
        vec![
            run("vanilla", None, &[(4096, 1.0, None), (2 << 20, 2.0, None)]),
            run(
                "dcbm",
                Some("dcbm"),
                &[(4096, 0.5, Some(2048)), (2 << 20, 4.0, Some(1))],
            ),
            run("no-migrator", Some("none"), &[(2 << 20, 2.0, Some(0))]),
        ]
    }

    #[test]
    fn spreads_and_offload_marks() {
        let runs = offload_runs();
        let (sizes, rows) = comparison(&runs);
        assert_eq!(sizes, vec![4096, 2 << 20]);
        // sd 0.1 of 1.0 is 10%: above the 5% target, marked '!'.
        assert_eq!(rows[0][1], "1.000 ± 0.100 (10.0%)!");
        assert_eq!(rows[0][2], "2.000 ± 0.100 (5.0%)");
        assert_eq!(rows[1][1], "0.500 ± 0.100 (20.0%)!");
        assert_eq!(rows[1][2], "4.000 ± 0.100 (2.5%)*");
        assert_eq!(rows[2][1], "-");
        assert_eq!(rows[2][2], "2.000 ± 0.100 (5.0%)");
        assert_eq!(rows[0][3], "-");
        assert_eq!(rows[0].len(), 4);
        assert_eq!(noisy_cells(&runs).len(), 2);
    }

    #[test]
    fn counters_show_what_each_migrator_did() {
        let mut runs = offload_runs();
        runs.push(run("old", Some("mtcopy"), &[(4096, 1.0, None)]));
        runs[1].points[0].offload.batches = Some(4);
        runs[1].points[1].offload.batches = Some(2);
        let (head, rows) = counters_table(&runs, &[4096, 2 << 20]);
        assert_eq!(head, ["batches / copied / CPU", "4K", "2M"]);
        // Only the runs with a migrator; a kernel without counters shows '-'.
        assert_eq!(
            rows,
            [["dcbm", "4 / 2048 / 0", "2 / 1 / 3"], ["old", "-", "-"]]
        );
        // Each '*' is explained: the 2M cell of dcbm, and the counters
        // missing from the kernel of "old".
        assert_eq!(
            offload_notes(&runs),
            [
                "dcbm: dcbm copied 1 of 4 folios at 2M",
                "old: no offload counters at 4K"
            ]
        );
    }

    fn with_runs(mut r: RunReport, size: u64, v: &[f64]) -> RunReport {
        let p = r.points.iter_mut().find(|p| p.folio_bytes == size).unwrap();
        p.gbps_runs = v.to_vec();
        p.gbps = MeanSd::of(v);
        r
    }

    #[test]
    fn ratios_with_intervals_against_the_right_baseline() {
        let v = with_runs(
            run("vanilla", None, &[(4096, 0.0, None)]),
            4096,
            &[1.0, 1.01, 0.99, 1.0],
        );
        let same = with_runs(
            run("same", None, &[(4096, 0.0, None)]),
            4096,
            &[1.0, 0.99, 1.01, 1.0],
        );
        let fast = with_runs(
            run("fast", None, &[(4096, 0.0, None)]),
            4096,
            &[2.0, 2.02, 1.98, 2.0],
        );
        let mut va = with_runs(
            run("vanilla-aged", None, &[(4096, 0.0, None)]),
            4096,
            &[0.5, 0.51, 0.49, 0.5],
        );
        va.aged = true;
        let mut aged = with_runs(
            run("aged", None, &[(4096, 0.0, None)]),
            4096,
            &[0.5, 0.5, 0.51, 0.49],
        );
        aged.aged = true;
        let runs = vec![v, same, fast, va, aged];
        // (1, 0) repeats "same / vanilla": listed once.
        let rows = ratios(&runs, 0, &[(2, 1), (1, 0)], &[4096], moves);
        let labels: Vec<&str> = rows.iter().map(|r| r[0].as_str()).collect();
        // The aged run against the aged baseline, not against vanilla (the
        // aged baseline is its own: compare it with --compare).
        assert_eq!(
            labels,
            [
                "same / vanilla",
                "fast / vanilla",
                "aged / vanilla-aged",
                "fast / same"
            ]
        );
        assert!(rows[0][1].starts_with("1.000 [") && !marked(&rows[0][1]));
        // Far apart: it survives the Holm adjustment over the table.
        assert!(rows[1][1].starts_with("2.000 [") && rows[1][1].ends_with('‡'));
        assert!(rows[2][1].starts_with("1.000 ["), "{}", rows[2][1]);
        // The widest interval of the row, as a half width.
        assert!(rows[0][2].starts_with('±') && rows[0][2].ends_with('%'));
        assert_eq!(ratio_cell(None, false), "-");
        let one = MeanSd::of(&[1.0]);
        assert_eq!(ratio_cell(Some(Ratio::of(&one, &one)), true), "1.000 [n/e]");
        assert_eq!(
            ratio_cell(Some(Ratio::of(&one, &MeanSd::default())), true),
            "n/e"
        );
    }

    /// Whether a ratio cell shows a difference, with or without the Holm
    /// adjustment.
    fn marked(cell: &str) -> bool {
        cell.ends_with('†') || cell.ends_with('‡')
    }

    #[test]
    fn aged_runs_without_an_aged_baseline_say_so() {
        let v = with_runs(
            run("vanilla", None, &[(4096, 0.0, None)]),
            4096,
            &[1.0, 1.01, 0.99, 1.0],
        );
        let mut aged = with_runs(
            run("series-aged", None, &[(4096, 0.0, None)]),
            4096,
            &[2.0, 2.02, 1.98, 2.0],
        );
        aged.aged = true;
        aged.count_sweep.push(CountPoint {
            folio_bytes: 2 << 20,
            folios: 8,
            gbps_runs: vec![2.0, 2.1],
            gbps: MeanSd::of(&[2.0, 2.1]),
            ..Default::default()
        });
        let mut fresh = aged.clone();
        fresh.label = "series".into();
        fresh.aged = false;
        let mut sweep_base = v.clone();
        sweep_base.count_sweep = fresh.count_sweep.clone();
        let runs = vec![sweep_base, fresh, aged];
        // No "series-aged / vanilla": vanilla is fresh memory.
        let rows = ratios(&runs, 0, &[], &[4096], moves);
        let labels: Vec<&str> = rows.iter().map(|r| r[0].as_str()).collect();
        assert_eq!(labels, ["series / vanilla"]);
        let (_, count) = count_table(&runs, 0);
        assert!(count.iter().all(|r| r[0] != "series-aged / vanilla"));
        let missing = missing_baselines(&runs, 0);
        assert_eq!(missing.len(), 1);
        assert!(
            missing[0].starts_with("series-aged (aged memory, --age) has no ratio")
                && missing[0].contains("no vanilla-aged run"),
            "{}",
            missing[0]
        );
        let t = Tables {
            missing,
            throughput: String::new(),
            boot_ratios: String::new(),
            round_ratios: String::new(),
            batch: None,
            count: None,
            tiered: None,
            cpu: None,
            counters: None,
        };
        let md = markdown(&runs, 0, "", &t);
        assert!(md.contains("Not compared with the baseline:\n\n- series-aged (aged memory"));
        // With the aged baseline, nothing is missing.
        let mut va = runs[0].clone();
        va.label = "vanilla-aged".into();
        va.aged = true;
        let mut with = runs.clone();
        with.push(va);
        assert!(missing_baselines(&with, 0).is_empty());
        let rows = ratios(&with, 0, &[], &[4096], moves);
        assert!(rows.iter().any(|r| r[0] == "series-aged / vanilla-aged"));
    }

    #[test]
    fn sweep_runs_are_compared_with_the_baseline_sweep_run() {
        let count = |gbps: &[f64]| CountPoint {
            folio_bytes: 2 << 20,
            folios: 8,
            gbps_runs: gbps.to_vec(),
            gbps: MeanSd::of(gbps),
            ..Default::default()
        };
        // make bench: throughput lines, and sweep lines of their own.
        let v = with_runs(
            run("vanilla", None, &[(4096, 0.0, None)]),
            4096,
            &[1.0, 1.01, 0.99, 1.0],
        );
        let mut vs = run("vanilla-sweep", None, &[]);
        vs.count_sweep.push(count(&[1.0, 1.02, 0.98]));
        let mut ns = run("no-migrator-sweep", Some("none"), &[]);
        ns.count_sweep.push(count(&[2.0, 2.04, 1.96]));
        let runs = vec![v, vs, ns];
        let (_, rows) = count_table(&runs, 0);
        let labels: Vec<&str> = rows.iter().map(|r| r[0].as_str()).collect();
        assert_eq!(
            labels,
            [
                "vanilla-sweep",
                "no-migrator-sweep",
                "no-migrator-sweep / vanilla-sweep"
            ]
        );
        assert!(rows[2][2].starts_with("2.000 ["), "{}", rows[2][2]);
        assert!(missing_baselines(&runs, 0).is_empty());
        // The sweep runs add no rows to the throughput tables.
        assert_eq!(comparison(&runs).1.len(), 1);
        assert!(ratios(&runs, 0, &[], &[4096], moves).is_empty());
        // Without the baseline's sweep run: said, not silently left out.
        let without = vec![runs[0].clone(), runs[2].clone()];
        let (_, rows) = count_table(&without, 0);
        assert_eq!(rows.len(), 1);
        let missing = missing_baselines(&without, 0);
        assert_eq!(missing.len(), 1);
        assert!(
            missing[0].starts_with("no-migrator-sweep's folio-count sweep has no ratio")
                && missing[0].contains("vanilla-sweep"),
            "{}",
            missing[0]
        );
    }

    #[test]
    fn holm_marks_what_survives_the_table() {
        let v = with_runs(
            run("vanilla", None, &[(4096, 0.0, None), (8192, 0.0, None)]),
            4096,
            &[1.0, 1.02, 0.98, 1.0],
        );
        let v = with_runs(v, 8192, &[1.0, 1.02, 0.98, 1.0]);
        // At 4K far apart (p ~ 1e-6); at 8K just outside the interval
        // (p ~ 0.03): significant alone, not among the table's 4 ratios.
        let a = with_runs(
            run("a", None, &[(4096, 0.0, None), (8192, 0.0, None)]),
            4096,
            &[1.5, 1.53, 1.47, 1.5],
        );
        let a = with_runs(a, 8192, &[1.035, 1.055, 1.015, 1.035]);
        let b = with_runs(
            run("b", None, &[(4096, 0.0, None), (8192, 0.0, None)]),
            4096,
            &[1.0, 1.01, 0.99, 1.0],
        );
        let b = with_runs(b, 8192, &[1.0, 1.01, 0.99, 1.0]);
        let runs = vec![v, a, b];
        let rows = ratios(&runs, 0, &[], &[4096, 8192], moves);
        assert_eq!(rows[0][0], "a / vanilla");
        assert!(rows[0][1].ends_with('‡'), "{}", rows[0][1]);
        let r = Ratio::of(&runs[1].points[1].gbps, &runs[0].points[1].gbps).expect("estimable");
        assert!(
            r.significant() && r.p > ALPHA / 4.0 && r.p < ALPHA,
            "p {}",
            r.p
        );
        assert!(rows[0][2].ends_with('†'), "{}", rows[0][2]);
        assert!(!marked(&rows[1][1]) && !marked(&rows[1][2]));
        // The same borderline ratio alone in its table: the plain test.
        let alone = ratios(&runs[..2], 0, &[], &[8192], moves);
        assert!(alone[0][1].ends_with('‡'), "{}", alone[0][1]);
    }

    #[test]
    fn boots_are_the_unit_of_the_boot_ratios() {
        // Two boots each: tight within a boot, apart between boots.
        let v1 = with_runs(
            run("vanilla", None, &[(4096, 0.0, None)]),
            4096,
            &[1.0, 1.0, 1.0],
        );
        let v2 = with_runs(
            run("vanilla", None, &[(4096, 0.0, None)]),
            4096,
            &[1.0, 1.0, 1.0],
        );
        let s1 = with_runs(
            run("s", None, &[(4096, 0.0, None)]),
            4096,
            &[0.97, 0.97, 0.97],
        );
        let s2 = with_runs(
            run("s", None, &[(4096, 0.0, None)]),
            4096,
            &[0.99, 0.99, 0.99],
        );
        let m = merge_rounds(vec![v1, s1, v2, s2]).unwrap();
        let bm = &m[1].points[0].boot_means;
        assert!(bm.len() == 2 && (bm[0] - 0.97).abs() < 1e-9 && (bm[1] - 0.99).abs() < 1e-9);
        let over_moves = ratios(&m, 0, &[], &[4096], moves);
        let over_boots = ratios(&m, 0, &[], &[4096], boots);
        // Over the single moves the 2% difference looks certain; with the
        // boot as the unit it is not shown.
        assert!(marked(&over_moves[0][1]), "{}", over_moves[0][1]);
        assert!(!marked(&over_boots[0][1]), "{}", over_boots[0][1]);
        assert!(over_boots[0][1].starts_with("0.980 ["));
    }

    /// One boot's run of `label` in `round`: two 4K moves at `v` GB/s.
    fn boot(label: &str, round: u32, v: f64) -> RunReport {
        let mut r = with_runs(run(label, None, &[(4096, 0.0, None)]), 4096, &[v, v]);
        r.points[0].boot_rounds = vec![round];
        r
    }

    #[test]
    fn rounds_pair_the_boots_of_one_round() {
        // Three rounds on a host whose speed changes from round to round;
        // within each, the series is 2-3% slower than 7.3.4.
        let runs = vec![
            boot("vanilla", 1, 1.0),
            boot("s", 1, 0.97),
            boot("vanilla", 2, 2.0),
            boot("s", 2, 1.96),
            boot("vanilla", 3, 1.5),
            boot("s", 3, 1.47),
        ];
        let m = merge_rounds(runs.clone()).unwrap();
        assert_eq!(m[1].points[0].boot_rounds, vec![1, 2, 3]);
        let over_boots = ratios(&m, 0, &[], &[4096], boots);
        let paired = ratios(&m, 0, &[], &[4096], rounds);
        // Unpaired the rounds' spread hides the difference; paired it shows.
        assert!(!marked(&over_boots[0][1]), "{}", over_boots[0][1]);
        assert!(marked(&paired[0][1]), "{}", paired[0][1]);
        let r = (0.97f64 * 0.98 * 0.98).cbrt();
        assert!(
            paired[0][1].starts_with(&format!("{r:.3} [")),
            "{}",
            paired[0][1]
        );
        // Only rounds both sides have are paired: without round 3 of the
        // series, two pairs remain.
        let m = merge_rounds(runs[..5].to_vec()).unwrap();
        let pairs = round_pairs(&m[1].points[0], &m[0].points[0]).unwrap();
        assert_eq!(pairs, vec![(0.97, 1.0), (1.96, 2.0)]);
        // A run that does not say its round leaves nothing to pair.
        let mut unknown = runs.clone();
        unknown[5].points[0].boot_rounds.clear();
        let m = merge_rounds(unknown).unwrap();
        assert!(round_pairs(&m[1].points[0], &m[0].points[0]).is_none());
        assert!(ratios(&m, 0, &[], &[4096], rounds)[0][1].contains("n/e"));
        // Nor two boots that claim one round.
        let mut twice = runs;
        twice[3].points[0].boot_rounds = vec![1];
        let m = merge_rounds(twice).unwrap();
        assert!(round_pairs(&m[1].points[0], &m[0].points[0]).is_none());
    }

    #[test]
    fn rounds_pair_by_number_not_by_position() {
        // The series lacks round 2 and its boots come in another order:
        // pairing by position would put 0.97 against 2.0.
        let m = merge_rounds(vec![
            boot("vanilla", 1, 1.0),
            boot("vanilla", 2, 2.0),
            boot("vanilla", 3, 1.5),
            boot("s", 3, 1.47),
            boot("s", 1, 0.97),
        ])
        .unwrap();
        let pairs = round_pairs(&m[1].points[0], &m[0].points[0]).unwrap();
        assert_eq!(pairs, vec![(0.97, 1.0), (1.47, 1.5)]);
    }

    #[test]
    fn a_run_file_gives_its_points_its_round() {
        let mut r = run("vanilla", None, &[(4096, 1.0, None), (65536, 2.0, None)]);
        set_round(&mut r, "build/bench/runs/vanilla-7.json");
        assert!(r.points.iter().all(|p| p.boot_rounds == vec![7]));
        // Through JSON and back, as results.json holds it.
        let back: RunReport = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(back.points[0].boot_rounds, vec![7]);
        // Another name, or a run already pooled from several boots: none.
        let mut other = run("vanilla", None, &[(4096, 1.0, None)]);
        set_round(&mut other, "mine.json");
        assert!(other.points[0].boot_rounds.is_empty());
        let mut pooled = run("vanilla", None, &[(4096, 1.0, None)]);
        pooled.points[0].boot_means = vec![1.0, 1.1];
        set_round(&mut pooled, "runs/vanilla-2.json");
        assert!(pooled.points[0].boot_rounds.is_empty());
        // A run written before boot_rounds existed reads as none.
        let old = serde_json::to_string(&run("vanilla", None, &[(4096, 1.0, None)]))
            .unwrap()
            .replace(",\"boot_rounds\":[]", "");
        assert!(!old.contains("boot_rounds"));
        let old: RunReport = serde_json::from_str(&old).unwrap();
        assert!(old.points[0].boot_rounds.is_empty());
    }

    #[test]
    fn every_throughput_line_of_the_matrix_has_its_own_colour() {
        let lines = include_str!("../matrix")
            .lines()
            .filter(|l| !l.trim_start().starts_with('#') && l.contains('|'))
            .filter(|l| !l.contains("--no-throughput"))
            .count();
        assert!(lines > 0 && lines <= LINE_COLORS.len(), "{lines} lines");
        for (i, a) in LINE_COLORS.iter().enumerate() {
            assert!(!LINE_COLORS[..i].contains(a), "colour {i} repeats");
        }
    }

    #[test]
    fn rounds_come_from_the_run_file_names() {
        assert_eq!(
            round_of("build/bench/runs/vanilla-3.json", "vanilla"),
            Some(3)
        );
        assert_eq!(
            round_of("runs/no-migrator-aged-10.json", "no-migrator-aged"),
            Some(10)
        );
        // Another label's file, or a name make bench does not write.
        assert_eq!(
            round_of("runs/no-migrator-aged-1.json", "no-migrator"),
            None
        );
        assert_eq!(round_of("runs/vanilla.json", "vanilla"), None);
        assert_eq!(round_of("runs/vanilla-.json", "vanilla"), None);
        assert_eq!(round_of("runs/vanilla-+1.json", "vanilla"), None);
        assert_eq!(round_of("vanilla-2.txt", "vanilla"), None);
    }

    #[test]
    fn sweeps_tabulate_and_pool() {
        let mut a = run("series", Some("none"), &[]);
        a.batch_sweep.push(BatchPoint {
            folio_bytes: 4096,
            batch_pages: 512,
            first_runs: vec![100.0, 110.0],
            first_folio_us: MeanSd::of(&[100.0, 110.0]),
            whole_runs: vec![1000.0, 1000.0],
            whole_call_us: MeanSd::of(&[1000.0, 1000.0]),
            ..Default::default()
        });
        a.count_sweep.push(CountPoint {
            folio_bytes: 2 << 20,
            folios: 8,
            gbps_runs: vec![2.0, 2.0],
            gbps: MeanSd::of(&[2.0, 2.0]),
            ..Default::default()
        });
        let mut b = a.clone();
        b.batch_sweep[0].first_runs = vec![90.0, 100.0];
        let mut v = run("vanilla", None, &[]);
        v.count_sweep = a.count_sweep.clone();
        v.count_sweep[0].gbps_runs = vec![1.0, 1.0];
        v.count_sweep[0].gbps = MeanSd::of(&[1.0, 1.0]);
        let m = merge_rounds(vec![a, b, v]).unwrap();
        assert_eq!(m[0].batch_sweep[0].first_runs.len(), 4);
        assert!((m[0].batch_sweep[0].first_folio_us.mean - 100.0).abs() < 1e-9);
        assert_eq!(m[0].count_sweep[0].gbps_runs.len(), 4);
        let (head, rows) = batch_table(&m);
        assert_eq!(head.len(), rows[0].len());
        assert_eq!(rows[0][..3], ["series", "4K", "512"]);
        assert_eq!(rows[0][5], "0.100");
        let (head, rows) = count_table(&m, 1);
        assert_eq!(head, ["configuration", "folio", "8 per call"]);
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[0][2], "2.000 ± 0.000 (0.0%)");
        assert_eq!(rows[2][0], "series / vanilla");
        // No spread on either side: no interval, and no '†'.
        assert_eq!(rows[2][2], "2.000 [n/e]");
    }

    #[test]
    fn first_folios_not_seen_are_missing() {
        let mut b = BatchPoint {
            folio_bytes: 4096,
            batch_pages: 512,
            first_runs: vec![100.0, 110.0],
            first_folio_us: MeanSd::of(&[100.0, 110.0]),
            first_missing: 1,
            whole_runs: vec![1000.0, 1000.0, 1000.0],
            whole_call_us: MeanSd::of(&[1000.0, 1000.0, 1000.0]),
            ..Default::default()
        };
        let mut r = run("series", Some("none"), &[]);
        r.batch_sweep.push(b.clone());
        let (_, rows) = batch_table(&[r.clone()]);
        assert_eq!(rows[0][3], "105 ± 7 (6.7%)!, not seen in 1 of 3");
        // The ratio is over the folios seen, not padded with whole calls.
        assert_eq!(rows[0][5], "0.105");
        b.first_runs.clear();
        b.first_folio_us = MeanSd::of(&[]);
        b.first_missing = 3;
        r.batch_sweep = vec![b];
        let (_, rows) = batch_table(&[r.clone()]);
        assert_eq!(
            (rows[0][3].as_str(), rows[0][5].as_str()),
            ("not seen (3 calls)", "-")
        );
        let m = merge_rounds(vec![r.clone(), r]).expect("merge");
        assert_eq!(m[0].batch_sweep[0].first_missing, 6);
    }

    #[test]
    fn sweeps_mark_what_the_migrator_left_to_the_cpu() {
        let mut r = run("dcbm", Some("dcbm"), &[]);
        r.count_sweep = vec![
            CountPoint {
                folio_bytes: 2 << 20,
                folios: 8,
                gbps_runs: vec![1.0, 1.1],
                gbps: MeanSd::of(&[1.0, 1.1]),
                offload: Offload {
                    batches: Some(2),
                    copied: Some(16),
                    fallback: Some(0),
                },
            },
            CountPoint {
                folio_bytes: 2 << 20,
                folios: 32,
                gbps_runs: vec![1.0, 1.1],
                gbps: MeanSd::of(&[1.0, 1.1]),
                offload: Offload {
                    batches: Some(2),
                    copied: Some(60),
                    fallback: Some(4),
                },
            },
        ];
        // 4M of 2M folios, 2 calls: 4 folios, 3 copied.
        r.batch_sweep = vec![BatchPoint {
            folio_bytes: 2 << 20,
            batch_pages: 512,
            first_runs: vec![10.0, 11.0],
            first_folio_us: MeanSd::of(&[10.0, 11.0]),
            first_missing: 0,
            whole_runs: vec![100.0, 110.0],
            whole_call_us: MeanSd::of(&[100.0, 110.0]),
            offload: Offload {
                batches: Some(4),
                copied: Some(3),
                fallback: Some(1),
            },
        }];
        let runs = vec![r];
        let (_, rows) = count_table(&runs, 0);
        assert!(!rows[0][2].ends_with('*'), "{}", rows[0][2]);
        assert!(rows[0][3].ends_with('*'), "{}", rows[0][3]);
        let (_, rows) = batch_table(&runs);
        assert!(rows[0][3].ends_with('*') && rows[0][4].ends_with('*'));
        let t = Tables {
            missing: vec![],
            throughput: String::new(),
            boot_ratios: String::new(),
            round_ratios: String::new(),
            batch: None,
            count: None,
            tiered: None,
            cpu: None,
            counters: None,
        };
        let md = markdown(&runs, 0, "", &t);
        assert!(
            md.contains("- dcbm: dcbm copied 60 of 64 folios at count sweep 32 x 2M\n"),
            "{md}"
        );
        assert!(md.contains(
            "- dcbm: dcbm copied 3 of 4 folios at batch sweep 2M at batch_max_pages 512\n"
        ));
        assert!(!md.contains("count sweep 8 x 2M"));
        // Pooled rounds add the counters up.
        let m = merge_rounds(vec![runs[0].clone(), runs[0].clone()]).expect("merge");
        assert_eq!(m[0].count_sweep[0].offload.copied, Some(32));
        assert_eq!(m[0].batch_sweep[0].offload.fallback, Some(2));
        assert!(count_note(&m[0], &m[0].count_sweep[0]).is_none());
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
        let (sizes, rows) = comparison(&[a.clone(), b.clone()]);
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
        assert_eq!((m[0].iterations, p.offload.copied), (4, Some(4096)));
        // Every folio of the 4 runs was copied: no '*'.
        assert!(point_note(&m[0], p).is_none());
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

    #[test]
    fn a_split_tier_point_is_marked() {
        let mut p = TierPoint::new(64 << 10, 32 << 20);
        assert_eq!(split_mark(&p), "");
        p.split_runs = 1;
        assert_eq!(split_mark(&p), "s");
    }

    fn tier(size: u64, secs: &[f64], copied: Option<u64>, fallback: u64) -> TierPoint {
        let mut p = TierPoint::new(size, 32 << 20);
        let folios = (32 << 20) / size;
        for &t in secs {
            p.add(
                t,
                32 << 20,
                folios * size / 4096,
                folios,
                folios * size / 4096,
            );
        }
        // `copied`: per measurement.
        p.offload = Offload {
            batches: copied.map(|_| 10),
            copied: copied.map(|c| c * secs.len() as u64),
            fallback: copied.map(|_| fallback),
        };
        p
    }

    fn tiered_run(
        label: &str,
        migrator: Option<&str>,
        secs: &[f64],
        copied: Option<u64>,
    ) -> RunReport {
        let mut r = run(label, migrator, &[]);
        for size in [4096, 2 << 20] {
            let folios = (32 << 20) / size;
            r.demotion
                .push(tier(size, secs, copied.map(|c| c.min(folios)), 0));
            r.promotion
                .push(tier(size, secs, copied.map(|c| c.min(folios)), 0));
        }
        r
    }

    #[test]
    fn tiered_runs_tabulate_against_the_baseline_tiered_run() {
        let v = with_runs(
            run("vanilla", None, &[(4096, 0.0, None)]),
            4096,
            &[1.0, 1.01, 0.99, 1.0],
        );
        let vt = tiered_run("vanilla-tiered", None, &[0.10, 0.11, 0.09], None);
        // Twice as fast, every folio copied.
        let ct = tiered_run(
            "cpu-batch-tiered",
            Some("test"),
            &[0.05, 0.055, 0.045],
            Some(u64::MAX),
        );
        // The migrator left folios to the CPU at 2M.
        let mut dt = tiered_run(
            "dcbm-tiered",
            Some("dcbm"),
            &[0.10, 0.11, 0.09],
            Some(u64::MAX),
        );
        dt.demotion[1].offload.fallback = Some(3);
        dt.promotion[1].offload.copied = Some(2);
        let runs = vec![v, vt, ct, dt];
        assert!(missing_baselines(&runs, 0).is_empty());
        let (head, rows) = tiered_table(&runs, 0);
        assert_eq!(
            head,
            [
                "configuration",
                "folio",
                "demotion (GB/s)",
                "promotion (s to 90%)"
            ]
        );
        let labels: Vec<String> = rows.iter().map(|r| format!("{} {}", r[0], r[1])).collect();
        assert_eq!(
            labels,
            [
                "vanilla-tiered 4K",
                "vanilla-tiered 2M",
                "cpu-batch-tiered 4K",
                "cpu-batch-tiered 2M",
                "dcbm-tiered 4K",
                "dcbm-tiered 2M",
                "cpu-batch-tiered / vanilla-tiered 4K",
                "cpu-batch-tiered / vanilla-tiered 2M",
                "dcbm-tiered / vanilla-tiered 4K",
                "dcbm-tiered / vanilla-tiered 2M",
            ]
        );
        // 32M in 0.1, 0.11 and 0.09 s: 0.338 GB/s on average.
        assert!(rows[0][2].starts_with("0.338 ± "), "{}", rows[0][2]);
        assert_eq!(rows[0][3], "0.100 ± 0.010 (10.0%)!");
        assert!(!rows[2][2].ends_with('*') && !rows[2][3].ends_with('*'));
        assert!(rows[5][2].ends_with('*') && rows[5][3].ends_with('*'));
        assert!(!rows[4][2].ends_with('*'));
        // Demotion GB/s doubled, promotion time halved, far apart.
        assert!(rows[6][2].starts_with("2.0"), "{}", rows[6][2]);
        assert!(
            rows[6][3].starts_with("0.500 [") && rows[6][3].ends_with('‡'),
            "{}",
            rows[6][3]
        );
        assert!(rows[8][3].starts_with("1.000 [") && !marked(&rows[8][3]));
        // The tiered runs add no rows to the throughput tables.
        assert_eq!(comparison(&runs).1.len(), 1);
        assert!(ratios(&runs, 0, &[], &[4096], moves).is_empty());
        // The notes say what the migrator did.
        let t = Tables {
            missing: vec![],
            throughput: String::new(),
            boot_ratios: String::new(),
            round_ratios: String::new(),
            batch: None,
            count: None,
            tiered: Some(markdown_table(&head, &rows)),
            cpu: None,
            counters: None,
        };
        let md = markdown(&runs, 0, "", &t);
        assert!(md.contains("\n## Tiered memory\n"), "{md}");
        assert!(
            md.contains(": dcbm copied 48 folios at demotion 2M, of which the buffers' 48 moved; 3 fell back to the CPU\n"),
            "{md}"
        );
        assert!(md.contains(": dcbm copied 2 folios at promotion 2M, of which the buffers' 48 moved; 0 fell back to the CPU\n"));
        // Tiered runs have no throughput cells, so no row of counters.
        assert!(!md.contains("## Offload counters\n\nThe offload"), "{md}");
        assert!(!md.contains("* test copied"));
        // Without the baseline's tiered run: said, not silently left out.
        let without = vec![runs[0].clone(), runs[2].clone()];
        let (_, rows) = tiered_table(&without, 0);
        assert_eq!(rows.len(), 2);
        let missing = missing_baselines(&without, 0);
        assert_eq!(
            missing,
            [
                "cpu-batch-tiered's tiered memory has no ratio to the baseline: \
              neither vanilla nor a vanilla-tiered run has tiered-memory measurements"
            ]
        );
    }

    #[test]
    fn tiered_rounds_pool_splits_and_vmstat() {
        // A split, and the counters, in the second boot only: the pooled
        // point must still carry them (the 's' mark comes from split_runs).
        let a = tiered_run("t", Some("test"), &[0.1], Some(u64::MAX));
        let mut b = tiered_run("t", Some("test"), &[0.3], Some(u64::MAX));
        b.demotion[0].split_runs = 1;
        b.demotion[0].vmstat_runs = vec![[("pgscan_anon".to_string(), 9)].into()];
        let m = merge_rounds(vec![a, b]).expect("merge");
        assert_eq!(m[0].demotion[0].split_runs, 1);
        assert_eq!(m[0].demotion[0].vmstat_runs.len(), 1);
    }

    #[test]
    fn tiered_rounds_pool() {
        let a = tiered_run("t", Some("test"), &[0.1, 0.2], Some(u64::MAX));
        let b = tiered_run("t", Some("test"), &[0.3], Some(u64::MAX));
        let m = merge_rounds(vec![a, b]).expect("merge");
        assert_eq!(m.len(), 1);
        let p = &m[0].promotion[0];
        assert_eq!(p.secs_runs, vec![0.1, 0.2, 0.3]);
        assert!((p.secs.mean - 0.2).abs() < 1e-12 && p.secs.n == 3);
        assert_eq!(p.gbps_runs.len(), 3);
        assert_eq!(
            (p.folios_moved, p.offload.copied),
            (3 * 8192, Some(3 * 8192))
        );
        assert_eq!(m[0].demotion[1].pages_moved, 3 * 8192);
        assert!(tier_note(&m[0], p, "promotion").is_none());
        let mut none = m[0].clone();
        none.migrator = Some("none".into());
        none.promotion[0].offload.copied = Some(0);
        assert!(tier_note(&none, &none.promotion[0], "promotion").is_none());
        none.migrator = Some("dcbm".into());
        none.promotion[0].offload = Offload::default();
        assert_eq!(
            tier_note(&none, &none.promotion[0], "promotion").as_deref(),
            Some("no offload counters at promotion 4K")
        );
    }
}
