#!/usr/bin/env python3
"""Checks that runtime/ includes point one way (docs/ARCHITECTURE.md, "Layers"). Exits 1 naming

  - every include of a folder in a layer above the including file's folder;
  - every cycle between folders, inside a layer too (tensor/ including ops/ while ops/ includes
    tensor/ makes the two one unit, whatever their layer numbers say);
  - every folder of runtime/ that has no layer;
  - every use of a public braid_* function of abi/braid.h inside runtime/ other than its own BRAID_API
    definition: libbraid calls its C++ entry points (ops/entry.h, tensor/host_copy.h, ...), never back
    through the C API (docs/ARCHITECTURE.md, "The C boundary").

Every include form that names a runtime folder counts: "folder/x.h", <folder/x.h> and "../folder/x.h".
There are no exceptions.

    tools/check_layers.py [RUNTIME_DIR]
"""
import os
import re
import sys

# Lower number = lower layer. Folders of one number are one layer: they may include each other, one
# way (a cycle is reported).
LAYER = {
    "core": 0,
    "memory": 1, "plugin": 1,
    "engine": 2, "profiler": 2,
    "device": 3,
    "context": 4,
    "tensor": 5, "ops": 5, "data": 5, "checkpoint": 5, "hardware": 5,
    "autograd": 6,
    "graph": 7, "parallel": 7,
    "distributed": 8,
}

INCLUDE = re.compile(r'^\s*#\s*include\s+[<"](?:\.\./)*([a-z_]+)/')
API_FUNCTION = re.compile(r"BRAID_API\s+[\w\s*]+?\b(braid_\w+)\s*\(")
# A name followed by a call's parenthesis, an argument's comma or a closing parenthesis (its address).
NAME_USE = re.compile(r"\b(braid_\w+)\s*[(,)]")


def api_functions(runtime_root):
    with open(os.path.join(runtime_root, "..", "abi", "braid.h"), encoding="utf-8") as f:
        return set(API_FUNCTION.findall(f.read()))


def c_api_uses(line, api):
    """The public functions a line of libbraid's code uses (comments and strings aside), unless it is a
    BRAID_API definition."""
    code = re.sub(r'"(?:[^"\\]|\\.)*"', '""', line.split("//")[0])
    if "BRAID_API" in code:
        return []
    return [m.group(1) for m in NAME_USE.finditer(code) if m.group(1) in api]


def folder_cycles(edges):
    """The strongly connected components of more than one folder (Tarjan), each sorted."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "runtime")
    bad = []
    api = api_functions(root)
    edges, example = {}, {}  # folder -> folders it includes; (from, to) -> the first such include
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
                    for fn in c_api_uses(line, api):
                        bad.append(f"runtime/{rel}:{n}: calls {fn}, a function of the C API (use its C++ entry point)")
                    m = INCLUDE.match(line)
                    if not m or m.group(1) not in LAYER or m.group(1) == folder:
                        continue
                    to = m.group(1)
                    edges.setdefault(folder, set()).add(to)
                    example.setdefault((folder, to), f"runtime/{rel}:{n}")
                    if LAYER[to] > LAYER[folder]:
                        bad.append(f"runtime/{rel}:{n}: includes {to}/, a layer above {folder}/")
    for cycle in folder_cycles(edges):
        links = [f"{example[(a, b)]} includes {b}/" for a in cycle for b in cycle if (a, b) in example]
        bad.append(f"a cycle between {', '.join(f'{c}/' for c in cycle)}: " + "; ".join(links))
    for b in bad:
        print(b)
    print(f"layers: {len(bad)} problem(s) in {len(edges)} folders")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
