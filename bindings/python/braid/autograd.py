"""MXNet's autograd names over braid's: record() and pause() scopes, backward(), and the training
flag that dropout reads (is_training).

Recording is braid's, per thread (braid_autograd_set_recording); the training flag is this module's,
per thread too, since braid's C ops take the mode as an argument instead.
"""
import ctypes
import threading

from . import device as _device
from . import np
from ._lib import c_tensor, check, lib
from .ndarray import ndarray

_local = threading.local()


def is_recording():
    out = ctypes.c_int32()
    check(lib.braid_autograd_is_recording(_device.context_handle(), ctypes.byref(out)))
    return bool(out.value)


def is_training():
    return getattr(_local, "training", False)


def set_recording(is_record):
    """Turns recording on or off for this thread; returns the previous setting."""
    prev = ctypes.c_int32()
    check(lib.braid_autograd_set_recording(_device.context_handle(), int(bool(is_record)), ctypes.byref(prev)))
    return bool(prev.value)


def set_training(train_mode):
    """Sets this thread's training flag; returns the previous one."""
    prev = is_training()
    _local.training = bool(train_mode)
    return prev


class _Scope:
    def __init__(self, recording, training):
        self._recording, self._training = recording, training
        self._prev = None

    def __enter__(self):
        prev_recording = set_recording(self._recording) if self._recording is not None else None
        prev_training = set_training(self._training) if self._training is not None else None
        self._prev = (prev_recording, prev_training)
        return self

    def __exit__(self, *exc):
        prev_recording, prev_training = self._prev
        if prev_recording is not None:
            set_recording(prev_recording)
        if prev_training is not None:
            set_training(prev_training)
        return False


def record(train_mode=True):
    """Records the ops run inside the scope for backward(); train_mode sets is_training() there."""
    return _Scope(True, train_mode)


def pause(train_mode=False):
    """Ops inside the scope are not recorded (inside a record() scope, for example)."""
    return _Scope(False, train_mode)


def train_mode():
    return _Scope(None, True)


def predict_mode():
    return _Scope(None, False)


def backward(heads, head_grads=None, retain_graph=False, train_mode=True):
    """Back-propagates from heads into the gradient buffers of the arrays attach_grad was called on. A
    head without a gradient in head_grads gets ones of its shape, as in MXNet (so a per-sample loss
    back-propagates its sum)."""
    heads = [heads] if isinstance(heads, ndarray) else list(heads)
    if not heads:
        raise ValueError("braid: backward needs at least one head")
    if head_grads is not None:
        head_grads = [head_grads] if isinstance(head_grads, ndarray) else list(head_grads)
        if len(head_grads) != len(heads):
            raise ValueError(f"braid: {len(heads)} heads but {len(head_grads)} head gradients")
    for h in heads + [g for g in (head_grads or []) if g is not None]:
        if not isinstance(h, ndarray):
            raise TypeError(f"braid: backward takes braid arrays, not {type(h).__name__}")
    head_grads = list(head_grads or [None] * len(heads))
    for i, (h, g) in enumerate(zip(heads, head_grads)):
        if g is None and h.size != 1:
            head_grads[i] = np.ones_like(h)  # held in the list for the call
    handles = (c_tensor * len(heads))(*[h.handle for h in heads])
    grads = (c_tensor * len(heads))(*[None if g is None else g.handle for g in head_grads])
    check(lib.braid_backward(len(heads), handles, grads, int(bool(retain_graph))))
