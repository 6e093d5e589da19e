// braid-gloo-allreduce: the anchor of `braid-bench allreduce --ranks N` (tools/braid-bench/
// allreduce_ranks.cpp). One rank of a float32 sum allreduce called on Gloo directly, with the same
// sizes, repeats and timing as braid's side: rank 0 prints one JSON line per size,
// {"bytes": B, "seconds": S} (S = the median time of one allreduce). Started by braid-run, whose
// variables give the rank and size; the ranks meet through a Gloo FileStore in the folder argv[1]
// (Debian's Gloo has no TCP store).
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 3 || !std::getenv("BRAID_RANK") || !std::getenv("BRAID_WORLD_SIZE")) {
    std::fprintf(stderr, "usage: braid-run -n N braid-gloo-allreduce STORE_DIR REPEAT\n");
    return 2;
  }
  const int rank = std::atoi(std::getenv("BRAID_RANK"));
  const int size = std::atoi(std::getenv("BRAID_WORLD_SIZE"));
  const int repeat = std::max(1, std::atoi(argv[2]));
  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  auto device = gloo::transport::tcp::CreateDevice(attr);
  auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
  gloo::rendezvous::FileStore store(argv[1]);
  context->connectFullMesh(store, device);
  uint32_t tag = 0;
  for (uint64_t bytes = 4u << 10; bytes <= (256u << 20); bytes *= 4) {
    std::vector<float> data(bytes / sizeof(float), 1.0f);
    std::vector<double> times;
    for (int i = 0; i < repeat + 1; ++i) {  // the first run is a warm-up
      gloo::BarrierOptions b(context);
      b.setTag(tag++);
      gloo::barrier(b);
      const auto t0 = std::chrono::steady_clock::now();
      gloo::AllreduceOptions o(context);
      o.setOutput(data.data(), data.size());
      o.setReduceFunction([](void* c, const void* a, const void* x, size_t n) {
        auto* out = static_cast<float*>(c);
        auto* p = static_cast<const float*>(a);
        auto* q = static_cast<const float*>(x);
        for (size_t k = 0; k < n; ++k) out[k] = p[k] + q[k];
      });
      o.setTag(tag++);
      gloo::allreduce(o);
      if (i > 0) times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(times.begin(), times.end());
    if (rank == 0)
      std::printf("{\"bytes\": %llu, \"seconds\": %.9g}\n", static_cast<unsigned long long>(bytes),
                  times[times.size() / 2]);
    std::fflush(stdout);
  }
  return 0;
}
