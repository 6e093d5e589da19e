"""The layers, each a HybridBlock over braid's ops (so a model of them hybridizes whole)."""
import ctypes

from ... import autograd, npx
from ..._lib import BatchNormParams, c_tensor, check, lib
from ...ndarray import new, ndarray
from ..block import HybridBlock
from ..parameter import Parameter

_ACTIVATIONS = {"relu": npx.relu, "sigmoid": npx.sigmoid, "tanh": lambda x: x.tanh()}


def _activation(name):
    if name is None:
        return None
    if name not in _ACTIVATIONS:
        raise ValueError(f"braid: activation {name!r} is none of {', '.join(_ACTIVATIONS)}")
    return _ACTIVATIONS[name]


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


class Activation(HybridBlock):
    def __init__(self, activation):
        super().__init__()
        self._fn = _activation(activation)
        self._name = activation

    def forward(self, x):
        return self._fn(x)

    def __repr__(self):
        return f"Activation({self._name})"


class Dense(HybridBlock):
    """y = activation(x W^T + b), W of shape (units, in_units) as MXNet keeps it; in_units 0 is inferred
    from the first input; flatten folds every axis after the first into the features."""

    def __init__(self, units, activation=None, use_bias=True, flatten=True, dtype="float32", weight_initializer=None,
                 bias_initializer="zeros", in_units=0):
        super().__init__()
        self._units, self._flatten, self._act = units, flatten, _activation(activation)
        self.weight = Parameter("weight", (units, in_units), dtype, weight_initializer)
        self.bias = Parameter("bias", (units,), dtype, bias_initializer) if use_bias else None

    def forward(self, x):
        if self._flatten and x.ndim != 2:
            x = x.reshape(x.shape[0], -1)
        if self.weight.shape[1] == 0:
            self.weight.shape = (self._units, x.shape[-1])
        w = self.weight.data(x.ctx)
        y = new(lib.braid_matmul, x.handle, w.handle, 0, 1)
        if self.bias is not None:
            y = y + self.bias.data(x.ctx)
        return self._act(y) if self._act else y

    def __repr__(self):
        return f"Dense({self.weight.shape[1] or None} -> {self._units})"


class Conv2D(HybridBlock):
    """2-D convolution, NCHW, weights (channels, in_channels, kh, kw); in_channels 0 is inferred."""

    def __init__(self, channels, kernel_size, strides=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1,
                 layout="NCHW", activation=None, use_bias=True, weight_initializer=None, bias_initializer="zeros",
                 in_channels=0):
        super().__init__()
        if _pair(dilation) != (1, 1) or groups != 1 or layout != "NCHW":
            raise ValueError("braid: Conv2D supports dilation 1, groups 1 and layout NCHW only")
        self._channels, self._kernel = channels, _pair(kernel_size)
        self._strides, self._padding, self._act = _pair(strides), _pair(padding), _activation(activation)
        self.weight = Parameter("weight", (channels, in_channels) + self._kernel, "float32", weight_initializer)
        self.bias = Parameter("bias", (channels,), "float32", bias_initializer) if use_bias else None

    def forward(self, x):
        if self.weight.shape[1] == 0:
            self.weight.shape = (self._channels, x.shape[1]) + self._kernel
        b = self.bias.data(x.ctx) if self.bias is not None else None
        y = npx.convolution(x, self.weight.data(x.ctx), b, stride=self._strides, pad=self._padding)
        return self._act(y) if self._act else y

    def __repr__(self):
        return f"Conv2D({self.weight.shape[1] or None} -> {self._channels}, kernel_size={self._kernel})"


class _Pool(HybridBlock):
    def __init__(self, kind, pool_size, strides, padding, global_pool=False, count_include_pad=True):
        super().__init__()
        self._kind, self._size = kind, _pair(pool_size)
        self._strides = self._size if strides is None else _pair(strides)  # Gluon: strides default to the size
        self._padding, self._global, self._count_pad = _pair(padding), global_pool, count_include_pad

    def forward(self, x):
        return npx.pooling(x, kernel=self._size, pool_type=self._kind, stride=self._strides, pad=self._padding,
                           global_pool=self._global, count_include_pad=self._count_pad)


class MaxPool2D(_Pool):
    def __init__(self, pool_size=(2, 2), strides=None, padding=0, layout="NCHW"):
        super().__init__("max", pool_size, strides, padding)


class AvgPool2D(_Pool):
    def __init__(self, pool_size=(2, 2), strides=None, padding=0, layout="NCHW", count_include_pad=True):
        super().__init__("avg", pool_size, strides, padding, count_include_pad=count_include_pad)


class GlobalAvgPool2D(_Pool):
    def __init__(self, layout="NCHW"):
        super().__init__("avg", 1, None, 0, global_pool=True)


class GlobalMaxPool2D(_Pool):
    def __init__(self, layout="NCHW"):
        super().__init__("max", 1, None, 0, global_pool=True)


class Flatten(HybridBlock):
    def forward(self, x):
        return x.reshape(x.shape[0], -1)


class Dropout(HybridBlock):
    """Inverted dropout of rate while training (autograd.record()); the identity otherwise."""

    def __init__(self, rate):
        super().__init__()
        self._rate = rate

    def forward(self, x):
        return npx.dropout(x, self._rate)


class BatchNorm(HybridBlock):
    """Batch normalisation over axis 1. While training (autograd.record()) it normalises with the
    batch's statistics and updates the running ones (running = momentum * running + (1 - momentum) *
    batch, MXNet's convention for momentum; the batch variance that goes into the running one is the
    unbiased estimate, as braid's op and PyTorch take it, where MXNet takes the biased one); otherwise it
    uses the running ones."""

    def __init__(self, axis=1, momentum=0.9, epsilon=1e-5, center=True, scale=True, use_global_stats=False,
                 beta_initializer="zeros", gamma_initializer="ones", running_mean_initializer="zeros",
                 running_variance_initializer="ones", in_channels=0):
        super().__init__()
        if axis != 1 or not center or not scale or use_global_stats:
            raise ValueError("braid: BatchNorm supports axis 1 with center and scale, and batch statistics in training")
        self._momentum, self._eps = momentum, epsilon
        self.gamma = Parameter("gamma", (in_channels,), init=gamma_initializer)
        self.beta = Parameter("beta", (in_channels,), init=beta_initializer)
        self.running_mean = Parameter("running_mean", (in_channels,), init=running_mean_initializer, grad_req="null")
        self.running_var = Parameter("running_var", (in_channels,), init=running_variance_initializer,
                                     grad_req="null")

    def forward(self, x):
        if self.gamma.shape[0] == 0:
            for p in (self.gamma, self.beta, self.running_mean, self.running_var):
                p.shape = (x.shape[1],)
        d = x.ctx
        # braid's momentum weighs the batch (PyTorch's), MXNet's the running value; braid reads 0 as its
        # default 0.1, so MXNet's 1.0 (running statistics frozen) is passed as the smallest positive
        # double, which leaves them unchanged.
        batch_weight = 1.0 - self._momentum if self._momentum < 1.0 else 5e-324
        params = BatchNormParams(ctypes.sizeof(BatchNormParams), self._eps, batch_weight,
                                 int(autograd.is_training()))
        out = c_tensor()
        gamma, beta = self.gamma.data(d), self.beta.data(d)
        mean, var = self.running_mean.data(d), self.running_var.data(d)
        check(lib.braid_batch_norm(x.handle, gamma.handle, beta.handle, mean.handle, var.handle, ctypes.byref(params),
                                   ctypes.byref(out), None, None))
        return ndarray(out)

    def __repr__(self):
        return f"BatchNorm({self.gamma.shape[0] or None})"
