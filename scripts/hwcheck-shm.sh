#!/bin/bash
# NCCL's SHM transport, its mechanics on one GPU (issue 25): hwcheck's shm-ring,
# NCCL 2.28's ring allreduce, protocol Simple, through pinned host memory as
# NCCL_P2P_DISABLE=1 runs it (kernels/kernels.h KERN_SHM_RING), on 2 virtual
# ranks of GPU 0 (-g 2: two GPUs), into DIR:
#   scripts/hwcheck-shm.sh build/hwcheck DIR [-g 2]
#   shm-ring-chC.csv        C = 1, 2, 4, 8, 16 channels (one block each), 1-256 MiB,
#                           every size checked against the CPU reference (-c 1)
#   shm-ring-ch4-graph.csv  4 channels (NCCL's count on h200-2x) inside a CUDA graph
# The commands run inside DIR, so the files record no machine path. Every step
# runs under `timeout` (SHM_TIMEOUT s each, default 90); a step that fails is
# reported and the rest still run. Exit 1 if any step failed.
# The log (stdout) opens with the machine header (scripts/hwcheck-steps.sh).
set -u
# shellcheck source=scripts/hwcheck-steps.sh
. "$(dirname "$0")/hwcheck-steps.sh"
U="usage: hwcheck-shm.sh HWCHECK DIR [-g 2]"
hw_begin "${1:?$U}" "${2:?$U}" "${SHM_TIMEOUT:-90}" "scripts/${0##*/} $*"
shift 2
RANKS=(--virtual-ranks 2)
[ "${1:-}" = "-g" ] && RANKS=(-g "${2:?-g N}")
for c in 1 2 4 8 16; do
    step "shm-ring-ch$c.csv" coll --impl shm-ring "${RANKS[@]}" --blocks $c -b 1M -e 256M -f 4 \
        -n 20 -w 3 -c 1
done
step shm-ring-ch4-graph.csv coll --impl shm-ring "${RANKS[@]}" --blocks 4 --graph -b 1M -e 256M \
    -f 4 -n 20 -w 3 -c 1
exit $failed
