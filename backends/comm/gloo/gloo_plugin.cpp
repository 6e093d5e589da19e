// libbraid-comm-gloo.so: braid's communication plugin over Gloo (Debian's libgloo-dev, TCP transport)
// for tensors in host memory. It sees abi/ and Gloo, nothing of libbraid (abi/braid_comm.h).
//
// What Debian's Gloo build (0.5.0, 2022) has and lacks, and what this plugin does about it
// (docs/DISTRIBUTED.md, "Gloo"):
//  - no TCP store: the rendezvous goes through the host's store (braid_comm_store), wrapped here as a
//    gloo::rendezvous::Store;
//  - no reduce-scatter in its options API: REDUCE_SCATTER is an allreduce into a scratch buffer of which
//    each rank keeps its part (twice a ring reduce-scatter's traffic; correct for any rank count);
//  - a call that times out or loses a peer throws and leaves its pairs in an unknown state: the call
//    returns the error, and the host destroys the group, which closes every connection so that the
//    peers' calls fail at once instead of at their own timeouts;
//  - its TCP pairs write with writev, which raises SIGPIPE on a connection a dead peer reset: that
//    would kill a surviving rank. SIGPIPE is blocked on the threads that write (SigpipeBlocked).
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/reduce.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "braid_comm.h"
#include "plugin_common.h"

struct braid_comm_group_t {
  std::shared_ptr<gloo::transport::Device> device;
  std::shared_ptr<gloo::rendezvous::Context> context;
  std::chrono::milliseconds timeout{0};
  uint32_t next_tag = 0;  // every collective gets its own tag: Gloo matches messages by (peer, tag)
};

namespace {

using namespace braid::comm_plugin;

// Blocks SIGPIPE on this thread for a scope, so that a write to a connection a dead peer reset fails
// with EPIPE (which Gloo reports as an IoException) instead of killing the process. Threads started
// inside the scope keep it blocked (Gloo's loop thread, made by CreateDevice in group_create). On the
// way out a SIGPIPE raised meanwhile is taken off the thread first: unblocking would deliver it.
class SigpipeBlocked {
 public:
  SigpipeBlocked() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_, &before_);
  }
  ~SigpipeBlocked() {
    if (sigismember(&before_, SIGPIPE)) return;  // the thread had it blocked already: leave it so
    sigset_t pending;
    if (sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE)) {
      const timespec now{0, 0};
      while (sigtimedwait(&pipe_, nullptr, &now) == SIGPIPE) {}
    }
    pthread_sigmask(SIG_SETMASK, &before_, nullptr);
  }
  SigpipeBlocked(const SigpipeBlocked&) = delete;
  SigpipeBlocked& operator=(const SigpipeBlocked&) = delete;

 private:
  sigset_t pipe_{}, before_{};
};

// Gloo's rendezvous over the host's store (Debian's Gloo has no TCP store of its own). A failure is
// thrown as gloo::IoException, which is what Gloo's own stores throw and what connectFullMesh passes on.
class HostStore final : public gloo::rendezvous::Store {
 public:
  HostStore(const braid_comm_store& store, std::string prefix, uint64_t timeout_ms)
      : store_(store), prefix_(std::move(prefix)), timeout_ms_(timeout_ms) {}

  void set(const std::string& key, const std::vector<char>& data) override {
    const std::string k = prefix_ + key;
    if (store_.set(store_.user, k.c_str(), data.data(), data.size()) != BRAID_OK)
      throw gloo::IoException("rendezvous store: cannot set '" + k + "'");
  }
  std::vector<char> get(const std::string& key) override {
    const std::string k = prefix_ + key;
    std::vector<char> value(256);
    uint64_t size = 0;
    for (;;) {
      braid_status st = store_.get(store_.user, k.c_str(), value.data(), value.size(), &size, timeout_ms_);
      if (st == BRAID_ERR_TIMEOUT)
        throw gloo::IoException("rendezvous store: no rank set '" + k + "' within " + std::to_string(timeout_ms_) +
                                " ms (a rank did not start or join)");
      if (st != BRAID_OK) throw gloo::IoException("rendezvous store: cannot get '" + k + "'");
      if (size <= value.size()) break;
      value.resize(size);
    }
    value.resize(size);
    return value;
  }
  void wait(const std::vector<std::string>& keys) override { wait(keys, std::chrono::milliseconds(timeout_ms_)); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds&) override {
    for (const auto& key : keys) (void)get(key);  // each get waits up to the group's timeout
  }

 private:
  const braid_comm_store& store_;
  std::string prefix_;
  uint64_t timeout_ms_;
};

template <typename T>
gloo::AllreduceOptions::Func reduce_fn(braid_collective_op op) {
  switch (op) {
    case BRAID_COLLECTIVE_SUM:
      return [](void* c, const void* a, const void* b, size_t n) {
        auto* o = static_cast<T*>(c);
        auto* x = static_cast<const T*>(a);
        auto* y = static_cast<const T*>(b);
        for (size_t i = 0; i < n; ++i) o[i] = static_cast<T>(x[i] + y[i]);
      };
    case BRAID_COLLECTIVE_PROD:
      return [](void* c, const void* a, const void* b, size_t n) {
        auto* o = static_cast<T*>(c);
        auto* x = static_cast<const T*>(a);
        auto* y = static_cast<const T*>(b);
        for (size_t i = 0; i < n; ++i) o[i] = static_cast<T>(x[i] * y[i]);
      };
    // NaN wins, as in braid's own MAX/MIN kernels and torch.maximum (x != x is true only for NaN).
    case BRAID_COLLECTIVE_MAX:
      return [](void* c, const void* a, const void* b, size_t n) {
        auto* o = static_cast<T*>(c);
        auto* x = static_cast<const T*>(a);
        auto* y = static_cast<const T*>(b);
        for (size_t i = 0; i < n; ++i) o[i] = (x[i] != x[i] || x[i] >= y[i]) ? x[i] : y[i];
      };
    case BRAID_COLLECTIVE_MIN:
      return [](void* c, const void* a, const void* b, size_t n) {
        auto* o = static_cast<T*>(c);
        auto* x = static_cast<const T*>(a);
        auto* y = static_cast<const T*>(b);
        for (size_t i = 0; i < n; ++i) o[i] = (x[i] != x[i] || x[i] <= y[i]) ? x[i] : y[i];
      };
    default: return nullptr;
  }
}

gloo::AllreduceOptions::Func reduce_fn(braid_dtype dtype, braid_collective_op op) {
  switch (dtype) {
    case BRAID_FLOAT32: return reduce_fn<float>(op);
    case BRAID_FLOAT64: return reduce_fn<double>(op);
    case BRAID_INT32: return reduce_fn<int32_t>(op);
    case BRAID_INT64: return reduce_fn<int64_t>(op);
    case BRAID_UINT8: return reduce_fn<uint8_t>(op);
    default: return nullptr;  // float16/bfloat16 are storage types in braid: moved, not reduced
  }
}

int32_t gloo_supports(braid_comm_op op, braid_dtype dtype, braid_collective_op reduce) {
  if (static_cast<uint32_t>(op) >= BRAID_COMM_OP_COUNT) return 0;
  if (op == BRAID_COMM_BARRIER) return 1;
  if (dtype_bytes(dtype) == 0) return 0;
  return !reduces(op) || reduce_fn(dtype, reduce) != nullptr ? 1 : 0;
}

int32_t gloo_available(const char** reason) {
  if (reason) *reason = "";
  return 1;
}

braid_status gloo_group_create(const braid_comm_group_desc* desc, braid_comm_group* out) {
  // A 1.0 host's description ends before `device`, which host memory does not need.
  if (!desc || !out || desc->struct_size < offsetof(braid_comm_group_desc, device) || !desc->store || !desc->prefix)
    return failed(BRAID_ERR_INVALID_ARGUMENT, "group_create: incomplete description");
  if (desc->size < 1 || desc->rank < 0 || desc->rank >= desc->size)
    return failed(BRAID_ERR_INVALID_ARGUMENT, "group_create: rank " + std::to_string(desc->rank) +
                                                  " is outside a group of " + std::to_string(desc->size));
  const SigpipeBlocked no_sigpipe;
  try {
    auto group = std::make_unique<braid_comm_group_t>();
    gloo::transport::tcp::attr attr;
    attr.hostname = desc->address && *desc->address ? desc->address : "";
    if (attr.hostname.empty()) {
      char name[256] = {};
      (void)gethostname(name, sizeof name - 1);
      attr.hostname = name;
    }
    group->device = gloo::transport::tcp::CreateDevice(attr);
    group->timeout = std::chrono::milliseconds(desc->timeout_ms);
    group->context = std::make_shared<gloo::rendezvous::Context>(desc->rank, desc->size);
    group->context->setTimeout(group->timeout);
    HostStore store(*desc->store, desc->prefix, desc->timeout_ms);
    group->context->connectFullMesh(store, group->device);
    *out = group.release();
    return BRAID_OK;
  } catch (const gloo::IoException& e) {
    return failed(BRAID_ERR_TIMEOUT, std::string("joining the group: ") + e.what());
  } catch (const std::exception& e) {
    return failed(BRAID_ERR_IO, std::string("joining the group: ") + e.what());
  }
}

void gloo_group_destroy(braid_comm_group group) {
  // Destroying the context closes its pairs: a peer blocked in a call sees the connection close.
  const SigpipeBlocked no_sigpipe;
  std::unique_ptr<braid_comm_group_t> owned(group);
}

// The typed setters of Gloo's options take T*; the element type only has to have the dtype's size.
template <typename Options>
void set_io(Options& o, const braid_comm_call& c, size_t in_count, size_t out_count) {
  switch (dtype_bytes(c.dtype)) {
    case 8:
      if (c.send) o.setInput(static_cast<int64_t*>(const_cast<void*>(c.send)), in_count);
      if (c.recv) o.setOutput(static_cast<int64_t*>(c.recv), out_count);
      break;
    case 4:
      if (c.send) o.setInput(static_cast<int32_t*>(const_cast<void*>(c.send)), in_count);
      if (c.recv) o.setOutput(static_cast<int32_t*>(c.recv), out_count);
      break;
    case 2:
      if (c.send) o.setInput(static_cast<int16_t*>(const_cast<void*>(c.send)), in_count);
      if (c.recv) o.setOutput(static_cast<int16_t*>(c.recv), out_count);
      break;
    default:
      if (c.send) o.setInput(static_cast<uint8_t*>(const_cast<void*>(c.send)), in_count);
      if (c.recv) o.setOutput(static_cast<uint8_t*>(c.recv), out_count);
      break;
  }
}

void run_allreduce(braid_comm_group g, const braid_comm_call& c, std::chrono::milliseconds timeout, uint32_t tag,
                   void* out, uint64_t count) {
  gloo::AllreduceOptions o(g->context);
  braid_comm_call io = c;
  io.recv = out;
  if (io.send == out) io.send = nullptr;  // in place
  set_io(o, io, count, count);
  o.setReduceFunction(reduce_fn(c.dtype, c.reduce));
  o.setTag(tag);
  o.setTimeout(timeout);
  gloo::allreduce(o);
}

void run_call(braid_comm_group g, const braid_comm_call& c) {
  const auto timeout = c.timeout_ms ? std::chrono::milliseconds(c.timeout_ms) : g->timeout;
  // A keyed call's tag is Gloo's: calls of different keys use different slots and never meet. The
  // others count; both only for collectives (point-to-point calls take the caller's tag below).
  const bool keyed = c.struct_size >= sizeof(braid_comm_call) && (c.flags & BRAID_COMM_CALL_KEYED) != 0;
  const uint32_t tag = keyed ? static_cast<uint32_t>(c.tag) : g->next_tag++;
  const size_t width = dtype_bytes(c.dtype);
  switch (c.op) {
    case BRAID_COMM_ALLREDUCE: run_allreduce(g, c, timeout, tag, c.recv, c.count); return;
    case BRAID_COMM_REDUCE_SCATTER: {
      const size_t n = static_cast<size_t>(g->context->size);
      std::vector<std::byte> scratch(c.count * n * width);
      std::memcpy(scratch.data(), c.send, scratch.size());
      braid_comm_call in_place = c;
      in_place.send = scratch.data();
      run_allreduce(g, in_place, timeout, tag, scratch.data(), c.count * n);
      std::memcpy(c.recv, scratch.data() + static_cast<size_t>(g->context->rank) * c.count * width, c.count * width);
      return;
    }
    case BRAID_COMM_BROADCAST: {
      gloo::BroadcastOptions o(g->context);
      braid_comm_call io = c;
      io.send = nullptr;
      set_io(o, io, c.count, c.count);
      o.setRoot(c.peer);
      o.setTag(tag);
      o.setTimeout(timeout);
      gloo::broadcast(o);
      return;
    }
    case BRAID_COMM_REDUCE: {
      // Gloo may use a non-root's output as scratch; braid leaves the non-roots' tensors as they were.
      std::vector<std::byte> scratch;
      braid_comm_call io = c;
      if (g->context->rank != c.peer) {
        scratch.resize(c.count * width);
        std::memcpy(scratch.data(), c.send, scratch.size());
        io.send = nullptr;
        io.recv = scratch.data();
      }
      gloo::ReduceOptions o(g->context);
      if (io.send == io.recv) io.send = nullptr;
      set_io(o, io, c.count, c.count);
      o.setRoot(c.peer);
      o.setReduceFunction(reduce_fn(c.dtype, c.reduce));
      o.setTag(tag);
      o.setTimeout(timeout);
      gloo::reduce(o);
      return;
    }
    case BRAID_COMM_ALL_GATHER: {
      gloo::AllgatherOptions o(g->context);
      set_io(o, c, c.count, c.count * static_cast<size_t>(g->context->size));
      o.setTag(tag);
      o.setTimeout(timeout);
      gloo::allgather(o);
      return;
    }
    case BRAID_COMM_BARRIER: {
      gloo::BarrierOptions o(g->context);
      o.setTag(tag);
      o.setTimeout(timeout);
      gloo::barrier(o);
      return;
    }
    case BRAID_COMM_SEND: {
      if (!keyed) --g->next_tag;  // point-to-point calls are matched by the caller's tag, not the sequence
      auto buf = g->context->createUnboundBuffer(const_cast<void*>(c.send), c.count * width);
      buf->send(c.peer, c.tag);
      if (!buf->waitSend(timeout)) throw gloo::IoException("send aborted");
      return;
    }
    case BRAID_COMM_RECV: {
      if (!keyed) --g->next_tag;
      auto buf = g->context->createUnboundBuffer(c.recv, c.count * width);
      buf->recv(c.peer, c.tag);
      if (!buf->waitRecv(timeout)) throw gloo::IoException("recv aborted");
      return;
    }
    default: throw gloo::InvalidOperationException("unknown op");
  }
}

braid_status gloo_run(braid_comm_group group, const braid_comm_call* call) {
  // A 1.0 host's call ends before `flags`, whose one bit (host memory) is what Gloo always has.
  if (!group || !call || call->struct_size < offsetof(braid_comm_call, flags))
    return failed(BRAID_ERR_INVALID_ARGUMENT, "run: incomplete call");
  if (!gloo_supports(call->op, call->dtype, call->reduce))
    return failed(BRAID_ERR_UNSUPPORTED, "run: Gloo has no such op, dtype and reduction");
  const bool p2p = call->op == BRAID_COMM_SEND || call->op == BRAID_COMM_RECV;
  const bool rooted = p2p || call->op == BRAID_COMM_BROADCAST || call->op == BRAID_COMM_REDUCE;
  if (rooted && (call->peer < 0 || call->peer >= group->context->size || (p2p && call->peer == group->context->rank)))
    return failed(BRAID_ERR_INVALID_ARGUMENT, "run: rank " + std::to_string(call->peer) + " is not a peer");
  const SigpipeBlocked no_sigpipe;
  try {
    run_call(group, *call);
    return BRAID_OK;
  } catch (const gloo::IoException& e) {
    // Gloo reports a timeout and a closed connection alike; its text tells them apart.
    const std::string what = e.what();
    return failed(what.find("Timed out") != std::string::npos || what.find("timed out") != std::string::npos
                      ? BRAID_ERR_TIMEOUT
                      : BRAID_ERR_IO,
                  what);
  } catch (const std::exception& e) {
    return failed(BRAID_ERR_IO, e.what());
  }
}

const braid_comm_api kApi = {
    sizeof(braid_comm_api),
    BRAID_COMM_ABI_MAJOR,
    BRAID_COMM_ABI_MINOR,
    "gloo",
    BRAID_COMM_MEMORY_HOST,
    &gloo_available,
    &gloo_group_create,
    &gloo_group_destroy,
    &gloo_supports,
    &gloo_run,
    &last_error,
    BRAID_COMM_FEATURE_KEYED_CALLS,
};

}  // namespace

BRAID_COMM_PLUGIN_QUERY(kApi)
