"""MXNet's KVStore over braid's (braid_kvstore_*, docs/PARALLEL.md): the chapter's parameter-server
interface. `create("local")` sums pushed values on the stored value's device, `create("device")` on the
pushing devices first; with an optimizer set, a push updates the stored value with the sum as its
gradient, else the sum replaces it; pull copies the stored value into each out. Keys are ints.

`create("dist_sync")` and `create("dist_device_sync")` are the same across the processes of a job
(braid.distributed's default group, joined from the launcher's variables on first use): init takes
rank 0's value, a push sums over this process's devices and then over every process before it
replaces (or, with an optimizer, updates) the stored value, which is the same on every rank.
`rank` and `num_workers` say where this process is (0 and 1 for the in-process stores)."""
import ctypes

from . import device as _device
from ._lib import c_tensor, check, lib
from .ndarray import ndarray
from .optimizer import optimizer_params


def _arrays(values, what):
    values = [values] if isinstance(values, ndarray) else list(values)
    if not values or not all(isinstance(v, ndarray) for v in values):
        raise TypeError(f"braid: {what} takes a braid array or a non-empty list of them")
    return values, (c_tensor * len(values))(*[v.handle for v in values])


# MXNet's kvstore names: in this process, and across processes (synchronous; the device variants sum
# over this process's devices on the devices, which braid's stores decide by themselves).
LOCAL_TYPES = ("local", "device")
DIST_TYPES = ("dist_sync", "dist_device_sync", "dist_sync_device")
_LATER = {
    "dist_async": "kvstore 'dist_async' (asynchronous updates through server processes) is not available yet; "
                  "use 'dist_sync' (synchronous data parallelism across the processes, as PyTorch's DDP)",
    "dist_device_async": "kvstore 'dist_device_async' is not available yet; use 'dist_device_sync'",
}


def check_type(name):
    """name if it is a kvstore type this package has; else ValueError (NotImplementedError for the
    asynchronous ones, which are not written yet), saying what to use."""
    if not isinstance(name, str):
        raise TypeError(f"braid: a kvstore type is a string such as 'device' or 'dist_sync', not {name!r}")
    if name in _LATER:
        raise NotImplementedError(f"braid: {_LATER[name]}")
    if name not in LOCAL_TYPES + DIST_TYPES:
        raise ValueError(f"braid: unknown kvstore {name!r}: use 'local' or 'device' (this process's devices), "
                         "'dist_sync' or 'dist_device_sync' (several processes)")
    return name


class KVStore:
    def __init__(self, kind="local"):
        kind = check_type(kind)
        self._kind, self._group = kind, None
        if kind in DIST_TYPES:
            from . import distributed
            self._group = distributed.default_group()
        local = "device" if "device" in kind else "local"
        self._handle = ctypes.c_void_p()
        check(lib.braid_kvstore_create(_device.context_handle(), local.encode(), ctypes.byref(self._handle)))

    def __del__(self):
        try:
            lib.braid_kvstore_release(self._handle)
        except (AttributeError, TypeError):
            pass

    @property
    def type(self):
        if self._group is not None:
            return self._kind
        out = ctypes.c_char_p()
        check(lib.braid_kvstore_type(self._handle, ctypes.byref(out)))
        return out.value.decode()

    @property
    def rank(self):
        """This process's rank among the workers (0 for an in-process store)."""
        return self._group.rank if self._group is not None else 0

    @property
    def num_workers(self):
        """How many processes share the store (1 for an in-process store)."""
        return self._group.size if self._group is not None else 1

    @property
    def process_group(self):
        """The braid.distributed.ProcessGroup of a dist store; None for an in-process one."""
        return self._group

    def barrier(self):
        """Waits for every worker (MXNet's kv._barrier()); nothing to wait for in one process."""
        if self._group is not None:
            self._group.barrier()

    _barrier = barrier

    @staticmethod
    def _key(key):
        if not isinstance(key, int) or isinstance(key, bool):
            raise TypeError(f"braid: KVStore keys are ints, not {key!r}")
        return key

    def init(self, key, value):
        """Stores a copy of value under key (which must be new)."""
        if not isinstance(value, ndarray):
            raise TypeError("braid: KVStore.init takes a braid array")
        key = self._key(key)
        if self._group is not None:  # rank 0's value, as MXNet's servers keep worker 0's
            value = self._group.broadcast(value.copy(), 0)
        check(lib.braid_kvstore_init(self._handle, key, value.handle))

    def _across(self, values):
        """The sum over this process's values and then over the processes, as one value to push."""
        total = values[0].copy()
        for v in values[1:]:
            total += v.as_in_ctx(total.ctx)
        return [self._group.allreduce(total, "sum")]

    def push(self, key, value):
        """Pushes one value or a list of them (one per device): they are summed."""
        values, handles = _arrays(value, "push")
        key = self._key(key)
        if self._group is not None:
            values, handles = _arrays(self._across(values), "push")
        check(lib.braid_kvstore_push(self._handle, key, len(values), handles))

    def pull(self, key, out):
        """Copies the stored value into out (an array or a list of them, on any devices)."""
        outs, handles = _arrays(out, "pull")
        check(lib.braid_kvstore_pull(self._handle, self._key(key), len(outs), handles))

    def pushpull(self, key, value, out=None):
        """push then pull as one unit; out defaults to the values themselves."""
        values, value_handles = _arrays(value, "pushpull")
        outs, out_handles = (values, value_handles) if out is None else _arrays(out, "pushpull")
        if self._group is not None:
            self.push(key, values)
            self.pull(key, outs)
            return
        check(lib.braid_kvstore_pushpull(self._handle, self._key(key), len(values), value_handles, out_handles))

    def set_optimizer(self, optimizer, **params):
        """The update run on each push: "sgd" (learning_rate, momentum, wd, rescale_grad) or "adam"
        (learning_rate, beta1, beta2, epsilon, wd, rescale_grad); None removes it."""
        if optimizer is None:
            check(lib.braid_kvstore_set_optimizer(self._handle, None))
            return
        settings = optimizer_params(optimizer, params)
        check(lib.braid_kvstore_set_optimizer(self._handle, ctypes.byref(settings)))


def create(name="local"):
    """A KVStore: "local" or "device" (this process), "dist_sync" or "dist_device_sync" (the processes
    of the job, through braid.distributed's default group). "dist_async" is NotImplementedError (not
    written yet: use "dist_sync"); any other name ValueError."""
    return KVStore(name)
