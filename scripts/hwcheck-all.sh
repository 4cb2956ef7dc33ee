#!/bin/bash
# Run the calibration suite and keep its files:
#   scripts/hwcheck-all.sh build/hwcheck PARENT NAME
# runs `hwcheck all -o NAME` from inside PARENT (so the command recorded in
# every file names a relative directory, no machine paths), and adds
# NAME/nvidia-smi.txt and NAME/summary.txt. hwcheck bounds every step itself
# (device- and host-side limits, exit 4); HWCHECK_ALL_TIMEOUT (s, default
# 3600) is the outer bound of the whole suite.
set -u
HW=$(realpath "${1:?usage: hwcheck-all.sh HWCHECK PARENT NAME}")
PARENT=${2:?usage: hwcheck-all.sh HWCHECK PARENT NAME}
NAME=${3:?usage: hwcheck-all.sh HWCHECK PARENT NAME}
mkdir -p "$PARENT/$NAME"
cd "$PARENT" || exit 2
{ nvidia-smi 2>&1; nvidia-smi topo -m 2>&1; } >"$NAME/nvidia-smi.txt" || true
PATH="$(dirname "$HW"):$PATH" timeout "${HWCHECK_ALL_TIMEOUT:-3600}" hwcheck all -o "$NAME" "${@:4}" 2>&1 |
    tee "$NAME/summary.txt"
exit "${PIPESTATUS[0]}"
