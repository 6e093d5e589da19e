#!/usr/bin/env python3
"""ctest for braid-lenet: a short run (a few dozen batches) must learn: the mean loss of the last five
batches is clearly below that of the first five, and the test accuracy is well above chance (0.1). The
chapter's N(0, 0.01^2) initialisation sits on a loss plateau for about an epoch, so the short run starts
from N(0, 0.1^2).

    check_short_run.py BRAID_LENET [--device ID | --devices ID,ID...] [--batches N] [--batch-size N] [--test-batches N]
                       [--hybridize] [--amp bf16]

Defaults: the default device, 40 batches of the sample's default size, all test images. Exit 77
(skipped) when the dataset is not installed or a named device does not exist. --devices trains data-parallel
over the list (braid-lenet --devices)."""
import argparse
import json
import subprocess
import sys

parser = argparse.ArgumentParser()
parser.add_argument("lenet")
parser.add_argument("--device")
parser.add_argument("--devices")
parser.add_argument("--batches", type=int, default=40)
parser.add_argument("--batch-size", type=int)
parser.add_argument("--test-batches", type=int)
parser.add_argument("--hybridize", action="store_true", help="train with braid-lenet --hybridize (graph mode)")
parser.add_argument("--amp", help="train with braid-lenet --amp (mixed precision)")
args = parser.parse_args()

wanted = [args.device] if args.device else (args.devices.split(",") if args.devices else [])
if wanted:
    listed = subprocess.run([args.lenet, "--list-devices"], stdout=subprocess.PIPE, text=True, check=True)
    ids = [line.split("\t")[0] for line in listed.stdout.splitlines()]
    for device in wanted:
        if device not in ids:
            print(f"skipped: no device {device} (braid-lenet --list-devices: {', '.join(ids) or 'none'})")
            sys.exit(77)

cmd = [args.lenet, "--epochs", "1", "--batches", str(args.batches), "--init-std", "0.1", "--json"]
if args.device:
    cmd += ["--device", args.device]
if args.devices:
    cmd += ["--devices", args.devices]
if args.batch_size:
    cmd += ["--batch-size", str(args.batch_size)]
if args.test_batches:
    cmd += ["--test-batches", str(args.test_batches)]
if args.hybridize:
    cmd += ["--hybridize"]
if args.amp:
    cmd += ["--amp", args.amp]
print(" ".join(cmd), flush=True)
proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
if proc.returncode == 77:
    print("skipped: the Fashion-MNIST dataset is not installed")
if proc.returncode != 0:
    sys.exit(proc.returncode)
epoch = json.loads(proc.stdout.strip().splitlines()[-1])["epochs"][0]
print(f"{epoch['batches']} batches in {epoch['seconds']:.1f} s: loss of the first 5 batches {epoch['loss_first']:.4f}, "
      f"of the last 5 {epoch['loss_last']:.4f}, test accuracy {epoch['test_accuracy']:.4f}")
run = json.loads(proc.stdout.strip().splitlines()[-1])
if args.amp and run.get("amp") != args.amp:
    print(f"braid-lenet reported amp {run.get('amp')!r}, not {args.amp!r}")
    sys.exit(1)
ok = (epoch["batches"] == args.batches and epoch["loss_last"] < 0.8 * epoch["loss_first"] and
      epoch["test_accuracy"] > 0.3)
sys.exit(0 if ok else 1)
