#!/usr/bin/env python3
"""Keeps the draws of a drawn set where a model change acts: each draw's job
spec (its graph built and described, as run_corpus does) planned by two
headroom binaries, the model before a change and with it, and kept where
their predicted host peaks differ by more than --min-change. The outcome of
no run is read: the selection is the mechanism's, as draw.py --mechanism's
is, made before any of the kept draws runs.

    select_by_plans.py DRAWS.json --before BIN --after BIN --n 10 --out SET.json
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def peak(binary, spec):
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        json.dump(spec, f)
        f.flush()
        out = subprocess.run([binary, "plan", f.name, "--format", "json"],
                             capture_output=True, text=True)
    if not out.stdout:
        return None
    return json.loads(out.stdout)["peak_host_bytes"]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("draws")
    p.add_argument("--before", required=True)
    p.add_argument("--after", required=True)
    p.add_argument("--n", type=int, default=10)
    p.add_argument("--min-change", type=float, default=0.01)
    p.add_argument("--out", default="-")
    a = p.parse_args()
    import draw
    import run_corpus
    kept = []
    for d in json.load(open(a.draws)):
        if len(kept) >= a.n:
            break
        spec = run_corpus.spec_of(run_corpus.glued(d["args"]))
        b, n = peak(a.before, spec), peak(a.after, spec)
        acts = b is not None and n is not None and abs(n - b) > a.min_change * b
        print(f"{d['id']}: {b} -> {n}{' kept' if acts else ''}", file=sys.stderr, flush=True)
        if acts:
            kept.append(d)
    draw.write(kept, a.out)


if __name__ == "__main__":
    main()
