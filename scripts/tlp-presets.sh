#!/bin/sh
# The flow mode against the transaction mode on every shipped PCIe preset (docs/model.md, "The
# flow mode against the transaction mode", the table "Every shipped PCIe preset, both engines"):
# rings and all-to-alls of every GPU of the preset, copy engines and SM stores/loads, and the host
# cases; 256 MiB per flow. Prints one markdown row per case: preset, case, op, flow mode GB/s,
# transaction mode GB/s, their ratio, the transaction mode's run time in seconds.
# Usage: scripts/tlp-presets.sh [PRESET...] (default: every preset of the table). COLLSIM names
# the binary.
set -eu
COLLSIM=${COLLSIM:-build/collsim}
agg() { grep -v '^#' | awk -F, 'NR>1 { if ($4 == -1) a = $9; else if (n++ == 0) a = $9 } END { print a }'; }
row() { # preset label op flows-or-pattern
    case "$4" in *'>'*) sel="--flows $4" ;; *) sel="--pattern $4" ;; esac
    # shellcheck disable=SC2086
    f=$("$COLLSIM" flows --topo "$1" $sel --op "$3" --format csv | agg)
    t0=$(date +%s.%N)
    # shellcheck disable=SC2086
    t=$("$COLLSIM" flows --topo "$1" $sel --op "$3" --format csv --engine tlp | agg)
    t1=$(date +%s.%N)
    printf '| %s | %s | %s | %s | %s | %.2f | %.2f |\n' "$1" "$2" "$3" "$f" "$t" \
        "$(echo "$t / $f" | bc -l)" "$(echo "$t1 - $t0" | bc)"
}
gpus() { # the ring and all-to-all of every GPU, copy engines and SM
    for p in ring all-to-all; do
        row "$1" "$p" copy-write "$p"
        row "$1" "$p" copy-read "$p"
        row "$1" "$p" "write" "$p"
        row "$1" "$p" "read" "$p"
    done
}
PRESETS=${*:-rtxpro6000-8x-pcie5-2s rtxpro6000-8x-pcie5-1s pcie-8 pcie-16 h200-1x h200-2x h200-8x-nvswitch}
echo "| preset | case | op | flow | transaction | ratio | tlp s |"
echo "|---|---|---|---:|---:|---:|---:|"
for p in $PRESETS; do
    case "$p" in
    h200-1x)
        row "$p" "h0>0 + 0>h0" copy "h0>0,0>h0"
        row "$p" "0>h0" copy-write "0>h0"
        row "$p" "h0>0" copy-read "h0>0"
        row "$p" "0>h0" write "0>h0"
        row "$p" "h0>0" read "h0>0" ;;
    h200-2x)
        row "$p" "h0>0, h0>1" copy "h0>0,h0>1"
        row "$p" "0>h0, 1>h0" write "0>h0,1>h0"
        row "$p" "h0>0, h0>1" read "h0>0,h0>1" ;;
    h200-8x-nvswitch | h100-8x-nvswitch)
        row "$p" "h0>0, h0>1, h1>4, h1>5" copy "h0>0,h0>1,h1>4,h1>5"
        row "$p" "0>h0, 1>h0, 4>h1, 5>h1" write "0>h0,1>h0,4>h1,5>h1"
        row "$p" "h0>0, h0>1, h1>4, h1>5" read "h0>0,h0>1,h1>4,h1>5"
        row "$p" "8 GPUs to their socket's memory" copy-write "0>h0,1>h0,2>h0,3>h0,4>h1,5>h1,6>h1,7>h1" ;;
    *) gpus "$p" ;;
    esac
done
