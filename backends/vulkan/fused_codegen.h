// Graph mode's fused elementwise kernels (FUSED_ELEMENTWISE, abi/braid_backend.h) on Vulkan: each
// program becomes a compute shader of its own. Its GLSL is generated here, straight-line code with
// the ops as constants so the compiler folds each op's switch away, and compiled to SPIR-V at run time
// with shaderc; the device caches the pipeline per program (Device::generated_pipeline). The shader
// uses the same element functions as UNARY, BINARY and BINARY_SCALAR (shaders/*.glsl, embedded in the
// plugin), so a fused chain computes what the separate kernels would.
//
// shaderc and the glslang and SPIRV-Tools libraries behind it are linked in statically (Debian 12's
// libshaderc.so.1 cannot be loaded on its own: it lacks a SPIRV-Tools symbol that only glslc
// provides), with their symbols kept inside the plugin.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "braid_backend.h"
#include "fused_program.h"

namespace braid::vk {

// The compute shader of a program: bindings 1..k inputs, 7 the output, parameters at binding 0.
std::string fused_glsl(const plugin::FusedProgram& program, braid_dtype dtype);

// Compiles a GLSL compute shader to SPIR-V (Vulkan 1.2, optimised); `#include "x.glsl"` resolves to
// braid's shader includes. Returns the words, or none with `error` set.
std::vector<uint32_t> compile_compute_shader(const std::string& source, const std::string& name, std::string& error);

}  // namespace braid::vk
