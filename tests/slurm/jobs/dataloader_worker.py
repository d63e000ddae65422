"""A real torch DataLoader whose single forked worker outgrows the job's
memory while building batches; the main process stays small."""
import torch
from torch.utils.data import DataLoader, Dataset


class Growing(Dataset):
    def __init__(self):
        self.held = []

    def __len__(self):
        return 1000

    def __getitem__(self, i):
        # Each item keeps 40 MiB alive in the worker.
        self.held.append(torch.ones(10 << 20))
        return torch.tensor([i])


if __name__ == "__main__":
    loader = DataLoader(Growing(), batch_size=1, num_workers=1, multiprocessing_context="fork")
    for step, batch in enumerate(loader):
        if step % 10 == 0:
            print(f"step {step}", flush=True)
    print("done", flush=True)
