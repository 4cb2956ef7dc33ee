#!/bin/bash
# Cold against cold: the real `collsim coll` command and SimGrid 3.32 on the same
# collective, each a whole process (start-up, platform, run, exit), paired and
# repeated in alternating order, so that both see the same machine load.
# Prints one markdown table: per case the median and spread (min-max) of each
# and the ratio of the medians. Part of `make bench` where bench_simgrid is built.
#
# usage: scripts/bench-cold.sh BUILD [REPS] [--full]
#   REPS  repetitions per case (default 5; 3 at 1,024 GPUs)
#   --full  also the one-shot at 1,024 GPUs (SimGrid takes minutes there)
set -u
BUILD=${1:?usage: scripts/bench-cold.sh BUILD [REPS] [--full]}
REPS=${2:-5}
FULL=0
for a in "$@"; do [ "$a" = --full ] && FULL=1; done
CS=$BUILD/collsim
SG=$BUILD/bench/bench_simgrid
[ -x "$CS" ] && [ -x "$SG" ] || { echo "bench-cold: needs $CS and $SG" >&2; exit 2; }

# Wall seconds of one whole process; its stdout goes to the file $2.
wall() {
    local out=$1; shift
    local t0=$EPOCHREALTIME
    "$@" >"$out" 2>/dev/null || { echo "bench-cold: failed: $*" >&2; return 1; }
    local t1=$EPOCHREALTIME
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.6f\n", b - a }'
}

# median and min-max of the numbers on stdin, in ms
stats() { sort -g | awk '{ v[NR] = $1 } END {
    m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    printf "%.1f %.1f %.1f\n", m * 1e3, v[1] * 1e3, v[NR] * 1e3 }'; }

echo "| case | platform | GPUs | reps | collsim ms (median, min-max) | SimGrid ms (median, min-max) | SimGrid / collsim |"
echo "|---|---|---:|---:|---:|---:|---:|"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
for c in ring oneshot; do
    for plat in xbar tree; do
        for n in 64 256 1024; do
            [ "$c" = oneshot ] && [ "$n" = 1024 ] && [ $FULL = 0 ] && continue
            reps=$REPS
            [ "$n" = 1024 ] && [ "$reps" -gt 3 ] && reps=3
            if [ $plat = xbar ]; then topo=nvswitch-$n; env=(); else topo=pcie-$n; env=(--env NCCL_P2P_LEVEL=SYS); fi
            algo=ring
            [ $c = oneshot ] && algo=oneshot-push
            ccmd=("$CS" coll allreduce --topo "$topo" -g "$n" --algo "$algo" -b 1M -e 1M "${env[@]}")
            scmd=("$SG" --one "$c" "$plat" "$n")
            : >"$tmp/c" && : >"$tmp/s"
            for ((r = 0; r < reps; r++)); do
                if ((r % 2 == 0)); then
                    wall "$tmp/co" "${ccmd[@]}" >>"$tmp/c" || status=1
                    wall "$tmp/so" "${scmd[@]}" >>"$tmp/s" || status=1
                else
                    wall "$tmp/so" "${scmd[@]}" >>"$tmp/s" || status=1
                    wall "$tmp/co" "${ccmd[@]}" >>"$tmp/c" || status=1
                fi
            done
            read -r cm cl ch < <(stats <"$tmp/c")
            read -r sm sl sh < <(stats <"$tmp/s")
            ratio=$(awk -v a="$sm" -v b="$cm" 'BEGIN { printf "%.1f", (b > 0 ? a / b : 0) }')
            echo "| $c | $plat ($topo) | $n | $reps | $cm ($cl-$ch) | $sm ($sl-$sh) | $ratio |"
        done
    done
done
echo
echo "collsim: \`collsim coll allreduce --topo T -g N --algo ring|oneshot-push -b 1M -e 1M\`" \
     "(pcie-N with NCCL_P2P_LEVEL=SYS, so every hop is a P2P write as in SimGrid's platform);" \
     "SimGrid: \`bench_simgrid --one CASE PLATFORM N\` (the same flow pattern: ring steps of S/n," \
     "or every rank sending S to every other; links of 100 GB/s and 1 us)."
exit $status
