#!/bin/bash
# The ablation table of docs/model.md: each PCIe mechanism of the fabric
# switched off in turn (collsim --without), against the point-to-point
# figures it was built for and the reference what-if's allreduce sizes.
# usage: scripts/ablation.sh [COLLSIM]   (prints markdown)
set -euo pipefail
B=${1:-build/collsim}
T=rtxpro6000-8x-pcie5-2s
a2b=$(for i in 0 1 2 3; do for j in 4 5 6 7; do printf '%d>%d,' $i $j; done; done)
all=$(for i in 0 1 2 3 4 5 6 7; do for j in 0 1 2 3 4 5 6 7; do
    if [ $i != $j ]; then printf "%d>%d," $i $j; fi; done; done)
flow() { # op spec without -> aggregate GB/s
    $B flows --topo $T --op "$1" --flows "${2%,}" ${3:+--without $3} --format csv |
        awk -F, '$4 == -1 { printf "%.1f", $NF }'
}
coll() { # algo bytes without [env...] -> us
    local a=$1 s=$2 w=$3; shift 3
    $B coll allreduce --topo $T --algo "$a" -b "$s" -e "$s" ${w:+--without $w} "$@" \
        --format csv | awk -F, '/^#/ { next } ++n > 1 { printf "%.1f", $7 }'
}
seeds=(--env NCCL_PROTO=LL --env NCCL_ALGO=Ring --env NCCL_P2P_LEVEL=SYS --env NCCL_MAX_NCHANNELS=16)
echo "| mechanisms | 16-flow writes | 16-flow reads | 56-flow writes | 56-flow reads | DS port 0>4+0>2 | one-shot 14 KiB | one-shot 42 KiB | two-shot 42 KiB | ring (seeds env) 42 KiB |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
echo "| measured | 7.7 | 9.0 | 36.5 | 53.9 | 42.8 | - | - | - | - |"
for w in "" write-collapse read-collapse hol req-size socket-read turn-others dllp \
         write-collapse,read-collapse,hol,req-size,socket-read,turn-others,dllp; do
    name=${w:-all on}
    [ "$w" = write-collapse,read-collapse,hol,req-size,socket-read,turn-others,dllp ] && name="all off"
    [ -n "$w" ] && [ "$name" != "all off" ] && name="without $w"
    echo "| $name | $(flow copy-write "$a2b" "$w") | $(flow copy-read "$a2b" "$w") |" \
         "$(flow copy-write "$all" "$w") | $(flow copy-read "$all" "$w") |" \
         "$(flow copy-write "0>4,0>2" "$w") | $(coll oneshot 14336 "$w") |" \
         "$(coll oneshot 43008 "$w") | $(coll twoshot 43008 "$w") |" \
         "$(coll ring 43008 "$w" "${seeds[@]}") |"
done
