"""braid from Python: MXNet's names (np, npx, autograd, gluon) over braid's C API (libbraid, through
ctypes; nothing is compiled). See docs/PYTHON.md.

    from braid import np, npx, autograd
    x = np.ones((1, 2), ctx=npx.cpu())
    y = x + 1
    npx.waitall()
"""
try:  # first, so that an interpreter without NumPy is told what it lacks rather than where it failed
    import numpy as _numpy  # noqa: F401
except ImportError as _e:
    raise ImportError("braid needs NumPy (1.22 or later) in this interpreter: pip install numpy, or use one that "
                      "has it (Debian: apt install python3-numpy)") from _e
from . import _lib, amp, autograd, context, data, distributed, gluon, initializer, kvstore, metric  # noqa: F401
from . import nd, np, npx, symbol  # noqa: F401
from ._lib import BraidError
from .device import Device, cpu, devices, gpu, memory_stats, num_gpus, seed, vulkan, waitall  # noqa: F401
from .ndarray import NDArray, ndarray  # noqa: F401

init = initializer  # MXNet's mx.init
kv = kvstore  # MXNet's mx.kv
Context = context.Context  # MXNet 1.x's mx.Context: a device
sym = symbol  # MXNet 1.x's mx.sym
random = np.random
__all__ = ["np", "npx", "nd", "amp", "autograd", "gluon", "init", "kv", "kvstore", "data", "distributed", "random", "ndarray",
           "NDArray", "BraidError", "Device", "Context", "context", "metric", "cpu", "gpu", "vulkan", "devices",
           "num_gpus", "seed", "waitall", "sym", "symbol", "memory_stats"]
__version__ = _lib.lib.braid_version_string().decode().split(" ")[0]  # the library's release


def _serve_if_server():
    """Under MXNet's launchers every process runs the same script; the ones whose DMLC_ROLE is server or
    scheduler serve the job (braid_kvstore_run_server) when they import braid, then exit, as MXNet's
    processes do (docs/DISTRIBUTED.md, "KVStore across processes")."""
    import os
    import sys
    if os.environ.get("DMLC_ROLE") in ("server", "scheduler"):
        try:
            kvstore.run_server()
        except BraidError as e:
            print(f"braid: {os.environ['DMLC_ROLE']}: {e}", file=sys.stderr)
            sys.exit(1)
        sys.exit(0)


_serve_if_server()
