// A queue's lifetime, its batches (opened, recorded into by queue_record.cpp, submitted) and the
// completion thread that ends them. Submissions and their waits: queue_submit.cpp.
#include "queue.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <stdexcept>

#include "host.h"
#include "kernel_call.h"
#include "timeline.h"

namespace braid::vk {

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

void Queue::complete_loop() {
  completion_thread_ = true;
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
