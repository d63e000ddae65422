#!/usr/bin/env bash
# Submits one job to the cluster under DIR (cluster.sh), waits until Slurm's
# accounting has its end, and writes everything a user has for it into OUT:
#   out, err        the job's stdout and stderr files
#   sacct.txt       sacct -j ID -P -o JobID,JobName,State,ExitCode,MaxRSS,ReqMem,Elapsed
#   sacct.json      sacct -j ID --json
#   seff.txt        seff ID
#   dmesg.txt       the node's kernel log lines about OOM kills since the
#                   cluster started, last 40
#   jobid           the job id
#
#   run_job.sh DIR OUT [--cancel-after S] -- SBATCH-ARGS... SCRIPT
set -euo pipefail
dir=$1 out=$2
shift 2
cancel_after=
if [[ ${1:-} == --cancel-after ]]; then cancel_after=$2; shift 2; fi
[[ ${1:-} == -- ]] && shift
export SLURM_CONF=$dir/etc/slurm.conf
mkdir -p "$out"
out=$(cd "$out" && pwd)
id=$(sbatch --parsable -o "$out/out" -e "$out/err" "$@")
echo "$id" >"$out/jobid"
if [[ -n $cancel_after ]]; then
  for _ in $(seq 100); do
    [[ $(squeue -h -j "$id" -o %t 2>/dev/null) == R ]] && break
    sleep 0.1
  done
  sleep "$cancel_after"
  scancel "$id"
fi
# Done when squeue no longer has it and sacct records an end for the job.
for _ in $(seq 1800); do
  if [[ -z $(squeue -h -j "$id" 2>/dev/null) ]] &&
    sacct -n -X -P -j "$id" -o End 2>/dev/null | grep -qv Unknown; then
    break
  fi
  sleep 0.2
done
# The job record gets its name and ReqMem a moment after its end.
for _ in $(seq 50); do
  sacct -n -X -P -j "$id" -o JobName 2>/dev/null | grep -qv "^allocation$" && break
  sleep 0.2
done
sleep 1
sacct -j "$id" -P -o JobID,JobName,State,ExitCode,MaxRSS,ReqMem,Elapsed >"$out/sacct.txt"
sacct -j "$id" --json >"$out/sacct.json"
"$dir/bin/seff" "$id" >"$out/seff.txt" 2>/dev/null || true
# Only this cluster's lines: its job ids repeat an earlier cluster's (the
# other jobs' kills of this cluster stay, as on a shared node).
since=$(cat "$dir/started_uptime" 2>/dev/null || echo 0)
dmesg | grep -E 'oom-kill:|Memory cgroup out of memory|Out of memory|oom_reaper|invoked oom-killer' |
  awk -v since="$since" '{ t = $0; sub(/^\[ */, "", t); sub(/\].*/, "", t); if (t + 0 >= since + 0) print }' |
  tail -n 40 >"$out/dmesg.txt" || true
echo "$id"
