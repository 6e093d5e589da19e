// Process groups when things go wrong: mismatched collectives, a rank killed mid-step, a stalled
// rank, bad settings; and a KVStore worker killed mid-step. Each case forks its ranks from this process (each child
// makes its own context and group on a free port), checks inside each child what that rank must see, and asserts here
// on every child's exit: 0 when the rank saw what it should, 1 (with the reason on stderr) otherwise.
#include <doctest/doctest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "braid.h"
#include "distributed/ranks.h"

namespace {

using namespace dist_test;

// A dist_sync KVStore job of two workers (children 0 and 1) and one server (child 2), each child with
// its own context and the job's variables. The server must fail with BRAID_ERR_IO naming
// `server_names`. Each worker initialises key 1 with `elements` ones and completes a first round of
// pushpull on it and a barrier, then runs worker(rank, kv, t) with that tensor and returns its exit code.
std::vector<int> run_kv_job(const char* server_names, int64_t elements,
                            const std::function<int(int, braid_kvstore, braid_tensor)>& worker) {
  const int port = free_port();
  return run_ranks(
      3,
      [&](int child) {
        const int rank = child;  // for RANK_EXPECT
        const bool server = child == 2;
        ::setenv("BRAID_ROLE", server ? "server" : "worker", 1);
        ::setenv("BRAID_WORLD_SIZE", "2", 1);
        ::setenv("BRAID_NUM_SERVERS", "1", 1);
        ::setenv("BRAID_KVSTORE_PORT", std::to_string(port).c_str(), 1);
        ::setenv("BRAID_MASTER_ADDR", "127.0.0.1", 1);
        ::setenv("BRAID_DIST_TIMEOUT", "20", 1);
        ::setenv(server ? "BRAID_SERVER_RANK" : "BRAID_RANK", server ? "0" : std::to_string(child).c_str(), 1);
        braid_context_options co = BRAID_CONTEXT_OPTIONS_INIT;
        co.backends = "cpu";
        braid_context ctx = nullptr;
        RANK_EXPECT(braid_context_create(&co, &ctx) == BRAID_OK, "%s", braid_last_error());
        int code = 0;
        if (server) {
          const braid_status st = braid_kvstore_run_server(ctx);
          const std::string msg = braid_last_error();
          if (st != BRAID_ERR_IO || !has(msg, server_names)) {
            std::fprintf(stderr, "server: expected BRAID_ERR_IO naming '%s': %s: %s\n", server_names,
                         braid_status_name(st), msg.c_str());
            code = 1;
          }
        } else {
          braid_kvstore kv = nullptr;
          RANK_EXPECT(braid_kvstore_create(ctx, "dist_sync", &kv) == BRAID_OK, "%s", braid_last_error());
          braid_tensor t = nullptr;
          RANK_EXPECT(braid_full(ctx, 0, BRAID_FLOAT32, 1, &elements, 1.0, &t) == BRAID_OK, "%s", braid_last_error());
          RANK_EXPECT(braid_kvstore_init(kv, 1, t) == BRAID_OK, "%s", braid_last_error());
          RANK_EXPECT(braid_kvstore_pushpull(kv, 1, 1, &t, &t) == BRAID_OK, "the first round: %s", braid_last_error());
          // Both workers have their first round back before either goes on (to die, in one case): else a
          // worker dying at once could fail the other's pull of that round while it is still in flight.
          RANK_EXPECT(braid_kvstore_barrier(kv) == BRAID_OK, "the barrier after the first round: %s",
                      braid_last_error());
          code = worker(child, kv, t);
          braid_tensor_release(t);
          // Worker 0's release still works after a failure (worker 1 died, or released its own).
          if (code == 0 && child == 0) RANK_EXPECT(braid_kvstore_release(kv) == BRAID_OK, "%s", braid_last_error());
        }
        braid_context_release(ctx);
        return code;
      },
      std::chrono::seconds(90));
}

}  // namespace

TEST_SUITE("process groups: failures") {
// The two ways the ranks' calls are checked (BRAID_DIST_CHECK): 2 exchanges a fingerprint before each
// call (a mismatch is named at once); 1, the default, keys each call with it (calls that differ never
// meet: named when they time out, here after 3 s).
struct CheckMode {
  const char* value;
  double timeout_seconds;
  double named_within;  // seconds
};
constexpr CheckMode kCheckModes[] = {{"2", 30, 10}, {"1", 3, 3 + 8}};

TEST_CASE("a mismatched collective is an error naming both sides, on both ranks, and fails later calls") {
  for (const CheckMode mode : kCheckModes) {
    CAPTURE(mode.value);
    const int port = free_port();
    const auto codes = run_ranks(
        2,
        [port, mode](int rank) {
          ::setenv("BRAID_DIST_CHECK", mode.value, 1);
          Rank r(rank, 2, port, mode.timeout_seconds);
          const auto started = Clock::now();
          RANK_EXPECT(r.joined == BRAID_OK, "%s", r.join_error.c_str());
          braid_tensor t = r.full(rank == 0 ? 4 : 8, 1);
          RANK_EXPECT(braid_process_group_allreduce(r.pg, t, BRAID_COLLECTIVE_SUM) == BRAID_OK, "%s",
                      braid_last_error());
          const braid_status st = braid_tensor_wait_to_read(t);
          const std::string msg = braid_last_error();
          RANK_EXPECT(st == BRAID_ERR_INVALID_STATE, "%s: %s", braid_status_name(st), msg.c_str());
          RANK_EXPECT(has(msg, "allreduce #1 (float32, 4 elements, sum)") &&
                          has(msg, "allreduce #1 (float32, 8 elements, sum)"),
                      "both calls named: %s", msg.c_str());
          RANK_EXPECT(has(msg, rank == 0 ? "rank 1 called" : "rank 0 called"), "the other rank named: %s", msg.c_str());
          RANK_EXPECT(Clock::now() - started < std::chrono::duration<double>(mode.named_within), "named after %.1f s",
                      std::chrono::duration<double>(Clock::now() - started).count());
          // The group has failed: the next call fails at once with the same cause.
          braid_tensor u = r.full(4, 1);
          const auto t0 = Clock::now();
          (void)braid_process_group_allreduce(r.pg, u, BRAID_COLLECTIVE_SUM);
          const braid_status st2 = braid_tensor_wait_to_read(u);
          const std::string msg2 = braid_last_error();
          RANK_EXPECT(st2 == BRAID_ERR_INVALID_STATE && has(msg2, "failed earlier") && has(msg2, "disagree"), "%s: %s",
                      braid_status_name(st2), msg2.c_str());
          RANK_EXPECT(Clock::now() - t0 < std::chrono::seconds(5), "a call after the failure waits for nothing");
          braid_tensor_release(t);
          braid_tensor_release(u);
          return 0;
        },
        std::chrono::seconds(60));
    CHECK(codes == std::vector<int>{0, 0});
  }
}

TEST_CASE("different collectives on two ranks are named, not run") {
  for (const CheckMode mode : kCheckModes) {
    CAPTURE(mode.value);
    const int port = free_port();
    const auto codes = run_ranks(
        2,
        [port, mode](int rank) {
          ::setenv("BRAID_DIST_CHECK", mode.value, 1);
          Rank r(rank, 2, port, mode.timeout_seconds);
          RANK_EXPECT(r.joined == BRAID_OK, "%s", r.join_error.c_str());
          braid_tensor t = r.full(16, rank + 1);
          if (rank == 0)
            (void)braid_process_group_broadcast(r.pg, t, 0);
          else
            (void)braid_process_group_allreduce(r.pg, t, BRAID_COLLECTIVE_MAX);
          const braid_status st = braid_tensor_wait_to_read(t);
          const std::string msg = braid_last_error();
          RANK_EXPECT(st == BRAID_ERR_INVALID_STATE, "%s: %s", braid_status_name(st), msg.c_str());
          RANK_EXPECT(has(msg, "broadcast #1 (float32, 16 elements, root 0)") &&
                          has(msg, "allreduce #1 (float32, 16 elements, max)"),
                      "%s", msg.c_str());
          // Neither tensor was touched by a half-run collective.
          float v[16];
          braid_status read = braid_tensor_to_host(t, v, sizeof v);
          RANK_EXPECT(read != BRAID_OK, "a failed collective's output reads as failed (poisoned)");
          braid_tensor_release(t);
          return 0;
        },
        std::chrono::seconds(60));
    CHECK(codes == std::vector<int>{0, 0});
  }
}

// Keyed calls that differ time out on both ranks; the rank that times out later may find the other one
// already gone (it diagnosed, returned and released its group). Its recorded failed call still names
// the mismatch: here rank 1's timeout is 4x rank 0's, so rank 0 has left when rank 1 looks (CI once
// saw "rank 0 left the group after 1 call(s)" instead, as a timeout). Rank 0 is done after its timeout
// and a grace as long, so rank 1 waits four times as long.
TEST_CASE("a mismatch is named by the rank that times out after the other has left") {
  const int port = free_port();
  const auto codes = run_ranks(
      2,
      [port](int rank) {
        ::setenv("BRAID_DIST_CHECK", "1", 1);
        Rank r(rank, 2, port, rank == 0 ? 2.0 : 8.0);
        RANK_EXPECT(r.joined == BRAID_OK, "%s", r.join_error.c_str());
        braid_tensor t = r.full(16, rank + 1);
        if (rank == 0)
          (void)braid_process_group_broadcast(r.pg, t, 0);
        else
          (void)braid_process_group_allreduce(r.pg, t, BRAID_COLLECTIVE_MAX);
        const braid_status st = braid_tensor_wait_to_read(t);
        const std::string msg = braid_last_error();
        RANK_EXPECT(st != BRAID_OK, "a mismatched collective failed");
        if (rank == 1) {
          RANK_EXPECT(st == BRAID_ERR_INVALID_STATE && has(msg, "disagree") &&
                          has(msg, "broadcast #1 (float32, 16 elements, root 0)") &&
                          has(msg, "allreduce #1 (float32, 16 elements, max)"),
                      "%s: %s", braid_status_name(st), msg.c_str());
        }
        braid_tensor_release(t);
        return 0;
      },
      std::chrono::seconds(60));
  CHECK(codes == std::vector<int>{0, 0});
}

TEST_CASE("a rank killed mid-step makes every other rank fail soon, naming it") {
  const int port = free_port();
  const double timeout = 20;
  const auto codes = run_ranks(
      3,
      [port, timeout](int rank) {
        Rank r(rank, 3, port, timeout);
        RANK_EXPECT(r.joined == BRAID_OK, "%s", r.join_error.c_str());
        braid_tensor t = r.full(1 << 16, 1);
        (void)braid_process_group_allreduce(r.pg, t, BRAID_COLLECTIVE_SUM);
        RANK_EXPECT(braid_tensor_wait_to_read(t) == BRAID_OK, "the first step works: %s", braid_last_error());
        if (rank == 2) ::raise(SIGKILL);  // dies between two steps' collectives, as a crash would
        const auto t0 = Clock::now();
        (void)braid_process_group_allreduce(r.pg, t, BRAID_COLLECTIVE_SUM);
        const braid_status st = braid_tensor_wait_to_read(t);
        const std::string msg = braid_last_error();
        const double took = std::chrono::duration<double>(Clock::now() - t0).count();
        RANK_EXPECT(st == BRAID_ERR_IO || st == BRAID_ERR_TIMEOUT, "%s: %s", braid_status_name(st), msg.c_str());
        RANK_EXPECT(has(msg, "rank 2 has died"), "the dead rank named: %s", msg.c_str());
        RANK_EXPECT(has(msg, "allreduce #2") && has(msg, "rank " + std::to_string(rank) + " of 3"),
                    "the call and this rank named: %s", msg.c_str());
        RANK_EXPECT(took < timeout + 5, "failed after %.1f s, the timeout being %.0f s", took, timeout);
        std::fprintf(stderr, "rank %d: failed after %.2f s: %s\n", rank, took, msg.c_str());
        braid_tensor_release(t);
        return 0;
      },
      std::chrono::seconds(90));
  CHECK(codes == std::vector<int>{0, 0, -SIGKILL});
}

TEST_CASE("a KVStore worker killed mid-step makes the other workers' calls and the server fail, naming it") {
  const auto codes = run_kv_job("worker 1", 1000, [](int rank, braid_kvstore kv, braid_tensor t) {
    if (rank == 1) ::raise(SIGKILL);  // dies between two steps, as a crash would
    const auto t0 = Clock::now();
    const braid_status st = braid_kvstore_pushpull(kv, 1, 1, &t, &t);  // the round waits for worker 1
    const std::string msg = braid_last_error();
    const double took = std::chrono::duration<double>(Clock::now() - t0).count();
    RANK_EXPECT(st == BRAID_ERR_IO || st == BRAID_ERR_TIMEOUT, "%s: %s", braid_status_name(st), msg.c_str());
    RANK_EXPECT(has(msg, "worker 1"), "the dead worker named: %s", msg.c_str());
    RANK_EXPECT(took < 20 + 5, "failed after %.1f s, the timeout being 20 s", took);
    std::fprintf(stderr, "worker %d: failed after %.2f s: %s\n", rank, took, msg.c_str());
    RANK_EXPECT(braid_kvstore_pull(kv, 1, 1, &t) != BRAID_OK, "a later call fails too");
    return 0;
  });
  CHECK(codes == std::vector<int>{0, -SIGKILL, 0});
}

TEST_CASE("a KVStore worker that leaves early fails the round it is needed in, instead of a hang") {
  // Worker 1 pushes once and releases its store; worker 0's second push can never complete its round.
  const auto codes = run_kv_job("worker(s) 1 released their store", 4, [](int rank, braid_kvstore kv, braid_tensor t) {
    if (rank == 0) {
      const auto t0 = Clock::now();
      const braid_status st = braid_kvstore_pushpull(kv, 1, 1, &t, &t);
      const std::string msg = braid_last_error();
      const double took = std::chrono::duration<double>(Clock::now() - t0).count();
      RANK_EXPECT(st == BRAID_ERR_IO && has(msg, "released their store"), "%s: %s", braid_status_name(st), msg.c_str());
      RANK_EXPECT(took < 15, "failed after %.1f s, before the 20 s timeout", took);
    } else {
      RANK_EXPECT(braid_kvstore_release(kv) == BRAID_OK, "%s", braid_last_error());
    }
    return 0;
  });
  CHECK(codes == std::vector<int>{0, 0, 0});
}

TEST_CASE(
    "a rank that leaves after fewer steps (uneven batch counts) is named with its last call, before the timeout") {
  const int port = free_port();
  const double timeout = 30;
  const auto codes = run_ranks(
      3,
      [port, timeout](int rank) {
        Rank r(rank, 3, port, timeout);
        RANK_EXPECT(r.joined == BRAID_OK, "%s", r.join_error.c_str());
        braid_tensor t = r.full(1000, 1);
        const int steps = rank == 1 ? 1 : 2;  // rank 1 ran out of batches one step early
        braid_status st = BRAID_OK;
        std::string msg;
        const auto t0 = Clock::now();
        for (int s = 0; s < steps && st == BRAID_OK; ++s) {
          (void)braid_process_group_allreduce(r.pg, t, BRAID_COLLECTIVE_SUM);
          st = braid_tensor_wait_to_read(t);
          msg = braid_last_error();
        }
        const double took = std::chrono::duration<double>(Clock::now() - t0).count();
        braid_tensor_release(t);
        if (rank == 1) {
          RANK_EXPECT(st == BRAID_OK, "its one step works: %s", msg.c_str());
          return 0;  // ~Rank releases the group: it leaves
        }
        RANK_EXPECT(st == BRAID_ERR_IO || st == BRAID_ERR_INVALID_STATE, "%s: %s", braid_status_name(st), msg.c_str());
        RANK_EXPECT(has(msg, "allreduce #2") && has(msg, "rank 1 left the group after 1 call(s)") &&
                        has(msg, "Uneven batch counts"),
                    "the rank that left and its calls named: %s", msg.c_str());
        RANK_EXPECT(took < timeout / 2, "failed after %.1f s, the timeout being %.0f s", took, timeout);
        return 0;
      },
      std::chrono::seconds(90));
  CHECK(codes == std::vector<int>{0, 0, 0});
}

TEST_CASE("a stalled rank makes the others time out, naming it; the group is failed for it too") {
  const int port = free_port();
  const auto codes = run_ranks(
      2,
      [port](int rank) {
        Rank r(rank, 2, port, 2);
        RANK_EXPECT(r.joined == BRAID_OK, "%s", r.join_error.c_str());
        braid_tensor t = r.full(1024, 1);
        if (rank == 1) std::this_thread::sleep_for(std::chrono::seconds(6));  // stalls past the timeout
        const auto t0 = Clock::now();
        (void)braid_process_group_allreduce(r.pg, t, BRAID_COLLECTIVE_SUM);
        const braid_status st = braid_tensor_wait_to_read(t);
        const std::string msg = braid_last_error();
        const double took = std::chrono::duration<double>(Clock::now() - t0).count();
        if (rank == 0) {
          RANK_EXPECT(st == BRAID_ERR_TIMEOUT, "%s: %s", braid_status_name(st), msg.c_str());
          RANK_EXPECT(has(msg, "rank(s) 1 did not fail with it"), "the stalled rank named: %s", msg.c_str());
          RANK_EXPECT(took >= 1.5 && took < 2 + 8, "timed out after %.1f s (timeout 2 s)", took);
        } else {
          // The others closed the group meanwhile: this rank's late call fails at once.
          RANK_EXPECT(st != BRAID_OK && took < 5, "%s after %.1f s: %s", braid_status_name(st), took, msg.c_str());
        }
        braid_tensor_release(t);
        return 0;
      },
      std::chrono::seconds(60));
  CHECK(codes == std::vector<int>{0, 0});
}

TEST_CASE("joining fails with a clear error: missing rank, bad settings, unknown plugin") {
  const int port = free_port();
  // Rank 1 never starts: rank 0 times out joining.
  auto codes = run_ranks(
      1,
      [port](int rank) {
        const auto t0 = Clock::now();
        Rank r(0, 2, port, 1.5);
        const double took = std::chrono::duration<double>(Clock::now() - t0).count();
        RANK_EXPECT(r.joined == BRAID_ERR_TIMEOUT, "%s: %s", braid_status_name(r.joined), r.join_error.c_str());
        RANK_EXPECT(took < 1.5 + 5, "gave up after %.1f s", took);
        return 0;
      },
      std::chrono::seconds(30));
  CHECK(codes == std::vector<int>{0});
  codes = run_ranks(
      1,
      [port](int rank) {
        Rank bad_rank(2, 2, port, 1);
        RANK_EXPECT(
            bad_rank.joined == BRAID_ERR_INVALID_ARGUMENT && has(bad_rank.join_error, "not below the world size"), "%s",
            bad_rank.join_error.c_str());
        Rank no_plugin(0, 1, port, 1, "nosuch");
        RANK_EXPECT(no_plugin.joined == BRAID_ERR_NOT_FOUND && has(no_plugin.join_error, "libbraid-comm-nosuch.so"),
                    "%s", no_plugin.join_error.c_str());
        ::setenv("BRAID_RANK", "one", 1);
        ::setenv("BRAID_WORLD_SIZE", "2", 1);
        Rank from_env(-1, 0, port, 1);
        RANK_EXPECT(from_env.joined == BRAID_ERR_INVALID_ARGUMENT && has(from_env.join_error, "BRAID_RANK='one'"), "%s",
                    from_env.join_error.c_str());
        ::setenv("BRAID_RANK", "1", 1);
        ::unsetenv("BRAID_WORLD_SIZE");
        Rank half_env(-1, 0, port, 1);
        RANK_EXPECT(
            half_env.joined == BRAID_ERR_INVALID_ARGUMENT && has(half_env.join_error, "BRAID_WORLD_SIZE is not"), "%s",
            half_env.join_error.c_str());
        return 0;
      },
      std::chrono::seconds(30));
  CHECK(codes == std::vector<int>{0});
}

TEST_CASE("a group of one: every collective is the identity; bad arguments are refused at the call") {
  const int port = free_port();
  const auto codes = run_ranks(
      1,
      [port](int rank) {
        Rank r(0, 1, port, 10);
        RANK_EXPECT(r.joined == BRAID_OK, "%s", r.join_error.c_str());
        braid_process_group_info info{};
        info.struct_size = sizeof info;
        RANK_EXPECT(braid_process_group_get_info(r.pg, &info) == BRAID_OK && info.rank == 0 && info.world_size == 1 &&
                        std::string(info.backend) == "gloo" && info.timeout_seconds == 10,
                    "info %d/%d %s %g", info.rank, info.world_size, info.backend, info.timeout_seconds);
        braid_tensor t = r.full(5, 3);
        RANK_EXPECT(braid_process_group_allreduce(r.pg, t, BRAID_COLLECTIVE_AVG) == BRAID_OK, "%s", braid_last_error());
        float v[5];
        RANK_EXPECT(braid_tensor_to_host(t, v, sizeof v) == BRAID_OK && v[0] == 3 && v[4] == 3, "%g", v[0]);
        RANK_EXPECT(braid_process_group_broadcast(r.pg, t, 1) == BRAID_ERR_INVALID_ARGUMENT, "root 1 of 1");
        RANK_EXPECT(braid_process_group_send(r.pg, t, 0, 0) == BRAID_ERR_INVALID_ARGUMENT, "send to itself");
        RANK_EXPECT(
            braid_process_group_allreduce(r.pg, t, static_cast<braid_collective_op>(99)) == BRAID_ERR_INVALID_ARGUMENT,
            "op 99");
        RANK_EXPECT(braid_process_group_allreduce(r.pg, nullptr, BRAID_COLLECTIVE_SUM) == BRAID_ERR_INVALID_ARGUMENT,
                    "NULL");
        braid_tensor small = r.full(2, 1);
        RANK_EXPECT(braid_process_group_all_gather(r.pg, t, small) == BRAID_ERR_SHAPE, "%s", braid_last_error());
        braid_tensor ints = nullptr;
        const int64_t n = 5;
        braid_full(r.ctx, r.cpu, BRAID_INT32, 1, &n, 1, &ints);
        RANK_EXPECT(braid_process_group_allreduce(r.pg, ints, BRAID_COLLECTIVE_AVG) == BRAID_ERR_DTYPE, "AVG of int32");
        // bool moves as its bytes and is never reduced (its bytes would add up past 1).
        braid_tensor mask = nullptr;
        braid_full(r.ctx, r.cpu, BRAID_BOOL, 1, &n, 1, &mask);
        RANK_EXPECT(braid_process_group_allreduce(r.pg, mask, BRAID_COLLECTIVE_MAX) == BRAID_ERR_DTYPE, "bool reduced");
        RANK_EXPECT(braid_process_group_broadcast(r.pg, mask, 0) == BRAID_OK, "bool broadcast: %s", braid_last_error());
        uint8_t bits[5] = {};
        RANK_EXPECT(braid_tensor_to_host(mask, bits, sizeof bits) == BRAID_OK && bits[0] == 1 && bits[4] == 1,
                    "bool broadcast: %d", bits[0]);
        braid_tensor_release(mask);
        RANK_EXPECT(braid_process_group_barrier(r.pg) == BRAID_OK, "%s", braid_last_error());
        // Outside braid-run --rejoin nothing is pending; a NULL out-parameter is refused.
        int32_t pending = -1;
        RANK_EXPECT(braid_process_group_rejoin_pending(r.pg, &pending) == BRAID_OK && pending == 0, "not pending: %s",
                    braid_last_error());
        RANK_EXPECT(braid_process_group_rejoin_pending(r.pg, nullptr) == BRAID_ERR_INVALID_ARGUMENT, "NULL pending");
        RANK_EXPECT(braid_process_group_rejoin_pending(nullptr, &pending) == BRAID_ERR_INVALID_ARGUMENT, "NULL pg");
        braid_tensor_release(ints);
        braid_tensor_release(small);
        braid_tensor_release(t);
        braid_process_group pg2 = r.pg;
        RANK_EXPECT(braid_process_group_retain(pg2) == BRAID_OK, "retain");
        RANK_EXPECT(braid_process_group_release(pg2) == BRAID_OK, "release of the retain");
        RANK_EXPECT(braid_process_group_release(pg2) == BRAID_OK, "the last release");
        r.pg = nullptr;
        RANK_EXPECT(braid_process_group_release(pg2) == BRAID_ERR_INVALID_ARGUMENT, "a release too many is refused");
        RANK_EXPECT(braid_process_group_barrier(pg2) == BRAID_ERR_INVALID_ARGUMENT, "a released group is refused");
        return 0;
      },
      std::chrono::seconds(30));
  CHECK(codes == std::vector<int>{0});
}
}
