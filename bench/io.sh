#!/bin/sh
# bench/io.sh -- reading and writing at scale, as whole commands beside the floors a C
# tool must beat (issue "read as fast as we write"): manifest ingest (text, JSONL),
# plan writing, and plan reading by metrics, verify and simulate, with wall time and
# peak memory; then the floors on the same files -- `wc -l`, `zstd -d`, and Python's
# json.loads over every line -- and the ratios.  Run by bench/run.sh (make bench) for
# 1M and 10M samples (BENCH_QUICK=1: 1M only; BENCH_IO_SIZES overrides).
set -eu
B=${BUILD:-build}
V="$B/vlplan"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/vlplan-io.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
sizes=${BENCH_IO_SIZES:-"1000000 10000000"}
[ "${BENCH_QUICK:-0}" = 1 ] && sizes=${BENCH_IO_SIZES:-1000000}
jobs=$(nproc)

# run LABEL CMD...: wall seconds and peak MB of CMD into $secs/$mb, one line printed
run() {
    label=$1
    shift
    /usr/bin/time -f "%e %M" -o "$tmp/time" "$@" >/dev/null 2>"$tmp/err" ||
        { cat "$tmp/err" >&2; exit 1; }
    secs=$(cut -d' ' -f1 "$tmp/time")
    mb=$(awk '{printf "%.0f", $2 / 1024}' "$tmp/time")
    printf '  %-34s %8.2f s %7s MB\n' "$label" "$secs" "$mb"
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }

pyloads='import json, sys
n = 0
with open(sys.argv[1], "rb") as f:
    for line in f:
        json.loads(line)
        n += 1
'

for n in $sizes; do
    echo "## I/O at N=$n (lmsys lengths), $jobs cores"
    "$V" gen --dist lmsys -n "$n" --seed 1 -o "$tmp/m.txt"
    "$V" gen --dist lmsys -n "$n" --seed 1 -o "$tmp/m.jsonl"
    run "ingest text (stats)" "$V" stats "$tmp/m.txt"
    t_txt=$secs
    run "ingest JSONL (stats)" "$V" stats "$tmp/m.jsonl"
    t_jsonl=$secs
    run "floor: wc -l manifest.jsonl" wc -l "$tmp/m.jsonl"
    run "write: plan -s random" "$V" plan -q -s random --set training.oversize=drop \
        -o "$tmp/p.jsonl" "$tmp/m.txt"
    t_write=$secs
    run "write: plan -s random -o .zst" "$V" plan -q -s random --set training.oversize=drop \
        -o "$tmp/p.jsonl.zst" "$tmp/m.txt"
    bytes=$(wc -c <"$tmp/p.jsonl")
    run "read: metrics -j 1" "$V" metrics -j 1 "$tmp/p.jsonl"
    t_m1=$secs
    run "read: metrics -j $jobs" "$V" metrics -j "$jobs" "$tmp/p.jsonl"
    t_mj=$secs
    run "read: metrics -j 1 (.zst)" "$V" metrics -j 1 "$tmp/p.jsonl.zst"
    run "read: verify -j 1" "$V" verify -q -j 1 "$tmp/p.jsonl" "$tmp/m.txt"
    t_v1=$secs
    run "read: verify -j $jobs" "$V" verify -q -j "$jobs" "$tmp/p.jsonl" "$tmp/m.txt"
    run "read: simulate -j $jobs --format json" "$V" simulate -j "$jobs" --format json "$tmp/p.jsonl"
    run "floor: wc -l plan" wc -l "$tmp/p.jsonl"
    t_wc=$secs
    run "floor: zstd -d plan.zst" zstd -q -d -c "$tmp/p.jsonl.zst"
    run "floor: python3 json.loads per line" python3 -c "$pyloads" "$tmp/p.jsonl"
    t_py=$secs
    echo "  plan file $(awk -v b="$bytes" 'BEGIN { printf "%.0f", b / 1e6 }') MB;" \
         "ingest $(awk -v n="$n" -v t="$t_txt" 'BEGIN { printf "%.1f", (t > 0 ? n / t / 1e6 : 0) }')M samples/s text," \
         "$(awk -v n="$n" -v t="$t_jsonl" 'BEGIN { printf "%.1f", (t > 0 ? n / t / 1e6 : 0) }')M/s JSONL"
    echo "  ratios: metrics -j 1 / write $(ratio "$t_m1" "$t_write"), metrics -j $jobs / write" \
         "$(ratio "$t_mj" "$t_write"), verify -j 1 / write $(ratio "$t_v1" "$t_write"), metrics -j 1 /" \
         "python $(ratio "$t_m1" "$t_py"), metrics -j 1 / wc -l $(ratio "$t_m1" "$t_wc")"
    rm -f "$tmp"/*
done
