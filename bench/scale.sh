#!/bin/sh
# bench/scale.sh -- issue 13 item 7: every strategy on 1M samples (tulu3-longcite
# lengths, seed 1) for 1,048,576 GPUs, planned or refused, and the same manifest on 8
# GPUs; then verify, metrics and simulate on what was planned at 1M GPUs.  Each line:
# exit status, wall seconds, CPU seconds (user + sys: the stable figure on a shared
# machine), peak MB, and the first line of a refusal.  Run by bench/run.sh (make bench);
# alone: BUILD=build sh bench/scale.sh.  BENCH_SCALE_TIMEOUT caps one command (default
# 300 s; exit 124 = cut off); BENCH_SCALE_CONFIGS and BENCH_SCALE_ALGOS pick a subset
# of the configurations and pack algorithms.  Configurations:
#   flat    cluster.gpus=1048576, the defaults otherwise (Llama-3.1-8B, dp = 1048576,
#           2M tokens per global batch): strategies that plan a global batch per
#           iteration must refuse it (2,521 samples for 1M ranks)
#   shaped  cluster.gpus=1048576, tp 4 x pp 16 x Ulysses 8 (dp 2048), 16M tokens per
#           global batch (8K per data-parallel rank)
#   8gpus   cluster.gpus=8 (dp 8), the defaults otherwise
set -eu
B=${BUILD:-build}
V="$B/vlplan"
T=${BENCH_SCALE_TIMEOUT:-300}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/vlplan-scale.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
M="$tmp/m1m.txt"
"$V" gen --dist tulu3-longcite -n 1000000 --seed 1 -o "$M"

flat="--set cluster.gpus=1048576 --set training.oversize=drop"
shaped="$flat --set training.tp=4 --set training.pp=16 --set training.sp=8 \
--set training.global_tokens=16777216"
gpus8="--set cluster.gpus=8 --set training.oversize=drop"

# run LABEL OUTFILE CMD...: one line for CMD (OUTFILE kept only when it succeeded)
run() {
    label=$1 out=$2
    shift 2
    rc=0
    /usr/bin/time -f "%e %U %S %M" -o "$tmp/time" timeout "$T" "$@" >/dev/null \
        2>"$tmp/err" || rc=$?
    [ "$rc" = 0 ] || rm -f "$out"
    awk -v l="$label" -v rc="$rc" -v msg="$(grep -m1 -v '^Command' "$tmp/err" | cut -c1-240)" \
        'END { printf "  %-28s exit %3s %8.2f s wall %7.2f s cpu %6.0f MB  %s\n",
               l, rc, $1, $2 + $3, $4 / 1024, msg }' "$tmp/time"
}

strategies="random sorted verl hbp chunkflow skrull hydraulis slimpack mcore_cp"
algos=${BENCH_SCALE_ALGOS:-"ffd bfd ffs bfs isf spfhp wfd nf"}

for cfg in ${BENCH_SCALE_CONFIGS:-flat shaped gpus8}; do
    eval "args=\$$cfg"
    echo "## plan, 1M samples, $cfg: $args"
    for s in $strategies; do
        # shellcheck disable=SC2086
        run "$s" "$tmp/$cfg-$s.jsonl" "$V" plan -q -s "$s" $args -o "$tmp/$cfg-$s.jsonl" "$M"
    done
    for a in $algos; do
        for sc in epoch batch; do
            # shellcheck disable=SC2086
            run "pack algo=$a scope=$sc" "$tmp/$cfg-pack-$a-$sc.jsonl" "$V" plan -q -s pack \
                --set pack.algo="$a" --set pack.scope="$sc" $args \
                -o "$tmp/$cfg-pack-$a-$sc.jsonl" "$M"
        done
    done
    [ "$cfg" = gpus8 ] && continue
    echo "## verify, metrics, simulate of the $cfg plans made (pack: ffd only)"
    for p in "$tmp/$cfg"-*.jsonl; do
        [ -e "$p" ] || continue
        case $p in *-pack-ffd-*) ;; *-pack-*) continue ;; esac
        n=$(basename "$p" .jsonl)
        run "verify $n" /dev/null "$V" verify -q "$p" "$M"
        run "metrics $n" /dev/null "$V" metrics "$p"
        run "simulate $n" /dev/null "$V" simulate "$p"
        rm -f "$p"
    done
done
