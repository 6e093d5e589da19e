"""braid's array: a braid_tensor handle with NumPy's operators and MXNet's methods (copyto,
as_in_ctx, wait_to_read, attach_grad, grad, backward).

Every operation is pushed to braid's engine and returns at once; reading values (asnumpy, item,
printing) waits for the ops that produce them, as in MXNet. Operands follow NumPy: broadcasting, and
PyTorch's type promotion between arrays (abi/braid.h, braid_binary); a Python number keeps the
array's dtype where it fits (x + 1 on a float32 array stays float32).
"""
import ctypes
import numbers
import operator

import numpy

from . import device as _device
from ._lib import BraidError, check, c_tensor, fast, lib, shape_array

# braid_dtype values and the NumPy dtype each reads back as. bfloat16 has no NumPy dtype: its arrays
# read back as float32 (exactly: every bfloat16 is a float32).
_DTYPES = [
    (0, numpy.dtype(numpy.float32)), (1, numpy.dtype(numpy.float64)), (2, numpy.dtype(numpy.int32)),
    (3, numpy.dtype(numpy.int64)), (4, numpy.dtype(numpy.uint8)), (5, numpy.dtype(numpy.float16)),
    (7, numpy.dtype(numpy.bool_)),
]
_BFLOAT16 = 6
_BOOL = 7


class BFloat16DType:
    """The dtype of braid's bfloat16 arrays (`x.dtype`, `np.bfloat16`): NumPy has no bfloat16, so this
    stands in for its dtype object, with NumPy's attributes (name, itemsize, kind) and equal to the name
    "bfloat16". Arrays of it read back (asnumpy) as float32, which holds every bfloat16 exactly."""

    name, str, kind, itemsize, char = "bfloat16", "bfloat16", "f", 2, "E"
    type = None  # no NumPy scalar type

    def __eq__(self, other):
        return isinstance(other, BFloat16DType) or (isinstance(other, str) and other == "bfloat16")

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash("bfloat16")

    def __repr__(self):
        return "dtype('bfloat16')"

    __str__ = lambda self: "bfloat16"  # noqa: E731


bfloat16 = BFloat16DType()
_CODE_OF = {dt: code for code, dt in _DTYPES}
_DTYPE_OF = {code: dt for code, dt in _DTYPES}

UNARY = dict(negative=0, abs=1, exp=2, log=3, sqrt=4, relu=5, sigmoid=6, tanh=7, square=8, sign=9)
BINARY = dict(add=0, subtract=1, multiply=2, divide=3, power=4, maximum=5, minimum=6, equal=7, less=8, greater=9,
              floor_divide=10, mod=11)
REDUCE = dict(sum=0, mean=1, max=2, min=3, norm=4)
COMPARE = dict(equal=0, not_equal=1, less=2, less_equal=3, greater=4, greater_equal=5)
_SWAPPED = dict(equal="equal", not_equal="not_equal", less="greater", less_equal="greater_equal", greater="less",
                greater_equal="less_equal")
float32 = numpy.float32


def dtype_code(dtype):
    """braid_dtype of a NumPy dtype (or its name); "bfloat16" and np.bfloat16 name braid's bfloat16."""
    if isinstance(dtype, BFloat16DType) or (isinstance(dtype, str) and dtype == "bfloat16"):
        return _BFLOAT16
    try:
        code = _CODE_OF.get(numpy.dtype(dtype))
    except TypeError:
        code = None
    if code is None:
        raise TypeError(f"braid: dtype {dtype!r} is none of float32, float64, int32, int64, uint8, float16, "
                        "bfloat16, bool")
    return code


def resolve_device(ctx=None, device=None):
    """The Device named by MXNet's `ctx` or its later `device` keyword; cpu(0) when neither is given."""
    if ctx is not None and device is not None and ctx != device:
        raise ValueError(f"braid: ctx={ctx!r} and device={device!r} disagree")
    chosen = ctx if ctx is not None else device
    if chosen is None:
        return _device.cpu()
    if not isinstance(chosen, _device.Device):
        raise TypeError(f"braid: a device is braid.cpu(i), braid.gpu(i) or braid.vulkan(i), not {chosen!r}")
    return chosen


_release = lib.braid_tensor_release
_byref = ctypes.byref


def new(fn, *args):
    """Calls a C function whose last argument receives a new tensor, and wraps that tensor."""
    out = c_tensor()
    status = fn(*args, _byref(out))
    if status:
        check(status)
    return ndarray(out)


def dims(values):
    """A tuple of ints from a shape or axes, refusing what is not an integer (2.5, "3") as NumPy does."""
    try:
        return tuple(operator.index(v) for v in values)
    except TypeError:
        raise TypeError(f"braid: dimensions and axes are integers, not {values!r}") from None


def exact_scalar(value):
    """value as the double the C API takes; a Python int beyond 2**53 would be rounded, so it is refused."""
    if isinstance(value, (int, numpy.integer)) and not isinstance(value, bool) and abs(int(value)) > 2 ** 53:
        raise ValueError(f"braid: {value} cannot be passed as a number exactly (beyond 2**53); "
                         "use an int64 array: np.array([value], dtype='int64')")
    return float(value)


def is_scalar(value):
    return isinstance(value, (numbers.Number, numpy.generic)) and not isinstance(value, complex)


class _CtypesArray:
    """The ctypes path's owner of an array's braid_tensor. The compiled path's is braid._fast.Array, which
    also runs the arithmetic operators (docs/PYTHON.md, "The compiled path")."""

    __slots__ = ("_handle", "__weakref__")

    def __init__(self, handle):
        self._handle = handle  # owns one reference

    def __del__(self):
        try:
            _release(self._handle)
        except (AttributeError, TypeError):  # a failed __init__, or the interpreter is shutting down
            pass


COMPILED = fast is not None  # whether the operators run through braid._fast


class ndarray(fast.Array if COMPILED else _CtypesArray):
    """An n-dimensional array on one braid device (MXNet's mxnet.numpy.ndarray)."""

    __slots__ = ()
    __array_priority__ = 100.0  # numpy_array + braid_array goes to braid's __radd__

    # ---- what it is ----------------------------------------------------------------------------
    @property
    def handle(self):
        """The braid_tensor (for ctypes calls of the C API; the array keeps it alive)."""
        return self._handle

    @property
    def shape(self):
        ndim = ctypes.c_int32()
        check(lib.braid_tensor_ndim(self._handle, ctypes.byref(ndim)))
        dims = (ctypes.c_int64 * 8)()
        check(lib.braid_tensor_shape(self._handle, dims))
        return tuple(dims[i] for i in range(ndim.value))

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return int(numpy.prod(self.shape, dtype=numpy.int64))

    def __len__(self):
        shape = self.shape
        if not shape:
            raise TypeError("braid: len() of a 0-d array")
        return shape[0]

    @property
    def dtype_code(self):
        code = ctypes.c_int()
        check(lib.braid_tensor_dtype(self._handle, ctypes.byref(code)))
        return code.value

    @property
    def dtype(self):
        """The NumPy dtype; for bfloat16, which NumPy lacks, braid's stand-in (np.bfloat16, equal to
        "bfloat16")."""
        code = self.dtype_code
        return bfloat16 if code == _BFLOAT16 else _DTYPE_OF[code]

    @property
    def ctx(self):
        index = ctypes.c_int32()
        check(lib.braid_tensor_device(self._handle, ctypes.byref(index)))
        return _device._device_of_index(index.value)

    context = ctx
    device = ctx

    # ---- values --------------------------------------------------------------------------------
    def wait_to_read(self):
        """Waits for the ops that write this array; raises the error of one that failed."""
        check(lib.braid_tensor_wait_to_read(self._handle))

    def asnumpy(self):
        """A NumPy copy of the values (waits for them)."""
        source = self if self.dtype_code != _BFLOAT16 else self.astype(numpy.float32)
        out = numpy.empty(source.shape, dtype=source.dtype)
        check(lib.braid_tensor_to_host(source._handle, out.ctypes.data, out.nbytes))
        return out

    def __dlpack__(self, stream=None, **kwargs):
        """A DLPack capsule over this CPU array's memory, shared (braid/dlpack.py)."""
        from . import dlpack
        return dlpack.export(self, stream, **kwargs)

    def __dlpack_device__(self):
        from . import dlpack
        return dlpack.device_of(self)

    def __array__(self, dtype=None):
        a = self.asnumpy()
        return a if dtype is None else a.astype(dtype)

    def item(self):
        if self.size != 1:
            raise ValueError(f"braid: item() of an array of {self.size} elements (only one-element arrays)")
        return self.asnumpy().reshape(()).item()

    def asscalar(self):
        """The value of a one-element array as a NumPy scalar (MXNet 1.x's NDArray.asscalar)."""
        if self.size != 1:
            raise ValueError(f"braid: asscalar() of an array of {self.size} elements (only one-element arrays)")
        return self.asnumpy().reshape(())[()]

    def tolist(self):
        return self.asnumpy().tolist()

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __bool__(self):
        if self.size != 1:
            raise ValueError("braid: the truth value of an array of more than one element is ambiguous")
        return bool(self.item())

    def __index__(self):
        if self.dtype_code not in (_CODE_OF[numpy.dtype(t)] for t in (numpy.int32, numpy.int64, numpy.uint8)):
            raise TypeError("braid: only integer arrays of one element can be used as an index")
        return int(self.item())

    def _traced(self):
        """What a value being traced into a graph prints (a hybridized block's forward): its values exist
        only once the graph runs, as MXNet 1.x's Symbols print without values."""
        return f"<traced ndarray {self.shape} {self.dtype} on {self.ctx!r}>"

    def _host_for_printing(self):
        try:
            return self.asnumpy()
        except BraidError as e:
            if e.status == "BRAID_ERR_INVALID_STATE" and "traced" in str(e):
                return None
            raise

    def __repr__(self):
        host = self._host_for_printing()
        if host is None:
            return self._traced()
        body = repr(host)
        return f"{body[:-1]}, ctx={self.ctx!r})" if body.endswith(")") else body

    def __str__(self):
        host = self._host_for_printing()
        return self._traced() if host is None else str(host)

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    # ---- copies and devices ----------------------------------------------------------------------
    def copy(self):
        return new(lib.braid_copy, self._handle, self.ctx.index)

    def __copy__(self):  # a copy of the values, as numpy's (never a second owner of the handle)
        return self.copy()

    def __deepcopy__(self, memo):
        return self.copy()

    def copyto(self, other):
        """To a Device: a copy there (a new array). To an array: writes this one's values into it (same
        shape and dtype, any device) and returns it."""
        if isinstance(other, ndarray):
            check(lib.braid_copy_into(self._handle, other._handle))
            return other
        if isinstance(other, _device.Device):
            return new(lib.braid_copy, self._handle, other.index)
        raise TypeError(f"braid: copyto takes a Device or an array, not {type(other).__name__}")

    def as_in_ctx(self, device):
        """This array if it is on `device`, else a copy there."""
        return self if self.ctx == device else self.copyto(device)

    as_in_context = as_in_ctx
    to_device = as_in_ctx

    def astype(self, dtype, copy=True):
        code = dtype_code(dtype)
        if code == self.dtype_code and not copy:
            return self
        return new(lib.braid_cast, self._handle, code)

    def detach(self):
        """A copy with no autograd history."""
        from . import autograd
        with autograd.pause():
            return self.copy()

    # ---- shape ---------------------------------------------------------------------------------
    def reshape(self, *shape, **kwargs):
        if kwargs:
            raise TypeError(f"braid: reshape takes no keyword arguments ({', '.join(kwargs)})")
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        shape = dims(shape)
        return new(lib.braid_reshape, self._handle, len(shape), shape_array(shape))

    def flatten(self):
        return self.reshape(-1)

    def transpose(self, *axes):
        ndim = self.ndim
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        if not axes:
            axes = tuple(reversed(range(ndim)))
        if len(axes) != ndim:
            raise ValueError(f"braid: transpose of a {ndim}-d array takes {ndim} axes, not {len(axes)}")
        perm = (ctypes.c_int32 * max(1, ndim))(*dims(axes))
        return new(lib.braid_transpose, self._handle, perm)

    @property
    def T(self):
        return self.transpose()

    def __getitem__(self, key):
        return _indexing.getitem(self, key)

    def __setitem__(self, key, value):
        _assign(self, key, value)

    # ---- arithmetic ----------------------------------------------------------------------------
    # (the methods from _operator: add, subtract, multiply, divide, power, //, %, both ways round; on the
    # compiled path braid._fast.Array has them)
    def __matmul__(self, o): return _matmul(self, o)
    def __rmatmul__(self, o): return _matmul(o, self)
    def __pos__(self): return self.copy()

    def __iadd__(self, o): return self._inplace("add", o)
    def __isub__(self, o): return self._inplace("subtract", o)
    def __imul__(self, o): return self._inplace("multiply", o)
    def __itruediv__(self, o): return self._inplace("divide", o)
    def __ifloordiv__(self, o): return self._inplace("floor_divide", o)
    def __imod__(self, o): return self._inplace("mod", o)
    def __ipow__(self, o): return self._inplace("power", o)

    # divmod(x, y): Python's pair (x // y, x % y)
    def __divmod__(self, o): return binary("floor_divide", self, o), binary("mod", self, o)
    def __rdivmod__(self, o): return binary("floor_divide", o, self), binary("mod", o, self)

    def _inplace(self, op, other):
        """x op= y writes the result into x's storage, as NumPy does (other references see it)."""
        _refuse_while_recording(f"{op} in place")
        result = binary(op, self, other)
        if result.shape != self.shape or result.dtype_code != self.dtype_code:
            raise TypeError(f"braid: {op} in place would change the array's shape or dtype "
                            f"({self.shape} {self.dtype} -> {result.shape} {result.dtype})")
        check(lib.braid_copy_into(result._handle, self._handle))
        return self

    # Comparisons give bool arrays, as NumPy's do (compare(); on the compiled path braid._fast.Array has
    # them). &, |, ^ and ~ are logical operations on bool arrays.
    __hash__ = None

    def __and__(self, o): return logical("and", self, o)
    def __rand__(self, o): return logical("and", o, self)
    def __or__(self, o): return logical("or", self, o)
    def __ror__(self, o): return logical("or", o, self)
    def __xor__(self, o): return logical("xor", self, o)
    def __rxor__(self, o): return logical("xor", o, self)

    def __invert__(self):
        if self.dtype_code != _BOOL:
            raise TypeError(f"braid: ~ is logical not on bool arrays (braid has no bitwise operations on "
                            f"{self.dtype}); use x == 0 for a mask")
        return compare("equal", self, False)

    # ---- methods of MXNet's array --------------------------------------------------------------
    def dot(self, other): return dot(self, other)
    def sum(self, axis=None, keepdims=False): return reduce("sum", self, axis, keepdims)
    def mean(self, axis=None, keepdims=False): return reduce("mean", self, axis, keepdims)
    def max(self, axis=None, keepdims=False): return reduce("max", self, axis, keepdims)
    def min(self, axis=None, keepdims=False): return reduce("min", self, axis, keepdims)
    def argmax(self, axis=None): return argmax(self, axis)
    def any(self, axis=None, keepdims=False): return reduce("sum", self.astype(numpy.bool_), axis, keepdims) > 0
    def all(self, axis=None, keepdims=False): return reduce("sum", self == 0, axis, keepdims) == 0
    def norm(self): return reduce("norm", self, None, False)  # MXNet 1.x: the L2 norm of every element
    def exp(self): return unary("exp", self)
    def log(self): return unary("log", self)
    def sqrt(self): return unary("sqrt", self)
    def abs(self): return unary("abs", self)
    def square(self): return unary("square", self)
    def sign(self): return unary("sign", self)
    def tanh(self): return unary("tanh", self)

    # ---- autograd ------------------------------------------------------------------------------
    def attach_grad(self, grad_req="write"):
        """Gives the array a zero-filled gradient buffer: backward writes ("write") or adds ("add") the
        gradient there; "null" detaches it."""
        reqs = {"null": 0, "write": 1, "add": 2}
        if grad_req not in reqs:
            raise ValueError(f"braid: grad_req {grad_req!r} is none of 'write', 'add', 'null'")
        check(lib.braid_tensor_attach_grad(self._handle, reqs[grad_req]))

    @property
    def grad(self):
        """The gradient buffer attach_grad gave the array (the same storage each time), or None."""
        out = c_tensor()
        if lib.braid_tensor_grad(self._handle, ctypes.byref(out)) != 0:
            return None
        return ndarray(out)

    def backward(self, out_grad=None, retain_graph=False):
        """Back-propagates from this array; without out_grad, from ones of its shape (MXNet's rule: a
        per-sample loss back-propagates its sum)."""
        from . import autograd
        autograd.backward([self], None if out_grad is None else [out_grad], retain_graph)


def _operator(op, reflected):
    """The method for one operator: a Python number goes straight to braid_binary_scalar (the chapter's
    x + 1, whose cost per op is mostly this path), anything else through binary()."""
    code = BINARY[op]

    def method(self, other):
        kind = type(other)
        if kind is float or (kind is int and -9007199254740992 <= other <= 9007199254740992):
            return new(lib.braid_binary_scalar, code, self._handle, other, 1 if reflected else 0)
        return binary(op, other, self) if reflected else binary(op, self, other)
    return method


def compare(op, a, b):
    """a op b as a bool array (braid_compare): op is equal, not_equal, less, less_equal, greater or
    greater_equal; NaN compares false except in not_equal. A number compares exactly (braid_compare_scalar)."""
    code = COMPARE[op]
    if isinstance(a, ndarray):
        if isinstance(b, ndarray):
            return new(lib.braid_compare, code, a._handle, b._handle)
        if isinstance(b, (int, numpy.integer)) and not isinstance(b, bool) and abs(int(b)) > 2 ** 53:
            return _compare_big(op, a, int(b))
        if is_scalar(b):
            return new(lib.braid_compare_scalar, code, a._handle, exact_scalar(b))
        return compare(op, a, as_array(b, a))
    if isinstance(b, ndarray):
        return compare(_SWAPPED[op], b, a)
    raise TypeError(f"braid: {op} needs a braid array among its operands")


def _compare_big(op, a, b):
    """a op b for a Python int beyond 2**53, which a double does not hold exactly, compared as NumPy 2
    compares it: a float array with the int's nearest float; an integer array with the int itself (an
    int64 0-d array where int64 holds it, else the constant answer braid_compare_scalar gives for a
    number beyond the dtype)."""
    code = COMPARE[op]
    if a.dtype_code == 3 and -2 ** 63 <= b < 2 ** 63:
        other = from_numpy(numpy.array(b, dtype=numpy.int64), a.ctx)
        return new(lib.braid_compare, code, a._handle, other._handle)
    return new(lib.braid_compare_scalar, code, a._handle, float(b))


def logical(op, a, b):
    """a & b, a | b, a ^ b between bool arrays (and Python or NumPy bools)."""
    like = a if isinstance(a, ndarray) else b
    a, b = (v if isinstance(v, ndarray) else as_array(v, like) for v in (a, b))
    if a.dtype_code != _BOOL or b.dtype_code != _BOOL:
        raise TypeError(f"braid: &, | and ^ are logical operations on bool arrays, not {a.dtype} and {b.dtype} "
                        "(braid has no bitwise integer operations; np.logical_and takes any dtype)")
    if op == "xor":
        return compare("not_equal", a, b)
    return binary("multiply" if op == "and" else "add", a, b)  # two bools: mul is and, add is or


def _comparison(op):
    def method(self, other):
        return compare(op, self, other)
    method.__name__ = f"__{op}__"
    return method


if not COMPILED:  # braid._fast.Array has these operators in compiled code, with binary() for other operands
    for _op, _names in (("add", ("add", "radd")), ("subtract", ("sub", "rsub")), ("multiply", ("mul", "rmul")),
                        ("divide", ("truediv", "rtruediv")), ("power", ("pow", "rpow")),
                        ("floor_divide", ("floordiv", "rfloordiv")), ("mod", ("mod", "rmod"))):
        for _i, _name in enumerate(_names):
            setattr(ndarray, f"__{_name}__", _operator(_op, _i == 1))
    for _op, _name in (("equal", "eq"), ("not_equal", "ne"), ("less", "lt"), ("less_equal", "le"),
                       ("greater", "gt"), ("greater_equal", "ge")):
        setattr(ndarray, f"__{_name}__", _comparison(_op))
    ndarray.__neg__ = lambda self: unary("negative", self)
    ndarray.__abs__ = lambda self: unary("abs", self)

NDArray = ndarray


# ---- the operations behind the operators (also the np module's functions) ---------------------------
def as_array(value, like):
    """value as an array on like's device: arrays pass; NumPy arrays and lists keep their dtype
    (float64 data promotes a float32 array, as it does in PyTorch)."""
    if isinstance(value, ndarray):
        return value
    return from_numpy(numpy.asarray(value), like.ctx)


def from_numpy(data, device):
    data = numpy.require(data, requirements="C")  # (ascontiguousarray would make a 0-d array 1-d)
    code = dtype_code(data.dtype)
    shape = data.shape
    return new(lib.braid_tensor_from_host, _device.context_handle(), device.index, code, len(shape),
               shape_array(shape), data.ctypes.data, data.nbytes)


def unary(op, x):
    if not isinstance(x, ndarray):
        raise TypeError(f"braid: {op} takes a braid array, not {type(x).__name__}")
    return new(lib.braid_unary, UNARY[op], x._handle)


def binary(op, a, b):
    # Python numbers first, without the ABC checks of is_scalar: the chapter's x + 1 is this path.
    tb, ta = type(b), type(a)
    if (tb is float or tb is int) and ta is ndarray:
        return new(lib.braid_binary_scalar, BINARY[op], a._handle, exact_scalar(b), 0)
    if (ta is float or ta is int) and tb is ndarray:
        return new(lib.braid_binary_scalar, BINARY[op], b._handle, exact_scalar(a), 1)
    if isinstance(a, ndarray) and isinstance(b, ndarray):
        return new(lib.braid_binary, BINARY[op], a._handle, b._handle)
    if isinstance(a, ndarray) and is_scalar(b):
        return new(lib.braid_binary_scalar, BINARY[op], a._handle, exact_scalar(b), 0)
    if isinstance(b, ndarray) and is_scalar(a):
        return new(lib.braid_binary_scalar, BINARY[op], b._handle, exact_scalar(a), 1)
    if isinstance(a, ndarray):
        return binary(op, a, as_array(b, a))
    if isinstance(b, ndarray):
        return binary(op, as_array(a, b), b)
    raise TypeError(f"braid: {op} needs a braid array among its operands")


def _axes(axis):
    if axis is None:
        return None
    return dims((axis,) if hasattr(axis, "__index__") or not hasattr(axis, "__iter__") else axis)


def reduce(op, x, axis=None, keepdims=False):
    axes = _axes(axis)
    if op == "mean" and x.dtype_code not in (0, 1, 5, _BFLOAT16):  # integers and bools: float32, as MXNet's np
        x = x.astype(numpy.float32)
    if axes == ():  # NumPy: no axis reduced
        return x.astype(numpy.int64) if op == "sum" and x.dtype_code in (2, 3, 4, _BOOL) else x.copy()
    arr = (ctypes.c_int32 * max(1, len(axes or ())))(*(axes or ()))
    return new(lib.braid_reduce, REDUCE[op], x._handle, len(axes or ()), arr, int(bool(keepdims)))


def argmax(x, axis=None):
    """Index of the (first) maximum; over the flattened array when axis is None (int64)."""
    if axis is None:
        flat = x.reshape(-1)  # held in a name: a temporary's handle would be released before the call
        return new(lib.braid_argmax, flat._handle, 0, 0)
    return new(lib.braid_argmax, x._handle, int(axis), 0)


def _matmul(a, b):
    if not isinstance(a, ndarray) or not isinstance(b, ndarray):
        a, b = (a if isinstance(a, ndarray) else as_array(a, b)), (b if isinstance(b, ndarray) else as_array(b, a))
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("braid: matmul of a 0-d array (use *)")
    a2 = a.reshape(1, -1) if a.ndim == 1 else a
    b2 = b.reshape(-1, 1) if b.ndim == 1 else b
    out = new(lib.braid_matmul, a2._handle, b2._handle, 0, 0)
    if a.ndim == 1 and b.ndim == 1:
        return out.reshape(())
    if a.ndim == 1:
        return out.reshape(out.shape[:-2] + out.shape[-1:])
    if b.ndim == 1:
        return out.reshape(out.shape[:-1])
    return out


def dot(a, b):
    """NumPy's dot for arrays of up to two dimensions (a scalar operand multiplies)."""
    if is_scalar(a) or is_scalar(b) or (isinstance(a, ndarray) and a.ndim == 0) or \
            (isinstance(b, ndarray) and b.ndim == 0):
        return binary("multiply", a, b)
    if (isinstance(a, ndarray) and a.ndim > 2) or (isinstance(b, ndarray) and b.ndim > 2):
        raise ValueError("braid: dot of arrays of more than two dimensions (use matmul for batches)")
    return _matmul(a, b)


# ---- indexing ------------------------------------------------------------------------------------
def _refuse_while_recording(what):
    """In-place writes are not recorded by autograd (braid_copy_into), so inside record() they would lose
    gradients silently; MXNet refuses them there too."""
    from . import autograd
    if autograd.is_recording():
        raise RuntimeError(f"braid: {what} is not supported while autograd records (use x = x + y)")


def _assign(x, key, value):
    """x[key] = value. The whole array (x[:] = value, x[...] = value: MXNet's and the chapter's
    `param[:] = ...`) is one copy; any other key goes through indexing.setitem."""
    _refuse_while_recording("assignment to x[...]")
    whole = key is Ellipsis or (isinstance(key, slice) and key == slice(None)) or \
        (isinstance(key, tuple) and all(k == slice(None) or k is Ellipsis for k in key))
    if not whole:
        _indexing.setitem(x, key, value)
        return
    shape = x.shape
    if is_scalar(value):
        filled = new(lib.braid_full, _device.context_handle(), x.ctx.index, x.dtype_code, len(shape),
                     shape_array(shape), exact_scalar(value))
        check(lib.braid_copy_into(filled._handle, x._handle))
        return
    if not isinstance(value, ndarray):
        data = numpy.broadcast_to(numpy.asarray(value), shape).astype(x.dtype if x.dtype_code != _BFLOAT16
                                                                        else numpy.float32)
        value = from_numpy(data, x.ctx)
    if value.shape != shape:  # broadcast by adding -0.0, which leaves every value as it is (-0.0 too)
        value = binary("add", value, new(lib.braid_full, _device.context_handle(), value.ctx.index,
                                         value.dtype_code, len(shape), shape_array(shape), -0.0))
    if value.dtype_code != x.dtype_code:
        value = value.astype(x.dtype)
    check(lib.braid_copy_into(value._handle, x._handle))


from . import indexing as _indexing  # noqa: E402 (it builds on this module's ndarray and new)

if COMPILED:
    fast.bind(functions={name: ctypes.cast(getattr(lib, name), ctypes.c_void_p).value
                         for name in ("braid_unary", "braid_binary", "braid_binary_scalar", "braid_compare",
                                      "braid_compare_scalar", "braid_tensor_release")},
              ndarray=ndarray, check=check, binary=binary, compare=compare,
              binary_names=tuple(sorted(BINARY, key=BINARY.get)))
