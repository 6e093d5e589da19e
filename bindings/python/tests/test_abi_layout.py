"""The package's copies of the C ABI checked against abi/braid.h itself.

The ctypes structures, the prototypes in braid._lib and the enum values the package writes down are
copies of declarations in abi/braid.h. This test reads the header (a small parser for the C subset it
uses), lays every struct out with ctypes from the header's own field list, and fails on any
difference: a field added to a struct in braid.h alone, a field of another size or at another offset,
a prototype with another argument count or argument kind, an enum value that moved.
"""
import ctypes
import importlib
import os
import re
import unittest

# The modules themselves: the package exports classes under some of their names (braid.ndarray).
_lib, data, distributed, ndarray, optimizer, block, trainer = (
    importlib.import_module("braid." + m)
    for m in ("_lib", "data", "distributed", "ndarray", "optimizer", "gluon.block", "gluon.trainer"))

HEADER = os.path.join(os.path.dirname(__file__), "..", "..", "..", "abi", "braid.h")

_SCALARS = {
    "uint8_t": ctypes.c_uint8, "int8_t": ctypes.c_int8, "uint16_t": ctypes.c_uint16, "int16_t": ctypes.c_int16,
    "uint32_t": ctypes.c_uint32, "int32_t": ctypes.c_int32, "uint64_t": ctypes.c_uint64, "int64_t": ctypes.c_int64,
    "int": ctypes.c_int, "unsigned": ctypes.c_uint, "size_t": ctypes.c_size_t, "float": ctypes.c_float,
    "double": ctypes.c_double, "char": ctypes.c_char,
}


class Header:
    """What abi/braid.h declares: #define integers, enums, structs (as ctypes types), prototypes."""

    def __init__(self, path):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
        text = re.sub(r"//[^\n]*", " ", text)
        self.defines = {m[0]: int(m[1]) for m in re.findall(r"#define\s+(BRAID_\w+)\s+\(?(-?\d+)u?\)?\s*\n", text)}
        code = re.sub(r"#[^\n]*", " ", text)  # other preprocessor lines (guards, extern "C" wrappers)
        code = code.replace('extern "C" {', " ")
        self.enums, self.enum_types = {}, set()
        for body, name in re.findall(r"typedef\s+enum\s+\w*\s*\{(.*?)\}\s*(\w+)\s*;", code, flags=re.S):
            self.enum_types.add(name)
            value = -1
            for item in filter(None, (i.strip() for i in body.split(","))):
                key, _, expr = item.partition("=")
                value = self._int(expr) if expr.strip() else value + 1
                self.enums[key.strip()] = value
        self.handles = set(re.findall(r"typedef\s+struct\s+\w+\s*\*\s*(\w+)\s*;", code))
        self.function_types = set(re.findall(r"typedef\s+[\w\s\*]+\(\s*\*\s*(\w+)\s*\)", code))
        self.aliases = dict((b, a) for a, b in re.findall(r"typedef\s+(u?int\d+_t)\s+(\w+)\s*;", code))
        self.structs = {}
        for name, body in re.findall(r"typedef\s+struct\s+(\w+)\s*\{(.*?)\}\s*\w+\s*;", code, flags=re.S):
            fields = []
            for decl in filter(None, (d.strip() for d in body.split(";"))):
                fields.extend(self._declarators(decl))
            self.structs[name] = type(name, (ctypes.Structure,), {"_fields_": fields})
        self.prototypes = {}
        for ret, name, params in re.findall(r"BRAID_API\s+([\w\s\*]+?)\s*\b(braid_\w+)\s*\(([^)]*)\)\s*;", code):
            args = [] if params.strip() in ("", "void") else [self._ctype(p) for p in self._split(params)]
            self.prototypes[name] = (None if ret.strip() == "void" else self._ctype(ret + " r"), args)

    def _int(self, expr):
        expr = re.sub(r"(\d+)u\b", r"\1", expr.strip())
        return int(eval(expr, {}, dict(self.defines, **self.enums)))  # literals, shifts and earlier names

    @staticmethod
    def _split(params):
        return [p.strip() for p in params.split(",")]

    def _base(self, words):
        words = [w for w in words if w not in ("const", "struct", "unsigned")] or ["unsigned"]
        base = words[-1]
        if base in _SCALARS:
            return _SCALARS[base]
        if base in self.aliases:
            return _SCALARS[self.aliases[base]]
        if base in self.enum_types:
            return ctypes.c_int
        if base in self.handles or base in self.function_types or base == "void":
            return ctypes.c_void_p
        if base in self.structs:
            return self.structs[base]
        raise AssertionError(f"braid.h: unknown type {base!r}")

    def _ctype(self, decl):
        """The ctypes type of one declaration ("const int64_t* shape"); pointers to char are strings."""
        words = decl.replace("*", " * ").split()
        stars = words.count("*")
        words = [w for w in words if w != "*"]
        base = self._base(words[:-1] if len(words) > 1 else words)
        if stars == 0:
            return base
        if stars == 1 and base is ctypes.c_char:
            return ctypes.c_char_p
        return ctypes.c_void_p if base is ctypes.c_void_p else ctypes.POINTER(base)

    def _declarators(self, decl):
        """One struct member declaration, perhaps of several names ("double beta1, beta2")."""
        first, *rest = decl.split(",")
        words = first.replace("*", " * ").split()
        name_at = max(i for i, w in enumerate(words) if re.match(r"\w", w) and w not in ("const", "struct"))
        type_words = [w for w in words[:name_at] if w != "*"]
        out = []
        for piece in [" ".join(words[name_at - words[:name_at].count("*"):])] + rest:
            stars = piece.count("*")
            m = re.match(r"\s*\**\s*(\w+)\s*((?:\[[^\]]+\]\s*)*)$", piece.replace("*", " * ").replace(" * ", "*"))
            assert m, f"braid.h: cannot read member {piece!r} of {decl!r}"
            base = self._base(type_words)
            t = base
            if stars:
                t = ctypes.c_char_p if base is ctypes.c_char and stars == 1 else ctypes.c_void_p
            for dim in reversed(re.findall(r"\[([^\]]+)\]", m.group(2))):
                t = t * self._int(dim)
            out.append((m.group(1), t))
        return out


# The package's ctypes structures and the C struct each copies. Every structure in the package must be
# here (checked below), so a new one cannot go unchecked.
STRUCTS = {
    _lib._ContextOptions: "braid_context_options",
    _lib.DeviceInfo: "braid_device_info",
    _lib.MemoryStats: "braid_memory_stats",
    _lib.Conv2dParams: "braid_conv2d_params",
    _lib.Pool2dParams: "braid_pool2d_params",
    _lib.BatchNormParams: "braid_batch_norm_params",
    _lib.OptimizerParams: "braid_optimizer_params",
    _lib.TrainerOptions: "braid_trainer_options",
    _lib.ProcessGroupOptions: "braid_process_group_options",
    _lib.ProcessGroupInfo: "braid_process_group_info",
    _lib.KVStoreInfo: "braid_kvstore_info",
    data._DatasetOptions: "braid_dataset_options",
    data._IteratorOptions: "braid_batch_iterator_options",
}


def _kind(t):
    """What must agree between a Python and a C type at the boundary: pointer-ness and size, and for
    numbers whether they are floating and signed."""
    if t is None:
        return None
    if t in (ctypes.c_void_p, ctypes.c_char_p) or hasattr(t, "_type_") and isinstance(t._type_, type) \
            or getattr(t, "_flags_", 0) & ctypes._FUNCFLAG_CDECL:
        return ("pointer",)
    if issubclass(t, ctypes.Structure):
        return ("struct", ctypes.sizeof(t))
    code = getattr(t, "_type_", "?")
    floating = code in "fdg"
    signed = code in "bhilq" or floating
    return ("number", ctypes.sizeof(t), floating, signed)


class AbiLayoutTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.h = Header(HEADER)

    def test_the_parser_reads_the_header(self):
        # A parser that silently read nothing would pass everything below.
        self.assertGreater(len(self.h.structs), 15)
        self.assertGreater(len(self.h.prototypes), 140)
        self.assertEqual(self.h.enums["BRAID_ERR_SHAPE"], 2)
        self.assertEqual(ctypes.sizeof(self.h.structs["braid_conv2d_params"]), 20)

    def test_every_package_struct_is_checked(self):
        seen = set()
        for module in (_lib, data):
            for value in vars(module).values():
                if isinstance(value, type) and issubclass(value, ctypes.Structure):
                    seen.add(value)
        self.assertEqual(seen - set(STRUCTS), set(), "a ctypes structure not in STRUCTS")

    def test_structs_match_the_header(self):
        for py, c_name in STRUCTS.items():
            with self.subTest(struct=c_name):
                c = self.h.structs[c_name]
                c_fields = [name for name, _ in c._fields_]
                py_fields = [name.rstrip("_") for name, _ in py._fields_]  # global_: a Python keyword
                self.assertEqual(py_fields, c_fields, f"{py.__name__} fields differ from {c_name}")
                for (name, py_t), (_, c_t) in zip(py._fields_, c._fields_):
                    self.assertEqual(getattr(py, name).offset, getattr(c, name.rstrip("_")).offset, name)
                    self.assertEqual(ctypes.sizeof(py_t), ctypes.sizeof(c_t), name)
                    if not issubclass(c_t, (ctypes.Array, ctypes.Structure)):
                        self.assertEqual(_kind(py_t), _kind(c_t), name)
                self.assertEqual(ctypes.sizeof(py), ctypes.sizeof(c), f"sizeof {c_name}")

    def test_prototypes_match_the_header(self):
        for name, (restype, argtypes) in _lib._PROTOTYPES.items():
            with self.subTest(function=name):
                self.assertIn(name, self.h.prototypes, "not declared in braid.h")
                c_ret, c_args = self.h.prototypes[name]
                self.assertEqual(_kind(restype), _kind(c_ret), "return type")
                self.assertEqual(len(argtypes), len(c_args), "argument count")
                for i, (py_t, c_t) in enumerate(zip(argtypes, c_args)):
                    self.assertEqual(_kind(py_t), _kind(c_t), f"argument {i}")
                    pointee = getattr(py_t, "_type_", None)
                    if isinstance(pointee, type) and issubclass(pointee, ctypes.Structure):
                        self.assertEqual(STRUCTS.get(pointee), getattr(c_t._type_, "__name__", None), f"argument {i}")

    def test_enum_values_match_the_header(self):
        e = self.h.enums
        self.assertEqual(_lib.STATUS_NAMES, {v: k for k, v in e.items() if k.startswith(("BRAID_OK", "BRAID_ERR_"))})
        copies = {
            "UNARY": (ndarray.UNARY, "BRAID_UNARY_", dict(negative="NEG")),
            "BINARY": (ndarray.BINARY, "BRAID_BINARY_", dict(subtract="SUB", multiply="MUL", divide="DIV",
                                                              power="POW", mod="MOD")),
            "REDUCE": (ndarray.REDUCE, "BRAID_REDUCE_", {}),
            "COMPARE": (ndarray.COMPARE, "BRAID_COMPARE_", {}),
            "optimizer kinds": (optimizer._KINDS, "BRAID_OPTIMIZER_", {}),
            "collective ops": (distributed.OPS, "BRAID_COLLECTIVE_", dict(mean="AVG")),
        }
        for what, (table, prefix, spelled) in copies.items():
            for py_name, value in table.items():
                with self.subTest(enum=what, name=py_name):
                    c_name = prefix + spelled.get(py_name, py_name.upper())
                    self.assertIn(c_name, e.keys())
                    self.assertEqual(value, e[c_name])
        dtypes = {code: dt.name.upper() for code, dt in ndarray._DTYPES}
        for code, name in dtypes.items():
            self.assertEqual(e["BRAID_" + name], code)
        self.assertEqual(e["BRAID_BFLOAT16"], ndarray._BFLOAT16)
        self.assertEqual(e["BRAID_GRAPH_PASS_ALL"], block._ALL_PASSES)
        self.assertEqual(self.h.defines["BRAID_TRAINER_IGNORE_STALE_GRAD"], trainer._IGNORE_STALE_GRAD)
        self.assertEqual(self.h.defines["BRAID_PROCESS_GROUP_NO_CHECK"], _lib.PROCESS_GROUP_NO_CHECK)
        self.assertEqual(self.h.defines["BRAID_EXIT_REJOIN"], _lib.EXIT_REJOIN)

    def test_a_field_added_to_the_header_alone_fails(self):
        # The check itself: the header with one more field in braid_optimizer_params no longer matches
        # the package's copy.
        with open(HEADER, encoding="utf-8") as f:
            text = f.read()
        changed = text.replace("double rescale_grad;", "double rescale_grad;\n  double added;", 1)
        self.assertNotEqual(changed, text)
        path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"braid_h_{os.getpid()}.h")
        with open(path, "w", encoding="utf-8") as f:
            f.write(changed)
        try:
            c = Header(path).structs["braid_optimizer_params"]
        finally:
            os.unlink(path)
        self.assertNotEqual([n for n, _ in c._fields_], [n for n, _ in _lib.OptimizerParams._fields_])
        self.assertNotEqual(ctypes.sizeof(c), ctypes.sizeof(_lib.OptimizerParams))


if __name__ == "__main__":
    unittest.main()
