"""The job drawn in docs/watch-demo.svg: a stand-in for a GNN training run.
Loads a 256 MiB "dataset", forks 4 DataLoader-like workers that share it and
each build 16 MiB batches for a while, lets them exit, then "evaluates" with
a 128 MiB temporary. Run: headroom watch --limit 1G --predicted-peak 640M
--plot docs/watch-demo.svg -- python3 docs/watch-demo.py
"""
import os
import time


def touch(n_mib):
    b = bytearray(n_mib << 20)
    for i in range(0, len(b), 4096):
        b[i] = 1
    return b


dataset = []
for _ in range(8):  # load in 32 MiB pieces
    dataset.append(touch(32))
    time.sleep(0.15)
for epoch in range(2):
    kids = []
    for w in range(4):
        pid = os.fork()
        if pid == 0:
            batches = []
            for _ in range(4):
                batches.append(touch(16))
                time.sleep(0.25)
            time.sleep(0.5)
            os._exit(0)
        kids.append(pid)
    for pid in kids:
        os.waitpid(pid, 0)
    evaluation = touch(128)
    time.sleep(0.6)
    del evaluation
    time.sleep(0.3)
