//! The probe reads the channels of convolutions that keep none of their own
//! (GINConv: its MLP has them), with the real torch_geometric where it is
//! importable. Before, a GIN job's spec got "dataset.classes: 2 (no
//! convolution seen)" and the default hidden width.

use std::path::PathBuf;

use crate::util::headroom;

#[test]
fn a_gin_convs_channels_come_from_its_mlp() {
    let py = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("benches/pyg/.venv/bin/python");
    if !py.exists() {
        eprintln!("skipped: no benches/pyg/.venv (benches/pyg/setup.sh builds it)");
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let run = t.path().join("run");
    let script = "import torch\n\
        from torch_geometric.nn import GIN, GINConv\n\
        GIN(16, 24, 2, 7)\n\
        GINConv(torch.nn.Sequential(torch.nn.Linear(8, 12), torch.nn.ReLU(), torch.nn.Linear(12, 5)))\n";
    headroom()
        .args(["watch", "--probe", "--out"])
        .arg(&run)
        .arg("--")
        .arg(&py)
        .args(["-c", script])
        .assert()
        .success();
    let convs: Vec<(String, Option<u64>, Option<u64>)> =
        std::fs::read_to_string(run.join("probe.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .filter(|e| e["ev"] == "conv")
            .map(|e| {
                (
                    e["cls"].as_str().unwrap_or_default().to_string(),
                    e["in_channels"].as_u64(),
                    e["out_channels"].as_u64(),
                )
            })
            .collect();
    // PyG's GIN: MLP([16, 24, 24]) then MLP([24, 7, 7]) (the last layer's
    // MLP is as wide as its output); the hand-made one 8 -> 12 -> 5.
    let want = |i, o| ("GINConv".to_string(), Some(i), Some(o));
    assert_eq!(
        convs,
        vec![want(16, 24), want(24, 7), want(8, 5)],
        "{convs:?}"
    );
}
