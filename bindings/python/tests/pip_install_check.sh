#!/usr/bin/env bash
# ctest braid-python-pip: the package installs with pip into a fresh venv of an interpreter that has NumPy
# (--system-site-packages: NumPy from the system; --no-build-isolation --no-index: no package index is
# needed), with its compiled path (braid._fast) where the interpreter has its headers, and works there
# from outside the source tree with no BRAID_LIBRARY set: it finds the libbraid its build recorded, and a
# few steps of Gluon training lower the loss. An interpreter without NumPy (the same one with -S: no
# site-packages) is told at import that NumPy is needed.
#   pip_install_check.sh PYTHON LIBBRAID
set -euo pipefail
python="$1"
libbraid="$2"
pkg="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
if ! "$python" -m venv --system-site-packages "$work/venv" >/dev/null 2>&1; then
  echo "skipped: $python has no venv module (Debian: python3-venv)"
  exit 77
fi
# Built from a copy, so the source tree gets no build/ or egg-info; BRAID_LIBRARY while building is
# recorded as where libbraid is (setup.py).
mkdir "$work/src"
cp -r "$pkg/pyproject.toml" "$pkg/setup.py" "$pkg/README.md" "$pkg/braid" "$pkg/src" "$work/src/"
BRAID_LIBRARY="$libbraid" BRAID_INCLUDE_DIR="$pkg/../../abi" \
  "$work/venv/bin/python" -m pip install --quiet --no-build-isolation --no-index "$work/src"
# Where the interpreter has its headers (and a compiler is here) pip built the compiled path too.
expect_compiled="$("$python" -c 'import os, sysconfig; print(int(os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h"))))')"
cd "$work"
env -u BRAID_LIBRARY -u PYTHONPATH -u BRAID_PYTHON_FAST EXPECT_COMPILED="$expect_compiled" "$work/venv/bin/python" - <<'PY'
import os
import sys

import braid
from braid import autograd, gluon, np
from braid.gluon import nn

assert braid.__file__.startswith(sys.prefix), braid.__file__  # the installed copy
compiled = sys.modules["braid.ndarray"].COMPILED
assert compiled == (os.environ["EXPECT_COMPILED"] == "1"), f"compiled path: {compiled}"
if compiled:
    assert braid._fast.__file__.startswith(sys.prefix), braid._fast.__file__  # pip's build, not the tree's
print(f"compiled path: {compiled}")
np.random.seed(0)
x = np.random.uniform(size=(64, 4))
y = (x[:, 0] > 0.5).astype("int32")
net = nn.Dense(2, in_units=4)
net.initialize()
trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.5})
loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
losses = []
for _ in range(30):
    with autograd.record():
        loss = loss_fn(net(x), y)
    loss.backward()
    trainer.step(64)
    losses.append(float(loss.mean().asnumpy()))
print(f"loss {losses[0]:.4f} -> {losses[-1]:.4f}")
assert losses[-1] < 0.8 * losses[0], losses
PY
out="$(cd "$work" && env -u PYTHONPATH "$python" -S -c "import sys; sys.path.insert(0, '$pkg'); import braid" 2>&1 || true)"
if ! grep -q "braid needs NumPy" <<<"$out"; then
  echo "an interpreter without NumPy was not told that NumPy is needed:"
  echo "$out"
  exit 1
fi
echo "pip install, import and training in a venv: ok; without NumPy: ImportError naming NumPy"
