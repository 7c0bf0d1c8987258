#!/bin/sh
# tools/deps.sh -- install the Debian packages vlplan needs, only those missing.
# Used by `make deps` (every build target depends on it) and by .ci/run.
set -eu
pkgs="gcc make pkg-config libyaml-dev libjansson-dev libglpk-dev libzstd-dev zstd
libcriterion-dev clang libclang-rt-14-dev mandoc valgrind python3 python3-pytest python3-torch"
missing=""
for p in $pkgs; do
    s=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
    case "$s" in
    *"install ok installed"*) ;;
    *) missing="$missing $p" ;;
    esac
done
[ -z "$missing" ] && exit 0
echo "deps: installing$missing" >&2
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
# shellcheck disable=SC2086
$sudo apt-get install -y -qq --no-install-recommends $missing >/dev/null
