"""Initializers (MXNet's mx.init): each makes a parameter's first value on one device, from braid's
counter-based generator (braid.seed seeds it)."""
import math

from . import np


class Initializer:
    def __call__(self, shape, dtype, device):
        raise NotImplementedError(f"{type(self).__name__} does not say how to initialise")

    def __repr__(self):
        return f"{type(self).__name__}()"


class Zero(Initializer):
    def __call__(self, shape, dtype, device):
        return np.zeros(shape, dtype, device)


class One(Initializer):
    def __call__(self, shape, dtype, device):
        return np.ones(shape, dtype, device)


class Constant(Initializer):
    def __init__(self, value):
        self.value = value

    def __call__(self, shape, dtype, device):
        return np.full(shape, self.value, dtype, device)


class Uniform(Initializer):
    """U(-scale, scale); MXNet's default initializer, with scale 0.07."""

    def __init__(self, scale=0.07):
        self.scale = scale

    def __call__(self, shape, dtype, device):
        return np.random.uniform(-self.scale, self.scale, shape, dtype, device)


class Normal(Initializer):
    """N(0, sigma^2)."""

    def __init__(self, sigma=0.01):
        self.sigma = sigma

    def __call__(self, shape, dtype, device):
        return np.random.normal(0.0, self.sigma, shape, dtype, device)


class Xavier(Initializer):
    """Glorot: magnitude * 2 / (fan_in + fan_out) ("avg"), / fan_in ("in") or / fan_out ("out") is the
    variance's scale; uniform or gaussian (MXNet's defaults: uniform, avg, magnitude 3)."""

    def __init__(self, rnd_type="uniform", factor_type="avg", magnitude=3):
        if rnd_type not in ("uniform", "gaussian") or factor_type not in ("avg", "in", "out"):
            raise ValueError(f"braid: Xavier takes rnd_type uniform|gaussian and factor_type avg|in|out, not "
                             f"{rnd_type!r}, {factor_type!r}")
        self.rnd_type, self.factor_type, self.magnitude = rnd_type, factor_type, magnitude

    def __call__(self, shape, dtype, device):
        if len(shape) < 2:
            raise ValueError(f"braid: Xavier needs a parameter of two or more dimensions, not {shape}")
        receptive = math.prod(shape[2:])
        fan_in, fan_out = shape[1] * receptive, shape[0] * receptive
        factor = {"avg": (fan_in + fan_out) / 2.0, "in": fan_in, "out": fan_out}[self.factor_type]
        scale = math.sqrt(self.magnitude / factor)
        if self.rnd_type == "uniform":
            return np.random.uniform(-scale, scale, shape, dtype, device)
        return np.random.normal(0.0, scale, shape, dtype, device)


_BY_NAME = {"zeros": Zero, "ones": One, "uniform": Uniform, "normal": Normal, "xavier": Xavier}


def create(init):
    """An Initializer from one or from its name ("zeros", "ones", "normal", ...)."""
    if init is None or isinstance(init, Initializer):
        return init
    if isinstance(init, str) and init.lower() in _BY_NAME:
        return _BY_NAME[init.lower()]()
    raise ValueError(f"braid: {init!r} is not an initializer (braid.init.Normal(), 'zeros', ...)")
