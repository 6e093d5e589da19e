// Where this process stands in a job: its rank, the number of ranks, its rank on its host, and the
// rendezvous address, read from the launcher's environment variables (docs/DISTRIBUTED.md, "Variables").
// braid's own come first, then Open MPI's, Slurm's, and torchrun's, so one program starts unchanged
// under braid-run, mpirun, srun or a torchrun-style launcher.
#pragma once
#include <cstdint>
#include <string>

namespace braid::distributed {

struct LaunchEnv {
  int32_t rank = -1;        // -1: no launcher variable said
  int32_t world_size = 0;   // 0: no launcher variable said
  int32_t local_rank = -1;  // -1: unknown (then taken as rank)
  int32_t local_size = 0;   // 0: unknown
  std::string master_addr;  // "" when unset
  int32_t master_port = 0;  // 0 when unset
  int32_t restart = 0;      // BRAID_RESTART: how many times braid-run has restarted the job
  std::string rejoin_file;  // BRAID_REJOIN_FILE: exists while braid-run has lost ranks ready to rejoin
  std::string rank_from;    // the variable the rank came from, for messages ("BRAID_RANK")
};

// Reads the variables. A variable that is set but not a number in range throws
// BRAID_ERR_INVALID_ARGUMENT naming it.
LaunchEnv read_launch_env();

// The address this host's transport listens on for a job whose rendezvous store is at master:port:
// BRAID_ADDRESS if set, else the local address of the route to the master. Throws BRAID_ERR_IO when
// there is no route.
std::string local_address(const std::string& master, int32_t port);

}  // namespace braid::distributed
