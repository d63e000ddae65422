#!/usr/bin/env bash
# The checks that need an NVIDIA GPU, in one run on the device tool's machine
# (PyTorch and PyG in python3, no Rust, no neighbour sampler). Expects in
# .dev/: stripped builds of headroom and of the cli test binary, and
# steps.json (`python3 benches/gpu/replay_steps.py export CORPUS... >
# .dev/steps.json`). Writes $OUT/gpu.tgz and $OUT/log.txt.
set -u
export PYTHONUNBUFFERED=1
out=${OUT:-/tmp/gpu-out}; mkdir -p "$out" /tmp/g
log=/tmp/g/log.txt
exec > >(tee "$log") 2>&1
# The test binaries name the paths they were built at.
[ "$PWD" = /work/main ] || { mkdir -p /work && ln -sfn "$PWD" /work/main; }
mkdir -p target/release && cp .dev/headroom target/release/headroom
echo "== stack"; date; uname -r; nvidia-smi -L
python3 -c 'import torch, torch_geometric as g; print("torch", torch.__version__, "cuda", torch.version.cuda, "pyg", g.__version__)'
echo "== calibrate"
s=$SECONDS
timeout 180 target/release/headroom calibrate --python python3 --out /tmp/g/calibration.yaml --format json > /tmp/g/calibrate.json 2> /tmp/g/calibrate.err
echo "rc=$? in $((SECONDS-s)) s"
timeout 180 target/release/headroom calibrate --python python3 --out /tmp/g/calibration2.yaml > /tmp/g/calibrate.txt 2>&1; echo "rc=$?"
cat /tmp/g/calibrate.txt
echo "== the GPU step's snapshot, kept"
yes '' | timeout 120 python3 src/calibrate/train.py gpu 1,513 /tmp/g/step.pickle > /tmp/g/trainpy.out; echo "rc=$?"
ls -la /tmp/g/step.pickle
timeout 60 target/release/headroom simulate-alloc --gpu h200 /tmp/g/step.pickle 2>&1 | tail -30
echo "== real GPU steps of the corpora's jobs"
s=$SECONDS
[ -f .dev/steps.json ] && timeout 300 python3 benches/gpu/replay_steps.py run .dev/steps.json /tmp/g/gpu-steps.jsonl --jobs 8 | tail -15
echo "rc=$? in $((SECONDS-s)) s"
echo "== tests that take the GPU branch"
cli=$(ls .dev/cli-* | head -1)
timeout 120 "$cli" --test-threads 4 calibrate::the_designed watch_gpu:: alloc::recorded 2>&1 | tail -12
echo "== done"; date
tar czf "$out/gpu.tgz" -C /tmp g
cp "$log" "$out/log.txt"
