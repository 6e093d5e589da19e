"""MXNet's npx names: the neural-network operators and device helpers beside np (the chapter's
`from mxnet import np, npx`)."""
import ctypes

from . import autograd
from .checkpoint import load, save  # noqa: F401
from ._lib import Conv2dParams, Pool2dParams, c_tensor, check, lib
from .device import cpu, gpu, num_gpus, vulkan, waitall  # noqa: F401
from .ndarray import ndarray, new, unary

__all__ = ["relu", "sigmoid", "softmax", "log_softmax", "convolution", "pooling", "dropout", "batch_flatten",
           "save", "load", "waitall", "cpu", "gpu", "vulkan", "num_gpus", "set_np", "reset_np"]


def set_np(shape=True, array=True, dtype=False):
    """Accepted for MXNet code: braid's arrays always have NumPy's semantics, so there is nothing to
    switch."""


def reset_np():
    """Accepted for MXNet code; see set_np."""


def relu(data):
    return unary("relu", data)


def sigmoid(data):
    return unary("sigmoid", data)


def softmax(data, axis=-1):
    return new(lib.braid_softmax, data.handle, int(axis), 0)


def log_softmax(data, axis=-1):
    return new(lib.braid_softmax, data.handle, int(axis), 1)


def batch_flatten(data):
    """(N, ...) to (N, everything else)."""
    return data.reshape(data.shape[0], -1)


def _pair(value, name):
    pair = (value, value) if isinstance(value, int) else tuple(value)
    if len(pair) != 2:
        raise ValueError(f"braid: {name} takes two values (height, width), not {value!r}")
    return pair


def convolution(data, weight, bias=None, kernel=None, stride=(1, 1), dilate=(1, 1), pad=(0, 0), num_filter=None,
                num_group=1, no_bias=False, layout=None):
    """2-D convolution of NCHW data with KCRS weights (MXNet's npx.convolution)."""
    if layout not in (None, "NCHW"):
        raise ValueError(f"braid: convolution supports layout NCHW only, not {layout!r}")
    if tuple(_pair(dilate, "dilate")) != (1, 1) or num_group != 1:
        raise ValueError("braid: convolution supports dilate (1, 1) and num_group 1 only")
    if kernel is not None and tuple(_pair(kernel, "kernel")) != tuple(weight.shape[2:]):
        raise ValueError(f"braid: kernel {tuple(kernel)} differs from the weight's {tuple(weight.shape[2:])}")
    if num_filter is not None and num_filter != weight.shape[0]:
        raise ValueError(f"braid: num_filter {num_filter} differs from the weight's {weight.shape[0]} filters")
    params = Conv2dParams(ctypes.sizeof(Conv2dParams), (ctypes.c_int32 * 2)(*_pair(stride, "stride")),
                          (ctypes.c_int32 * 2)(*_pair(pad, "pad")))
    b = None if no_bias or bias is None else bias.handle
    return new(lib.braid_conv2d, data.handle, weight.handle, b, ctypes.byref(params))


def pooling(data, kernel=(1, 1), pool_type="max", stride=None, pad=(0, 0), global_pool=False,
            count_include_pad=True, layout=None):
    """2-D max or average pooling of NCHW data (MXNet's npx.pooling: stride defaults to 1)."""
    kinds = {"max": 0, "avg": 1}
    if pool_type not in kinds:
        raise ValueError(f"braid: pool_type {pool_type!r} is none of 'max', 'avg'")
    if layout not in (None, "NCHW"):
        raise ValueError(f"braid: pooling supports layout NCHW only, not {layout!r}")
    pad = _pair(pad, "pad")
    if pool_type == "avg" and count_include_pad and pad != (0, 0) and not global_pool:
        raise ValueError("braid: average pooling leaves padded cells out of the average; pass "
                         "count_include_pad=False to ask for that")
    params = Pool2dParams(ctypes.sizeof(Pool2dParams), kinds[pool_type], (ctypes.c_int32 * 2)(*_pair(kernel, "kernel")),
                          (ctypes.c_int32 * 2)(*_pair(1 if stride is None else stride, "stride")),
                          (ctypes.c_int32 * 2)(*pad), int(bool(global_pool)))
    return new(lib.braid_pool2d, data.handle, ctypes.byref(params))


def dropout(data, p=0.5):
    """Inverted dropout while training (autograd.record() or train_mode()); the data itself otherwise."""
    if not isinstance(data, ndarray):
        raise TypeError(f"braid: dropout takes a braid array, not {type(data).__name__}")
    if not autograd.is_training():
        return data
    out = c_tensor()
    check(lib.braid_dropout(data.handle, float(p), ctypes.byref(out), None))  # no mask wanted
    return ndarray(out)
