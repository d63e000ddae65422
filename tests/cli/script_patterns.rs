//! `plan` with no spec on fixtures written in the patterns the public corpus
//! showed (tests/fixtures/scripts/patterns/*, benches/script_corpus/): a
//! launch file without a shebang, a PyG dataset with no OGB name, a graph
//! read from `.npz` headers and from a real `torch.save`d file, launch
//! files calling launch files, a conv class passed to a model builder,
//! dataclass and jsonargparse options, `min(os.cpu_count(), 8)`.

use serde_json::{Value, json};

use crate::util::{fixture, headroom, json_of};

/// `plan JOB --assume-defaults --format json [-- ARGS]`, run from the
/// patterns folder so the paths are the ones a user would type.
fn plan(job: &str, script_args: &[&str]) -> Value {
    let mut cmd = headroom();
    cmd.current_dir(fixture("scripts/patterns")).args([
        "plan",
        job,
        "--assume-defaults",
        "--format",
        "json",
    ]);
    if !script_args.is_empty() {
        cmd.arg("--").args(script_args);
    }
    json_of(&mut cmd)
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

/// The CPUs `os.cpu_count()` reports here (online ones), from getconf.
fn online_cpus() -> Option<i64> {
    let out = std::process::Command::new("getconf")
        .arg("_NPROCESSORS_ONLN")
        .output()
        .ok()?;
    String::from_utf8(out.stdout).ok()?.trim().parse().ok()
}

#[test]
fn a_pyg_dataset_with_no_ogb_name_through_a_launch_file_without_shebang() {
    let r = plan("flickr_mlp/run.sh", &[]);
    assert_eq!(r["launch"], "run.sh:1");
    assert_eq!(r["job"]["dataset"], "flickr");
    assert_eq!(inferred(&r, "dataset").1, "train.py:32");
    // The trained model is the MLP; SAGEConv is imported and never used.
    assert_eq!(r["job"]["model"]["conv"], "mlp");
    assert_eq!(r["job"]["model"]["layers"], 3);
    assert_eq!(r["job"]["model"]["hidden"], 512);
    // --batch_size on the launch line over the default under __main__.
    assert_eq!(r["job"]["loader"]["batch_size"], 2048);
    assert_eq!(inferred(&r, "loader.batch_size").1, "run.sh:1");
    assert_eq!(r["job"]["epochs"], 30);
    match online_cpus() {
        Some(n) => {
            let (workers, from) = inferred(&r, "loader.num_workers");
            assert_eq!(
                workers,
                json!(n.min(8)),
                "min(os.cpu_count(), 8) with {n} CPUs"
            );
            assert!(from.contains("os.cpu_count() on this machine"), "{from}");
        }
        None => eprintln!("skipped the workers check: no getconf here"),
    }
}

#[test]
fn a_graph_read_from_npz_headers_names_the_file() {
    let r = plan("on_disk/train.py", &[]);
    let d = &r["job"]["dataset"];
    assert_eq!(d["nodes"], 2_000_000);
    assert_eq!(d["edges"], 30_000_000);
    assert_eq!(d["features"], 64);
    assert_eq!(d["feature_dtype"], "float16");
    let from = inferred(&r, "dataset").1;
    assert!(
        from.starts_with("train.py:9") && from.ends_with("data/graph.npz"),
        "{from}"
    );
    // 2M nodes of 64 float16 features: 256 MB of features in the plan.
    let load = &r["plan"]["components"][0]["host"];
    let features = load
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "features")
        .unwrap();
    assert_eq!(features["bytes"], 2_000_000u64 * 64 * 2);
}

#[test]
fn a_graph_torch_saved_by_pyg_is_read_from_its_pickle() {
    // data/graph.pt was written by torch.save of a real PyG Data (make_graph.py).
    let r = plan("torch_file/train.py", &[]);
    let d = &r["job"]["dataset"];
    assert_eq!(
        (d["nodes"].clone(), d["edges"].clone()),
        (json!(300), json!(1200))
    );
    assert_eq!(d["features"], 24);
    assert_eq!(d["feature_dtype"], "float32");
    assert_eq!(r["job"]["model"]["conv"], "gin");
}

#[test]
fn a_launch_file_calling_another_plans_the_larger_of_its_runs() {
    let r = plan("launch_chain/x_products.sh", &[]);
    // x_products.sh:4 calls scripts/train.sh with its arguments ("$@"),
    // which cds into src/ and runs main.py twice (20 epochs, then 5).
    assert_eq!(r["launch"], "train.sh:5 (called at x_products.sh:4)");
    assert_eq!(r["job"]["dataset"], "ogbn-products");
    assert_eq!(r["job"]["epochs"], 20);
    assert_eq!(r["job"]["model"]["hidden"], 256);
    // build_model's "sage" branch passes SAGEConv to GNN, which builds
    // `conv(...)` in a loop over --layers (3).
    assert_eq!(r["job"]["model"]["conv"], "sage");
    assert_eq!(r["job"]["model"]["layers"], 3);
    assert_eq!(r["job"]["loader"]["fanout"], json!([10, 10, 10]));
    assert_eq!(r["job"]["loader"]["num_workers"], 6);
    let warnings = r["plan"]["warnings"].to_string();
    assert!(warnings.contains("runs Python 2 times"), "{warnings}");
    assert!(
        warnings.contains("train.sh:6 (called at x_products.sh:4)"),
        "{warnings}"
    );
}

#[test]
fn dataclass_fields_and_function_signatures_are_options() {
    let r = plan("dataclass_cli/train.py", &[]);
    let loader = &r["job"]["loader"];
    assert_eq!(loader["batch_size"], 1024);
    assert_eq!(loader["fanout"], json!([25, 10]));
    assert_eq!(loader["num_workers"], 4);
    assert_eq!(inferred(&r, "loader.fanout").1, "train.py:18");
    assert_eq!(r["job"]["model"]["conv"], "gatv2");
    assert_eq!(r["job"]["model"]["heads"], 8);
    // tyro's --batch-size and jsonargparse's --hidden from the command line.
    let r = plan(
        "dataclass_cli/train.py",
        &["--batch-size", "512", "--hidden", "32"],
    );
    assert_eq!(r["job"]["loader"]["batch_size"], 512);
    assert_eq!(r["job"]["model"]["hidden"], 32);
}

#[test]
fn a_legacy_neighbor_sampler_with_layerwise_inference_kept_in_the_model() {
    let r = plan("legacy_sampler/train.py", &[]);
    assert_eq!(
        inferred(&r, "loader.kind"),
        (json!("neighbor_sampler"), "train.py:28".into())
    );
    assert_eq!(r["job"]["loader"]["fanout"], json!([25, 10]));
    assert_eq!(r["job"]["loader"]["batch_size"], 1024);
    // `self.test_loader` by name, every node by its arguments: layer-wise.
    let (eval, from) = inferred(&r, "loader.eval_loaders");
    assert_eq!(eval, "layerwise");
    assert!(from.starts_with("train.py:17"), "{from}");
    assert_eq!(r["job"]["loader"]["eval_batch_size"], 2048);
    assert_eq!(r["job"]["dataset"], "reddit");
}
