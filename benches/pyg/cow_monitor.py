# Runs one case (benches/pyg/case.py, with --marks) under `headroom watch`
# and samples every 0.5 s, from outside: the memory cgroup's anonymous
# memory (v1 memory.stat rss), the main process's Anonymous (smaps_rollup)
# and its children's summed Private_Dirty. `pinned` is the rest: anonymous
# pages the cgroup is charged for that no process maps privately, such as
# the old versions of pages the main process rewrote after children forked
# (copy-on-write), which only the idle children still share. Prints each
# epoch's end and writes every sample as JSON.
# Usage: cow_monitor.py HEADROOM OUT.json PYTHON case.py ARGS... --marks FILE
# (docs/accuracy.md, "Copy-on-write versions kept by deleted loaders' workers").
import json
import os
import subprocess
import sys
import time


def rollup(pid):
    out = {}
    for line in open(f"/proc/{pid}/smaps_rollup"):
        k, _, v = line.partition(":")
        if k in ("Private_Dirty", "Anonymous"):
            out[k] = int(v.split()[0]) >> 10
    return out


def children(pid):
    try:
        return [int(c) for c in open(f"/proc/{pid}/task/{pid}/children").read().split()]
    except OSError:
        return []


def sample(main):
    cg = [l for l in open(f"/proc/{main}/cgroup") if ":memory:" in l][0].split(":")[2].strip()
    stat = dict(l.split() for l in open(f"/sys/fs/cgroup/memory{cg}/memory.stat"))
    kids = children(main)
    private = 0
    for k in kids:
        try:
            private += rollup(k)["Private_Dirty"]
        except OSError:
            pass  # a worker that exited between the listing and its smaps
    rss, anon = int(stat["rss"]) >> 20, rollup(main)["Anonymous"]
    return {"rss": rss, "main": anon, "kids": len(kids), "kids_private": private,
            "pinned": rss - anon - private}


def main():
    hr, out, cmd = sys.argv[1], sys.argv[2], sys.argv[3:]
    marks = cmd[cmd.index("--marks") + 1]
    if os.path.exists(marks):
        os.remove(marks)
    p = subprocess.Popen([hr, "watch", "--limit", "12G", "--"] + cmd,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pid, rows, t0 = None, [], time.time()
    while p.poll() is None:
        time.sleep(0.5)
        try:
            if pid is None:
                if os.path.exists(marks) and os.path.getsize(marks) > 0:
                    pid = json.loads(open(marks).readline())["pid"]
                continue
            rows.append({"t": time.time(), **sample(pid)})
        except (OSError, IndexError, KeyError, ValueError):
            pass  # the process is starting or gone
    json.dump(rows, open(out, "w"))
    for m in (json.loads(l) for l in open(marks)):
        if m["event"] == "end" and m["phase"] in ("train", "evaluate") and rows:
            r = min(rows, key=lambda r: abs(r["t"] - m["t"]))
            print(f"{m['phase']:9} end, epoch {m.get('epoch')}: cgroup rss {r['rss']} MiB, "
                  f"main {r['main']} MiB, {r['kids']} children ({r['kids_private']} MiB "
                  f"private), pinned {r['pinned']} MiB")
    print("max pinned", max((r["pinned"] for r in rows), default=None), "MiB;",
          "exit", p.returncode, "after", round(time.time() - t0), "s")


if __name__ == "__main__":
    main()
