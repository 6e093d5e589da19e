#include "distributed/launch_env.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <charconv>
#include <cstring>

#include "core/env.h"
#include "core/error.h"

namespace braid::distributed {
namespace {

// A non-negative int32 from the variable `name`, or `fallback` when it is unset.
int32_t read_int(const char* name, int32_t fallback, int32_t max, const char* meaning) {
  const char* v = env(name);
  if (!v) return fallback;
  const char* last = v + std::strlen(v);
  int32_t x = 0;
  auto [end, ec] = std::from_chars(v, last, x);
  if (ec != std::errc() || end != last || x < 0 || x > max)
    fail(BRAID_ERR_INVALID_ARGUMENT, name, "='", v, "' is not ", meaning, " (0 to ", max, ")");
  return x;
}

// The launchers braid understands, in the order it asks them: each names its rank, size, local rank
// and local size variables (NULL where it has none).
struct Launcher {
  const char* rank;
  const char* size;
  const char* local_rank;
  const char* local_size;
};
constexpr std::array<Launcher, 4> kLaunchers = {{
    {"BRAID_RANK", "BRAID_WORLD_SIZE", "BRAID_LOCAL_RANK", "BRAID_LOCAL_WORLD_SIZE"},
    {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"},
    {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", nullptr},
    {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"},
}};

constexpr int32_t kMaxRanks = 1 << 20;

}  // namespace

LaunchEnv read_launch_env() {
  LaunchEnv e;
  for (const Launcher& l : kLaunchers) {
    if (!env(l.rank)) continue;
    e.rank = read_int(l.rank, -1, kMaxRanks - 1, "a rank");
    e.rank_from = l.rank;
    e.world_size = read_int(l.size, 0, kMaxRanks, "a number of ranks");
    if (e.world_size == 0)
      fail(BRAID_ERR_INVALID_ARGUMENT, l.rank, " is set but ", l.size, " is not: the launcher must say both");
    if (e.rank >= e.world_size)
      fail(BRAID_ERR_INVALID_ARGUMENT, l.rank, "=", e.rank, " is not below ", l.size, "=", e.world_size);
    e.local_rank = read_int(l.local_rank, -1, kMaxRanks - 1, "a local rank");
    if (l.local_size) e.local_size = read_int(l.local_size, 0, kMaxRanks, "a number of local ranks");
    break;
  }
  if (const char* a = env("BRAID_MASTER_ADDR")) {
    e.master_addr = a;
  } else if (const char* m = env("MASTER_ADDR")) {
    e.master_addr = m;
  }
  e.master_port = read_int("BRAID_MASTER_PORT", 0, 65535, "a TCP port");
  if (e.master_port == 0) e.master_port = read_int("MASTER_PORT", 0, 65535, "a TCP port");
  e.restart = read_int("BRAID_RESTART", 0, kMaxRanks, "a restart count");
  if (const char* f = env("BRAID_REJOIN_FILE")) e.rejoin_file = f;
  return e;
}

// The address this host's transport listens on: BRAID_ADDRESS if set, else the local address of the
// route to the master (the interface the other ranks reach this host through), found by connecting a
// UDP socket, which sends nothing.
std::string local_address(const std::string& master, int32_t port) {
  if (const char* a = env("BRAID_ADDRESS")) return a;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(master.c_str(), std::to_string(port).c_str(), &hints, &found) != 0 || !found)
    fail(BRAID_ERR_INVALID_ARGUMENT, "process group: cannot resolve the master address '", master, "'");
  std::string out;
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd >= 0 && ::connect(fd, found->ai_addr, found->ai_addrlen) == 0) {
    sockaddr_in self{};
    socklen_t len = sizeof self;
    char text[INET_ADDRSTRLEN] = {};
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&self), &len) == 0 &&
        ::inet_ntop(AF_INET, &self.sin_addr, text, sizeof text))
      out = text;
  }
  if (fd >= 0) ::close(fd);
  ::freeaddrinfo(found);
  if (out.empty()) fail(BRAID_ERR_IO, "process group: no route to the master address '", master, "'");
  return out;
}

}  // namespace braid::distributed
