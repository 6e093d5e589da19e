"""gluon.utils: splitting a batch over devices, and clipping gradients by their global norm."""
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


def clip_global_norm(arrays, max_norm, check_isfinite=True):
    """Scales every array in place by max_norm / their joint L2 norm when that norm exceeds max_norm
    (gradient clipping); returns the norm before scaling, as a float. check_isfinite: a NaN or infinite
    norm is returned as it is and nothing is scaled (MXNet warns; braid leaves the warning to the caller)."""
    import math
    arrays = list(arrays)
    if not arrays:
        raise ValueError("braid: clip_global_norm needs at least one array")
    total = math.sqrt(sum(float(a.norm().asscalar()) ** 2 for a in arrays))
    if check_isfinite and not math.isfinite(total):
        return total
    scale = max_norm / (total + 1e-8)
    if scale < 1.0:
        for a in arrays:
            a *= scale
    return total
