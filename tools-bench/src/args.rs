// SPDX-License-Identifier: GPL-2.0
//! Command-line parsing for `migbench run`.

use std::fmt;

/// A command-line error: what was wrong, for the user.
#[derive(Debug, PartialEq)]
pub struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn err<T>(msg: String) -> Result<T, UsageError> {
    Err(UsageError(msg))
}

/// Parses a byte count: a number with an optional K, M or G suffix (powers
/// of 1024, case-insensitive, an optional trailing "B" or "iB").
pub fn parse_size(s: &str) -> Result<u64, UsageError> {
    let t = s.trim();
    let t = t
        .strip_suffix("iB")
        .or_else(|| t.strip_suffix("ib"))
        .or_else(|| t.strip_suffix(['B', 'b']))
        .unwrap_or(t);
    let (digits, shift) = match t.chars().last() {
        Some('k' | 'K') => (&t[..t.len() - 1], 10),
        Some('m' | 'M') => (&t[..t.len() - 1], 20),
        Some('g' | 'G') => (&t[..t.len() - 1], 30),
        _ => (t, 0),
    };
    let n: u64 = match digits.parse() {
        Ok(n) => n,
        Err(_) => return err(format!("'{s}' is not a size (like 4K, 2M, 128M)")),
    };
    match n.checked_mul(1u64 << shift) {
        Some(0) => err(format!("size '{s}' is zero")),
        Some(v) => Ok(v),
        None => err(format!("size '{s}' is too large")),
    }
}

/// Formats a byte count the way the tables show folio sizes: 4K, 64K, 2M.
pub fn format_size(bytes: u64) -> String {
    if bytes >= 1 << 30 && bytes.is_multiple_of(1 << 30) {
        format!("{}G", bytes >> 30)
    } else if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{}M", bytes >> 20)
    } else if bytes >= 1 << 10 && bytes.is_multiple_of(1 << 10) {
        format!("{}K", bytes >> 10)
    } else {
        format!("{bytes}")
    }
}

/// Parses a comma-separated list with `item`.
pub fn parse_list<T>(
    s: &str,
    item: impl Fn(&str) -> Result<T, UsageError>,
) -> Result<Vec<T>, UsageError> {
    let v: Vec<T> = s
        .split(',')
        .filter(|p| !p.trim().is_empty())
        .map(|p| item(p.trim()))
        .collect::<Result<_, _>>()?;
    if v.is_empty() {
        return err(format!("empty list '{s}'"));
    }
    Ok(v)
}

fn parse_num<T: std::str::FromStr>(opt: &str, s: &str) -> Result<T, UsageError> {
    s.trim()
        .parse()
        .map_err(|_| UsageError(format!("{opt}: '{s}' is not a valid number")))
}

/// What `migbench run` measures, and how.
#[derive(Clone, Debug, PartialEq)]
pub struct RunOptions {
    /// Folio sizes in bytes, each a point of the table.
    pub sizes: Vec<u64>,
    /// Bytes moved per measurement.
    pub total: u64,
    pub iterations: usize,
    /// Moves made and discarded at each size before those measured.
    pub warmup: usize,
    /// Clear the accessed bits of the memory (clear_refs 1) after filling
    /// it, so that the move walks page tables like those of memory that was
    /// not just written.
    pub age: bool,
    /// Measure the throughput table (off: only the sweeps).
    pub throughput: bool,
    /// batch_max_pages values for the first-folio latency sweep.
    pub batch_sweep: Vec<u64>,
    /// Folio sizes of the batch-size sweep.
    pub batch_sizes: Vec<u64>,
    /// Folios per move_pages() call for the throughput-by-count sweep.
    pub count_sweep: Vec<u64>,
    /// Folio sizes of the count sweep.
    pub count_sizes: Vec<u64>,
    /// Demotion throughput at each folio size of `sizes`: memory of the
    /// source node reclaimed through a cgroup's memory.reclaim, demoted to
    /// the destination node (its lower memory tier).
    pub demotion: bool,
    /// Bytes of each demotion measurement.
    pub demote_total: u64,
    /// Promotion time at each folio size of `sizes`: memory of the
    /// destination node read from a CPU of the source node with NUMA
    /// balancing in tiering mode, until it is promoted.
    pub promotion: bool,
    /// Bytes of each promotion measurement.
    pub promote_total: u64,
    /// The longest gap between two checks of where the promoted memory is.
    pub promote_check_ms: u64,
    /// Seconds a promotion may take before the run fails.
    pub promote_timeout: u64,
    pub from: i32,
    pub to: i32,
    /// A name for this configuration in the outputs.
    pub label: String,
    /// The migrator that must be registered (sysfs `migrator`); the empty
    /// string requires that none is. `None`: not checked.
    pub migrator: Option<String>,
    /// Fail unless the migrator copied every folio of every run.
    pub require_offload: bool,
    /// A demotion may leave the buffer's folios split (marked, not an
    /// error): for the kernel that does (7.3.4 splits demoted mTHPs).
    pub allow_split: bool,
    /// Values written to the copy-offload sysfs controls before running.
    pub reasons: Option<String>,
    pub min_batch_bytes: Option<u64>,
    /// The migration batch cap, written to debugfs `batch_max_pages`.
    pub batch_max_pages: Option<u64>,
    /// Folios per move_pages() call for the latency pass; empty: no pass.
    pub latency_batches: Vec<usize>,
    pub memcpy: bool,
    /// Threads of the second memcpy reference (1: none).
    pub memcpy_threads: usize,
    pub json: Option<String>,
    pub csv: Option<String>,
    pub progress: bool,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            sizes: vec![4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 2 << 20],
            total: 128 << 20,
            iterations: 5,
            warmup: 1,
            age: false,
            throughput: true,
            batch_sweep: Vec::new(),
            batch_sizes: vec![4 << 10, 64 << 10, 2 << 20],
            count_sweep: Vec::new(),
            count_sizes: vec![2 << 20],
            demotion: false,
            demote_total: 128 << 20,
            promotion: false,
            promote_total: 64 << 20,
            promote_check_ms: 500,
            promote_timeout: 60,
            from: 0,
            to: 1,
            label: "run".into(),
            migrator: None,
            require_offload: false,
            allow_split: false,
            reasons: None,
            min_batch_bytes: None,
            batch_max_pages: None,
            latency_batches: Vec::new(),
            memcpy: true,
            memcpy_threads: 1,
            json: None,
            csv: None,
            progress: true,
        }
    }
}

pub const RUN_USAGE: &str = "\
usage: migbench run [options]
  --sizes LIST            folio sizes (default 4K,16K,64K,256K,1M,2M; 4K means
                          small pages, 2M a PMD-mapped THP, others mTHPs)
  --total SIZE            bytes moved per measurement (default 128M)
  --iterations N          measurements per size (default 5)
  --warmup N              moves discarded at each size first (default 1)
  --age                   clear the accessed bits (clear_refs 1) before moving
  --no-throughput         skip the throughput table (only the sweeps)
  --batch-sweep LIST      batch_max_pages values: for each, the time to the
                          first folio on the destination and of the whole call
                          (one call of --total; values under one folio count
                          as one folio)
  --batch-sizes LIST      folio sizes of the batch sweep (default 4K,64K,2M)
  --count-sweep LIST      folios per call: throughput of one move_pages() call
                          of that many folios (e.g. 1,8,32,64,256,512,2048)
  --count-sizes LIST      folio sizes of the count sweep (default 2M)
  --demotion              demotion throughput at each size of --sizes: fault
                          --demote-total on --from in a memory cgroup, clear
                          the accessed bits, time one write to memory.reclaim
                          (demotion_enabled on; --to must be the lower tier)
  --demote-total SIZE     bytes per demotion measurement (default 128M)
  --promotion             promotion time at each size of --sizes: fill
                          --promote-total on --to, read it from a CPU of --from
                          with numa_balancing=2 until 90% is on --from
  --promote-total SIZE    bytes per promotion measurement (default 64M)
  --promote-check-ms N    longest gap between two checks of the promoted share
                          (default 500; cheaper checks come more often)
  --promote-timeout SECS  fail a promotion that takes longer (default 60)
  --from NODE, --to NODE  source and destination nodes (default 0 and 1)
  --label NAME            the configuration's name in the outputs
  --migrator NAME|none    require this migrator to be registered (or none)
  --require-offload       fail unless the migrator copied every folio
  --allow-split           a demotion that splits the buffer's folios is
                          marked 's' in the report, not a failure
  --reasons LIST          write the offload 'reasons' control first
  --min-batch-bytes N     write the offload 'min_batch_bytes' control first
  --batch-max-pages N     write debugfs migrate/batch_max_pages first
  --latency LIST          folios per move_pages() call for the latency pass
                          (e.g. 1,16,256), plus the first-folio latency
  --no-memcpy             skip the memcpy bandwidth reference
  --memcpy-threads N      also measure memcpy split over N threads (the
                          limit a copy with N CPUs works against)
  --json FILE|-           write the results as JSON
  --csv FILE|-            write the results as CSV
  --no-progress           no progress bar";

/// Parses the arguments of `migbench run`.
pub fn parse_run(args: &[String]) -> Result<RunOptions, UsageError> {
    let mut o = RunOptions::default();
    let mut it = args.iter();
    while let Some(opt) = it.next() {
        let mut value = || match it.next() {
            Some(v) => Ok(v.as_str()),
            None => err(format!("{opt} needs a value")),
        };
        match opt.as_str() {
            "--sizes" => o.sizes = parse_list(value()?, parse_size)?,
            "--total" => o.total = parse_size(value()?)?,
            "--iterations" => o.iterations = parse_num(opt, value()?)?,
            "--warmup" => o.warmup = parse_num(opt, value()?)?,
            "--age" => o.age = true,
            "--no-throughput" => o.throughput = false,
            "--batch-sweep" => {
                o.batch_sweep = parse_list(value()?, |s| parse_num("--batch-sweep", s))?
            }
            "--batch-sizes" => o.batch_sizes = parse_list(value()?, parse_size)?,
            "--count-sizes" => o.count_sizes = parse_list(value()?, parse_size)?,
            "--count-sweep" => {
                o.count_sweep = parse_list(value()?, |s| parse_num("--count-sweep", s))?
            }
            "--demotion" => o.demotion = true,
            "--demote-total" => o.demote_total = parse_size(value()?)?,
            "--promotion" => o.promotion = true,
            "--promote-total" => o.promote_total = parse_size(value()?)?,
            "--promote-check-ms" => o.promote_check_ms = parse_num(opt, value()?)?,
            "--promote-timeout" => o.promote_timeout = parse_num(opt, value()?)?,
            "--from" => o.from = parse_num(opt, value()?)?,
            "--to" => o.to = parse_num(opt, value()?)?,
            "--label" => o.label = value()?.to_string(),
            "--migrator" => {
                // "none": require that no migrator is registered.
                let v = value()?;
                o.migrator = Some(if v == "none" { String::new() } else { v.into() });
            }
            "--require-offload" => o.require_offload = true,
            "--allow-split" => o.allow_split = true,
            "--reasons" => o.reasons = Some(value()?.to_string()),
            "--min-batch-bytes" => o.min_batch_bytes = Some(parse_num(opt, value()?)?),
            "--batch-max-pages" => o.batch_max_pages = Some(parse_num(opt, value()?)?),
            "--latency" => o.latency_batches = parse_list(value()?, |s| parse_num("--latency", s))?,
            "--no-memcpy" => o.memcpy = false,
            "--memcpy-threads" => o.memcpy_threads = parse_num(opt, value()?)?,
            "--json" => o.json = Some(value()?.to_string()),
            "--csv" => o.csv = Some(value()?.to_string()),
            "--no-progress" => o.progress = false,
            _ => return err(format!("unknown option '{opt}'")),
        }
    }
    if o.iterations == 0 {
        return err("--iterations must be at least 1".into());
    }
    if o.from == o.to || o.from < 0 || o.to < 0 {
        return err(format!(
            "--from {} --to {}: need two different nodes",
            o.from, o.to
        ));
    }
    if !(1..=64).contains(&o.memcpy_threads) {
        return err(format!(
            "--memcpy-threads {}: must be 1 to 64",
            o.memcpy_threads
        ));
    }
    if o.batch_sweep.contains(&0) || o.count_sweep.contains(&0) {
        return err("--batch-sweep, --count-sweep: values must be at least 1".into());
    }
    if o.latency_batches.contains(&0) {
        return err("--latency: a batch needs at least one folio".into());
    }
    if o.promote_check_ms == 0 || o.promote_timeout == 0 {
        return err("--promote-check-ms, --promote-timeout: must be at least 1".into());
    }
    if o.require_offload && !matches!(&o.migrator, Some(m) if !m.is_empty()) {
        return err("--require-offload needs --migrator NAME".into());
    }
    for &s in o.sizes.iter().chain(&o.batch_sizes).chain(&o.count_sizes) {
        if !s.is_power_of_two() || s < 4096 {
            return err(format!(
                "folio size {s} is not a power of two of at least 4K"
            ));
        }
        for (on, opt, total) in [
            (true, "--total", o.total),
            (o.demotion, "--demote-total", o.demote_total),
            (o.promotion, "--promote-total", o.promote_total),
        ] {
            if on && o.sizes.contains(&s) && total % s != 0 {
                return err(format!(
                    "{opt} {} is not a multiple of the folio size {}",
                    format_size(total),
                    format_size(s)
                ));
            }
        }
    }
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("4K"), Ok(4096));
        assert_eq!(parse_size("64k"), Ok(65536));
        assert_eq!(parse_size("2M"), Ok(2 << 20));
        assert_eq!(parse_size("128MiB"), Ok(128 << 20));
        assert_eq!(parse_size("1GB"), Ok(1 << 30));
        assert!(parse_size("").is_err());
        assert!(parse_size("0K").is_err());
        assert!(parse_size("-4K").is_err());
        assert!(parse_size("4X").is_err());
        assert!(parse_size("99999999999999999999G").is_err());
        assert!(parse_size("17179869184G").is_err());
    }

    #[test]
    fn size_names_round_trip() {
        for s in ["4K", "16K", "64K", "256K", "1M", "2M", "1G"] {
            assert_eq!(format_size(parse_size(s).unwrap()), s);
        }
        assert_eq!(format_size(1536), "1536");
    }

    #[test]
    fn lists() {
        assert_eq!(parse_list("4K, 2M,", parse_size), Ok(vec![4096, 2 << 20]));
        assert!(parse_list(",", parse_size).is_err());
        assert!(parse_list("4K,x", parse_size).is_err());
    }

    #[test]
    fn run_defaults_and_options() {
        let o = parse_run(&[]).unwrap();
        assert_eq!(o, RunOptions::default());
        let o = parse_run(&args(
            "--sizes 64K,2M --total 64M --iterations 3 --from 1 --to 0 --label x \
             --migrator test --require-offload --min-batch-bytes 65536 --latency 1,16 \
             --json - --no-memcpy --allow-split",
        ))
        .unwrap();
        assert!(o.allow_split);
        assert!(!RunOptions::default().allow_split);
        assert_eq!(o.sizes, vec![64 << 10, 2 << 20]);
        assert_eq!((o.total, o.iterations, o.from, o.to), (64 << 20, 3, 1, 0));
        assert_eq!(o.migrator.as_deref(), Some("test"));
        assert!(o.require_offload && !o.memcpy);
        assert_eq!(o.min_batch_bytes, Some(65536));
        assert_eq!(o.latency_batches, vec![1, 16]);
        assert_eq!(o.json.as_deref(), Some("-"));
        let o = parse_run(&args(
            "--warmup 2 --age --no-throughput --batch-sweep 1,512 --count-sweep 1,8",
        ))
        .unwrap();
        assert_eq!((o.warmup, o.age, o.throughput), (2, true, false));
        assert_eq!((o.batch_sweep, o.count_sweep), (vec![1, 512], vec![1, 8]));
        let o = parse_run(&args("--migrator none")).unwrap();
        assert_eq!(o.migrator.as_deref(), Some(""));
        assert_eq!(o.memcpy_threads, 1);
        let o = parse_run(&args("--memcpy-threads 2")).unwrap();
        assert_eq!(o.memcpy_threads, 2);
    }

    #[test]
    fn tiered_modes() {
        let o = parse_run(&[]).unwrap();
        assert!(!o.demotion && !o.promotion);
        assert_eq!((o.demote_total, o.promote_total), (128 << 20, 64 << 20));
        assert_eq!((o.promote_check_ms, o.promote_timeout), (500, 60));
        let o = parse_run(&args(
            "--no-throughput --demotion --promotion --sizes 4K,64K,2M --demote-total 64M \
             --promote-total 32M --promote-check-ms 100 --promote-timeout 30",
        ))
        .unwrap();
        assert!(o.demotion && o.promotion && !o.throughput);
        assert_eq!((o.demote_total, o.promote_total), (64 << 20, 32 << 20));
        assert_eq!((o.promote_check_ms, o.promote_timeout), (100, 30));
        // A total only has to hold whole folios where it is measured.
        assert!(parse_run(&args("--sizes 2M --promote-total 3M")).is_ok());
        assert!(parse_run(&args("--sizes 2M --demotion --promote-total 3M")).is_ok());
        let e = parse_run(&args("--sizes 2M --promotion --promote-total 3M")).unwrap_err();
        assert_eq!(
            e.0,
            "--promote-total 3M is not a multiple of the folio size 2M"
        );
        let e = parse_run(&args("--sizes 64K,2M --demotion --demote-total 1M")).unwrap_err();
        assert!(e.0.starts_with("--demote-total 1M"), "{e}");
    }

    #[test]
    fn run_rejects_bad_input() {
        for bad in [
            "--iterations 0",
            "--memcpy-threads 0",
            "--memcpy-threads 65",
            "--iterations x",
            "--from 1 --to 1",
            "--to -1",
            "--sizes 3K",
            "--sizes 2K",
            "--count-sizes 3K",
            "--batch-sizes 4K,x",
            "--total 3M --sizes 2M",
            "--latency 0",
            "--batch-sweep 0",
            "--count-sweep 1,0",
            "--demote-total 0",
            "--promote-total x",
            "--promote-check-ms 0",
            "--promote-timeout 0",
            "--promote-timeout -1",
            "--warmup x",
            "--require-offload",
            "--migrator none --require-offload",
            "--bogus",
            "--total",
        ] {
            assert!(parse_run(&args(bad)).is_err(), "accepted {bad}");
        }
    }
}
