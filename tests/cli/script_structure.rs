//! `plan` on fixtures written in the patterns the first script corpus's
//! held-out misses showed (benches/script_corpus/SCORES.md): values that
//! pass through the script's structure, each named by its line.

use serde_json::Value;

use crate::util::{fixture, headroom, json_of};

/// `plan JOB --assume-defaults --format json FLAGS [-- ARGS]` from the patterns folder.
fn plan(job: &str, flags: &[&str], script_args: &[&str]) -> Value {
    let mut cmd = headroom();
    cmd.current_dir(fixture("scripts/patterns"))
        .args(["plan", job, "--assume-defaults", "--format", "json"])
        .args(flags);
    if !script_args.is_empty() {
        cmd.arg("--").args(script_args);
    }
    json_of(&mut cmd)
}

/// The `from` of the `inferred` entry of `field`.
fn from(r: &Value, field: &str) -> String {
    r["inferred"]
        .as_array()
        .and_then(|a| a.iter().find(|e| e["field"] == field))
        .and_then(|e| e["from"].as_str())
        .unwrap_or_else(|| panic!("{field} not inferred: {}", r["inferred"]))
        .to_string()
}

#[test]
fn dict_kwargs_with_an_uncomputable_entry_still_give_the_others() {
    let r = plan(
        "spawn_workers/train.py",
        &["--cpus", "32"],
        &["--n_devices", "2"],
    );
    assert_eq!(r["job"]["loader"]["batch_size"], 512);
    assert_eq!(from(&r, "loader.batch_size"), "train.py:38");
    assert_eq!(r["job"]["loader"]["fanout"], serde_json::json!([20, 10]));
    // len(os.sched_getaffinity(0)) / (2 * world_size) with --cpus 32 and 2
    // ranks; the `if num_work is None:` fallback (os.cpu_count()) does not run.
    assert_eq!(r["job"]["loader"]["num_workers"], 8);
    let w = from(&r, "loader.num_workers");
    assert!(
        w.starts_with("train.py:19") && w.contains("--cpus 32"),
        "{w}"
    );
    // mp.spawn(run, ..., nprocs=world_size): one rank per process.
    assert_eq!(r["job"]["ranks_per_node"], 2);
    assert!(from(&r, "ranks_per_node").contains("train.py:61"));
    // hidden_dims is a hidden width by its name.
    assert_eq!(r["job"]["model"]["hidden"], 128);
}

#[test]
fn without_cpus_the_spawned_ranks_and_workers_stay_unknown() {
    // --n_devices left at -1: torch.cuda.device_count() with no gres is
    // unknown, so nothing says the job spawns more than one rank.
    let r = plan("spawn_workers/train.py", &[], &[]);
    assert_eq!(r["job"]["ranks_per_node"], 1);
    assert!(
        !r["inferred"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["field"] == "ranks_per_node")
    );
}

#[test]
fn a_data_module_named_like_its_dataset_and_a_helper_default() {
    let r = plan("lightning_alias/train.py", &[], &[]);
    // PyGReddit is PyG's Reddit imported under another name; the data
    // module called Reddit is not the dataset.
    assert_eq!(r["job"]["dataset"], "reddit");
    assert_eq!(from(&r, "dataset"), "train.py:18");
    // The helper's default, not the one-batch initialisation loader's 0.
    assert_eq!(r["job"]["loader"]["num_workers"], 6);
    assert_eq!(r["job"]["loader"]["persistent_workers"], true);
    assert_eq!(r["job"]["epochs"], 15);
}

#[test]
fn convs_per_edge_type_of_the_dataset_and_a_halving_fanout() {
    let r = plan("hetero_loops/train.py", &[], &[]);
    // OGB_MAG made undirected with merge=True: 7 edge types, named where
    // the model is given data.edge_types.
    assert_eq!(r["job"]["model"]["relations"], 7);
    assert!(from(&r, "model.relations").starts_with("train.py:38"));
    assert_eq!(r["job"]["loader"]["fanout"], serde_json::json!([64, 32]));
    let f = from(&r, "loader.fanout");
    assert!(
        f.contains("train.py:15") && f.contains("train.py:14"),
        "{f}"
    );
}

#[test]
fn to_hetero_in_a_wrapper_with_metadata_from_a_method() {
    let r = plan("to_hetero_wrapper/train.py", &[], &[]);
    assert_eq!(r["job"]["model"]["relations"], 8);
    assert!(from(&r, "model.relations").contains("train.py:17"));
}

#[test]
fn to_undirected_without_merging_reverses_every_edge_type() {
    let r = plan("hetero_reverse/train.py", &[], &[]);
    assert_eq!(r["job"]["model"]["relations"], 8);
    assert!(from(&r, "model.relations").starts_with("train.py:21"));
}

#[test]
fn a_positional_dataset_an_aliased_conv_and_passes_without_an_epoch_loop() {
    let r = plan("positional_args/train.py", &[], &["ogbn-products"]);
    assert_eq!(r["job"]["dataset"], "ogbn-products");
    assert!(from(&r, "dataset").contains("the command line"));
    // SAGEConv imported as PyGSAGEConv.
    assert_eq!(r["job"]["model"]["conv"], "sage");
    // out_channels feeds the next layer: the hidden width (the head
    // gives the classes).
    assert_eq!(r["job"]["model"]["hidden"], 192);
    // The project's GraphSAGE defaults to 2 layers; the library's
    // GraphSAGE(num_layers=5) elsewhere binds nothing of it.
    assert_eq!(r["job"]["model"]["layers"], 2);
    assert_eq!(
        from(&r, "model.layers").split(", ").next(),
        Some("train.py:25")
    );
    // train() called twice at the top level, no epoch loop.
    assert_eq!(r["job"]["epochs"], 2);
    assert_eq!(from(&r, "epochs"), "train.py:53, train.py:54");
    assert_eq!(r["job"]["loader"]["eval_loaders"], "none");
    assert!(from(&r, "loader.eval_loaders").starts_with("train.py:55"));
}

#[test]
fn a_message_passing_layer_of_the_project_is_stated_as_assumed() {
    let r = plan("own_conv/train.py", &[], &[]);
    let assumed = r["assumed"].as_array().unwrap();
    let conv = assumed
        .iter()
        .find(|a| a["field"] == "model.conv")
        .unwrap_or_else(|| panic!("model.conv not assumed: {assumed:?}"));
    assert!(conv["why"].as_str().unwrap().starts_with("train.py:24"));
    // Two layers of it, not its four Linear layers.
    assert_eq!(r["job"]["model"]["layers"], 2);
    assert_eq!(r["job"]["model"]["hidden"], 128);
}

#[test]
fn settings_read_back_from_a_library_record_by_attribute() {
    let r = plan("namespace_cfg/train.py", &[], &[]);
    assert_eq!(r["job"]["loader"]["batch_size"], 333);
    assert_eq!(r["job"]["loader"]["fanout"], serde_json::json!([7, 3]));
    assert_eq!(r["job"]["loader"]["num_workers"], 2);
    assert_eq!(from(&r, "loader.batch_size"), "train.py:11");
}

#[test]
fn a_config_that_merges_anchored_mappings_is_read_as_pyyaml_reads_it() {
    let r = plan("merged_config/train.py", &[], &[]);
    // run: {<<: [*reddit, *base], batch_size: 1024}: its own key, then the
    // first mapping of the list, then the second.
    assert_eq!(r["job"]["loader"]["batch_size"], 1024);
    assert_eq!(r["job"]["model"]["hidden"], 128);
    assert_eq!(r["job"]["epochs"], 20);
    assert_eq!(r["job"]["loader"]["fanout"], serde_json::json!([10, 5]));
    assert!(from(&r, "loader.batch_size").starts_with("conf.yaml:15"));
    // Each value is traced to the mapping it is merged from.
    assert!(
        from(&r, "model.hidden").starts_with("conf.yaml:11"),
        "{}",
        from(&r, "model.hidden")
    );
    assert!(from(&r, "loader.fanout").starts_with("conf.yaml:7"));
    // The epochs through tqdm(range(...)); the width through the
    // wrapper's out_channels, which its caller gives run['hidden'].
    assert!(
        from(&r, "epochs").contains("train.py:49"),
        "{}",
        from(&r, "epochs")
    );
    assert_eq!(r["job"]["model"]["layers"], 2);
}

#[test]
fn a_config_option_never_read_needs_no_file_and_one_read_does() {
    let r = plan("unused_config/train.py", &[], &[]);
    assert_eq!(r["job"]["loader"]["batch_size"], 2048);
    assert_eq!(r["job"]["dataset"], "reddit");
    // The merged-config script reads args.config: a file that is not there
    // is one line and exit 2.
    let out = headroom()
        .current_dir(fixture("scripts/patterns"))
        .args([
            "plan",
            "merged_config/train.py",
            "--",
            "--config",
            "gone.yaml",
        ])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("'gone.yaml'") && err.contains("is not there to read"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

#[test]
fn a_loader_built_only_under_a_branch_that_never_runs_is_no_loader() {
    let r = plan("dead_branch/train.py", &[], &[]);
    let l = &r["job"]["loader"];
    assert_eq!(l["batch_size"], 512);
    assert_eq!(l["fanout"], serde_json::json!([10, 5]));
    assert_eq!(l["num_workers"], 2);
    assert_eq!(l["persistent_workers"], false);
    assert_eq!(l["eval_loaders"], "none");
    assert_eq!(from(&r, "loader.batch_size"), "train.py:20");
    // The evidence is the branch that keeps the helper from running.
    let eval = from(&r, "loader.eval_loaders");
    assert!(eval.starts_with("train.py:34 "), "{eval}");
}

#[test]
fn convs_a_base_class_builds_through_the_subclass_factory_method() {
    // Before: "the model's layers were not found", SAGE 2 x 256 assumed.
    let r = plan("factory_method/train.py", &[], &[]);
    let m = &r["job"]["model"];
    assert_eq!(m["conv"], "sage");
    assert_eq!(m["layers"], 4);
    assert_eq!(m["hidden"], 96);
    assert_eq!(from(&r, "model.conv"), "backbone.py:32");
    assert!(from(&r, "model.layers").contains("train.py:15"));
    // The other subclass's override is the one that runs for it.
    let r = plan(
        "factory_method/train.py",
        &[],
        &["--model", "gat", "--layers", "3"],
    );
    let m = &r["job"]["model"];
    assert_eq!(
        (m["conv"].as_str(), m["layers"].as_u64()),
        (Some("gat"), Some(3))
    );
    assert_eq!(m["heads"], 4);
}

#[test]
fn no_evaluation_loader_is_named_by_the_training_loader_and_the_epoch_loop() {
    let r = plan("factory_method/train.py", &[], &[]);
    assert_eq!(r["job"]["loader"]["eval_loaders"], "none");
    assert!(
        from(&r, "loader.eval_loaders").starts_with("train.py:20, train.py:30 "),
        "{}",
        from(&r, "loader.eval_loaders")
    );
}

#[test]
fn several_datasets_behind_a_dispatch_the_reader_cannot_decide_are_no_answer() {
    // Before: the first constructor with a profile (yelp) was taken.
    let out = headroom()
        .current_dir(fixture("scripts/patterns"))
        .args(["plan", "dataset_dispatch/train.py"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "several datasets (yelp at data.py:7, flickr at data.py:12, reddit at data.py:17)"
        ),
        "{err}"
    );
    // Told which, it plans.
    let r = plan("dataset_dispatch/train.py", &["--dataset", "reddit"], &[]);
    assert_eq!(r["job"]["dataset"], "reddit");
    assert_eq!(r["job"]["loader"]["batch_size"], 512);
}

#[test]
fn arguments_returned_by_name_and_layers_of_the_projects_own_message_passing() {
    let r = plan("args_returned/train.py", &[], &["--hidden-size", "256"]);
    let job = &r["job"];
    assert_eq!(job["loader"]["batch_size"], 512);
    assert_eq!(job["loader"]["fanout"], serde_json::json!([10, 10, 10]));
    assert_eq!(job["epochs"], 200);
    assert_eq!(from(&r, "loader.batch_size"), "train.py:21");
    // Three MixLayers, not the in-head and classifier Linear layers too.
    assert_eq!(job["model"]["layers"], 3);
    assert_eq!(job["model"]["hidden"], 256);
}

#[test]
fn a_config_returned_beside_a_model_is_read_and_named_at_its_keys() {
    let r = plan("returned_config/train.py", &[], &[]);
    let job = &r["job"];
    assert_eq!(job["loader"]["batch_size"], 1024);
    assert_eq!(job["loader"]["fanout"], serde_json::json!([25, 10]));
    assert_eq!(job["epochs"], 11);
    assert_eq!(job["model"]["hidden"], 128);
    // The key's line, not every line of the dict.
    let b = from(&r, "loader.batch_size");
    assert!(b.starts_with("configs.py:15"), "{b}");
    assert!(!b.contains("configs.py:7"), "{b}");
    assert!(
        from(&r, "epochs").contains("configs.py:14"),
        "{}",
        from(&r, "epochs")
    );
}

#[test]
fn an_attribute_dict_a_kwargs_update_and_the_projects_loader_subclass() {
    let r = plan("dict_params/train.py", &[], &[]);
    let l = &r["job"]["loader"];
    assert_eq!(l["kind"], "neighbor_loader");
    assert_eq!(l["batch_size"], 64);
    // The update of the branch that runs ('SAGE'.lower() == 'sage').
    assert_eq!(l["fanout"], serde_json::json!([5, 5]));
    assert_eq!(from(&r, "loader.fanout"), "train.py:20");
    assert_eq!(l["num_workers"], 4);
    assert_eq!(l["persistent_workers"], true);
    assert_eq!(r["job"]["epochs"], 50);
    assert_eq!(r["job"]["model"]["hidden"], 128);
}

#[test]
fn a_graph_the_script_generates_is_sized_from_its_tensors() {
    // Before: "the scripts do not say dataset", exit 2.
    // 250,000 nodes x 12 out-edges, made two-way by a cat with its flip.
    let r = plan("synthetic_graph/train.py", &[], &[]);
    let d = &r["job"]["dataset"];
    assert_eq!(
        (&d["nodes"], &d["edges"], &d["features"]),
        (
            &Value::from(250_000),
            &Value::from(6_000_000),
            &Value::from(48)
        )
    );
    let at = from(&r, "dataset");
    for line in ["train.py:35", "train.py:15", "train.py:20"] {
        assert!(at.contains(line), "{line} in {at}");
    }
    // Every node, shuffled, is the training loader; the evaluation feeds
    // each full-neighbourhood batch through the whole model: on demand,
    // not layer-wise.
    let l = &r["job"]["loader"];
    assert_eq!(
        (&l["batch_size"], &l["num_workers"]),
        (&Value::from(512), &Value::from(2))
    );
    assert_eq!(l["eval_loaders"], "on_demand");
    assert_eq!(l["eval_batch_size"], 2048);
    // Its loader gives no num_workers: DataLoader's 0, not training's 2.
    assert_eq!(l["eval_num_workers"], 0);
    assert!(from(&r, "loader.eval_num_workers").contains("the library default"));
    // `if epoch % EVAL_EVERY == 0 or epoch == 1:` around the evaluation:
    // 20 epochs build 2 x 4 loaders before the last evaluation, not 2 x 19.
    assert_eq!(l["eval_every"], 4);
    assert_eq!(from(&r, "loader.eval_every"), "train.py:40, train.py:47");
    let gc = r["plan"]["assumptions"]
        .as_array()
        .and_then(|a| {
            a.iter()
                .filter_map(|x| x.as_str())
                .find(|x| x.contains("gc.collect"))
        })
        .unwrap_or_else(|| panic!("{}", r["plan"]["assumptions"]))
        .to_string();
    assert!(
        gc.contains("9 of them by the last evaluation (one every 4 epochs)"),
        "{gc}"
    );
    // Sizes from argparse, a command-line override, `randint(0, N, (2, E))`.
    let r = plan("synthetic_graph/bench.py", &[], &["--features", "64"]);
    let d = &r["job"]["dataset"];
    assert_eq!(d["nodes"], 2_000_000);
    assert_eq!(d["edges"], 40_000_000_u64);
    assert_eq!(d["features"], 64);
    assert!(from(&r, "dataset").contains("the command line"));
}

#[test]
fn the_evaluation_cadence_counts_only_when_every_evaluation_is_gated() {
    // `if (epoch + 1) % 10 == 0:` around both evaluations: every 10 epochs.
    let r = plan("eval_cadence/gated.py", &[], &[]);
    assert_eq!(r["job"]["loader"]["eval_every"], 10);
    assert_eq!(from(&r, "loader.eval_every"), "gated.py:30");
    // A validation every epoch beside a test every ten: every epoch, and
    // nothing read (counting fewer evaluations would under-count loaders).
    let r = plan("eval_cadence/mixed.py", &[], &[]);
    assert_eq!(r["job"]["loader"]["eval_every"], 1);
    assert!(
        !r["inferred"]
            .as_array()
            .is_some_and(|a| a.iter().any(|e| e["field"] == "loader.eval_every")),
        "{}",
        r["inferred"]
    );
}

#[test]
fn an_lstm_summary_over_layers_keeps_the_convs_and_node_attention_does_not() {
    // DenceGCN's AttentionSummarize is PyG's JumpingKnowledge('lstm') by
    // another name: a per-node cost, so the SAGE stack is read as it is.
    let r = plan("layer_summary/train.py", &[], &[]);
    assert_eq!(r["job"]["model"]["conv"], "sage");
    assert_eq!(r["job"]["model"]["layers"], 4);
    assert!(from(&r, "model.conv").contains("train.py:35"));
    let assumed = |r: &Value| {
        r["assumed"]
            .as_array()
            .is_some_and(|a| a.iter().any(|a| a["field"] == "model.conv"))
    };
    assert!(!assumed(&r), "{}", r["assumed"]);
    // Attention between nodes (q, k, v) is a block no conv kind describes.
    let r = plan("layer_summary/train.py", &[], &["--model", "node"]);
    assert!(assumed(&r), "{}", r["assumed"]);
}

#[test]
fn a_graph_in_a_kuzu_database_is_the_dataset_its_directory_names() {
    let r = plan("graph_database/train.py", &[], &[]);
    assert_eq!(r["job"]["dataset"], "ogbn-products");
    assert_eq!(from(&r, "dataset"), "train.py:14");
    // num_neighbors by edge type, one edge type: its hops.
    assert_eq!(r["job"]["loader"]["fanout"], serde_json::json!([10, 5, 5]));
    // range(1, num_layers): decided where num_layers is given.
    assert_eq!(r["job"]["model"]["layers"], 3);
    let layers = from(&r, "model.layers");
    assert!(layers.contains("train.py:39"), "{layers}");
    // What the plan takes for Kùzu's storage is said, with its buffer pool.
    let why = r["assumed"]
        .as_array()
        .and_then(|a| a.iter().find(|a| a["field"] == "load.features"))
        .and_then(|a| a["why"].as_str())
        .unwrap_or_else(|| panic!("no assumption about Kùzu: {}", r["assumed"]))
        .to_string();
    assert!(
        why.starts_with("train.py:14") && why.contains("8.00 GiB"),
        "{why}"
    );
}

#[test]
fn edge_types_sampled_with_different_hops_are_no_one_fanout() {
    let out = headroom()
        .current_dir(fixture("scripts/patterns"))
        .args(["plan", "graph_database/mixed.py", "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("different hops") && err.contains("mixed.py:11"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}

/// The degree histogram the plan read from the dataset's file.
fn degrees(r: &Value) -> &Value {
    &r["job"]["dataset"]["degree_histogram"]
}

#[test]
fn degrees_are_read_from_a_torch_saved_graph_as_torch_counts_them() {
    // The expected buckets are torch's own count of the same file
    // (benches/pyg/.venv: torch.bincount of edge_index[1], of edge_index[0],
    // and of indeg[edge_index[0]], bucketed by floor(log2(d)) + 1).
    let r = plan("torch_file/train.py", &[], &[]);
    let h = degrees(&r);
    let v = |k: &str| h[k].clone();
    assert_eq!(v("counts"), serde_json::json!([9, 20, 104, 146, 21]));
    assert_eq!(v("degree_sums"), serde_json::json!([0, 20, 266, 724, 190]));
    assert_eq!(v("out_counts"), serde_json::json!([3, 21, 105, 156, 15]));
    assert_eq!(
        v("reached_counts"),
        serde_json::json!([37, 79, 409, 587, 88])
    );
    assert_eq!(
        v("reached_degree_sums"),
        serde_json::json!([0, 79, 1037, 2960, 811])
    );
    assert!(from(&r, "dataset.degree_histogram").ends_with("torch_file/data/graph.pt"));
}

#[test]
fn degrees_of_a_graph_made_undirected_count_each_neighbour_once() {
    // degrees_npz's star and ring, made undirected by the script: node 0
    // has its 40 leaves, leaves 1..40 their two ring neighbours and node 0,
    // nodes 41..59 their two ring neighbours (worked out by hand).
    let r = plan("degrees_npz/undirected.py", &[], &[]);
    let h = degrees(&r);
    assert_eq!(h["counts"], serde_json::json!([0, 0, 59, 0, 0, 0, 1]));
    assert_eq!(
        h["degree_sums"],
        serde_json::json!([0, 0, 158, 0, 0, 0, 40])
    );
    // Undirected: out-degrees are the in-degrees, nothing apart is kept.
    assert!(h["out_counts"].is_null(), "{h}");
    // The sampled graph's edges: the 99 stored and their reverses.
    assert_eq!(r["job"]["dataset"]["undirected_edges"], 198);
    let said = from(&r, "dataset.degree_histogram");
    assert!(
        said.contains("undirected.py:14") && said.contains("198 edges"),
        "{said}"
    );
}

#[test]
fn features_computed_while_the_dataset_keeps_them_are_a_second_copy() {
    let train = |r: &Value| -> u64 {
        r["plan"]["components"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["phase"] == "train"))
            .and_then(|c| c["host_bytes"].as_u64())
            .unwrap_or_else(|| panic!("no train phase: {}", r["plan"]))
    };
    // Standardised through a local name (DGraphFin's baseline does this).
    let normalized = plan("feature_copy/normalized.py", &[], &[]);
    assert_eq!(
        from(&normalized, "load.replaces_features"),
        "normalized.py:12"
    );
    // Moved to the GPU: no host copy, nothing read.
    let moved = plan("feature_copy/moved.py", &[], &[]);
    assert_eq!(moved["job"]["load"]["replaces_features"], false);
    // ogbn-arxiv's features once more: 169,343 x 128 float32.
    assert_eq!(train(&normalized) - train(&moved), 169_343 * 128 * 4);
    // A transform that computes features on access copies them per access.
    let t = plan("feature_copy/transform.py", &[], &[]);
    assert_eq!(from(&t, "load.replaces_features"), "transform.py:8");
}

#[test]
fn degrees_of_an_edge_major_npz_and_a_file_with_headers_only() {
    // A star of 40 leaves into node 0 and a ring over nodes 1..59, stored
    // E x 2 int32 (degrees_npz/make_graph.py).
    let r = plan("degrees_npz/train.py", &[], &[]);
    let h = degrees(&r);
    // In-degrees: 59 nodes of 1 (bucket 1), node 0 of 40 (bucket 6: 32-63).
    assert_eq!(h["counts"], serde_json::json!([0, 59, 0, 0, 0, 0, 1]));
    assert_eq!(h["degree_sums"][6], 40);
    // Out-degrees: node 0 none, leaves 2 (star and ring), the rest 1.
    assert_eq!(h["out_counts"], serde_json::json!([1, 19, 40]));
    // Every edge leaves a node of in-degree 1.
    assert_eq!(h["reached_counts"], serde_json::json!([0, 99]));
    // on_disk's file holds the arrays' headers and no values: said, not guessed.
    let r = plan("on_disk/train.py", &[], &[]);
    assert!(degrees(&r).is_null());
    let why = r["assumed"]
        .as_array()
        .and_then(|a| a.iter().find(|a| a["field"] == "dataset.degree_histogram"))
        .and_then(|a| a["why"].as_str())
        .unwrap_or_default()
        .to_string();
    assert!(why.starts_with("on_disk/data/graph.npz"), "{why}");
}

#[test]
fn a_config_file_given_as_argparse_defaults_and_options_read_as_a_tuple() {
    // `parser.set_defaults(**cfg)` with cfg = yaml.safe_load(config.yaml),
    // `args, _ = parser.parse_known_args()`, and the loader built by a
    // helper from `**vars(args)`: the config's values, named at its lines,
    // not the `add_argument` defaults (64, 0, 16, 1) they replace.
    let r = plan("config_defaults/train.py", &[], &[]);
    assert_eq!(r["job"]["loader"]["batch_size"], 1024);
    assert_eq!(from(&r, "loader.batch_size"), "config.yaml:1");
    assert_eq!(r["job"]["loader"]["num_workers"], 4);
    assert_eq!(from(&r, "loader.num_workers"), "config.yaml:2");
    assert_eq!(r["job"]["model"]["hidden"], 256);
    assert_eq!(r["job"]["epochs"], 3);
    // The command line still wins over the config's default.
    let r = plan("config_defaults/train.py", &[], &["--batch_size", "2048"]);
    assert_eq!(r["job"]["loader"]["batch_size"], 2048);
    assert_eq!(r["job"]["loader"]["num_workers"], 4);
}

#[test]
fn dict_entries_set_by_item_assignment_before_the_use() {
    // kw = {...}; `if args.deep: kw["num_neighbors"] = [15, 10, 5]`;
    // `kw["batch_size"] = 1024`; NeighborLoader(data, **kw). Each later
    // assignment that runs replaces its entry, named at its own line.
    let r = plan("dict_items/train.py", &[], &[]);
    assert_eq!(r["job"]["loader"]["batch_size"], 1024);
    assert_eq!(from(&r, "loader.batch_size"), "train.py:16");
    assert_eq!(r["job"]["loader"]["fanout"], serde_json::json!([10, 5]));
    assert_eq!(from(&r, "loader.fanout"), "train.py:13");
    assert_eq!(r["job"]["loader"]["num_workers"], 2);
    let r = plan("dict_items/train.py", &[], &["--deep"]);
    assert_eq!(r["job"]["loader"]["fanout"], serde_json::json!([15, 10, 5]));
    assert_eq!(from(&r, "loader.fanout"), "train.py:15");
}

#[test]
fn a_script_run_in_a_container_is_read_through_its_bind_and_its_continued_lines() {
    // `apptainer exec --bind ${SLURM_SUBMIT_DIR}/src:/workspace image.sif
    // python /workspace/train.py \` with its options on the lines after:
    // the script is src/train.py, each option named at its own line and at
    // the command's.
    let r = plan("container_launch/run.slurm", &[], &[]);
    assert_eq!(r["job"]["loader"]["batch_size"], 2048);
    assert_eq!(from(&r, "loader.batch_size"), "run.slurm:11, run.slurm:5");
    assert_eq!(r["job"]["loader"]["num_workers"], 4);
    assert_eq!(from(&r, "loader.num_workers"), "run.slurm:12, run.slurm:5");
    // evaluate() is @torch.no_grad() and also runs over the training
    // nodes: the loader that trains is the shuffled one of main().
    assert_eq!(r["job"]["loader"]["fanout"], serde_json::json!([15, 10]));
    assert_eq!(from(&r, "loader.fanout"), "train.py:32");
    assert_eq!(r["job"]["loader"]["eval_loaders"], "on_demand");
    assert_eq!(r["job"]["loader"]["eval_batch_size"], 8192);
}

#[test]
fn a_script_path_under_a_variable_the_launch_file_does_not_set_is_found_by_its_tail() {
    // `python $PROJECT/src/train.py`: PROJECT is the user's; the script is
    // found from the launch file's directories by its last components, and
    // the plan says so.
    let r = plan("container_launch/jobs/env_path.sh", &[], &[]);
    assert_eq!(r["job"]["loader"]["batch_size"], 512);
    assert_eq!(from(&r, "loader.batch_size"), "env_path.sh:2");
    let said = r["plan"]["warnings"].to_string();
    assert!(said.contains("its last components"), "{said}");
    assert!(said.contains("container_launch/src/train.py"), "{said}");
}

#[test]
fn a_loader_over_the_training_nodes_inside_a_no_grad_block_is_not_the_training_loader() {
    // `with torch.no_grad():` around a NeighborLoader over train_idx (the
    // training accuracy), called after the shuffled loader that trains.
    let r = plan("container_launch/src/with_block.py", &[], &[]);
    assert_eq!(r["job"]["loader"]["batch_size"], 256);
    assert_eq!(from(&r, "loader.batch_size"), "with_block.py:22");
    assert_eq!(r["job"]["loader"]["eval_batch_size"], 4096);
}

#[test]
fn the_projects_own_message_passing_beside_pyg_convs_leaves_the_convs_the_model() {
    // A MessagePassing subclass of the project (a gate over neighbours)
    // beside two GATConvs: the model is GAT, 2 layers, 4 heads, not an
    // unsized model planned as GraphSAGE (the reader of 71f921c).
    let r = plan("side_message_passing/train.py", &[], &[]);
    assert_eq!(r["job"]["model"]["conv"], "gat");
    assert_eq!(from(&r, "model.conv"), "train.py:24");
    assert_eq!(r["job"]["model"]["layers"], 2);
    assert_eq!(r["job"]["model"]["heads"], 4);
    let assumed = r["assumed"].to_string();
    assert!(!assumed.contains("model.conv"), "{assumed}");
}

#[test]
fn a_dataset_given_by_a_profiles_alias_is_named_as_the_profile() {
    // `--dataset products`: the job names the graph that was planned.
    let r = plan(
        "container_launch/src/train.py",
        &[],
        &["--dataset", "products"],
    );
    assert_eq!(r["job"]["dataset"], "ogbn-products");
    assert_eq!(from(&r, "dataset"), "the command line, train.py:27");
}

#[test]
fn a_loader_built_in_a_closure_reads_the_enclosing_functions_parameters() {
    // `def create_loader(mask):` inside get_dataloaders(data, num_neighbors,
    // batch_size, num_workers): the sizes are bound where main() calls the
    // outer function (the reader of 71f921c found no batch and no fanout).
    let r = plan(
        "closure_loader/train.py",
        &[],
        &["--batch_size", "1024", "--num_neighbors", "[10,5]"],
    );
    assert_eq!(r["job"]["loader"]["batch_size"], 1024);
    assert_eq!(r["job"]["loader"]["fanout"], serde_json::json!([10, 5]));
    assert_eq!(r["job"]["loader"]["num_workers"], 2);
    assert_eq!(from(&r, "loader.num_workers"), "train.py:22");
    assert_eq!(r["job"]["loader"]["eval_loaders"], "resident");
}

#[test]
fn a_closure_splats_a_dict_of_its_enclosing_function() {
    // `**loader_kwargs` in a nested create_loader, the dict bound in the
    // enclosing get_dataloaders (darkzard05's graph_dataloader.py): the
    // reader of d80d6e0 looked for the dict in the closure only and named
    // pin_memory, persistent_workers and num_workers as unknown.
    let r = plan("closure_loader/kwargs.py", &[], &[]);
    assert_eq!(r["job"]["loader"]["num_workers"], 3);
    assert_eq!(r["job"]["loader"]["pin_memory"], true);
    assert_eq!(r["job"]["loader"]["persistent_workers"], true);
    assert_eq!(from(&r, "loader.pin_memory"), "kwargs.py:10");
    assert_eq!(from(&r, "loader.num_workers"), "kwargs.py:24");
    assert_eq!(
        from(&r, "loader.persistent_workers"),
        "kwargs.py:11, kwargs.py:24"
    );
    // Given zero workers, the conditional in the dict follows.
    let r = plan("closure_loader/kwargs.py", &[], &["--num_workers", "0"]);
    assert_eq!(r["job"]["loader"]["persistent_workers"], false);
    // A closure's parameter of the same name shadows the enclosing dict:
    // the dict its caller passes counts (1 worker, not the outer 6).
    let r = plan("closure_loader/shadowed.py", &[], &[]);
    assert_eq!(r["job"]["loader"]["num_workers"], 1);
    assert_eq!(r["job"]["loader"]["persistent_workers"], false);
}

#[test]
fn a_json_file_the_script_loads_is_its_config_whatever_the_option_is_called() {
    // `-s tuning.json` read by `json.load(f, object_hook=... SimpleNamespace)`
    // (obesity-subphenotype-gatv2's 1.Model_tuning.py): the reader of
    // d80d6e0 knew configs only by option names (--config, --cfg, ...) and
    // could compute neither the batch nor the fanout.
    let r = plan("json_settings/run.sh", &[], &[]);
    assert_eq!(r["job"]["loader"]["batch_size"], 128);
    assert_eq!(from(&r, "loader.batch_size"), "tuning.json:2");
    assert_eq!(r["job"]["loader"]["fanout"], serde_json::json!([12, 12]));
    assert_eq!(r["job"]["model"]["hidden"], 64);
    assert_eq!(r["job"]["model"]["heads"], 4);
    assert_eq!(r["job"]["epochs"], 30);
}

#[test]
fn a_hydra_primary_config_kept_in_the_config_store_does_not_stop_the_reading() {
    // `@hydra.main(config_path="conf", config_name="config")` where the
    // primary config is a ConfigStore node, not conf/config.yaml: the
    // reader of 71f921c stopped at exit 2 on "No such file or directory".
    // The group the launch line chooses (`loader=big`) is read from
    // conf/loader/big.yaml and named at its lines.
    let r = plan("hydra_store/run.sh", &[], &[]);
    assert_eq!(r["job"]["dataset"], "reddit");
    assert_eq!(from(&r, "dataset"), "train.py:22");
    assert_eq!(r["job"]["loader"]["batch_size"], 2048);
    assert_eq!(from(&r, "loader.batch_size"), "big.yaml:1");
    assert_eq!(r["job"]["loader"]["fanout"], serde_json::json!([20, 10]));
    assert_eq!(from(&r, "loader.fanout"), "big.yaml:2");
}

#[test]
fn a_hydra_group_chosen_on_the_launch_line_replaces_its_default_file() {
    // with_defaults.yaml chooses `loader: small`; `loader=big` on the
    // launch line chooses big.yaml (the reader of 71f921c set cfg.loader
    // to the word "big" and lost both sizes).
    let r = plan("hydra_store/run_defaults.sh", &[], &[]);
    assert_eq!(r["job"]["loader"]["batch_size"], 2048);
    assert_eq!(from(&r, "loader.batch_size"), "big.yaml:1");
    // Without the choice, the default group's file.
    let r = plan("hydra_store/with_defaults.py", &[], &[]);
    assert_eq!(r["job"]["loader"]["batch_size"], 256);
    assert_eq!(from(&r, "loader.batch_size"), "small.yaml:1");
    assert_eq!(r["job"]["loader"]["fanout"], serde_json::json!([5, 5]));
}

/// A checkpoint handed to `load_state_dict(torch.load(path))` is no dataset
/// load: the error for a graph the project builds itself no longer names the
/// checkpoint's line as where the dataset is loaded (dl-graph's main.py:737,
/// sealed-2611290.yaml, did).
#[test]
fn a_checkpoint_for_load_state_dict_is_not_named_as_the_dataset() {
    let out = headroom()
        .current_dir(fixture("scripts/patterns"))
        .args(["plan", "checkpoint_load/train.py", "--assume-defaults"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("do not say dataset"), "{err}");
    assert!(err.contains("--nodes N --edges E --features F"), "{err}");
    assert!(!err.contains("train.py:11"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

/// The dataset class bound to a name in the project's own loading function
/// (`cls = EllipticBitcoinDataset` in an `else:`, then `cls(root=root)`),
/// reached two calls deep from the script; the module's `__main__` smoke
/// test, which passes `vendored=True`, never runs when the module is
/// imported. The reader of e8e5510 found no dataset (dl-graph's
/// load_elliptic, sealed-2611290.yaml).
#[test]
fn a_dataset_class_bound_to_a_name_in_a_loading_function() {
    let r = plan("class_alias/train.py", &[], &[]);
    assert_eq!(r["job"]["dataset"], "elliptic");
    let at = from(&r, "dataset");
    assert!(at.contains("loading.py:18"), "{at}");
    assert!(at.contains("loading.py:12"), "{at}");
}

/// A loader helper called inside an `@torch.no_grad()` method that runs
/// each epoch, with index tensors whose names say no split: an evaluation
/// loader built on demand. The reader of e8e5510 took it for a second
/// training loader and read no evaluation (twibot22-hgt's `_evaluate`,
/// sealed-2611290.yaml).
#[test]
fn a_loader_helper_called_without_grad_each_epoch_is_an_on_demand_evaluation() {
    let r = plan("eval_helper/train.py", &[], &[]);
    assert_eq!(r["job"]["loader"]["batch_size"], 512);
    assert_eq!(r["job"]["loader"]["eval_loaders"], "on_demand");
    assert_eq!(from(&r, "loader.eval_loaders"), "train.py:13, train.py:35");
    assert_eq!(r["job"]["loader"]["eval_batch_size"], 1024);
}

/// Loaders built in a loop over runs whose pass trains to the end
/// (`trainer.fit(model, loader_for(...), loader_for(...))`) live through
/// that run: resident, not on demand (twibot22-bgsrd's run loop).
#[test]
fn loaders_built_in_a_loop_over_runs_are_resident() {
    let r = plan("runs_loop/train.py", &[], &[]);
    assert_eq!(r["job"]["loader"]["eval_loaders"], "resident");
    assert_eq!(from(&r, "loader.eval_loaders"), "train.py:37, train.py:47");
    assert_eq!(r["job"]["loader"]["eval_batch_size"], 256);
}

/// The split a helper's loader iterates, chosen by a flag through a
/// conditional (`input_nodes = data.train_mask if use_train_mask else
/// data.test_mask`), and a helper of the same module nothing calls but the
/// module's own `__main__` test: the reader of e8e5510 read the test
/// loader as the training one (batch 2048) and the uncalled helper's
/// full-neighbourhood loader as layer-wise inference (dl-graph's
/// create_loader and make_loader).
#[test]
fn a_helpers_split_by_a_conditional_and_an_uncalled_helper() {
    let r = plan("loader_helpers/train.py", &[], &[]);
    assert_eq!(r["job"]["loader"]["batch_size"], 512);
    assert_eq!(from(&r, "loader.batch_size"), "train.py:23");
    assert_eq!(r["job"]["loader"]["eval_loaders"], "on_demand");
    assert_eq!(from(&r, "loader.eval_loaders"), "loaders.py:9, train.py:12");
    assert_eq!(r["job"]["loader"]["eval_batch_size"], 2048);
}

/// No evaluation loader, the training loader iterated again under
/// `torch.no_grad()`: the evaluation runs over the training loader, kept
/// for the whole run (the reader of e8e5510 read no evaluation:
/// eadd-commerce's train_large.py).
#[test]
fn the_training_loader_iterated_without_grad_is_the_evaluations() {
    let r = plan("train_loader_reuse/train.py", &[], &[]);
    assert_eq!(r["job"]["loader"]["eval_loaders"], "resident");
    let at = from(&r, "loader.eval_loaders");
    assert!(
        at.starts_with("train.py:24") && at.contains("train.py:12"),
        "{at}"
    );
    assert_eq!(r["job"]["loader"]["eval_batch_size"], 1024);
    assert_eq!(
        from(&r, "loader.eval_batch_size"),
        "train.py:31, train.py:12"
    );
}

/// The arguments as a dict (`vars(parser.parse_args())` returned by a
/// helper, read as `args['hops']`), the network held by a wrapper object
/// that chooses it by name (`self.clf.net`, set from `self.choose(...)`
/// in the wrapper's `__init__`), a `copy.deepcopy` of it retrained as a
/// baseline by a method written before the training one: the reader of
/// e8e5510 computed neither the fanout nor the epochs, took the
/// baseline's SGD, and assumed `sage` (ETR's exp_etr.py, sealed-2611290.yaml).
#[test]
fn a_network_held_by_a_wrapper_and_arguments_read_as_a_dict() {
    let r = plan("wrapped_model/main.py", &[], &[]);
    assert_eq!(r["job"]["loader"]["fanout"], serde_json::json!([8, 8]));
    assert_eq!(from(&r, "loader.fanout"), "experiment.py:17, params.py:10");
    assert_eq!(r["job"]["epochs"], 60);
    assert_eq!(r["job"]["model"]["conv"], "gcn");
    assert_eq!(from(&r, "model.conv"), "classifier.py:10");
    assert_eq!(r["job"]["model"]["hidden"], 128);
    assert_eq!(from(&r, "model.hidden"), "params.py:12");
    assert_eq!(r["job"]["model"]["optimizer"], "adam");
    assert_eq!(from(&r, "model.optimizer"), "experiment.py:30");
}

/// The `why` of the assumption about `field`.
fn assumed_why(r: &Value, field: &str) -> String {
    r["assumed"]
        .as_array()
        .and_then(|a| a.iter().find(|e| e["field"] == field))
        .and_then(|e| e["why"].as_str())
        .unwrap_or_else(|| panic!("{field} not assumed: {}", r["assumed"]))
        .to_string()
}

/// PyG layers no conv kind describes (HGTConv inside the project's own
/// pre-norm block, the APPNP propagation): the conv is an assumption that
/// names the layer's line. The reader of e8e5510 read both models as MLPs
/// of their Linear layers (the HGT one 1024 wide, its feed-forward's
/// width: twibot22-hgt's graph.py, sealed-2611290.yaml).
#[test]
fn pyg_layers_of_no_conv_kind_are_assumed_at_their_line() {
    let r = plan("other_pyg_layer/hgt.py", &[], &[]);
    let why = assumed_why(&r, "model.conv");
    assert!(why.contains("HGTConv at model.py:14"), "{why}");
    assert_eq!(r["job"]["model"]["hidden"], 256);
    assert_eq!(r["job"]["model"]["layers"], 3);
    let r = plan("other_pyg_layer/appnp.py", &[], &[]);
    let why = assumed_why(&r, "model.conv");
    assert!(why.contains("APPNP at model.py:41"), "{why}");
    assert_eq!(r["job"]["model"]["layers"], 2);
}

/// Graph layers written by hand as `nn.Linear`s that aggregate in
/// `forward` (a product by the adjacency given, a `scatter_add_` over the
/// edges) are message passing, not an MLP: assumed, at the layer's line
/// (eadd-commerce's TypeSpecificGCNLayer and TypeSpecificGATLayer).
#[test]
fn layers_that_aggregate_by_hand_are_assumed_not_an_mlp() {
    let r = plan("hand_conv/train.py", &[], &[]);
    let why = assumed_why(&r, "model.conv");
    assert!(why.contains("DenseGCNLayer at layers.py:37"), "{why}");
    assert_eq!(r["job"]["model"]["layers"], 2);
    assert_eq!(from(&r, "model.layers"), "layers.py:37, layers.py:38");
    assert_eq!(r["job"]["model"]["hidden"], 96);
    let r = plan("hand_conv/scatter.py", &[], &[]);
    let why = assumed_why(&r, "model.conv");
    assert!(why.contains("EdgeSoftmaxLayer at layers.py:48"), "{why}");
}

/// The loader's settings read through the trainer object's config
/// (`self.cfg.batch_size`, `self.cfg = config`, `Trainer(cfg, ...)`,
/// `cfg = TrainConfig(batch_size=args.batch_size, ...)`), and the AdamW
/// built under `if groups:` where `groups = []` is filled by `append`s:
/// the reader of e8e5510 computed none of the three loader settings and
/// found no optimizer (twibot22-hgt's trainer.py and optim.py).
#[test]
fn settings_through_a_trainers_config_and_an_optimizer_over_filled_groups() {
    let r = plan("trainer_config/train.py", &[], &[]);
    assert_eq!(r["job"]["loader"]["batch_size"], 512);
    assert_eq!(from(&r, "loader.batch_size"), "train.py:9");
    assert_eq!(r["job"]["loader"]["fanout"], serde_json::json!([20, 10]));
    assert_eq!(r["job"]["loader"]["num_workers"], 4);
    assert_eq!(r["job"]["epochs"], 25);
    assert_eq!(r["job"]["model"]["optimizer"], "adamw");
    assert_eq!(from(&r, "model.optimizer"), "trainer.py:35");
}

/// The parsed arguments kept as `self.args = (args)` and read as
/// `self.args.batch_size`, and `args.hidden = args.layers` only under `if
/// args.layers == 1:` (2 layers here): the reader of e8e5510 computed no
/// batch and took the hidden width as 2 (twibot22-bgsrd's run.py).
#[test]
fn arguments_kept_on_an_object_and_a_reassignment_that_does_not_run() {
    let r = plan("args_object/train.py", &[], &[]);
    assert_eq!(r["job"]["loader"]["batch_size"], 384);
    assert_eq!(from(&r, "loader.batch_size"), "train.py:27");
    assert_eq!(r["job"]["model"]["hidden"], 48);
    assert_eq!(from(&r, "model.hidden"), "train.py:29");
}

/// A relational transformer layer (a TransformerConv per relation, a gate,
/// an attention over the relations' outputs that only scores each node's
/// own rows), two of them and a Linear head: transformer, its width the
/// convs' `out_channels=out_channel` (a head follows), each layer's line
/// named; an evaluation loader built and never used says nothing of the
/// evaluation batch. The reader of e8e5510 assumed sage (the attention
/// read as attention between nodes) and took the unused loader's batch
/// (twibot22-rgt's RGTLayer, sealed-2611290.yaml).
#[test]
fn a_relational_transformer_layer_with_per_node_attention_and_an_unused_loader() {
    let r = plan("relation_layer/train.py", &[], &[]);
    assert_eq!(r["job"]["model"]["conv"], "transformer");
    assert_eq!(from(&r, "model.conv"), "layer.py:26");
    assert_eq!(r["job"]["model"]["hidden"], 96);
    assert_eq!(from(&r, "model.hidden"), "train.py:12");
    assert_eq!(r["job"]["model"]["heads"], 3);
    assert_eq!(r["job"]["model"]["layers"], 2);
    let layers = from(&r, "model.layers");
    assert!(
        layers.contains("train.py:23") && layers.contains("train.py:24"),
        "{layers}"
    );
    assert_eq!(r["job"]["loader"]["eval_batch_size"], 100);
    assert_eq!(from(&r, "loader.eval_batch_size"), "train.py:15");
}

/// A backbone class chosen by a `match` on the config's name and bound to
/// a name before it is built: only the arm the name takes runs. The reader
/// of e8e5510 took the last arm's GAT (dl-graph's mainGCN.py chose sage
/// for its GCNSkipBackbone the same way, sealed-2611290.yaml).
#[test]
fn a_backbone_chosen_by_a_match_statement() {
    let r = plan("match_backbone/train.py", &[], &[]);
    assert_eq!(r["job"]["model"]["conv"], "gcn");
    assert_eq!(from(&r, "model.conv"), "backbones.py:10");
    assert_eq!(r["job"]["model"]["layers"], 3);
    assert_eq!(r["job"]["model"]["hidden"], 64);
}

/// The layer class bound through a conditional on an argument
/// (`base_conv = SAGEConv if args.gnn_type == "gnn" else SAGEConvPeer`)
/// that the training script sets before building the model
/// (`args.gnn_type = args.train_model_type`, read in the model's module,
/// `args` a parameter there); a MessagePassing subclass whose forward
/// never propagates is an MLP layer. The reader of e8e5510 found no
/// layers and assumed sage for both runs (MLPInit's GraphSAGE and its
/// PeerMLP, sealed-2611290.yaml, planned at the PeerMLP's line).
#[test]
fn a_layer_class_chosen_by_an_argument_the_script_sets_and_a_peer_mlp() {
    let r = plan("peer_mlp/main.py", &[], &["--train_model_type", "gnn"]);
    assert_eq!(r["job"]["model"]["conv"], "sage");
    assert_eq!(from(&r, "model.conv"), "sage.py:13");
    assert_eq!(r["job"]["model"]["layers"], 3);
    assert_eq!(r["job"]["model"]["hidden"], 128);
    let r = plan("peer_mlp/main.py", &[], &["--train_model_type", "mlp"]);
    assert_eq!(r["job"]["model"]["conv"], "mlp");
    assert_eq!(r["job"]["model"]["layers"], 3);
}

/// A parser under an imported module's `__main__` (train.py's, imported
/// for a constant) is not this run's options: the reader of e8e5510 read
/// its epochs (200) and batch (64) in place of train_large.py's
/// (eadd-commerce's train_large.py, sealed-2611290.yaml).
#[test]
fn an_imported_modules_own_parser_is_not_the_runs() {
    let r = plan("imported_parser/train_large.py", &[], &[]);
    assert_eq!(r["job"]["epochs"], 20);
    assert_eq!(from(&r, "epochs"), "train_large.py:19, train_large.py:28");
    assert_eq!(r["job"]["loader"]["batch_size"], 1024);
    assert_eq!(from(&r, "loader.batch_size"), "train_large.py:29");
}

/// An epoch loop under a branch the run does not take (`elif args.init
/// == "mlp":` pre-training) is not the training's: the reader of e8e5510
/// read its 49 epochs (MLPInit's demo/ogbn_sage.py).
#[test]
fn an_epoch_loop_under_a_branch_not_taken_is_passed_over() {
    let r = plan("skipped_pretrain/train.py", &[], &[]);
    assert_eq!(r["job"]["epochs"], 20);
    assert_eq!(from(&r, "epochs"), "train.py:26");
}

/// Edges made undirected by hand: each direction stacked as its own pair,
/// an edge index concatenated with its `flip(0)`, each relation of a
/// heterogeneous graph given its reverse type. The reader of e8e5510 saw
/// no `to_undirected` and read the graphs as directed (eadd-commerce's
/// train_large.py, twibot22-hgt's twibot_dataset.py).
#[test]
fn edges_reversed_by_hand_are_undirected() {
    let sized = ["--nodes", "1000", "--edges", "10000", "--features", "16"];
    for (job, at) in [
        ("manual_reverse/stacked.py", "stacked.py:15"),
        ("manual_reverse/cat_flip.py", "cat_flip.py:9"),
        ("manual_reverse/hetero_rev.py", "hetero_rev.py:19"),
    ] {
        let r = plan(job, &sized, &[]);
        assert_eq!(r["job"]["load"]["to_undirected"], true, "{job}");
        assert_eq!(from(&r, "load.to_undirected"), at);
    }
}
