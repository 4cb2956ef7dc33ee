#!/bin/bash
# The time and memory targets of issue 22, measured: each command once as a
# whole process under /usr/bin/time (wall seconds, CPU seconds, peak RSS),
# against its target. Prints one markdown table. Part of `make bench`.
#
# usage: scripts/bench-targets.sh BUILD
set -u
BUILD=${1:?usage: scripts/bench-targets.sh BUILD}
CS=$BUILD/collsim
[ -x "$CS" ] || { echo "bench-targets: needs $CS" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "bench-targets: needs /usr/bin/time (GNU time)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
echo "| command | target | wall s | CPU s | peak MiB | met |"
echo "|---|---|---:|---:|---:|---|"
# name|target seconds (0: none)|target MiB (0: none)|arguments
while IFS='|' read -r target_s target_mib args; do
    # shellcheck disable=SC2086
    if ! /usr/bin/time -f '%e %U %S %M' -o "$tmp/t" "$CS" $args >/dev/null 2>"$tmp/err"; then
        echo "bench-targets: failed: collsim $args" >&2
        status=1
        continue
    fi
    read -r wall user sys kb <"$tmp/t"
    awk -v w="$wall" -v u="$user" -v s="$sys" -v kb="$kb" -v ts="$target_s" -v tm="$target_mib" \
        -v a="$args" 'BEGIN {
        mib = kb / 1024; cpu = u + s; met = 1; t = ""
        if (ts > 0) { t = "< " ts " s"; if (cpu >= ts) met = 0 }
        if (tm > 0) { t = t (t != "" ? ", " : "") "< " tm " MiB"; if (mib >= tm) met = 0 }
        printf "| `collsim %s` | %s | %.2f | %.2f | %.1f | %s |\n", a, t, w, cpu, mib, met ? "yes" : "no"
    }'
done <<'LIST'
0.3|64|coll allreduce --topo pcie-1024 -g 1024 --algo ring -b 1M -e 1M --env NCCL_P2P_LEVEL=SYS
0.3|64|coll allreduce --topo pcie-1024 -g 1024 --algo ring -b 1M -e 1M
5|256|coll allreduce --topo pcie-4096 -g 4096 --algo ring -b 1M -e 1M --env NCCL_P2P_LEVEL=SYS
5|256|coll allreduce --topo pcie-4096 -g 4096 --algo ring -b 1M -e 1M
0|512|coll allreduce --topo nvswitch-4096 -g 4096 --algo oneshot-push -b 1M -e 1M
1|0|flows --pattern all-to-all --topo nvswitch-64
1|0|flows --pattern all-to-all --topo pcie-64
LIST
echo
echo "CPU seconds (user + system) are compared with the time targets, so that the machine's load"
echo "does not decide them; wall seconds are shown beside them."
exit $status
