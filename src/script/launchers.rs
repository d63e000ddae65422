//! The launchers of a launch line, skipped to the Python entry point:
//! `srun`, `mpirun`/`mpiexec`, `torchrun`, `python -m torch.distributed.run`
//! and `.launch`, `accelerate launch`, `env`, `time`, `exec`, `numactl`,
//! `nohup`, `nice`, `stdbuf`, `taskset`, `VAR=value` prefixes, container
//! launchers (containers.rs: the script read through their binds),
//! their options (with or without a value), and the ranks per node they
//! start (`--nproc_per_node` (`gpu`/`auto`: the node's GPUs),
//! `--ntasks-per-node`, `-npernode`, `--num_processes`; `srun` alone: the
//! directives' `--ntasks-per-node`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::containers::{on_host, skip_container};
use super::launch::Launch;
use super::py::{Found, Value};

/// Launcher options that take a value as the next word (the others are flags).
const VALUED: &[&str] = &[
    "-n",
    "-N",
    "-c",
    "-G",
    "-p",
    "-t",
    "-J",
    "-o",
    "-e",
    "-w",
    "-x",
    "-np",
    "-H",
    "-npernode",
    "--ntasks",
    "--nodes",
    "--cpus-per-task",
    "--gpus",
    "--gres",
    "--mem",
    "--partition",
    "--time",
    "--job-name",
    "--output",
    "--error",
    "--export",
    "--ntasks-per-node",
    "--gpus-per-task",
    "--gpus-per-node",
    "--cpu-bind",
    "--mpi",
    "--host",
    "--hostfile",
    "--map-by",
    "--bind-to",
    "--npernode",
    "--nproc_per_node",
    "--nproc-per-node",
    "--nnodes",
    "--node_rank",
    "--node-rank",
    "--master_addr",
    "--master-addr",
    "--master_port",
    "--master-port",
    "--rdzv_backend",
    "--rdzv-backend",
    "--rdzv_endpoint",
    "--rdzv-endpoint",
    "--rdzv_id",
    "--rdzv-id",
    "--rdzv_conf",
    "--max_restarts",
    "--max-restarts",
    "--num_processes",
    "--num_machines",
    "--machine_rank",
    "--main_process_ip",
    "--main_process_port",
    "--mixed_precision",
    "--config_file",
    "--dynamo_backend",
    "--gpu_ids",
    "--log_dir",
    "--log-dir",
    "--redirects",
    "--tee",
    "--local_addr",
    "--monitor_interval",
    "--start_method",
    "--role",
    "-x",
];

/// The launch of `words` (one line, split and substituted): through
/// its launchers to the Python entry point; None when it is not one.
pub(super) fn launch_line(
    words: &[String],
    at: &str,
    cwd: &Path,
    env: &HashMap<String, Found>,
) -> Option<Launch> {
    let mut ranks: Option<Found> = None;
    let mut binds = Vec::new();
    let mut i = 0;
    let rank_of = |v: &str| -> Option<Found> {
        let n = match v {
            "gpu" | "auto" => env.get("SLURM_GPUS_ON_NODE")?.value.as_int()?,
            v => v.parse().ok()?,
        };
        Some(Found::at(Value::Int(n), at))
    };
    while i < words.len() {
        let w = words[i].as_str();
        let base = w.rsplit('/').next().unwrap_or(w);
        if base.starts_with("python") {
            let mut j = i + 1;
            while j < words.len() && words[j].starts_with('-') && words[j] != "-m" {
                j += 1;
            }
            let (script, argv_start) = if words.get(j).map(String::as_str) == Some("-m") {
                let module = words.get(j + 1)?;
                if module == "torch.distributed.run" || module == "torch.distributed.launch" {
                    i = j + 2;
                    skip_options(words, &mut i, &mut ranks, &rank_of);
                    continue;
                }
                (module_path(cwd, module), j + 2)
            } else {
                (cwd.join(on_host(words.get(j)?, &binds)), j + 1)
            };
            return Some(Launch {
                script,
                argv: words[argv_start.min(words.len())..].to_vec(),
                at: at.to_string(),
                ranks,
                directives: Vec::new(),
                env: HashMap::new(),
                cwd: cwd.to_path_buf(),
                option_at: HashMap::new(),
            });
        }
        if skip_container(words, &mut i, &mut binds) {
            continue;
        }
        match base {
            "srun" | "mpirun" | "mpiexec" | "torchrun" | "env" | "time" | "exec" | "numactl"
            | "nohup" | "nice" | "stdbuf" | "taskset" | "command" => {
                i += 1;
                skip_options(words, &mut i, &mut ranks, &rank_of);
                // srun starts the job's tasks: --ntasks-per-node of the directives.
                if base == "srun" && ranks.is_none() {
                    ranks = env.get("SLURM_NTASKS_PER_NODE").cloned();
                }
            }
            "accelerate" if words.get(i + 1).map(String::as_str) == Some("launch") => {
                i += 2;
                skip_options(words, &mut i, &mut ranks, &rank_of);
            }
            _ if base.ends_with(".py") => {
                // torchrun train.py / srun ./train.py: the script is the entry point.
                return Some(Launch {
                    script: cwd.join(on_host(w, &binds)),
                    argv: words[i + 1..].to_vec(),
                    at: at.to_string(),
                    ranks,
                    directives: Vec::new(),
                    env: HashMap::new(),
                    cwd: cwd.to_path_buf(),
                    option_at: HashMap::new(),
                });
            }
            _ if w.contains('=') && i + 1 < words.len() => i += 1,
            _ => return None,
        }
    }
    None
}

/// Skips a launcher's options, noting how many ranks per node it starts.
fn skip_options(
    words: &[String],
    i: &mut usize,
    ranks: &mut Option<Found>,
    rank_of: &dyn Fn(&str) -> Option<Found>,
) {
    while *i < words.len() && (words[*i].starts_with('-') || words[*i].contains('=')) {
        let w = words[*i].clone();
        *i += 1;
        let (opt, inline) = match w.split_once('=') {
            Some((o, v)) => (o.to_string(), Some(v.to_string())),
            None => (w.clone(), None),
        };
        if !opt.starts_with('-') {
            continue; // env's NAME=value
        }
        let value = match inline {
            Some(v) => Some(v),
            None if VALUED.contains(&opt.as_str()) && *i < words.len() => {
                *i += 1;
                Some(words[*i - 1].clone())
            }
            None => None,
        };
        let per_node = matches!(
            opt.as_str(),
            "--nproc_per_node"
                | "--nproc-per-node"
                | "--ntasks-per-node"
                | "-npernode"
                | "--npernode"
                | "--num_processes"
        );
        if per_node && let Some(r) = value.as_deref().and_then(rank_of) {
            *ranks = Some(r);
        }
    }
}

/// `-m pkg.mod` → `pkg/mod.py`, or `pkg/mod/__main__.py` when that is what exists.
fn module_path(cwd: &Path, module: &str) -> PathBuf {
    let rel = module.replace('.', "/");
    let file = cwd.join(format!("{rel}.py"));
    let main = cwd.join(&rel).join("__main__.py");
    if !file.exists() && main.exists() {
        main
    } else {
        file
    }
}
