#include "distributed/store.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <set>
#include <thread>

#include "core/error.h"

namespace braid::distributed {
namespace {

// The wire: a request is [u8 command][u32 key bytes][u64 value bytes][key][value]; a reply is
// [u8 status][u64 value bytes][value]. Numbers are in the host's byte order: every rank of a job runs
// the same build on the same kind of machine.
enum Command : uint8_t { kHello = 1, kSet = 2, kGet = 3, kAdd = 4, kDead = 5, kBye = 6 };
enum Reply : uint8_t { kOk = 0, kMissing = 1, kBad = 2 };
constexpr size_t kRequestHeader = 1 + 4 + 8;
constexpr size_t kReplyHeader = 1 + 8;
constexpr uint64_t kMaxValue = uint64_t{64} << 20;  // start-up data is small; a larger length is garbage
constexpr uint32_t kMaxKey = 4096;

std::string errno_text() { return std::strerror(errno); }

void close_fd(int& fd) noexcept {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

std::string reply_bytes(Reply status, const std::string& value) {
  std::string r(kReplyHeader, '\0');
  r[0] = static_cast<char>(status);
  const uint64_t n = value.size();
  std::memcpy(r.data() + 1, &n, 8);
  return r + value;
}

// Writes all of data to a blocking socket; false when the peer is gone.
bool write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool read_all(int fd, char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::recv(fd, data, size, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

// ---- server -----------------------------------------------------------------------------------------

struct StoreServer::State {
  int listen_fd = -1;
  int wake_fd = -1;  // eventfd: the destructor wakes the thread with it
  std::thread thread;

  struct Client {
    std::string in;     // bytes received, not yet a whole request
    int32_t rank = -1;  // from its hello
    bool said_bye = false;
  };
  std::map<int, Client> clients;
  struct PendingGet {
    int fd;
    std::string key;
    std::chrono::steady_clock::time_point deadline;
  };
  std::vector<PendingGet> pending;
  std::map<std::string, std::string> values;
  std::set<int32_t> dead;

  void run();
  void serve(int fd, Client& c, uint8_t command, const std::string& key, const std::string& value);
  void drop(int fd);
};

StoreServer::StoreServer(int port) : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.listen_fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s.listen_fd < 0) fail(BRAID_ERR_IO, "rendezvous store: socket: ", errno_text());
  const int one = 1;
  (void)setsockopt(s.listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (::bind(s.listen_fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(s.listen_fd, 256) != 0) {
    const std::string why = errno_text();
    close_fd(s.listen_fd);
    fail(BRAID_ERR_IO, "rendezvous store: rank 0 cannot listen on port ", port, ": ", why,
         " (another job, or another process group of this process, uses it: choose another master port)");
  }
  socklen_t len = sizeof a;
  (void)getsockname(s.listen_fd, reinterpret_cast<sockaddr*>(&a), &len);
  port_ = ntohs(a.sin_port);
  s.wake_fd = ::eventfd(0, EFD_CLOEXEC);
  if (s.wake_fd < 0) {
    close_fd(s.listen_fd);
    fail(BRAID_ERR_IO, "rendezvous store: eventfd: ", errno_text());
  }
  s.thread = std::thread([&s] { s.run(); });
}

StoreServer::~StoreServer() {
  State& s = *state_;
  const uint64_t one = 1;
  (void)!::write(s.wake_fd, &one, sizeof one);
  s.thread.join();
  for (auto& [fd, c] : s.clients) ::close(fd);
  close_fd(s.listen_fd);
  close_fd(s.wake_fd);
}

void StoreServer::State::drop(int fd) {
  auto it = clients.find(fd);
  if (it == clients.end()) return;
  if (it->second.rank >= 0 && !it->second.said_bye) dead.insert(it->second.rank);
  ::close(fd);
  clients.erase(it);
  std::erase_if(pending, [fd](const PendingGet& p) { return p.fd == fd; });
}

void StoreServer::State::serve(int fd, Client& c, uint8_t command, const std::string& key, const std::string& value) {
  auto answer = [&](Reply status, const std::string& v) {
    const std::string r = reply_bytes(status, v);
    (void)write_all(fd, r.data(), r.size());  // a client gone meanwhile is dropped by the poll loop
  };
  switch (command) {
    case kHello: {
      c.rank = static_cast<int32_t>(std::strtol(key.c_str(), nullptr, 10));
      dead.erase(c.rank);  // a rank restarted under the same server is alive again
      answer(kOk, {});
      return;
    }
    case kSet: {
      values[key] = value;
      answer(kOk, {});
      // Answer the gets that waited for this key.
      for (auto it = pending.begin(); it != pending.end();) {
        if (it->key == key) {
          const std::string r = reply_bytes(kOk, value);
          (void)write_all(it->fd, r.data(), r.size());
          it = pending.erase(it);
        } else {
          ++it;
        }
      }
      return;
    }
    case kGet: {
      if (auto it = values.find(key); it != values.end()) {
        answer(kOk, it->second);
        return;
      }
      uint64_t timeout_ms = 0;
      if (value.size() == 8) std::memcpy(&timeout_ms, value.data(), 8);
      pending.push_back({fd, key, std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms)});
      return;
    }
    case kAdd: {
      int64_t delta = 0;
      if (value.size() == 8) std::memcpy(&delta, value.data(), 8);
      int64_t sum = 0;
      if (auto it = values.find(key); it != values.end() && it->second.size() == 8)
        std::memcpy(&sum, it->second.data(), 8);
      sum += delta;
      std::string stored(8, '\0');
      std::memcpy(stored.data(), &sum, 8);
      values[key] = stored;
      answer(kOk, stored);
      return;
    }
    case kDead: {
      std::string list;
      for (int32_t r : dead) list += std::to_string(r) + ",";
      answer(kOk, list);
      return;
    }
    case kBye: {
      c.said_bye = true;
      answer(kOk, {});
      return;
    }
    default: answer(kBad, {});
  }
}

void StoreServer::State::run() {
  std::vector<pollfd> fds;
  for (;;) {
    fds.clear();
    fds.push_back({wake_fd, POLLIN, 0});
    fds.push_back({listen_fd, POLLIN, 0});
    for (auto& [fd, c] : clients) fds.push_back({fd, POLLIN, 0});
    int timeout_ms = -1;
    const auto now = std::chrono::steady_clock::now();
    for (const PendingGet& p : pending) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(p.deadline - now).count() + 1;
      timeout_ms = static_cast<int>(std::clamp<int64_t>(left, 0, timeout_ms < 0 ? INT32_MAX : timeout_ms));
    }
    const int n = ::poll(fds.data(), fds.size(), timeout_ms);
    if (n < 0 && errno != EINTR) return;
    if (fds[0].revents) return;  // the destructor
    // Gets whose time is up are answered "missing".
    const auto after = std::chrono::steady_clock::now();
    for (auto it = pending.begin(); it != pending.end();) {
      if (it->deadline <= after) {
        const std::string r = reply_bytes(kMissing, {});
        (void)write_all(it->fd, r.data(), r.size());
        it = pending.erase(it);
      } else {
        ++it;
      }
    }
    if (n <= 0) continue;
    if (fds[1].revents & POLLIN) {
      const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) {
        const int one = 1;
        (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        clients[fd] = Client{};
      }
    }
    for (size_t i = 2; i < fds.size(); ++i) {
      if (!fds[i].revents) continue;
      const int fd = fds[i].fd;
      auto it = clients.find(fd);
      if (it == clients.end()) continue;
      char buf[65536];
      const ssize_t got = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
      if (got < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      if (got <= 0) {
        drop(fd);
        continue;
      }
      Client& c = it->second;
      c.in.append(buf, static_cast<size_t>(got));
      bool bad = false;
      while (c.in.size() >= kRequestHeader) {
        uint32_t klen = 0;
        uint64_t vlen = 0;
        std::memcpy(&klen, c.in.data() + 1, 4);
        std::memcpy(&vlen, c.in.data() + 5, 8);
        if (klen > kMaxKey || vlen > kMaxValue) {
          bad = true;  // not one of braid's clients: hang up
          break;
        }
        if (c.in.size() < kRequestHeader + klen + vlen) break;
        const uint8_t command = static_cast<uint8_t>(c.in[0]);
        std::string key = c.in.substr(kRequestHeader, klen);
        std::string value = c.in.substr(kRequestHeader + klen, vlen);
        c.in.erase(0, kRequestHeader + klen + vlen);
        serve(fd, c, command, key, value);
      }
      if (bad) drop(fd);
    }
  }
}

// ---- client -----------------------------------------------------------------------------------------

StoreClient::StoreClient(const std::string& host, int port, int32_t rank, std::chrono::milliseconds timeout)
    : where_(cat(host, ":", port)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  std::string last_error;
  for (;;) {
    addrinfo* found = nullptr;
    const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
    if (rc != 0) fail(BRAID_ERR_INVALID_ARGUMENT, "rendezvous store: cannot resolve '", host, "': ", gai_strerror(rc));
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const bool connected = fd_ >= 0 && ::connect(fd_, found->ai_addr, found->ai_addrlen) == 0;
    last_error = errno_text();
    ::freeaddrinfo(found);
    if (connected) break;
    close_fd(fd_);
    if (std::chrono::steady_clock::now() >= deadline)
      fail(BRAID_ERR_TIMEOUT, "rendezvous store: no answer from rank 0 at ", where_, " within ", timeout.count(),
           " ms (", last_error, "): is rank 0 running, and are the master address and port the same on every rank?");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // rank 0 may not be listening yet
  }
  const int one = 1;
  (void)setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  (void)request(kHello, std::to_string(rank), {});
}

StoreClient::~StoreClient() {
  if (fd_ < 0) return;
  try {
    (void)request(kBye, {}, {});
  } catch (...) {  // the server is gone already: nothing to tell
  }
  close_fd(fd_);
}

std::string StoreClient::request(uint8_t command, const std::string& key, const std::string& value,
                                 std::chrono::milliseconds wait) {
  std::lock_guard lock(mu_);
  if (fd_ < 0) fail(BRAID_ERR_IO, "rendezvous store at ", where_, ": the connection was lost earlier");
  // The server answers within `wait` (a get's own timeout) unless its host vanished without closing
  // the connection (a network cut): the socket's own timeout keeps that from hanging this rank.
  const auto limit = wait + std::chrono::seconds(30);
  timeval tv{static_cast<time_t>(limit.count() / 1000), static_cast<suseconds_t>(limit.count() % 1000 * 1000)};
  (void)setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string msg(kRequestHeader, '\0');
  msg[0] = static_cast<char>(command);
  const uint32_t klen = static_cast<uint32_t>(key.size());
  const uint64_t vlen = value.size();
  std::memcpy(msg.data() + 1, &klen, 4);
  std::memcpy(msg.data() + 5, &vlen, 8);
  msg += key;
  msg += value;
  char header[kReplyHeader];
  uint64_t len = 0;
  std::string reply;
  if (write_all(fd_, msg.data(), msg.size()) && read_all(fd_, header, sizeof header)) {
    std::memcpy(&len, header + 1, 8);
    reply.resize(len);
    if (len <= kMaxValue && read_all(fd_, reply.data(), len)) {
      if (header[0] == kMissing) return std::string(1, '\0') + "missing";  // see get()
      if (header[0] != kOk) fail(BRAID_ERR_INTERNAL, "rendezvous store at ", where_, ": request refused");
      return std::string(1, '\1') + reply;
    }
  }
  close_fd(fd_);
  fail(BRAID_ERR_IO, "rendezvous store at ", where_,
       " (served by rank 0) does not answer: rank 0 has exited or is unreachable");
}

void StoreClient::set(const std::string& key, const void* value, uint64_t size) {
  (void)request(kSet, key, std::string(static_cast<const char*>(value), size));
}

std::optional<std::string> StoreClient::get(const std::string& key, std::chrono::milliseconds timeout) {
  const uint64_t ms = static_cast<uint64_t>(std::max<int64_t>(timeout.count(), 0));
  std::string t(8, '\0');
  std::memcpy(t.data(), &ms, 8);
  std::string r = request(kGet, key, t, timeout);
  if (r[0] == '\0') return std::nullopt;
  return r.substr(1);
}

int64_t StoreClient::add(const std::string& key, int64_t delta) {
  std::string d(8, '\0');
  std::memcpy(d.data(), &delta, 8);
  const std::string r = request(kAdd, key, d);
  int64_t sum = 0;
  if (r.size() == 9) std::memcpy(&sum, r.data() + 1, 8);
  return sum;
}

std::vector<int32_t> StoreClient::dead_ranks() {
  const std::string r = request(kDead, {}, {});
  std::vector<int32_t> ranks;
  size_t start = 1;
  while (start < r.size()) {
    const size_t comma = r.find(',', start);
    ranks.push_back(static_cast<int32_t>(std::strtol(r.c_str() + start, nullptr, 10)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return ranks;
}

namespace {
braid_status comm_store_set(void* user, const char* key, const void* value, uint64_t size) {
  try {
    static_cast<StoreClient*>(user)->set(key, value, size);
    return BRAID_OK;
  } catch (...) {
    return BRAID_ERR_IO;
  }
}

braid_status comm_store_get(void* user, const char* key, void* value, uint64_t capacity, uint64_t* size,
                            uint64_t timeout_ms) {
  try {
    auto v = static_cast<StoreClient*>(user)->get(key, std::chrono::milliseconds(timeout_ms));
    if (!v) return BRAID_ERR_TIMEOUT;
    *size = v->size();
    std::memcpy(value, v->data(), std::min<uint64_t>(capacity, v->size()));
    return BRAID_OK;
  } catch (...) {
    return BRAID_ERR_IO;
  }
}

}  // namespace

braid_comm_store comm_store(StoreClient& client) {
  return {sizeof(braid_comm_store), &client, &comm_store_set, &comm_store_get};
}

}  // namespace braid::distributed
