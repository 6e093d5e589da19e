// Out-structs at the C boundary: written honouring the caller's struct_size, so an older caller (a
// shorter struct) gets the prefix it knows and a newer one the fields this library has.
#pragma once
#include <cstdint>
#include <cstring>

#include "core/error.h"

namespace braid {

// Refuses a NULL out-struct or one whose struct_size cannot even hold struct_size: called first by a
// function that works before it writes (a measurement), so a bad call costs nothing.
template <class T>
void check_out(const T* out, const char* what) {
  require(out, what);
  if (out->struct_size < sizeof(uint32_t))
    fail(BRAID_ERR_INVALID_ARGUMENT, what, "->struct_size ", out->struct_size,
         " is too small; set it to sizeof the struct");
}

template <class T>
void copy_out(T* out, const T& value, const char* what) {
  check_out(out, what);
  uint32_t size = out->struct_size;
  if (size > sizeof(T)) size = sizeof(T);  // a newer caller: it gets the fields we know
  std::memcpy(out, &value, size);
  out->struct_size = size;
}

}  // namespace braid
