#include "device.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <new>
#include <string>

#include "blas_library.h"
#include "kernels/kernels.h"
#include "queue.h"

namespace braid::cpu {
namespace {

// OpenBLAS keeps its own pthread pool beside TBB's workers, and its idle threads spin (sched_yield)
// for a long while after each call: with both pools on the same cores, each stole the cores from the
// other (LeNet's second conv ran at a third of its gemm speed). So OpenBLAS runs single-threaded and
// kernels split a gemm over the arena themselves (kernels/blas.h: parallel_gemm). The setting is
// process-wide and the same for every device, so it is only changed when it differs.
void single_threaded_openblas() {
  if (blas().get_num_threads() != 1) blas().set_num_threads(1);
}

// Stable across runs and machines: FNV-1a over "braid-cpu:<index>", widened to 128 bits by two
// splitmix64 finalisers (so neighbouring indices differ in every byte), stamped as an RFC 4122
// name-based UUID (version 5 bits, variant 10).
void make_uuid(int index, uint8_t out[16]) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : "braid-cpu:" + std::to_string(index)) h = (h ^ c) * 0x100000001b3ULL;
  auto mix = [](uint64_t z) {
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  uint64_t hi = mix(h);
  uint64_t lo = mix(hi);
  for (int i = 0; i < 8; ++i) {
    out[i] = static_cast<uint8_t>(hi >> (56 - 8 * i));
    out[8 + i] = static_cast<uint8_t>(lo >> (56 - 8 * i));
  }
  out[6] = static_cast<uint8_t>((out[6] & 0x0f) | 0x50);
  out[8] = static_cast<uint8_t>((out[8] & 0x3f) | 0x80);
}

}  // namespace

braid_backend_device_props device_props(const DeviceShare& share) {
  const Machine& m = machine();
  braid_backend_device_props p{};
  p.struct_size = sizeof p;
  std::string name = m.model_name;
  if (share.count > 1) name += " (share " + std::to_string(share.index) + "/" + std::to_string(share.count) + ")";
  std::snprintf(p.name, sizeof p.name, "%s", name.c_str());
  p.kind = BRAID_DEVICE_CPU;
  make_uuid(share.index, p.uuid);
  p.memory_bytes = share.memory_bytes;
  p.compute_units = share.cores;
  p.compute_queues = 1;
  p.transfer_queues = 1;
  p.l1_cache_bytes = m.l1d_bytes;
  p.l2_cache_bytes = m.l2_bytes;
  p.l3_cache_bytes = m.l3_bytes;
  // float16/bfloat16 are storage types (copy/cast only), so they are not compute dtypes.
  for (braid_dtype t : {BRAID_FLOAT32, BRAID_FLOAT64, BRAID_INT32, BRAID_INT64, BRAID_UINT8}) p.dtype_mask |= 1u << t;
  p.host_visible = 1;
  return p;
}

}  // namespace braid::cpu

// One slot is reserved for an external thread: the queue thread that enters the arena to run a kernel
// takes part in the work, so `cores` threads in all (it plus cores-1 TBB workers) share the device.
braid_backend_device_t::braid_backend_device_t(const braid::cpu::DeviceShare& share)
    : share_(share), tbb_handle_(tbb::attach{}), arena_(share.cores, 1), exec_(arena_) {
  arena_.initialize();  // create the arena now, not inside the first kernel's timing
  pinner_ = std::make_unique<braid::cpu::CorePinner>(arena_, share.cpus);
  braid::cpu::single_threaded_openblas();
}

braid_backend_device_t::~braid_backend_device_t() {
  std::vector<std::unique_ptr<braid_backend_queue_t>> leftover;
  {
    std::lock_guard lock(mu_);
    leftover.swap(queues_);
  }
  leftover.clear();  // each queue drains and joins
  pinner_.reset();   // stop observing before the arena goes
  arena_.terminate();
  // TBB's workers outlive arenas. If the host later dlcloses the plugin, libtbb may be unloaded under
  // them, so the last device to close waits for them to exit. With other devices (or other TBB users in
  // the process) still alive finalize declines at once, which is fine: they keep libtbb loaded.
  (void)tbb::finalize(tbb_handle_, std::nothrow);
}

braid_backend_queue_t* braid_backend_device_t::create_queue(braid_queue_kind kind) {
  std::lock_guard lock(mu_);
  // "braid-cpu3-c1": device 3, compute queue #1 ("t" for transfer); pthread names stop at 15 characters.
  char name[16];
  std::snprintf(name, sizeof name, "braid-cpu%d-%c%d", share_.index, kind == BRAID_QUEUE_TRANSFER ? 't' : 'c',
                queues_created_ % 100);
  queues_.reserve(queues_.size() + 1);  // so push_back cannot throw after the thread started
  queues_.push_back(std::make_unique<braid_backend_queue_t>(*this, kind, name));
  ++queues_created_;
  return queues_.back().get();
}

bool braid_backend_device_t::destroy_queue(braid_backend_queue_t* queue) {
  std::unique_ptr<braid_backend_queue_t> owned;
  {
    std::lock_guard lock(mu_);
    auto it = std::find_if(queues_.begin(), queues_.end(), [&](const auto& q) { return q.get() == queue; });
    if (it == queues_.end()) return false;
    owned = std::move(*it);
    queues_.erase(it);
  }
  owned.reset();  // drain and join outside the lock: other queues of the device stay usable meanwhile
  return true;
}

bool braid_backend_device_t::is_queue_thread() const {
  std::lock_guard lock(mu_);
  return std::any_of(queues_.begin(), queues_.end(), [](const auto& q) { return q->on_own_thread(); });
}
