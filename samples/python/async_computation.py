#!/usr/bin/env python3
"""The chapter's "Asynchronous Computation" listings on braid, with MXNet's imports changed: NumPy
against braid's np for 1000x1000 products, waitall as a barrier, and the 1x2 loop with a wait per op
against one wait at the end.

    samples/python/async_computation.py [--device cuda:0]
"""
import argparse
import sys

import numpy

import braid
from benchmark import Benchmark
from braid import np, npx




def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu:0", help="a braid device (default cpu:0)")
    args = ap.parse_args()
    try:
        device = braid.Device.parse(args.device)
    except ValueError as e:
        ap.error(str(e))

    # Warmup for the device's computation
    a = np.random.normal(size=(1000, 1000), ctx=device)
    b = np.dot(a, a)

    with Benchmark('numpy'):
        for _ in range(10):
            a = numpy.random.normal(size=(1000, 1000))
            b = numpy.dot(a, a)

    with Benchmark('braid.np'):
        for _ in range(10):
            a = np.random.normal(size=(1000, 1000), ctx=device)
            b = np.dot(a, a)

    with Benchmark():
        for _ in range(10):
            a = np.random.normal(size=(1000, 1000), ctx=device)
            b = np.dot(a, a)
        npx.waitall()

    # Barriers and blockers
    with Benchmark('waitall'):
        b = np.dot(a, a)
        npx.waitall()

    with Benchmark('wait_to_read'):
        b = np.dot(a, a)
        b.wait_to_read()

    with Benchmark('numpy conversion'):
        b = np.dot(a, a)
        b.asnumpy()

    with Benchmark('scalar conversion'):
        b = np.dot(a, a)
        b.sum().item()

    # Improving computation
    x = np.ones((1, 2), ctx=device)
    with Benchmark('synchronous') as sync:
        for _ in range(10000):
            y = x + 1
            y.wait_to_read()

    with Benchmark('asynchronous') as asynchronous:
        for _ in range(10000):
            y = x + 1
        npx.waitall()

    x = np.ones((1, 2), ctx=device)
    y = np.ones((1, 2), ctx=device)
    z = x * y + 2
    print(z)
    expected = numpy.full((1, 2), 3.0, dtype=numpy.float32)
    if not numpy.array_equal(z.asnumpy(), expected) or not numpy.array_equal(y.asnumpy() + 1, expected - 1):
        print("wrong result", file=sys.stderr)
        return 1
    print(f"asynchronous / synchronous: {asynchronous.seconds / sync.seconds:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
