// Collectives called from several threads at once over the same tensors (issue 31): each collective
// must behave as one op, so the result is that of some serial order of the calls that keeps each
// thread's own order. Before, the pushes of concurrent collectives interleaved and the engine ran a
// mix that no order gives (3 threads x allreduce SUM of ones over cpu:0, cpu:1, vulkan:0 ended at 7,
// 19 ... instead of 81).
//
// Over every device of every backend the context has (cpu:0, cpu:1 and vulkan:0 where they exist),
// with overlapping device subsets and every allreduce algorithm. Each tensor holds one value in all
// its elements; the host replays every interleaving of the threads' call lists on those values and
// the result must be one of them, in every element.
#include <algorithm>
#include <array>
#include <cstdlib>
#include <functional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "runtime/support.h"

namespace {

struct Call {
  std::vector<int> members;  // indices into the tensors
  bool broadcast = false;    // else allreduce SUM
  braid_allreduce_algorithm algorithm = BRAID_ALLREDUCE_AUTO;
};

// The tensors' values after `c`, run on `v` (every element of tensor i holds v[i]).
void replay(const Call& c, std::vector<double>& v) {
  double r = 0;
  if (c.broadcast) {
    r = v[static_cast<size_t>(c.members[0])];
  } else {
    for (int m : c.members) r += v[static_cast<size_t>(m)];
  }
  for (int m : c.members) v[static_cast<size_t>(m)] = r;
}

// Every result a serial order of the threads' lists gives (each list in its own order).
std::set<std::vector<double>> serial_results(const std::vector<std::vector<Call>>& lists, std::vector<double> start) {
  std::set<std::vector<double>> out;
  std::vector<size_t> next(lists.size(), 0);
  std::function<void(std::vector<double>&)> go = [&](std::vector<double>& v) {
    bool any = false;
    for (size_t t = 0; t < lists.size(); ++t) {
      if (next[t] == lists[t].size()) continue;
      any = true;
      std::vector<double> w = v;
      replay(lists[t][next[t]++], w);
      go(w);
      --next[t];
    }
    if (!any) out.insert(v);
  };
  go(start);
  return out;
}

}  // namespace

TEST_CASE("concurrent collectives over the same tensors give the result of a serial order") {
  // Every backend this build has, two CPU devices; vulkan only where BRAID_BACKENDS allows it.
  std::string backends = "cpu,vulkan";
  if (const char* only = std::getenv("BRAID_BACKENDS"); only && *only) backends = only;
  braid_context_options o = BRAID_CONTEXT_OPTIONS_INIT;
  o.backends = backends.c_str();
  test::Ctx c(2, o);
  std::vector<braid_device> devs;
  std::vector<bool> is_cpu;
  for (const char* name : {"cpu:0", "cpu:1", "vulkan:0"}) {
    braid_device d = -1;
    if (braid_context_find_device(c.ctx, name, &d) == BRAID_OK) {
      devs.push_back(d);
      is_cpu.push_back(std::string(name).rfind("cpu", 0) == 0);
    }
  }
  if (devs.size() < 2) {
    MESSAGE("skipped: fewer than two devices");
    return;
  }
  MESSAGE("devices: ", devs.size());
  const int n = static_cast<int>(devs.size());
  // Large enough that a collective is many ops of real work (ring chunks, staged transfers) and the
  // threads' pushes overlap; small enough for a few seconds in all.
  constexpr int64_t kElems = 1 << 16;
  constexpr int kThreads = 3, kCalls = 3, kRounds = 12;
  const braid_allreduce_algorithm algorithms[] = {BRAID_ALLREDUCE_NAIVE,  BRAID_ALLREDUCE_TREE, BRAID_ALLREDUCE_RING,
                                                  BRAID_ALLREDUCE_BIRING, BRAID_ALLREDUCE_AUTO, BRAID_ALLREDUCE_DIRECT};
  // The device subsets of at least two (overlapping one another).
  std::vector<std::vector<int>> subsets;
  for (int mask = 0; mask < (1 << n); ++mask)
    if (__builtin_popcount(static_cast<unsigned>(mask)) >= 2) {
      std::vector<int> s;
      for (int i = 0; i < n; ++i)
        if (mask & (1 << i)) s.push_back(i);
      subsets.push_back(s);
    }
  unsigned seed = 12345;
  auto rnd = [&](unsigned m) {
    seed = seed * 1103515245u + 12345u;
    return (seed >> 16) % m;
  };
  for (int round = 0; round < kRounds; ++round) {
    CAPTURE(round);
    // The calls: every algorithm over the rounds; DIRECT only where every member is a CPU device.
    std::vector<std::vector<Call>> lists(kThreads);
    for (int t = 0; t < kThreads; ++t)
      for (int k = 0; k < kCalls; ++k) {
        Call call;
        // Even rounds: every thread over all devices (the case); odd: overlapping subsets.
        call.members = round % 2 == 0 ? subsets.back() : subsets[rnd(static_cast<unsigned>(subsets.size()))];
        std::rotate(call.members.begin(),
                    call.members.begin() + static_cast<std::ptrdiff_t>(rnd(static_cast<unsigned>(call.members.size()))),
                    call.members.end());
        call.broadcast = round % 4 == 3 && k == 1;
        call.algorithm = algorithms[(round * kThreads * kCalls + t * kCalls + k) % std::size(algorithms)];
        if (call.algorithm == BRAID_ALLREDUCE_DIRECT)
          for (int m : call.members)
            if (!is_cpu[static_cast<size_t>(m)]) call.algorithm = BRAID_ALLREDUCE_RING;
        lists[static_cast<size_t>(t)].push_back(call);
      }
    std::vector<double> start(static_cast<size_t>(n));
    std::vector<test::T> tensors;
    for (int i = 0; i < n; ++i) {
      start[static_cast<size_t>(i)] = i + 1;
      std::vector<float> v(kElems, static_cast<float>(i + 1));
      test::T t;
      BRAID_CHECK_OK(braid_tensor_from_host(c.ctx, devs[static_cast<size_t>(i)], BRAID_FLOAT32, 1, &kElems, v.data(),
                                            v.size() * sizeof(float), t.out()));
      tensors.push_back(std::move(t));
    }
    BRAID_CHECK_OK(braid_wait_all(c.ctx));  // every thread starts from the uploaded values
    std::array<braid_status, kThreads> status{};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] {
        for (const Call& call : lists[static_cast<size_t>(t)]) {
          std::vector<braid_tensor> h;
          for (int m : call.members) h.push_back(tensors[static_cast<size_t>(m)].t);
          braid_status st;
          if (call.broadcast) {
            st = braid_broadcast(static_cast<int32_t>(h.size()), h.data(), 0);
          } else {
            braid_collective_options co = BRAID_COLLECTIVE_OPTIONS_INIT;
            co.algorithm = call.algorithm;
            st = braid_allreduce(static_cast<int32_t>(h.size()), h.data(), &co);
          }
          if (st != BRAID_OK && status[static_cast<size_t>(t)] == BRAID_OK) status[static_cast<size_t>(t)] = st;
        }
      });
    for (auto& th : threads) th.join();
    for (braid_status st : status) REQUIRE(st == BRAID_OK);
    BRAID_CHECK_OK(braid_wait_all(c.ctx));
    std::vector<double> got(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      std::vector<float> v(kElems);
      BRAID_CHECK_OK(braid_tensor_to_host(tensors[static_cast<size_t>(i)].t, v.data(), v.size() * sizeof(float)));
      got[static_cast<size_t>(i)] = v[0];
      // Every element the same: no chunk of one call mixed with another's.
      INFO("tensor ", i);
      REQUIRE(std::all_of(v.begin(), v.end(), [&](float x) { return x == v[0]; }));
    }
    const std::set<std::vector<double>> serial = serial_results(lists, start);
    std::string text;
    for (double g : got) text += std::to_string(g) + " ";
    INFO("got ", text);
    REQUIRE(serial.count(got) == 1);
  }
}
