"""One real PyG NeighborLoader training run, its options mirroring headroom's
job spec, its phases marked with wall-clock timestamps.

    python case.py --graph rmat --nodes 1048576 --edges 16000000 --batch 1024 \
        --fanout 15,10 --workers 2 --eval-loaders resident --marks marks.jsonl

The graph is generated once (graph.py) and loaded with torch.load, as a real
job loads its processed dataset; the data file's page cache is dropped after
loading so the cgroup's figure is what the OOM killer weighs (anonymous and
shared memory), not clean file pages it could reclaim.

Phases: load (torch.load, to_undirected, sorting), build_loaders (the loaders
that exist at start-up), then per epoch train and evaluate. `--prepare-only`
builds the graph and exits (the runner does this outside the measurement).
"""

import argparse
import gc
import json
import os
import sys
import time

import graph


def parse(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    g = p.add_argument_group("graph")
    g.add_argument("--graph", choices=["powerlaw", "rmat", "uniform"], default="powerlaw")
    g.add_argument("--nodes", type=int, required=True)
    g.add_argument("--edges", type=int, required=True)
    g.add_argument("--exponent", type=float, default=2.2)
    g.add_argument("--features", type=int, default=128)
    g.add_argument("--dtype", default="float32", choices=["float32", "float16", "bfloat16", "float64"])
    g.add_argument("--classes", type=int, default=32)
    g.add_argument("--train", type=int, required=True, help="train split nodes")
    g.add_argument("--valid", type=int, default=0)
    g.add_argument("--test", type=int, default=0)
    g.add_argument("--sorted-input", action="store_true",
                   help="edge_index is stored sorted by destination")
    g.add_argument("--seed", type=int, default=0)
    m = p.add_argument_group("model")
    m.add_argument("--conv", choices=["sage", "gcn", "gat", "gin"], default="sage")
    m.add_argument("--layers", type=int, default=2)
    m.add_argument("--hidden", type=int, default=256)
    m.add_argument("--heads", type=int, default=1)
    l = p.add_argument_group("loader")
    l.add_argument("--batch", type=int, default=1024)
    l.add_argument("--eval-batch", type=int, default=None)
    l.add_argument("--fanout", default="15,10")
    l.add_argument("--workers", type=int, default=0)
    l.add_argument("--eval-workers", type=int, default=None)
    l.add_argument("--persistent", action="store_true")
    l.add_argument("--prefetch", type=int, default=2)
    l.add_argument("--pin-memory", action="store_true")
    l.add_argument("--eval-loaders", choices=["resident", "on_demand", "none", "layerwise"],
                   default="resident",
                   help="layerwise: PyG's examples' subgraph_loader (num_neighbors=[-1] over "
                        "every node, built at start-up) and layer-by-layer inference, once, "
                        "after the last epoch")
    l.add_argument("--evaluate-train", action="store_true")
    l.add_argument("--gc-collect", action="store_true",
                   help="gc.collect() after deleting an on-demand loader (NeighborLoader "
                        "holds itself through its bound collate_fn: del alone frees nothing)")
    l.add_argument("--shared-sampler", action="store_true")
    l.add_argument("--is-sorted", choices=["no", "given", "sort"], default="no",
                   help="no: is_sorted=False; given: the stored edge_index is sorted; "
                        "sort: the script sorts edge_index itself, then is_sorted=True")
    l.add_argument("--to-undirected", action="store_true")
    r = p.add_argument_group("run")
    r.add_argument("--epochs", type=int, default=1)
    r.add_argument("--marks", default=None, help="append phase marks (JSONL) here")
    r.add_argument("--stats", default=None, help="write batch statistics (JSON) here")
    r.add_argument("--mallinfo", default=None,
                   help="append glibc's mallinfo2 and the processes' anonymous memory after "
                        "each training step's forward pass and at its end (JSONL) here")
    r.add_argument("--prepare-only", action="store_true")
    a = p.parse_args(argv)
    a.fanout = [int(f) for f in a.fanout.split(",")]
    if a.is_sorted == "given":
        a.sorted_input = True
    return a


class Marks:
    """Phase marks with wall-clock time, flushed as written."""

    def __init__(self, path):
        self.f = open(path, "a") if path else None

    def __call__(self, phase, event, **extra):
        if self.f:
            self.f.write(json.dumps({"t": time.time(), "phase": phase, "event": event, **extra}) + "\n")
            self.f.flush()


def load(a, marks):
    import torch
    from torch_geometric.data import Data
    from torch_geometric.utils import to_undirected

    path = graph.build(a)
    marks("load", "start")
    d = torch.load(path)
    fd = os.open(path, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)
    edge_index = d["edge_index"]
    if a.to_undirected and not graph.presorted_undirected(a):
        edge_index = to_undirected(edge_index, num_nodes=a.nodes)
    if a.is_sorted == "sort":
        edge_index = edge_index[:, torch.argsort(edge_index[1], stable=True)]
    data = Data(x=d["x"], y=d["y"], edge_index=edge_index, num_nodes=a.nodes)
    splits = d["splits"]
    del d, edge_index
    marks("load", "end", edges=int(data.edge_index.size(1)))
    return data, splits


class HeapLog:
    """glibc's own account of the main process's heap (mallinfo2: arena is
    the non-mmapped heap, fordblks its free part, hblkhd the mmapped
    chunks), beside the main process's RssAnon and the children's
    Private_Dirty, one JSON line per call: what the kept-heap terms of
    src/estimate/host_heap.rs claim, read from the allocator itself."""

    FIELDS = ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
              "fsmblks", "uordblks", "fordblks", "keepcost")

    def __init__(self, path):
        self.f = open(path, "a") if path else None
        self.step = 0
        if self.f:
            import ctypes

            class Info(ctypes.Structure):
                _fields_ = [(n, ctypes.c_size_t) for n in self.FIELDS]

            self.libc = ctypes.CDLL("libc.so.6")
            self.libc.mallinfo2.restype = Info

    def __call__(self, kind, i, moment):
        if not self.f:
            return
        m = self.libc.mallinfo2()
        row = {"t": time.time(), "kind": kind, "batch": i, "moment": moment, "step": self.step}
        row.update({n: getattr(m, n) for n in self.FIELDS})
        procs = probe_children()
        row["main_anon"] = procs[0].get("Anonymous")
        row["children_private_dirty"] = sum(p.get("Private_Dirty", 0) for p in procs[1:])
        row["children"] = len(procs) - 1
        self.f.write(json.dumps(row) + "\n")
        self.f.flush()
        self.step += moment == "end"


def probe_children():
    """The main process and each child (DataLoader workers): memory as
    smaps_rollup and status count it, bytes, read from the main process."""
    out = []
    try:
        kids = open(f"/proc/{os.getpid()}/task/{os.getpid()}/children").read().split()
    except OSError:
        return out
    for pid in [str(os.getpid())] + kids:
        row = {"pid": int(pid), "main": pid == str(os.getpid())}
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                for line in f:
                    k, _, v = line.partition(":")
                    if v.strip().endswith("kB"):
                        row[k] = int(v.split()[0]) * 1024
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith(("RssAnon", "RssFile", "RssShmem")):
                        k, v = line.split(":")
                        row[k] = int(v.split()[0]) * 1024
        except OSError:
            continue
        out.append(row)
    return out


def layerwise_loader(a, data, workers, is_sorted):
    """PyG's examples' `subgraph_loader`: every node, all in-neighbours, one
    hop, over a shallow copy of the data without features and labels."""
    import copy

    import torch
    from torch_geometric.loader import NeighborLoader

    kw = dict(num_neighbors=[-1], batch_size=a.eval_batch or a.batch, input_nodes=None,
              shuffle=False, num_workers=workers, persistent_workers=a.persistent and workers > 0,
              pin_memory=a.pin_memory, is_sorted=is_sorted)
    if workers > 0:
        kw["prefetch_factor"] = a.prefetch
    ld = NeighborLoader(copy.copy(data), **kw)
    del ld.data.x, ld.data.y
    ld.data.num_nodes = data.num_nodes
    ld.data.n_id = torch.arange(data.num_nodes)
    return ld


def make_model(a):
    from torch_geometric.nn import GAT, GCN, GIN, GraphSAGE

    cls = {"sage": GraphSAGE, "gcn": GCN, "gat": GAT, "gin": GIN}[a.conv]
    kw = {"heads": a.heads} if a.conv == "gat" else {}
    return cls(a.features, a.hidden, a.layers, a.classes, **kw)


def main():
    a = parse()
    if a.prepare_only:
        print(graph.build(a))
        return
    marks = Marks(a.marks)
    marks("runtime", "start", pid=os.getpid())
    import torch
    import torch.nn.functional as F
    from torch_geometric.loader import NeighborLoader
    from torch_geometric.sampler import NeighborSampler

    torch.manual_seed(a.seed)
    marks("runtime", "end")
    data, splits = load(a, marks)
    is_sorted = a.is_sorted != "no"
    sampler = None
    we = a.workers if a.eval_workers is None else a.eval_workers

    def loader(split, train):
        w = a.workers if train else we
        kw = dict(num_neighbors=a.fanout, batch_size=a.batch if train else (a.eval_batch or a.batch),
                  input_nodes=splits[split], shuffle=train, num_workers=w,
                  persistent_workers=a.persistent and w > 0, pin_memory=a.pin_memory,
                  is_sorted=is_sorted)
        if w > 0:
            kw["prefetch_factor"] = a.prefetch
        if sampler is not None:
            kw["neighbor_sampler"] = sampler
        return NeighborLoader(data, **kw)

    marks("build_loaders", "start")
    if a.shared_sampler:
        sampler = NeighborSampler(data, num_neighbors=a.fanout, is_sorted=is_sorted,
                                  share_memory=max(a.workers, we) > 0)
    train_loader = loader("train", True)
    eval_loaders = {}
    if a.eval_loaders == "resident":
        eval_loaders = {s: loader(s, False) for s in ("valid", "test")}
    subgraph_loader = None
    if a.eval_loaders == "layerwise":
        subgraph_loader = layerwise_loader(a, data, we, is_sorted)
    marks("build_loaders", "end")

    model = make_model(a)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    sizes = {"train": [], "eval": []}

    probes = {}
    heap_log = HeapLog(a.mallinfo)

    def run(ld, train, kind):
        model.train(train)
        with torch.set_grad_enabled(train):
            for i, batch in enumerate(ld):
                if i == 3 and kind not in probes:
                    probes[kind] = probe_children()
                sizes[kind].append((int(batch.num_nodes), int(batch.edge_index.size(1))))
                out = model(batch.x.float(), batch.edge_index)[:batch.batch_size]
                heap_log(kind, i, "forward")
                if train:
                    loss = F.cross_entropy(out, batch.y[:batch.batch_size])
                    loss.backward()
                    opt.step()
                    opt.zero_grad()
                heap_log(kind, i, "end")

    def inference(x_all):
        """PyG's examples' layer-wise inference (examples/reddit.py's
        `SAGE.inference(x_all, subgraph_loader)`): each layer over every node
        in 1-hop full-neighbour batches, the seeds' rows kept, concatenated."""
        model.eval()
        with torch.no_grad():
            for i, conv in enumerate(model.convs):
                xs = []
                for batch in subgraph_loader:
                    sizes["eval"].append((int(batch.num_nodes), int(batch.edge_index.size(1))))
                    x = conv(x_all[batch.n_id].float(), batch.edge_index)
                    if i < len(model.convs) - 1:
                        x = x.relu_()
                    # The example's `.cpu()` copies the seeds' rows off the GPU;
                    # on a CPU it would keep a view of the whole batch's output
                    # alive, so the copy is made explicit: the host then holds
                    # what a GPU job's host holds.
                    xs.append(x[:batch.batch_size].clone())
                x_all = torch.cat(xs, dim=0)
                del xs
        return x_all

    for epoch in range(a.epochs):
        marks("train", "start", epoch=epoch)
        run(train_loader, True, "train")
        marks("train", "end", epoch=epoch)
        if a.eval_loaders == "layerwise":
            # Once, after the last epoch: the peak of a pass does not grow
            # with how many passes ran, and a pass visits every node.
            if epoch == a.epochs - 1:
                marks("evaluate", "start", epoch=epoch)
                inference(data.x)
                marks("evaluate", "end", epoch=epoch)
            continue
        if a.eval_loaders == "none" and not a.evaluate_train:
            continue
        marks("evaluate", "start", epoch=epoch)
        if a.evaluate_train:
            run(train_loader, False, "eval")
        for s in ("valid", "test"):
            if a.eval_loaders == "resident":
                run(eval_loaders[s], False, "eval")
            elif a.eval_loaders == "on_demand":
                ld = loader(s, False)
                run(ld, False, "eval")
                del ld
                if a.gc_collect:
                    gc.collect()
        marks("evaluate", "end", epoch=epoch)
    marks("end", "end")
    if a.stats:
        out = {}
        for kind, v in sizes.items():
            if v:
                n = torch.tensor([x[0] for x in v], dtype=torch.float64)
                e = torch.tensor([x[1] for x in v], dtype=torch.float64)
                out[kind] = {"batches": len(v), "mean_nodes": n.mean().item(),
                             "max_nodes": n.max().item(), "mean_edges": e.mean().item(),
                             "max_edges": e.max().item()}
        # Every training batch's (nodes, edges) in order: a GPU replay of the
        # run's steps (benches/gpu) uses the real sequence.
        out["train"]["sizes"] = sizes["train"]
        out["workers"] = probes
        with open(a.stats, "w") as f:
            json.dump(out, f)


if __name__ == "__main__":
    sys.exit(main())
