// SPDX-License-Identifier: GPL-2.0
//! What migbench asks of the kernel: raw NUMA system calls, anonymous
//! mappings, /proc/vmstat, the THP and copy-offload controls in sysfs and
//! debugfs, the folio layout seen through pagemap and kpageflags, and for
//! the tiered-memory measurements a memory cgroup, the demotion and NUMA
//! balancing controls and CPU affinity.

use std::collections::HashMap;
use std::fs;
use std::io;
use std::os::unix::fs::FileExt;

pub type Result<T> = std::result::Result<T, String>;

pub const THP_DIR: &str = "/sys/kernel/mm/transparent_hugepage";
pub const OFFLOAD_DIR: &str = "/sys/kernel/mm/migrate_offload";
pub const BATCH_MAX_PAGES: &str = "/sys/kernel/debug/migrate/batch_max_pages";
pub const PMD_SIZE: u64 = 2 << 20;
pub const CGROUP_ROOT: &str = "/sys/fs/cgroup";
pub const DEMOTION_ENABLED: &str = "/sys/kernel/mm/numa/demotion_enabled";
pub const NUMA_BALANCING: &str = "/proc/sys/kernel/numa_balancing";
/// NUMA balancing's scanner controls (scan_delay_ms, hot_threshold_ms, ...).
pub const NUMA_BALANCING_DEBUGFS: &str = "/sys/kernel/debug/sched/numa_balancing";

const MPOL_DEFAULT: libc::c_long = 0;
const MPOL_BIND: libc::c_long = 2;
const MPOL_MF_MOVE: libc::c_int = 1 << 1;

pub fn page_size() -> u64 {
    // SAFETY: sysconf() has no memory-safety preconditions.
    let sz = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if sz > 0 {
        sz as u64
    } else {
        4096
    }
}

fn os_err(what: &str) -> String {
    format!("{what}: {}", io::Error::last_os_error())
}

/// Reads a file and trims it, with the path in the error.
pub fn read_trimmed(path: &str) -> Result<String> {
    fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .map_err(|e| format!("read {path}: {e}"))
}

/// Writes `value` to a control file, with both in the error.
pub fn write_control(path: &str, value: &str) -> Result<()> {
    fs::write(path, value).map_err(|e| format!("write '{value}' to {path}: {e}"))
}

/// Parses "name value" lines: /proc/vmstat's, a cgroup's cpu.stat.
pub fn parse_vmstat(text: &str) -> HashMap<String, u64> {
    text.lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (k, v) = (f.next()?, f.next()?);
            Some((k.to_string(), v.parse().ok()?))
        })
        .collect()
}

pub fn vmstat() -> Result<HashMap<String, u64>> {
    Ok(parse_vmstat(&read_trimmed("/proc/vmstat")?))
}

/// /proc/vmstat with every CPU's pending counter changes folded in first
/// (vm.stat_refresh): the node counters (pgdemote_*, pgpromote_success)
/// reach /proc/vmstat only now and then otherwise.
pub fn vmstat_refreshed() -> Result<HashMap<String, u64>> {
    write_control("/proc/sys/vm/stat_refresh", "1")?;
    vmstat()
}

/// Control files set for a while: each written with set(), its old value
/// written back on drop, the last set first.
#[derive(Default)]
pub struct Controls {
    saved: Vec<(String, String)>,
}

impl Controls {
    pub fn set(&mut self, path: &str, value: &str) -> Result<()> {
        let old = read_trimmed(path)?;
        write_control(path, value)?;
        self.saved.push((path.to_string(), old));
        Ok(())
    }
}

impl Drop for Controls {
    fn drop(&mut self) {
        for (path, value) in self.saved.iter().rev() {
            let _ = fs::write(path, value);
        }
    }
}

/// The CPU time this thread has run, user and kernel, in seconds
/// (CLOCK_THREAD_CPUTIME_ID, exact to the scheduler's clock): the
/// migrating task's own share of a move.
pub fn thread_cpu_secs() -> Result<f64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the call.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } != 0 {
        return Err(os_err("clock_gettime(CLOCK_THREAD_CPUTIME_ID)"));
    }
    Ok(ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9)
}

/// The busy time of /proc/stat's "cpu" line, in clock ticks: user, nice,
/// system, irq and softirq (guest time is counted in user already; idle,
/// iowait and steal - the host's - are not the machine's work).
pub fn parse_proc_stat_busy(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let f: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|v| v.parse().ok())
        .collect::<Option<_>>()?;
    if f.len() < 7 {
        return None;
    }
    Some(f[0] + f[1] + f[2] + f[5] + f[6])
}

/// The CPU time every CPU of the machine has spent busy, in seconds: the
/// root cgroup's cpu.stat usage_usec where cgroup v2 is mounted (the
/// kernel's own sum of the same per-CPU times, in microseconds), else
/// /proc/stat's busy ticks (hundredths of a second).
pub fn machine_cpu_secs() -> Result<f64> {
    if let Some(&us) = fs::read_to_string(format!("{CGROUP_ROOT}/cpu.stat"))
        .ok()
        .map(|t| parse_vmstat(&t))
        .as_ref()
        .and_then(|m| m.get("usage_usec"))
    {
        return Ok(us as f64 * 1e-6);
    }
    let text = fs::read_to_string("/proc/stat").map_err(|e| format!("read /proc/stat: {e}"))?;
    let ticks = parse_proc_stat_busy(&text).ok_or("/proc/stat: no cpu line")?;
    // SAFETY: sysconf() takes no pointers.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz <= 0 {
        return Err(os_err("sysconf(_SC_CLK_TCK)"));
    }
    Ok(ticks as f64 / hz as f64)
}

/// The cgroup v2 path of this process, from the "0::PATH" line of
/// /proc/self/cgroup.
pub fn parse_own_cgroup(text: &str) -> Option<String> {
    text.lines()
        .find_map(|l| l.strip_prefix("0::"))
        .map(|p| p.trim().to_string())
        .filter(|p| p.starts_with('/'))
}

/// This process in a child of the root cgroup (cgroup v2, mounted at
/// /sys/fs/cgroup if it is not yet) with the memory controller, so that a
/// write to its memory.reclaim reclaims this process's memory; on drop,
/// back in the cgroup it came from, and the child removed.
pub struct MemCgroup {
    dir: String,
    home: String,
}

impl MemCgroup {
    pub fn join(name: &str) -> Result<MemCgroup> {
        let controllers = format!("{CGROUP_ROOT}/cgroup.controllers");
        if fs::metadata(&controllers).is_err() {
            fs::create_dir_all(CGROUP_ROOT).map_err(|e| format!("mkdir {CGROUP_ROOT}: {e}"))?;
            // SAFETY: the strings are NUL-terminated literals; no data.
            let rc = unsafe {
                libc::mount(
                    c"cgroup2".as_ptr(),
                    c"/sys/fs/cgroup".as_ptr(),
                    c"cgroup2".as_ptr(),
                    0,
                    std::ptr::null(),
                )
            };
            if rc != 0 {
                return Err(os_err(&format!("mount cgroup2 on {CGROUP_ROOT}")));
            }
        }
        if !read_trimmed(&controllers)?
            .split_whitespace()
            .any(|c| c == "memory")
        {
            return Err(format!(
                "{controllers}: no memory controller (CONFIG_MEMCG)"
            ));
        }
        let home = parse_own_cgroup(&read_trimmed("/proc/self/cgroup")?)
            .ok_or("/proc/self/cgroup: no cgroup v2 path")?;
        write_control(&format!("{CGROUP_ROOT}/cgroup.subtree_control"), "+memory")?;
        let dir = format!("{CGROUP_ROOT}/{name}");
        match fs::create_dir(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(format!("mkdir {dir}: {e}")),
        }
        let cg = MemCgroup {
            dir,
            home: format!("{CGROUP_ROOT}{}", home.trim_end_matches('/')),
        };
        write_control(
            &format!("{}/cgroup.procs", cg.dir),
            &std::process::id().to_string(),
        )?;
        Ok(cg)
    }

    /// Writes `value` ("128M") to memory.reclaim: false when the kernel
    /// says (EAGAIN) that it reclaimed less.
    pub fn reclaim(&self, value: &str) -> Result<bool> {
        let path = format!("{}/memory.reclaim", self.dir);
        match fs::write(&path, value) {
            Ok(()) => Ok(true),
            Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => Ok(false),
            Err(e) => Err(format!("write '{value}' to {path}: {e}")),
        }
    }
}

impl Drop for MemCgroup {
    fn drop(&mut self) {
        let _ = fs::write(
            format!("{}/cgroup.procs", self.home),
            std::process::id().to_string(),
        );
        // Memory still charged to it goes to the parent.
        let _ = fs::remove_dir(&self.dir);
    }
}

/// Parses a CPU list as sysfs prints it: "0-3,8,10-11"; empty for "".
pub fn parse_cpulist(s: &str) -> Result<Vec<usize>> {
    let mut cpus = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        let bad = || format!("'{s}' is not a CPU list");
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        let a: usize = a.trim().parse().map_err(|_| bad())?;
        let b: usize = b.trim().parse().map_err(|_| bad())?;
        if a > b {
            return Err(bad());
        }
        cpus.extend(a..=b);
    }
    Ok(cpus)
}

/// The CPUs of a NUMA node.
pub fn node_cpus(node: i32) -> Result<Vec<usize>> {
    let cpus = parse_cpulist(&read_trimmed(&format!(
        "/sys/devices/system/node/node{node}/cpulist"
    ))?)?;
    if cpus.is_empty() {
        return Err(format!("node {node} has no CPUs"));
    }
    Ok(cpus)
}

/// This thread on some CPUs only; back on the CPUs it had on drop.
pub struct Pinned {
    old: libc::cpu_set_t,
}

impl Pinned {
    pub fn to(cpus: &[usize]) -> Result<Pinned> {
        let size = std::mem::size_of::<libc::cpu_set_t>();
        // SAFETY: cpu_set_t is plain old data; all zeroes is the empty set.
        let mut old: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        // SAFETY: old is a valid cpu_set_t of `size` bytes.
        if unsafe { libc::sched_getaffinity(0, size, &mut old) } != 0 {
            return Err(os_err("sched_getaffinity"));
        }
        // SAFETY: as above.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        for &c in cpus {
            if c >= libc::CPU_SETSIZE as usize {
                return Err(format!("CPU {c} is beyond CPU_SETSIZE"));
            }
            // SAFETY: c is below CPU_SETSIZE, the bits of a cpu_set_t.
            unsafe { libc::CPU_SET(c, &mut set) };
        }
        // SAFETY: set is a valid cpu_set_t of `size` bytes.
        if unsafe { libc::sched_setaffinity(0, size, &set) } != 0 {
            return Err(os_err(&format!("sched_setaffinity(CPUs {cpus:?})")));
        }
        Ok(Pinned { old })
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        // SAFETY: old is the valid cpu_set_t sched_getaffinity() filled.
        unsafe {
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &self.old);
        }
    }
}

/// Binds this thread's allocations to `node`, or back to the default
/// policy for `None`.
pub fn bind_to(node: Option<i32>) -> Result<()> {
    let mask: libc::c_ulong = node.map_or(0, |n| 1 << n);
    let (mode, maskp, bits) = match node {
        Some(_) => (
            MPOL_BIND,
            &mask as *const libc::c_ulong,
            libc::c_ulong::BITS,
        ),
        None => (MPOL_DEFAULT, std::ptr::null(), 0),
    };
    // SAFETY: set_mempolicy() reads at most `bits` bits from `maskp`, which
    // points to one c_ulong (or is NULL with 0 bits).
    let rc = unsafe { libc::syscall(libc::SYS_set_mempolicy, mode, maskp, bits as libc::c_ulong) };
    if rc != 0 {
        return Err(os_err(&format!("set_mempolicy(node {node:?})")));
    }
    Ok(())
}

/// move_pages(2) on this process: with `nodes`, moves each page there and
/// returns the number of pages not moved; without, only fills `status`.
pub fn move_pages(addrs: &[*mut u8], nodes: Option<&[i32]>, status: &mut [i32]) -> Result<i64> {
    assert!(status.len() == addrs.len() && nodes.is_none_or(|n| n.len() == addrs.len()));
    let (nodes_ptr, flags) = match nodes {
        Some(n) => (n.as_ptr(), MPOL_MF_MOVE),
        None => (std::ptr::null(), 0),
    };
    // SAFETY: the three arrays hold addrs.len() entries each (asserted
    // above); the kernel checks the addresses themselves.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_move_pages,
            0,
            addrs.len() as libc::c_ulong,
            addrs.as_ptr(),
            nodes_ptr,
            status.as_mut_ptr(),
            flags,
        )
    };
    if rc < 0 {
        return Err(os_err("move_pages"));
    }
    Ok(rc)
}

/// An anonymous private mapping, aligned to a PMD so that folios of every
/// size fit it, unmapped on drop.
pub struct Area {
    map: *mut libc::c_void,
    map_len: usize,
    buf: *mut u8,
    len: usize,
}

impl Area {
    /// Maps `len` bytes asking for large folios (MADV_HUGEPAGE) if `huge`,
    /// else for small pages only (MADV_NOHUGEPAGE).
    pub fn new(len: usize, huge: bool) -> Result<Area> {
        let map_len = len + PMD_SIZE as usize;
        // SAFETY: a fresh anonymous mapping; no existing memory is affected.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if map == libc::MAP_FAILED {
            return Err(os_err(&format!("mmap of {map_len} bytes")));
        }
        let offset = (map as usize).next_multiple_of(PMD_SIZE as usize) - map as usize;
        // SAFETY: offset < PMD_SIZE, so buf..buf + len is inside the mapping.
        let buf = unsafe { (map as *mut u8).add(offset) };
        let area = Area {
            map,
            map_len,
            buf,
            len,
        };
        let advice = if huge {
            libc::MADV_HUGEPAGE
        } else {
            libc::MADV_NOHUGEPAGE
        };
        // SAFETY: the range is part of our mapping.
        if unsafe { libc::madvise(buf as *mut libc::c_void, len, advice) } != 0 {
            return Err(os_err("madvise"));
        }
        Ok(area)
    }

    pub fn ptr(&self) -> *mut u8 {
        self.buf
    }

    /// The mapped range as 64-bit words.
    pub fn words(&mut self) -> &mut [u64] {
        // SAFETY: buf is page aligned, len is a multiple of 8, the memory is
        // mapped read-write for as long as self lives, and &mut self makes
        // this the only reference.
        unsafe { std::slice::from_raw_parts_mut(self.buf as *mut u64, self.len / 8) }
    }
}

impl Drop for Area {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in new(); nothing refers
        // to it any more.
        unsafe { libc::munmap(self.map, self.map_len) };
    }
}

/// The THP controls as found, put back on drop.
pub struct ThpSettings {
    saved: Vec<(String, String)>,
}

fn selected(control: &str) -> Option<String> {
    // "always [madvise] never" -> "madvise"
    let start = control.find('[')? + 1;
    let end = control[start..].find(']')? + start;
    Some(control[start..end].to_string())
}

impl ThpSettings {
    /// Allows large folios of `folio_size` only, for MADV_HUGEPAGE areas
    /// (none for a page-sized folio), remembering the old settings.
    pub fn allow_only(folio_size: u64) -> Result<ThpSettings> {
        let mut saved = Vec::new();
        let top = format!("{THP_DIR}/enabled");
        let old = read_trimmed(&top)?;
        saved.push((top.clone(), selected(&old).unwrap_or(old)));
        let mut settings = ThpSettings { saved };
        write_control(&top, "madvise")?;
        let want = format!("hugepages-{}kB", folio_size >> 10);
        let mut found = folio_size == page_size();
        let dir = fs::read_dir(THP_DIR).map_err(|e| format!("read {THP_DIR}: {e}"))?;
        for entry in dir.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !name.starts_with("hugepages-") {
                continue;
            }
            let path = format!("{THP_DIR}/{name}/enabled");
            // Sizes only the page cache uses have no "enabled" control.
            let Ok(old) = read_trimmed(&path) else {
                continue;
            };
            let value = if name == want {
                found = true;
                "madvise"
            } else {
                "never"
            };
            match fs::write(&path, value) {
                Ok(()) => settings.saved.push((path, selected(&old).unwrap_or(old))),
                // Sizes anonymous memory cannot use are read-only.
                Err(e) if e.kind() == io::ErrorKind::PermissionDenied && name != want => {}
                Err(e) => return Err(format!("write '{value}' to {path}: {e}")),
            }
        }
        if !found {
            return Err(format!("this kernel has no {THP_DIR}/{want}"));
        }
        Ok(settings)
    }
}

impl Drop for ThpSettings {
    fn drop(&mut self) {
        for (path, value) in self.saved.iter().rev() {
            let _ = fs::write(path, value);
        }
    }
}

const KPF_COMPOUND_HEAD: u64 = 1 << 15;
const KPF_COMPOUND_TAIL: u64 = 1 << 16;
const KPF_THP: u64 = 1 << 22;
const PM_PRESENT: u64 = 1 << 63;
const PM_PFN_MASK: u64 = (1 << 55) - 1;

/// Checks that pages with these PFNs and kpageflags form whole folios of
/// `folio_pages` pages each, from the first page on: a compound head on
/// the first page of each, tails after it, contiguous and naturally
/// aligned PFNs; or, for `folio_pages == 1`, no compound pages at all.
pub fn check_folio_layout(pfns: &[u64], flags: &[u64], folio_pages: u64) -> Result<()> {
    let mut head_pfn = 0;
    for (i, (&pfn, &f)) in pfns.iter().zip(flags).enumerate() {
        let head = f & KPF_COMPOUND_HEAD != 0;
        let tail = f & KPF_COMPOUND_TAIL != 0;
        let j = i as u64 % folio_pages;
        if folio_pages == 1 {
            if head || tail {
                return Err(format!(
                    "page {i} is part of a large folio, want small pages"
                ));
            }
            continue;
        }
        if f & KPF_THP == 0 {
            return Err(format!("page {i} (kpageflags {f:#x}) is not in a THP"));
        }
        if j == 0 {
            if !head || tail || pfn % folio_pages != 0 {
                return Err(format!(
                    "page {i} (pfn {pfn:#x}, kpageflags {f:#x}) does not start a folio of {folio_pages} pages"
                ));
            }
            head_pfn = pfn;
        } else if head || !tail || pfn != head_pfn + j {
            return Err(format!(
                "page {i} (pfn {pfn:#x}, kpageflags {f:#x}) is not page {j} of the folio at pfn {head_pfn:#x}"
            ));
        }
    }
    Ok(())
}

/// Reads the PFN and kpageflags of `n` pages from `addr` (needs root) and
/// checks them with check_folio_layout().
pub fn verify_folios(addr: *mut u8, n: usize, folio_pages: u64) -> Result<()> {
    let ps = page_size();
    let pagemap = fs::File::open("/proc/self/pagemap").map_err(|e| format!("open pagemap: {e}"))?;
    let kpf =
        fs::File::open("/proc/kpageflags").map_err(|e| format!("open /proc/kpageflags: {e}"))?;
    let mut entries = vec![0u8; n * 8];
    let first = addr as u64 / ps;
    pagemap
        .read_exact_at(&mut entries, first * 8)
        .map_err(|e| format!("read pagemap: {e}"))?;
    let mut pfns = Vec::with_capacity(n);
    let mut flags = Vec::with_capacity(n);
    let mut word = [0u8; 8];
    for (i, e) in entries.chunks_exact(8).enumerate() {
        let pme = u64::from_ne_bytes(e.try_into().unwrap_or_default());
        let pfn = pme & PM_PFN_MASK;
        if pme & PM_PRESENT == 0 || pfn == 0 {
            return Err(format!(
                "page {i} is not present or its PFN is hidden (not root?)"
            ));
        }
        kpf.read_exact_at(&mut word, pfn * 8)
            .map_err(|e| format!("read kpageflags of pfn {pfn:#x}: {e}"))?;
        pfns.push(pfn);
        flags.push(u64::from_ne_bytes(word));
    }
    check_folio_layout(&pfns, &flags, folio_pages)
}

/// `uname -r` and `uname -v`.
pub fn kernel() -> String {
    // SAFETY: utsname is plain old data; uname() fills it.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: u is a valid, writable utsname.
    if unsafe { libc::uname(&mut u) } != 0 {
        return "unknown".into();
    }
    let field = |f: &[libc::c_char]| {
        let bytes: Vec<u8> = f
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    format!("{} {}", field(&u.release), field(&u.version))
}

/// The CPU model and how many CPUs and NUMA nodes there are.
pub fn machine() -> String {
    let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name").and_then(|r| r.split_once(':')))
        .map_or("unknown CPU".to_string(), |(_, m)| m.trim().to_string());
    let cpus = cpuinfo
        .lines()
        .filter(|l| l.starts_with("processor"))
        .count();
    let nodes = read_trimmed("/sys/devices/system/node/online").unwrap_or_else(|_| "?".into());
    format!("{model}, {cpus} CPUs, nodes {nodes}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vmstat_lines() {
        let v = parse_vmstat("nr_free_pages 100\npgmigrate_success 42\nbroken\nx y\n");
        assert_eq!(v.get("pgmigrate_success"), Some(&42));
        assert_eq!(v.get("nr_free_pages"), Some(&100));
        assert_eq!(v.len(), 2);
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpulist("0-1\n"), Ok(vec![0, 1]));
        assert_eq!(parse_cpulist("0,2-4,7"), Ok(vec![0, 2, 3, 4, 7]));
        assert_eq!(parse_cpulist(""), Ok(vec![]));
        assert!(parse_cpulist("3-1").is_err());
        assert!(parse_cpulist("a").is_err());
        assert!(parse_cpulist("1-").is_err());
    }

    #[test]
    fn cpu_time_sources() {
        let cpu_stat = parse_vmstat("usage_usec 1234567\nuser_usec 1000\nsystem_usec 234567\n");
        assert_eq!(cpu_stat.get("usage_usec"), Some(&1_234_567));
        // user nice system idle iowait irq softirq steal guest guest_nice:
        // idle, iowait and steal are not the machine's work.
        let stat = "cpu  100 2 30 5000 40 5 6 700 0 0\ncpu0 50 1 15 2500 20 2 3 350 0 0\n";
        assert_eq!(parse_proc_stat_busy(stat), Some(100 + 2 + 30 + 5 + 6));
        assert_eq!(parse_proc_stat_busy("cpu0 1 2 3 4 5 6 7\n"), None);
        assert_eq!(parse_proc_stat_busy("cpu  1 2 3\n"), None);
        // The thread's own clock moves forward with work.
        let t0 = thread_cpu_secs().expect("clock");
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(i);
        }
        assert!(x != 1);
        assert!(thread_cpu_secs().expect("clock") > t0);
    }

    #[test]
    fn own_cgroup() {
        assert_eq!(parse_own_cgroup("0::/\n").as_deref(), Some("/"));
        assert_eq!(
            parse_own_cgroup("12:cpu:/x\n0::/user.slice/a.scope\n").as_deref(),
            Some("/user.slice/a.scope")
        );
        // Only cgroup v1 hierarchies: no v2 path.
        assert_eq!(parse_own_cgroup("4:memory:/\n"), None);
        assert_eq!(parse_own_cgroup("0::\n"), None);
    }

    #[test]
    fn thp_control_selection() {
        assert_eq!(
            selected("always [madvise] never").as_deref(),
            Some("madvise")
        );
        assert_eq!(
            selected("[always] inherit madvise never").as_deref(),
            Some("always")
        );
        assert_eq!(selected("never"), None);
    }

    const H: u64 = KPF_COMPOUND_HEAD | KPF_THP;
    const T: u64 = KPF_COMPOUND_TAIL | KPF_THP;

    #[test]
    fn whole_folios_pass() {
        assert!(check_folio_layout(&[0x100, 0x101, 0x102, 0x103], &[H, T, T, T], 4).is_ok());
        assert!(check_folio_layout(&[0x104, 0x105, 0x200, 0x201], &[H, T, H, T], 2).is_ok());
        assert!(check_folio_layout(&[7, 3, 9], &[0, 0, 0], 1).is_ok());
    }

    #[test]
    fn wrong_layouts_fail() {
        // Folios of 2 pages where 4 were asked for.
        assert!(check_folio_layout(&[0x100, 0x101, 0x200, 0x201], &[H, T, H, T], 4).is_err());
        // A folio of 4 where 2 were asked for.
        assert!(check_folio_layout(&[0x100, 0x101, 0x102, 0x103], &[H, T, T, T], 2).is_err());
        // Not contiguous, not aligned, not a THP, large where small wanted.
        assert!(check_folio_layout(&[0x100, 0x105], &[H, T], 2).is_err());
        assert!(check_folio_layout(&[0x101, 0x102], &[H, T], 2).is_err());
        assert!(check_folio_layout(&[0x100, 0x101], &[KPF_COMPOUND_HEAD, T], 2).is_err());
        assert!(check_folio_layout(&[0x100, 0x101], &[H, T], 1).is_err());
    }
}
