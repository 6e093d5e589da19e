"""gluon.Trainer over braid's Trainer (braid_trainer_*, docs/PARALLEL.md): step(batch_size) sums every
parameter's gradients over the devices it lives on, in buckets that overlap the rest of backward,
then updates every copy with SGD (momentum, weight decay) or Adam, scaled by rescale_grad / batch_size
as Gluon's Trainer does.

With kvstore="dist_sync" (or "dist_device_sync", the same here) the trainer also reduces across the
processes of the job (braid.distributed's default group, joined from the launcher's variables when
the Trainer is made): each bucket of gradients is summed over this process's devices, then over the
processes, then handed back, and every rank applies the same update (braid_trainer_set_process_group).
step(batch_size) takes this process's batch, as every Gluon script passes it (data.shape[0]): the
gradients are summed over every row of every process and divided by batch_size x the number of
processes, so N processes on equal shards train as one process on the global batch (the gradient
averaged over the processes, as PyTorch's DDP and Horovod do). Every rank must pass the same
batch_size (checked: a rank that differs is a ValueError at the next step); with unequal shards,
pass the global batch divided by the number of processes (a float is fine) on every rank.

With kvstore="dist_async" (MXNet's update_on_kvstore) the parameters live in KVStore server processes
(braid-run --servers S): each step pushes this process's gradients (summed over its devices) and pulls
the weights back; the servers apply each push as it arrives, with rescale_grad / batch_size."""
import ctypes

from .._lib import OptimizerParams, TrainerOptions, c_tensor, check, lib
from .. import kvstore as _kvstore
from .. import optimizer as _optimizer
from .parameter import DeferredInitializationError, Parameter

_IGNORE_STALE_GRAD = 1


def _process_group(kvstore):
    """The ProcessGroup a kvstore argument asks for (None: this process alone)."""
    if kvstore is None or kvstore is False:
        return None
    if isinstance(kvstore, _kvstore.KVStore):
        kvstore = kvstore.type
    if kvstore == "nccl":  # MXNet's in-process NCCL store: braid's trainer picks its own allreduce
        return None
    if _kvstore.check_type(kvstore) == "dist_async":
        return None  # the servers update: Trainer._async_store
    if kvstore in _kvstore.DIST_TYPES:
        from .. import distributed
        return distributed.default_group()
    return None


class Trainer:
    def __init__(self, params, optimizer, optimizer_params=None, kvstore="device", update_on_kvstore=None):
        if isinstance(params, dict):
            params = list(params.values())
        if not all(isinstance(p, Parameter) for p in params):
            raise TypeError("braid: Trainer takes a ParameterDict or a list of Parameters")
        unique = {id(p): p for p in params}  # a shared parameter is listed once
        self._params = [p for p in unique.values() if p.grad_req != "null"]
        self._optimizer = _optimizer.optimizer_params(optimizer, dict(optimizer_params or {}))
        self._handle = None
        self._ignore_stale = None
        self._pending_check = None
        self._group = _process_group(kvstore)  # update_on_kvstore changes nothing: every rank updates alike
        # dist_async: MXNet's update on the kvstore. The parameters live in server processes
        # (braid-run --servers), each step pushes the gradients and pulls the weights the servers'
        # optimizer made, and no worker waits for another.
        self._async, self._async_scale, self._async_keys = None, None, False
        self._pending_states = None  # load_states before the first step
        if kvstore == "dist_async" or (isinstance(kvstore, _kvstore.KVStore) and kvstore.type == "dist_async"):
            self._async = kvstore if isinstance(kvstore, _kvstore.KVStore) else _kvstore.create("dist_async")
        if self._group is not None and self._group.size > 1:
            self._broadcast_initialised(list(unique.values()))

    def _broadcast_initialised(self, params):
        """Rank 0's values of the parameters initialised by now, so that the first step's gradients
        are already taken at the same values on every rank (the C trainer broadcasts the trained ones
        again at the first step, once the deferred ones have their shapes too). Those without
        gradients (BatchNorm's running statistics) start from rank 0's too, then follow each rank's
        own batches."""
        for p in params:
            try:
                copies = p.list_data()
            except DeferredInitializationError:
                continue
            self._group.broadcast(copies[0], 0)
            for other in copies[1:]:
                copies[0].copyto(other)

    def _async_step(self, batch_size):
        """dist_async: every parameter's gradients (summed over this process's devices, scaled here by
        rescale_grad / batch_size, so that workers with different batch sizes each push their own mean)
        to the servers, which update at once; then the weights back to every device. The keys are made
        at the first step (rank 0's values; every rank pulls them). The optimizer goes to the servers at
        the first step and again after set_learning_rate (a barrier of every worker: call it on every
        worker alike, as a schedule does)."""
        kv = self._async
        try:
            scale = self._optimizer.rescale_grad / float(batch_size)
        except (TypeError, ValueError):
            raise TypeError(f"braid: batch_size must be a number, not {batch_size!r}") from None
        if not scale > 0 or scale == float("inf"):
            raise ValueError(f"braid: batch_size must be a positive number, not {batch_size!r}")
        if not self._async_keys:
            for i, p in enumerate(self._params):
                kv.init(i, p.list_data()[0])
                kv.pull(i, p.list_data())
            self._async_keys = True
        if self._async_scale is None:  # the servers' optimizer: the gradients arrive scaled
            settings = OptimizerParams.from_buffer_copy(self._optimizer)
            settings.rescale_grad = 1.0
            check(lib.braid_kvstore_set_optimizer(kv._handle, ctypes.byref(settings)))
            self._async_scale = 1.0
        for i, p in enumerate(self._params):
            kv.push(i, [g * scale for g in p.list_grad()])
        for i, p in enumerate(self._params):
            kv.pull(i, p.list_data())

    @property
    def process_group(self):
        """The braid.distributed.ProcessGroup the gradients are reduced across; None in one process."""
        return self._group

    @property
    def rank(self):
        """This process's rank (kvstore.rank in MXNet); 0 in one process."""
        if self._async is not None:
            return self._async.rank
        return self._group.rank if self._group is not None else 0

    @property
    def num_workers(self):
        """How many processes train together (kvstore.num_workers in MXNet); 1 in one process."""
        if self._async is not None:
            return self._async.num_workers
        return self._group.size if self._group is not None else 1

    def save_states(self, fname):
        """Writes the optimizer's state (momentum or Adam's moments, step counts, learning rate) to
        fname, atomically (Gluon's Trainer.save_states). With the parameters (Block.save_parameters) and
        your own step and data position, a run resumed from it goes on bit for bit."""
        import os
        if self._async is not None:
            raise NotImplementedError("braid: with kvstore='dist_async' the servers hold the optimizer's state")
        check(lib.braid_trainer_save_states(self._trainer(bool(self._ignore_stale)), os.fsencode(fname)))

    def load_states(self, fname):
        """Restores what save_states wrote (Gluon's Trainer.load_states), on every device's copy. Before
        the first step it is applied when braid's trainer is made (at that step, so that the step still
        decides ignore_stale_grad)."""
        import os
        if self._async is not None:
            raise NotImplementedError("braid: with kvstore='dist_async' the servers hold the optimizer's state")
        if self._handle is None:
            # What can be checked without braid's trainer is checked now (the shapes at the first step).
            from .. import checkpoint
            present = checkpoint.names(fname)
            if not {"optimizer", "learning_rate", "step"} <= set(present):
                raise ValueError(f"braid: {fname!r} is not a Trainer's states file")
            head = checkpoint.load_named(fname, ["optimizer", "step"])
            kind, count = int(head["optimizer"].asnumpy()[0]), head["step"].shape[0]
            if kind != self._optimizer.kind or count != len(self._params):
                raise ValueError(f"braid: {fname!r} holds the states of optimizer kind {kind} for {count} parameters; "
                                 f"this Trainer has kind {self._optimizer.kind} and {len(self._params)} parameters")
            self._pending_states = os.fsencode(fname)
            return
        self._load_states(os.fsencode(fname))

    def _load_states(self, path):
        check(lib.braid_trainer_load_states(self._handle, path))
        out = ctypes.c_double()
        check(lib.braid_trainer_learning_rate(self._handle, ctypes.byref(out)))
        self._optimizer.learning_rate = out.value

    @property
    def learning_rate(self):
        return self._optimizer.learning_rate

    def set_learning_rate(self, lr):
        self._optimizer.learning_rate = float(lr)
        self._async_scale = None  # dist_async: the servers get the new rate with the next step
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
        if self._group is not None:
            status = lib.braid_trainer_set_process_group(handle, self._group.handle)
            if status:
                lib.braid_trainer_release(handle)
                check(status)
        self._handle, self._ignore_stale = handle, ignore_stale_grad
        if self._pending_states is not None:
            path, self._pending_states = self._pending_states, None
            self._load_states(path)
        return handle

    def _global_batch(self, batch_size):
        """The batch_size braid's trainer takes: this process's times the processes (the global batch).
        Checks that the previous step's batch_size was the same on every rank (one small collective per
        step, read a step later so that it never waits), and sends this one's."""
        if self._group is None or self._group.size == 1:
            return float(batch_size), None  # braid_trainer_step refuses what is not a positive number
        try:
            batch_size = float(batch_size)
        except (TypeError, ValueError):
            raise TypeError(f"braid: batch_size is a number, not {batch_size!r}") from None
        if not 0 < batch_size < float("inf"):
            raise ValueError(f"braid: batch_size must be a positive number, not {batch_size}")
        if self._pending_check is not None:
            pending, self._pending_check = self._pending_check, None
            high, neg_low = pending.asnumpy().tolist()
            if high != -neg_low:
                raise ValueError(f"braid: the processes passed different batch sizes to Trainer.step "
                                 f"(from {-neg_low:g} to {high:g}); every rank must pass the same one: its own "
                                 "batch when the shards are equal, else the global batch divided by the number of "
                                 "processes")
        from .. import np
        sent = np.array([batch_size, -batch_size], dtype="float64")
        return batch_size * self._group.size, sent

    def _check_after(self, sent):
        if sent is not None:
            self._pending_check = self._group.allreduce(sent, "max")

    def step(self, batch_size, ignore_stale_grad=False):
        """allreduce_grads() then update(batch_size). batch_size is this process's (see the module's
        docstring for several processes). With amp's loss scaling (amp.init_trainer), the gradients are
        divided by the loss scale too, and a step whose gradients overflowed is skipped."""
        if getattr(self, "_amp_scaler", None) is not None:
            self._scaled_step(batch_size, ignore_stale_grad)
            return
        if self._async is not None:
            self._async_step(batch_size)
            return
        total, sent = self._global_batch(batch_size)
        check(lib.braid_trainer_step(self._trainer(ignore_stale_grad), total))
        self._check_after(sent)

    def _scaled_step(self, batch_size, ignore_stale_grad):
        """step() under dynamic loss scaling: the summed gradients are checked once, after they are
        reduced (so every device and process decides alike), then the update divides by the scale."""
        if self._async is not None:
            raise NotImplementedError("braid: amp's loss scaling needs a synchronous kvstore, not dist_async")
        scaler = self._amp_scaler
        self._trainer(ignore_stale_grad)
        self.allreduce_grads()
        overflow = scaler.has_overflow([p.grad(p.list_ctx()[0]) for p in self._params if p.grad_req != "null"])
        if not overflow:  # the gradients are (sum of losses x scale)': divided by batch_size x scale
            self.update(batch_size * scaler.loss_scale, ignore_stale_grad)
        else:  # skipped: no inf or NaN left behind (grad_req 'add', a parameter the next step leaves out)
            for p in self._params:
                if p.grad_req != "null":
                    p.zero_grad()
        scaler.update(overflow)

    def allreduce_grads(self):
        if self._async is not None:
            raise NotImplementedError("braid: with kvstore='dist_async' the servers reduce: call step()")
        check(lib.braid_trainer_allreduce_grads(self._trainer(bool(self._ignore_stale))))

    def update(self, batch_size, ignore_stale_grad=False):
        if self._async is not None:
            raise NotImplementedError("braid: with kvstore='dist_async' the servers update: call step()")
        total, sent = self._global_batch(batch_size)
        check(lib.braid_trainer_update(self._trainer(ignore_stale_grad), total))
        self._check_after(sent)

    def __del__(self):
        try:
            if self._handle is not None:
                lib.braid_trainer_release(self._handle)
        except (AttributeError, TypeError):
            pass
