#!/bin/sh
# `make demo`: the reference what-if of SCENARIO.md / docs/scenario.md.
# Kimi-K2.5 on 8x RTX PRO 6000 (PCIe Gen5, 2 sockets), TP 8: plain decode and
# EAGLE-3 (3 draft tokens), each with NCCL ring, one-shot and two-shot
# allreduce, fitted to the plain-decode point only; the EAGLE-3 point and the
# profile's verify allreduce kernels are checks: what the model leaves
# unexplained and which hypotheses could explain it; then an eager verify at
# the measured per-kernel CPU cost, the break-even points, and where one
# allreduce's time goes.
# Usage: scripts/demo.sh [path/to/collsim]
set -e
COLLSIM=${1:-build/collsim}
DEC="--observe mode=decode,allreduce=ring,tok_per_s=82"
echo "== kimi-k2-eagle3-8x-pcie5: plain decode (82 tok/s) fitted; the EAGLE-3 point (54.1 tok/s,"
echo "   verify allreduce kernels of 200-250 us in the profile) checked, with the hypotheses"
"$COLLSIM" whatif --vary mode=decode,eagle3 --vary allreduce=ring,oneshot,twoshot --breakdown
echo
echo "== if the verify ran eagerly, at the measured CPU cost per kernel (a prediction, nothing fitted)"
"$COLLSIM" whatif --set verify_graph=0 --vary allreduce=ring,oneshot,twoshot --breakdown |
    grep '^# launch:\|^# verdict\|^#variant\|^ '
echo
echo "== the verify allreduce time that would explain 54.1 tok/s (accept_len 2.0, 2.4, 3.0)"
"$COLLSIM" whatif $DEC --vary accept_len=2,2.4,3 --solve verify_allreduce_us=54.1
echo
echo "== break-even: verify allreduce time and mean accepted tokens (decode-only fit)"
"$COLLSIM" whatif $DEC --vary accept_len=2,2.4,3 --vary allreduce=ring,oneshot,twoshot \
    --solve verify_allreduce_us
"$COLLSIM" whatif $DEC --vary allreduce=ring,oneshot,twoshot --solve accept_len
echo
echo "== one allreduce of the reference box, where its time goes (us; CUDA graph, the scenario's NCCL env)"
echo "   14 KiB = a decode step's allreduce, 42 KiB = an EAGLE-3 verify's (docs/model.md 'Where the time goes')"
for a in ring oneshot twoshot; do
    "$COLLSIM" coll allreduce -b 14K -e 42K -f 3 --algo $a --graph --breakdown \
        --env NCCL_PROTO=LL --env NCCL_ALGO=Ring --env NCCL_P2P_LEVEL=SYS \
        --env NCCL_MAX_NCHANNELS=16 | grep -v '^# [a-zA-Z]\|^#$' |
        if [ $a = ring ]; then cat; else grep -v '^#'; fi
done
