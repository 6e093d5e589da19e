#include "distributed/process_group.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <thread>
#include <vector>

#include "core/dtype.h"
#include "core/env.h"
#include "core/error.h"
#include "distributed/launch_env.h"
#include "distributed/store.h"
#include "ops/call.h"
#include "ops/copy.h"

namespace braid::distributed {

struct ProcessGroup::Call {
  braid_comm_op op = BRAID_COMM_BARRIER;
  braid_dtype dtype = BRAID_UINT8;
  uint64_t count = 0;
  braid_collective_op reduce = BRAID_COLLECTIVE_SUM;
  int32_t peer = 0;
  uint64_t tag = 0;
  std::byte* send = nullptr;
  std::byte* recv = nullptr;
  uint64_t recv_count = 0;  // elements of recv (AVG divides them)
  bool average = false;
  bool host_divides = false;  // AVG in host memory: run() divides; on a device an op pushed after does
  uint64_t seq = 0;           // the group's call number (collectives; 0 for point to point)
};

namespace {

constexpr int32_t kDefaultPort = 29500;
constexpr double kDefaultTimeoutSeconds = 300;

const char* op_name(braid_comm_op op) {
  switch (op) {
    case BRAID_COMM_ALLREDUCE: return "allreduce";
    case BRAID_COMM_BROADCAST: return "broadcast";
    case BRAID_COMM_REDUCE: return "reduce";
    case BRAID_COMM_ALL_GATHER: return "all_gather";
    case BRAID_COMM_REDUCE_SCATTER: return "reduce_scatter";
    case BRAID_COMM_BARRIER: return "barrier";
    case BRAID_COMM_SEND: return "send";
    case BRAID_COMM_RECV: return "recv";
    default: return "?";
  }
}

const char* reduce_name(braid_collective_op op, bool average) {
  if (average) return "avg";
  switch (op) {
    case BRAID_COLLECTIVE_SUM: return "sum";
    case BRAID_COLLECTIVE_PROD: return "prod";
    case BRAID_COLLECTIVE_MAX: return "max";
    case BRAID_COLLECTIVE_MIN: return "min";
    default: return "?";
  }
}

bool reduces(braid_comm_op op) {
  return op == BRAID_COMM_ALLREDUCE || op == BRAID_COMM_REDUCE || op == BRAID_COMM_REDUCE_SCATTER;
}
bool rooted(braid_comm_op op) { return op == BRAID_COMM_BROADCAST || op == BRAID_COMM_REDUCE; }
bool collective_op(braid_comm_op op) { return op != BRAID_COMM_SEND && op != BRAID_COMM_RECV; }

// What every rank must agree on before a collective: exchanged (all-gathered) before it runs.
struct Fingerprint {
  uint64_t seq;
  uint64_t count;
  int32_t op;
  int32_t dtype;
  int32_t peer;
  int32_t reduce;  // with the average bit in bit 8
  bool operator==(const Fingerprint&) const = default;
};
static_assert(sizeof(Fingerprint) == 32);

std::string describe(const Fingerprint& f) {
  const auto op = static_cast<braid_comm_op>(f.op);
  std::string s = cat(op_name(op), " #", f.seq);
  if (op == BRAID_COMM_BARRIER) return s;
  s += cat(" (", dtype_name(static_cast<braid_dtype>(f.dtype)), ", ", f.count, " elements");
  if (reduces(op))
    s += cat(", ", reduce_name(static_cast<braid_collective_op>(f.reduce & 0xff), (f.reduce & 0x100) != 0));
  if (rooted(op)) s += cat(", root ", f.peer);
  return s + ")";
}

Fingerprint fingerprint(const ProcessGroup::Call& c) {
  return {c.seq,
          c.count,
          static_cast<int32_t>(c.op),
          static_cast<int32_t>(c.dtype),
          rooted(c.op) ? c.peer : 0,
          reduces(c.op) ? static_cast<int32_t>(c.reduce) | (c.average ? 0x100 : 0) : 0};
}

// The fingerprint as a 32-bit key (FNV-1a over its bytes, folded): a keyed call's tag.
uint32_t key_of(const Fingerprint& f) {
  uint64_t h = 14695981039346656037ull;
  const auto* bytes = reinterpret_cast<const unsigned char*>(&f);
  for (size_t i = 0; i < sizeof f; ++i) h = (h ^ bytes[i]) * 1099511628211ull;
  return static_cast<uint32_t>(h ^ (h >> 32));
}

std::string describe(const ProcessGroup::Call& c) {
  if (c.op == BRAID_COMM_SEND || c.op == BRAID_COMM_RECV)
    return cat(op_name(c.op), " (", dtype_name(c.dtype), ", ", c.count, " elements, ",
               c.op == BRAID_COMM_SEND ? "to" : "from", " rank ", c.peer, ", tag ", c.tag, ")");
  return describe(fingerprint(c));
}

// A listening port is the process's, not a context's: every group of this process on one port shares
// rank 0's one server, and groups on a port are numbered in the order this process makes them (the
// same order on every rank, as the groups must be made in the same order everywhere).
struct PortState {
  std::weak_ptr<StoreServer> server;
  int32_t groups = 0;
};
std::mutex g_ports_mu;
std::map<int32_t, PortState> g_ports;

}  // namespace

Device* staging_device(Context& ctx) {
  for (auto& d : ctx.devices)
    if (d->props.host_visible) return d.get();
  return nullptr;
}

Device& group_device(Context& ctx, const std::string& backend, int32_t local_rank) {
  std::vector<Device*> of_backend;
  for (auto& d : ctx.devices)
    if (d->api && d->api->name && backend == d->api->name) of_backend.push_back(d.get());
  if (of_backend.empty())
    fail(BRAID_ERR_UNSUPPORTED, "process group: its plugin takes ", backend, " memory, and this context has no ",
         backend, " device (load the ", backend, " backend, or use the gloo plugin, which stages through the host)");
  return *of_backend[static_cast<size_t>(local_rank) % of_backend.size()];
}

GroupSettings resolve_settings(const braid_process_group_options* o) {
  const LaunchEnv e = read_launch_env();
  GroupSettings s;
  s.rank = o && o->rank >= 0 ? o->rank : e.rank >= 0 ? e.rank : 0;
  s.world_size = o && o->world_size > 0 ? o->world_size : e.world_size > 0 ? e.world_size : 1;
  if (o && o->rank < -1) fail(BRAID_ERR_INVALID_ARGUMENT, "rank ", o->rank, " is negative (-1: from the launcher)");
  if (o && o->world_size < 0) fail(BRAID_ERR_INVALID_ARGUMENT, "world_size ", o->world_size, " is negative");
  if (s.rank >= s.world_size)
    fail(BRAID_ERR_INVALID_ARGUMENT, "rank ", s.rank, " is not below the world size ", s.world_size,
         e.rank_from.empty() ? "" : cat(" (the rank came from ", e.rank_from, ")"));
  s.local_rank = e.local_rank >= 0 && (!o || o->rank < 0) ? e.local_rank : s.rank;
  s.local_size = e.local_size > 0 && (!o || o->world_size <= 0) ? e.local_size : s.world_size;
  s.master_addr = o && o->master_addr && *o->master_addr ? o->master_addr
                  : !e.master_addr.empty()               ? e.master_addr
                                                         : "127.0.0.1";
  if (o && (o->master_port < 0 || o->master_port > 65535))
    fail(BRAID_ERR_INVALID_ARGUMENT, "master_port ", o->master_port, " is not a TCP port");
  s.master_port = o && o->master_port > 0 ? o->master_port : e.master_port > 0 ? e.master_port : kDefaultPort;
  s.backend = o && o->backend && *o->backend ? o->backend
              : env("BRAID_DIST_BACKEND")    ? env("BRAID_DIST_BACKEND")
                                             : "gloo";
  double seconds = o ? o->timeout_seconds : 0;
  if (!(seconds >= 0) || std::isinf(seconds) || seconds > 1e7)
    fail(BRAID_ERR_INVALID_ARGUMENT, "timeout_seconds ", seconds, " is not a number of seconds from 0 to 1e7");
  if (seconds == 0) seconds = static_cast<double>(env_u64("BRAID_DIST_TIMEOUT", 0, "a number of seconds"));
  if (seconds == 0) seconds = kDefaultTimeoutSeconds;
  s.timeout = std::chrono::milliseconds(static_cast<int64_t>(std::max(1.0, seconds * 1000)));
  const uint32_t known = BRAID_PROCESS_GROUP_NO_CHECK;
  if (o && (o->flags & ~known))
    fail(BRAID_ERR_INVALID_ARGUMENT, "flags 0x", std::hex, o->flags, " has bits braid does not know");
  const uint64_t check = env_u64("BRAID_DIST_CHECK", 1, "0, 1 or 2");
  if (check > 2) fail(BRAID_ERR_INVALID_ARGUMENT, "BRAID_DIST_CHECK=", check, " is not 0, 1 or 2");
  s.check = (o && (o->flags & BRAID_PROCESS_GROUP_NO_CHECK)) || check == 0 ? GroupSettings::Check::kNone
            : check == 2                                                   ? GroupSettings::Check::kEachCall
                                                                           : GroupSettings::Check::kKeyed;
  s.restart = e.restart;
  s.rejoin_file = e.rejoin_file;
  return s;
}

ProcessGroup::ProcessGroup(Context& ctx, GroupSettings settings) : ctx_(ctx), ctx_ref_(ctx), s_(std::move(settings)) {
  plugin_ = load_comm_plugin(s_.backend, ctx.plugin_path);
  int32_t number = 0;
  {
    std::lock_guard lock(g_ports_mu);
    PortState& p = g_ports[s_.master_port];
    number = p.groups++;
    if (s_.rank == 0) {
      server_ = p.server.lock();
      if (!server_) {
        server_ = std::make_shared<StoreServer>(s_.master_port);
        p.server = server_;
      }
    }
  }
  store_ = std::make_unique<StoreClient>(s_.master_addr, s_.master_port, s_.rank, s_.timeout);
  prefix_ = cat("braid/", s_.restart, "/pg", number, "/");
  // Every rank must agree on the size, and each rank must come once: checked here, by name, rather
  // than left to the plugin's connection step to time out.
  if (store_->add(prefix_ + cat("rank/", s_.rank), 1) != 1)
    fail(BRAID_ERR_INVALID_ARGUMENT, "process group: rank ", s_.rank,
         " joined twice (two processes were given the same rank)");
  const std::string size_text = std::to_string(s_.world_size);
  if (s_.rank == 0) store_->set(prefix_ + "world_size", size_text.data(), size_text.size());
  const auto rank0_size = store_->get(prefix_ + "world_size", s_.timeout);
  if (!rank0_size) fail(BRAID_ERR_TIMEOUT, "process group: rank 0 did not join within ", s_.timeout.count(), " ms");
  if (*rank0_size != size_text)
    fail(BRAID_ERR_INVALID_ARGUMENT, "process group: rank 0 has a world size of ", *rank0_size, " but rank ", s_.rank,
         " has ", size_text);
  const braid_comm_store store = comm_store(*store_);
  const std::string address = local_address(s_.master_addr, s_.master_port);
  const std::string comm_prefix = prefix_ + "comm/";
  if (!(plugin_->api->memory & BRAID_COMM_MEMORY_HOST)) {
    if (!(plugin_->api->memory & BRAID_COMM_MEMORY_CUDA) || plugin_->api->abi_minor < 1)
      fail(BRAID_ERR_UNSUPPORTED, "process group: the ", s_.backend, " plugin takes memory braid cannot give it");
    device_ = &group_device(ctx_, "cuda", s_.local_rank);
    device_pointer_ = reinterpret_cast<void* (*)(braid_backend_buffer)>(
        device_->backend->proc("braid_ext_cuda_buffer_device_pointer"));
    if (!device_pointer_)
      fail(BRAID_ERR_UNSUPPORTED, "process group: the cuda backend of ", device_->id,
           " does not give device pointers (braid_ext_cuda_buffer_device_pointer): it is older than the ", s_.backend,
           " plugin");
  }
  const braid_comm_group_desc desc{sizeof desc,         s_.rank,
                                   s_.world_size,       &store,
                                   comm_prefix.c_str(), static_cast<uint64_t>(s_.timeout.count()),
                                   address.c_str(),     device_ ? device_->backend_index : -1};
  const braid_status st = plugin_->api->group_create(&desc, &comm_);
  if (st != BRAID_OK)
    fail(st, "process group: rank ", s_.rank, " of ", s_.world_size, " could not join through ", s_.backend, ": ",
         plugin_->api->last_error());
  // Keys need the plugin's support (comm ABI 1.1 features); without it the fingerprint is exchanged.
  const braid_comm_api& api = *plugin_->api;
  const bool can_key = api.struct_size >= offsetof(braid_comm_api, features) + sizeof api.features &&
                       (api.features & BRAID_COMM_FEATURE_KEYED_CALLS) != 0;
  keyed_ = can_key && s_.check != GroupSettings::Check::kNone;
  if (s_.check == GroupSettings::Check::kKeyed && !can_key) s_.check = GroupSettings::Check::kEachCall;
  queue_ = std::make_unique<HostQueue>(cat("comm:", s_.backend, ":", number));
  std::lock_guard lock(ctx_.aux_mu);
  ctx_.aux_devices.push_back(&queue_->device());
}

ProcessGroup::~ProcessGroup() {
  EngineDevice* d = &queue_->device();
  (void)ctx_.engine->wait_idle({&d, 1});
  // Said before the connections close, so that a rank whose call fails because this one left can name
  // it and its last call (culprits()) rather than suspect a stall.
  try {
    const std::string calls = std::to_string(next_seq_);
    store_->set(prefix_ + cat("left/", s_.rank), calls.data(), calls.size());
  } catch (...) {  // the store is gone: the others learn nothing more from it anyway
  }
  {
    std::lock_guard lock(ctx_.aux_mu);
    std::erase(ctx_.aux_devices, d);
  }
  queue_.reset();
  if (comm_) plugin_->api->group_destroy(comm_);
  // Rank 0 serves the store: it stays until every rank has left (or died), so that a rank still
  // joining or reporting a failure is not cut off.
  try {
    store_->add(prefix_ + "left", 1);
    if (server_ && server_.use_count() == 1) {
      const auto deadline =
          std::chrono::steady_clock::now() + std::min<std::chrono::milliseconds>(s_.timeout, std::chrono::seconds(10));
      while (std::chrono::steady_clock::now() < deadline &&
             store_->add(prefix_ + "left", 0) + static_cast<int64_t>(store_->dead_ranks().size()) < s_.world_size)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  } catch (...) {  // the store is gone (rank 0 left first): nothing to wait for
  }
  store_.reset();
}

void ProcessGroup::check_reduction(const Tensor& t, braid_collective_op op, const char* what) const {
  const auto v = static_cast<int32_t>(op);
  if (v < 0 || v >= BRAID_COLLECTIVE_OP_COUNT)
    fail(BRAID_ERR_INVALID_ARGUMENT, what, ": op ", v, " is not a braid_collective_op");
  if (t.dtype == BRAID_BOOL)  // its bytes would add up past 1: cast to uint8 or int32 to count, as torch.distributed
    fail(BRAID_ERR_DTYPE, what, ": no reduction of bool tensors (cast to int32 first)");
  if (op == BRAID_COLLECTIVE_AVG && t.dtype != BRAID_FLOAT32 && t.dtype != BRAID_FLOAT64)
    fail(BRAID_ERR_DTYPE, what, ": AVG takes float32 or float64, not ", dtype_name(t.dtype));
}

void ProcessGroup::push(const char* name, Call call, Tensor* in, Tensor* out) {
  for (Tensor* t : {in, out}) {
    if (!t) continue;
    if (t->ctx != &ctx_) fail(BRAID_ERR_INVALID_ARGUMENT, name, ": a tensor of another context than the group's");
    require_computed(*t, name);
  }
  call.dtype = kernel_dtype(call.dtype);  // bool moves as its bytes (reductions refused it above)
  call.host_divides = call.average && !device_;
  const braid_collective_op plugin_reduce = call.average ? BRAID_COLLECTIVE_SUM : call.reduce;
  if (call.op != BRAID_COMM_BARRIER && !plugin_->api->supports(call.op, call.dtype, plugin_reduce))
    fail(BRAID_ERR_DTYPE, name, ": the ", s_.backend, " plugin has no ", op_name(call.op), " of ",
         dtype_name(call.dtype), reduces(call.op) ? cat(" with ", reduce_name(call.reduce, call.average)) : "");
  // One unit (engine.h, PushUnit): the staging copies, the call and the copy back are consecutive in
  // every storage's program order, so calls from several threads on the same tensors give the result of
  // some serial order of them, as one op each; and push_mu_, taken inside it, numbers the calls in the
  // order they reach the queue.
  Engine::PushUnit unit(*ctx_.engine);
  // Tensors outside host memory go through a staging copy on a host-visible device (plugins of host
  // memory); a plugin of device memory takes the group's device's tensors as they are.
  auto staged = [&](Tensor* t) -> TensorRef {
    if (!t || device_ || host_address(*t)) return {};
    Device* host = staging_device(ctx_);
    if (!host)
      fail(BRAID_ERR_UNSUPPORTED, name, ": the tensor is on ", t->device().id,
           ", and no device of this context has host "
           "memory to stage it through (load the CPU backend)");
    return new_tensor(ctx_, *host, t->dtype, t->shape);
  };
  TensorRef in_stage = staged(in);
  TensorRef out_stage = out == in ? TensorRef{} : staged(out);
  Tensor* in_host = in_stage.get() ? in_stage.get() : in;
  Tensor* out_host = out == in ? in_host : out_stage.get() ? out_stage.get() : out;
  if (in_stage.get()) push_range_copy("dist_stage_in", *in, 0, *in_stage, 0, in->shape.numel());
  if (in_host) call.send = address(*in_host, name);
  if (out_host) call.recv = address(*out_host, name);
  std::vector<Storage*> reads, writes;
  if (in_host) reads.push_back(in_host->storage.get());
  if (out_host) {
    writes.push_back(out_host->storage.get());
    out_host->storage->bump_version();
  }
  {
    std::lock_guard lock(push_mu_);
    if (call.op != BRAID_COMM_SEND && call.op != BRAID_COMM_RECV) call.seq = ++next_seq_;
    queue_->push(
        *ctx_.engine, name, [this, call](std::string& message) mutable { return run(call, message); }, reads, writes,
        [this, call](braid_status status, const std::string& why) {
          std::string ignored;
          (void)fail_group(call, status, cat("not run, as an op it reads failed: ", why), ignored);
        });
  }
  if (out && out_host != out) push_range_copy("dist_stage_out", *out_host, 0, *out, 0, out->shape.numel());
  // AVG on a device: the plugin summed; the division is an op on the tensor's device, ordered after.
  if (call.average && !call.host_divides && out && call.recv_count > 0)
    op::copy_into(op::scalar(BRAID_BINARY_DIV, out, static_cast<double>(s_.world_size)).get(), out);
}

std::byte* ProcessGroup::address(const Tensor& t, const char* what) const {
  if (!device_) return host_address(t);
  if (t.storage->device != device_)
    fail(BRAID_ERR_DEVICE, what, ": the ", s_.backend, " group runs on ", device_->id, ", and the tensor is on ",
         t.device().id, " (copy it there first, or use a gloo group, which stages any device through the host)");
  return static_cast<std::byte*>(device_pointer_(t.storage->block.buffer)) + t.start();
}

braid_status ProcessGroup::run(Call& call, std::string& message) {
  if (failed_ != BRAID_OK) {
    message = cat(describe(call), " was not run: the process group failed earlier: ", failure_);
    return failed_;
  }
  const braid_comm_api& api = *plugin_->api;
  const uint64_t timeout_ms = static_cast<uint64_t>(s_.timeout.count());
  const bool collective = collective_op(call.op);
  if (s_.check == GroupSettings::Check::kEachCall && s_.world_size > 1 && collective) {
    const Fingerprint mine = fingerprint(call);
    std::vector<Fingerprint> all(static_cast<size_t>(s_.world_size));
    const braid_comm_call check{sizeof(braid_comm_call),
                                BRAID_COMM_ALL_GATHER,
                                &mine,
                                all.data(),
                                sizeof mine,
                                BRAID_UINT8,
                                BRAID_COLLECTIVE_SUM,
                                0,
                                0,
                                timeout_ms,
                                nullptr,
                                BRAID_COMM_CALL_HOST_MEMORY};
    if (braid_status st = api.run(comm_, &check); st != BRAID_OK)
      return fail_group(call, st, api.last_error(), message);
    for (int32_t r = 0; r < s_.world_size; ++r)
      if (!(all[static_cast<size_t>(r)] == mine))
        return fail_group(
            call, BRAID_ERR_INVALID_STATE,
            cat("the ranks disagree: rank ", r, " called ", describe(all[static_cast<size_t>(r)]), " where rank ",
                s_.rank, " called ", describe(mine), " (every rank must make the same collectives in the same order)"),
            message);
  }
  const bool keyed = keyed_ && collective;
  const braid_comm_call c{sizeof(braid_comm_call),
                          call.op,
                          call.send,
                          call.recv,
                          call.count,
                          call.dtype,
                          call.average ? BRAID_COLLECTIVE_SUM : call.reduce,
                          call.peer,
                          keyed ? key_of(fingerprint(call)) : call.tag,
                          timeout_ms,
                          nullptr,
                          keyed ? BRAID_COMM_CALL_KEYED : 0u};
  if (braid_status st = api.run(comm_, &c); st != BRAID_OK) return fail_group(call, st, api.last_error(), message);
  if (call.host_divides && call.recv) {
    const double n = s_.world_size;
    if (call.dtype == BRAID_FLOAT32) {
      auto* p = reinterpret_cast<float*>(call.recv);
      for (uint64_t i = 0; i < call.recv_count; ++i) p[i] = static_cast<float>(p[i] / n);
    } else {
      auto* p = reinterpret_cast<double*>(call.recv);
      for (uint64_t i = 0; i < call.recv_count; ++i) p[i] /= n;
    }
  }
  return BRAID_OK;
}

braid_status ProcessGroup::fail_group(const Call& call, braid_status status, const std::string& why,
                                      std::string& message) {
  if (failed_ != BRAID_OK) {
    message = failure_;
    return failed_;
  }
  // Close the connections first: the other ranks' calls fail now, not at their own timeouts.
  if (comm_) {
    plugin_->api->group_destroy(comm_);
    comm_ = nullptr;
  }
  // The failed call as this rank made it: a rank that made another call names both from it.
  try {
    const std::string record = cat(call.seq, " ", describe(call));
    store_->set(prefix_ + cat("failed/", s_.rank), record.data(), record.size());
  } catch (...) {  // culprits() says what is wrong with the store
  }
  bool mismatch = false;
  const std::string who = culprits(call, &mismatch);
  failed_ = mismatch ? BRAID_ERR_INVALID_STATE : status;
  failure_ = mismatch ? cat("rank ", s_.rank, " of ", s_.world_size, ": ", describe(call), " failed: ", who)
                      : cat("rank ", s_.rank, " of ", s_.world_size, ": ", describe(call), " failed: ", why,
                            who.empty() ? "" : "; " + who);
  status = failed_;
  message = failure_;
  return status;
}

// Which ranks are to blame, as far as the store can tell: a rank whose own failed call at this sequence
// number differs from this one (a mismatch: keyed calls that differ time out on both sides; looked at
// first, since that rank may have died or left since), else those that died (their store connection
// closed without a goodbye), else those that left the group before making this call (released it
// after fewer calls, as uneven batch counts do), else a mismatch recorded within a short grace, else
// those that did not report a failure of their own by then (alive but stalled, or not making the call).
std::string ProcessGroup::culprits(const Call& call, bool* mismatch) {
  const uint64_t seq = call.seq;
  const std::string mine = describe(call);
  // "<seq> <call>": a rank that failed in another call than this one at this sequence number made a
  // different call here.
  auto disagreement = [&](int32_t r, const std::string& record) -> std::string {
    const size_t space = record.find(' ');
    const std::string theirs = space == std::string::npos ? "" : record.substr(space + 1);
    if (!collective_op(call.op) || theirs.empty() || theirs == mine || record.substr(0, space) != cat(seq)) return {};
    *mismatch = true;
    return cat("the ranks disagree: rank ", r, " called ", theirs, " where rank ", s_.rank, " called ", mine,
               " (every rank must make the same collectives in the same order)");
  };
  try {
    for (int32_t r = 0; r < s_.world_size; ++r)
      if (r != s_.rank)
        if (auto record = store_->get(prefix_ + cat("failed/", r), std::chrono::milliseconds(0)))
          if (std::string why = disagreement(r, *record); !why.empty()) return why;
    const std::vector<int32_t> dead = store_->dead_ranks();
    if (!dead.empty()) {
      std::string list;
      for (int32_t r : dead) list += (list.empty() ? "" : ", ") + std::to_string(r);
      return cat(dead.size() == 1 ? "rank " : "ranks ", list, dead.size() == 1 ? " has" : " have",
                 " died (the connection to the rendezvous store closed without a goodbye)");
    }
    std::string left;
    for (int32_t r = 0; r < s_.world_size; ++r)
      if (r != s_.rank)
        if (auto calls = store_->get(prefix_ + cat("left/", r), std::chrono::milliseconds(0)))
          if (std::strtoull(calls->c_str(), nullptr, 10) < seq)  // it left before making this call
            left += cat(left.empty() ? "" : "; ", "rank ", r, " left the group after ", *calls, " call(s)");
    if (!left.empty())
      return cat(left, ": the ranks made different numbers of collectives (uneven batch counts? docs/DISTRIBUTED.md, ",
                 "\"Uneven batch counts\")");
    const auto grace = std::min<std::chrono::milliseconds>(s_.timeout, std::chrono::seconds(3));
    const auto deadline = std::chrono::steady_clock::now() + grace;
    std::string silent;
    for (int32_t r = 0; r < s_.world_size; ++r) {
      if (r == s_.rank) continue;
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      const auto record = store_->get(prefix_ + cat("failed/", r), std::max(left, std::chrono::milliseconds(0)));
      if (!record) {
        silent += (silent.empty() ? "" : ", ") + std::to_string(r);
        continue;
      }
      if (std::string why = disagreement(r, *record); !why.empty()) return why;
    }
    if (!silent.empty())
      return cat("rank(s) ", silent, " did not fail with it: they are alive but did not make call #", seq,
                 " (stalled, or making other calls)");
    return {};
  } catch (const Error&) {
    return "the rendezvous store does not answer: rank 0, which serves it, has exited or is unreachable";
  }
}

bool ProcessGroup::rejoin_pending() {
  const std::string key = prefix_ + cat("rejoin/", ++rejoin_checks_);
  if (s_.rank == 0) {
    const bool pending = !s_.rejoin_file.empty() && ::access(s_.rejoin_file.c_str(), F_OK) == 0;
    store_->set(key, pending ? "1" : "0", 1);
    return pending;
  }
  const auto answer = store_->get(key, s_.timeout);
  if (!answer)
    fail(BRAID_ERR_TIMEOUT, "process_group_rejoin_pending: rank ", s_.rank, " of ", s_.world_size, ": rank 0 did not ",
         "answer check #", rejoin_checks_, " within ", s_.timeout.count(), " ms (every rank must make the call)");
  return *answer == "1";
}

void ProcessGroup::allreduce(Tensor& t, braid_collective_op op) {
  check_reduction(t, op, "process_group_allreduce");
  Call c;
  c.op = BRAID_COMM_ALLREDUCE;
  c.dtype = t.dtype;
  c.count = c.recv_count = static_cast<uint64_t>(t.shape.numel());
  c.reduce = op;
  c.average = op == BRAID_COLLECTIVE_AVG;
  push("dist_allreduce", c, &t, &t);
}

void ProcessGroup::broadcast(Tensor& t, int32_t root) {
  if (root < 0 || root >= s_.world_size)
    fail(BRAID_ERR_INVALID_ARGUMENT, "process_group_broadcast: root ", root, " is not a rank of ", s_.world_size);
  Call c;
  c.op = BRAID_COMM_BROADCAST;
  c.dtype = t.dtype;
  c.count = static_cast<uint64_t>(t.shape.numel());
  c.peer = root;
  push("dist_broadcast", c, &t, &t);  // reads t too: root's value is what goes out
}

void ProcessGroup::reduce(Tensor& t, int32_t root, braid_collective_op op) {
  check_reduction(t, op, "process_group_reduce");
  if (root < 0 || root >= s_.world_size)
    fail(BRAID_ERR_INVALID_ARGUMENT, "process_group_reduce: root ", root, " is not a rank of ", s_.world_size);
  Call c;
  c.op = BRAID_COMM_REDUCE;
  c.dtype = t.dtype;
  c.count = static_cast<uint64_t>(t.shape.numel());
  c.recv_count = s_.rank == root ? c.count : 0;
  c.reduce = op;
  c.average = op == BRAID_COLLECTIVE_AVG;
  c.peer = root;
  push("dist_reduce", c, &t, &t);
}

void ProcessGroup::all_gather(Tensor& in, Tensor& out) {
  if (in.dtype != out.dtype)
    fail(BRAID_ERR_DTYPE, "process_group_all_gather: in is ", dtype_name(in.dtype), " but out is ",
         dtype_name(out.dtype));
  if (out.shape.numel() != in.shape.numel() * s_.world_size)
    fail(BRAID_ERR_SHAPE, "process_group_all_gather: out has ", out.shape.numel(), " elements; it needs world size (",
         s_.world_size, ") x in's ", in.shape.numel());
  if (in.storage == out.storage) fail(BRAID_ERR_INVALID_ARGUMENT, "process_group_all_gather: in and out share storage");
  Call c;
  c.op = BRAID_COMM_ALL_GATHER;
  c.dtype = in.dtype;
  c.count = static_cast<uint64_t>(in.shape.numel());
  push("dist_all_gather", c, &in, &out);
}

void ProcessGroup::reduce_scatter(Tensor& in, Tensor& out, braid_collective_op op) {
  check_reduction(in, op, "process_group_reduce_scatter");
  if (in.dtype != out.dtype)
    fail(BRAID_ERR_DTYPE, "process_group_reduce_scatter: in is ", dtype_name(in.dtype), " but out is ",
         dtype_name(out.dtype));
  if (in.shape.numel() != out.shape.numel() * s_.world_size)
    fail(BRAID_ERR_SHAPE, "process_group_reduce_scatter: in has ", in.shape.numel(), " elements; it needs world size (",
         s_.world_size, ") x out's ", out.shape.numel());
  if (in.storage == out.storage)
    fail(BRAID_ERR_INVALID_ARGUMENT, "process_group_reduce_scatter: in and out share storage");
  Call c;
  c.op = BRAID_COMM_REDUCE_SCATTER;
  c.dtype = in.dtype;
  c.count = c.recv_count = static_cast<uint64_t>(out.shape.numel());
  c.reduce = op;
  c.average = op == BRAID_COLLECTIVE_AVG;
  push("dist_reduce_scatter", c, &in, &out);
}

void ProcessGroup::barrier() {
  std::shared_ptr<OpNode> node;
  {
    Call c;
    Engine::PushUnit unit(*ctx_.engine);
    std::lock_guard lock(push_mu_);
    c.seq = ++next_seq_;
    node = queue_->push(*ctx_.engine, "dist_barrier",
                        [this, c](std::string& message) mutable { return run(c, message); }, {}, {});
  }
  WaitResult r = ctx_.engine->wait(node);
  if (r.status != BRAID_OK) fail(r.status, r.message);
}

void ProcessGroup::point_to_point(braid_comm_op op, Tensor& t, int32_t peer, int32_t tag) {
  const bool sending = op == BRAID_COMM_SEND;
  if (peer < 0 || peer >= s_.world_size || peer == s_.rank)
    fail(BRAID_ERR_INVALID_ARGUMENT, sending ? "process_group_send" : "process_group_recv", ": rank ", peer,
         " is not another rank of ", s_.world_size);
  Call c;
  c.op = op;
  c.dtype = t.dtype;
  c.count = static_cast<uint64_t>(t.shape.numel());
  c.peer = peer;
  c.tag = static_cast<uint64_t>(static_cast<uint32_t>(tag));
  if (sending)
    push("dist_send", c, &t, nullptr);
  else
    push("dist_recv", c, nullptr, &t);
}

void ProcessGroup::send(Tensor& t, int32_t peer, int32_t tag) { point_to_point(BRAID_COMM_SEND, t, peer, tag); }

void ProcessGroup::recv(Tensor& t, int32_t peer, int32_t tag) { point_to_point(BRAID_COMM_RECV, t, peer, tag); }

}  // namespace braid::distributed
