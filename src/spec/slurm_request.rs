//! What an sbatch script's `#SBATCH` lines ask of one node: host memory
//! (`--mem`, or `--mem-per-cpu` × CPUs, or `--mem-per-gpu` × GPUs), CPUs per
//! task and tasks per node (the training ranks). Sizes are read by
//! [`parse_slurm_mem`], Slurm's own rule; the three memory options exclude
//! each other as in sbatch (`_validate_memory_options` in SchedMD/slurm
//! `src/common/slurm_opt.c` stops with "--mem, --mem-per-cpu, and
//! --mem-per-gpu are mutually exclusive."). Every product is stated as a
//! warning so the user sees which budget was planned.

use crate::error::{Error, Result};
use crate::output::shown;
use crate::units::{Bytes, fmt_bytes, parse_slurm_mem};

/// The resources the directives ask for, per node.
#[derive(Debug, Default, PartialEq)]
pub struct Request {
    /// Host memory per node; `Some(0)` is `--mem=0`, the whole node.
    pub host: Option<Bytes>,
    /// `--cpus-per-task`.
    pub cpus_per_task: Option<u32>,
    /// `--ntasks-per-node`, or `--ntasks` on one node.
    pub ranks_per_node: Option<u32>,
}

/// Reads `directives` (`(key, value)` with the dashes stripped, in order).
pub fn read(directives: &[(String, String)], source: &str) -> Result<(Request, Vec<String>)> {
    let bad = |key: &str, value: &str, why: &str| {
        Error::bad(format!(
            "{}: #SBATCH --{key}={}: {why}",
            shown(source),
            shown(value)
        ))
    };
    let count = |key: &str, value: &str| -> Result<u32> {
        match value.trim().parse::<u32>() {
            Ok(n) if n >= 1 => Ok(n),
            _ => Err(bad(key, value, "not a whole number of at least 1")),
        }
    };
    let mut mem: Option<(&str, u64)> = None;
    let (mut cpus, mut per_node, mut ntasks, mut nodes) = (None, None, None, None);
    let mut gpus: Option<u32> = None;
    let mut gpus_per_task: Option<u32> = None;
    for (key, value) in directives {
        match key.as_str() {
            k @ ("mem" | "mem-per-cpu" | "mem-per-gpu") => {
                let bytes = parse_slurm_mem(value).map_err(|e| bad(k, value, &e))?;
                if let Some((other, _)) = mem.filter(|(other, _)| *other != k) {
                    return Err(Error::bad(format!(
                        "{}: #SBATCH --{other} and --{k}: sbatch stops with \"--mem, --mem-per-cpu, \
                         and --mem-per-gpu are mutually exclusive.\"",
                        shown(source)
                    )));
                }
                // A repeated option: the last one wins, as in sbatch.
                mem = Some((k, bytes));
            }
            "cpus-per-task" | "c" => cpus = Some(count(key, value)?),
            "ntasks-per-node" => per_node = Some(count(key, value)?),
            "ntasks" | "n" => ntasks = Some(count(key, value)?),
            "nodes" | "N" => nodes = value.trim().parse::<u32>().ok(),
            "gres" => {
                if let Some(n) = value.split(',').find_map(gres_gpu_count) {
                    gpus = Some(n);
                }
            }
            "gpus-per-node" => gpus = Some(trailing_count(value)),
            // --gpus counts the whole job: per node only when it has one node.
            "gpus" | "G" => gpus = gpus.or(Some(trailing_count(value))),
            "gpus-per-task" => gpus_per_task = Some(trailing_count(value)),
            _ => {}
        }
    }
    let mut notes = Vec::new();
    let ranks = per_node.or_else(|| {
        let n = ntasks?;
        if nodes == Some(1) {
            Some(n)
        } else if let Some(k) = nodes.filter(|k| *k > 1) {
            // Slurm fills nodes in blocks: the fullest node holds ceil(n/k)
            // tasks, and the node's memory must hold them.
            Some(n.div_ceil(k))
        } else {
            if n > 1 {
                notes.push(format!(
                    "--ntasks={n} without --ntasks-per-node or --nodes=1: Slurm may spread the \
                     tasks over nodes; planned as 1 rank per node (give --ranks-per-node)"
                ));
            }
            None
        }
    });
    let gpus = gpus_per_task.map(|g| g * ranks.unwrap_or(1)).or(gpus);
    let host = match mem {
        None => None,
        Some(("mem", b)) => Some(b),
        Some(("mem-per-cpu", b)) => {
            let (c, r) = (cpus.unwrap_or(1), ranks.unwrap_or(1));
            let total = b.saturating_mul(u64::from(c) * u64::from(r));
            notes.push(format!(
                "host budget {} per node = --mem-per-cpu={} × {c} CPUs per task{} × {r} task(s) \
                 per node; Slurm may allocate whole cores and so more memory, headroom plans the request",
                fmt_bytes(total),
                fmt_bytes(b),
                if cpus.is_none() { " (Slurm's default)" } else { "" },
            ));
            Some(total)
        }
        Some((_, b)) => {
            let g = gpus.ok_or_else(|| {
                Error::bad(format!(
                    "{}: #SBATCH --mem-per-gpu without a GPU count (--gres=gpu:N or --gpus-per-node=N)",
                    shown(source)
                ))
            })?;
            let total = b.saturating_mul(u64::from(g));
            notes.push(format!(
                "host budget {} per node = --mem-per-gpu={} × {g} GPU(s) per node",
                fmt_bytes(total),
                fmt_bytes(b)
            ));
            Some(total)
        }
    };
    let request = Request {
        host: host.map(Bytes),
        cpus_per_task: cpus,
        ranks_per_node: ranks,
    };
    Ok((request, notes))
}

/// `gpu:a100:2` → 2, `gpu` → 1, `shard:4` → none (not a GPU).
fn gres_gpu_count(entry: &str) -> Option<u32> {
    let entry = entry.trim();
    (entry == "gpu" || entry.starts_with("gpu:")).then(|| trailing_count(entry))
}

/// The count at the end of `[type:]N` (`h100:4` → 4, `a100` → 1).
fn trailing_count(value: &str) -> u32 {
    value
        .rsplit(':')
        .next()
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(lines: &[(&str, &str)]) -> Result<(Request, Vec<String>)> {
        let d: Vec<(String, String)> = lines
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        read(&d, "job.sbatch")
    }

    #[test]
    fn mem_per_cpu_times_cpus_and_tasks() {
        let (r, notes) = req(&[
            ("mem-per-cpu", "4G"),
            ("cpus-per-task", "8"),
            ("ntasks-per-node", "2"),
        ])
        .unwrap();
        assert_eq!(r.host, Some(Bytes(64 << 30)));
        assert_eq!(r.ranks_per_node, Some(2));
        assert!(notes[0].contains("--mem-per-cpu"), "{notes:?}");
    }

    #[test]
    fn mem_per_gpu_times_the_gpus_on_the_node() {
        let (r, _) = req(&[("gres", "gpu:a100:4"), ("mem-per-gpu", "60GB")]).unwrap();
        assert_eq!(r.host, Some(Bytes(240 << 30)));
        let (r, _) = req(&[("mem-per-gpu", "32G"), ("gpus-per-node", "h100:2")]).unwrap();
        assert_eq!(r.host, Some(Bytes(64 << 30)));
        let err = req(&[("mem-per-gpu", "32G")]).unwrap_err().to_string();
        assert!(err.contains("GPU count"), "{err}");
    }

    #[test]
    fn two_memory_options_stop_as_sbatch_does() {
        let err = req(&[("mem", "100G"), ("mem-per-cpu", "4G")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("mutually exclusive"), "{err}");
        // The same option twice: the last wins.
        let (r, _) = req(&[("mem", "100G"), ("mem", "200G")]).unwrap();
        assert_eq!(r.host, Some(Bytes(200 << 30)));
    }

    #[test]
    fn counts_that_are_not_counts_are_refused() {
        for (k, v) in [
            ("ntasks-per-node", "two"),
            ("cpus-per-task", "0"),
            ("c", "-4"),
        ] {
            let err = req(&[(k, v)]).unwrap_err().to_string();
            assert!(err.contains("whole number"), "{k}={v}: {err}");
        }
    }

    #[test]
    fn ntasks_is_per_node_only_on_one_node() {
        let (r, _) = req(&[("ntasks", "4"), ("nodes", "1")]).unwrap();
        assert_eq!(r.ranks_per_node, Some(4));
        let (r, _) = req(&[("ntasks", "5"), ("nodes", "2")]).unwrap();
        assert_eq!(
            r.ranks_per_node,
            Some(3),
            "the fullest of two nodes holds 3 of 5"
        );
        let (r, notes) = req(&[("ntasks", "4")]).unwrap();
        assert_eq!(r.ranks_per_node, None);
        assert!(notes[0].contains("spread"), "{notes:?}");
    }
}
