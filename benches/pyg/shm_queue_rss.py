"""Whose RSS holds a DataLoader's batches while they wait in its queue.

    benches/pyg/.venv/bin/python benches/pyg/shm_queue_rss.py [MIB] [WORKERS] [PREFETCH]

Workers build batches of MIB MiB each; the main process takes one batch,
holds it, and waits while the workers fill the queue (prefetch x workers
batches outstanding). Then it reads, per process, RSS and its shared-memory
part (RssShmem, /proc/PID/status) and the system's Shmem (/proc/meminfo).

PyTorch's default sharing strategy on Linux (file_descriptor;
torch/multiprocessing/reductions.py `reduce_storage`) moves a sent storage
into an unlinked shared-memory file and passes a duplicated descriptor
(`multiprocessing.reduction.DupFd`), keeping only a weak reference: once
the worker has sent a batch it no longer maps it, and the main process maps
it only when it takes it from the queue. A batch waiting in the queue is
then in /dev/shm (a cgroup charges it as shmem) but in no process's RSS, so
an RSS sum does not see it. This measures that.
"""

import os
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset


class Big(Dataset):
    def __init__(self, mib, n):
        self.elems, self.n = mib * (1 << 20) // 4, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return torch.full((self.elems,), float(i))


def status(pid):
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("VmRSS", "RssAnon", "RssFile", "RssShmem"):
                    out[k] = int(v.split()[0]) * 1024
    except FileNotFoundError:
        pass
    return out


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(p) for p in f.read().split()]
    except FileNotFoundError:
        return []


def shmem():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("Shmem:"):
                return int(line.split()[1]) * 1024
    return 0


def main():
    mib = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    workers = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    prefetch = int(sys.argv[3]) if len(sys.argv) > 3 else 4
    before = shmem()
    loader = DataLoader(Big(mib, 64), batch_size=None, num_workers=workers,
                        prefetch_factor=prefetch)
    it = iter(loader)
    held = next(it)
    held.sum()  # touch every page of the batch the main process holds
    time.sleep(8)  # the workers fill the queue
    me = os.getpid()
    rows = [("main", status(me))] + [("worker", status(p)) for p in children(me)]
    mb = 1 << 20
    for name, s in rows:
        print(f"{name:7s} rss {s.get('VmRSS', 0) / mb:8.1f} MiB  shmem part "
              f"{s.get('RssShmem', 0) / mb:8.1f} MiB")
    rss_shmem = sum(s.get("RssShmem", 0) for _, s in rows)
    queued = shmem() - before
    print(f"system Shmem grew {queued / mb:.1f} MiB; RssShmem summed over the tree "
          f"{rss_shmem / mb:.1f} MiB; batch {mib} MiB, {workers} workers x prefetch {prefetch} "
          f"= {workers * prefetch} outstanding")
    del held, it


if __name__ == "__main__":
    main()
