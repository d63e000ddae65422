# Do idle workers of deleted loaders pin copy-on-write copies of the main
# process's heap that CPU training rewrites? Prints, after each epoch, the
# cgroup's anonymous memory, /dev/shm, the children's summed Private_Dirty
# and the main process's anonymous memory. Run in a memory cgroup (v1):
#   headroom watch --limit 8G -- .venv/bin/python benches/pyg/cow_probe.py [gc]
# ("gc": gc.collect() after each del). On 2026-11-27 (docs/accuracy.md,
# "Deleted loaders' persistent workers"): after epoch 3 the cgroup's rss was
# 1251 MiB without gc.collect() against 713 MiB with it; the main process's
# anonymous memory 820 MiB and 6 children's private dirty 128 MiB leave
# 303 MiB (111, 256, 303 after epochs 1-3) charged to pages only the
# children map: the heap pages training rewrote after their fork.
import gc, os, sys, torch
import torch.nn.functional as F
from torch_geometric.data import Data
from torch_geometric.loader import NeighborLoader
from torch_geometric.nn import GraphSAGE
torch.manual_seed(0)
N, E, Fdim = 200000, 2000000, 128
collect = len(sys.argv) > 1 and sys.argv[1] == "gc"
data = Data(x=torch.randn(N, Fdim), edge_index=torch.randint(0, N, (2, E)), y=torch.randint(0, 10, (N,)))
model = GraphSAGE(Fdim, 256, 2, 10)
opt = torch.optim.Adam(model.parameters())
train = NeighborLoader(data, num_neighbors=[10, 10], batch_size=1024, input_nodes=torch.arange(8192), shuffle=True)
def rollup(p):
    out = {}
    for l in open(f'/proc/{p}/smaps_rollup'):
        k, _, v = l.partition(':')
        if k in ('Private_Dirty', 'Rss', 'Anonymous'):
            out[k] = int(v.split()[0]) // 1024
    return out
def kids():
    out = []
    for p in os.listdir('/proc'):
        if p.isdigit():
            try:
                if f'PPid:\t{os.getpid()}\n' in open(f'/proc/{p}/status').read():
                    out.append(rollup(p))
            except OSError:
                pass
    return out
for epoch in range(4):
    model.train()
    for b in train:
        opt.zero_grad()
        loss = F.cross_entropy(model(b.x, b.edge_index)[:b.batch_size], b.y[:b.batch_size])
        loss.backward(); opt.step()
    k = kids()
    st = os.statvfs('/dev/shm'); shm = (st.f_blocks - st.f_bfree) * st.f_frsize >> 20
    cg = [l for l in open('/proc/self/cgroup') if ':memory:' in l][0].split(':')[2].strip()
    ms = dict(l.split() for l in open(f'/sys/fs/cgroup/memory{cg}/memory.stat'))
    print(f"  /dev/shm used {shm} MiB; cgroup rss {int(ms['rss'])>>20} MiB shmem {int(ms['shmem'])>>20} MiB cache {int(ms['cache'])>>20} MiB usage {int(open(f'/sys/fs/cgroup/memory{cg}/memory.usage_in_bytes').read())>>20} MiB", flush=True)
    print(f"epoch {epoch} after training: children {len(k)}, their Private_Dirty {sum(x['Private_Dirty'] for x in k)} MiB, main {rollup(os.getpid())}", flush=True)
    model.eval()
    for split in ('valid', 'test'):
        loader = NeighborLoader(data, num_neighbors=[10, 10], batch_size=1024, input_nodes=torch.arange(2048), num_workers=2, persistent_workers=True)
        with torch.no_grad():
            for b in loader:
                model(b.x, b.edge_index)
        del loader
        if collect:
            gc.collect()
