"""End-to-end runs of public scripts (issue 23, item 6): the script as
published, its dataset replaced by a generated one of the same shape
(shapes.py), run for real under `headroom watch --limit` in its own memory
cgroup with the PyG venv, beside `headroom check`'s plan of the same launch.

    sudo python3 benches/script_corpus/e2e/run.py --headroom target/release/headroom \
        --cache ~/.cache/headroom-script-corpus --python benches/pyg/.venv/bin/python \
        --extra-site /tmp/hr-extra-site --limit 4G --seconds 900 dgraphfin-baseline-sage

The entry's files come from score.py's cache (its commit); a copy is run.
Long runs (200 epochs, 10 runs) are stopped after --seconds: the peak is
read over what ran (the phases each script reaches first: loading, building
the loaders, training epochs and evaluations), and the report says how far
the run got. Needs root (a child memory cgroup).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import score  # noqa: E402

# The stand-in each entry needs, and the folder (in the copy) the script
# reads its dataset from: the repository root, or the job's own folder.
DATA = {
    "dgraphfin-baseline-sage": ("dgraphfin", "root"),
    "dgraphfin-baseline-gatv2": ("dgraphfin", "root"),
    "argo-pyg-flickr-sage": ("flickr", "job"),
    "tesis-leo-neighbor-loader-synthetic": ("none", "job"),
}
# What the script needs first, unmeasured: the first processing of the raw file.
PREPARE = {
    "dgraphfin": "from utils import DGraphFin\nDGraphFin(root='./dataset/', name='DGraphFin')\n",
    "flickr": "from torch_geometric.datasets import Flickr\nFlickr(root='dataset')\n",
    "none": "",
}


def peaks(rows, lo, hi):
    """The largest readings of the timeline between lo and hi seconds."""
    peak = {"cgroup": 0, "anon_shmem": 0, "rss_sum": 0}
    for row in rows:
        if not lo <= row["t_s"] < hi:
            continue
        peak["cgroup"] = max(peak["cgroup"], row.get("cgroup_usage_bytes") or 0)
        peak["anon_shmem"] = max(peak["anon_shmem"], (row.get("cgroup_anon_bytes") or 0)
                                 + (row.get("cgroup_shmem_bytes") or 0))
        peak["rss_sum"] = max(peak["rss_sum"], row.get("rss_sum_bytes") or 0)
    return peak


def watch(cmd, cwd, env, seconds):
    """Runs the watch; returns its exit, stderr's tail and when the first
    training epoch's progress bar closed (tqdm's '100%' on stderr), in
    seconds from the start, which splits training from the evaluation."""
    t0 = time.time()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    marks, tail = {}, bytearray()

    def read():
        for chunk in iter(lambda: proc.stderr.read1(4096), b""):
            tail.extend(chunk)
            del tail[:-20000]
            if "first_train_done" not in marks and b"100%" in chunk:
                marks["first_train_done"] = round(time.time() - t0, 1)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        code = proc.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        proc.terminate()
        proc.wait()
        code = "stopped"
    reader.join(timeout=10)
    return code, tail.decode(errors="replace")[-1500:], marks


def replan(headroom, job, work, env, limit, results):
    """Plans `job` in both accountings and records the plan beside the
    measured peaks of `results` (the entry `replanned`)."""
    rec = json.load(open(results))
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE,
                            capture_output=True, text=True).stdout.strip()
    planned, phases, error = {}, {}, {}
    for acc in ("cgroup", "rss_sum"):
        out = subprocess.run([headroom, "check", job, "--format", "json", "--mem", limit,
                              "--device", "cpu", "--accounting", acc],
                             cwd=work, capture_output=True, text=True, env=env)
        plan = json.loads(out.stdout)["plan"]
        planned[acc] = plan["peak_host_bytes"]
        phases[acc] = {c["phase"]: c.get("host_bytes") for c in plan.get("components", [])}
        measured = rec["measured_peak"][acc]
        error[acc] = round((planned[acc] - measured) / measured, 4)
    rec["replanned"] = {"reader_at": commit, "planned_peak_host": planned,
                        "planned_phases": phases, "error_vs_measured": error}
    print(json.dumps(rec["replanned"], indent=1))
    with open(results, "w") as f:
        json.dump(rec, f, indent=1)
        f.write("\n")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--headroom", required=True)
    p.add_argument("--cache", default=os.path.expanduser("~/.cache/headroom-script-corpus"))
    p.add_argument("--mirrors")
    p.add_argument("--python", required=True, help="the venv's python")
    p.add_argument("--extra-site", help="a directory on PYTHONPATH with what the venv lacks")
    p.add_argument("--limit", default="4G")
    p.add_argument("--seconds", type=int, default=900)
    p.add_argument("--work", default="/tmp/headroom-e2e")
    p.add_argument("--plan-only", metavar="RESULTS_DIR",
                   help="prepare the stand-in data and plan it in both accountings, run nothing: "
                        "writes the entry `replanned` into RESULTS_DIR/ID.json beside its measured peaks")
    p.add_argument("ids", nargs="+")
    a = p.parse_args()
    # Every corpus file's entries (the manifest and the sealed sets).
    entries = []
    for name in sorted(os.listdir(os.path.dirname(HERE))):
        if name.endswith(".yaml"):
            entries += score.load(os.path.join(os.path.dirname(HERE), name))[0]
    headroom = os.path.abspath(a.headroom)
    for e in entries:
        if e["id"] not in a.ids:
            continue
        src = score.fetch(e, a.cache, a.mirrors)
        work = os.path.join(a.work, e["id"])
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(src, work)
        kind, where = DATA[e["id"]]
        job = os.path.join(work, e["job"])
        data_dir = work if where == "root" else os.path.dirname(job)
        env = dict(os.environ)
        env["PATH"] = os.path.dirname(os.path.abspath(a.python)) + ":" + env["PATH"]
        if a.extra_site:
            env["PYTHONPATH"] = a.extra_site
        # Scripts written before torch 2.6 torch.load their processed data
        # with the old default (weights_only=False): torch's own switch for it.
        env["TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"] = "1"
        subprocess.run([a.python, os.path.join(HERE, "shapes.py"), kind, data_dir], env=env,
                       check=True)
        subprocess.run([a.python, "-c", PREPARE[kind]], cwd=data_dir, env=env, check=True)
        plan = subprocess.run(
            [headroom, "check", job, "--format", "json", "--mem", a.limit, "--device", "cpu"],
            cwd=work, capture_output=True, text=True, env=env)
        if a.plan_only:
            replan(headroom, job, work, env, a.limit, os.path.join(a.plan_only, f"{e['id']}.json"))
            continue
        tl = os.path.join(work, "timeline.jsonl")
        cmd = [headroom, "watch", "--limit", a.limit, "--interval", "200ms", "--stat-every", "1",
               "--format", "jsonl", "--out", tl, "--"]
        # A Python job runs as its README says (`python x.py`), a launch file with bash.
        cmd += [a.python, job] if job.endswith(".py") else ["bash", job]
        t0 = time.time()
        code, err, marks = watch(cmd, os.path.dirname(job), env, a.seconds)
        elapsed = time.time() - t0
        rows = [json.loads(line) for line in open(tl)] if os.path.exists(tl) else []
        planned = json.loads(plan.stdout)["plan"] if plan.stdout.strip().startswith("{") else None
        out = {
            "id": e["id"], "exit": code, "seconds": round(elapsed), "samples": len(rows),
            "marks_s": marks,
            "measured_peak": peaks(rows, 0, 1e9),
            # Before the first evaluation: loading, loaders and the first
            # training epoch (the part of the run the plan's train phase is).
            "measured_peak_until_first_eval": peaks(rows, 0, marks.get("first_train_done", 1e9)),
            "planned_peak_host": planned and planned["peak_host_bytes"],
            "planned_phases": planned and {c["phase"]: c.get("host_bytes") for c in planned.get("components", [])},
            "check_exit": plan.returncode, "check_error": plan.stderr.strip()[-500:],
            "stderr_tail": err,
        }
        print(json.dumps(out, indent=1))
        with open(os.path.join(a.work, f"{e['id']}.json"), "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
