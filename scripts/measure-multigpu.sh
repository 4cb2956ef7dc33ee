#!/bin/bash
# The measurement session of a multi-GPU machine (issue 11), in stages, each
# bounded by `timeout`; results go to WORK/NAME, and after every step WORK is
# packed into OUTDIR/results.tar so that a run cut short still returns what it
# measured.
#   scripts/measure-multigpu.sh STAGE... (build smoke all p2p check coll
#                                         nccltests tuning capture decide
#                                         chanprobe; coll is collnccl
#                                         collcustom collother)
# Environment: OUTDIR (default ./measure-out), NAME (default h200-2x),
# NCCL_TESTS (a built or unbuilt nccl-tests tree, default .nccl-tests),
# CUDA_HOME, NCCL_HOME (default: where nccl.h is found).
# NVLink multicast stays off (NCCL_NVLS_ENABLE=0) in every step.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
OUTDIR=$(realpath -m "${OUTDIR:-measure-out}")
NAME=${NAME:-h200-2x}
NT=$(realpath -m "${NCCL_TESTS:-.nccl-tests}")
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
if [ -z "${NCCL_HOME:-}" ]; then
    for d in "$CUDA_HOME" /usr /usr/local/nccl; do
        [ -f "$d/include/nccl.h" ] && { NCCL_HOME=$d; break; }
    done
fi
NCCL_HOME=${NCCL_HOME:-/usr}
ROOT=$(pwd)
WORK=$ROOT/measure-work
HW=$ROOT/build/hwcheck
mkdir -p "$OUTDIR" "$WORK/$NAME"
D=$WORK/$NAME
LOG=$OUTDIR/log.txt
# Every measurement runs inside D with relative output names, so that the
# commands the files record name no machine path.
cd "$D" || exit 2

say() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$LOG"; }
pack() { tar -C "$WORK" -cf "$OUTDIR/results.tar.part" . && mv "$OUTDIR/results.tar.part" "$OUTDIR/results.tar"; }
# step SECONDS FILE COMMAND...: run with a time limit, stdout+stderr into FILE (under D) and the log
step() {
    local t=$1 f=$2
    shift 2
    say "$* (limit $t s) -> $f"
    local s0=$SECONDS
    timeout "$t" "$@" >"$D/$f" 2>&1
    local rc=$?
    say "exit $rc after $((SECONDS - s0)) s: $f"
    tail -3 "$D/$f" | sed 's/^/   /' >>"$LOG"
    pack
    return $rc
}
# coll FILE ARGS...: hwcheck coll into D/FILE (csv), stderr to D/FILE.err
coll() {
    local f=$1
    shift
    say "hwcheck coll $* -> $f"
    local s0=$SECONDS
    timeout 240 "$HW" coll "$@" -o "$f" 2>"$D/$f.err"
    local rc=$?
    say "exit $rc after $((SECONDS - s0)) s: $f $(tr '\n' ' ' <"$D/$f.err" | cut -c1-200)"
    [ -s "$D/$f.err" ] || rm -f "$D/$f.err"
    pack
}

stages=()
for a in "$@"; do
    if [ "$a" = coll ]; then stages+=(collnccl collcustom collother); else stages+=("$a"); fi
done
for stage in "${stages[@]}"; do
    case $stage in
    build)
        {
            date -u; uname -a; nvidia-smi; nvidia-smi topo -m; nvidia-smi nvlink -s
            echo "CUDA_HOME=$CUDA_HOME NCCL_HOME=$NCCL_HOME"
            ldconfig -p | grep -i nccl
            "$CUDA_HOME/bin/nvcc" --version
            python3 -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version(), "gpus", torch.cuda.device_count())'
            nproc; free -g
        } >"$D/machine.txt" 2>&1
        say "machine: $(grep -m1 'Driver Version' "$D/machine.txt")"
        step 400 build-hwcheck.log make -C "$ROOT" -j16 build/hwcheck CUDA_HOME="$CUDA_HOME" NCCL_HOME="$NCCL_HOME" \
            NVCC_GENCODE="-gencode arch=compute_90,code=sm_90"
        if [ -d "$NT" ]; then
            step 400 build-nccl-tests.log make -C "$NT" -j16 MPI=0 CUDA_HOME="$CUDA_HOME" \
                NCCL_HOME="$NCCL_HOME" NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90"
        fi
        ;;
    smoke) # the failures of issue 11, each bounded
        step 120 smoke-oneshot-graph.txt "$HW" coll allreduce --impl oneshot --graph -b 256 -e 4M
        step 120 smoke-nccl-graph.txt "$HW" coll allreduce --impl nccl --graph -b 256 -e 4M
        ;;
    all)
        (cd "$WORK" && step 900 all.log env HWCHECK_ALL_TIMEOUT=850 "$ROOT/scripts/hwcheck-all.sh" "$HW" . "$NAME")
        ;;
    p2p) # kernel loads (read), kernel stores (write), copy engine; one and both directions
        step 300 p2p-sweep.log "$HW" p2p -b 4K -e 256M -f 4 -o p2p-sweep.csv
        step 300 p2p-blocks36.log "$HW" p2p --blocks 36 --op read -b 4K -e 256M -f 4 -o p2p-read-blocks36.csv
        step 300 p2p-blocks36w.log "$HW" p2p --blocks 36 --op write -b 4K -e 256M -f 4 -o p2p-write-blocks36.csv
        step 300 flows.log "$HW" flows --pattern all-to-all -b 4K -e 256M -f 4 -o flows-all-to-all.csv
        ;;
    check)
        (cd "$ROOT" && step 420 check-gpu.log env CHECK_GPU_TIMEOUT=120 scripts/check-gpu.sh "$HW")
        ;;
    collnccl)
        B="-b 8 -e 256M -f 2 -n ${ITERS:-20} -w 5 -c 1"
        for g in "" --graph; do
            sfx=${g:+-graph}
            coll "ar-nccl$sfx.csv" allreduce $B $g
            for p in LL LL128 Simple; do
                coll "ar-nccl-ring-$p$sfx.csv" allreduce $B $g --env NCCL_ALGO=Ring --env NCCL_PROTO=$p
            done
            coll "ar-nccl-tree$sfx.csv" allreduce $B $g --env NCCL_ALGO=Tree
            coll "ar-nccl-p2pdisable$sfx.csv" allreduce $B $g --env NCCL_P2P_DISABLE=1
        done
        coll "ar-nccl-cudamalloc.csv" allreduce $B --alloc cuda
        coll "ar-nccl-cudamalloc-graph.csv" allreduce $B --alloc cuda --graph
        ;;
    collcustom)
        for impl in oneshot twoshot oneshot-push twoshot-push; do
            coll "ar-$impl.csv" allreduce --impl $impl -b 16 -e 64M -f 2 -n ${ITERS:-20} -w 5 -c 1
            coll "ar-$impl-graph.csv" allreduce --impl $impl --graph -b 16 -e 64M -f 2 -n ${ITERS:-20} -w 5 -c 1
        done
        ;;
    decide) # the custom kernels' open mechanisms (docs/model.md "What the wrong decisions on
        # h200-2x have in common"), into blocks/: a fence's wait after stores into the peer and
        # a remote load's round trip (fence_ack_us, peer-load); each kernel at 16 B and at one
        # full round (B x 8 KiB) per block count B, in a graph, which parts the barriers' cost
        # per block over NVLink from the round's; one round of copy loads and stores per B
        mkdir -p blocks
        step 240 launch-peer.log "$HW" launch --post --peer -n 100 -o launch-peer.csv
        for b in 1 2 4 8 16 32 36; do
            for impl in oneshot oneshot-push; do
                coll "blocks/ar-$impl-b$b-graph.csv" allreduce --impl $impl --graph --blocks $b \
                    -b 16 -e $((b * 8192)) -f $((b * 512)) -n ${ITERS:-50} -w 5 -c 1
            done
            for op in read write; do
                step 120 "blocks/p2p-$op-b$b-round.log" "$HW" p2p --blocks $b --op $op \
                    -b $((b * 8192)) -e $((b * 8192)) -n 20 -w 3 -o "blocks/p2p-$op-b$b-round.csv"
            done
        done
        ;;
    collother)
        B="-b 8 -e 256M -f 2 -n ${ITERS:-20} -w 5 -c 1"
        for c in allgather reducescatter alltoall; do
            coll "$c-nccl.csv" $c $B
            coll "$c-nccl-graph.csv" $c $B --graph
        done
        ;;
    chanprobe) # docs/model.md "Per call, per channel or per step": the host's cost per channel
        # of an eager collective (Ring LL at 256 KiB: NCCL's cells give 1, 4, 8, 16, 22 channels
        # under forced 1, 4, 8, 16, 24), eager and in a graph, each size in 20 timed rounds; then
        # the forced LL and LL128 sweeps again in 10 rounds (a stall against a level: the eager
        # LL128 row at 2 MiB)
        mkdir -p chanprobe
        for ch in 1 4 8 16 24; do
            for g in "" --graph; do
                coll "chanprobe/ar-ll-256k-ch$ch${g:+-graph}.csv" allreduce -b 256K -e 256K \
                    -n 50 -w 5 -c 1 --rounds 20 $g --env NCCL_ALGO=Ring --env NCCL_PROTO=LL \
                    --env NCCL_MIN_NCHANNELS=$ch --env NCCL_MAX_NCHANNELS=$ch
            done
        done
        for p in LL LL128; do
            for g in "" --graph; do
                coll "chanprobe/ar-nccl-ring-$p-rounds${g:+-graph}.csv" allreduce -b 8 -e 16M -f 2 \
                    -n 50 -w 5 -c 1 --rounds 10 $g --env NCCL_ALGO=Ring --env NCCL_PROTO=$p
            done
        done
        ;;
    nccltests) # bf16 as hwcheck's default; -G 10: the graph's first launch (upload) amortised
        NB="-g 2 -b 8 -e 256M -f 2 -n ${ITERS:-20} -w 5 -c 1 -d bfloat16"
        step 240 nccl-tests-all_reduce_perf.txt "$NT/build/all_reduce_perf" $NB
        step 240 nccl-tests-all_reduce_perf-G10.txt "$NT/build/all_reduce_perf" $NB -G 10
        step 240 nccl-tests-all_reduce_perf-p2pdisable.txt env NCCL_P2P_DISABLE=1 "$NT/build/all_reduce_perf" $NB
        step 240 nccl-tests-all_reduce_perf-p2pdisable-G10.txt env NCCL_P2P_DISABLE=1 \
            "$NT/build/all_reduce_perf" $NB -G 10
        step 240 nccl-tests-sendrecv_perf.txt "$NT/build/sendrecv_perf" $NB
        ;;
    tuning)
        step 240 nccl-tuning.txt env NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING,GRAPH "$HW" coll allreduce \
            -b 8 -e 256M -f 4 -n 2 -w 1 -c 0 --format csv
        ;;
    capture)
        (
            step 300 capture-tp2.log python3 -m torch.distributed.run --nproc_per_node=2 \
                "$ROOT/validate/capture/capture_tp.py" --out capture --steps 20
            step 300 capture-tp2-delay.log python3 -m torch.distributed.run --nproc_per_node=2 \
                "$ROOT/validate/capture/capture_tp.py" --out capture-delay --steps 20 \
                --delay-rank 1 --delay-us 200
        )
        ;;
    *) say "unknown stage $stage" ;;
    esac
done
say "done: $*"
pack
