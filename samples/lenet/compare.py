#!/usr/bin/env python3
"""Runs braid-lenet and the same recipe in PyTorch (lenet_torch.py) one after the other in one run and
prints per-epoch time, training loss and test accuracy of both, and braid's time as a fraction of
PyTorch's. Usage (tools/lenet_compare.sh wraps it):

    compare.py --braid build/bin/braid-lenet [--device cpu:0] [--epochs 4] [--batches N] [--threads 2]
"""
import argparse
import json
import os
import subprocess
import sys


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
    args = ap.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    common = ["--epochs", str(args.epochs), "--batches", str(args.batches)]
    b = run([args.braid, "--device", args.device, "--json"] + common)
    t = run([args.python, os.path.join(here, "lenet_torch.py"), "--threads", str(args.threads)] + common)
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


if __name__ == "__main__":
    main()
