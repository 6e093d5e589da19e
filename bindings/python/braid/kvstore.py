"""MXNet's KVStore over braid's (braid_kvstore_*, docs/PARALLEL.md): the chapter's parameter-server
interface. `create("local")` sums pushed values on the stored value's device, `create("device")` on the
pushing devices first; with an optimizer set, a push updates the stored value with the sum as its
gradient, else the sum replaces it; pull copies the stored value into each out. Keys are ints.

`create("dist_sync")`, `"dist_device_sync"` and `"dist_async"` keep the keys in server processes
across the job (`braid-run -n W --servers S`; docs/DISTRIBUTED.md, "KVStore across processes"):
init stores rank 0's value, dist_sync applies one update per key once every worker has pushed it,
dist_async each push as it arrives. `rank`, `num_workers` and `num_servers` say where this process is
(0, 1 and 0 for the in-process stores)."""
import ctypes

from . import device as _device
from ._lib import KVStoreInfo, c_tensor, check, lib
from .ndarray import ndarray
from .optimizer import optimizer_params


def _arrays(values, what):
    values = [values] if isinstance(values, ndarray) else list(values)
    if not values or not all(isinstance(v, ndarray) for v in values):
        raise TypeError(f"braid: {what} takes a braid array or a non-empty list of them")
    return values, (c_tensor * len(values))(*[v.handle for v in values])


# MXNet's kvstore names: in this process, and across processes (server processes hold the keys).
LOCAL_TYPES = ("local", "device")
DIST_TYPES = ("dist_sync", "dist_device_sync", "dist_sync_device", "dist_async")


def check_type(name):
    """name if it is a kvstore type braid has; else TypeError / ValueError saying what there is."""
    if not isinstance(name, str):
        raise TypeError(f"braid: a kvstore type is a string such as 'device' or 'dist_sync', not {name!r}")
    if name not in LOCAL_TYPES + DIST_TYPES:
        raise ValueError(f"braid: unknown kvstore {name!r}: use 'local' or 'device' (this process's devices), "
                         "'dist_sync', 'dist_device_sync' or 'dist_async' (several processes)")
    return name


class KVStore:
    def __init__(self, kind="local"):
        kind = check_type(kind)
        self._handle = ctypes.c_void_p()
        check(lib.braid_kvstore_create(_device.context_handle(), kind.encode(), ctypes.byref(self._handle)))
        if kind in DIST_TYPES:
            # The release tells the servers this worker is done; __del__ is not sure to run at exit.
            import atexit
            atexit.register(self._release)

    def _release(self):
        handle, self._handle = getattr(self, "_handle", None), None
        if handle:
            try:
                lib.braid_kvstore_release(handle)
            except (AttributeError, TypeError):
                pass

    def __del__(self):
        self._release()

    @property
    def type(self):
        out = ctypes.c_char_p()
        check(lib.braid_kvstore_type(self._handle, ctypes.byref(out)))
        return out.value.decode()

    def _info(self):
        info = KVStoreInfo(ctypes.sizeof(KVStoreInfo))
        check(lib.braid_kvstore_get_info(self._handle, ctypes.byref(info)))
        return info

    @property
    def rank(self):
        """This worker's rank (0 for an in-process store)."""
        return self._info().rank

    @property
    def num_workers(self):
        """How many workers share the store (1 for an in-process store)."""
        return self._info().num_workers

    @property
    def num_servers(self):
        """How many server processes hold the keys (0 for an in-process store)."""
        return self._info().num_servers

    def barrier(self):
        """Waits for every worker (MXNet's kv._barrier()); nothing to wait for in one process."""
        check(lib.braid_kvstore_barrier(self._handle))

    _barrier = barrier

    @staticmethod
    def _key(key):
        if not isinstance(key, int) or isinstance(key, bool):
            raise TypeError(f"braid: KVStore keys are ints, not {key!r}")
        return key

    def init(self, key, value):
        """Stores a copy of value under key (which must be new); across processes, rank 0's."""
        if not isinstance(value, ndarray):
            raise TypeError("braid: KVStore.init takes a braid array")
        check(lib.braid_kvstore_init(self._handle, self._key(key), value.handle))

    def push(self, key, value):
        """Pushes one value or a list of them (one per device): they are summed."""
        values, handles = _arrays(value, "push")
        check(lib.braid_kvstore_push(self._handle, self._key(key), len(values), handles))

    def pull(self, key, out):
        """Copies the stored value into out (an array or a list of them, on any devices)."""
        outs, handles = _arrays(out, "pull")
        check(lib.braid_kvstore_pull(self._handle, self._key(key), len(outs), handles))

    def pushpull(self, key, value, out=None):
        """push then pull as one unit; out defaults to the values themselves."""
        values, value_handles = _arrays(value, "pushpull")
        outs, out_handles = (values, value_handles) if out is None else _arrays(out, "pushpull")
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
    """A KVStore: "local" or "device" (this process), "dist_sync", "dist_device_sync" or "dist_async"
    (server processes across the job: braid-run --servers); any other name ValueError."""
    return KVStore(name)


def run_server():
    """Serves a KVStore job's keys in this process (a server: DMLC_ROLE=server or BRAID_ROLE=server), or
    its rendezvous store (DMLC_ROLE=scheduler), until every worker is done."""
    check(lib.braid_kvstore_run_server(_device.context_handle()))
