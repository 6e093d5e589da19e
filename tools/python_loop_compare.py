#!/usr/bin/env python3
"""The chapter's 1x2 loop (y = x + 1, 10000 times) from Python: braid's package against PyTorch in the
same process, alternating; microseconds per op, best of --repeat runs each. Asynchronous (one wait at
the end) and synchronous (a wait per op) for braid; PyTorch's CPU ops are synchronous.

    PYTHONPATH=bindings/python /usr/bin/python3 tools/python_loop_compare.py [--repeat 5] [--rounds 2]

Needs python3-torch (scripts/install-deps.sh --bench); the library is found as docs/PYTHON.md says."""
import argparse
import time

import torch

from braid import np, npx

N = 10000


def per_op(fn, repeat):
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best * 1e6 / N


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(2)
    x, tx = np.ones((1, 2)), torch.ones((1, 2))

    def braid_async():
        for _ in range(N):
            y = x + 1
        npx.waitall()
        return y

    def braid_sync():
        for _ in range(N):
            y = x + 1
            y.wait_to_read()

    def torch_loop():
        for _ in range(N):
            y = tx + 1
        return y

    with open("/proc/cpuinfo") as f:
        model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "unknown")
    print(f"cpu: {model}, torch {torch.__version__}")
    print("round  braid async us/op  braid sync us/op  torch us/op  async/torch")
    for r in range(args.rounds):
        a, s, t = per_op(braid_async, args.repeat), per_op(braid_sync, args.repeat), per_op(torch_loop, args.repeat)
        print(f"{r + 1:5d}  {a:17.2f}  {s:16.2f}  {t:11.2f}  {a / t:11.3f}")


if __name__ == "__main__":
    main()
