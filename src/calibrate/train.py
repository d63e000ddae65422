"""headroom calibrate's own PyG job: one small, real NeighborLoader training
run on a graph generated inside the run, as `headroom calibrate` designed it.

headroom writes this file into a private directory and runs it under its
probe (`watch --probe`), once per designed setting, in a memory cgroup of its
own, with the Python the user gave:

    python train.py stack              what is installed (no import of torch)
    python train.py run '{...}'        one training run, settings as JSON
    python train.py gpu SIZES SNAPSHOT PyTorch on GPU 0, step by step: after
                                       each step one JSON line on stdout, then
                                       it waits for a line on stdin (headroom
                                       reads NVML for this process meanwhile)

The run is what a PyG user's script does (benches/pyg/case.py is the
corpus's harness): build the graph's tensors, NeighborLoaders over the
train split (and the evaluation splits, resident or built on demand), a
GraphSAGE model with Adam, then per epoch a training pass and the
evaluation passes without gradients. Nothing here measures memory: the
probe records the settings and phases, watch the cgroup.

The graph is Chung-Lu with a power-law in-degree (destinations drawn with
weights about i^(-1/(exponent-1)), sources uniform, ids shuffled), generated
in chunks of 8,192 edges so that no generator temporary is large enough for
glibc to map on its own: the load phase then holds the graph's tensors and
the runtime, which is what the model says it holds.
"""

import json
import os
import sys

CHUNK = 8192


def stack():
    """The stack as installed, without importing torch (seconds saved):
    versions from the packages' metadata, the C library and the kernel."""
    from importlib import metadata, util

    def version(dist):
        try:
            return metadata.version(dist)
        except Exception:
            return None

    out = {
        "python": sys.version.split()[0],
        "executable": sys.executable,
        "torch": version("torch") if util.find_spec("torch") else None,
        "torch_geometric": version("torch_geometric") if util.find_spec("torch_geometric") else None,
        "pyg_lib": version("pyg_lib") if util.find_spec("pyg_lib") else None,
        "torch_sparse": version("torch_sparse") if util.find_spec("torch_sparse") else None,
        "kernel": os.uname().release,
    }
    try:
        out["glibc"] = os.confstr("CS_GNU_LIBC_VERSION")
    except (ValueError, OSError):
        out["glibc"] = None
    print(json.dumps(out))


def generate(c):
    """The graph's tensors: edge_index (int64 COO), x (float32), y, splits.
    Node i (from 1) draws destinations with probability F(i+1) - F(i),
    F(x) = (x^q - 1) / ((n+1)^q - 1), q = 1 - 1/(exponent - 1): inverted in
    closed form, so a chunk costs a few element-wise operations. One thread:
    on a busy machine torch's intra-op threads spend more time waiting for
    each other than they save on operations this small."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    n, e = c["nodes"], c["edges"]
    q = 1.0 - 1.0 / (c["exponent"] - 1.0)
    top = (n + 1.0) ** q - 1.0
    g = torch.Generator().manual_seed(c["seed"])
    ids = torch.randperm(n, generator=g)
    edge_index = torch.empty(2, e, dtype=torch.long)
    for lo in range(0, e, CHUNK):
        hi = min(e, lo + CHUNK)
        u = torch.rand(hi - lo, generator=g, dtype=torch.float64)
        rank = u.mul_(top).add_(1.0).pow_(1.0 / q).long().sub_(1).clamp_(0, n - 1)
        edge_index[1, lo:hi] = ids[rank]
        edge_index[0, lo:hi] = ids[torch.randint(0, n, (hi - lo,), generator=g)]
        del u, rank
    del ids
    x = torch.randn(n, c["features"], generator=g)
    y = torch.randint(0, c["classes"], (n,), generator=g)
    perm = torch.randperm(n, generator=g)
    t, v, s = c["train"], c["valid"], c["test"]
    splits = {"train": perm[:t].clone(), "valid": perm[t:t + v].clone(),
              "test": perm[t + v:t + v + s].clone()}
    del perm
    torch.set_num_threads(threads)
    return edge_index, x, y, splits


def run(c):
    import torch
    import torch.nn.functional as F
    from torch_geometric.data import Data
    from torch_geometric.loader import NeighborLoader
    from torch_geometric.nn import GraphSAGE

    torch.manual_seed(c["seed"])
    edge_index, x, y, splits = generate(c)
    data = Data(x=x, y=y, edge_index=edge_index, num_nodes=c["nodes"])
    del edge_index, x, y
    device = torch.device(c.get("device", "cpu"))

    def loader(split, train):
        w = c["workers"]
        kw = dict(num_neighbors=c["fanout"], batch_size=c["batch"], input_nodes=splits[split],
                  shuffle=train, num_workers=w, persistent_workers=c["persistent"] and w > 0)
        return NeighborLoader(data, **kw)

    train_loader = loader("train", True)
    resident = {}
    if c["eval_loaders"] == "resident":
        resident = {s: loader(s, False) for s in ("valid", "test")}
    model = GraphSAGE(c["features"], c["hidden"], 2, c["classes"]).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)

    def one_pass(ld, train):
        model.train(train)
        with torch.set_grad_enabled(train):
            for batch in ld:
                batch = batch.to(device)
                out = model(batch.x, batch.edge_index)[:batch.batch_size]
                if train:
                    F.cross_entropy(out, batch.y[:batch.batch_size]).backward()
                    opt.step()
                    opt.zero_grad()

    for _ in range(c["epochs"]):
        one_pass(train_loader, True)
        for s in ("valid", "test"):
            if c["eval_loaders"] == "resident":
                one_pass(resident[s], False)
            elif c["eval_loaders"] == "on_demand":
                ld = loader(s, False)
                one_pass(ld, False)
                del ld


def _anon_shmem():
    """This process's RssAnon + RssShmem, bytes."""
    out = 0
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(("RssAnon:", "RssShmem:")):
                out += int(line.split()[1]) * 1024
    return out


def PlainSage(torch, features, hidden, classes):
    """Two mean-aggregating SAGE layers in torch alone, for a Python with
    torch but no PyG: the GPU step's real training step still runs."""

    class Sage(torch.nn.Module):
        def __init__(self):
            super().__init__()
            L = torch.nn.Linear
            self.l1, self.r1 = L(features, hidden), L(features, hidden, bias=False)
            self.l2, self.r2 = L(hidden, classes), L(hidden, classes, bias=False)

        @staticmethod
        def mean(h, ei):
            out = torch.zeros_like(h).index_add_(0, ei[1], h[ei[0]])
            ones = torch.ones(ei.size(1), device=h.device, dtype=h.dtype)
            deg = torch.zeros(h.size(0), device=h.device, dtype=h.dtype).index_add_(0, ei[1], ones)
            return out / deg.clamp_(min=1).unsqueeze(1)

        def forward(self, x, ei):
            h = torch.relu(self.l1(self.mean(x, ei)) + self.r1(x))
            return self.l2(self.mean(h, ei)) + self.r2(h)

    return Sage()


def gpu(sizes, snapshot):
    """What PyTorch's CUDA side costs on this card: the host memory CUDA's
    initialisation adds, the context NVML sees beside PyTorch's reserve, what
    the caching allocator reserves for each request of `sizes` (all kept
    alive), and one real GraphSAGE training step's allocated and reserved
    peaks with the allocator's history (`snapshot`), which headroom replays
    through its simulator."""

    def say(**kw):
        print(json.dumps(kw), flush=True)
        sys.stdin.readline()

    host = _anon_shmem()
    import torch

    host_torch = _anon_shmem()
    say(at="before", host_import=host_torch - host)
    dev = torch.device("cuda")
    torch.cuda.init()
    a = torch.randn(256, 256, device=dev)
    (a @ a).sum().item()
    del a
    torch.cuda.synchronize()
    say(at="context", reserved=torch.cuda.memory_reserved(), host_cuda=_anon_shmem() - host_torch,
        device=torch.cuda.get_device_name(), cuda=torch.version.cuda, torch=torch.__version__)
    torch.cuda.empty_cache()
    # What stays reserved after empty_cache (cuBLAS's workspace, allocated
    # through the caching allocator and kept): the requests start from it.
    say(at="baseline", allocated=torch.cuda.memory_allocated(), reserved=torch.cuda.memory_reserved())
    kept = []
    for n in sizes:
        kept.append(torch.empty(n, dtype=torch.uint8, device=dev))
        say(at="alloc", request=n, allocated=torch.cuda.memory_allocated(),
            reserved=torch.cuda.memory_reserved())
    del kept
    torch.cuda.empty_cache()
    import torch.nn.functional as F
    try:
        from torch_geometric.nn import GraphSAGE
        model, name = GraphSAGE(128, 256, 2, 16), "GraphSAGE (torch_geometric)"
    except ImportError:
        model, name = PlainSage(torch, 128, 256, 16), "SAGE in plain torch (no torch_geometric)"
    torch.cuda.reset_peak_memory_stats()
    torch.cuda.memory._record_memory_history(max_entries=100000)
    g = torch.Generator(device=dev).manual_seed(0)
    model = model.to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    for nodes, edges in ((60000, 400000), (45000, 300000), (70000, 480000), (52000, 350000)):
        x = torch.randn(nodes, 128, device=dev, generator=g)
        ei = torch.randint(0, nodes, (2, edges), device=dev, generator=g)
        y = torch.randint(0, 16, (nodes,), device=dev, generator=g)
        out = model(x, ei)[:1024]
        F.cross_entropy(out, y[:1024]).backward()
        opt.step()
        opt.zero_grad()
        del x, ei, y, out
    torch.cuda.synchronize()
    torch.cuda.memory._dump_snapshot(snapshot)
    torch.cuda.memory._record_memory_history(enabled=None)
    say(at="step", model=name, allocated_peak=torch.cuda.max_memory_allocated(),
        reserved_peak=torch.cuda.max_memory_reserved(), reserved=torch.cuda.memory_reserved())


def main(argv):
    if argv[1:2] == ["stack"]:
        stack()
    elif argv[1:2] == ["run"] and len(argv) == 3:
        run(json.loads(argv[2]))
    elif argv[1:2] == ["gpu"] and len(argv) == 4:
        gpu([int(n) for n in argv[2].split(",")], argv[3])
    else:
        sys.exit("usage: train.py stack | run JSON | gpu SIZES SNAPSHOT")


if __name__ == "__main__":
    main(sys.argv)
