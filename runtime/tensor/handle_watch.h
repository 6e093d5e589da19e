// The application's own braid_tensor_retain / braid_tensor_release calls on some handles, counted on
// the calling thread while a watch is open. A hybrid function's call (graph/hybrid.cpp) needs to know
// whether fn retained an input it returns: a handle's reference count cannot tell, since other threads
// (and braid's own handles: an autograd tape, a trace) retain and release the same tensor meanwhile.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "tensor/tensor.h"

namespace braid {

class HandleWatch {
 public:
  // Opens a watch on the calling thread over handles (an enclosing watch keeps counting too).
  explicit HandleWatch(std::vector<const Tensor*> handles)
      : handles_(std::move(handles)), net_(handles_.size(), 0), outer_(current()) {
    current() = this;
  }
  ~HandleWatch() { current() = outer_; }
  HandleWatch(const HandleWatch&) = delete;
  HandleWatch& operator=(const HandleWatch&) = delete;

  // Retains minus releases of handle k through the C API on this thread since the watch opened.
  int64_t net(size_t k) const noexcept { return net_[k]; }

  // Called by braid_tensor_retain (+1), braid_tensor_release (-1), and every call that hands the
  // application another reference to an existing handle (+1: braid_tensor_grad).
  static void note(const Tensor* t, int delta) noexcept {
    for (HandleWatch* w = current(); w != nullptr; w = w->outer_)
      for (size_t k = 0; k < w->handles_.size(); ++k)
        if (w->handles_[k] == t) w->net_[k] += delta;
  }

 private:
  static HandleWatch*& current() noexcept {
    thread_local HandleWatch* watch = nullptr;
    return watch;
  }

  std::vector<const Tensor*> handles_;
  std::vector<int64_t> net_;
  HandleWatch* outer_;
};

}  // namespace braid
