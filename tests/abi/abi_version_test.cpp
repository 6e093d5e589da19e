// ABI tests: the version, status and dtype names of braid.h, and every BRAID_API function of braid.h
// listed and exported by libbraid.so.

#include <cctype>
#include <fstream>
#include <set>
#include <sstream>

#include "abi_common.h"

using namespace abi_test;

// ================================================================================================
TEST_SUITE("version and names") {

TEST_CASE("braid_version reports the header's ABI version") {
  CHECK(braid_version() == ((uint32_t{BRAID_ABI_MAJOR} << 16) | BRAID_ABI_MINOR));
  CHECK((braid_version() >> 16) == BRAID_ABI_MAJOR);
  CHECK((braid_version() & 0xffffu) == BRAID_ABI_MINOR);
}

TEST_CASE("braid_version_string names the library and ABI versions of the header") {
  const std::string want = std::to_string(BRAID_VERSION_MAJOR) + "." + std::to_string(BRAID_VERSION_MINOR) + "." +
                           std::to_string(BRAID_VERSION_PATCH) + " (ABI " + std::to_string(BRAID_ABI_MAJOR) + "." +
                           std::to_string(BRAID_ABI_MINOR) + ")";
  REQUIRE(braid_version_string() != nullptr);
  CHECK(std::string(braid_version_string()) == want);
  CHECK(braid_version_string() == braid_version_string());  // static storage, not rebuilt per call
  // The build takes its version (project(), SOVERSION, braidConfigVersion.cmake, braid.pc) from braid.h.
  const std::string header_version = want.substr(0, want.find(' '));
  CHECK(header_version == BRAID_TEST_PROJECT_VERSION);
}

TEST_CASE("braid_status_name names every status and never returns NULL") {
  const std::pair<braid_status, const char*> names[] = {
      {BRAID_OK, "BRAID_OK"},
      {BRAID_ERR_INVALID_ARGUMENT, "BRAID_ERR_INVALID_ARGUMENT"},
      {BRAID_ERR_SHAPE, "BRAID_ERR_SHAPE"},
      {BRAID_ERR_DTYPE, "BRAID_ERR_DTYPE"},
      {BRAID_ERR_DEVICE, "BRAID_ERR_DEVICE"},
      {BRAID_ERR_OUT_OF_MEMORY, "BRAID_ERR_OUT_OF_MEMORY"},
      {BRAID_ERR_UNSUPPORTED, "BRAID_ERR_UNSUPPORTED"},
      {BRAID_ERR_NOT_FOUND, "BRAID_ERR_NOT_FOUND"},
      {BRAID_ERR_ABI_MISMATCH, "BRAID_ERR_ABI_MISMATCH"},
      {BRAID_ERR_INVALID_STATE, "BRAID_ERR_INVALID_STATE"},
      {BRAID_ERR_KERNEL, "BRAID_ERR_KERNEL"},
      {BRAID_ERR_IO, "BRAID_ERR_IO"},
      {BRAID_ERR_TIMEOUT, "BRAID_ERR_TIMEOUT"},
      {BRAID_ERR_INTERNAL, "BRAID_ERR_INTERNAL"},
  };
  std::set<std::string> seen;
  for (auto& [status, name] : names) {
    const char* got = braid_status_name(status);
    REQUIRE(got != nullptr);
    CHECK(std::string(got) == name);
    seen.insert(got);
  }
  CHECK(seen.size() == std::size(names));
  for (int bad : {-1, 14, 99, 0x7fffffff}) {
    const char* got = braid_status_name(static_cast<braid_status>(bad));
    REQUIRE(got != nullptr);
    CHECK(std::string(got) == "BRAID_ERR_UNKNOWN");
  }
}

TEST_CASE("braid_dtype_name and braid_dtype_size cover every dtype") {
  struct Expect {
    braid_dtype dtype;
    const char* name;
    size_t size;
  };
  const Expect all[] = {
      {BRAID_FLOAT32, "float32", 4},   {BRAID_FLOAT64, "float64", 8}, {BRAID_INT32, "int32", 4},
      {BRAID_INT64, "int64", 8},       {BRAID_UINT8, "uint8", 1},     {BRAID_FLOAT16, "float16", 2},
      {BRAID_BFLOAT16, "bfloat16", 2}, {BRAID_BOOL, "bool", 1},
  };
  static_assert(std::size(all) == BRAID_DTYPE_COUNT, "a dtype was added: extend this test");
  for (auto& e : all) {
    const std::string name = e.name;
    CAPTURE(name);
    REQUIRE(braid_dtype_name(e.dtype) != nullptr);
    CHECK(std::string(braid_dtype_name(e.dtype)) == e.name);
    CHECK(braid_dtype_size(e.dtype) == e.size);
  }
  for (int bad : {-1, static_cast<int>(BRAID_DTYPE_COUNT), 100, 0x7fffffff}) {
    CAPTURE(bad);
    REQUIRE(braid_dtype_name(static_cast<braid_dtype>(bad)) != nullptr);
    CHECK(std::string(braid_dtype_name(static_cast<braid_dtype>(bad))) == "invalid");
    CHECK(braid_dtype_size(static_cast<braid_dtype>(bad)) == 0);
  }
}

}  // TEST_SUITE("version and names")

// ================================================================================================
TEST_SUITE("symbols") {

// Every function declared in braid.h (grep BRAID_API). The header is parsed below as well, so a
// function added to braid.h but not to this list fails the test.
const char* const kApiFunctions[] = {
    "braid_version",
    "braid_last_error",
    "braid_status_name",
    "braid_dtype_name",
    "braid_dtype_size",
    "braid_context_create",
    "braid_context_retain",
    "braid_context_release",
    "braid_context_backend_count",
    "braid_context_backend_info",
    "braid_context_device_count",
    "braid_context_find_device",
    "braid_context_device_info",
    "braid_wait_all",
    "braid_context_set_seed",
    "braid_memory_stats_get",
    "braid_memory_empty_cache",
    "braid_memory_reset_peak",
    "braid_profiler_start",
    "braid_profiler_stop",
    "braid_tensor_empty",
    "braid_tensor_from_host",
    "braid_tensor_retain",
    "braid_tensor_release",
    "braid_tensor_ndim",
    "braid_tensor_shape",
    "braid_tensor_dtype",
    "braid_tensor_device",
    "braid_tensor_numel",
    "braid_tensor_wait_to_read",
    "braid_tensor_to_host",
    "braid_tensor_write_host",
    "braid_full",
    "braid_arange",
    "braid_random_uniform",
    "braid_random_normal",
    "braid_unary",
    "braid_binary",
    "braid_binary_scalar",
    "braid_reduce",
    "braid_argmax",
    "braid_matmul",
    "braid_reshape",
    "braid_slice",
    "braid_transpose",
    "braid_concat",
    "braid_copy",
    "braid_cast",
    "braid_copy_into",
    "braid_conv2d",
    "braid_pool2d",
    "braid_batch_norm",
    "braid_softmax",
    "braid_softmax_cross_entropy",
    "braid_dropout",
    "braid_sgd_update",
    "braid_sgd_momentum_update",
    "braid_adam_update",
    // data (ABI 1.1)
    "braid_dataset_open",
    "braid_dataset_retain",
    "braid_dataset_release",
    "braid_dataset_size",
    "braid_dataset_image_shape",
    "braid_batch_iterator_create",
    "braid_batch_iterator_retain",
    "braid_batch_iterator_release",
    "braid_batch_iterator_next",
    "braid_batch_iterator_batches",
    // autograd
    "braid_autograd_set_recording",
    "braid_autograd_is_recording",
    "braid_tensor_attach_grad",
    "braid_tensor_grad",
    "braid_backward",
    "braid_conv2d_backward_data",
    "braid_conv2d_backward_weight",
    "braid_pool2d_backward",
    "braid_batch_norm_backward",
    "braid_softmax_cross_entropy_backward",
    // parallel (ABI 1.2)
    "braid_split_sizes",
    "braid_split_and_load",
    "braid_replicate",
    "braid_allreduce",
    "braid_reduce_to",
    "braid_broadcast",
    "braid_all_gather",
    "braid_reduce_scatter",
    "braid_kvstore_create",
    "braid_kvstore_retain",
    "braid_kvstore_release",
    "braid_kvstore_type",
    "braid_kvstore_init",
    "braid_kvstore_push",
    "braid_kvstore_pull",
    "braid_kvstore_pushpull",
    "braid_kvstore_set_optimizer",
    "braid_trainer_create",
    "braid_trainer_retain",
    "braid_trainer_release",
    "braid_trainer_step",
    "braid_trainer_allreduce_grads",
    "braid_trainer_update",
    "braid_trainer_set_learning_rate",
    "braid_trainer_learning_rate",
    // library version (ABI 1.3)
    "braid_version_string",
    // what a device reaches, checkpoints (ABI 1.4)
    "braid_device_measure",
    "braid_save_safetensors",
    "braid_safetensors_names",
    "braid_load_safetensors",
    // graph mode (ABI 1.5)
    "braid_graph_trace_begin",
    "braid_graph_trace_end",
    "braid_graph_trace_abort",
    "braid_graph_retain",
    "braid_graph_release",
    "braid_graph_optimize",
    "braid_graph_run",
    "braid_graph_get_info",
    "braid_graph_get_node",
    "braid_graph_save",
    "braid_graph_load",
    "braid_hybrid_create",
    "braid_hybrid_retain",
    "braid_hybrid_release",
    "braid_hybrid_call",
    "braid_hybrid_graph",
    "braid_graph_get_input",
    "braid_graph_get_output",
    // log (ABI 1.5)
    "braid_set_log_callback",
    "braid_log_level_name",
    // ABI 1.7
    "braid_where",
    // processes and hosts (ABI 1.8)
    "braid_process_group_create",
    "braid_process_group_retain",
    "braid_process_group_release",
    "braid_process_group_get_info",
    "braid_process_group_allreduce",
    "braid_process_group_broadcast",
    "braid_process_group_reduce",
    "braid_process_group_all_gather",
    "braid_process_group_reduce_scatter",
    "braid_process_group_barrier",
    "braid_process_group_send",
    "braid_process_group_recv",
    "braid_trainer_set_process_group",
    // KVStore across processes (ABI 1.9)
    "braid_kvstore_get_info",
    "braid_kvstore_barrier",
    "braid_kvstore_run_server",
    "braid_trainer_save_states",
    "braid_trainer_load_states",
    // elastic jobs (ABI 1.10)
    "braid_process_group_rejoin_pending",
    // consistent names (ABI 1.11)
    "braid_context_get_backend_info",
    "braid_context_get_device_info",
    "braid_memory_get_stats",
    "braid_empty",
    "braid_safetensors_save",
    "braid_safetensors_load",
    // indexing, host memory shared (ABI 1.12)
    "braid_take",
    "braid_tensor_host_data",
    // bool results (ABI 1.13)
    "braid_compare",
    "braid_compare_scalar",
    "braid_view",
    "braid_tensor_from_dlpack",
    "braid_autocast_set",
    "braid_autocast_get",
};

TEST_CASE("the symbol list covers every BRAID_API function of braid.h") {
  std::ifstream in(BRAID_TEST_BRAID_H);
  REQUIRE_MESSAGE(in.good(), "cannot read " << str(BRAID_TEST_BRAID_H));
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string header = ss.str();
  // "BRAID_API <return type> <name>(": the identifier right before the first '(' after the macro
  // (the macro's own #define lines are followed by __declspec/__attribute__ and skipped).
  std::set<std::string> declared;
  auto is_ident = [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'; };
  for (size_t at = header.find("BRAID_API "); at != std::string::npos; at = header.find("BRAID_API ", at + 1)) {
    const size_t paren = header.find('(', at);
    if (paren == std::string::npos) break;
    size_t end = paren;
    while (end > at && std::isspace(static_cast<unsigned char>(header[end - 1]))) --end;
    size_t begin = end;
    while (begin > at && is_ident(header[begin - 1])) --begin;
    const std::string name = header.substr(begin, end - begin);
    if (name.rfind("braid_", 0) == 0) declared.insert(name);
  }
  const std::set<std::string> listed(std::begin(kApiFunctions), std::end(kApiFunctions));
  CHECK(listed.size() == std::size(kApiFunctions));  // no duplicates
  for (auto& f : declared) CHECK_MESSAGE(listed.count(f) == 1, f << " is declared in braid.h but not listed here");
  for (auto& f : listed) CHECK_MESSAGE(declared.count(f) == 1, f << " is listed here but not declared in braid.h");
  CHECK(declared.size() == 58 + 10 + 10 + 25 + 1 + 4 + 20 + 1 + 13 + 5 + 1 + 6 + 2 + 6);  // ABI 1.1 (+10: data,
  // +10: autograd), 1.2 (+25: parallel), 1.3 (+1), 1.4 (+4), 1.5 (+18: graph, +2: log), 1.7 (+1: where), 1.8
  // (+13: processes), 1.9 (+3: KVStore across processes, +2: trainer states), 1.10 (+1: rejoining), 1.11 (+6:
  // consistent names), 1.12 (+2: take, host_data), 1.13 (+6: compare, compare_scalar, view, tensor_from_dlpack,
  // autocast_set/get)
}

TEST_CASE("libbraid.so exports every function of braid.h") {
  void* lib = dlopen(BRAID_TEST_LIBBRAID, RTLD_NOW | RTLD_LOCAL);
  REQUIRE_MESSAGE(lib != nullptr, "dlopen " << str(BRAID_TEST_LIBBRAID) << ": " << str(dlerror()));
  for (const char* fn : kApiFunctions) {
    const std::string function = fn;
    CAPTURE(function);
    dlerror();
    void* sym = dlsym(lib, fn);
    CHECK_MESSAGE(sym != nullptr, str(fn) << " missing from " << str(BRAID_TEST_LIBBRAID) << ": " << str(dlerror()));
  }
  // The consistent names of ABI 1.11 are the very functions they stand beside.
  const std::pair<const char*, const char*> same[] = {
      {"braid_context_get_backend_info", "braid_context_backend_info"},
      {"braid_context_get_device_info", "braid_context_device_info"},
      {"braid_memory_get_stats", "braid_memory_stats_get"},
      {"braid_empty", "braid_tensor_empty"},
      {"braid_safetensors_save", "braid_save_safetensors"},
      {"braid_safetensors_load", "braid_load_safetensors"},
  };
  for (const auto& [name, older] : same) {
    CAPTURE(name);
    CHECK(dlsym(lib, name) == dlsym(lib, older));
  }
  // The library this test is linked against is that same file.
  CHECK(dlsym(lib, "braid_version") == reinterpret_cast<void*>(&braid_version));
  dlclose(lib);
}

}  // TEST_SUITE("symbols")
