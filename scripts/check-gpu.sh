#!/bin/bash
# hwcheck's GPU tests (make check-gpu): run on a machine with at least one GPU.
#   scripts/check-gpu.sh build/hwcheck
# 1. The four custom allreduce kernels against the CPU reference, on fresh
#    random data, for every dtype, several sizes (16 B .. 3 MiB, including
#    sizes where some ranks own empty slices), as 2, 4 and 8 virtual ranks;
#    also inside a CUDA graph, with a single block, and on the real GPUs.
#    NCCL's ring Simple through pinned host memory (shm-ring, 2 ranks), eager and in a graph.
# 2. NCCL collectives (all five, every dtype) on the visible GPUs.
#    On 2+ GPUs every NCCL collective also runs in CUDA graphs captured on the
#    real GPUs' streams, with several graph sweeps in a row (a capture left
#    open would poison the next one).
# 3. The never-hang guarantee: a rank that never starts makes its peers time
#    out on the device; hwcheck must exit 4 naming the GPU and the barrier.
#    On 2+ GPUs: the same across real GPUs, eager and in a graph, and an NCCL
#    rank that never starts ends at the host-side limit with exit 4 naming the
#    GPU and the step, in bounded time.
# Every command runs under `timeout` (CHECK_GPU_TIMEOUT s, default 180): a
# hang is a failure, never a stuck test run.
# 4. host, launch, p2p, flows and all run and write the documented headers;
#    patterns that need more GPUs say so. host --op kernel (GPU loads from and
#    stores into pinned host memory), launch's isolated costs (host-side call
#    time, graph node sweep, host flag round trip, 1-rank NCCL eager and in a
#    graph), host --op kernel with 2 and 8 loads in flight per thread (every
#    byte of one copy checked), replay eager and with every phase captured: the captured replay
#    must take at least the compute it replays (a dropped op would not).
# Prints one line per case and a summary; exits 1 if any case failed.
set -u
HW=${1:-build/hwcheck}
if [ ! -x "$HW" ]; then echo "check-gpu: $HW not built (needs CUDA and NCCL)"; exit 2; fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
pass=0 fail=0
failed=()

# run NAME EXPECTED_RC COMMAND...: the command's csv goes to $TMP/out, stderr to $TMP/err.
run() {
    local name=$1 want=$2
    shift 2
    timeout "${CHECK_GPU_TIMEOUT:-180}" "$@" >"$TMP/out" 2>"$TMP/err"
    local rc=$?
    if [ "$rc" != "$want" ]; then
        fail=$((fail + 1)); failed+=("$name")
        echo "FAIL $name: exit $rc (expected $want): $*"
        tail -5 "$TMP/err" | sed 's/^/     /'
        return 1
    fi
    return 0
}

# A coll csv must have rows, and every row wrong == 0 (the column named `wrong` in
# the header, wherever it stands: columns are added after it; a csv without one fails).
coll_ok() {
    local name=$1 rows bad
    rows=$(grep -v '^#' "$TMP/out" | grep -vc '^size_bytes' || true)
    bad=$("$(dirname "$0")/coll-wrong.awk" "$TMP/out")
    if [ "$rows" -lt 1 ] || [ "$bad" != 0 ]; then
        fail=$((fail + 1)); failed+=("$name")
        echo "FAIL $name: $rows rows, $bad with wrong elements"
        grep -v '^#' "$TMP/out" | head -20 | sed 's/^/     /'
        return 1
    fi
    pass=$((pass + 1))
    printf 'ok   %-44s %2d sizes, 0 wrong\n' "$name" "$rows"
}

has() { # has NAME FILE TEXT: file contains text
    if grep -qF -- "$3" "$2"; then pass=$((pass + 1)); echo "ok   $1"; else
        fail=$((fail + 1)); failed+=("$1"); echo "FAIL $1: '$3' not found"; sed 's/^/     /' "$2" | head -20; fi
}

ngpu=$("$HW" coll -b 4K -e 4K -n 1 -w 0 --format csv 2>/dev/null | grep -c '^# topo: GPU' || true)
echo "check-gpu: $ngpu GPU(s)"

# 1. custom kernels, virtual ranks
for impl in oneshot twoshot oneshot-push twoshot-push; do
    for v in 2 4 8; do
        for d in bf16 fp16 fp32; do
            n="$impl v$v $d"
            run "$n" 0 "$HW" coll --impl $impl --virtual-ranks $v -d $d -b 16 -e 3M -f 4 \
                -n 5 -w 2 -c 2 --seed $((RANDOM + 1)) --format csv && coll_ok "$n"
            # 48 B steps: 48, 192, 768 ... 3 MiB (3 packs: uneven slices)
        done
    done
    n="$impl v4 bf16 graph"
    run "$n" 0 "$HW" coll --impl $impl --virtual-ranks 4 --graph -b 48 -e 3M -f 4 -n 5 -w 2 \
        --seed $((RANDOM + 1)) --format csv && coll_ok "$n"
    n="$impl v8 fp16 1 block"
    run "$n" 0 "$HW" coll --impl $impl --virtual-ranks 8 --blocks 1 -d fp16 -b 48 -e 768K -f 4 \
        -n 3 -w 1 --format csv && coll_ok "$n"
    n="$impl v3 fp32 odd ranks"
    run "$n" 0 "$HW" coll --impl $impl --virtual-ranks 3 -d fp32 -b 48 -e 3M -f 4 -n 3 -w 1 \
        --format csv && coll_ok "$n"
    if [ "$ngpu" -ge 2 ]; then
        n="$impl $ngpu GPUs bf16"
        run "$n" 0 "$HW" coll --impl $impl -b 16 -e 16M -f 4 -n 5 -w 2 --format csv && coll_ok "$n"
        n="$impl $ngpu GPUs fp32 graph"
        run "$n" 0 "$HW" coll --impl $impl --graph -d fp32 -b 16 -e 16M -f 4 -n 5 -w 2 --format csv &&
            coll_ok "$n"
    fi
done
# NCCL's ring Simple through host memory (--impl shm-ring, 2 ranks): every dtype, sizes that
# leave channels, chunks and slices uneven (48 B steps x 4 to 12 MiB: 3 slices of 4 channels),
# 1 and 4 channels, in a graph (the step counters carry across replays), and on 2 GPUs
for d in bf16 fp16 fp32; do
    n="shm-ring v2 $d"
    run "$n" 0 "$HW" coll --impl shm-ring --virtual-ranks 2 -d $d -b 48 -e 12M -f 4 -n 5 -w 2 \
        -c 2 --seed $((RANDOM + 1)) --format csv && coll_ok "$n"
done
n="shm-ring v2 1 channel, 20 MiB"
run "$n" 0 "$HW" coll --impl shm-ring --virtual-ranks 2 --blocks 1 -b 20M -e 20M -n 3 -w 1 \
    -c 2 --format csv && coll_ok "$n" && has "$n: channels recorded" "$TMP/out" ",shm-ring,"
n="shm-ring v2 graph"
run "$n" 0 "$HW" coll --impl shm-ring --virtual-ranks 2 --graph -b 48 -e 3M -f 4 -n 5 -w 2 \
    --format csv && coll_ok "$n"
run "shm-ring on 4 ranks: exit 2" 2 "$HW" coll --impl shm-ring --virtual-ranks 4 -b 1M -e 1M &&
    has "shm-ring 4 ranks: says why" "$TMP/err" "2 ranks"
if [ "$ngpu" -ge 2 ]; then
    n="shm-ring 2 GPUs"
    run "$n" 0 "$HW" coll --impl shm-ring -g 2 -b 48 -e 12M -f 4 -n 5 -w 2 --format csv &&
        coll_ok "$n"
fi

# 2. NCCL
for c in allreduce reducescatter allgather broadcast alltoall; do
    for d in bf16 fp16 fp32; do
        n="nccl $c $d"
        run "$n" 0 "$HW" coll $c -d $d -b 1K -e 4M -f 4 -n 5 -w 2 -c 2 --format csv && coll_ok "$n"
    done
done
n="nccl allreduce graph"
run "$n" 0 "$HW" coll allreduce --graph -b 1K -e 4M -f 4 -n 5 -w 2 --format csv && coll_ok "$n"
if [ "$ngpu" -ge 2 ]; then
    for c in allreduce reducescatter allgather broadcast alltoall; do
        n="nccl $c $ngpu GPUs graph"
        run "$n" 0 "$HW" coll $c --graph -d fp32 -b 256 -e 4M -f 4 -n 5 -w 2 -c 2 --format csv &&
            coll_ok "$n"
    done
    n="nccl allreduce $ngpu GPUs graph, -w 0 (first use inside the capture)"
    run "$n" 0 "$HW" coll allreduce --graph -b 8 -e 256K -f 8 -n 3 -w 0 --format csv && coll_ok "$n"
    n="nccl allreduce $ngpu GPUs graph NCCL_PROTO=LL"
    run "$n" 0 "$HW" coll allreduce --graph --env NCCL_PROTO=LL -b 1K -e 1M -f 8 -n 5 -w 2 \
        --format csv && coll_ok "$n"
fi
n="nccl allreduce NCCL_PROTO=Simple"
run "$n" 0 "$HW" coll allreduce --env NCCL_PROTO=Simple -b 1K -e 1M -f 4 -n 5 -w 2 --format csv &&
    coll_ok "$n" && has "$n: proto column" "$TMP/out" ",Simple,"
n="NVLS refused from the environment"
NCCL_NVLS_ENABLE=1 run "$n" 2 "$HW" coll -b 1K -e 1K && has "$n" "$TMP/err" "multicast"

# 3. never hangs: rank 1 never launched; its peers time out after 300 ms
for impl in oneshot twoshot-push; do
    n="$impl: missing rank -> timeout, exit 4"
    start=$(date +%s)
    run "$n" 4 timeout 60 "$HW" coll --impl $impl --virtual-ranks 4 --drop-rank 1 -b 1M -e 1M \
        -n 1 -w 0 --timeout-ms 300 && has "$n" "$TMP/err" "GPU 0:" &&
        has "$n: names the barrier" "$TMP/err" "start barrier"
    echo "     (gave up after $(($(date +%s) - start)) s)"
done

if [ "$ngpu" -ge 2 ]; then
    for g in "" --graph; do
        n="oneshot $ngpu GPUs${g:+ graph}: missing rank -> timeout, exit 4"
        start=$(date +%s)
        run "$n" 4 "$HW" coll --impl oneshot $g --drop-rank 1 -b 1M -e 1M -n 1 -w 0 \
            --timeout-ms 300 && has "$n" "$TMP/err" "GPU 0:" &&
            has "$n: names the barrier" "$TMP/err" "start barrier"
        echo "     (gave up after $(($(date +%s) - start)) s)"
    done
    # NCCL kernels have no device-side limit: the host-side limit (5 s here)
    # must end the run, name the GPU and the step, and exit 4 within 5 + 10 +
    # teardown seconds.
    n="nccl $ngpu GPUs: missing rank -> host-side limit, exit 4"
    start=$(date +%s)
    run "$n" 4 "$HW" coll allreduce --drop-rank 1 -b 1M -e 1M -n 1 -w 0 --host-timeout-s 5 &&
        has "$n" "$TMP/err" "GPU 0:" && has "$n: says why" "$TMP/err" "host-side limit"
    took=$(($(date +%s) - start))
    echo "     (gave up after $took s)"
    if [ "$took" -le 40 ]; then pass=$((pass + 1)); echo "ok   $n: bounded ($took s <= 40 s)"
    else fail=$((fail + 1)); failed+=("$n: bounded"); echo "FAIL $n: took $took s"; fi
    n="custom kernel graph after a failed run"
    run "$n" 0 "$HW" coll --impl twoshot --graph -b 256 -e 4M -f 4 -n 5 -w 2 --format csv &&
        coll_ok "$n"
fi

# 4. the other modes
run "host" 0 "$HW" host -b 1M -e 16M -f 4 --format csv &&
    has "host: header" "$TMP/out" "case,pattern,op,flow,src,dst,bytes,time_us,bw_GBps"
for b in 1 8; do
    run "host --op kernel --blocks $b" 0 "$HW" host --op kernel --blocks $b -b 1M -e 4M -f 4 \
        --format csv && has "host kernel b$b: h2d loads" "$TMP/out" ",h2d,read,0,host" &&
        has "host kernel b$b: d2h stores" "$TMP/out" ",d2h,write,0,0,host" &&
        has "host kernel b$b: blocks recorded" "$TMP/out" "# kernel_blocks: $b x 512"
done
# copy kernels with 2 and 8 loads in flight per thread (NCCL's reduceCopy depth), blocks of
# 256 threads: -c 1 checks every byte of one copy per case (poisoned destination) and exits 1
# on a wrong byte; the header records the grid and the depth
for u in 2 8; do
    n="host --op kernel --unroll $u --threads 256"
    run "$n" 0 "$HW" host --op kernel --blocks 3 --threads 256 --unroll $u -c 1 -b 64K -e 4M -f 8 \
        --format csv && has "$n: h2d loads" "$TMP/out" ",h2d,read,0,host" &&
        has "$n: d2h stores" "$TMP/out" ",d2h,write,0,0,host" &&
        has "$n: grid recorded" "$TMP/out" "# kernel_blocks: 3 x 256 threads" &&
        has "$n: depth recorded" "$TMP/out" "# kernel_unroll: $u loads of 16 B"
done
run "host --unroll 3: exit 2" 2 "$HW" host --op kernel --unroll 3 -b 1M -e 1M &&
    has "host --unroll 3: says why" "$TMP/err" "--unroll"
run "host --unroll with the copy engine: exit 2" 2 "$HW" host --unroll 2 -b 1M -e 1M &&
    has "host --unroll copy: says why" "$TMP/err" "--op kernel"
run "launch" 0 "$HW" launch --format csv && has "launch: graph-node row" "$TMP/out" "graph-node,"
for w in launch-host graph-launch-host graph-nodes-1 graph-nodes-256 host-flag nccl-call \
    nccl-call-host memcpy-host nccl-graph-launch nccl-graph-node; do
    has "launch: $w row" "$TMP/out" "$w,"
done
# every launch time is a positive number (a failed timer would print 0 or nan)
n="launch: all times positive"
if awk -F, '!/^#/ && $1 != "what" && !($3 > 0) {bad = 1} END {exit bad}' "$TMP/out"; then
    pass=$((pass + 1)); echo "ok   $n"; else fail=$((fail + 1)); failed+=("$n"); echo "FAIL $n"; fi
run "p2p" 0 "$HW" p2p -b 1M -e 1M --format csv && has "p2p: metadata" "$TMP/out" "# kind: p2p"
if [ "$ngpu" -lt 2 ]; then has "p2p on 1 GPU says why" "$TMP/out" "needs at least 2 GPUs"; else
    for op in read write copy; do has "p2p: pair $op rows" "$TMP/out" ",pair,$op,0,0,1,"; done
    has "p2p: bidir aggregate" "$TMP/out" ",bidir,read,-1,*,*,"
    run "p2p --blocks 36" 0 "$HW" p2p --op read --blocks 36 -b 1M -e 1M --format csv &&
        has "p2p --blocks: recorded" "$TMP/out" "# kernel_blocks: 36 x 512"
fi
run "flows same-uplink" 0 "$HW" flows --pattern same-uplink -b 1M -e 1M --format csv &&
    has "flows: kind" "$TMP/out" "# kind: flows"
run "launch -o FILE" 0 "$HW" launch -o "$TMP/launch.csv" -n 100 &&
    has "atomic -o file" "$TMP/launch.csv" "# format: collsim-meas 1"

for t in validate/data/h200-1x/traces/*.trace; do
    run "replay $(basename "$t")" 0 "$HW" replay -g 1 -n 1 -w 1 "$t" --format csv &&
        has "replay $(basename "$t"): row" "$TMP/out" "$(basename "$t"),"
done
# cycle_us >= compute_us + idle_us (1% slack): the spin kernels really ran
replay_ok() {
    local name=$1
    if awk -F, '!/^#/ && $1 != "trace" && !($5 >= 0.99 * ($7 + $10)) {bad = 1} END {exit bad}' \
        "$TMP/out"; then pass=$((pass + 1)); echo "ok   $name: cycle >= compute + idle"; else
        fail=$((fail + 1)); failed+=("$name"); echo "FAIL $name: cycle shorter than its compute"
        grep -v '^#' "$TMP/out" | sed 's/^/     /'; fi
}
for t in validate/data/h200-1x/traces/*.trace; do
    n="replay --graph $(basename "$t")"
    run "$n" 0 "$HW" replay --graph -g 1 -n 1 -w 1 "$t" --format csv &&
        has "$n: header" "$TMP/out" "# launch: graph" && has "$n: captured" "$TMP/out" "ran as CUDA graphs" &&
        replay_ok "$n"
    grep -q " 0 of [0-9]* segments" "$TMP/out" && { fail=$((fail + 1)); failed+=("$n: nothing captured"); echo "FAIL $n: nothing captured"; }
    n="replay --eager $(basename "$t")"
    run "$n" 0 "$HW" replay --eager -g 1 -n 1 -w 1 "$t" --format csv &&
        has "$n: none captured" "$TMP/out" ": 0 of" && replay_ok "$n"
done
printf 'collsim-trace 1\ncycle 1\nbogus 1\n' >"$TMP/bad.trace"
run "replay bad trace: exit 3" 3 "$HW" replay "$TMP/bad.trace" && has "replay: file:line" "$TMP/err" "bad.trace:3"

echo "check-gpu: $pass passed, $fail failed"
[ "$fail" = 0 ] || { printf '  failed: %s\n' "${failed[@]}"; exit 1; }
