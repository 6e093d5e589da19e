#!/usr/bin/env python3
"""The MXNet 1.x edition's "A Hybrid of Imperative and Symbolic Programming" (8.1) on braid, with its import
lines changed: symbolic programming with Python strings, the MLP without and with hybridize() (1000
calls each), export, a Symbol from sym.var('data'), and a HybridBlock's hybrid_forward(F, x). The export
goes to a temporary folder (--export-dir to keep it). The end checks the exported graph loaded back.

    PYTHONPATH=bindings/python samples/python/mxnet1/hybrid_programming.py
"""
import argparse
import os
import shutil
import tempfile

parser = argparse.ArgumentParser()
parser.add_argument("--export-dir", default=None)
parser.add_argument("--calls", type=int, default=1000)
args = parser.parse_args()
folder = args.export_dir or tempfile.mkdtemp()
os.chdir(folder)


def add(a, b):
    return a + b


def fancy_func(a, b, c, d):
    e = add(a, b)
    f = add(c, d)
    g = add(e, f)
    return g


print(fancy_func(1, 2, 3, 4))


def add_str():
    return '''
def add(a, b):
    return a + b
'''


def fancy_func_str():
    return '''
def fancy_func(a, b, c, d):
    e = add(a, b)
    f = add(c, d)
    g = add(e, f)
    return g
'''


def evoke_str():
    return add_str() + fancy_func_str() + '''
print(fancy_func(1, 2, 3, 4))
'''


prog = evoke_str()
print(prog)
y = compile(prog, '', 'exec')
exec(y)

from braid import nd, sym  # noqa: E402
from braid.gluon import nn  # noqa: E402
import time  # noqa: E402


def get_net():
    net = nn.HybridSequential()  # Here we use the class HybridSequential
    net.add(nn.Dense(256, activation='relu'),
            nn.Dense(128, activation='relu'),
            nn.Dense(2))
    net.initialize()
    return net


x = nd.random.normal(shape=(1, 512))
net = get_net()
net(x)

net.hybridize()
net(x)


def benchmark(net, x):
    start = time.time()
    for i in range(args.calls):
        _ = net(x)
    nd.waitall()  # To facilitate timing, we wait for all computations to be completed
    return time.time() - start


net = get_net()
print('before hybridizing: %.4f sec' % (benchmark(net, x)))
net.hybridize()
print('after hybridizing: %.4f sec' % (benchmark(net, x)))

net.export('my_mlp')

x = sym.var('data')
print(net(x))


class HybridNet(nn.HybridBlock):
    def __init__(self, **kwargs):
        super(HybridNet, self).__init__(**kwargs)
        self.hidden = nn.Dense(10)
        self.output = nn.Dense(2)

    def hybrid_forward(self, F, x):
        print('F: ', F)
        print('x: ', x)
        x = F.relu(self.hidden(x))
        print('hidden: ', x)
        return self.output(x)


net = HybridNet()
net.initialize()
x = nd.random.normal(shape=(1, 4))
net(x)
net(x)
net.hybridize()
net(x)
net(x)

# Not in the listing: the exported MLP, loaded back, computes what the model does.
from braid import gluon  # noqa: E402
mlp = get_net()
mlp.hybridize()
data = nd.random.normal(shape=(1, 512))
mlp(data)
want = mlp(data)
symbol_file, params_file = mlp.export('check')
loaded = gluon.SymbolBlock.imports(symbol_file, ['data'], params_file)
difference = float((loaded(data) - want).abs().max().asscalar())
print('the exported MLP loaded back: largest difference %.3g' % difference)
assert difference <= 1e-5, difference
print('exported:', sorted(os.listdir(folder)))
if args.export_dir is None:
    os.chdir('/')
    shutil.rmtree(folder)
