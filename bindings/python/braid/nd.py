"""MXNet 1.x's `nd` over braid's arrays: the names and defaults of `mxnet.ndarray` (what the MXNet edition of
the chapter and most MXNet code imports as `from mxnet import nd`), on the same arrays np and npx make.

Where 1.x differs from MXNet 2's np, nd does as 1.x did: creation is float32 unless the source is an
array with a dtype of its own (`nd.arange(24)` is float32), shapes are `shape=` (`nd.random.normal(shape=
(1, 512))`), `nd.concat` joins along `dim=1`, `nd.argmax` gives float32 indices, and the network operators
take MXNet's names (`FullyConnected`, `Convolution`, `Pooling`, `BatchNorm`, `Dropout`, `Activation`).
"""
import ctypes
import types

import numpy as _numpy

from . import autograd
from . import device as _device
from . import np as _np
from . import npx as _npx
from ._lib import BatchNormParams, c_tensor, check, lib
from .checkpoint import load, save  # noqa: F401
from .device import waitall  # noqa: F401
from .ndarray import NDArray, ndarray, resolve_device

__all__ = ["take", "NDArray", "array", "zeros", "ones", "full", "empty", "arange", "zeros_like", "ones_like", "random",
           "dot", "batch_dot", "relu", "sigmoid", "tanh", "exp", "log", "sqrt", "square", "abs", "sign", "softmax",
           "log_softmax", "sum", "mean", "max", "min", "argmax", "argmin", "norm", "one_hot", "pick", "clip",
           "concat", "stack", "split", "reshape", "transpose", "expand_dims", "flatten", "Flatten", "add",
           "subtract", "multiply", "divide", "power", "maximum", "minimum", "equal", "not_equal", "greater",
           "greater_equal", "lesser", "lesser_equal", "where", "FullyConnected", "Convolution", "Pooling",
           "BatchNorm", "Dropout", "Activation", "waitall", "save", "load", "broadcast_add", "broadcast_sub",
           "broadcast_mul", "broadcast_div", "broadcast_power", "broadcast_maximum", "broadcast_minimum",
           "elemwise_add", "elemwise_sub", "elemwise_mul", "elemwise_div"]

_FLOAT32 = "float32"


def _shape(shape):
    if shape is None:
        return ()
    return (int(shape),) if isinstance(shape, (int, _numpy.integer)) else tuple(int(d) for d in shape)


def _ctx(ctx):
    return resolve_device(ctx, None)


# ---- creation: float32 unless the source says otherwise ------------------------------------------------------

def array(source_array, ctx=None, dtype=None):
    """An array from a list, NumPy array or braid array: float32 for lists and numbers, the source's own
    dtype for arrays (mx.nd.array)."""
    if dtype is None:
        has_dtype = isinstance(source_array, (ndarray, _numpy.ndarray, _numpy.generic))
        dtype = source_array.dtype if has_dtype else _FLOAT32
    if isinstance(source_array, ndarray):
        out = source_array.as_in_context(_ctx(ctx)) if ctx is not None else source_array.copy()
        return out if out.dtype == dtype else out.astype(dtype)
    return _np.array(source_array, dtype=dtype, ctx=_ctx(ctx))


def zeros(shape, ctx=None, dtype=None, **kwargs):
    return _np.zeros(_shape(shape), dtype=dtype or _FLOAT32, ctx=_ctx(ctx))


def ones(shape, ctx=None, dtype=None, **kwargs):
    return _np.ones(_shape(shape), dtype=dtype or _FLOAT32, ctx=_ctx(ctx))


def full(shape, val, ctx=None, dtype=None, **kwargs):
    return _np.full(_shape(shape), val, dtype=dtype or _FLOAT32, ctx=_ctx(ctx))


def empty(shape, ctx=None, dtype=None):
    return _np.empty(_shape(shape), dtype=dtype or _FLOAT32, ctx=_ctx(ctx))


def zeros_like(data):
    return _np.zeros_like(data)


def ones_like(data):
    return _np.ones_like(data)


def arange(start, stop=None, step=1.0, repeat=1, ctx=None, dtype=None, **kwargs):
    """start, start + step, ... below stop, each repeated `repeat` times; float32 by default."""
    out = _np.arange(start, stop, step, dtype=dtype or _FLOAT32, ctx=_ctx(ctx))
    if repeat != 1:
        out = _np.stack([out] * int(repeat), axis=1).reshape(-1)
    return out


def _uniform(low=0.0, high=1.0, shape=None, dtype=None, ctx=None, **kwargs):
    return _np.random.uniform(low, high, size=_shape(shape), dtype=dtype or _FLOAT32, ctx=_ctx(ctx))


def _normal(loc=0.0, scale=1.0, shape=None, dtype=None, ctx=None, **kwargs):
    return _np.random.normal(loc, scale, size=_shape(shape), dtype=dtype or _FLOAT32, ctx=_ctx(ctx))


random = types.SimpleNamespace(uniform=_uniform, normal=_normal, seed=_device.seed)


# ---- elementwise and reductions -------------------------------------------------------------------------------

relu, sigmoid, softmax, log_softmax = _npx.relu, _npx.sigmoid, _npx.softmax, _npx.log_softmax
tanh, exp, log, sqrt, square, abs, sign = _np.tanh, _np.exp, _np.log, _np.sqrt, _np.square, _np.abs, _np.sign
add, subtract, multiply, divide, power, maximum, minimum = (_np.add, _np.subtract, _np.multiply, _np.divide,
                                                            _np.power, _np.maximum, _np.minimum)
broadcast_add, broadcast_sub, broadcast_mul, broadcast_div = add, subtract, multiply, divide
broadcast_power, broadcast_maximum, broadcast_minimum = power, maximum, minimum
elemwise_add, elemwise_sub, elemwise_mul, elemwise_div = add, subtract, multiply, divide
where = _np.where


# 1.x comparisons give 1 and 0 in the operands' dtype (float32 for float32 operands).
def _comparison(fn):
    def compare(lhs, rhs):
        a = lhs if isinstance(lhs, ndarray) else rhs
        return fn(lhs, rhs).astype(a.dtype)
    compare.__name__ = fn.__name__
    return compare


equal = _comparison(lambda a, b: a == b)
not_equal = _comparison(lambda a, b: a != b)
greater = _comparison(lambda a, b: a > b)
greater_equal = _comparison(lambda a, b: a >= b)
lesser = _comparison(lambda a, b: a < b)
lesser_equal = _comparison(lambda a, b: a <= b)


def _reduce(fn):
    def reduce(data, axis=None, keepdims=False, exclude=False):
        if exclude:
            axes = (axis,) if isinstance(axis, int) else tuple(axis or ())
            axis = tuple(d for d in range(data.ndim) if d not in {a % data.ndim for a in axes})
        return fn(data, axis=axis, keepdims=keepdims)
    reduce.__name__ = fn.__name__
    return reduce


sum, mean, max, min = _reduce(_np.sum), _reduce(_np.mean), _reduce(_np.max), _reduce(_np.min)


def norm(data, ord=2, axis=None, keepdims=False):
    """The L2 norm (over everything, or the axes given)."""
    if ord != 2:
        raise ValueError(f"braid: nd.norm supports ord=2, not {ord!r}")
    return _np.linalg.norm(data, axis=axis, keepdims=keepdims)


def argmax(data, axis=None, keepdims=False):
    """Indices of the maxima as float32, as MXNet 1.x gives them."""
    out = _np.argmax(data, axis).astype(_FLOAT32)
    return expand_dims(out, axis) if keepdims and axis is not None else out


def argmin(data, axis=None, keepdims=False):
    return argmax(-data, axis, keepdims)


def clip(data, a_min, a_max):
    return _np.minimum(_np.maximum(data, float(a_min)), float(a_max))


def one_hot(indices, depth, on_value=1.0, off_value=0.0, dtype=_FLOAT32):
    """Rows of `depth` values, on_value at each index and off_value elsewhere (indices out of range give
    a row of off_value)."""
    classes = _np.arange(0, int(depth), 1, dtype=indices.dtype, ctx=indices.ctx)
    hit = (expand_dims(indices, -1) == classes).astype(dtype)
    if on_value == 1.0 and off_value == 0.0:
        return hit
    return hit * (on_value - off_value) + off_value


def take(a, indices, axis=0, mode="clip"):
    """MXNet 1.x's nd.take: the slices along axis that indices picks (float indices are truncated, as
    MXNet reads them), with MXNet's default mode "clip" (an index below 0 or past the end takes the
    first or last slice); "wrap" counts modulo the axis, "raise" fails the op on one out of range.
    Differentiable in a."""
    if mode not in ("clip", "wrap", "raise"):
        raise ValueError(f"braid: nd.take mode {mode!r} is none of 'clip', 'wrap', 'raise'")
    if not isinstance(indices, ndarray):
        indices = _np.array(indices, dtype="int64", ctx=a.ctx)
    if indices.dtype.kind == "f":
        indices = indices.astype("int64")
    n = a.shape[axis]
    if mode == "clip":
        indices = _np.minimum(_np.maximum(indices, 0), n - 1)
    elif mode == "wrap":
        indices = indices % n
    return _np.take(a, indices, axis=axis)


def pick(data, index, axis=-1, keepdims=False):
    """data's element at index along axis (a class's score per sample); differentiable in data."""
    axis = axis % data.ndim
    mask = one_hot(index, data.shape[axis], dtype=data.dtype)
    if axis != data.ndim - 1:
        order = list(range(data.ndim - 1))
        order.insert(axis, data.ndim - 1)
        mask = mask.transpose(order)
    return (data * mask).sum(axis=axis, keepdims=keepdims)


# ---- shapes -----------------------------------------------------------------------------------------------------

def concat(*data, dim=1):
    return _np.concatenate(list(data), axis=dim)


def stack(*data, axis=0):
    return _np.stack(list(data), axis=axis)


def split(data, num_outputs, axis=1, squeeze_axis=False):
    parts = _np.split(data, num_outputs, axis=axis)
    if squeeze_axis:
        parts = [p.reshape(p.shape[:axis] + p.shape[axis + 1:]) for p in parts]
    return parts if len(parts) > 1 else parts[0]


def reshape(data, shape):
    return data.reshape(shape)


def transpose(data, axes=None):
    return _np.transpose(data, axes if axes else None)


def expand_dims(data, axis):
    axis = axis % (data.ndim + 1)
    return data.reshape(data.shape[:axis] + (1,) + data.shape[axis:])


def flatten(data):
    """(N, ...) to (N, everything else)."""
    return data.reshape(data.shape[0], -1)


Flatten = flatten


def dot(lhs, rhs, transpose_a=False, transpose_b=False):
    a = lhs.T if transpose_a else lhs
    b = rhs.T if transpose_b else rhs
    return _np.dot(a, b)


def batch_dot(lhs, rhs, transpose_a=False, transpose_b=False):
    """Matrix products of matching batches: (B, n, k) x (B, k, m) -> (B, n, m)."""
    a = lhs.transpose((0, 2, 1)) if transpose_a else lhs
    b = rhs.transpose((0, 2, 1)) if transpose_b else rhs
    return _np.matmul(a, b)


# ---- the network operators under MXNet 1.x's names ------------------------------------------------------------

def FullyConnected(data, weight, bias=None, num_hidden=None, no_bias=False, flatten=True):
    """data W^T + b, W of shape (num_hidden, features); flatten folds every axis after the first."""
    if num_hidden is not None and num_hidden != weight.shape[0]:
        raise ValueError(f"braid: num_hidden {num_hidden} differs from the weight's {weight.shape[0]} rows")
    x = data.reshape(data.shape[0], -1) if flatten and data.ndim != 2 else data
    y = _np.dot(x, weight.T)
    return y if no_bias or bias is None else y + bias


def Convolution(data, weight, bias=None, kernel=None, stride=(1, 1), dilate=(1, 1), pad=(0, 0), num_filter=None,
                num_group=1, no_bias=False, layout=None, **kwargs):
    return _npx.convolution(data, weight, bias, kernel, stride, dilate, pad, num_filter, num_group, no_bias, layout)


def Pooling(data, kernel=(1, 1), pool_type="max", stride=None, pad=(0, 0), global_pool=False, count_include_pad=True,
            layout=None, **kwargs):
    return _npx.pooling(data, kernel, pool_type, stride, pad, global_pool, count_include_pad, layout)


def Dropout(data, p=0.5, **kwargs):
    return _npx.dropout(data, p)


def Activation(data, act_type):
    fns = {"relu": relu, "sigmoid": sigmoid, "tanh": tanh}
    if act_type not in fns:
        raise ValueError(f"braid: act_type {act_type!r} is none of {sorted(fns)}")
    return fns[act_type](data)


def BatchNorm(data, gamma, beta, moving_mean, moving_var, eps=1e-3, momentum=0.9, fix_gamma=True,
              use_global_stats=False, axis=1, **kwargs):
    """Batch normalisation over axis 1: with the batch's statistics while training (autograd.record()),
    updating moving_mean and moving_var in place (moving = momentum * moving + (1 - momentum) * batch), and
    with the moving ones otherwise or with use_global_stats. fix_gamma (MXNet's default) scales by 1."""
    if axis != 1:
        raise ValueError("braid: BatchNorm normalises over axis 1 only")
    if fix_gamma:
        gamma = _np.ones_like(gamma)
    batch_weight = 1.0 - momentum if momentum < 1.0 else 5e-324  # braid weighs the batch; 0 is its default
    training = autograd.is_training() and not use_global_stats
    params = BatchNormParams(ctypes.sizeof(BatchNormParams), float(eps), batch_weight, int(training))
    out = c_tensor()
    check(lib.braid_batch_norm(data.handle, gamma.handle, beta.handle, moving_mean.handle, moving_var.handle,
                               ctypes.byref(params), ctypes.byref(out), None, None))
    return ndarray(out)

