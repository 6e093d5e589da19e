#!/usr/bin/env python3
"""The chapter's hybridization table in one run: braid-mlp-hybrid (imperative and hybridized) and the
same MLP in PyTorch (eager and TorchScript), 1000 forward calls on a 1x512 input each, best of --repeat.
Prints the table and the ratios the graph-mode targets are stated in (docs/BENCHMARKS.md#graph-mode).

    mlp_compare.py --braid build/bin/braid-mlp-hybrid [--device cpu:0] [--threads 2] [--repeat 15] [--json]

PyTorch (Debian's python3-torch, scripts/install-bench-deps.sh) runs on the CPU with --threads threads;
it is an anchor for comparison only, never a dependency of braid."""
import argparse
import json
import subprocess
import sys

TORCH = r"""
import json, sys, time, torch
threads, calls, repeat = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
torch.set_num_threads(threads)
torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Linear(512, 256), torch.nn.ReLU(), torch.nn.Linear(256, 128), torch.nn.ReLU(),
                          torch.nn.Linear(128, 2)).eval()
x = torch.randn(1, 512)
def best(f):
    b = float("inf")
    with torch.no_grad():
        for _ in range(3):
            f(x)
        for _ in range(repeat):
            t = time.perf_counter()
            for _ in range(calls):
                f(x)
            b = min(b, time.perf_counter() - t)
    return b
eager = best(net)
scripted = torch.jit.script(net)
script = best(scripted)
print(json.dumps({"torch": torch.__version__, "threads": torch.get_num_threads(), "eager_s": eager, "torchscript_s": script}))
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--braid", required=True)
    ap.add_argument("--device", default="cpu:0")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=15)  # best of 5 still varied by 1.5x on a 2-core VM
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    b = json.loads(subprocess.run([a.braid, "--device", a.device, "--calls", str(a.calls), "--repeat", str(a.repeat), "--json"],
                                  stdout=subprocess.PIPE, text=True, check=True).stdout.strip().splitlines()[-1])
    t = json.loads(subprocess.run([a.python, "-c", TORCH, str(a.threads), str(a.calls), str(a.repeat)],
                                  stdout=subprocess.PIPE, text=True, check=True).stdout.strip().splitlines()[-1])
    rows = [("braid imperative", b["imperative_s"]), ("braid hybridized", b["hybridized_s"]),
            ("PyTorch eager", t["eager_s"]), ("TorchScript", t["torchscript_s"])]
    result = {"braid": b, "torch": t,
              "hybridized_vs_imperative_speedup": b["imperative_s"] / b["hybridized_s"],
              "hybridized_over_torchscript": b["hybridized_s"] / t["torchscript_s"],
              "issue_speedup": b["imperative_issue_s"] / b["hybridized_issue_s"]}
    if a.json:
        print(json.dumps(result))
        return
    print(f"MLP 512-256-128-2, batch 1, {a.calls} calls, best of {a.repeat}; braid on {b['device']} ({b['device_name']}), "
          f"PyTorch {t['torch']} on the CPU with {t['threads']} threads")
    print("mode              | seconds | per call (us)")
    print("------------------|---------|--------------")
    for name, s in rows:
        print(f"{name:17s} | {s:7.4f} | {s / a.calls * 1e6:8.1f}")
    print(f"\nhybridized vs imperative: {result['hybridized_vs_imperative_speedup']:.2f}x faster "
          f"(issuing the calls alone: {b['imperative_issue_s']:.4f} s vs {b['hybridized_issue_s']:.4f} s, "
          f"{result['issue_speedup']:.2f}x)")
    print(f"hybridized / TorchScript: {result['hybridized_over_torchscript']:.3f}")


if __name__ == "__main__":
    sys.exit(main())
