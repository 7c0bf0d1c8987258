#!/bin/sh
# Replays every strategy's plan of one manifest on the GPU of the machine it runs on and
# compares each rank's measured compute with the simulator's (issue 22 item 5):
# tools/replay_plan.py per plan, then per strategy the MAPE and worst error over the
# replayed (iteration, rank) rows, and Kendall's tau between the strategies' order by
# measured and by simulated compute (each strategy's mean over iterations of its slowest
# replayed rank).
#
#     sh bench/replay_gpu.sh OUTDIR          # on the GPU machine (needs PyTorch; flash-attn
#                                            # is used when importable)
#
# Defaults: CUDA, the Llama-3.1-8B shape of configs/llama3.1-8b_h200x8_calibrated.yaml,
# 4 of its 32 layers timed and scaled (the LM head once), iterations 0 and 1, every rank;
# a synthetic LMSYS manifest (vlplan gen --dist lmsys).  Overrides: CONFIG, DIST, N,
# ITERS, LAYERS, STRATEGIES, DEVICE, PYTHON, VLPLAN, EXTRA (more replay_plan.py options).
# Ranks with tp, sp or pp above 1 are skipped by the tool (one GPU cannot stand for their
# collectives) and listed in OUTDIR/<strategy>.json.  A CPU smoke run:
#     DEVICE=cpu EXTRA=--tiny N=64 ITERS=0 sh bench/replay_gpu.sh /tmp/replay
set -eu
out=${1:?usage: replay_gpu.sh OUTDIR}
py=${PYTHON:-python3}
vl=${VLPLAN:-build/vlplan}
cfg=${CONFIG:-configs/llama3.1-8b_h200x8_calibrated.yaml}
dist=${DIST:-lmsys}
n=${N:-2048}
iters=${ITERS:-0,1}
layers=${LAYERS:-4}
dev=${DEVICE:-cuda}
strategies=${STRATEGIES:-$("$vl" strategies --format csv | sed 1d | cut -d, -f1)}
mkdir -p "$out"
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv || true
  "$py" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda,
      torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no cuda")'
} >"$out/gpu.txt" 2>&1
"$vl" gen --dist "$dist" -n "$n" --seed 1 -o "$out/manifest.jsonl"
for s in $strategies; do
    if ! "$vl" plan -q -s "$s" -c "$cfg" --allow-oom -o "$out/$s.jsonl" \
            "$out/manifest.jsonl" 2>"$out/$s.plan.log"; then
        echo "$s: no plan (see $out/$s.plan.log)" >&2
        continue
    fi
    # shellcheck disable=SC2086 # $EXTRA is a list of options
    "$py" tools/replay_plan.py --device "$dev" --layers "$layers" --iters "$iters" \
        --vlplan "$vl" --json ${EXTRA:-} "$out/$s.jsonl" >"$out/$s.json" \
        2>"$out/$s.log" || echo "$s: replay failed (see $out/$s.log)" >&2
done
# shellcheck disable=SC2086 # one argument per strategy
"$py" - "$out" $strategies <<'PY' | tee "$out/summary.txt"
import json, os, sys
out, names = sys.argv[1], sys.argv[2:]
rows = []
for s in names:
    p = os.path.join(out, s + ".json")
    if not os.path.exists(p) or not os.path.getsize(p):
        continue
    j = json.load(open(p))
    r = [x for x in j["rows"] if "simulated_ms" in x]
    if not r:
        print(f"{s:10s} no replayed rows ({len(j['skipped'])} skipped)")
        continue
    slow = {}
    for x in r:
        m, sm = slow.get(x["iter"], (0.0, 0.0))
        slow[x["iter"]] = (max(m, x["measured_ms"]), max(sm, x["simulated_ms"]))
    meas = sum(v[0] for v in slow.values()) / len(slow)
    sim = sum(v[1] for v in slow.values()) / len(slow)
    rows.append((s, meas, sim))
    print(f"{s:10s} rows {len(r):3d} skipped {len(j['skipped']):3d}  MAPE "
          f"{100 * j['mape']:6.1f}%  worst {100 * j['worst']:6.1f}%  slowest rank: measured "
          f"{meas:10.1f} ms simulated {sim:10.1f} ms  ({j['device']}, {j['dtype']}, "
          f"flash {j['flash']})")
conc = disc = 0
for i in range(len(rows)):
    for k in range(i + 1, len(rows)):
        a = (rows[i][1] - rows[k][1]) * (rows[i][2] - rows[k][2])
        conc, disc = conc + (a > 0), disc + (a < 0)
pairs = len(rows) * (len(rows) - 1) // 2
if pairs:
    print(f"Kendall tau (measured vs simulated order of {len(rows)} strategies): "
          f"{(conc - disc) / pairs:+.3f}")
PY
