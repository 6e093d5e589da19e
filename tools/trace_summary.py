#!/usr/bin/env python3
"""Sums the op durations of a braid Chrome trace (BRAID_PROFILE=trace.json) per op name, busiest first.

    tools/trace_summary.py TRACE [--device-pid N] [--step NAME] [--top N]

--step NAME splits the ops into steps at each occurrence of op NAME (e.g. softmax_cross_entropy for a
training step) and labels an op by its occurrence within its step (conv2d#1, conv2d#2, ...), so two
layers that run the same kernel are told apart. Durations are the spans the profiler recorded: on the
CPU the kernels themselves; on Vulkan and CUDA from the end of the op before on the same queue to the
op's reported end (docs/ARCHITECTURE.md, "Profiler"). A trace taken on a loaded machine inflates them all.
"""
import argparse
import collections
import json
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--device-pid", type=int, default=None, help="only this pid (a device; see the trace's metadata)")
    ap.add_argument("--step", default=None, help="op name that starts a new step (labels ops by occurrence)")
    ap.add_argument("--top", type=int, default=40)
    args = ap.parse_args()
    with open(args.trace) as f:
        events = json.load(f)["traceEvents"]
    ops = [e for e in events if e.get("ph") == "X" and e.get("cat") == "op"
           and (args.device_pid is None or e.get("pid") == args.device_pid)]
    ops.sort(key=lambda e: (e.get("pid", 0), e["ts"]))
    total = collections.defaultdict(float)
    count = collections.Counter()
    seen = collections.Counter()
    steps = 0
    for e in ops:
        name = e["name"]
        if args.step is not None:
            if name == args.step:
                seen.clear()
                steps += 1
            seen[name] += 1
            name = f"{name}#{seen[name]}"
        total[name] += e["dur"]
        count[name] += 1
    grand = sum(total.values())
    if grand == 0:
        sys.exit("trace_summary.py: no op events in " + args.trace)
    print(f"{'op':40s} {'total ms':>10s} {'calls':>7s} {'mean ms':>9s} {'share':>6s}")
    for name, us in sorted(total.items(), key=lambda kv: -kv[1])[:args.top]:
        print(f"{name:40s} {us / 1e3:10.1f} {count[name]:7d} {us / 1e3 / count[name]:9.3f} {100 * us / grand:5.1f}%")
    print(f"{'all ops':40s} {grand / 1e3:10.1f} {sum(count.values()):7d}" + (f"   ({steps} steps)" if args.step else ""))


if __name__ == "__main__":
    main()
