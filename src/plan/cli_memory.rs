//! The host budget from the command line as Slurm's memory options give it:
//! `--mem` (read by Slurm's own rule, `units::slurm`), `--mem-per-cpu` ×
//! CPUs × ranks, `--mem-per-gpu` × ranks (one GPU per rank, stated), and
//! `--node-mem` standing in for `--mem=0` (the whole node), which is never
//! planned as 0. Each product is stated as a note in the plan.

use super::cli::JobArgs;
use crate::error::{Error, Result};
use crate::spec::JobSpec;
use crate::units::{Bytes, fmt_bytes, parse_slurm_mem};

fn slurm_size(flag: &str, text: &str) -> Result<u64> {
    parse_slurm_mem(text).map_err(|e| Error::bad(format!("{flag}: {e}")))
}

impl JobArgs {
    /// Sets `spec.budget.host` from the memory flags (after ranks and CPUs).
    pub(super) fn apply_memory(&self, spec: &mut JobSpec, notes: &mut Vec<String>) -> Result<()> {
        if let Some(m) = &self.mem {
            spec.budget.host = Some(Bytes(slurm_size("--mem", m)?));
        }
        let ranks = u64::from(spec.ranks_per_node);
        if let Some(m) = &self.mem_per_cpu {
            let per = slurm_size("--mem-per-cpu", m)?;
            let cpus = u64::from(spec.cpus.unwrap_or(1));
            let host = per.saturating_mul(cpus * ranks);
            notes.push(format!(
                "host budget {} per node = --mem-per-cpu={} × {cpus} CPUs per rank × {ranks} rank(s)",
                fmt_bytes(host),
                fmt_bytes(per)
            ));
            spec.budget.host = Some(Bytes(host));
        }
        if let Some(m) = &self.mem_per_gpu {
            let per = slurm_size("--mem-per-gpu", m)?;
            let host = per.saturating_mul(ranks);
            notes.push(format!(
                "host budget {} per node = --mem-per-gpu={} × {ranks} GPU(s), assumed one per rank",
                fmt_bytes(host),
                fmt_bytes(per)
            ));
            spec.budget.host = Some(Bytes(host));
        }
        if let Some(n) = &self.node_mem {
            let node = slurm_size("--node-mem", n)?;
            if node == 0 {
                return Err(Error::bad("--node-mem 0: the node's memory cannot be 0"));
            }
            // Only --mem=0 (the whole node) takes the node's size.
            if spec.budget.host == Some(Bytes(0)) {
                notes.push(format!(
                    "--mem=0 is all of the node's memory: planned against --node-mem {}",
                    fmt_bytes(node)
                ));
                spec.budget.host = Some(Bytes(node));
            }
        }
        Ok(())
    }
}
