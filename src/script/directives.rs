//! The `#SBATCH` directives of a launch file in a job's ledger, the same for
//! a job read through its training script and for one read by the launch
//! file's own words: memory, CPUs and ranks as Slurm reads them
//! (spec/slurm_request.rs: Slurm's units, `--mem-per-cpu`/`--mem-per-gpu`
//! products, `--mem=0` left for `--node-mem`), the GPU by name (gres.rs),
//! each with the line it came from. A GPU type no profile fits is kept for
//! `settle` to refuse unless `--gpu` is given.

use super::gres::{GpuName, parse_request, profile_for};
use super::infer::Ledger;
use super::py::Found;
use crate::error::Result;

/// Applies `directives` ((key, value, `file:line`)) and a launcher's own
/// rank count to `l`; an unknown GPU type goes to `unknown`.
pub fn apply(
    l: &mut Ledger,
    unknown: &mut Option<String>,
    directives: &[(String, String, String)],
    launcher_ranks: Option<&Found>,
    source: &str,
) -> Result<()> {
    let pairs: Vec<(String, String)> = directives
        .iter()
        .map(|(k, v, _)| (k.clone(), v.clone()))
        .collect();
    let (request, notes) = crate::spec::slurm_request::read(&pairs, source)?;
    l.warnings.extend(notes);
    let at_of = |keys: &[&str]| {
        directives
            .iter()
            .rev()
            .find(|(k, _, _)| keys.contains(&k.as_str()))
            .map(|(k, v, at)| (k.clone(), v.clone(), at.clone()))
    };
    if let Some(host) = request.host {
        l.spec.budget.host = Some(host);
        if let Some((k, v, at)) = at_of(&["mem", "mem-per-cpu", "mem-per-gpu"]) {
            // --mem as written; a per-CPU or per-GPU request as its product.
            let shown = if k == "mem" {
                v
            } else {
                crate::units::fmt_bytes(host.0)
            };
            l.read("budget.host", shown.into(), at);
        }
    }
    if let Some(c) = request.cpus_per_task {
        l.spec.cpus = Some(c);
        if let Some((_, _, at)) = at_of(&["c", "cpus-per-task"]) {
            l.read("cpus", c.into(), at);
        }
    }
    // A launcher's own count (torchrun --nproc_per_node) decides the ranks.
    if let Some(n) = request.ranks_per_node.filter(|_| launcher_ranks.is_none()) {
        l.spec.ranks_per_node = n;
        let places: Vec<String> = ["ntasks-per-node", "ntasks", "n", "N", "nodes"]
            .iter()
            .filter_map(|k| at_of(&[k]).map(|(_, _, at)| at))
            .collect();
        if !places.is_empty() {
            l.read("ranks_per_node", n.into(), places.join(", "));
        }
    }
    for (key, value, at) in directives {
        gpu(l, unknown, key, value, at);
    }
    if let Some(f) = launcher_ranks
        && let Some(n) = f.value.as_int().and_then(|n| u32::try_from(n).ok())
    {
        l.spec.ranks_per_node = n;
        l.read("ranks_per_node", n.into(), f.origin());
    }
    Ok(())
}

fn gpu(l: &mut Ledger, unknown: &mut Option<String>, key: &str, value: &str, at: &str) {
    if !matches!(
        key,
        "gres" | "gpus" | "G" | "gpus-per-node" | "gpus-per-task"
    ) {
        return;
    }
    let Some(req) = parse_request(value, key == "gres") else {
        return;
    };
    let Some(written) = req.written else {
        l.assume(
            "budget.gpu",
            serde_json::Value::Null,
            format!("{at} asks for GPUs without naming a type: give --gpu to check GPU memory"),
        );
        return;
    };
    match profile_for(&written) {
        GpuName::Exact(p) => {
            l.read(
                "budget.gpu",
                p.clone().into(),
                format!("{at} (--{key}={value})"),
            );
            l.spec.budget.gpu = Some(p);
        }
        GpuName::Assumed(p, why) => {
            l.assume("budget.gpu", p.clone().into(), format!("{at}: {why}"));
            l.spec.budget.gpu = Some(p);
        }
        GpuName::Unknown => {
            *unknown = Some(format!(
                "{at} asks for GPU type '{written}' (--{key}={value})"
            ))
        }
    }
}
