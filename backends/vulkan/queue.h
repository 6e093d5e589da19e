// A braid queue on a Vulkan device: work is recorded into the open batch (one command buffer) and
// batches are submitted one vkQueueSubmit each; a completion thread waits for each batch on the
// queue's Vulkan timeline semaphore, copies downloads out of staging, calls work_end per submission
// and then signals the submissions' semaphores. A wait on a braid semaphore whose signalling work is
// already submitted on this VkDevice becomes a device-side wait on that queue's timeline; any other
// wait holds the submission back on the host until the value is reached or its signalling batch is
// submitted. See README.md ("Semaphores") for the design and why.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "braid_backend.h"
#include "device.h"
#include "params.h"
#include "shaders.h"
#include "timeline.h"

namespace braid::vk {

// A storage-buffer binding of a dispatch.
struct Binding {
  VkBuffer buffer = VK_NULL_HANDLE;
  uint64_t offset = 0;
  uint64_t range = 0;
};

class Queue;

// What a kernel encoder sees: it adds dispatches to the open batch.
class Recorder {
 public:
  explicit Recorder(Queue& q) : q_(q) {}
  // bindings[kNumBindings]; unset ones (buffer NULL) get a dummy buffer. Returns "" or the error.
  // With error_message, binding 10 is a zeroed host-visible word the shader may set; if it is
  // non-zero when the batch ends, the submission fails with BRAID_ERR_KERNEL and that message.
  std::string dispatch(ShaderId shader, const Params& params, const Binding* bindings, uint32_t gx, uint32_t gy,
                       uint32_t gz, const char* error_message = nullptr);
  // The same with a pipeline the caller has (one made at run time: Device::generated_pipeline).
  std::string dispatch(VkPipeline pipeline, const Params& params, const Binding* bindings, uint32_t gx, uint32_t gy,
                       uint32_t gz, const char* error_message = nullptr);
  const PhysicalDevice& physical() const;
  Device& device() const;

 private:
  Queue& q_;
};

class Queue {
 public:
  Queue(Device& device, braid_queue_kind kind);
  ~Queue();  // drains: every submitted work ends before it returns
  Queue(const Queue&) = delete;
  Queue& operator=(const Queue&) = delete;

  braid_status submit(const braid_work& work, const char** why);
  // Counters for the log line the destructor writes (BRAID_LOG=1 shows it; tests read it).
  struct Stats {
    std::atomic<uint64_t> batches{0};       // vkQueueSubmit calls
    std::atomic<uint64_t> device_waits{0};  // braid semaphore waits resolved on the device
    std::atomic<uint64_t> host_held{0};     // submissions held back on the host for a wait
    std::atomic<uint64_t> promoted{0};      // held waits turned device-side once their signal was submitted
  };
  const Stats& stats() const { return stats_; }
  Device& device() { return device_; }
  bool on_own_thread() const { return std::this_thread::get_id() == completer_.get_id(); }

 private:
  friend class Recorder;
  struct Readback {
    const void* staging;
    void* host;
    uint64_t bytes;
  };
  struct Check {
    const volatile uint32_t* word;  // in the staging ring, written by the device
    const char* message;
  };
  struct Deferred;
  // A braid semaphore value this queue waits for on the device.
  struct Awaited {
    braid_backend_semaphore sem;
    uint64_t value;
  };
  struct Item {
    void* token;
    braid_backend_semaphore signal;
    uint64_t signal_value;
    braid_status status;
    std::string message;
    std::vector<Check> checks;
    // Waited for on the device: before the item reports, the completion thread waits (on the host) for
    // each to be reached or failed, so a producer's failure, and its work_end, always come first.
    std::vector<Awaited> after;
    // KERNELS: the call whose error words `checks` holds (messages name it); count 0 for a KERNEL.
    struct {
      uint32_t index = 0, count = 0;
      braid_kernel_op op = BRAID_KOP_FILL;
    } checked;
    // KERNELS split after a checked call (see record_kernels): the rest of the submission, held at the
    // front of deferred_ until this item's batch ends. The item then reports nothing itself: it fails
    // the rest with its status, or releases it to be recorded.
    Deferred* continuation = nullptr;
  };
  struct DeviceWait {
    VkSemaphore timeline;  // another (or this) queue's timeline semaphore
    uint64_t ticket;
    Awaited what;  // the braid semaphore value it stands for
  };
  struct Batch {
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    VkDescriptorPool pool = VK_NULL_HANDLE;
    uint32_t sets = 0;
    uint32_t commands = 0;
    bool begun = false;
    bool submitted = false;
    std::string submit_error;
    uint64_t ticket = 0;
    uint64_t ring_end = 0;  // the staging ring's head after this batch's allocations
    std::vector<Item> items;
    std::vector<Readback> readbacks;
    std::vector<braid_backend_buffer_t*> overflow;  // staging beyond the ring, freed with the batch
    std::vector<DeviceWait> waits;                  // device-side waits of the whole batch
  };
  // A submission held back until each semaphore it waits on without a submitted device-side signal is
  // reached, or gets one (then it is recorded with a device-side wait): no batch ever waits on the
  // device for a value whose signal is not submitted.
  struct Deferred {
    braid_work work;
    braid_kernel_call call;
    braid_copy_desc copy;
    std::vector<braid_kernel_call> calls;  // KERNELS without BRAID_WORK_PERSISTENT_DESCS
    uint32_t first_call = 0;               // KERNELS: the index of calls[0] in the whole submission
    uint32_t total_calls = 0;              // KERNELS: the whole submission's count (0: work.num_kernels)
    uint32_t pending = 0;
    braid_status status = BRAID_OK;
    std::string message;  // with status: why (else a failed wait is assumed)
  };

  static constexpr uint64_t kRingSize = uint64_t{16} << 20;  // staging + parameters, per queue
  static constexpr uint64_t kChunk = kRingSize / 4;          // copies go through staging in chunks of this
  static constexpr uint64_t kRingAlign = 256;
  static constexpr uint32_t kMaxSets = 256;  // dispatches per batch
  static constexpr size_t kMaxItems = 512;   // submissions per batch
  // Set on completion threads: they must never wait for staging space, since the space comes back
  // only when a completion thread (possibly this one) finishes a batch.
  static inline thread_local bool completion_thread_ = false;
  // KERNELS whose descriptors the caller keeps alive until the work ends (not copied when deferred).
  static bool persistent_descs(const braid_work& work) {
    return work.token != nullptr && (work.flags & BRAID_WORK_PERSISTENT_DESCS) != 0;
  }

  Batch& open_batch();                                   // under mu_
  void begin(Batch& b);                                  // under mu_
  void barrier(Batch& b);                                // under mu_
  void submit_open(std::unique_lock<std::mutex>& lock);  // under mu_
  // Host-visible staging space of `bytes` (<= ring size) for the open batch: from the ring, waiting
  // for batches to finish if it is full (or, on a completion thread, from overflow memory).
  struct Staged {
    void* host;
    VkBuffer buffer;
    uint64_t offset;  // within buffer
  };
  Staged stage(std::unique_lock<std::mutex>& lock, uint64_t bytes);
  // first_call and total_calls: for the rest of a split KERNELS submission (Deferred's fields).
  void record(std::unique_lock<std::mutex>& lock, const braid_work& work, uint32_t first_call = 0,
              uint32_t total_calls = 0);  // under mu_
  // Records a KERNELS submission's calls into `item`, up to the first failure or the first call with
  // error words that is not the last; in that case returns the rest, to run once those words are read.
  std::unique_ptr<Deferred> record_kernels(const braid_work& work, uint32_t first_call, uint32_t total_calls,
                                           Item& item);
  // The waits of `work` as device-side waits (appended to `out`) and the awaited values (to `after`).
  // Returns BRAID_OK, or the failure of a semaphore waited on (then the work must not run).
  braid_status resolve_waits(const braid_work& work, std::vector<DeviceWait>& out, std::vector<Awaited>& after);
  void record_copy(std::unique_lock<std::mutex>& lock, const braid_copy_desc& c, Item& item);
  void drain_deferred(std::unique_lock<std::mutex>& lock);
  static void on_wait_reached(void* user, braid_status status);
  static void on_promoted(void* user);  // the held wait's signal was submitted: wait on the device
  static void on_dropped(void* user);
  static void count_wait(void* note, braid_status status, bool promoted);
  // Watchers (see timeline.h) that this queue's submissions satisfied. They take other queues' locks,
  // so they run only where this queue holds none: at the end of each entry point (FireAfter).
  void fire_watchers();
  struct FireAfter {
    Queue& q;
    ~FireAfter() { q.fire_watchers(); }
  };
  void complete_loop();
  std::unique_ptr<Batch> new_batch();
  void free_batch(Batch& b);

  Device& device_;
  SharedVkQueue& vkq_;
  VkCommandPool cmd_pool_ = VK_NULL_HANDLE;
  VkSemaphore timeline_ = VK_NULL_HANDLE;
  braid_backend_buffer_t* ring_ = nullptr;                  // host-visible staging + kernel parameters
  uint64_t ring_size_ = 0, ring_head_ = 0, ring_tail_ = 0;  // monotonic byte counters
  uint64_t next_ticket_ = 0;
  Allocator staging_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::unique_ptr<Batch> open_;
  std::deque<std::unique_ptr<Batch>> inflight_;
  std::vector<std::unique_ptr<Batch>> spare_;
  std::deque<std::unique_ptr<Deferred>> deferred_;
  bool stop_ = false;
  // Set while one thread records: later submissions queue up behind it (in deferred_) so that a
  // recording that waits for staging space cannot be overtaken. lock_ is that thread's lock.
  bool busy_ = false;
  int active_ = 0;                     // wait callbacks still touching this queue (see count_wait)
  std::vector<Check> pending_checks_;  // error words of the kernel being recorded
  std::unique_lock<std::mutex>* lock_ = nullptr;
  Stats stats_;
  std::mutex fired_mu_;  // a leaf lock
  std::vector<braid_backend_semaphore_t::Watcher> fired_;
  std::thread completer_;
};

}  // namespace braid::vk

struct braid_backend_queue_t : braid::vk::Queue {
  using Queue::Queue;
};
