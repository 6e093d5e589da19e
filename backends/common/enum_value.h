// Reading ABI enums that may hold values outside their enumerators.
#pragma once
#include <cstring>
#include <type_traits>

namespace braid::plugin {

// A C caller may pass any integer where the ABI says enum; loading such a value as the C++ enum type
// is undefined behaviour (UBSan flags it), so validation reads the bytes as the underlying integer,
// widened to a signed type so that "< 0" checks mean something whatever the compiler chose.
// (static_assert rather than a requires-clause: CUDA sources include this as C++17.)
template <typename E>
inline long long enum_value(const E& e) {
  static_assert(std::is_enum_v<E>, "enum_value reads enums");
  std::underlying_type_t<E> v;
  std::memcpy(&v, &e, sizeof v);
  return static_cast<long long>(v);
}

}  // namespace braid::plugin
