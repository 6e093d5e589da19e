// What the workers and servers of a KVStore job ("dist_sync", "dist_device_sync", "dist_async") share:
// who is who (read from the launcher's variables), how a key's elements are spread over the servers,
// and the messages between a worker and a server, which travel over a communication group of two
// (the plugin's point to point, never a socket of braid's own). docs/DISTRIBUTED.md, "KVStore across
// processes", describes the protocol.
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "braid.h"
#include "plugin/comm.h"

namespace braid::distributed {

class StoreClient;

enum class Role { kWorker, kServer, kScheduler };

struct KVJob {
  Role role = Role::kWorker;
  int32_t rank = 0;  // a worker's or a server's own rank; -1: the store hands one out (MXNet's variables)
  int32_t num_workers = 1;
  int32_t num_servers = 0;
  std::string address = "127.0.0.1";  // where the job's rendezvous store is served
  int32_t port = 0;
  bool scheduler_serves = false;  // MXNet's variables: a scheduler process serves the store (else worker 0)
  std::string backend = "gloo";
  std::chrono::milliseconds timeout{300000};
  int32_t restart = 0;
  uint64_t bigarray_bound = 1000000;  // keys of at least this many elements are split over the servers
};

// The job as this process's variables describe it (BRAID_ROLE / DMLC_ROLE and the rest,
// docs/DISTRIBUTED.md "Variables"). A bad value throws BRAID_ERR_INVALID_ARGUMENT naming it.
KVJob read_kv_job();
// The store id a participant says hello with (the store names dead ones by it): workers by rank,
// servers after them.
int32_t store_id(const KVJob& job, Role role, int32_t rank);
// "worker 1", "server 0", from a store id.
std::string participant_name(const KVJob& job, int32_t id);

// One server's share of a key.
struct Part {
  int32_t server;
  uint64_t offset;  // elements
  uint64_t count;
};
// A key of fewer than bound elements lives whole on server key mod S; a larger one is split evenly
// over every server (MXNet's bigarray bound).
std::vector<Part> partition(int64_t key, uint64_t count, const KVJob& job);

enum class Kind : uint32_t { kInit = 1, kPush, kPull, kSetOptimizer, kBarrier, kBye, kReply };
const char* kind_name(Kind k);

// A request, or its reply. The payload (bytes long) follows as a second message; a failed reply's
// payload is the error's text.
struct Message {
  uint32_t magic = kMagic;
  Kind kind = Kind::kReply;
  int64_t key = 0;
  uint64_t offset = 0;  // the part's first element in the key
  uint64_t count = 0;   // the part's elements
  uint64_t total = 0;   // the key's elements
  int32_t dtype = 0;
  int32_t status = BRAID_OK;                      // replies
  uint64_t bytes = 0;                             // payload
  uint64_t seq = 0;                               // the worker's request number, echoed in the reply
  static constexpr uint32_t kMagic = 0x3173766b;  // "kvs1"
};
static_assert(sizeof(Message) == 64);

// One worker's connection to one server: a communication group of two joined through the job's
// store (rank 0 the server, rank 1 the worker). Not thread-safe: one thread uses it at a time.
class Channel {
 public:
  Channel(std::shared_ptr<CommPlugin> plugin, StoreClient& store, const std::string& prefix, int32_t rank,
          const std::string& address, std::chrono::milliseconds timeout);
  ~Channel();
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;

  // Throws BRAID_ERR_IO / BRAID_ERR_TIMEOUT with the plugin's message after `what`.
  void send(const Message& m, const void* payload, const std::string& what);
  Message receive(std::chrono::milliseconds timeout, const std::string& what);
  void receive_payload(void* into, uint64_t bytes, std::chrono::milliseconds timeout, const std::string& what);

 private:
  void run(braid_comm_op op, void* data, uint64_t bytes, uint64_t tag, std::chrono::milliseconds timeout,
           const std::string& what);
  std::shared_ptr<CommPlugin> plugin_;
  int32_t peer_;  // the other end: 0 for the worker, 1 for the server
  braid_comm_group group_ = nullptr;
};

}  // namespace braid::distributed
