#!/bin/bash
# Bring a capture of validate/capture/capture_tp.py into the project:
#   validate/capture/import.sh COLLSIM DIR
# imports each rank-0 Kineto trace DIR/tpW-TT-rank0.json.gz into DIR/tpW-TT.trace.gz
# (collsim trace import kineto) and writes DIR/replay-capture.csv, a `replay`
# measurement (docs/formats.md) whose cycle time is the mean measured step time
# of rank 0 over all profiled steps, so `collsim validate` replays each imported
# trace and compares. Run from the directory above DIR, with relative paths.
set -eu
COLLSIM=${1:?usage: import.sh COLLSIM DIR}
DIR=${2:?usage: import.sh COLLSIM DIR}
steps=$(ls "$DIR"/steps-tp*-rank0.csv)
header=$(head -1 "$steps")
out="$DIR/replay-capture.csv"
{
    echo "# format: collsim-meas 1"
    echo "# kind: replay"
    echo "# machine: ${MACHINE:-unknown}"
    # "# captured DATE torch VERSION nccl VERSION gpu NAME..."
    read -r _ _ date _ torchv _ ncclv _ gpu <<<"$header"
    echo "# gpus: $gpu"
    echo "# driver: ${DRIVER:-not recorded}"
    echo "# cuda: torch $torchv"
    echo "# nccl: $ncclv"
    echo "# date: $date"
    echo "# command: torchrun --nproc_per_node=W validate/capture/capture_tp.py --out DIR; validate/capture/import.sh collsim DIR"
    echo "# note: cycle_us = mean measured step time (CUDA events) over all profiled steps of rank 0; no breakdown measured"
    echo "trace,allreduce,cycles,tokens,cycle_us,tok_per_s,compute_us,comm_us,launch_us,idle_us"
    for f in "$DIR"/tp*-T*-rank0.json.gz; do
        base=$(basename "$f" -rank0.json.gz)
        T=${base##*-T}
        "$COLLSIM" trace import kineto "$f" -o "$DIR/$base.trace.gz" >/dev/null
        tr -d '\r' <"$steps" | awk -F, -v T="$T" -v tr="$base.trace.gz" '
            /^#/ || $1 == "world" { next }
            $3 == T { s += $5; n++ }
            END { if (n) printf "%s,trace,%d,%d,%.2f,%.1f,nan,nan,nan,nan\n", tr, n, n * T, s / n, n * T / (s / 1e6) }'
    done
} >"$out.tmp"
mv "$out.tmp" "$out"
