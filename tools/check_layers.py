#!/usr/bin/env python3
"""Checks that runtime/ includes point one way (docs/ARCHITECTURE.md, "Layers"): a folder includes only
its own layer and those below it. Exits 1 naming every include that points up, except the ones listed
in KNOWN below (each is one of the exceptions ARCHITECTURE.md lists; removing one from the code
without removing it here fails too, so the list only shrinks).

    tools/check_layers.py [RUNTIME_DIR]
"""
import os
import re
import sys

# Lower number = lower layer. Folders of one number are one layer and may include each other.
LAYER = {
    "core": 0,
    "memory": 1, "plugin": 1,
    "engine": 2, "profiler": 2,
    "device": 3,
    "context": 4,
    "tensor": 5, "ops": 5, "data": 5, "checkpoint": 5, "hardware": 5,
    "autograd": 6,
    "graph": 7,
    "parallel": 8,
    "distributed": 9,
}

# (file, included folder): the upward includes that exist today (docs/ARCHITECTURE.md lists them).
KNOWN = set()

INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/')


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "runtime")
    bad, seen = [], set()
    for folder in sorted(os.listdir(root)):
        path = os.path.join(root, folder)
        if not os.path.isdir(path):
            continue
        if folder not in LAYER:
            bad.append(f"runtime/{folder}/: a folder with no layer (add it to tools/check_layers.py and docs/ARCHITECTURE.md)")
            continue
        for name in sorted(os.listdir(path)):
            if not name.endswith((".h", ".cpp")):
                continue
            rel = f"{folder}/{name}"
            with open(os.path.join(path, name), encoding="utf-8") as f:
                for n, line in enumerate(f, 1):
                    m = INCLUDE.match(line)
                    if not m or m.group(1) not in LAYER or LAYER[m.group(1)] <= LAYER[folder]:
                        continue
                    if (rel, m.group(1)) in KNOWN:
                        seen.add((rel, m.group(1)))
                        continue
                    bad.append(f"runtime/{rel}:{n}: includes {m.group(1)}/, a layer above {folder}/")
    for rel, up in sorted(KNOWN - seen):
        bad.append(f"runtime/{rel} no longer includes {up}/: remove it from KNOWN in tools/check_layers.py "
                   "and from docs/ARCHITECTURE.md's list")
    for b in bad:
        print(b)
    print(f"layers: {len(bad)} problem(s); {len(seen)} known exception(s) remain")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
