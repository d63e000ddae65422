"""Generated stand-ins for the datasets of the end-to-end runs, written where
the script reads its dataset, with the shapes the real files have (nodes,
edges, feature width, label and split sizes; values random): the script then
runs unchanged but for the data (issue 23, item 6).

    python shapes.py dgraphfin DIR      # DIR/dataset/DGraphFin/raw/dgraphfin.npz
    python shapes.py flickr DIR         # DIR/dataset/raw/{adj_full.npz,feats.npy,...}
    python shapes.py none DIR           # the script generates its own graph
"""

import json

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


def flickr(root):
    # PyG's Flickr (flickr.py STATS, profiles/datasets/flickr.yaml): 89,250
    # nodes, 899,756 edges as stored (a symmetric adjacency: 449,878 pairs
    # both ways), 500 features, 7 classes, GraphSAINT's 44,625/22,312/22,313
    # split. Written as the four raw files Flickr.process reads, under
    # ROOT/dataset (the script's `Flickr(root='dataset')`).
    rng = np.random.default_rng(0)
    n, pairs = 89_250, 449_878
    out = os.path.join(root, "dataset", "raw")
    os.makedirs(out, exist_ok=True)
    src = rng.integers(0, n, size=pairs, dtype=np.int64)
    dst = (src + rng.integers(1, n, size=pairs, dtype=np.int64)) % n  # no self-loops
    row = np.concatenate([src, dst])
    col = np.concatenate([dst, src])
    order = np.lexsort((col, row))
    row, col = row[order], col[order]
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.add.at(indptr, row + 1, 1)
    np.cumsum(indptr, out=indptr)
    np.savez(os.path.join(out, "adj_full.npz"), data=np.ones(row.size, dtype=np.float32),
             indices=col, indptr=indptr, shape=np.array([n, n]))
    np.save(os.path.join(out, "feats.npy"), rng.standard_normal((n, 500), dtype=np.float32))
    with open(os.path.join(out, "class_map.json"), "w") as f:
        json.dump({str(i): int(c) for i, c in enumerate(rng.integers(0, 7, size=n))}, f)
    perm = rng.permutation(n).tolist()
    with open(os.path.join(out, "role.json"), "w") as f:
        json.dump({"tr": perm[:44_625], "va": perm[44_625:66_937], "te": perm[66_937:]}, f)


def none(root):
    """The script makes its graph itself: nothing to write."""


def pubmed(root):
    # Planetoid PubMed (planetoid.py STATS): 19,717 nodes, 88,648 edges (both
    # directions), 500 features, 3 classes; written as PyG's raw Planetoid
    # files would be is more than the run needs: see the e2e note.
    raise SystemExit("pubmed: not generated here")


if __name__ == "__main__":
    {"dgraphfin": dgraphfin, "flickr": flickr, "none": none, "pubmed": pubmed}[sys.argv[1]](
        sys.argv[2])
