//! `plan` on job shapes the model learned in issue 22: PyG's layer-wise
//! inference (`eval_loaders: layerwise`) and a custom graph whose degrees
//! the spec does not give. Expected figures are worked out here from the
//! mechanism and the dataset's published counts, not read off the code.

use crate::util::{headroom, json_of};

fn plan_json(args: &[&str]) -> serde_json::Value {
    json_of(headroom().arg("plan").args(args).args(["--format", "json"]))
}

fn host(r: &serde_json::Value, phase: &str, component: &str) -> u64 {
    let p = r["components"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["phase"] == phase)
        .unwrap_or_else(|| panic!("no phase {phase}"));
    p["host"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["name"] == component)
        .map(|c| c["bytes"].as_u64().unwrap())
        .sum()
}

// ogbn-arxiv's counts (OGB paper, table 1): 169,343 nodes, 1,166,243 edges, 40 classes.
const ARXIV_NODES: u64 = 169_343;
const ARXIV_EDGES: u64 = 1_166_243;

/// Plans ogbn-arxiv with a 3-layer SAGE of 256 and the given evaluation loaders.
fn arxiv_3x256(eval_loaders: &str) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("job.yaml");
    std::fs::write(
        &spec,
        format!(
            "dataset: ogbn-arxiv\nmodel: {{conv: sage, layers: 3, hidden: 256}}\n\
             loader: {{batch_size: 1024, fanout: [10, 10, 10], eval_loaders: {eval_loaders}}}\n"
        ),
    )
    .unwrap();
    plan_json(&[spec.to_str().unwrap()])
}

#[test]
fn layerwise_inference_holds_a_second_csc_and_a_layers_tables_over_every_node() {
    let r = arxiv_3x256("layerwise");
    // One CSC per NeighborLoader: colptr (N+1)·8 + row and perm 2·E·8.
    let csc = (ARXIV_NODES + 1) * 8 + 2 * ARXIV_EDGES * 8;
    // The train loader's and the subgraph loader's, all run long.
    assert_eq!(host(&r, "train", "CSC copies (one per loader)"), 2 * csc);
    // n_id = torch.arange(N), int64.
    assert_eq!(
        host(&r, "train", "subgraph loader's node ids (arange)"),
        8 * ARXIV_NODES
    );
    // Three layers of 256, 256, 40: at the second layer's cat, x_all (256
    // wide), xs and their cat (256 wide each), float32, over every node.
    let tables = 3 * 256 * 4 * ARXIV_NODES;
    assert_eq!(
        host(
            &r,
            "evaluate",
            "layer-wise inference (x_all, xs, cat; node ids)"
        ),
        tables + 8 * ARXIV_NODES
    );
    // Resident evaluation loaders instead: no node-wide tables, three CSCs.
    let resident = arxiv_3x256("resident");
    assert_eq!(
        host(&resident, "train", "CSC copies (one per loader)"),
        3 * csc
    );
    assert_eq!(
        host(
            &resident,
            "evaluate",
            "layer-wise inference (x_all, xs, cat; node ids)"
        ),
        0
    );
}

#[test]
fn a_graph_without_degrees_is_planned_at_the_largest_batch_it_can_give() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("job.yaml");
    std::fs::write(
        &spec,
        "dataset: {name: mygraph, nodes: 1000000, edges: 10000000, features: 64, classes: 10,\n\
         \x20 splits: {train: 100000, valid: 10000, test: 10000}}\n\
         model: {conv: sage, layers: 2, hidden: 128}\n\
         loader: {batch_size: 1024, fanout: [15, 10], num_workers: 0}\n\
         device: cpu\n",
    )
    .unwrap();
    let r = plan_json(&[spec.to_str().unwrap()]);
    // 1024 seeds, each drawing 15, each of those 10: 1024 + 15,360 + 153,600.
    assert_eq!(r["train_batch"]["tail_nodes"], 169_984.0);
    assert_eq!(r["train_batch"]["tail_edges"], 15_360.0 + 153_600.0);
    let said = r["assumptions"].to_string();
    assert!(
        said.contains("no degree_histogram and no degree shape") && said.contains("169984"),
        "{said}"
    );
    // Given a degree shape, the same graph is planned from it: smaller batches.
    let shaped = dir.path().join("shaped.yaml");
    let text = std::fs::read_to_string(&spec).unwrap().replace(
        "classes: 10,",
        "classes: 10, degree: {exponent: 2.5, max: 10000},",
    );
    std::fs::write(&shaped, text).unwrap();
    let s = plan_json(&[shaped.to_str().unwrap()]);
    let nodes = s["train_batch"]["tail_nodes"].as_f64().unwrap();
    assert!(nodes < 169_984.0 && nodes > 1024.0, "{nodes}");
}
