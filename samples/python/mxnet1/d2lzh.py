"""The few helpers of the book's MXNet 1.x package (d2lzh) that the chapter's listings call, written over
braid, so that the listings here keep their `import d2lzh as d2l` line. Devices: try_gpu/try_all_gpus
give braid's GPUs where there are some, else its CPU devices (two with BRAID_CPU_DEVICES=2), so the
multi-device listings run on any machine."""
import time

import braid as mx
from braid import data, nd
from braid.gluon import nn

__all__ = ["Benchmark", "try_gpu", "try_all_gpus", "load_data_fashion_mnist", "evaluate_accuracy", "sgd",
           "Residual", "resnet18"]


class Benchmark:
    """with Benchmark('what'): prints the time the block took."""

    def __init__(self, prefix=None):
        self.prefix = prefix + " " if prefix else ""

    def __enter__(self):
        self.start = time.time()

    def __exit__(self, *args):
        print("%stime: %.4f sec" % (self.prefix, time.time() - self.start))


def _devices():
    gpus = [mx.gpu(i) for i in range(mx.context.num_gpus())]
    return gpus or [d for d in mx.devices() if d.device_type == "cpu"] or [mx.cpu()]


def try_gpu():
    return _devices()[0]


def try_all_gpus():
    return _devices()


def load_data_fashion_mnist(batch_size, resize=None):
    """(train_iter, test_iter) of (X, y) batches on cpu(0): X float32 (batch, 1, 28, 28) in [0, 1]."""
    if resize is not None and resize != 28:
        raise ValueError("braid's d2lzh: Fashion-MNIST at 28 x 28 only")
    return data.load_data_fashion_mnist(batch_size)


def _get_batch(batch, ctx):
    features, labels = batch
    if labels.dtype != features.dtype:
        labels = labels.astype(features.dtype)
    return (mx.gluon.utils.split_and_load(features, ctx), mx.gluon.utils.split_and_load(labels, ctx),
            features.shape[0])


def evaluate_accuracy(data_iter, net, ctx=None):
    ctx = ctx or [mx.cpu()]
    if isinstance(ctx, mx.Context):
        ctx = [ctx]
    acc_sum, n = nd.array([0]), 0
    for batch in data_iter:
        features, labels, _ = _get_batch(batch, ctx)
        for X, y in zip(features, labels):
            y = y.astype("float32")
            acc_sum += (net(X).argmax(axis=1) == y).sum().copyto(mx.cpu())
            n += y.size
        acc_sum.wait_to_read()
    return acc_sum.asscalar() / n


def sgd(params, lr, batch_size):
    for param in params:
        param[:] = param - lr * param.grad / batch_size


class Residual(nn.Block):
    def __init__(self, num_channels, use_1x1conv=False, strides=1, **kwargs):
        super(Residual, self).__init__(**kwargs)
        self.conv1 = nn.Conv2D(num_channels, kernel_size=3, padding=1, strides=strides)
        self.conv2 = nn.Conv2D(num_channels, kernel_size=3, padding=1)
        if use_1x1conv:
            self.conv3 = nn.Conv2D(num_channels, kernel_size=1, strides=strides)
        else:
            self.conv3 = None
        self.bn1 = nn.BatchNorm()
        self.bn2 = nn.BatchNorm()

    def forward(self, X):
        Y = nd.relu(self.bn1(self.conv1(X)))
        Y = self.bn2(self.conv2(Y))
        if self.conv3:
            X = self.conv3(X)
        return nd.relu(Y + X)


def resnet18(num_classes):
    def resnet_block(num_channels, num_residuals, first_block=False):
        blk = nn.Sequential()
        for i in range(num_residuals):
            if i == 0 and not first_block:
                blk.add(Residual(num_channels, use_1x1conv=True, strides=2))
            else:
                blk.add(Residual(num_channels))
        return blk

    net = nn.Sequential()
    net.add(nn.Conv2D(64, kernel_size=3, strides=1, padding=1), nn.BatchNorm(), nn.Activation("relu"))
    net.add(resnet_block(64, 2, first_block=True), resnet_block(128, 2), resnet_block(256, 2), resnet_block(512, 2))
    net.add(nn.GlobalAvgPool2D(), nn.Dense(num_classes))
    return net
