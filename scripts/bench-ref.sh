#!/bin/bash
# Runs every command of bench/ref.cmds with BUILD/collsim, one output file per
# line (stdout then stderr, and the exit status) in OUTDIR; with REFDIR, then
# compares each with the same file there (cmp) and lists those that differ.
# A change that must not move predictions leaves every file the same.
#
# usage: scripts/bench-ref.sh BUILD OUTDIR [REFDIR]
set -u
BUILD=${1:?usage: scripts/bench-ref.sh BUILD OUTDIR [REFDIR]}
OUT=${2:?usage: scripts/bench-ref.sh BUILD OUTDIR [REFDIR]}
REF=${3:-}
CS=$BUILD/collsim
[ -x "$CS" ] || { echo "bench-ref: needs $CS" >&2; exit 2; }
mkdir -p "$OUT"
i=0
status=0
while IFS= read -r line; do
    case $line in '#'* | '') continue ;; esac
    i=$((i + 1))
    f=$(printf '%s/%03d.out' "$OUT" $i)
    # word splitting of the line is intended: the lines hold no quoting
    # shellcheck disable=SC2086
    { timeout 300 "$CS" $line 2>&1; echo "exit $?"; } >"$f"
    if [ -n "$REF" ]; then
        r=$(printf '%s/%03d.out' "$REF" $i)
        cmp -s "$f" "$r" || { echo "differs: $i: collsim $line"; status=1; }
    fi
done <"$(dirname "$0")/../bench/ref.cmds"
echo "bench-ref: $i commands${REF:+, compared with $REF}"
exit $status
