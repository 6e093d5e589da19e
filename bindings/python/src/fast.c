/* braid._fast: the per-op path of the Python package in compiled code (docs/PYTHON.md, "The compiled
 * path"). It holds an array's braid_tensor and runs the arithmetic operators (x + 1, a * b, -x, x < y)
 * through the same C ABI as the ctypes path: the package hands it the entry points of the libbraid that
 * ctypes loaded (bind()), so both paths share one library, one context and one set of results. What it
 * does not take itself (NumPy operands, lists, bools, integers beyond 2**53) goes back to the package's
 * Python code, so the two paths cannot disagree. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "braid.h"

/* ---- what bind() hands over ------------------------------------------------------------------ */
static __typeof__(braid_unary)* call_unary;
static __typeof__(braid_binary)* call_binary;
static __typeof__(braid_binary_scalar)* call_binary_scalar;
static __typeof__(braid_compare)* call_compare;
static __typeof__(braid_compare_scalar)* call_compare_scalar;
static __typeof__(braid_tensor_release)* call_release;

static PyTypeObject* result_type; /* braid.ndarray.ndarray: what every result is */
static PyObject* raise_status;    /* braid._lib.check(status): raises BraidError with braid's message */
static PyObject* python_binary;   /* braid.ndarray.binary(op_name, a, b): every other operand */
static PyObject* python_compare;  /* braid.ndarray.compare(op_name, a, b): every other operand */
static PyObject* binary_names[BRAID_BINARY_COUNT];

typedef struct {
  PyObject ob_base;    /* PyObject_HEAD */
  braid_tensor handle; /* one reference, released with the object */
  PyObject* weakrefs;
} Array;

static PyTypeObject ArrayType;

static int bound(void) {
  if (call_release) return 1;
  PyErr_SetString(PyExc_RuntimeError, "braid._fast: used before braid.ndarray bound it");
  return 0;
}

/* The error of a failed call: raised by the package's own check(), with braid_last_error()'s text. */
static PyObject* raise_error(braid_status status) {
  PyObject* r = PyObject_CallFunction(raise_status, "i", (int)status);
  if (r) {
    Py_DECREF(r);
    PyErr_Format(PyExc_RuntimeError, "braid._fast: status %d raised no error", (int)status);
  }
  return NULL;
}

/* A new array owning `out` (or the error of `status`). */
static PyObject* wrap(braid_status status, braid_tensor out) {
  if (status != BRAID_OK) return raise_error(status);
  Array* self = (Array*)result_type->tp_alloc(result_type, 0);
  if (!self) {
    call_release(out);
    return NULL;
  }
  self->handle = out;
  return (PyObject*)self;
}

/* A Python float, or an int that a double holds exactly (the C API takes the scalar as a double). */
static int exact_number(PyObject* o, double* value) {
  if (PyFloat_CheckExact(o)) {
    *value = PyFloat_AS_DOUBLE(o);
    return 1;
  }
  if (PyLong_CheckExact(o)) {
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    const long long limit = 9007199254740992LL; /* 2**53 */
    if (overflow || v > limit || v < -limit) return 0;
    *value = (double)v;
    return 1;
  }
  return 0;
}

/* The calls run without the GIL, as ctypes runs them: a push that waits for room in the engine must
 * not stop the interpreter's other threads. */
static PyObject* binary(braid_binary_op op, PyObject* a, PyObject* b) {
  if (!bound()) return NULL;
  const int a_is_array = PyObject_TypeCheck(a, &ArrayType), b_is_array = PyObject_TypeCheck(b, &ArrayType);
  braid_tensor out = NULL;
  braid_status status;
  double number;
  PyThreadState* saved;
  if (a_is_array && b_is_array) {
    braid_tensor ta = ((Array*)a)->handle, tb = ((Array*)b)->handle;
    saved = PyEval_SaveThread();
    status = call_binary(op, ta, tb, &out);
  } else if (a_is_array && exact_number(b, &number)) {
    braid_tensor ta = ((Array*)a)->handle;
    saved = PyEval_SaveThread();
    status = call_binary_scalar(op, ta, number, 0, &out);
  } else if (b_is_array && exact_number(a, &number)) {
    braid_tensor tb = ((Array*)b)->handle;
    saved = PyEval_SaveThread();
    status = call_binary_scalar(op, tb, number, 1, &out);
  } else {
    return PyObject_CallFunctionObjArgs(python_binary, binary_names[op], a, b, NULL);
  }
  PyEval_RestoreThread(saved);
  return wrap(status, out);
}

static PyObject* unary(braid_unary_op op, PyObject* x) {
  if (!bound()) return NULL;
  braid_tensor tx = ((Array*)x)->handle, out = NULL;
  PyThreadState* saved = PyEval_SaveThread();
  const braid_status status = call_unary(op, tx, &out);
  PyEval_RestoreThread(saved);
  return wrap(status, out);
}

static PyObject* nb_add(PyObject* a, PyObject* b) { return binary(BRAID_BINARY_ADD, a, b); }
static PyObject* nb_subtract(PyObject* a, PyObject* b) { return binary(BRAID_BINARY_SUB, a, b); }
static PyObject* nb_multiply(PyObject* a, PyObject* b) { return binary(BRAID_BINARY_MUL, a, b); }
static PyObject* nb_true_divide(PyObject* a, PyObject* b) { return binary(BRAID_BINARY_DIV, a, b); }
static PyObject* nb_floor_divide(PyObject* a, PyObject* b) { return binary(BRAID_BINARY_FLOOR_DIVIDE, a, b); }
static PyObject* nb_remainder(PyObject* a, PyObject* b) { return binary(BRAID_BINARY_MOD, a, b); }
static PyObject* nb_negative(PyObject* x) { return unary(BRAID_UNARY_NEG, x); }
static PyObject* nb_absolute(PyObject* x) { return unary(BRAID_UNARY_ABS, x); }

static PyObject* nb_power(PyObject* a, PyObject* b, PyObject* modulo) {
  if (modulo != Py_None) {
    PyErr_SetString(PyExc_TypeError, "braid: pow() with a modulus is not supported");
    return NULL;
  }
  return binary(BRAID_BINARY_POW, a, b);
}

/* self op other with a bool result. Python calls this with self an Array: `2 < x` arrives as x > 2. */
static PyObject* richcompare(PyObject* self, PyObject* other, int op) {
  if (!bound()) return NULL;
  static const braid_compare_op ops[] = {
      [Py_LT] = BRAID_COMPARE_LESS,      [Py_LE] = BRAID_COMPARE_LESS_EQUAL, [Py_EQ] = BRAID_COMPARE_EQUAL,
      [Py_NE] = BRAID_COMPARE_NOT_EQUAL, [Py_GT] = BRAID_COMPARE_GREATER,    [Py_GE] = BRAID_COMPARE_GREATER_EQUAL};
  static const char* const names[] = {[Py_LT] = "less",      [Py_LE] = "less_equal", [Py_EQ] = "equal",
                                      [Py_NE] = "not_equal", [Py_GT] = "greater",    [Py_GE] = "greater_equal"};
  braid_tensor ts = ((Array*)self)->handle, out = NULL;
  braid_status status;
  double number;
  PyThreadState* saved;
  if (PyObject_TypeCheck(other, &ArrayType)) {
    braid_tensor to = ((Array*)other)->handle;
    saved = PyEval_SaveThread();
    status = call_compare(ops[op], ts, to, &out);
  } else if (exact_number(other, &number)) {
    saved = PyEval_SaveThread();
    status = call_compare_scalar(ops[op], ts, number, &out);
  } else {
    return PyObject_CallFunction(python_compare, "sOO", names[op], self, other);
  }
  PyEval_RestoreThread(saved);
  return wrap(status, out);
}

/* ---- the type ---------------------------------------------------------------------------------- */
/* Array(handle): takes over one reference of a braid_tensor, given as an int or a ctypes c_void_p. */
static PyObject* array_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  PyObject* handle = NULL;
  static char* keywords[] = {"handle", NULL};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O:Array", keywords, &handle)) return NULL;
  PyObject* value = PyLong_Check(handle) ? (Py_INCREF(handle), handle) : PyObject_GetAttrString(handle, "value");
  if (!value) return NULL;
  void* pointer = value == Py_None ? NULL : PyLong_AsVoidPtr(value);
  Py_DECREF(value);
  if (PyErr_Occurred()) return NULL;
  if (!pointer) {
    PyErr_SetString(PyExc_ValueError, "braid: an array needs a braid_tensor handle, not NULL");
    return NULL;
  }
  Array* self = (Array*)type->tp_alloc(type, 0);
  if (self) self->handle = (braid_tensor)pointer;
  return (PyObject*)self;
}

static void array_dealloc(Array* self) {
  if (self->weakrefs) PyObject_ClearWeakRefs((PyObject*)self);
  if (self->handle && call_release) {
    /* Without the GIL, as ctypes releases: the last release may free memory imported through DLPack,
     * whose deleter (NumPy's) takes the GIL, possibly on an engine thread this release waits for. */
    braid_tensor handle = self->handle;
    PyThreadState* saved = PyEval_SaveThread();
    call_release(handle);
    PyEval_RestoreThread(saved);
  }
  Py_TYPE(self)->tp_free((PyObject*)self);
}

static PyObject* array_handle(Array* self, void* closure) {
  (void)closure;
  return PyLong_FromVoidPtr(self->handle);
}

static PyGetSetDef array_getset[] = {
    {"_handle", (getter)array_handle, NULL, "the braid_tensor (an int, for ctypes calls)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyNumberMethods array_number = {
    .nb_add = nb_add,
    .nb_subtract = nb_subtract,
    .nb_multiply = nb_multiply,
    .nb_true_divide = nb_true_divide,
    .nb_floor_divide = nb_floor_divide,
    .nb_remainder = nb_remainder,
    .nb_power = nb_power,
    .nb_negative = nb_negative,
    .nb_absolute = nb_absolute,
};

/* PyVarObject_HEAD_INIT ends with its own comma, which clang-format does not know. */
static PyTypeObject ArrayType = {
    // clang-format off
    .ob_base = PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "braid._fast.Array",
    // clang-format on
    .tp_doc = "An owned braid_tensor with compiled arithmetic operators (the base of braid's ndarray).",
    .tp_basicsize = sizeof(Array),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_new = array_new,
    .tp_dealloc = (destructor)array_dealloc,
    .tp_weaklistoffset = offsetof(Array, weakrefs),
    .tp_getset = array_getset,
    .tp_as_number = &array_number,
    .tp_richcompare = richcompare,
    .tp_hash = PyObject_HashNotImplemented,
};

/* ---- bind(): the package hands over libbraid's entry points and its Python fallbacks ------------ */
static int address(PyObject* dict, const char* name, void** out) {
  PyObject* value = PyDict_GetItemString(dict, name);
  if (!value) {
    PyErr_Format(PyExc_KeyError, "braid._fast.bind: no address for %s", name);
    return 0;
  }
  *out = PyLong_AsVoidPtr(value);
  if (!*out && !PyErr_Occurred()) PyErr_Format(PyExc_ValueError, "braid._fast.bind: %s is NULL", name);
  return *out != NULL;
}

static PyObject* bind(PyObject* module, PyObject* args, PyObject* kwargs) {
  (void)module;
  PyObject *functions, *ndarray, *check, *fallback_binary, *fallback_compare, *names;
  static char* keywords[] = {"functions", "ndarray", "check", "binary", "compare", "binary_names", NULL};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!O!OOOO!:bind", keywords, &PyDict_Type, &functions, &PyType_Type,
                                   &ndarray, &check, &fallback_binary, &fallback_compare, &PyTuple_Type, &names))
    return NULL;
  if (!PyType_IsSubtype((PyTypeObject*)ndarray, &ArrayType)) {
    PyErr_SetString(PyExc_TypeError, "braid._fast.bind: ndarray must derive from braid._fast.Array");
    return NULL;
  }
  if (PyTuple_GET_SIZE(names) != BRAID_BINARY_COUNT) {
    PyErr_Format(PyExc_ValueError, "braid._fast.bind: %d binary op names expected", BRAID_BINARY_COUNT);
    return NULL;
  }
  void *unary_fn, *binary_fn, *scalar_fn, *compare_fn, *compare_scalar_fn, *release_fn;
  if (!address(functions, "braid_unary", &unary_fn) || !address(functions, "braid_binary", &binary_fn) ||
      !address(functions, "braid_binary_scalar", &scalar_fn) || !address(functions, "braid_compare", &compare_fn) ||
      !address(functions, "braid_compare_scalar", &compare_scalar_fn) ||
      !address(functions, "braid_tensor_release", &release_fn))
    return NULL;
  for (int i = 0; i < BRAID_BINARY_COUNT; ++i) {
    Py_INCREF(PyTuple_GET_ITEM(names, i));
    Py_XSETREF(binary_names[i], PyTuple_GET_ITEM(names, i));
  }
  Py_INCREF(ndarray);
  Py_XSETREF(result_type, (PyTypeObject*)ndarray);
  Py_INCREF(check);
  Py_XSETREF(raise_status, check);
  Py_INCREF(fallback_binary);
  Py_XSETREF(python_binary, fallback_binary);
  Py_INCREF(fallback_compare);
  Py_XSETREF(python_compare, fallback_compare);
  call_unary = (__typeof__(call_unary))unary_fn;
  call_binary = (__typeof__(call_binary))binary_fn;
  call_binary_scalar = (__typeof__(call_binary_scalar))scalar_fn;
  call_compare = (__typeof__(call_compare))compare_fn;
  call_compare_scalar = (__typeof__(call_compare_scalar))compare_scalar_fn;
  call_release = (__typeof__(call_release))release_fn;
  Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"bind", (PyCFunction)(void (*)(void))bind, METH_VARARGS | METH_KEYWORDS,
     "bind(functions, ndarray, check, binary, compare, binary_names): hands over libbraid's entry points "
     "(addresses by name) and the package's Python fallbacks."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    .m_base = PyModuleDef_HEAD_INIT,
    .m_name = "braid._fast",
    .m_doc = "braid's compiled per-op path (docs/PYTHON.md, \"The compiled path\").",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC PyInit__fast(void) {
  if (PyType_Ready(&ArrayType) < 0) return NULL;
  PyObject* module = PyModule_Create(&module_def);
  if (!module) return NULL;
  Py_INCREF(&ArrayType);
  if (PyModule_AddObject(module, "Array", (PyObject*)&ArrayType) < 0) {
    Py_DECREF(&ArrayType);
    Py_DECREF(module);
    return NULL;
  }
  return module;
}
