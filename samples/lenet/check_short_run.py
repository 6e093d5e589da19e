#!/usr/bin/env python3
"""ctest for braid-lenet: a short run (a few dozen batches) must learn: the mean loss of the last five
batches is clearly below that of the first five. The chapter's N(0, 0.01^2) initialisation sits on a
loss plateau for about an epoch, so the short run starts from N(0, 0.1^2). Exit 77 (skipped) when the
dataset is not installed."""
import json
import subprocess
import sys

cmd = [sys.argv[1], "--epochs", "1", "--batches", "40", "--init-std", "0.1", "--json"]
proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
if proc.returncode != 0:
    sys.exit(proc.returncode)
epoch = json.loads(proc.stdout.strip().splitlines()[-1])["epochs"][0]
print(f"loss of the first 5 batches {epoch['loss_first']:.4f}, of the last 5 {epoch['loss_last']:.4f}, "
      f"test accuracy {epoch['test_accuracy']:.4f}")
ok = epoch["batches"] == 40 and epoch["loss_last"] < 0.8 * epoch["loss_first"] and epoch["test_accuracy"] > 0.3
sys.exit(0 if ok else 1)
