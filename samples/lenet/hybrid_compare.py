#!/usr/bin/env python3
"""Imperative versus hybridized LeNet training in one run (docs/GRAPH.md): braid-lenet with the same
seed, once as is and once with --hybridize (the whole step traced into one graph), alternating for
--runs rounds. Prints each epoch's time, peak device memory, training loss and test accuracy, and the
ratios of the means (hybridized / imperative).

    hybrid_compare.py --braid build/bin/braid-lenet [--device cpu:0] [--epochs 1] [--batches N] [--runs 2]
"""
import argparse
import json
import statistics
import subprocess
import sys


def run(cmd):
    print("$ " + " ".join(cmd), file=sys.stderr, flush=True)
    out = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--braid", required=True)
    ap.add_argument("--device", default="cpu:0")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batches", type=int, default=0)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    base = [a.braid, "--device", a.device, "--epochs", str(a.epochs), "--batches", str(a.batches), "--seed", str(a.seed), "--json"]
    results = {"imperative": [], "hybridized": []}
    for _ in range(a.runs):
        results["imperative"] += run(base)["epochs"]
        results["hybridized"] += run(base + ["--hybridize"])["epochs"]
    print(f"\nLeNet on {a.device}, {a.epochs} epoch(s) x {a.runs} runs each, seed {a.seed}")
    print("mode       | epoch s | peak MiB | train loss | test acc")
    print("-----------|---------|----------|------------|---------")
    for mode, epochs in results.items():
        for e in epochs:
            print(f"{mode:10s} | {e['seconds']:7.2f} | {e['peak_bytes'] / 2**20:8.1f} | {e['train_loss']:10.4f} | {e['test_accuracy']:.4f}")
    mean = {m: (statistics.mean(e["seconds"] for e in es), statistics.mean(e["peak_bytes"] for e in es)) for m, es in results.items()}
    print(f"\nhybridized / imperative: epoch time {mean['hybridized'][0] / mean['imperative'][0]:.3f}, "
          f"peak memory {mean['hybridized'][1] / mean['imperative'][1]:.3f}")


if __name__ == "__main__":
    sys.exit(main())
