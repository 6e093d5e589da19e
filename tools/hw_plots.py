#!/usr/bin/python3
"""Plots the figures of `braid-bench hw --json` (docs/HARDWARE.md, "Measuring the machine").

    braid-bench hw --json > hw.jsonl && tools/hw_plots.py hw.jsonl --out docs/img
    braid-bench hw --json | tools/hw_plots.py - --out docs/img

Reads one JSON object per line (lines that are not JSON objects of suite "hw" are skipped) and writes
hw_latency.png (the pointer-chasing curve, log-log, with the cache sizes detected from it and the ones
the OS reports), hw_strides.png (strided and backward reads) and hw_bandwidth.png (alignment and
memory/copy bandwidth bars).
"""
import argparse
import json
import os
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

UNITS = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}


def load(stream):
    figures = {}
    for line in stream:
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            f = json.loads(line)
        except json.JSONDecodeError:
            continue
        if f.get("suite") == "hw":
            figures[f["name"]] = f
    return figures


def size_bytes(text):
    m = re.fullmatch(r"(\d+)(KiB|MiB|GiB)", text)
    return int(m.group(1)) * UNITS[m.group(2)] if m else None


def size_label(b):
    for unit in ("GiB", "MiB", "KiB"):
        if b >= UNITS[unit]:
            return f"{b / UNITS[unit]:g} {unit}"
    return f"{b} B"


def save(fig, path):
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
    print(f"wrote {path} ({os.path.getsize(path) // 1024} KiB)")


def plot_latency(figs, path):
    points = sorted((size_bytes(n[len("latency_"):]), f["value"]) for n, f in figs.items()
                    if n.startswith("latency_") and size_bytes(n[len("latency_"):]))
    if not points:
        return
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.loglog([p[0] for p in points], [p[1] for p in points], "o-", color="black", base=2, label="measured")
    colors = ["tab:blue", "tab:green", "tab:red"]
    for level in (1, 2, 3):
        f = figs.get(f"l{level}_detected")
        if not f:
            continue
        c = colors[level - 1]
        if f["value"] > 0:
            ax.axvline(f["value"] * 1024, color=c, linestyle="--",
                       label=f"L{level} from the curve: {size_label(f['value'] * 1024)}")
        if f.get("baseline_value"):
            ax.axvline(f["baseline_value"] * 1024, color=c, linestyle=":",
                       label=f"L{level} per the OS: {size_label(f['baseline_value'] * 1024)}")
    ax.set_xlabel("working set (bytes, random cyclic pointer chase, one pointer per 64-byte line)")
    ax.set_ylabel("ns per load")
    ax.set_title("Load latency vs working set")
    ax.yaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda b, _: size_label(b)))
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left")
    save(fig, path)


def plot_strides(figs, path):
    points = sorted((int(n[len("stride_"):]), f["value"]) for n, f in figs.items()
                    if re.fullmatch(r"stride_\d+", n))
    if not points:
        return
    fig, ax = plt.subplots(figsize=(7, 4))
    strides = [p[0] for p in points]
    useful = [p[1] for p in points]
    # Bytes of cache lines moved: every line is fetched while the stride is under 16 elements (64 bytes).
    lines = [gb * min(s, 16) for s, gb in points]
    ax.plot(strides, useful, "o-", label="elements read (4 bytes each)")
    ax.plot(strides, lines, "s--", label="cache lines fetched (64 bytes each)")
    if "backward_seq" in figs:
        ax.plot([1], [figs["backward_seq"]["value"]], "v", color="tab:red", markersize=9,
                label="stride 1, backward")
    ax.set_xscale("log", base=2)
    ax.set_xticks(strides)
    ax.set_xticklabels([str(s) for s in strides])
    ax.set_xlabel("stride (uint32 elements) over a 256 MiB array")
    ax.set_ylabel("GB/s")
    ax.set_title("Strided reads: one thread")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    save(fig, path)


def plot_bandwidth(figs, path):
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4), gridspec_kw={"width_ratios": [1, 1.3]})
    # Alignment: per level, offset 0 vs the others.
    levels = [lv for lv in ("l1", "l2", "dram") if f"align_{lv}_off0" in figs]
    offsets = sorted({int(m.group(1)) for n in figs for m in [re.fullmatch(r"align_\w+?_off(\d+)", n)] if m})
    width = 0.8 / max(1, len(offsets))
    for k, off in enumerate(offsets):
        vals = [figs.get(f"align_{lv}_off{off}", {}).get("value", 0) for lv in levels]
        left.bar([i + k * width for i in range(len(levels))], vals, width, label=f"+{off} B")
    left.set_xticks([i + width * (len(offsets) - 1) / 2 for i in range(len(levels))])
    left.set_xticklabels([{"l1": "16 KiB (L1)", "l2": "512 KiB (L2)", "dram": "256 MiB (DRAM)"}[lv] for lv in levels])
    left.set_yscale("log")
    left.yaxis.set_major_locator(matplotlib.ticker.LogLocator(base=10, subs=(1, 2, 5)))
    left.yaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
    left.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    left.grid(True, axis="y", alpha=0.3)
    left.set_ylabel("GB/s (log)")
    left.set_title("Vector sum, address offset from 64 B")
    left.legend(fontsize=7, ncol=2)
    # Memory and copy bandwidth.
    names = [n for n in figs if n.startswith("triad_") or n == "memcpy_1thread"]
    names += sorted(n for n in figs if n.startswith(("h2d_", "d2h_")))
    right.barh(range(len(names)), [figs[n]["value"] for n in names], color="tab:gray")
    right.set_yticks(range(len(names)))
    right.set_yticklabels(names, fontsize=8)
    right.invert_yaxis()
    right.set_xlabel("GB/s")
    right.set_title("Memory bandwidth and host<->device copies")
    for i, n in enumerate(names):
        right.text(figs[n]["value"], i, f" {figs[n]['value']:.1f}", va="center", fontsize=7)
    save(fig, path)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("input", nargs="?", default="-", help="JSON lines from braid-bench hw --json ('-': stdin)")
    p.add_argument("--out", default="docs/img", help="folder for the PNGs (default docs/img)")
    args = p.parse_args()
    if args.input == "-":
        figs = load(sys.stdin)
    else:
        with open(args.input) as f:
            figs = load(f)
    if not figs:
        sys.exit("hw_plots.py: no figures of suite 'hw' in the input")
    os.makedirs(args.out, exist_ok=True)
    plot_latency(figs, os.path.join(args.out, "hw_latency.png"))
    plot_strides(figs, os.path.join(args.out, "hw_strides.png"))
    plot_bandwidth(figs, os.path.join(args.out, "hw_bandwidth.png"))


if __name__ == "__main__":
    main()
