"""Random configurations of the real-run corpus, drawn with a seed.

    python benches/pyg/draw.py --seed 2611251 --n 40 --out draws.json

A draw is a case of case.py (its arguments), picked at random over the space
users run, so that the corpus judges the model on jobs nobody chose:

- conv SAGE, GCN, GAT (1-8 heads), GIN; 1-4 layers; hidden 32-1024;
- batch 128-8192; one fanout per layer, each 2-30 or (rarely) -1;
- workers 0-8, persistent, prefetch 1-4, pin_memory, a shared sampler;
- evaluation resident, on demand (with and without gc.collect()), none,
  or layer-wise full-neighbour inference (PyG's `subgraph_loader`);
  evaluation on the train loader too, now and then;
- epochs 1-20;
- graphs: power law (exponent 2.0-3.0, 5-25 edges a node), R-MAT, dense
  (power law, 30-100 edges a node), sparse (uniform, 2-5 edges a node);
- features 32-1024 in float32, float16 or bfloat16; to_undirected; edge_index
  stored sorted, or sorted in the run;
- 100k nodes and up, the dataset (features and edge_index, doubled when
  made undirected) at most `--max-dataset` bytes (default 2 GiB: with three
  loaders' CSCs, workers and batches a run stays under the runner's cap on
  this 24 GiB machine).

Splits are a few batches each (train 2-6 batches, valid and test 1-2; a
layer-wise pass visits every node, in at most 8192 batches a layer): the
peak is set by the largest batch and by what stays alive, not by how many
batches an epoch has, and every run must end in minutes on two cores. The
job spec records the splits, so the planner knows how many batches ran.

The rule for a draw that cannot be run, written down before any ran: the
runner caps memory (`run_corpus.py --limit`) and time (`--timeout`); a draw
killed by either is recorded as capped, not scored, and the next draw of the
same seed takes its place, so that a seed always yields its `--n` scored
runs in the same order.
"""

import argparse
import json
import math
import random

GIB = 1 << 30
DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}


def log_uniform_int(r, lo, hi):
    return int(round(math.exp(r.uniform(math.log(lo), math.log(hi)))))


def pow2(r, lo, hi):
    """A power of two in [lo, hi], each exponent equally likely."""
    return 1 << r.randint(lo.bit_length() - 1, hi.bit_length() - 1)


def graph_of(r, max_dataset, features, dtype, undirected):
    family = r.choice(["powerlaw", "powerlaw", "rmat", "dense", "sparse"])
    if family == "powerlaw":
        kind, exponent, degree = "powerlaw", r.choice([2.0, 2.2, 2.5, 3.0]), r.uniform(5, 25)
    elif family == "rmat":
        kind, exponent, degree = "rmat", 2.2, r.uniform(5, 25)
    elif family == "dense":
        kind, exponent, degree = "powerlaw", r.choice([2.2, 2.5, 3.0]), r.uniform(30, 100)
    else:
        kind, exponent, degree = "uniform", 2.2, r.uniform(2, 5)
    # Bytes a node costs in the dataset: its features and its edges (COO int64).
    per_node = features * DTYPE_BYTES[dtype] + degree * 16 * (2 if undirected else 1)
    top = max(100_000, int(max_dataset / per_node))
    nodes = log_uniform_int(r, 100_000, max(top, 100_001))
    if kind == "rmat":
        nodes = 1 << max(17, round(math.log2(nodes)))
        while nodes * per_node > max_dataset and nodes > 1 << 17:
            nodes >>= 1
    edges = int(nodes * degree)
    return family, kind, exponent, nodes, edges


def draw_one(r, index, seed, max_dataset):
    features = pow2(r, 32, 1024) if r.random() < 0.7 else r.randint(32, 1024)
    dtype = r.choice(["float32", "float32", "float16", "bfloat16"])
    undirected = r.random() < 0.25
    family, kind, exponent, nodes, edges = graph_of(r, max_dataset, features, dtype, undirected)
    conv = r.choice(["sage", "sage", "gcn", "gat", "gin"])
    layers = r.choice([1, 2, 2, 2, 3, 3, 4])
    heads = r.choice([1, 2, 4, 8]) if conv == "gat" else 1
    hidden = pow2(r, 32, 1024)
    if conv == "gat":
        # case.py passes hidden whole to PyG's GAT, which splits it over the heads.
        hidden = max(hidden, 8 * heads)
    batch = pow2(r, 128, 8192)
    fanout = [-1 if r.random() < 0.08 else r.randint(2, 30) for _ in range(layers)]
    workers = r.choice([0, 0, 1, 2, 2, 3, 4, 6, 8])
    persistent = workers > 0 and r.random() < 0.5
    prefetch = r.choice([1, 2, 2, 2, 4]) if workers > 0 else 2
    pin = r.random() < 0.2
    shared = r.random() < 0.15
    evaluation = r.choice(["resident", "resident", "on_demand", "on_demand_gc", "none", "layerwise"])
    evaluate_train = evaluation in ("resident", "on_demand", "on_demand_gc") and r.random() < 0.15
    epochs = r.choice([1, 1, 2, 3, 5, 10, 20])
    sorting = r.choice(["no", "no", "no", "given", "sort"])
    eval_batch = batch if r.random() < 0.7 else pow2(r, 128, 8192)
    if evaluation == "layerwise":
        # A pass visits every node once a layer: at most 8192 batches a layer.
        while nodes / eval_batch > 8192:
            eval_batch *= 2
    train = min(nodes // 2, batch * r.randint(2, 6))
    valid = min(nodes // 4, eval_batch * r.randint(1, 2))
    test = min(nodes // 4, eval_batch * r.randint(1, 2))
    args = ["--graph", kind, "--nodes", str(nodes), "--edges", str(edges),
            "--exponent", str(exponent), "--features", str(features), "--dtype", dtype,
            "--train", str(train), "--valid", str(valid), "--test", str(test),
            "--conv", conv, "--layers", str(layers), "--hidden", str(hidden),
            "--heads", str(heads), "--batch", str(batch),
            "--fanout", ",".join(str(f) for f in fanout), "--workers", str(workers),
            "--prefetch", str(prefetch), "--epochs", str(epochs), "--is-sorted", sorting]
    if eval_batch != batch:
        args += ["--eval-batch", str(eval_batch)]
    if persistent:
        args.append("--persistent")
    if pin:
        args.append("--pin-memory")
    if shared and evaluation != "layerwise":
        args.append("--shared-sampler")
    if undirected:
        args.append("--to-undirected")
    if evaluation == "on_demand_gc":
        args += ["--eval-loaders", "on_demand", "--gc-collect"]
    else:
        args += ["--eval-loaders", evaluation]
    if evaluate_train:
        args.append("--evaluate-train")
    id_ = f"s{seed}-{index:02d}-{family}-{conv}{layers}-b{batch}-w{workers}"
    return {"id": id_, "args": args, "note": f"drawn: seed {seed}, draw {index}", "bisect": False}


def lingering_workers(args):
    """On-demand evaluation loaders with persistent workers, deleted without
    gc.collect(), over more than one epoch: the loaders and their worker
    processes that outlive `del` (a set that judges that mechanism)."""
    return ("--persistent" in args and "--gc-collect" not in args
            and args[args.index("--eval-loaders") + 1] == "on_demand"
            and int(args[args.index("--epochs") + 1]) > 1)


def layerwise(args):
    """PyG's layer-wise inference as the evaluation: every node, every
    neighbour, one layer at a time over the whole graph (on this machine, on
    the CPU: the heap glibc keeps of its per-layer tensors)."""
    return args[args.index("--eval-loaders") + 1] == "layerwise"


def layerwise_forked(args):
    """Layer-wise inference of two or more layers whose evaluation workers
    are not persistent: the subgraph loader forks its workers anew for each
    layer, while the main process holds the previous layer's output and the
    heap glibc kept of that layer's per-batch rows (a forked worker's RSS
    maps both)."""
    return (layerwise(args) and "--persistent" not in args
            and int(args[args.index("--workers") + 1]) > 0
            and int(args[args.index("--layers") + 1]) >= 2)


def queued_batches(args):
    """Four or more batches outstanding in the training loader's queue
    (workers x prefetch): sent batches wait in /dev/shm, mapped by no
    process until the main process takes them, so an RSS sum misses them
    (benches/pyg/shm_queue_rss.py)."""
    workers = int(args[args.index("--workers") + 1])
    prefetch = int(args[args.index("--prefetch") + 1])
    return workers >= 2 and workers * prefetch >= 4


def eval_workers_live_on(args):
    """Evaluation workers forked after training has built its heap that live
    on through later epochs' training: persistent workers of resident
    evaluation loaders, or of on-demand ones deleted without gc.collect(),
    over 2+ epochs. Training rewrites the heap they forked from, so the pages
    they still map are copy-on-write versions only they hold
    (benches/pyg/cow_probe.py)."""
    evaluation = args[args.index("--eval-loaders") + 1]
    return ("--persistent" in args and int(args[args.index("--workers") + 1]) > 0
            and int(args[args.index("--epochs") + 1]) > 1
            and (evaluation == "resident"
                 or (evaluation == "on_demand" and "--gc-collect" not in args)))


def heap_forked(args):
    """Later epochs of CPU training while worker processes forked from the
    main process's grown heap are alive: training workers forked anew each
    epoch (not persistent), or persistent evaluation workers of resident
    loaders. What glibc keeps of the training steps' tensors, and the old
    versions of its pages those workers keep, are the kept-heap terms of
    src/estimate/host_heap.rs (`forked_from_grown_heap`)."""
    workers = int(args[args.index("--workers") + 1])
    persistent = "--persistent" in args
    evaluation = args[args.index("--eval-loaders") + 1]
    return (int(args[args.index("--epochs") + 1]) > 1 and workers > 0
            and (not persistent or evaluation == "resident"))


def heap_straddle(args):
    """A step whose widest rows (the features or a hidden layer's output, as
    float32) are over glibc's largest mmap threshold (32 MiB) at the largest
    batch the sampling tree allows, but within 8 times it: smaller real
    batches put those rows in the heap, which glibc keeps (advice-2611277's
    draw 02: planned 32 MiB kept from its largest batch's 112k nodes, where
    85 % of the real batches were under 65.5k nodes and glibc's arena held
    0.6-1.26 GB, 0.4-0.84 GB of it free)."""
    get = lambda k: args[args.index(k) + 1]
    nodes, batch = int(get("--nodes")), int(get("--batch"))
    width = max(int(get("--hidden")) * int(get("--heads")), int(get("--features")))
    tree, level = 1, 1
    for f in get("--fanout").split(","):
        level = nodes if int(f) < 0 else level * int(f)
        tree += level
    rows = min(nodes, batch * tree) * width * 4
    return 32 << 20 <= rows <= 8 * (32 << 20)


MECHANISMS = {"heap-straddle": heap_straddle, "lingering-workers": lingering_workers, "layerwise": layerwise,
              "layerwise-forked": layerwise_forked, "queued-batches": queued_batches,
              "eval-workers-live-on": eval_workers_live_on, "heap-forked": heap_forked}


def draw(seed, n, max_dataset, conv=None, mechanism=None):
    """n draws of the seed's stream; with `conv` (or `mechanism`), the first
    n of that conv (or with that mechanism: the others are drawn and dropped,
    so each keeps its index in the stream and the set is the whole space's
    conditioned on it)."""
    r = random.Random(seed)
    out, i = [], 0
    while len(out) < n:
        d = draw_one(r, i, seed, max_dataset)
        i += 1
        if conv is not None and d["args"][d["args"].index("--conv") + 1] != conv:
            continue
        if mechanism is not None and not MECHANISMS[mechanism](d["args"]):
            continue
        out.append(d)
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--n", type=int, default=40, help="draws (capped ones are replaced by later draws)")
    p.add_argument("--max-dataset", type=float, default=2.0, help="GiB")
    p.add_argument("--conv", choices=["sage", "gcn", "gat", "gin"], default=None,
                   help="keep only draws of this conv (a set that judges one layer's model)")
    p.add_argument("--mechanism", choices=sorted(MECHANISMS), default=None,
                   help="keep only draws where this mechanism acts")
    p.add_argument("--out", default="-")
    a = p.parse_args()
    write(draw(a.seed, a.n, a.max_dataset * GIB, a.conv, a.mechanism), a.out)


def write(cases, out):
    """A set of draws as JSON, to `out` or standard output ("-")."""
    text = json.dumps(cases, indent=1)
    if out == "-":
        print(text)
    else:
        with open(out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
