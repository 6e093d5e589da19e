"""NumPy's names over braid arrays: the `np` of MXNet's `from mxnet import np, npx`, which the
"Computational Performance" chapter's MXNet listings import. Creation functions take MXNet's `ctx`
(or `device`) keyword and make float32 unless told otherwise, as MXNet's np does.
"""
import types

import numpy as _numpy

from . import device as _device
from ._lib import c_tensor, lib, shape_array
from .ndarray import (NDArray, argmax, as_array, binary, dims, dot, dtype_code, exact_scalar, from_numpy, is_scalar,
                      ndarray, new, reduce, resolve_device, unary)
from .ndarray import _matmul as matmul  # noqa: F401

float16, float32, float64 = _numpy.float16, _numpy.float32, _numpy.float64
int32, int64, uint8 = _numpy.int32, _numpy.int64, _numpy.uint8
pi, e, inf, nan = _numpy.pi, _numpy.e, _numpy.inf, _numpy.nan

__all__ = ["ndarray", "NDArray", "array", "zeros", "ones", "full", "empty", "arange", "zeros_like", "ones_like",
           "full_like", "dot", "matmul", "negative", "abs", "absolute", "exp", "log", "sqrt", "sign", "square", "tanh",
           "add", "subtract", "multiply", "divide", "true_divide", "power", "maximum", "minimum", "equal", "less",
           "greater", "where", "sum", "mean", "max", "min", "amax", "amin", "argmax", "reshape", "transpose",
           "concatenate", "stack", "split", "linalg", "random", "float16", "float32", "float64", "int32", "int64",
           "uint8", "pi", "e", "inf", "nan"]


def _shape(shape):
    if shape is None:
        return ()
    return dims((shape,)) if hasattr(shape, "__index__") else dims(shape)


def array(obj, dtype=None, ctx=None, device=None):
    """An array holding obj's values (a list, NumPy array, number or braid array) on ctx (default
    cpu(0)); float32 unless dtype says otherwise (a braid array keeps its dtype)."""
    dev = resolve_device(ctx, device)
    if isinstance(obj, ndarray):
        out = obj.as_in_ctx(dev)
        out = out.copy() if out is obj else out
        return out if dtype is None else out.astype(dtype, copy=False)
    data = _numpy.asarray(obj)
    data = data.astype(float32 if dtype is None else (float32 if dtype == "bfloat16" else dtype))
    out = from_numpy(data, dev)
    return out.astype("bfloat16") if dtype == "bfloat16" else out


def full(shape, fill_value, dtype=None, ctx=None, device=None):
    shape = _shape(shape)
    return new(lib.braid_full, _device.context_handle(), resolve_device(ctx, device).index,
               dtype_code(float32 if dtype is None else dtype), len(shape), shape_array(shape), exact_scalar(fill_value))


def zeros(shape, dtype=None, ctx=None, device=None):
    return full(shape, 0.0, dtype, ctx, device)


def ones(shape, dtype=None, ctx=None, device=None):
    return full(shape, 1.0, dtype, ctx, device)


def empty(shape, dtype=None, ctx=None, device=None):
    """An uninitialised array."""
    shape = _shape(shape)
    return new(lib.braid_tensor_empty, _device.context_handle(), resolve_device(ctx, device).index,
               dtype_code(float32 if dtype is None else dtype), len(shape), shape_array(shape))


def full_like(a, fill_value, dtype=None, ctx=None, device=None):
    dev = a.ctx if ctx is None and device is None else resolve_device(ctx, device)
    return full(a.shape, fill_value, a.dtype if dtype is None else dtype, dev)


def zeros_like(a, dtype=None, ctx=None, device=None):
    return full_like(a, 0.0, dtype, ctx, device)


def ones_like(a, dtype=None, ctx=None, device=None):
    return full_like(a, 1.0, dtype, ctx, device)


def arange(start, stop=None, step=1, dtype=None, ctx=None, device=None):
    """[start, stop) by step; float32 unless dtype says otherwise (MXNet's np.arange)."""
    if stop is None:
        start, stop = 0, start
    return new(lib.braid_arange, _device.context_handle(), resolve_device(ctx, device).index,
               dtype_code(float32 if dtype is None else dtype), float(start), float(stop), float(step))


def _elementwise(name):
    def fn(x):
        return unary(name, x)
    fn.__name__ = name
    fn.__doc__ = f"Elementwise {name} of a braid array."
    return fn


negative, abs, exp, log, sqrt, sign, square, tanh = (
    _elementwise(n) for n in ("negative", "abs", "exp", "log", "sqrt", "sign", "square", "tanh"))
absolute = abs


def _binary_fn(name):
    def fn(a, b):
        return binary(name, a, b)
    fn.__name__ = name
    fn.__doc__ = f"Elementwise {name} with NumPy broadcasting."
    return fn


add, subtract, multiply, divide, power, maximum, minimum, equal, less, greater = (
    _binary_fn(n) for n in ("add", "subtract", "multiply", "divide", "power", "maximum", "minimum", "equal",
                            "less", "greater"))
true_divide = divide


def where(condition, x, y):
    """x where condition is nonzero, else y (NumPy broadcasting; numbers take the other operand's
    dtype and device)."""
    arrays = [v for v in (condition, x, y) if isinstance(v, ndarray)]
    if not arrays:
        raise TypeError("braid: where needs a braid array among its operands")
    like = arrays[0]

    def lift(v, dtype):
        return v if isinstance(v, ndarray) else full((), v, dtype, like.ctx) if is_scalar(v) else as_array(v, like)

    def number_dtype(v):
        """A number's dtype: the array operand's, unless that is an integer dtype and v is not an
        integer (0.5 beside int32 makes the result float32, as x + 0.5 does)."""
        other = next((a.dtype for a in (x, y) if isinstance(a, ndarray)), float32)
        integral = isinstance(v, (int, _numpy.integer)) or (isinstance(v, float) and v.is_integer())
        floating_other = other == "bfloat16" or _numpy.dtype(other).kind == "f"
        return other if floating_other or integral else float32
    c = lift(condition, float32)
    a = lift(x, number_dtype(x) if is_scalar(x) else None)
    b = lift(y, number_dtype(y) if is_scalar(y) else None)
    return new(lib.braid_where, c.handle, a.handle, b.handle)


def sum(a, axis=None, keepdims=False):
    return reduce("sum", a, axis, keepdims)


def mean(a, axis=None, keepdims=False):
    return reduce("mean", a, axis, keepdims)


def max(a, axis=None, keepdims=False):
    return reduce("max", a, axis, keepdims)


def min(a, axis=None, keepdims=False):
    return reduce("min", a, axis, keepdims)


amax, amin = max, min


def reshape(a, newshape):
    return a.reshape(newshape)


def transpose(a, axes=None):
    return a.transpose() if axes is None else a.transpose(axes)


def concatenate(seq, axis=0):
    arrays = list(seq)
    if not arrays:
        raise ValueError("braid: concatenate needs at least one array")
    arrays = [v if isinstance(v, ndarray) else as_array(v, next(a for a in arrays if isinstance(a, ndarray)))
              for v in arrays]
    handles = (c_tensor * len(arrays))(*[a.handle for a in arrays])
    return new(lib.braid_concat, len(arrays), handles, int(axis))


def stack(arrays, axis=0):
    arrays = list(arrays)
    if not arrays:
        raise ValueError("braid: stack needs at least one array")
    ndim = arrays[0].ndim
    if axis < -(ndim + 1) or axis > ndim:
        raise ValueError(f"braid: axis {axis} is out of range for stacking {ndim}-d arrays")
    axis = axis + ndim + 1 if axis < 0 else axis
    return concatenate([a.reshape(a.shape[:axis] + (1,) + a.shape[axis:]) for a in arrays], axis)


def split(ary, indices_or_sections, axis=0):
    """NumPy's split: equal sections (which must divide the axis) or the parts between indices."""
    dim = ary.shape[axis]
    if isinstance(indices_or_sections, int):
        if indices_or_sections <= 0 or dim % indices_or_sections:
            raise ValueError(f"braid: array split does not result in an equal division ({dim} by "
                             f"{indices_or_sections})")
        size = dim // indices_or_sections
        cuts = [i * size for i in range(1, indices_or_sections)]
    else:
        cuts = list(indices_or_sections)
    bounds = [0] + cuts + [dim]
    key = [slice(None)] * ary.ndim
    parts = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        key[axis] = slice(lo, hi)
        parts.append(ary[tuple(key)])
    return parts


def _norm(x, ord=None, axis=None, keepdims=False):
    """The 2-norm (Frobenius for a matrix) over axis, or over every element."""
    if ord not in (None, 2, "fro"):
        raise ValueError(f"braid: linalg.norm supports the 2-norm only, not ord={ord!r}")
    return reduce("norm", x, axis, keepdims)


linalg = types.SimpleNamespace(norm=_norm)


def _random_draw(fn, a, b, size, dtype, ctx, device):
    shape = _shape(size)
    return new(fn, _device.context_handle(), resolve_device(ctx, device).index,
               dtype_code(float32 if dtype is None else dtype), len(shape), shape_array(shape), float(a), float(b))


def _uniform(low=0.0, high=1.0, size=None, dtype=None, ctx=None, device=None):
    """Uniform in [low, high) (braid's counter-based generator; braid.random.seed seeds it)."""
    return _random_draw(lib.braid_random_uniform, low, high, size, dtype, ctx, device)


def _normal(loc=0.0, scale=1.0, size=None, dtype=None, ctx=None, device=None):
    return _random_draw(lib.braid_random_normal, loc, scale, size, dtype, ctx, device)


random = types.SimpleNamespace(uniform=_uniform, normal=_normal, seed=_device.seed)
