"""gluon.utils: splitting a batch over devices."""
import ctypes

from .._lib import c_tensor, check, lib
from ..device import Device
from ..ndarray import ndarray


def split_and_load(data, ctx_list, batch_axis=0, even_split=True):
    """Splits data along axis 0 into one part per device (sizes as numpy.array_split: they differ by at
    most one) and copies part i to ctx_list[i]. A single device gets the whole array there. Recorded by
    autograd when data needs a gradient."""
    if batch_axis != 0:
        raise ValueError("braid: split_and_load splits along axis 0 only")
    if not isinstance(data, ndarray):
        raise TypeError(f"braid: split_and_load takes a braid array, not {type(data).__name__}")
    if data.ndim == 0:
        raise ValueError("braid: split_and_load needs an array with a batch axis, not a 0-d one")
    devices = list(ctx_list)
    if not devices or not all(isinstance(d, Device) for d in devices):
        raise ValueError("braid: split_and_load needs a non-empty list of devices")
    if even_split and data.shape[0] % len(devices):
        raise ValueError(f"braid: {data.shape[0]} rows do not split evenly over {len(devices)} devices "
                         "(pass even_split=False for parts that differ by one)")
    indices = (ctypes.c_int32 * len(devices))(*[d.index for d in devices])
    outs = (c_tensor * len(devices))()
    check(lib.braid_split_and_load(data.handle, len(devices), indices, None, outs))
    return [ndarray(outs[i]) for i in range(len(devices))]
