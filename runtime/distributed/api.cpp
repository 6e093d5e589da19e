// The C ABI of process groups (abi/braid.h, "processes and hosts").
#include <atomic>
#include <cstring>
#include <memory>

#include "braid.h"
#include "context/context.h"
#include "core/error.h"
#include "core/handle_pool.h"
#include "core/in_struct.h"
#include "core/out_struct.h"
#include "distributed/kvstore_server.h"
#include "distributed/process_group.h"
#include "parallel/cross_process.h"
#include "tensor/tensor.h"

using namespace braid;
using namespace braid::distributed;

// The application's handle: its own references only. What else uses the group (queued calls) holds
// the ProcessGroup itself, so a release beyond the application's references is refused, never a
// teardown under something that still uses it.
struct braid_process_group_t {
  std::atomic<int32_t> refs{1};
  std::shared_ptr<ProcessGroup> group;
};

namespace {

using GroupPool = HandlePool<braid_process_group_t>;

ProcessGroup& checked_group(braid_process_group pg) {
  return *GroupPool::instance().checked(pg, "pg", "process group").group;
}

// A process group as the Trainer sees it (parallel/cross_process.h): holds the group, so a trainer
// keeps using it after the application released its handle.
class GroupForTrainer final : public parallel::CrossProcess {
 public:
  explicit GroupForTrainer(std::shared_ptr<ProcessGroup> g) : g_(std::move(g)) {}
  void allreduce_sum(Tensor& t) override { g_->allreduce(t, BRAID_COLLECTIVE_SUM); }
  void broadcast(Tensor& t, int32_t root) override { g_->broadcast(t, root); }
  const ::braid_context_t* context() const override { return &g_->context(); }

 private:
  std::shared_ptr<ProcessGroup> g_;
};

}  // namespace

BRAID_API braid_status braid_process_group_create(braid_context ctx, const braid_process_group_options* options,
                                                  braid_process_group* out) {
  return guard("braid_process_group_create", [&] {
    require(out, "out");
    *out = nullptr;
    const ContextRef c_use = use_context(ctx, "ctx");
    Context& c = *c_use;
    check_fork(c);
    const braid_process_group_options defaults = BRAID_PROCESS_GROUP_OPTIONS_INIT;
    const braid_process_group_options o = read_in_struct(options, defaults, "options");
    auto group = std::make_shared<ProcessGroup>(c, resolve_settings(&o));
    GroupPool::Owned handle = GroupPool::instance().make();
    handle->group = std::move(group);
    *out = GroupPool::instance().publish(std::move(handle));
  });
}

BRAID_API braid_status braid_process_group_retain(braid_process_group pg) {
  return guard("braid_process_group_retain", [&] {
    (void)checked_group(pg);
    pg->refs.fetch_add(1);
  });
}

BRAID_API braid_status braid_process_group_release(braid_process_group pg) {
  return guard("braid_process_group_release", [&] {
    (void)checked_group(pg);
    if (pg->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) (void)GroupPool::instance().retire(pg);
  });
}

BRAID_API braid_status braid_process_group_get_info(braid_process_group pg, braid_process_group_info* out) {
  return guard("braid_process_group_get_info", [&] {
    check_out(out, "out");
    const GroupSettings& s = checked_group(pg).settings();
    braid_process_group_info info{};
    info.struct_size = sizeof info;
    info.rank = s.rank;
    info.world_size = s.world_size;
    info.local_rank = s.local_rank;
    info.local_size = s.local_size;
    info.timeout_seconds = static_cast<double>(s.timeout.count()) / 1000.0;
    std::strncpy(info.backend, s.backend.c_str(), sizeof info.backend - 1);
    copy_out(out, info, "out");
  });
}

BRAID_API braid_status braid_process_group_allreduce(braid_process_group pg, braid_tensor t, braid_collective_op op) {
  return guard("braid_process_group_allreduce", [&] { checked_group(pg).allreduce(checked_tensor(t, "t"), op); });
}

BRAID_API braid_status braid_process_group_broadcast(braid_process_group pg, braid_tensor t, int32_t root) {
  return guard("braid_process_group_broadcast", [&] { checked_group(pg).broadcast(checked_tensor(t, "t"), root); });
}

BRAID_API braid_status braid_process_group_reduce(braid_process_group pg, braid_tensor t, int32_t root,
                                                  braid_collective_op op) {
  return guard("braid_process_group_reduce", [&] { checked_group(pg).reduce(checked_tensor(t, "t"), root, op); });
}

BRAID_API braid_status braid_process_group_all_gather(braid_process_group pg, braid_tensor in, braid_tensor out) {
  return guard("braid_process_group_all_gather",
               [&] { checked_group(pg).all_gather(checked_tensor(in, "in"), checked_tensor(out, "out")); });
}

BRAID_API braid_status braid_process_group_reduce_scatter(braid_process_group pg, braid_tensor in, braid_tensor out,
                                                          braid_collective_op op) {
  return guard("braid_process_group_reduce_scatter",
               [&] { checked_group(pg).reduce_scatter(checked_tensor(in, "in"), checked_tensor(out, "out"), op); });
}

BRAID_API braid_status braid_process_group_barrier(braid_process_group pg) {
  return guard("braid_process_group_barrier", [&] { checked_group(pg).barrier(); });
}

BRAID_API braid_status braid_process_group_send(braid_process_group pg, braid_tensor t, int32_t peer, int32_t tag) {
  return guard("braid_process_group_send", [&] { checked_group(pg).send(checked_tensor(t, "t"), peer, tag); });
}

BRAID_API braid_status braid_process_group_recv(braid_process_group pg, braid_tensor t, int32_t peer, int32_t tag) {
  return guard("braid_process_group_recv", [&] { checked_group(pg).recv(checked_tensor(t, "t"), peer, tag); });
}

BRAID_API braid_status braid_process_group_rejoin_pending(braid_process_group pg, int32_t* pending) {
  return guard("braid_process_group_rejoin_pending", [&] {
    require(pending, "pending");
    *pending = 0;
    *pending = checked_group(pg).rejoin_pending() ? 1 : 0;
  });
}

BRAID_API braid_status braid_trainer_set_process_group(braid_trainer tr, braid_process_group pg) {
  return guard("braid_trainer_set_process_group", [&] {
    std::shared_ptr<parallel::CrossProcess> cross;
    if (pg) cross = std::make_shared<GroupForTrainer>(GroupPool::instance().checked(pg, "pg", "process group").group);
    parallel::trainer_set_cross_process(tr, std::move(cross));
  });
}

BRAID_API braid_status braid_kvstore_run_server(braid_context ctx) {
  return guard("braid_kvstore_run_server", [&] {
    const ContextRef c = use_context(ctx, "ctx");
    run_kvstore_server(*c);
  });
}
