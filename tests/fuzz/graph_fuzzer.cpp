// libFuzzer over the graph reader (braid_graph_load), as an application reaches it: the input becomes
// the graph's JSON file; its parameters are those of a fixed graph traced at start-up (a LeNet-like
// training step: convolution, pooling, matmul, softmax cross-entropy, their backward kernels, SGD),
// whose JSON is the seed (tests/fuzz/corpus/graph/; BRAID_FUZZ_WRITE_SEED=FILE writes it again). A
// malformed file must give an error with a message, never a crash or a hang; a file that loads must
// run (on zero inputs) without a crash or a sanitizer report: the reader checks everything a kernel
// trusts.
#include <braid.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {
braid_context g_ctx = nullptr;
std::string g_json, g_params;

void ok(braid_status s) {
  if (s != BRAID_OK) {
    std::fprintf(stderr, "graph_fuzzer setup: %s\n", braid_last_error());
    std::abort();
  }
}

braid_tensor tensor(std::vector<int64_t> shape, double scale) {
  braid_tensor t = nullptr;
  ok(braid_random_uniform(g_ctx, 0, BRAID_FLOAT32, static_cast<int32_t>(shape.size()), shape.data(), -scale, scale,
                          &t));
  return t;
}

// Traces one SGD step of a small convolutional net and saves it: the seed and the parameters.
void make_seed(const std::string& json, const std::string& params) {
  braid_tensor w1 = tensor({4, 1, 3, 3}, 0.3), b1 = tensor({4}, 0.1), w2 = tensor({16, 5}, 0.3), b2 = tensor({5}, 0.1);
  braid_tensor ps[] = {w1, b1, w2, b2};
  for (braid_tensor p : ps) ok(braid_tensor_attach_grad(p, BRAID_GRAD_WRITE));
  braid_tensor x = tensor({2, 1, 6, 6}, 1.0), y = nullptr;
  const int32_t labels[] = {1, 3};
  const int64_t two = 2;
  ok(braid_tensor_from_host(g_ctx, 0, BRAID_INT32, 1, &two, labels, sizeof labels, &y));
  braid_tensor ins[] = {x, y};
  ok(braid_graph_trace_begin(g_ctx, 2, ins));
  ok(braid_autograd_set_recording(g_ctx, 1, nullptr));
  braid_conv2d_params cp = BRAID_CONV2D_PARAMS_INIT;
  braid_pool2d_params pp = BRAID_POOL2D_PARAMS_INIT;
  braid_tensor c = nullptr, r = nullptr, p = nullptr, f = nullptr, m = nullptr, z = nullptr, l = nullptr,
               loss = nullptr;
  ok(braid_conv2d(x, w1, b1, &cp, &c));
  ok(braid_unary(BRAID_UNARY_RELU, c, &r));
  ok(braid_pool2d(r, &pp, &p));
  const int64_t flat[] = {2, 16};
  ok(braid_reshape(p, 2, flat, &f));
  ok(braid_matmul(f, w2, 0, 0, &m));
  ok(braid_binary(BRAID_BINARY_ADD, m, b2, &z));
  ok(braid_softmax_cross_entropy(z, y, &l));
  ok(braid_reduce(BRAID_REDUCE_MEAN, l, 0, nullptr, 0, &loss));
  ok(braid_autograd_set_recording(g_ctx, 0, nullptr));
  ok(braid_backward(1, &loss, nullptr, 0));
  for (braid_tensor q : ps) {
    braid_tensor g = nullptr;
    ok(braid_tensor_grad(q, &g));
    ok(braid_sgd_update(q, g, 0.1, 0.0));
    ok(braid_tensor_release(g));
  }
  braid_graph graph = nullptr;
  ok(braid_graph_trace_end(g_ctx, 1, &loss, &graph));
  ok(braid_graph_save(graph, json.c_str(), params.c_str()));
  ok(braid_graph_release(graph));
  braid_tensor all[] = {c, r, p, f, m, z, l, loss, x, y, w1, b1, w2, b2};
  for (braid_tensor t : all) ok(braid_tensor_release(t));
}

// Zero-filled inputs of the loaded graph's signature, if they are small.
bool make_inputs(braid_graph g, int32_t n, std::vector<braid_tensor>& ins) {
  for (int32_t i = 0; i < n; ++i) {
    braid_graph_tensor_info info{};
    info.struct_size = sizeof info;
    if (braid_graph_get_input(g, i, &info) != BRAID_OK) std::abort();
    int64_t numel = 1;
    for (int32_t d = 0; d < info.ndim; ++d) numel *= info.shape[d];
    if (numel > (int64_t{1} << 20)) return false;
    braid_tensor t = nullptr;
    if (braid_full(g_ctx, 0, info.dtype, info.ndim, info.shape, 0.0, &t) != BRAID_OK) return false;
    ins.push_back(t);
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  char tmpl[] = "/tmp/braid-fuzz-graph-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) std::abort();
  g_json = std::string(tmpl) + "/g.json";
  g_params = std::string(tmpl) + "/g.safetensors";
  braid_context_options o = BRAID_CONTEXT_OPTIONS_INIT;
  o.backends = "cpu";
  ok(braid_context_create(&o, &g_ctx));
  make_seed(g_json, g_params);
  // The seed itself loads (the fuzzer's starting point is a valid file, not an early refusal).
  braid_graph g = nullptr;
  ok(braid_graph_load(g_ctx, 0, g_json.c_str(), g_params.c_str(), &g));
  ok(braid_graph_release(g));
  if (const char* seed = std::getenv("BRAID_FUZZ_WRITE_SEED")) {
    FILE* in = std::fopen(g_json.c_str(), "rb");
    FILE* out = std::fopen(seed, "wb");
    if (!in || !out) std::abort();
    for (int ch; (ch = std::fgetc(in)) != EOF;) std::fputc(ch, out);
    std::fclose(in);
    std::fclose(out);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FILE* f = std::fopen(g_json.c_str(), "wb");
  if (f == nullptr) std::abort();
  if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
  braid_graph g = nullptr;
  if (braid_graph_load(g_ctx, 0, g_json.c_str(), g_params.c_str(), &g) != BRAID_OK) {
    if (braid_last_error()[0] == '\0' || g != nullptr) std::abort();  // an error always says why
    return 0;
  }
  braid_graph_info info{};
  info.struct_size = sizeof info;
  if (braid_graph_get_info(g, &info) != BRAID_OK) std::abort();
  uint64_t out_bytes = 0;
  for (int32_t i = 0; i < info.num_outputs; ++i) {
    braid_graph_tensor_info o{};
    o.struct_size = sizeof o;
    if (braid_graph_get_output(g, i, &o) != BRAID_OK) std::abort();
    uint64_t n = 8;
    for (int32_t d = 0; d < o.ndim; ++d)
      n = o.shape[d] > 0 && n > (uint64_t{1} << 40) / uint64_t(o.shape[d]) ? uint64_t{1} << 40
                                                                           : n * uint64_t(o.shape[d]);
    out_bytes += n;
  }
  std::vector<braid_tensor> ins;
  // Runs only graphs whose memory stays small (a file may declare values of any size).
  if (info.intermediate_bytes <= (uint64_t{64} << 20) && out_bytes <= (uint64_t{64} << 20) &&
      make_inputs(g, info.num_inputs, ins)) {
    std::vector<braid_tensor> outs(static_cast<size_t>(info.num_outputs), nullptr);
    if (braid_graph_run(g, info.num_inputs, ins.data(), info.num_outputs, outs.data()) == BRAID_OK) {
      (void)braid_wait_all(g_ctx);  // kernel errors (a label out of range) are fine; crashes are not
      for (braid_tensor t : outs) braid_tensor_release(t);
    }
  }
  (void)braid_wait_all(g_ctx);
  for (braid_tensor t : ins) braid_tensor_release(t);
  if (braid_graph_release(g) != BRAID_OK) std::abort();
  return 0;
}
