// The C++ wrappers of braid.hpp over graph mode: Graph::trace, Graph, Hybrid (called with braced
// lists, as docs/GRAPH.md and the README show them), save and load; errors as braid::Error.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "braid.hpp"
#include "graph/graph_support.h"

TEST_CASE("braid.hpp: Graph and Hybrid") {
  braid_context_options co = BRAID_CONTEXT_OPTIONS_INIT;
  co.backends = "cpu";
  braid::Context ctx(co);
  const braid::Device d = ctx.find_device("cpu:0");
  const braid::Tensor w = braid::Tensor::random_uniform(ctx, d, BRAID_FLOAT32, {4, 3}, -1, 1);
  const braid::Tensor b = braid::Tensor::random_uniform(ctx, d, BRAID_FLOAT32, {3}, -1, 1);
  auto net = [&](const braid::Tensor& x) { return braid::relu(braid::matmul(x, w) + b); };
  const braid::Tensor x = braid::Tensor::random_uniform(ctx, d, BRAID_FLOAT32, {2, 4}, -1, 1);
  const std::vector<float> want = net(x).to_vector<float>();

  braid::Hybrid h(ctx, 1, 1, [&](std::span<const braid::Tensor> in) { return std::vector<braid::Tensor>{net(in[0])}; });
  CHECK(h({x})[0].to_vector<float>() == want);  // traced
  CHECK(h({x})[0].to_vector<float>() == want);  // the graph
  const braid::Graph g = h.graph({x});
  CHECK(g.info().num_nodes == 3);
  CHECK(std::string(g.node(0).name) == "matmul");
  CHECK(g.input(0).shape[1] == 4);
  CHECK(g.output(0).shape[1] == 3);
  CHECK_THROWS_AS(h.graph({braid::Tensor::zeros(ctx, d, BRAID_FLOAT32, {5, 4})}), braid::Error);

  braid::Graph t = braid::Graph::trace(
      ctx, {x}, [&](std::span<const braid::Tensor> in) { return std::vector<braid::Tensor>{net(in[0])}; });
  t.optimize();
  CHECK(t({x})[0].to_vector<float>() == want);
  gtest::TempDir dir;
  t.save(dir.file("g.json"), dir.file("g.safetensors"));
  const braid::Graph loaded = braid::Graph::load(ctx, d, dir.file("g.json"), dir.file("g.safetensors"));
  CHECK(loaded({x})[0].to_vector<float>() == want);
  try {
    (void)loaded({braid::Tensor::zeros(ctx, d, BRAID_FLOAT32, {3, 4})});
    FAIL("a run with the wrong shape did not throw");
  } catch (const braid::Error& e) {
    CHECK(e.status() == BRAID_ERR_SHAPE);
  }
  // A function that throws while traced ends the trace; the thread can trace again.
  CHECK_THROWS_AS(braid::Graph::trace(ctx, {x},
                                      [&](std::span<const braid::Tensor>) -> std::vector<braid::Tensor> {
                                        throw braid::Error(BRAID_ERR_INVALID_ARGUMENT, "no");
                                      }),
                  braid::Error);
  CHECK(braid::Graph::trace(ctx, {x},
                            [&](std::span<const braid::Tensor> in) { return std::vector<braid::Tensor>{net(in[0])}; })
            .info()
            .num_nodes == 3);
}
