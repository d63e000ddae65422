# What a deleted on-demand NeighborLoader's persistent workers hold: their
# /proc status (VmRSS, RssAnon, RssFile, RssShmem) after each epoch.
import os, sys, torch
from torch_geometric.data import Data
from torch_geometric.loader import NeighborLoader
torch.manual_seed(0)
N, E, F = 161993, 2633325, 1024
data = Data(x=torch.randn(N, F).to(torch.bfloat16), edge_index=torch.randint(0, N, (2, E)))
def kids():
    out = []
    for p in os.listdir('/proc'):
        if not p.isdigit(): continue
        try:
            st = open(f'/proc/{p}/status').read()
        except OSError:
            continue
        if f'PPid:\t{os.getpid()}\n' in st:
            f = dict(l.split(':\t') for l in st.splitlines() if ':\t' in l)
            out.append({k: f.get(k, '').strip() for k in ('VmRSS', 'RssAnon', 'RssFile', 'RssShmem')})
    return out
def me():
    st = open('/proc/self/status').read()
    f = dict(l.split(':\t') for l in st.splitlines() if ':\t' in l)
    return {k: f.get(k, '').strip() for k in ('VmRSS', 'RssAnon', 'RssFile', 'RssShmem')}
print('main', me())
for epoch in range(int(sys.argv[1]) if len(sys.argv) > 1 else 3):
    for split in ('valid', 'test'):
        loader = NeighborLoader(data, num_neighbors=[2, 4], batch_size=512,
                                input_nodes=torch.arange(512), num_workers=2, persistent_workers=True)
        for b in loader:
            pass
        del loader
    k = kids()
    print('epoch', epoch, 'children', len(k))
    for x in k[-2:]:
        print('  ', x)
print('main', me())
