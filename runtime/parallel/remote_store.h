// What a KVStore of a "dist" type needs of the server processes that hold its keys, as an interface:
// runtime/distributed (the layer above) implements it and registers a maker at load time
// (docs/ARCHITECTURE.md, "Layers"), so this layer never includes that one. The calls block until the
// servers have answered (docs/DISTRIBUTED.md, "KVStore across processes").
#pragma once
#include <cstdint>
#include <memory>
#include <string_view>

#include "braid.h"
#include "context/context.h"
#include "tensor/tensor.h"

namespace braid::parallel {

class RemoteStore {
 public:
  virtual ~RemoteStore() = default;
  // Rank 0 sends value (its elements) to the servers; then every worker waits for the others.
  virtual void init(int64_t key, Tensor& value) = 0;
  // Sends this worker's sum for the key.
  virtual void push(int64_t key, Tensor& sum) = 0;
  // Receives the servers' value of the key into `into` (its shape and dtype are the key's).
  virtual void pull(int64_t key, Tensor& into) = 0;
  // Rank 0 sends the optimizer (NULL: none) to every server; then every worker waits for the others.
  virtual void set_optimizer(const braid_optimizer_params* params) = 0;
  virtual void barrier() = 0;
  virtual braid_kvstore_info info() const = 0;
};

// Makes the remote part of a KVStore of `type` ("dist_sync", "dist_device_sync", "dist_async").
using RemoteStoreMaker = std::unique_ptr<RemoteStore> (*)(Context& ctx, std::string_view type);
void set_remote_store_maker(RemoteStoreMaker maker) noexcept;
RemoteStoreMaker remote_store_maker() noexcept;

}  // namespace braid::parallel
