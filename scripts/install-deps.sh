#!/bin/sh
# The Debian packages collsim needs. `make deps` runs it: it installs what is
# missing when run as root (else it names the apt-get command, exit 4).
#   scripts/install-deps.sh           install the missing ones
#   scripts/install-deps.sh --fuzz    also what `make fuzz` needs (clang, libFuzzer)
#   scripts/install-deps.sh --missing print the missing required ones, one line (the
#                                     Makefile's set-up check); nothing where dpkg is absent
# EXTRA_PKGS="a b" adds packages to the required list (to try the check itself).
set -e
# Required to build and to run `make check`: compilers, GSL, zlib, yajl, cmocka,
# libxml2; rsvg-convert and libpng for the tests that render plots to PNG.
REQUIRED="build-essential libgsl-dev zlib1g-dev libyajl-dev libcmocka-dev libxml2-dev librsvg2-bin libpng-dev ${EXTRA_PKGS:-}"
# Optional: Open MPI for `collsim sweep` across machines (built in when mpicc is found).
OPTIONAL="libopenmpi-dev openmpi-bin"
missing_of() {
    m=""
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || m="$m $p"
    done
    echo "$m"
}
if [ "${1:-}" = --missing ]; then
    command -v dpkg-query >/dev/null 2>&1 || exit 0
    m=$(missing_of $REQUIRED)
    echo ${m}
    exit 0
fi
PKGS="$REQUIRED $OPTIONAL"
# `make fuzz` (not part of make check) needs clang and its libFuzzer runtime.
[ "${1:-}" = --fuzz ] && PKGS="$PKGS clang libclang-rt-dev"
missing=$(missing_of $PKGS)
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
    echo "missing Debian packages:$missing (run as root, or: sudo apt-get install$missing)" >&2
    exit 4
fi
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing
