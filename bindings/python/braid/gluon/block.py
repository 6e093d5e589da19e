"""gluon.Block and HybridBlock: layers that own parameters and child layers; a HybridBlock's forward
can be hybridized, run as braid graphs (braid_hybrid: traced on the first call with each input
signature, then one engine op a call; docs/GRAPH.md)."""
import collections
import contextlib
import ctypes
import threading

from .. import autograd
from .. import device as _device
from .. import nd as _nd
from .. import symbol as _sym
from .._lib import HYBRID_FN, BraidError, c_tensor, check, lib
from ..ndarray import ndarray
from .parameter import Parameter, ParameterDict

_ALL_PASSES = 31  # BRAID_GRAPH_PASS_ALL
_tracing = threading.local()  # depth: how many blocks this thread is tracing into graphs (F is sym there)


class Block:
    """A layer or model: parameters and child blocks set as attributes are registered (in order), and
    calling the block runs forward()."""

    def __init__(self, prefix=None, params=None):  # (MXNet 1's naming arguments, accepted and unused)
        object.__setattr__(self, "_children", collections.OrderedDict())
        object.__setattr__(self, "_reg_params", collections.OrderedDict())

    def __setattr__(self, name, value):
        if isinstance(value, Block):
            self._children[name] = value
        elif isinstance(value, Parameter):
            self._reg_params[name] = value
        object.__setattr__(self, name, value)

    def register_child(self, block, name=None):
        self._children[name or str(len(self._children))] = block
        return block

    def collect_params(self, select=None):
        """Every parameter of this block and its children, named by their path ("0.weight")."""
        out = ParameterDict()
        for name, p in self._reg_params.items():
            out[name] = p
        for child_name, child in self._children.items():
            for name, p in child.collect_params().items():
                out[f"{child_name}.{name}"] = p
        if select is not None:
            import re
            pattern = re.compile(select)
            out = ParameterDict((k, v) for k, v in out.items() if pattern.search(k))
        return out

    @property
    def params(self):
        """This block's own parameters by name ("weight", "bias"), MXNet 1's block.params; its get()
        makes and registers one (MXNet 1's self.params.get('weight', shape=...))."""
        return _OwnParams(self)

    def name_scope(self):
        """MXNet 1's naming scope for the children made inside it: braid names parameters by their
        attribute path (collect_params), so the scope changes nothing."""
        return contextlib.nullcontext()

    def initialize(self, init=None, ctx=None, verbose=False, force_reinit=False):
        self.collect_params().initialize(init, ctx, force_reinit)

    def hybridize(self, active=True, **kwargs):
        for child in self._children.values():
            child.hybridize(active, **kwargs)

    def save_parameters(self, filename):
        """Writes every parameter (its first device's copy) by its collect_params() name, as safetensors."""
        from .. import checkpoint
        checkpoint.save(filename, {name: p.data() for name, p in self.collect_params().items()})

    def load_parameters(self, filename, ctx=None, allow_missing=False, ignore_extra=False):
        """Reads what save_parameters wrote into the parameters, on every device they live on (ctx
        initialises them there first if they were not yet)."""
        from .. import checkpoint
        params = self.collect_params()
        found = set(checkpoint.names(filename))
        missing = [n for n in params if n not in found]
        extra = [n for n in found if n not in params]
        if missing and not allow_missing:
            raise RuntimeError(f"braid: {filename} lacks parameters {missing}")
        if extra and not ignore_extra:
            raise RuntimeError(f"braid: {filename} has parameters this block lacks: {extra}")
        values = checkpoint.load_named(filename, [n for n in params if n in found])
        for name, value in values.items():
            p = params[name]
            p.shape = value.shape
            if p._data is None:
                p.initialize(ctx=ctx)
            p.set_data(value)

    def __call__(self, *args):
        if any(isinstance(a, _sym.Symbol) for a in args):  # MXNet 1.x: net(sym.var('data')) gives a Symbol
            return _sym.compose(self, args)
        return self.forward(*args)

    def forward(self, *args):
        raise NotImplementedError(f"{type(self).__name__} has no forward()")

    def __repr__(self):
        lines = [f"{type(self).__name__}("]
        for name, child in self._children.items():
            lines.append(f"  ({name}): " + repr(child).replace("\n", "\n  "))
        return "\n".join(lines) + ")" if len(lines) > 1 else f"{type(self).__name__}()"


class HybridBlock(Block):
    """A Block whose forward uses only braid ops on its inputs and parameters, so that hybridize() can
    run it as a graph. The first call with a new input signature (devices, dtypes, shapes), and the
    training flag, traces forward once; later calls run the graph. Parameters are read where they are
    at each run, so optimizer updates are seen; autograd records through the graph. Shapes inferred on
    the first call (deferred initialisation) are settled by one imperative call before any tracing."""

    def __init__(self, prefix=None, params=None):
        super().__init__()
        object.__setattr__(self, "_active", False)
        object.__setattr__(self, "_hybrids", {})  # (training, number of inputs) -> hybrid handle
        object.__setattr__(self, "_outputs", {})  # number of inputs -> outputs forward returns (its first call)
        object.__setattr__(self, "_callback", HYBRID_FN(self._trace_forward))
        object.__setattr__(self, "_error", None)
        object.__setattr__(self, "_last_inputs", {})  # training -> the last graph call's inputs, for export()

    def hybridize(self, active=True, **kwargs):
        object.__setattr__(self, "_active", bool(active))
        if not active:
            self._drop_graphs()
        super().hybridize(active, **kwargs)

    def _drop_graphs(self):
        for handle in self._hybrids.values():
            lib.braid_hybrid_release(handle)
        self._hybrids.clear()
        self._last_inputs.clear()

    def __del__(self):
        try:
            self._drop_graphs()
        except (AttributeError, TypeError):
            pass

    def forward(self, *args):
        """Without a forward of its own, the block's MXNet 1.x hybrid_forward(F, x, ..., **params) runs:
        F is braid.nd when the block runs imperatively and braid.sym while it is traced into its graph
        (as in MXNet 1.x; sym's functions compute as nd's on the traced arrays, so both give the same
        graph), and this block's own parameters come as keyword arguments by name, each on the first
        input's device."""
        if type(self).hybrid_forward is HybridBlock.hybrid_forward:
            raise NotImplementedError(f"{type(self).__name__} has neither forward() nor hybrid_forward()")
        ctx = next((a.ctx for a in args if isinstance(a, ndarray)), None)
        params = {name: p.data(ctx) for name, p in self._reg_params.items() if p is not None}
        return self.hybrid_forward(_sym if getattr(_tracing, "depth", 0) else _nd, *args, **params)

    def hybrid_forward(self, F, x, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} has no hybrid_forward()")

    def __call__(self, *args):
        if any(isinstance(a, _sym.Symbol) for a in args):
            return _sym.compose(self, args)
        arrays = all(isinstance(a, ndarray) for a in args)
        if not self._active or not arrays or len(args) not in self._outputs:
            out = self.forward(*args)  # imperative (and, while hybridized, a new input count's first call)
            if self._active and arrays:
                self._outputs[len(args)] = len(out) if isinstance(out, (tuple, list)) else 0
            return out
        return self._call_graph(args)

    def _call_graph(self, args):
        training = autograd.is_training()
        outputs_of_forward = self._outputs[len(args)]
        count = max(1, outputs_of_forward)
        key = (training, len(args))
        handle = self._hybrids.get(key)
        if handle is None:
            handle = ctypes.c_void_p()
            check(lib.braid_hybrid_create(_device.context_handle(), self._callback, None, len(args), count,
                                          _ALL_PASSES, ctypes.byref(handle)))
            self._hybrids[key] = handle
        inputs = (c_tensor * len(args))(*[a.handle for a in args])
        outputs = (c_tensor * count)()
        object.__setattr__(self, "_error", None)
        status = lib.braid_hybrid_call(handle, inputs, outputs)
        if status != 0:
            error, self._error = self._error, None
            try:
                check(status)
            except BraidError as e:
                raise (error or e) from (e if error else None)
        results = [ndarray(outputs[i]) for i in range(count)]
        self._last_inputs[training] = tuple(args)
        return tuple(results) if outputs_of_forward else results[0]

    def export(self, path, epoch=0):
        """Writes the inference graph (outside autograd.record()) of the last hybridized call as
        PATH-symbol.json and its parameters as PATH-EPOCH.params (safetensors; docs/GRAPH.md,
        "Export"): what braid_graph_load and samples/hybrid/run_exported.c load, with no Python.
        Returns the two paths."""
        args = self._last_inputs.get(False)
        if not self._active or args is None:
            raise RuntimeError("braid: export needs a hybridized block that has run outside autograd.record() "
                               "(hybridize(), then call it twice: the first call settles the shapes)")
        inputs = (c_tensor * len(args))(*[a.handle for a in args])
        graph = ctypes.c_void_p()
        check(lib.braid_hybrid_graph(self._hybrids[(False, len(args))], inputs, ctypes.byref(graph)))
        symbol, params = f"{path}-symbol.json", f"{path}-{epoch:04d}.params"
        try:
            check(lib.braid_graph_save(graph, symbol.encode(), params.encode()))
        finally:
            lib.braid_graph_release(graph)
        return symbol, params

    def _trace_forward(self, user, num_inputs, inputs, num_outputs, outputs):
        """braid_hybrid_fn: runs forward on the traced inputs; Python errors go back as a status, and
        the exception is raised by the call that traced."""
        _tracing.depth = getattr(_tracing, "depth", 0) + 1
        try:
            args = []
            for i in range(num_inputs):
                handle = c_tensor(inputs[i])
                check(lib.braid_tensor_retain(handle))  # the array releases its own reference
                args.append(ndarray(handle))
            out = self.forward(*args)
            outs = list(out) if isinstance(out, (tuple, list)) else [out]
            if len(outs) != num_outputs or not all(isinstance(o, ndarray) for o in outs):
                raise TypeError(f"braid: {type(self).__name__}.forward returned {len(outs)} values while hybridized; "
                                f"it returned {num_outputs} on its first call")
            for i, o in enumerate(outs):
                check(lib.braid_tensor_retain(o.handle))  # a reference for the caller
                outputs[i] = o.handle
            return 0
        except BaseException as e:  # noqa: B902 - handed back to the caller of braid_hybrid_call
            object.__setattr__(self, "_error", e)
            return e.code if isinstance(e, BraidError) and e.code else 13  # else BRAID_ERR_INTERNAL
        finally:
            _tracing.depth -= 1


class _OwnParams(ParameterDict):
    """A block's own parameters (Block.params), with MXNet 1's ParameterDict.get."""

    def __init__(self, block):
        super().__init__(block._reg_params)
        self._block = block

    def get(self, name, **kwargs):
        """The block's parameter `name`; made with kwargs (shape, init, dtype, grad_req,
        allow_deferred_init) and registered on the block when it has none by that name."""
        if name not in self._block._reg_params:
            self._block._reg_params[name] = Parameter(name, **kwargs)
        self[name] = self._block._reg_params[name]
        return self[name]


class _GraphInfo(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("num_inputs", ctypes.c_int32), ("num_outputs", ctypes.c_int32),
                ("num_nodes", ctypes.c_int32), ("num_params", ctypes.c_int32), ("device", ctypes.c_int32),
                ("pushes_per_run", ctypes.c_int32), ("workspace_bytes", ctypes.c_uint64),
                ("intermediate_bytes", ctypes.c_uint64), ("passes", ctypes.c_uint32),
                ("kernels_per_run", ctypes.c_int32)]


class SymbolBlock(Block):
    """A block that runs an exported graph (HybridBlock.export, braid_graph_save) on one device."""

    def __init__(self, graph):
        super().__init__()
        object.__setattr__(self, "_graph", graph)
        info = _GraphInfo()
        info.struct_size = ctypes.sizeof(_GraphInfo)
        check(lib.braid_graph_get_info(graph, ctypes.byref(info)))
        object.__setattr__(self, "_counts", (info.num_inputs, info.num_outputs))

    @staticmethod
    def imports(symbol_file, input_names, param_file=None, ctx=None):
        """Loads PATH-symbol.json and its parameters (MXNet's SymbolBlock.imports; input_names is
        accepted for MXNet code: a braid graph knows its inputs)."""
        device = ctx if ctx is not None else _device.cpu()
        if param_file is None:
            raise ValueError("braid: SymbolBlock.imports needs the parameter file too")
        graph = ctypes.c_void_p()
        check(lib.braid_graph_load(_device.context_handle(), device.index, str(symbol_file).encode(),
                                   str(param_file).encode(), ctypes.byref(graph)))
        return SymbolBlock(graph)

    def forward(self, *args):
        n_in, n_out = self._counts
        if len(args) != n_in or not all(isinstance(a, ndarray) for a in args):
            raise TypeError(f"braid: this graph takes {n_in} arrays, not {len(args)} arguments")
        inputs = (c_tensor * n_in)(*[a.handle for a in args])
        outputs = (c_tensor * n_out)()
        check(lib.braid_graph_run(self._graph, n_in, inputs, n_out, outputs))
        results = [ndarray(outputs[i]) for i in range(n_out)]
        return results[0] if n_out == 1 else tuple(results)

    def __del__(self):
        try:
            lib.braid_graph_release(self._graph)
        except (AttributeError, TypeError):
            pass


class Sequential(Block):
    """Children run one after another (add() appends)."""

    def add(self, *blocks):
        for b in blocks:
            self.register_child(b)
        return self

    def forward(self, x):
        for child in self._children.values():
            x = child(x)
        return x

    def __getitem__(self, i):
        children = list(self._children.values())
        return children[i] if isinstance(i, int) else type(self)().add(*children[i])

    def __len__(self):
        return len(self._children)


class HybridSequential(HybridBlock):
    """Sequential whose children are HybridBlocks: hybridizing it makes the whole chain one graph."""

    add = Sequential.add
    __getitem__ = Sequential.__getitem__
    __len__ = Sequential.__len__

    def forward(self, x):
        for child in self._children.values():
            x = child(x)
        return x
