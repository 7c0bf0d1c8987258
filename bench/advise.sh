#!/bin/sh
# bench/advise.sh [N] -- `vlplan advise` over every strategy on N samples (default 1M,
# lmsys lengths) and 64 GPUs of the default model, one core: wall and CPU seconds, and
# the search's stage counts (issue target: 1M samples, 64 GPUs, all strategies <= 60 s).
set -eu
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
n=${1:-1000000}
dir=$(mktemp -d "${TMPDIR:-/tmp}/vlplan-advise.XXXXXX")
trap 'rm -rf "$dir"' EXIT
"$BUILD/vlplan" gen --dist lmsys -n "$n" --seed 1 -o "$dir/m.jsonl"
start=$(date +%s.%N)
/usr/bin/time -f "advise: %e s wall, %U s user, %S s sys, %M KiB peak" \
    taskset -c 0 "$BUILD/vlplan" advise -q --set cluster.gpus=64 \
    --set training.oversize=drop --export-json "$dir/a.json" "$dir/m.jsonl" >"$dir/out" 2>"$dir/err" || {
    cat "$dir/err" >&2; exit 1; }
cat "$dir/err"
head -n 3 "$dir/out"
sed -n '5,8p' "$dir/out"
echo "advise: $n samples, 64 GPUs, started $(date -d @"${start%.*}" -u +%H:%M:%S)"
