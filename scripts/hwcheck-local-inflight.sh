#!/bin/bash
# How fast one thread block copies inside its GPU's own memory as it keeps
# more bytes in flight (issue 25: NCCL's Simple block, whose per-block rate
# the model took from the plain copy kernel), on GPU 0, into DIR:
#   scripts/hwcheck-local-inflight.sh build/hwcheck DIR
#   local-uU-bN.csv     hwcheck flows --pattern local --op write: N blocks of
#                       512 threads, each thread keeping U = 1, 2, 4, 8 loads
#                       of 16 B in flight before its stores (NCCL's
#                       reduceCopyPacks layout; ncclCollUnroll() = 8 on SM90),
#                       N = 1, 2, 4, 8, 16, 32, source and destination both in
#                       the GPU's own memory
#   local-uU-tT-b1.csv  one block of T = 128, 256, 1024 threads: the same bytes
#                       in flight split differently between threads and depth
# The commands run inside DIR, so the files record no machine path. Every step
# runs under `timeout` (INFLIGHT_TIMEOUT s each, default 60); a step that fails
# is reported and the rest still run. Exit 1 if any step failed.
# The log (stdout) opens with the machine header (scripts/hwcheck-steps.sh).
set -u
# shellcheck source=scripts/hwcheck-steps.sh
. "$(dirname "$0")/hwcheck-steps.sh"
U="usage: hwcheck-local-inflight.sh HWCHECK DIR"
hw_begin "${1:?$U}" "${2:?$U}" "${INFLIGHT_TIMEOUT:-60}" "scripts/${0##*/} $*"
SIZES=(-b 64K -e 256M -f 4 -n 10 -w 2)
for u in 1 2 4 8; do
    for b in 1 2 4 8 16 32; do
        step "local-u$u-b$b.csv" flows --pattern local --op write --blocks $b --unroll $u "${SIZES[@]}"
    done
done
for t in 128 256 1024; do
    for u in 1 2 4 8; do
        step "local-u$u-t$t-b1.csv" flows --pattern local --op write --blocks 1 --threads $t \
            --unroll $u "${SIZES[@]}"
    done
done
exit $failed
