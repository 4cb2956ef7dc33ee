#!/bin/sh
# Install the Debian packages collsim needs, if missing and if we are root.
# With --fuzz, also what `make fuzz` needs.
set -e
PKGS="build-essential libgsl-dev zlib1g-dev libyajl-dev libcmocka-dev libxml2-dev libopenmpi-dev openmpi-bin librsvg2-bin"
# `make fuzz` (not part of make check) needs clang and its libFuzzer runtime:
# scripts/install-deps.sh --fuzz
[ "${1:-}" = --fuzz ] && PKGS="$PKGS clang libclang-rt-dev"
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
    echo "missing Debian packages:$missing (run as root, or: sudo apt-get install$missing)" >&2
    exit 4
fi
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing
