#!/usr/bin/env python3
"""The chapter's "Concise Implementation for Multiple GPUs" on braid, with MXNet's imports changed:
ResNet-18 in Gluon, initialised on every device, each batch split over them, and gluon.Trainer
summing the gradients and updating every copy; the devices are any braid has.

    BRAID_CPU_DEVICES=2 samples/python/concise_multi_device.py --devices cpu:0,cpu:1 [--epochs 1] [--batches N]
"""
import argparse
import json
import sys
import time

import braid
from braid import amp, autograd, gluon, init, np, npx
from braid.gluon import nn

npx.set_np()


class Residual(nn.Block):
    """The Residual block of the chapter's ResNet."""

    def __init__(self, num_channels, use_1x1conv=False, strides=1, **kwargs):
        super().__init__(**kwargs)
        self.conv1 = nn.Conv2D(num_channels, kernel_size=3, padding=1, strides=strides)
        self.conv2 = nn.Conv2D(num_channels, kernel_size=3, padding=1)
        if use_1x1conv:
            self.conv3 = nn.Conv2D(num_channels, kernel_size=1, strides=strides)
        else:
            self.conv3 = None
        self.bn1 = nn.BatchNorm()
        self.bn2 = nn.BatchNorm()

    def forward(self, X):
        Y = npx.relu(self.bn1(self.conv1(X)))
        Y = self.bn2(self.conv2(Y))
        if self.conv3:
            X = self.conv3(X)
        return npx.relu(Y + X)


def resnet18(num_classes):
    """A slightly modified ResNet-18 model."""
    def resnet_block(num_channels, num_residuals, first_block=False):
        blk = nn.Sequential()
        for i in range(num_residuals):
            if i == 0 and not first_block:
                blk.add(Residual(num_channels, use_1x1conv=True, strides=2))
            else:
                blk.add(Residual(num_channels))
        return blk

    net = nn.Sequential()
    # This model uses a smaller convolution kernel, stride, and padding and
    # removes the max-pooling layer
    net.add(nn.Conv2D(64, kernel_size=3, strides=1, padding=1),
            nn.BatchNorm(), nn.Activation('relu'))
    net.add(resnet_block(64, 2, first_block=True),
            resnet_block(128, 2),
            resnet_block(256, 2),
            resnet_block(512, 2))
    net.add(nn.GlobalAvgPool2D(), nn.Dense(num_classes))
    return net


def split_batch(X, y, devices):
    return (gluon.utils.split_and_load(X, devices, even_split=False),
            gluon.utils.split_and_load(y, devices, even_split=False))


def evaluate_accuracy_gpus(net, data_iter, batches=0):
    # Query the list of devices
    devices = list(net.collect_params().values())[0].list_ctx()
    correct = total = 0
    for i, (features, labels) in enumerate(data_iter):
        if batches and i == batches:
            break
        X_shards, y_shards = split_batch(features, labels, devices)
        # Run in parallel
        pred_shards = [net(X_shard) for X_shard in X_shards]
        correct += sum((p.argmax(axis=1).astype(np.int32) == y).sum().item() for p, y in zip(pred_shards, y_shards))
        total += labels.shape[0]
    return correct / total


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--devices", default="cpu:0")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batches", type=int, default=0, help="batches per epoch (0: the whole training set)")
    ap.add_argument("--test-batches", type=int, default=0, help="test batches to evaluate (0: all)")
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--amp", choices=["off", "bf16", "f16"], default="off",
                    help="mixed precision (docs/AMP.md): bf16, or f16 with dynamic loss scaling")
    args = ap.parse_args()
    try:
        devices = [braid.Device.parse(name) for name in args.devices.split(",")]
    except ValueError as e:
        ap.error(str(e))

    net = resnet18(10)
    train_iter, test_iter = braid.data.load_data_fashion_mnist(args.batch_size)
    net.initialize(init=init.Normal(sigma=0.01), ctx=devices, force_reinit=True)
    trainer = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': args.lr})
    if args.amp != "off":
        amp.init(args.amp)  # autocast on this thread, which runs every device's forward and backward
        amp.init_trainer(trainer)  # f16: dynamic loss scaling; bf16 needs none
    loss = gluon.loss.SoftmaxCrossEntropyLoss()
    for epoch in range(args.epochs):
        start, losses = time.perf_counter(), []
        for i, (features, labels) in enumerate(train_iter):
            if args.batches and i == args.batches:
                break
            X_shards, y_shards = split_batch(features, labels, devices)
            with autograd.record():
                ls = [loss(net(X_shard), y_shard) for X_shard, y_shard in zip(X_shards, y_shards)]
                with amp.scale_loss(ls, trainer) as scaled:  # ls itself without a loss scaler
                    for l in scaled:
                        l.backward()
            trainer.step(args.batch_size)
            losses.append((ls, labels.shape[0]))
        npx.waitall()
        seconds = time.perf_counter() - start
        losses = [sum(l.sum().item() for l in ls) / n for ls, n in losses]
        accuracy = evaluate_accuracy_gpus(net, test_iter, args.test_batches)
        # data parallelism keeps every device's copy of a parameter equal
        weights = net[0].params.get('weight')
        spread = max(abs(w.asnumpy() - weights.data(devices[0]).asnumpy()).max() for w in weights.list_data())
        result = {"epoch": epoch + 1, "batches": len(losses), "seconds": seconds,
                  "samples_per_second": len(losses) * args.batch_size / seconds, "loss_first": losses[0],
                  "loss_last": losses[-1], "test_accuracy": accuracy, "replica_spread": float(spread),
                  "devices": args.devices, "amp": args.amp}
        if args.json:
            print(json.dumps(result))
        else:
            print(f"epoch {epoch + 1}: test acc {accuracy:.2f}, {seconds:.1f} sec/epoch, "
                  f"{result['samples_per_second']:.0f} samples/s on {args.devices}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
