"""One GAT training step on the CPU, measured: the peak of live tensors in
the forward and in the backward pass, for comparison with the terms
headroom's model gives a GATConv layer (src/estimate/gpu.rs,
layer_activations and gnn_activations).

    MALLOC_MMAP_THRESHOLD_=65536 benches/pyg/.venv/bin/python benches/pyg/gat_step.py \
        S E F HIDDEN LAYERS HEADS

With the mmap threshold fixed low, every tensor of these sizes is its own
mapping, returned at free: the RSS high-water mark (/proc/self/status
VmHWM, reset through /proc/self/clear_refs) is then the peak of live
tensors. The model is PyG's own GAT as benches/pyg/case.py builds it
(`GAT(F, HIDDEN, LAYERS, 32, heads=HEADS)`: HIDDEN is all heads together).
x, edge_index and the labels are allocated before the baseline.
"""
import sys

import torch
from torch_geometric.nn import GAT

torch.set_num_threads(1)


def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) * 1024


def reset_peak():
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def measure(S, E, f, h, layers, heads, classes=32):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(S, f, generator=g)
    ei = torch.randint(0, S, (2, E), generator=g)
    y = torch.randint(0, classes, (S,), generator=g)
    model = GAT(f, h, layers, classes, heads=heads)
    out = model(x[:100], ei[:, :10] % 100)  # kernels and lazy state first
    out.sum().backward()
    base = status("VmRSS")
    reset_peak()
    loss = torch.nn.functional.cross_entropy(model(x, ei), y)
    forward = status("VmHWM") - base
    reset_peak()
    loss.backward()
    backward = status("VmHWM") - base
    return forward, backward


if __name__ == "__main__":
    S, E, f, h, layers, heads = (int(v) for v in sys.argv[1:7])
    fw, bw = measure(S, E, f, h, layers, heads)
    print(f"S={S} E={E} F={f} H={h} L={layers} heads={heads} forward={fw} backward={bw}")
