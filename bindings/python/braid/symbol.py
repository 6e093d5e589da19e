"""MXNet 1.x's `sym`: variables for a model's inputs (`sym.var('data')`) that a Gluon block turns into the
Symbol of its output, which prints, lists its arguments, infers shapes and gives its graph as JSON.

braid has no separate symbolic executor: its graphs are traced from the ops a block runs (docs/GRAPH.md).
So a Symbol here is the blocks and operators it went through and the variables it was given, and what
needs the graph (infer_shape, tojson) runs them on zeros of the variables' shapes, outside autograd, and
reads the result or the traced graph.

Every function of braid.nd is here under its name too (sym.relu, sym.FullyConnected, sym.concat, ...),
and Symbols have arithmetic (+, -, *, /, **, unary -, indexing): given a Symbol they give a Symbol, given
arrays they compute as nd does. That is what makes `sym` MXNet 1.x's F of a hybridized hybrid_forward:
while a block is traced into its graph, F is this module and its calls run on the traced arrays.
"""
import functools
import itertools
import json
import operator
import os
import tempfile

from . import autograd
from . import nd as _nd
from . import np as _np

__all__ = ["Symbol", "var", "Variable", "load"]

_counter = itertools.count()


class Symbol:
    """A variable (sym.var), a block's output over other Symbols, or an operator's (sym.relu(s), s + 1)."""

    def __init__(self, name, block=None, inputs=(), shape=None, dtype="float32", op=None, kwargs=None):
        self._name, self._block, self._inputs = name, block, tuple(inputs)
        self._shape = tuple(shape) if shape is not None else None
        self._dtype = dtype
        self._op, self._kwargs = op, dict(kwargs or {})

    def _is_variable(self):
        return self._block is None and self._op is None

    def _symbol_inputs(self):
        return [i for i in itertools.chain(self._inputs, self._kwargs.values()) if isinstance(i, Symbol)]

    @property
    def name(self):
        return self._name

    def __repr__(self):
        return f"<Symbol {self._name}>"

    def _variables(self):
        if self._is_variable():
            return [self]
        seen, out = set(), []
        for inp in self._symbol_inputs():
            for v in inp._variables():
                if v._name not in seen:
                    seen.add(v._name)
                    out.append(v)
        return out

    def _blocks(self):
        if self._is_variable():
            return []
        out = []
        for inp in self._symbol_inputs():
            out += [b for b in inp._blocks() if b not in out]
        if self._block is None or self._block in out:
            return out
        return out + [self._block]

    def _parameters(self):
        """(name, Parameter) of every block the Symbol went through, in order."""
        out = []
        for block in self._blocks():
            out += list(block.collect_params().items())
        return out

    def list_inputs(self):
        return [v._name for v in self._variables()] + [n for n, _ in self._parameters()]

    def list_arguments(self):
        """The variables, then the parameters that take gradients (MXNet's arguments)."""
        return [v._name for v in self._variables()] + [n for n, p in self._parameters() if p.grad_req != "null"]

    def list_auxiliary_states(self):
        """The parameters without gradients (BatchNorm's running statistics)."""
        return [n for n, p in self._parameters() if p.grad_req == "null"]

    def list_outputs(self):
        return [f"{self._name}_output"]

    def _shapes(self, args, kwargs):
        variables = self._variables()
        shapes = {v._name: v._shape for v in variables if v._shape is not None}
        shapes.update(zip([v._name for v in variables], args))
        shapes.update(kwargs)
        missing = [v._name for v in variables if shapes.get(v._name) is None]
        if missing:
            raise ValueError(f"braid: the shapes of {missing} are needed: give them to infer_shape, or to sym.var(name, "
                             "shape=...)")
        return {v._name: tuple(shapes[v._name]) for v in variables}

    def _evaluate(self, values):
        if self._is_variable():
            return values[self._name]

        def value(v):
            return v._evaluate(values) if isinstance(v, Symbol) else v
        args = [value(i) for i in self._inputs]
        if self._op is not None:
            return self._op(*args, **{k: value(v) for k, v in self._kwargs.items()})
        return self._block(*args)

    # MXNet 1.x's Symbol arithmetic: a Symbol of the operator over its operands.
    def __add__(self, o): return _apply(operator.add, self, o)
    def __radd__(self, o): return _apply(operator.add, o, self)
    def __sub__(self, o): return _apply(operator.sub, self, o)
    def __rsub__(self, o): return _apply(operator.sub, o, self)
    def __mul__(self, o): return _apply(operator.mul, self, o)
    def __rmul__(self, o): return _apply(operator.mul, o, self)
    def __truediv__(self, o): return _apply(operator.truediv, self, o)
    def __rtruediv__(self, o): return _apply(operator.truediv, o, self)
    def __pow__(self, o): return _apply(operator.pow, self, o)
    def __rpow__(self, o): return _apply(operator.pow, o, self)
    def __neg__(self): return _apply(operator.neg, self)
    def __getitem__(self, key): return _apply(operator.getitem, self, key)

    def __iter__(self):  # (indexing alone would make iteration endless: a Symbol has no length)
        raise TypeError("braid: a Symbol is not iterable; index its outputs (s[0]) instead")

    def _zeros(self, shapes):
        return {v._name: _np.zeros(shapes[v._name], dtype=v._dtype) for v in self._variables()}

    def infer_shape(self, *args, **kwargs):
        """(arg_shapes, out_shapes, aux_shapes) for the variables' shapes (positional in list_inputs()
        order, or by name): the blocks run once on zeros, outside autograd, which also completes the
        parameters' deferred shapes. The blocks must be initialised."""
        shapes = self._shapes(args, kwargs)
        with autograd.pause():
            out = self._evaluate(self._zeros(shapes))
        outs = out if isinstance(out, (tuple, list)) else [out]
        params = self._parameters()
        arg_shapes = [shapes[v._name] for v in self._variables()] + [p.shape for _, p in params
                                                                       if p.grad_req != "null"]
        aux_shapes = [p.shape for _, p in params if p.grad_req == "null"]
        return arg_shapes, [o.shape for o in outs], aux_shapes

    def tojson(self, *args, **kwargs):
        """The braid graph (docs/GRAPH.md, "Export") traced from the blocks at the variables' shapes, as
        JSON text: what an exported model's -symbol.json holds."""
        shapes = self._shapes(args, kwargs)
        from .gluon.block import HybridBlock

        symbol = self

        class _Traced(HybridBlock):
            def forward(self, *arrays):
                return symbol._evaluate(dict(zip(shapes, arrays)))

        traced = _Traced()
        traced.hybridize()
        zeros = self._zeros(shapes)
        with autograd.pause():
            traced(*zeros.values())
            traced(*zeros.values())
        with tempfile.TemporaryDirectory() as folder:
            path, _ = traced.export(os.path.join(folder, "symbol"))
            with open(path, encoding="utf-8") as f:
                return f.read()

    def save(self, fname, *args, **kwargs):
        """Writes tojson() to fname."""
        with open(fname, "w", encoding="utf-8") as f:
            f.write(self.tojson(*args, **kwargs))


def var(name, shape=None, dtype="float32", **kwargs):
    """A variable: a model input named `name` (its shape may be given now or to infer_shape)."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"braid: a variable needs a name, not {name!r}")
    return Symbol(name, shape=shape, dtype=dtype)


Variable = var


def _apply(fn, *args, **kwargs):
    """fn over its arguments: a new Symbol when one of them is a Symbol, else fn's result (arrays)."""
    if not any(isinstance(a, Symbol) for a in itertools.chain(args, kwargs.values())):
        return fn(*args, **kwargs)
    name = getattr(fn, "__name__", "op").strip("_").lower()
    return Symbol(f"{name}{next(_counter)}", inputs=args, op=fn, kwargs=kwargs)


def _lift(fn):
    @functools.wraps(fn)
    def lifted(*args, **kwargs):
        return _apply(fn, *args, **kwargs)
    return lifted


# braid.nd's functions, lifted: sym.relu(s) is a Symbol, sym.relu(array) an array (F while traced).
for _name in _nd.__all__:
    _fn = getattr(_nd, _name)
    if callable(_fn) and not isinstance(_fn, type) and _name not in globals():
        globals()[_name] = _lift(_fn)
        __all__.append(_name)
random = _nd.random  # creation only: no Symbol operands


def compose(block, args):
    """The Symbol of block called on Symbols (Block.__call__ sends them here)."""
    if not all(isinstance(a, Symbol) for a in args):
        raise TypeError("braid: a block called with a Symbol takes Symbols only")
    return Symbol(f"{type(block).__name__.lower()}_fwd", block, args)


def load(fname):
    """The JSON of a saved graph, parsed (braid loads a model from it with gluon.SymbolBlock.imports)."""
    with open(fname, encoding="utf-8") as f:
        return json.load(f)
