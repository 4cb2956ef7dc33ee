#!/bin/sh
# `make demo`: the reference what-if of SCENARIO.md / docs/scenario.md.
# Kimi-K2.5 on 8x RTX PRO 6000 (PCIe Gen5, 2 sockets), TP 8: plain decode and
# EAGLE-3 (3 draft tokens), each with NCCL ring, one-shot and two-shot
# allreduce; then the break-even accept length for each allreduce.
# Usage: scripts/demo.sh [path/to/collsim]
set -e
COLLSIM=${1:-build/collsim}
echo "== collsim whatif: kimi-k2-eagle3-8x-pcie5 (calibrated on 82 tok/s plain decode, NCCL Ring/LL)"
"$COLLSIM" whatif --scenario kimi-k2-eagle3-8x-pcie5 \
    --vary mode=decode,eagle3 --vary allreduce=ring,oneshot,twoshot --breakdown
echo
echo "== break-even mean accepted tokens per EAGLE-3 cycle (3 draft tokens)"
"$COLLSIM" whatif --scenario kimi-k2-eagle3-8x-pcie5 \
    --vary allreduce=ring,oneshot,twoshot --solve accept_len || true
echo
echo "== one allreduce of the reference box, where its time goes (us; CUDA graph, the scenario's NCCL env)"
echo "   14 KiB = a decode step's allreduce, 42 KiB = an EAGLE-3 verify's (docs/model.md 'Where the time goes')"
for a in ring oneshot twoshot; do
    "$COLLSIM" coll allreduce -b 14K -e 42K -f 3 --algo $a --graph --breakdown \
        --env NCCL_PROTO=LL --env NCCL_ALGO=Ring --env NCCL_P2P_LEVEL=SYS \
        --env NCCL_MAX_NCHANNELS=16 | grep -v '^# [a-zA-Z]\|^#$' |
        if [ $a = ring ]; then cat; else grep -v '^#'; fi
done
