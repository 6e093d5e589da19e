// Reading ABI enums that may hold values outside their enumerators.
#pragma once
#include <cstring>
#include <type_traits>

namespace braid::plugin {

// A C caller may pass any integer where the ABI says enum; loading such a value as the C++ enum type
// is undefined behaviour (UBSan flags it), so validation reads the bytes as the underlying integer,
// widened to a signed type so that "< 0" checks mean something whatever the compiler chose.
template <typename E>
  requires std::is_enum_v<E>
long long enum_value(const E& e) {
  std::underlying_type_t<E> v;
  std::memcpy(&v, &e, sizeof v);
  return static_cast<long long>(v);
}

}  // namespace braid::plugin
