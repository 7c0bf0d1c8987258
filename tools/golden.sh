#!/bin/sh
# tools/golden.sh -- regenerate testdata/golden/<strategy>.jsonl, the plan every
# registered strategy makes of testdata/golden/manifest.jsonl under the settings below
# (tests/plan/test_golden.c holds them to these bytes).  Run it only for a change whose
# effect on the plans is intended, and say why in the commit.
set -eu
cd "$(dirname "$0")/.."
VLPLAN=${VLPLAN:-build/vlplan}
for s in $("$VLPLAN" strategies --format csv | tail -n +2 | cut -d, -f1); do
    "$VLPLAN" plan -q -s "$s" --seed 7 --set cluster.gpus=8 --set training.max_seq_len=32768 \
        --set training.global_tokens=262144 --set training.oversize=truncate \
        -o "testdata/golden/$s.jsonl" testdata/golden/manifest.jsonl
done
