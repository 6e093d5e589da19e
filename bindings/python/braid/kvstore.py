"""MXNet's KVStore over braid's (braid_kvstore_*, docs/PARALLEL.md): the chapter's parameter-server
interface. `create("local")` sums pushed values on the stored value's device, `create("device")` on the
pushing devices first; with an optimizer set, a push updates the stored value with the sum as its
gradient, else the sum replaces it; pull copies the stored value into each out. Keys are ints."""
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


class KVStore:
    def __init__(self, kind="local"):
        self._handle = ctypes.c_void_p()
        check(lib.braid_kvstore_create(_device.context_handle(), kind.encode(), ctypes.byref(self._handle)))

    def __del__(self):
        try:
            lib.braid_kvstore_release(self._handle)
        except (AttributeError, TypeError):
            pass

    @property
    def type(self):
        out = ctypes.c_char_p()
        check(lib.braid_kvstore_type(self._handle, ctypes.byref(out)))
        return out.value.decode()

    @staticmethod
    def _key(key):
        if not isinstance(key, int) or isinstance(key, bool):
            raise TypeError(f"braid: KVStore keys are ints, not {key!r}")
        return key

    def init(self, key, value):
        """Stores a copy of value under key (which must be new)."""
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
    """A KVStore: "local" or "device" ("dist_*", several machines, is BraidError BRAID_ERR_UNSUPPORTED)."""
    return KVStore(name)
