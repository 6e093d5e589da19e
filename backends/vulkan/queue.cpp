#include "queue.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <stdexcept>

#include "host.h"
#include "kernels.h"
#include "timeline.h"
#include "work_checks.h"

namespace braid::vk {
namespace {
constexpr uint64_t kRingSize = uint64_t{16} << 20;  // staging + parameters, per queue
constexpr uint64_t kChunk = kRingSize / 4;          // copies go through staging in chunks of this
constexpr uint64_t kRingAlign = 256;
constexpr uint32_t kMaxSets = 256;  // dispatches per batch
constexpr size_t kMaxItems = 512;   // submissions per batch

}  // namespace

const PhysicalDevice& Recorder::physical() const { return q_.device_.physical(); }

Queue::Queue(Device& device, braid_queue_kind kind)
    : device_(device),
      vkq_(device.vk_queue(kind == BRAID_QUEUE_TRANSFER)),
      staging_(device, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, kRingSize) {
  const Vk& vk = device_.vk();
  VkCommandPoolCreateInfo pi{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pi.queueFamilyIndex = vkq_.family;
  if (vk.vkCreateCommandPool(device_.handle(), &pi, nullptr, &cmd_pool_) != VK_SUCCESS)
    throw std::runtime_error("vkCreateCommandPool failed");
  Device::Timeline t;
  try {
    t = device_.acquire_timeline();
  } catch (...) {
    vk.vkDestroyCommandPool(device_.handle(), cmd_pool_, nullptr);
    throw;
  }
  timeline_ = t.sem;
  next_ticket_ = t.last;
  if (staging_.allocate(kRingSize, &ring_) != BRAID_OK || ring_->block->mapped == nullptr) {
    device_.release_timeline({timeline_, next_ticket_});
    vk.vkDestroyCommandPool(device_.handle(), cmd_pool_, nullptr);
    throw std::runtime_error("cannot allocate the host-visible staging ring");
  }
  ring_size_ = kRingSize;
  completer_ = std::thread([this] { complete_loop(); });
}

Queue::~Queue() {
  {
    std::unique_lock lock(mu_);
    // Deferred work waits on other queues' semaphores; those queues finish it (or fail it).
    cv_.wait(lock, [&] { return deferred_.empty() && !busy_ && active_ == 0; });
    submit_open(lock);
    stop_ = true;
    cv_.notify_all();
  }
  completer_.join();
  fire_watchers();
  host::log(BRAID_LOG_DEBUG, ("queue done: " + std::to_string(stats_.batches.load()) + " batches, " +
                              std::to_string(stats_.device_waits.load()) + " device-side waits, " +
                              std::to_string(stats_.host_held.load()) + " submissions held on the host, " +
                              std::to_string(stats_.promoted.load()) + " held waits made device-side when submitted")
                                 .c_str());
  const Vk& vk = device_.vk();
  for (auto& b : spare_) free_batch(*b);
  if (open_) free_batch(*open_);
  staging_.free(ring_);
  device_.release_timeline({timeline_, next_ticket_});  // not destroyed: see Device::Timeline
  vk.vkDestroyCommandPool(device_.handle(), cmd_pool_, nullptr);
}

std::unique_ptr<Queue::Batch> Queue::new_batch() {
  const Vk& vk = device_.vk();
  if (!spare_.empty()) {
    auto b = std::move(spare_.back());
    spare_.pop_back();
    vk.vkResetCommandBuffer(b->cmd, 0);
    vk.vkResetDescriptorPool(device_.handle(), b->pool, 0);
    b->sets = b->commands = 0;
    b->begun = b->submitted = false;
    b->submit_error.clear();
    b->items.clear();
    b->readbacks.clear();
    b->waits.clear();
    b->ring_end = ring_head_;
    return b;
  }
  auto b = std::make_unique<Batch>();
  VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  ai.commandPool = cmd_pool_;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  if (vk.vkAllocateCommandBuffers(device_.handle(), &ai, &b->cmd) != VK_SUCCESS) throw std::bad_alloc();
  VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, kMaxSets * kNumBindings};
  VkDescriptorPoolCreateInfo pi{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  pi.maxSets = kMaxSets;
  pi.poolSizeCount = 1;
  pi.pPoolSizes = &size;
  if (vk.vkCreateDescriptorPool(device_.handle(), &pi, nullptr, &b->pool) != VK_SUCCESS) throw std::bad_alloc();
  b->ring_end = ring_head_;
  return b;
}

void Queue::free_batch(Batch& b) {
  const Vk& vk = device_.vk();
  if (b.pool) vk.vkDestroyDescriptorPool(device_.handle(), b.pool, nullptr);
  // Command buffers go with the pool.
  b.pool = VK_NULL_HANDLE;
}

Queue::Batch& Queue::open_batch() {
  if (!open_) open_ = new_batch();
  return *open_;
}

void Queue::begin(Batch& b) {
  if (b.begun) return;
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  device_.vk().vkBeginCommandBuffer(b.cmd, &bi);
  b.begun = true;
}

// Before every command: everything earlier on this VkQueue (this batch or an earlier submission) is
// finished and its writes visible. Coarse, but correct for any mix of copies and dispatches; the
// engine already orders only what depends on each other, and the dependency graph inside one batch
// is a chain.
void Queue::barrier(Batch& b) {
  begin(b);
  VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  mb.srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT;
  device_.vk().vkCmdPipelineBarrier(b.cmd, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, 0, 1,
                                    &mb, 0, nullptr, 0, nullptr);
  ++b.commands;
}

void Queue::submit_open(std::unique_lock<std::mutex>&) {
  if (!open_ || (open_->items.empty() && open_->commands == 0)) return;
  Batch& b = *open_;
  const Vk& vk = device_.vk();
  begin(b);
  // Downloads land in host-visible memory: make the device's writes visible to the host's reads.
  VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  mb.srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  vk.vkCmdPipelineBarrier(b.cmd, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, nullptr,
                          0, nullptr);
  VkResult r = vk.vkEndCommandBuffer(b.cmd);
  b.ticket = ++next_ticket_;
  if (device_.failed()) {
    b.submit_error = device_.failure();
  } else if (r != VK_SUCCESS) {
    b.submit_error = "vkEndCommandBuffer failed: " + vk_result_name(r);
  } else {
    // Device-side waits, one per timeline (the latest ticket). A value the host has already seen reached
    // needs no wait; nor does a failed semaphore (the items report the failure anyway, see
    // complete_loop). Timelines outlive their queues (Device::Timeline), so naming one is always safe.
    std::vector<VkSemaphore> wait_sems;
    std::vector<uint64_t> wait_values;
    for (const DeviceWait& w : b.waits) {
      uint64_t v = 0;
      if (w.what.sem->query(&v) != BRAID_OK || v >= w.what.value) continue;
      auto it = std::find(wait_sems.begin(), wait_sems.end(), w.timeline);
      if (it == wait_sems.end()) {
        wait_sems.push_back(w.timeline);
        wait_values.push_back(w.ticket);
      } else {
        uint64_t& t = wait_values[static_cast<size_t>(it - wait_sems.begin())];
        t = std::max(t, w.ticket);
      }
    }
    const std::vector<VkPipelineStageFlags> stages(wait_sems.size(), VK_PIPELINE_STAGE_ALL_COMMANDS_BIT);
    VkTimelineSemaphoreSubmitInfo ti{VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO};
    ti.waitSemaphoreValueCount = static_cast<uint32_t>(wait_values.size());
    ti.pWaitSemaphoreValues = wait_values.data();
    ti.signalSemaphoreValueCount = 1;
    ti.pSignalSemaphoreValues = &b.ticket;
    VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.pNext = &ti;
    si.waitSemaphoreCount = static_cast<uint32_t>(wait_sems.size());
    si.pWaitSemaphores = wait_sems.data();
    si.pWaitDstStageMask = stages.data();
    si.commandBufferCount = 1;
    si.pCommandBuffers = &b.cmd;
    si.signalSemaphoreCount = 1;
    si.pSignalSemaphores = &timeline_;
    {
      std::lock_guard ql(vkq_.mu);
      r = device_.inject_submit_failure() ? VK_ERROR_DEVICE_LOST : vk.vkQueueSubmit(vkq_.queue, 1, &si, VK_NULL_HANDLE);
    }
    ++stats_.batches;
    if (r == VK_SUCCESS) {
      b.submitted = true;
      // From now on a wait for these values may happen on the device (never before: a wait must not
      // precede its signal's submission, which could block a VkQueue shared with the signaller).
      std::vector<braid_backend_semaphore_t::Watcher> fire;
      for (const Item& it : b.items)
        if (it.signal != nullptr)
          it.signal->add_device_signal(it.signal_value, {device_.handle(), timeline_, b.ticket}, fire);
      if (!fire.empty()) {
        std::lock_guard fl(fired_mu_);
        fired_.insert(fired_.end(), fire.begin(), fire.end());
      }
    } else {
      b.submit_error = "vkQueueSubmit failed: " + vk_result_name(r);
      device_.mark_failed(b.submit_error);
    }
  }
  inflight_.push_back(std::move(open_));
  cv_.notify_all();
}

// Set on completion threads: they must never wait for staging space, since the space comes back
// only when a completion thread (possibly this one) finishes a batch.
thread_local bool t_completion_thread = false;

Queue::Staged Queue::stage(std::unique_lock<std::mutex>& lock, uint64_t bytes) {
  bytes = round_up(bytes, kRingAlign);
  for (;;) {
    uint64_t pos = ring_head_ % ring_size_;
    uint64_t skip = pos + bytes > ring_size_ ? ring_size_ - pos : 0;  // never wrap inside one allocation
    if (ring_head_ + skip + bytes - ring_tail_ <= ring_size_) {
      ring_head_ += skip;
      const uint64_t at = ring_head_ % ring_size_;
      ring_head_ += bytes;
      open_batch().ring_end = ring_head_;
      return {static_cast<std::byte*>(ring_->block->mapped) + ring_->offset + at, ring_->buffer, ring_->offset + at};
    }
    // Overflow staging memory that lives as long as the open batch, instead of waiting for the ring.
    auto overflow = [&]() -> Staged {
      braid_backend_buffer_t* extra = nullptr;
      if (staging_.allocate(bytes, &extra) != BRAID_OK) throw std::bad_alloc();
      open_batch().overflow.push_back(extra);
      return {static_cast<std::byte*>(extra->block->mapped) + extra->offset, extra->buffer, extra->offset};
    };
    // Work recorded from a completion callback (a notification chain) never waits: it could wait on
    // this very thread.
    if (t_completion_thread) return overflow();
    // Full: hand the open batch to the device and wait for the oldest batch to give space back.
    submit_open(lock);
    if (inflight_.empty()) {
      ring_head_ = ring_tail_ = 0;  // nothing holds staging space: start over
      if (open_) open_->ring_end = 0;
      continue;
    }
    // Bounded: the caller may hold the host's engine lock (a submission from another backend's thread
    // that a notification woke), which this queue's completion thread can need before it frees more
    // space. A wait that long means that, or a device far behind: overflow memory ends it either way.
    uint64_t tail = ring_tail_;
    if (!cv_.wait_for(lock, std::chrono::milliseconds(50), [&] { return ring_tail_ != tail || inflight_.empty(); }))
      return overflow();
  }
}

std::string Recorder::dispatch(ShaderId shader, const Params& params, const Binding* bindings, uint32_t gx, uint32_t gy,
                               uint32_t gz, const char* error_message) {
  VkPipeline pipeline = q_.device_.pipeline(shader);
  if (pipeline == VK_NULL_HANDLE) return std::string("cannot create the pipeline of shader ") + shader_name(shader);
  return dispatch(pipeline, params, bindings, gx, gy, gz, error_message);
}

Device& Recorder::device() const { return q_.device_; }

std::string Recorder::dispatch(VkPipeline pipeline, const Params& params, const Binding* bindings, uint32_t gx,
                               uint32_t gy, uint32_t gz, const char* error_message) {
  Queue& q = q_;
  Device& d = q.device_;
  const uint64_t max_range = d.physical().props.limits.maxStorageBufferRange;
  for (uint32_t i = 1; i < kNumBindings; ++i)
    if (bindings[i].buffer && bindings[i].range > max_range)
      return "a tensor of " + std::to_string(bindings[i].range) +
             " bytes exceeds the device's maxStorageBufferRange (" + std::to_string(max_range) + ")";
  if (gx == 0 || gy == 0 || gz == 0) return "";
  if (q.open_batch().sets >= kMaxSets) q.submit_open(*q.lock_);
  // The parameters and the error word in one allocation, so both belong to the batch of the dispatch.
  constexpr uint64_t kWordAt = (sizeof(Params) + kRingAlign - 1) / kRingAlign * kRingAlign;
  const Queue::Staged st = q.stage(*q.lock_, error_message ? kWordAt + 4 : sizeof(Params));
  std::memcpy(st.host, &params, sizeof(Params));
  if (error_message) {
    auto* word = reinterpret_cast<uint32_t*>(static_cast<std::byte*>(st.host) + kWordAt);
    *word = 0;
    q.pending_checks_.push_back({word, error_message});
  }
  Queue::Batch& b = q.open_batch();
  const Vk& vk = d.vk();
  VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  ai.descriptorPool = b.pool;
  ai.descriptorSetCount = 1;
  VkDescriptorSetLayout layout = d.set_layout();
  ai.pSetLayouts = &layout;
  VkDescriptorSet set;
  if (vk.vkAllocateDescriptorSets(d.handle(), &ai, &set) != VK_SUCCESS) return "vkAllocateDescriptorSets failed";
  ++b.sets;
  VkDescriptorBufferInfo infos[kNumBindings];
  VkWriteDescriptorSet writes[kNumBindings];
  for (uint32_t i = 0; i < kNumBindings; ++i) {
    if (i == kParamBinding) {
      infos[i] = {st.buffer, st.offset, sizeof(Params)};
    } else if (i == kNumBindings - 1 && error_message) {
      infos[i] = {st.buffer, st.offset + kWordAt, 4};
    } else if (bindings[i].buffer) {
      infos[i] = {bindings[i].buffer, bindings[i].offset, bindings[i].range};
    } else {
      infos[i] = {d.dummy_buffer(), d.dummy_offset(), 256};
    }
    writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    writes[i].dstSet = set;
    writes[i].dstBinding = i;
    writes[i].descriptorCount = 1;
    writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[i].pBufferInfo = &infos[i];
  }
  vk.vkUpdateDescriptorSets(d.handle(), kNumBindings, writes, 0, nullptr);
  q.barrier(b);
  vk.vkCmdBindPipeline(b.cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
  vk.vkCmdBindDescriptorSets(b.cmd, VK_PIPELINE_BIND_POINT_COMPUTE, d.pipeline_layout(), 0, 1, &set, 0, nullptr);
  vk.vkCmdDispatch(b.cmd, gx, gy, gz);
  return "";
}

void Queue::record_copy(std::unique_lock<std::mutex>& lock, const braid_copy_desc& c, Item& item) {
  if (c.bytes == 0) return;
  const Vk& vk = device_.vk();
  if (c.src_host && c.dst_host) {
    std::memmove(c.dst_host, c.src_host, c.bytes);
    return;
  }
  if (c.src_buffer && c.dst_buffer) {
    const auto *s = c.src_buffer, *d = c.dst_buffer;
    uint64_t so = s->offset + c.src_offset, doff = d->offset + c.dst_offset;
    if (s->buffer == d->buffer && so < doff + c.bytes && doff < so + c.bytes) {
      item.status = BRAID_ERR_UNSUPPORTED;
      item.message = "copy: overlapping source and destination ranges";
      return;
    }
    Batch& b = open_batch();
    barrier(b);
    VkBufferCopy region{so, doff, c.bytes};
    vk.vkCmdCopyBuffer(b.cmd, s->buffer, d->buffer, 1, &region);
    return;
  }
  // Through the staging ring, chunk by chunk: chunk k+1 is filled while chunk k is being copied
  // (the ring holds four chunks, so up to four are in flight).
  for (uint64_t done = 0; done < c.bytes;) {
    const uint64_t n = std::min(kChunk, c.bytes - done);
    const Staged st = stage(lock, n);
    Batch& b = open_batch();
    barrier(b);
    if (c.src_host) {
      std::memcpy(st.host, static_cast<const std::byte*>(c.src_host) + done, n);
      VkBufferCopy region{st.offset, c.dst_buffer->offset + c.dst_offset + done, n};
      vk.vkCmdCopyBuffer(b.cmd, st.buffer, c.dst_buffer->buffer, 1, &region);
    } else {
      VkBufferCopy region{c.src_buffer->offset + c.src_offset + done, st.offset, n};
      vk.vkCmdCopyBuffer(b.cmd, c.src_buffer->buffer, st.buffer, 1, &region);
      b.readbacks.push_back({st.host, static_cast<std::byte*>(c.dst_host) + done, n});
    }
    done += n;
  }
}

braid_status Queue::resolve_waits(const braid_work& work, std::vector<DeviceWait>& out, std::vector<Awaited>& after) {
  for (uint32_t i = 0; i < work.num_waits; ++i) {
    braid_backend_semaphore sem = work.waits[i];
    const uint64_t want = work.wait_values[i];
    uint64_t v = 0;
    if (braid_status st = sem->query(&v); st != BRAID_OK) return st;
    if (v >= want) continue;
    auto at = sem->device_signal(want, device_.handle());
    if (!at) {
      // Reached or failed since submit looked (submit holds back any other wait until it is reached).
      if (braid_status st = sem->query(&v); st != BRAID_OK) return st;
      if (v >= want) continue;
      return BRAID_ERR_INTERNAL;
    }
    out.push_back({at->timeline, at->ticket, {sem, want}});
    after.push_back({sem, want});
  }
  return BRAID_OK;
}

namespace {
bool persistent_descs(const braid_work& work) {
  return work.token != nullptr && (work.flags & BRAID_WORK_PERSISTENT_DESCS) != 0;
}
}  // namespace

// Every dispatch is preceded by a full memory barrier (Queue::barrier), so each call sees the writes of
// the calls before it, as a KERNELS submission requires. A call that fails to record ends the
// submission there. A call with error words (a bad label...) is only known to have failed once its
// batch has run, so when one is not the last call the submission is split after it: the batch goes to
// the device at once and the rest waits, at the front of deferred_ (everything submitted later queues
// behind it), until the completion thread has read the words and either records it or fails it.
std::unique_ptr<Queue::Deferred> Queue::record_kernels(const braid_work& work, uint32_t first_call,
                                                       uint32_t total_calls, Item& item) {
  const uint32_t total = total_calls != 0 ? total_calls : work.num_kernels;
  Recorder r(*this);
  for (uint32_t k = 0; k < work.num_kernels; ++k) {
    const braid_kernel_call& call = work.kernels[k];
    const uint32_t index = first_call + k;
    pending_checks_.clear();
    KernelResult kr = encode_kernel(call, r);
    if (!pending_checks_.empty()) {
      item.checks = std::move(pending_checks_);
      item.checked = {index, total, call.op};
    }
    pending_checks_.clear();
    if (kr.status != BRAID_OK) {
      item.status = kr.status;
      item.message = plugin::kernels_call_message(index, total, call.op, kr.message);
      return nullptr;
    }
    if (item.checks.empty() || k + 1 == work.num_kernels) continue;
    auto rest = std::make_unique<Deferred>();
    rest->work = work;  // token, signal and flags; its waits are met (this part waited for them)
    rest->work.num_waits = 0;
    rest->work.num_kernels = work.num_kernels - k - 1;
    if (persistent_descs(work))
      rest->work.kernels = work.kernels + k + 1;
    else
      rest->calls.assign(work.kernels + k + 1, work.kernels + work.num_kernels);  // kernels set when recorded
    rest->first_call = index + 1;
    rest->total_calls = total;
    rest->pending = 1;
    return rest;
  }
  return nullptr;
}

void Queue::record(std::unique_lock<std::mutex>& lock, const braid_work& work, uint32_t first_call,
                   uint32_t total_calls) {
  Item item{work.token, work.signal, work.signal_value, BRAID_OK, {}, {}, {}, {}, nullptr};
  std::unique_ptr<Deferred> rest;
  std::vector<DeviceWait> waits;
  if (braid_status st = resolve_waits(work, waits, item.after); st != BRAID_OK) {
    // Nothing is recorded: the work reports the failure instead of running on a failed producer's data.
    item.status = st;
    item.message = st == BRAID_ERR_INTERNAL ? "a semaphore wait was neither reached nor signalled on the device"
                                            : "a semaphore this work waited on has failed";
    item.after.clear();
  } else if (!waits.empty()) {
    // The wait applies to the whole batch: start what is already recorded without it.
    if (open_ && (!open_->items.empty() || open_->commands > 0)) submit_open(lock);
    Batch& b = open_batch();
    b.waits.insert(b.waits.end(), waits.begin(), waits.end());
    stats_.device_waits += waits.size();
  }
  if (item.status != BRAID_OK) {
    // Failed before recording (above): nothing runs.
  } else if (device_.failed()) {
    item.status = BRAID_ERR_DEVICE;
    item.message = "the Vulkan device failed earlier: " + device_.failure();
  } else {
    try {
      if (work.kind == BRAID_WORK_KERNEL) {
        Recorder r(*this);
        pending_checks_.clear();
        KernelResult kr = encode_kernel(*work.kernel, r);
        item.status = kr.status;
        item.message = std::move(kr.message);
        item.checks = std::move(pending_checks_);
        pending_checks_.clear();
      } else if (work.kind == BRAID_WORK_KERNELS) {
        rest = record_kernels(work, first_call, total_calls, item);
      } else if (work.kind == BRAID_WORK_COPY) {
        record_copy(lock, *work.copy, item);
      }
    } catch (const std::bad_alloc&) {
      item.status = BRAID_ERR_OUT_OF_MEMORY;
      item.message = "out of memory while recording";
    } catch (...) {
      item.status = BRAID_ERR_INTERNAL;
      item.message = "exception while recording";
    }
  }
  if (rest != nullptr && item.status != BRAID_OK) rest.reset();  // failed while recording: no rest to run
  Batch& b = open_batch();
  item.continuation = rest.get();
  if (rest != nullptr) {
    // The rest reports and signals for the whole; this part must not even promise the signal (a device
    // wait on this batch's ticket would start its consumer before the rest has run).
    item.token = nullptr;
    item.signal = nullptr;
  }
  b.items.push_back(std::move(item));
  if (rest != nullptr) {
    // Ahead of everything deferred so far (all submitted after this work); started now, since nothing
    // else on this queue can be recorded before its words are read.
    deferred_.push_front(std::move(rest));
    submit_open(lock);
    return;
  }
  // Start at once when the device is idle; otherwise keep recording until the batch in flight ends
  // (the completion thread then submits this one) or this batch is full.
  if (inflight_.empty() || b.items.size() >= kMaxItems) submit_open(lock);
}

void Queue::drain_deferred(std::unique_lock<std::mutex>& lock) {
  if (busy_) return;
  busy_ = true;
  lock_ = &lock;
  while (!deferred_.empty() && deferred_.front()->pending == 0) {
    std::unique_ptr<Deferred> d = std::move(deferred_.front());
    deferred_.pop_front();
    if (d->status != BRAID_OK) {
      Batch& b = open_batch();
      b.items.push_back({d->work.token,
                         d->work.signal,
                         d->work.signal_value,
                         d->status,
                         d->message.empty() ? "a semaphore this work waited on has failed" : std::move(d->message),
                         {},
                         {},
                         {},
                         nullptr});
      if (inflight_.empty()) submit_open(lock);
      continue;
    }
    d->work.kernel = &d->call;
    d->work.copy = &d->copy;
    if (!d->calls.empty()) d->work.kernels = d->calls.data();
    record(lock, d->work, d->first_call, d->total_calls);
  }
  lock_ = nullptr;
  busy_ = false;
  cv_.notify_all();
}

// One held wait of a deferred submission, told by two sources: the host notification (reached or
// failed) and the watcher (a device-side signal was submitted). The first to come counts; the note
// goes when both have come (a watcher that never fires is dropped instead).
struct WaitNote {
  Queue* queue;
  void* deferred;
  std::atomic<bool> counted{false};
  std::atomic<int> refs{2};
  static void release(WaitNote* n) {
    if (n->refs.fetch_sub(1) == 1) std::unique_ptr<WaitNote> owned(n);
  }
};

// The first of a note's two callbacks counts the wait; the second touches nothing but the note (the
// queue may be gone by then). While counting, active_ keeps the destructor waiting, since the queue
// is touched again after its lock is released (to fire watchers).
void Queue::count_wait(void* user, braid_status status, bool promoted) {
  auto* note = static_cast<WaitNote*>(user);
  if (note->counted.exchange(true)) {
    WaitNote::release(note);
    return;
  }
  Queue& q = *note->queue;  // alive: the deferred work this wait belongs to is still pending
  auto* d = static_cast<Deferred*>(note->deferred);
  WaitNote::release(note);
  {
    std::unique_lock lock(q.mu_);
    ++q.active_;
    if (promoted) ++q.stats_.promoted;
    if (status != BRAID_OK && d->status == BRAID_OK) d->status = status;
    --d->pending;
    q.drain_deferred(lock);
  }
  q.fire_watchers();
  std::lock_guard lock(q.mu_);
  --q.active_;
  q.cv_.notify_all();
}

void Queue::on_wait_reached(void* user, braid_status status) { count_wait(user, status, false); }

// The deferred work is recorded with a device-side wait (resolve_waits finds the signal).
void Queue::on_promoted(void* user) { count_wait(user, BRAID_OK, true); }

void Queue::on_dropped(void* user) { WaitNote::release(static_cast<WaitNote*>(user)); }

void Queue::fire_watchers() {
  for (;;) {
    std::vector<braid_backend_semaphore_t::Watcher> now;
    {
      std::lock_guard fl(fired_mu_);
      now.swap(fired_);
    }
    if (now.empty()) return;
    for (const auto& w : now) w.fire(w.user);
  }
}

braid_status Queue::submit(const braid_work& work, const char** why) {
  if (const char* bad = plugin::check_work<braid_backend_buffer_t>(work)) {
    *why = bad;
    return BRAID_ERR_INVALID_ARGUMENT;
  }
  FireAfter fire{*this};  // destroyed after `lock`: runs with this queue's lock released
  std::unique_lock lock(mu_);
  std::vector<std::pair<braid_backend_semaphore, uint64_t>> unmet;
  for (uint32_t i = 0; i < work.num_waits; ++i) {
    braid_backend_semaphore sem = work.waits[i];
    uint64_t v = 0;
    braid_status st = sem->query(&v);
    if (st == BRAID_OK && v >= work.wait_values[i]) continue;
    // Signalled by work already submitted on this VkDevice: record now and wait on the device.
    if (st == BRAID_OK && sem->device_signal(work.wait_values[i], device_.handle())) continue;
    // Signalled by the host, another device, or work not submitted yet: hold it back on the host.
    unmet.emplace_back(sem, work.wait_values[i]);
  }
  if (!unmet.empty()) ++stats_.host_held;
  if (unmet.empty() && deferred_.empty() && !busy_) {
    busy_ = true;
    lock_ = &lock;
    record(lock, work);
    lock_ = nullptr;
    busy_ = false;
    drain_deferred(lock);  // submissions that arrived while this one was recording
    return BRAID_OK;
  }
  auto d = std::make_unique<Deferred>();
  d->work = plugin::copy_work(work);
  if (work.kind == BRAID_WORK_KERNEL) d->call = *work.kernel;
  if (work.kind == BRAID_WORK_COPY) d->copy = *work.copy;
  if (work.kind == BRAID_WORK_KERNELS && !persistent_descs(work))
    d->calls.assign(work.kernels, work.kernels + work.num_kernels);
  d->pending = static_cast<uint32_t>(unmet.size());
  Deferred* raw = d.get();
  deferred_.push_back(std::move(d));
  if (unmet.empty()) {
    drain_deferred(lock);
    return BRAID_OK;
  }
  lock.unlock();
  // Registered outside the lock: a notification may run inside semaphore_notify. Each held wait is also
  // watched for its device-side signal: once the signalling batch is submitted, the work is recorded
  // with a device-side wait instead of waiting for the value to be reached on the host.
  for (auto& [sem, value] : unmet) {
    auto note = std::make_unique<WaitNote>();
    note->queue = this;
    note->deferred = raw;
    WaitNote* n = note.release();  // owned by its two callbacks from here (WaitNote::release)
    if (!sem->watch({value, device_.handle(), &Queue::on_promoted, &Queue::on_dropped, n})) {
      if (sem->device_signal(value, device_.handle()))
        on_promoted(n);  // submitted meanwhile
      else
        on_dropped(n);  // reached or failed: the notification below counts it
    }
    sem->notify(value, &Queue::on_wait_reached, n);
  }
  return BRAID_OK;
}

void Queue::complete_loop() {
  t_completion_thread = true;
  const Vk& vk = device_.vk();
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || !inflight_.empty(); });
    if (inflight_.empty()) {  // stop_ and drained
      lock.unlock();
      fire_watchers();
      return;
    }
    Batch* b = inflight_.front().get();
    lock.unlock();
    fire_watchers();
    braid_status st = BRAID_OK;
    std::string msg;
    if (b->submitted) {
      VkSemaphoreWaitInfo wi{VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO};
      wi.semaphoreCount = 1;
      wi.pSemaphores = &timeline_;
      wi.pValues = &b->ticket;
      VkResult r = vk.vkWaitSemaphores(device_.handle(), &wi, UINT64_MAX);
      if (r != VK_SUCCESS) {
        msg = "waiting for the device failed: " + vk_result_name(r);
        device_.mark_failed(msg);
        st = BRAID_ERR_DEVICE;
      }
    } else {
      st = BRAID_ERR_DEVICE;
      msg = b->submit_error;
    }
    if (st == BRAID_OK)
      for (const auto& rb : b->readbacks) std::memcpy(rb.host, rb.staging, rb.bytes);
    {
      // The batch's ring space is free now (the device is done with it, its readbacks are copied
      // out), before the items below report: their notifications may take the host's engine lock,
      // which a thread waiting in stage() for this very space can be holding while it submits.
      std::lock_guard space(mu_);
      ring_tail_ = b->ring_end;
      cv_.notify_all();
    }
    for (auto& it : b->items) {
      // Work that waited on the device for another submission's semaphore reports after it, and fails
      // with it: its producer's work_end comes first (the host resolves inherited failures there), and
      // a tokenless producer's failure reaches it through the semaphore. The wait is short: the producer's
      // batch has finished on the device and its completion thread only has to report it.
      for (const Awaited& a : it.after)
        if (braid_status ws = a.sem->wait(a.value, UINT64_MAX); ws != BRAID_OK && it.status == BRAID_OK) {
          it.status = ws;
          it.message = "a semaphore this work waited on has failed";
        }
      if (st == BRAID_OK && it.status == BRAID_OK)
        for (const Check& c : it.checks)
          if (*c.word != 0) {
            it.status = BRAID_ERR_KERNEL;
            it.message = it.checked.count == 0 ? std::string(c.message)
                                               : plugin::kernels_call_message(it.checked.index, it.checked.count,
                                                                              it.checked.op, c.message);
          }
      braid_status s = it.status != BRAID_OK ? it.status : st;
      const std::string& m = it.status != BRAID_OK ? it.message : msg;
      if (it.continuation != nullptr) {
        // The first part of a split KERNELS submission: the rest reports for the whole (recorded now,
        // or failed with this part's status), so this item neither calls work_end nor signals.
        lock.lock();
        Deferred* rest = it.continuation;
        if (s != BRAID_OK) {
          rest->status = s;
          rest->message = m;
        }
        rest->pending = 0;
        drain_deferred(lock);
        lock.unlock();
        continue;
      }
      if (it.token) host::work_end(it.token, s, s == BRAID_OK ? nullptr : m.c_str());
      if (it.signal == nullptr) continue;
      // Without a token the semaphore is the only way to tell anyone of a failure.
      if (s != BRAID_OK && it.token == nullptr)
        it.signal->fail(s);
      else
        it.signal->signal(it.signal_value);
    }
    lock.lock();
    for (braid_backend_buffer_t* extra : b->overflow) staging_.free(extra);
    b->overflow.clear();
    ring_tail_ = b->ring_end;
    spare_.push_back(std::move(inflight_.front()));
    inflight_.pop_front();
    if (inflight_.empty()) submit_open(lock);
    cv_.notify_all();
  }
}

}  // namespace braid::vk
