"""The cases of the real-run corpus: case.py's arguments, one dict each.

Graphs (generated once, cached): a power-law graph of 1M nodes and 16M
edges, an R-MAT graph of 2^20 nodes and 16M edges (stored unsorted and
sorted), R-MAT and power-law graphs of 4M nodes and 64M edges, and a small
200k-node graph with float16 features. Splits are small so that every run is
whole epochs in well under a minute; the memory mechanisms (loaders, CSC
copies, workers, batches in flight) do not depend on how many batches an
epoch has, only the largest batch does, and the job spec says how many ran.

`seed-*` cases are the seed stories scaled down; `bisect` asks the runner for
the smallest limit the run survives.
"""


def g(kind, nodes, edges, features=128, train=20480, valid=4096, test=4096, extra=()):
    return ["--graph", kind, "--nodes", str(nodes), "--edges", str(edges),
            "--features", str(features), "--train", str(train), "--valid", str(valid),
            "--test", str(test), *extra]


PL1M = g("powerlaw", 1_000_000, 16_000_000)
RM1M = g("rmat", 1 << 20, 16_000_000)
RM4M = g("rmat", 1 << 22, 64_000_000, features=64, train=16384, valid=2048, test=2048)
PL4M = g("powerlaw", 4_000_000, 64_000_000, features=64, train=16384, valid=2048, test=2048)
PL200K = g("powerlaw", 200_000, 2_400_000, features=256, train=16384, valid=4096, test=4096,
           extra=("--dtype", "float16", "--exponent", "2.5"))
# The probe's configuration A (benches/pyg/probe_variants.sh): float32, smaller splits.
PL200K_A = g("powerlaw", 200_000, 2_400_000, train=8192, valid=2048, test=2048,
             extra=("--fanout", "10,5", "--persistent"))


def c(id_, graph, *args, note="", bisect=False):
    return {"id": id_, "args": [*graph, *args], "note": note, "bisect": bisect}


CASES = [
    # The seed stories, scaled down (seeds/001, 002, 003).
    c("seed-001-attempt1", PL1M, "--batch", "1024", "--fanout", "15,10", "--workers", "4",
      "--persistent", note="4 persistent workers, three resident loaders"),
    c("seed-001-attempt2", PL1M, "--batch", "1024", "--fanout", "15,10", "--workers", "0",
      "--persistent", note="persistent_workers=True with 0 workers does nothing"),
    c("seed-001-fix", PL1M, "--batch", "512", "--fanout", "10,5", note="the fix", bisect=True),
    c("seed-002-three-loaders", PL1M, "--batch", "256", "--fanout", "5,3"),
    c("seed-002-on-demand", PL1M, "--batch", "128", "--fanout", "3,2", "--eval-loaders", "on_demand"),
    c("seed-002-on-demand-gc", PL1M, "--batch", "128", "--fanout", "3,2", "--eval-loaders",
      "on_demand", "--gc-collect", note="as seeds/002 wrote it: del, then gc.collect()"),
    c("seed-003-eval-train", PL1M, "--batch", "512", "--fanout", "10,5", "--eval-loaders",
      "on_demand", "--evaluate-train"),
    # One option at a time on the 1M power-law graph.
    c("pl1m-w2", PL1M, "--workers", "2"),
    c("pl1m-w2-persistent", PL1M, "--workers", "2", "--persistent", "--epochs", "2"),
    c("pl1m-w2-prefetch4", PL1M, "--workers", "2", "--prefetch", "4"),
    c("pl1m-w2-eval-w0", PL1M, "--workers", "2", "--eval-workers", "0"),
    c("pl1m-none", PL1M, "--eval-loaders", "none"),
    c("pl1m-shared", PL1M, "--shared-sampler"),
    c("pl1m-shared-w2", PL1M, "--shared-sampler", "--workers", "2"),
    c("pl1m-sort", PL1M, "--is-sorted", "sort"),
    c("pl1m-undirected", PL1M, "--to-undirected", "--eval-loaders", "none"),
    c("pl1m-pin", PL1M, "--pin-memory", "--workers", "1"),
    c("pl1m-gcn", PL1M, "--conv", "gcn"),
    c("pl1m-gat", PL1M, "--conv", "gat", "--heads", "4", "--hidden", "64", "--batch", "512"),
    c("pl1m-gin", PL1M, "--conv", "gin", "--eval-loaders", "none"),
    c("pl1m-3hop", PL1M, "--fanout", "10,10,10", "--layers", "3", "--batch", "512",
      "--eval-loaders", "none"),
    c("pl1m-b4096", PL1M, "--batch", "4096", "--fanout", "25,15", "--eval-loaders", "none"),
    c("pl1m-all-1hop", PL1M, "--batch", "256", "--fanout", "-1", "--layers", "1",
      "--eval-loaders", "none"),
    c("pl1m-hidden1024", PL1M, "--hidden", "1024", "--eval-loaders", "on_demand"),
    # R-MAT: many nodes without in-edges, heavy tail.
    c("rm1m-base", RM1M, bisect=True),
    c("rm1m-undirected-sort", RM1M, "--to-undirected", "--is-sorted", "sort",
      note="the issue's OOM: undirected R-MAT, sorted in the run, three resident loaders",
      bisect=True),
    c("rm1m-w2-persistent", RM1M, "--workers", "2", "--persistent", "--epochs", "2"),
    c("rm1m-on-demand", RM1M, "--eval-loaders", "on_demand"),
    c("rm1m-on-demand-4ep", g("rmat", 1 << 20, 16_000_000, train=8192), "--eval-loaders",
      "on_demand", "--batch", "2048", "--epochs", "4",
      note="deleted on-demand loaders are never collected in 4 epochs: every one's CSC stays"),
    c("rm1m-b4096", RM1M, "--batch", "4096", "--eval-loaders", "none"),
    c("rm1m-3hop", RM1M, "--fanout", "15,10,5", "--layers", "3", "--batch", "512",
      "--eval-loaders", "none"),
    c("rm1m-undirected-w2", RM1M, "--to-undirected", "--workers", "2", "--eval-loaders", "on_demand"),
    c("rm1m-given-sorted", RM1M, "--is-sorted", "given"),
    c("rm1m-given-sorted-w2", RM1M, "--is-sorted", "given", "--workers", "2"),
    c("rm1m-given-sorted-shared", RM1M, "--is-sorted", "given", "--shared-sampler"),
    # 64M edges.
    c("rm4m-base", RM4M, "--eval-loaders", "on_demand"),
    c("rm4m-w2", RM4M, "--workers", "2"),
    c("rm4m-sort", RM4M, "--is-sorted", "sort"),
    c("rm4m-shared", RM4M, "--shared-sampler", "--workers", "2", "--persistent"),
    c("rm4m-undirected", RM4M, "--to-undirected", "--eval-loaders", "none"),
    c("pl4m-base", PL4M),
    c("pl4m-w4", PL4M, "--workers", "4", "--eval-loaders", "on_demand"),
    c("pl4m-eval-train", PL4M, "--eval-loaders", "none", "--evaluate-train", "--batch", "2048"),
    # Small graph, float16 features.
    c("pl200k-fp16", PL200K),
    c("pl200k-w2-persistent", PL200K, "--workers", "2", "--persistent", "--epochs", "2"),
    c("pl200k-b8192", PL200K, "--batch", "8192", "--fanout", "20,20", "--eval-loaders", "none"),
    c("pl200k-gat", PL200K, "--conv", "gat", "--heads", "8", "--hidden", "32"),
    c("pl200k-undirected-w2", PL200K, "--to-undirected", "--workers", "2"),
    c("pl200k-a-b512-w2", PL200K_A, "--batch", "512", "--workers", "2",
      note="probe configuration A's base run, unprobed"),
    c("pl200k-a-b1024-w3", PL200K_A, "--batch", "1024", "--workers", "3",
      note="probe configuration A's variant, unprobed"),
    c("pl200k-a-b1024-w3-np", g("powerlaw", 200_000, 2_400_000, train=8192, valid=2048, test=2048,
                                extra=("--fanout", "10,5")), "--batch", "1024", "--workers", "3",
      note="configuration A's variant without persistent workers"),
]
