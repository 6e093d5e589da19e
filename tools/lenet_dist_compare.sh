#!/usr/bin/env bash
# braid-lenet on one process with both cores against two processes of one core each (braid-run, each rank
# under taskset on its own core, --dist): samples/s, mean training loss and test accuracy per epoch, for
# each seed. The figures of docs/BENCHMARKS.md, "LeNet from C++ across processes".
#
#   tools/lenet_dist_compare.sh [EPOCHS [SEEDS...]]     (default: 3 epochs, seeds 0 1 2; after scripts/build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
epochs="${1:-3}"
seeds=(0 1 2)
if (($# > 1)); then seeds=("${@:2}"); fi
for seed in "${seeds[@]}"; do
  one=$(taskset -c 0,1 build/bin/braid-lenet --device cpu:0 --epochs "$epochs" --seed "$seed" --json 2>/dev/null | tail -1)
  two=$(build/bin/braid-run -n 2 sh -c "exec taskset -c \$BRAID_LOCAL_RANK build/bin/braid-lenet --dist --device cpu:0 \
    --epochs $epochs --seed $seed --json" 2>/dev/null | sed -n 's/^\[0\] {/{/p')
  python3 - "$seed" "$one" "$two" <<'PY'
import json, sys
seed, one, two = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
def row(r):
    e = r["epochs"]
    return ([round(x["samples_per_s"]) for x in e], [round(x["train_loss"], 4) for x in e],
            [x["test_accuracy"] for x in e])
print(f"seed {seed}: 1 process x 2 cores {row(one)}; 2 processes x 1 core {row(two)}")
PY
done
