# The evaluation of DGraphFin's baseline (gnn_mini_batch.py, SAGE_NeighSampler
# 2x128, layer-wise inference with NeighborSampler(sizes=[-1]), batch 4096),
# its steps written out with RssAnon and glibc's mallinfo2 after each: how
# much of the first layer's `xs` glibc keeps into the second layer.
# Run in the work directory run.py prepares (its dataset/ and models/):
#   cd /tmp/headroom-e2e/dgraphfin-baseline-sage && \
#   PYTHONPATH=/tmp/hr-extra-site TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1 \
#   .../benches/pyg/.venv/bin/python .../e2e/dgraphfin_eval_heap.py 2
# (the argument: the subgraph loader's workers). 2026-11-26, 2 workers: xs
# took the heap from 217 to 2025 MiB in use; after `del xs` the arena held
# 1935 MiB and 1265 MiB into the second layer, RssAnon 4262 MiB there.
import os, sys, ctypes, time
sys.path.insert(0, '.')
class MI2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]
libc = ctypes.CDLL("libc.so.6"); libc.mallinfo2.restype = MI2
def rss(tag):
    d = {l.split(':')[0]: l.split(':')[1].strip() for l in open('/proc/self/status')}
    m = libc.mallinfo2()
    print(f"{tag:34s} RssAnon {int(d['RssAnon'].split()[0])//1024:6d} MiB arena {m.arena>>20:6d} inuse {m.uordblks>>20:6d} mmapped {m.hblkhd>>20:6d}", flush=True)
import torch, torch.nn.functional as F
import torch_geometric.transforms as T
from torch_geometric.data import NeighborSampler
from utils import DGraphFin
from models import SAGE_NeighSampler
dataset = DGraphFin(root='./dataset/', name='DGraphFin', transform=T.ToSparseTensor())
data = dataset[0]
data.adj_t = data.adj_t.to_symmetric()
x = data.x; x = (x-x.mean(0))/x.std(0); data.x = x; del x
W = int(sys.argv[1])
layer_loader = NeighborSampler(data.adj_t, node_idx=None, sizes=[-1], batch_size=4096, shuffle=False, num_workers=W)
model = SAGE_NeighSampler(in_channels=17, hidden_channels=128, out_channels=2, num_layers=2, dropout=0.0, batchnorm=False)
model.eval()
rss('before eval')
t=time.time()
with torch.no_grad():
    x_all = data.x
    for i in range(2):
        xs = []
        peak = 0
        for k, (bs, n_id, adj) in enumerate(layer_loader):
            edge_index, _, size = adj
            x = x_all[n_id]
            x_target = x[:size[1]]
            x = model.convs[i]((x, x_target), edge_index)
            if i != 1:
                x = F.relu(x)
            xs.append(x)
            if k % 300 == 0: rss(f'layer {i} batch {k}')
        rss(f'layer {i} loop done')
        x_all = torch.cat(xs, dim=0)
        rss(f'layer {i} cat')
        del xs
        rss(f'layer {i} xs freed')
    out = x_all.log_softmax(dim=-1)
rss('after eval')
print('seconds', time.time()-t)
