#!/usr/bin/env bash
# Speed and memory of `headroom diagnose` on big logs, against
# `grep -c -E` with the same trigger words (TRIGGERS in src/diagnose/parse/mod.rs and locale_words.rs).
#
# Usage: benches/diagnose_vs_grep.sh [SIZE_MIB ...]   (default: 100 1024)
# HEADROOM_BASELINE_BIN=path also times an older build on the same log, so a
# change's cost is read from one run (same machine load, same page cache).
# Prints, per size: best-of-3 wall time of both (ns clock, shown in ms), the
# ratio grep/diagnose (>= 1.00 means diagnose is at least as fast), and the
# peak RSS of diagnose from /usr/bin/time -v. The log is training progress
# (tqdm bars redrawn with \r, epoch summaries) with three causes buried in it.
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=("${@:-100 1024}")
[ $# -eq 0 ] && sizes=(100 1024)
cargo build --release --quiet
bin=target/release/headroom
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The same literals the prefilter uses, as one extended regex (none contains
# a regex metacharacter; checked below).
pattern=$(sed -n '/pub const TRIGGERS/,/^];/p' src/diagnose/parse/mod.rs src/diagnose/parse/locale_words.rs | grep -o '"[^"]*"' | tr -d '"' | paste -sd'|')
if printf '%s' "$pattern" | grep -q '[].*+?()[{}^$\\]'; then
  echo "trigger list has regex metacharacters; escape them" >&2; exit 1
fi

# One 1 MiB block of progress output, repeated.
block="$tmp/block"
awk 'BEGIN {
  srand(7); n = 0
  while (n < 1048576) {
    line = ""
    for (k = 0; k < 8; k++) {
      i = int(rand() * 2738)
      line = line sprintf("\rEpoch %d: %3d%%|%-10s| %d/2738 [01:%02d<02:%02d, %5.2fit/s, loss=%.4f]", int(rand()*10), int(i*100/2738), substr("##########", 1, int(i*10/2738)), i, int(rand()*60), int(rand()*60), rand()*20, rand())
    }
    line = line sprintf("\n[train] step %d lr=%.2e grad_norm=%.3f mem_alloc=%.1fGB\n", int(rand()*1e6), rand()*1e-3, rand()*5, rand()*40)
    printf "%s", line; n += length(line)
  }
}' > "$block"

best_ms() { # best of 3 runs of "$@", in ms with ns resolution
  local best=
  for _ in 1 2 3; do
    local t0 t1 ms
    t0=$(date +%s%N); "$@" > /dev/null; t1=$(date +%s%N)
    ms=$(( (t1 - t0) / 1000000 ))
    if [ -z "$best" ] || [ "$ms" -lt "$best" ]; then best=$ms; fi
  done
  echo "$best"
}

echo "timing: wall clock from date +%s%N, best of 3 runs, reported in ms (resolution 1 ms); page cache warm"
for mib in "${sizes[@]}"; do
  log="$tmp/slurm-$mib.out"
  : > "$log"
  for ((i = 0; i < mib; i++)); do
    cat "$block" >> "$log"
    if [ "$i" -eq $((mib / 2)) ]; then
      echo "RuntimeError: DataLoader worker (pid 31337) is killed by signal: Killed." >> "$log"
    fi
  done
  printf '[ 912.000101] Memory cgroup out of memory: Killed process 31337 (python) total-vm:90000000kB, anon-rss:41943040kB, file-rss:10240kB, shmem-rss:2097152kB, UID:1000 pgtables:90000kB oom_score_adj:0\nslurmstepd: error: Detected 1 oom_kill event in StepId=42.batch. Some of the step tasks have been OOM Killed.\n' >> "$log"
  cat "$log" > /dev/null # warm the page cache for both
  g=$(LC_ALL=C best_ms grep -c -E "$pattern" "$log")
  d=$(best_ms "$bin" diagnose "$log" --format json)
  verdict=$("$bin" diagnose "$log" --format json | grep -m1 '"category"' | tr -d ' ,')
  rss=$(/usr/bin/time -v "$bin" diagnose "$log" --format json 2>&1 >/dev/null | awk -F': ' '/Maximum resident/ {print $2}')
  if [ -n "${HEADROOM_BASELINE_BIN:-}" ]; then
    b=$(best_ms "$HEADROOM_BASELINE_BIN" diagnose "$log" --format json)
    brss=$(/usr/bin/time -v "$HEADROOM_BASELINE_BIN" diagnose "$log" --format json 2>&1 >/dev/null | awk -F': ' '/Maximum resident/ {print $2}')
    bratio=$(awk -v g="$g" -v d="$b" 'BEGIN { printf "%.2f", (d > 0 ? g / d : 0) }')
    printf '%5d MiB: baseline diagnose %6d ms | ratio grep/baseline %s | baseline peak RSS %s KiB\n' "$mib" "$b" "$bratio" "$brss"
  fi
  ratio=$(awk -v g="$g" -v d="$d" 'BEGIN { printf "%.2f", (d > 0 ? g / d : 0) }')
  printf '%5d MiB: grep -c -E %6d ms | diagnose %6d ms | ratio grep/diagnose %s | diagnose peak RSS %s KiB | %s\n' \
    "$mib" "$g" "$d" "$ratio" "$rss" "$verdict"
done
