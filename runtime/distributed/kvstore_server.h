// A server process of a KVStore job: holds its share of every key and runs the optimizer on it
// (docs/DISTRIBUTED.md, "KVStore across processes"). Also the scheduler's role under MXNet's launchers:
// serving the job's rendezvous store.
#pragma once
#include "context/context.h"

namespace braid::distributed {

// Serves until every worker has said goodbye (or, for the scheduler, every participant has left).
// Throws the failure that ended it early: a worker that died or broke the protocol.
void run_kvstore_server(Context& ctx);

}  // namespace braid::distributed
