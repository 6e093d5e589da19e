"""MXNet 1.x's mx.context: Context (braid's Device), cpu(i), gpu(i), num_gpus(), current_context()."""
from .device import Device, cpu, gpu, num_gpus  # noqa: F401

Context = Device

__all__ = ["Context", "cpu", "gpu", "num_gpus", "current_context"]


def current_context():
    """The default device of new arrays: cpu(0)."""
    return cpu()
