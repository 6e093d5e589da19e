// A FUSED_ELEMENTWISE program (abi/braid_backend.h) decoded from its kernel call, checked once for
// every plugin: the CPU backend runs it over tiles, the Vulkan and CUDA backends generate a kernel per
// program. A bad program must not index registers it does not have, so decoding refuses it.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <type_traits>

#include "braid_backend.h"

namespace braid::plugin {

// Appends each piece to a generated source or key, numbers in decimal (the Vulkan and CUDA plugins'
// code generators).
template <class... Pieces>
void append_source(std::string& s, const Pieces&... pieces) {
  auto one = [&s](const auto& piece) {
    if constexpr (std::is_arithmetic_v<std::decay_t<decltype(piece)>>)
      s += std::to_string(piece);
    else
      s += piece;
  };
  (one(pieces), ...);
}

struct FusedInstruction {
  int kind;  // 0 unary op(a), 1 binary a op b, 2 a op f[b], 3 f[b] op a
  int op;    // a braid_unary_op (kind 0) or braid_binary_op
  int a, b;  // registers: 0..inputs-1 the inputs' elements, inputs + j instruction j's result
};

struct FusedProgram {
  int inputs = 0;  // k
  int count = 0;   // instructions
  std::array<FusedInstruction, BRAID_FUSED_MAX_INSTRS> code;

  // Decodes the call's program; false (nothing else read) if it is malformed.
  bool decode(const braid_kernel_call& c) noexcept {
    count = static_cast<int>(c.i[0]);
    inputs = c.num_inputs;
    if (count < 1 || count > BRAID_FUSED_MAX_INSTRS || inputs < 1 || inputs > BRAID_KERNEL_MAX_INPUTS ||
        c.num_outputs != 1)
      return false;
    for (int j = 0; j < count; ++j) {
      const auto bits = static_cast<uint64_t>(c.i[1 + j / 3]) >> (21 * (j % 3));
      FusedInstruction& in = code[static_cast<size_t>(j)];
      in = {int(bits & 3u), int((bits >> 2) & 15u), int((bits >> 6) & 63u), int((bits >> 12) & 63u)};
      const int registers = inputs + j;  // an instruction reads only the registers below its own
      if (in.a >= registers) return false;
      if (in.kind == 0 ? in.op >= BRAID_UNARY_COUNT : in.op >= BRAID_BINARY_COUNT) return false;
      if (in.kind == 1 && in.b >= registers) return false;
      if (in.kind >= 2 && in.b >= 8) return false;
    }
    return true;
  }

  // What identifies a kernel generated for the program in `dtype` (its scalars are parameters, not
  // part of it): "2f:0.5.0.0:1.0.2.1" for two inputs, float32, two instructions.
  std::string key(braid_dtype dtype) const {
    std::string k;
    append_source(k, inputs, dtype == BRAID_FLOAT64 ? "d" : "f");
    for (int j = 0; j < count; ++j) {
      const FusedInstruction& in = code[static_cast<size_t>(j)];
      append_source(k, ":", in.kind, ".", in.op, ".", in.a, ".", in.b);
    }
    return k;
  }
};

}  // namespace braid::plugin
