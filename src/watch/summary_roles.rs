//! Who held the memory, in the summary: RSS, PSS and USS of each role
//! (main, training workers, evaluation workers, other children) at the
//! moment the tree's PSS peaked, and the /dev/shm the workers held.

use std::io::Write;

use serde::Serialize;

use super::roles::Role;
use super::sample::Sample;
use super::summary::WatchSummary;
use crate::units::fmt_bytes;

/// One role's memory at one moment.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RoleMemory {
    /// The role.
    pub role: Role,
    /// RSS summed over its processes.
    pub rss_bytes: u64,
    /// PSS summed over its processes.
    pub pss_bytes: u64,
    /// USS summed over its processes.
    pub uss_bytes: u64,
}

/// The roles of one sample, those holding anything.
pub fn roles_of(s: &Sample) -> Vec<RoleMemory> {
    let of = |role: Role| {
        let (rss_bytes, pss_bytes, uss_bytes) = match role {
            Role::Main => (s.main_rss_bytes, s.main_pss_bytes, s.main_uss_bytes),
            Role::TrainWorkers => (
                s.train_workers_rss_bytes,
                s.train_workers_pss_bytes,
                s.train_workers_uss_bytes,
            ),
            Role::EvalWorkers => (
                s.eval_workers_rss_bytes,
                s.eval_workers_pss_bytes,
                s.eval_workers_uss_bytes,
            ),
            Role::Other => (s.other_rss_bytes, s.other_pss_bytes, s.other_uss_bytes),
        };
        RoleMemory {
            role,
            rss_bytes,
            pss_bytes,
            uss_bytes,
        }
    };
    Role::ALL
        .into_iter()
        .map(of)
        .filter(|r| r.rss_bytes > 0)
        .collect()
}

/// The table's lines for the roles.
pub fn write_roles(s: &WatchSummary, w: &mut dyn Write) -> std::io::Result<()> {
    if s.roles_at_peak.is_empty() {
        return Ok(());
    }
    writeln!(
        w,
        "at the PSS peak: {:<14} {:>10} {:>10} {:>10}",
        "role", "RSS", "PSS", "USS"
    )?;
    for r in &s.roles_at_peak {
        writeln!(
            w,
            "                 {:<14} {:>10} {:>10} {:>10}",
            r.role.name(),
            fmt_bytes(r.rss_bytes),
            fmt_bytes(r.pss_bytes),
            fmt_bytes(r.uss_bytes)
        )?;
    }
    if let Some(b) = s.peak_workers_dev_shm_bytes.filter(|&b| b > 0) {
        writeln!(w, "loader workers held up to {} in /dev/shm", fmt_bytes(b))?;
    }
    Ok(())
}
