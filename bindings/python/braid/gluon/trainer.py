"""gluon.Trainer over braid's Trainer (braid_trainer_*, docs/PARALLEL.md): step(batch_size) sums every
parameter's gradients over the devices it lives on, in buckets that overlap the rest of backward,
then updates every copy with SGD (momentum, weight decay) or Adam, scaled by rescale_grad / batch_size
as Gluon's Trainer does."""
import ctypes

from .._lib import TrainerOptions, c_tensor, check, lib
from .. import optimizer as _optimizer
from .parameter import Parameter

_IGNORE_STALE_GRAD = 1


class Trainer:
    def __init__(self, params, optimizer, optimizer_params=None, kvstore="device", update_on_kvstore=None):
        if isinstance(params, dict):
            params = list(params.values())
        if not all(isinstance(p, Parameter) for p in params):
            raise TypeError("braid: Trainer takes a ParameterDict or a list of Parameters")
        unique = {id(p): p for p in params if p.grad_req != "null"}  # a shared parameter is listed once
        self._params = list(unique.values())
        self._optimizer = _optimizer.optimizer_params(optimizer, dict(optimizer_params or {}))
        self._handle = None
        self._ignore_stale = None

    @property
    def learning_rate(self):
        return self._optimizer.learning_rate

    def set_learning_rate(self, lr):
        self._optimizer.learning_rate = float(lr)
        if self._handle is not None:
            check(lib.braid_trainer_set_learning_rate(self._handle, float(lr)))

    def _trainer(self, ignore_stale_grad):
        """braid's trainer, made at the first step (parameters are initialised by then). Whether a stale
        gradient is skipped is fixed then: a new trainer would lose the optimizer's state (momentum,
        Adam's moments)."""
        if self._handle is not None:
            if self._ignore_stale != ignore_stale_grad:
                raise ValueError(f"braid: this Trainer stepped with ignore_stale_grad={self._ignore_stale}; "
                                 "keep it the same on every step")
            return self._handle
        devices = self._params[0].list_ctx()
        for p in self._params:
            if p.list_ctx() != devices:
                raise ValueError(f"braid: parameter {p.name} lives on {p.list_ctx()}, others on {devices}")
        replicas = [[p.data(d) for p in self._params] for d in devices]
        handles = (c_tensor * (len(devices) * len(self._params)))(*[a.handle for r in replicas for a in r])
        options = TrainerOptions(ctypes.sizeof(TrainerOptions), self._optimizer, 0, 0,
                                 _IGNORE_STALE_GRAD if ignore_stale_grad else 0)
        handle = ctypes.c_void_p()
        check(lib.braid_trainer_create(len(devices), len(self._params), handles, ctypes.byref(options),
                                       ctypes.byref(handle)))
        self._handle, self._ignore_stale = handle, ignore_stale_grad
        return handle

    def step(self, batch_size, ignore_stale_grad=False):
        """allreduce_grads() then update(batch_size)."""
        check(lib.braid_trainer_step(self._trainer(ignore_stale_grad), float(batch_size)))

    def allreduce_grads(self):
        check(lib.braid_trainer_allreduce_grads(self._trainer(bool(self._ignore_stale))))

    def update(self, batch_size, ignore_stale_grad=False):
        check(lib.braid_trainer_update(self._trainer(ignore_stale_grad), float(batch_size)))

    def __del__(self):
        try:
            if self._handle is not None:
                lib.braid_trainer_release(self._handle)
        except (AttributeError, TypeError):
            pass
