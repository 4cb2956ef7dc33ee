#!/bin/bash
# How many bytes a thread block keeps in flight against pinned host memory
# (issue 25: the SHM transport's receiver), on GPU 0, into DIR:
#   scripts/hwcheck-host-inflight.sh build/hwcheck DIR
#   host-uU-bN.csv      hwcheck host --op kernel: N blocks of 512 threads, each
#                       thread keeping U = 1, 2, 4, 8 loads of 16 B in flight
#                       (NCCL's reduceCopy keeps ncclCollUnroll() = 8 on SM80+),
#                       N = 1, 2, 4, 8, 16, 32: loads from (h2d), stores into
#                       (d2h) pinned host memory, and both at once (h2d-d2h)
#   host-uU-tT-b1.csv   one block of T = 128, 256, 1024 threads: the same bytes
#                       in flight split differently between threads and depth;
#                       T = 32 (one warp, to 4 MiB): the round trip itself
# Every case first checks one copy byte for byte (-c 1, poisoned destination).
# The commands run inside DIR, so the files record no machine path. Every step
# runs under `timeout` (INFLIGHT_TIMEOUT s each, default 60); a step that fails
# is reported and the rest still run. Exit 1 if any step failed.
# The log (stdout) opens with the machine header (scripts/hwcheck-steps.sh).
set -u
# shellcheck source=scripts/hwcheck-steps.sh
. "$(dirname "$0")/hwcheck-steps.sh"
U="usage: hwcheck-host-inflight.sh HWCHECK DIR"
hw_begin "${1:?$U}" "${2:?$U}" "${INFLIGHT_TIMEOUT:-60}" "scripts/${0##*/} $*"
SIZES=(-b 64K -e 256M -f 4 -n 10 -w 2 -c 1)
for u in 1 2 4 8; do
    for b in 1 2 4 8 16 32; do
        step "host-u$u-b$b.csv" host --op kernel --blocks $b --unroll $u "${SIZES[@]}"
    done
done
for t in 128 256 1024; do
    for u in 1 2 4 8; do
        step "host-u$u-t$t-b1.csv" host --op kernel --blocks 1 --threads $t --unroll $u "${SIZES[@]}"
    done
done
for u in 1 8; do
    step "host-u$u-t32-b1.csv" host --op kernel --blocks 1 --threads 32 --unroll $u \
        -b 64K -e 4M -f 4 -n 10 -w 2 -c 1
done
exit $failed
