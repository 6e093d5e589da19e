/* braid-kvstore-server: a server process of a KVStore job (dist_sync, dist_device_sync, dist_async).
 * `braid-run -n W --servers S` starts S of these beside the W workers, with BRAID_ROLE=server,
 * BRAID_SERVER_RANK, BRAID_NUM_SERVERS, BRAID_WORLD_SIZE (the workers) and the store's address set; it
 * serves the job's keys until every worker has released its store (docs/DISTRIBUTED.md, "KVStore across
 * processes"). Under MXNet's launchers (DMLC_ROLE=server or scheduler) it does the same. */
#include <stdio.h>

#include "braid.h"

int main(int argc, char** argv) {
  if (argc > 1) {
    fprintf(stderr,
            "usage: braid-kvstore-server\n"
            "Serves a KVStore job's keys; its settings come from the environment (docs/DISTRIBUTED.md).\n");
    return argv[1][0] == '-' && argv[1][1] == 'h' ? 0 : 2;
  }
  braid_context_options o = BRAID_CONTEXT_OPTIONS_INIT;
  o.backends = "cpu"; /* the keys live in host memory, and the optimizer runs there */
  braid_context ctx = NULL;
  braid_status st = braid_context_create(&o, &ctx);
  if (st == BRAID_OK) st = braid_kvstore_run_server(ctx);
  if (st != BRAID_OK) {
    fprintf(stderr, "braid-kvstore-server: %s: %s\n", braid_status_name(st), braid_last_error());
    if (ctx) braid_context_release(ctx);
    return 1;
  }
  braid_context_release(ctx);
  return 0;
}
