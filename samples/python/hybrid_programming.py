#!/usr/bin/env python3
"""The chapter's "Compilers and Interpreters" listings on braid, with MXNet's imports changed: the MLP
(512-256-128-2) called 1000 times without and with hybridization, then exported (the symbol JSON and the
parameters) and loaded back with gluon.SymbolBlock.imports, which must give the same output.

    samples/python/hybrid_programming.py [--device cpu:0] [--export PREFIX]
"""
import argparse
import os
import sys
import tempfile

import braid
from benchmark import Benchmark
from braid import np, npx
from braid import gluon
from braid.gluon import nn




# Factory for networks
def get_net(device):
    net = nn.HybridSequential()
    net.add(nn.Dense(256, activation='relu'),
            nn.Dense(128, activation='relu'),
            nn.Dense(2))
    net.initialize(ctx=device)
    return net


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu:0")
    ap.add_argument("--export", default=None, help="prefix of the exported files (default: a temporary folder)")
    args = ap.parse_args()
    try:
        device = braid.Device.parse(args.device)
    except ValueError as e:
        ap.error(str(e))

    x = np.random.normal(size=(1, 512), ctx=device)
    net = get_net(device)
    imperative = net(x)
    net.hybridize()
    hybrid = net(x)
    hybrid = net(x)  # the first call after hybridize settles shapes; this one runs the graph
    difference = abs(imperative - hybrid).max().item()
    print(f"largest difference, hybridized against imperative: {difference:.3g}")

    net = get_net(device)
    with Benchmark('Without hybridization') as without:
        for i in range(1000):
            net(x)
        npx.waitall()

    net.hybridize()
    net(x)
    net(x)
    with Benchmark('With hybridization') as with_:
        for i in range(1000):
            net(x)
        npx.waitall()
    print(f"hybridized / imperative: {with_.seconds / without.seconds:.3f}")

    folder = None
    prefix = args.export
    if prefix is None:
        folder = tempfile.TemporaryDirectory()
        prefix = os.path.join(folder.name, "my_mlp")
    symbol, params = net.export(prefix)
    print(f"exported {symbol} and {params}")
    loaded = gluon.SymbolBlock.imports(symbol, ["data"], params, ctx=device)
    reloaded = abs(loaded(x) - net(x)).max().item()
    print(f"largest difference, the exported graph loaded back against the model: {reloaded:.3g}")
    return 0 if difference <= 1e-5 and reloaded <= 1e-5 else 1


if __name__ == "__main__":
    sys.exit(main())
