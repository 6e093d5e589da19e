// The rendezvous store: a small key-value service that rank 0 serves over TCP, through which the ranks
// of a job find each other (the communication plugin's addresses) and report failures. It carries
// start-up and failure traffic only, never tensors (those go through the communication plugin), so a
// request per connection at a time and one server thread are plenty (docs/DISTRIBUTED.md, "Rendezvous").
//
// The store doubles as the job's liveness signal: each client says which rank it is when it connects
// and goodbye when it closes, so the server knows a rank whose connection closed without a goodbye
// died, and a rank whose collective failed can name it.
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "braid_comm.h"

namespace braid::distributed {

class StoreServer {
 public:
  // Listens on every address at `port` (0: a free port, see port()). Throws BRAID_ERR_IO when the port
  // cannot be bound (in use: another job, or a second group of this process on the same port).
  explicit StoreServer(int port);
  ~StoreServer();
  StoreServer(const StoreServer&) = delete;
  StoreServer& operator=(const StoreServer&) = delete;
  int port() const noexcept { return port_; }

 private:
  struct State;
  int port_ = 0;
  std::unique_ptr<State> state_;
};

class StoreClient {
 public:
  // Connects to host:port as `rank`, retrying until `timeout` passes (the server's rank may start
  // later): BRAID_ERR_TIMEOUT naming the address then.
  StoreClient(const std::string& host, int port, int32_t rank, std::chrono::milliseconds timeout);
  // Says goodbye, so the server does not count this rank as dead.
  ~StoreClient();
  StoreClient(const StoreClient&) = delete;
  StoreClient& operator=(const StoreClient&) = delete;

  void set(const std::string& key, const void* value, uint64_t size);
  // The key's value once some rank has set it, or nullopt after `timeout`.
  std::optional<std::string> get(const std::string& key, std::chrono::milliseconds timeout);
  // Adds delta to the key's integer value (0 when unset) and returns the sum.
  int64_t add(const std::string& key, int64_t delta);
  // The ranks whose store connection closed without a goodbye: processes that died.
  std::vector<int32_t> dead_ranks();

 private:
  // Sends one request and returns its reply, prefixed by one byte: 1 when found, 0 when a get timed out.
  std::string request(uint8_t command, const std::string& key, const std::string& value,
                      std::chrono::milliseconds wait = std::chrono::milliseconds(0));
  std::mutex mu_;  // one request at a time on the connection
  int fd_ = -1;
  std::string where_;  // "host:port", for messages
};

// The store as a communication plugin sees it (braid_comm.h): client's set and get.
braid_comm_store comm_store(StoreClient& client);

}  // namespace braid::distributed
