#!/usr/bin/env python3
"""What is alive on the GPU at a training step's allocated peak, and where
each tensor was made: the evidence for headroom's GPU activation model.

For each job id given (rows of steps.json, from replay_steps.py export), one
training step at the job's largest real batch runs once to warm up, then
again with PyTorch's allocator history recorded (Python stacks); the events
are replayed here to find the moment of the highest allocated bytes, and the
tensors alive then are printed, largest first, with the Python line that
made each (torch_geometric's or the model's own).

    python3 step_peak.py steps.json ID...     (GPU machine)
"""
import json
import os
import sys


def where(frames):
    for f in frames or []:
        fn = f.get("filename", "")
        if "torch_geometric" in fn or "replay" in fn or "step_peak" in fn or "torch/nn" in fn \
                or "torch/optim" in fn or "autograd" in fn:
            return f"{os.path.basename(fn)}:{f.get('line')} {f.get('name')}"
    return "?"


def one(spec):
    from replay_steps import Replay

    r = Replay(spec)
    torch, d, m = r.torch, r.d, spec["job"]["model"]
    n, e = max(spec["train_sizes"], key=lambda s: s[0])
    r.train_step(n, e)  # once to warm up: Adam's state, cuBLAS's workspace
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    torch.cuda.memory._record_memory_history(max_entries=1000000, stacks="python")
    r.train_step(n, e)
    torch.cuda.synchronize()
    snap = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)
    alive, cur, best, at_best = {}, 0, -1, {}
    for ev in snap["device_traces"][0]:
        a = ev["action"]
        if a == "alloc":
            alive[ev["addr"]] = (ev["size"], where(ev.get("frames")))
            cur += ev["size"]
            if cur > best:
                best, at_best = cur, dict(alive)
        elif a == "free_completed" and ev["addr"] in alive:
            cur -= alive.pop(ev["addr"])[0]
    groups = {}
    for size, w in at_best.values():
        c, s = groups.get(w, (0, 0))
        groups[w] = (c + 1, s + size)
    print(f"== {spec['id']}: batch {n} nodes, {e} edges, features {d['features']} {d['feature_dtype']}, "
          f"{m['conv']} x{m['layers']} hidden {m['hidden']}")
    print(f"   before the step {base >> 20} MiB allocated (parameters, Adam, cuBLAS workspace); "
          f"peak {torch.cuda.max_memory_allocated() >> 20} MiB; the step's own at its peak {best >> 20} MiB")
    for w, (c, s) in sorted(groups.items(), key=lambda kv: -kv[1][1])[:14]:
        print(f"   {s / 2**20:9.1f} MiB  {c:3d}x  {w}")
    sys.stdout.flush()


def main(argv):
    specs = {s["id"]: s for s in json.load(open(argv[1]))}
    for i in argv[2:]:
        try:
            one(specs[i])
        except Exception as ex:  # one job's failure is printed, the rest go on
            print(f"== {i}: failed: {ex!r}", flush=True)


if __name__ == "__main__":
    main(sys.argv)
