#!/usr/bin/env python3
"""ctest for export and import (docs/GRAPH.md): braid-lenet trains a short hybridized run and exports its
forward pass; braid-run-exported (plain C) loads it on each device and must reach the test accuracy the
training program reported: exactly on the device it trained on, and within 0.002 elsewhere (another
backend rounds differently, which can flip a near-tie).

    check_exported.py BRAID_LENET BRAID_RUN_EXPORTED [--devices cpu:0,vulkan:0] [--batches N] [--test-batches N]

Exit 77 (skipped) when the dataset is not installed. A listed device that does not exist is skipped
with a message; cpu:0 always runs."""
import argparse
import json
import os
import subprocess
import sys
import tempfile

parser = argparse.ArgumentParser()
parser.add_argument("lenet")
parser.add_argument("run_exported")
parser.add_argument("--devices", default="cpu:0,vulkan:0")
parser.add_argument("--batches", type=int, default=40)
# 3 of the 10 test batches of 1000 by default: the Vulkan run is lavapipe's on CI's two cores (23 s
# for all ten), and a near-tie that another backend flips moves 3000 images' accuracy by 0.0003.
parser.add_argument("--test-batches", type=int, default=3)
args = parser.parse_args()

with tempfile.TemporaryDirectory() as tmp:
    prefix = os.path.join(tmp, "lenet")
    cmd = [args.lenet, "--device", "cpu:0", "--epochs", "1", "--batches", str(args.batches), "--init-std", "0.1",
           "--hybridize", "--json", "--export", prefix, "--test-batches", str(args.test_batches)]
    print(" ".join(cmd), flush=True)
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    if proc.returncode == 77:
        print("skipped: the Fashion-MNIST dataset is not installed")
        sys.exit(77)
    if proc.returncode != 0:
        sys.exit(proc.returncode)
    trained = json.loads(proc.stdout.strip().splitlines()[-1])["epochs"][0]["test_accuracy"]
    print(f"braid-lenet (hybridized) test accuracy: {trained:.4f}")
    if trained <= 0.3:
        print("the short run did not learn")
        sys.exit(1)
    ok = True
    for device in args.devices.split(","):
        p = subprocess.run([args.run_exported, prefix, "--device", device, "--json", "--test-batches",
                            str(args.test_batches)], stdout=subprocess.PIPE, text=True)
        if p.returncode == 77 and device != "cpu:0":
            print(f"skipped {device}: not on this machine")
            continue
        if p.returncode != 0:
            print(f"braid-run-exported on {device} failed ({p.returncode})")
            ok = False
            continue
        got = json.loads(p.stdout.strip().splitlines()[-1])
        tol = 0.0 if device == "cpu:0" else 0.002
        want_images = 1000 * args.test_batches if 0 < args.test_batches < 10 else 10000
        good = got["images"] == want_images and abs(got["accuracy"] - trained) <= tol + 1e-9
        print(f"braid-run-exported on {device}: {got['images']} images, accuracy {got['accuracy']:.4f} "
              f"({'ok' if good else 'MISMATCH'})")
        ok = ok and good
    sys.exit(0 if ok else 1)
