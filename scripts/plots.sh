#!/bin/sh
# Regenerate the figures under docs/plots/ (SVG from collsim, PNG through
# rsvg-convert): `make plots`. Usage: scripts/plots.sh [path/to/collsim]
set -e
COLLSIM=${1:-build/collsim}
OUT=docs/plots
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$OUT"
png() { rsvg-convert -o "$OUT/$1.png" "$TMP/$1.svg"; echo "  $OUT/$1.png"; }
# coll --plot: NCCL's ring against the custom kernels on the reference box.
"$COLLSIM" coll allreduce --algo ring,oneshot,twoshot -b 4K -e 16M --plot "$TMP/coll.svg" >/dev/null
png coll
# validate --plot: the H200 pair's allreduce (NCCL, one-shot, two-shot), judged as one set.
D=validate/data/h200-2x
"$COLLSIM" validate $D/ar-nccl.csv $D/ar-oneshot.csv $D/ar-twoshot.csv --topo h200-2x \
    --merge h200-2x-allreduce --plot "$TMP/validate.svg" >/dev/null
png validate
# whatif --plot: the reference box with plain decode fitted and the EAGLE-3 point held loosely
# (sd 0.9): what the model leaves of the observed EAGLE-3 cycle (docs/scenario.md).
"$COLLSIM" whatif --observe mode=decode,allreduce=ring,tok_per_s=82 \
    --observe mode=eagle3,allreduce=ring,tok_per_s=54.1,sd=0.9 --fit efficiency \
    --vary mode=decode,eagle3 --vary allreduce=ring,oneshot,twoshot --plot "$TMP/whatif.svg" >/dev/null
png whatif
# sweep --plot: the reference scenario over allreduce and accepted tokens.
cat > "$TMP/ref.grid" <<'GRID'
collsim-grid 1
scenario kimi-k2-eagle3-8x-pcie5
vary allreduce=ring,oneshot,twoshot
vary accept_len=1.5,2,2.5,3
GRID
if "$COLLSIM" sweep --help | grep -q -- --plot; then
    "$COLLSIM" sweep "$TMP/ref.grid" -j 2 -o "$TMP/sweep.csv" --plot "$TMP/sweep.svg"
    png sweep
fi
