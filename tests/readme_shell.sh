#!/bin/sh
# tests/readme_shell.sh README VLPLAN -- run every shell example of the README, as
# written, in a scratch directory where build/vlplan is VLPLAN, on the data the
# examples make themselves.  A block is a run of lines indented by four spaces outside
# ``` fences; blocks that are not commands (make, the layout tree) or that need a GPU
# (--device cuda) are listed as skipped.  Exit 0 when every block ran and exited 0.
set -eu
readme=$1
bin=$2
case "$readme" in /*) ;; *) readme="$PWD/$readme" ;; esac
case "$bin" in /*) ;; *) bin="$PWD/$bin" ;; esac
dir=$(mktemp -d "${TMPDIR:-/tmp}/vlplan-readme.XXXXXX")
trap 'rm -rf "$dir"' EXIT
mkdir "$dir/build" "$dir/blocks"
ln -s "$bin" "$dir/build/vlplan"
# one file per block, blocks/NNN.sh, in README order
awk -v out="$dir/blocks" '
/^```/ { fence = !fence; inblock = 0; next }
fence { next }
/^    / { if (!inblock) { n++; inblock = 1 } sub(/^    /, ""); print > sprintf("%s/%03d.sh", out, n); next }
{ inblock = 0 }
' "$readme"
ran=0
skipped=0
for b in "$dir"/blocks/*.sh; do
    first=$(head -n 1 "$b")
    if grep -q -- '--device cuda' "$b"; then
        echo "readme: skipped (needs a GPU): $first"
        skipped=$((skipped + 1))
        continue
    fi
    case "$first" in
    build/vlplan* | zstdcat* | split* | zstd*) ;;
    *) echo "readme: skipped (not a command to run here): $first"; skipped=$((skipped + 1)); continue ;;
    esac
    if ! (cd "$dir" && sh -e "$b") >"$dir/out" 2>&1; then
        echo "readme: this block failed:" >&2
        cat "$b" >&2
        tail -n 20 "$dir/out" >&2
        exit 1
    fi
    ran=$((ran + 1))
done
echo "readme: $ran blocks ran, $skipped skipped"
[ "$ran" -gt 0 ]
