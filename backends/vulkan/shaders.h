// The embedded SPIR-V modules (generated from shaders/shaders.list at build time).
#pragma once
#include <cstddef>
#include <cstdint>

namespace braid::vk {

enum class ShaderId : int {
#define X(name) name,
#include "shader_list.inc"
#undef X
  kCount
};
constexpr size_t kShaderCount = static_cast<size_t>(ShaderId::kCount);

struct ShaderCode {
  const uint32_t* data;
  size_t words;
};
ShaderCode shader_code(ShaderId id);
const char* shader_name(ShaderId id);

}  // namespace braid::vk
