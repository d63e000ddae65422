"""Issue 30's proof by real runs: for each drawn job, its real peak without a
limit, then `headroom plan --mem B` with B a fraction (default 70 %) of that
peak, then the advised job run under a memory cgroup limited to B, then the
advised job with a larger batch under the same limit, to bound the largest
batch that really fits with the advised other settings.

    benches/pyg/.venv/bin/python benches/pyg/advice_proof.py \
        --cases tests/fixtures/pyg/draws/advice-2611253.json --count 20 \
        --out tests/fixtures/pyg/advice-2611253.jsonl \
        --capped tests/fixtures/pyg/advice-2611253.capped.jsonl

One JSONL row per job, appended as soon as the job is done (resumable: a job
already in --out or --capped is skipped). The batch steps: 2x the advised
batch (capped at the job's own batch, which the advice never exceeds, and
at the train split); if that survives, 4x, and so on; if it is killed and --bisect is given,
bisection between the largest that survived and the smallest killed.
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
import case as case_mod  # noqa: E402
import run_corpus as rc  # noqa: E402

MIB = 1 << 20


def plan(headroom, job, budget):
    """headroom's plan of `job` under a host budget (bytes): its JSON."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(job, f)
        path = f.name
    try:
        out = subprocess.run([headroom, "plan", path, "--mem", f"{budget // MIB}M",
                              "--format", "json"], capture_output=True, text=True, check=True)
        return json.loads(out.stdout)
    finally:
        os.remove(path)


def set_arg(argv, flag, value):
    """argv with `flag value` set (added where absent); value None removes it."""
    out, i = [], 0
    while i < len(argv):
        if argv[i] == flag:
            i += 2
            continue
        if argv[i].startswith(flag + "="):
            i += 1
            continue
        out.append(argv[i])
        i += 1
    if value is not None:
        out += [f"{flag}={value}"] if str(value).startswith("-") else [flag, str(value)]
    return out


def set_flag(argv, flag, on):
    out = [x for x in argv if x != flag]
    return out + [flag] if on else out


def advised_argv(argv, rec):
    """The case arguments of the advised settings."""
    a = case_mod.parse(argv)
    out = set_arg(argv, "--batch", rec["batch_size"])
    out = set_arg(out, "--fanout", ",".join(str(f) for f in rec["fanout"]))
    out = set_arg(out, "--workers", rec["num_workers"])
    out = set_flag(out, "--persistent", rec["persistent_workers"])
    out = set_arg(out, "--prefetch", rec["prefetch_factor"])
    out = set_flag(out, "--pin-memory", rec["pin_memory"])
    out = set_flag(out, "--gc-collect", rec["gc_collect"])
    if a.eval_loaders != "layerwise":
        out = set_flag(out, "--shared-sampler", rec["shared_sampler"])
    out = set_arg(out, "--eval-loaders", rec["eval_loaders"])
    # The one-off step: edge_index sorted by destination and saved (made
    # undirected first where the job makes it undirected), then is_sorted=True.
    if rec["is_sorted"] and a.is_sorted == "no":
        out = set_arg(out, "--is-sorted", "given")
    return out


def scaled(timeout, argv, own_batch):
    """The time cap of a run whose batch is smaller than the job's own: more
    batches take longer (draw 04: batch 256 cut to 48 passed 900 s), so the
    cap grows with the ratio, to an hour at most."""
    b = case_mod.parse(argv).batch
    return min(3600.0, timeout * max(1.0, own_batch / b))


def under(headroom, argv, budget, interval, timeout):
    """One run under the budget: (survived, exit code, cgroup peak bytes, seconds)."""
    subprocess.run([sys.executable, os.path.join(HERE, "case.py"), *argv, "--prepare-only"],
                   check=True, stdout=subprocess.DEVNULL)
    t = time.time()
    with tempfile.TemporaryDirectory() as work:
        code, rows, _, _, _, err = rc.run_once(headroom, argv, budget, work, interval, timeout)
    peak = rc.peaks(rows)["cgroup"]
    return code == 0, code, peak, round(time.time() - t, 1), "" if code == 0 else err[-300:]


def batch_steps(headroom, argv, advised, top, budget, interval, timeout, bisect):
    """Runs larger batches under the budget: the largest that survived and
    the smallest that was killed (None where none was), and each step."""
    steps, ok, bad = [], advised, None
    b = advised
    while b < top:
        b = min(2 * b, top)
        s = under(headroom, set_arg(argv, "--batch", b), budget, interval, timeout)
        steps.append({"batch": b, "survived": s[0], "exit": s[1], "peak": s[2], "seconds": s[3]})
        print(f"    batch {b}: {'survived' if s[0] else f'exit {s[1]}'}, peak {s[2] / 2**30:.2f} GiB",
              flush=True)
        if not s[0]:
            bad = b
            break
        ok = b
    while bisect and bad is not None and bad - ok > max(1, ok // 8):
        mid = (ok + bad) // 2
        s = under(headroom, set_arg(argv, "--batch", mid), budget, interval, timeout)
        steps.append({"batch": mid, "survived": s[0], "exit": s[1], "peak": s[2], "seconds": s[3]})
        print(f"    batch {mid}: {'survived' if s[0] else f'exit {s[1]}'}", flush=True)
        if s[0]:
            ok = mid
        else:
            bad = mid
    return ok, bad, steps


def advised_runs(out, argv, adv, rec, budget, a):
    """Runs the advice under the budget (and larger batches after it), or
    where nothing fits by the model the closest settings under the limit
    they need; records what happened in `out`."""
    out.pop("advised_run", None)
    out.pop("closest_run", None)
    for k in ("largest_survived", "smallest_killed", "batch_steps"):
        out.pop(k, None)
    own = case_mod.parse(argv).batch
    if adv and rec.get("fits"):
        s = under(a.headroom, adv, budget, a.interval, scaled(a.timeout, adv, own))
        out["advised_run"] = {"survived": s[0], "exit": s[1], "peak": s[2], "seconds": s[3],
                              "why": s[4]}
        print(f"    advised: {'survived' if s[0] else f'exit {s[1]}'}, peak/budget "
              f"{s[2] / budget:.2f}", flush=True)
        if s[0] and not getattr(a, "no_steps", False):
            # The advice never grows the batch past the job's own, so the
            # largest that fits is sought up to it (and to the train split).
            top = min(case_mod.parse(adv).train, case_mod.parse(argv).batch)
            ok, bad, steps = batch_steps(a.headroom, adv, rec["batch_size"], top, budget,
                                         a.interval, a.timeout, a.bisect)
            out["largest_survived"], out["smallest_killed"], out["batch_steps"] = ok, bad, steps
    elif adv and rec.get("needs_host_bytes"):
        # Nothing fits by the model: the closest settings under the limit they need.
        need = rec["needs_host_bytes"]
        s = under(a.headroom, adv, need, a.interval, scaled(a.timeout, adv, own))
        out["closest_run"] = {"limit": need, "survived": s[0], "exit": s[1], "peak": s[2],
                              "seconds": s[3], "why": s[4]}
        print(f"    closest under {need / 2**30:.2f} GiB: {'survived' if s[0] else f'exit {s[1]}'}",
              flush=True)


def redo(a, cs):
    """Runs the advised jobs of rows already in --out again (their budget
    and advice kept), replacing the rows: for a run lost to something other
    than the job (the stale-cgroup kill fixed at 8354cd3)."""
    by_id = {c["id"]: c for c in cs}
    rows = [json.loads(line) for line in open(a.out) if line.strip()]
    for row in rows:
        if row["id"] not in a.redo:
            continue
        argv = rc.glued(by_id[row["id"]]["args"])
        rec = row["advice"]
        adv = advised_argv(argv, rec) if rec else None
        print(f"{row['id']}: again, budget {row['budget'] / 2**30:.2f} GiB", flush=True)
        advised_runs(row, argv, adv, rec, row["budget"], a)
        row["redone"] = "advised runs run again: the first was SIGKILLed by another watch's stale-cgroup cleanup"
    tmp = a.out + ".tmp"
    with open(tmp, "w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    os.replace(tmp, a.out)


def replan(a, cs):
    """The rows of --out planned again with --headroom at their recorded
    budgets (the first score's rows are kept as they are): each job's new
    advice, and where it differs from the recorded one, the new advice run
    under the budget. Written to --replan-out, one row per job."""
    by_id = {c["id"]: c for c in cs}
    rows = [json.loads(line) for line in open(a.out) if line.strip()]
    done = rc.ids_in(a.replan_out) if os.path.exists(a.replan_out) else set()
    for row in rows:
        if a.replan and row["id"] not in a.replan or row["id"] in done:
            continue
        argv = rc.glued(by_id[row["id"]]["args"])
        p = plan(a.headroom, rc.spec_of(argv), row["budget"])
        rec = p.get("recommended") or {}
        new = {"id": row["id"], "budget": row["budget"], "peak": row["peak"],
               "planned_original": p.get("peak_host_bytes"), "advice": rec,
               "first_advice": row["advice"], "first_outcome": row.get("advised_run") or row.get("closest_run")}
        adv = advised_argv(argv, rec) if rec else None
        new["advised_command"] = "python benches/pyg/case.py " + " ".join(adv) if adv else None
        same = adv == (advised_argv(argv, row["advice"]) if row["advice"] else None)
        print(f"{row['id']}: planned {p.get('peak_host_bytes', 0) / 2**30:.2f} GiB "
              f"(first {row['planned_original'] / 2**30:.2f}), advice "
              f"{'unchanged' if same else 'changed'}, fits by plan: {rec.get('fits')}", flush=True)
        if same:
            new["unchanged"] = True
        else:
            advised_runs(new, argv, adv, rec, row["budget"], a)
        new["versions"] = rc.versions()
        with open(a.replan_out, "a") as f:
            f.write(json.dumps(new) + "\n")


def prove(c, a):
    t = time.time()
    row = rc.measure(c, a.headroom, a.limit, a.interval, False, a.timeout)
    peak = row["measured"]["peak"]["cgroup"]
    budget = int(peak * a.fraction) // MIB * MIB
    p = plan(a.headroom, row["job"], budget)
    rec = p.get("recommended") or {}
    out = {"id": c["id"], "note": c.get("note", ""), "command": row["command"],
           "peak": peak, "budget": budget, "planned_original": p.get("peak_host_bytes"),
           "advice": rec, "without_preprocessing": p.get("without_preprocessing")}
    print(f"{c['id']}: peak {peak / 2**30:.2f} GiB, budget {budget / 2**30:.2f} GiB, "
          f"fits by plan: {rec.get('fits')}, batch {rec.get('batch_size')}", flush=True)
    argv = rc.glued(c["args"])
    adv = advised_argv(argv, rec) if rec else None
    out["advised_command"] = "python benches/pyg/case.py " + " ".join(adv) if adv else None
    advised_runs(out, argv, adv, rec, budget, a)
    out["versions"] = rc.versions()
    out["seconds"] = round(time.time() - t, 1)
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--cases", required=True)
    p.add_argument("--count", type=int, required=True, help="jobs to prove (capped ones do not count)")
    p.add_argument("--out", required=True)
    p.add_argument("--capped", required=True)
    p.add_argument("--headroom", default=os.path.join(HERE, "../../target/release/headroom"))
    p.add_argument("--fraction", type=float, default=0.7, help="budget as a fraction of the real peak")
    p.add_argument("--limit", type=int, default=12 << 30, help="cap of the run without a budget")
    p.add_argument("--timeout", type=float, default=900)
    p.add_argument("--interval", default="50ms")
    p.add_argument("--bisect", action="store_true")
    p.add_argument("--redo", nargs="*", default=[],
                   help="ids in --out whose advised runs to run again, replacing their rows")
    p.add_argument("--replan", nargs="*", default=None,
                   help="plan the rows of --out again (these ids, or all) and run changed advice")
    p.add_argument("--replan-out", help="where --replan writes its rows")
    p.add_argument("--no-steps", action="store_true",
                   help="run the advice only, not the larger batches after it")
    a = p.parse_args()
    with open(a.cases) as f:
        cs = json.load(f)
    if a.replan is not None:
        replan(a, cs)
        return
    if a.redo:
        redo(a, cs)
        return
    done, capped = rc.ids_in(a.out), rc.ids_in(a.capped)
    proved = 0
    for c in cs:
        if proved >= a.count:
            break
        if c["id"] in done or c["id"] in capped:
            proved += c["id"] in done
            continue
        t = time.time()
        try:
            row = prove(c, a)
        except rc.Capped as e:
            print(f"{c['id']}: CAPPED: {str(e)[:300]}", flush=True)
            rc.record_capped(a.capped, c, str(e), t)
            continue
        except Exception as e:  # one failed job must not lose the others
            print(f"{c['id']}: FAILED: {e}", flush=True)
            rc.record_capped(a.capped, c, f"failed: {e}", t)
            continue
        proved += 1
        with open(a.out, "a") as f:
            f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
