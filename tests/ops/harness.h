// Shared plumbing of the conformance suite: the test context (with two CPU devices by default), moving
// reference arrays to and from devices in any dtype, deterministic test data, and CHECK_CLOSE, which
// compares a device result with the reference under a tolerance of tolerance.h.
#pragma once

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "braid.hpp"
#include "reference.h"
#include "tolerance.h"

namespace harness {

// The context shared by the suite. Created on first use, after setting BRAID_CPU_DEVICES=2 unless the
// environment already sets it, so that cross-device cases have a second device to use.
braid::Context& context();
// Every device of the context, with its id ("cpu:0") for INFO messages.
struct DeviceRef {
  braid::Device index;
  std::string id;
};
std::vector<DeviceRef> devices();
// devices(), but with none it says so (a visible skip) instead of letting a loop pass silently. Use as
//   for (const auto& dev : harness::each_device()) { INFO("device ", dev.id); ... }
std::vector<DeviceRef> each_device();

// Runs one device's cases. An op the device has no kernel for (BRAID_ERR_UNSUPPORTED, which the
// runtime raises at the call when the backend's supports() says no) ends that device's cases with a
// "skipped" message naming the op and dtype, never a silent pass. The CPU backend is the reference
// and must support every core op, so there it stays an error.
template <typename Body>
void on_device(const DeviceRef& dev, Body&& body) {
  try {
    body();
  } catch (const braid::Error& e) {
    if (e.status() != BRAID_ERR_UNSUPPORTED || dev.id.rfind("cpu:", 0) == 0) throw;
    MESSAGE("skipped on ", dev.id, " (its remaining cases in this test): ", std::string(e.what()));
  }
}

// A dtype's name as a std::string: doctest's INFO prints a const char* as an address.
inline std::string dtype_name(braid_dtype d) { return braid_dtype_name(d); }

// The floating dtypes every op must support, and the integer dtypes some ops accept.
inline constexpr braid_dtype kFloatTypes[] = {BRAID_FLOAT32, BRAID_FLOAT64};
inline constexpr braid_dtype kIntTypes[] = {BRAID_INT32, BRAID_INT64};

// Deterministic values uniform in [lo, hi), already rounded to dtype so the device and the
// reference see the same inputs.
ref::Array random_array(const ref::Shape& shape, double lo, double hi, braid_dtype dtype, uint32_t seed);
ref::Array random_ints(const ref::Shape& shape, int lo, int hi, uint32_t seed);
// Values any dtype can hold exactly: floats in [-100, 100) on the dtype's grid, integers in
// [-100, 100), uint8 in [0, 255).
ref::Array sample(const ref::Shape& shape, braid_dtype dtype, uint32_t seed);

// Uploads a reference array as a tensor of dtype (values are converted, not re-rounded: pass arrays
// already on the dtype's grid). Downloads any tensor into doubles.
braid::Tensor upload(braid::Device d, braid_dtype dtype, const ref::Array& a);
ref::Array download(const braid::Tensor& t);

struct Comparison {
  bool ok;
  std::string text;  // what went wrong: shape, or the first bad element with expected and got
};
Comparison compare(const ref::Array& got, const ref::Array& want, double tol);

// The values of a reference array of integers (e.g. labels) as int64.
std::vector<int64_t> to_int64(const ref::Array& a);

}  // namespace harness

// Checks one device result against the reference; on failure reports the first differing element.
#define CHECK_CLOSE(got, want, tolerance)                             \
  do {                                                                \
    const auto cmp_ = ::harness::compare((got), (want), (tolerance)); \
    CHECK_MESSAGE(cmp_.ok, cmp_.text);                                \
  } while (0)
