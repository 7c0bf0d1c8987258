#!/bin/sh
# bench/grow_iter.sh -- `pack` on one iteration that grows from 100K to 1M samples (issue
# 29 item 4: the dealing and the sample move/swap refinement near-linear in an
# iteration's samples; 1M samples in one iteration within 2x pack.deal=packs).  Eight
# GPUs (the dealing of samples needs two ranks or more: on one GPU both dealings are the
# same packing), training.global_batch = every sample, no token budget, a 128K context
# (packing a whole data set, as peers' packers are compared, and as bench/results.py
# section 4 runs it), training.oversize=drop and --allow-oom (a rank holds 1/8 of it); the Mooncake
# conversation input lengths tiled to each size where VLPLAN_REAL_DATA has them, else
# tulu3-longcite lengths (seed 1).  One line per run: user and sys CPU seconds (the
# stable figures on a shared machine), wall, and samples/packs as the ratio of user time.
# Not part of `make bench`; alone: BUILD=build sh bench/grow_iter.sh.
# GROW_SIZES (default "100000 200000 500000 1000000") picks the sizes.
set -eu
B=${BUILD:-build}
V="$B/vlplan"
R=${VLPLAN_REAL_DATA:-../shared/data/real}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/vlplan-grow-iter.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
sizes=${GROW_SIZES:-"100000 200000 500000 1000000"}
max=0
for n in $sizes; do [ "$n" -gt "$max" ] && max=$n; done
src="$R/mooncake_fast25_conversation_lengths.csv"
if [ -f "$src" ]; then
    awk -F, -v max="$max" 'NR > 1 { l[k++] = $1 }
        END { for (i = 0; i < max; i++) print l[i % k] }' "$src" >"$tmp/all.txt"
    echo "# one iteration, 8 GPUs: mooncake conversation input lengths, tiled"
else
    "$V" gen --dist tulu3-longcite -n "$max" --seed 1 -o "$tmp/all.txt"
    echo "# one iteration, 8 GPUs: tulu3-longcite lengths, seed 1"
fi
for n in $sizes; do
    head -n "$n" "$tmp/all.txt" >"$tmp/m.txt"
    for d in samples packs; do
        /usr/bin/time -f "%U %S %e" -o "$tmp/time.$d" "$V" plan -q -s pack --allow-oom \
            --set cluster.gpus=8 --set training.global_batch="$n" \
            --set training.global_tokens=0 --set training.max_seq_len=131072 \
            --set training.oversize=drop --set pack.deal="$d" -o "$tmp/p.jsonl" "$tmp/m.txt" \
            2>/dev/null
    done
    awk -v n="$n" 'FNR == 1 { u[++f] = $1; s[f] = $2; e[f] = $3 }
        END {
            fmt = "  %9d samples  deal=samples %6.2f s user %5.2f s sys %6.2f s wall"
            fmt = fmt "  deal=packs %6.2f s user %5.2f s sys %6.2f s wall  ratio %.2f\n"
            printf fmt, n, u[1], s[1], e[1], u[2], s[2], e[2], (u[2] > 0 ? u[1] / u[2] : 0)
        }' \
        "$tmp/time.samples" "$tmp/time.packs"
done
