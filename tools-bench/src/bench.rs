// SPDX-License-Identifier: GPL-2.0
//! The measurements: move_pages() throughput by folio size, latency by
//! batch size, the memcpy bandwidth between the same two nodes, and on a
//! tiered machine the demotion throughput of memory.reclaim and the time
//! NUMA balancing takes to promote.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::Instant;

use crate::args::{format_size, RunOptions};
use crate::output::{
    BatchPoint, CountPoint, LatencyPoint, MemcpyPoint, Offload, Point, RunReport, TierPoint,
};
use crate::progress::Progress;
use crate::stats::{MeanSd, Percentiles};
use crate::sys::{self, Area, Controls, MemCgroup, Pinned, Result, ThpSettings};

fn pattern(word: usize, seed: u64) -> u64 {
    (word as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ seed
}

/// Counter changes around one move.
#[derive(Default)]
struct Deltas {
    pgmigrate_success: u64,
    thp_migration_success: u64,
    /// The counters of the tiered paths; absent where vmstat has none.
    pgdemote_proactive: Option<u64>,
    pgpromote_success: Option<u64>,
    offload: Offload,
    /// Every vmstat entry that rose.
    changed: std::collections::BTreeMap<String, u64>,
}

fn deltas(
    before: &std::collections::HashMap<String, u64>,
    after: &std::collections::HashMap<String, u64>,
) -> Deltas {
    let d = |k: &str| match (before.get(k), after.get(k)) {
        (Some(b), Some(a)) => Some(a.saturating_sub(*b)),
        _ => None,
    };
    Deltas {
        pgmigrate_success: d("pgmigrate_success").unwrap_or(0),
        thp_migration_success: d("thp_migration_success").unwrap_or(0),
        pgdemote_proactive: d("pgdemote_proactive"),
        pgpromote_success: d("pgpromote_success"),
        offload: Offload {
            batches: d("migrate_offload_batches"),
            copied: d("migrate_offload_folios_copied"),
            fallback: d("migrate_offload_folios_fallback"),
        },
        changed: after
            .iter()
            .filter_map(|(k, a)| {
                let c = a.saturating_sub(*before.get(k).unwrap_or(&0));
                (c > 0).then(|| (k.clone(), c))
            })
            .collect(),
    }
}

/// Splits so far of folios of `size` (the mTHP stats) and of PMD THPs
/// (vmstat).
fn splits(size: u64) -> u64 {
    let mthp = sys::read_trimmed(&format!(
        "{}/hugepages-{}kB/stats/split",
        sys::THP_DIR,
        size >> 10
    ))
    .ok()
    .and_then(|s| s.parse::<u64>().ok());
    let pmd = sys::vmstat()
        .ok()
        .and_then(|v| v.get("thp_split_page").copied());
    mthp.unwrap_or(0) + pmd.unwrap_or(0)
}

/// One move of the `total` bytes of `buf` by `mv`, with the checks every
/// measured move passes, in the throughput table and in the sweeps alike:
/// every page on the destination node, every byte as written,
/// pgmigrate_success grown by exactly the pages moved (no other migration
/// ran, none was left out) and no folio split (a split folio is moved as
/// small pages: not the size measured). `what` names the point in errors.
fn checked_move<T>(
    o: &RunOptions,
    buf: &mut Buffer,
    total: u64,
    what: &str,
    mv: impl FnOnce(&Buffer) -> Result<T>,
) -> Result<(T, Deltas)> {
    let pages = total / sys::page_size();
    let split_before = splits(buf.folio_size);
    let before = sys::vmstat()?;
    let out = mv(buf)?;
    let d = deltas(&before, &sys::vmstat()?);
    let split = splits(buf.folio_size).saturating_sub(split_before);
    buf.check_node(total, o.to, &format!("{what}: after the move"))?;
    buf.check_bytes(&format!("{what}: after the move"))?;
    if d.pgmigrate_success != pages {
        return Err(format!(
            "{what}: pgmigrate_success grew by {}, want {pages}: other migrations ran, or pages were not moved",
            d.pgmigrate_success
        ));
    }
    if split != 0 {
        return Err(format!("{what}: the move split {split} folios"));
    }
    Ok((out, d))
}

/// The offload checks of a point (a throughput cell or a sweep point) over
/// its measured moves of `folios` folios in all: with --migrator none no
/// batch may have been offloaded, and with --require-offload the migrator
/// must have copied every folio. Where neither is asked, the report marks a
/// point the migrator did not copy whole.
fn check_offload(o: &RunOptions, what: &str, offload: &Offload, folios: u64) -> Result<()> {
    if o.migrator.as_deref() == Some("") && offload.batches.unwrap_or(0) != 0 {
        return Err(format!(
            "{what}: {} batches were offloaded with no migrator registered",
            offload.batches.unwrap_or(0)
        ));
    }
    if o.require_offload && offload.copied != Some(folios) {
        return Err(format!(
            "{what}: the migrator copied {:?} of {folios} folios; --require-offload",
            offload.copied
        ));
    }
    Ok(())
}

/// Memory of `folio_size` folios on the source node, filled and checked.
struct Buffer {
    area: Area,
    folio_size: u64,
    seed: u64,
}

impl Buffer {
    fn new(o: &RunOptions, folio_size: u64, seed: u64) -> Result<Buffer> {
        Buffer::sized(o, o.total, folio_size, seed)
    }

    /// `total` bytes of `folio_size` folios, filled on the source node,
    /// checked, and with --age their accessed bits cleared.
    fn sized(o: &RunOptions, total: u64, folio_size: u64, seed: u64) -> Result<Buffer> {
        Buffer::on_node(total, folio_size, seed, o.from, o.age)
    }

    /// `total` bytes of `folio_size` folios, filled on `node` (bound to it
    /// for the fill, then back to the default policy), checked, and with
    /// `age` the accessed bits of this process's memory cleared.
    fn on_node(total: u64, folio_size: u64, seed: u64, node: i32, age: bool) -> Result<Buffer> {
        let ps = sys::page_size();
        let mut area = Area::new(total as usize, folio_size > ps)?;
        sys::bind_to(Some(node))?;
        for (i, w) in area.words().iter_mut().enumerate() {
            *w = pattern(i, seed);
        }
        sys::bind_to(None)?;
        let buf = Buffer {
            area,
            folio_size,
            seed,
        };
        sys::verify_folios(buf.area.ptr(), (total / ps) as usize, folio_size / ps).map_err(
            |e| {
                format!(
                    "the memory is not backed by {} folios as asked ({e}); refusing to measure",
                    format_size(folio_size)
                )
            },
        )?;
        buf.check_node(total, node, "after the fault")?;
        if age {
            sys::write_control("/proc/self/clear_refs", "1")?;
        }
        Ok(buf)
    }

    /// Every folio still whole and of its size, after the tiered paths
    /// moved some of them (a split folio moves as small pages: not the size
    /// measured).
    fn check_folios(&self, total: u64, when: &str) -> Result<()> {
        let ps = sys::page_size();
        sys::verify_folios(self.area.ptr(), (total / ps) as usize, self.folio_size / ps)
            .map_err(|e| format!("{when}: {e}"))
    }

    /// How many of the first `total` bytes' pages are on `node` (a
    /// move_pages() query of every page).
    fn pages_on(&self, total: u64, node: i32) -> Result<u64> {
        let status = self.page_nodes(total)?;
        Ok(status.iter().filter(|&&s| s == node).count() as u64)
    }

    /// The node of each of the first `total` bytes' pages (or a negative
    /// errno), from a move_pages() query.
    fn page_nodes(&self, total: u64) -> Result<Vec<i32>> {
        let ps = sys::page_size();
        let addrs: Vec<*mut u8> = (0..total / ps)
            // SAFETY: every offset is inside the area.
            .map(|i| unsafe { self.area.ptr().add((i * ps) as usize) })
            .collect();
        let mut status = vec![0; addrs.len()];
        sys::move_pages(&addrs, None, &mut status)?;
        Ok(status)
    }

    /// One address per folio: move_pages() isolates a large folio at the
    /// first address it is given and flushes its batch at a second one.
    fn folio_addrs(&self, total: u64) -> Vec<*mut u8> {
        (0..total / self.folio_size)
            // SAFETY: every offset is inside the area.
            .map(|i| unsafe { self.area.ptr().add((i * self.folio_size) as usize) })
            .collect()
    }

    fn check_node(&self, total: u64, node: i32, when: &str) -> Result<()> {
        let status = self.page_nodes(total)?;
        match status.iter().position(|&s| s != node) {
            Some(i) => Err(format!(
                "{when}: page {i} is on node {}, want {node}",
                status[i]
            )),
            None => Ok(()),
        }
    }

    fn check_bytes(&mut self, when: &str) -> Result<()> {
        let seed = self.seed;
        match self
            .area
            .words()
            .iter()
            .enumerate()
            .position(|(i, &w)| w != pattern(i, seed))
        {
            Some(i) => Err(format!("{when}: the data changed at byte {}", i * 8)),
            None => Ok(()),
        }
    }
}

/// Moves every folio of `buf` to `to` in calls of `per_call` folios and
/// returns each call's duration in seconds.
fn move_all(buf: &Buffer, total: u64, to: i32, per_call: usize) -> Result<Vec<f64>> {
    let addrs = buf.folio_addrs(total);
    let mut times = Vec::with_capacity(addrs.len().div_ceil(per_call));
    for chunk in addrs.chunks(per_call) {
        let nodes = vec![to; chunk.len()];
        let mut status = vec![0; chunk.len()];
        let t = Instant::now();
        let left = sys::move_pages(chunk, Some(&nodes), &mut status)?;
        times.push(t.elapsed().as_secs_f64());
        if left != 0 {
            return Err(format!("move_pages() left {left} pages unmoved"));
        }
        if let Some(i) = status.iter().position(|&s| s != to) {
            return Err(format!("move_pages() status of folio {i}: {}", status[i]));
        }
    }
    Ok(times)
}

fn check_migrator(o: &RunOptions) -> Result<Option<String>> {
    let registered = sys::read_trimmed(&format!("{}/migrator", sys::OFFLOAD_DIR)).ok();
    match (&o.migrator, &registered) {
        (Some(want), None) if !want.is_empty() => Err(format!(
            "--migrator {want}: this kernel has no {}/migrator",
            sys::OFFLOAD_DIR
        )),
        (Some(want), Some(got)) if want.is_empty() && got != "none" => {
            Err(format!("--migrator none: migrator '{got}' is registered"))
        }
        (Some(want), Some(got)) if !want.is_empty() && want != got => Err(format!(
            "--migrator {want}: the registered migrator is '{got}'"
        )),
        _ => Ok(registered),
    }
}

fn configure(o: &RunOptions) -> Result<()> {
    if let Some(r) = &o.reasons {
        sys::write_control(&format!("{}/reasons", sys::OFFLOAD_DIR), r)?;
    }
    if let Some(m) = o.min_batch_bytes {
        sys::write_control(
            &format!("{}/min_batch_bytes", sys::OFFLOAD_DIR),
            &m.to_string(),
        )?;
    }
    if let Some(b) = o.batch_max_pages {
        sys::write_control(sys::BATCH_MAX_PAGES, &b.to_string())?;
    }
    Ok(())
}

fn throughput_point(o: &RunOptions, size: u64, progress: &mut Progress) -> Result<Point> {
    let folios = o.total / size;
    let what = format_size(size);
    let mut gbps = Vec::new();
    let mut p = Point::new(size, folios);
    for it in 0..o.warmup {
        let buf = Buffer::new(o, size, 1000 + it as u64)?;
        move_all(&buf, o.total, o.to, folios as usize)?;
        progress.step();
    }
    for it in 0..o.iterations {
        let mut buf = Buffer::new(o, size, it as u64)?;
        let ((times, task, machine), d) = checked_move(o, &mut buf, o.total, &what, |b| {
            let (task0, machine0) = (sys::thread_cpu_secs()?, sys::machine_cpu_secs()?);
            let times = move_all(b, o.total, o.to, folios as usize)?;
            let (task1, machine1) = (sys::thread_cpu_secs()?, sys::machine_cpu_secs()?);
            Ok((times, task1 - task0, machine1 - machine0))
        })?;
        p.task_cpu_runs.push(task);
        p.machine_cpu_runs.push(machine);
        let secs: f64 = times.iter().sum();
        gbps.push(o.total as f64 / secs / 1e9);
        p.thp_migrated += d.thp_migration_success;
        p.offload.add(d.offload);
        progress.step();
    }
    p.gbps_runs = gbps.clone();
    p.gbps = MeanSd::of(&gbps);
    check_offload(o, &what, &p.offload, folios * o.iterations as u64)?;
    Ok(p)
}

/// The time from the start of one move_pages() call of every folio until
/// its first folio shows on the destination node, and until the call
/// returns, in microseconds; the first is `None` when no poll saw the folio
/// there before the call returned (it is not the call's time: the folio
/// may have been there long before).
///
/// A second thread polls the first page's node (a move_pages() query). The
/// clock starts only once that thread has made its first poll and said so:
/// started before, its creation and first scheduling would count as the
/// folio's latency. Between polls it yields the CPU (sched_yield): the
/// guest has two vCPUs and the migrators' workers (mtcopy's work item,
/// dcbm's kworkers) want one of them during the call, so a poller spinning
/// on it would slow exactly the copy it times. With nothing else runnable
/// sched_yield returns at once, so polls follow each other a few
/// microseconds apart natively and some tens under TCG: a resolution well
/// under 100 us, against first-folio times of milliseconds. When a worker
/// does want the vCPU, it runs first.
fn first_folio_latency(buf: &Buffer, total: u64, to: i32) -> Result<(Option<f64>, f64)> {
    // As an integer: a pointer is not Send, and the poller only hands the
    // address to the kernel, never dereferences it.
    let first = buf.area.ptr() as usize;
    time_first(
        || {
            let mut status = [0];
            sys::move_pages(&[first as *mut u8], None, &mut status).is_ok() && status[0] == to
        },
        || move_all(buf, total, to, usize::MAX).map(drop),
    )
}

/// first_folio_latency() without the memory: runs `call` while a second
/// thread runs `poll` (true: the folio is there) until it holds, yielding
/// between polls; the clock starts after the first poll.
fn time_first(
    poll: impl FnMut() -> bool + Send,
    call: impl FnOnce() -> Result<()>,
) -> Result<(Option<f64>, f64)> {
    let stop = AtomicBool::new(false);
    let (ready, is_ready) = mpsc::channel();
    let mut poll = poll;
    thread::scope(|s| {
        let poller = s.spawn(|| -> Option<(Instant, Instant)> {
            // The first poll, before the clock starts: the folio is still
            // on the source node, and the path of the poll is warm.
            poll();
            ready.send(()).ok()?;
            while !stop.load(Ordering::Acquire) {
                let asked = Instant::now();
                if poll() {
                    return Some((asked, Instant::now()));
                }
                thread::yield_now();
            }
            None
        });
        // A poller that panicked drops its sender: recv() fails, no hang.
        let started = is_ready.recv().map(|()| {
            let start = Instant::now();
            let result = call();
            (start, Instant::now(), result)
        });
        stop.store(true, Ordering::Release);
        let seen = poller
            .join()
            .map_err(|_| "the poller thread panicked".to_string())?;
        let (start, end, result) =
            started.map_err(|_| "the poller thread ended before its first poll".to_string())?;
        result?;
        let us = |t: Instant| t.duration_since(start).as_secs_f64() * 1e6;
        // A poll asked before the call returned that saw the folio bounds
        // its time by the answer (or by the return, if sooner); one asked
        // after the return says nothing about when, during the call, the
        // folio moved.
        let first = seen
            .filter(|&(asked, _)| asked < end)
            .map(|(_, answered)| us(answered.min(end)));
        Ok((first, us(end)))
    })
}

fn latency_point(o: &RunOptions, size: u64, progress: &mut Progress) -> Result<LatencyPoint> {
    let mut calls = Vec::new();
    let mut first = Vec::new();
    let mut first_missing = 0;
    let mut whole = Vec::new();
    for it in 0..o.iterations {
        let buf = Buffer::new(o, size, it as u64)?;
        let (f, w) = first_folio_latency(&buf, o.total, o.to)?;
        match f {
            Some(f) => first.push(f),
            None => first_missing += 1,
        }
        whole.push(w);
        progress.step();
    }
    for &per_call in &o.latency_batches {
        let mut us = Vec::new();
        for it in 0..o.iterations {
            let mut buf = Buffer::new(o, size, it as u64)?;
            us.extend(
                move_all(&buf, o.total, o.to, per_call)?
                    .iter()
                    .map(|s| s * 1e6),
            );
            buf.check_bytes("after the latency moves")?;
            progress.step();
        }
        calls.push((per_call, Percentiles::of(&us)));
    }
    Ok(LatencyPoint {
        folio_bytes: size,
        first_folio_us: MeanSd::of(&first),
        first_missing,
        whole_call_us: MeanSd::of(&whole),
        per_call: calls
            .into_iter()
            .map(|(folios, p)| crate::output::CallLatency { folios, us: p })
            .collect(),
    })
}

/// The batch caps of the sweep at one folio size: each at least one folio,
/// each once, in order.
fn batch_caps(o: &RunOptions, size: u64) -> Vec<u64> {
    let folio_pages = size / sys::page_size();
    let mut caps: Vec<u64> = o.batch_sweep.iter().map(|&v| v.max(folio_pages)).collect();
    caps.sort_unstable();
    caps.dedup();
    caps
}

/// Restores debugfs batch_max_pages when dropped.
struct BatchCap(String);

impl BatchCap {
    fn set(pages: u64) -> Result<()> {
        sys::write_control(sys::BATCH_MAX_PAGES, &pages.to_string())
    }
}

impl Drop for BatchCap {
    fn drop(&mut self) {
        let _ = sys::write_control(sys::BATCH_MAX_PAGES, &self.0);
    }
}

fn batch_sweep(o: &RunOptions, size: u64, progress: &mut Progress) -> Result<Vec<BatchPoint>> {
    let _restore = BatchCap(sys::read_trimmed(sys::BATCH_MAX_PAGES).map_err(|e| {
        format!("--batch-sweep needs debugfs migrate/batch_max_pages (the series' kernel): {e}")
    })?);
    let folios = o.total / size;
    let mut points = Vec::new();
    for pages in batch_caps(o, size) {
        BatchCap::set(pages)?;
        let what = format!(
            "batch sweep {} at batch_max_pages {pages}",
            format_size(size)
        );
        let (mut first, mut whole) = (Vec::new(), Vec::new());
        let mut first_missing = 0;
        let mut offload = Offload::default();
        for it in 0..o.warmup + o.iterations {
            let mut buf = Buffer::new(o, size, it as u64)?;
            let ((f, w), d) = checked_move(o, &mut buf, o.total, &what, |b| {
                first_folio_latency(b, o.total, o.to)
            })?;
            if it >= o.warmup {
                match f {
                    Some(f) => first.push(f),
                    None => first_missing += 1,
                }
                whole.push(w);
                offload.add(d.offload);
            }
            progress.step();
        }
        check_offload(o, &what, &offload, folios * o.iterations as u64)?;
        points.push(BatchPoint {
            folio_bytes: size,
            batch_pages: pages,
            first_folio_us: MeanSd::of(&first),
            first_runs: first,
            first_missing,
            whole_call_us: MeanSd::of(&whole),
            whole_runs: whole,
            offload,
        });
    }
    Ok(points)
}

fn count_sweep(o: &RunOptions, size: u64, progress: &mut Progress) -> Result<Vec<CountPoint>> {
    let mut points = Vec::new();
    for &folios in &o.count_sweep {
        let total = folios * size;
        let what = format!("count sweep {folios} x {}", format_size(size));
        let mut gbps = Vec::new();
        let mut offload = Offload::default();
        for it in 0..o.warmup + o.iterations {
            let mut buf = Buffer::sized(o, total, size, it as u64)?;
            let (times, d) = checked_move(o, &mut buf, total, &what, |b| {
                move_all(b, total, o.to, usize::MAX)
            })?;
            if it >= o.warmup {
                gbps.push(total as f64 / times.iter().sum::<f64>() / 1e9);
                offload.add(d.offload);
            }
            progress.step();
        }
        check_offload(o, &what, &offload, folios * o.iterations as u64)?;
        points.push(CountPoint {
            folio_bytes: size,
            folios,
            gbps: MeanSd::of(&gbps),
            gbps_runs: gbps,
            offload,
        });
    }
    Ok(points)
}

/// The smallest share of a buffer's pages one memory.reclaim write must
/// demote: a demotion that moved less measured something else (most of it
/// left behind, reclaim given up).
const MIN_DEMOTED: f64 = 0.5;

/// The share of a buffer's folios on the source node that ends a promotion
/// measurement.
const PROMOTED: f64 = 0.9;

/// The largest share of the folios a tiered point moved that the CPU may
/// have copied in the migrator's place under --require-offload, in tenths:
/// at least one folio. An abandoned asynchronous batch is at most 32 small
/// folios from reclaim, one THP, or one folio of a hinting fault: one or a
/// few such batches stay within a tenth at every size the tiered lines
/// move (64 MiB demoted, 32 MiB promoted: 15 2M folios at the least), and
/// the number measured is still nine tenths the migrator's copy.
const MAX_CPU_TENTHS: u64 = 1;

/// The offload checks of a tiered-memory point. Its batches are the
/// kernel's own (reclaim's, NUMA balancing's) and may hold folios of other
/// memory than the buffer's, so where the move_pages() points want the
/// migrator to have copied exactly their folios, here it must have been
/// handed at least the buffer's `folios` that moved: with --migrator none
/// no batch may have been offloaded; with --require-offload batches must
/// have been, the folios the migrator copied and those it left to the CPU
/// must add up to at least `folios`, and the CPU may have copied at most
/// [`MAX_CPU_TENTHS`] tenths of `folios` (or one folio). Unlike a
/// move_pages() point, a tiered one may see folios left to the CPU without
/// a fault: reclaim and NUMA balancing migrate asynchronously, and the core
/// stops waiting for an asynchronous migrator after 10 ms and copies the
/// batch itself (dcbm over swdma left one 32-folio demotion batch so at
/// stop 43); the counters table shows them. A point where the CPU copied
/// more measured the CPU's copy as much as the migrator's.
fn check_offload_moved(o: &RunOptions, what: &str, offload: &Offload, folios: u64) -> Result<()> {
    if o.migrator.as_deref() == Some("") && offload.batches.unwrap_or(0) != 0 {
        return Err(format!(
            "{what}: {} batches were offloaded with no migrator registered",
            offload.batches.unwrap_or(0)
        ));
    }
    if !o.require_offload {
        return Ok(());
    }
    let refused = |why: &str| {
        Err(format!(
            "{what}: {why} ({:?} batches offloaded, {:?} folios copied by the migrator, {:?} \
             left to the CPU, {folios} of the buffer's folios moved); --require-offload",
            offload.batches, offload.copied, offload.fallback
        ))
    };
    let (Some(batches), Some(copied), Some(fallback)) =
        (offload.batches, offload.copied, offload.fallback)
    else {
        return refused("the kernel has no offload counters");
    };
    let cpu_max = (folios * MAX_CPU_TENTHS / 10).max(1);
    if batches == 0 || copied == 0 {
        refused("the migrator copied nothing")
    } else if copied.saturating_add(fallback) < folios {
        refused("fewer folios were handed to the migrator than moved")
    } else if fallback > cpu_max {
        refused(&format!(
            "the CPU copied {fallback} folios in the migrator's place, more than {cpu_max}"
        ))
    } else {
        Ok(())
    }
}

/// The checks of one tiered move of `moved` of a buffer's `pages` pages:
/// enough of them moved (`min_share`), and the path's vmstat counter
/// (`counter`: its growth, absent without the counter) counted at least
/// those.
fn check_tier_move(
    what: &str,
    moved: u64,
    pages: u64,
    min_share: f64,
    counter: (&str, Option<u64>),
) -> Result<u64> {
    if (moved as f64) < min_share * pages as f64 {
        return Err(format!(
            "{what}: only {moved} of {pages} pages moved (want at least {:.0}%)",
            min_share * 100.0
        ));
    }
    let (name, counted) = counter;
    let counted = counted.ok_or_else(|| format!("{what}: /proc/vmstat has no {name}"))?;
    if counted < moved {
        return Err(format!(
            "{what}: {name} grew by {counted}, but {moved} pages of the buffer moved"
        ));
    }
    Ok(counted)
}

/// Demotion throughput at one folio size: for each measurement, fresh
/// memory faulted on the source node within the memory cgroup `cg`, its
/// accessed bits cleared (reclaim demotes what looks cold), then one write
/// of its size to the cgroup's memory.reclaim, timed (EAGAIN: less was
/// reclaimed, and what was is measured). The bytes demoted are those of its
/// pages on the destination node after. The first --warmup measurements
/// are discarded.
fn demotion_point(
    o: &RunOptions,
    cg: &MemCgroup,
    size: u64,
    progress: &mut Progress,
) -> Result<TierPoint> {
    let ps = sys::page_size();
    let total = o.demote_total;
    let pages = total / ps;
    let what = format!("demotion {}", format_size(size));
    let mut p = TierPoint::new(size, total);
    let mut offload = Offload::default();
    for it in 0..o.warmup + o.iterations {
        let mut buf = Buffer::on_node(total, size, 2000 + it as u64, o.from, true)?;
        let before = sys::vmstat_refreshed()?;
        let t = Instant::now();
        cg.reclaim(&format_size(total))?;
        let secs = t.elapsed().as_secs_f64();
        let d = deltas(&before, &sys::vmstat_refreshed()?);
        let moved = buf.pages_on(total, o.to)?;
        buf.check_bytes(&format!("{what}: after the demotion"))?;
        // Split folios are the kernel's doing (7.3.4 splits demoted
        // mTHPs): with --allow-split counted and marked in the report, not
        // a failure of the measurement (the bytes are checked all the
        // same); without it, as for the series, which keeps them whole, a
        // failure.
        let split = buf.check_folios(total, &format!("{what}: after the demotion"));
        match &split {
            Err(e) if o.allow_split => eprintln!("migbench: {e}"),
            Err(e) => return Err(e.clone()),
            Ok(()) => {}
        }
        let counted = check_tier_move(
            &what,
            moved,
            pages,
            MIN_DEMOTED,
            ("pgdemote_proactive", d.pgdemote_proactive),
        )?;
        if it >= o.warmup {
            p.add(secs, moved * ps, moved, moved * ps / size, counted);
            p.vmstat_runs.push(d.changed);
            p.split_runs += u64::from(split.is_err());
            offload.add(d.offload);
        }
        progress.step();
    }
    p.offload = offload;
    check_offload_moved(o, &what, &p.offload, p.folios_moved)?;
    Ok(p)
}

/// Runs `pass` (a read of the buffer) over and over, and `check` (how many
/// of its folios are on the node) between passes, until the check finds at
/// least `want`, or `timeout` seconds have gone by. Checks are at most
/// `max_gap` seconds apart, and more often when they are cheap: the gap is
/// twenty times the last check's own time, if that is shorter, so that
/// checking (during which nothing reads the buffer) takes at most a
/// twentieth of the time. Returns the seconds from the start until the end
/// of the last check, what it found, and whether that was enough.
fn poll_until(
    mut pass: impl FnMut(),
    mut check: impl FnMut() -> Result<u64>,
    want: u64,
    max_gap: f64,
    timeout: f64,
) -> Result<(f64, u64, bool)> {
    let start = Instant::now();
    let mut last = start;
    let mut cost: f64 = 0.0;
    loop {
        pass();
        let now = Instant::now();
        if now.duration_since(last).as_secs_f64() < (20.0 * cost).min(max_gap) {
            continue;
        }
        let found = check()?;
        last = Instant::now();
        cost = last.duration_since(now).as_secs_f64();
        let secs = last.duration_since(start).as_secs_f64();
        if found >= want || secs >= timeout {
            return Ok((secs, found, found >= want));
        }
    }
}

/// Promotion time at one folio size: for each measurement, fresh memory
/// filled on the destination node (its lower tier) and checked, then
/// NUMA balancing in tiering mode (numa_balancing=2) while this thread,
/// on a CPU of the source node, reads one word of each page in a tight
/// loop (the hinting faults of these reads are what promotes), timed until
/// 90% of its folios are on the source node. The bytes are checked while
/// NUMA balancing is still on (a page it had marked for a hinting fault
/// is promoted, and counted, on that read), then it is off again. The
/// first --warmup measurements are discarded.
fn promotion_point(o: &RunOptions, size: u64, progress: &mut Progress) -> Result<TierPoint> {
    let ps = sys::page_size();
    let total = o.promote_total;
    let pages = total / ps;
    let folios = total / size;
    let want = (folios as f64 * PROMOTED).ceil() as u64;
    let cpus = sys::node_cpus(o.from)?;
    let what = format!("promotion {}", format_size(size));
    let mut p = TierPoint::new(size, total);
    let mut offload = Offload::default();
    for it in 0..o.warmup + o.iterations {
        let mut buf = Buffer::on_node(total, size, 3000 + it as u64, o.to, false)?;
        let heads = buf.folio_addrs(total);
        let mut status = vec![0; heads.len()];
        let before = sys::vmstat_refreshed()?;
        let (secs, found, done) = {
            let _pinned = Pinned::to(&cpus)?;
            let mut tiering = Controls::default();
            tiering.set(sys::NUMA_BALANCING, "2")?;
            let base = buf.area.ptr();
            let stride = ps as usize;
            let r = poll_until(
                || {
                    let mut sum = 0u64;
                    for off in (0..total as usize).step_by(stride) {
                        // SAFETY: the offset is inside the area, which is
                        // mapped and 8-byte aligned; a volatile read, so
                        // that every page is touched on every pass.
                        sum = sum.wrapping_add(unsafe {
                            std::ptr::read_volatile(base.add(off) as *const u64)
                        });
                    }
                    std::hint::black_box(sum);
                },
                || {
                    sys::move_pages(&heads, None, &mut status)?;
                    Ok(status.iter().filter(|&&s| s == o.from).count() as u64)
                },
                want,
                o.promote_check_ms as f64 / 1000.0,
                o.promote_timeout as f64,
            )?;
            buf.check_bytes(&format!("{what}: after the promotion"))?;
            r
        };
        if !done {
            return Err(format!(
                "{what}: only {found} of {folios} folios were on node {} after {secs:.1} s \
                 (--promote-timeout {}); want {want}",
                o.from, o.promote_timeout
            ));
        }
        let d = deltas(&before, &sys::vmstat_refreshed()?);
        let moved = buf.pages_on(total, o.from)?;
        buf.check_folios(total, &format!("{what}: after the promotion"))?;
        let counted = check_tier_move(
            &what,
            moved,
            pages,
            PROMOTED,
            ("pgpromote_success", d.pgpromote_success),
        )?;
        if it >= o.warmup {
            p.add(secs, found * size, moved, moved * ps / size, counted);
            offload.add(d.offload);
        }
        progress.step();
    }
    p.offload = offload;
    check_offload_moved(o, &what, &p.offload, p.folios_moved)?;
    Ok(p)
}

/// What the tiered measurements set for the whole run, put back after:
/// demotion on, this process in a memory cgroup; NUMA balancing off
/// between the promotions (each turns tiering mode on for itself), its
/// scanner fast (no delay for new memory, a scan every 100 to 200 ms of
/// CPU time, a hinting fault within 10 s of the scan counted as hot: the
/// defaults are slower than TCG's whole measurement).
struct Tiering {
    cgroup: Option<MemCgroup>,
    _controls: Controls,
}

impl Tiering {
    fn set_up(o: &RunOptions) -> Result<Tiering> {
        let mut controls = Controls::default();
        let mut cgroup = None;
        if o.demotion {
            controls.set(sys::DEMOTION_ENABLED, "true")?;
            cgroup = Some(MemCgroup::join("migbench")?);
        }
        if o.promotion {
            controls.set(sys::NUMA_BALANCING, "0")?;
            for (knob, value) in [
                ("scan_delay_ms", "0"),
                ("scan_period_min_ms", "100"),
                ("scan_period_max_ms", "200"),
                ("hot_threshold_ms", "10000"),
            ] {
                controls.set(&format!("{}/{knob}", sys::NUMA_BALANCING_DEBUGFS), value)?;
            }
        }
        Ok(Tiering {
            cgroup,
            _controls: controls,
        })
    }
}

/// memcpy() from a buffer on the source node into one on the destination,
/// split into `threads` parts of about the same size, each copied by its
/// own thread; the time is from the start of the first to the end of the
/// last.
fn memcpy_point(o: &RunOptions, threads: usize) -> Result<MemcpyPoint> {
    let mut src = Area::new(o.total as usize, false)?;
    let mut dst = Area::new(o.total as usize, false)?;
    sys::bind_to(Some(o.from))?;
    src.words()
        .iter_mut()
        .enumerate()
        .for_each(|(i, w)| *w = pattern(i, 1));
    sys::bind_to(Some(o.to))?;
    dst.words().fill(0);
    sys::bind_to(None)?;
    let src = src.words();
    let dst = dst.words();
    let part = src.len().div_ceil(threads);
    let mut gbps = Vec::new();
    for _ in 0..o.iterations {
        let t = Instant::now();
        std::thread::scope(|s| {
            let mut parts = dst.chunks_mut(part).zip(src.chunks(part));
            let first = parts.next();
            for (d, sr) in parts {
                s.spawn(move || d.copy_from_slice(sr));
            }
            if let Some((d, sr)) = first {
                d.copy_from_slice(sr);
            }
        });
        gbps.push(o.total as f64 / t.elapsed().as_secs_f64() / 1e9);
    }
    if dst.iter().enumerate().any(|(i, &w)| w != pattern(i, 1)) {
        return Err(format!(
            "memcpy reference ({threads} threads): the copy differs"
        ));
    }
    Ok(MemcpyPoint {
        bytes: o.total,
        threads,
        gbps: MeanSd::of(&gbps),
        gbps_runs: gbps,
    })
}

/// The folio sizes a run measures at: those of the throughput table, and
/// those of the sweeps it makes, in increasing order.
fn all_sizes(o: &RunOptions) -> Vec<u64> {
    let mut v = Vec::new();
    if o.throughput || !o.latency_batches.is_empty() || o.demotion || o.promotion {
        v.extend(&o.sizes);
    }
    if !o.batch_sweep.is_empty() {
        v.extend(&o.batch_sizes);
    }
    if !o.count_sweep.is_empty() {
        v.extend(&o.count_sizes);
    }
    v.sort_unstable();
    v.dedup();
    v
}

/// Runs everything `o` asks for.
pub fn run(o: &RunOptions) -> Result<RunReport> {
    let registered = check_migrator(o)?;
    configure(o)?;
    let mut report = RunReport::new(o, registered);
    let sizes = all_sizes(o);
    let table = |size: &u64| o.sizes.contains(size);
    let batch = |size: &u64| !o.batch_sweep.is_empty() && o.batch_sizes.contains(size);
    let count = |size: &u64| !o.count_sweep.is_empty() && o.count_sizes.contains(size);
    let steps: usize = sizes
        .iter()
        .map(|size| {
            let mut n = 0;
            if o.throughput && table(size) {
                n += o.warmup + o.iterations;
            }
            if !o.latency_batches.is_empty() && table(size) {
                n += o.iterations * (1 + o.latency_batches.len());
            }
            if batch(size) {
                n += batch_caps(o, *size).len() * (o.warmup + o.iterations);
            }
            if count(size) {
                n += o.count_sweep.len() * (o.warmup + o.iterations);
            }
            for on in [o.demotion, o.promotion] {
                if on && table(size) {
                    n += o.warmup + o.iterations;
                }
            }
            n
        })
        .sum();
    let tiering = Tiering::set_up(o)?;
    let mut progress = Progress::new(o.progress, steps);
    for size in &sizes {
        progress.label(&format!("{} {}", o.label, format_size(*size)));
        let _thp = ThpSettings::allow_only(*size)?;
        if o.throughput && table(size) {
            report
                .points
                .push(throughput_point(o, *size, &mut progress)?);
        }
        if !o.latency_batches.is_empty() && table(size) {
            report.latency.push(latency_point(o, *size, &mut progress)?);
        }
        if batch(size) {
            report
                .batch_sweep
                .extend(batch_sweep(o, *size, &mut progress)?);
        }
        if count(size) {
            report
                .count_sweep
                .extend(count_sweep(o, *size, &mut progress)?);
        }
        if let Some(cg) = tiering.cgroup.as_ref().filter(|_| table(size)) {
            report
                .demotion
                .push(demotion_point(o, cg, *size, &mut progress)?);
        }
        if o.promotion && table(size) {
            report
                .promotion
                .push(promotion_point(o, *size, &mut progress)?);
        }
    }
    if o.memcpy && o.throughput {
        report.memcpy = Some(memcpy_point(o, 1)?);
        if o.memcpy_threads > 1 {
            report.memcpy_parallel = Some(memcpy_point(o, o.memcpy_threads)?);
        }
    }
    progress.finish();
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::time::Duration;

    #[test]
    fn the_clock_starts_once_the_poller_is_ready() {
        // A slow first poll (thread creation, a cold path) is not latency.
        let polls = AtomicUsize::new(0);
        let moved = AtomicBool::new(false);
        let (first, whole) = time_first(
            || {
                if polls.fetch_add(1, Ordering::SeqCst) == 0 {
                    thread::sleep(Duration::from_millis(500));
                }
                moved.load(Ordering::SeqCst)
            },
            || {
                thread::sleep(Duration::from_millis(5));
                moved.store(true, Ordering::SeqCst);
                thread::sleep(Duration::from_millis(20));
                Ok(())
            },
        )
        .expect("timed");
        assert!(whole > 25e3 && whole < 400e3, "whole {whole} us");
        let first = first.expect("seen during the call");
        assert!(
            first >= 5e3 && first <= whole,
            "first {first} of {whole} us"
        );
    }

    #[test]
    fn a_first_folio_never_seen_is_missing() {
        let (first, whole) = time_first(
            || false,
            || {
                thread::sleep(Duration::from_millis(2));
                Ok(())
            },
        )
        .expect("timed");
        assert_eq!(first, None);
        assert!(whole >= 2e3);
        // The call's error, not a time.
        let e = time_first(|| false, || Err("move_pages() failed".to_string()));
        assert_eq!(e, Err("move_pages() failed".to_string()));
    }

    fn counters(batches: u64, copied: u64) -> Offload {
        Offload {
            batches: Some(batches),
            copied: Some(copied),
            fallback: Some(0),
        }
    }

    #[test]
    fn offload_checks_of_every_point() {
        let mut o = RunOptions::default();
        // Nothing asked: nothing to refuse (the report marks a partial copy).
        assert!(check_offload(&o, "4K", &counters(3, 1), 8).is_ok());
        assert!(check_offload(&o, "4K", &Offload::default(), 8).is_ok());
        // --migrator none: no batch may go to a migrator.
        o.migrator = Some(String::new());
        assert!(check_offload(&o, "4K", &counters(0, 0), 8).is_ok());
        assert!(check_offload(&o, "4K", &Offload::default(), 8).is_ok());
        let e = check_offload(&o, "count sweep 8 x 2M", &counters(1, 8), 8).unwrap_err();
        assert!(e.starts_with("count sweep 8 x 2M: 1 batches"), "{e}");
        // --require-offload: every folio copied, and counters to show it.
        o.migrator = Some("dcbm".into());
        o.require_offload = true;
        assert!(check_offload(&o, "4K", &counters(2, 8), 8).is_ok());
        let what = "batch sweep 2M at batch_max_pages 512";
        let e = check_offload(&o, what, &counters(2, 7), 8).unwrap_err();
        assert!(
            e.starts_with(what) && e.contains("--require-offload"),
            "{e}"
        );
        assert!(check_offload(&o, what, &Offload::default(), 8).is_err());
    }

    #[test]
    fn tiered_offload_checks() {
        let mut o = RunOptions::default();
        // Nothing asked: nothing to refuse.
        assert!(check_offload_moved(&o, "demotion 4K", &counters(3, 1), 8).is_ok());
        o.migrator = Some(String::new());
        assert!(check_offload_moved(&o, "demotion 4K", &Offload::default(), 8).is_ok());
        let e = check_offload_moved(&o, "demotion 4K", &counters(1, 8), 8).unwrap_err();
        assert!(
            e.starts_with("demotion 4K: 1 batches were offloaded"),
            "{e}"
        );
        o.migrator = Some("test".into());
        o.require_offload = true;
        // Other folios in the kernel's batches: more copied than moved.
        assert!(check_offload_moved(&o, "promotion 2M", &counters(40, 40), 32).is_ok());
        assert!(check_offload_moved(&o, "promotion 2M", &counters(32, 32), 32).is_ok());
        // An asynchronous batch the core took back after its wait.
        let given_back = Offload {
            fallback: Some(1),
            ..counters(32, 31)
        };
        assert!(check_offload_moved(&o, "demotion 4K", &given_back, 32).is_ok());
        // A tenth left to the CPU is the most a point may leave; one folio
        // below a tenth's worth.
        let tenth = Offload {
            fallback: Some(3),
            ..counters(32, 29)
        };
        assert!(check_offload_moved(&o, "demotion 4K", &tenth, 32).is_ok());
        let one = Offload {
            fallback: Some(1),
            ..counters(5, 4)
        };
        assert!(check_offload_moved(&o, "promotion 2M", &one, 5).is_ok());
        for bad in [
            counters(32, 31),
            counters(0, 0),
            Offload {
                fallback: Some(32),
                ..counters(1, 0)
            },
            Offload {
                fallback: Some(1),
                ..counters(32, 30)
            },
            Offload {
                fallback: None,
                ..counters(32, 32)
            },
            // The two add up, but the CPU copied more than a tenth.
            Offload {
                fallback: Some(4),
                ..counters(32, 28)
            },
            Offload::default(),
        ] {
            let e = check_offload_moved(&o, "promotion 2M", &bad, 32).unwrap_err();
            assert!(
                e.starts_with("promotion 2M: ") && e.ends_with("--require-offload"),
                "{e}"
            );
        }
        let two = Offload {
            fallback: Some(2),
            ..counters(5, 3)
        };
        let e = check_offload_moved(&o, "promotion 2M", &two, 5).unwrap_err();
        assert!(
            e.contains("the CPU copied 2 folios") && e.contains("more than 1"),
            "{e}"
        );
        // No moved folio does not excuse a missing counter.
        let blind = Offload {
            fallback: None,
            ..counters(1, 1)
        };
        let e = check_offload_moved(&o, "promotion 2M", &blind, 0).unwrap_err();
        assert!(e.contains("no offload counters"), "{e}");
    }

    #[test]
    fn tiered_moves_and_their_counters() {
        let pages = 1000;
        let c = |n| ("pgdemote_proactive", Some(n));
        assert_eq!(check_tier_move("d", 600, pages, 0.5, c(600)), Ok(600));
        assert_eq!(check_tier_move("d", 1000, pages, 0.5, c(1010)), Ok(1010));
        let e = check_tier_move("d", 499, pages, 0.5, c(499)).unwrap_err();
        assert_eq!(e, "d: only 499 of 1000 pages moved (want at least 50%)");
        // The counter lags: node counters not folded, or pages moved by
        // another path.
        let e = check_tier_move("d", 1000, pages, 0.5, c(990)).unwrap_err();
        assert_eq!(
            e,
            "d: pgdemote_proactive grew by 990, but 1000 pages of the buffer moved"
        );
        let e = check_tier_move("p", 950, pages, 0.9, ("pgpromote_success", None)).unwrap_err();
        assert_eq!(e, "p: /proc/vmstat has no pgpromote_success");
        assert!(check_tier_move("p", 899, pages, 0.9, c(1000)).is_err());
    }

    #[test]
    fn promotion_polls_until_enough_or_timeout() {
        // Each pass (5 ms) promotes 10 folios; checks are cheap (their
        // twentyfold well under a pass), so one follows every pass.
        let moved = std::cell::Cell::new(0u64);
        let checks = std::cell::Cell::new(0);
        let (secs, found, done) = poll_until(
            || {
                thread::sleep(Duration::from_millis(5));
                moved.set(moved.get() + 10)
            },
            || {
                checks.set(checks.get() + 1);
                Ok(moved.get())
            },
            90,
            0.5,
            60.0,
        )
        .expect("polled");
        assert!(
            done && (90..=120).contains(&found) && secs < 5.0,
            "{secs} {found}"
        );
        assert!((7..=9).contains(&checks.get()), "{} checks", checks.get());
        // A check of 10 ms waits twenty times as long, 200 ms: one at once,
        // then at about 0.21, 0.43 and 0.64 s, the first past the timeout.
        let slow = |ms| {
            let checks = &checks;
            move || {
                checks.set(checks.get() + 1);
                thread::sleep(Duration::from_millis(ms));
                Ok(0)
            }
        };
        checks.set(0);
        let pass = || thread::sleep(Duration::from_millis(1));
        let t = Instant::now();
        let (secs, found, done) = poll_until(pass, slow(10), 1, 10.0, 0.5).expect("polled");
        assert!(!done && found == 0 && secs >= 0.5);
        assert!((0.5..3.0).contains(&t.elapsed().as_secs_f64()));
        assert!((3..=4).contains(&checks.get()), "{} checks", checks.get());
        // A check of 20 ms would wait 400 ms, but no longer than max_gap,
        // here 100 ms: about 5 checks in 0.5 s.
        checks.set(0);
        let (_, _, done) = poll_until(pass, slow(20), 1, 0.1, 0.5).expect("polled");
        assert!(!done);
        assert!((4..=6).contains(&checks.get()), "{} checks", checks.get());
        // A failing check ends it.
        let e = poll_until(|| {}, || Err("move_pages: EFAULT".into()), 1, 0.5, 1.0);
        assert_eq!(e, Err("move_pages: EFAULT".to_string()));
    }
}
