// A process group: the ranks of a job joined through the rendezvous store and a communication plugin,
// and the collectives across them (docs/DISTRIBUTED.md). Each call is an engine op on the group's own
// host queue: it runs when the ops that write its inputs have ended, on every device, and later ops
// that use its outputs wait for it; so it overlaps with compute like the in-process collectives do.
//
// Every call of a group runs on that one queue, in the order the process made them, and every rank
// must make the same calls in the same order (as with MPI, NCCL or Gloo). A fingerprint of each call
// (its number, op, dtype, element count, root, reduction) guards that: hashed into the call's key where
// the plugin can key calls (calls that differ never meet, so they time out instead of mixing data), or
// exchanged before the call; ranks that disagree fail with an error naming both sides. A call that
// fails (a peer died, a timeout, a mismatch) fails the group: every later call fails at once with the
// same message, and the group's connections are closed so that the other ranks fail at once too.
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "braid.h"
#include "context/context.h"
#include "engine/host_queue.h"
#include "plugin/comm.h"
#include "tensor/tensor.h"

namespace braid::distributed {

class StoreServer;
class StoreClient;

struct GroupSettings {
  int32_t rank = 0;
  int32_t world_size = 1;
  int32_t local_rank = 0;
  int32_t local_size = 1;
  std::string master_addr = "127.0.0.1";
  int32_t master_port = 29500;
  std::string backend = "gloo";
  std::chrono::milliseconds timeout{300000};
  // How the ranks' calls are checked against each other (docs/DISTRIBUTED.md, "The fingerprint"):
  // not at all; by a key in each call where the plugin can key calls (a mismatch is named at the
  // timeout), else by an exchange; by an exchange before each call (named at once).
  enum class Check { kNone, kKeyed, kEachCall };
  Check check = Check::kKeyed;
  int32_t restart = 0;      // braid-run's restart count: keys of a restarted job never meet the old ones'
  std::string rejoin_file;  // braid-run --rejoin: exists while lost ranks are ready to come back
};

// A host-visible device of the context, where tensors of other devices are staged (NULL if none).
Device* staging_device(Context& ctx);

// The device a group of a plugin for device memory (NCCL: CUDA) runs on: of the context's devices of
// that backend, number local_rank modulo their count (one GPU per process of a host, as NCCL needs).
// Throws BRAID_ERR_UNSUPPORTED naming what is missing.
Device& group_device(Context& ctx, const std::string& backend, int32_t local_rank);

// The settings from the options (NULL fields and zeros: the launcher's variables, then defaults).
GroupSettings resolve_settings(const braid_process_group_options* options);

class ProcessGroup {
 public:
  // Joins the group: blocks until every rank has joined, or fails (BRAID_ERR_TIMEOUT) after the
  // timeout naming what it waited for.
  ProcessGroup(Context& ctx, GroupSettings settings);
  // Waits for the group's queued calls, then leaves.
  ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  const GroupSettings& settings() const noexcept { return s_; }
  Context& context() noexcept { return ctx_; }

  // In place over the ranks: t becomes the reduction of every rank's t. AVG divides the sum.
  void allreduce(Tensor& t, braid_collective_op op);
  // Every rank's t becomes root's.
  void broadcast(Tensor& t, int32_t root);
  // root's t becomes the reduction; the others' t are left as they were.
  void reduce(Tensor& t, int32_t root, braid_collective_op op);
  // out (world_size x in's elements) = every rank's in, in rank order.
  void all_gather(Tensor& in, Tensor& out);
  // out (in's elements / world_size) = this rank's part of the reduction of every rank's in.
  void reduce_scatter(Tensor& in, Tensor& out, braid_collective_op op);
  // Returns once every rank has reached it and this rank's earlier calls have ended (their errors
  // are returned here too).
  void barrier();
  // Point to point (not checked by fingerprint: only the two ranks take part); tag pairs them.
  void send(Tensor& t, int32_t peer, int32_t tag);
  void recv(Tensor& t, int32_t peer, int32_t tag);
  // Whether braid-run has lost ranks ready to rejoin (rank 0 looks, every rank gets its answer through
  // the store, so all agree). Every rank must call it at the same point; a rank that does not comes to
  // the others as a timeout naming rank 0's answer as missing.
  bool rejoin_pending();

  struct Call;  // one call as the queue runs it (process_group.cpp)

 private:
  void push(const char* name, Call call, Tensor* in, Tensor* out);
  void point_to_point(braid_comm_op op, Tensor& t, int32_t peer, int32_t tag);
  braid_status run(Call& call, std::string& message);
  braid_status fail_group(const Call& call, braid_status status, const std::string& why, std::string& message);
  // Who is to blame for a failed call: dead ranks, ranks that left, ranks that made another call
  // (*mismatch set), or ranks that did not fail with it.
  std::string culprits(const Call& call, bool* mismatch);
  void check_reduction(const Tensor& t, braid_collective_op op, const char* what) const;
  std::byte* address(const Tensor& t, const char* what) const;

  Context& ctx_;
  ContextRef ctx_ref_;
  GroupSettings s_;
  std::string prefix_;  // this group's keys in the store
  std::shared_ptr<CommPlugin> plugin_;
  std::shared_ptr<StoreServer> server_;  // rank 0 only
  std::unique_ptr<StoreClient> store_;
  braid_comm_group comm_ = nullptr;  // after the constructor, used only on the queue's thread
  // Plugins for device memory (NCCL): the one device whose tensors the group takes, and its backend's
  // device-pointer extension. NULL for plugins of host memory (Gloo), which stage other devices.
  Device* device_ = nullptr;
  void* (*device_pointer_)(braid_backend_buffer) = nullptr;
  bool keyed_ = false;  // collectives carry their fingerprint's key (the plugin can key calls)
  std::unique_ptr<HostQueue> queue_;
  std::mutex push_mu_;  // numbers calls in the order they reach the queue
  uint64_t next_seq_ = 0;
  uint64_t rejoin_checks_ = 0;  // rejoin_pending() calls, numbering their keys
  // The group's failure (queue thread only): every call after it fails with it.
  braid_status failed_ = BRAID_OK;
  std::string failure_;
};

}  // namespace braid::distributed
