//! The text of procfs files a sampler reads, parsed: `stat` (whose command
//! name may hold spaces and parentheses) and `smaps` / `smaps_rollup` (the
//! same `Key:  N kB` lines, one block or one per mapping).

/// What `/proc/<pid>/stat` says about a process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcStat {
    /// The command name (at most 15 bytes, as the kernel keeps it).
    pub comm: String,
    /// One-letter state (R, S, D, Z, ...).
    pub state: char,
    /// The parent's pid.
    pub ppid: u32,
    /// User CPU time in clock ticks.
    pub utime_ticks: u64,
    /// System CPU time in clock ticks.
    pub stime_ticks: u64,
}

/// Page counters of one process, all in bytes; `None` where the kernel did not say.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SmapsTotals {
    /// Resident set: every page mapped and present, shared ones counted in full.
    pub rss: Option<u64>,
    /// Proportional set: each shared page divided among the processes mapping it.
    pub pss: Option<u64>,
    /// The shmem (tmpfs, /dev/shm, shared anonymous) part of PSS (4.14+ rollup only).
    pub pss_shmem: Option<u64>,
    /// The file-backed part of PSS (4.14+ rollup only): the program's and
    /// libraries' pages, whose share moves as other processes map them.
    pub pss_file: Option<u64>,
    /// Pages only this process maps, clean.
    pub private_clean: Option<u64>,
    /// Pages only this process maps, dirty.
    pub private_dirty: Option<u64>,
    /// Swapped-out anonymous pages.
    pub swap: Option<u64>,
}

impl SmapsTotals {
    /// Unique set size: what freeing this process alone would give back.
    pub fn uss(&self) -> Option<u64> {
        Some(self.private_clean? + self.private_dirty?)
    }
}

/// The kernel's page size in bytes.
pub fn page_size() -> u64 {
    match nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE) {
        Ok(Some(size)) if size > 0 => size as u64,
        _ => 4096,
    }
}

/// Parses a `stat` line; the command name may hold spaces and parentheses,
/// so the fields are counted from the last `)`.
pub fn parse_stat(text: &str) -> Option<ProcStat> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text.get(open + 1..close)?.to_string();
    let rest: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
    // After the name: state(3) ppid(4) ... utime(14) stime(15), per proc(5).
    Some(ProcStat {
        comm,
        state: rest.first()?.chars().next()?,
        ppid: rest.get(1)?.parse().ok()?,
        utime_ticks: rest.get(11)?.parse().ok()?,
        stime_ticks: rest.get(12)?.parse().ok()?,
    })
}

/// Sums the `kB` counters of `smaps_rollup` (one block) or `smaps` (one block
/// per mapping); both have the same `Key:  N kB` lines.
pub fn parse_smaps(text: &str) -> SmapsTotals {
    let mut t = SmapsTotals::default();
    for line in text.lines() {
        let Some((key, rest)) = line.split_once(':') else {
            continue;
        };
        let slot = match key {
            "Rss" => &mut t.rss,
            "Pss" => &mut t.pss,
            "Pss_Shmem" => &mut t.pss_shmem,
            "Pss_File" => &mut t.pss_file,
            "Private_Clean" => &mut t.private_clean,
            "Private_Dirty" => &mut t.private_dirty,
            "Swap" => &mut t.swap,
            _ => continue,
        };
        if let Some(kb) = rest
            .split_whitespace()
            .next()
            .and_then(|v| v.parse::<u64>().ok())
        {
            *slot = Some(slot.unwrap_or(0) + kb * 1024);
        }
    }
    t
}
