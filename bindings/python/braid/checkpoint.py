"""Arrays to and from safetensors files (braid_save_safetensors, docs/CHECKPOINTS.md): npx.save and
npx.load, and what Block.save_parameters and load_parameters use."""
import ctypes
import os

from . import device as _device
from ._lib import c_tensor, check, lib
from .ndarray import ndarray, resolve_device


def save(file, arrays):
    """Writes a dict of name -> array, a list of arrays (named "0", "1", ...) or one array ("0"),
    atomically."""
    if isinstance(arrays, ndarray):
        arrays = [arrays]
    items = list(arrays.items()) if isinstance(arrays, dict) else [(str(i), a) for i, a in enumerate(arrays)]
    for name, a in items:
        if not isinstance(name, str) or not isinstance(a, ndarray):
            raise TypeError("braid: save takes arrays, in a dict by name, a list, or alone")
    names = (ctypes.c_char_p * max(1, len(items)))(*[n.encode() for n, _ in items])
    handles = (c_tensor * max(1, len(items)))(*[a.handle for _, a in items])
    check(lib.braid_save_safetensors(os.fsencode(file), len(items), names, handles))


def names(file):
    """The names of a file's arrays, in the file's order."""
    size = ctypes.c_size_t()
    path = os.fsencode(file)
    check(lib.braid_safetensors_names(path, None, 0, ctypes.byref(size)))
    buffer = ctypes.create_string_buffer(max(1, size.value))
    check(lib.braid_safetensors_names(path, buffer, size.value, ctypes.byref(size)))
    return [n.decode() for n in buffer.raw[:size.value].split(b"\0") if n]


def load_named(file, wanted, ctx=None, device=None):
    """{name: array} for the names in wanted, on ctx (default cpu(0))."""
    dev = resolve_device(ctx, device)
    wanted = list(wanted)
    c_names = (ctypes.c_char_p * max(1, len(wanted)))(*[n.encode() for n in wanted])
    outs = (c_tensor * max(1, len(wanted)))()
    check(lib.braid_load_safetensors(_device.context_handle(), dev.index, os.fsencode(file), len(wanted), c_names,
                                     outs))
    return {n: ndarray(outs[i]) for i, n in enumerate(wanted)}


def load(file, ctx=None, device=None):
    """What save wrote: a list when the names are "0", "1", ..., else a dict by name."""
    found = names(file)
    arrays = load_named(file, found, ctx, device)
    if found == [str(i) for i in range(len(found))]:
        return [arrays[n] for n in found]
    return arrays
