#!/bin/bash
# Behaviour tests as data (tests/cli/*.test). A case is:
#   $ command line          (run by bash -o pipefail from the repo root, so a
#                            failing collsim inside a pipe fails the case;
#                            collsim and hwcheck name the binaries under test,
#                            pngstat the PNG checker, $TMP a scratch dir)
#   ? N                     expected exit code (default 0; of a pipe, its last
#                            failing command's)
#   > text                  a line of stdout must contain text (in this order)
#   ! text                  stderr must contain text
#   = path                  after the command, this file must exist
#   - path                  after the command, this file must not exist
# Cases are separated by blank lines; lines starting with '#' are comments.
set -u
COLLSIM=${COLLSIM:-build/collsim}
HWCHECK=${HWCHECK:-}
PNGSTAT=${PNGSTAT:-build/tools/pngstat}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
export TMP
collsim() { "$ROOT/$COLLSIM" "$@"; }
hwcheck() { if [ -z "$HWCHECK" ]; then echo "hwcheck not built" >&2; return 99; fi; "$ROOT/$HWCHECK" "$@"; }
pngstat() { "$ROOT/$PNGSTAT" "$@"; }
export -f collsim hwcheck pngstat
export ROOT=$PWD COLLSIM HWCHECK PNGSTAT
pass=0 fail=0

run_case() {
    local file=$1 line=$2 cmd=$3 code=$4
    shift 4
    local out err rc
    out="$TMP/out" err="$TMP/err"
    if [[ "$cmd" == *hwcheck* && -z "$HWCHECK" ]]; then return; fi
    (cd "$ROOT" && bash -o pipefail -c "$cmd") </dev/null >"$out" 2>"$err"
    rc=$?
    local ok=1 why=""
    [ "$rc" = "$code" ] || { ok=0; why="exit $rc, expected $code"; }
    local pos=0 exp
    for exp in "${EXPECT_OUT[@]+"${EXPECT_OUT[@]}"}"; do
        local n
        n=$(tail -n +$((pos + 1)) "$out" | grep -n -F -m1 -- "$exp" | cut -d: -f1)
        if [ -z "$n" ]; then ok=0; why="$why; stdout lacks '$exp'"; break; fi
        pos=$((pos + n))
    done
    for exp in "${EXPECT_ERR[@]+"${EXPECT_ERR[@]}"}"; do
        grep -q -F -- "$exp" "$err" || { ok=0; why="$why; stderr lacks '$exp'"; }
    done
    for exp in "${EXIST[@]+"${EXIST[@]}"}"; do
        [ -e "$(eval echo "$exp")" ] || { ok=0; why="$why; $exp missing"; }
    done
    for exp in "${NOEXIST[@]+"${NOEXIST[@]}"}"; do
        # shellcheck disable=SC2086
        if compgen -G "$(eval echo "$exp")" >/dev/null; then ok=0; why="$why; $exp exists"; fi
    done
    if [ $ok = 1 ]; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        echo "FAIL $file:$line: $cmd"
        echo "     $why"
        sed 's/^/     out| /' "$out" | head -20
        sed 's/^/     err| /' "$err" | head -10
    fi
}

for f in "$@"; do
    cmd="" code=0 start=0 n=0
    EXPECT_OUT=() EXPECT_ERR=() EXIST=() NOEXIST=()
    flush() {
        if [ -n "$cmd" ]; then run_case "$f" "$start" "$cmd" "$code"; fi
        cmd="" code=0 EXPECT_OUT=() EXPECT_ERR=() EXIST=() NOEXIST=()
    }
    while IFS= read -r l || [ -n "$l" ]; do
        n=$((n + 1))
        case "$l" in
        '#'*) ;;
        '$ '*) flush; cmd=${l#\$ }; start=$n ;;
        '? '*) code=${l#\? } ;;
        '> '*) EXPECT_OUT+=("${l#> }") ;;
        '! '*) EXPECT_ERR+=("${l#! }") ;;
        '= '*) EXIST+=("${l#= }") ;;
        '- '*) NOEXIST+=("${l#- }") ;;
        '') flush ;;
        *) echo "$f:$n: bad test line: $l"; exit 2 ;;
        esac
    done <"$f"
    flush
done
echo "cli tests: $pass passed, $fail failed"
[ "$fail" = 0 ]
