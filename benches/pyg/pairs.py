"""Before/after pairs for each kind of change `plan` recommends (issue 22,
item 5): the same job run twice, once as given and once with that one
change, so the real saving can be set beside the saving plan claims.

    python3 benches/pyg/pairs.py --write benches/pyg/pairs.json
    benches/pyg/.venv/bin/python benches/pyg/run_corpus.py --cases benches/pyg/pairs.json \
        --headroom target/release/headroom --out tests/fixtures/pyg/pairs-2611276.jsonl
    python3 benches/pyg/pairs.py --table tests/fixtures/pyg/pairs-2611276.jsonl --headroom target/release/headroom

Every pair is built on the 1M-node power-law graph of the corpus
(cases.py's PL1M) with seed-001-attempt2's loader (batch 1024, fanout
[15, 10], three resident loaders), or, for batch, fanout and evaluation
batch, on a job whose peak is its batch (8192 seeds, fanout [25, 15]) and
on layer-wise inference, so that the pairs differ from each other only in
the change they test. Each case runs `REPEATS` times (ids
`-r0`, `-r1`): the spread of one job's peaks is what a saving must be
read against.

`--table` plans the recorded job spec of every run with `plan --format
json` (cgroup accounting, the peak of the host) and prints, per pair, the
saving plan claims (its peak before minus after) beside the measured one
(the means of the repeats), and the `--mem` plan asks for the job as
changed beside that job's measured peak.

`--limit-cases DIR` writes, for each `--mem` plan asks for a changed job,
run_corpus.py's cases of the changed jobs that need it (`limit-NG.json`):
each is then run under that limit, as a user following the advice would
(`run_corpus.py --cases DIR/limit-NG.json --limit NG --out ...`).
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cases  # noqa: E402

REPEATS = 2
BASE = [*cases.PL1M, "--batch", "1024", "--fanout", "15,10"]
W2 = [*BASE, "--workers", "2", "--epochs", "2"]
# A job whose peak is its batch (three batches of 8192 seeds per epoch):
# the first job's peak is the loaders' CSC copies, which batch and fanout
# leave as they are.
BIG = [*cases.PL1M, "--batch", "8192", "--fanout", "25,15"]
# Layer-wise inference over every node: its chunks are the evaluation batch.
LW = [*BASE, "--eval-loaders", "layerwise", "--eval-batch", "65536"]
OD = [*BASE, "--workers", "2", "--persistent", "--epochs", "2", "--eval-loaders", "on_demand"]

# kind, what changes, before, after.
PAIRS = [
    ("is_sorted", "edge_index stored sorted, is_sorted=True", BASE, [*BASE, "--is-sorted", "given"]),
    ("persistent_workers", "2 workers re-forked each of 2 epochs -> persistent", W2, [*W2, "--persistent"]),
    ("fewer workers", "num_workers 2 -> 0", [*W2, "--persistent"], [*BASE, "--epochs", "2"]),
    ("batch", "batch_size 1024 -> 512", BASE, [*cases.PL1M, "--batch", "512", "--fanout", "15,10"]),
    ("fanout", "fanout [15, 10] -> [10, 5]", BASE, [*cases.PL1M, "--batch", "1024", "--fanout", "10,5"]),
    ("on-demand evaluation", "resident -> on-demand loaders with gc.collect()", BASE,
     [*BASE, "--eval-loaders", "on_demand", "--gc-collect"]),
    ("shared sampler", "one sampler for the three loaders", BASE, [*BASE, "--shared-sampler"]),
    ("pin_memory", "pin_memory True -> False (1 worker)", [*BASE, "--workers", "1", "--pin-memory"],
     [*BASE, "--workers", "1"]),
    ("eval batch size", "evaluation batch 1024 -> 256", BASE, [*BASE, "--eval-batch", "256"]),
    ("gc.collect", "gc.collect() after deleting on-demand loaders", OD, [*OD, "--gc-collect"]),
    ("batch, batch-bound job", "batch_size 8192 -> 4096 (fanout [25, 15])", BIG,
     [*cases.PL1M, "--batch", "4096", "--fanout", "25,15"]),
    ("fanout, batch-bound job", "fanout [25, 15] -> [10, 5] (batch 8192)", BIG,
     [*cases.PL1M, "--batch", "8192", "--fanout", "10,5"]),
    ("eval batch size, batch-bound job", "evaluation batch 8192 -> 1024 (batch 8192)", BIG,
     [*BIG, "--eval-batch", "1024"]),
    ("eval batch size, layer-wise inference", "layer-wise chunks of 65536 -> 4096 nodes", LW,
     [*BASE, "--eval-loaders", "layerwise", "--eval-batch", "4096"]),
]


def slug(kind):
    return re.sub(r"[^a-z0-9]+", "-", kind.lower()).strip("-")


def case_list():
    """run_corpus.py's --cases list: each distinct job once per repeat."""
    seen, out = {tuple(BASE): "pair-base"}, []
    for r in range(REPEATS):
        out.append({"id": f"pair-base-r{r}", "args": list(BASE), "note": "the job as given",
                    "bisect": False})
    for kind, _, before, after in PAIRS:
        for side, args in (("before", before), ("after", after)):
            key = tuple(args)
            if key in seen:
                continue
            seen[key] = f"pair-{slug(kind)}-{side}"
            for r in range(REPEATS):
                out.append({"id": f"{seen[key]}-r{r}", "args": list(args), "note": kind,
                            "bisect": False})
    return out, seen


def planned_peak(headroom, job):
    """plan's host peak (cgroup) and the --mem it asks for, from a job spec."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(job, f)
    try:
        r = subprocess.run([headroom, "plan", f.name, "--device", "cpu", "--accounting", "cgroup",
                            "--format", "json"], capture_output=True, text=True, timeout=60)
    finally:
        os.unlink(f.name)
    if not r.stdout.strip().startswith("{"):
        raise SystemExit(f"plan refused the job: {r.stderr.strip()[-300:]}")
    p = json.loads(r.stdout)
    return p["peak_host_bytes"], p["min_host_bytes"]


def limited_outcomes(path):
    """Changed job's id -> (limit in GiB, its peak) for the runs that
    survived under plan's --mem (run_corpus.py writes only those)."""
    out = {}
    if path:
        with open(path) as f:
            for line in f:
                row = json.loads(line)
                g, rest = row["id"][len("limit-"):].split("G-", 1)
                out["pair-" + rest] = (int(g), row["measured"]["peak"]["cgroup"])
    return out


def table(path, headroom, limited=None):
    runs = {}
    with open(path) as f:
        for line in f:
            row = json.loads(line)
            runs.setdefault(row["id"].rsplit("-r", 1)[0], []).append(row)
    _, ids = case_list()
    gib = 1 << 30
    under = limited_outcomes(limited)
    print("| change | plan claims | measured (runs) | claimed ÷ measured | plan's --mem for the changed job | its measured peak | run under that --mem |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for kind, what, before, after in PAIRS:
        b, a = runs.get(ids[tuple(before)]), runs.get(ids[tuple(after)])
        if not b or not a:
            print(f"| {kind}: {what} | not run | | | | | |")
            continue
        pb, _ = planned_peak(headroom, b[0]["job"])
        pa, mem = planned_peak(headroom, a[0]["job"])
        mb = [r["measured"]["peak"]["cgroup"] for r in b]
        ma = [r["measured"]["peak"]["cgroup"] for r in a]
        claimed, measured = pb - pa, statistics.mean(mb) - statistics.mean(ma)
        spread = (max(mb) - min(mb) + max(ma) - min(ma)) / 2
        ratio = f"{claimed / measured:.2f}" if abs(measured) > spread and measured else "within noise"
        print(f"| {kind}: {what} | {claimed / gib:+.3f} GiB | {measured / gib:+.3f} GiB "
              f"(±{spread / gib:.3f}, {len(mb)}+{len(ma)}) | {ratio} | {mem / gib:.0f} GiB | "
              f"{max(ma) / gib:.2f} GiB | {outcome(under.get(ids[tuple(after)]), limited)} |")


def outcome(u, limited):
    if u is None:
        return "not run" if not limited else "killed or not run (see the capped file)"
    g, peak = u
    return f"survived, {peak / (g << 30):.2f} of it"


def limit_cases(path, headroom, out_dir):
    """The changed jobs grouped by the --mem (whole GiB) plan asks for them."""
    rows = {}
    with open(path) as f:
        for line in f:
            row = json.loads(line)
            rows[row["id"].rsplit("-r", 1)[0]] = row
    _, ids = case_list()
    groups = {}
    for kind, _, _, after in PAIRS:
        i = ids[tuple(after)]
        if i not in rows:
            continue
        g = planned_peak(headroom, rows[i]["job"])[1] >> 30
        cs = groups.setdefault(g, [])
        if not any(c["args"] == list(after) for c in cs):
            cs.append({"id": f"limit-{g}G-{i[5:]}", "args": list(after), "note": kind,
                       "bisect": False})
    for g, cs in sorted(groups.items()):
        with open(os.path.join(out_dir, f"limit-{g}G.json"), "w") as f:
            json.dump(cs, f, indent=1)
        print(f"limit-{g}G.json:", " ".join(c["id"] for c in cs))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--write", help="write run_corpus.py's --cases JSON here")
    p.add_argument("--table", help="the runs (JSONL) to tabulate")
    p.add_argument("--headroom", default=os.path.join(HERE, "../../target/release/headroom"))
    p.add_argument("--limited", help="the runs under plan's --mem (JSONL), for --table")
    p.add_argument("--limit-cases", help="with --table's runs: write limit-NG.json cases here")
    a = p.parse_args()
    if a.write:
        with open(a.write, "w") as f:
            json.dump(case_list()[0], f, indent=1)
    if a.table and a.limit_cases:
        limit_cases(a.table, a.headroom, a.limit_cases)
    elif a.table:
        table(a.table, a.headroom, a.limited)


if __name__ == "__main__":
    main()
