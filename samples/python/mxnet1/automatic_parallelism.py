#!/usr/bin/env python3
"""The MXNet 1.x edition's "Automatic Parallelism" (8.3) on braid, with its import lines changed. The
listing's CPU and GPU are the first two devices d2l.try_all_gpus() gives (a GPU, else two CPU devices
with BRAID_CPU_DEVICES=2). --size and --products shrink it for tests; the end checks one product
against NumPy.

    BRAID_CPU_DEVICES=2 PYTHONPATH=bindings/python:samples/python/mxnet1 samples/python/mxnet1/automatic_parallelism.py
"""
import argparse

import numpy

import d2lzh as d2l
import braid as mx  # noqa: F401
from braid import nd

parser = argparse.ArgumentParser()
parser.add_argument("--size", type=int, default=2000)
parser.add_argument("--products", type=int, default=10)
args = parser.parse_args()
devices = d2l.try_all_gpus()
first, second = devices[0], devices[-1]


def run(x):
    return [nd.dot(x, x) for _ in range(args.products)]


x_cpu = nd.random.uniform(shape=(args.size, args.size), ctx=first)
x_gpu = nd.random.uniform(shape=(args.size, args.size), ctx=second)

run(x_cpu)  # Warm-up begins
run(x_gpu)
nd.waitall()  # Warm-up ends

with d2l.Benchmark('Run on %s.' % first):
    run(x_cpu)
    nd.waitall()

with d2l.Benchmark('Then run on %s.' % second):
    run(x_gpu)
    nd.waitall()

with d2l.Benchmark('Run on both %s and %s in parallel.' % (first, second)):
    run(x_cpu)
    run(x_gpu)
    nd.waitall()


def copy_to_cpu(x):
    return [y.copyto(mx.cpu()) for y in x]


with d2l.Benchmark('Run on %s.' % second):
    y = run(x_gpu)
    nd.waitall()

with d2l.Benchmark('Then copy to CPU.'):
    y_cpu = copy_to_cpu(y)
    nd.waitall()

with d2l.Benchmark('Run and copy in parallel.'):
    y = run(x_gpu)
    y_cpu = copy_to_cpu(y)
    nd.waitall()

want = x_gpu.asnumpy().astype(numpy.float64) @ x_gpu.asnumpy().astype(numpy.float64)
error = float(numpy.abs(y_cpu[0].asnumpy() - want).max() / numpy.abs(want).max())
print('largest relative error of a copied product: %.2e' % error)
assert error < 1e-5, error
