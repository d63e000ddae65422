"""Scores headroom's script reader on the sealed corpus of public training
scripts (issues 23 and 28): each entry of manifest.yaml names the files of a
public repository at a commit, the JOB argument, and the job as read by hand
before headroom ran on it. The scripts stay outside the repository: they are
read from a cache directory, filled from raw.githubusercontent.com at the
commit named (or from local git mirrors with --mirrors).

    python3 benches/script_corpus/score.py --headroom target/release/headroom \
        [--cache ~/.cache/headroom-script-corpus] [--mirrors DIR] \
        [--out results.json] [--show-held-out] [IDS...]

A field is right when headroom's `job` has the labelled value AND one of the
labelled `file:line` places is among the places headroom names for it (its
`inferred` entry), or, for a field labelled `assumed`, when headroom lists
the field as assumed and names that line. A job is fully right when all its
fields are. `plan` (the reading `check` makes, with no budget needed) runs with
--assume-defaults, so a reading that misses a
field still scores the others; an exit status 2 scores nothing.

The held-out set (held_out.txt: 16 entries drawn with random.Random(2328)
before the first score) is reported as one figure unless --show-held-out.
"""

import argparse
import json
import os
import re
import struct
import subprocess
import sys
import urllib.request
import zipfile

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))


def load(manifest):
    with open(manifest) as f:
        entries = yaml.safe_load(f)["entries"]
    held = set()
    if os.path.abspath(manifest) == os.path.join(HERE, "manifest.yaml"):
        with open(os.path.join(HERE, "held_out.txt")) as f:
            held = {line.strip() for line in f if line.strip()}
    return entries, held


def fetch(entry, root, mirrors):
    """Fills root/<id>/ with the entry's files; returns the directory."""
    d = os.path.join(root, entry["id"])
    for path in entry["files"]:
        dest = os.path.join(d, path)
        if os.path.exists(dest):
            continue
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        data = None
        if mirrors:
            git = os.path.join(mirrors, entry["repo"].replace("/", "+"), "repo")
            r = subprocess.run(["git", "-C", git, "show", f"{entry['commit']}:{path}"],
                               capture_output=True)
            if r.returncode == 0:
                data = r.stdout
        if data is None:
            url = f"https://raw.githubusercontent.com/{entry['repo']}/{entry['commit']}/{path}"
            with urllib.request.urlopen(url, timeout=60) as resp:
                data = resp.read()
        with open(dest, "wb") as f:
            f.write(data)
    if "launch" in entry:
        dest = os.path.join(d, entry["launch"]["path"])
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        with open(dest, "w") as f:
            f.write(entry["launch"]["text"])
    for df in entry.get("data_files", []):
        write_stand_in(os.path.join(d, df["path"]), df["arrays"])
    return d


def npy_header(dtype, shape):
    """numpy's .npy header (format 1.0) for an array of `dtype` and `shape`."""
    descr = {"float32": "<f4", "float64": "<f8", "float16": "<f2", "int64": "<i8",
             "int32": "<i4", "bool": "|b1", "uint8": "|u1"}[dtype]
    shp = "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"
    h = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shp)
    h += " " * ((64 - (10 + len(h) + 1) % 64) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode()


def write_stand_in(path, arrays):
    """A header-only stand-in for a published data file: the shapes and
    dtypes its real arrays have, no data (the reader reads headers only)."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    if path.endswith(".npz"):
        with zipfile.ZipFile(path, "w") as z:
            for name, (dtype, shape) in arrays.items():
                z.writestr(name + ".npy", npy_header(dtype, shape))
    else:
        (dtype, shape), = arrays.values()
        with open(path, "wb") as f:
            f.write(npy_header(dtype, shape))


def run(headroom, entry, d):
    args = [headroom, "plan", os.path.join(d, entry["job"]), "--format", "json",
            "--assume-defaults"] + [str(a) for a in entry.get("flags", [])]
    if entry.get("script_args"):
        args += ["--"] + [str(a) for a in entry["script_args"]]
    try:
        r = subprocess.run(args, cwd=d, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return None, "timeout", ["no answer in 120 s"]
    if r.returncode == 2 or not r.stdout.strip().startswith("{"):
        return None, r.returncode, r.stderr.strip().splitlines()[-1:] or [""]
    return json.loads(r.stdout), r.returncode, []


def norm(name):
    return re.sub(r"[-_ ]", "-", str(name).strip().lower())


def places(text):
    """`a.py:3 (not given: ...), b.sh:1` -> {"a.py:3", "b.sh:1"}."""
    out = set()
    for part in re.split(r",\s*", text or ""):
        part = re.sub(r"\s*\(.*$", "", part).strip()
        if part:
            out.add(part)
    return out


def named(text, at):
    """A labelled place written whole in `text`: a file name may hold a
    comma (`graphsage_2,1.sh:61`), which places() splits."""
    return any(re.search(r"(^|,\s*)" + re.escape(p) + r"($|[\s,(])", text or "") for p in at)


def value_at(job, field):
    v = job
    for k in field.split("."):
        if not isinstance(v, dict) or k not in v:
            return None
        v = v[k]
    return v


def profile_names():
    """Each alias of headroom's dataset profiles -> the profile's name: a
    label may spell the dataset as PyG's class (`ellipticbitcoindataset`)
    where headroom prints the profile it planned (`elliptic`); the profile
    lists that class among its aliases, so both name the same graph."""
    out = {}
    d = os.path.join(HERE, "..", "..", "profiles", "datasets")
    for name in sorted(os.listdir(d)):
        with open(os.path.join(d, name)) as f:
            p = yaml.safe_load(f)
        for a in [p["name"]] + list(p.get("aliases") or []):
            out[norm(a)] = norm(p["name"])
    return out


PROFILES = profile_names()


def same(field, want, got):
    if field == "dataset":
        if isinstance(want, dict):
            return isinstance(got, dict) and all(got.get(k) == v for k, v in want.items())
        canon = lambda n: PROFILES.get(norm(n), norm(n))
        return isinstance(got, str) and canon(got) == canon(want)
    if field == "budget.host" and isinstance(want, str):
        # Slurm's --mem=100G is 100 GiB; the job JSON writes sizes as "100GiB".
        units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
        if isinstance(got, str):
            m = re.fullmatch(r"\s*([0-9.]+)\s*([KMGT])(?:i?B)?\s*", got, re.I)
            got = m and round(float(m.group(1)) * units[m.group(2).upper()])
        return got == int(want[:-1]) * units[want[-1].upper()]
    return got == want


def score_field(r, field, label):
    want, at = label[0], set(label[1:])
    if want == "assumed":
        for a in r.get("assumed", []):
            if a["field"] == field and any(p in a["why"] for p in at):
                return True, "assumed"
        return False, "not stated as assumed with its line"
    got = value_at(r["job"], field)
    if not same(field, want, got):
        return False, f"got {json.dumps(got)}"
    for i in r.get("inferred", []):
        if i["field"] == field and (places(i["from"]) & at or named(i["from"], at)):
            return True, "ok"
    return False, "value right, line not named"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--headroom", default="target/release/headroom")
    p.add_argument("--cache", default=os.path.expanduser("~/.cache/headroom-script-corpus"))
    p.add_argument("--mirrors", help="directory of git mirrors named owner+repo/repo")
    p.add_argument("--manifest", default=os.path.join(HERE, "manifest.yaml"),
                   help="the corpus to score (another file: a later sealed set, all of it reported)")
    p.add_argument("--out", help="write every field's result here (JSON)")
    p.add_argument("--show-held-out", action="store_true")
    p.add_argument("ids", nargs="*")
    a = p.parse_args()
    entries, held = load(a.manifest)
    headroom = os.path.abspath(a.headroom)
    results = []
    for e in entries:
        if a.ids and e["id"] not in a.ids:
            continue
        d = fetch(e, a.cache, a.mirrors)
        r, code, err = run(headroom, e, d)
        fields = {}
        for field, label in e["expect"].items():
            fields[field] = (False, "exit 2: " + err[0]) if r is None else score_field(r, field, label)
        results.append({"id": e["id"], "category": e["category"], "held_out": e["id"] in held,
                        "exit": code, "fields": {k: {"right": v[0], "note": v[1]} for k, v in fields.items()}})
    if a.out:
        with open(a.out, "w") as f:
            json.dump(results, f, indent=1)
    report(results, a.show_held_out)


def figure(rows):
    fields = [f for r in rows for f in r["fields"].values()]
    right = sum(f["right"] for f in fields)
    jobs = sum(all(f["right"] for f in r["fields"].values()) for r in rows)
    return f"fields {right}/{len(fields)}, jobs fully right {jobs}/{len(rows)}"


def report(results, show_held):
    dev = [r for r in results if not r["held_out"]]
    held = [r for r in results if r["held_out"]]
    print(f"all ({len(results)} jobs): {figure(results)}")
    print(f"  development ({len(dev)}): {figure(dev)}")
    print(f"  held out ({len(held)}): {figure(held)}")
    for cat in sorted({r["category"] for r in results}):
        print(f"  {cat}: {figure([r for r in results if r['category'] == cat])}")
    for r in results:
        if r["held_out"] and not show_held:
            continue
        wrong = {k: f["note"] for k, f in r["fields"].items() if not f["right"]}
        mark = "ok " if not wrong else "   "
        print(f"{mark}{r['id']} (exit {r['exit']})")
        if r["exit"] == 2:
            print(f"      {next(iter(wrong.values()))}")
            continue
        for k, note in wrong.items():
            print(f"      {k}: {note}")


if __name__ == "__main__":
    sys.exit(main())
