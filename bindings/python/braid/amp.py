"""Automatic mixed precision (docs/AMP.md): MXNet's `amp` names over braid's autocast (braid_autocast_set).

    from braid import amp
    amp.init("bfloat16")              # or: with amp.autocast("bfloat16"): ...
    amp.init_trainer(trainer)         # float16: dynamic loss scaling
    with autograd.record():
        loss = loss_fn(net(X), y)
        with amp.scale_loss(loss, trainer) as scaled:
            scaled.backward()
    trainer.step(batch_size)          # unscales, and skips a step whose gradients overflowed

While autocast is on (on the calling thread), matmul and conv2d given float32 operands (Dense,
Conv2D, nd.FullyConnected, np.dot, @) round them to bfloat16 or float16 and multiply with float32
accumulation, returning float32; gradients are rounded the same way; weights stay float32. bfloat16
has float32's range and needs no loss scaling; float16 does: a small gradient would flush to zero.
"""
import contextlib
import ctypes

import numpy

from . import device as _device
from ._lib import check, lib

_CODES = {"bfloat16": 6, "float16": 5, "float32": 0}
_NAMES = {code: name for name, code in _CODES.items()}


def _code(dtype):
    name = {"bf16": "bfloat16", "fp16": "float16", "f16": "float16", "fp32": "float32", "f32": "float32",
            None: "float32", "off": "float32"}.get(dtype, str(dtype))
    if name not in _CODES:
        raise ValueError(f"braid: amp's dtype is 'bfloat16' or 'float16' ('float32' turns it off), not {dtype!r}")
    return _CODES[name]


def set_autocast(dtype):
    """Turns autocast on ('bfloat16', 'float16') or off ('float32', None) on this thread; returns the
    previous setting's name."""
    prev = ctypes.c_int()
    check(lib.braid_autocast_set(_device.context_handle(), _code(dtype), ctypes.byref(prev)))
    return _NAMES[prev.value]


def autocast_dtype():
    """'bfloat16', 'float16', or 'float32' (off) on this thread."""
    out = ctypes.c_int()
    check(lib.braid_autocast_get(_device.context_handle(), ctypes.byref(out)))
    return _NAMES[out.value]


@contextlib.contextmanager
def autocast(dtype="bfloat16", enabled=True):
    """Autocast for a scope (PyTorch's torch.autocast): the previous setting comes back after it."""
    prev = set_autocast(dtype if enabled else "float32")
    try:
        yield
    finally:
        set_autocast(prev)


def init(target_dtype="float16"):
    """MXNet's amp.init: autocast on for this thread from now on (MXNet's default target is float16;
    bfloat16 is the one that needs no loss scaling)."""
    set_autocast(target_dtype)


class LossScaler:
    """Dynamic loss scaling (MXNet's and PyTorch's): the loss is multiplied by `loss_scale` before
    backward, the gradients divided by it in the update; a step whose gradients are not all finite is
    skipped and the scale halved, and after `scale_window` good steps in a row it doubles."""

    def __init__(self, init_scale=2.0 ** 16, scale_window=2000, factor=2.0, min_scale=1.0):
        self.loss_scale, self.scale_window, self.factor, self.min_scale = float(init_scale), scale_window, factor, \
            min_scale
        self._good_steps = 0
        self.skipped_steps = 0

    def has_overflow(self, grads):
        """Whether any of these arrays has an inf or a NaN (one wait: the values are read once)."""
        total = None
        for g in grads:
            part = (g * 0).sum()  # inf * 0 and NaN * 0 are NaN: the sum is NaN exactly when one is there
            total = part if total is None else total + part
        return total is not None and not numpy.isfinite(float(total))

    def update(self, overflow):
        if overflow:
            self.loss_scale = max(self.min_scale, self.loss_scale / self.factor)
            self._good_steps = 0
            self.skipped_steps += 1
        else:
            self._good_steps += 1
            if self._good_steps >= self.scale_window:
                self.loss_scale *= self.factor
                self._good_steps = 0


def init_trainer(trainer, target_dtype=None, **scaler_options):
    """MXNet's amp.init_trainer: gives a gluon.Trainer dynamic loss scaling when the target is float16 (the
    thread's autocast setting unless target_dtype says otherwise); with bfloat16 there is nothing to do."""
    target = target_dtype or autocast_dtype()
    _code(target)
    if target in ("float16", "fp16", "f16"):
        trainer._amp_scaler = LossScaler(**scaler_options)
    return trainer


@contextlib.contextmanager
def scale_loss(loss, trainer):
    """MXNet's amp.scale_loss: yields the loss (or list of losses) times the trainer's loss scale, to call
    backward on; unchanged when the trainer has no scaler."""
    scaler = getattr(trainer, "_amp_scaler", None)
    if scaler is None:
        yield loss
    elif isinstance(loss, (list, tuple)):
        yield type(loss)(x * scaler.loss_scale for x in loss)
    else:
        yield loss * scaler.loss_scale
