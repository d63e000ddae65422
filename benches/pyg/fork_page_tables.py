"""What forking costs a memory cgroup in page tables: a Python holding a
4 GiB tensor forks eight children, and the cgroup's usage, anon and kmem
are read before and after (src/estimate/page_tables.rs).

Needs root and cgroup v1's memory controller, as this machine has: it makes
a child cgroup of its own, moves itself there, and removes it at the end.

    sudo benches/pyg/.venv/bin/python benches/pyg/fork_page_tables.py

Run on 2026-11-26 (kernel 6.18): usage 4104 -> 4185 MiB, kmem 8 -> 81 MiB
(9.1 MiB a child against 8 MiB from 4 GiB / 512), anon +1 MiB a child.
"""

import os
import time

import torch

MIB = 1 << 20


def main():
    own = [l.split(":")[2].strip() for l in open("/proc/self/cgroup") if ":memory:" in l][0]
    cg = f"/sys/fs/cgroup/memory{own}/headroom-fork-page-tables"
    os.makedirs(cg, exist_ok=True)
    with open(f"{cg}/cgroup.procs", "w") as f:
        f.write(str(os.getpid()))

    def read(name):
        return int(open(f"{cg}/{name}").read())

    def anon():
        stat = dict(l.split() for l in open(f"{cg}/memory.stat"))
        return int(stat["rss"])

    x = torch.ones(4 << 28, dtype=torch.float32)  # 4 GiB, every page written
    before = read("memory.usage_in_bytes"), read("memory.kmem.usage_in_bytes"), anon()
    kids = []
    for _ in range(8):
        pid = os.fork()
        if pid == 0:
            time.sleep(4)
            os._exit(0)
        kids.append(pid)
    time.sleep(1.5)
    after = read("memory.usage_in_bytes"), read("memory.kmem.usage_in_bytes"), anon()
    for k in kids:
        os.waitpid(k, 0)
    del x
    print(f"parent holds {4 << 30 >> 20} MiB; 8 children forked")
    for name, b, a in zip(("usage", "kmem", "anon"), before, after):
        print(f"{name:6s} {b // MIB:6d} -> {a // MIB:6d} MiB ({(a - b) / 8 / MIB:+.1f} MiB a child)")
    print(f"expected page tables a child: {(4 << 30) / 512 / MIB:.1f} MiB")
    # Back to the parent cgroup, so this one can be removed.
    with open(f"/sys/fs/cgroup/memory{own}/cgroup.procs", "w") as f:
        f.write(str(os.getpid()))
    os.rmdir(cg)


if __name__ == "__main__":
    main()
