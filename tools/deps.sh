#!/bin/sh
# tools/deps.sh -- install the Debian packages a make target needs, only those missing.
#
#   sh tools/deps.sh GROUP...
#
# Each group is what one kind of target needs, so `make` and `make demo` install only
# the build (and run) dependencies and the test tools come with the test targets:
#   build    compile and run vlplan (make, make demo, make bench)
#   lint     mandoc and clang-format, for make lint and make fmt
#   test     the Criterion suite and the Python package's tests (make test*)
#   clang    clang and its sanitizer runtime (make test-clang*, make fuzz*)
#   cmake    CMake, for make test-cmake (the CMake build and ctest)
#   browser  Debian's Chromium, for the HTML report's browser test
# Every install says on one line what it installs and for which group.  With no group,
# `build`.
set -eu

group_pkgs() {
    case "$1" in
    build) echo "gcc make pkg-config libyaml-dev libjansson-dev libglpk-dev libzstd-dev" ;;
    lint) echo "mandoc python3 clang-format" ;;
    test) echo "libcriterion-dev mandoc zstd python3 python3-pytest python3-torch" ;;
    clang) echo "clang libclang-rt-14-dev" ;;
    cmake) echo "cmake" ;;
    browser) echo "chromium" ;;
    *) echo "deps.sh: unknown group '$1' (build, lint, test, clang, cmake, browser)" >&2
       return 64 ;;
    esac
}

group_why() {
    case "$1" in
    build) echo "to build vlplan" ;;
    lint) echo "to check the man page and the formatting" ;;
    test) echo "to run the test suite" ;;
    clang) echo "for the clang and sanitizer builds" ;;
    cmake) echo "for the CMake build" ;;
    browser) echo "to test the HTML report in a browser" ;;
    esac
}

missing_of() {
    out=""
    for p in $1; do
        s=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
        case "$s" in
        *"install ok installed"*) ;;
        *) case " $all_missing $out " in *" $p "*) ;; *) out="$out $p" ;; esac ;;
        esac
    done
    echo "$out"
}

[ $# -gt 0 ] || set -- build
all_missing=""
for g in "$@"; do
    pkgs=$(group_pkgs "$g") || exit 64
    m=$(missing_of "$pkgs")
    [ -z "$m" ] && continue
    echo "deps: installing$m ($(group_why "$g"))" >&2
    all_missing="$all_missing$m"
done
[ -z "$all_missing" ] && exit 0
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
# shellcheck disable=SC2086
$sudo apt-get install -y -qq --no-install-recommends $all_missing >/dev/null
