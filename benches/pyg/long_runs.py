"""Issue 22, item 6: memory growth over many epochs, measured and planned.

    benches/pyg/.venv/bin/python benches/pyg/long_runs.py \
        --out tests/fixtures/pyg/long-runs.jsonl [--epochs 24] [IDS...]
    python3 benches/pyg/long_runs.py --table tests/fixtures/pyg/long-runs.jsonl
    python3 benches/pyg/long_runs.py --summary tests/fixtures/pyg/long-runs.jsonl

Each configuration runs once for --epochs epochs under `headroom watch` in
its own memory cgroup. From the timeline and case.py's epoch marks, the
peak up to the end of epoch k (its training and its evaluation), for every
k, under both accountings (the cgroup's usage; RSS summed over the tree).
Then `headroom plan` of the same job with `epochs: k` for a few k: a model
that knows what grows (the heap glibc keeps, loaders that linger until the
cyclic collector runs, pages copied for workers forked from a grown heap)
predicts the curve, not only its end. One JSONL row per configuration,
appended when it is done (resumable: an id already in --out is skipped).
Needs root (a child memory cgroup) and the venv of setup.sh.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
rc = None  # run_corpus, imported where a run needs it (it imports torch; --table does not)

GIB = 1 << 30
GRAPH = ["--graph", "powerlaw", "--nodes", "300000", "--edges", "4500000", "--features", "128",
         "--train", "12288", "--valid", "4096", "--test", "4096"]
# Designed, not drawn: one configuration per growth mechanism the model has,
# and one where nothing should grow after the first epoch.
CASES = [
    {"id": "long-linger-ondemand-w2p",
     "why": "on-demand evaluation loaders deleted without gc.collect(), 2 persistent workers "
            "each: they linger (and their workers live on) until the cyclic collector runs",
     "args": GRAPH + ["--conv", "sage", "--hidden", "256", "--batch", "2048", "--fanout", "15,10",
                      "--workers", "2", "--persistent", "--eval-loaders", "on_demand"]},
    {"id": "long-heapfork-resident-w3",
     "why": "CPU training with 3 workers forked anew each epoch from the grown heap, hidden rows "
            "under glibc's 32 MiB mmap ceiling (kept in the heap)",
     "args": GRAPH + ["--conv", "gcn", "--hidden", "128", "--batch", "1024", "--fanout", "10,10",
                      "--workers", "3", "--eval-loaders", "resident"]},
    {"id": "long-cow-resident-gat-w2p",
     "why": "persistent workers of resident evaluation loaders, alive through later epochs' "
            "training: heap pages the main process rewrites are copied for them",
     "args": GRAPH + ["--conv", "gat", "--heads", "4", "--hidden", "32", "--batch", "1024",
                      "--fanout", "10,5", "--workers", "2", "--persistent",
                      "--eval-loaders", "resident"]},
    {"id": "long-control-ondemand-gc-w0",
     "why": "on-demand loaders with gc.collect() and no workers: the control, flat after epoch 1",
     "args": GRAPH + ["--conv", "sage", "--hidden", "256", "--batch", "2048", "--fanout", "15,10",
                      "--workers", "0", "--eval-loaders", "on_demand", "--gc-collect"]},
]
PLANNED_AT = [1, 2, 3, 5, 10, 15, 20, 24]


def per_epoch(rows, marks, t0, epochs):
    """The peak (cgroup, rss_sum) up to the end of each epoch, cumulative."""
    ends = {}
    for m in marks:
        if m["phase"] in ("train", "evaluate") and m["event"] == "end" and "epoch" in m:
            ends[m["epoch"]] = max(ends.get(m["epoch"], 0), m["t"] - t0)
    out = []
    for k in range(epochs):
        if k not in ends:
            break
        p = rc.peaks(rows, hi=ends[k])
        out.append({"epoch": k + 1, "cgroup": p["cgroup"], "rss_sum": p["rss_sum"]})
    return out


def planned(headroom, job, epochs):
    """plan's whole-run host peak of `job` run for `epochs`, per accounting."""
    out = {}
    for acc in ("cgroup", "rss_sum"):
        spec = dict(job, epochs=epochs)
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(spec, f)
            path = f.name
        try:
            r = subprocess.run([headroom, "plan", path, "--format", "json", "--accounting", acc],
                               capture_output=True, text=True, check=True)
            out[acc] = json.loads(r.stdout)["peak_host_bytes"]
        finally:
            os.remove(path)
    return out


def run(c, headroom, epochs, limit, interval, timeout):
    argv = rc.glued(c["args"] + ["--epochs", str(epochs)])
    subprocess.run([sys.executable, os.path.join(HERE, "case.py"), *argv, "--prepare-only"],
                   check=True, stdout=subprocess.DEVNULL)
    job = rc.spec_of(argv)
    started = time.time()
    with tempfile.TemporaryDirectory() as work:
        code, rows, marks, stats, t0, err = rc.run_once(headroom, argv, limit, work, interval, timeout)
    if code != 0:
        raise RuntimeError(f"{c['id']} exited {code}: {err[-1500:]}")
    measured = per_epoch(rows, marks, t0, epochs)
    plans = {str(k): planned(headroom, job, k) for k in PLANNED_AT}
    return {"id": c["id"], "why": c["why"],
            "command": "python benches/pyg/case.py " + " ".join(argv), "job": job,
            "measured": measured, "planned": plans, "samples": len(rows), "interval": interval,
            "versions": rc.versions(), "seconds": round(time.time() - started, 1)}


def table(path):
    """Measured against planned at each planned epoch count, per accounting."""
    with open(path) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    for r in rows:
        print(f"\n{r['id']}: {r['why']}")
        print("| epochs | cgroup measured | planned | error | RSS sum measured | planned | error |")
        print("|---:|---:|---:|---:|---:|---:|---:|")
        by = {m["epoch"]: m for m in r["measured"]}
        for k, p in sorted(r["planned"].items(), key=lambda kv: int(kv[0])):
            m = by.get(int(k))
            if m is None:
                continue
            cells = []
            for acc in ("cgroup", "rss_sum"):
                err = (p[acc] - m[acc]) / m[acc] * 100
                cells += [f"{m[acc] / GIB:.2f} GiB", f"{p[acc] / GIB:.2f} GiB", f"{err:+.1f} %"]
            print(f"| {k} | " + " | ".join(cells) + " |")
        first, last = r["measured"][0], r["measured"][-1]
        for acc in ("cgroup", "rss_sum"):
            grew = (last[acc] - first[acc]) / GIB
            p1, pn = r["planned"]["1"][acc], r["planned"].get(str(last["epoch"]), {}).get(acc)
            told = f"{(pn - p1) / GIB:+.2f} GiB planned" if pn else "not planned at that count"
            print(f"  {acc}: epoch 1 -> {last['epoch']} grew {grew:+.2f} GiB measured, {told}")


def summary(path):
    """docs/accuracy.md's table: the measured peak at epochs 1, 5, 10 and
    24 (planned in brackets), and the growth from the first to the last."""
    with open(path) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    for r in rows:
        by = {m["epoch"]: m for m in r["measured"]}
        last = r["measured"][-1]["epoch"]
        for acc, name in (("cgroup", "cgroup"), ("rss_sum", "RSS sum")):
            cells = []
            for k in (1, 5, 10, last):
                m, p = by.get(k), r["planned"].get(str(k))
                cells.append(f"{m[acc] / GIB:.2f} ({p[acc] / GIB:.2f})" if m and p else "")
            grew = (by[last][acc] - by[1][acc]) / GIB
            planned = (r["planned"][str(last)][acc] - r["planned"]["1"][acc]) / GIB
            print(f"| {r['id']} | {name} | " + " | ".join(cells) +
                  f" | {grew:+.2f} GiB | {planned:+.2f} GiB |")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("ids", nargs="*")
    p.add_argument("--out", default=None)
    p.add_argument("--table", default=None, help="print the table of a written file")
    p.add_argument("--summary", default=None, help="print docs/accuracy.md's table of a written file")
    p.add_argument("--headroom", default=os.path.join(HERE, "../../target/release/headroom"))
    p.add_argument("--epochs", type=int, default=24)
    p.add_argument("--limit", type=int, default=12 << 30)
    p.add_argument("--interval", default="50ms")
    p.add_argument("--timeout", type=float, default=1800)
    a = p.parse_args()
    if a.table:
        table(a.table)
        return
    if a.summary:
        summary(a.summary)
        return
    if not a.out:
        sys.exit("--out FILE (or --table FILE)")
    global rc
    import run_corpus as rc  # noqa: E402
    done = rc.ids_in(a.out)
    for c in CASES:
        if (a.ids and c["id"] not in a.ids) or c["id"] in done:
            continue
        print(f"{c['id']}: {a.epochs} epochs", flush=True)
        row = run(c, a.headroom, a.epochs, a.limit, a.interval, a.timeout)
        with open(a.out, "a") as f:
            f.write(json.dumps(row) + "\n")
        last = row["measured"][-1]
        print(f"  {len(row['measured'])} epochs measured, cgroup peak {last['cgroup'] / GIB:.2f} GiB, "
              f"{row['seconds']} s", flush=True)


if __name__ == "__main__":
    main()
