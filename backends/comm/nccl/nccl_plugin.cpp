// libbraid-comm-nccl.so: braid's communication plugin over NCCL for tensors in CUDA memory. It sees
// abi/, cudart (linked statically, like the CUDA backend: a machine without a driver still loads it)
// and NCCL's header; libnccl.so.2 itself is opened at run time (BRAID_NCCL_LIBRARY, then the loader's
// path, then the toolkit the plugin was built against), so the plugin loads anywhere and says through
// `available` why it cannot work where NCCL or a GPU is missing (docs/DISTRIBUTED.md, "NCCL").
//
// How it keeps braid's promises on top of NCCL:
//  - every communicator is made non-blocking (ncclConfig_t.blocking = 0), so that joining and every
//    call can be given up at the timeout: the plugin polls ncclCommGetAsyncError and the call's end
//    (a CUDA event) and calls ncclCommAbort when the time is up or NCCL reports an error;
//  - the unique id travels through the host's rendezvous store (rank 0 makes it);
//  - a call with stream NULL runs on the group's own stream and returns when it has ended on the
//    device (what the host's comm queue expects today); a call given a stream is only enqueued;
//  - BRAID_COMM_CALL_HOST_MEMORY calls (the host's check of the ranks' calls) are staged through a
//    device buffer of the group's;
//  - BARRIER is an allreduce of one int on that buffer; SEND/RECV are refused (NCCL matches them in
//    order with equal counts and blocks the sender on the device, where braid's are tagged);
//  - MAX and MIN are offered for integers only: NCCL's floating max/min drop NaN, braid's keep it.
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "braid_comm.h"
#include "plugin_common.h"

namespace {

using namespace braid::comm_plugin;

// ---- libnccl.so.2, opened once ------------------------------------------------------------------
struct Nccl {
  decltype(&::ncclGetErrorString) error_string = nullptr;
  decltype(&::ncclGetLastError) last_error = nullptr;
  decltype(&::ncclGetUniqueId) get_unique_id = nullptr;
  decltype(&::ncclCommInitRankConfig) init_rank_config = nullptr;
  decltype(&::ncclCommGetAsyncError) async_error = nullptr;
  decltype(&::ncclCommFinalize) finalize = nullptr;
  decltype(&::ncclCommDestroy) destroy = nullptr;
  decltype(&::ncclCommAbort) abort = nullptr;
  decltype(&::ncclAllReduce) all_reduce = nullptr;
  decltype(&::ncclBroadcast) broadcast = nullptr;
  decltype(&::ncclReduce) reduce = nullptr;
  decltype(&::ncclAllGather) all_gather = nullptr;
  decltype(&::ncclReduceScatter) reduce_scatter = nullptr;
  decltype(&::ncclSend) send = nullptr;
  decltype(&::ncclRecv) recv = nullptr;
  std::string why;  // empty once everything resolved
};

template <typename Fn>
bool resolve(void* lib, const char* name, Fn& fn, std::string& why) {
  fn = reinterpret_cast<Fn>(dlsym(lib, name));
  if (fn == nullptr && why.empty()) why = std::string("libnccl has no ") + name + " (NCCL 2.14 or newer is needed)";
  return fn != nullptr;
}

const Nccl& nccl() {
  static const Nccl n = [] {
    Nccl r;
    std::string tried;
    void* lib = nullptr;
    const char* chosen = std::getenv("BRAID_NCCL_LIBRARY");
    const std::string candidates[] = {chosen && *chosen ? chosen : "", "libnccl.so.2",
                                      std::string(BRAID_CUDA_TOOLKIT_LIB) + "/libnccl.so.2"};
    for (const std::string& path : candidates) {
      if (path.empty()) continue;
      lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (lib) break;
      const char* e = dlerror();
      tried += (tried.empty() ? "" : "; ") + (e ? std::string(e) : path);
      if (chosen && path == chosen) break;  // the one asked for, or none: never another silently
    }
    if (!lib) {
      r.why = "libnccl.so.2 could not be opened (" + tried + "); set BRAID_NCCL_LIBRARY to its path";
      return r;
    }
    resolve(lib, "ncclGetErrorString", r.error_string, r.why);
    resolve(lib, "ncclGetLastError", r.last_error, r.why);
    resolve(lib, "ncclGetUniqueId", r.get_unique_id, r.why);
    resolve(lib, "ncclCommInitRankConfig", r.init_rank_config, r.why);
    resolve(lib, "ncclCommGetAsyncError", r.async_error, r.why);
    resolve(lib, "ncclCommFinalize", r.finalize, r.why);
    resolve(lib, "ncclCommDestroy", r.destroy, r.why);
    resolve(lib, "ncclCommAbort", r.abort, r.why);
    resolve(lib, "ncclAllReduce", r.all_reduce, r.why);
    resolve(lib, "ncclBroadcast", r.broadcast, r.why);
    resolve(lib, "ncclReduce", r.reduce, r.why);
    resolve(lib, "ncclAllGather", r.all_gather, r.why);
    resolve(lib, "ncclReduceScatter", r.reduce_scatter, r.why);
    resolve(lib, "ncclSend", r.send, r.why);
    resolve(lib, "ncclRecv", r.recv, r.why);
    return r;  // the library stays open: NCCL's threads and the driver's callbacks live in it
  }();
  return n;
}

// NCCL's result, and its last message: one process-wide string that NCCL never clears, so it may be
// older than this call or another group's; it is labelled as such.
std::string nccl_message(ncclResult_t r, ncclComm_t comm) {
  std::string m = nccl().error_string ? nccl().error_string(r) : "NCCL error";
  const char* detail = nccl().last_error ? nccl().last_error(comm) : nullptr;
  if (detail && *detail) m += std::string(" (NCCL's last message, possibly older: ") + detail + ")";
  return m;
}

std::string cuda_message(const char* what, cudaError_t e) {
  return std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
}

// Makes `device` current for a scope (group_create runs on the application's thread, whose current
// device is the application's) and puts the previous one back.
class CurrentDevice {
 public:
  explicit CurrentDevice(int device) {
    if (cudaGetDevice(&previous_) != cudaSuccess) {
      previous_ = -1;
      (void)cudaGetLastError();  // this class's own failure, not one of the thread's
    }
    status_ = previous_ == device ? cudaSuccess : cudaSetDevice(device);
    if (status_ != cudaSuccess) (void)cudaGetLastError();
  }
  ~CurrentDevice() {
    if (previous_ >= 0 && status_ == cudaSuccess && cudaSetDevice(previous_) != cudaSuccess) (void)cudaGetLastError();
  }
  CurrentDevice(const CurrentDevice&) = delete;
  CurrentDevice& operator=(const CurrentDevice&) = delete;
  cudaError_t status() const { return status_; }

 private:
  int previous_ = -1;
  cudaError_t status_ = cudaSuccess;
};

}  // namespace

struct braid_comm_group_t {
  int device = 0;
  int rank = 0;
  int size = 1;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  cudaEvent_t done = nullptr;
  void* scratch = nullptr;  // device memory for host-memory calls and barriers
  size_t scratch_bytes = 0;
  std::chrono::milliseconds timeout{0};
  bool broken = false;  // aborted after a failure: destroy frees, nothing more

  ~braid_comm_group_t() {
    CurrentDevice current(device);
    if (comm) {
      // A healthy communicator is finalized (its pending work flushed) within a short grace, then
      // destroyed; a broken one, or one whose peers are gone, is aborted, which never blocks.
      const ncclResult_t f = broken ? ncclInternalError : nccl().finalize(comm);
      const bool clean = f == ncclSuccess || f == ncclInProgress;
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      ncclResult_t state = ncclInProgress;
      while (clean && state == ncclInProgress && std::chrono::steady_clock::now() < deadline) {
        if (nccl().async_error(comm, &state) != ncclSuccess) break;
        if (state == ncclInProgress) std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
      if (clean && state == ncclSuccess)
        (void)nccl().destroy(comm);
      else
        (void)nccl().abort(comm);
    }
    // In stream order, so that no wait for the whole device (cudaFree) can block here; a stream
    // destroyed with work still queued releases it when that work ends.
    if (scratch && stream) (void)cudaFreeAsync(scratch, stream);
    if (done) (void)cudaEventDestroy(done);
    if (stream) (void)cudaStreamDestroy(stream);
  }
};

namespace {

// Waits for the communicator's pending work to be enqueued (non-blocking communicators return
// ncclInProgress), then for `done` (recorded after it) unless wait_device is false. Aborts the group
// on an error or at the deadline.
braid_status settle(braid_comm_group g, const char* what, std::chrono::steady_clock::time_point deadline,
                    bool wait_device) {
  bool enqueued = false, recorded = false;
  for (unsigned spins = 0;; ++spins) {
    ncclResult_t state = ncclSuccess;
    if (ncclResult_t r = nccl().async_error(g->comm, &state); r != ncclSuccess) state = r;
    if (state != ncclSuccess && state != ncclInProgress) {
      const std::string m = nccl_message(state, g->comm);
      (void)nccl().abort(g->comm);
      g->comm = nullptr;
      g->broken = true;
      return failed(state == ncclRemoteError || state == ncclSystemError ? BRAID_ERR_IO : BRAID_ERR_INTERNAL,
                    std::string(what) + ": " + m);
    }
    if (state == ncclSuccess) enqueued = true;
    if (enqueued && !wait_device) return BRAID_OK;
    if (enqueued && !recorded) {
      if (cudaError_t e = cudaEventRecord(g->done, g->stream); e != cudaSuccess) {
        g->broken = true;
        return failed(BRAID_ERR_IO, cuda_message(what, e));
      }
      recorded = true;
    }
    if (recorded) {
      const cudaError_t e = cudaEventQuery(g->done);
      if (e == cudaSuccess) return BRAID_OK;
      if (e != cudaErrorNotReady) {
        g->broken = true;
        return failed(BRAID_ERR_IO, cuda_message(what, e));
      }
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      (void)nccl().abort(g->comm);
      g->comm = nullptr;
      g->broken = true;
      return failed(BRAID_ERR_TIMEOUT, std::string(what) +
                                           ": timed out (a peer died, stalls, or makes another call); the "
                                           "communicator was aborted");
    }
    // Short calls end within microseconds; long ones are not worth a core of busy waiting.
    if (spins < 200)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

// The group's staging buffer, at least `bytes`: made at create for the host's fingerprint exchange and
// barriers; a larger call grows it in stream order (cudaFree would wait for the whole device, behind
// other groups' kernels that may be waiting on a peer).
braid_status ensure_scratch(braid_comm_group g, size_t bytes) {
  if (bytes <= g->scratch_bytes) return BRAID_OK;
  if (g->scratch) (void)cudaFreeAsync(g->scratch, g->stream);
  g->scratch = nullptr;
  g->scratch_bytes = 0;
  if (cudaError_t e = cudaMallocAsync(&g->scratch, bytes, g->stream); e != cudaSuccess) {
    (void)cudaGetLastError();
    return failed(BRAID_ERR_OUT_OF_MEMORY, cuda_message("cudaMallocAsync of the group's staging buffer", e));
  }
  g->scratch_bytes = bytes;
  return BRAID_OK;
}

bool nccl_dtype(braid_dtype d, ncclDataType_t& out) {
  switch (d) {
    case BRAID_FLOAT32: out = ncclFloat32; return true;
    case BRAID_FLOAT64: out = ncclFloat64; return true;
    case BRAID_FLOAT16: out = ncclFloat16; return true;
    case BRAID_BFLOAT16: out = ncclBfloat16; return true;
    case BRAID_INT32: out = ncclInt32; return true;
    case BRAID_INT64: out = ncclInt64; return true;
    case BRAID_UINT8: out = ncclUint8; return true;
    default: return false;
  }
}

bool floating(braid_dtype d) {
  return d == BRAID_FLOAT32 || d == BRAID_FLOAT64 || d == BRAID_FLOAT16 || d == BRAID_BFLOAT16;
}

bool nccl_reduction(braid_collective_op op, braid_dtype d, ncclRedOp_t& out) {
  switch (op) {
    case BRAID_COLLECTIVE_SUM: out = ncclSum; return true;
    case BRAID_COLLECTIVE_PROD: out = ncclProd; return true;
    // NaN wins in braid's MAX/MIN (torch.maximum's rule); NCCL's floating max/min drop it.
    case BRAID_COLLECTIVE_MAX: out = ncclMax; return !floating(d);
    case BRAID_COLLECTIVE_MIN: out = ncclMin; return !floating(d);
    default: return false;  // AVG: the host divides the sum
  }
}

int32_t nccl_supports(braid_comm_op op, braid_dtype dtype, braid_collective_op reduce) {
  if (static_cast<uint32_t>(op) >= BRAID_COMM_OP_COUNT) return 0;
  // NCCL matches point-to-point calls in order, with equal counts, and a send waits on the device for
  // its receive: braid's tagged, buffered SEND/RECV would mix or hang. Refused until they carry a header.
  if (op == BRAID_COMM_SEND || op == BRAID_COMM_RECV) return 0;
  if (op == BRAID_COMM_BARRIER) return 1;
  ncclDataType_t t;
  ncclRedOp_t r;
  if (!nccl_dtype(dtype, t)) return 0;
  return !reduces(op) || nccl_reduction(reduce, dtype, r) ? 1 : 0;
}

int32_t nccl_available(const char** reason) {
  static std::string why;
  static std::once_flag once;
  std::call_once(once, [] {
    why = nccl().why;
    if (!why.empty()) return;
    int count = 0;
    if (cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess) {
      why = "no CUDA device: " + cuda_message("cudaGetDeviceCount", e);
      (void)cudaGetLastError();
    } else if (count == 0) {
      why = "no CUDA device";
    }
  });
  if (reason) *reason = why.c_str();
  return why.empty() ? 1 : 0;
}

braid_status nccl_group_create(const braid_comm_group_desc* desc, braid_comm_group* out) {
  if (!desc || !out || !desc->store || !desc->prefix)
    return failed(BRAID_ERR_INVALID_ARGUMENT, "group_create: incomplete description");
  if (desc->struct_size < offsetof(braid_comm_group_desc, device) + sizeof desc->device)
    return failed(BRAID_ERR_ABI_MISMATCH, "group_create: a host of comm ABI 1.0 cannot name the CUDA device");
  if (desc->size < 1 || desc->rank < 0 || desc->rank >= desc->size)
    return failed(BRAID_ERR_INVALID_ARGUMENT, "group_create: rank " + std::to_string(desc->rank) +
                                                  " is outside a group of " + std::to_string(desc->size));
  const char* reason = nullptr;
  if (!nccl_available(&reason)) return failed(BRAID_ERR_UNSUPPORTED, reason);
  // One deadline for the whole join: the store's wait for the id and NCCL's set-up share the timeout.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(desc->timeout_ms);
  auto g = std::make_unique<braid_comm_group_t>();
  g->device = desc->device;
  g->rank = desc->rank;
  g->size = desc->size;
  g->timeout = std::chrono::milliseconds(desc->timeout_ms);
  CurrentDevice current(desc->device);
  if (current.status() != cudaSuccess)
    return failed(
        BRAID_ERR_INVALID_ARGUMENT,
        cuda_message(("group_create: CUDA device " + std::to_string(desc->device)).c_str(), current.status()));
  if (cudaError_t e = cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking); e != cudaSuccess)
    return failed(BRAID_ERR_OUT_OF_MEMORY, cuda_message("group_create: cudaStreamCreateWithFlags", e));
  if (cudaError_t e = cudaEventCreateWithFlags(&g->done, cudaEventDisableTiming); e != cudaSuccess)
    return failed(BRAID_ERR_OUT_OF_MEMORY, cuda_message("group_create: cudaEventCreateWithFlags", e));
  // Room for the host's fingerprint exchange (32 bytes in, 32 per rank out) and a barrier's int.
  if (braid_status st = ensure_scratch(g.get(), 4096 + 64 * static_cast<size_t>(desc->size)); st != BRAID_OK) return st;
  // The unique id: made by rank 0, fetched by the others through the host's store.
  ncclUniqueId id{};
  const std::string key = std::string(desc->prefix) + "nccl_id";
  if (desc->rank == 0) {
    if (ncclResult_t r = nccl().get_unique_id(&id); r != ncclSuccess)
      return failed(BRAID_ERR_IO, "group_create: ncclGetUniqueId: " + nccl_message(r, nullptr));
    if (desc->store->set(desc->store->user, key.c_str(), &id, sizeof id) != BRAID_OK)
      return failed(BRAID_ERR_IO, "group_create: the rendezvous store did not take the NCCL id");
  } else {
    uint64_t size = 0;
    const braid_status st = desc->store->get(desc->store->user, key.c_str(), &id, sizeof id, &size, desc->timeout_ms);
    if (st == BRAID_ERR_TIMEOUT)
      return failed(BRAID_ERR_TIMEOUT, "group_create: rank 0 did not publish the NCCL id within " +
                                           std::to_string(desc->timeout_ms) + " ms");
    if (st != BRAID_OK || size != sizeof id)
      return failed(BRAID_ERR_IO, "group_create: the NCCL id from the rendezvous store is unreadable");
  }
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclResult_t r = nccl().init_rank_config(&g->comm, desc->size, id, desc->rank, &config);
  if (r != ncclSuccess && r != ncclInProgress) {
    const std::string m = nccl_message(r, g->comm);
    if (g->comm) (void)nccl().abort(g->comm);
    g->comm = nullptr;
    return failed(BRAID_ERR_IO, "group_create: ncclCommInitRankConfig: " + m);
  }
  if (braid_status st = settle(g.get(), "joining the group (ncclCommInitRankConfig)", deadline, false); st != BRAID_OK)
    return st;
  *out = g.release();
  return BRAID_OK;
}

void nccl_group_destroy(braid_comm_group group) { std::unique_ptr<braid_comm_group_t> owned(group); }

// The call as NCCL takes it, enqueued on `stream`.
ncclResult_t enqueue(braid_comm_group g, const braid_comm_call& c, const void* send, void* recv, cudaStream_t stream) {
  const Nccl& n = nccl();
  ncclDataType_t t = ncclUint8;
  ncclRedOp_t op = ncclSum;
  (void)nccl_dtype(c.dtype, t);
  (void)nccl_reduction(c.reduce, c.dtype, op);
  switch (c.op) {
    case BRAID_COMM_ALLREDUCE: return n.all_reduce(send ? send : recv, recv, c.count, t, op, g->comm, stream);
    case BRAID_COMM_BROADCAST: return n.broadcast(recv, recv, c.count, t, c.peer, g->comm, stream);
    case BRAID_COMM_REDUCE: return n.reduce(send ? send : recv, recv, c.count, t, op, c.peer, g->comm, stream);
    case BRAID_COMM_ALL_GATHER: return n.all_gather(send, recv, c.count, t, g->comm, stream);
    case BRAID_COMM_REDUCE_SCATTER: return n.reduce_scatter(send, recv, c.count, t, op, g->comm, stream);
    case BRAID_COMM_SEND: return n.send(send, c.count, t, c.peer, g->comm, stream);
    case BRAID_COMM_RECV: return n.recv(recv, c.count, t, c.peer, g->comm, stream);
    default: return ncclInvalidArgument;
  }
}

// Element counts of send and recv for a call, by op (braid_comm.h).
void io_counts(const braid_comm_call& c, int size, uint64_t& in, uint64_t& out) {
  const uint64_t n = static_cast<uint64_t>(size);
  switch (c.op) {
    case BRAID_COMM_ALL_GATHER: in = c.count, out = c.count * n; return;
    case BRAID_COMM_REDUCE_SCATTER: in = c.count * n, out = c.count; return;
    case BRAID_COMM_BARRIER: in = out = 0; return;
    default: in = out = c.count; return;
  }
}

// A refused enqueue puts a non-blocking communicator into its error state, whatever the reason
// (NCCL's rule: abort it then): the message first, as the abort may change NCCL's last message.
braid_status enqueue_failed(braid_comm_group g, ncclResult_t r) {
  const std::string m = std::string("run: ") + nccl_message(r, g->comm);
  (void)nccl().abort(g->comm);
  g->comm = nullptr;
  g->broken = true;
  return failed(r == ncclInvalidArgument || r == ncclInvalidUsage ? BRAID_ERR_INVALID_ARGUMENT : BRAID_ERR_IO, m);
}

braid_status nccl_run(braid_comm_group g, const braid_comm_call* call) {
  if (!g || !call || call->struct_size < offsetof(braid_comm_call, flags))
    return failed(BRAID_ERR_INVALID_ARGUMENT, "run: incomplete call");
  if (g->broken || !g->comm) return failed(BRAID_ERR_INVALID_STATE, "run: the group failed earlier");
  if (!nccl_supports(call->op, call->dtype, call->reduce))
    return failed(BRAID_ERR_UNSUPPORTED, "run: NCCL has no such op, dtype and reduction here");
  const bool p2p = call->op == BRAID_COMM_SEND || call->op == BRAID_COMM_RECV;
  const bool rooted = p2p || call->op == BRAID_COMM_BROADCAST || call->op == BRAID_COMM_REDUCE;
  if (rooted && (call->peer < 0 || call->peer >= g->size || (p2p && call->peer == g->rank)))
    return failed(BRAID_ERR_INVALID_ARGUMENT, "run: rank " + std::to_string(call->peer) + " is not a peer");
  const uint32_t flags = call->struct_size >= offsetof(braid_comm_call, flags) + sizeof call->flags ? call->flags : 0;
  const bool host = (flags & BRAID_COMM_CALL_HOST_MEMORY) != 0;
  CurrentDevice current(g->device);  // the caller's device is put back afterwards
  const auto deadline =
      std::chrono::steady_clock::now() + (call->timeout_ms ? std::chrono::milliseconds(call->timeout_ms) : g->timeout);
  const char* what = "NCCL call";
  braid_comm_call c = *call;
  if (c.op == BRAID_COMM_BARRIER) {  // an allreduce of one int on the staging buffer
    if (braid_status st = ensure_scratch(g, 64); st != BRAID_OK) return st;
    c.op = BRAID_COMM_ALLREDUCE;
    c.dtype = BRAID_INT32;
    c.reduce = BRAID_COLLECTIVE_SUM;
    c.count = 1;
    c.send = nullptr;
    c.recv = g->scratch;
    what = "barrier";
  }
  const void* send = c.send;
  void* recv = c.recv;
  uint64_t in_count = 0, out_count = 0;
  io_counts(c, g->size, in_count, out_count);
  const size_t width = dtype_bytes(c.dtype);
  const size_t in_bytes = send ? in_count * width : 0, out_bytes = recv ? out_count * width : 0;
  if (host && call->op != BRAID_COMM_BARRIER) {
    // Staged: input then output in the group's buffer (in place when the caller's are one buffer).
    const bool in_place = send == recv || !send;
    const size_t need = in_place ? std::max(in_bytes, out_bytes) : in_bytes + out_bytes;
    if (braid_status st = ensure_scratch(g, need + 64); st != BRAID_OK) return st;
    auto* base = static_cast<std::byte*>(g->scratch);
    void* staged_out = in_place ? base : base + in_bytes;
    if (send && cudaMemcpyAsync(base, send, in_bytes, cudaMemcpyHostToDevice, g->stream) != cudaSuccess) {
      (void)cudaGetLastError();
      return failed(BRAID_ERR_IO, "run: staging the input to the device failed");
    }
    if (recv && recv != send && c.op != BRAID_COMM_ALL_GATHER && c.op != BRAID_COMM_REDUCE_SCATTER &&
        cudaMemcpyAsync(staged_out, recv, out_bytes, cudaMemcpyHostToDevice, g->stream) != cudaSuccess) {
      (void)cudaGetLastError();  // broadcast and reduce keep what they do not write
      return failed(BRAID_ERR_IO, "run: staging the output to the device failed");
    }
    if (ncclResult_t r = enqueue(g, c, send ? base : nullptr, recv ? staged_out : nullptr, g->stream);
        r != ncclSuccess && r != ncclInProgress)
      return enqueue_failed(g, r);
    // The collective ends (or times out) first: a copy into pageable memory would wait for it with no
    // timeout. The copy back then has nothing to wait for.
    if (braid_status st = settle(g, "a staged call", deadline, true); st != BRAID_OK) return st;
    if (recv && (cudaMemcpyAsync(recv, staged_out, out_bytes, cudaMemcpyDeviceToHost, g->stream) != cudaSuccess ||
                 cudaStreamSynchronize(g->stream) != cudaSuccess)) {
      (void)cudaGetLastError();
      return failed(BRAID_ERR_IO, "run: copying the result back to host memory failed");
    }
    return BRAID_OK;
  }
  cudaStream_t stream = call->stream ? static_cast<cudaStream_t>(call->stream) : g->stream;
  if (ncclResult_t r = enqueue(g, c, send, recv, stream); r != ncclSuccess && r != ncclInProgress)
    return enqueue_failed(g, r);
  // Given a stream, the host orders the call's end itself; with none, it ends here.
  return settle(g, what, deadline, call->stream == nullptr);
}

const braid_comm_api kApi = {
    sizeof(braid_comm_api),
    BRAID_COMM_ABI_MAJOR,
    BRAID_COMM_ABI_MINOR,
    "nccl",
    BRAID_COMM_MEMORY_CUDA,
    &nccl_available,
    &nccl_group_create,
    &nccl_group_destroy,
    &nccl_supports,
    &nccl_run,
    &last_error,
    0,  // no keyed calls: NCCL has no tags, so the host exchanges a fingerprint before each call
};

}  // namespace

BRAID_COMM_PLUGIN_QUERY(kApi)
