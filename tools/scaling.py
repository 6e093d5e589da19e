#!/usr/bin/env python3
"""Data-parallel scaling of the chapter's models: samples/s of braid-lenet and braid-resnet on each
device alone and on all of them together (even split, and the split weighted by a calibration), in one
run on one machine. The table says what data parallelism costs or gains on it.

    tools/scaling.py [--bin build/bin] [--models lenet,resnet] [--devices cpu:0,cpu:1]
                     [--cpu-devices N] [--batches N] [--resnet-batches N] [--json]

--cpu-devices N sets BRAID_CPU_DEVICES=N for the runs over --devices (default: the number of cpu:
devices listed); the single-device baseline "cpu (all cores)" runs with BRAID_CPU_DEVICES=1, which is
the fair anchor for several CPU devices cut from the same cores (the chapter's question: do two
devices beat one with the same hardware?). Each figure is the samples/s of a short epoch (--batches
batches of 256; the first batch is excluded by the samples' own timing of whole epochs)."""
import argparse
import json
import os
import subprocess
import sys


def run(cmd, env_extra):
    env = dict(os.environ, **env_extra)
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    if proc.returncode != 0:
        sys.exit(f"scaling.py: {' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def samples_per_s(model, out, batch, batches):
    epoch = out["epochs"][-1]
    if model == "resnet":
        return epoch["samples_per_s"]
    return batch * epoch["batches"] / epoch["seconds"]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", default="build/bin")
    p.add_argument("--models", default="lenet,resnet")
    p.add_argument("--devices", default="cpu:0,cpu:1")
    p.add_argument("--cpu-devices", type=int)
    p.add_argument("--batches", type=int, default=60, help="LeNet batches per run")
    p.add_argument("--resnet-batches", type=int, default=3)
    p.add_argument("--json", action="store_true")
    a = p.parse_args()
    devices = a.devices.split(",")
    cpu_devices = a.cpu_devices or max(1, sum(d.startswith("cpu:") for d in devices))
    env_multi = {"BRAID_CPU_DEVICES": str(cpu_devices)}
    rows = []
    for model in a.models.split(","):
        exe = os.path.join(a.bin, "braid-" + model)
        batches = a.batches if model == "lenet" else a.resnet_batches
        common = [exe, "--epochs", "1", "--batches", str(batches), "--test-batches", "1", "--json"]
        single = "--device" if model == "lenet" else "--devices"

        def measure(label, args, env):
            out = run(common + args, env)
            rows.append({"model": model, "run": label, "samples_per_s": samples_per_s(model, out, 256, batches)})
            return rows[-1]["samples_per_s"]

        if any(d.startswith("cpu:") for d in devices):
            measure("cpu:0 alone, all cores (BRAID_CPU_DEVICES=1)", [single, "cpu:0"], {"BRAID_CPU_DEVICES": "1"})
        alone = [measure(f"{d} alone (BRAID_CPU_DEVICES={cpu_devices})", [single, d], env_multi) for d in devices]
        measure(f"{a.devices}, even split", ["--devices", a.devices], env_multi)
        measure(f"{a.devices}, weighted (--weights auto)", ["--devices", a.devices, "--weights", "auto"], env_multi)
        rows.append({"model": model, "run": "sum of the devices alone", "samples_per_s": sum(alone)})
    if a.json:
        print(json.dumps(rows))
        return
    print(f"{'model':8} {'run':60} {'samples/s':>10}")
    for r in rows:
        print(f"{r['model']:8} {r['run']:60} {r['samples_per_s']:10.1f}")


if __name__ == "__main__":
    main()
