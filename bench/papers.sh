#!/bin/sh
# bench/papers.sh -- each paper's own comparison, run through `vlplan compare` under the
# shared cost model and simulator: HBP Table 11 (ISF at 128K SP8 against HBP's groups)
# and ChunkFlow Tables 3/4/6 (Megatron-LM, one sample per micro-batch with Table 3's
# recompute, against ChunkFlow with Table 4's settings).  Numbers go to stdout; the
# papers' figures are beside them in bench/RESULTS.md.  Cluster sizes the papers leave
# open are ASSUMPTIONS: two data-parallel replicas of each Table 3 layout.  Each per-batch
# paper strategy also meets packing of the same global batches (pack.scope=batch, row
# packb): what the papers compare with, and the strongest baseline of the same scope.
set -eu
B=${BUILD:-build}
V="$B/vlplan"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/vlplan-papers.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
show() {
    grep -E '^(figure|scope|token_share|iterations|fits|abr|cr |iter_time_ms|peak_mem_gib|mfu|epoch_time_s|speedup)'
}

echo "## HBP Table 11: llama3.1-8b, 32 x h100, 128K, 512K-token batches, 100K tulu3-longcite"
"$V" gen --dist tulu3-longcite -n 100000 --seed 1 -o "$tmp/tl.txt"
"$V" compare -q --set pack.algo=isf --set training.max_seq_len=131072 \
    --set training.global_tokens=524288 --set training.sp=8 \
    --row isf=pack:pack.scope=batch --row 'g32=hbp:hbp.groups=32K:2,128K:8' \
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
        --row "packb=pack:pack.scope=batch,training.recompute=selective" \
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

# Skrull's setting (the skrull paper, docs/papers.md §5, bench/bench_skrull.c) with Megatron-Core's hybrid
# CP beside it: DeepSpeed (every sequence sharded, one per micro-batch, gradients reduced
# every micro-step, in bf16 as DeepSpeed's bf16 mode communicates them) first, Skrull
# under the same runtime, Skrull reducing once per
# iteration, then mcore_cp (Megatron reduces once per iteration).  training.max_seq_len is
# Skrull's C·N at cost.logits_bytes=12 (its auto BucketSize × CP: 27,033 × 8 for 0.5B,
# 9,051 × CP for 7B), so every row plans the same samples.
"$V" gen --dist wikipedia -n 10240 --seed 1 -o "$tmp/sk_wiki.txt"
"$V" gen --dist lmsys -n 10240 --seed 1 -o "$tmp/sk_lmsys.txt"
"$V" gen --dist chatqa2-long -n 4096 --seed 1 -o "$tmp/sk_chatqa.txt"
sk() {  # model dataset dp cp per-dp-rank max_seq_len
    echo "## Skrull setting + Megatron hybrid CP: $1, $2, <dp $3, cp $4>, $5 per DP rank"
    "$V" compare -q --set model.preset="$1" --set cluster.gpus=$(( $3 * $4 )) \
        --set cluster.gpus_per_node=8 --set training.dp="$3" --set training.sp="$4" \
        --set training.sp_kind=ring --set training.global_batch=$(( $3 * $5 )) \
        --set training.oversize=drop --set training.zero=2 \
        --set training.recompute=selective --set cost.logits_bytes=12 \
        --set training.max_seq_len="$6" \
        --row 'deepspeed=random:training.micro_batch=1,training.dp_sync=micro_step,training.grad_bytes=2' \
        --row 'skrull=skrull:training.dp_sync=micro_step,training.grad_bytes=2' --row skrull_it=skrull \
        --row mcore=mcore_cp --row packb=pack:pack.scope=batch "$tmp/sk_$2.txt" | show
}
sk qwen2.5-0.5b wiki 4 8 64 216264
sk qwen2.5-0.5b lmsys 4 8 64 216264
sk qwen2.5-0.5b chatqa 4 8 64 216264
sk qwen2.5-7b wiki 4 8 64 72408
sk qwen2.5-7b lmsys 4 8 64 72408
sk qwen2.5-7b chatqa 2 16 40 144816
