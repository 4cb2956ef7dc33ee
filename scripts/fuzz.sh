#!/bin/bash
# make fuzz: run each libFuzzer target for SECONDS, one after the other, on a
# corpus seeded from the repository's own inputs (tests/, traces/testdata/,
# validate/data/, fuzz/seeds/). Findings land in DIR/findings/TARGET/; copy
# each one into tests/fuzz/TARGET/ with its fix (make check replays them).
# Usage: scripts/fuzz.sh DIR SECONDS TARGET...
set -u
dir=$1 secs=$2
shift 2
declare -A seeds=(
    [kineto]="traces/testdata/dlrm/*.json.gz traces/testdata/TraceLens/sglang_Qwen3-8B_decode.json.gz fuzz/seeds/kineto/*"
    [kineto-gz]="fuzz/seeds/kineto/*"
    [trace]="tests/data/sweep/traces/*.trace fuzz/seeds/trace/*"
    [trace-gz]="tests/data/sweep/traces/*.trace fuzz/seeds/trace/*"
    [topo]="tests/data/topo/*.topo"
    [xml]="tests/data/topo/*.xml"
    [smi]="tests/data/topo/*.smi.txt validate/data/h200-1x/nvidia-smi.txt"
    [calib]="fuzz/seeds/calib/*"
    [scenario]="fuzz/seeds/scenario/*"
    [meas]="validate/data/h200-1x/*.csv validate/data/public/*.csv"
    [grid]="tests/data/sweep/*.grid"
)
status=0
summary="$dir/summary.txt"
: >"$summary"
printf '%-10s %10s %8s %8s %6s %s\n' target execs exec/s corpus cov findings | tee -a "$summary"
for t in "$@"; do
    corpus="$dir/corpus/$t" found="$dir/findings/$t"
    mkdir -p "$corpus" "$found"
    # shellcheck disable=SC2086
    for s in ${seeds[$t]:-}; do [ -f "$s" ] && cp -n "$s" "$corpus/"; done
    # tests/fuzz holds earlier findings: start from them too.
    [ -d "tests/fuzz/$t" ] && cp -n tests/fuzz/"$t"/* "$corpus/" 2>/dev/null
    log="$dir/$t.log"
    "$dir/fuzz-$t" "$corpus" -max_total_time="$secs" -max_len=65536 -timeout=10 \
        -rss_limit_mb=2048 -artifact_prefix="$found/" -print_final_stats=1 >"$log" 2>&1
    rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
    n=$(find "$found" -type f | wc -l)
    printf '%-10s %10s %8s %8s %6s %s\n' "$t" "${execs:-?}" "${speed:-?}" \
        "$(find "$corpus" -type f | wc -l)" "${cov:-?}" "$n" | tee -a "$summary"
    if [ $rc != 0 ] || [ "$n" != 0 ]; then
        status=1
        grep -m3 -E 'ERROR|SUMMARY|runtime error' "$log" | sed "s/^/  $t: /"
    fi
done
[ $status = 0 ] && echo "fuzz: no findings (logs and corpora under $dir)" ||
    echo "fuzz: findings under $dir/findings (see docs/fuzzing.md)"
exit $status
