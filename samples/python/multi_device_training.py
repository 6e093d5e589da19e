#!/usr/bin/env python3
"""The chapter's "Training on Multiple GPUs" from scratch, in Python, on braid: LeNet on Fashion-MNIST
with the batch split over devices, gradients summed by hand (allreduce with copyto) and SGD by hand.
The MXNet listing with its imports changed to braid's; the devices are any braid has (two CPU devices
with BRAID_CPU_DEVICES=2, a CPU and a GPU, ...).

    BRAID_CPU_DEVICES=2 samples/python/multi_device_training.py --devices cpu:0,cpu:1 --epochs 1
"""
import argparse
import json
import sys
import time

import braid
from braid import autograd, gluon, np, npx

npx.set_np()

# Initialize model parameters (--scale changes the chapter's 0.01, before main() reads it)
scale = float(next((a.split("=")[1] for a in sys.argv if a.startswith("--scale=")), 0.01))
W1 = np.random.normal(scale=scale, size=(20, 1, 3, 3))
b1 = np.zeros(20)
W2 = np.random.normal(scale=scale, size=(50, 20, 5, 5))
b2 = np.zeros(50)
W3 = np.random.normal(scale=scale, size=(800, 128))
b3 = np.zeros(128)
W4 = np.random.normal(scale=scale, size=(128, 10))
b4 = np.zeros(10)
params = [W1, b1, W2, b2, W3, b3, W4, b4]


# Define the model
def lenet(X, params):
    h1_conv = npx.convolution(data=X, weight=params[0], bias=params[1], kernel=(3, 3), num_filter=20)
    h1_activation = npx.relu(h1_conv)
    h1 = npx.pooling(data=h1_activation, pool_type='avg', kernel=(2, 2), stride=(2, 2))
    h2_conv = npx.convolution(data=h1, weight=params[2], bias=params[3], kernel=(5, 5), num_filter=50)
    h2_activation = npx.relu(h2_conv)
    h2 = npx.pooling(data=h2_activation, pool_type='avg', kernel=(2, 2), stride=(2, 2))
    h2 = h2.reshape(h2.shape[0], -1)
    h3_linear = np.dot(h2, params[4]) + params[5]
    h3 = npx.relu(h3_linear)
    y_hat = np.dot(h3, params[6]) + params[7]
    return y_hat


# Cross-entropy loss function
loss = gluon.loss.SoftmaxCrossEntropyLoss()


def get_params(params, device):
    new_params = [p.copyto(device) for p in params]
    for p in new_params:
        p.attach_grad()
    return new_params


def allreduce(data):
    for i in range(1, len(data)):
        data[0][:] += data[i].copyto(data[0].ctx)
    for i in range(1, len(data)):
        data[0].copyto(data[i])


def split_batch(X, y, devices):
    """Split `X` and `y` into multiple devices."""
    assert X.shape[0] == y.shape[0]
    return (gluon.utils.split_and_load(X, devices, even_split=False),
            gluon.utils.split_and_load(y, devices, even_split=False))


def sgd(params, lr, batch_size):
    for param in params:
        param[:] = param - lr * param.grad / batch_size


def train_batch(X, y, device_params, devices, lr):
    X_shards, y_shards = split_batch(X, y, devices)
    with autograd.record():  # Loss is calculated separately on each GPU
        ls = [loss(lenet(X_shard, device_W), y_shard).sum()
              for X_shard, y_shard, device_W in zip(X_shards, y_shards, device_params)]
    for l in ls:  # Backpropagation is performed separately on each GPU
        l.backward()
    # Sum all gradients from each GPU and broadcast them to all GPUs
    for i in range(len(device_params[0])):
        allreduce([device_params[c][i].grad for c in range(len(devices))])
    # The model parameters are updated separately on each GPU
    for param in device_params:
        sgd(param, lr, X.shape[0])  # Here, we use a full-size batch
    return ls, X.shape[0]  # read after the epoch: item() here would wait for every batch


def evaluate_accuracy(net, data_iter, device):
    correct = total = 0
    for X, y in data_iter:
        y_hat = net(X.as_in_ctx(device))
        correct += (y_hat.argmax(axis=1).astype(np.int32) == y.as_in_ctx(device)).sum().item()
        total += y.shape[0]
    return correct / total


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--devices", default="cpu:0", help="comma-separated braid devices (default cpu:0)")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batches", type=int, default=0, help="batches per epoch (0: the whole training set)")
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--lr", type=float, default=0.2)
    ap.add_argument("--json", action="store_true", help="print one JSON object per epoch")
    ap.add_argument("--scale", type=float, default=0.01,
                    help="standard deviation of the initial weights, given as --scale=S (default 0.01)")
    args = ap.parse_args()
    try:
        devices = [braid.Device.parse(name) for name in args.devices.split(",")]
    except ValueError as e:
        ap.error(str(e))
    train_iter, test_iter = braid.data.load_data_fashion_mnist(args.batch_size)
    device_params = [get_params(params, d) for d in devices]
    for epoch in range(args.epochs):
        start, losses = time.perf_counter(), []
        for i, (X, y) in enumerate(train_iter):
            if args.batches and i == args.batches:
                break
            losses.append(train_batch(X, y, device_params, devices, args.lr))
        npx.waitall()
        seconds = time.perf_counter() - start
        losses = [sum(l_.item() for l_ in ls) / n for ls, n in losses]
        accuracy = evaluate_accuracy(lambda x: lenet(x, device_params[0]), test_iter, devices[0])
        head, tail = losses[:5], losses[-5:]
        result = {"epoch": epoch + 1, "batches": len(losses), "seconds": seconds,
                  "loss_first": sum(head) / len(head), "loss_last": sum(tail) / len(tail),
                  "mean_loss": sum(losses) / len(losses), "test_accuracy": accuracy, "devices": args.devices}
        if args.json:
            print(json.dumps(result))
        else:
            print(f"epoch {epoch + 1}: {seconds:.2f} s, train loss {result['mean_loss']:.4f}, test accuracy "
                  f"{accuracy:.4f}, on {args.devices}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
