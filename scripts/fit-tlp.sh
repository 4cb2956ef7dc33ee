#!/bin/sh
# Fit the transaction-level engine's one unknown of the 2-socket box, the root ports' ordering
# turnaround (tlp_turn_ns), with `collsim calibrate --engine tlp` on the 'same-uplink' cases of
# validate/data/public/rtxpro6000-2s-rw-flows.csv: the 2- and 4-flow write collapse (2.7 GB/s),
# the same virtual switch towards one root port (40.3) and the reads of the same patterns (51.1,
# 51.3); nothing else. The answer goes into models/topo/presets.c by hand (docs/model.md, "The
# transaction-level engine"). Usage: scripts/fit-tlp.sh [MEAS]. COLLSIM names the binary.
set -eu
COLLSIM=${COLLSIM:-build/collsim}
MEAS=${1:-validate/data/public/rtxpro6000-2s-rw-flows.csv}
[ -r "$MEAS" ] || { echo "fit-tlp.sh: cannot read $MEAS" >&2; exit 1; }
# The rows it needs: the 2-flow collapse (GPU0>4 + GPU1>6, copy-write), as the case's total.
if ! awk -F, '$2 == "same-uplink" && $3 == "copy-write" && $4 == 0 && $5 == 0 && $6 == 4 { c = $1 }
              $1 == c && $2 == "same-uplink" && $4 == 1 && $5 == 1 && $6 == 6 { found = 1 }
              END { exit !found }' "$MEAS"; then
    echo "fit-tlp.sh: $MEAS has no 'same-uplink' copy-write case with the flows 0>4 and 1>6" \
        "(the 2-flow collapse row the fit needs)" >&2
    exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! "$COLLSIM" calibrate "$MEAS" --topo rtxpro6000-8x-pcie5-2s --engine tlp --fit tlp_turn_ns \
    --patterns same-uplink -o "$tmp/tlp.calib" > "$tmp/out.txt"; then
    echo "fit-tlp.sh: collsim calibrate failed" >&2
    exit 1
fi
grep -E '^ *tlp_turn_ns |^#points|^ +[0-9]+ +[0-9]+ ' "$tmp/out.txt"
