#!/bin/bash
# The microbenchmarks that isolate one cost each, for calibration (issues 19,
# 20, 25), on GPU 0, into DIR (one file per measurement, hwcheck's own headers):
#   scripts/hwcheck-micro.sh build/hwcheck DIR [TRACE...]   (TRACEs relative to DIR:
#   the commands run inside DIR, so the files record no machine path)
#   host-kernel-bN.csv  GPU copy kernel of N blocks loading from / storing into
#                       pinned host memory (the SHM transport's per-channel bound)
#   launch-rK.csv       hwcheck launch, K = 1..3 runs (the spread): eager launch,
#                       host time per call, graphs of 1..256 nodes, host flag round
#                       trip, 1-rank NCCL eager and in a graph
#   replay-{eager,marked,graph}.csv  hwcheck replay of the TRACEs in each launch mode
# Every step runs under `timeout` (MICRO_TIMEOUT s each, default 120); a step
# that fails is reported and the rest still run. Exit 1 if any step failed.
# The log (stdout) opens with the machine header (scripts/hwcheck-steps.sh).
set -u
# shellcheck source=scripts/hwcheck-steps.sh
. "$(dirname "$0")/hwcheck-steps.sh"
U="usage: hwcheck-micro.sh HWCHECK DIR [TRACE...]"
hw_begin "${1:?$U}" "${2:?$U}" "${MICRO_TIMEOUT:-120}" "scripts/${0##*/} $*"
shift 2
for b in 1 2 4 8 16 32 132; do
    step "host-kernel-b$b.csv" host --op kernel --blocks $b -b 64K -e 256M -f 4 -n 10 -w 2
done
for r in 1 2 3; do
    step "launch-r$r.csv" launch -n 2000 -w 200
done
if [ $# -gt 0 ]; then
    step replay-eager.csv replay --eager -n 3 -w 1 "$@"
    step replay-marked.csv replay -n 3 -w 1 "$@"
    step replay-graph.csv replay --graph -n 3 -w 1 "$@"
fi
exit $failed
