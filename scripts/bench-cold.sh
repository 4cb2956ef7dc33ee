#!/bin/bash
# Cold against cold: the real `collsim coll` command and SimGrid 3.32 on the same
# collective, each a whole process (start-up, platform, run, exit), paired and
# repeated in alternating order, so that both see the same machine load.
# Each process is timed by GNU time: its CPU time (user + system), which the load
# of a shared machine moves far less than wall time, and its wall time beside it.
# Prints one markdown table: per case the median and spread (min-max) of each
# and the ratio of the CPU medians. Part of `make bench` where bench_simgrid is built.
#
# usage: scripts/bench-cold.sh BUILD [REPS] [--full]
#   REPS  repetitions per case at 64 GPUs (default 5); 3 at 256 and 1,024 GPUs,
#         where SimGrid takes seconds to minutes a run (so that `make bench` fits
#         in about 20 minutes on 2 shared cores)
#   --full  also the one-shot at 1,024 GPUs (SimGrid takes minutes there)
#   BENCH_NS="64"  (environment) only these GPU counts (default 64 256 1024)
set -u
BUILD=${1:?usage: scripts/bench-cold.sh BUILD [REPS] [--full]}
REPS=${2:-5}
FULL=0
for a in "$@"; do [ "$a" = --full ] && FULL=1; done
CS=$BUILD/collsim
SG=$BUILD/bench/bench_simgrid
[ -x "$CS" ] && [ -x "$SG" ] || { echo "bench-cold: needs $CS and $SG" >&2; exit 2; }

# CPU time of a whole process: perf's task-clock (to the microsecond) where perf
# runs, else GNU time's user + system (to 10 ms).
if perf stat -e task-clock -x, -o /dev/null true 2>/dev/null; then
    CLOCK=perf
elif [ -x /usr/bin/time ]; then
    CLOCK=time
else
    echo "bench-cold: needs perf or /usr/bin/time (GNU time)" >&2
    exit 2
fi

# "CPU wall" seconds of one whole process; its stdout goes to the file $2.
run() {
    local out=$1; shift
    local t0=$EPOCHREALTIME
    if [ $CLOCK = perf ]; then
        perf stat -e task-clock -x, -o "$tmp/t" -- "$@" >"$out" 2>/dev/null
    else
        /usr/bin/time -f '%U %S' -o "$tmp/t" "$@" >"$out" 2>/dev/null
    fi || { echo "bench-cold: failed: $*" >&2; return 1; }
    local t1=$EPOCHREALTIME
    if [ $CLOCK = perf ]; then
        awk -F, -v a="$t0" -v b="$t1" '$3 == "task-clock" { printf "%.6f %.6f\n", $1 / 1e3, b - a }' "$tmp/t"
    else
        awk -v a="$t0" -v b="$t1" '{ printf "%.6f %.6f\n", $1 + $2, b - a }' "$tmp/t"
    fi
}

# median and min-max of the numbers on stdin, in ms (to 10 us: a 64-GPU
# collsim run takes 1-5 ms, and the ratio is taken from these figures)
stats() { sort -g | awk '{ v[NR] = $1 } END {
    m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    printf "%.2f %.2f %.2f\n", m * 1e3, v[1] * 1e3, v[NR] * 1e3 }'; }

echo "| case | platform | GPUs | reps | collsim CPU ms (median, min-max) | SimGrid CPU ms (median, min-max) | SimGrid / collsim (CPU) | wall ms, collsim / SimGrid (medians) |"
echo "|---|---|---:|---:|---:|---:|---:|---:|"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
for c in ring oneshot; do
    for plat in xbar tree; do
        for n in ${BENCH_NS:-64 256 1024}; do
            [ "$c" = oneshot ] && [ "$n" = 1024 ] && [ $FULL = 0 ] && continue
            reps=$REPS
            [ "$n" -ge 256 ] && [ "$reps" -gt 3 ] && reps=3
            if [ $plat = xbar ]; then topo=nvswitch-$n; env=(); else topo=pcie-$n; env=(--env NCCL_P2P_LEVEL=SYS); fi
            algo=ring
            [ $c = oneshot ] && algo=oneshot-push
            ccmd=("$CS" coll allreduce --topo "$topo" -g "$n" --algo "$algo" -b 1M -e 1M "${env[@]}")
            scmd=("$SG" --one "$c" "$plat" "$n")
            : >"$tmp/c" && : >"$tmp/s"
            for ((r = 0; r < reps; r++)); do
                if ((r % 2 == 0)); then
                    run "$tmp/co" "${ccmd[@]}" >>"$tmp/c" || status=1
                    run "$tmp/so" "${scmd[@]}" >>"$tmp/s" || status=1
                else
                    run "$tmp/so" "${scmd[@]}" >>"$tmp/s" || status=1
                    run "$tmp/co" "${ccmd[@]}" >>"$tmp/c" || status=1
                fi
            done
            read -r cm cl ch < <(cut -d' ' -f1 "$tmp/c" | stats)
            read -r sm sl sh < <(cut -d' ' -f1 "$tmp/s" | stats)
            read -r cw _ _ < <(cut -d' ' -f2 "$tmp/c" | stats)
            read -r sw _ _ < <(cut -d' ' -f2 "$tmp/s" | stats)
            ratio=$(awk -v a="$sm" -v b="$cm" 'BEGIN { printf "%.1f", (b > 0 ? a / b : 0) }')
            echo "| $c | $plat ($topo) | $n | $reps | $cm ($cl-$ch) | $sm ($sl-$sh) | $ratio | $cw / $sw |"
        done
    done
done
echo
echo "collsim: \`collsim coll allreduce --topo T -g N --algo ring|oneshot-push -b 1M -e 1M\`" \
     "(pcie-N with NCCL_P2P_LEVEL=SYS, so every hop is a P2P write as in SimGrid's platform);" \
     "SimGrid: \`bench_simgrid --one CASE PLATFORM N\` (the same flow pattern: ring steps of S/n," \
     "or every rank sending S to every other; links of 100 GB/s and 1 us). CPU time is that" \
     "of each whole process (perf stat's task-clock, else GNU time's user + system);" \
     "$REPS repetitions at 64 GPUs, 3 at 256 and 1,024."
exit $status
