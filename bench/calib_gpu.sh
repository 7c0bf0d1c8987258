#!/bin/sh
# Measures the forward+backward step times that `vlplan calibrate` fits (issue 14, item 3),
# on the GPU of the machine it runs on: a Llama-3.1-8B-shaped stack of decoder layers
# (tools/profile_step.py), packed micro-batches of the same tokens and different sum len^2,
# every other composition held out; then the same stack with every layer recomputed.
#
#     sh bench/calib_gpu.sh OUTDIR                 # on the GPU machine (needs PyTorch)
#     vlplan calibrate -c OUTDIR/model.yaml --eval OUTDIR/held.csv -o calib.yaml OUTDIR/fit.csv
#
# calibrate reports the held-out error and the error with each token budget left out (what
# a micro-batch size that was not measured costs), writes cost.compute_scale for the
# schemes the rows do not measure, and cost.head_scale from the LM head rows (--head).
# Then the sharded schemes of the bundled calibrated configs' layouts (8 GPUs: HBP's and
# Skrull's sp > 1 ranks, sp 2, 4 and 8): for each SPS degree one GPU's share of the compute
# (tools/profile_step.py --sp N --sp-kind ulysses where N divides the KV heads, and --cp N,
# ring), communication not timed (analytic: the rows say comm analytic); OUTDIR/fit_sp.csv
# and OUTDIR/held_sp.csv are fit.csv and held.csv with those rows added, so
#     vlplan calibrate -c OUTDIR/model.yaml --eval OUTDIR/held_sp.csv OUTDIR/fit_sp.csv
# reports each shard's compute as measured (its own fit) against the consistent correction,
# and leaves each budget out per scheme.
# SHAPE, TOKENS, CKPT_TOKENS, MIN_LEN, SPS, DEVICE and PYTHON override the defaults (a CPU
# smoke run: DEVICE=cpu SHAPE="--layers 1 --hidden 64 --heads 4 --kv-heads 2 --ffn 128"
# TOKENS=256,512 CKPT_TOKENS=256 MIN_LEN=32 SPS=2 sh bench/calib_gpu.sh /tmp/calib).
set -eu
out=${1:?usage: calib_gpu.sh OUTDIR}
py=${PYTHON:-python3}
dev=${DEVICE:-cuda}
shape=${SHAPE:---layers 4 --hidden 4096 --heads 32 --kv-heads 8 --ffn 14336 --vocab 128256}
# small budgets too: the per-micro-batch constant c is only pinned by micro-batches in which
# it is a large share of the time (leaving the 4K budget out of a 4K..32K fit cost the 0.5B
# 26% there, `vlplan calibrate` reports it), and budgets spread by doubling
tokens=${TOKENS:-1024,2048,4096,8192,16384,32768}
ckpt_tokens=${CKPT_TOKENS:-8192,32768}
min_len=${MIN_LEN:-128}
sps=${SPS:-2 4 8}
layers=$(echo "$shape" | sed -n 's/.*--layers \([0-9]*\).*/\1/p')
kv_heads=$(echo "$shape" | sed -n 's/.*--kv-heads \([0-9]*\).*/\1/p')
kv_heads=${kv_heads:-4}   # profile_step.py's default
mkdir -p "$out"
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv || true
  "$py" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda,
      torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no cuda")'
} >"$out/gpu.txt" 2>&1
# shellcheck disable=SC2086 # $shape is a list of options
"$py" tools/profile_step.py --device "$dev" $shape --tokens "$tokens" --min-len "$min_len" \
    --warmup 3 --repeat 7 -o "$out/fit.csv" --holdout "$out/held.csv" \
    --model-yaml "$out/model.yaml" --head 2>"$out/log.txt"
# shellcheck disable=SC2086
"$py" tools/profile_step.py --device "$dev" $shape --ckpt-layers "$layers" \
    --tokens "$ckpt_tokens" --min-len "$min_len" --warmup 2 --repeat 5 \
    -o "$out/ckpt.csv" 2>>"$out/log.txt"
# one GPU's share of each sharded scheme: same budgets (whole micro-batches), the share's
# tokens are budget / N; compositions whose sequences do not split evenly are skipped
cp "$out/fit.csv" "$out/fit_sp.csv"
cp "$out/held.csv" "$out/held_sp.csv"
for n in $sps; do
    kinds="ring"
    [ $((kv_heads % n)) -eq 0 ] && kinds="ulysses ring"
    for kind in $kinds; do
        # shellcheck disable=SC2086
        "$py" tools/profile_step.py --device "$dev" $shape --tokens "$tokens" \
            --min-len "$min_len" --sp "$n" --sp-kind "$kind" --warmup 3 --repeat 7 \
            -o "$out/sp${n}_$kind.csv" --holdout "$out/sp${n}_${kind}_held.csv" \
            2>>"$out/log.txt"
        grep '^[0-9]' "$out/sp${n}_$kind.csv" >>"$out/fit_sp.csv"
        grep '^[0-9]' "$out/sp${n}_${kind}_held.csv" >>"$out/held_sp.csv"
    done
done
