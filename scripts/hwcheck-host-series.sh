#!/bin/bash
# What sets the host's speed in an eager NCCL call (issue 25, item 4: the
# bimodal eager floor), on GPU 0, into DIR (one file per run, each with its
# own header):
#   scripts/hwcheck-host-series.sh build/hwcheck DIR
#   cpus.txt        the CPU view: lscpu, /proc/stat's first line, the clock
#                   source, nvidia-smi topo -m
#   series-K.csv    hwcheck launch --nccl-only -n 300 -w 50 --rounds 100,
#                   K = 1..3: each round's launch-host, nccl-p2p-1-host,
#                   nccl-2comm-p2p-1-host, the host-only references (an L1
#                   load chain, independent multiply-adds, a DRAM load chain)
#                   and the VM's steal time, about 50 ms a round: does the
#                   host's speed change inside one process, and do the
#                   host-only references move with NCCL's rows
#   plain-K.csv     hwcheck launch --nccl-only -n 2000 -w 200, K = 1..4 (as
#                   validate/data/h200-1x/micro/hostmode/, now with the chains)
#   norand-K.csv    the same under setarch -R (no address randomization),
#                   K = 1..3: is the mode the process's address layout
#   idle0-K.csv     the same pinned to CPU 0 (taskset), K = 1, 2
#   busy0-K.csv     the same pinned to CPU 0 while a busy loop runs on each
#                   other CPU, K = 1..3: does load on the VM's other CPUs
#                   (SMT siblings on the host, a shared frequency budget)
#                   give the slow mode
#   series-busy.csv --rounds 100 pinned to CPU 0, the busy loops running
#                   only from about 2.5 s to 4.5 s after its start
# Every step runs under `timeout` (SERIES_TIMEOUT s each, default 60); a step
# that fails is reported and the rest still run. Exit 1 if any failed.
set -u
# shellcheck source=scripts/hwcheck-steps.sh
. "$(dirname "$0")/hwcheck-steps.sh"
U="usage: hwcheck-host-series.sh HWCHECK DIR"
hw_begin "${1:?$U}" "${2:?$U}" "${SERIES_TIMEOUT:-60}" "scripts/${0##*/} $*"
export NCCL_NVLS_ENABLE=0
{ lscpu; echo; head -1 /proc/stat; echo;
  cat /sys/devices/system/clocksource/clocksource0/current_clocksource; echo;
  nvidia-smi topo -m; } > cpus.txt 2>&1
NCPU=$(nproc)
hogs=()
hogs_start() { # a busy loop on each CPU but 0
    for ((c = 1; c < NCPU; c++)); do
        taskset -c "$c" bash -c 'while :; do :; done' &
        hogs+=($!)
    done
}
hogs_stop() {
    for p in "${hogs[@]}"; do kill "$p" 2>/dev/null; done
    for p in "${hogs[@]}"; do wait "$p" 2>/dev/null; done
    hogs=()
}
trap hogs_stop EXIT
# run FILE PREFIX...: one bounded hwcheck launch --nccl-only under PREFIX
run() {
    local f=$1
    shift
    local s0=$SECONDS
    timeout "$T" "$@" "$HW" launch --nccl-only -n 2000 -w 200 -o "$f" 2>"$f.err"
    local rc=$?
    echo "$(date -u +%H:%M:%S) exit $rc after $((SECONDS - s0)) s: $* hwcheck launch --nccl-only -n 2000 -w 200 -> $f"
    [ -s "$f.err" ] || rm -f "$f.err"
    [ "$rc" = 0 ] || failed=1
}
for r in 1 2 3; do
    step "series-$r.csv" launch --nccl-only -n 300 -w 50 --rounds 100
done
for r in 1 2 3 4; do run "plain-$r.csv"; done
for r in 1 2 3; do run "norand-$r.csv" setarch "$(uname -m)" -R; done
for r in 1 2; do run "idle0-$r.csv" taskset -c 0; done
hogs_start
for r in 1 2 3; do run "busy0-$r.csv" taskset -c 0; done
hogs_stop
s0=$SECONDS
timeout "$T" taskset -c 0 "$HW" launch --nccl-only -n 300 -w 50 --rounds 100 \
    -o series-busy.csv 2>series-busy.csv.err &
hw=$!
sleep 2.5
hogs_start
sleep 2
hogs_stop
wait "$hw"
rc=$?
echo "$(date -u +%H:%M:%S) exit $rc after $((SECONDS - s0)) s: taskset -c 0 hwcheck launch --nccl-only -n 300 -w 50 --rounds 100 -> series-busy.csv (busy loops on CPUs 1-$((NCPU - 1)) from 2.5 s to 4.5 s)"
[ -s series-busy.csv.err ] || rm -f series-busy.csv.err
[ "$rc" = 0 ] || failed=1
exit $failed
