#!/bin/bash
# The host cost of one NCCL call, isolated (issue 25, item 4), on GPU 0, into
# DIR (one file per measurement, each with its own header):
#   scripts/hwcheck-host-call.sh build/hwcheck DIR
#   launch-rK.csv   hwcheck launch -n 2000 -w 200, K = 1..3 runs (the spread):
#                   among its rows the 1-rank ncclAllReduce (back to back and on
#                   an idle stream) and the 1-rank groups of K send/receive pairs
#                   to self (nccl-p2p-K, NCCL's full group/plan/launch path)
#   nccl-host-rK.csv  hwcheck launch --nccl-only -n 2000 -w 200, K = 1..5: the
#                   same NCCL rows and launch-host alone, each the median of 7
#                   interleaved rounds (what collsim calibrate fits)
#   nccl-info.log   (group "nccl") NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT of one
#                   more such run: the one-rank communicator's channels ("p2p
#                   channels per peer", which bound the sized groups' channels)
#   torch-rK.csv    validate/capture/torch_call.py, K = 1, 2, when python3 has
#                   torch: one-rank dist.all_reduce's host cost
#   mode-uK.csv, mode-cC-K.csv  (group "mode") hwcheck launch --nccl-only
#                   -n 2000 -w 200 in 8 separate processes (uK), then pinned
#                   with taskset to each CPU C of HOSTCALL_CPUS (default
#                   "0 1 2 3 8 15"), 2 processes each: whether an eager call's
#                   host cost is a property of the process (bimodal per
#                   process) and of the CPU it runs on; cpus.txt the CPU view
# HOSTCALL_STEPS picks the groups (default "launch nccl torch").
# Every step runs under `timeout` (HOSTCALL_TIMEOUT s each, default 120); a
# step that fails is reported and the rest still run. Exit 1 if any failed.
set -u
# shellcheck source=scripts/hwcheck-steps.sh
. "$(dirname "$0")/hwcheck-steps.sh"
TORCH_CALL=$(realpath "$(dirname "$0")/../validate/capture/torch_call.py")
U="usage: hwcheck-host-call.sh HWCHECK DIR"
hw_begin "${1:?$U}" "${2:?$U}" "${HOSTCALL_TIMEOUT:-120}" "scripts/${0##*/} $*"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
STEPS=" ${HOSTCALL_STEPS:-launch nccl torch} "
case $STEPS in *" launch "*)
    for r in 1 2 3; do
        step "launch-r$r.csv" launch -n 2000 -w 200
    done ;;
esac
case $STEPS in *" nccl "*)
    for r in 1 2 3 4 5; do
        step "nccl-host-r$r.csv" launch --nccl-only -n 2000 -w 200
    done
    s0=$SECONDS
    NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT timeout "$T" "$HW" launch --nccl-only -n 200 -w 20 \
        -o nccl-info.csv > nccl-info.log 2>&1
    echo "$(date -u +%H:%M:%S) exit $? after $((SECONDS - s0)) s: NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT hwcheck launch --nccl-only -n 200 -w 20 -> nccl-info.csv, nccl-info.log" ;;
esac
case $STEPS in *" mode "*)
    { lscpu; echo; grep -H . /sys/devices/system/cpu/cpu*/topology/thread_siblings_list; echo;
      grep MHz /proc/cpuinfo; } > cpus.txt 2>&1
    for r in 1 2 3 4 5 6 7 8; do
        step "mode-u$r.csv" launch --nccl-only -n 2000 -w 200
    done
    for c in ${HOSTCALL_CPUS:-0 1 2 3 8 15}; do
        for r in 1 2; do
            s0=$SECONDS
            timeout "$T" taskset -c "$c" "$HW" launch --nccl-only -n 2000 -w 200 \
                -o "mode-c$c-$r.csv" 2>"mode-c$c-$r.csv.err"
            rc=$?
            echo "$(date -u +%H:%M:%S) exit $rc after $((SECONDS - s0)) s: taskset -c $c hwcheck launch --nccl-only -n 2000 -w 200 -> mode-c$c-$r.csv"
            [ -s "mode-c$c-$r.csv.err" ] || rm -f "mode-c$c-$r.csv.err"
            [ "$rc" = 0 ] || failed=1
        done
    done ;;
esac
if [[ $STEPS != *" torch "* ]]; then
    :
elif python3 -c 'import torch' 2>/dev/null; then
    for r in 1 2; do
        s0=$SECONDS
        timeout "$T" python3 "$TORCH_CALL" -n 2000 -w 200 -o "torch-r$r.csv" 2>"torch-r$r.csv.err"
        rc=$?
        echo "$(date -u +%H:%M:%S) exit $rc after $((SECONDS - s0)) s: torch_call.py -> torch-r$r.csv"
        [ -s "torch-r$r.csv.err" ] || rm -f "torch-r$r.csv.err"
        [ "$rc" = 0 ] || failed=1
    done
else
    echo "no torch in python3: torch_call.py skipped"
fi
exit $failed
