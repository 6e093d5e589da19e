#!/usr/bin/env python3
"""The MXNet 1.x edition's "Asynchronous Computation" (8.2) on braid: the listing with its import lines
changed (`import mxnet as mx` -> `import braid as mx`, `from mxnet import ...` -> `from braid import ...`).
--size and --steps shrink it for tests.

    PYTHONPATH=bindings/python:samples/python/mxnet1 samples/python/mxnet1/async_computation.py
"""
import argparse
import os
import subprocess
import time

import d2lzh as d2l  # noqa: F401 (the listing imports it)
import braid as mx  # noqa: F401
from braid import autograd, gluon, nd
from braid.gluon import loss as gloss, nn

parser = argparse.ArgumentParser()
parser.add_argument("--size", type=int, default=2000)
parser.add_argument("--steps", type=int, default=1000)
parser.add_argument("--batches", type=int, default=100)
args = parser.parse_args()

a = nd.ones((1, 2))
b = nd.ones((1, 2))
c = a * b + 2
print(c)


class Benchmark():
    def __init__(self, prefix=None):
        self.prefix = prefix + ' ' if prefix else ''

    def __enter__(self):
        self.start = time.time()

    def __exit__(self, *args):
        print('%stime: %.4f sec' % (self.prefix, time.time() - self.start))


with Benchmark('Workloads are queued.'):
    x = nd.random.uniform(shape=(args.size, args.size))
    y = nd.dot(x, x).sum()

with Benchmark('Workloads are finished.'):
    print('sum =', y)

with Benchmark():
    y = nd.dot(x, x)
    y.wait_to_read()

with Benchmark():
    y = nd.dot(x, x)
    z = nd.dot(x, x)
    nd.waitall()

with Benchmark():
    y = nd.dot(x, x)
    y.asnumpy()

with Benchmark():
    y = nd.dot(x, x)
    y.norm().asscalar()

with Benchmark('synchronous.'):
    for _ in range(args.steps):
        y = x + 1
        y.wait_to_read()

with Benchmark('asynchronous.'):
    for _ in range(args.steps):
        y = x + 1
    nd.waitall()


def data_iter():
    start = time.time()
    num_batches, batch_size = args.batches, 1024
    for i in range(num_batches):
        X = nd.random.normal(shape=(batch_size, 512))
        y = nd.ones((batch_size,))
        yield X, y
        if (i + 1) % 50 == 0:
            print('batch %d, time %f sec' % (i + 1, time.time() - start))


net = nn.Sequential()
net.add(nn.Dense(2048, activation='relu'),
        nn.Dense(512, activation='relu'),
        nn.Dense(1))
net.initialize()
trainer = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 0.005})
loss = gloss.L2Loss()


def get_mem():
    res = subprocess.check_output(['ps', 'u', '-p', str(os.getpid())])
    return int(str(res).split()[15]) / 1e3


for X, y in data_iter():
    break
loss(y, net(X)).wait_to_read()

l_sum, mem = 0, get_mem()
for X, y in data_iter():
    with autograd.record():
        l = loss(y, net(X))
    l_sum += l.mean().asscalar()  # Use the asscalar synchronization function
    l.backward()
    trainer.step(X.shape[0])
nd.waitall()
print('increased memory: %f MB' % (get_mem() - mem))
print('mean loss: %f' % (l_sum / args.batches))
