// SPDX-License-Identifier: GPL-2.0
//! The results of one run and their forms: a table for people, JSON and CSV
//! for tools.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::args::{format_size, RunOptions};
use crate::stats::{MeanSd, Percentiles};
use crate::sys;

/// The copy-offload counters of /proc/vmstat over the measured moves of a
/// point; each absent on kernels without it. Flattened into the point's
/// JSON under the names the throughput points always had.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Offload {
    /// Batches handed to the migrator (migrate_offload_batches).
    #[serde(rename = "offload_batches")]
    pub batches: Option<u64>,
    /// Folios the migrator copied (migrate_offload_folios_copied).
    #[serde(rename = "migrator_copied")]
    pub copied: Option<u64>,
    /// Folios that fell back to the CPU copy (migrate_offload_folios_fallback).
    #[serde(rename = "migrator_fallback")]
    pub fallback: Option<u64>,
}

impl Offload {
    /// Adds the counters of more moves; a counter the kernel does not have
    /// stays absent.
    pub fn add(&mut self, more: Offload) {
        let add = |acc: Option<u64>, v: Option<u64>| v.map(|v| acc.unwrap_or(0) + v);
        self.batches = add(self.batches, more.batches);
        self.copied = add(self.copied, more.copied);
        self.fallback = add(self.fallback, more.fallback);
    }

    /// "; migrator copied N, fell back M" for the sweeps' lines of the
    /// table; empty on kernels without the counters.
    pub fn summary(&self) -> String {
        match (self.copied, self.fallback) {
            (Some(c), Some(f)) => format!("; migrator copied {c}, fell back {f}"),
            _ => String::new(),
        }
    }
}

/// move_pages() throughput at one folio size.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Point {
    pub folio_bytes: u64,
    /// Folios per measurement.
    pub folios: u64,
    /// GB/s (10^9 bytes per second) of each measurement, and their summary.
    pub gbps_runs: Vec<f64>,
    pub gbps: MeanSd,
    /// Over all measurements: PMD-sized THPs migrated whole (vmstat).
    pub thp_migrated: u64,
    #[serde(flatten)]
    pub offload: Offload,
    /// The CPU time of each measurement's moves, in seconds: the migrating
    /// task's own (its thread's clock), and every CPU's busy time (the
    /// migrators' workers, kworkers and interrupts too). Empty in runs of
    /// migbench versions that did not measure them.
    #[serde(default)]
    pub task_cpu_runs: Vec<f64>,
    #[serde(default)]
    pub machine_cpu_runs: Vec<f64>,
    /// The mean of each boot's measurements, once `migbench report` has
    /// pooled the rounds (a round is one boot).
    #[serde(default)]
    pub boot_means: Vec<f64>,
    /// The round of each of `boot_means`, where every pooled run's file
    /// named it (`make bench`'s runs/LABEL-ROUND.json); empty otherwise.
    /// Two configurations' boots of one round ran one after the other (of
    /// one kernel, in the same boot), which pairs them.
    #[serde(default)]
    pub boot_rounds: Vec<u32>,
}

impl Point {
    pub fn new(folio_bytes: u64, folios: u64) -> Point {
        Point {
            folio_bytes,
            folios,
            ..Default::default()
        }
    }

    /// Milliseconds of CPU time per GB (10^9 bytes) moved, over the
    /// measurements of `cpu_runs` (each of `bytes`): mean and sd; None
    /// where none was measured.
    pub fn cpu_ms_per_gb(cpu_runs: &[f64], bytes: u64) -> Option<MeanSd> {
        if cpu_runs.is_empty() || bytes == 0 {
            return None;
        }
        let gb = bytes as f64 / 1e9;
        let ms: Vec<f64> = cpu_runs.iter().map(|s| s * 1e3 / gb).collect();
        Some(MeanSd::of(&ms))
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CallLatency {
    /// Folios per move_pages() call.
    pub folios: usize,
    pub us: Percentiles,
}

/// Latencies at one folio size, in microseconds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LatencyPoint {
    pub folio_bytes: u64,
    /// From the start of a move_pages() call of the whole buffer until its
    /// first folio is on the destination node (over the calls where a poll
    /// saw it there before the call returned), and until the call returns.
    pub first_folio_us: MeanSd,
    /// Calls whose first folio no poll saw on the destination node before
    /// the call returned.
    #[serde(default)]
    pub first_missing: usize,
    pub whole_call_us: MeanSd,
    pub per_call: Vec<CallLatency>,
}

impl LatencyPoint {
    /// A headline and one line per batch size, for the table and the report.
    pub fn lines(&self) -> (String, Vec<String>) {
        let size = format_size(self.folio_bytes);
        let head = if self.first_folio_us.n == 0 {
            format!(
                "latency {size}: first folio not seen on the destination before the {:.0} us call returned",
                self.whole_call_us.mean
            )
        } else {
            format!(
                "latency {size}: first folio on the destination after {:.0} ± {:.0} us of a {:.0} us call{}",
                self.first_folio_us.mean,
                self.first_folio_us.sd,
                self.whole_call_us.mean,
                missing(self.first_missing, self.whole_call_us.n)
            )
        };
        let calls = self
            .per_call
            .iter()
            .map(|c| {
                format!(
                    "{} folios per call: p50 {:.0} us, p90 {:.0} us, p99 {:.0} us, max {:.0} us ({} calls)",
                    c.folios, c.us.p50, c.us.p90, c.us.p99, c.us.max, c.us.n
                )
            })
            .collect();
        (head, calls)
    }
}

/// "" or " (first folio not seen in 2 of 5 calls)".
pub fn missing(missing: usize, calls: usize) -> String {
    if missing == 0 {
        String::new()
    } else {
        format!(" (first folio not seen in {missing} of {calls} calls)")
    }
}

/// The batch-size sweep at one folio size and one migration batch cap: a
/// move_pages() call of the whole buffer, how long until its first folio is
/// on the destination node and until it returns, in microseconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BatchPoint {
    pub folio_bytes: u64,
    /// debugfs batch_max_pages during the calls.
    pub batch_pages: u64,
    /// The first-folio times of the calls where a poll saw it on the
    /// destination node before the call returned.
    pub first_runs: Vec<f64>,
    pub first_folio_us: MeanSd,
    /// The measured calls where none did: missing, not the call's time.
    #[serde(default)]
    pub first_missing: usize,
    pub whole_runs: Vec<f64>,
    pub whole_call_us: MeanSd,
    /// Over the measured calls, as in the throughput table.
    #[serde(flatten)]
    pub offload: Offload,
}

/// The folio-count sweep: throughput of one move_pages() call of `folios`
/// folios of `folio_bytes`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CountPoint {
    pub folio_bytes: u64,
    pub folios: u64,
    pub gbps_runs: Vec<f64>,
    pub gbps: MeanSd,
    /// Over the measured calls, as in the throughput table.
    #[serde(flatten)]
    pub offload: Offload,
}

/// A tiered-memory measurement at one folio size, over its measured runs:
/// the demotion of a buffer of the source node by one write to a cgroup's
/// memory.reclaim, or the promotion of a buffer of the destination node by
/// NUMA balancing while a CPU of the source node reads it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TierPoint {
    pub folio_bytes: u64,
    /// Bytes of each measurement's buffer.
    pub bytes: u64,
    /// Seconds of each measurement: the memory.reclaim write; from NUMA
    /// balancing on until the check that saw 90% of the buffer promoted.
    pub secs_runs: Vec<f64>,
    pub secs: MeanSd,
    /// GB/s of each measurement: the bytes that moved (demoted; promoted by
    /// that check) over its seconds.
    pub gbps_runs: Vec<f64>,
    pub gbps: MeanSd,
    /// Pages of the buffers that moved, their folios, and the pages the
    /// kernel's counter of the path (pgdemote_proactive, pgpromote_success)
    /// counted meanwhile.
    pub pages_moved: u64,
    pub folios_moved: u64,
    pub pages_counted: u64,
    /// Measured runs after which the buffer's folios were no longer whole
    /// (the kernel split some on the way: 7.3.4 splits demoted mTHPs).
    #[serde(default)]
    pub split_runs: u64,
    /// The vmstat entries that rose during each measured run (demotion
    /// only): what reclaim scanned, what migration failed and retried, to
    /// tell a slow run's extra work from a slow copy.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub vmstat_runs: Vec<std::collections::BTreeMap<String, u64>>,
    /// Over the measured runs; the batches are the kernel's own (reclaim's,
    /// NUMA balancing's), and may hold other folios than the buffer's.
    #[serde(flatten)]
    pub offload: Offload,
}

impl TierPoint {
    pub fn new(folio_bytes: u64, bytes: u64) -> TierPoint {
        TierPoint {
            folio_bytes,
            bytes,
            ..Default::default()
        }
    }

    /// Adds a measurement.
    pub fn add(&mut self, secs: f64, moved_bytes: u64, pages: u64, folios: u64, counted: u64) {
        self.secs_runs.push(secs);
        self.secs = MeanSd::of(&self.secs_runs);
        self.gbps_runs
            .push(moved_bytes as f64 / secs.max(1e-9) / 1e9);
        self.gbps = MeanSd::of(&self.gbps_runs);
        self.pages_moved += pages;
        self.folios_moved += folios;
        self.pages_counted += counted;
    }

    /// "demotion 4K: ..." for the table of a run.
    pub fn line(&self, what: &str, node: i32) -> String {
        let measured = self.secs_runs.len() as u64;
        let pages = self.bytes / sys::page_size() * measured;
        format!(
            "{what} {}: {:.3} ± {:.3} s, {:.3} ± {:.3} GB/s of {} ({} runs; {} of {pages} pages on node {node} after, counted {}){}",
            format_size(self.folio_bytes),
            self.secs.mean,
            self.secs.sd,
            self.gbps.mean,
            self.gbps.sd,
            format_size(self.bytes),
            measured,
            self.pages_moved,
            self.pages_counted,
            self.offload.summary()
        )
    }
}

/// memcpy() bandwidth from the source node to the destination node, the
/// buffer split into `threads` parts copied at the same time.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MemcpyPoint {
    pub bytes: u64,
    #[serde(default = "one_thread")]
    pub threads: usize,
    pub gbps_runs: Vec<f64>,
    pub gbps: MeanSd,
}

fn one_thread() -> usize {
    1
}

/// Everything one `migbench run` measured, and where.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunReport {
    pub label: String,
    pub kernel: String,
    pub machine: String,
    pub from: i32,
    pub to: i32,
    pub total_bytes: u64,
    pub iterations: usize,
    /// The copy-offload sysfs `migrator` during the run; absent on kernels
    /// without copy offload.
    pub migrator: Option<String>,
    pub points: Vec<Point>,
    pub latency: Vec<LatencyPoint>,
    pub memcpy: Option<MemcpyPoint>,
    /// memcpy() with `--memcpy-threads` threads, when more than one.
    #[serde(default)]
    pub memcpy_parallel: Option<MemcpyPoint>,
    /// Moves discarded at each size before the measured ones.
    #[serde(default)]
    pub warmup: usize,
    /// The memory's accessed bits were cleared before each move (--age).
    #[serde(default)]
    pub aged: bool,
    #[serde(default)]
    pub batch_sweep: Vec<BatchPoint>,
    #[serde(default)]
    pub count_sweep: Vec<CountPoint>,
    /// Demotion through memory.reclaim (--demotion), by folio size.
    #[serde(default)]
    pub demotion: Vec<TierPoint>,
    /// Promotion by NUMA balancing (--promotion), by folio size.
    #[serde(default)]
    pub promotion: Vec<TierPoint>,
}

impl RunReport {
    pub fn new(o: &RunOptions, migrator: Option<String>) -> RunReport {
        RunReport {
            label: o.label.clone(),
            kernel: sys::kernel(),
            machine: sys::machine(),
            from: o.from,
            to: o.to,
            total_bytes: o.total,
            iterations: o.iterations,
            migrator,
            points: Vec::new(),
            latency: Vec::new(),
            memcpy: None,
            memcpy_parallel: None,
            warmup: o.warmup,
            aged: o.age,
            batch_sweep: Vec::new(),
            count_sweep: Vec::new(),
            demotion: Vec::new(),
            promotion: Vec::new(),
        }
    }

    /// Whether the run has tiered-memory measurements.
    pub fn tiered(&self) -> bool {
        !self.demotion.is_empty() || !self.promotion.is_empty()
    }

    /// The human table.
    pub fn table(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "migbench '{}': move_pages() of {} node {} -> {}, {} runs per size; kernel {}; migrator {}",
            self.label,
            format_size(self.total_bytes),
            self.from,
            self.to,
            self.iterations,
            self.kernel.split_whitespace().next().unwrap_or("?"),
            self.migrator.as_deref().unwrap_or("(no copy offload)")
        );
        let _ = writeln!(
            s,
            "{:>6}  {:>16}  {:>8}  {:>12}  {:>10}  {:>12}  {:>12}",
            "folio", "GB/s", "folios", "by migrator", "fell back", "task ms/GB", "CPUs ms/GB"
        );
        for p in &self.points {
            let opt = |v: Option<u64>| v.map_or("-".to_string(), |v| v.to_string());
            let cpu = |runs: &[f64]| {
                Point::cpu_ms_per_gb(runs, self.total_bytes)
                    .map_or("-".to_string(), |m| format!("{:.1}", m.mean))
            };
            let _ = writeln!(
                s,
                "{:>6}  {:>16}  {:>8}  {:>12}  {:>10}  {:>12}  {:>12}",
                format_size(p.folio_bytes),
                format!("{:.3} ± {:.3}", p.gbps.mean, p.gbps.sd),
                p.folios * self.iterations as u64,
                opt(p.offload.copied),
                opt(p.offload.fallback),
                cpu(&p.task_cpu_runs),
                cpu(&p.machine_cpu_runs)
            );
        }
        for m in self.memcpy.iter().chain(&self.memcpy_parallel) {
            let _ = writeln!(
                s,
                "{:>6}  {:>16}  (memcpy node {} -> {}, {} thread{}: the copy limit)",
                "memcpy",
                format!("{:.3} ± {:.3}", m.gbps.mean, m.gbps.sd),
                self.from,
                self.to,
                m.threads,
                if m.threads == 1 { "" } else { "s" }
            );
        }
        for l in &self.latency {
            let (head, calls) = l.lines();
            let _ = writeln!(s, "{head}");
            for c in calls {
                let _ = writeln!(s, "  {c}");
            }
        }
        for b in &self.batch_sweep {
            let _ = writeln!(
                s,
                "batch {} x {} pages: first folio {:.0} ± {:.0} us, call {:.0} ± {:.0} us{}{}",
                format_size(b.folio_bytes),
                b.batch_pages,
                b.first_folio_us.mean,
                b.first_folio_us.sd,
                b.whole_call_us.mean,
                b.whole_call_us.sd,
                missing(b.first_missing, b.whole_call_us.n),
                b.offload.summary()
            );
        }
        for c in &self.count_sweep {
            let _ = writeln!(
                s,
                "count {} x {}: {:.3} ± {:.3} GB/s{}",
                c.folios,
                format_size(c.folio_bytes),
                c.gbps.mean,
                c.gbps.sd,
                c.offload.summary()
            );
        }
        if self.tiered() {
            let _ = writeln!(
                s,
                "tiered memory: demotion node {} -> {} by memory.reclaim, promotion node {} -> {} by NUMA balancing (seconds: until 90% promoted)",
                self.from, self.to, self.to, self.from
            );
        }
        for d in &self.demotion {
            let _ = writeln!(s, "{}", d.line("demotion", self.to));
        }
        for p in &self.promotion {
            let _ = writeln!(s, "{}", p.line("promotion", self.from));
        }
        s
    }

    /// One CSV row per folio size.
    pub fn csv(&self) -> String {
        let mut s = String::from(
            "label,folio_bytes,folios,iterations,gbps_mean,gbps_sd,migrator_copied,migrator_fallback,memcpy_gbps\n",
        );
        let opt = |v: Option<u64>| v.map_or(String::new(), |v| v.to_string());
        let memcpy = self
            .memcpy
            .as_ref()
            .map_or(String::new(), |m| format!("{:.4}", m.gbps.mean));
        for p in &self.points {
            let _ = writeln!(
                s,
                "{},{},{},{},{:.4},{:.4},{},{},{}",
                csv_field(&self.label),
                p.folio_bytes,
                p.folios,
                self.iterations,
                p.gbps.mean,
                p.gbps.sd,
                opt(p.offload.copied),
                opt(p.offload.fallback),
                memcpy
            );
        }
        s
    }
}

/// Quotes a CSV field if it needs it (RFC 4180).
pub fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> RunReport {
        let mut p = Point::new(64 << 10, 2048);
        p.gbps_runs = vec![1.0, 3.0];
        p.gbps = MeanSd::of(&p.gbps_runs);
        p.offload.add(Offload {
            batches: Some(4),
            copied: Some(2048),
            fallback: Some(0),
        });
        p.offload.add(Offload {
            batches: Some(4),
            copied: Some(2000),
            fallback: Some(48),
        });
        RunReport {
            label: "dcbm, 2 ch".into(),
            kernel: "7.3.4 #1 SMP".into(),
            machine: "QEMU".into(),
            from: 0,
            to: 1,
            total_bytes: 128 << 20,
            iterations: 2,
            migrator: Some("dcbm".into()),
            points: vec![p],
            latency: vec![],
            memcpy: None,
            memcpy_parallel: None,
            warmup: 1,
            aged: false,
            batch_sweep: Vec::new(),
            count_sweep: Vec::new(),
            demotion: Vec::new(),
            promotion: Vec::new(),
        }
    }

    #[test]
    fn offload_counters_add_up_or_stay_absent() {
        let p = &sample().points[0];
        assert_eq!(
            p.offload,
            Offload {
                batches: Some(8),
                copied: Some(4048),
                fallback: Some(48)
            }
        );
        let mut v = Point::new(4096, 1);
        v.offload.add(Offload::default());
        assert_eq!(v.offload.copied, None);
    }

    #[test]
    fn json_round_trip() {
        let r = sample();
        let text = serde_json::to_string(&r).unwrap();
        let back: RunReport = serde_json::from_str(&text).unwrap();
        assert_eq!(back, r);
    }

    #[test]
    fn offload_counters_keep_their_json_names() {
        // The JSON of the throughput points before the counters were
        // shared with the sweeps, and of a sweep point of that time.
        let p: Point = serde_json::from_str(
            r#"{"folio_bytes": 4096, "folios": 2, "gbps_runs": [1.0], "thp_migrated": 0,
                "gbps": {"mean": 1.0, "sd": 0.0, "n": 1},
                "offload_batches": 3, "migrator_copied": 2, "migrator_fallback": null}"#,
        )
        .expect("a point");
        assert_eq!(
            p.offload,
            Offload {
                batches: Some(3),
                copied: Some(2),
                fallback: None
            }
        );
        let c: CountPoint = serde_json::from_str(
            r#"{"folio_bytes": 4096, "folios": 2, "gbps_runs": [1.0],
                "gbps": {"mean": 1.0, "sd": 0.0, "n": 1}}"#,
        )
        .expect("an old count point");
        assert_eq!(c.offload, Offload::default());
        let text = serde_json::to_string(&p).expect("json");
        assert!(text.contains(r#""migrator_copied":2"#), "{text}");
    }

    #[test]
    fn csv_quotes_and_rows() {
        assert_eq!(csv_field("plain"), "plain");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        let csv = sample().csv();
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(
            lines[1],
            "\"dcbm, 2 ch\",65536,2048,2,2.0000,1.4142,4048,48,"
        );
    }

    #[test]
    fn latency_lines() {
        let mut l = LatencyPoint {
            folio_bytes: 4096,
            first_folio_us: MeanSd {
                mean: 62.0,
                sd: 13.0,
                n: 2,
            },
            first_missing: 0,
            whole_call_us: MeanSd {
                mean: 397.0,
                sd: 1.0,
                n: 2,
            },
            per_call: vec![CallLatency {
                folios: 64,
                us: Percentiles {
                    p50: 1.0,
                    p90: 2.0,
                    p99: 3.0,
                    max: 4.0,
                    n: 5,
                },
            }],
        };
        let (head, calls) = l.lines();
        assert_eq!(
            head,
            "latency 4K: first folio on the destination after 62 ± 13 us of a 397 us call"
        );
        assert_eq!(
            calls,
            vec!["64 folios per call: p50 1 us, p90 2 us, p99 3 us, max 4 us (5 calls)"]
        );
        // A first folio no poll saw is missing, not the call's time.
        l.first_missing = 1;
        l.first_folio_us.n = 1;
        l.whole_call_us.n = 2;
        assert!(l
            .lines()
            .0
            .ends_with("397 us call (first folio not seen in 1 of 2 calls)"));
        l.first_folio_us = MeanSd::of(&[]);
        l.first_missing = 2;
        assert_eq!(
            l.lines().0,
            "latency 4K: first folio not seen on the destination before the 397 us call returned"
        );
    }

    #[test]
    fn tier_points_add_and_print() {
        let mut p = TierPoint::new(64 << 10, 64 << 20);
        // Half of the buffer in 0.5 s, all of it in 1 s.
        p.add(0.5, 32 << 20, 8192, 512, 8200);
        p.add(1.0, 64 << 20, 16384, 1024, 16384);
        assert_eq!(p.secs_runs, vec![0.5, 1.0]);
        assert!((p.secs.mean - 0.75).abs() < 1e-12 && p.secs.n == 2);
        let want = (64 << 20) as f64 / 1e9;
        assert!((p.gbps.mean - want).abs() < 1e-9, "{}", p.gbps.mean);
        assert_eq!(p.gbps.sd, 0.0);
        assert_eq!(
            (p.pages_moved, p.folios_moved, p.pages_counted),
            (24576, 1536, 24584)
        );
        p.offload.add(Offload {
            batches: Some(100),
            copied: Some(1536),
            fallback: Some(0),
        });
        let line = p.line("demotion", 1);
        assert!(
            line.starts_with("demotion 64K: 0.750 ± 0.354 s, 0.067 ± 0.000 GB/s of 64M (2 runs; 24576 of 32768 pages on node 1 after, counted 24584)"),
            "{line}"
        );
        assert!(
            line.ends_with("; migrator copied 1536, fell back 0"),
            "{line}"
        );
        let mut r = sample();
        assert!(!r.tiered());
        r.promotion.push(p.clone());
        assert!(r.tiered());
        assert!(r.table().contains("\npromotion 64K: 0.750"));
        let back: RunReport = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(back, r);
        // The JSON of a run from before the tiered measurements.
        let mut old = serde_json::to_value(sample()).unwrap();
        let o = old.as_object_mut().unwrap();
        o.remove("demotion");
        o.remove("promotion");
        let back: RunReport = serde_json::from_value(old).unwrap();
        assert!(back.demotion.is_empty() && back.promotion.is_empty());
    }

    #[test]
    fn table_shows_counts() {
        let t = sample().table();
        assert!(t.contains("64K"));
        assert!(t.contains("2.000 ± 1.414"));
        assert!(t.contains("4048"));
    }
}
