#!/bin/sh
# bench/papers.sh -- each paper's own comparison, run through `vlplan compare` under the
# shared cost model and simulator: HBP Table 11 (ISF at 128K SP8 against HBP's groups)
# and ChunkFlow Tables 3/4/6 (Megatron-LM, one sample per micro-batch with Table 3's
# recompute, against ChunkFlow with Table 4's settings).  Numbers go to stdout; the
# papers' figures are beside them in bench/RESULTS.md.  Cluster sizes the papers leave
# open are ASSUMPTIONS: two data-parallel replicas of each Table 3 layout.
set -eu
B=${BUILD:-build}
V="$B/vlplan"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/vlplan-papers.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
show() { grep -E '^(figure|fits|abr|cr |iter_time_ms|peak_mem_gib|mfu|epoch_time_s|speedup)'; }

echo "## HBP Table 11: llama3.1-8b, 32 x h100, 128K, 512K-token batches, 100K tulu3-longcite"
"$V" gen --dist tulu3-longcite -n 100000 --seed 1 -o "$tmp/tl.txt"
"$V" compare -q --set pack.algo=isf --set training.max_seq_len=131072 \
    --set training.global_tokens=524288 --set training.sp=8 \
    --row isf=pack --row 'g32=hbp:hbp.groups=32K:2,128K:8' \
    --row 'g16=hbp:hbp.groups=16K:1,128K:8' --row auto=hbp "$tmp/tl.txt" | show

"$V" gen --dist chunkflow-eval -n 32768 --seed 1 -o "$tmp/cf.txt"
cf() {  # model ctx tp sp pp megatron-recompute chunk k
    gpus=$(( $3 * $4 * $5 * 2 ))
    echo "## ChunkFlow Table 3/4: $1, $2 context, <tp $3, sp $4, pp $5>, $gpus GPUs, batch 256"
    "$V" compare -q --set model.preset="$1" --set cluster.gpus="$gpus" \
        --set training.tp="$3" --set training.sp="$4" --set training.sp_kind=ring \
        --set training.pp="$5" --set training.max_seq_len="$2" \
        --set training.global_batch=256 --set training.oversize=drop \
        --row "megatron=random:training.micro_batch=1,training.recompute=$6" \
        --row "chunkflow=chunkflow:chunkflow.chunk_size=$7,chunkflow.k=$8,training.recompute=selective" \
        "$tmp/cf.txt" | show
}
cf qwen2.5-7b 32768 4 4 1 selective 32768 1
cf qwen2.5-7b 262144 4 4 4 full 8192 16
cf qwen2.5-14b 32768 4 4 4 selective 8192 8
cf qwen2.5-14b 262144 4 4 4 full 8192 8
cf qwen2.5-32b 32768 4 4 4 selective 8192 6
cf qwen2.5-32b 262144 4 4 4 full 8192 6
cf qwen2.5-72b 32768 8 8 4 selective 8192 16
cf qwen2.5-72b 262144 8 8 4 selective 8192 16

echo "## ChunkFlow Table 6: qwen2.5-7b, 256K, <4, 4, 4, selective>, 128 GPUs"
"$V" compare -q --set model.preset=qwen2.5-7b --set cluster.gpus=128 --set training.tp=4 \
    --set training.sp=4 --set training.sp_kind=ring --set training.pp=4 \
    --set training.max_seq_len=262144 --set training.global_batch=256 \
    --set training.oversize=drop --set training.recompute=selective \
    --row 'c2k=chunkflow:chunkflow.chunk_size=2048,chunkflow.k=16' \
    --row 'c8k=chunkflow:chunkflow.chunk_size=8192,chunkflow.k=4' \
    --row 'c32k=chunkflow:chunkflow.chunk_size=32768,chunkflow.k=1' "$tmp/cf.txt" | show
