"""gluon.Parameter: a named weight, its copies on each device it was initialised on, and their gradient
buffers; shapes with unknown dimensions (0) are completed by the first forward pass (deferred
initialisation, as in MXNet)."""
import collections

from .. import initializer as _init
from ..device import Device, cpu


class DeferredInitializationError(RuntimeError):
    """The parameter's shape is not known yet: run a forward pass first."""


def device_list(ctx):
    if ctx is None:
        return [cpu()]
    devices = [ctx] if isinstance(ctx, Device) else list(ctx)
    if not devices or not all(isinstance(d, Device) for d in devices):
        raise ValueError(f"braid: ctx must be a device or a list of devices, not {ctx!r}")
    if len(set(devices)) != len(devices):
        raise ValueError(f"braid: a device is named twice in {devices}")
    return devices


class Parameter:
    def __init__(self, name="weight", shape=None, dtype="float32", init=None, grad_req="write",
                 allow_deferred_init=True):
        if grad_req not in ("write", "add", "null"):
            raise ValueError(f"braid: grad_req {grad_req!r} is none of 'write', 'add', 'null'")
        self.name, self.dtype, self.grad_req = name, dtype, grad_req
        self.init = _init.create(init)
        self._shape = tuple(shape) if shape is not None else None
        self._data = None  # {Device: ndarray}, in initialisation order
        self._deferred = None  # (initializer, devices) while the shape is incomplete
        self._allow_deferred = allow_deferred_init

    def __repr__(self):
        return f"Parameter {self.name} (shape={self.shape}, dtype={self.dtype})"

    @property
    def shape(self):
        return self._shape

    @shape.setter
    def shape(self, new_shape):
        """Completes unknown (0) dimensions; known ones must agree."""
        new_shape = tuple(new_shape)
        if self._shape is not None:
            if len(new_shape) != len(self._shape) or any(o not in (0, n) for o, n in zip(self._shape, new_shape)):
                raise ValueError(f"braid: parameter {self.name} has shape {self._shape}, not {new_shape}")
        self._shape = new_shape
        if self._deferred is not None and self._known():
            init, devices = self._deferred
            self._deferred = None
            self._finish(init, devices)

    def _known(self):
        return self._shape is not None and all(d > 0 for d in self._shape)

    def initialize(self, init=None, ctx=None, default_init=None, force_reinit=False):
        """Makes the value on each device of ctx (default cpu(0)) with this parameter's initializer, else
        init, else default_init (MXNet's Uniform(0.07)); deferred until the shape is known."""
        if self._data is not None and not force_reinit:
            return
        chosen = self.init or _init.create(init) or _init.create(default_init) or _init.Uniform()
        devices = device_list(ctx)
        if self._data is not None and list(self._data) == devices and self._known():
            # Reinitialised in place: graphs of hybridized blocks and Trainers hold these arrays.
            first = chosen(self._shape, self.dtype, devices[0])
            for value in self._data.values():
                first.copyto(value)
            return
        self._data = None
        if not self._known():
            if not self._allow_deferred:
                raise DeferredInitializationError(f"braid: parameter {self.name} has an unknown shape {self._shape}")
            self._deferred = (chosen, devices)
            return
        self._finish(chosen, devices)

    def _finish(self, init, devices):
        first = init(self._shape, self.dtype, devices[0])
        self._data = collections.OrderedDict()
        for d in devices:
            value = first if d == devices[0] else first.copyto(d)
            if self.grad_req != "null":
                value.attach_grad(self.grad_req)
            self._data[d] = value

    def _check(self):
        if self._data is None:
            if self._deferred is not None:
                raise DeferredInitializationError(f"braid: parameter {self.name} is waiting for its shape "
                                                  f"{self._shape}: run a forward pass first")
            raise RuntimeError(f"braid: parameter {self.name} has not been initialised (call initialize())")

    def data(self, ctx=None):
        """The value on ctx (default: the first device it was initialised on)."""
        self._check()
        if ctx is None:
            return next(iter(self._data.values()))
        if ctx not in self._data:
            raise RuntimeError(f"braid: parameter {self.name} was not initialised on {ctx!r} "
                               f"(only on {list(self._data)})")
        return self._data[ctx]

    def list_data(self):
        self._check()
        return list(self._data.values())

    def list_ctx(self):
        self._check()
        return list(self._data)

    def grad(self, ctx=None):
        if self.grad_req == "null":
            raise RuntimeError(f"braid: parameter {self.name} has no gradient (grad_req 'null')")
        return self.data(ctx).grad

    def list_grad(self):
        return [self.grad(d) for d in self.list_ctx()]

    def set_data(self, value):
        """Writes value into every device's copy."""
        for d in self.list_data():
            d[:] = value

    def zero_grad(self):
        if self.grad_req != "null" and self._data is not None:
            for g in self.list_grad():
                g[:] = 0


class ParameterDict(collections.OrderedDict):
    """name -> Parameter, as collect_params() gives it, with MXNet's whole-model methods."""

    def initialize(self, init=None, ctx=None, force_reinit=False):
        for p in self.values():
            p.initialize(None, ctx, default_init=init, force_reinit=force_reinit)

    def zero_grad(self):
        for p in self.values():
            p.zero_grad()

    def setattr(self, name, value):
        for p in self.values():
            setattr(p, name, value)

