"""Devices and the process's braid context.

One context serves the whole package (as MXNet has one engine per process): made on first use, with
the backends braid finds (BRAID_BACKENDS, BRAID_BACKEND_PATH and the other variables of
docs/ENGINE.md apply), and released when the interpreter exits, after the work still queued is done.
"""
import atexit
import ctypes
import threading

from ._lib import DeviceInfo, MemoryStats, c_context, c_device, check, lib

_lock = threading.Lock()
_context = None


def context_handle():
    """The process's braid_context (made on first use)."""
    global _context
    if _context is None:
        with _lock:
            if _context is None:
                handle = c_context()
                check(lib.braid_context_create(None, ctypes.byref(handle)))
                _context = handle
                atexit.register(_release)
    return _context


def _release():
    global _context
    handle, _context = _context, None
    if handle is not None:
        lib.braid_context_release(handle)  # arrays still alive keep the context until they go


class Device:
    """A device by backend and index: cpu(0), gpu(0) (CUDA), vulkan(0). Two Devices naming the same
    braid device compare equal. Use it wherever MXNet takes a `ctx` (or a `device`)."""

    _BACKEND_OF = {"cpu": "cpu", "gpu": "cuda", "vulkan": "vulkan"}

    def __init__(self, device_type, device_id=0):
        if device_type not in self._BACKEND_OF:
            raise ValueError(f"braid: device type {device_type!r} is none of cpu, gpu, vulkan")
        if not isinstance(device_id, int) or device_id < 0:
            raise ValueError(f"braid: device id must be a non-negative int, not {device_id!r}")
        self.device_type = device_type
        self.device_id = device_id

    @classmethod
    def parse(cls, name):
        """The Device braid names "cpu:0", "cuda:0" or "vulkan:0" (ValueError for anything else)."""
        backend, _, number = str(name).partition(":")
        kind = {v: k for k, v in cls._BACKEND_OF.items()}.get(backend)
        if kind is None or not number.isdigit():
            raise ValueError(f"braid: {name!r} is not a device name like cpu:0, cuda:0 or vulkan:0")
        return cls(kind, int(number))

    @property
    def name(self):
        """braid's name of the device: "cpu:0", "cuda:0", "vulkan:0"."""
        return f"{self._BACKEND_OF[self.device_type]}:{self.device_id}"

    @property
    def index(self):
        """The device's index in the context; BraidError (BRAID_ERR_NOT_FOUND) when it is absent."""
        out = c_device()
        check(lib.braid_context_find_device(context_handle(), self.name.encode(), ctypes.byref(out)))
        return out.value

    def info(self):
        """A dict of what braid knows of the device (braid_context_device_info)."""
        return device_info(self.index)

    def __eq__(self, other):
        return isinstance(other, Device) and other.name == self.name

    def __hash__(self):
        return hash(self.name)

    def __repr__(self):
        return f"{self.device_type}({self.device_id})"


def cpu(device_id=0):
    return Device("cpu", device_id)


def gpu(device_id=0):
    """A CUDA device."""
    return Device("gpu", device_id)


def vulkan(device_id=0):
    return Device("vulkan", device_id)


def device_info(index):
    info = DeviceInfo()
    info.struct_size = ctypes.sizeof(DeviceInfo)
    check(lib.braid_context_device_info(context_handle(), index, ctypes.byref(info)))
    text = lambda b: b.decode("utf-8", "replace") if b else ""  # noqa: E731
    return {
        "id": text(info.id), "backend": text(info.backend), "name": text(info.name), "kind": info.kind,
        "memory_bytes": info.memory_bytes, "compute_units": info.compute_units,
        "l1_cache_bytes": info.l1_cache_bytes, "l2_cache_bytes": info.l2_cache_bytes,
        "l3_cache_bytes": info.l3_cache_bytes, "properties_json": text(info.properties_json),
    }


def _device_of_index(index):
    return Device.parse(device_info(index)["id"])


def devices():
    """Every device of the context, in braid's order (CPU devices, then the GPUs the backends found)."""
    count = ctypes.c_int32()
    check(lib.braid_context_device_count(context_handle(), ctypes.byref(count)))
    return [_device_of_index(i) for i in range(count.value)]


def num_gpus():
    """How many CUDA devices braid found (MXNet's mx.context.num_gpus())."""
    return sum(1 for d in devices() if d.device_type == "gpu")


def memory_stats(device=None):
    """braid's memory accounting of a device (cpu(0) by default), as a dict of braid_memory_stats:
    allocated_bytes (in live blocks), reserved_bytes (obtained from the backend, cached included), their
    peaks, alloc_count and backend_alloc_count (torch.cuda.memory_stats's role). Counts what braid's own
    tensors hold, freed once their last array and op let go."""
    index = (device if device is not None else cpu()).index
    stats = MemoryStats()
    stats.struct_size = ctypes.sizeof(MemoryStats)
    check(lib.braid_memory_get_stats(context_handle(), index, ctypes.byref(stats)))
    return {name: getattr(stats, name) for name, _ in MemoryStats._fields_[1:]}


def waitall():
    """Waits for every op pushed so far; raises the first error of an op since the last waitall."""
    check(lib.braid_wait_all(context_handle()))


def seed(value):
    """Seeds braid's random ops (counter-based: the same seed gives the same numbers on any device)."""
    if not isinstance(value, int) or value < 0:
        raise ValueError(f"braid: seed must be a non-negative int, not {value!r}")
    check(lib.braid_context_set_seed(context_handle(), value))
