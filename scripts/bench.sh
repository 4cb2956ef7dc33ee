#!/bin/sh
# Run the simulator benchmarks (built by `make bench` into BUILD/bench/).
# Usage: scripts/bench.sh [BUILD] [bench args...]; prints one table per program,
# then, where SimGrid is installed, the cold-against-cold comparison of the real
# `collsim coll` command with SimGrid (scripts/bench-cold.sh; BENCH_REPS, default 5),
# and issue 22's time and memory targets (scripts/bench-targets.sh).
set -e
BUILD=${1:-build}
[ $# -gt 0 ] && shift
status=0
for b in "$BUILD"/bench/*; do
    [ -x "$b" ] || continue
    echo "== $(basename "$b")"
    "$b" "$@" || status=$?
done
if [ -x "$BUILD/bench/bench_simgrid" ]; then
    echo "== collsim coll against SimGrid, cold against cold (scripts/bench-cold.sh)"
    "$(dirname "$0")/bench-cold.sh" "$BUILD" "${BENCH_REPS:-5}" || status=$?
fi
if [ -x /usr/bin/time ]; then
    echo "== time and memory targets (scripts/bench-targets.sh)"
    "$(dirname "$0")/bench-targets.sh" "$BUILD" || status=$?
fi
exit $status
