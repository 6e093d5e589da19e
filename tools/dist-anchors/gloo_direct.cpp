#include "gloo_direct.h"

#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>

#include <cstdint>

namespace braid::bench {

struct GlooDirect::State {
  std::shared_ptr<gloo::transport::Device> device;
  std::shared_ptr<gloo::rendezvous::Context> context;
  uint32_t tag = 0;
};

GlooDirect::GlooDirect(const std::string& store_dir, int rank, int size) : s_(std::make_unique<State>()) {
  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  s_->device = gloo::transport::tcp::CreateDevice(attr);
  s_->context = std::make_shared<gloo::rendezvous::Context>(rank, size);
  gloo::rendezvous::FileStore store(store_dir);
  s_->context->connectFullMesh(store, s_->device);
}

GlooDirect::~GlooDirect() = default;

void GlooDirect::barrier() {
  gloo::BarrierOptions o(s_->context);
  o.setTag(s_->tag++);
  gloo::barrier(o);
}

void GlooDirect::allreduce_sum(float* data, size_t count) {
  gloo::AllreduceOptions o(s_->context);
  o.setOutput(data, count);
  o.setReduceFunction([](void* c, const void* a, const void* b, size_t n) {
    auto* out = static_cast<float*>(c);
    auto* x = static_cast<const float*>(a);
    auto* y = static_cast<const float*>(b);
    for (size_t i = 0; i < n; ++i) out[i] = x[i] + y[i];
  });
  o.setTag(s_->tag++);
  gloo::allreduce(o);
}

}  // namespace braid::bench
