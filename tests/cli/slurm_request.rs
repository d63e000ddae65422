//! `#SBATCH` memory requests and `--mem` as Slurm reads them (str_to_mbytes
//! in SchedMD/slurm src/common/proc_args.c): GB is GiB, no unit is MiB, 0 is
//! the whole node, --mem-per-cpu multiplies by CPUs and tasks, and a bare
//! number in job YAML is refused.

use crate::util::{fixture, headroom, json_of};

const GIB: u64 = 1 << 30;

fn plan_json(args: &[&str]) -> serde_json::Value {
    json_of(headroom().arg("plan").args(args).args(["--format", "json"]))
}

/// The plan of `plan --format json` on a launch file: a script reading
/// (job, inferred, assumed) with its plan under "plan".
fn script_plan(args: &[&str]) -> serde_json::Value {
    plan_json(args)["plan"].clone()
}

fn refused(args: &[&str]) -> String {
    let out = headroom().args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{args:?}");
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(err.trim().lines().count(), 1, "not one line: {err}");
    err
}

#[test]
fn gb_on_the_command_line_and_in_sbatch_is_gib_as_slurm_reads_it() {
    let r = plan_json(&["ogbn-arxiv", "--mem", "16GB"]);
    assert_eq!(r["limits"]["host"], 16 * GIB);
    let r = script_plan(&[fixture("slurm/mem_gb.sbatch").to_str().unwrap()]);
    assert_eq!(r["limits"]["host"], 16 * GIB);
    let r = plan_json(&["ogbn-arxiv", "--mem", "16000"]);
    assert_eq!(r["limits"]["host"], 16000u64 << 20, "no unit is MiB");
}

#[test]
fn what_sbatch_calls_an_invalid_mem_is_refused() {
    for mem in ["1.5G", "16GiB", "2P"] {
        let err = refused(&["plan", "ogbn-arxiv", "--mem", mem]);
        assert!(err.contains("sbatch accepts"), "{mem}: {err}");
    }
}

#[test]
fn mem_per_cpu_is_multiplied_by_cpus_and_tasks_on_the_node() {
    // 4 GiB × 4 CPUs per task × 2 tasks per node = 32 GiB, 2 ranks.
    let r = script_plan(&[fixture("slurm/mem_per_cpu.sbatch").to_str().unwrap()]);
    assert_eq!(r["limits"]["host"], 32 * GIB);
    assert_eq!(r["ranks_per_node"], 2);
    assert!(
        r["warnings"].to_string().contains("--mem-per-cpu"),
        "{}",
        r["warnings"]
    );
    let r = plan_json(&["ogbn-arxiv", "--mem-per-cpu", "2G", "--cpus", "8"]);
    assert_eq!(r["limits"]["host"], 16 * GIB);
}

#[test]
fn mem_zero_asks_for_the_node_size_and_is_never_planned_against_zero() {
    let script = fixture("slurm/mem_zero.sbatch");
    let err = refused(&["plan", script.to_str().unwrap()]);
    assert!(err.contains("--node-mem"), "{err}");
    let err = refused(&["plan", "ogbn-arxiv", "--mem", "0"]);
    assert!(
        err.contains("whole") || err.contains("all of the node"),
        "{err}"
    );
    let r = script_plan(&[script.to_str().unwrap(), "--node-mem", "515000"]);
    assert_eq!(r["limits"]["host"], 515_000u64 << 20);
}

#[test]
fn a_bare_number_in_job_yaml_is_refused_naming_the_unit() {
    let err = refused(&["plan", fixture("slurm/bare_host.yaml").to_str().unwrap()]);
    assert!(err.contains("no unit") && err.contains("256G"), "{err}");
}

#[test]
fn an_empty_fanout_hop_is_refused() {
    for f in ["15,,10", "15,", ",10"] {
        let err = refused(&["plan", "ogbn-arxiv", "--mem", "8G", "--fanout", f]);
        assert!(err.contains("empty"), "{f}: {err}");
    }
    for (f, needle) in [("0", "fanout 0"), ("-3", "fanout -3")] {
        let err = refused(&["plan", "ogbn-arxiv", "--mem", "8G", "--fanout", f]);
        assert!(err.contains(needle), "{f}: {err}");
    }
}
