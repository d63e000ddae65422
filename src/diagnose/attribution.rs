//! Evidence read across inputs before the verdict ranks it: whose OOM kill a
//! kernel line is, what Slurm's accounting figures add up to, and which unit
//! a polling kill's figures are in. Each rule needs lines from more than one
//! place (a dmesg line and the job id sacct names; MaxRSS on the batch row
//! and ReqMem on the job row), so no single parser can apply it.

use std::collections::BTreeSet;

use super::category::{Category, Confidence};
use super::evidence::Evidence;

/// Kernel evidence that a kill happened (the kill itself or its context).
fn is_kernel_kill(kind: &str) -> bool {
    kind.starts_with("kernel_")
}

/// Demotes kernel OOM kills of other Slurm jobs to context. A node's kernel
/// log holds every job's kills; when the inputs name this job (sacct's JobID,
/// seff's `Job ID:`, slurmstepd's `StepId=N.`) and no kernel kill names its
/// cgroup (`…/job_N/…`), the kernel's kills were another job's. Returns the
/// other jobs named, for the verdict's sentence.
pub fn foreign_kills(items: &mut [Evidence]) -> Vec<u64> {
    let ours: BTreeSet<u64> = items
        .iter()
        .filter_map(|e| e.numbers.get("slurm_job_id").copied())
        .collect();
    if ours.is_empty() {
        return Vec::new();
    }
    let named: BTreeSet<u64> = items
        .iter()
        .filter_map(|e| e.numbers.get("oom_job_id").copied())
        .collect();
    if named.iter().any(|j| ours.contains(j)) {
        return Vec::new();
    }
    let mut others = BTreeSet::new();
    for e in items.iter_mut().filter(|e| is_kernel_kill(e.kind)) {
        if let Some(j) = e.numbers.get("oom_job_id") {
            others.insert(*j);
        }
        e.category = Category::Unknown;
        e.strength = Confidence::Possible;
        e.label = Some("not this job's".to_string());
    }
    others.into_iter().collect()
}

/// A job that failed or was cancelled with a peak RSS at or over its memory
/// request was killed by Slurm's accounting poll (OverMemoryKill): sacct's
/// `FAILED 0:9` / `CANCELLED by 0` and seff's `FAILED (exit code 0)` say no
/// more, but MaxRSS ≥ ReqMem does. A cgroup kill says OUT_OF_MEMORY instead.
pub fn accounting_kill(items: &[Evidence]) -> Option<Evidence> {
    let ended_badly = items
        .iter()
        .any(|e| matches!(e.kind, "sacct_failed" | "sacct_cancelled"));
    let max = |name: &str| {
        items
            .iter()
            .filter_map(|e| e.numbers.get(name).copied())
            .max()
    };
    let (rss, req) = (max("max_rss_bytes")?, max("req_mem_bytes")?);
    if !ended_badly || rss < req || req == 0 {
        return None;
    }
    let text = format!(
        "peak RSS {} at or over the {} requested, in a job that failed or was cancelled: Slurm's accounting poll killed it",
        crate::units::fmt_bytes(rss),
        crate::units::fmt_bytes(req)
    );
    let ev = Evidence::fact(
        "accounting_rss_over_request",
        Category::HostOomRssSum,
        Confidence::Likely,
        "sacct/seff",
        &text,
    );
    Some(
        ev.with("slurm_measured_bytes", Some(rss))
            .with("slurm_limit_bytes", Some(req)),
    )
}

/// Checks a polling kill's figures against ReqMem: the line's wording gave
/// the unit (bytes from 22.05, KiB before); when ReqMem is known and matches
/// the limit only under the other reading, that reading is used. Returns the
/// sentence saying which reading was used.
pub fn polling_units(items: &mut [Evidence]) -> Option<String> {
    let req = items
        .iter()
        .filter(|e| e.kind != "slurm_memory_limit_kill")
        .find_map(|e| e.numbers.get("req_mem_bytes").copied());
    let mut said = None;
    for e in items
        .iter_mut()
        .filter(|e| e.kind == "slurm_memory_limit_kill")
    {
        let Some(limit) = e.numbers.get("slurm_limit_bytes").copied() else {
            continue;
        };
        let unit = e.label.clone().unwrap_or_default();
        let (factor_up, factor_down) = (limit.checked_mul(1024), limit / 1024);
        let flip = match req {
            Some(r) if r != limit && factor_down == r && unit == "KiB" => Some(false),
            Some(r) if r != limit && factor_up == Some(r) && unit == "bytes" => Some(true),
            _ => None,
        };
        let reading = match flip {
            Some(up) => {
                for v in e.numbers.values_mut() {
                    *v = if up {
                        v.saturating_mul(1024)
                    } else {
                        *v / 1024
                    };
                }
                let now = if up { "KiB" } else { "bytes" };
                e.label = Some(now.to_string());
                format!("{now} (ReqMem matches only that reading)")
            }
            None if req == Some(limit) => format!("{unit} (the limit equals ReqMem)"),
            None => format!("{unit} (by the line's wording)"),
        };
        said = Some(format!(" Slurm's figures were read as {reading}."));
    }
    said
}
