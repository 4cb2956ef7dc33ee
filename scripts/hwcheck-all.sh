#!/bin/bash
# Run the calibration suite and keep its files:
#   scripts/hwcheck-all.sh build/hwcheck DIR
# writes DIR/*.csv (hwcheck all -o DIR), DIR/nvidia-smi.txt and a summary.
set -u
HW=${1:?usage: hwcheck-all.sh HWCHECK DIR}
DIR=${2:?usage: hwcheck-all.sh HWCHECK DIR}
mkdir -p "$DIR"
{ nvidia-smi 2>&1; nvidia-smi topo -m 2>&1; } >"$DIR/nvidia-smi.txt" || true
"$HW" all -o "$DIR" 2>&1 | tee "$DIR/summary.txt"
exit "${PIPESTATUS[0]}"
