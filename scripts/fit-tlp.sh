#!/bin/sh
# Fit the transaction-level engine's one unknown of the 2-socket box, the root ports' ordering
# turnaround (tlp_turn_ns), to one contention row: 'Same uplink, diff targets (GPU0->4 +
# GPU1->6)', 2.7 GB/s (validate/data/public/rtxpro6000-2s-rw-flows.csv case 4). Bisection
# through `collsim flows --engine tlp` on the preset with the value replaced; the answer goes
# into models/topo/presets.c by hand (docs/model.md, "The transaction-level engine").
# Usage: scripts/fit-tlp.sh [TARGET_GBps]. COLLSIM names the binary.
set -eu
COLLSIM=${COLLSIM:-build/collsim}
TARGET=${1:-2.7}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$COLLSIM" topo export rtxpro6000-8x-pcie5-2s -o "$tmp/base.topo"
grep -q '^param tlp_turn_ns ' "$tmp/base.topo" || {
    echo "fit-tlp.sh: the exported preset has no 'param tlp_turn_ns' line to replace" >&2
    exit 1
}
rate() {
    sed -e "s/^param tlp_turn_ns .*/param tlp_turn_ns $1/" "$tmp/base.topo" > "$tmp/t.topo"
    if ! "$COLLSIM" flows --topo "$tmp/t.topo" --flows '0>4,1>6' --op copy-write --engine tlp \
        --format csv > "$tmp/out.csv"; then
        echo "fit-tlp.sh: collsim flows failed at tlp_turn_ns $1" >&2
        exit 1
    fi
    # The case's total is the row of flow -1; without it there is nothing to fit to.
    r=$(grep -v '^#' "$tmp/out.csv" | awk -F, '$4 == -1 { print $9 }')
    case "$r" in
    '' | *[!0-9.]*)
        echo "fit-tlp.sh: no total row (flow -1) with a rate in the output of collsim flows" \
            "at tlp_turn_ns $1: got '$r'" >&2
        exit 1 ;;
    esac
    echo "$r"
}
lo=1 hi=1000
for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14; do
    mid=$(( (lo + hi) / 2 ))
    r=$(rate $mid) || exit 1
    # a longer turnaround gives a lower rate
    if [ "$(echo "$r > $TARGET" | bc)" = 1 ]; then lo=$mid; else hi=$mid; fi
    [ $((hi - lo)) -le 1 ] && break
done
echo "tlp_turn_ns $lo: $(rate $lo) GB/s; $hi: $(rate $hi) GB/s (target $TARGET)"
