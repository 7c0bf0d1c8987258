#!/bin/sh
# bench/run.sh -- the benchmarks `make bench` runs, component by component.  Numbers go
# to stdout; the current figures of bench/RESULTS.md are written by bench/results.py
# (`make results`), dated older ones are in bench/history/.  BENCH_QUICK=1 skips the 10M
# sizes.  Inputs are generated into a temporary directory that is removed at the end.
set -eu
B=${BUILD:-build}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/vlplan-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
sizes="1000000 10000000"
[ "${BENCH_QUICK:-0}" = 1 ] && sizes="1000000"

echo "# vlplan bench, $(date -u +%Y-%m-%d), $(nproc) cores, $(uname -m)"
echo "## ingest (text, CSV, JSONL, .zst; 1M and 10M)"
"$B/bench/bench_ingest" --gen "$tmp"
rm -rf "${tmp:?}"/*
for n in $sizes; do
    echo "## packers, N=$n, lognormal lengths, cap 4096"
    "$B/bench/bench_pack" -n "$n" -r 3
done
for n in $sizes; do
    echo "## every strategy end to end (vl_run_plan incl. self-verify), N=$n, lmsys lengths"
    "$B/bench/bench_plan" -n "$n"
    "$B/bench/bench_plan" -n "$n" -s pack --set pack.algo=bfd
    "$B/bench/bench_plan" -n "$n" -s pack --set pack.algo=isf
done
BUILD=$B sh bench/io.sh
echo "## plan files written and read back in one process, every strategy"
for n in $sizes; do
    "$B/bench/bench_read" -n "$n" -d lmsys -s random,sorted,pack,hbp,chunkflow,skrull,hydraulis,slimpack,verl,mcore_cp \
        --set training.oversize=drop
done
echo "## simulator"
"$B/bench/bench_sim"
echo "## chunkflow (paper setting)"
"$B/bench/bench_chunkflow"
echo "## each paper's own comparison through vlplan compare"
BUILD=$B sh bench/papers.sh
echo "## skrull (paper setting, planning speed)"
"$B/bench/bench_skrull"
echo "## mcore_cp (Megatron-Core hybrid CP) beside Skrull on its paper setting, planning speed"
"$B/bench/bench_mcore_cp"
if [ -x "$B/bench/bench_hbp" ]; then
    echo "## hbp (paper setting)"
    "$B/bench/bench_hbp"
fi
echo "## hydraulis (paper setting, planner speed)"
"$B/bench/bench_hydraulis"
echo "## slimpack (planning speed; paper setting against best-fit packing)"
"$B/bench/bench_slimpack" speed
"$B/bench/bench_slimpack" paper 4096
R=${VLPLAN_REAL_DATA:-../shared/data/real}
if [ -d "$R" ]; then
    echo "## baselines on the real traces in $R (bins, fill, balance)"
    "$B/bench/bench_baselines" "$R/azure_llm_inference_2023_conv.csv" 32768 32
    "$B/bench/bench_baselines" "$R/azure_llm_inference_2023_conv.csv" 8192 32
    "$B/bench/bench_baselines" "$R/azure_llm_inference_2023_code.csv" 32768 32
    "$B/bench/bench_baselines" "$R/azure_llm_inference_2023_code.csv" 8192 32
    "$B/bench/bench_baselines" "$R/mooncake_fast25_conversation_lengths.csv" 131072 8
    "$B/bench/bench_baselines" "$R/mooncake_fast25_synthetic_lengths.csv" 131072 8
fi
echo "## scale: 1M samples on 1,048,576 and on 8 GPUs, every strategy (issue 13 item 7)"
BUILD=$B sh bench/scale.sh
