"""x[key] and x[key] = value with NumPy's rules: basic indexing (ints, slices with any step, None, ...)
and advanced indexing (integer arrays and lists, boolean masks), over braid_slice, braid_take, transpose
and reshape, so every result is differentiable in x. A basic index whose elements are contiguous in x
(x[i], x[a:b], x[i, a:b], x[...]) gives a view sharing x's memory (braid_view), as MXNet's basic indexing
does, except while autograd records or a graph is traced; every other result is a copy. Assignment
writes into x's storage.

Advanced indices are read on the host (a braid array index is waited for): their bounds are checked
there and raise IndexError at once, as NumPy's do, and a boolean mask's True count decides the shape."""
import numbers

import numpy

from ._lib import BraidError, lib, shape_array
from .ndarray import ndarray, new


_EMPTY_NEW_AXIS = object()  # x[False]: a new axis that the index leaves empty


def _is_int(k):
    if isinstance(k, (bool, numpy.bool_)):
        return False
    if isinstance(k, numbers.Integral):
        return True
    return isinstance(k, ndarray) and k.ndim == 0 and k.dtype.kind in "iu"


def _as_index_array(k):
    """An advanced index as a NumPy array (int64 or bool), or None when k is a basic index."""
    if isinstance(k, (slice, type(None))) or k is Ellipsis or _is_int(k):
        return None
    if isinstance(k, ndarray):  # a bool braid array (x[x > 0]) is a mask, an integer one indices
        k = k.asnumpy()
    data = numpy.asarray(k)
    if data.dtype == numpy.bool_:
        return data
    if data.dtype.kind not in "iu":
        if data.size == 0:  # x[[]] is an empty integer index, as in NumPy
            return data.astype(numpy.int64)
        raise IndexError(f"braid: only integers, slices (`:`), ellipsis (`...`), None and integer or boolean arrays "
                         f"are valid indices, not {k!r}")
    return data.astype(numpy.int64)


def _normalize(shape, key):
    """The key as a list of entries, one per consumed axis (int, slice or int64 array) or None (a new
    axis), with Ellipsis expanded and boolean masks turned into one int array per axis they cover."""
    if not isinstance(key, tuple):
        key = (key,)
    entries = []
    for k in key:
        if isinstance(k, (bool, numpy.bool_)):  # x[True]: a 0-d mask
            entries.append(numpy.asarray(k))
            continue
        a = _as_index_array(k)
        entries.append(k if a is None else a)
    consumed = sum(e.ndim if isinstance(e, numpy.ndarray) and e.dtype == numpy.bool_ else
                   0 if e is None or e is Ellipsis else 1 for e in entries)  # (a 0-d mask: none)
    ellipses = [i for i, e in enumerate(entries) if e is Ellipsis]
    if len(ellipses) > 1:
        raise IndexError("braid: an index can only have a single ellipsis ('...')")
    if consumed > len(shape):
        raise IndexError(f"braid: too many indices for array: array is {len(shape)}-dimensional, but {consumed} "
                         "were indexed")
    fill = [slice(None)] * (len(shape) - consumed)
    if ellipses:
        at = ellipses[0]
        entries = entries[:at] + fill + entries[at + 1:]
    else:
        entries = entries + fill
    out, axis = [], 0
    for e in entries:
        if isinstance(e, numpy.ndarray) and e.dtype == numpy.bool_:
            covered = shape[axis:axis + e.ndim]
            if e.ndim and e.shape != tuple(covered):
                raise IndexError(f"braid: boolean index of shape {e.shape} does not match the indexed dimensions "
                                 f"{tuple(covered)}")
            if e.ndim == 0:  # x[True] adds an axis of 1, x[False] one of 0
                out.append(None if e else _EMPTY_NEW_AXIS)
                continue
            out.extend(numpy.nonzero(e))
            axis += e.ndim
        else:
            out.append(e)
            axis += 0 if e is None else 1
    return out


def getitem(x, key):
    shape = x.shape
    entries = _normalize(shape, key)
    # None: a new axis of 1, indexed with `:` (x[False]'s with the empty slice).
    if any(e is None or e is _EMPTY_NEW_AXIS for e in entries):
        new_shape, fixed = [], []
        axis = 0
        for e in entries:
            if e is None or e is _EMPTY_NEW_AXIS:
                new_shape.append(1)
                fixed.append(slice(None) if e is None else slice(0, 0))
            else:
                new_shape.append(shape[axis])
                fixed.append(e)
                axis += 1
        x = x.reshape(tuple(new_shape))
        shape, entries = tuple(new_shape), fixed
    advanced = [i for i, e in enumerate(entries) if isinstance(e, numpy.ndarray)]
    if advanced:  # ints count as advanced indices beside arrays (NumPy's rule)
        entries = [numpy.asarray(int(e), numpy.int64) if _is_int(e) else e for e in entries]
        advanced = [i for i, e in enumerate(entries) if isinstance(e, numpy.ndarray)]
    # Basic part: every slice and int in one braid_slice (positive steps), negative steps by take.
    begin, end, step, dropped, reversed_axes = [], [], [], [], []
    for axis, (dim, e) in enumerate(zip(shape, entries)):
        if isinstance(e, slice):
            start, stop, stride = e.indices(dim)
            count = len(range(start, stop, stride))
            if stride > 0:
                begin.append(start), end.append(start + (count - 1) * stride + 1 if count else start)
                step.append(stride)
            else:  # the same elements in increasing order, reversed below
                low = start + (count - 1) * stride if count else 0
                begin.append(low), end.append(start + 1 if count else 0), step.append(-stride)
                reversed_axes.append(axis)
        elif isinstance(e, numpy.ndarray):
            begin.append(0), end.append(dim), step.append(1)
        else:
            i = int(e)
            if i < -dim or i >= dim:
                raise IndexError(f"braid: index {i} is out of bounds for axis {axis} with size {dim}")
            i = i + dim if i < 0 else i
            begin.append(i), end.append(i + 1), step.append(1)
            dropped.append(axis)
    if not advanced and not reversed_axes:
        window = _view(x, shape, begin, end, step, dropped)
        if window is not None:
            return window
    if shape and (any(b != 0 for b in begin) or any(e != d for e, d in zip(end, shape)) or any(s != 1 for s in step)):
        x = new(lib.braid_slice, x._handle, shape_array(begin), shape_array(end), shape_array(step))
    elif not advanced and not dropped and not reversed_axes:
        x = x.copy()  # while autograd records, a copy (differentiable), as MXNet's
    for axis in reversed_axes:
        n = x.shape[axis]
        x = _take(x, numpy.arange(n - 1, -1, -1, dtype=numpy.int64), axis)
    if not advanced:
        if dropped:
            x = x.reshape(tuple(d for a, d in enumerate(x.shape) if a not in dropped))
        return x
    return _advanced(x, entries, advanced)


def _view(x, shape, begin, end, step, dropped):
    """The basic index's elements as a view of x's memory (braid_view) where they are contiguous in it,
    as MXNet's views are: some leading axes picked at one position, then one axis sliced with step 1,
    then whole axes (x[i], x[a:b], x[i, a:b], x[...]). None when they are not, or while autograd records
    or a trace runs: then the result is a copy, which autograd and graphs see as an op."""
    from . import autograd
    if autograd.is_recording():
        return None
    counts = [len(range(b, e, s)) for b, e, s in zip(begin, end, step)]
    axis = 0
    while axis < len(shape) and counts[axis] == 1:  # picked at one position
        axis += 1
    if axis < len(shape) and step[axis] != 1 and counts[axis] > 1:
        return None
    if any(begin[a] != 0 or counts[a] != shape[a] for a in range(axis + 1, len(shape))):
        return None
    offset, stride = 0, 1
    for a in reversed(range(len(shape))):
        offset += begin[a] * stride
        stride *= shape[a]
    out_shape = tuple(c for a, c in enumerate(counts) if a not in dropped)
    try:
        return new(lib.braid_view, x._handle, offset if all(counts) else 0, len(out_shape), shape_array(out_shape))
    except BraidError as e:
        if e.status == "BRAID_ERR_INVALID_STATE":  # a trace runs: the copy is what it captures
            return None
        raise


def _advanced(x, entries, advanced):
    """x (sliced already) indexed by the int arrays at the axes `advanced`: their broadcast shape takes
    their place when they are adjacent, else goes first (NumPy's rule)."""
    shape = x.shape
    try:
        arrays = numpy.broadcast_arrays(*(entries[a] for a in advanced))
    except ValueError:
        raise IndexError("braid: shape mismatch: indexing arrays could not be broadcast together with shapes " +
                         " ".join(str(entries[a].shape) for a in advanced)) from None
    linear = numpy.zeros(arrays[0].shape, numpy.int64)
    for a, idx in zip(advanced, arrays):
        dim = shape[a]
        if idx.size and (idx.min() < -dim or idx.max() >= dim):
            bad = idx[(idx < -dim) | (idx >= dim)].flat[0]
            raise IndexError(f"braid: index {bad} is out of bounds for axis {a} with size {dim}")
        linear = linear * dim + numpy.where(idx < 0, idx + dim, idx)
    adjacent = advanced == list(range(advanced[0], advanced[-1] + 1))
    place = advanced[0] if adjacent else 0
    rest = [a for a in range(len(shape)) if a not in advanced]
    order = rest[:place] + advanced + rest[place:]
    if order != list(range(len(shape))):
        x = x.transpose(tuple(order))
    merged = 1
    for a in advanced:
        merged *= shape[a]
    kept = [shape[a] for a in rest]
    x = x.reshape(tuple(kept[:place] + [merged] + kept[place:]))
    return _take(x, linear, place)


def _take(x, indices, axis):
    """braid_take of host indices (an int64 NumPy array) along axis."""
    from .ndarray import from_numpy
    index = from_numpy(numpy.ascontiguousarray(indices, numpy.int64), x.ctx)
    return new(lib.braid_take, x._handle, index._handle, int(axis))


def _host_key(key):
    """The key with braid arrays read into NumPy arrays (what NumPy's own indexing takes)."""
    parts = key if isinstance(key, tuple) else (key,)
    parts = tuple(p.asnumpy() if isinstance(p, ndarray) else p for p in parts)
    return parts if isinstance(key, tuple) else parts[0]


def setitem(x, key, value):
    """x[key] = value for any key x[key] takes: value broadcast to x[key]'s shape and written where the
    key points (a position named twice gets the last value, as in NumPy). The positions are worked out
    on the host; the new values are gathered and selected on x's device, then written into x's storage."""
    from .ndarray import binary, from_numpy, is_scalar
    from .np import where
    shape = x.shape
    try:
        positions = numpy.arange(x.size, dtype=numpy.int64).reshape(shape)[_host_key(key)]
    except IndexError as e:
        raise IndexError(f"braid: {e}") from None
    positions = numpy.asarray(positions, numpy.int64)
    if positions.size == 0:
        return
    source = numpy.full(x.size, -1, numpy.int64)
    source[positions.ravel()] = numpy.arange(positions.size, dtype=numpy.int64)  # the last write wins
    chosen = (source >= 0).reshape(shape)
    mask = from_numpy(chosen.astype(numpy.uint8), x.ctx)
    if is_scalar(value) and not isinstance(value, (bool, numpy.bool_)):
        new_values = where(mask, value, x)
    else:
        if not isinstance(value, ndarray):
            data = numpy.asarray(value)
            value = from_numpy(data.astype(x.dtype if x.dtype != "bfloat16" else numpy.float32), x.ctx)
        if value.shape != positions.shape:
            try:
                numpy.broadcast_shapes(value.shape, positions.shape)
            except ValueError:
                raise ValueError(f"braid: could not broadcast input array from shape {value.shape} into shape "
                                 f"{positions.shape}") from None
            # broadcast by adding -0.0 (0 for integers), which leaves every value as it is
            value = binary("add", value, from_numpy(numpy.full(positions.shape, -0.0, numpy.float32), x.ctx)
                           .astype(value.dtype))
        if value.dtype_code != x.dtype_code:
            value = value.astype(x.dtype)
        gathered = _take(value.reshape(-1), numpy.where(source >= 0, source, 0).reshape(shape), 0)
        new_values = where(mask, gathered, x)
    if new_values.dtype_code != x.dtype_code:  # x[0] = 2.5 on integers stores 2, as NumPy's assignment
        new_values = new_values.astype(x.dtype)
    new_values.copyto(x)
