// Recording work into the open batch: staging space from the ring, dispatches (the Recorder the
// kernel encoders use), copies, KERNELS submissions and their device-side waits, and the deferred
// submissions drained in order.
#include <algorithm>
#include <cstring>

#include "host.h"
#include "kernels.h"
#include "queue.h"
#include "timeline.h"
#include "work_checks.h"

namespace braid::vk {

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
    if (completion_thread_) return overflow();
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
  if (q.open_batch().sets >= Queue::kMaxSets) q.submit_open(*q.lock_);
  // The parameters and the error word in one allocation, so both belong to the batch of the dispatch.
  constexpr uint64_t kWordAt = (sizeof(Params) + Queue::kRingAlign - 1) / Queue::kRingAlign * Queue::kRingAlign;
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

}  // namespace braid::vk
