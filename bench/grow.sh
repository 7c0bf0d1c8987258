#!/bin/sh
# bench/grow.sh -- how planning cost grows with the sample count (the guide: "1M, 10M
# samples -- anything superlinear is a bug").  One manifest of 10M tulu3-longcite
# lengths (seed 1), its first 1M and 3M lines, each strategy planned on each with the
# defaults (32 GPUs) and training.oversize=drop; one line per run: user and sys CPU
# seconds (the stable figures on a shared machine), peak MB, plan MB.  Not part of
# `make bench` (10M samples take minutes); alone: BUILD=build sh bench/grow.sh.
# GROW_SIZES (default "1000000 3000000 10000000") and GROW_STRATEGIES pick a subset.
# Instruction counts (what separates work from cache misses) come from the same
# commands under `valgrind --tool=callgrind` at 300K, 1M and 3M (see
# bench/history/2026-11-21_to_2026-11-28.md).
set -eu
B=${BUILD:-build}
V="$B/vlplan"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/vlplan-grow.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
sizes=${GROW_SIZES:-"1000000 3000000 10000000"}
max=0
for n in $sizes; do [ "$n" -gt "$max" ] && max=$n; done
"$V" gen --dist tulu3-longcite -n "$max" --seed 1 -o "$tmp/all.txt"
for s in ${GROW_STRATEGIES:-random sorted pack verl hbp chunkflow skrull mcore_cp}; do
    for n in $sizes; do
        head -n "$n" "$tmp/all.txt" >"$tmp/m.txt"
        rm -f "$tmp/p.jsonl"
        /usr/bin/time -f "%U %S %M" -o "$tmp/time" "$V" plan -q -s "$s" \
            --set training.oversize=drop -o "$tmp/p.jsonl" "$tmp/m.txt"
        awk -v s="$s" -v n="$n" -v mb="$(wc -c <"$tmp/p.jsonl")" \
            'END { printf "  %-10s %9d samples %7.2f s user %6.2f s sys %6.0f MB peak %5.0f MB plan\n",
                   s, n, $1, $2, $3 / 1024, mb / 1048576 }' "$tmp/time"
    done
done
