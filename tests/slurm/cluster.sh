#!/usr/bin/env bash
# A real single-node Slurm 22.05 (Debian 12's packages) for the tests, all of
# it under one directory: munged, a private MariaDB, slurmdbd, slurmctld and
# slurmd, each started with its own pid file and ended by that pid only.
#
#   cluster.sh start DIR cgroup|polling   start (installing the packages when
#                                         root and they are missing); prints
#                                         "ready" or "skip: <reason>"
#   cluster.sh stop DIR                   end this cluster's processes by pid,
#                                         unmount its cgroup bind mount
#
# Memory enforcement:
#   cgroup   task/cgroup (cgroup v1 here) with ConstrainRAMSpace: the kernel's
#            memcg OOM killer at --mem. Slurm's cgroup root is the caller's OWN
#            memory cgroup, bind-mounted at DIR/cgroup/memory and named in
#            cgroup.conf's CgroupMountpoint; nothing is created at a
#            hierarchy's root. Where that cannot be set up, polling is used.
#   polling  jobacct_gather/linux every second with OverMemoryKill: slurmstepd
#            kills a step whose summed RSS passes --mem.
#
# Known traps, handled here: slurmdbd has no -f (it reads slurmdbd.conf next to
# SLURM_CONF); slurmctld exits if slurmdbd does not answer yet (we wait for
# its port); a MailProg must exist; a fresh state directory restarts job ids
# at 1 while an old database keeps its jobs (every start gets a fresh MariaDB
# data directory under DIR).
set -euo pipefail

cmd=${1:?usage: cluster.sh start DIR cgroup|polling | stop DIR}
dir=${2:?directory}
mode=${3:-cgroup}
PKGS=(slurmctld slurmd slurm-client slurmdbd munge mariadb-server libslurm-perl libslurmdb-perl)
# Ports away from Slurm's defaults so a site's own daemons are untouched.
CTLD_PORT=26817 SLURMD_PORT=26818 DBD_PORT=26819 DB_PORT=26820

skip() { echo "skip: $*"; exit 0; }
pid_of() { [[ -s $1 ]] && cat "$1"; }
alive() { local p; p=$(pid_of "$1" || true); [[ -n $p ]] && kill -0 "$p" 2>/dev/null; }
wait_port() { # port seconds
  for _ in $(seq "$(($2 * 10))"); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

stop() {
  for d in slurmd slurmctld slurmdbd mysqld munged; do
    local f="$dir/run/$d.pid" p
    p=$(pid_of "$f" || true)
    [[ -n $p ]] || continue
    kill "$p" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$p" 2>/dev/null || true
    rm -f "$f"
    [[ $d == munged ]] && rm -f /run/munge/munge.socket.2 /run/munge/munge.socket.2.lock
  done
  if mountpoint -q "$dir/cgroup/memory" 2>/dev/null; then
    # Slurm's own job cgroups under ours (slurm or slurm_<node>) are empty
    # once slurmd is gone. Only those: the bind mount is the caller's own
    # cgroup, shared with whatever else it runs, and an rmdir of any empty
    # directory there took a concurrent `headroom watch`'s limit cgroup
    # between its creation and its job joining it.
    local own
    for own in "$dir"/cgroup/memory/slurm*/; do
      [[ -d $own ]] && { find "$own" -depth -type d -exec rmdir {} + 2>/dev/null || true; }
    done
    true
    # A slurmstepd still ending holds the mount busy: wait for it, then
    # detach lazily. A bind mount left behind is the caller's own cgroup
    # inside DIR, and the next `rm -rf DIR` (or the test's temporary
    # directory's removal) would rmdir every empty cgroup in it, another
    # program's included.
    local _i
    for _i in $(seq 20); do
      umount "$dir/cgroup/memory" 2>/dev/null && break
      sleep 0.1
    done
    if mountpoint -q "$dir/cgroup/memory" 2>/dev/null; then
      umount -l "$dir/cgroup/memory" || true
    fi
  fi
}

install_packages() {
  local missing=()
  for p in "${PKGS[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  ((${#missing[@]} == 0)) && return 0
  [[ $(id -u) == 0 ]] || skip "not root, and ${missing[*]} not installed"
  command -v apt-get >/dev/null || skip "no apt-get to install ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null 2>&1 || true
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1 ||
    skip "apt-get could not install ${missing[*]}"
  # The packages' own services stay off: this script runs its own instances.
  for s in slurmd slurmctld slurmdbd munge mariadb; do
    systemctl disable --now "$s" >/dev/null 2>&1 || true
  done
}

# seff is in no Debian 12 binary package: take it from the same version's
# source package (a private sources list, the system's apt config untouched).
install_seff() {
  [[ -x $dir/bin/seff ]] && return 0
  local cache=${HEADROOM_SLURM_CACHE:-/var/cache/headroom-slurm}
  mkdir -p "$cache" "$dir/bin"
  if [[ ! -f $cache/seff ]]; then
    local apt="$cache/apt" ver
    ver=$(dpkg-query -W -f '${Version}' slurmctld)
    mkdir -p "$apt/lists/partial" "$apt/src"
    echo "deb-src http://deb.debian.org/debian bookworm main" >"$apt/sources.list"
    echo "deb-src http://deb.debian.org/debian-security bookworm-security main" >>"$apt/sources.list"
    local o=(-o "Dir::Etc::SourceList=$apt/sources.list" -o "Dir::Etc::SourceParts=/nonexistent"
      -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache")
    apt-get "${o[@]}" update -qq >/dev/null 2>&1 || return 0
    (cd "$apt/src" && apt-get "${o[@]}" source --download-only -qq "slurm-wlm=$ver" >/dev/null 2>&1) || return 0
    tar -xOf "$apt/src"/slurm-wlm_*.orig.tar.* --wildcards '*/contribs/seff/seff' >"$cache/seff.in" 2>/dev/null || return 0
    mv "$cache/seff.in" "$cache/seff"
  fi
  # The source's `use lib` lines point into an install prefix; Debian's
  # Slurm perl modules are on perl's default path already.
  sed -e '/^use lib /d' "$cache/seff" >"$dir/bin/seff"
  chmod +x "$dir/bin/seff"
}

own_memory_cgroup() {
  local rel
  rel=$(awk -F: '$2 ~ /(^|,)memory(,|$)/ {print $3}' /proc/self/cgroup)
  [[ -n $rel && -d /sys/fs/cgroup/memory$rel ]] && echo "/sys/fs/cgroup/memory$rel"
}

write_configs() {
  local host=$1 enforce=$2
  mkdir -p "$dir"/{etc,run,log,state,spool,db,bin,cgroup}
  cat >"$dir/etc/slurm.conf" <<EOF
ClusterName=headroom
SlurmctldHost=$host
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=$([[ $enforce == cgroup ]] && echo task/cgroup || echo task/none)
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=task=1
$([[ $enforce == polling ]] && echo JobAcctGatherParams=OverMemoryKill)
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$DBD_PORT
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
KillWait=2
OverTimeLimit=0
MinJobAge=600
ReturnToService=2
SlurmdTimeout=30
NodeName=$host CPUs=2 RealMemory=4000 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
  cat >"$dir/etc/cgroup.conf" <<EOF
CgroupPlugin=cgroup/v1
CgroupMountpoint=$dir/cgroup
CgroupAutomount=no
ConstrainRAMSpace=yes
ConstrainSwapSpace=yes
AllowedSwapSpace=0
EOF
  cat >"$dir/etc/slurmdbd.conf" <<EOF
AuthType=auth/munge
DbdHost=localhost
DbdPort=$DBD_PORT
SlurmUser=root
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
StoragePass=headroom
StorageLoc=slurm_acct_db
LogFile=$dir/log/slurmdbd.log
PidFile=$dir/run/slurmdbd.pid
EOF
  chmod 600 "$dir/etc/slurmdbd.conf"
}

start() {
  install_packages
  [[ $(id -u) == 0 ]] || skip "not root: slurmd needs root to start jobs as their users"
  stop
  # Never into another file system (a cgroup mount left by an earlier run).
  rm -rf --one-file-system "$dir"
  mkdir -p "$dir"
  install_seff || true
  local host enforce=$mode cg
  host=$(hostname -s)
  if [[ $mode == cgroup ]]; then
    cg=$(own_memory_cgroup || true)
    mkdir -p "$dir/cgroup/memory"
    if [[ -z $cg ]] || ! mount --bind "$cg" "$dir/cgroup/memory" 2>/dev/null; then
      echo "note: no cgroup v1 memory controller to bind-mount; enforcing by polling" >&2
      enforce=polling
    fi
  fi
  write_configs "$host" "$enforce"
  echo "$enforce" >"$dir/mode"
  # The kernel's clock at the start: job ids restart at 1 with every fresh
  # cluster, so an earlier cluster's job_1 kill in the kernel log would name
  # this cluster's job 1 (run_job.sh keeps only lines after this).
  cut -d' ' -f1 /proc/uptime >"$dir/started_uptime"
  export SLURM_CONF=$dir/etc/slurm.conf

  # Slurm's client side (slurmctld to slurmdbd) ignores AuthInfo's socket in
  # 22.05 and asks libmunge's default one: our munged listens there, unless
  # another munged already does.
  local sock=/run/munge/munge.socket.2
  if [[ -S $sock ]]; then
    munge -n -S "$sock" >/dev/null 2>&1 && skip "a munged already listens on $sock"
    # A socket left by a munged that was killed (a test run cut short).
    rm -f "$sock" "$sock.lock"
  fi
  mkdir -p /run/munge
  dd if=/dev/urandom of="$dir/etc/munge.key" bs=1024 count=1 status=none
  chmod 400 "$dir/etc/munge.key"
  munged --force --key-file="$dir/etc/munge.key" --socket="$sock" \
    --pid-file="$dir/run/munged.pid" --log-file="$dir/log/munged.log" \
    --seed-file="$dir/run/munged.seed" 2>>"$dir/log/munged.log"

  mariadb-install-db --no-defaults --datadir="$dir/db" --user=root \
    --auth-root-authentication-method=socket >"$dir/log/mariadb-install.log" 2>&1
  mariadbd --no-defaults --datadir="$dir/db" --user=root --port=$DB_PORT \
    --bind-address=127.0.0.1 --socket="$dir/run/mysql.sock" \
    --pid-file="$dir/run/mysqld.pid" --log-error="$dir/log/mariadb.log" \
    --innodb-buffer-pool-size=32M >/dev/null 2>&1 &
  wait_port $DB_PORT 60 || { cat "$dir/log/mariadb.log" >&2; skip "MariaDB did not start"; }
  mariadb --no-defaults --socket="$dir/run/mysql.sock" -uroot -e \
    "CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY 'headroom'; GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';"

  slurmdbd
  wait_port $DBD_PORT 60 || { tail -20 "$dir/log/slurmdbd.log" >&2; skip "slurmdbd did not answer"; }
  slurmctld
  wait_port $CTLD_PORT 30 || { tail -20 "$dir/log/slurmctld.log" >&2; skip "slurmctld did not start"; }
  slurmd
  for _ in $(seq 100); do
    if sinfo -h -o %t 2>/dev/null | grep -qE '^(idle|mix|alloc)'; then
      echo "ready $enforce"
      return 0
    fi
    sleep 0.2
  done
  tail -20 "$dir/log/slurmd.log" >&2
  skip "slurmd did not register"
}

case $cmd in
start) start ;;
stop) stop ;;
*) echo "unknown command $cmd" >&2; exit 2 ;;
esac
