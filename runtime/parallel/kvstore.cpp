// KVStore (abi/braid.h): MXNet's key-value store over braid's collectives (docs/PARALLEL.md), and
// the worker's side of the "dist" types, whose keys live in server processes (parallel/remote_store.h,
// docs/DISTRIBUTED.md).
#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <string_view>

#include "context/context.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/handle_pool.h"
#include "core/out_struct.h"
#include "ops/copy.h"
#include "ops/op_builder.h"
#include "parallel/collectives.h"
#include "parallel/optimizer.h"
#include "parallel/remote_store.h"
#include "tensor/tensor.h"

using namespace braid;
using namespace braid::parallel;

struct braid_kvstore_t {
  std::atomic<int32_t> refs{1};
  braid_context ctx = nullptr;  // one reference, dropped with the store
  bool device_mode = false;     // "device", "dist_device_sync": values are summed on their own devices
  const char* type = "local";   // static
  // The "dist" types: the servers that hold the keys. The local entries then keep each key's shape,
  // dtype and device, and the value last pulled.
  std::unique_ptr<RemoteStore> remote;

  struct Entry {
    TensorRef value;
    OptimizerState state;
  };
  std::mutex mu;  // entries and the optimizer
  std::map<int64_t, Entry> entries;
  std::optional<braid_optimizer_params> optimizer;

  ~braid_kvstore_t() {
    remote.reset();  // tells the servers this worker is done
    entries.clear();
    if (ctx) (void)release_context(ctx);  // its own reference, not the application's
  }
};

namespace braid::parallel {
namespace {
std::atomic<RemoteStoreMaker> g_remote_store_maker{nullptr};
}
void set_remote_store_maker(RemoteStoreMaker maker) noexcept { g_remote_store_maker.store(maker); }
RemoteStoreMaker remote_store_maker() noexcept { return g_remote_store_maker.load(); }
}  // namespace braid::parallel

namespace {

// MXNet's names, and what each means here.
struct StoreType {
  std::string_view name;
  bool device_mode;
  bool dist;
};
constexpr StoreType kStoreTypes[] = {{"local", false, false},          {"device", true, false},
                                     {"dist_sync", false, true},       {"dist_device_sync", true, true},
                                     {"dist_sync_device", true, true},  // MXNet's other spelling
                                     {"dist_async", false, true}};

using KVStorePool = HandlePool<braid_kvstore_t>;

braid_kvstore_t& checked_store(braid_kvstore kv) { return KVStorePool::instance().checked(kv, "kv", "KVStore"); }

braid_kvstore_t::Entry& keyed_entry(braid_kvstore_t& kv, int64_t key, const char* name) {
  auto it = kv.entries.find(key);
  if (it == kv.entries.end())
    fail(BRAID_ERR_INVALID_ARGUMENT, name, ": key ", key, " was not initialised (braid_kvstore_init)");
  return it->second;
}

// The values of one push or pull: live tensors of the store's context with the stored shape and dtype.
std::vector<Tensor*> checked_values(braid_kvstore_t& kv, const Tensor& stored, int32_t count,
                                    const braid_tensor* values, const char* name, const char* param) {
  if (count <= 0) fail(BRAID_ERR_INVALID_ARGUMENT, name, ": count must be positive, not ", count);
  require(values, param);
  std::vector<Tensor*> ts;
  for (int32_t i = 0; i < count; ++i) {
    Tensor& t = checked_tensor(values[i], cat(param, "[", i, "]").c_str());
    if (t.ctx != kv.ctx) fail(BRAID_ERR_INVALID_ARGUMENT, name, ": ", param, "[", i, "] belongs to another context");
    if (t.dtype != stored.dtype || !(t.shape == stored.shape))  // a dtype first, as the collectives report it
      fail(t.dtype != stored.dtype ? BRAID_ERR_DTYPE : BRAID_ERR_SHAPE, name, ": ", param, "[", i, "] is ",
           dtype_name(t.dtype), " ", t.shape.str(), ", the key holds ", dtype_name(stored.dtype), " ",
           stored.shape.str());
    ts.push_back(&t);
  }
  return ts;
}

// The sum of the pushed values, on the stored value's device.
TensorRef merged(braid_kvstore_t& kv, Tensor& stored, const std::vector<Tensor*>& values) {
  Context& ctx = *kv.ctx;
  const int64_t n = stored.shape.numel();
  const Reduction sum = make_reduction(BRAID_COLLECTIVE_SUM, stored.dtype, "kvstore_push");
  std::vector<TensorRef> own;  // what the reduction may write (the values are the caller's)
  std::vector<Tensor*> group;
  if (kv.device_mode) {
    // Summed where the values are (a tree onto the first value's device); only a copy of the first is
    // written.
    Tensor& first = *values[0];
    own.push_back(new_tensor(ctx, first.device(), first.dtype, first.shape));
    push_range_copy("kvstore_push", first, 0, *own.back(), 0, n);
    group.push_back(own.back().get());
    for (size_t i = 1; i < values.size(); ++i) group.push_back(values[i]);
  } else {
    for (Tensor* v : values) {
      own.push_back(new_tensor(ctx, stored.device(), stored.dtype, stored.shape));
      push_range_copy("kvstore_push", *v, 0, *own.back(), 0, n);
      group.push_back(own.back().get());
    }
  }
  reduce(group, 0, sum);
  TensorRef result = std::move(own[0]);
  if (&result->device() != &stored.device()) {
    TensorRef moved = new_tensor(ctx, stored.device(), stored.dtype, stored.shape);
    push_range_copy("kvstore_push", *result, 0, *moved, 0, n);
    result = std::move(moved);
  }
  return result;
}

// push and pull with kv.mu held by the caller.
void push_locked(braid_kvstore_t& kv, int64_t key, int32_t count, const braid_tensor* values) {
  braid_kvstore_t::Entry& e = keyed_entry(kv, key, "kvstore_push");
  Tensor& stored = *e.value;
  const std::vector<Tensor*> vs = checked_values(kv, stored, count, values, "kvstore_push", "values");
  if (kv.optimizer && !dtype_is_float(stored.dtype))
    fail(BRAID_ERR_DTYPE, "kvstore_push: key ", key, " holds ", dtype_name(stored.dtype),
         " values; the optimizer updates float32 or float64 ones (set no optimizer to store the sum)");
  TensorRef sum = merged(kv, stored, vs);
  if (kv.remote)
    kv.remote->push(key, *sum);
  else if (kv.optimizer)
    apply_update(*kv.optimizer, stored, *sum, e.state, kv.optimizer->rescale_grad);
  else
    push_range_copy("kvstore_push", *sum, 0, stored, 0, stored.shape.numel());
}

void pull_locked(braid_kvstore_t& kv, int64_t key, int32_t count, const braid_tensor* outs) {
  braid_kvstore_t::Entry& e = keyed_entry(kv, key, "kvstore_pull");
  Tensor& stored = *e.value;
  const std::vector<Tensor*> os = checked_values(kv, stored, count, outs, "kvstore_pull", "outs");
  if (kv.remote) kv.remote->pull(key, stored);
  for (Tensor* o : os)
    if (o->storage != stored.storage) push_range_copy("kvstore_pull", stored, 0, *o, 0, stored.shape.numel());
}

}  // namespace

extern "C" {

BRAID_API braid_status braid_kvstore_create(braid_context ctx, const char* type, braid_kvstore* out) {
  return guard("braid_kvstore_create", [&] {
    require(out, "out");
    *out = nullptr;
    const ContextRef ctx_use = use_context(ctx, "ctx");
    const std::string_view t = type ? type : "local";
    const StoreType* found = nullptr;
    for (const StoreType& k : kStoreTypes)
      if (k.name == t) found = &k;
    if (!found)
      fail(BRAID_ERR_INVALID_ARGUMENT, "kvstore_create: type '", t,
           "' is not \"local\", \"device\", \"dist_sync\", \"dist_device_sync\" or \"dist_async\"");
    KVStorePool::Owned kv = KVStorePool::instance().make();
    kv->device_mode = found->device_mode;
    kv->type = found->name == "dist_sync_device" ? "dist_device_sync" : found->name.data();
    if (found->dist) {
      const RemoteStoreMaker make = remote_store_maker();
      if (!make) fail(BRAID_ERR_UNSUPPORTED, "kvstore_create: this libbraid was built without runtime/distributed");
      kv->remote = make(*ctx_use, kv->type);
    }
    ctx->refs.fetch_add(1);  // as a tensor holds it: the application's release count is its own
    kv->ctx = ctx;
    *out = KVStorePool::instance().publish(std::move(kv));
  });
}

BRAID_API braid_status braid_kvstore_retain(braid_kvstore kv) {
  return guard("braid_kvstore_retain", [&] { checked_store(kv).refs.fetch_add(1); });
}

BRAID_API braid_status braid_kvstore_release(braid_kvstore kv) {
  return guard("braid_kvstore_release", [&] {
    if (checked_store(kv).refs.fetch_sub(1, std::memory_order_acq_rel) == 1) (void)KVStorePool::instance().retire(kv);
  });
}

BRAID_API braid_status braid_kvstore_type(braid_kvstore kv, const char** out) {
  return guard("braid_kvstore_type", [&] {
    require(out, "out");
    *out = checked_store(kv).type;
  });
}

BRAID_API braid_status braid_kvstore_init(braid_kvstore kv, int64_t key, braid_tensor value) {
  return guard("braid_kvstore_init", [&] {
    braid_kvstore_t& k = checked_store(kv);
    Tensor& v = checked_tensor(value, "value");
    if (v.ctx != k.ctx) fail(BRAID_ERR_INVALID_ARGUMENT, "kvstore_init: value belongs to another context");
    std::lock_guard lock(k.mu);
    if (k.entries.count(key)) fail(BRAID_ERR_INVALID_ARGUMENT, "kvstore_init: key ", key, " is already initialised");
    braid_kvstore_t::Entry e;
    e.value = new_tensor(*k.ctx, v.device(), v.dtype, v.shape);
    push_range_copy("kvstore_init", v, 0, *e.value, 0, v.shape.numel());
    if (k.remote) k.remote->init(key, *e.value);  // nothing is stored if the servers refuse it
    k.entries.emplace(key, std::move(e));
  });
}

BRAID_API braid_status braid_kvstore_push(braid_kvstore kv, int64_t key, int32_t count, const braid_tensor* values) {
  return guard("braid_kvstore_push", [&] {
    braid_kvstore_t& k = checked_store(kv);
    std::lock_guard lock(k.mu);
    push_locked(k, key, count, values);
  });
}

BRAID_API braid_status braid_kvstore_pull(braid_kvstore kv, int64_t key, int32_t count, const braid_tensor* outs) {
  return guard("braid_kvstore_pull", [&] {
    braid_kvstore_t& k = checked_store(kv);
    std::lock_guard lock(k.mu);
    pull_locked(k, key, count, outs);
  });
}

BRAID_API braid_status braid_kvstore_pushpull(braid_kvstore kv, int64_t key, int32_t count, const braid_tensor* values,
                                              const braid_tensor* outs) {
  return guard("braid_kvstore_pushpull", [&] {
    braid_kvstore_t& k = checked_store(kv);
    // One unit, as MXNet's pushpull: no other thread's push lands between this push and its pull,
    // and outs are checked before anything is pushed.
    std::lock_guard lock(k.mu);
    checked_values(k, *keyed_entry(k, key, "kvstore_pushpull").value, count, outs, "kvstore_pushpull", "outs");
    push_locked(k, key, count, values);
    pull_locked(k, key, count, outs);
  });
}

BRAID_API braid_status braid_kvstore_set_optimizer(braid_kvstore kv, const braid_optimizer_params* params) {
  return guard("braid_kvstore_set_optimizer", [&] {
    braid_kvstore_t& k = checked_store(kv);
    std::optional<braid_optimizer_params> p;
    if (params) {
      p = checked_optimizer(params, "params");
      check_step(*p, p->rescale_grad, "kvstore_set_optimizer");  // every push scales by rescale_grad
    }
    std::lock_guard lock(k.mu);
    if (k.remote) k.remote->set_optimizer(p ? &*p : nullptr);  // the servers keep the state
    // Another kind of optimizer starts from fresh state, as a new MXNet updater or PyTorch optimizer
    // does (Adam after SGD took SGD's step count); new hyperparameters of the same kind (a learning
    // rate schedule) keep it.
    if (!p || !k.optimizer || p->kind != k.optimizer->kind)
      for (auto& [key, e] : k.entries) e.state = OptimizerState{};
    k.optimizer = p;
  });
}

BRAID_API braid_status braid_kvstore_get_info(braid_kvstore kv, braid_kvstore_info* out) {
  return guard("braid_kvstore_get_info", [&] {
    check_out(out, "out");
    braid_kvstore_t& k = checked_store(kv);
    braid_kvstore_info info = k.remote ? k.remote->info() : braid_kvstore_info{sizeof info, 0, 1, 0};
    info.struct_size = sizeof info;
    copy_out(out, info, "out");
  });
}

BRAID_API braid_status braid_kvstore_barrier(braid_kvstore kv) {
  return guard("braid_kvstore_barrier", [&] {
    braid_kvstore_t& k = checked_store(kv);
    std::lock_guard lock(k.mu);
    if (k.remote) k.remote->barrier();
  });
}

}  // extern "C"
