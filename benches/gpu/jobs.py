"""Replay jobs for benches/gpu/replay.py from real-run corpus rows.

    python3 benches/gpu/jobs.py ROWS.jsonl [ROWS.jsonl ...] > jobs.json

A row of the real-run corpus (benches/pyg/run_corpus.py) that recorded its
training batches (`batches.train.sizes`, case.py since 2026-11-25) becomes a
job: its model, its dataset's feature width, dtype and classes, and the
(nodes, edges, seeds) of each training step in the order the real
NeighborLoader drew them. The job spec rides along, so that the comparison
(`cargo run --release --example gpu_truth`) plans the same job for the GPU.
"""

import json
import sys


def jobs_of(row):
    stats = row.get("batches") or {}
    sizes = (stats.get("train") or {}).get("sizes")
    if not sizes:
        return None
    spec = row["job"]
    m, d = spec["model"], spec["dataset"]
    argv = row["command"].split()
    batch = int(argv[argv.index("--batch") + 1]) if "--batch" in argv else 1024
    # case.py gives PyG's GAT its hidden width whole (split over the heads).
    hidden = m["hidden"] * m["heads"] if m["conv"] == "gat" else m["hidden"]
    return {
        "id": row["id"],
        "conv": m["conv"], "layers": m["layers"], "hidden": hidden, "heads": m["heads"],
        "features": d["features"], "dtype": d["feature_dtype"], "classes": d["classes"],
        "steps": [[n, e, batch] for n, e in sizes],
        "spec": spec,
    }


def main():
    out = []
    for path in sys.argv[1:]:
        with open(path) as f:
            for line in f:
                if line.strip():
                    j = jobs_of(json.loads(line))
                    if j:
                        out.append(j)
    json.dump(out, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
