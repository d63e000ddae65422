"""Synthetic graphs for the real-run corpus, generated once and cached on disk.

A case loads its graph with torch.load, as a real job loads a processed
dataset, so generating it costs nothing inside the measured run. Three shapes:

- powerlaw: Chung-Lu; destinations drawn with weights i^(-1/(exponent-1)),
  sources uniform, so the in-degree has a power-law tail and almost no node
  is isolated when the mean degree is high.
- rmat: R-MAT (a, b, c, d) = (0.57, 0.19, 0.19, 0.05) on 2^scale ids, then
  shuffled: heavy-tailed and with a large share of nodes without in-edges,
  as on real web and citation graphs.
- uniform: sources and destinations uniform (Erdos-Renyi-like): the sparse,
  low-variance shape of road and mesh graphs.

Besides the tensors, `describe` computes what a user can compute in one line
and give headroom: the in-degree histogram in log2 buckets (bucket 0: degree
0; bucket k: degrees 2^(k-1) .. 2^k - 1) with each bucket's degree sum.
"""

import hashlib
import json
import os

import numpy as np
import torch

CACHE = os.environ.get("HEADROOM_PYG_CACHE", "/tmp/headroom-pyg-graphs")


def presorted_undirected(args):
    """`--is-sorted given` with `--to-undirected`: the stored edge_index is
    what a preprocessing step saved, made undirected and then sorted by
    destination; the run loads it as is (PyG's to_undirected sorts by source,
    so calling it after a sorted file would hand is_sorted=True an unsorted
    edge_index)."""
    return args.sorted_input and getattr(args, "to_undirected", False)


def key(args):
    """A file name for the graph the arguments describe."""
    fields = (args.graph, args.nodes, args.edges, args.features, args.dtype,
              args.classes, args.exponent, args.sorted_input, args.train,
              args.valid, args.test, args.seed)
    if presorted_undirected(args):
        # The one-off step's output: made undirected, then sorted, and saved.
        fields += ("undirected",)
    digest = hashlib.sha1(repr(fields).encode()).hexdigest()[:12]
    return os.path.join(CACHE, f"{args.graph}-{args.nodes}-{args.edges}-{digest}.pt")


def _powerlaw(rng, n, e, exponent):
    ranks = np.arange(1, n + 1, dtype=np.float64)
    w = ranks ** (-1.0 / (exponent - 1.0))
    cdf = np.cumsum(w)
    cdf /= cdf[-1]
    dst = np.searchsorted(cdf, rng.random(e)).astype(np.int64)
    src = rng.integers(0, n, size=e, dtype=np.int64)
    perm = rng.permutation(n).astype(np.int64)
    return perm[src], perm[dst]


def _rmat(rng, n, e, probs=(0.57, 0.19, 0.19, 0.05)):
    scale = int(np.ceil(np.log2(n)))
    if 1 << scale != n:
        raise SystemExit(f"rmat needs a power-of-two node count, got {n}")
    src = np.zeros(e, dtype=np.int64)
    dst = np.zeros(e, dtype=np.int64)
    a, b, c, _ = probs
    for level in range(scale):
        r = rng.random(e, dtype=np.float32)
        bit = np.int64(1 << level)
        right = (r >= a) & (r < a + b) | (r >= a + b + c)
        down = r >= a + b
        src += down * bit
        dst += right * bit
        del r, right, down
    perm = rng.permutation(n).astype(np.int64)
    return perm[src], perm[dst]


def histogram(ids, n):
    """Log2 histogram of how often each of `n` node ids occurs in `ids`."""
    deg = np.bincount(ids, minlength=n)
    bucket = np.where(deg > 0, np.floor(np.log2(np.maximum(deg, 1))).astype(np.int64) + 1, 0)
    return deg, [int(c) for c in np.bincount(bucket)], [int(s) for s in np.bincount(bucket, weights=deg)]


def describe(dst, n, src=None):
    """In-degree histogram (log2 buckets) and summary of `dst` over `n`
    nodes, and the out-degree histogram of `src` when given (a directed
    graph's sampler reaches a node through its out-edges)."""
    deg, counts, sums = histogram(dst, n)
    out = {
        "histogram": counts,
        "histogram_degree_sums": sums,
        "zero_fraction": float((deg == 0).mean()),
        "max": int(deg.max()),
        "mean": float(deg.mean()),
    }
    if src is not None:
        _, out["out_histogram"], out["out_histogram_degree_sums"] = histogram(src, n)
        # The in-degree of the node each edge leads back to (its source): what
        # a neighbor draw reaches, one entry per edge.
        reached = deg[src]
        b = np.where(reached > 0, np.floor(np.log2(np.maximum(reached, 1))).astype(np.int64) + 1, 0)
        out["reached_histogram"] = [int(c) for c in np.bincount(b)]
        out["reached_histogram_degree_sums"] = [int(x) for x in np.bincount(b, weights=reached)]
    return out


CACHE_MAX = int(float(os.environ.get("HEADROOM_PYG_CACHE_GIB", "8")) * (1 << 30))


def evict(keep):
    """Removes the least recently used graphs (with their side files) until
    the cache holds at most CACHE_MAX bytes: a drawn set of 67 graphs left
    48 GB in /tmp and filled a disk the CI runs on. `keep` stays."""
    if not os.path.isdir(CACHE):
        return
    graphs = []
    for name in os.listdir(CACHE):
        p = os.path.join(CACHE, name)
        if name.endswith(".pt") and p != keep:
            graphs.append((os.stat(p).st_atime, p))
    total = sum(os.path.getsize(os.path.join(CACHE, n)) for n in os.listdir(CACHE))
    for _, p in sorted(graphs):
        if total <= CACHE_MAX:
            break
        for side in (p, p + ".json", p + ".undirected.json", p + ".tmp"):
            if os.path.exists(side):
                total -= os.path.getsize(side)
                os.remove(side)


def build(args):
    """Generates (or finds in the cache) the graph and returns its path."""
    path = key(args)
    evict(path)
    if os.path.exists(path) and os.path.exists(path + ".json"):
        with open(path + ".json") as f:
            if "reached_histogram" in json.load(f):
                return path
        ei = torch.load(path)["edge_index"].numpy()
        with open(path + ".json", "w") as f:
            json.dump(describe(ei[1], args.nodes, ei[0]), f)
        return path
    os.makedirs(CACHE, exist_ok=True)
    rng = np.random.default_rng(args.seed)
    n, e = args.nodes, args.edges
    if args.graph == "rmat":
        src, dst = _rmat(rng, n, e)
    elif args.graph == "uniform":
        src = rng.integers(0, n, size=e, dtype=np.int64)
        dst = rng.integers(0, n, size=e, dtype=np.int64)
    else:
        src, dst = _powerlaw(rng, n, e, args.exponent)
    if presorted_undirected(args):
        from torch_geometric.utils import to_undirected
        ei = to_undirected(torch.from_numpy(np.stack([src, dst])), num_nodes=n).numpy()
        src, dst = ei[0].copy(), ei[1].copy()
        del ei
    info = describe(dst, n, src)
    info["edges"] = int(dst.shape[0])
    if args.sorted_input:
        order = np.argsort(dst, kind="stable")
        src, dst = src[order], dst[order]
        del order
    edge_index = torch.from_numpy(np.stack([src, dst]))
    del src, dst
    dtype = getattr(torch, args.dtype)
    gen = torch.Generator().manual_seed(args.seed)
    x = torch.randn(n, args.features, generator=gen).to(dtype)
    y = torch.randint(0, args.classes, (n,), generator=gen)
    perm = torch.randperm(n, generator=gen)
    t, v, s = args.train, args.valid, args.test
    splits = {"train": perm[:t].clone(), "valid": perm[t:t + v].clone(),
              "test": perm[t + v:t + v + s].clone()}
    tmp = path + ".tmp"
    torch.save({"x": x, "y": y, "edge_index": edge_index, "splits": splits}, tmp)
    os.replace(tmp, path)
    with open(path + ".json", "w") as f:
        json.dump(info, f)
    return path


def undirected_info(path, n):
    """`describe` of the graph after PyG's to_undirected, and its edge count."""
    side = path + ".undirected.json"
    if os.path.exists(side):
        with open(side) as f:
            return json.load(f)
    from torch_geometric.utils import to_undirected
    ei = to_undirected(torch.load(path)["edge_index"], num_nodes=n)
    ei = ei.numpy()
    info = describe(ei[1], n, ei[0])
    info["edges"] = int(ei.shape[1])
    with open(side, "w") as f:
        json.dump(info, f)
    return info
