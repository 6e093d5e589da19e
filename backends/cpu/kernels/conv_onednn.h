// float32 convolutions (forward, data gradient, weight gradient) through Debian's oneDNN, when the
// plugin was built with it (BRAID_HAVE_ONEDNN), and the choice between oneDNN and braid's own kernels
// (im2col + gemm, direct kernels). Why, and how oneDNN shares the cores: backends/cpu/README.md,
// "Convolutions".
#pragma once
#include <chrono>
#include <optional>

#include "im2col.h"

namespace braid::cpu::kern::onednn {

enum class Pass { forward, backward_data, backward_weight };

// Each entry returns false when it did not run the call (a shape oneDNN has only reference loops for,
// fewer images than cores, or oneDNN failed); the caller then runs braid's own kernels.
#ifdef BRAID_HAVE_ONEDNN
bool conv_forward(Exec& ex, const ConvGeom& G, const float* x, const float* w, const float* bias, float* y);
bool conv_backward_data(Exec& ex, const ConvGeom& G, const float* dy, const float* w, float* dx);
bool conv_backward_weight(Exec& ex, const ConvGeom& G, const float* dy, const float* x, float* dw);
#else
inline bool conv_forward(Exec&, const ConvGeom&, const float*, const float*, const float*, float*) { return false; }
inline bool conv_backward_data(Exec&, const ConvGeom&, const float*, const float*, float*) { return false; }
inline bool conv_backward_weight(Exec&, const ConvGeom&, const float*, const float*, float*) { return false; }
#endif

// Which kernels run one float32 convolution call: braid's own by default (BRAID_CPU_CONV=builtin),
// oneDNN's with BRAID_CPU_CONV=onednn; with BRAID_CPU_CONV=auto the first calls of each shape (pass,
// geometry, bias, the device's core count) try both, timed, and the faster is kept for the rest of the
// process. Live for the whole call: its destructor times a trial.
struct Tuning;

class Choice {
 public:
  Choice(Pass pass, const ConvGeom& G, bool bias, int cores);
  ~Choice();
  Choice(const Choice&) = delete;
  Choice& operator=(const Choice&) = delete;
  bool onednn() const { return onednn_; }
  void declined() { onednn_ = false, declined_ = true; }  // oneDNN did not take the call: builtin runs it

 private:
  // Built without oneDNN, nothing is measured: tuning_ and timed_ stay unused there.
  [[maybe_unused]] Tuning* tuning_ = nullptr;  // the shape's record while it is being measured (conv_onednn.cpp)
  bool onednn_ = false, declined_ = false;
  [[maybe_unused]] bool timed_ = false;
  std::chrono::steady_clock::time_point start_;
};

// A float32 call's choice, made into `choice` (which must live until the call ends: it times a
// trial), and `onednn_call` run when oneDNN is chosen. True if oneDNN ran the call; false when the
// builtin kernels are to run it (chosen, or oneDNN declined the shape).
template <class Run>
bool run_if_chosen(std::optional<Choice>& choice, Pass pass, const ConvGeom& G, bool bias, int cores,
                   Run&& onednn_call) {
  choice.emplace(pass, G, bias, cores);
  if (!choice->onednn()) return false;
  if (onednn_call()) return true;
  choice->declined();
  return false;
}

#ifndef BRAID_HAVE_ONEDNN
inline Choice::Choice(Pass, const ConvGeom&, bool, int) {}
inline Choice::~Choice() = default;
#endif

}  // namespace braid::cpu::kern::onednn
