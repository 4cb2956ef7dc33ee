# shellcheck shell=bash disable=SC2034  # failed, T: read by the sourcing script
# Sourced by the hwcheck run scripts (hwcheck-micro.sh, hwcheck-shm.sh,
# hwcheck-host-inflight.sh): the machine header their logs open with, the
# move into the output directory, and one step = one bounded hwcheck run.
#   hw_begin HWCHECK DIR TIMEOUT_S CMDLINE   header on stdout, HW = HWCHECK's
#                      absolute path, DIR made and entered, T = TIMEOUT_S
#   step FILE ARGS...  timeout T hwcheck ARGS -o FILE (stderr to FILE.err if
#                      any); one log line; a failure sets failed=1
# A tool missing on the machine leaves its header field "unknown", never a stop.

hw_header() { # hw_header CMDLINE: what hwcheck's own csv headers record, for the log
    local gpu drv cuda nccl cu=${CUDA_HOME:-/usr/local/cuda} h
    local nvcc=${NVCC:-$cu/bin/nvcc}
    h=${NCCL_HOME:-$([ -f "$cu/include/nccl.h" ] && echo "$cu" || echo /usr)}/include/nccl.h  # as the Makefile
    gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
    drv=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)
    cuda=$("$nvcc" --version 2>/dev/null | sed -n 's/.*compilation tools, //p')
    nccl=$(awk '$1 == "#define" && $2 ~ /^NCCL_(MAJOR|MINOR|PATCH)$/ {v = v (v ? "." : "") $3}
                END {print v}' "$h" 2>/dev/null)
    echo "# machine: $(hostname) ($(nproc) CPU cores), ${gpu:-unknown}"
    echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "# driver: ${drv:-unknown}"
    echo "# cuda: ${cuda:-unknown}"
    echo "# nccl: ${nccl:-unknown} ($h)"
    echo "# command: $1"
}

hw_begin() {
    HW=$(realpath "$1") || exit 2
    hw_header "$4"
    mkdir -p "$2" && cd "$2" || exit 2
    T=$3
    failed=0
}

step() {
    local f=$1
    shift
    local s0=$SECONDS
    timeout "$T" "$HW" "$@" -o "$f" 2>"$f.err"
    local rc=$?
    echo "$(date -u +%H:%M:%S) exit $rc after $((SECONDS - s0)) s: hwcheck $* -> $f"
    [ -s "$f.err" ] || rm -f "$f.err"
    [ "$rc" = 0 ] || failed=1
}
