// What the engine tracks: one OpNode per pushed op, one Var per storage, one Queue per backend queue.
#pragma once
#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "braid_backend.h"
#include "core/inline_vector.h"

namespace braid {

struct EngineDevice;
struct Storage;
struct OpNode;
class Engine;

// A backend queue with its own timeline semaphore: the n-th op submitted to the queue signals n.
struct Queue {
  EngineDevice* device = nullptr;
  braid_queue_kind kind = BRAID_QUEUE_COMPUTE;
  int32_t track = 0;  // the profiler's track (Device::queue_name)
  braid_backend_queue handle = nullptr;
  braid_backend_semaphore timeline = nullptr;
  // Guarded by Engine::mu_:
  uint64_t next_seq = 0;                         // sequence number of the last op given to it
  std::deque<std::shared_ptr<OpNode>> deferred;  // ops waiting on another backend, in queue order
};

// The engine variable of one storage: program order of its readers and writers (docs/ENGINE.md).
// Guarded by Engine::mu_.
struct Var {
  std::shared_ptr<OpNode> last_writer;           // may already be done; its status is the var's error
  std::vector<std::shared_ptr<OpNode>> readers;  // since the last write
  // readers[0, done_readers) have ended and were reset to null (done never reverts), so a push checks
  // only the ones after: each check loads a line the backend thread wrote, a likely cache miss.
  size_t done_readers = 0;
  // The host reading or writing the storage's memory right now (braid_tensor_to_host and write_host on
  // host memory copy it themselves): an op pushed meanwhile that would write it (or, for a host write,
  // read it) waits until the copy is done, as program order says (Engine::begin_host_read).
  uint32_t host_readers = 0;
  bool host_writing = false;
};

struct OpNode {
  static constexpr size_t kMaxProducers = BRAID_KERNEL_MAX_INPUTS;
  static constexpr size_t kMaxKeep = BRAID_KERNEL_MAX_INPUTS + BRAID_KERNEL_MAX_OUTPUTS;

  Engine* engine = nullptr;
  const char* name = "";  // static string: the op's name
  EngineDevice* device = nullptr;
  Queue* queue = nullptr;
  uint64_t seq = 0;        // value of queue->timeline once this op has ended; 0 = never submitted
  uint64_t out_bytes = 0;  // bytes of outputs it allocated (backpressure)

  // Final once done is set (release); read after done (acquire) or after the timeline reached seq.
  braid_status status = BRAID_OK;
  std::string message;
  std::atomic<bool> done{false};

  // Ops whose outputs this op reads: if one failed, this op is skipped and inherits the error.
  InlineVector<std::shared_ptr<OpNode>, kMaxProducers> producers;
  // The join of a partitioned write (Engine::push_partitioned): its parts, whose failure it inherits
  // like a producer's. Also the producers beyond `producers`' inline capacity (a graph's segment reads
  // many storages). Empty for most ops.
  std::vector<std::shared_ptr<OpNode>> joined;
  uint64_t partition = 0;  // a part of partitioned write `partition` (nonzero): not ordered after its siblings
  // Storages this op touches stay alive until it ends (deferred frees).
  InlineVector<std::shared_ptr<Storage>, kMaxKeep> keep;
  std::vector<std::shared_ptr<Storage>> keep_more;  // beyond keep's capacity (a graph's segment)
  // The backend holds a raw token; this keeps the node alive until work_end.
  std::shared_ptr<OpNode> self;

  // Left uninitialised on purpose (2 KB per op): make_node sets the header fields, and only the views
  // and attributes an op fills are read.
  braid_work work;
  braid_kernel_call call;
  braid_copy_desc copy;
  std::vector<braid_kernel_call> calls;  // BRAID_WORK_KERNELS: a graph's segment, run in order
  std::vector<std::byte> host_data;      // bytes an upload copies from (owned, so the caller may reuse theirs)
  uint32_t foreign_pending = 0;          // waits on other backends not yet satisfied (Engine::mu_)
  // A copy that reads or writes another device's memory from the host side (braid_copy_desc's src_host
  // or dst_host): a queue may read such a source when it records the copy and land such a write when
  // its batch completes, not in queue order; so a readback of the same queue into the memory it reads
  // must have ended first (Engine::order_after_earlier).
  bool host_side = false;

  bool profiled = false;
  int64_t t_submit = 0, t_begin = 0, t_end = 0;  // ns since the context's epoch
};

}  // namespace braid
