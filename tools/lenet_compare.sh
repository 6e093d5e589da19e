#!/usr/bin/env bash
# Trains LeNet with braid (build/bin/braid-lenet) and with PyTorch (samples/lenet/lenet_torch.py, Debian's
# python3-torch: scripts/install-deps.sh --bench) in one run; prints both per epoch and the time ratio.
#
#   tools/lenet_compare.sh [--build-dir DIR] [compare.py args: --device cpu:0 --epochs 4 --batches N --threads 2]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$root/build"
if [[ "${1:-}" == --build-dir ]]; then build="$2"; shift 2; fi
[[ -x "$build/bin/braid-lenet" ]] || { echo "lenet_compare.sh: build first (scripts/build.sh): no $build/bin/braid-lenet" >&2; exit 2; }
/usr/bin/python3 -c "import torch" 2>/dev/null || { echo "lenet_compare.sh: PyTorch missing: scripts/install-deps.sh --bench" >&2; exit 2; }
exec /usr/bin/python3 "$root/samples/lenet/compare.py" --braid "$build/bin/braid-lenet" "$@"
