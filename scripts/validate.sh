#!/bin/bash
# Regenerate docs/validation.md (and its plots) from every validation set in
# validate/data/*/*.set; with --check, run the same sets into build/ and only
# check the guards (make check); with --guards, write each set's guard file
# (NAME.guards beside the .set) from today's errors. Exit 1 if a row breaks
# its guard (or has none, or has no comparable points) or a guard matches no
# row, 2 on usage, and the failing command's code otherwise.
#
# usage: scripts/validate.sh COLLSIM [--check|--guards]
#
# A set file has `key: value` lines: name (file stem for outputs), title,
# topo (preset or topology file), fit: FILES [-- ARGS] (what the calibration
# is fitted to, relative to the set file; ARGS such as --patterns/--sizes go
# to collsim calibrate; `fit: none` when no point-to-point data of the source
# calibrates the model: the topology's own values), one or more check: FILES [-- ARGS] (held-out data,
# predicted with the calibration), report: FILES [-- ARGS] (known gaps of the
# model, explained in note: lines), and plot: yes (an SVG per check/report
# line), and calib: preset (the topology preset carries this set's fit: the
# files are predicted with the preset itself, as `collsim coll --topo T` runs
# it, and every fitted key must lie within one standard deviation of the
# preset's value, or the row fails naming the key).
#
# Every row (a file, or a --merge set) is held to its regression guard in
# NAME.guards: median and |worst| error at about 1.2x today's (at least 0.5
# points more), decisions (sizes where the model names the measured fastest
# algorithm) no fewer than today, and each algorithm pair's first crossover
# no further (|log2 predicted/measured|) than 1.2x today's + 0.25; a pair that
# crosses in neither must keep not crossing. Guards say "no worse than
# today", not "right": the accuracy targets (median 10% point-to-point, 25%
# collectives and replays) are printed beside them and are not enforced.
set -u
COLLSIM=${1:?usage: scripts/validate.sh COLLSIM [--check|--guards]}
MODE=${2:-doc}
case "$MODE" in doc|--check|--guards) ;; *) echo "usage: scripts/validate.sh COLLSIM [--check|--guards]" >&2; exit 2 ;; esac
case "$COLLSIM" in /*) ;; *) COLLSIM=$PWD/$COLLSIM ;; esac
cd "$(dirname "$0")/.." || exit 4
OUT=build/validate
mkdir -p "$OUT"
if [ "$MODE" = doc ]; then DOC=docs/validation.md PLOTS=docs/validation; else DOC=$OUT/validation.md PLOTS=$OUT; fi
mkdir -p "$PLOTS"
rm -f "$OUT/failed"
: > "$OUT/rows.tsv"; : > "$OUT/xovers.tsv"

key() { sed -n "s/^$1:[[:space:]]*//p" "$2" | head -1; }
# csv table number N (0-based, tables separated by blank lines) of a report, meta lines dropped.
table() { awk -v want="$1" 'BEGIN{t=0} /^#/ {next} /^$/ {t++; next} t==want' "$2"; }
# the table of a report whose header starts with WORD (csv), header dropped.
table_named() { awk -v w="$1" 'BEGIN{on=0} /^#/ {next} /^$/ {on=0; next} on {print; next} index($0, w)==1 {on=1}' "$2"; }
# csv fields to tabs (the fields used here never contain commas or quotes).
csv_fields() { tr ',' '\t'; }
fail() { echo "validate: FAIL $*" >&2; echo "$*" >> "$OUT/failed"; }

# Guard arithmetic (awk): today's value -> guard, rounded up to 0.1 point.
GUARD_PCT='function g(x) { x = (x < 0 ? -x : x); y = 1.2 * x; if (y < x + 0.5) y = x + 0.5; return int(y * 10 + 0.999) / 10 }'
# Crossover error: 0 when neither crosses, |log2 p/m| when both do, -1 (a mismatch) otherwise.
XERR='function xe(m, p) { if (m == 0 && p == 0) return 0; if (m == 0 || p == 0) return -1; r = log(p / m) / log(2); return r < 0 ? -r : r }
      function xg(e) { y = 1.2 * e + 0.25; return int(y * 100 + 0.999) / 100 }'

target_of() { case "$1" in coll|nccl-tests|replay) echo 25 ;; *) echo 10 ;; esac; }

fmt_x() { awk -v b="$1" 'BEGIN{ if (b == 0) { print "none"; exit }
    split("B K M G", u, " "); i = 1; while (b >= 1024 && i < 4) { b /= 1024; i++ }
    printf "%.3g%s\n", b, (i == 1 ? "" : u[i]) }'; }

# One `collsim validate` run: role, index, files and args of a set line. Each
# row is held to its guard; rows go to the set's section and the summary.
run_check() { # role idx files args
    local role=$1 idx=$2 files=$3 args=$4 csv="$OUT/$name.$2.csv" plotarg=() f fl="" paths=()
    for f in $files; do fl="$fl $dir/$f"; paths+=("$f"); done
    local merge=""
    case " $args " in *" --merge "*) merge=$(echo " $args " | sed 's/.* --merge \([^ ]*\) .*/\1/') ;; esac
    # Replays have no size axis: no plot for them.
    if [ "$plot" = yes ] && [ "$role" != fit ] && ! grep -q '^# kind: replay' "$dir/${files%% *}"; then
        plotarg=(--plot "$PLOTS/$name-$idx.svg")
        printf '\n![%s: %s %s](validation/%s-%s.svg)\n' "$title" "$files" "$args" "$name" "$idx" >> "$OUT/plots.md"
    fi
    # shellcheck disable=SC2086
    local calarg=(--calib "$calib")
    [ "$usecal" = preset ] && calarg=()
    "$COLLSIM" validate $fl $args --topo "$topo" "${calarg[@]}" --format csv "${plotarg[@]}" \
        > "$csv" 2> "$OUT/$name.$idx.err" || { cat "$OUT/$name.$idx.err" >&2; exit 3; }
    local rowno=0
    while IFS=$'\t' read -r set kind pts med worst wp dec xo note; do
        local thing="${merge:-${paths[$rowno]}}" rk gl gm gw gd ok=ok tgt tm fm fw dg="-"
        rowno=$((rowno + 1))
        rk="$role $thing |${args:+ $args}"
        tgt=$(target_of "$kind")
        if [ "$pts" = 0 ]; then
            fail "$name: $rk: no comparable points${note:+ ($note)}"
            echo "| $set | $role | ${args:--} | 0 | - | - | - | - | - | - | ${note:--} |" >> "$OUT/sections.md"
            echo "| $name | $set | $role | 0 | - | - | - | - | - | FAIL |" >> "$OUT/summary.md"
            continue
        fi
        gl=$(awk -v k="$rk" '$1 == "row" { r = $0; sub(/^row +[^ ]+ +[^ ]+ +[^ ]+ +/, "", r); if (r == k) { print $2, $3, $4; exit } }' "$guards" 2>/dev/null)
        if [ -z "$gl" ]; then
            [ "$MODE" != --guards ] && { fail "$name: $rk: no guard (scripts/validate.sh build/collsim --guards)"; ok=FAIL; }
            gm=- gw=- gd=-
        else
            read -r gm gw gd <<< "$gl"
            if awk -v m="$med" -v w="$worst" -v a="$gm" -v b="$gw" 'BEGIN{w=(w<0?-w:w); exit !(m>a || w>b)}'; then
                fail "$name: $rk: median $med% / worst $worst% beyond the guard $gm% / $gw%"; ok=FAIL
            fi
            if [ "$gd" != - ]; then
                dg=">= ${gd%%/*}"
                if [ "$dec" = - ] || [ "${dec#*/}" != "${gd#*/}" ] || [ "${dec%%/*}" -lt "${gd%%/*}" ]; then
                    fail "$name: $rk: decisions $dec, guard at least $gd"; ok=FAIL
                fi
            fi
        fi
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$rk" "$med" "$worst" "$dec" "$set" "$wp" "$gd" >> "$OUT/rows.tsv"
        tm=$(awk -v m="$med" -v t="$tgt" 'BEGIN{print (m <= t ? "met" : "not met")}')
        fm=$(printf '%.1f%%' "$med"); fw=$(printf '%+.1f%%' "$worst")
        local gtxt="-"; [ "$gm" != - ] && gtxt="$gm% / $gw%"
        echo "| $set | $role | ${args:--} | $pts | $fm | $fw | $gtxt | $tgt%: $tm | $wp | $dec${gd:+ ($dg)} | ${note:--} |" | sed 's/ (-)//' >> "$OUT/sections.md"
        echo "| $name | $set | $role | $pts | $fm | $fw | $gtxt | $tgt%: $tm | $dec | $ok |" >> "$OUT/summary.md"
        # Crossovers of this row, each against its guard.
        table_named set,pair, "$csv" | awk -F, -v s="$set" '$1 == s' | csv_fields | \
        while IFS=$'\t' read -r xs pair mb pb mc pc; do
            local e g
            e=$(awk -v m="$mb" -v p="$pb" "$XERR"' BEGIN{ printf "%.4f\n", xe(m, p) }')
            g=$(awk -v k="$rk" -v pr="$pair" '$1 == "xover" && $3 == pr { r = $0; sub(/^xover +[^ ]+ +[^ ]+ +/, "", r); if (r == k) { print $2; exit } }' "$guards" 2>/dev/null)
            printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$rk" "$set" "$pair" "$mb" "$pb" "$e" >> "$OUT/xovers.tsv"
            local gt="-" xok=ok
            if [ -n "$g" ]; then
                gt="$g"
                awk -v e="$e" -v g="$g" 'BEGIN{exit !(e < 0 || e > g)}' && {
                    fail "$name: $rk: crossover $pair measured $(fmt_x "$mb") predicted $(fmt_x "$pb"), beyond the guard (log2 $g)"; xok=FAIL; }
            elif [ "$MODE" != --guards ] && awk -v e="$e" 'BEGIN{exit !(e >= 0)}'; then
                fail "$name: $rk: crossover $pair has no guard (scripts/validate.sh build/collsim --guards)"; xok=FAIL
            fi
            [ "$mb" = 0 ] && [ "$pb" = 0 ] && [ "$xok" = ok ] && continue
            local et; et=$(awk -v e="$e" 'BEGIN{ if (e < 0) print "mismatch"; else printf "%.2f\n", e }')
            echo "| $set | $pair | $(fmt_x "$mb") | $(fmt_x "$pb") | $et | $gt | $xok |" >> "$OUT/xsection.md"
        done
    done < <(table 0 "$csv" | tail -n +2 | csv_fields)
}

# VALIDATE_SETS (space-separated .set paths) limits the run to those sets: for --check or
# --guards of one set; the doc needs every set.
sets=${VALIDATE_SETS:-$(ls validate/data/*/*.set 2>/dev/null | sort)}
if [ -n "${VALIDATE_SETS:-}" ] && [ "$MODE" = doc ]; then echo "VALIDATE_SETS: the doc needs every set (use --check or --guards)" >&2; exit 2; fi
: > "$OUT/summary.md"
: > "$OUT/sections.md"
for s in $sets; do
    dir=$(dirname "$s")
    name=$(key name "$s"); title=$(key title "$s"); topo=$(key topo "$s")
    fitline=$(key fit "$s"); plot=$(key plot "$s")
    guards=${s%.set}.guards
    if [ -z "$name" ] || [ -z "$topo" ] || [ -z "$fitline" ]; then
        echo "$s: needs name, topo and fit" >&2; exit 3
    fi
    fit=${fitline%% -- *}; fitargs=""
    [ "$fit" != "$fitline" ] && fitargs=${fitline#* -- }
    fitf=""; for f in $fit; do fitf="$fitf $dir/$f"; done
    calib=$OUT/$name.calib
    : > "$OUT/plots.md"
    : > "$OUT/xsection.md"
    if [ "$fit" = none ]; then
        # fit: none: no point-to-point data that calibrates the model; the topology's own values
        printf 'collsim-calib 1\n' > "$calib"
    else
        # shellcheck disable=SC2086
        "$COLLSIM" calibrate $fitf $fitargs --topo "$topo" -o "$calib" --format csv > "$OUT/$name.fit.csv" || {
            rc=$?; echo "$s: collsim calibrate failed" >&2; exit $rc; }
    fi
    usecal=$(key calib "$s")
    # calib: preset: the preset is the one source of the values; the fit only
    # checks that it still holds them (within the fit's own sd).
    if [ "$usecal" = preset ]; then
        while IFS=$'\t' read -r k st fv sd status; do
            # a key the fit ran to zero is one the data say is 0: the preset must say so too
            if [ "${status#kept at 0}" != "$status" ]; then
                awk -v b="$st" 'BEGIN{exit !(b != 0)}' &&
                    fail "$name: the preset's $k is $st, the set's fit runs it to 0: update the preset ($topo) or the set"
                continue
            fi
            [ "$status" = fitted ] || continue
            awk -v a="$fv" -v b="$st" -v s="$sd" 'BEGIN{d=a-b; d=(d<0?-d:d); exit !(d > s)}' &&
                fail "$name: the preset's $k is $st, the set's fit gives $fv +- $sd: update the preset ($topo) or the set"
        done < <(table 0 "$OUT/$name.fit.csv" | tail -n +2 | csv_fields)
    fi
    {
    echo
    echo "## $title"
    echo
    if [ "$fit" = none ]; then
    echo "Topology \`$topo\`; files in \`$dir/\`; guards in \`$guards\`. Not fitted (\`fit: none\`: no point-to-point data of the source calibrates the model; the note says why): every file is predicted with the topology's own values."
    else
    echo "Topology \`$topo\`; files in \`$dir/\`; guards in \`$guards\`. Fitted to$(for f in $fit; do printf ' `%s`' "$f"; done)${fitargs:+ (\`$fitargs\`)}:"
    echo "$(table 1 "$OUT/$name.fit.csv" | sed -n 2p | cut -d, -f1) points, rms residual $(table 1 "$OUT/$name.fit.csv" | sed -n 2p | cut -d, -f5)%."
    [ "$usecal" = preset ] && echo "Every file is predicted with the preset \`$topo\` itself, which carries this fit (\`calib: preset\`: each fitted key within one sd of the preset's value, or the check fails), so these errors are those of \`collsim coll --topo $topo\`."
    echo
    echo "| parameter | preset | fitted | sd | fitted - preset | status |"
    echo "|---|---:|---:|---:|---:|---|"
    table 0 "$OUT/$name.fit.csv" | tail -n +2 | csv_fields | while IFS=$'\t' read -r k st fv sd status; do
        if [ "$fv" = "-" ]; then diff="-"; else diff=$(awk -v a="$fv" -v b="$st" -v s="$sd" \
            'BEGIN{d=a-b; printf "%+.3g (%.1f sd)", d, (s>0? (d<0?-d:d)/s : 0)}'); fi
        echo "| \`$k\` | $st | $fv | $sd | $diff | $status |"
    done
    fi
    echo
    echo "| file | role | selection | points | median | worst | guard (median / worst) | target (median) | worst point | decisions (guard) | note |"
    echo "|---|---|---|---:|---:|---:|---|---|---|---|---|"
    } >> "$OUT/sections.md"
    idx=0
    # calibrate's own choices (--fix/--fit KEYS) are not validate's options
    [ "$fit" = none ] || run_check fit $idx "$fit" "$(sed -E 's/--fi[xt] [^ ]+ ?//g' <<< "$fitargs")"
    while IFS= read -r line; do
        idx=$((idx + 1))
        role=check; [ "${line%%:*}" = report ] && role="known gap"
        line=${line#*:}; line=${line#"${line%%[![:space:]]*}"}; files=${line%% -- *}; args=""
        [ "$files" != "$line" ] && args=${line#* -- }
        run_check "$role" $idx "$files" "$args"
    done < <(grep -E '^(check|report):' "$s")
    if [ -s "$OUT/xsection.md" ]; then
        { echo
          echo "Crossovers (first size where two algorithms swap; error: |log2 predicted / measured|):"
          echo
          echo "| set | pair | measured | predicted | error | guard | ok |"
          echo "|---|---|---:|---:|---:|---:|---|"
          cat "$OUT/xsection.md"; } >> "$OUT/sections.md"
    fi
    notes=$(sed -n 's/^note:[[:space:]]*//p' "$s")
    if [ -n "$notes" ]; then echo >> "$OUT/sections.md"; echo "$notes" >> "$OUT/sections.md"; fi
    cat "$OUT/plots.md" >> "$OUT/sections.md"
    # A guard that matches no row of today's run (a file renamed or dropped
    # from the set) would otherwise go unchecked without a word.
    if [ "$MODE" != --guards ] && [ -f "$guards" ]; then
        while IFS= read -r g; do
            fail "$name: guard '$g' matches no row (scripts/validate.sh build/collsim --guards)"
        done < <(awk -v n="$name" -v gf="$guards" '
            FILENAME != gf { split($0, f, "\t"); if (f[1] != n) next
                             if (FILENAME ~ /rows\.tsv$/) have["row " f[2]] = 1; else have["xover " f[4] " " f[2]] = 1; next }
            $1 == "row" { r = $0; sub(/^row +[^ ]+ +[^ ]+ +[^ ]+ +/, "", r); if (!(("row " r) in have)) print $0 }
            $1 == "xover" { r = $0; sub(/^xover +[^ ]+ +[^ ]+ +/, "", r); if (!(("xover " $3 " " r) in have)) print $0 }' \
            "$OUT/rows.tsv" "$OUT/xovers.tsv" "$guards")
    fi
    if [ "$MODE" = --guards ]; then
        { echo "# Regression guards of $s, written by scripts/validate.sh --guards from the errors"
          echo "# of $(git rev-parse --short HEAD 2>/dev/null || echo '?'): median and |worst| at 1.2x today's (at least +0.5 points),"
          echo "# decisions at least today's, crossovers within 1.2x today's |log2 pred/meas| + 0.25."
          echo "# row MEDIAN% WORST% DECISIONS ROLE FILE | ARGS ; xover LOG2 PAIR ROLE FILE | ARGS"
          awk -F'\t' -v n="$name" "$GUARD_PCT"' $1 == n { printf "row %.1f %.1f %s %s\n", g($3), g($4), $5, $2 }' "$OUT/rows.tsv"
          if [ -e "$OUT/xovers.tsv" ]; then
              awk -F'\t' -v n="$name" "$XERR"' $1 == n && $7 >= 0 { printf "xover %.2f %s %s\n", xg($7), $4, $2 }' "$OUT/xovers.tsv"
          fi
        } > "$guards.tmp" && mv "$guards.tmp" "$guards"
    fi
done

{
echo "# Validation"
echo
echo "Generated by \`make validate\` (\`scripts/validate.sh\`) from every set in \`validate/data/*/*.set\`;"
echo "do not edit by hand. Each set fits a calibration (\`collsim calibrate\`) to its point-to-point"
echo "files only, then predicts its held-out files with that calibration (\`collsim validate\`):"
echo "concurrent-flow patterns, other directions and sizes, collectives and replays are judged on"
echo "data the fit never saw. The fitted files are predicted too, marked *fit* (in-sample). A set"
echo "whose preset carries its fit (\`calib: preset\`, h200-2x) is predicted with the preset itself,"
echo "and fails if a fitted key leaves the preset's value by more than its sd."
echo
echo "- error of a point: predicted / measured - 1 (times; for an aggregate row, the case's total"
echo "  bytes over the time of its slowest flow);"
echo "- median and worst: of |error| and of the signed error of largest magnitude, per file;"
echo "- decisions: at each size measured with several algorithms, whether the model names the same"
echo "  fastest one (agreeing sizes / sizes); crossovers: where two algorithms swap, measured vs"
echo "  predicted (interpolated in log size);"
echo "- **guard** (a regression guard, \`validate/data/*/NAME.guards\`, written by"
echo "  \`scripts/validate.sh build/collsim --guards\` from the errors of the day it was set): median"
echo "  and |worst| at about 1.2x those errors (at least 0.5 points above them), decisions no fewer,"
echo "  each algorithm pair's first crossover within 1.2x its error (|log2 predicted / measured|)"
echo "  + 0.25, and a pair that crosses in neither measurement nor prediction must keep not crossing."
echo "  \`make validate\` and \`make check\` fail when a row breaks its guard, has none, or has no"
echo "  comparable points. A guard says *no worse than the day it was set*, not *right*;"
echo "- **target**: the accuracy the model aims at, median error 10% for point-to-point files"
echo "  (p2p, flows, host, launch) and 25% for collectives and replays; shown, not enforced;"
echo "- role: *fit* (in-sample), *check* (held out), *known gap* (shown and guarded, a gap the"
echo "  set's notes explain); selection: the \`--patterns\` / \`--sizes\` given to calibrate or"
echo "  validate (held-out sizes and patterns of the same files). A preset value read from a file"
echo "  makes that file in-sample: such files are known gaps, not checks."
echo "- NCCL collectives measured by hwcheck are predicted with the algorithm, protocol and channels"
echo "  the measurement names (so this checks the simulated schedule, not NCCL's choice), and, as they"
echo "  are timed back to back, an iteration costs at least one host issue (a launch, or a graph node"
echo "  inside a CUDA graph)."
echo
echo "## Summary"
echo
echo "| set | file | role | points | median | worst | guard (median / worst) | target (median) | decisions | ok |"
echo "|---|---|---|---:|---:|---:|---|---|---|---|"
[ -z "$sets" ] && echo "| (no sets in validate/data) | | | | | | | | | |"
cat "$OUT/summary.md"
echo
echo "## Largest errors"
echo
echo "The ten rows of largest |worst| error, fitted, checked and known gaps alike, with the point:"
echo
echo "| set | file | role | worst | at | median |"
echo "|---|---|---|---:|---|---:|"
[ -e "$OUT/rows.tsv" ] && awk -F'\t' '{ w = $4; a = (w < 0 ? -w : w); r = $2; sub(/ .*/, "", r); if ($2 ~ /^known gap/) r = "known gap";
    printf "%.4f\t| %s | %s | %s | %+.1f%% | %s | %.1f%% |\n", a, $1, $6, r, w, $7, $3 }' "$OUT/rows.tsv" | sort -t$'\t' -k1,1 -g -r | head -10 | cut -f2
echo
echo "## Decisions per set"
echo
echo "Rows measured with several algorithms at the same sizes: sizes where the model names the measured"
echo "fastest, against the guard."
echo
echo "| set | row | decisions | guard |"
echo "|---|---|---|---|"
[ -e "$OUT/rows.tsv" ] && awk -F'\t' '$5 != "-" { split($8, g, "/"); print "| " $1 " | " $6 " | " $5 " | " ($8 == "-" || $8 == "" ? "none" : ">= " g[1]) " |" }' "$OUT/rows.tsv"
echo
echo "## Mutations"
echo
if [ -f docs/validation/mutate.md ]; then cat docs/validation/mutate.md; else echo "(none recorded: run \`make mutate\`)"; fi
echo
} > "$OUT/head.md"
cat "$OUT/head.md" "$OUT/sections.md" > "$DOC.tmp" && mv "$DOC.tmp" "$DOC"
fail=0
[ -e "$OUT/failed" ] && fail=1
echo "validate: $(echo "$sets" | grep -c . ) set(s), $DOC written$( [ $fail = 1 ] && echo ", $(wc -l < "$OUT/failed") GUARD(S) BROKEN")"
[ "$MODE" = --guards ] && echo "validate: guards written: $(for s in $sets; do printf '%s ' "${s%.set}.guards"; done)"
exit $fail
