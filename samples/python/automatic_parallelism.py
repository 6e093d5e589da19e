#!/usr/bin/env python3
"""The chapter's "Automatic Parallelism" listings on braid, with MXNet's imports changed: 50 matrix
products on each of two devices, alone and together (braid's engine overlaps them without being told),
then computation overlapping the copies of its results to the CPU.

    BRAID_CPU_DEVICES=2 samples/python/automatic_parallelism.py --devices cpu:0,cpu:1 [--size 4000]
"""
import argparse
import sys

import braid
from benchmark import Benchmark
from braid import np, npx




def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--devices", default="cpu:0,cpu:1", help="two braid devices (default cpu:0,cpu:1)")
    ap.add_argument("--size", type=int, default=4000, help="matrix size (the chapter's 4000)")
    ap.add_argument("--products", type=int, default=50, help="products per device (the chapter's 50)")
    args = ap.parse_args()
    try:
        devices = [braid.Device.parse(name) for name in args.devices.split(",")]
    except ValueError as e:
        ap.error(str(e))
    if len(devices) != 2:
        ap.error("--devices takes two devices")

    def run(x):
        return [x.dot(x) for _ in range(args.products)]

    x_gpu1 = np.random.uniform(size=(args.size, args.size), ctx=devices[0])
    x_gpu2 = np.random.uniform(size=(args.size, args.size), ctx=devices[1])

    run(x_gpu1)  # Warm-up both devices
    run(x_gpu2)
    npx.waitall()

    with Benchmark(f"{devices[0]} time") as one:
        run(x_gpu1)
        npx.waitall()

    with Benchmark(f"{devices[1]} time") as two:
        run(x_gpu2)
        npx.waitall()

    with Benchmark(f"{devices[0]} & {devices[1]}") as both:
        run(x_gpu1)
        run(x_gpu2)
        npx.waitall()
    print(f"together / sum of alone: {both.seconds / (one.seconds + two.seconds):.3f}")

    # Parallel computation and communication
    def copy_to_cpu(x):
        return [y.copyto(npx.cpu()) for y in x]

    with Benchmark(f"Run on {devices[0]}"):
        y = run(x_gpu1)
        npx.waitall()

    with Benchmark("Copy to CPU"):
        y_cpu = copy_to_cpu(y)
        npx.waitall()

    with Benchmark("Run on the device and copy to CPU"):
        y = run(x_gpu1)
        y_cpu = copy_to_cpu(y)
        npx.waitall()

    first = y_cpu[0].asnumpy()
    expected = x_gpu1.asnumpy().astype("float64") @ x_gpu1.asnumpy().astype("float64")
    error = abs(first - expected).max() / abs(expected).max()
    print(f"largest relative error of a product against NumPy's float64: {error:.2e}")
    return 0 if error < 1e-4 else 1


if __name__ == "__main__":
    sys.exit(main())
