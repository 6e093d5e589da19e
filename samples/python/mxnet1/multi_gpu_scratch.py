#!/usr/bin/env python3
"""The MXNet 1.x edition's "Multi-GPU Computation" (8.4) on braid, with its import lines changed: LeNet on
Fashion-MNIST, each batch split over the devices by hand, gradients summed with copyto and SGD by hand.
The devices are d2l.try_all_gpus()'s (GPUs, else CPU devices: two with BRAID_CPU_DEVICES=2).
--num-gpus, --epochs and --batches shrink it for tests; --json prints the last epoch's figures.

    BRAID_CPU_DEVICES=2 PYTHONPATH=bindings/python:samples/python/mxnet1 samples/python/mxnet1/multi_gpu_scratch.py
"""
import argparse
import json
import time

import d2lzh as d2l
import braid as mx  # noqa: F401 (the listing imports it)
from braid import autograd, nd
from braid.gluon import loss as gloss

parser = argparse.ArgumentParser()
parser.add_argument("--num-gpus", type=int, default=2)
parser.add_argument("--batch-size", type=int, default=256)
parser.add_argument("--lr", type=float, default=0.2)
parser.add_argument("--epochs", type=int, default=4)
parser.add_argument("--batches", type=int, default=0, help="batches per epoch (0: the whole training set)")
parser.add_argument("--scale", type=float, default=0.01)
parser.add_argument("--json", action="store_true")
args = parser.parse_args()

# Initialize model parameters
scale = args.scale
W1 = nd.random.normal(scale=scale, shape=(20, 1, 3, 3))
b1 = nd.zeros(shape=20)
W2 = nd.random.normal(scale=scale, shape=(50, 20, 5, 5))
b2 = nd.zeros(shape=50)
W3 = nd.random.normal(scale=scale, shape=(800, 128))
b3 = nd.zeros(shape=128)
W4 = nd.random.normal(scale=scale, shape=(128, 10))
b4 = nd.zeros(shape=10)
params = [W1, b1, W2, b2, W3, b3, W4, b4]


# Define the model
def lenet(X, params):
    h1_conv = nd.Convolution(data=X, weight=params[0], bias=params[1], kernel=(3, 3), num_filter=20)
    h1_activation = nd.relu(h1_conv)
    h1 = nd.Pooling(data=h1_activation, pool_type='avg', kernel=(2, 2), stride=(2, 2))
    h2_conv = nd.Convolution(data=h1, weight=params[2], bias=params[3], kernel=(5, 5), num_filter=50)
    h2_activation = nd.relu(h2_conv)
    h2 = nd.Pooling(data=h2_activation, pool_type='avg', kernel=(2, 2), stride=(2, 2))
    h2 = nd.flatten(h2)
    h3_linear = nd.dot(h2, params[4]) + params[5]
    h3 = nd.relu(h3_linear)
    y_hat = nd.dot(h3, params[6]) + params[7]
    return y_hat


# Cross-entropy loss function
loss = gloss.SoftmaxCrossEntropyLoss()


def get_params(params, ctx):
    new_params = [p.copyto(ctx) for p in params]
    for p in new_params:
        p.attach_grad()
    return new_params


def allreduce(data):
    for i in range(1, len(data)):
        data[0][:] += data[i].copyto(data[0].context)
    for i in range(1, len(data)):
        data[0].copyto(data[i])


def split_and_load(data, ctx):
    n, k = data.shape[0], len(ctx)
    m = n // k  # For simplicity, we assume the data is divisible
    assert m * k == n, '# examples is not divided by # devices.'
    return [data[i * m: (i + 1) * m].as_in_context(ctx[i]) for i in range(k)]


def train_batch(X, y, gpu_params, ctx, lr):
    # When ctx contains multiple GPUs, mini-batches of data instances are divided and copied to each GPU
    gpu_Xs, gpu_ys = split_and_load(X, ctx), split_and_load(y, ctx)
    with autograd.record():  # Loss is calculated separately on each GPU
        ls = [loss(lenet(gpu_X, gpu_W), gpu_y) for gpu_X, gpu_y, gpu_W in zip(gpu_Xs, gpu_ys, gpu_params)]
    for l in ls:  # Back Propagation is performed separately on each GPU
        l.backward()
    # Add up all the gradients from each GPU and then broadcast them to all the GPUs
    for i in range(len(gpu_params[0])):
        allreduce([gpu_params[c][i].grad for c in range(len(ctx))])
    for param in gpu_params:  # The model parameters are updated separately on each GPU
        d2l.sgd(param, lr, X.shape[0])  # Here, we use a full-size batch
    return ls


def train(num_gpus, batch_size, lr):
    train_iter, test_iter = d2l.load_data_fashion_mnist(batch_size)
    ctx = d2l.try_all_gpus()[:num_gpus]
    print('running on:', ctx)
    # Copy model parameters to num_gpus GPUs
    gpu_params = [get_params(params, c) for c in ctx]
    for epoch in range(args.epochs):
        start, losses = time.time(), []
        for i, (X, y) in enumerate(train_iter):
            if args.batches and i == args.batches:
                break
            ls = train_batch(X, y, gpu_params, ctx, lr)
            nd.waitall()
            losses.append(sum(l.mean().asscalar() for l in ls) / len(ls))
        train_time = time.time() - start

        def net(x):  # Verify the model on GPU 0
            return lenet(x, gpu_params[0])

        test_acc = d2l.evaluate_accuracy(test_iter, net, ctx[0])
        print('epoch %d, time %.1f sec, test acc %.2f' % (epoch + 1, train_time, test_acc))
    spread = max(float((p - q.copyto(p.context)).abs().max().asscalar())
                 for c in gpu_params[1:] for p, q in zip(gpu_params[0], c)) if len(ctx) > 1 else 0.0
    if args.json:
        print(json.dumps({"devices": [str(c) for c in ctx], "batches": len(losses), "loss_first": losses[0],
                          "loss_last": losses[-1], "test_accuracy": test_acc, "replica_spread": spread}))


train(num_gpus=args.num_gpus, batch_size=args.batch_size, lr=args.lr)
