#!/usr/bin/env python3
"""braid's LeNet convolution kernels against PyTorch's, layer by layer, in the same run.

Times the convolution rows of `braid-lenet-layers` (forward, data gradient, weight gradient of the
sample's two conv layers, batch 256) and the same computations in PyTorch (aten.convolution and
aten.convolution_backward with one gradient asked for at a time), alternating braid and PyTorch round by
round so both see the same machine. Prints per layer the median wall milliseconds of each and the ratio
braid / PyTorch (below 1: braid is faster).

    tools/conv_layers_compare.py [--braid build/bin/braid-lenet-layers] [--device cpu:0]
                                 [--rounds 3] [--runs 20] [--threads N]

PyTorch is the anchor only (Debian's python3-torch: scripts/install-deps.sh --bench). --threads sets
torch's intra-op threads (default: the cores this process may run on, as braid's cpu:0 uses them).
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

ROWS = ["conv1 forward", "conv2 forward", "conv2 backward data", "conv2 backward weight", "conv1 backward weight"]


def braid_round(binary, device, runs):
    out = subprocess.run([binary, "--device", device, "--only", "conv", "--runs", str(runs)],
                         check=True, capture_output=True, text=True).stdout
    times = {}
    for line in out.splitlines():
        for row in ROWS:
            if line.startswith(row + " "):
                times[row] = float(line[len(row):].split()[0])
    missing = [r for r in ROWS if r not in times]
    if missing:
        sys.exit(f"conv_layers_compare: {binary} printed no row for {missing}:\n{out}")
    return times


def torch_kernels(torch):
    B = 256
    g = torch.Generator().manual_seed(0)
    x = torch.randn(B, 1, 28, 28, generator=g) * 0.3 + 0.5
    w1, b1 = torch.randn(20, 1, 3, 3, generator=g) * 0.1, torch.zeros(20)
    w2, b2 = torch.randn(50, 20, 5, 5, generator=g) * 0.1, torch.zeros(50)
    p1 = torch.nn.functional.avg_pool2d(torch.relu(torch.nn.functional.conv2d(x, w1, b1)), 2)
    dc2, dc1 = torch.randn(B, 50, 9, 9, generator=g), torch.randn(B, 20, 26, 26, generator=g)
    conv_bwd = torch.ops.aten.convolution_backward

    def bwd(dy, inp, w, mask):
        return conv_bwd(dy, inp, w, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1, mask)

    return {
        "conv1 forward": lambda: torch.nn.functional.conv2d(x, w1, b1),
        "conv2 forward": lambda: torch.nn.functional.conv2d(p1, w2, b2),
        "conv2 backward data": lambda: bwd(dc2, p1, w2, [True, False, False]),
        "conv2 backward weight": lambda: bwd(dc2, p1, w2, [False, True, False]),
        "conv1 backward weight": lambda: bwd(dc1, x, w1, [False, True, False]),
    }


def torch_round(kernels, runs):
    times = {}
    for row in ROWS:
        fn = kernels[row]
        fn()  # warm-up (oneDNN creates its primitive on first use)
        wall = []
        for _ in range(runs):
            t0 = time.perf_counter()
            fn()
            wall.append((time.perf_counter() - t0) * 1e3)
        times[row] = statistics.median(wall)
    return times


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--braid", default=os.path.join(os.path.dirname(__file__), "..", "build", "bin", "braid-lenet-layers"))
    ap.add_argument("--device", default="cpu:0")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    args = ap.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    kernels = torch_kernels(torch)
    braid_t, torch_t = {r: [] for r in ROWS}, {r: [] for r in ROWS}
    with torch.no_grad():
        for _ in range(args.rounds):
            for row, t in braid_round(args.braid, args.device, args.runs).items():
                braid_t[row].append(t)
            for row, t in torch_round(kernels, args.runs).items():
                torch_t[row].append(t)
    print(f"# {args.rounds} rounds of {args.runs} runs, median wall ms; braid on {args.device}, "
          f"PyTorch {torch.__version__} with {args.threads} threads (mkldnn: {torch.backends.mkldnn.is_available()})")
    print(f"{'layer':24} {'braid ms':>10} {'PyTorch ms':>11} {'braid/PyTorch':>14}")
    for row in ROWS:
        b, t = statistics.median(braid_t[row]), statistics.median(torch_t[row])
        print(f"{row:24} {b:10.3f} {t:11.3f} {b / t:14.2f}")


if __name__ == "__main__":
    main()
