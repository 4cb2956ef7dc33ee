#!/bin/sh
# The flow mode's collapse keys derived from the transaction mode (docs/model.md, "The flow mode
# against the transaction mode"): each collapse pattern of the reference box is run on the
# transaction level (`collsim flows --engine tlp`, written as a flows measurement), then
# `collsim calibrate` fits the flow mode's collapse key to that row alone, and to all the write or
# read rows together: tlp_turn_ns / tlp_turn_cpl_ns where the topology has a turnaround (the flow
# mode derives each uplink's rate from it, fabric.c fabric_turn_rate), else arb_collapse_GBps /
# arb_collapse_read_GBps. If the flow mode's rule followed the transaction level on every pattern,
# every row would give the preset's own value back.
# Usage: scripts/tlp-derive.sh [PRESET]. COLLSIM names the binary.
set -eu
COLLSIM=${COLLSIM:-build/collsim}
TOPO=${1:-rtxpro6000-8x-pcie5-2s}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
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
ALL=0,1,2,3,4,5,6,7
fit() { # key file...: the fitted value of key, or why there is none
    if "$COLLSIM" calibrate "$@" --topo "$TOPO" --fit "$key" --max-rms 1000 -o "$tmp/x.calib" \
        --format csv > "$tmp/fit.csv" 2> "$tmp/err.txt"; then
        # the value, and the rms error left (last line: the fit's summary)
        awk -F, -v k="$key" '$1 == k { v = $3 } END { printf "%s (rms %s%%)", v, $5 }' \
            "$tmp/fit.csv"
    else
        echo "none ($(sed 's/^collsim: //' "$tmp/err.txt" | cut -c1-60))"
    fi
}
row() { # name op spec
    f="$tmp/$1.csv"
    if ! "$COLLSIM" flows --topo "$TOPO" --flows "$3" --op "$2" --engine tlp --format csv \
        --output "$f"; then
        echo "tlp-derive.sh: collsim flows --engine tlp failed on $1" >&2
        exit 1
    fi
    t=$(grep -v '^#' "$f" | awk -F, '$4 == -1 { print $9 }')
    fl=$("$COLLSIM" flows --topo "$TOPO" --flows "$3" --op "$2" --format csv |
         grep -v '^#' | awk -F, '$4 == -1 { print $9 }')
    case "$2" in *read) key=$KR ;; *) key=$KW ;; esac
    printf '| %s | %s | %s | %s | %s |\n' "$1" "$2" "$t" "$fl" "$(fit "$f")"
}
# The keys: the turnaround where the topology has one (topo show prints it).
if "$COLLSIM" topo show "$TOPO" | grep -q '^# tlp_turn_ns: [1-9]'; then
    KW=tlp_turn_ns KR=tlp_turn_cpl_ns U=ns
else
    KW=arb_collapse_GBps KR=arb_collapse_read_GBps U=GB/s
fi
echo "| row | op | transaction mode GB/s | flow mode GB/s | flow key fitted to it, $U |"
echo "|---|---|---:|---:|---:|"
row w2 copy-write "0>4,1>6"
row w4 copy-write "0>4,0>5,1>6,1>7"
row w16 copy-write "$(a2a 0,1,2,3 4,5,6,7)"
row w56 copy-write "$(a2a $ALL $ALL)"
row r16 copy-read "$(a2a 4,5,6,7 0,1,2,3)"
row r56 copy-read "$(a2a $ALL $ALL)"
key=$KW
echo "| all writes | copy-write | | | $(fit "$tmp/w2.csv" "$tmp/w4.csv" "$tmp/w16.csv" "$tmp/w56.csv") |"
key=$KR
echo "| all reads | copy-read | | | $(fit "$tmp/r16.csv" "$tmp/r56.csv") |"
