#!/usr/bin/env python3
"""ctest for braid-lenet --dist: LeNet trained data-parallel across processes (braid-run -n N) takes the
steps one process takes on the global batch. Both runs train 20 steps from the same seed; then

  - every rank reports the same losses and test accuracy (the same parameters on every rank);
  - the ranks' per-step losses (means over the global batch) equal the one-process run's within float
    tolerance: 1e-4 relative for the first ten steps, then 1% (the sums are added in another order, and
    SGD amplifies the rounding step by step); the epoch's mean loss within 1%;
  - the run learns (the last five losses below the first five).

    check_dist.py BRAID_LENET BRAID_RUN [--ranks N] [--batches N]

Exit 77 (skipped) when the dataset is not installed."""
import argparse
import json
import math
import re
import subprocess
import sys

parser = argparse.ArgumentParser()
parser.add_argument("lenet")
parser.add_argument("braid_run")
parser.add_argument("--ranks", type=int, default=2)
parser.add_argument("--batches", type=int, default=20)
args = parser.parse_args()

common = ["--epochs", "1", "--batches", str(args.batches), "--init-std", "0.1", "--lr", "0.1", "--test-batches", "2", "--json",
          "--step-losses", str(args.batches), "--device", "cpu:0"]
single = subprocess.run([args.lenet] + common, stdout=subprocess.PIPE, text=True)
if single.returncode == 77:
    print("skipped: the Fashion-MNIST dataset is not installed")
    sys.exit(77)
if single.returncode != 0:
    sys.exit(f"the one-process run failed ({single.returncode})")
one = json.loads(single.stdout.strip().splitlines()[-1])

cmd = [args.braid_run, "-n", str(args.ranks), args.lenet, "--dist"] + common
print(" ".join(cmd), flush=True)
dist = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
print(dist.stdout, end="")
if dist.returncode != 0:
    sys.exit(f"the {args.ranks}-rank run failed ({dist.returncode})")
reports = {}
for line in dist.stdout.splitlines():
    m = re.match(r"\[(\d+)\] (\{.*\})$", line)
    if m:
        reports[int(m.group(1))] = json.loads(m.group(2))
failures = []
if sorted(reports) != list(range(args.ranks)):
    sys.exit(f"expected a JSON report from each of ranks 0..{args.ranks - 1}, got {sorted(reports)}")


def training(report):
    e = report["epochs"][0]
    return (report["step_losses"], e["train_loss"], e["test_accuracy"], e["loss_first"], e["loss_last"], e["batches"])


for r in range(1, args.ranks):
    if training(reports[r]) != training(reports[0]):
        failures.append(f"rank {r} reports {training(reports[r])}, rank 0 {training(reports[0])}")
steps, loss, _, first, last, batches = training(reports[0])
ref_steps, ref_loss = one["step_losses"], one["epochs"][0]["train_loss"]
print(f"per-step losses, {args.ranks} ranks: {[round(v, 6) for v in steps]}")
print(f"per-step losses, 1 process: {[round(v, 6) for v in ref_steps]}")
if batches != args.batches or len(steps) != len(ref_steps):
    failures.append(f"{batches} batches and {len(steps)} step losses, against {args.batches} and {len(ref_steps)}")
for i, (a, b) in enumerate(zip(steps, ref_steps)):
    if not math.isclose(a, b, rel_tol=1e-4 if i < 10 else 1e-2):
        failures.append(f"step {i}: loss {a} across ranks, {b} in one process")
if not math.isclose(loss, ref_loss, rel_tol=1e-2):
    failures.append(f"epoch mean loss {loss} across ranks, {ref_loss} in one process")
if not last < first:
    failures.append(f"did not learn: first five losses {first}, last five {last}")
for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
