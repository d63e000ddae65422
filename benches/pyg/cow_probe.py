# Do idle workers of deleted loaders pin copy-on-write copies of the main
# process's heap that CPU training rewrites? Prints, after each epoch's
# training, one JSON line: the cgroup's anonymous memory (v1 memory.stat
# rss), the main process's anonymous memory, the children alive and their
# summed private anonymous pages, and `pinned`, the rest: anonymous pages
# the cgroup is charged for that no process maps privately (the old page
# versions only the idle children share). Also the main process's anonymous
# memory when each evaluation forked its workers, less its value before
# training (`heap_at_fork`). Run in a memory cgroup (v1):
#   headroom watch --limit 8G -- .venv/bin/python benches/pyg/cow_probe.py [--gc] [shape...]
# (--gc: gc.collect() after each del). With the defaults, on 2026-11-27
# (docs/accuracy.md, "Copy-on-write versions kept by deleted loaders'
# workers"): after epochs 1-3 `pinned` was 53, 115 and 179 MiB, the main
# process's anonymous memory 704, 811 and 903 MiB, 4, 6 and 6 children with
# 80-122 MiB of private pages; the cgroup's rss after epoch 3 was 1204 MiB,
# against 672 MiB with --gc (no children, nothing pinned). An earlier form,
# whose training loop left its last batch alive at module level (freed in
# the parent after the fork), pinned 87, 216 and 284 MiB.
import argparse, gc, json, os
import torch
import torch.nn.functional as F
from torch_geometric.data import Data
from torch_geometric.loader import NeighborLoader
from torch_geometric.nn import GAT, GCN, GIN, GraphSAGE

p = argparse.ArgumentParser()
p.add_argument("--gc", action="store_true")
p.add_argument("--nodes", type=int, default=200000)
p.add_argument("--edges", type=int, default=2000000)
p.add_argument("--features", type=int, default=128)
p.add_argument("--conv", choices=["sage", "gcn", "gat", "gin"], default="sage")
p.add_argument("--hidden", type=int, default=256)
p.add_argument("--layers", type=int, default=2)
p.add_argument("--heads", type=int, default=4)
p.add_argument("--batch", type=int, default=1024)
p.add_argument("--fanout", default="10,10")
p.add_argument("--train", type=int, default=8192)
p.add_argument("--eval", type=int, default=2048)
p.add_argument("--workers", type=int, default=2, help="evaluation loaders' workers")
p.add_argument("--epochs", type=int, default=4)
a = p.parse_args()
torch.manual_seed(0)
N, fan = a.nodes, [int(f) for f in a.fanout.split(",")]
data = Data(x=torch.randn(N, a.features), edge_index=torch.randint(0, N, (2, a.edges)),
            y=torch.randint(0, 10, (N,)))
cls = {"sage": GraphSAGE, "gcn": GCN, "gat": GAT, "gin": GIN}[a.conv]
model = cls(a.features, a.hidden, a.layers, 10, **({"heads": a.heads} if a.conv == "gat" else {}))
opt = torch.optim.Adam(model.parameters())
train = NeighborLoader(data, num_neighbors=fan, batch_size=a.batch,
                       input_nodes=torch.arange(a.train), shuffle=True)


def rollup(p):
    out = {}
    for l in open(f'/proc/{p}/smaps_rollup'):
        k, _, v = l.partition(':')
        if k in ('Private_Dirty', 'Rss', 'Anonymous'):
            out[k] = int(v.split()[0]) >> 10
    return out


def kids():
    out = []
    for p in os.listdir('/proc'):
        if p.isdigit():
            try:
                if f'PPid:\t{os.getpid()}\n' in open(f'/proc/{p}/status').read():
                    out.append(rollup(p))
            except OSError:
                pass
    return out


def cgroup_rss():
    cg = [l for l in open('/proc/self/cgroup') if ':memory:' in l][0].split(':')[2].strip()
    ms = dict(l.split() for l in open(f'/sys/fs/cgroup/memory{cg}/memory.stat'))
    return int(ms['rss']) >> 20


base = rollup(os.getpid())['Anonymous']
at_fork = []


def fit():
    """One epoch; a function, as in case.py, so that no batch outlives it."""
    model.train()
    for b in train:
        opt.zero_grad()
        loss = F.cross_entropy(model(b.x, b.edge_index)[:b.batch_size], b.y[:b.batch_size])
        loss.backward()
        opt.step()


def evaluate(loader):
    with torch.no_grad():
        for b in loader:
            model(b.x, b.edge_index)


for epoch in range(a.epochs):
    fit()
    k, main = kids(), rollup(os.getpid())
    private = sum(x['Private_Dirty'] for x in k)
    rss = cgroup_rss()
    print(json.dumps({"epoch": epoch, "cgroup_rss": rss, "main_anon": main['Anonymous'],
                      "children": len(k), "children_private": private,
                      "pinned": rss - main['Anonymous'] - private,
                      "heap_at_fork": at_fork, "base": base}), flush=True)
    model.eval()
    at_fork.append(rollup(os.getpid())['Anonymous'] - base)
    for split in ('valid', 'test'):
        loader = NeighborLoader(data, num_neighbors=fan, batch_size=a.batch,
                                input_nodes=torch.arange(a.eval), num_workers=a.workers,
                                persistent_workers=True)
        evaluate(loader)
        del loader
        if a.gc:
            gc.collect()
