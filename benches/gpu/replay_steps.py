#!/usr/bin/env python3
"""Real GPU training steps for real-run corpora: what headroom's GPU
estimate is scored against.

The corpora (tests/fixtures/pyg/*.jsonl, /work/runs/*.jsonl) were run on a
CPU with PyG's real NeighborLoader; each row keeps its job and every training
batch's (nodes, edges) in the order the loader gave them. On a machine with
an NVIDIA GPU, this replays each job's steps with PyTorch and PyG: the batch a
NeighborLoader yields (x, y, n_id, e_id, input_id, edge_index, with the row's
sizes) is built on the host and moved with `batch.to('cuda')`, then the
job's own model (benches/pyg/case.py's make_model), forward, cross-entropy on
the seeds, backward and Adam, batch after batch; then one no-grad pass over
the largest evaluation batch. Which neighbours were sampled does not change
GPU memory: every PyG conv runs over all of the batch's nodes and edges.

    python3 replay_steps.py export CORPUS.jsonl... > steps.json   (here, no torch)
    python3 replay_steps.py run steps.json OUT.jsonl [--jobs 8]    (GPU machine)

Each job runs in its own process (its own CUDA context, as a real job has);
OUT.jsonl gets one row per job: torch's allocated and reserved peaks for the
training steps and for the evaluation pass, and NVML's figure for the process
(context + reserved) after each.
"""

import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
# HEADROOM_SERIES=1: also each step's figures and the allocator's segments
# after each phase (the peaks stay those of the whole phase).
# HEADROOM_TRACE=DIR: also the allocator's recorded history (`_snapshot()`,
# with each request's Python frames) in DIR/ID.pickle, for simulate-alloc.
SERIES = os.environ.get("HEADROOM_SERIES") == "1"


def export(paths):
    jobs = []
    for path in paths:
        for line in open(path):
            r = json.loads(line)
            b = r.get("batches") or {}
            sizes = (b.get("train") or {}).get("sizes")
            if not sizes:
                continue
            ev = b.get("eval") or {}
            jobs.append({
                "id": r["id"], "corpus": os.path.basename(path), "job": r["job"],
                "train_sizes": sizes,
                "eval_max": [int(ev["max_nodes"]), int(ev["max_edges"])] if ev else None,
            })
    json.dump(jobs, sys.stdout)


def nvml_process_bytes(pid):
    import pynvml
    pynvml.nvmlInit()
    try:
        h = pynvml.nvmlDeviceGetHandleByIndex(0)
        for p in pynvml.nvmlDeviceGetComputeRunningProcesses(h):
            if p.pid == pid:
                return p.usedGpuMemory
    finally:
        pynvml.nvmlShutdown()
    return None


class Replay:
    """A corpus job on the card (or, without CUDA, a dry run on the CPU):
    its own model and Adam (benches/pyg/case.py's make_model), and batches
    built as its NeighborLoader builds them, at the sizes given."""

    def __init__(self, spec):
        import torch
        from torch_geometric.data import Data
        sys.path.insert(0, os.path.join(HERE, "..", "pyg"))
        from case import make_model

        job = spec["job"]
        self.d, m, self.ld = job["dataset"], job["model"], job["loader"]
        d = self.d

        class A:
            # The spec's hidden is per head (run_corpus.py wrote hidden // heads
            # for GAT); case.py's make_model takes PyG's GAT hidden_channels,
            # which PyG splits over the heads: give it back the whole width.
            # (Before 2026-11-27 the replays built GAT 1/heads as wide.)
            conv, layers, heads = m["conv"], m["layers"], m.get("heads") or 1
            hidden = m["hidden"] * heads if conv == "gat" else m["hidden"]
            features, classes = d["features"], d["classes"]

        self.torch, self.Data = torch, Data
        self.dtype = getattr(torch, d.get("feature_dtype", "float32"))
        self.cuda = torch.cuda.is_available()
        self.dev = torch.device("cuda" if self.cuda else "cpu")
        self.g = torch.Generator().manual_seed(0)
        self.model = make_model(A).to(self.dev)
        self.opt = torch.optim.Adam(self.model.parameters(), lr=0.01)
        self.seeds = self.ld["batch_size"]

    def batch(self, n, e, seeds):
        """A batch of n nodes and e edges with `seeds` seed nodes, on the device."""
        t, g, d = self.torch, self.g, self.d
        x = t.randn(n, d["features"], generator=g).to(self.dtype)
        data = self.Data(x=x, y=t.randint(0, d["classes"], (n,), generator=g),
                         edge_index=t.randint(0, n, (2, e), generator=g),
                         n_id=t.arange(n), e_id=t.arange(e),
                         input_id=t.arange(seeds), batch_size=seeds)
        if self.ld.get("pin_memory") and self.cuda:
            data = data.pin_memory()
        return data.to(self.dev)

    def train_step(self, n, e):
        """One step as case.py takes it: forward, loss on the seeds, backward, Adam."""
        import torch.nn.functional as F
        self.model.train()
        b = self.batch(n, e, min(self.seeds, n))
        o = self.model(b.x.float(), b.edge_index)[:b.batch_size]
        F.cross_entropy(o, b.y[:b.batch_size]).backward()
        self.opt.step()
        self.opt.zero_grad()

    def eval_pass(self, n, e):
        """One no-grad forward at evaluation's batch size; for layer-wise
        inference, what PyG's examples do on a GPU instead (below)."""
        self.model.eval()
        seeds = min(self.ld.get("eval_batch_size") or self.seeds, n)
        if self.ld.get("eval_loaders") == "layerwise":
            return self.layerwise_pass(n, e, seeds)
        with self.torch.no_grad():
            b = self.batch(n, e, seeds)
            self.model(b.x.float(), b.edge_index)[:b.batch_size]

    @staticmethod
    def width_in(conv):
        """A conv's input channels (GINConv keeps them in its MLP only)."""
        for m in conv.modules():  # the conv itself first, then its MLP's layers
            for name in ("in_channels", "in_features"):
                w = getattr(m, name, None)
                if isinstance(w, int) and w > 0:
                    return w
        raise ValueError(f"no input width on {type(conv).__name__}")

    def layerwise_pass(self, n, e, seeds):
        """PyG's `inference(x_all, subgraph_loader)` on a GPU (examples/reddit.py):
        x_all stays on the host; each layer, batch by batch, moves the batch's
        rows and edge_index to the card, runs that one conv (and ReLU), and
        copies the seeds' rows back. Here each layer at the largest
        evaluation batch (n nodes, e edges). Before 2026-11-27 this pass ran
        every layer on that batch at once, which no layer-wise job does."""
        t, g, dev = self.torch, self.g, self.dev
        with t.no_grad():
            convs = list(self.model.convs)
            for i, conv in enumerate(convs):
                x = t.randn(n, self.width_in(conv), generator=g).to(dev)
                edge_index = t.randint(0, n, (2, e), generator=g).to(dev)
                out = conv(x, edge_index)
                if i < len(convs) - 1:
                    out = out.relu_()
                out[:seeds].cpu()
                del x, edge_index, out


def one(spec):
    r = Replay(spec)
    torch, cuda = r.torch, r.cuda

    def figures():
        # Without CUDA (a dry run of this script on a CPU) the figures are null.
        if not cuda:
            return None
        torch.cuda.synchronize()
        return {"allocated_peak": torch.cuda.max_memory_allocated(),
                "reserved_peak": torch.cuda.max_memory_reserved(),
                "reserved": torch.cuda.memory_reserved(),
                "nvml": nvml_process_bytes(os.getpid())}

    def segments():
        # The allocator's segments (bytes, bytes in use, pool): which requests
        # made the reserve, the evidence a reserve model is fitted to.
        if not cuda:
            return None
        return [[s["total_size"], s["allocated_size"], s["segment_type"][0]]
                for s in torch.cuda.memory_snapshot()]

    trace = os.environ.get("HEADROOM_TRACE")
    if cuda and trace:
        # The allocator's own record of every request, with the Python line
        # that made it: the real step a simulated one is held against.
        torch.cuda.memory._record_memory_history(context="alloc", stacks="python")
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    out = {"id": spec["id"], "corpus": spec["corpus"], "batches": len(spec["train_sizes"])}
    # Per step: its allocated peak and what the allocator reserved after it.
    series, peak_alloc, peak_res = [], 0, 0
    t = time.time()
    for n, e in spec["train_sizes"]:
        r.train_step(n, e)
        if cuda and SERIES:
            torch.cuda.synchronize()
            a, res = torch.cuda.max_memory_allocated(), torch.cuda.max_memory_reserved()
            peak_alloc, peak_res = max(peak_alloc, a), max(peak_res, res)
            series.append([a, torch.cuda.memory_reserved()])
            torch.cuda.reset_peak_memory_stats()
    out["train"] = figures()
    if cuda and SERIES:
        out["train"]["allocated_peak"] = max(peak_alloc, out["train"]["allocated_peak"])
        out["train"]["reserved_peak"] = max(peak_res, out["train"]["reserved_peak"])
        out["series"] = series
        out["train_segments"] = segments()
    if spec.get("eval_max"):
        r.eval_pass(*spec["eval_max"])
        out["evaluate"] = figures()
        if cuda and SERIES:
            out["evaluate"]["reserved_peak"] = max(peak_res, out["evaluate"]["reserved_peak"])
            out["evaluate"]["allocated_peak"] = max(peak_alloc, out["evaluate"]["allocated_peak"])
            out["eval_segments"] = segments()
    if cuda and trace:
        import pickle
        with open(os.path.join(trace, spec["id"] + ".pickle"), "wb") as f:
            pickle.dump(torch.cuda.memory._snapshot(), f)
    out["seconds"] = round(time.time() - t, 2)
    out["versions"] = {"torch": torch.__version__, "cuda": torch.version.cuda,
                       "device": torch.cuda.get_device_name() if cuda else "cpu"}
    print(json.dumps(out), flush=True)


def run(path, out_path, jobs):
    specs = json.load(open(path))
    running, done = [], 0
    with open(out_path, "w") as out:
        def reap(block):
            nonlocal done
            for p, s in list(running):
                if block or p.poll() is not None:
                    stdout, stderr = p.communicate()
                    line = stdout.strip().splitlines()[-1:] if p.returncode == 0 else []
                    row = json.loads(line[0]) if line else {
                        "id": s["id"], "corpus": s["corpus"],
                        "failed": (stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1]}
                    out.write(json.dumps(row) + "\n")
                    out.flush()
                    running.remove((p, s))
                    done += 1
                    print(f"{done}/{len(specs)} {s['id']}: {row.get('failed', 'ok')}", flush=True)
                    if not block:
                        return
        for s in specs:
            while len(running) >= jobs:
                reap(False)
                time.sleep(0.05)
            p = subprocess.Popen([sys.executable, __file__, "one", json.dumps(s)],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            running.append((p, s))
        while running:
            reap(True)


def main(argv):
    if argv[1:2] == ["export"]:
        export(argv[2:])
    elif argv[1:2] == ["one"]:
        one(json.loads(argv[2]))
    elif argv[1:2] == ["run"] and len(argv) >= 4:
        jobs = int(argv[5]) if len(argv) > 5 and argv[4] == "--jobs" else 8
        run(argv[2], argv[3], jobs)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
