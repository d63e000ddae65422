#!/bin/bash
# Issue 12's check of `watch --probe` + `calibrate --from` on real PyG runs:
# three configurations, each run at a base and a variant setting under the
# probe; then calibrate from the base run and plan the variant's observed
# job with the default coefficients and with that calibration, against the
# variant's measured phase peaks. BASES=2 (issue 24) also runs each base at a
# second batch size and calibrates from both runs.
#
#   benches/pyg/probe_variants.sh [OUT_DIR]     (default /tmp/probe-runs)
#   REPLAN=1 benches/pyg/probe_variants.sh      (keep the recorded runs; only
#                                                calibrate and plan again, after a
#                                                model change)
#   BASES=2 benches/pyg/probe_variants.sh       (calibrate from two runs of the
#                                                base, two batch sizes)
#   VARIANT_RUNS=3 benches/pyg/probe_variants.sh (run each variant 3 times: a
#                                                small graph's peak moves ±9 % from
#                                                run to run; the plan is compared
#                                                with each run and their median)
#
# Needs benches/pyg/.venv (setup.sh) and a release build; about 10 minutes.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
H=${HEADROOM:-$HERE/../../target/release/headroom}
OUT=${1:-/tmp/probe-runs}
mkdir -p "$OUT"
cd "$HERE"
run() {
  local name=$1; shift
  rm -rf "${OUT:?}/$name"
  "$H" watch --probe --out "$OUT/$name" --interval 50ms -- .venv/bin/python case.py "$@" > "$OUT/$name.log" 2>&1
  echo "$name: exit $?"
}
A="--graph powerlaw --nodes 200000 --edges 2400000 --train 8192 --valid 2048 --test 2048 --fanout 10,5 --persistent"
B="--graph powerlaw --nodes 1000000 --edges 16000000 --train 20480 --valid 4096 --test 4096 --fanout 15,10"
C="--graph rmat --nodes 1048576 --edges 16000000 --train 20480 --valid 4096 --test 4096 --fanout 15,10 --eval-loaders on_demand"
N=${VARIANT_RUNS:-1}
BASES=${BASES:-1}
variants() {
  local X=$1; shift
  for i in $(seq 1 "$N"); do
    if [ "$i" = 1 ]; then run "$X-var" "$@"; else run "$X-var$i" "$@"; fi
  done
}
if [ -z "${REPLAN:-}" ]; then
run A-base $A --batch 512 --workers 2
variants A $A --batch 1024 --workers 3
run B-base $B --batch 1024 --workers 4 --persistent
variants B $B --batch 2048 --workers 2 --persistent
run C-base $C --batch 1024
variants C $C --batch 2048 --epochs 2
fi
if [ "$BASES" = 2 ] && [ -z "${REPLAN:-}" ]; then
run A-base2 $A --batch 2048 --workers 2
run B-base2 $B --batch 512 --workers 4 --persistent
run C-base2 $C --batch 512
fi
for X in A B C; do
  FROM=("$OUT/$X-base")
  if [ "$BASES" = 2 ]; then FROM+=("$OUT/$X-base2"); fi
  "$H" calibrate --from "${FROM[@]}" --out "$OUT/$X.cal.yaml" --format json > "$OUT/$X.fit.json"
  # The defaults: no calibration file from the user's config directory.
  XDG_CONFIG_HOME=/nonexistent HOME=/nonexistent "$H" plan "$OUT/$X-var/job.yaml" --mem 20G --format json > "$OUT/$X.plan.none.json"
  "$H" plan "$OUT/$X-var/job.yaml" --mem 20G --format json --calibration "$OUT/$X.cal.yaml" > "$OUT/$X.plan.cal.json"
  python3 - "$OUT" "$X" <<'PY'
import json, sys
out, X = sys.argv[1], sys.argv[2]
meas = {p['phase']: p['measured_bytes'] for p in json.load(open(f'{out}/{X}-var/phases.json'))['phases']}
fit = json.load(open(f'{out}/{X}.fit.json'))
base = fit['runs'][0]['phases']
fb = {p['phase']: p['before_bytes'] / p['measured_bytes'] - 1 for p in base}
fa = {p['phase']: p['after_bytes'] / p['measured_bytes'] - 1 for p in base}
pred = [{p['phase']: p['host_bytes'] for p in json.load(open(f'{out}/{X}.plan.{c}.json'))['components']}
        for c in ('none', 'cal')]
print(f"{X}: measured " + ", ".join(f"{m['name']} {m['value']:.3g}" for m in fit['measured'])
      + "; fitted " + ", ".join(f"{m['name']} {m['from']:.3g}->{m['to']:.3g}" for m in fit['fitted']))
for ph, m in meas.items():
    if not m:
        continue
    e = [(p[ph] - m) / m * 100 for p in pred]
    print(f"  {ph:14s} base {fb[ph]*100:+6.1f}% -> {fa[ph]*100:+6.1f}% | variant {m/2**20:6.0f} MiB: "
          f"default {e[0]:+6.1f}%, calibrated {e[1]:+6.1f}%")
peak = max(v for v in meas.values() if v)
print(f"  peak {peak/2**20:.0f} MiB: default {(max(pred[0].values())-peak)/peak*100:+.1f}%, "
      f"calibrated {(max(pred[1].values())-peak)/peak*100:+.1f}%")
# Every run of the variant (VARIANT_RUNS), whole-run peaks.
import glob, statistics
peaks = []
for d in sorted(glob.glob(f'{out}/{X}-var*/phases.json')):
    ph = json.load(open(d))['phases']
    peaks.append(max(p['measured_bytes'] or 0 for p in ph))
if len(peaks) > 1:
    cal = max(pred[1].values())
    med = statistics.median(peaks)
    print(f"  {len(peaks)} variant runs: peaks " + ", ".join(f"{p/2**20:.0f}" for p in peaks)
          + f" MiB; calibrated plan {cal/2**20:.0f} MiB: {(cal-med)/med*100:+.1f}% of the median, "
          + f"{(cal-max(peaks))/max(peaks)*100:+.1f}% of the largest")
PY
done
