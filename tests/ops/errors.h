// Helpers of the error-path tests, which call the C API directly (braid.hpp would turn every failure
// into an exception and hide which function produced it).
//
// The status convention the tests hold the runtime to (braid.h's enum comments, made precise):
//   INVALID_ARGUMENT  a NULL or dead handle/pointer, or a value outside its domain: enum values,
//                     dtype values, device indices, ndim, negative dims, axes, steps, p, byte counts
//   SHAPE             well-formed tensors whose shapes do not agree with each other or with the op
//   DTYPE             a dtype the op does not accept, or operands of different dtypes
//   DEVICE            operands on different devices
//   OUT_OF_MEMORY     an allocation that cannot be served
//
// Bad enum values (static_cast<braid_dtype>(99)) stand for what a C caller can pass: C enums are plain
// ints. The runtime must validate them as integers; loading them as a C++ enum is undefined behaviour,
// which a UBSan build (-fsanitize=enum) reports.
#pragma once

#include <string>

#include "harness.h"

namespace errors {

// An out-parameter that releases whatever an unexpectedly successful call put there.
class Out {
 public:
  Out() = default;
  Out(const Out&) = delete;
  Out& operator=(const Out&) = delete;
  ~Out() { reset(); }
  braid_tensor* p() {
    reset();
    return &h_;
  }
  braid_tensor get() const { return h_; }

 private:
  void reset() {
    if (h_) braid_tensor_release(h_);
    h_ = nullptr;
  }
  braid_tensor h_ = nullptr;
};

// Judges a call's result: the expected status, and a braid_last_error() that is non-empty and names
// the API function (without its "braid_" prefix, so "matmul: ..." and "braid_matmul: ..." both pass).
inline harness::Comparison judge(braid_status got, braid_status want, const std::string& function) {
  const std::string msg = braid_last_error();
  if (got != want)
    return {false, "expected " + std::string(braid_status_name(want)) + ", got " + braid_status_name(got) +
                       (got == BRAID_OK ? "" : " (" + msg + ")")};
  if (msg.empty()) return {false, "braid_last_error() is empty"};
  const std::string noun = function.rfind("braid_", 0) == 0 ? function.substr(6) : function;
  if (msg.find(noun) == std::string::npos) return {false, "braid_last_error() does not name '" + noun + "': " + msg};
  return {true, ""};
}

// A small tensor on a device (RAII; pass .get() to the C calls).
inline braid::Tensor tensor(braid::Device d, braid_dtype dt, braid::List<int64_t> shape) {
  return braid::Tensor::zeros(harness::context(), d, dt, shape);
}

// The context's raw handle, and a device index that does not exist.
inline braid_context ctx() { return harness::context().get(); }
inline braid::Device bad_device() { return harness::context().device_count() + 3; }

}  // namespace errors

// CHECK_FAILS(braid_matmul(a, b, 0, 0, out.p()), BRAID_ERR_SHAPE, "braid_matmul");
#define CHECK_FAILS(call, want, function)                     \
  do {                                                        \
    const braid_status st_ = (call);                          \
    const auto j_ = ::errors::judge(st_, (want), (function)); \
    CHECK_MESSAGE(j_.ok, #call ": ", j_.text);                \
  } while (0)
