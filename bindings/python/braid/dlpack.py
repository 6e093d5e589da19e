"""DLPack: braid's CPU arrays handed to NumPy (>= 1.22), PyTorch and any other DLPack consumer without a
copy (__dlpack__, __dlpack_device__), and np.from_dlpack for the other way.

Export shares the array's memory (braid_tensor_host_data): the consumer's view and the braid array see
each other's writes. braid's ops are asynchronous, so an op pushed on the array after the export writes
it while the consumer may be reading: wait for it (wait_to_read) before reading the view. The capsule
holds a reference to the array's tensor, released when the consumer lets go of the memory.

Import (np.from_dlpack) shares too: the producer's capsule goes to braid_tensor_from_dlpack, and the
new array on cpu(0) is the producer's memory (writes show on both sides), kept valid until braid lets go
of it and calls the producer's deleter. What braid cannot share (memory that is not C-contiguous, a dtype
it lacks as a DLPack code, NumPy 1.24's bool, which it does not export through DLPack) is copied.
"""
import ctypes

import numpy

from ._lib import check, lib

_CPU, _CUDA = 1, 2  # DLDeviceType
# braid_dtype -> (DLDataTypeCode, bits): kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBfloat 4, kDLBool 6
_DL_DTYPES = {0: (2, 32), 1: (2, 64), 2: (0, 32), 3: (0, 64), 4: (1, 8), 5: (2, 16), 6: (4, 16), 7: (6, 8)}


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int), ("dtype", _DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensor(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(_DLManagedTensor))
_DLManagedTensor._fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _DELETER)]

_CAPSULE_NAME = b"dltensor"  # must outlive every capsule: PyCapsule_New keeps the pointer
_USED_NAME = b"used_dltensor"
# The destructor receives the dying capsule as a raw PyObject* (c_void_p): a py_object argument would
# take and drop a reference to an object whose count already reached zero, and free it twice.
_PyCapsule_Destructor = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, _PyCapsule_Destructor]
_capsule_is_valid = ctypes.pythonapi.PyCapsule_IsValid
_capsule_is_valid.restype = ctypes.c_int
_capsule_is_valid.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
_capsule_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_get_pointer.restype = ctypes.c_void_p
_capsule_get_pointer.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
# The consumer's side: the producer's capsule as a Python object. A function object of its own (indexing
# makes a new one; the attribute is shared with _capsule_get_pointer, whose argtypes differ).
_consumed_pointer = ctypes.pythonapi["PyCapsule_GetPointer"]
_consumed_pointer.restype = ctypes.c_void_p
_consumed_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capsule_set_name = ctypes.pythonapi["PyCapsule_SetName"]
_capsule_set_name.restype = ctypes.c_int
_capsule_set_name.argtypes = [ctypes.py_object, ctypes.c_char_p]

# Address of each exported DLManagedTensor -> what keeps it valid: the struct, its shape array and the
# retained braid_tensor (released by the deleter).
_exported = {}


@_DELETER
def _delete(managed):
    entry = _exported.pop(ctypes.addressof(managed.contents), None)
    if entry is not None:
        lib.braid_tensor_release(entry[2])


@_PyCapsule_Destructor
def _capsule_destructor(capsule):
    # A capsule nobody consumed (still named "dltensor") frees its tensor; a consumer renames it to
    # "used_dltensor" and calls the deleter itself when done with the memory.
    if _capsule_is_valid(capsule, _CAPSULE_NAME):
        _delete(ctypes.cast(_capsule_get_pointer(capsule, _CAPSULE_NAME), ctypes.POINTER(_DLManagedTensor)))


def device_of(x):
    """__dlpack_device__: (kDLCPU, 0) for an array on a CPU device; BufferError elsewhere."""
    if x.ctx.device_type != "cpu":
        raise BufferError(f"braid: DLPack export needs an array in host memory (a CPU device), not one on "
                          f"{x.ctx!r}: copy it first with as_in_ctx(braid.cpu())")
    return (_CPU, 0)


def export(x, stream=None, **unused):
    """__dlpack__: a "dltensor" capsule over x's memory (no copy). stream must be None (a CPU array)."""
    device_of(x)
    if stream is not None and stream != -1:
        raise BufferError("braid: a CPU array takes no stream in __dlpack__")
    dl = _DL_DTYPES.get(x.dtype_code)
    if dl is None:
        raise BufferError(f"braid: no DLPack dtype for {x.dtype}")
    data = ctypes.c_void_p()
    check(lib.braid_tensor_host_data(x._handle, ctypes.byref(data)))
    shape = x.shape
    shape_array = (ctypes.c_int64 * max(1, len(shape)))(*shape)
    managed = _DLManagedTensor()
    managed.dl_tensor = _DLTensor(data=data.value, device=_DLDevice(_CPU, 0), ndim=len(shape),
                                  dtype=_DLDataType(dl[0], dl[1], 1), shape=shape_array, strides=None, byte_offset=0)
    managed.deleter = _delete
    check(lib.braid_tensor_retain(x._handle))
    address = ctypes.addressof(managed)
    _exported[address] = (managed, shape_array, x._handle)
    return _capsule_new(address, _CAPSULE_NAME, _capsule_destructor)


def _shared(x, device):
    """A braid array over the producer's memory (braid_tensor_from_dlpack), or None where braid cannot
    share it (then the caller copies)."""
    from ._lib import BraidError, c_tensor
    from .ndarray import ndarray
    try:
        capsule = x.__dlpack__()
    except (BufferError, RuntimeError, TypeError, ValueError):  # NumPy 1.24's bool, a read-only array, ...
        return None
    try:
        managed = _consumed_pointer(capsule, _CAPSULE_NAME)
    except ValueError:  # not an unconsumed "dltensor" capsule
        return None
    out = c_tensor()
    from . import device as _device
    status = lib.braid_tensor_from_dlpack(_device.context_handle(), device.index, managed, ctypes.byref(out))
    if status != 0:  # still the producer's: the capsule's own destructor gives it back
        try:
            check(status)
        except BraidError as e:
            if e.status in ("BRAID_ERR_UNSUPPORTED", "BRAID_ERR_DTYPE", "BRAID_ERR_INVALID_ARGUMENT"):
                return None
            raise
    _capsule_set_name(capsule, _USED_NAME)  # braid calls the deleter now (DLPack's consumer rule)
    return ndarray(out)


def from_dlpack(x):
    """np.from_dlpack: a braid array on cpu(0) over the memory of any DLPack producer in host memory
    (NumPy arrays, PyTorch CPU tensors), shared without a copy where braid can (C-contiguous, one of its
    dtypes), else a copy. A braid array gives a view of itself (shared as well)."""
    from . import device as _device
    from .ndarray import from_numpy, ndarray
    if isinstance(x, ndarray):
        return x[...]
    if not hasattr(x, "__dlpack__"):
        raise TypeError(f"braid: from_dlpack takes a DLPack producer (with __dlpack__), not {type(x).__name__}")
    if hasattr(x, "__dlpack_device__") and x.__dlpack_device__()[0] != _CPU:
        raise BufferError(f"braid: from_dlpack takes a DLPack producer in host memory, not one on DLPack device "
                          f"{x.__dlpack_device__()}")
    shared = _shared(x, _device.cpu())
    if shared is not None:
        return shared
    if isinstance(x, numpy.ndarray):
        return from_numpy(x, _device.cpu())
    try:
        view = numpy.from_dlpack(x)
    except (BufferError, RuntimeError, TypeError) as e:
        raise BufferError(f"braid: from_dlpack takes a DLPack producer in host memory: {e}") from None
    return from_numpy(view, _device.cpu())
