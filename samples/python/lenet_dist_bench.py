#!/usr/bin/env python3
"""Processes against threads on one host: lenet_dist.py as N processes of one core each (braid-run,
each rank pinned with taskset to core BRAID_LOCAL_RANK) against one process on the same N cores (the
anchor), with the same global batch, learning rate and seed, for each seed; the two are run one after
the other within each seed. Prints samples/s, the mean training loss and the test accuracy of each run,
their means over the seeds, and the ratio to the anchor.

    nice samples/python/lenet_dist_bench.py [--ranks 2] [--seeds 0,1,2] [--epochs 1] [--batches N] [--json]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
SAMPLE = os.path.join(HERE, "lenet_dist.py")
_LAUNCHER_VARIABLES = ("BRAID_RANK", "BRAID_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                       "SLURM_PROCID", "SLURM_NTASKS", "RANK", "WORLD_SIZE")


def result_of(output, what):
    for line in output.splitlines():
        text = line.split("] ", 1)[1] if line.startswith("[") else line  # braid-run's "[0] " prefix
        if text.startswith("{"):
            return json.loads(text)
    raise RuntimeError(f"{what} printed no result:\n{output}")


def run(command, env, what):
    done = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if done.returncode:
        raise RuntimeError(f"{what} failed ({done.returncode}):\n{done.stdout}")
    return result_of(done.stdout, what)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=2, help="processes, one core each (default 2)")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batches", type=int, default=0, help="batches per epoch (0: all)")
    ap.add_argument("--batch-size", type=int, default=256, help="the global batch (default 256)")
    ap.add_argument("--lr", type=float, default=0.2)
    ap.add_argument("--braid-run", default=os.path.join(ROOT, "build", "bin", "braid-run"))
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < args.ranks:
        ap.error(f"{args.ranks} ranks need {args.ranks} cores; this process may use {len(cores)}")
    cores = cores[:args.ranks]
    env = {k: v for k, v in os.environ.items() if k not in _LAUNCHER_VARIABLES}
    common = ["--json", "--epochs", str(args.epochs), "--batches", str(args.batches), "--batch-size",
              str(args.batch_size), "--lr", str(args.lr)]
    runs = {"1 process": [], f"{args.ranks} processes": []}
    for seed in [int(s) for s in args.seeds.split(",")]:
        one = ["taskset", "-c", ",".join(map(str, cores)), sys.executable, SAMPLE, "--seed", str(seed)] + common
        # each rank on its own core: taskset's list indexed by the rank braid-run gives it
        pin = "exec taskset -c $(echo {} | cut -d' ' -f$((BRAID_LOCAL_RANK + 1))) \"$@\"".format(
            " ".join(map(str, cores)))
        many = [args.braid_run, "-n", str(args.ranks), "sh", "-c", pin, "sh", sys.executable, SAMPLE, "--seed",
                str(seed)] + common
        runs["1 process"].append(run(one, env, f"the 1-process run, seed {seed}"))
        runs[f"{args.ranks} processes"].append(run(many, env, f"the {args.ranks}-process run, seed {seed}"))
        for name, results in runs.items():
            r = results[-1]
            print(f"seed {seed}, {name}: {r['samples_per_second']:.0f} samples/s, loss {r['mean_loss']:.4f}, "
                  f"test accuracy {r['test_accuracy']:.4f}", file=sys.stderr, flush=True)
    summary = {}
    for name, results in runs.items():
        summary[name] = {key: statistics.mean(r[key] for r in results)
                         for key in ("samples_per_second", "seconds", "mean_loss", "test_accuracy")}
        summary[name]["samples_per_second_each"] = [round(r["samples_per_second"], 1) for r in results]
        summary[name]["test_accuracy_each"] = [r["test_accuracy"] for r in results]
    anchor = summary["1 process"]["samples_per_second"]
    for name in summary:
        summary[name]["speed_vs_1_process"] = summary[name]["samples_per_second"] / anchor
    if args.json:
        print(json.dumps(summary))
    else:
        print(f"{'':14} {'samples/s':>10} {'vs anchor':>9} {'loss':>7} {'test acc':>8}  "
              f"(means over seeds {args.seeds})")
        for name, s in summary.items():
            print(f"{name:14} {s['samples_per_second']:10.0f} {s['speed_vs_1_process']:9.2f} {s['mean_loss']:7.4f} "
                  f"{s['test_accuracy']:8.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
