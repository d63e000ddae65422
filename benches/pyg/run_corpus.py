"""Runs the real-run corpus: each case of cases.py under `headroom watch
--limit` in its own memory cgroup, one JSONL row per run.

    benches/pyg/.venv/bin/python benches/pyg/run_corpus.py \
        --headroom target/release/headroom --out tests/fixtures/pyg/corpus.jsonl [IDS...]

A row holds the job spec the run corresponds to (headroom's schema, the
dataset inline with its measured in-degree histogram), the command that
reproduces it, and what was measured: for the whole run and for each phase,
the peaks of the cgroup's anonymous + shared memory (what the OOM killer
weighs), of its whole usage, of RSS summed over the process tree (what Slurm's
jobacct_gather sums) and of PSS summed; the sampled batch sizes; and, for the
cases that ask, the smallest limit the run survives (binary search).

Needs root (a child memory cgroup) and the venv of setup.sh.
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import case as case_mod  # noqa: E402
import cases as cases_mod  # noqa: E402

PHASES = ["runtime", "load", "build_loaders", "train", "evaluate"]


def job_spec(a, info):
    """The headroom job spec of the run `a` (parsed case arguments)."""
    # The histogram of the graph the sampler samples (after to_undirected).
    # A presorted undirected file is already what the sampler samples: the
    # run loads it as is, with the undirected graph's edges.
    import graph
    pre = graph.presorted_undirected(a)
    undirected = a.to_undirected and not pre
    src = info["undirected"] if undirected else info
    degree = {"counts": src["histogram"], "degree_sums": src["histogram_degree_sums"]}
    if not undirected:
        degree["out_counts"] = src["out_histogram"]
        degree["out_degree_sums"] = src["out_histogram_degree_sums"]
        degree["reached_counts"] = src["reached_histogram"]
        degree["reached_degree_sums"] = src["reached_histogram_degree_sums"]
    dataset = {
        "name": f"{a.graph}-{a.nodes}-{a.edges}",
        "nodes": a.nodes, "edges": info["edges"] if pre else a.edges, "undirected": False,
        "features": a.features, "feature_dtype": a.dtype, "classes": a.classes,
        "label_dtype": "int64",
        "splits": {"train": a.train, "valid": a.valid, "test": a.test},
        "degree_histogram": degree,
    }
    if undirected:
        dataset["undirected_edges"] = info["undirected"]["edges"]
    loader = {
        "batch_size": a.batch, "fanout": a.fanout, "num_workers": a.workers,
        "persistent_workers": a.persistent and a.workers > 0,
        "prefetch_factor": a.prefetch, "pin_memory": a.pin_memory,
        "eval_loaders": a.eval_loaders, "is_sorted": a.is_sorted != "no",
        "shared_sampler": a.shared_sampler, "evaluate_train": a.evaluate_train,
        "gc_collect": a.gc_collect,
    }
    if a.eval_loaders == "layerwise":
        # case.py runs its layer-wise pass once, after the last epoch.
        loader["eval_every"] = a.epochs
    if a.eval_batch:
        loader["eval_batch_size"] = a.eval_batch
    if a.eval_workers is not None:
        loader["eval_num_workers"] = a.eval_workers
    load = {"to_undirected": undirected}
    if a.is_sorted == "sort":
        load["sort_edges"] = True
    return {
        "name": None, "dataset": dataset,
        # PyG's BasicGNN: dropout 0 by default; GAT's hidden_channels is
        # split over the heads (headroom's hidden is per head).
        "model": {"conv": a.conv, "layers": a.layers,
                  "hidden": a.hidden // a.heads if a.conv == "gat" else a.hidden,
                  "heads": a.heads, "optimizer": "adam", "dropout": 0.0},
        "loader": loader, "load": load, "device": "cpu", "epochs": a.epochs,
    }


def phase_windows(marks, t0):
    """(phase, start, end) in seconds since t0 from the case's marks."""
    open_, out = {}, []
    for m in marks:
        t = m["t"] - t0
        if m["event"] == "start":
            open_[m["phase"]] = t
        elif m["event"] == "end" and m["phase"] in open_:
            out.append((m["phase"], open_.pop(m["phase"]), t))
    return out


def peaks(rows, lo=float("-inf"), hi=float("inf")):
    """Peaks of the measures over the timeline rows with lo <= t <= hi."""
    best = {"anon_shmem": 0, "cgroup": 0, "rss_sum": 0, "pss_sum": 0}
    for r in rows:
        if not (lo <= r["t_s"] <= hi):
            continue
        usage = r.get("cgroup_usage_bytes") or 0
        # watch reads memory.stat at every sample (--stat-every 1).
        anon_shmem = (r.get("cgroup_anon_bytes") or 0) + (r.get("cgroup_shmem_bytes") or 0)
        best["anon_shmem"] = max(best["anon_shmem"], anon_shmem)
        best["cgroup"] = max(best["cgroup"], usage)
        best["rss_sum"] = max(best["rss_sum"], r.get("rss_sum_bytes") or 0)
        best["pss_sum"] = max(best["pss_sum"], r.get("pss_sum_bytes") or 0)
    return best


def run_once(headroom, argv, limit, work, interval, timeout=None):
    """One run under watch; returns (exit code, timeline rows, marks, stats, t0).
    Past `timeout` seconds watch is killed (its guardian then kills the run's
    process group) and the exit code is None."""
    tl, marks, stats = (os.path.join(work, n) for n in ("tl.jsonl", "marks.jsonl", "stats.json"))
    for p in (marks, stats):
        if os.path.exists(p):
            os.remove(p)
    cmd = [headroom, "watch", "--limit", f"{limit >> 20}M", "--interval", interval, "--stat-every", "1",
           "--format", "jsonl", "--out", tl, "--",
           sys.executable, os.path.join(HERE, "case.py"), *argv, "--marks", marks, "--stats", stats]
    t0 = time.time()
    try:
        proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              timeout=timeout)
        code, err = proc.returncode, proc.stderr
    except subprocess.TimeoutExpired as e:
        code, err = None, f"timed out after {timeout} s: {e.stderr or ''}"
    if not os.path.exists(tl):
        return code, [], [], None, t0, str(err)
    with open(tl) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    ms = []
    if os.path.exists(marks):
        with open(marks) as f:
            ms = [json.loads(line) for line in f if line.strip()]
    st = None
    if os.path.exists(stats):
        with open(stats) as f:
            st = json.load(f)
    return code, rows, ms, st, t0, str(err)


def smallest_limit(headroom, argv, hi, work, interval, step=64 << 20):
    """Smallest limit (to `step`) under which the run exits 0, by bisection."""
    lo = 0
    while hi - lo > step:
        mid = (lo + hi) // 2 // step * step
        code = run_once(headroom, argv, mid, work, interval)[0]
        print(f"    limit {mid >> 20} MiB -> exit {code}", flush=True)
        if code == 0:
            hi = mid
        else:
            lo = mid
    return hi


class Capped(Exception):
    """The run hit the runner's memory or time cap (draw.py's rule: not scored)."""


def record_capped(path, c, why, started, failed=False):
    """Appends a draw that was not scored, with why, to the capped file
    (`failed`: the job itself died, not by a cap)."""
    # The whole stderr beside the capped file, for `headroom diagnose`: a
    # tail cuts tracebacks' heads (sealed-linger-2611265's draw 33).
    logs = path + ".logs"
    os.makedirs(logs, exist_ok=True)
    log = os.path.join(logs, c["id"] + ".stderr")
    with open(log, "w") as f:
        f.write(why)
    row = {"id": c["id"], "args": c["args"], "why": why[-2000:], "log": log,
           "seconds": round(time.time() - started, 1)}
    if failed:
        row["failed"] = True
    with open(path, "a") as f:
        f.write(json.dumps(row) + "\n")


def glued(argv):
    """["--fanout", "-1,-1,19"] -> ["--fanout=-1,-1,19"]: argparse reads a value
    that starts with '-' (and is not a plain number) as an option."""
    out, i = [], 0
    while i < len(argv):
        if argv[i].startswith("--") and i + 1 < len(argv) and argv[i + 1].startswith("-") \
                and not argv[i + 1].startswith("--"):
            out.append(f"{argv[i]}={argv[i + 1]}")
            i += 2
        else:
            out.append(argv[i])
            i += 1
    return out


def measure(c, headroom, limit, interval, bisect, timeout=None):
    argv = glued(c["args"])
    a = case_mod.parse(argv)
    subprocess.run([sys.executable, os.path.join(HERE, "case.py"), *argv, "--prepare-only"],
                   check=True, stdout=subprocess.DEVNULL)
    import graph
    with open(graph.key(a) + ".json") as f:
        info = json.load(f)
    undirected = a.to_undirected and not graph.presorted_undirected(a)
    if undirected:
        info["undirected"] = graph.undirected_info(graph.key(a), a.nodes)
    with tempfile.TemporaryDirectory() as work:
        code, rows, marks, stats, t0, err = run_once(headroom, argv, limit, work, interval, timeout)
        if code is None or code == 137:
            raise Capped(f"case {c['id']} capped (exit {code}): {err}")
        if code != 0:
            raise RuntimeError(f"case {c['id']} exited {code}: {err}")
        whole = peaks(rows)
        per_phase = {}
        loaded_edges = None
        for phase, lo, hi in phase_windows(marks, t0):
            if phase not in PHASES:
                continue
            p = peaks(rows, lo, hi)
            q = per_phase.setdefault(phase, p)
            for k in q:
                q[k] = max(q[k], p[k])
        for m in marks:
            if m["phase"] == "load" and m["event"] == "end":
                loaded_edges = m.get("edges")
        if undirected and loaded_edges != info["undirected"]["edges"]:
            raise RuntimeError(f"{c['id']}: to_undirected gave {loaded_edges} edges in the run, "
                               f"{info['undirected']['edges']} when described")
        row = {
            "id": c["id"], "note": c.get("note", ""),
            "command": "python benches/pyg/case.py " + " ".join(argv),
            "job": job_spec(a, info),
            "measured": {"peak": whole, "phases": per_phase},
            "batches": stats, "samples": len(rows), "interval": interval,
        }
        if bisect and c.get("bisect"):
            row["smallest_limit"] = smallest_limit(headroom, argv, limit, work, interval)
        return row


def spec_of(argv):
    """The job spec of the case `argv`, its graph built (or reused) and described."""
    import graph
    a = case_mod.parse(argv)
    graph.build(a)
    with open(graph.key(a) + ".json") as g:
        info = json.load(g)
    if a.to_undirected and not graph.presorted_undirected(a):
        info["undirected"] = graph.undirected_info(graph.key(a), a.nodes)
    return job_spec(a, info)


def respec(path):
    """Rewrites each row's job spec from its command and its graph's description."""
    rows = []
    with open(path) as f:
        for line in f:
            if not line.strip():
                continue
            row = json.loads(line)
            row["job"] = spec_of(row["command"].split()[2:])
            rows.append(row)
    with open(path, "w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")


def versions():
    import torch
    import torch_geometric
    import torch_sparse
    return {"torch": torch.__version__, "torch_geometric": torch_geometric.__version__,
            "torch_sparse": torch_sparse.__version__, "python": platform.python_version(),
            "kernel": platform.release()}


def ids_in(path):
    """The ids of the JSONL rows in `path` (none when there is no file)."""
    if not path or not os.path.exists(path):
        return set()
    with open(path) as f:
        return {json.loads(line)["id"] for line in f if line.strip()}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("ids", nargs="*", help="case ids to run (default: all)")
    p.add_argument("--headroom", default=os.path.join(HERE, "../../target/release/headroom"))
    p.add_argument("--out", default=os.path.join(HERE, "../../tests/fixtures/pyg/corpus.jsonl"))
    p.add_argument("--limit", default="20G", help="the cgroup limit of every run")
    p.add_argument("--interval", default="50ms")
    p.add_argument("--list", action="store_true")
    p.add_argument("--respec", action="store_true",
                   help="rewrite the job specs of the rows in --out from their commands "
                        "(after a change to how a run maps to a spec), running nothing")
    p.add_argument("--bisect", action="store_true",
                   help="also find the smallest surviving limit of the cases marked bisect")
    p.add_argument("--cases", default=None,
                   help="a JSON list of cases (draw.py's output) instead of cases.py's")
    p.add_argument("--count", type=int, default=None,
                   help="stop after this many scored runs (capped draws do not count)")
    p.add_argument("--timeout", type=float, default=None, help="seconds a run may take")
    p.add_argument("--capped", default=None, help="append capped draws (JSONL) here")
    a = p.parse_args()
    cs = cases_mod.CASES
    if a.cases:
        with open(a.cases) as f:
            cs = json.load(f)
    if a.respec:
        respec(a.out)
        return
    if a.list:
        for c in cs:
            print(c["id"], " ".join(c["args"]))
        return
    if a.ids:
        unknown = set(a.ids) - {c["id"] for c in cs}
        if unknown:
            sys.exit(f"unknown case ids: {sorted(unknown)}")
        cs = [c for c in cs if c["id"] in a.ids]
    limit = int(a.limit.rstrip("G")) << 30
    v = versions()
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    # A drawn set resumes where it stopped: every draw runs once.
    ran, capped = ids_in(a.out), ids_in(a.capped)
    scored = 0
    for c in cs:
        if a.count is not None and scored >= a.count:
            break
        if a.cases and (c["id"] in ran or c["id"] in capped):
            scored += c["id"] in ran
            continue
        t = time.time()
        try:
            row = measure(c, a.headroom, limit, a.interval, a.bisect, a.timeout)
        except Capped as e:
            print(f"{c['id']}: CAPPED: {str(e)[:300]}", flush=True)
            if a.capped:
                record_capped(a.capped, c, str(e), t)
            continue
        except Exception as e:  # one failed case must not lose the others
            print(f"{c['id']}: FAILED: {str(e)[-300:]}", flush=True)
            if a.capped:
                record_capped(a.capped, c, str(e), t, failed=True)
            continue
        row["versions"] = v
        row["seconds"] = round(time.time() - t, 1)
        scored += 1
        with open(a.out, "a") as f:
            f.write(json.dumps(row) + "\n")
        pk = row["measured"]["peak"]
        print(f"{c['id']}: anon+shmem {pk['anon_shmem'] / 2**30:.2f} GiB, rss_sum "
              f"{pk['rss_sum'] / 2**30:.2f} GiB, {row['seconds']} s", flush=True)


if __name__ == "__main__":
    main()
