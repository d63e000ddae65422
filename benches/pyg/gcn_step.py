"""One GCN training step on the CPU, measured: the peak of live tensors in
the forward and in the backward pass, against the terms headroom's model
gives a GCNConv layer (src/estimate/gpu.rs, layer_activations and
gnn_activations, mirrored below).

    MALLOC_MMAP_THRESHOLD_=65536 benches/pyg/.venv/bin/python benches/pyg/gcn_step.py

With the mmap threshold fixed low, every tensor of these sizes is its own
mapping, returned at free: the RSS high-water mark (/proc/self/status
VmHWM, reset through /proc/self/clear_refs) is then the peak of live
tensors. The model is PyG's own GCN (GCNConv: gcn_norm adds a self-loop per
node, so every layer's messages are Es + S rows).
"""
import torch
from torch_geometric.nn import GCN

torch.set_num_threads(1)
F32, I64, MIB = 4.0, 8.0, 2**20


def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) * 1024


def reset_peak():
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def measure(S, E, f, h, layers, classes=32):
    return step_peaks(GCN(f, h, layers, classes), S, E, f, classes)


def step_peaks(model, S, E, f, classes):
    """(forward, backward) peaks of live tensors of one training step of
    `model` on S random nodes of f features and E random edges, over the
    inputs (allocated before the baseline)."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(S, f, generator=g)
    ei = torch.randint(0, S, (2, E), generator=g)
    y = torch.randint(0, classes, (S,), generator=g)
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


def model_terms(S, E, f, h, layers, classes=32):
    """gpu.rs's GCN terms: per layer saved = edge norm + ReLU output,
    transient = linear output + scatter sum + messages and their weighted
    copy + the self-looped edge_index; forward = earlier saved + transient;
    backward = earlier saved + the two message-sized gradients."""
    es = E + S
    saved, forward, backward, d_in = 0.0, 0.0, 0.0, f
    for l in range(layers):
        last = l + 1 == layers
        d = classes if last else h
        sv = es * F32 + (0.0 if last else S * d * F32)
        tr = 2 * S * d * F32 + 2 * es * d * F32 + 2 * es * I64
        forward = max(forward, saved + tr)
        saved += sv
        backward = max(backward, saved - sv + 2 * es * d * F32)
        d_in = d
    return forward, backward


CASES = [
    (200_000, 200_000, 64, 256, 2),
    (200_000, 1_000_000, 64, 256, 2),
    (400_000, 200_000, 64, 256, 2),
    (200_000, 400_000, 128, 512, 3),
    (100_000, 1_000_000, 256, 128, 2),
]

if __name__ == "__main__":
    print("| S | Es | f | hidden | layers | forward measured | model | backward measured | model |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for c in CASES:
        fm, bm = measure(*c)
        fp, bp = model_terms(*c)
        print(f"| {' | '.join(str(v) for v in c)} | {fm / MIB:.0f} MiB | {fp / MIB:.0f} MiB "
              f"({(fp - fm) / fm:+.1%}) | {bm / MIB:.0f} MiB | {bp / MIB:.0f} MiB ({(bp - bm) / bm:+.1%}) |",
              flush=True)
