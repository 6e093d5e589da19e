"""The C library: loading libbraid, the prototypes of the functions the package calls, and errors.

Everything in the package reaches braid through this module's `lib` (a ctypes.CDLL with argtypes and
restype set for each function used), so a signature is written once, next to its C declaration's name
in abi/braid.h.
"""
import ctypes
import os

ABI_MAJOR = 1
ABI_MINOR_NEEDED = 13  # braid_compare and bool (1.13) are the newest used

c_tensor = ctypes.c_void_p
c_context = ctypes.c_void_p
c_status = ctypes.c_int
c_device = ctypes.c_int32
c_i32p = ctypes.POINTER(ctypes.c_int32)
c_i64p = ctypes.POINTER(ctypes.c_int64)
c_tensorp = ctypes.POINTER(c_tensor)

STATUS_NAMES = {
    0: "BRAID_OK", 1: "BRAID_ERR_INVALID_ARGUMENT", 2: "BRAID_ERR_SHAPE", 3: "BRAID_ERR_DTYPE",
    4: "BRAID_ERR_DEVICE", 5: "BRAID_ERR_OUT_OF_MEMORY", 6: "BRAID_ERR_UNSUPPORTED", 7: "BRAID_ERR_NOT_FOUND",
    8: "BRAID_ERR_ABI_MISMATCH", 9: "BRAID_ERR_INVALID_STATE", 10: "BRAID_ERR_KERNEL", 11: "BRAID_ERR_IO",
    12: "BRAID_ERR_TIMEOUT", 13: "BRAID_ERR_INTERNAL",
}


class BraidError(RuntimeError):
    """A braid call failed. `status` is the C status name ("BRAID_ERR_SHAPE", ...); the message is
    braid_last_error()'s, which names the op and what was wrong."""

    def __init__(self, status, message, code=None):
        self.status, self.code = status, code
        super().__init__(f"{status}: {message}" if message else status)


class _ContextOptions(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("backends", ctypes.c_char_p),
        ("backend_path", ctypes.c_char_p),
        ("engine_mode", ctypes.c_int),
        ("max_inflight_ops", ctypes.c_uint64),
        ("max_inflight_bytes", ctypes.c_uint64),
        ("profile_path", ctypes.c_char_p),
        ("seed", ctypes.c_uint64),
        ("compute_queues", ctypes.c_int32),
    ]


class DeviceInfo(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("id", ctypes.c_char_p),
        ("backend", ctypes.c_char_p),
        ("name", ctypes.c_char_p),
        ("kind", ctypes.c_int),
        ("backend_index", ctypes.c_int32),
        ("uuid", ctypes.c_uint8 * 16),
        ("memory_bytes", ctypes.c_uint64),
        ("compute_units", ctypes.c_int32),
        ("compute_queues", ctypes.c_int32),
        ("transfer_queues", ctypes.c_int32),
        ("l1_cache_bytes", ctypes.c_uint64),
        ("l2_cache_bytes", ctypes.c_uint64),
        ("l3_cache_bytes", ctypes.c_uint64),
        ("dtype_mask", ctypes.c_uint32),
        ("properties_json", ctypes.c_char_p),
    ]


class MemoryStats(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("allocated_bytes", ctypes.c_uint64),
                ("reserved_bytes", ctypes.c_uint64), ("peak_allocated_bytes", ctypes.c_uint64),
                ("peak_reserved_bytes", ctypes.c_uint64), ("alloc_count", ctypes.c_uint64),
                ("backend_alloc_count", ctypes.c_uint64)]


class Conv2dParams(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("stride", ctypes.c_int32 * 2), ("padding", ctypes.c_int32 * 2)]


class Pool2dParams(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("kind", ctypes.c_int),
        ("kernel", ctypes.c_int32 * 2),
        ("stride", ctypes.c_int32 * 2),
        ("padding", ctypes.c_int32 * 2),
        ("global_", ctypes.c_int32),
    ]


class BatchNormParams(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("eps", ctypes.c_double), ("momentum", ctypes.c_double),
                ("training", ctypes.c_int32)]


class OptimizerParams(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("kind", ctypes.c_int), ("learning_rate", ctypes.c_double),
                ("momentum", ctypes.c_double), ("weight_decay", ctypes.c_double), ("beta1", ctypes.c_double),
                ("beta2", ctypes.c_double), ("epsilon", ctypes.c_double), ("rescale_grad", ctypes.c_double)]


class TrainerOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("optimizer", OptimizerParams), ("bucket_bytes", ctypes.c_uint64),
                ("algorithm", ctypes.c_int), ("flags", ctypes.c_uint64)]


class ProcessGroupOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("rank", ctypes.c_int32), ("world_size", ctypes.c_int32),
                ("master_addr", ctypes.c_char_p), ("master_port", ctypes.c_int32), ("backend", ctypes.c_char_p),
                ("timeout_seconds", ctypes.c_double), ("flags", ctypes.c_uint32)]


PROCESS_GROUP_NO_CHECK = 1
EXIT_REJOIN = 75  # BRAID_EXIT_REJOIN


class ProcessGroupInfo(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("rank", ctypes.c_int32), ("world_size", ctypes.c_int32),
                ("local_rank", ctypes.c_int32), ("local_size", ctypes.c_int32), ("timeout_seconds", ctypes.c_double),
                ("backend", ctypes.c_char * 32)]


class KVStoreInfo(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("rank", ctypes.c_int32), ("num_workers", ctypes.c_int32),
                ("num_servers", ctypes.c_int32)]


# braid_hybrid_fn: status (void* user, int32 num_inputs, const braid_tensor* inputs, int32 num_outputs,
# braid_tensor* outputs)
HYBRID_FN = ctypes.CFUNCTYPE(c_status, ctypes.c_void_p, ctypes.c_int32, ctypes.POINTER(c_tensor), ctypes.c_int32,
                             ctypes.POINTER(c_tensor))

# name: (restype, argtypes). Functions returning braid_status get the status check of `call`.
_PROTOTYPES = {
    "braid_version": (ctypes.c_uint32, []),
    "braid_version_string": (ctypes.c_char_p, []),
    "braid_last_error": (ctypes.c_char_p, []),
    "braid_context_create": (c_status, [ctypes.POINTER(_ContextOptions), ctypes.POINTER(c_context)]),
    "braid_context_release": (c_status, [c_context]),
    "braid_context_device_count": (c_status, [c_context, c_i32p]),
    "braid_context_find_device": (c_status, [c_context, ctypes.c_char_p, ctypes.POINTER(c_device)]),
    "braid_context_device_info": (c_status, [c_context, c_device, ctypes.POINTER(DeviceInfo)]),
    "braid_context_set_seed": (c_status, [c_context, ctypes.c_uint64]),
    "braid_wait_all": (c_status, [c_context]),
    "braid_memory_get_stats": (c_status, [c_context, c_device, ctypes.POINTER(MemoryStats)]),
    "braid_tensor_empty": (c_status, [c_context, c_device, ctypes.c_int, ctypes.c_int32, c_i64p, c_tensorp]),
    "braid_tensor_from_host": (c_status, [c_context, c_device, ctypes.c_int, ctypes.c_int32, c_i64p,
                                          ctypes.c_void_p, ctypes.c_size_t, c_tensorp]),
    "braid_tensor_retain": (c_status, [c_tensor]),
    "braid_tensor_release": (c_status, [c_tensor]),
    "braid_tensor_ndim": (c_status, [c_tensor, c_i32p]),
    "braid_tensor_shape": (c_status, [c_tensor, c_i64p]),
    "braid_tensor_dtype": (c_status, [c_tensor, ctypes.POINTER(ctypes.c_int)]),
    "braid_tensor_device": (c_status, [c_tensor, ctypes.POINTER(c_device)]),
    "braid_tensor_wait_to_read": (c_status, [c_tensor]),
    "braid_tensor_to_host": (c_status, [c_tensor, ctypes.c_void_p, ctypes.c_size_t]),
    "braid_tensor_write_host": (c_status, [c_tensor, ctypes.c_void_p, ctypes.c_size_t]),
    "braid_tensor_host_data": (c_status, [c_tensor, ctypes.POINTER(ctypes.c_void_p)]),
    "braid_full": (c_status, [c_context, c_device, ctypes.c_int, ctypes.c_int32, c_i64p, ctypes.c_double, c_tensorp]),
    "braid_arange": (c_status, [c_context, c_device, ctypes.c_int, ctypes.c_double, ctypes.c_double, ctypes.c_double,
                                c_tensorp]),
    "braid_random_uniform": (c_status, [c_context, c_device, ctypes.c_int, ctypes.c_int32, c_i64p, ctypes.c_double,
                                        ctypes.c_double, c_tensorp]),
    "braid_random_normal": (c_status, [c_context, c_device, ctypes.c_int, ctypes.c_int32, c_i64p, ctypes.c_double,
                                       ctypes.c_double, c_tensorp]),
    "braid_unary": (c_status, [ctypes.c_int, c_tensor, c_tensorp]),
    "braid_binary": (c_status, [ctypes.c_int, c_tensor, c_tensor, c_tensorp]),
    "braid_binary_scalar": (c_status, [ctypes.c_int, c_tensor, ctypes.c_double, ctypes.c_int32, c_tensorp]),
    "braid_where": (c_status, [c_tensor, c_tensor, c_tensor, c_tensorp]),
    "braid_take": (c_status, [c_tensor, c_tensor, ctypes.c_int32, c_tensorp]),
    "braid_compare": (c_status, [ctypes.c_int, c_tensor, c_tensor, c_tensorp]),
    "braid_compare_scalar": (c_status, [ctypes.c_int, c_tensor, ctypes.c_double, c_tensorp]),
    "braid_view": (c_status, [c_tensor, ctypes.c_int64, ctypes.c_int32, c_i64p, c_tensorp]),
    "braid_tensor_from_dlpack": (c_status, [c_context, ctypes.c_int32, ctypes.c_void_p, c_tensorp]),
    "braid_autocast_set": (c_status, [c_context, ctypes.c_int, ctypes.POINTER(ctypes.c_int)]),
    "braid_autocast_get": (c_status, [c_context, ctypes.POINTER(ctypes.c_int)]),
    "braid_reduce": (c_status, [ctypes.c_int, c_tensor, ctypes.c_int32, c_i32p, ctypes.c_int32, c_tensorp]),
    "braid_argmax": (c_status, [c_tensor, ctypes.c_int32, ctypes.c_int32, c_tensorp]),
    "braid_matmul": (c_status, [c_tensor, c_tensor, ctypes.c_int32, ctypes.c_int32, c_tensorp]),
    "braid_reshape": (c_status, [c_tensor, ctypes.c_int32, c_i64p, c_tensorp]),
    "braid_slice": (c_status, [c_tensor, c_i64p, c_i64p, c_i64p, c_tensorp]),
    "braid_transpose": (c_status, [c_tensor, c_i32p, c_tensorp]),
    "braid_concat": (c_status, [ctypes.c_int32, c_tensorp, ctypes.c_int32, c_tensorp]),
    "braid_copy": (c_status, [c_tensor, c_device, c_tensorp]),
    "braid_cast": (c_status, [c_tensor, ctypes.c_int, c_tensorp]),
    "braid_copy_into": (c_status, [c_tensor, c_tensor]),
    "braid_conv2d": (c_status, [c_tensor, c_tensor, c_tensor, ctypes.POINTER(Conv2dParams), c_tensorp]),
    "braid_pool2d": (c_status, [c_tensor, ctypes.POINTER(Pool2dParams), c_tensorp]),
    "braid_softmax": (c_status, [c_tensor, ctypes.c_int32, ctypes.c_int32, c_tensorp]),
    "braid_softmax_cross_entropy": (c_status, [c_tensor, c_tensor, c_tensorp]),
    "braid_dropout": (c_status, [c_tensor, ctypes.c_double, c_tensorp, c_tensorp]),
    "braid_autograd_set_recording": (c_status, [c_context, ctypes.c_int32, c_i32p]),
    "braid_autograd_is_recording": (c_status, [c_context, c_i32p]),
    "braid_tensor_attach_grad": (c_status, [c_tensor, ctypes.c_int]),
    "braid_tensor_grad": (c_status, [c_tensor, c_tensorp]),
    "braid_backward": (c_status, [ctypes.c_int32, c_tensorp, c_tensorp, ctypes.c_int32]),
    "braid_batch_norm": (c_status, [c_tensor, c_tensor, c_tensor, c_tensor, c_tensor, ctypes.POINTER(BatchNormParams),
                                    c_tensorp, c_tensorp, c_tensorp]),
    "braid_hybrid_create": (c_status, [c_context, HYBRID_FN, ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32,
                                       ctypes.c_uint32, ctypes.POINTER(ctypes.c_void_p)]),
    "braid_hybrid_release": (c_status, [ctypes.c_void_p]),
    "braid_hybrid_call": (c_status, [ctypes.c_void_p, c_tensorp, c_tensorp]),
    "braid_hybrid_graph": (c_status, [ctypes.c_void_p, c_tensorp, ctypes.POINTER(ctypes.c_void_p)]),
    "braid_graph_save": (c_status, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p]),
    "braid_graph_release": (c_status, [ctypes.c_void_p]),
    "braid_graph_load": (c_status, [c_context, c_device, ctypes.c_char_p, ctypes.c_char_p,
                                    ctypes.POINTER(ctypes.c_void_p)]),
    "braid_graph_run": (c_status, [ctypes.c_void_p, ctypes.c_int32, c_tensorp, ctypes.c_int32, c_tensorp]),
    "braid_graph_get_info": (c_status, [ctypes.c_void_p, ctypes.c_void_p]),
    "braid_trainer_create": (c_status, [ctypes.c_int32, ctypes.c_int32, c_tensorp, ctypes.POINTER(TrainerOptions),
                                        ctypes.POINTER(ctypes.c_void_p)]),
    "braid_trainer_release": (c_status, [ctypes.c_void_p]),
    "braid_trainer_step": (c_status, [ctypes.c_void_p, ctypes.c_double]),
    "braid_trainer_allreduce_grads": (c_status, [ctypes.c_void_p]),
    "braid_trainer_update": (c_status, [ctypes.c_void_p, ctypes.c_double]),
    "braid_trainer_set_learning_rate": (c_status, [ctypes.c_void_p, ctypes.c_double]),
    "braid_trainer_learning_rate": (c_status, [ctypes.c_void_p, ctypes.POINTER(ctypes.c_double)]),
    "braid_process_group_create": (c_status, [c_context, ctypes.POINTER(ProcessGroupOptions),
                                              ctypes.POINTER(ctypes.c_void_p)]),
    "braid_process_group_retain": (c_status, [ctypes.c_void_p]),
    "braid_process_group_release": (c_status, [ctypes.c_void_p]),
    "braid_process_group_get_info": (c_status, [ctypes.c_void_p, ctypes.POINTER(ProcessGroupInfo)]),
    "braid_process_group_allreduce": (c_status, [ctypes.c_void_p, c_tensor, ctypes.c_int]),
    "braid_process_group_broadcast": (c_status, [ctypes.c_void_p, c_tensor, ctypes.c_int32]),
    "braid_process_group_reduce": (c_status, [ctypes.c_void_p, c_tensor, ctypes.c_int32, ctypes.c_int]),
    "braid_process_group_all_gather": (c_status, [ctypes.c_void_p, c_tensor, c_tensor]),
    "braid_process_group_reduce_scatter": (c_status, [ctypes.c_void_p, c_tensor, c_tensor, ctypes.c_int]),
    "braid_process_group_barrier": (c_status, [ctypes.c_void_p]),
    "braid_process_group_rejoin_pending": (c_status, [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int32)]),
    "braid_process_group_send": (c_status, [ctypes.c_void_p, c_tensor, ctypes.c_int32, ctypes.c_int32]),
    "braid_process_group_recv": (c_status, [ctypes.c_void_p, c_tensor, ctypes.c_int32, ctypes.c_int32]),
    "braid_trainer_set_process_group": (c_status, [ctypes.c_void_p, ctypes.c_void_p]),
    "braid_kvstore_create": (c_status, [c_context, ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]),
    "braid_kvstore_release": (c_status, [ctypes.c_void_p]),
    "braid_kvstore_type": (c_status, [ctypes.c_void_p, ctypes.POINTER(ctypes.c_char_p)]),
    "braid_kvstore_init": (c_status, [ctypes.c_void_p, ctypes.c_int64, c_tensor]),
    "braid_kvstore_push": (c_status, [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int32, c_tensorp]),
    "braid_kvstore_pull": (c_status, [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int32, c_tensorp]),
    "braid_kvstore_pushpull": (c_status, [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int32, c_tensorp, c_tensorp]),
    "braid_kvstore_set_optimizer": (c_status, [ctypes.c_void_p, ctypes.POINTER(OptimizerParams)]),
    "braid_kvstore_get_info": (c_status, [ctypes.c_void_p, ctypes.POINTER(KVStoreInfo)]),
    "braid_kvstore_barrier": (c_status, [ctypes.c_void_p]),
    "braid_kvstore_run_server": (c_status, [c_context]),
    "braid_trainer_save_states": (c_status, [ctypes.c_void_p, ctypes.c_char_p]),
    "braid_trainer_load_states": (c_status, [ctypes.c_void_p, ctypes.c_char_p]),
    "braid_save_safetensors": (c_status, [ctypes.c_char_p, ctypes.c_int32, ctypes.POINTER(ctypes.c_char_p), c_tensorp]),
    "braid_safetensors_names": (c_status, [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t,
                                           ctypes.POINTER(ctypes.c_size_t)]),
    "braid_load_safetensors": (c_status, [c_context, c_device, ctypes.c_char_p, ctypes.c_int32,
                                          ctypes.POINTER(ctypes.c_char_p), c_tensorp]),
    "braid_split_and_load": (c_status, [c_tensor, ctypes.c_int32, c_i32p, ctypes.POINTER(ctypes.c_double),
                                        c_tensorp]),
}


def _open_library():
    """The libbraid to use: BRAID_LIBRARY (a path) if set; else the one this package was installed with
    (PREFIX/LIBDIR/libbraid.so.1 for a package in PREFIX/LIBDIR/python3/dist-packages); else the build
    tree of the checkout the package sits in (build/lib); else, for a package pip installed, the
    directories its build recorded (_build_hints.py, written by setup.py: the checkout's build/lib);
    else libbraid.so.1 from the loader's search path (LD_LIBRARY_PATH, ldconfig)."""
    explicit = os.environ.get("BRAID_LIBRARY")
    if explicit:
        try:
            return ctypes.CDLL(explicit)
        except OSError as e:
            raise ImportError(f"braid: BRAID_LIBRARY={explicit} does not load: {e}") from None
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = [os.path.join(here, "..", "..", "..", "libbraid.so.1"),
                  os.path.join(here, "..", "..", "..", "build", "lib", "libbraid.so.1")]
    try:
        from ._build_hints import LIBRARY_DIRS
        candidates += [os.path.join(d, "libbraid.so.1") for d in LIBRARY_DIRS]
    except ImportError:  # a package used from the source tree or installed by CMake: not built by setup.py
        pass
    candidates.append("libbraid.so.1")
    for candidate in candidates:
        if os.sep in candidate and not os.path.exists(candidate):
            continue
        try:
            return ctypes.CDLL(os.path.normpath(candidate) if os.sep in candidate else candidate)
        except OSError:
            continue
    raise ImportError("braid: libbraid.so.1 not found; set BRAID_LIBRARY to its path, install braid, or build it "
                      "(scripts/build.sh puts it in build/lib)")


def _load():
    library = _open_library()
    try:  # the version first: an older library lacks some of the functions bound below
        library.braid_version.restype, library.braid_version.argtypes = ctypes.c_uint32, []
        version = library.braid_version()
    except AttributeError:
        raise ImportError(f"braid: {library._name} is not libbraid (no braid_version)") from None
    major, minor = version >> 16, version & 0xFFFF
    if major != ABI_MAJOR or minor < ABI_MINOR_NEEDED:
        raise ImportError(f"braid: the loaded libbraid has ABI {major}.{minor}; this package needs "
                          f"{ABI_MAJOR}.{ABI_MINOR_NEEDED} or a later {ABI_MAJOR}.x")
    for name, (restype, argtypes) in _PROTOTYPES.items():
        fn = getattr(library, name)
        fn.restype = restype
        fn.argtypes = argtypes
    return library


lib = _load()


def _load_fast():
    """braid._fast, the compiled per-op path (docs/PYTHON.md, "The compiled path"), or None for the ctypes
    path. BRAID_PYTHON_FAST=0 asks for the ctypes path, =1 insists on the compiled one (ImportError when
    it is missing). It is the package's own _fast (built by pip or installed by cmake beside these files),
    else the one a CMake build tree made beside the libbraid that was loaded (<build>/python/braid/)."""
    wanted = os.environ.get("BRAID_PYTHON_FAST", "")
    if wanted == "0":
        return None
    try:
        from . import _fast
        return _fast
    except ImportError:
        pass
    import importlib.machinery
    import importlib.util
    library_dir = os.path.dirname(os.path.realpath(lib._name)) if os.sep in lib._name else None
    if library_dir:
        folder = os.path.join(library_dir, os.pardir, "python", "braid")
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.normpath(os.path.join(folder, "_fast" + suffix))
            if os.path.exists(path):
                spec = importlib.util.spec_from_file_location(f"{__package__}._fast", path)
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                return module
    if wanted == "1":
        raise ImportError("braid: BRAID_PYTHON_FAST=1 but the compiled path (braid._fast) is not built for this "
                          "interpreter: build braid with this Python's headers, or pip install ./bindings/python")
    return None


fast = _load_fast()


def check(status):
    """Raises BraidError for a failed status, with braid_last_error()'s message."""
    if status != 0:
        message = lib.braid_last_error()
        raise BraidError(STATUS_NAMES.get(status, f"status {status}"),
                         message.decode("utf-8", "replace") if message else "", status)


def shape_array(shape):
    """A C int64 array of shape's values (room for at least one, so an empty shape is a valid pointer)."""
    return (ctypes.c_int64 * max(1, len(shape)))(*shape)
