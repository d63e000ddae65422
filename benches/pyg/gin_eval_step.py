# PyG's GIN model (as benches/pyg/case.py builds it) evaluated once under
# no_grad on the CPU, every tensor its own mapping (run with
# MALLOC_MMAP_THRESHOLD_=65536): the RSS high-water above the inputs (x and
# edge_index, allocated before the baseline) is the pass's peak of live
# tensors. Usage: S E F HIDDEN LAYERS CLASSES
import sys, torch
from torch_geometric.nn import GIN
S, E, F, H, L, C = (int(v) for v in sys.argv[1:7])
torch.manual_seed(0)
def status(k):
    for l in open('/proc/self/status'):
        if l.startswith(k):
            return int(l.split()[1]) * 1024
x = torch.randn(S, F)
ei = torch.stack([torch.randint(0, S, (E,)), torch.randint(0, S, (E,))])
model = GIN(F, H, L, C).eval()
with torch.no_grad():
    model(x[:10], ei[:, :5] % 10)
    open('/proc/self/clear_refs', 'w').write('5')
    base = status('VmRSS:')
    y = model(x, ei)
    peak = status('VmHWM:') - base
print(f"S={S} E={E} F={F} H={H} L={L} C={C} peak_over_inputs_bytes={peak}")
