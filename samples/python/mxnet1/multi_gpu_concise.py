#!/usr/bin/env python3
"""The MXNet 1.x edition's "Concise Implementation of Multi-GPU Computation" (8.5) on braid, with its import
lines changed: ResNet-18 in Gluon initialised on every device, batches split with gluon.utils, and
gluon.Trainer summing the gradients. The devices are d2l.try_all_gpus()'s (GPUs, else CPU devices).
--num-gpus, --epochs, --batches, --batch-size and --test-batches shrink it for tests.

    BRAID_CPU_DEVICES=2 PYTHONPATH=bindings/python:samples/python/mxnet1 samples/python/mxnet1/multi_gpu_concise.py
"""
import argparse
import itertools
import json
import time

import d2lzh as d2l
import braid as mx
from braid import autograd, gluon, init, nd
from braid.gluon import loss as gloss, utils as gutils

parser = argparse.ArgumentParser()
parser.add_argument("--num-gpus", type=int, default=2)
parser.add_argument("--batch-size", type=int, default=512)
parser.add_argument("--lr", type=float, default=0.2)
parser.add_argument("--epochs", type=int, default=4)
parser.add_argument("--batches", type=int, default=0, help="batches per epoch (0: the whole training set)")
parser.add_argument("--test-batches", type=int, default=0, help="test batches (0: the whole test set)")
parser.add_argument("--json", action="store_true")
args = parser.parse_args()

net = d2l.resnet18(10)
ctx = d2l.try_all_gpus()[:args.num_gpus]
net.initialize(init=init.Normal(sigma=0.01), ctx=ctx)

x = nd.random.uniform(shape=(4, 1, 28, 28))
gpu_x = gutils.split_and_load(x, ctx)
net(gpu_x[0]), net(gpu_x[-1])

weight = net[0].params.get('weight')
print('weight on', weight.list_ctx())
print(weight.data(ctx[0])[0].shape, weight.data(ctx[-1])[0].shape)


def evaluate_accuracy(data_iter, net, ctx=[mx.cpu()]):
    if isinstance(ctx, mx.Context):
        ctx = [ctx]
    acc_sum, n = nd.array([0]), 0
    for batch in data_iter:
        features, labels, _ = d2l._get_batch(batch, ctx)
        for X, y in zip(features, labels):
            y = y.astype('float32')
            acc_sum += (net(X).argmax(axis=1) == y).sum().copyto(mx.cpu())
            n += y.size
        acc_sum.wait_to_read()
    return acc_sum.asscalar() / n


def train(num_gpus, batch_size, lr):
    train_iter, test_iter = d2l.load_data_fashion_mnist(batch_size)
    ctx = d2l.try_all_gpus()[:num_gpus]
    print('running on:', ctx)
    net.initialize(init=init.Normal(sigma=0.01), ctx=ctx, force_reinit=True)
    trainer = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': lr})
    loss = gloss.SoftmaxCrossEntropyLoss()
    for epoch in range(args.epochs):
        start, losses = time.time(), []
        for i, (X, y) in enumerate(train_iter):
            if args.batches and i == args.batches:
                break
            gpu_Xs = gutils.split_and_load(X, ctx)
            gpu_ys = gutils.split_and_load(y, ctx)
            with autograd.record():
                ls = [loss(net(gpu_X), gpu_y) for gpu_X, gpu_y in zip(gpu_Xs, gpu_ys)]
            for l in ls:
                l.backward()
            trainer.step(batch_size)
            losses.append(sum(l.mean().asscalar() for l in ls) / len(ls))
        nd.waitall()
        train_time = time.time() - start
        test = itertools.islice(test_iter, args.test_batches) if args.test_batches else test_iter
        test_acc = evaluate_accuracy(test, net, ctx[0])
        print('epoch %d, time %.1f sec, test acc %.2f' % (epoch + 1, train_time, test_acc))
    w = net[0].params.get('weight').list_data()
    spread = max(float((a - w[0].copyto(a.context)).abs().max().asscalar()) for a in w)
    if args.json:
        print(json.dumps({"devices": [str(c) for c in ctx], "batches": len(losses), "loss_first": losses[0],
                          "loss_last": losses[-1], "test_accuracy": test_acc, "replica_spread": spread}))


train(num_gpus=args.num_gpus, batch_size=args.batch_size, lr=args.lr)
