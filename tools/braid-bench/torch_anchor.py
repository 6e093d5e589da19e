#!/usr/bin/env python3
"""PyTorch anchors for braid-bench: the same loops as the braid suites, timed in PyTorch.

braid-bench runs this with Debian's /usr/bin/python3 (python3-torch) in a child process and reads
its stdout, one record per line:

    VERSION <torch version>
    RESULT <key> <value>
    SKIP <reason>          (torch is not importable; exit status 0, the comparison is skipped)

Figures are medians over --repeat runs after one warm-up run, like braid-bench's own.
"""
import argparse
import statistics
import sys
import time


def median_time(run, ops, warmup_ops, repeat):
    """Median seconds of run(ops) over `repeat` runs, after run(warmup_ops) untimed (allocator pools,
    thread pool start, first-call dispatch caches), as braid-bench does for braid."""
    run(warmup_ops)
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        run(ops)
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def tiny_op(torch, args):
    """The engine suite's anchor: a Python loop of x + 1 on a 1x2 tensor, in us per op."""
    x = torch.ones(1, 2)

    def run(ops):
        for _ in range(ops):
            y = x + 1  # noqa: F841 (the result is dropped, as in braid's loop)

    seconds = median_time(run, args.ops, 10000, args.repeat)
    print(f"RESULT us_per_op {seconds / args.ops * 1e6:.6g}")


def loop(torch, args):
    """The async suite's anchor: the chapter's loop y = x + 1 on a rows x cols tensor, in ms.

    PyTorch on the CPU runs every op to completion before returning, so there is one figure; it is
    what braid's synchronous and asynchronous loops are compared with.
    """
    x = torch.ones(args.rows, args.cols)

    def run(ops):
        for _ in range(ops):
            y = x + 1  # noqa: F841

    seconds = median_time(run, args.ops, args.warmup, args.repeat)  # the warm-up braid-bench gives braid
    print(f"RESULT loop_ms {seconds * 1e3:.6g}")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("what", choices=["tiny_op", "loop"])
    parser.add_argument("--threads", type=int, required=True, help="torch.set_num_threads")
    parser.add_argument("--ops", type=int, required=True, help="ops per timed run")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--cols", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=200, help="untimed ops first (loop)")
    args = parser.parse_args()
    try:
        import torch
    except Exception as e:  # ImportError, or a broken install raising something else
        print(f"SKIP import torch failed ({type(e).__name__}: {e}); install python3-torch "
              "(scripts/install-bench-deps.sh)")
        return 0
    torch.set_num_threads(args.threads)
    torch.set_grad_enabled(False)  # braid's loop records no autograd either
    print(f"VERSION {torch.__version__}")
    {"tiny_op": tiny_op, "loop": loop}[args.what](torch, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
