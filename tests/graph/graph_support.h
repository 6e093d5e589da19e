// Helpers for the graph tests: RAII graph handles, random tensors, host copies, a context per backend.
#pragma once
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "braid.h"
#include "runtime/support.h"

namespace gtest {

struct Graph {
  braid_graph g = nullptr;
  Graph() = default;
  Graph(Graph&& o) noexcept : g(o.g) { o.g = nullptr; }
  Graph& operator=(Graph&& o) noexcept {
    std::swap(g, o.g);
    return *this;
  }
  ~Graph() {
    if (g) braid_graph_release(g);
  }
};

// Uniform in [-scale, scale], from the context's generator.
inline test::T random(braid_context ctx, braid_device dev, braid_dtype dtype, std::vector<int64_t> shape,
                      double scale) {
  test::T t;
  BRAID_CHECK_OK(
      braid_random_uniform(ctx, dev, dtype, static_cast<int32_t>(shape.size()), shape.data(), -scale, scale, t.out()));
  return t;
}

inline std::vector<float> host_f32(const test::T& t) {
  int64_t n = 0;
  BRAID_CHECK_OK(braid_tensor_numel(t.t, &n));
  std::vector<float> v(static_cast<size_t>(n));
  BRAID_CHECK_OK(braid_tensor_to_host(t.t, v.data(), v.size() * sizeof(float)));
  return v;
}

inline void check_close(const std::vector<float>& got, const std::vector<float>& want, double tol) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": " << got[i] << " vs " << want[i]);
    if (got[i] == want[i] || (std::isnan(got[i]) && std::isnan(want[i]))) continue;  // infinities too
    CHECK(std::abs(double(got[i]) - double(want[i])) <= tol * (1.0 + std::abs(double(want[i]))));
  }
}

inline int nodes(braid_graph g) {
  braid_graph_info info{};
  info.struct_size = sizeof info;
  BRAID_CHECK_OK(braid_graph_get_info(g, &info));
  return info.num_nodes;
}

inline std::string node_name(braid_graph g, int i) {
  braid_graph_node_info n{};
  n.struct_size = sizeof n;
  BRAID_CHECK_OK(braid_graph_get_node(g, i, &n));
  return n.name;
}

// The backends to check a graph on: cpu, vulkan and cuda, each left out where BRAID_BACKENDS leaves it
// out (ctest runs the suite once per backend: tests/CMakeLists.txt) or reported skipped without a
// device (cuda everywhere but a GPU machine: tools/gpu/first_contact.sh runs it there).
inline std::vector<std::string> backends() { return {"cpu", "vulkan", "cuda"}; }

// A context of one backend, or none (ctx NULL, reported) when it has no device here or BRAID_BACKENDS
// leaves it out (the sanitizer runs load the CPU plugin alone: a GPU driver's own leaks are not
// braid's).
struct BackendCtx {
  braid_context ctx = nullptr;
  explicit BackendCtx(const std::string& backend) {
    if (const char* only = std::getenv("BRAID_BACKENDS"); only && *only) {
      const std::string list = std::string(",") + only + ",";
      if (list.find("," + backend + ",") == std::string::npos) {
        MESSAGE("skipped: BRAID_BACKENDS=" << std::string(only) << " leaves out " << backend);
        return;
      }
    }
    braid_context_options o = BRAID_CONTEXT_OPTIONS_INIT;
    o.backends = backend.c_str();
    int32_t n = 0;
    if (braid_context_create(&o, &ctx) != BRAID_OK || braid_context_device_count(ctx, &n) != BRAID_OK || n == 0) {
      if (backend == "cpu") FAIL("no CPU device: " << braid_last_error());
      MESSAGE("skipped: no " << backend << " device");
      if (ctx) braid_context_release(ctx);
      ctx = nullptr;
    }
  }
  ~BackendCtx() {
    if (ctx) braid_context_release(ctx);
  }
};

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "braid-graph-test-XXXXXX").string();
    REQUIRE(mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

inline std::string read_text(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::trunc);
  f << text;
  REQUIRE(f.good());
}

// The same graph, unoptimised further, through a file (a second handle with its own plan).
inline Graph clone_by_file(braid_context ctx, braid_device dev, braid_graph g) {
  TempDir dir;
  const std::string json = dir.file("g.json"), params = dir.file("g.safetensors");
  BRAID_CHECK_OK(braid_graph_save(g, json.c_str(), params.c_str()));
  Graph out;
  BRAID_CHECK_OK(braid_graph_load(ctx, dev, json.c_str(), params.c_str(), &out.g));
  return out;
}

}  // namespace gtest
