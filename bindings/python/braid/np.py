"""NumPy's names over braid arrays: the `np` of MXNet's `from mxnet import np, npx`, which the
"Computational Performance" chapter's MXNet listings import. Creation functions take MXNet's `ctx`
(or `device`) keyword and make float32 unless told otherwise, as MXNet's np does.
"""
import types

import numpy as _numpy

from . import device as _device
from ._lib import c_tensor, lib, shape_array
from .ndarray import (NDArray, argmax, as_array, binary, bfloat16, compare, dims, dot, dtype_code, exact_scalar,
                      from_numpy, is_scalar, logical, ndarray, new, reduce, resolve_device, unary)
from .ndarray import _matmul as matmul  # noqa: F401

float16, float32, float64 = _numpy.float16, _numpy.float32, _numpy.float64
int32, int64, uint8, bool_ = _numpy.int32, _numpy.int64, _numpy.uint8, _numpy.bool_
pi, e, inf, nan = _numpy.pi, _numpy.e, _numpy.inf, _numpy.nan

__all__ = ["ndarray", "NDArray", "array", "zeros", "ones", "full", "empty", "arange", "zeros_like", "ones_like",
           "full_like", "dot", "matmul", "negative", "abs", "absolute", "exp", "log", "sqrt", "sign", "square", "tanh",
           "add", "subtract", "multiply", "divide", "true_divide", "power", "maximum", "minimum", "equal", "less",
           "greater", "not_equal", "less_equal", "greater_equal", "logical_and", "logical_or", "logical_xor",
           "logical_not", "any", "all", "count_nonzero", "nonzero", "floor_divide", "mod", "remainder", "divmod",
           "take", "from_dlpack", "where", "sum", "mean", "max", "min", "amax", "amin", "argmax", "reshape",
           "transpose", "concatenate", "stack", "split", "linalg", "random", "float16", "float32", "float64",
           "int32", "int64", "uint8", "bool_", "bfloat16", "pi", "e", "inf", "nan"]


def _shape(shape):
    if shape is None:
        return ()
    return dims((shape,)) if hasattr(shape, "__index__") else dims(shape)


def array(obj, dtype=None, ctx=None, device=None):
    """An array holding obj's values (a list, NumPy array, number or braid array) on ctx (default
    cpu(0)); float32 unless dtype says otherwise (a braid array keeps its dtype, and bools stay bool)."""
    dev = resolve_device(ctx, device)
    if isinstance(obj, ndarray):
        out = obj.as_in_ctx(dev)
        out = out.copy() if out is obj else out
        return out if dtype is None else out.astype(dtype, copy=False)
    data = _numpy.asarray(obj)
    if dtype is None and data.dtype == bool_:
        dtype = bool_
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


def _binary_fn(name, run=binary, result=""):
    def fn(x1, x2):
        return run(name, x1, x2)
    fn.__name__ = name
    fn.__doc__ = f"Elementwise {name} with NumPy broadcasting{result}."
    return fn


add, subtract, multiply, divide, power, maximum, minimum, floor_divide, mod = (
    _binary_fn(n) for n in ("add", "subtract", "multiply", "divide", "power", "maximum", "minimum", "floor_divide",
                            "mod"))
equal, not_equal, less, less_equal, greater, greater_equal = (
    _binary_fn(n, compare, ": a bool array (NaN compares false but in not_equal)")
    for n in ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal"))


def _truth(x, like=None):
    """x as a bool array (nonzero is true), for the logical functions, which take any dtype."""
    if not isinstance(x, ndarray):
        if like is None:
            raise TypeError("braid: a logical function needs a braid array among its operands")
        x = as_array(x, like)
    return x.astype(bool_, copy=False)


def logical_and(x1, x2):
    like = x1 if isinstance(x1, ndarray) else x2
    return logical("and", _truth(x1, like), _truth(x2, like))


def logical_or(x1, x2):
    like = x1 if isinstance(x1, ndarray) else x2
    return logical("or", _truth(x1, like), _truth(x2, like))


def logical_xor(x1, x2):
    like = x1 if isinstance(x1, ndarray) else x2
    return logical("xor", _truth(x1, like), _truth(x2, like))


def logical_not(x):
    return compare("equal", _truth(x), False)


def any(a, axis=None, keepdims=False):  # noqa: A001 (NumPy's name)
    """Whether any element (along axis) is nonzero: a bool array."""
    return a.any(axis, keepdims)


def all(a, axis=None, keepdims=False):  # noqa: A001 (NumPy's name)
    """Whether every element (along axis) is nonzero: a bool array."""
    return a.all(axis, keepdims)


def count_nonzero(a, axis=None, keepdims=False):
    """The number of nonzero elements (along axis), int64."""
    return reduce("sum", _truth(a), axis, keepdims)


def nonzero(a):
    """The indices of the nonzero elements, one int64 array per axis (read on the host: the count decides
    the shapes)."""
    return tuple(from_numpy(i.astype(_numpy.int64), a.ctx) for i in _numpy.nonzero(a.asnumpy()))
true_divide = divide
remainder = mod  # NumPy's other name: Python's %, whose result takes the divisor's sign


def divmod(x1, x2):  # noqa: A001 (NumPy's name)
    """(x1 // x2, x1 % x2), elementwise, as NumPy's divmod."""
    return floor_divide(x1, x2), mod(x1, x2)


def from_dlpack(x):
    """A braid array on cpu(0) with the values of a DLPack producer in host memory (a NumPy array, a
    PyTorch CPU tensor), copied; the other way, NumPy's and PyTorch's from_dlpack share a braid array's
    memory (braid/dlpack.py)."""
    from . import dlpack
    return dlpack.from_dlpack(x)


def take(a, indices, axis=None, mode="raise"):
    """numpy.take: the elements (axis=None, of the flattened array) or slices along `axis` that `indices`
    picks; negative indices count from the end. An index out of range raises BraidError when the
    result is read (braid arrays as indices are read when the op runs; mode="raise" only)."""
    if mode != "raise":
        raise NotImplementedError(f"braid: np.take with mode={mode!r} (only 'raise')")
    if not isinstance(a, ndarray):
        raise TypeError(f"braid: take needs a braid array, not {type(a).__name__}")
    if axis is None:
        a, axis = a.reshape(-1), 0
    if not isinstance(indices, ndarray):
        data = _numpy.asarray(indices)
        if data.dtype.kind not in "iu":
            raise IndexError(f"braid: take's indices must be integers, not {data.dtype}")
        indices = array(data.astype(_numpy.int64), dtype="int64", ctx=a.ctx)
    return new(lib.braid_take, a.handle, indices.handle, int(axis))


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


def _randint(low, high=None, size=None, dtype=int64, ctx=None, device=None):
    """Integers uniform in [low, high) ([0, low) without high), int64 by default: uniform float64 draws of
    braid's generator scaled to the span and truncated, so every value of a span up to 2^53 is reachable
    and equally likely."""
    low, high = (0, int(low)) if high is None else (int(low), int(high))
    if high <= low:
        raise ValueError(f"braid: randint needs low < high, not [{low}, {high})")
    span = high - low
    if span > 2 ** 53:
        raise ValueError(f"braid: randint spans up to 2^53 values, not {span}")
    u = _uniform(0.0, 1.0, size, float64, ctx, device)
    scaled = (u * float(span)).astype(int64)
    return (minimum(scaled, span - 1) + low).astype(dtype)


def _keys(n, ctx, device):
    """n float64 keys from braid's generator, on the host: their argsort is a uniform permutation."""
    return _uniform(0.0, 1.0, (int(n),), float64, ctx, device).asnumpy()


def _permutation(x, ctx=None, device=None):
    """A shuffled arange(x) for an int, else a shuffled copy of x along its first axis (on x's device)."""
    if isinstance(x, (int, _numpy.integer)):
        return array(_numpy.argsort(_keys(x, ctx, device), kind="stable"), dtype=int64, ctx=ctx, device=device)
    if not isinstance(x, ndarray) or x.ndim == 0:
        raise TypeError("braid: permutation takes an int or an array with a first axis")
    order = _numpy.argsort(_keys(x.shape[0], x.ctx, None), kind="stable")
    return array(x.asnumpy()[order], dtype=x.dtype, ctx=x.ctx)


def _shuffle(x):
    """Shuffles x in place along its first axis; returns None, as NumPy's does."""
    x[:] = _permutation(x)


def _choice(a, size=None, replace=True, p=None, ctx=None, device=None):
    """Samples of arange(a) for an int, else of a 1-d array: with replacement by default, weighted by p
    (non-negative, summing to 1) if given."""
    pool = _numpy.arange(int(a)) if isinstance(a, (int, _numpy.integer)) else None
    if pool is None:
        if not isinstance(a, ndarray) or a.ndim != 1:
            raise ValueError("braid: choice takes an int or a 1-d array")
        pool, ctx, device = a.asnumpy(), a.ctx, None
    n, shape = len(pool), _shape(size)
    count = int(_numpy.prod(shape)) if shape else 1
    if n == 0:
        raise ValueError("braid: choice from an empty population")
    if p is not None:
        weights = _numpy.asarray(p.asnumpy() if isinstance(p, ndarray) else p, dtype=_numpy.float64)
        if weights.shape != (n,) or (weights < 0).any() or not _numpy.isclose(weights.sum(), 1.0):
            raise ValueError("braid: choice's p must be n non-negative weights summing to 1")
    if not replace:
        if count > n:
            raise ValueError(f"braid: cannot take {count} samples without replacement from {n}")
        keys = _keys(n, ctx, device)
        if p is not None:  # weighted sampling without replacement: the largest u^(1/w) (Efraimidis-Spirakis)
            with _numpy.errstate(divide="ignore"):
                keys = _numpy.where(weights > 0, _numpy.log(keys) / weights, -_numpy.inf)
            picked = _numpy.argsort(-keys, kind="stable")[:count]
        else:
            picked = _numpy.argsort(keys, kind="stable")[:count]
    elif p is not None:
        cdf = _numpy.cumsum(weights)
        cdf /= cdf[-1]
        picked = _numpy.minimum(_numpy.searchsorted(cdf, _keys(count, ctx, device), side="right"), n - 1)
    else:
        picked = _randint(0, n, (count,), int64, ctx, device).asnumpy()
    values = pool[picked].reshape(shape)
    dtype = int64 if isinstance(a, (int, _numpy.integer)) else a.dtype
    if not shape and isinstance(a, (int, _numpy.integer)):
        return values.item()
    return array(values, dtype=dtype, ctx=ctx, device=device)


random = types.SimpleNamespace(uniform=_uniform, normal=_normal, seed=_device.seed, randint=_randint,
                               permutation=_permutation, shuffle=_shuffle, choice=_choice)
