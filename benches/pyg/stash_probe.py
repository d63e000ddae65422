"""How many batches a NeighborLoader's main process holds out of order.

    benches/pyg/.venv/bin/python benches/pyg/stash_probe.py [NODES] [EDGES] [WORKERS] [PREFETCH] [EPOCHS]

PyTorch's `_MultiProcessingDataLoaderIter._next_data` takes batches from
the result queue in the order workers finish them and keeps those that
arrive before the one it awaits (`self._task_info[idx] += (data,)`): they
are received, so mapped in the main process's RSS, while the rest of the
outstanding batches wait in /dev/shm, mapped by no process
(shm_queue_rss.py). This counts the stashed batches at every step of a
real NeighborLoader (a Chung-Lu power-law graph, 256 float16 features,
batch 1024, fanout [15, 10]: the corpus's pl200k runs), with a training
step's worth of work between batches (a SAGE forward and backward).
"""

import collections
import sys

import numpy as np
import torch
import torch.nn.functional as F
from torch_geometric.data import Data
from torch_geometric.loader import NeighborLoader
from torch_geometric.nn import GraphSAGE


def graph(n, e, seed=0):
    rng = np.random.default_rng(seed)
    w = np.arange(1, n + 1, dtype=np.float64) ** (-1 / 1.5)
    dst = rng.choice(n, size=e, p=w / w.sum())
    src = rng.integers(0, n, size=e)
    ei = torch.from_numpy(np.stack([src, dst]).astype(np.int64))
    x = torch.randn(n, 256).half()
    y = torch.randint(0, 32, (n,))
    return Data(x=x, y=y, edge_index=ei, num_nodes=n)


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
    e = int(sys.argv[2]) if len(sys.argv) > 2 else 2_400_000
    workers = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    prefetch = int(sys.argv[4]) if len(sys.argv) > 4 else 2
    epochs = int(sys.argv[5]) if len(sys.argv) > 5 else 2
    data = graph(n, e)
    loader = NeighborLoader(data, num_neighbors=[15, 10], batch_size=1024,
                            input_nodes=torch.arange(16384), shuffle=True,
                            num_workers=workers, prefetch_factor=prefetch,
                            persistent_workers=True)
    model = GraphSAGE(256, 256, 2, 32)
    opt = torch.optim.Adam(model.parameters())
    counts = collections.Counter()
    for _ in range(epochs):
        it = iter(loader)
        for batch in it:
            stashed = sum(1 for v in it._task_info.values() if len(v) == 2)
            counts[stashed] += 1
            out = model(batch.x.float(), batch.edge_index)[:batch.batch_size]
            F.cross_entropy(out, batch.y[:batch.batch_size]).backward()
            opt.step()
            opt.zero_grad()
    steps = sum(counts.values())
    print(f"{workers} workers x prefetch {prefetch} ({workers * prefetch} outstanding), "
          f"{steps} steps; batches held out of order at a step: "
          + ", ".join(f"{k}: {v}" for k, v in sorted(counts.items())))


if __name__ == "__main__":
    main()
