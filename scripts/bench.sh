#!/bin/sh
# Run the simulator benchmarks (built by `make bench` into BUILD/bench/).
# Usage: scripts/bench.sh [BUILD] [bench args...]; prints one table per program.
set -e
BUILD=${1:-build}
[ $# -gt 0 ] && shift
status=0
for b in "$BUILD"/bench/*; do
    [ -x "$b" ] || continue
    echo "== $(basename "$b")"
    "$b" "$@" || status=$?
done
exit $status
