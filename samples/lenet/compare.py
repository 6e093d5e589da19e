#!/usr/bin/env python3
"""Runs braid-lenet and the same recipe in PyTorch (lenet_torch.py) one after the other in one run and
prints per-epoch time, training loss and test accuracy of both, and braid's time as a fraction of
PyTorch's. Usage (tools/lenet_compare.sh wraps it):

    compare.py --braid build/bin/braid-lenet [--device cpu:0] [--epochs 4] [--batches N] [--threads 2]
               [--same-start [--seed S] [--steps N]]

--same-start trains PyTorch from braid's starting point instead of its own: the initial parameters
braid-lenet drew for --seed S (--save-init) and braid's batch order for that seed (--braid-order). It
then also prints the loss of the first N steps of both, which shows whether the two runtimes compute
the same training: they agree to float32 rounding at first, and the rounding differences grow.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile


def run(cmd, env=None):
    print("$ " + " ".join(cmd), file=sys.stderr, flush=True)
    out = subprocess.run(cmd, stdout=subprocess.PIPE, env=env, check=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--braid", required=True)
    ap.add_argument("--device", default="cpu:0")
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--batches", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("--same-start", action="store_true", help="PyTorch starts from braid's parameters and order")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--steps", type=int, default=300, help="with --same-start: steps whose losses are compared")
    args = ap.parse_args()
    if args.seed < 0 or args.steps < 1:
        ap.error("--seed must be >= 0 and --steps >= 1")
    here = os.path.dirname(os.path.abspath(__file__))
    common = ["--epochs", str(args.epochs), "--batches", str(args.batches), "--seed", str(args.seed)]
    braid_cmd = [args.braid, "--device", args.device, "--json"] + common
    torch_cmd = [args.python, os.path.join(here, "lenet_torch.py"), "--threads", str(args.threads)] + common
    if args.same_start:
        with tempfile.TemporaryDirectory() as tmp:
            init = os.path.join(tmp, "init.f32")
            steps = ["--step-losses", str(args.steps)]
            b = run(braid_cmd + ["--save-init", init] + steps)
            t = run(torch_cmd + ["--init-from", init, "--braid-order", str(args.seed)] + steps)
    else:
        b = run(braid_cmd)
        t = run(torch_cmd)
    print(f"\nbraid: {b['device']}    pytorch: {t['device']}")
    print("epoch | braid s | torch s | ratio | braid loss | torch loss | braid acc | torch acc")
    print("------|---------|---------|-------|------------|------------|-----------|----------")
    for be, te in zip(b["epochs"], t["epochs"]):
        print(f"{be['epoch']:5d} | {be['seconds']:7.2f} | {te['seconds']:7.2f} | {be['seconds'] / te['seconds']:5.2f} | "
              f"{be['train_loss']:10.4f} | {te['train_loss']:10.4f} | {be['test_accuracy']:9.4f} | {te['test_accuracy']:9.4f}")
    bs = sum(e["seconds"] for e in b["epochs"])
    ts = sum(e["seconds"] for e in t["epochs"])
    print(f"\nmean epoch: braid {bs / len(b['epochs']):.2f} s, pytorch {ts / len(t['epochs']):.2f} s, "
          f"ratio {bs / ts:.2f} (braid / pytorch)")
    if args.same_start:
        print_step_losses(b["step_losses"], t["step_losses"])


def print_step_losses(b, t):
    """Both runs' first steps from the same start: the largest relative difference up to each milestone."""
    n = min(len(b), len(t))
    print(f"\nsame start (braid's parameters and batch order), loss of steps 1..{n}:")
    print(" step | braid loss  | torch loss  | max relative difference up to this step")
    worst = 0.0
    marks = {1, 2, 5, 10, 20, 50, 100, 150, 200, 250, 300, 400, 500, 700, 940, n}
    for i in range(n):
        worst = max(worst, abs(b[i] - t[i]) / max(abs(t[i]), 1e-12))
        if i + 1 in marks:
            print(f"{i + 1:5d} | {b[i]:11.7f} | {t[i]:11.7f} | {worst:.2e}")


if __name__ == "__main__":
    main()
