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

from torch_geometric.nn import GAT

from gcn_step import step_peaks


def measure(S, E, f, h, layers, heads, classes=32):
    return step_peaks(GAT(f, h, layers, classes, heads=heads), S, E, f, classes)


if __name__ == "__main__":
    S, E, f, h, layers, heads = (int(v) for v in sys.argv[1:7])
    fw, bw = measure(S, E, f, h, layers, heads)
    print(f"S={S} E={E} F={f} H={h} L={layers} heads={heads} forward={fw} backward={bw}")
