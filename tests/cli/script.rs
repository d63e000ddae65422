//! `plan`/`check` on sbatch scripts and the training scripts they launch
//! (tests/fixtures/scripts/*: pairs written in the styles of PyG's and OGB's
//! examples): the loaders, model and budget read, each with the line it came
//! from, what was assumed, and the plan of exactly that job.

use serde_json::{Value, json};

use crate::util::{fixture, headroom, json_of};

fn check_json(args: &[&str]) -> Value {
    json_of(
        headroom()
            .arg("check")
            .args(args)
            .args(["--format", "json"]),
    )
}

fn script(rel: &str) -> String {
    fixture(&format!("scripts/{rel}")).display().to_string()
}

/// The `inferred` entry of `field`: (value, from).
fn inferred(r: &Value, field: &str) -> (Value, String) {
    let e = r["inferred"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["field"] == field)
        .unwrap_or_else(|| panic!("{field} not inferred: {}", r["inferred"]));
    (e["value"].clone(), e["from"].as_str().unwrap().to_string())
}

fn assumed<'a>(r: &'a Value, field: &str) -> Option<&'a Value> {
    r["assumed"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["field"] == field)
}

#[test]
fn pyg_products_example_is_read_from_its_sbatch_script() {
    let r = check_json(&[&script("pyg_products/run.sbatch")]);
    assert_eq!(r["launch"], "run.sbatch:11");
    let loaders = r["loaders"].as_array().unwrap();
    assert_eq!(loaders.len(), 2);
    assert_eq!(loaders[0]["at"], "ogbn_products_sage.py:21");
    assert_eq!(loaders[0]["split"], "train");
    assert_eq!(loaders[0]["args"]["num_neighbors"], json!([15, 10, 5]));
    assert_eq!(loaders[1]["at"], "ogbn_products_sage.py:25");
    assert_eq!(loaders[1]["split"], "all");
    assert_eq!(loaders[1]["args"]["num_neighbors"], json!([-1]));
    assert_eq!(loaders[1]["placement"], "resident");
    let job = &r["job"];
    assert_eq!(job["dataset"], "ogbn-products");
    assert_eq!(job["loader"]["batch_size"], 1024);
    assert_eq!(job["loader"]["fanout"], json!([15, 10, 5]));
    assert_eq!(job["loader"]["num_workers"], 12);
    assert_eq!(job["loader"]["persistent_workers"], true);
    assert_eq!(job["loader"]["eval_batch_size"], 4096);
    assert_eq!(job["model"]["conv"], "sage");
    assert_eq!(job["model"]["layers"], 3);
    assert_eq!(job["model"]["hidden"], 256);
    assert_eq!(job["cpus"], 12);
    assert_eq!(inferred(&r, "dataset").1, "ogbn_products_sage.py:15");
    // num_layers=3 at the constructor, then the convs it builds.
    let (layers, from) = inferred(&r, "model.layers");
    assert_eq!(layers, json!(3));
    assert!(from.starts_with("ogbn_products_sage.py:64, "), "{from}");
    assert_eq!(
        inferred(&r, "epochs"),
        (json!(20), "ogbn_products_sage.py:101".into())
    );
    assert_eq!(
        inferred(&r, "budget.host"),
        (json!("64G"), "run.sbatch:3".into())
    );
    // `--gres=gpu:a100:1` does not say 40 or 80 GB: the smaller, stated.
    let gpu = assumed(&r, "budget.gpu").unwrap();
    assert_eq!(gpu["value"], "a100-40gb");
    assert!(gpu["why"].as_str().unwrap().contains("a100-80gb"));
    let plan = &r["plan"];
    assert_eq!(plan["limits"]["host"], 64u64 << 30);
    assert_eq!(plan["settings"]["fanout"], json!([15, 10, 5]));
    let warnings = plan["warnings"].to_string();
    assert!(
        warnings.contains("ogbn_products_sage.py:18 moves the whole graph to the GPU"),
        "{warnings}"
    );
    // The all-node, all-neighbour loader is layer-wise inference: the
    // evaluation, read at its own line (not a training-fanout warning).
    assert!(!warnings.contains("samples [-1]"), "{warnings}");
    assert_eq!(
        inferred(&r, "loader.eval_loaders"),
        (json!("layerwise"), "ogbn_products_sage.py:25".into())
    );
    assert_eq!(plan["settings"]["eval_loaders"], "layerwise");
    // Planned on the CPU, `data.to(device)` moves nothing: no such warning.
    let cpu = check_json(&[&script("pyg_products/run.sbatch"), "--device", "cpu"]);
    assert_eq!(cpu["job"]["device"], "cpu");
    let warnings = cpu["plan"]["warnings"].to_string();
    assert!(!warnings.contains("moves the whole graph"), "{warnings}");
}

#[test]
fn the_job_read_is_a_job_spec_that_plans_the_same() {
    let r = check_json(&[&script("pyg_products/run.sbatch")]);
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("job.yaml");
    // JSON is YAML: the "job" object saved as it is must be a valid job spec.
    std::fs::write(&spec, r["job"].to_string()).unwrap();
    let again = json_of(headroom().args(["plan", spec.to_str().unwrap(), "--format", "json"]));
    assert_eq!(again["peak_host_bytes"], r["plan"]["peak_host_bytes"]);
    assert_eq!(again["peak_gpu_bytes"], r["plan"]["peak_gpu_bytes"]);
}

#[test]
fn torchrun_ddp_script_binds_arguments_through_a_function_and_a_kwargs_dict() {
    // Four ranks, each with three resident loaders' CSC copies of papers100M,
    // do not fit 480G: check exits 1 and still says what it read.
    let out = headroom()
        .args([
            "check",
            &script("papers100m_ddp/train.sbatch"),
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["plan"]["predicted_exit_code"], 137);
    let job = &r["job"];
    // Written ogbn-papers100M; named as the profile that was planned.
    assert_eq!(job["dataset"], "ogbn-papers100m");
    // ${FANOUT:-10} on the launch line (its option on line 14 of the
    // command that starts at 12), times --num_layers' default 2 (line 66).
    assert_eq!(
        inferred(&r, "loader.fanout"),
        (
            json!([10, 10]),
            "train.sbatch:14, train.sbatch:12, papers100m_gcn.py:66".into()
        )
    );
    assert_eq!(
        inferred(&r, "ranks_per_node"),
        (json!(4), "train.sbatch:12".into())
    );
    assert_eq!(
        inferred(&r, "epochs").0,
        json!(3),
        "epochs is run_train's parameter"
    );
    // --use_gat_conv is given: the GAT branch, with --n_gat_conv_heads' default.
    assert_eq!(job["model"]["conv"], "gat");
    assert_eq!(
        inferred(&r, "model.heads"),
        (json!(4), "papers100m_gcn.py:80".into())
    );
    assert_eq!(inferred(&r, "budget.gpu").0, "h100-80gb");
    let loaders: Vec<&str> = r["loaders"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["at"].as_str().unwrap())
        .collect();
    // Built in run_train, which mp.spawn starts at line 106: each says so.
    assert_eq!(
        loaders,
        [
            "papers100m_gcn.py:33 (called at papers100m_gcn.py:106)",
            "papers100m_gcn.py:36 (called at papers100m_gcn.py:106)",
            "papers100m_gcn.py:38 (called at papers100m_gcn.py:106)"
        ]
    );
    assert_eq!(job["loader"]["eval_loaders"], "resident");
    assert_eq!(r["plan"]["ranks_per_node"], 4);
}

#[test]
fn dash_flags_list_comprehension_and_evaluation_loaders_built_in_test() {
    let r = check_json(&[&script("ogb_dashes/job.sh")]);
    let job = &r["job"];
    assert_eq!(
        inferred(&r, "loader.batch_size"),
        (json!(2048), "job.sh:9".into())
    );
    assert_eq!(job["loader"]["fanout"], json!([20, 10, 5]));
    assert_eq!(
        inferred(&r, "loader.num_workers"),
        (json!(6), "job.sh:10, job.sh:9".into())
    );
    assert_eq!(job["loader"]["pin_memory"], true);
    assert_eq!(
        job["loader"]["persistent_workers"], true,
        "args.num_workers > 0"
    );
    assert_eq!(
        inferred(&r, "load.to_undirected"),
        (json!(true), "gnn_neighbor.py:100".into())
    );
    assert_eq!(
        inferred(&r, "loader.eval_loaders"),
        (json!("on_demand"), "gnn_neighbor.py:59".into())
    );
    assert_eq!(job["loader"]["gc_collect"], true);
    assert_eq!(job["loader"]["eval_batch_size"], 4096);
    // The script's own GCN class, not PyG's: (in, hidden, out, num_layers, dropout).
    assert_eq!(job["model"]["conv"], "gcn");
    assert_eq!(job["model"]["layers"], 3);
    assert_eq!(job["model"]["dropout"], 0.5);
    assert_eq!(job["dataset"], "ogbn-arxiv");
    assert_eq!(r["plan"]["limits"]["host"], 32000u64 << 20);
    assert_eq!(job["budget"]["gpu"], "v100-32gb");
}

#[test]
fn config_file_values_are_traced_to_their_yaml_lines() {
    let r = check_json(&[&script("config_driven/submit.sbatch")]);
    assert!(r["script"].as_str().unwrap().ends_with("trainer/main.py"));
    assert_eq!(
        inferred(&r, "loader.batch_size"),
        (json!(512), "reddit.yaml:6, main.py:34".into())
    );
    assert_eq!(
        inferred(&r, "loader.fanout"),
        (json!([25, 10]), "reddit.yaml:10, main.py:38".into())
    );
    assert_eq!(inferred(&r, "epochs").0, json!(30));
    assert_eq!(inferred(&r, "model.layers").0, json!(2), "len(fanout)");
    assert_eq!(inferred(&r, "model.optimizer").0, "adamw");
    assert_eq!(r["job"]["dataset"], "reddit");
    // A MIG slice is planned below its name's size, and says so.
    assert_eq!(r["job"]["budget"]["gpu"], "38000MB");
    assert!(
        assumed(&r, "budget.gpu").unwrap()["why"]
            .as_str()
            .unwrap()
            .contains("MIG")
    );
    assert!(
        r["plan"]["warnings"]
            .to_string()
            .contains("memory-maps features")
    );
}

fn refused(args: &[&str]) -> String {
    let out = headroom().args(args).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    err
}

#[test]
fn what_the_scripts_do_not_say_is_refused_by_name_not_defaulted() {
    let s = script("opaque/run.sbatch");
    let err = refused(&["check", &s]);
    assert!(err.contains("'mi250x'") && err.contains("--gpu"), "{err}");
    let err = refused(&["check", &s, "--gpu", "64GB"]);
    assert!(
        err.contains("train_custom.py:29 loads `torch.load(args.graph)`"),
        "{err}"
    );
    assert!(err.contains("--dataset"), "{err}");
    // get_num_workers(1) returns len(os.sched_getaffinity(0)) / 2: the 16
    // CPUs of the task (#SBATCH --cpus-per-task) halved.
    let r = check_json(&[&s, "--gpu", "64GB", "--dataset", "ogbn-products"]);
    let (workers, from) = inferred(&r, "loader.num_workers");
    assert_eq!(workers, json!(8));
    assert!(
        from.contains("run.sbatch:3") && from.contains("train_custom.py:"),
        "{from}"
    );
    assert_eq!(
        inferred(&r, "loader.batch_size"),
        (json!(4096), "run.sbatch:5".into())
    );
    // Given on headroom's command line, it is neither missing nor assumed.
    let r = check_json(&[
        &s,
        "--gpu",
        "64GB",
        "--dataset",
        "ogbn-products",
        "--workers",
        "3",
    ]);
    assert_eq!(r["plan"]["settings"]["num_workers"], 3);
    assert!(assumed(&r, "loader.num_workers").is_none());
}

#[test]
fn a_training_script_plans_with_the_arguments_after_the_double_dash() {
    let py = script("papers100m_ddp/papers100m_gcn.py");
    let r = json_of(headroom().args([
        "plan",
        &py,
        "--format",
        "json",
        "--",
        "--batch_size",
        "2048",
        "--num_workers",
        "8",
        "--mem",
        "256G",
    ]));
    assert_eq!(
        inferred(&r, "loader.batch_size"),
        (json!(2048), "the command line".into())
    );
    assert_eq!(r["job"]["loader"]["num_workers"], 8);
    assert_eq!(r["plan"]["limits"]["host"], 256u64 << 30);
    // Without --use_gat_conv the else branch builds GCN; fanout is --fan_out's default 30 per layer.
    assert_eq!(r["job"]["model"]["conv"], "gcn");
    assert_eq!(r["job"]["loader"]["fanout"], json!([30, 30]));
    assert!(r["launch"].is_null());
}

#[test]
fn an_sbatch_script_whose_python_file_is_absent_says_so() {
    let r = json_of(headroom().args([
        "plan",
        fixture("plan/train_mismatch.sbatch").to_str().unwrap(),
        "--format",
        "json",
    ]));
    let warnings = r["plan"]["warnings"].to_string();
    assert!(warnings.contains("not there to read"), "{warnings}");
}

#[test]
fn hostile_python_files_are_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, bytes: &[u8]| {
        let p = dir.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        p.display().to_string()
    };
    let binary = write("bin.py", b"\x00\xff\xfe import torch \x80\x81");
    assert!(refused(&["plan", &binary, "--mem", "8G"]).contains("not UTF-8"));
    // Cut in the middle of the loader call: nothing is guessed from the rest.
    let cut = write(
        "cut.py",
        b"dataset = Reddit('/d')\nloader = NeighborLoader(data, num_neighbors=[10, 5], batch_size=",
    );
    let err = refused(&["plan", &cut, "--mem", "8G"]);
    assert!(err.contains("loader.batch_size"), "{err}");
    // 100,000 nested parentheses: the evaluator's depth limit, not a stack overflow.
    let deep = format!(
        "dataset = Reddit('/d')\nloader = NeighborLoader(data, num_neighbors=[10], input_nodes=data.train_mask, batch_size={}1{})\n",
        "(".repeat(100_000),
        ")".repeat(100_000)
    );
    let deep = write("deep.py", deep.as_bytes());
    let err = refused(&["plan", &deep, "--mem", "8G"]);
    assert!(err.contains("batch_size at deep.py:2"), "{err}");
}

#[test]
fn memory_per_cpu_is_read_as_slurm_reads_it_behind_a_launch_line() {
    // The same training script as run.sbatch, its memory asked per CPU:
    // 6G x 12 CPUs x 1 task = 72 GiB, the line it came from, and the
    // product said, as for an sbatch script without a Python file.
    let r = check_json(&[&script("pyg_products/per_cpu.sbatch")]);
    assert_eq!(
        r["job"]["budget"]["host"], "72GiB",
        "{}",
        r["job"]["budget"]
    );
    assert_eq!(
        inferred(&r, "budget.host"),
        (json!("72.0 GiB"), "per_cpu.sbatch:3".into())
    );
    let warnings = r["plan"]["warnings"].to_string();
    assert!(
        warnings.contains("--mem-per-cpu") && warnings.contains("12 CPUs per task"),
        "{warnings}"
    );
}

#[test]
fn pyg_dataset_classes_are_read_as_pyg_spells_them() {
    // Each call alone in a script: the profile it loads, from its line.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("train.py");
    for (call, profile) in [
        ("Entities(root, 'AM')", "entities-am"),
        (
            "Entities(root=root, name='MUTAG', hetero=True)",
            "entities-mutag",
        ),
        ("Entities(root, name='BGS')", "entities-bgs"),
        ("WikiCS(root, is_undirected=True)", "wikics"),
        ("GitHub(root)", "github"),
        ("FacebookPagePage(root)", "facebookpagepage"),
        ("DeezerEurope(root)", "deezer-europe"),
        ("CoraFull(root)", "citationfull-cora"),
    ] {
        let class = call.split('(').next().unwrap();
        std::fs::write(
            &path,
            format!(
                "from torch_geometric.datasets import {class}\nroot = '/data'\ndataset = {call}\n"
            ),
        )
        .unwrap();
        let r = json_of(headroom().args([
            "plan",
            path.to_str().unwrap(),
            "--assume-defaults",
            "--format",
            "json",
        ]));
        assert_eq!(r["job"]["dataset"], profile, "{call}");
        assert_eq!(inferred(&r, "dataset").1, "train.py:3", "{call}");
    }
    // A repository's own `Entities()` given no name is not PyG's.
    std::fs::write(&path, "class Entities:\n    pass\n\nents = Entities()\n").unwrap();
    let err = refused(&["plan", path.to_str().unwrap(), "--assume-defaults"]);
    assert!(err.contains("the scripts do not say dataset"), "{err}");
}
