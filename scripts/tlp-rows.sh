#!/bin/sh
# The reference box's contention rows (validate/data/public/rtxpro6000-2s-flows.csv and
# -rw-flows.csv) on both engines: measured GB/s, flow mode, transaction mode, and the
# transaction mode's run time. Usage: scripts/tlp-rows.sh [TOPO] [extra collsim flows options]
# (docs/model.md, "The transaction-level engine"). COLLSIM names the binary. TORCH=N adds the
# rows as the source's benchmark issued them (--issue torch --repeat N, both engines; docs/model.md
# "How the contention rows were measured"). DECIDE=1 adds the unmeasured rows that would decide
# the reverse-traffic hypothesis (docs/model.md, "The rows still outside 20%").
set -eu
COLLSIM=${COLLSIM:-build/collsim}
TOPO=${1:-rtxpro6000-8x-pcie5-2s}
[ $# -gt 0 ] && shift
EXTRA="$*"
# CALIB=FILE applies a calibration profile to both engines (the joint set of docs/model.md:
# validate/data/public/rtxpro6000-2s-tlp-joint.calib).
CAL=${CALIB:+--calib $CALIB}
a2a() { # every ordered pair of the GPUs in $1 (comma list) to those in $2
    out=""
    for s in $(echo "$1" | tr , ' '); do
        for d in $(echo "$2" | tr , ' '); do
            [ "$s" = "$d" ] && continue
            out="$out${out:+,}$s>$d"
        done
    done
    echo "$out"
}
agg() { grep -v '^#' | awk -F, 'NR>1 { if ($4 == -1) a = $9; else if (n++ == 0) a = $9 } END { print a }'; }
TORCH=${TORCH:-}
row() { # label op spec measured
    f=$("$COLLSIM" flows --topo "$TOPO" --flows "$3" --op "$2" --format csv $CAL | agg)
    t0=$(date +%s.%N)
    t=$("$COLLSIM" flows --topo "$TOPO" --flows "$3" --op "$2" --format csv --engine tlp $CAL $EXTRA | agg)
    t1=$(date +%s.%N)
    if [ -z "$TORCH" ]; then
        printf '| %s | %s | %s | %s | %s | %.2f |\n' "$1" "$2" "$4" "$f" "$t" "$(echo "$t1 - $t0" | bc)"
        return
    fi
    fq=$("$COLLSIM" flows --topo "$TOPO" --flows "$3" --op "$2" --format csv --issue torch --repeat "$TORCH" $CAL | agg)
    t2=$(date +%s.%N)
    tq=$("$COLLSIM" flows --topo "$TOPO" --flows "$3" --op "$2" --format csv --engine tlp --issue torch --repeat "$TORCH" $CAL $EXTRA | agg)
    t3=$(date +%s.%N)
    printf '| %s | %s | %s | %s | %s | %s | %s | %.2f / %.2f |\n' "$1" "$2" "$4" "$f" "$t" "$fq" "$tq" \
        "$(echo "$t1 - $t0" | bc)" "$(echo "$t3 - $t2" | bc)"
}
ALL=0,1,2,3,4,5,6,7
if [ -z "$TORCH" ]; then
    echo "| row | op | measured GB/s | flow mode | transaction mode | tlp run s |"
    echo "|---|---|---:|---:|---:|---:|"
else
    echo "| row | op | measured GB/s | flow mode | transaction mode | flow, torch x$TORCH | transaction, torch x$TORCH | tlp run s |"
    echo "|---|---|---:|---:|---:|---:|---:|---:|"
fi
row "1 flow cross-chip 0>4" copy-write "0>4" 36.8
row "2 flows, different VS 0>4 2>6" copy-write "0>4,2>6" 76.4
row "2 flows, same VS, 2 roots 0>4 1>6" copy-write "0>4,1>6" 2.7
row "4 flows 0>4 0>5 1>6 1>7" copy-write "0>4,0>5,1>6,1>7" 2.7
row "16 flows cross-chip" copy-write "$(a2a 0,1,2,3 4,5,6,7)" 7.7
row "56 flows all-to-all" copy-write "$(a2a $ALL $ALL)" 36.5
row "same source 0>4 0>6" copy-write "0>4,0>6" 36.6
row "same VS, one root 0>4 1>5" copy-write "0>4,1>5" 40.3
row "reverse 4>0 6>1" copy-write "4>0,6>1" 51.2
row "4 flows 1:1 i>i+4" copy-write "0>4,1>5,2>6,3>7" 83.2
row "8 flows bidir i<>i+4" copy-write "0>4,1>5,2>6,3>7,4>0,5>1,6>2,7>3" 82.2
row "DS port: same GPU 0>4 0>2" copy-write "0>4,0>2" 42.8
row "DS port: different GPUs 0>4 1>2" copy-write "0>4,1>2" 106.3
row "same chip 0>1" copy-write "0>1" 54.1
row "same chip 0>1 2>3" copy-write "0>1,2>3" 108.6
row "same chip both pairs bidir" copy-write "0>1,1>0,2>3,3>2" 203.9
row "same chip 4-GPU all-to-all" copy-write "$(a2a 0,1,2,3 0,1,2,3)" 153
row "1 read 4>0" copy-read "4>0" 40.1
row "2 reads 4>0 6>2" copy-read "4>0,6>2" 44.8
row "2 reads 4>0 6>1" copy-read "4>0,6>1" 51.1
row "4 reads 4>0 5>0 6>1 7>1" copy-read "4>0,5>0,6>1,7>1" 51.3
row "16 reads cross-chip" copy-read "$(a2a 4,5,6,7 0,1,2,3)" 9.0
row "56 reads all-to-all" copy-read "$(a2a $ALL $ALL)" 53.9
# Not measured on the box: the rows that would tell whether reverse traffic through the same
# root ports lifts a collapsed uplink (docs/model.md, "The rows still outside 20%"): the 16
# cross-chip flows both ways at once (32: the 56-flow rows less their same-chip flows) and one
# cross-socket pair both ways.
if [ -n "${DECIDE:-}" ]; then
    B32="$(a2a 0,1,2,3 4,5,6,7),$(a2a 4,5,6,7 0,1,2,3)"
    row "32 flows cross-chip both ways" copy-write "$B32" "not measured"
    row "32 reads cross-chip both ways" copy-read "$B32" "not measured"
    row "pair both ways 0>4 4>0" copy-write "0>4,4>0" "94-95 (matrix, p2pBandwidthLatencyTest)"
    row "pair both ways, reads 0>4 4>0" copy-read "0>4,4>0" "not measured"
fi
