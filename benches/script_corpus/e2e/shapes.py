"""Generated stand-ins for the datasets of the end-to-end runs, written where
the script reads its dataset, with the shapes the real files have (nodes,
edges, feature width, label and split sizes; values random): the script then
runs unchanged but for the data (issue 23, item 6).

    python shapes.py dgraphfin DIR      # DIR/dataset/DGraphFin/raw/dgraphfin.npz
"""

import os
import sys

import numpy as np


def dgraphfin(root):
    # DGraphFin (Huang et al. 2022; PyG's dgraph.py STATS): 3,700,550 nodes,
    # 4,300,999 directed edges, 17 features, labels 0-3 (0/1 the labelled
    # normal/fraud users, 2/3 background), 857,899/183,862/183,840 split.
    rng = np.random.default_rng(0)
    n, e = 3_700_550, 4_300_999
    out = os.path.join(root, "dataset", "DGraphFin", "raw")
    os.makedirs(out, exist_ok=True)
    perm = rng.permutation(n)
    labelled = perm[: 857_899 + 183_862 + 183_840]
    y = rng.integers(2, 4, size=n, dtype=np.int64)
    y[labelled] = rng.integers(0, 2, size=labelled.size, dtype=np.int64)
    np.savez(
        os.path.join(out, "dgraphfin.npz"),
        x=rng.standard_normal((n, 17), dtype=np.float32),
        y=y,
        edge_index=rng.integers(0, n, size=(e, 2), dtype=np.int64),
        edge_type=rng.integers(1, 12, size=e, dtype=np.int64),
        edge_timestamp=rng.integers(1, 821, size=e, dtype=np.int64),
        train_mask=labelled[:857_899],
        valid_mask=labelled[857_899:857_899 + 183_862],
        test_mask=labelled[857_899 + 183_862:],
    )


def pubmed(root):
    # Planetoid PubMed (planetoid.py STATS): 19,717 nodes, 88,648 edges (both
    # directions), 500 features, 3 classes; written as PyG's raw Planetoid
    # files would be is more than the run needs: see the e2e note.
    raise SystemExit("pubmed: not generated here")


if __name__ == "__main__":
    {"dgraphfin": dgraphfin, "pubmed": pubmed}[sys.argv[1]](sys.argv[2])
