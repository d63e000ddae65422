"""GPU memory of real PyG training steps, replayed on a real GPU.

    python3 benches/gpu/replay.py jobs.json out.json [--snapshot DIR]

Each job of jobs.json (benches/gpu/jobs.py writes it from real-run corpus
rows) names a PyG model (BasicGNN: GraphSAGE, GCN, GAT, GIN), the dataset's
feature width, dtype and classes, and the sequence of training batches a real
NeighborLoader run drew: (sampled nodes, sampled edges, seeds) per step. The
job runs in a fresh Python process, so that its CUDA context and allocator
start empty, and trains on those batch shapes (features and edge_index
random, the shapes exact: the memory of message passing depends on how many
nodes and edges, not which) with Adam, as case.py trains on the CPU.

It measures what plan predicts: NVML's used memory of the device with no
context (a baseline), after CUDA is initialised, after the first matrix
product (cuBLAS's workspace and kernels), and its highest reading after any
step; PyTorch's peak allocated and reserved bytes; and, with --snapshot, the
allocator's memory snapshot of the job (`headroom simulate-alloc` replays it).
Needs torch with CUDA, torch_geometric and nvidia-ml-py (pynvml); no sampler.
"""

import json
import os
import subprocess
import sys


def nvml_used():
    import pynvml

    pynvml.nvmlInit()
    h = pynvml.nvmlDeviceGetHandleByIndex(0)
    used = pynvml.nvmlDeviceGetMemoryInfo(h).used
    pynvml.nvmlShutdown()
    return int(used)


def run_job(job, snapshot_dir):
    baseline = nvml_used()
    import torch
    import torch.nn.functional as F
    from torch_geometric.nn import GAT, GCN, GIN, GraphSAGE

    torch.manual_seed(0)
    dev = torch.device("cuda")
    torch.cuda.init()
    torch.empty(1, device=dev)
    torch.cuda.synchronize()
    after_init = nvml_used()
    a = torch.randn(64, 64, device=dev)
    (a @ a).sum().item()
    del a
    torch.cuda.synchronize()
    after_matmul = nvml_used()
    torch.cuda.reset_peak_memory_stats()
    if snapshot_dir:
        torch.cuda.memory._record_memory_history(max_entries=200_000)
    cls = {"sage": GraphSAGE, "gcn": GCN, "gat": GAT, "gin": GIN}[job["conv"]]
    kw = {"heads": job["heads"]} if job["conv"] == "gat" else {}
    model = cls(job["features"], job["hidden"], job["layers"], job["classes"], **kw).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    dtype = getattr(torch, job["dtype"])
    g = torch.Generator(device=dev).manual_seed(1)
    nvml_peak, step_peaks = 0, []
    for nodes, edges, seeds in job["steps"]:
        # The batch as NeighborLoader hands it over, moved to the GPU.
        x = torch.randn(nodes, job["features"], device=dev, generator=g).to(dtype)
        edge_index = torch.randint(0, nodes, (2, edges), device=dev, generator=g)
        y = torch.randint(0, job["classes"], (nodes,), device=dev, generator=g)
        torch.cuda.reset_peak_memory_stats()
        out = model(x.float(), edge_index)[:seeds]
        loss = F.cross_entropy(out, y[:seeds])
        loss.backward()
        opt.step()
        opt.zero_grad()
        del x, edge_index, y, out, loss
        torch.cuda.synchronize()
        step_peaks.append(int(torch.cuda.max_memory_allocated()))
        nvml_peak = max(nvml_peak, nvml_used())
    result = {
        "id": job["id"],
        "device": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "baseline_bytes": baseline,
        "context_bytes": after_init - baseline,
        "context_after_matmul_bytes": after_matmul - baseline,
        "nvml_peak_bytes": nvml_peak - baseline,
        "max_allocated_bytes": max(step_peaks) if step_peaks else 0,
        "reserved_bytes": int(torch.cuda.memory_reserved()),
        "max_reserved_bytes": int(torch.cuda.max_memory_reserved()),
        "step_peak_allocated_bytes": step_peaks,
        "steps": len(job["steps"]),
    }
    if snapshot_dir:
        path = os.path.join(snapshot_dir, f"{job['id']}.pickle")
        torch.cuda.memory._dump_snapshot(path)
        result["snapshot"] = os.path.basename(path)
    return result


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "--one":
        job = json.loads(sys.argv[2])
        print(json.dumps(run_job(job, sys.argv[3] if len(sys.argv) > 3 else None)))
        return
    jobs_path, out_path = sys.argv[1], sys.argv[2]
    snap = None
    if "--snapshot" in sys.argv:
        snap = sys.argv[sys.argv.index("--snapshot") + 1]
        os.makedirs(snap, exist_ok=True)
    with open(jobs_path) as f:
        jobs = json.load(f)
    results = []
    for job in jobs:
        args = [sys.executable, __file__, "--one", json.dumps(job)]
        if snap and job.get("snapshot"):
            args.append(snap)
        p = subprocess.run(args, capture_output=True, text=True)
        if p.returncode != 0:
            results.append({"id": job["id"], "error": p.stderr[-1500:]})
            print(job["id"], "FAILED", p.stderr[-300:], flush=True)
            continue
        r = json.loads(p.stdout.strip().splitlines()[-1])
        results.append(r)
        print(job["id"], "nvml peak", r["nvml_peak_bytes"] >> 20, "MiB; reserved",
              r["max_reserved_bytes"] >> 20, "MiB; allocated", r["max_allocated_bytes"] >> 20,
              "MiB; context", r["context_bytes"] >> 20, "MiB", flush=True)
    with open(out_path, "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
